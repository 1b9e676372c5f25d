#include "imgpack/dataset_index.hpp"

#include <fcntl.h>
#include <sys/file.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>

#include "files.hpp"
#include "h5.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "index_checksum.hpp"
#include "index_file.hpp"
#include "index_growth.hpp"
#include "index_strings.hpp"
#include "index_tables.hpp"
#include "splits_file.hpp"

namespace imgpack {

namespace fs = std::filesystem;

const Split* DatasetIndex::find_split(const std::string& name) const {
  for (const Split& split : splits) {
    if (split.name == name) return &split;
  }
  return nullptr;
}

namespace {

// The record table of DatasetIndex::validate(), against the samples and shards.
void validate_records(const DatasetIndex& index, const std::string& where) {
  auto fail = [&](const std::string& problem) { throw Error(where + ": " + problem); };
  const RecordTable& records = index.records;
  const ShardTable& shards = index.shards;
  const std::size_t r = index.num_records();
  if (records.row.size() != r || records.sample.size() != r || records.variant.size() != r) {
    fail("/records arrays have different lengths");
  }
  std::vector<uint64_t> seen(index.num_shards(), 0);
  for (std::size_t i = 0; i < r; ++i) {
    if (records.shard[i] >= index.num_shards())
      fail("record " + std::to_string(i) + " names a missing shard");
    if (records.row[i] >= shards.records[records.shard[i]]) {
      fail("record " + std::to_string(i) + " points past the end of its shard");
    }
    if (records.sample[i] < 0 || static_cast<uint64_t>(records.sample[i]) >= index.num_samples()) {
      fail("record " + std::to_string(i) + " names a missing sample");
    }
    if (records.variant[i] >= index.variants) {
      fail("record " + std::to_string(i) + " has a bad variant");
    }
    ++seen[records.shard[i]];
  }
  for (std::size_t k = 0; k < index.num_shards(); ++k) {
    if (seen[k] != shards.records[k]) {
      fail("shard " + shards.file[k] + " holds " + std::to_string(shards.records[k]) +
           " records but the index lists " + std::to_string(seen[k]));
    }
  }
}

}  // namespace

void DatasetIndex::validate(const std::string& where) const {
  auto fail = [&](const std::string& problem) { throw Error(where + ": " + problem); };
  if (format_version < format::kOldestIndexVersion || format_version > format::kIndexVersion) {
    fail("format version " + std::to_string(format_version) + ", this imgpack reads versions " +
         std::to_string(format::kOldestIndexVersion) + " to " +
         std::to_string(format::kIndexVersion));
  }
  if (height == 0 || width == 0 || (channels != 1 && channels != 3)) {
    fail("invalid image shape " + std::to_string(height) + "x" + std::to_string(width) + "x" +
         std::to_string(channels));
  }
  if (variants == 0) fail("variants is 0");
  if (color != (channels == 1 ? "gray" : "rgb")) {
    fail("color '" + color + "' with " + std::to_string(channels) +
         (channels == 1 ? " channel" : " channels") + ", expected '" +
         (channels == 1 ? "gray" : "rgb") + "'");
  }
  if (!masks && !mask_class_names.empty()) fail("mask class names without masks");
  const std::size_t s = num_samples();
  if (sample_label.size() != s || sample_group.size() != s) {
    fail("/samples arrays have different lengths");
  }
  for (std::size_t i = 0; i < s; ++i) {
    if (sample_label[i] < -1 || sample_label[i] >= static_cast<int64_t>(class_names.size())) {
      fail("sample " + std::to_string(i) + " has label " + std::to_string(sample_label[i]) +
           " outside the " + std::to_string(class_names.size()) + " classes");
    }
    if (sample_group[i] < -1 || sample_group[i] >= static_cast<int64_t>(num_groups())) {
      fail("sample " + std::to_string(i) + " has group " + std::to_string(sample_group[i]) +
           " outside the " + std::to_string(num_groups()) + " groups");
    }
  }
  if (sample_multilabel.size() != s * multilabel_names.size()) {
    fail("/samples/multilabel holds " + std::to_string(sample_multilabel.size()) +
         " entries, not " + std::to_string(s) + " samples x " +
         std::to_string(multilabel_names.size()) + " classes");
  }
  for (std::size_t i = 0; i < sample_multilabel.size(); ++i) {
    if (sample_multilabel[i] > 1) {
      fail("sample " + std::to_string(i / multilabel_names.size()) + " has multi-label entry " +
           std::to_string(sample_multilabel[i]) + ", expected 0 or 1");
    }
  }
  if (sample_targets.size() != s * target_names.size()) {
    fail("/samples/targets holds " + std::to_string(sample_targets.size()) + " values, not " +
         std::to_string(s) + " samples x " + std::to_string(target_names.size()) + " targets");
  }
  if (keypoint_flip.size() != keypoint_names.size()) {
    fail("/keypoints/flip holds " + std::to_string(keypoint_flip.size()) + " entries for " +
         std::to_string(keypoint_names.size()) + " keypoints");
  }
  for (std::size_t k = 0; k < keypoint_flip.size(); ++k) {
    const int32_t partner = keypoint_flip[k];
    if (partner < 0 || static_cast<std::size_t>(partner) >= keypoint_flip.size() ||
        keypoint_flip[static_cast<std::size_t>(partner)] != static_cast<int32_t>(k)) {
      fail("/keypoints/flip pairs keypoint " + std::to_string(k) + " with " +
           std::to_string(partner) + ", which is not its partner back");
    }
  }
  if (keypoint_skeleton.size() % 2 != 0) {
    fail("/keypoints/skeleton holds " + std::to_string(keypoint_skeleton.size()) +
         " keypoint indices, not pairs");
  }
  for (std::size_t e = 0; e + 1 < keypoint_skeleton.size(); e += 2) {
    const int32_t a = keypoint_skeleton[e], b = keypoint_skeleton[e + 1];
    const auto k = static_cast<int64_t>(keypoint_names.size());
    if (a < 0 || a >= k || b < 0 || b >= k || a == b) {
      fail("/keypoints/skeleton edge " + std::to_string(e / 2) + " joins keypoints " +
           std::to_string(a) + " and " + std::to_string(b) + " of " + std::to_string(k));
    }
  }
  if (!boxes && (!box_class_names.empty() || !keypoint_names.empty())) {
    fail("box classes or keypoints named in a dataset without boxes");
  }
  if (boxes && !(box_min_visible >= 0 && box_min_visible <= 1)) {
    fail("box_min_visible " + std::to_string(box_min_visible) + " is outside [0, 1]");
  }
  if (shards.records.size() != num_shards()) fail("/shards arrays have different lengths");
  for (const std::string& file : shards.file) {
    fs::path name(file);
    if (name.has_parent_path() || name.string().empty() || name.string().starts_with(".")) {
      fail("shard file name '" + file + "' is not a plain file name");
    }
  }
  detail::validate_growth(*this, where);
  if (has_records) validate_records(*this, where);
  for (const Split& split : splits) {
    if (std::string problem = detail::split_problem(split, s); !problem.empty()) fail(problem);
  }
}

namespace {

// The mask attributes of the root (format.hpp): absent in a dataset without
// masks, which reads as before.
void read_mask_attributes(const h5::File& file, DatasetIndex& index) {
  if (!file.has_attr("/", format::kAttrMasks)) return;
  const int64_t masks = file.read_int_attr("/", format::kAttrMasks);
  if (masks != 0 && masks != 1) {
    throw file_error(file.path(), std::string("attribute ") + format::kAttrMasks + " = " +
                                      std::to_string(masks) + ", expected 0 or 1");
  }
  index.masks = masks == 1;
  if (!index.masks) return;
  const int64_t fill = file.read_int_attr("/", format::kAttrMaskFill);
  if (fill < 0 || fill > 255) {
    throw file_error(file.path(), std::string("attribute ") + format::kAttrMaskFill + " = " +
                                      std::to_string(fill) + " is not a uint8 label");
  }
  index.mask_fill = static_cast<uint8_t>(fill);
}

// The label names, a string table in the layout of the index's format.
// imgpack writes it (empty when nothing names the labels) into every index
// with masks, so that in a checksummed index its absence is damage (a flipped
// link name), not a dataset without names.
void read_mask_tables(const detail::TableReader& tables, bool checksummed, DatasetIndex& index) {
  if (!index.masks) return;
  const h5::File& file = tables.file();
  if (file.exists(format::kMaskClassesName)) {
    index.mask_class_names = tables.strings(format::kMaskClassesName);
  } else if (checksummed) {
    throw file_error(file.path(), std::string("has masks but no ") + format::kMaskClassesName +
                                      ", which every index with masks and checksums has: the "
                                      "file is damaged");
  }
}

// The counts of multi-label classes and numeric targets (root attributes,
// covered by the root's checksum): present, each table and its names must be
// there too, so a damaged link name is refused instead of read as absent.
uint64_t read_target_count(const h5::File& file, const char* attr) {
  if (!file.has_attr("/", attr)) return 0;
  const int64_t count = file.read_int_attr("/", attr);
  if (count < 1 || count > (int64_t{1} << 20)) {
    throw file_error(file.path(), std::string("attribute ") + attr + " = " + std::to_string(count) +
                                      " is out of range");
  }
  return static_cast<uint64_t>(count);
}

// The box attributes of the root (format.hpp): absent in a dataset without
// boxes. Sizes the names to the counts; read_box_tables() reads them.
void read_box_attributes(const h5::File& file, DatasetIndex& index) {
  if (!file.has_attr("/", format::kAttrBoxes)) return;
  const int64_t boxes = file.read_int_attr("/", format::kAttrBoxes);
  if (boxes != 1) {
    throw file_error(file.path(), std::string("attribute ") + format::kAttrBoxes + " = " +
                                      std::to_string(boxes) + ", expected 1");
  }
  index.boxes = true;
  auto count = [&](const char* attr) {
    const int64_t n = file.read_int_attr("/", attr);
    if (n < 0 || n > (int64_t{1} << 20)) {
      throw file_error(file.path(), std::string("attribute ") + attr + " = " + std::to_string(n) +
                                        " is out of range");
    }
    return static_cast<std::size_t>(n);
  };
  index.box_class_names.resize(count(format::kAttrBoxClasses));
  index.keypoint_names.resize(count(format::kAttrKeypoints));
  index.box_min_visible = file.read_double_attr("/", format::kAttrBoxMinVisible);
  if (file.has_attr("/", format::kAttrKeypointEdges)) {
    const std::size_t edges = count(format::kAttrKeypointEdges);
    if (edges == 0) {
      throw file_error(file.path(), std::string("attribute ") + format::kAttrKeypointEdges +
                                        " = 0 (absent where there is no skeleton)");
    }
    index.keypoint_skeleton.resize(edges * 2);
  }
}

void read_box_tables(const detail::TableReader& tables, DatasetIndex& index) {
  if (!index.boxes) return;
  const h5::File& file = tables.file();
  auto names = [&](const char* table, std::size_t count) {
    std::vector<std::string> read = tables.strings(table);
    if (read.size() != count) {
      throw file_error(file.path(), std::string(table) + " holds " + std::to_string(read.size()) +
                                        " names, the root says " + std::to_string(count));
    }
    return read;
  };
  index.box_class_names = names(format::kBoxClassesName, index.box_class_names.size());
  if (index.keypoint_names.empty()) return;
  index.keypoint_names = names(format::kKeypointsName, index.keypoint_names.size());
  index.keypoint_flip = tables.numbers<int32_t>(format::kKeypointsFlip).to_vector();
  if (const std::size_t edges = index.keypoint_skeleton.size() / 2) {
    index.keypoint_skeleton =
        tables.matrix<int32_t>(format::kKeypointsSkeleton, edges, 2).to_vector();
  }
}

void write_box_attributes(h5::File& file, const DatasetIndex& index) {
  if (!index.boxes) return;
  file.write_attr("/", format::kAttrBoxes, int64_t{1});
  file.write_attr("/", format::kAttrBoxClasses, static_cast<int64_t>(index.box_class_names.size()));
  file.write_attr("/", format::kAttrKeypoints, static_cast<int64_t>(index.keypoint_names.size()));
  file.write_attr("/", format::kAttrBoxMinVisible, index.box_min_visible);
  if (!index.keypoint_skeleton.empty()) {
    file.write_attr("/", format::kAttrKeypointEdges,
                    static_cast<int64_t>(index.keypoint_skeleton.size() / 2));
  }
}

void write_box_tables(detail::TableWriter& tables, const DatasetIndex& index) {
  if (!index.boxes) return;
  tables.strings(format::kBoxClassesName, index.box_class_names);
  if (index.keypoint_names.empty()) return;
  tables.strings(format::kKeypointsName, index.keypoint_names);
  tables.numbers(format::kKeypointsFlip, index.keypoint_flip);
  if (!index.keypoint_skeleton.empty()) {
    tables.matrix(format::kKeypointsSkeleton, Column<int32_t>(index.keypoint_skeleton), 2);
  }
}

// The tables of the counts read_target_count() found (index's names sized to them).
void read_target_tables(const detail::TableReader& tables, DatasetIndex& index) {
  const h5::File& file = tables.file();
  const uint64_t samples = index.sample_label.size();
  auto names = [&](const char* table, uint64_t count) {
    std::vector<std::string> read = tables.strings(table);
    if (read.size() != count) {
      throw file_error(file.path(), std::string(table) + " holds " + std::to_string(read.size()) +
                                        " names, the root says " + std::to_string(count));
    }
    return read;
  };
  if (const uint64_t classes = index.multilabel_names.size()) {
    index.multilabel_names = names(format::kMultilabelClassesName, classes);
    index.sample_multilabel = tables.matrix<uint8_t>(format::kSamplesMultilabel, samples, classes);
  }
  if (const uint64_t targets = index.target_names.size()) {
    index.target_names = names(format::kTargetsName, targets);
    index.sample_targets = tables.matrix<float>(format::kSamplesTargets, samples, targets);
  }
}

void write_target_attributes(h5::File& file, const DatasetIndex& index) {
  if (index.has_multilabel()) {
    file.write_attr("/", format::kAttrMultilabelClasses,
                    static_cast<int64_t>(index.multilabel_names.size()));
  }
  if (index.has_targets()) {
    file.write_attr("/", format::kAttrTargets, static_cast<int64_t>(index.target_names.size()));
  }
}

void write_target_tables(detail::TableWriter& tables, const DatasetIndex& index) {
  if (index.has_multilabel()) {
    tables.matrix(format::kSamplesMultilabel, index.sample_multilabel,
                  index.multilabel_names.size());
    tables.strings(format::kMultilabelClassesName, index.multilabel_names);
  }
  if (index.has_targets()) {
    tables.matrix(format::kSamplesTargets, index.sample_targets, index.target_names.size());
    tables.strings(format::kTargetsName, index.target_names);
  }
}

void write_mask_attributes(h5::File& file, const DatasetIndex& index) {
  if (!index.masks) return;
  file.write_attr("/", format::kAttrMasks, int64_t{1});
  file.write_attr("/", format::kAttrMaskFill, int64_t{index.mask_fill});
}

void write_mask_tables(detail::TableWriter& tables, const DatasetIndex& index) {
  if (index.masks) tables.strings(format::kMaskClassesName, index.mask_class_names);
}

// A read of index.h5, with what the reader keeps of it besides the index.
struct IndexRead {
  DatasetIndex index;
  std::shared_ptr<const detail::IndexStrings> strings;  // with `map` only
};

// Reads DIR/index.h5 (and, for format 2, DIR/splits.h5). With `map`, the
// numeric tables are viewed in mappings of the files. With `defer`, the sample
// paths and group names left out are kept for reading on first use.
IndexRead read_index_files(const fs::path& dataset_dir, const IndexReadOptions& options, bool map,
                           bool defer, bool splits = true) {
  fs::path path = dataset_dir / format::kIndexFile;
  require_dataset_directory(dataset_dir);
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    if (ec == std::errc::too_many_symbolic_link_levels) {
      throw file_error(path, "cannot open: " + ec.message());
    }
    // A merge stopped before its index has left its journal.
    if (fs::exists(dataset_dir / "merge.journal", ec)) {
      throw file_error(path,
                       "missing: a merge of parts into this folder stopped before it was done "
                       "(merge.journal); merge() finishes the merge");
    }
    throw file_error(path, "missing: not a complete imgpack dataset (conversion unfinished?)");
  }
  h5::File file = h5::File::open_read(path);
  IndexRead read;
  DatasetIndex& index = read.index;
  if (!file.has_attr("/", format::kAttrFormat)) {
    throw file_error(path, "not an imgpack index (no imgpack_format attribute)");
  }
  index.format_version = file.read_int_attr("/", format::kAttrFormat);
  if (index.format_version < format::kOldestIndexVersion ||
      index.format_version > format::kIndexVersion) {
    throw file_error(path, "format version " + std::to_string(index.format_version) +
                               ", this imgpack reads versions " +
                               std::to_string(format::kOldestIndexVersion) + " to " +
                               std::to_string(format::kIndexVersion));
  }
  auto read_u32_attr = [&](const char* name) {
    int64_t v = file.read_int_attr("/", name);
    if (v < 0 || v > 1 << 20) {
      throw file_error(
          path, std::string("attribute ") + name + " = " + std::to_string(v) + " is out of range");
    }
    return static_cast<uint32_t>(v);
  };
  index.uuid = file.read_string_attr("/", format::kAttrUuid);
  index.height = read_u32_attr(format::kAttrHeight);
  index.width = read_u32_attr(format::kAttrWidth);
  index.channels = read_u32_attr(format::kAttrChannels);
  index.variants = read_u32_attr(format::kAttrVariants);
  index.color = file.read_string_attr("/", format::kAttrColor);
  index.convert_options = file.read_string_attr("/", format::kAttrConvertOptions);
  index.created_by = file.read_string_attr("/", format::kAttrCreatedBy);
  read_mask_attributes(file, index);
  // Read before the root's checksum is compared: they are part of it.
  index.multilabel_names.resize(read_target_count(file, format::kAttrMultilabelClasses));
  index.target_names.resize(read_target_count(file, format::kAttrTargets));
  read_box_attributes(file, index);
  const detail::GrowthAttributes growth = detail::read_growth_attributes(file, index);

