// convert(): plan, prepare OUT, restore a resumed run, run the pipeline,
// then the splits, report.json and index.h5, last.
#include "imgpack/convert.hpp"

#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "conversion/conversion_parts.hpp"
#include "conversion/conversion_plan.hpp"
#include "conversion/conversion_report.hpp"
#include "conversion/output_directory.hpp"
#include "conversion/resume.hpp"
#include "conversion/shard_writer.hpp"
#include "conversion_pipeline.hpp"
#include "error_note.hpp"
#include "files.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/merge.hpp"
#include "inputs/boxes_input.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
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

// Where a run that stopped left its work, and how to go on; "" where it left
// no journal (it stopped creating it, in an OUT it may not write, say).
std::string journaled_note(const ConvertOptions& options) {
  std::error_code ec;
  if (!fs::exists(options.out / kJournalFile, ec)) return {};
  return "the shards written so far are journaled in " + (options.out / kJournalFile).string() +
         ": the same conversion with ConvertOptions::resume continues from them once that is "
         "fixed";
}

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

// The dataset is complete, but a split it was asked for could not be made:
// not plain Error, which a failure that leaves the journal behind is noted as.
class SplitsNotMade : public Error {
 public:
  using Error::Error;
};

// The requested splits of the converted samples. When no input was skipped
// the samples are those the plan split, and its splits are stored as they are.
// Otherwise each is made over the samples converted, which a split the plan
// could make may not fit (more folds than samples left): the dataset is then
// finished without it, and its reason returned, the converted shards kept.
std::vector<std::string> store_splits(const ConvertOptions& options, const ConversionPlan& plan,
                                      DatasetIndex& index, std::vector<std::string>& warnings) {
  const bool all_converted = index.num_samples() == plan.order.size();
  std::vector<std::string> unmade;
  for (std::size_t i = 0; i < options.splits.size(); ++i) {
    const NamedSplitSpec& split = options.splits[i];
    Split stored;
    if (all_converted) {
      const SplitResult& planned = plan.splits[i];
      warnings.insert(warnings.end(), planned.warnings.begin(), planned.warnings.end());
      stored = named_split(split.name, split.spec, planned, "");
    } else {
      try {
        stored = make_split(index, split.name, split.spec, "", &warnings);
      } catch (const UsageError& e) {
        unmade.push_back("split " + split.name + " was not made over the " +
                         std::to_string(index.num_samples()) + " images converted: " + e.what());
        warnings.push_back(unmade.back());
        continue;
      }
    }
    store_split(index, std::move(stored), false);
  }
  return unmade;
}

ConvertResult write_dataset(const ConvertOptions& options, const ConversionPlan& plan,
                            const ResumePoint& resume, ConversionTimings& timings,
                            tbb::task_arena& arena, ConvertResult result, Clock::time_point start,
                            const ProgressFn& progress);

// For a part: the shared lock on OUT, made if need be, that every part holds
// while it converts (DirectoryLock::try_acquire_shared); throws UsageError
// where a conversion in one piece, a merge or a split holds OUT. With
// `overwrite` it waits instead, as discard_merged_dataset() does: parts run
// with --overwrite at once each look for the dataset to remove under OUT's
// exclusive lock, one after another, and one that found nothing left
// outruns those still looking.
DirectoryLock lock_whole_output(const fs::path& whole, bool overwrite) {
  make_output_directory(whole);
  if (overwrite) return DirectoryLock::acquire_shared(whole);
  std::optional<DirectoryLock> lock = DirectoryLock::try_acquire_shared(whole);
  if (!lock) {
    throw UsageError(whole.string() +
                     ": a conversion in one piece, a merge or a split is writing to it now; "
                     "wait for it to finish, then run this part again");
  }
  return std::move(*lock);
}

// convert() into options.out, which for a part is its own folder; `whole`
// is then the OUT of the whole conversion, where the parts are merged.
ConvertResult convert_into(const ConvertOptions& options, const ProgressFn& progress,
                           const fs::path& whole = {}) {
  const Clock::time_point start = Clock::now();
  options.validate();
  ConversionTimings timings;
  ConversionThreads threads(options.threads);
  timings.threads = threads.count();
  tbb::task_arena& arena = threads.arena();

  const ConversionPlan plan = make_plan(options, arena);
  timings.plan_s = seconds_since(start);
  std::optional<DirectoryLock> whole_lock;  // a part's share of OUT, held while it converts
  if (!whole.empty()) {
    // A part rerun after the merge took its shards (a job run again, as its
    // launcher reported a failure): converting it again would fill the part's
    // folder anew beside the finished or half-merged dataset. Checked before
    // the part's folder is locked (made); parts_merged_into() refuses an OUT
    // that holds another dataset. With --overwrite, whatever dataset OUT
    // holds is what the parts replace: it goes first.
    if (options.overwrite) discard_merged_dataset(whole, options.part->count);
    whole_lock = lock_whole_output(whole, options.overwrite);
    std::string merged = parts_merged_into(whole, plan.uuid);
    if (!merged.empty() && !(options.resume && !options.overwrite)) {
      throw UsageError(merged + " (this part is converted again only into another OUT)");
    }
    if (!merged.empty()) {
      ConvertResult done;
      done.width = plan.shape.width;
      done.height = plan.shape.height;
      done.channels = plan.shape.channels;
      done.uuid = plan.uuid;
      done.resume_notes.push_back(std::move(merged));
      done.already_complete = true;
      done.seconds = seconds_since(start);
      return done;
    }
  }
  const DirectoryLock lock = lock_output(options);
  ConvertResult result;
  result.width = plan.shape.width;
  result.height = plan.shape.height;
  result.channels = plan.shape.channels;
  result.uuid = plan.uuid;
  result.input_warnings = run_warnings(options, plan);
  result.objects_left_out = objects_left_out(plan.list, plan.order, options.src, options.boxes);
  std::string damage;
  if (options.resume && !options.overwrite && output_is_complete(options, plan)) {
    damage = discard_if_damaged(options);
    if (damage.empty() && !whole.empty()) damage = discard_if_report_unreadable(options);
    if (damage.empty()) {
      result = already_complete(options, std::move(result));
      result.seconds = seconds_since(start);
      return result;
    }
  }

  ResumePoint resume = prepare_output(options, plan);
  if (!damage.empty()) resume.notes.insert(resume.notes.begin(), damage);
  try {
    return write_dataset(options, plan, resume, timings, arena, std::move(result), start, progress);
  } catch (const Error&) {
    const std::string journaled = journaled_note(options);
    if (journaled.empty()) throw;
    rethrow_with_note(journaled);
  } catch (const std::exception& e) {
    // A thread that could not start (std::thread's, oneTBB's error) stopped
    // the run as any error does; anything else (a progress callback's own)
    // goes on as it is.
    const std::string note = thread_start_note(e);
    if (note.empty()) throw;
    const std::string journaled = journaled_note(options);
    throw Error(std::string(e.what()) + note + (journaled.empty() ? "" : "; " + journaled));
  }
}

