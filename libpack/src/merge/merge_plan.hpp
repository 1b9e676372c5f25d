// Reading and checking the parts of a conversion, and the plan that joins
// them (internal to imgpack::pack; merge() in merge.hpp carries it out).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "conversion/conversion_parts.hpp"
#include "conversion/output_files.hpp"
#include "files.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/error.hpp"

namespace imgpack {

// One complete part: its folder, index and report.
struct PartDataset {
  PartRecord record;
  std::filesystem::path dir;
  DatasetIndex index;
  std::string report;    // its report.json
  uint64_t skipped = 0;  // the inputs its report lists as skipped
};

// Shard `shard` of the merged dataset: shard `part_shard` of part `part`,
// the file `from` (relative to OUT), renamed to `to` once its /sample column
// holds `samples` (instead of `part_samples`) and its shard_index attribute
// `shard`. Its /variant and /labels columns stay as they are: `variants` and
// `labels`, row by row.
struct ShardMove {
  std::string from;
  std::string to;
  uint32_t shard = 0;
  std::vector<int64_t> samples;
  std::size_t part = 0;  // index into MergePlan::parts
  uint32_t part_shard = 0;
  std::vector<int64_t> part_samples;
  std::vector<uint16_t> variants;
  std::vector<int32_t> labels;
};

struct MergePlan {
  std::vector<PartDataset> parts;    // by part index
  std::vector<DirectoryLock> locks;  // of every part, held while merging
  DatasetIndex index;                // the merged index, splits not yet computed
  std::vector<ShardMove> moves;      // in merged shard order
};

// Reads OUT/parts/*/ and checks that they are the complete parts of one
// conversion that together hold every input of its listing once; throws
// UsageError naming the part and the problem otherwise. Reads only the
// parts' index.h5 and report.json, never their shards, so the same plan
// comes out after some shards have moved.
MergePlan plan_merge(const std::filesystem::path& out);

// The refusal of part `part` in `dir`, damaged as `problem` says, with how
// to go on: convert the part again with resume, which finds the damage.
UsageError damaged_part(const std::filesystem::path& dir, const ConvertPart& part,
                        const std::string& problem);

// The journal's text for `plan`: the moves, in order.
std::string merge_journal_text(const MergePlan& plan);

}  // namespace imgpack
