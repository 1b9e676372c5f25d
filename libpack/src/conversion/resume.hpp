// Continuing an interrupted conversion from the shards it keeps (internal to
// imgpack::pack). prepare_output() (output_directory.hpp) decides which
// shards are kept; restore_kept_shards() turns them back into the state the
// interrupted run had when it committed the last of them.
#pragma once

#include <cstdint>
#include <vector>

#include "conversion/conversion_plan.hpp"
#include "conversion/convert_journal.hpp"
#include "conversion/output_directory.hpp"
#include "conversion/shard_writer.hpp"
#include "imgpack/convert.hpp"

namespace imgpack {

struct ConversionStart {
  uint64_t next_position = 0;         // first position of the write order still to convert
  std::vector<SkippedInput> skipped;  // inputs before it that were skipped
  ShardCommitJournal journal;         // continues after the kept shards
};

// Adds the samples of the kept shards to `index` (in write order), has
// `writer` adopt their files, and rewrites the journal to them; for a fresh
// run (nothing kept) starts a new journal. Throws imgpack::Error naming the
// journal if it cannot be written.
ConversionStart restore_kept_shards(const ConvertOptions& options, const ConversionPlan& plan,
                                    const ResumePoint& resume, DatasetIndex& index,
                                    DatasetWriter& writer);

// Appends `sample` to the sample table of `index`, with its file stamps.
void add_sample(DatasetIndex& index, const SourceSample& sample);

}  // namespace imgpack
