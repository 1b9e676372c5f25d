// convert(): plan, prepare OUT, restore a resumed run, run the pipeline,
// then the splits, report.json and index.h5, last.
#include "imgpack/convert.hpp"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "conversion/conversion_plan.hpp"
#include "conversion/conversion_report.hpp"
#include "conversion/output_directory.hpp"
#include "conversion/resume.hpp"
#include "conversion/shard_writer.hpp"
#include "files.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/merge.hpp"
#include "parallel/tbb_tsan.hpp"
#include "record_renderer.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Thrown once a run has skipped more inputs than ConvertOptions::max_skipped allows.
class TooManySkipped : public Error {
 public:
  using Error::Error;
};

// Inputs the run found: those planned for conversion and those skipped by the scan.
uint64_t inputs_found(const ConversionPlan& plan) {
  return plan.order.size() + plan.list.skipped.size();
}

// What ResizeMode::crop cuts from inputs of another aspect ratio than the
// output, for the three most common input sizes that lose more than 1% of a
// side: "crop keeps 75% of the width of 640x480 inputs (1200 of them)".
std::vector<std::string> crop_notes(
    const ConvertOptions& options, RecordShape shape,
    const std::map<std::pair<uint32_t, uint32_t>, uint64_t>& sizes) {
  std::vector<std::string> notes;
  if (!options.size || options.resize != ResizeMode::crop) return notes;
  std::vector<std::pair<std::pair<uint32_t, uint32_t>, uint64_t>> common(sizes.begin(),
                                                                         sizes.end());
  std::stable_sort(common.begin(), common.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [size, count] : common) {
    if (notes.size() == 3) break;
    const auto [width, height] = size;
    if (width == 0 || height == 0) continue;
    const double scale = std::max(static_cast<double>(shape.width) / width,
                                  static_cast<double>(shape.height) / height);
    const double kept_width = shape.width / (scale * width);
    const double kept_height = shape.height / (scale * height);
    const double kept = std::min(kept_width, kept_height);
    if (kept >= 0.99) continue;
    notes.push_back("crop keeps " + std::to_string(static_cast<int>(std::lround(kept * 100))) +
                    "% of the " + (kept_width < kept_height ? "width" : "height") + " of " +
                    std::to_string(width) + "x" + std::to_string(height) + " inputs (" +
                    std::to_string(count) + " of them); ResizeMode::pad keeps all of it");
  }
  return notes;
}

// Throws TooManySkipped, naming the count and the first reasons, when
// `skipped` is more than ConvertOptions::max_skipped allows.
void check_skip_limit(const ConvertOptions& options, const ConversionPlan& plan,
                      const std::vector<SkippedInput>& skipped) {
  if (options.on_error != OnError::skip) return;
  const uint64_t inputs = inputs_found(plan);
  const uint64_t allowed = options.max_skipped.allowed(inputs);
  if (skipped.size() <= allowed) return;
  std::string message = options.src.string() + ": " + std::to_string(skipped.size()) + " of the " +
                        std::to_string(inputs) +
                        " inputs were skipped, more than ConvertOptions::max_skipped " +
                        options.max_skipped.text() + " allows (" + std::to_string(allowed) +
                        "); stopped without writing " + format::kIndexFile + ". The first: ";
  for (std::size_t i = 0; i < std::min<std::size_t>(skipped.size(), 3); ++i) {
    message += (i > 0 ? "; " : "") + skipped[i].path + ": " + skipped[i].reason;
  }
  message += " (every reason in " + (options.out / format::kReportFile).string() +
             "). Fix the inputs, or rerun with ConvertOptions::resume and a larger "
             "ConvertOptions::max_skipped to accept them";
  throw TooManySkipped(message);
}

