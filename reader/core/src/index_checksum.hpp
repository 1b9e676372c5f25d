// Checksums of index.h5's contents (internal to imgpack::core).
//
// HDF5 checksums its own metadata (object headers, B-trees, heaps of names)
// but neither the elements of a dataset nor the global heap that holds
// variable-length strings: a flipped bit there reads back as another sample
// path, class name, fold or record location. So every table of index.h5
// carries an `xxh3` attribute, the XXH3-64 of its decoded contents, and the
// root and every split group an `attributes_xxh3` over their attributes
// (docs/FORMAT.md spells out the bytes hashed). Values are hashed as
// decoded, little-endian and with lengths before strings, so the sum does not
// depend on how HDF5 lays the bytes out in the file.
//
// Pure functions, safe from any thread.
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "imgpack/dataset_index.hpp"

namespace imgpack::index_checksum {

// The canonical byte stream behind every index checksum, hashed as it is
// fed: numbers little-endian at their own width, strings as their length
// (8 bytes) then their bytes.
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  void add_bytes(const void* data, std::size_t size);
  void add_string(std::string_view text);
  template <class T>
  void add_number(T value) {
    static_assert(std::is_arithmetic_v<T>);
    if constexpr (std::is_floating_point_v<T>) {
      // IEEE 754 bits, little-endian: float32 as 4 bytes, double as 8.
      static_assert(sizeof(T) == 4 || sizeof(T) == 8);
      using Bits = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
      add_number(std::bit_cast<Bits>(value));
    } else {
      uint8_t bytes[sizeof(T)];
      for (std::size_t i = 0; i < sizeof(T); ++i) {
        bytes[i] = static_cast<uint8_t>(static_cast<std::make_unsigned_t<T>>(value) >> (8 * i));
      }
      add_bytes(bytes, sizeof bytes);
    }
  }
  template <class T>
  void add_numbers(std::span<const T> values) {
    if constexpr (std::endian::native == std::endian::little && std::is_integral_v<T>) {
      add_bytes(values.data(), values.size_bytes());
    } else {
      for (T value : values) add_number(value);
    }
  }
  uint64_t digest() const;

 private:
  void* state_;  // XXH3_state_t, kept out of this header
};

// The checksum of a numeric table: its elements, in order.
template <class T>
uint64_t of_numbers(std::span<const T> values) {
  Hasher hasher;
  hasher.add_numbers(values);
  return hasher.digest();
}
template <class T>
uint64_t of_numbers(const std::vector<T>& values) {
  return of_numbers(std::span<const T>(values));
}
template <class T>
uint64_t of_numbers(const Column<T>& values) {
  return of_numbers(values.span());
}

// The checksum of a string table: each string's length and bytes, in order.
uint64_t of_strings(const std::vector<std::string>& values);

// The checksum of index.h5's root attributes (imgpack_format, dataset_uuid,
// height, width, channels, variants, color, convert_options, created_by, in
// that order, each as its name and its value; then, in a dataset with masks,
// masks and mask_fill; then, in a dataset with them, multilabel_classes and
// targets; then, in a dataset with boxes, boxes, box_classes, keypoints and
// box_min_visible; then, in a dataset that grew or shrank, generation,
// removed and file_stamps where present).
uint64_t of_root_attributes(const DatasetIndex& index);
// The same, with the counts of the attributes `removed` and `file_stamps`
// given (as the root holds them, before their tables are read).
uint64_t of_root_attributes(const DatasetIndex& index, uint64_t removed, bool file_stamps);

// The checksum of splits.h5's root attributes (imgpack_format, dataset_uuid,
// samples, and generation where above 0, in that order, each as its name and
// its value).
uint64_t of_splits_file_attributes(int64_t format_version, const std::string& uuid, int64_t samples,
                                   uint64_t generation);

// The checksum of a split's name and its group's attributes (kind, folds,
// seed, test_fraction, val_fraction, created, stratified, grouped).
uint64_t of_split_attributes(const Split& split);

}  // namespace imgpack::index_checksum