  // Format 2 always has checksums; a format 1 index has them when its root does.
  const bool format2 = index.format_version >= 2;
  const bool checksummed = format2 || file.has_attr("/", format::kAttrAttributesChecksum);
  std::shared_ptr<const detail::FileMapping> mapping = map ? detail::map_file(file) : nullptr;
  const detail::TableReader tables(file, index.format_version, checksummed, mapping);
  tables.check("/", format::kAttrAttributesChecksum,
               index_checksum::of_root_attributes(index, growth.removed, growth.file_stamps));

  index.has_sample_paths = options.sample_paths;
  index.has_group_names = options.group_names;
  index.sample_label = tables.numbers<int32_t>(format::kSamplesLabel);
  index.sample_group = tables.numbers<int32_t>(format::kSamplesGroup);
  if (options.sample_paths) {
    index.sample_path = tables.strings(format::kSamplesPath);
  } else if (tables.string_count(format::kSamplesPath) != index.sample_label.size()) {
    throw file_error(path, std::string(format::kSamplesPath) + " and " + format::kSamplesLabel +
                               " have different lengths");
  }
  index.class_names = tables.strings(format::kClassesName);
  if (options.group_names) {
    index.group_names = tables.strings(format::kGroupsName);
  } else {
    index.unread_groups = tables.string_count(format::kGroupsName);
  }
  index.has_records = options.records;
  if (options.records) {
    index.records.shard = tables.numbers<uint32_t>(format::kRecordsShard);
    index.records.row = tables.numbers<uint32_t>(format::kRecordsRow);
    index.records.sample = tables.numbers<int64_t>(format::kRecordsSample);
    index.records.variant = tables.numbers<uint16_t>(format::kRecordsVariant);
  } else {
    index.unread_records = file.length(format::kRecordsShard);
  }
  index.shards.file = tables.strings(format::kShardsFile);
  index.shards.records = tables.numbers<uint64_t>(format::kShardsRecords).to_vector();
  read_mask_tables(tables, checksummed, index);
  read_target_tables(tables, index);
  read_box_tables(tables, index);
  detail::read_growth_tables(tables, growth, index);

