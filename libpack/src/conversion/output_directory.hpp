// Preparing a conversion's output directory, and what a resumed conversion
// keeps of an interrupted one. Internal to imgpack::pack.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "conversion/conversion_plan.hpp"
#include "conversion/convert_journal.hpp"
#include "conversion/shard_writer.hpp"
#include "files.hpp"
#include "imgpack/convert.hpp"

namespace imgpack {

// The verified work of an interrupted run that a resumed run keeps.
struct KeptShard {
  JournalShard journal;
  std::vector<int64_t> samples;    // the shard's /sample column
  std::vector<uint16_t> variants;  // its /variant column
};

struct ResumePoint {
  uint64_t next_position = 0;      // first position of ConversionPlan::order to convert
  std::vector<KeptShard> shards;   // in shard order
  std::vector<std::string> notes;  // what was discarded and why, for the report
};

// Throws UsageError naming OUT where it is SRC or the mask folder, or lies
// inside one of them: imgpack never modifies its inputs, and a dataset among
// them would be read as input by the next scan.
void refuse_output_among_inputs(const ConvertOptions& options);

// Creates the directory `out` (and its parents) where it is missing. A path
// that is a file, a link to nothing, or cannot name a directory is a
// UsageError naming it; a file system that refuses (read-only, full) is an
// Error.
void make_output_directory(const std::filesystem::path& out);

// Creates OUT if it is missing and takes an exclusive lock on it for the
// whole conversion: two conversions into one OUT at once (a run and its
// --resume, say) would remove each other's files. Another process holding the
// lock is a UsageError naming OUT; so are an OUT inside SRC and an OUT that
// is not a directory.
DirectoryLock lock_output(const ConvertOptions& options);

// Makes OUT ready for `plan`:
//  - a new or empty OUT is created or used as is;
//  - a complete or partial dataset in OUT is refused (UsageError explaining
//    --overwrite and --resume), or removed with --overwrite; so is a
//    conversion in parts (OUT/parts, a merge of them under way), whose part
//    folders are removed only when none is being converted now;
//  - with --resume, the shards of an interrupted run of the same conversion
//    (same dataset uuid) that are whole and match their checksums are kept,
//    everything after them is removed, and the point to continue from is
//    returned.
// Files that imgpack did not write are never removed: OUT holding one is a UsageError.
ResumePoint prepare_output(const ConvertOptions& options, const ConversionPlan& plan);

// True if OUT holds a complete dataset of this very conversion (its index.h5
// has the plan's uuid), which --resume then has nothing to add to.
bool output_is_complete(const ConvertOptions& options, const ConversionPlan& plan);

// For a complete dataset in OUT that --resume finds: verifies it whole
// (verify_dataset(), on options.threads threads) and returns "" if it is
// intact. Otherwise removes its index.h5, so that no reader accepts it and
// prepare_output() converts it again, and returns what was wrong, naming the
// file (a shard damaged since the conversion: flipped, truncated, swapped or
// replaced, or in a part, a shard copied from another part).
std::string discard_if_damaged(const ConvertOptions& options);

// The same for a complete part (ConvertOptions::part) whose report.json,
// which merge() reads for the inputs the part skipped, is missing or not a
// report: its index.h5 is removed, and the part converted again.
std::string discard_if_report_unreadable(const ConvertOptions& options);

}  // namespace imgpack
