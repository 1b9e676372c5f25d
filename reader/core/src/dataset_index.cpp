#include "imgpack/dataset_index.hpp"

#include <algorithm>
#include <ctime>

#include "files.hpp"
#include "h5.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "index_checksum.hpp"

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
  if (format_version != format::kVersion) {
    fail("format version " + std::to_string(format_version) + ", this imgpack reads version " +
         std::to_string(format::kVersion));
  }
  if (height == 0 || width == 0 || (channels != 1 && channels != 3)) {
    fail("invalid image shape " + std::to_string(height) + "x" + std::to_string(width) + "x" +
         std::to_string(channels));
  }
  if (variants == 0) fail("variants is 0");
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
  if (shards.records.size() != num_shards()) fail("/shards arrays have different lengths");
  for (const std::string& file : shards.file) {
    fs::path name(file);
    if (name.has_parent_path() || name.string().empty() || name.string().starts_with(".")) {
      fail("shard file name '" + file + "' is not a plain file name");
    }
  }
  if (has_records) validate_records(*this, where);
  for (const Split& split : splits) {
    if (split.assign.size() != s) {
      fail("split " + split.name + " assigns " + std::to_string(split.assign.size()) +
           " samples, the dataset has " + std::to_string(s));
    }
    if (split.folds < 1) fail("split " + split.name + " has no folds");
    for (int16_t a : split.assign) {
      if (a < format::kTestFold || a >= split.folds) {
        fail("split " + split.name + " assigns fold " + std::to_string(a) + " of " +
             std::to_string(split.folds));
      }
    }
  }
}

namespace {

std::string split_group(const std::string& name) {
  return std::string(format::kSplitsGroup) + "/" + name;
}

// Reads the tables of index.h5, each checked against its checksum attribute
// (index_checksum.hpp). An index written before the checksums has none and
// is read as it is; one that has them on its root must have them everywhere,
// so damage that hides an attribute is caught too.
class CheckedIndexReader {
 public:
  explicit CheckedIndexReader(const h5::File& file)
      : file_(file), checksummed_(file.has_attr("/", format::kAttrAttributesChecksum)) {}

  // Whether the index carries checksums (every index imgpack writes does).
  bool checksummed() const { return checksummed_; }

  template <class T>
  std::vector<T> numbers(const std::string& name) const {
    std::vector<T> values = file_.read<T>(name);
    check(name, format::kAttrChecksum, index_checksum::of_numbers(values));
    return values;
  }

  std::vector<std::string> strings(const std::string& name) const {
    std::vector<std::string> values = file_.read_strings(name);
    check(name, format::kAttrChecksum, index_checksum::of_strings(values));
    return values;
  }

  // Throws naming the file and `object` unless its checksum `attr` is
  // `actual` (or absent from an index written without checksums).
  void check(const std::string& object, const char* attr, uint64_t actual) const {
    if (!file_.has_attr(object, attr)) {
      if (!checksummed_) return;
      throw file_error(file_.path(), object + " has no " + attr +
                                         " checksum, which every table of this index has: the "
                                         "file is damaged");
    }
    if (file_.read_uint64_attr(object, attr) != actual) {
      throw file_error(file_.path(), object +
                                         (std::string_view(attr) == format::kAttrChecksum
                                              ? " does not match its checksum"
                                              : ": its attributes do not match their checksum") +
                                         " (" + attr + "): the index is damaged");
    }
  }

 private:
  const h5::File& file_;
  const bool checksummed_;
};

// Writes the tables of index.h5, each with its checksum attribute.
class ChecksummedIndexWriter {
 public:
  explicit ChecksummedIndexWriter(h5::File& file) : file_(file) {}

  template <class T>
  void numbers(const std::string& name, const std::vector<T>& values) {
    file_.write(name, values);
    file_.write_uint64_attr(name, format::kAttrChecksum, index_checksum::of_numbers(values));
  }

  void strings(const std::string& name, const std::vector<std::string>& values) {
    file_.write_strings(name, values);
    file_.write_uint64_attr(name, format::kAttrChecksum, index_checksum::of_strings(values));
  }

