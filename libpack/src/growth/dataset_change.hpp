// What every change of a dataset shares (internal to imgpack::pack): the
// leftovers of an interrupted change cleared, and the next generation
// committed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "files.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/growth.hpp"

namespace imgpack {

// A change of a dataset under way: the lock on its directory, held until
// the change is committed, and its index as read under the lock.
struct DatasetChange {
  DirectoryLock lock;
  DatasetIndex index;
  FileTally leftovers_removed;  // by clear_leftovers()
  // The shard files the index did not list as the change began: those a
  // compaction kept for readers opened before, or an interrupted change
  // left. A change that fails leaves them (abandon_change()).
  std::set<std::string> found_unlisted;
};

// Takes the lock on `dir` (never waits), reads its index and refuses a
// format 1 index (`change` names the command in the message: "append").
// Removes nothing: what an interrupted change left, and the files a
// compaction replaced (which readers opened before may still read), stay
// until the change is sure to be made (clear_leftovers()). Throws
// UsageError for a missing directory, a lock held by another command or a
// format 1 index; Error naming the file for a damaged one.
DatasetChange begin_change(const std::filesystem::path& dir, const std::string& change);

// Removes what `change`'s index does not list (remove_leftovers()), into
// change.leftovers_removed: called once a change has found its request good
// and is about to write, so that a change refused or with nothing to do
// leaves the dataset's files as they were.
void clear_leftovers(const std::filesystem::path& dir, DatasetChange& change);

// Removes what an interrupted change left in `dir` that `index` does not
// list: shard files of no generation and temporary files (NAME.tmp) of
// shards, index.h5 and splits.h5, but the shard files named in `spare`. No
// reader opened since sees them: index.h5 lists the shards a reader opens.
// Returns what it removed. Throws imgpack::Error naming a file it cannot
// remove.
FileTally remove_leftovers(const std::filesystem::path& dir, const DatasetIndex& index,
                           const std::set<std::string>& spare = {});

// For a catch block of a change that began at generation `generation` of
// `dir` and failed: removes the files it wrote (remove_leftovers(), sparing
// `spare`: DatasetChange::found_unlisted) if the index on disk is still that
// generation, then rethrows the exception being
// handled: a plain imgpack::Error (not a UsageError or another subclass) as
// one with "(WHAT_NOT_DONE: DIR stays at generation N)" added, where that
// holds. Once the index is
// committed, nothing is removed: the files it no longer lists are those that
// readers opened before still read. An error removing them is left for the
// next change, which removes the same files.
[[noreturn]] void abandon_change(const std::filesystem::path& dir, uint64_t generation,
                                 const std::string& what_not_done,
                                 const std::set<std::string>& spare = {});

// Commits `index`, changed by `change` ("append", "remove", ...), as the
// next generation: a history row (with row 0 for the conversion where the
// history is new), every split extended over the samples after the first
// `old_samples` and with removed samples out of their folds (warnings
// appended to `warnings`), then splits.h5 and index.h5 by rename.
void commit_change(const std::filesystem::path& dir, DatasetIndex& index, const std::string& change,
                   uint64_t added, uint64_t removed, std::size_t old_samples,
                   std::vector<std::string>& warnings);

}  // namespace imgpack
