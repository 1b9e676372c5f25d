#include "growth/dataset_change.hpp"

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <utility>

#include "conversion/conversion_parts.hpp"
#include "error_note.hpp"
#include "files.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/split.hpp"
#include "split/split_extend.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

// Calls `each(entry, bytes)` for every file in `dir` that a change leaves
// behind and `index` does not list: shard files, and temporary files of
// shards, index.h5 and splits.h5 when `temporary_too`.
template <class Each>
void for_each_unlisted(const fs::path& dir, const DatasetIndex& index, bool temporary_too,
                       Each&& each) {
  const std::set<std::string> listed(index.shards.file.begin(), index.shards.file.end());
  const std::string tmp = format::kTmpSuffix;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::string stem = name;
    const bool temporary = name.ends_with(tmp);
    if (temporary) stem = name.substr(0, name.size() - tmp.size());
    const bool ours = format::is_shard_file_name(stem) || stem == format::kIndexFile ||
                      stem == format::kSplitsFile;
    if (!ours || (temporary && !temporary_too) ||
        (!temporary && (!format::is_shard_file_name(name) || listed.count(name) > 0))) {
      continue;
    }
    std::error_code size_ec;
    const uintmax_t size = entry.file_size(size_ec);
    each(entry, size_ec ? 0 : static_cast<uint64_t>(size));
  }
  if (ec) throw system_error(dir, "cannot list", ec.value());
}

}  // namespace

FileTally unlisted_shard_files(const fs::path& dataset, const DatasetIndex& index) {
  FileTally tally;
  for_each_unlisted(dataset, index, false, [&](const fs::directory_entry&, uint64_t bytes) {
    ++tally.files;
    tally.bytes += bytes;
  });
  return tally;
}

FileTally remove_leftovers(const fs::path& dir, const DatasetIndex& index,
                           const std::set<std::string>& spare) {
  FileTally removed;
  for_each_unlisted(dir, index, true, [&](const fs::directory_entry& entry, uint64_t bytes) {
    if (spare.count(entry.path().filename().string()) > 0) return;
    std::error_code remove_ec;
    fs::remove(entry.path(), remove_ec);
    if (remove_ec) {
      throw system_error(entry.path(), "cannot remove the leftover of an interrupted change",
                         remove_ec.value());
    }
    ++removed.files;
    removed.bytes += bytes;
  });
  if (removed.files > 0) fsync_path(dir);
  return removed;
}

DatasetChange begin_change(const fs::path& dir, const std::string& change) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw UsageError(dir.string() + (fs::exists(dir, ec)
                                         ? ": not a directory (a dataset is the folder holding " +
                                               std::string(format::kIndexFile) + ")"
                                         : ": no such dataset directory"));
  }
  std::optional<DirectoryLock> lock = DirectoryLock::try_acquire(dir);
  if (!lock) {
    throw UsageError(dir.string() +
                     ": another command is changing this dataset now; wait for it to finish, "
                     "then run this one again");
  }
  DatasetChange begun{std::move(*lock), read_index(dir), {}, {}};
  if (begun.index.format_version < 2) {
    throw UsageError(dir.string() + ": index format 1; run `imgpack upgrade` on it first, then " +
                     change);
  }
  // A part's samples, removals and shards are what merge adopts and
  // renumbers: a change made to a part would be lost or half kept there.
  if (is_conversion_part(begun.index.convert_options)) {
    throw UsageError(dir.string() +
                     ": a part of a conversion in parts; merge the parts first (imgpack merge), "
                     "then " +
                     change + " on the merged dataset");
  }
  for_each_unlisted(dir, begun.index, false, [&](const fs::directory_entry& entry, uint64_t) {
    begun.found_unlisted.insert(entry.path().filename().string());
  });
  return begun;
}

void clear_leftovers(const fs::path& dir, DatasetChange& change) {
  change.leftovers_removed = remove_leftovers(dir, change.index);
}

namespace {

// Removes what a failed change of generation `generation` left, if the index
// on disk is still that generation; returns whether it is.
bool discard_uncommitted(const fs::path& dir, uint64_t generation,
                         const std::set<std::string>& spare) {
  DatasetIndex on_disk;
  try {
    on_disk = read_index(dir, {.sample_paths = false, .group_names = false, .records = false});
  } catch (const std::exception&) {
    return false;
  }
  if (on_disk.generation != generation) return false;
  try {
    remove_leftovers(dir, on_disk, spare);
  } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): the change's error matters
  }
  return true;
}

}  // namespace

void abandon_change(const fs::path& dir, uint64_t generation, const std::string& what_not_done,
                    const std::set<std::string>& spare) {
  if (!discard_uncommitted(dir, generation, spare)) throw;
  rethrow_with_note(what_not_done + ": " + dir.string() + " stays at generation " +
                    std::to_string(generation));
}

void commit_change(const fs::path& dir, DatasetIndex& index, const std::string& change,
                   uint64_t added, uint64_t removed, std::size_t old_samples,
                   std::vector<std::string>& warnings) {
  if (index.history.empty()) {
    index.history.push_back({0, "", "convert", old_samples, 0});
  }
  index.generation += 1;
  index.history.push_back({index.generation, utc_timestamp(), change, added, removed});
  const MultilabelRows multilabel{index.sample_multilabel.span(), index.multilabel_names.size()};
  for (Split& split : index.splits) {
    SplitExtension extended =
        extend_split(split, index.sample_label.span(), index.sample_group.span(), multilabel,
                     index.sample_removed.span());
    for (std::string& warning : extended.warnings) {
      warnings.push_back("split " + split.name + ": " + std::move(warning));
    }
    // What a reader of the generation before reads for the samples this
    // change moved, should it open the dataset between the two renames.
    split.previous_samples.clear();
    split.previous_assign.clear();
    for (std::size_t s = 0; s < split.assign.size(); ++s) {
      if (split.assign[s] != extended.assign[s]) {
        split.previous_samples.push_back(static_cast<int64_t>(s));
        split.previous_assign.push_back(split.assign[s]);
      }
    }
    split.assign = std::move(extended.assign);
  }
  write_index(dir, index);
}

}  // namespace imgpack