// The oneTBB pipeline over the inputs still to convert: a serial source hands
// out the write positions in order, parallel workers read and render each
// input into its slot, a serial sink writes the records in write order (or
// records the input as skipped). Memory is bounded by the slots, a few per
// thread, whatever the dataset size.
class ConversionPipeline {
 public:
  ConversionPipeline(const ConvertOptions& options, const ConversionPlan& plan, unsigned threads,
                     DatasetIndex& index, DatasetWriter& writer, ShardCommitJournal& journal,
                     ConvertResult& result)
      : options_(options),
        plan_(plan),
        index_(index),
        writer_(writer),
        journal_(journal),
        result_(result),
        renderer_(options, plan.shape, plan.list, plan.mask_colors),
        slots_(std::size_t{threads} * 4) {
    for (InputSlot& slot : slots_) {
      slot.pixels.resize(options.variants * plan.shape.bytes());
      slot.checksums.resize(options.variants);
      if (options.has_masks()) {
        slot.masks.resize(options.variants * plan.shape.pixels());
        slot.mask_checksums.resize(options.variants);
      }
      if (plan.list.boxes) slot.boxes.resize(options.variants);
    }
  }

  // Converts the inputs from write position `first` on, of which
  // `skipped_before` inputs before `first` were skipped (for progress).
  void run(tbb::task_arena& arena, uint64_t first, uint64_t skipped_before,
           const ProgressFn& progress) {
    next_ = first;
    status_.total = plan_.order.size();
    status_.done = first;
    status_.skipped = skipped_before;
    progress_ = &progress;
    start_ = Clock::now();
    tsan::ForkJoin region;  // joins before the slots go, also on an exception
    arena.execute([&] {
      const auto filters = tbb::make_filter<void, InputSlot*>(tbb::filter_mode::serial_in_order,
                                                              [&](tbb::flow_control& fc) {
                                                                tsan::TaskScope task(region);
                                                                return next_input(fc);
                                                              }) &
                           tbb::make_filter<InputSlot*, InputSlot*>(tbb::filter_mode::parallel,
                                                                    [&](InputSlot* slot) {
                                                                      tsan::TaskScope task(region);
                                                                      render(*slot);
                                                                      return slot;
                                                                    }) &
                           tbb::make_filter<InputSlot*, void>(tbb::filter_mode::serial_in_order,
                                                              [&](InputSlot* slot) {
                                                                tsan::TaskScope task(region);
                                                                write(*slot);
                                                              });
      region.fork(filters);  // after make_filter has copied the bodies the workers call
      tbb::parallel_pipeline(slots_.size(), filters);
    });
    region.join();
  }

  // The upright sizes of the inputs converted, and how many had each.
  const std::map<std::pair<uint32_t, uint32_t>, uint64_t>& source_sizes() const {
    return source_sizes_;
  }

 private:
  // Serial source: the next write position, in a slot of its own.
  InputSlot* next_input(tbb::flow_control& fc) {
    tsan::Handoff serial(&next_);
    if (next_ == plan_.order.size()) {
      fc.stop();
      return nullptr;
    }
    InputSlot* slot = &slots_[next_ % slots_.size()];
    tsan::Handoff item(slot);
    slot->position = next_;
    slot->sample = plan_.order[next_++];
    return slot;
  }

  // Parallel: reads and renders one input, or notes why it cannot be used.
  void render(InputSlot& slot) const {
    tsan::Handoff item(&slot);
    slot.error = read_file(options_.src / plan_.list.samples[slot.sample].path, slot.file_bytes);
    if (!slot.error.empty()) return;
    try {
      renderer_.render(slot);
    } catch (const DecodeError& e) {
      slot.error = e.what();
    } catch (const cv::Exception& e) {
      slot.error = std::string("image processing failed: ") + e.what();
    }
  }

