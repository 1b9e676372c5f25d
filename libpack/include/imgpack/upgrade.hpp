// Rewriting a dataset's index in the current format (imgpack upgrade).
//
// upgrade_dataset() rewrites a format 1 index as format 2 (docs/FORMAT.md):
// the same samples, labels, groups, classes, records, shards and splits
// (names, assignments and every attribute, `created` included), the uuid and
// convert_options unchanged, with the strings stored as bytes plus offsets
// and the splits moved into splits.h5. The result is byte for byte the index
// a format 2 conversion of the same dataset writes. The shards are opened
// and checked as Dataset::open checks them (structure, identity, the records'
// places; their pixels are not read) before anything is written: a format 1
// index has no checksums, and format 2's would otherwise vouch for damage.
//
// Atomic: splits.h5 is written first (NAME.tmp, fsync, rename; a format 1
// index.h5 ignores a splits.h5 beside it), then the new index.h5 replaces the
// old by rename. Killed at any point, the dataset opens as format 1 or as
// format 2, never half of each, and upgrading it again finishes the job. A
// program that opened the dataset before keeps its view. Runs that change
// the dataset take turns: it holds the directory's lock (as `imgpack split`
// and `imgpack convert` do) while it reads and replaces the index.
//
// Safe to call from several threads on different datasets.
#pragma once

#include <cstdint>
#include <filesystem>

namespace imgpack {

struct UpgradeResult {
  int64_t from_version = 0;  // the index format found
  int64_t to_version = 0;    // the index format now (format::kIndexVersion)
  bool upgraded = false;     // false: the index was of the current format already
  uint64_t samples = 0;
  uint64_t records = 0;
  uint64_t splits = 0;
  double seconds = 0;
};

// Upgrades the dataset in `dir` in place. Throws imgpack::Error naming the
// file when index.h5 or a shard is missing, damaged or unreadable (the dataset is then
// left as it was), or when a file cannot be written (likewise: what was
// written is removed, and index.h5 is the old one).
UpgradeResult upgrade_dataset(const std::filesystem::path& dir);

}  // namespace imgpack
