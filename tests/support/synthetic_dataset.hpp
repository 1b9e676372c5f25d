// Small datasets written record by record with DatasetWriter, for reader
// tests that must not depend on image decoding or augmentation: every
// record's pixels are derived from (seed, sample, variant), so a test can
// recompute what any delivered record must contain.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "imgpack/dataset_index.hpp"
#include "imgpack/format.hpp"
#include "targets/record_boxes.hpp"

namespace imgpack::test {

struct SyntheticOptions {
  uint32_t samples = 40;
  uint32_t variants = 1;  // records per sample (variant 0 .. variants-1)
  uint32_t height = 6;
  uint32_t width = 5;
  uint32_t channels = 3;
  uint32_t records_per_shard = 16;
  uint32_t classes = 4;         // label = sample % classes, unless `labels` says otherwise
  std::vector<int32_t> labels;  // when not empty: the label of every sample (-1..classes-1)
  uint32_t groups = 5;          // group = sample % groups
  uint64_t seed = 1;
  bool shuffle = true;  // write records in a seeded order, as convert does
  // Segmentation masks beside the images (synthetic_mask()), with this fill
  // and these label names.
  bool masks = false;
  uint8_t mask_fill = 255;
  std::vector<std::string> mask_class_names;
  // Targets beyond one class: this many multi-label classes and numeric
  // targets per sample (synthetic_multilabel(), synthetic_targets()).
  uint32_t multilabel_classes = 0;
  uint32_t targets = 0;
  // Object boxes per record (synthetic_boxes()): with `box_classes` > 0,
  // each record holds 0 to 3 boxes of those classes, with `keypoints` each
  // (a skeleton chaining them in order).
  uint32_t box_classes = 0;
  uint32_t keypoints = 0;
  std::string uuid = "5e7a0000-0000-4000-8000-000000000001";
  int64_t format_version = format::kIndexVersion;  // of index.h5: 1 or 2
};

// The pixels of record (sample, variant): H*W*C bytes.
std::vector<uint8_t> synthetic_pixels(const SyntheticOptions& options, int64_t sample,
                                      uint16_t variant);

// The mask of record (sample, variant): H*W labels from 0..7 and 255.
std::vector<uint8_t> synthetic_mask(const SyntheticOptions& options, int64_t sample,
                                    uint16_t variant);

// The multi-hot row of `sample` (multilabel_classes entries of 0 or 1) and
// its numeric targets (`targets` values, some NaN).
std::vector<uint8_t> synthetic_multilabel(const SyntheticOptions& options, int64_t sample);
std::vector<float> synthetic_targets(const SyntheticOptions& options, int64_t sample);

// The boxes of record (sample, variant): (sample + variant) % 4 of them, inside
// the record, classes below box_classes, keypoints with visibility 0..2.
RecordBoxes synthetic_boxes(const SyntheticOptions& options, int64_t sample, uint16_t variant);

// Writes shards and index.h5 into `dir` (created) and returns the index.
DatasetIndex write_synthetic_dataset(const std::filesystem::path& dir,
                                     const SyntheticOptions& options);

// Writes into `dir` the dataset write_synthetic_dataset(dir, options) writes,
// but under another dataset uuid: same files and shapes, foreign to the first.
DatasetIndex write_foreign_twin(const std::filesystem::path& dir, SyntheticOptions options);

// Changes the label of `sample` in index.h5 of `dir` only (the shards keep
// the old one) and returns the file name of the shard that now disagrees.
std::string relabel_in_index_only(const std::filesystem::path& dir, DatasetIndex index,
                                  int64_t sample);

// Adds (or replaces) a split with the given per-sample assignment and stores it with
// write_splits().
void add_split(const std::filesystem::path& dir, const std::string& name, int32_t folds,
               const std::vector<int16_t>& assign, const std::string& kind = "random");

// Commits the next generation of the index of `dir` with `samples` removed,
// as a removal does: generation + 1, a /history row for it (and one for the
// conversion where there was none), the samples marked in sample_removed and
// their assignment in every split kRemovedFold. Returns the index written.
DatasetIndex remove_samples(const std::filesystem::path& dir, const std::vector<int64_t>& samples);

// The fields of two indexes that differ ("sample_path[3]", "splits[0].assign"),
// comparing every field of DatasetIndex; empty when they are equal.
std::vector<std::string> index_differences(const DatasetIndex& a, const DatasetIndex& b);

// File address of an HDF5 object's header, for tests that damage metadata.
uint64_t object_header_address(const std::filesystem::path& file, const std::string& object);
// Offset of a contiguous dataset's bytes in an HDF5 file, for tests that damage them.
uint64_t dataset_offset(const std::filesystem::path& shard, const std::string& name);
// Offset of /images (or /masks) in a shard file (via HDF5), for tests that damage pixels.
uint64_t images_offset(const std::filesystem::path& shard);
uint64_t masks_offset(const std::filesystem::path& shard);

}  // namespace imgpack::test