  if (format2 && splits) {
    index.splits = detail::read_splits_of(dataset_dir, index, map);
  } else if (!format2) {
    index.splits = detail::read_split_groups(tables);
  }
  if (defer && (!options.sample_paths || !options.group_names)) {
    if (format2) {
      read.strings = std::make_shared<const detail::IndexStrings>(
          path, tables.string_table(format::kSamplesPath),
          tables.string_table(format::kGroupsName));
    } else {
      read.strings =
          std::make_shared<const detail::IndexStrings>(path, file.identity(), checksummed);
    }
  }
  index.validate(path.string());
  return read;
}

// index.h5 of `index.format_version`: format 1 holds the splits, format 2
// leaves them to splits.h5.
void write_index_file(const fs::path& dataset_dir, const DatasetIndex& index) {
  fs::path final_path = dataset_dir / format::kIndexFile;
  fs::path tmp_path = final_path;
  tmp_path += format::kTmpSuffix;
  try {
    h5::File file = h5::File::create(tmp_path);
    detail::TableWriter tables(file, index.format_version);
    file.write_attr("/", format::kAttrFormat, int64_t{index.format_version});
    file.write_attr("/", format::kAttrUuid, index.uuid);
    file.write_attr("/", format::kAttrHeight, int64_t{index.height});
    file.write_attr("/", format::kAttrWidth, int64_t{index.width});
    file.write_attr("/", format::kAttrChannels, int64_t{index.channels});
    file.write_attr("/", format::kAttrVariants, int64_t{index.variants});
    file.write_attr("/", format::kAttrColor, index.color);
    file.write_attr("/", format::kAttrConvertOptions, index.convert_options);
    file.write_attr("/", format::kAttrCreatedBy, index.created_by);
    write_mask_attributes(file, index);
    write_target_attributes(file, index);
    write_box_attributes(file, index);
    detail::write_growth_attributes(file, index);
    file.write_uint64_attr("/", format::kAttrAttributesChecksum,
                           index_checksum::of_root_attributes(index));

    tables.strings(format::kSamplesPath, index.sample_path);
    tables.numbers(format::kSamplesLabel, index.sample_label);
    tables.numbers(format::kSamplesGroup, index.sample_group);
    tables.strings(format::kClassesName, index.class_names);
    tables.strings(format::kGroupsName, index.group_names);
    tables.numbers(format::kRecordsShard, index.records.shard);
    tables.numbers(format::kRecordsRow, index.records.row);
    tables.numbers(format::kRecordsSample, index.records.sample);
    tables.numbers(format::kRecordsVariant, index.records.variant);
    tables.strings(format::kShardsFile, index.shards.file);
    tables.numbers(format::kShardsRecords, index.shards.records);
    write_mask_tables(tables, index);
    write_target_tables(tables, index);
    write_box_tables(tables, index);
    detail::write_growth_tables(tables, index);
    if (index.format_version < 2) detail::write_split_groups(file, tables, index.splits);
    file.close();
    crash_point("index-commit");
    commit_file(tmp_path, final_path);
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp_path, ec);
    throw;
  }
}

