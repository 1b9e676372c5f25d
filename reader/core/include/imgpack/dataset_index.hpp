// The dataset index: everything in index.h5 (and, in format 2, splits.h5),
// in memory.
//
// DatasetIndex is a plain value: read_index() loads all of it (or, for a
// summary, all but the sample paths, group names or records), write_index()
// writes all of it crash-safely (NAME.tmp, fsync, rename, fsync dir), so a
// reader that opened the old files keeps a consistent view. It holds no HDF5
// handles and is safe to share between threads for reading.
//
// Two index formats exist (docs/FORMAT.md). Format 2, which this imgpack
// writes, stores strings as bytes plus offsets and keeps the splits in
// splits.h5 beside index.h5, so that changing a split (write_splits())
// replaces that small file alone. Format 1 stores strings as HDF5
// variable-length strings and the splits inside index.h5; it is read as
// before, and written where its index.format_version says 1 (a split of a
// format 1 dataset rewrites its index.h5 as format 1; `imgpack upgrade`
// rewrites it as format 2).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "imgpack/column.hpp"
#include "imgpack/record_shape.hpp"

namespace imgpack {

// One named split: an assignment of every source sample to a fold 0..folds-1
// or to the test set (-1). Role `val` of fold f is assign == f, role `train`
// is assign >= 0 && assign != f, role `test` is assign == -1. A holdout split
// has folds == 2 and is used through fold 0 (0 = validation, 1 = train).
struct Split {
  std::string name;
  std::string kind;  // random, stratified, group, stratified-group, holdout, imported
  int32_t folds = 0;
  uint64_t seed = 0;
  double test_fraction = 0;
  double val_fraction = 0;  // holdout only
  // How it was made: class proportions balanced across the parts, and groups
  // kept whole. Fixed by the kind, except for holdout, where they depend on
  // the data and on --no-stratify / --no-groups.
  bool stratified = false;
  bool grouped = false;
  std::string created;  // ISO 8601 UTC
  Column<int16_t> assign;
  // Written with a change of the dataset (an append or a removal) and read
  // only by a reader of the generation before it: the samples of that
  // generation whose assignment this one changed (removed ones, now
  // kRemovedFold), and their assignments then. Empty otherwise; ids ascending.
  std::vector<int64_t> previous_samples;
  std::vector<int16_t> previous_assign;
};

// One generation of a dataset: /history in index.h5, a row per change.
struct IndexChange {
  uint64_t generation = 0;
  std::string date;      // ISO 8601 UTC, or empty where unknown
  std::string change;    // "convert", "append", "remove", "compact"
  uint64_t added = 0;    // samples added
  uint64_t removed = 0;  // samples removed
};

// Source file stamps that an append compares (FileStamp of the conversion).
inline constexpr int64_t kUnknownMtime = INT64_MIN;

// Where each record lives and what it holds: /records in index.h5, one entry
// per record, all columns of the same length.
struct RecordTable {
  Column<uint32_t> shard;    // shard index
  Column<uint32_t> row;      // row in that shard
  Column<int64_t> sample;    // source sample (row of /samples)
  Column<uint16_t> variant;  // 0 = clean, 1..K-1 = augmented

  std::size_t size() const { return shard.size(); }
  void push_back(uint32_t shard_index, uint32_t shard_row, int64_t source_sample,
                 uint16_t record_variant) {
    shard.push_back(shard_index);
    row.push_back(shard_row);
    sample.push_back(source_sample);
    variant.push_back(record_variant);
  }
};

// The shard files: /shards in index.h5, one entry per shard.
struct ShardTable {
  std::vector<std::string> file;  // file name, relative to the dataset directory
  std::vector<uint64_t> records;  // records it holds