  // Serial sink, in write order: the input's records, or its skip.
  void write(InputSlot& slot) {
    tsan::Handoff serial(&status_);
    tsan::Handoff item(&slot);
    const SourceSample& sample = plan_.list.samples[slot.sample];
    const uint32_t variants = options_.variants;
    if (!slot.error.empty()) {
      if (options_.on_error == OnError::fail) {
        throw Error((options_.src / sample.path).string() + ": " + slot.error + " (OnError::fail)");
      }
      result_.skipped.push_back({sample.path, slot.error});
      journal_.skipped(slot.position, slot.error);
      writer_.forgo(variants);
      ++status_.skipped;
      check_skip_limit(options_, plan_, result_.skipped);
    } else {
      const auto id = static_cast<int64_t>(index_.num_samples());
      add_sample(index_, sample);
      ++source_sizes_[{slot.source_width, slot.source_height}];
      journal_.inputs_done(slot.position + 1);  // a shard committed now ends here
      const std::size_t record_bytes = plan_.shape.bytes();
      const std::size_t mask_bytes = plan_.shape.pixels();
      const bool masks = options_.has_masks();
      for (uint32_t v = 0; v < variants; ++v) {
        RecordParts parts;
        if (masks) parts = {slot.masks.data() + v * mask_bytes, slot.mask_checksums[v]};
        if (plan_.list.boxes) parts.boxes = &slot.boxes[v];
        writer_.add(slot.pixels.data() + v * record_bytes, slot.checksums[v], sample.label, id,
                    static_cast<uint16_t>(v), parts);
      }
    }
    ++status_.done;
    if (*progress_) {
      status_.elapsed_s = seconds_since(start_);
      (*progress_)(status_);
    }
  }

  const ConvertOptions& options_;
  const ConversionPlan& plan_;
  DatasetIndex& index_;
  DatasetWriter& writer_;
  ShardCommitJournal& journal_;
  ConvertResult& result_;
  const RecordRenderer renderer_;
  std::vector<InputSlot> slots_;  // reused round-robin: nothing allocated per input

  std::size_t next_ = 0;                                            // serial source's
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> source_sizes_;  // the sink's
  ConvertProgress status_;
  const ProgressFn* progress_ = nullptr;
  Clock::time_point start_;
};

// --resume on an OUT that already holds this very dataset (a run stopped
// between writing index.h5 and removing its journal): nothing to convert.
ConvertResult already_complete(const ConvertOptions& options, ConvertResult result) {
  if (fs::exists(options.out / kJournalFile)) {
    fs::remove(options.out / kJournalFile);
    fsync_path(options.out);
  }
  const DatasetIndex done = read_index(options.out);
  result.records = done.num_records();
  result.samples = done.num_samples();
  result.shards = done.num_shards();
  result.already_complete = true;
  return result;
}

// The requested splits of the converted samples. When no input was skipped
// the samples are those the plan split, and its splits are stored as they are.
void store_splits(const ConvertOptions& options, const ConversionPlan& plan, DatasetIndex& index,
                  std::vector<std::string>& warnings) {
  const bool all_converted = index.num_samples() == plan.order.size();
  for (std::size_t i = 0; i < options.splits.size(); ++i) {
    const NamedSplitSpec& split = options.splits[i];
    Split stored;
    if (all_converted) {
      const SplitResult& planned = plan.splits[i];
      warnings.insert(warnings.end(), planned.warnings.begin(), planned.warnings.end());
      stored = named_split(split.name, split.spec, planned, "");
    } else {
      stored = make_split(index, split.name, split.spec, "", &warnings);
    }
    store_split(index, std::move(stored), false);
  }
}

