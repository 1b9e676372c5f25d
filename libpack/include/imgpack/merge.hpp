// Joining the parts of a conversion made on several machines.
//
// A conversion split with ConvertOptions::part (convert --part I/N on N
// machines, or N tasks of a Slurm array) leaves N part datasets in
// OUT/parts/I-of-N/. merge() checks that they are the N parts of one
// conversion and joins them into OUT: the parts' shards are renamed (never
// copied) into OUT as one sequence shard-00000.h5, shard-00001.h5, ..., and
// one index.h5 is written last. The result is a plain dataset of format 1,
// holding the same samples, labels, groups, classes, variants and pixels as
// a conversion of the same inputs in one piece (records in another order).
//
// Not thread-safe with other writers of OUT: merge() holds the lock on OUT
// that conversions and splits take, and the lock of every part.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "imgpack/convert_options.hpp"

namespace imgpack {

// OUT/parts/I-of-N: where ConvertOptions::part writes part I of N.
std::filesystem::path part_directory(const std::filesystem::path& out, const ConvertPart& part);

struct MergeOptions {
  std::filesystem::path out;  // the OUT the parts were converted into
  unsigned threads = 0;       // threads checking the parts' records; 0 = one per hardware thread
};

struct MergeResult {
  uint32_t parts = 0;
  uint64_t records = 0;
  uint64_t samples = 0;
  uint64_t shards = 0;
  uint64_t skipped = 0;  // inputs the parts skipped, all listed in OUT/report.json
  std::string uuid;
  std::vector<std::string> split_warnings;  // e.g. classes smaller than the folds
  bool resumed = false;                     // continued a merge that was interrupted
  bool already_merged = false;              // OUT held the merged dataset: nothing was done
  // Files in OUT/parts that no conversion wrote (notes, a copy): merge
  // removes only what it knows, so these stay, with the folders holding them.
  std::vector<std::string> left_behind;
  double seconds = 0;
};

// Merges OUT/parts/*/ into OUT. Before anything is moved it checks that all
// N parts are there and complete (each has its index.h5, none is being
// converted now), were made with the same options over the same listing
// (their fingerprints agree), and that together they hold every input of
// the listing exactly once (as a sample or a skipped input); then it checks
// every shard of every part as verify_dataset() would (structure, that it is
// the shard its part's index places there, every record's checksum), since
// the renumbering would hide a damaged or misplaced shard. Anything else
// is a UsageError naming the part (and the shard) and the problem, and OUT
// is left as it was. A part found damaged is redone by converting it again
// with ConvertOptions::resume, which finds the damage. The splits of
// ConvertOptions::splits are computed over the merged samples.
// OUT/report.json sums the parts' reports.
//
// Crash-safe: the plan is journaled in OUT/merge.journal before the first
// rename, each shard is finished and renamed crash-safely, index.h5 comes
// last, and the same call after a crash (kill -9, power loss) continues
// where it stopped; after a merge that finished, it has nothing to do and
// returns at once (resumed). Once index.h5 is in place the parts' folders are
// removed. Throws imgpack::Error naming the file for I/O failures.
MergeResult merge(const MergeOptions& options);

// For a part of a conversion in parts (a dataset whose index's
// convert_options carry its part record, as OUT/parts/I-of-N does): the
// first shard whose `part` attribute names another part or none, as a
// problem naming the file; "" where every shard names this part, or `dir`
// holds no part. Parts number their samples and shards alike, so a shard
// copied from another part can agree with this part's index in all that
// verify_dataset() checks; `imgpack verify` of a part runs this too, as
// merge() and a resumed part do. Throws imgpack::Error naming the file where
// index.h5 or a shard cannot be read.
std::string check_part_shards(const std::filesystem::path& dir);

// Whether the parts of the conversion whose dataset uuid is `uuid` are in
// OUT already: merged (OUT's index.h5 is that dataset) or being merged
// (OUT/merge.journal names it). Then a part converted again with
// ConvertOptions::resume has nothing to do (its shards are in OUT, or on
// their way), and merge() finishes what is left: the returned text says so.
// Empty where neither holds. Throws UsageError where OUT holds another
// dataset (index.h5 of another uuid): no part could be merged there.
std::string parts_merged_into(const std::filesystem::path& out, const std::string& uuid);

// For a part converted with ConvertOptions::overwrite ("replace the dataset
// already in OUT"): removes the dataset OUT holds, whichever conversion made
// it (a finished merge, one under way, or a conversion in one piece):
// index.h5 first (no reader accepts OUT after that), then its shards,
// splits.h5, report.json, the journals and their temporary files, and the
// part folders of a conversion into another number of parts than `parts`.
// The parts of this one stay, each replaced by that part's own conversion.
// Where there is anything to remove, holds OUT's lock meanwhile, waiting
// for it where another part does the same (or converts), so every part
// finds OUT with a dataset or without, never half removed. Returns whether anything was removed.
// Throws UsageError, having removed nothing, where OUT holds anything else (a file or folder
// imgpack did not write), imgpack::Error naming the file for I/O failures.
bool discard_merged_dataset(const std::filesystem::path& out, uint32_t parts);

}  // namespace imgpack