  std::size_t size() const { return file.size(); }
};

struct DatasetIndex {
  // Root attributes. format_version is the index format (1 or 2): what
  // read_index() found, and what write_index() writes.
  int64_t format_version = 0;
  std::string uuid;
  uint32_t height = 0;
  uint32_t width = 0;
  uint32_t channels = 0;
  uint32_t variants = 1;
  std::string color;            // "rgb" or "gray"
  std::string convert_options;  // JSON
  std::string created_by;

  // Segmentation masks (root attributes `masks`, `mask_fill`; additive to
  // format 1): when set, every shard holds one H x W uint8 label map per
  // record beside its image, and mask areas outside the source image hold
  // `mask_fill`. `mask_class_names` (/mask_classes/name, optional) names the
  // mask labels 0, 1, ...; empty when the conversion was given no names.
  bool masks = false;
  uint8_t mask_fill = 255;
  std::vector<std::string> mask_class_names;

  // Source samples [S].
  std::vector<std::string> sample_path;  // relative to the input root
  Column<int32_t> sample_label;          // -1 = unlabeled
  Column<int32_t> sample_group;          // -1 = none

  // Targets beyond one class per sample (root attributes
  // `multilabel_classes`, `targets`; additive, absent where empty).
  // Multi-label classes: multilabel_names [C] names them, sample_multilabel
  // holds S rows of C entries (row-major), 1 where the sample has the class,
  // else 0. Numeric targets: target_names [T], sample_targets S rows of T
  // float32 values, NaN where the sample has no value.
  std::vector<std::string> multilabel_names;
  Column<uint8_t> sample_multilabel;
  std::vector<std::string> target_names;
  Column<float> sample_targets;

  // Object boxes (root attributes `boxes`, `box_classes`, `keypoints`,
  // `box_min_visible`; additive, absent without boxes): every shard holds
  // each record's boxes, ragged (format.hpp). box_class_names [C] names the
  // box classes; keypoint_names [K] the keypoints of every box (none: K = 0)
  // and keypoint_flip [K] the keypoint each becomes under a horizontal flip;
  // keypoint_skeleton [E x 2] the pairs of keypoints (indices from 0) a
  // skeleton joins, for drawing (root attribute `keypoint_edges`; empty
  // where the annotations gave none). box_min_visible: a box keeps its place
  // in a crop when at least this fraction of its area stays inside.
  bool boxes = false;
  std::vector<std::string> box_class_names;
  std::vector<std::string> keypoint_names;
  std::vector<int32_t> keypoint_flip;
  std::vector<int32_t> keypoint_skeleton;
  double box_min_visible = 0.3;
  // Growing datasets (root attributes `generation`, `removed`,
  // `file_stamps`; additive, format.hpp). generation 0 is the dataset as its
  // conversion wrote it, with an empty history; each later change adds one
  // (history has generation + 1 rows then, row g for generation g).
  // sample_removed: empty where no sample is removed, else [S], 1 for each
  // removed sample, which no selection, split or count includes.
  // sample_size / sample_mtime: empty where the conversion kept no stamps,
  // else [S] (0 / kUnknownMtime where unknown).
  uint64_t generation = 0;
  std::vector<IndexChange> history;
  Column<uint8_t> sample_removed;
  Column<uint64_t> sample_size;
  Column<int64_t> sample_mtime;

  // Names [L] and [G].
  std::vector<std::string> class_names;
  std::vector<std::string> group_names;
  RecordTable records;  // [R]
  ShardTable shards;    // [N]

  std::vector<Split> splits;  // in name order

  // False where read_index() left the sample paths, the group names or the
  // records out (IndexReadOptions): sample_path, group_names or records is
  // then empty, while num_samples(), num_groups() and num_records() still
  // count them. write_index() refuses such an index, which would lose them.
  bool has_sample_paths = true;
  bool has_group_names = true;
  bool has_records = true;
  std::size_t unread_groups = 0;   // the length of /groups/name when !has_group_names
  std::size_t unread_records = 0;  // the length of /records/* when !has_records

