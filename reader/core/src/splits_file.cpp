#include "splits_file.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <string>

#include "files.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "index_checksum.hpp"

namespace imgpack::detail {

namespace fs = std::filesystem;

namespace {

std::string split_group(const std::string& name) {
  return std::string(format::kSplitsGroup) + "/" + name;
}

}  // namespace

std::shared_ptr<const FileMapping> map_file(const h5::File& file) {
  const int fd = file.descriptor();
  if (fd < 0) throw file_error(file.path(), "cannot be mapped (not opened through a descriptor)");
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw system_error(file.path(), "cannot stat", errno);
  auto mapping = std::make_shared<FileMapping>();
  mapping->identity = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  mapping->region =
      std::make_shared<const MappedRegion>(fd, file.path(), 0, static_cast<uint64_t>(st.st_size));
  return mapping;
}

std::string split_problem(const Split& split, uint64_t samples) {
  if (split.assign.size() != samples) {
    return "split " + split.name + " assigns " + std::to_string(split.assign.size()) +
           " samples, the dataset has " + std::to_string(samples);
  }
  if (split.folds < 1) return "split " + split.name + " has no folds";
  // A fold is an int16 of /assign: no more than 32767 of them.
  if (split.folds > std::numeric_limits<int16_t>::max()) {
    return "split " + split.name + " has " + std::to_string(split.folds) +
           " folds, more than the 32767 an assignment can name";
  }
  for (const int16_t a : split.assign) {
    // kRemovedFold: in no role (a removed sample, or one a change being
    // committed removes: read_splits_file()).
    if (a < format::kRemovedFold || a >= split.folds) {
      return "split " + split.name + " assigns fold " + std::to_string(a) + " of " +
             std::to_string(split.folds);
    }
  }
  return "";
}

std::vector<Split> read_split_groups(const TableReader& tables) {
  const h5::File& file = tables.file();
  std::vector<Split> splits;
  if (!file.exists(format::kSplitsGroup)) return splits;
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
    split.assign = tables.numbers<int16_t>(group + "/assign");
    tables.check(group, format::kAttrAttributesChecksum,
                 index_checksum::of_split_attributes(split));
    splits.push_back(std::move(split));
  }
  return splits;
}

void write_split_groups(h5::File& file, TableWriter& tables, const std::vector<Split>& splits) {
  file.create_group(format::kSplitsGroup);
  std::vector<const Split*> sorted;
  sorted.reserve(splits.size());
  for (const Split& split : splits) sorted.push_back(&split);
  std::sort(sorted.begin(), sorted.end(),
            [](const Split* a, const Split* b) { return a->name < b->name; });
  for (const Split* split : sorted) {
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
    if (!split->previous_samples.empty()) {
      tables.numbers(group + "/" + format::kSplitPreviousSamples, split->previous_samples);
      tables.numbers(group + "/" + format::kSplitPreviousAssign, split->previous_assign);
    }
  }
}

