// The tables of an index file (index.h5, splits.h5) in either format, each
// read and written with its checksum (internal to imgpack::core).
//
// Numeric tables are the same in both formats: a 1-D dataset with an `xxh3`
// attribute. Strings differ. Format 1 stores a string table as a dataset of
// variable-length strings, whose bytes live in HDF5's global heap; format 2
// as a group NAME holding `bytes` (uint8: the strings' UTF-8 bytes,
// concatenated) and `offsets` (uint64 [n + 1]: string i is bytes
// [offsets[i], offsets[i + 1])), two numeric tables read in bulk. (String
// attributes stay variable-length in both formats, as in the shards, so that
// h5py reads them as str: the global heap of a format 2 index holds those few
// strings alone.) Every string table of either format (the sample paths,
// class and group names, shard files, and any table added later) goes through
// TableReader::strings and TableWriter::strings, which pick the layout of the
// file's format.
//
// Not thread-safe; StringTable is a plain value, safe to share for reading.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "files.hpp"
#include "h5.hpp"
#include "imgpack/column.hpp"
#include "imgpack/format.hpp"
#include "index_checksum.hpp"
#include "mapped_column.hpp"
#include "mapped_region.hpp"

namespace imgpack::detail {

// A whole index file mapped read-only, and which file it is: numeric tables
// are viewed in it in place of copies.
struct FileMapping {
  std::shared_ptr<const MappedRegion> region;
  FileIdentity identity;
};

// A format 2 string table as the file holds it. Checked for its checksums and
// its offsets by verify(), not before: a reader that defers its strings (the
// sample paths) pays for them on first use.
struct StringTable {
  std::string name;  // "/samples/path"
  Column<uint8_t> bytes;
  Column<uint64_t> offsets;
  bool checksummed = false;
  uint64_t bytes_xxh3 = 0;
  uint64_t offsets_xxh3 = 0;

  std::size_t size() const { return offsets.empty() ? 0 : offsets.size() - 1; }
  // String i (i < size()) of a verified table.
  std::string_view at(std::size_t i) const {
    return {reinterpret_cast<const char*>(bytes.data()) + offsets[i],
            static_cast<std::size_t>(offsets[i + 1] - offsets[i])};
  }
  std::vector<std::string> to_strings() const;
  // Throws imgpack::Error naming `path` and the table unless the checksums
  // match and the offsets start at 0, never decrease and end at the bytes' end.
  void verify(const std::filesystem::path& path) const;
};

class TableReader {
 public:
  // Reads from `file`, an index file of `format_version`. `checksummed`:
  // whether its tables must carry checksums (format 2 always; format 1 when
  // its root has them). With `mapping`, a mapping of the very file `file`
  // has open, numeric tables lying contiguous and aligned in it are viewed
  // there instead of copied.
  TableReader(const h5::File& file, int64_t format_version, bool checksummed,
              std::shared_ptr<const FileMapping> mapping = {});

  // A numeric table, checked against its checksum.
  template <class T>
  Column<T> numbers(const std::string& name) const {
    Column<T> values = numbers_unchecked<T>(name);
    check(name, format::kAttrChecksum, index_checksum::of_numbers(values.span()));
    return values;
  }
  // A numeric table and its checksum attribute, not yet compared.
  template <class T>
  Column<T> numbers_unchecked(const std::string& name) const {
    return mapped_or_read<T>(file_, name, mapping_ ? mapping_->region : nullptr);
  }

  // A 2-D numeric table of `rows` x `columns` (row-major), checked for its
  // shape, then against its checksum (that of its elements in that order).
  template <class T>
  Column<T> matrix(const std::string& name, uint64_t rows, uint64_t columns) const {
    Column<T> values(file_.read_shaped<T>(name, {rows, columns}));
    check(name, format::kAttrChecksum, index_checksum::of_numbers(values.span()));
    return values;
  }

  // A string table, checked, in the layout of the file's format.
  std::vector<std::string> strings(const std::string& name) const;
  // Format 2: the string table NAME as the file holds it, unverified.
  StringTable string_table(const std::string& name) const;
  // The number of strings of table NAME, read from the metadata alone.
  uint64_t string_count(const std::string& name) const;

  // Throws naming the file and `object` unless its checksum `attr` is
  // `actual` (or absent from a format 1 index written without checksums).
  void check(const std::string& object, const char* attr, uint64_t actual) const;
  // The checksum attribute `attr` of `object`; 0 and false when absent from
  // an index without checksums.
  bool stored_checksum(const std::string& object, const char* attr, uint64_t& value) const;

  const h5::File& file() const { return file_; }
  int64_t format_version() const { return version_; }

 private:
  const h5::File& file_;
  const int64_t version_;
  const bool checksummed_;
  std::shared_ptr<const FileMapping> mapping_;
};

class TableWriter {
 public:
  // Writes into `file`, a new index file of `format_version` (1 or 2).
  TableWriter(h5::File& file, int64_t format_version);

  template <class T>
  void numbers(const std::string& name, std::span<const T> values) {
    file_.write(name, values);
    file_.write_uint64_attr(name, format::kAttrChecksum, index_checksum::of_numbers(values));
  }
  template <class T>
  void numbers(const std::string& name, const Column<T>& values) {
    numbers(name, values.span());
  }
  template <class T>
  void numbers(const std::string& name, const std::vector<T>& values) {
    numbers(name, std::span<const T>(values));
  }
  // A 2-D table of values.size() / columns rows, row-major, with its checksum.
  template <class T>
  void matrix(const std::string& name, const Column<T>& values, uint64_t columns) {
    file_.write_shaped(name, values.span(), {values.size() / columns, columns});
    file_.write_uint64_attr(name, format::kAttrChecksum, index_checksum::of_numbers(values.span()));
  }
  // A string table in the layout of the file's format, with its checksums.
  void strings(const std::string& name, const std::vector<std::string>& values);

 private:
  h5::File& file_;
  const int64_t version_;
};

// The names of a format 2 string table's two datasets.
std::string string_bytes_name(const std::string& table);
std::string string_offsets_name(const std::string& table);

}  // namespace imgpack::detail