// convert() into options.out, which for a part is its own folder.
ConvertResult convert_into(const ConvertOptions& options, const ProgressFn& progress) {
  const Clock::time_point start = Clock::now();
  options.validate();
  ConversionTimings timings;
  timings.threads =
      options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  // oneTBB lends an arena at most one worker per core besides the caller:
  // more threads than cores (asked for to hide I/O waits) need its leave, or
  // it prints a warning and runs with fewer.
  std::optional<tbb::global_control> allow_threads;
  if (timings.threads > std::max(1u, std::thread::hardware_concurrency())) {
    allow_threads.emplace(tbb::global_control::max_allowed_parallelism, timings.threads);
  }
  tbb::task_arena arena(static_cast<int>(timings.threads));

  const ConversionPlan plan = make_plan(options, arena);
  timings.plan_s = seconds_since(start);
  const DirectoryLock lock = lock_output(options);
  ConvertResult result;
  result.width = plan.shape.width;
  result.height = plan.shape.height;
  result.channels = plan.shape.channels;
  result.uuid = plan.uuid;
  std::string damage;
  if (options.resume && !options.overwrite && output_is_complete(options, plan)) {
    damage = discard_if_damaged(options);
    if (damage.empty()) {
      result = already_complete(options, std::move(result));
      result.seconds = seconds_since(start);
      return result;
    }
  }

  ResumePoint resume = prepare_output(options, plan);
  if (!damage.empty()) resume.notes.insert(resume.notes.begin(), damage);
  DatasetIndex index = planned_index(options, plan);
  DatasetWriter writer(options.out, plan.shape, options.shard_size, plan.uuid,
                       uint64_t{options.variants} * (plan.order.size() - resume.next_position),
                       options.variants,
                       {.masks = options.has_masks(),
                        .boxes = plan.list.boxes,
                        .keypoints = plan.list.keypoint_names.size()});
  ConversionStart begin = restore_kept_shards(options, plan, resume, index, writer);
  writer.on_commit([&](std::size_t k) {
    begin.journal.committed(static_cast<uint32_t>(k), writer.shard_file(k),
                            writer.shard_records(k));
  });
  result.skipped = plan.list.skipped;
  result.skipped.insert(result.skipped.end(), begin.skipped.begin(), begin.skipped.end());
  result.ignored_files = plan.list.ignored_files;
  result.resume_notes = resume.notes;
  result.resumed_shards = resume.shards.size();
  result.resumed_inputs = resume.next_position;

  const Clock::time_point convert_start = Clock::now();
  ConversionPipeline pipeline(options, plan, timings.threads, index, writer, begin.journal, result);
  try {
    check_skip_limit(options, plan, result.skipped);
    pipeline.run(arena, begin.next_position, begin.skipped.size(), progress);
  } catch (const TooManySkipped& e) {
    // The reasons are what the user needs next: report.json lists them all.
    timings.convert_s = seconds_since(convert_start);
    timings.total_s = seconds_since(start);
    write_report(options, plan, index.created_by, result, timings, e.what());
    throw;
  }
  timings.convert_s = seconds_since(convert_start);
  timings.converted_inputs = plan.order.size() - begin.next_position;
  result.resize_notes = crop_notes(options, plan.shape, pipeline.source_sizes());

  if (index.num_samples() == 0 && !options.part) {
    throw Error(options.src.string() + ": none of the " + std::to_string(plan.order.size()) +
                " images could be converted (the first: " + result.skipped.back().path + ": " +
                result.skipped.back().reason + ")");
  }
  begin.journal.inputs_done(plan.order.size());
  writer.finish(index);
  if (!options.part) store_splits(options, plan, index, result.split_warnings);
  result.records = index.num_records();
  result.samples = index.num_samples();
  result.shards = index.num_shards();
  timings.total_s = seconds_since(start);
  write_report(options, plan, index.created_by, result, timings);

  // index.h5 last: its presence is what makes the dataset complete.
  write_index(options.out, index);
  crash_point("index-committed");
  begin.journal.remove();
  result.seconds = seconds_since(start);
  return result;
}

}  // namespace

ConvertResult convert(const ConvertOptions& options, const ProgressFn& progress) {
  if (!options.part) return convert_into(options, progress);
  options.validate();
  ConvertOptions part = options;
  part.out = part_directory(options.out, *options.part);
  return convert_into(part, progress);
}

}  // namespace imgpack