  std::size_t num_samples() const {
    return has_sample_paths ? sample_path.size() : sample_label.size();
  }
  std::size_t num_groups() const { return has_group_names ? group_names.size() : unread_groups; }
  std::size_t num_records() const { return has_records ? records.size() : unread_records; }
  std::size_t num_shards() const { return shards.size(); }
  RecordShape shape() const { return {height, width, channels}; }
  std::size_t record_bytes() const { return shape().bytes(); }
  // The shape of one record's mask (H x W x 1), and its bytes: 0 without masks.
  RecordShape mask_shape() const { return {height, width, 1}; }
  std::size_t mask_bytes() const { return masks ? mask_shape().bytes() : 0; }
  bool has_multilabel() const { return !multilabel_names.empty(); }
  bool has_targets() const { return !target_names.empty(); }
  std::size_t num_keypoints() const { return keypoint_names.size(); }
  // Sample s's row of sample_multilabel (C entries) and of sample_targets (T).
  std::span<const uint8_t> multilabel_of(std::size_t s) const {
    return sample_multilabel.span().subspan(s * multilabel_names.size(), multilabel_names.size());
  }
  std::span<const float> targets_of(std::size_t s) const {
    return sample_targets.span().subspan(s * target_names.size(), target_names.size());
  }

  bool is_removed(std::size_t s) const { return !sample_removed.empty() && sample_removed[s] != 0; }
  // Samples removed (0 where none is).
  std::size_t num_removed() const;
  bool has_file_stamps() const { return !sample_size.empty() || !sample_mtime.empty(); }

  const Split* find_split(const std::string& name) const;

  // Checks internal consistency (array lengths agree, ids in range, records
  // of each shard numbered 0..n-1); throws imgpack::Error naming `where` and
  // the first problem.
  void validate(const std::string& where) const;
};

// What read_index() reads. The sample paths are most of index.h5 (with them
// the group names, where every image is a group of its own, and the records);
// a command that prints counts and figures leaves them out and reads in a
// fraction of the time. What is left out is not read at all, so damage to it
// goes unnoticed (`imgpack verify` reads everything).
struct IndexReadOptions {
  bool sample_paths = true;
  bool group_names = true;
  bool records = true;  // the record table, [R] entries of 18 bytes
};

// Reads DIR/index.h5 (format 1 or 2) and, for format 2, DIR/splits.h5.
// Throws imgpack::Error naming the file if it is missing ("not a complete
// imgpack dataset"), of an unknown format version, or damaged, or if
// splits.h5 is missing, damaged or of another index.
DatasetIndex read_index(const std::filesystem::path& dataset_dir,
                        const IndexReadOptions& options = {});

// Writes the index crash-safely in index.format_version: format 2 writes
// DIR/splits.h5, then DIR/index.h5 (last: its presence makes a dataset
// complete); format 1 writes DIR/index.h5 with the splits inside.
// Byte-identical for identical input. Throws imgpack::Error for an index read
// without its sample paths, group names or records, or of a version this
// imgpack does not write.
void write_index(const std::filesystem::path& dataset_dir, const DatasetIndex& index);

// Stores index.splits, the rest of `index` being as read from DIR: format 2
// replaces DIR/splits.h5 alone (index.h5, the sample table, is not touched,
// so an index read without its paths, group names or records will do);
// format 1 rewrites DIR/index.h5 whole, as write_index() does. Crash-safe;
// a reader that opened the dataset before keeps the splits it read. Throws
// imgpack::Error as write_index() does.
void write_splits(const std::filesystem::path& dataset_dir, const DatasetIndex& index);

// The date a dataset records (a split's creation, a change in the history)
// as "2026-11-22T03:46:16Z": SOURCE_DATE_EPOCH where set (seconds since
// 1970, the reproducible-builds convention), so that runs of the same
// command are byte-identical, else the current UTC time. Throws UsageError
// for a SOURCE_DATE_EPOCH that is not such a count up to the end of 9999.
std::string utc_timestamp();

}  // namespace imgpack