void check_writable_version(const DatasetIndex& index, const fs::path& dataset_dir) {
  if (index.format_version < format::kOldestIndexVersion ||
      index.format_version > format::kIndexVersion) {
    throw Error((dataset_dir / format::kIndexFile).string() + ": cannot write format version " +
                std::to_string(index.format_version));
  }
}

// Why DIR/splits.h5 cannot be read for a reason that is no fault of its
// bytes: it cannot be opened (permissions, I/O), or a program holds HDF5's
// lock on it to write it. "" where it opens or is missing.
std::string splits_file_unreachable(const fs::path& path) {
  const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    const int error = errno;
    if (error == ENOENT) return {};
    return path.string() + ": cannot open: " + std::strerror(error);
  }
  int status = 0;
  while ((status = ::flock(fd.get(), LOCK_SH | LOCK_NB)) != 0 && errno == EINTR) {
  }
  if (status != 0 && errno == EWOULDBLOCK) {
    return path.string() + ": another program holds it open to write it";
  }
  return {};
}

}  // namespace

DatasetIndex read_index(const fs::path& dataset_dir, const IndexReadOptions& options) {
  return read_index_files(dataset_dir, options, false, false).index;
}

namespace detail {

std::vector<Split> read_splits_of(const fs::path& dataset_dir, const DatasetIndex& index,
                                  bool map) {
  try {
    return read_splits_file(dataset_dir, index.uuid, index.sample_label.size(), index.generation,
                            map);
  } catch (const UsageError&) {
    throw;
  } catch (const ResourceShortage&) {
    throw;  // no fault of the file
  } catch (const Error& e) {
    // A file that cannot be opened or is being written may be whole.
    if (!splits_file_unreachable(dataset_dir / format::kSplitsFile).empty()) throw;
    // The way on: the index and the shards do not need the splits file.
    throw Error(std::string(e.what()) + " (" + format::kIndexFile +
                " and the shards do not depend on it: restore it from a copy, or "
                "reset_splits_file() writes it anew without splits, to be made again)");
  }
}

DeferredIndex read_index_deferred(const fs::path& dataset_dir, const IndexReadOptions& options,
                                  bool map, bool splits) {
  IndexRead read = read_index_files(dataset_dir, options, map, true, splits);
  return {std::move(read.index), std::move(read.strings)};
}

DatasetIndex read_index_without_splits(const fs::path& dataset_dir,
                                       const IndexReadOptions& options) {
  return read_index_files(dataset_dir, options, false, false, false).index;
}

std::string reset_splits_file(const fs::path& dataset_dir) {
  // Whole, so that every table of index.h5 is checked before the splits
  // file that belongs to it is written.
  DatasetIndex index = read_index_without_splits(dataset_dir, {});
  const fs::path path = dataset_dir / format::kSplitsFile;
  if (index.format_version < 2) {
    throw UsageError((dataset_dir / format::kIndexFile).string() + " is format " +
                     std::to_string(index.format_version) + ": it holds its splits itself");
  }
  // What cannot be opened or is being written may be whole: resetting it
  // would lose splits that nothing can make again (an imported one).
  if (const std::string unreachable = splits_file_unreachable(path); !unreachable.empty()) {
    throw Error(unreachable + "; reset_splits_file() writes anew only a splits file that is " +
                "missing or damaged, and this one may be whole");
  }
  std::string problem;
  try {
    read_splits_file(dataset_dir, index.uuid, index.num_samples(), index.generation, false);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    problem = e.what();
  }
  if (problem.empty()) {
    throw UsageError(path.string() + ": reads as it should; there is nothing to reset");
  }
  index.splits.clear();
  write_splits_file(dataset_dir, index);
  return problem;
}

}  // namespace detail

