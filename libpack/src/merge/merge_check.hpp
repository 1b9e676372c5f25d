// Checking the shards a merge adopts before it changes anything (internal to
// imgpack::pack; merge() in merge.hpp calls it).
#pragma once

#include <filesystem>

#include "merge/merge_plan.hpp"

namespace imgpack {

// Checks every shard of `plan` as verify_dataset() checks a dataset's: its
// structure (read_shard()), that it is the very shard its part's index.h5
// places there (dataset uuid, shard index, and its /sample, /variant and
// /labels columns row by row), and every record's and mask's checksum, on
// `threads` threads (0: all cores). So a shard that was flipped, truncated,
// removed, swapped with another, or taken from another dataset is refused
// before merge() renumbers it, and the damage cannot hide in the merged
// dataset, whose /sample columns and shard numbers merge() rewrites.
//
// `resuming`: OUT/merge.journal exists, so some shards may be in OUT already,
// renumbered (they must then hold their merged identity), and the shard the
// merge was renumbering when it stopped may hold either identity and HDF5's
// "open for writing" mark, which is cleared (as merge() clears it anyway).
//
// First, that merge() can change every shard as it must without changing
// anything else: a shard that is a symbolic link or has other hard links is
// refused (UsageError), and a shard, part folder or OUT that cannot be
// written is an imgpack::Error naming it, before anything changes.
//
// Throws UsageError naming the part, the shard file and the problem (and how
// many other problems there are); otherwise changes nothing.
void check_adopted_shards(const std::filesystem::path& out, const MergePlan& plan, bool resuming,
                          unsigned threads);

}  // namespace imgpack
