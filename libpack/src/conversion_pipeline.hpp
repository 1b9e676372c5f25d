// The conversion pipeline (internal to imgpack::pack): a oneTBB pipeline
// over a plan's inputs that reads and renders each one on worker threads and
// writes its records in write order. convert() and an append run it.
#pragma once

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/task_arena.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "conversion/conversion_plan.hpp"
#include "conversion/convert_journal.hpp"
#include "conversion/read_ahead.hpp"
#include "conversion/shard_writer.hpp"
#include "imgpack/convert.hpp"
#include "imgpack/error.hpp"
#include "record_renderer.hpp"

namespace imgpack {

// The threads a conversion runs on: ConvertOptions::threads (0: one per
// core), as an arena of that many. More threads than cores (asked for to
// hide I/O waits) hold oneTBB's leave for the object's life: oneTBB lends an
// arena at most one worker per core besides the caller, and without it
// prints a warning and runs with fewer.
class ConversionThreads {
 public:
  explicit ConversionThreads(unsigned requested);
  unsigned count() const { return count_; }
  tbb::task_arena& arena() { return arena_; }

 private:
  unsigned count_;
  std::optional<tbb::global_control> allow_;
  tbb::task_arena arena_;
};

// Thrown once a run has skipped more inputs than ConvertOptions::max_skipped allows.
class TooManySkipped : public Error {
 public:
  using Error::Error;
};

// What a run that skips too many inputs is: a conversion (its journal and
// report.json keep what it did: resume continues it) or an append (it
// changes nothing).
enum class SkipLimitOf : uint8_t { conversion, append };

// Throws TooManySkipped, naming the count and the first reasons, and how to
// go on for `run`, when `skipped` is more than ConvertOptions::max_skipped
// allows of the plan's inputs; under OnError::fail, when anything was
// skipped (the scan's skips too: a missing or unreadable file, one outside
// a class folder), naming the first.
void check_skip_limit(const ConvertOptions& options, const ConversionPlan& plan,
                      const std::vector<SkippedInput>& skipped, SkipLimitOf run);

// What a conversion or an append warns of before it runs: input_warnings()
// and, for boxes in variants that fill uncovered areas with a mirror of the
// image, reflected_objects_warning(). None where all is well.
std::vector<std::string> run_warnings(const ConvertOptions& options, const ConversionPlan& plan);

// The oneTBB pipeline over the inputs still to convert: a serial source hands
// out the write positions in order (and lets ReadAhead ask for the files of
// the next ones), parallel workers read and render each
// input into its slot, a serial sink adds the sample to `index` (its id the
// next row of the sample table) and writes its records in write order, or
// records the input as skipped in result.skipped. Memory is bounded by the
// slots, a few per thread, whatever the dataset size. `journal`, where given,
// hears of every input done or skipped. Not thread-safe: run() once at a time.
class ConversionPipeline {
 public:
  ConversionPipeline(const ConvertOptions& options, const ConversionPlan& plan, unsigned threads,
                     DatasetIndex& index, DatasetWriter& writer, ShardCommitJournal* journal,
                     ConvertResult& result);

  // Converts the inputs from write position `first` on, of which
  // `skipped_before` inputs before `first` were skipped (for progress).
  // Throws what the writer throws, Error for an input under OnError::fail,
  // TooManySkipped.
  void run(tbb::task_arena& arena, uint64_t first, uint64_t skipped_before,
           const ProgressFn& progress);

  // The upright sizes of the inputs converted, and how many had each.
  const std::map<std::pair<uint32_t, uint32_t>, uint64_t>& source_sizes() const {
    return source_sizes_;
  }

 private:
  using Clock = std::chrono::steady_clock;

  InputSlot* next_input(tbb::flow_control& fc);
  void render(InputSlot& slot) const;
  void write(InputSlot& slot);

  const ConvertOptions& options_;
  const ConversionPlan& plan_;
  DatasetIndex& index_;
  DatasetWriter& writer_;
  ShardCommitJournal* journal_;  // none in an append
  ConvertResult& result_;
  const RecordRenderer renderer_;
  std::vector<InputSlot> slots_;  // reused round-robin: nothing allocated per input

  std::size_t next_ = 0;                                            // serial source's
  ReadAhead* read_ahead_ = nullptr;                                 // run()'s, for the source
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> source_sizes_;  // the sink's
  ConvertProgress status_;
  const ProgressFn* progress_ = nullptr;
  Clock::time_point start_;
};

}  // namespace imgpack