void write_index(const fs::path& dataset_dir, const DatasetIndex& index) {
  if (!index.has_sample_paths || !index.has_group_names || !index.has_records) {
    throw Error(
        "write_index: the index was read without its sample paths, group names or "
        "records, which writing it would lose");
  }
  check_writable_version(index, dataset_dir);
  index.validate((dataset_dir / format::kIndexFile).string());
  // splits.h5 first: index.h5, last, is what makes a dataset complete.
  if (index.format_version >= 2) {
    detail::write_splits_file(dataset_dir, index);
    crash_point("splits-committed");
  }
  write_index_file(dataset_dir, index);
}

void write_splits(const fs::path& dataset_dir, const DatasetIndex& index) {
  check_writable_version(index, dataset_dir);
  if (index.format_version < 2) {
    write_index(dataset_dir, index);
    return;
  }
  index.validate((dataset_dir / format::kIndexFile).string());
  detail::write_splits_file(dataset_dir, index);
}

std::string utc_timestamp() {
  std::time_t when = std::time(nullptr);
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH"); epoch != nullptr && *epoch != '\0') {
    char* end = nullptr;
    errno = 0;
    const long long seconds = std::strtoll(epoch, &end, 10);
    if (*end != '\0' || seconds < 0) {
      throw UsageError(std::string("SOURCE_DATE_EPOCH='") + epoch +
                       "' is not a count of seconds since 1970");
    }
    // The dates have four-digit years.
    constexpr long long kLastSecondOf9999 = 253402300799;
    if (errno == ERANGE || seconds > kLastSecondOf9999) {
      throw UsageError(std::string("SOURCE_DATE_EPOCH='") + epoch +
                       "' is past the end of the year 9999 (" + std::to_string(kLastSecondOf9999) +
                       ")");
    }
    when = static_cast<std::time_t>(seconds);
  }
  std::tm tm{};
  gmtime_r(&when, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace imgpack