 private:
  h5::File& file_;
};

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

// The label names. imgpack writes the table (empty when nothing names the
// labels) into every index with masks, so that in a checksummed index its
// absence is damage (a flipped link name), not a dataset without names.
void read_mask_tables(const h5::File& file, const CheckedIndexReader& checked,
                      DatasetIndex& index) {
  if (!index.masks) return;
  if (file.exists(format::kMaskClassesName)) {
    index.mask_class_names = checked.strings(format::kMaskClassesName);
  } else if (checked.checksummed()) {
    throw file_error(file.path(), std::string("has masks but no ") + format::kMaskClassesName +
                                      ", which every index with masks and checksums has: the "
                                      "file is damaged");
  }
}

void write_mask_attributes(h5::File& file, const DatasetIndex& index) {
  if (!index.masks) return;
  file.write_attr("/", format::kAttrMasks, int64_t{1});
  file.write_attr("/", format::kAttrMaskFill, int64_t{index.mask_fill});
}

void write_mask_tables(ChecksummedIndexWriter& tables, const DatasetIndex& index) {
  if (index.masks) tables.strings(format::kMaskClassesName, index.mask_class_names);
}

}  // namespace

DatasetIndex read_index(const fs::path& dataset_dir, const IndexReadOptions& options) {
  fs::path path = dataset_dir / format::kIndexFile;
  std::error_code ec;
  if (!fs::is_directory(dataset_dir, ec)) {
    throw file_error(dataset_dir, "no such dataset directory");
  }
  if (!fs::exists(path, ec)) {
    throw file_error(path, "missing: not a complete imgpack dataset (conversion unfinished?)");
  }
  h5::File file = h5::File::open_read(path);
  DatasetIndex index;
  if (!file.has_attr("/", format::kAttrFormat)) {
    throw file_error(path, "not an imgpack index (no imgpack_format attribute)");
  }
  index.format_version = file.read_int_attr("/", format::kAttrFormat);
  if (index.format_version != format::kVersion) {
    throw file_error(path, "format version " + std::to_string(index.format_version) +
                               ", this imgpack reads version " + std::to_string(format::kVersion));
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

  const CheckedIndexReader checked(file);
  checked.check("/", format::kAttrAttributesChecksum, index_checksum::of_root_attributes(index));

  index.has_sample_paths = options.sample_paths;
  index.has_group_names = options.group_names;
  if (options.sample_paths) {
    index.sample_path = checked.strings(format::kSamplesPath);
  }
  index.sample_label = checked.numbers<int32_t>(format::kSamplesLabel);
  index.sample_group = checked.numbers<int32_t>(format::kSamplesGroup);
  if (!options.sample_paths && file.length(format::kSamplesPath) != index.sample_label.size()) {
    throw file_error(path, std::string(format::kSamplesPath) + " and " + format::kSamplesLabel +
                               " have different lengths");
  }
  index.class_names = checked.strings(format::kClassesName);
  if (options.group_names) {
    index.group_names = checked.strings(format::kGroupsName);
  } else {
    index.unread_groups = file.length(format::kGroupsName);
  }
  index.has_records = options.records;
  if (options.records) {
    index.records.shard = checked.numbers<uint32_t>(format::kRecordsShard);
    index.records.row = checked.numbers<uint32_t>(format::kRecordsRow);
    index.records.sample = checked.numbers<int64_t>(format::kRecordsSample);
    index.records.variant = checked.numbers<uint16_t>(format::kRecordsVariant);
  } else {
    index.unread_records = file.length(format::kRecordsShard);
  }
  index.shards.file = checked.strings(format::kShardsFile);
  index.shards.records = checked.numbers<uint64_t>(format::kShardsRecords);
  read_mask_tables(file, checked, index);

  if (file.exists(format::kSplitsGroup)) {
    for (const std::string& name : file.list(format::kSplitsGroup)) {
      std::string group = split_group(name);
      Split split;
      split.name = name;
      split.kind = file.read_string_attr(group, format::kSplitKind);
      split.folds = static_cast<int32_t>(file.read_int_attr(group, format::kSplitFolds));
      split.seed = static_cast<uint64_t>(file.read_int_attr(group, format::kSplitSeed));
      split.test_fraction = file.read_double_attr(group, format::kSplitTestFraction);
      if (file.has_attr(group, format::kSplitValFraction)) {
        split.val_fraction = file.read_double_attr(group, format::kSplitValFraction);
      }
      split.created = file.read_string_attr(group, format::kSplitCreated);
      // Absent in indexes written before these attributes: the kind tells.
      split.stratified = file.has_attr(group, format::kSplitStratified)
                             ? file.read_int_attr(group, format::kSplitStratified) != 0
                             : split.kind == "stratified" || split.kind == "stratified-group";
      split.grouped = file.has_attr(group, format::kSplitGrouped)
                          ? file.read_int_attr(group, format::kSplitGrouped) != 0
                          : split.kind == "group" || split.kind == "stratified-group";
      split.assign = checked.numbers<int16_t>(group + "/assign");
      checked.check(group, format::kAttrAttributesChecksum,
                    index_checksum::of_split_attributes(split));
      index.splits.push_back(std::move(split));
    }
  }
  index.validate(path.string());
  return index;
}

void write_index(const fs::path& dataset_dir, const DatasetIndex& index) {
  if (!index.has_sample_paths || !index.has_group_names || !index.has_records) {
    throw Error(
        "write_index: the index was read without its sample paths, group names or "
        "records, which writing it would lose");
  }
  index.validate((dataset_dir / format::kIndexFile).string());
  fs::path final_path = dataset_dir / format::kIndexFile;
  fs::path tmp_path = final_path;
  tmp_path += format::kTmpSuffix;
  try {
    h5::File file = h5::File::create(tmp_path);
    file.write_attr("/", format::kAttrFormat, int64_t{format::kVersion});
    file.write_attr("/", format::kAttrUuid, index.uuid);
    file.write_attr("/", format::kAttrHeight, int64_t{index.height});
    file.write_attr("/", format::kAttrWidth, int64_t{index.width});
    file.write_attr("/", format::kAttrChannels, int64_t{index.channels});
    file.write_attr("/", format::kAttrVariants, int64_t{index.variants});
    file.write_attr("/", format::kAttrColor, index.color);
    file.write_attr("/", format::kAttrConvertOptions, index.convert_options);
    file.write_attr("/", format::kAttrCreatedBy, index.created_by);
    write_mask_attributes(file, index);
    file.write_uint64_attr("/", format::kAttrAttributesChecksum,
                           index_checksum::of_root_attributes(index));

    ChecksummedIndexWriter tables(file);
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

    file.create_group(format::kSplitsGroup);
    std::vector<const Split*> splits;
    for (const Split& split : index.splits) splits.push_back(&split);
    std::sort(splits.begin(), splits.end(),
              [](const Split* a, const Split* b) { return a->name < b->name; });
    for (const Split* split : splits) {
      std::string group = split_group(split->name);
      tables.numbers(group + "/assign", split->assign);
      file.write_attr(group, format::kSplitKind, split->kind);
      file.write_attr(group, format::kSplitFolds, int64_t{split->folds});
      file.write_attr(group, format::kSplitSeed, static_cast<int64_t>(split->seed));
      file.write_attr(group, format::kSplitTestFraction, split->test_fraction);
      file.write_attr(group, format::kSplitValFraction, split->val_fraction);
      file.write_attr(group, format::kSplitCreated, split->created);
      file.write_attr(group, format::kSplitStratified, int64_t{split->stratified});
      file.write_attr(group, format::kSplitGrouped, int64_t{split->grouped});
      file.write_uint64_attr(group, format::kAttrAttributesChecksum,
                             index_checksum::of_split_attributes(*split));
    }
    file.close();
    crash_point("index-commit");
    commit_file(tmp_path, final_path);
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp_path, ec);
    throw;
  }
}

std::string utc_timestamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace imgpack