// convert_into()'s conversion proper, into an OUT prepared for it: the kept
// shards restored, the pipeline, the splits, report.json and index.h5.
ConvertResult write_dataset(const ConvertOptions& options, const ConversionPlan& plan,
                            const ResumePoint& resume, ConversionTimings& timings,
                            tbb::task_arena& arena, ConvertResult result, Clock::time_point start,
                            const ProgressFn& progress) {
  DatasetIndex index = planned_index(options, plan);
  DatasetWriter writer(options.out, plan.shape, options.shard_size, plan.uuid,
                       uint64_t{options.variants} * (plan.order.size() - resume.next_position),
                       options.variants,
                       {.masks = options.has_masks(),
                        .boxes = plan.list.boxes,
                        .keypoints = plan.list.keypoint_names.size(),
                        .part = options.part ? part_name(*options.part) : std::string()});
  ConversionStart begin = restore_kept_shards(options, plan, resume, index, writer);
  writer.on_seal([&](std::size_t k) {
    begin.journal.sealed(static_cast<uint32_t>(k), writer.shard_file(k), writer.shard_records(k));
  });
  writer.on_commit([&](std::size_t k) { begin.journal.committed(static_cast<uint32_t>(k)); });
  result.skipped = plan.list.skipped;
  result.skipped.insert(result.skipped.end(), begin.skipped.begin(), begin.skipped.end());
  result.ignored_files = plan.list.ignored_files;
  result.resume_notes = resume.notes;
  result.resumed_shards = resume.shards.size();
  result.resumed_inputs = resume.next_position;

  const Clock::time_point convert_start = Clock::now();
  ConversionPipeline pipeline(options, plan, timings.threads, index, writer, &begin.journal,
                              result);
  try {
    check_skip_limit(options, plan, result.skipped, SkipLimitOf::conversion);
    pipeline.run(arena, begin.next_position, begin.skipped.size(), progress);
  } catch (const TooManySkipped& e) {
    writer.settle();
    // The reasons are what the user needs next: report.json lists them all.
    timings.convert_s = seconds_since(convert_start);
    timings.total_s = seconds_since(start);
    write_report(options, plan, index.created_by, result, timings, e.what());
    throw;
  } catch (...) {
    writer.settle();  // what is in place is journaled, for --resume
    throw;
  }
  timings.convert_s = seconds_since(convert_start);
  timings.converted_inputs = plan.order.size() - begin.next_position;
  result.resize_notes = crop_notes(options, plan.shape, pipeline.source_sizes());

  if (index.num_samples() == 0 && !options.part) {
    const std::string failure =
        options.src.string() + ": none of the " + std::to_string(plan.order.size()) +
        " images could be converted (the first: " + result.skipped.front().path + ": " +
        result.skipped.front().reason + "; every reason in " +
        (options.out / format::kReportFile).string() + ")";
    timings.total_s = seconds_since(start);
    write_report(options, plan, index.created_by, result, timings, failure);
    throw Error(failure);
  }
  begin.journal.inputs_done(plan.order.size());
  writer.finish(index);
  const std::vector<std::string> unmade =
      options.part ? std::vector<std::string>{}
                   : store_splits(options, plan, index, result.split_warnings);
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
  if (!unmade.empty()) {
    const std::size_t skipped = result.skipped.size();
    std::string message = options.out.string() + ": converted, " + std::to_string(skipped) +
                          (skipped == 1 ? " input" : " inputs") + " skipped, but " + unmade.front();
    for (std::size_t i = 1; i < unmade.size(); ++i) message += "; " + unmade[i];
    throw SplitsNotMade(message +
                        ". The dataset is complete without it: make_split() makes a split "
                        "over the images it holds");
  }
  return result;
}

}  // namespace

ConvertResult convert(const ConvertOptions& options, const ProgressFn& progress) {
  if (!options.part) return convert_into(options, progress);
  options.validate();
  ConvertOptions part = options;
  part.out = part_directory(options.out, *options.part);
  return convert_into(part, progress, options.out);
}

}  // namespace imgpack