std::vector<Split> read_splits_file(const fs::path& dataset_dir, const std::string& uuid,
                                    uint64_t samples, uint64_t generation, bool map) {
  const fs::path path = dataset_dir / format::kSplitsFile;
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    throw file_error(path, std::string("missing: a format 2 dataset keeps its splits there (") +
                               format::kIndexFile + " is format 2)");
  }
  const h5::File file = h5::File::open_read(path);
  if (!file.has_attr("/", format::kAttrFormat)) {
    throw file_error(path, "not an imgpack splits file (no imgpack_format attribute)");
  }
  const int64_t version = file.read_int_attr("/", format::kAttrFormat);
  if (version != format::kIndexVersion) {
    throw file_error(path, "format version " + std::to_string(version) + ", but " +
                               format::kIndexFile + " is format " +
                               std::to_string(format::kIndexVersion));
  }
  const std::string file_uuid = file.read_string_attr("/", format::kAttrUuid);
  const int64_t file_samples = file.read_int_attr("/", format::kAttrSamples);
  const int64_t file_generation = file.has_attr("/", format::kAttrGeneration)
                                      ? file.read_int_attr("/", format::kAttrGeneration)
                                      : 0;
  const TableReader tables(file, version, true, map ? map_file(file) : nullptr);
  tables.check("/", format::kAttrAttributesChecksum,
               index_checksum::of_splits_file_attributes(
                   version, file_uuid, file_samples,
                   static_cast<uint64_t>(std::max<int64_t>(file_generation, 0))));
  const bool same = file_generation >= 0 && static_cast<uint64_t>(file_generation) == generation &&
                    file_samples >= 0 && static_cast<uint64_t>(file_samples) == samples;
  // A change being committed, or interrupted between its two renames:
  // splits.h5 of the next generation, index.h5 of this one. Extending a split
  // keeps every earlier assignment, so the index's samples read their own.
  // No change leaves the two files further apart: a splits file two or more
  // generations ahead (restored from another copy of the dataset) holds
  // folds that cannot be taken back to this generation.
  const bool ahead = file_generation >= 0 &&
                     static_cast<uint64_t>(file_generation) == generation + 1 &&
                     file_samples >= 0 && static_cast<uint64_t>(file_samples) >= samples;
  if (file_uuid == uuid && !same && !ahead && file_generation >= 0 &&
      static_cast<uint64_t>(file_generation) != generation) {
    throw file_error(path, "is generation " + std::to_string(file_generation) +
                               " of this dataset, " + format::kIndexFile + " generation " +
                               std::to_string(generation) +
                               ": the two come from different copies of it");
  }
  if (file_uuid != uuid || (!same && !ahead)) {
    throw file_error(path, "belongs to dataset " + file_uuid + " of " +
                               std::to_string(file_samples) + " samples (generation " +
                               std::to_string(file_generation) + "), but " + format::kIndexFile +
                               " is dataset " + uuid + " of " + std::to_string(samples) +
                               " (generation " + std::to_string(generation) +
                               "; left from another conversion?)");
  }
  std::vector<Split> splits = read_split_groups(tables);
  if (ahead) {
    for (Split& split : splits) {
      if (split.assign.size() < samples) continue;  // validate() names it
      std::vector<int16_t> prefix(split.assign.begin(), split.assign.begin() + samples);
      // The samples the change moved (removed), as this generation has them.
      const std::string group = split_group(split.name);
      const std::string ids = group + "/" + format::kSplitPreviousSamples;
      if (static_cast<uint64_t>(file_generation) == generation + 1 && file.exists(ids)) {
        const Column<int64_t> moved = tables.numbers<int64_t>(ids);
        const Column<int16_t> before =
            tables.numbers<int16_t>(group + "/" + format::kSplitPreviousAssign);
        if (moved.size() != before.size()) {
          throw file_error(path, "split " + split.name + ": " + std::to_string(moved.size()) +
                                     " previous samples but " + std::to_string(before.size()) +
                                     " previous assignments");
        }
        for (std::size_t i = 0; i < moved.size(); ++i) {
          if (moved[i] < 0 || static_cast<uint64_t>(moved[i]) >= samples) {
            throw file_error(path, "split " + split.name + ": previous sample " +
                                       std::to_string(moved[i]) + " is outside the " +
                                       std::to_string(samples) + " samples of " +
                                       format::kIndexFile);
          }
          prefix[static_cast<std::size_t>(moved[i])] = before[i];
        }
      }
      split.assign = std::move(prefix);
    }
  }
  // Checked here, not only with the index: the fault is this file's.
  for (const Split& split : splits) {
    if (std::string problem = split_problem(split, samples); !problem.empty()) {
      throw file_error(path, problem);
    }
  }
  return splits;
}

void write_splits_file(const fs::path& dataset_dir, const DatasetIndex& index) {
  const fs::path final_path = dataset_dir / format::kSplitsFile;
  fs::path tmp_path = final_path;
  tmp_path += format::kTmpSuffix;
  try {
    h5::File file = h5::File::create(tmp_path);
    TableWriter tables(file, format::kIndexVersion);
    const auto samples = static_cast<int64_t>(index.num_samples());
    file.write_attr("/", format::kAttrFormat, int64_t{format::kIndexVersion});
    file.write_attr("/", format::kAttrUuid, index.uuid);
    file.write_attr("/", format::kAttrSamples, samples);
    if (index.generation > 0) {
      file.write_attr("/", format::kAttrGeneration, static_cast<int64_t>(index.generation));
    }
    file.write_uint64_attr("/", format::kAttrAttributesChecksum,
                           index_checksum::of_splits_file_attributes(
                               format::kIndexVersion, index.uuid, samples, index.generation));
    write_split_groups(file, tables, index.splits);
    file.close();
    crash_point("splits-commit");
    commit_file(tmp_path, final_path);
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp_path, ec);
    throw;
  }
}

}  // namespace imgpack::detail
