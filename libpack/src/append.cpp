// append(): the inputs a dataset does not hold yet, converted with its own
// options into new shards, and the next generation of its index and splits.
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "conversion/conversion_plan.hpp"
#include "conversion/output_directory.hpp"
#include "conversion_pipeline.hpp"
#include "files.hpp"
#include "growth/dataset_change.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/growth.hpp"
#include "sample_lookup.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// The conversion options an append converts with: the dataset's own, with
// the inputs and the run's policies of the request.
ConvertOptions append_options(const AppendOptions& request, const DatasetIndex& index) {
  const fs::path where = request.dataset / format::kIndexFile;
  ConvertOptions options;
  try {
    options = ConvertOptions::from_json(index.convert_options);
  } catch (const Error& e) {
    throw Error(where.string() + ": " + e.what());
  }
  options.src = request.src;
  options.out = request.dataset;
  refuse_output_among_inputs(options);
  options.size = std::make_pair(index.width, index.height);
  options.threads = request.threads;
  options.on_error = request.on_error;
  options.max_skipped = request.max_skipped;
  options.scan.group_missing_ok = options.scan.group_missing_ok || request.group_missing_ok;
  if (!request.csv.empty()) {
    if (!options.scan.csv) {
      throw UsageError(
          "AppendOptions::csv: " + request.dataset.string() +
          " was converted from a folder, not a CSV list; leave AppendOptions::csv out");
    }
    options.scan.csv->file = request.csv;
  }
  if (!request.files.empty() && options.scan.csv) {
    throw UsageError("AppendOptions::files: " + request.dataset.string() +
                     " was converted from a CSV list; give its new rows as a CSV list "
                     "(AppendOptions::csv) instead");
  }
  if (!request.masks.empty()) {
    if (!index.masks) {
      throw UsageError("AppendOptions::masks: " + request.dataset.string() + " has no masks");
    }
    options.masks.dir = request.masks;
  }
  if (!request.coco.empty()) {
    if (options.boxes.coco.empty()) {
      throw UsageError("AppendOptions::coco: " + request.dataset.string() +
                       " does not take its boxes from a COCO file");
    }
    options.boxes.coco = request.coco;
  }
  // The stored splits are extended over the new samples (commit_change), not
  // made anew over them.
  options.splits.clear();
  options.validate();
  return options;
}

// Ids of `names` (the listing's) among `into` (the dataset's), adding at its
// end (and to `added`) the names it lacks that `used` marks: a name only
// held rows give (a newer CSV's label of an image the dataset holds) is no
// name of the dataset's. An unused name the dataset lacks maps to -1.
std::vector<int32_t> map_names(const std::vector<std::string>& names, const std::vector<bool>& used,
                               std::vector<std::string>& into, std::vector<std::string>* added) {
  std::unordered_map<std::string, int32_t> ids;
  for (std::size_t i = 0; i < into.size(); ++i) ids.emplace(into[i], static_cast<int32_t>(i));
  std::vector<int32_t> map;
  map.reserve(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    auto it = ids.find(name);
    if (it == ids.end()) {
      if (!used[i]) {
        map.push_back(-1);
        continue;
      }
      it = ids.emplace(name, static_cast<int32_t>(into.size())).first;
      into.push_back(name);
      if (added) added->push_back(name);
    }
    map.push_back(it->second);
  }
  return map;
}

// Which of `count` ids the samples' `id` gives (-1: none).
template <typename Id>
std::vector<bool> ids_used(const std::vector<SourceSample>& samples, std::size_t count, Id id) {
  std::vector<bool> used(count, false);
  for (const SourceSample& sample : samples) {
    const int32_t i = id(sample);
    if (i >= 0) used[static_cast<std::size_t>(i)] = true;
  }
  return used;
}

void require_same(const std::vector<std::string>& listing, const std::vector<std::string>& dataset,
                  const std::string& what, const AppendOptions& request) {
  if (listing == dataset) return;
  auto text = [](const std::vector<std::string>& names) {
    std::string joined;
    for (const std::string& name : names) joined += (joined.empty() ? "" : ", ") + name;
    return "[" + joined + "]";
  };
  throw UsageError(request.src.string() + ": the inputs' " + what + " " + text(listing) +
                   " are not the dataset's " + text(dataset) + " (" + request.dataset.string() +
                   "); an append cannot change them");
}

// Gives `list`'s samples the dataset's class, group and multi-label ids,
// adding the names the dataset lacks; checks what cannot change.
void adopt_names(const AppendOptions& request, const ConversionPlan& plan, SourceList& list,
                 DatasetIndex& index, AppendResult& result) {
  require_same(list.target_names, index.target_names, "numeric targets", request);
  require_same(list.box_class_names, index.box_class_names, "box classes", request);
  require_same(list.keypoint_names, index.keypoint_names, "keypoints", request);
  if (list.keypoint_flip != index.keypoint_flip) {
    throw UsageError(request.src.string() + ": the keypoints' flip pairs are not the dataset's");
  }
  // The dataset keeps its skeleton; annotations that give one give the same.
  if (!list.keypoint_skeleton.empty() && list.keypoint_skeleton != index.keypoint_skeleton) {
    throw UsageError(request.src.string() + ": the keypoints' skeleton is not the dataset's");
  }
  require_same(plan.mask_class_names, index.mask_class_names, "mask classes", request);

  // The names the new samples use (the scan numbers those of every row).
  const std::vector<bool> used_classes = ids_used(list.samples, list.class_names.size(),
                                                  [](const SourceSample& s) { return s.label; });
  const std::vector<bool> used_groups = ids_used(list.samples, list.group_names.size(),
                                                 [](const SourceSample& s) { return s.group; });
  std::vector<bool> used_columns(list.multilabel_names.size(), false);
  for (const SourceSample& sample : list.samples) {
    for (std::size_t c = 0; c < sample.multilabel.size(); ++c) {
      if (sample.multilabel[c] != 0) used_columns[c] = true;
    }
  }
  const std::vector<int32_t> classes =
      map_names(list.class_names, used_classes, index.class_names, &result.new_classes);
  const std::vector<int32_t> groups =
      map_names(list.group_names, used_groups, index.group_names, nullptr);
  const std::size_t old_columns = index.multilabel_names.size();
  const std::vector<int32_t> columns =
      map_names(list.multilabel_names, used_columns, index.multilabel_names, nullptr);
  const std::size_t new_columns = index.multilabel_names.size();
  if (new_columns != old_columns) {  // widen every old row
    std::vector<uint8_t> widened(index.sample_label.size() * new_columns, 0);
    for (std::size_t s = 0; s < index.sample_label.size(); ++s) {
      std::copy_n(index.sample_multilabel.data() + s * old_columns, old_columns,
                  widened.data() + s * new_columns);
    }
    index.sample_multilabel = std::move(widened);
  }
  for (SourceSample& sample : list.samples) {
    if (sample.label >= 0) sample.label = classes[static_cast<std::size_t>(sample.label)];
    if (sample.group >= 0) sample.group = groups[static_cast<std::size_t>(sample.group)];
    if (!sample.multilabel.empty()) {
      std::vector<uint8_t> row(new_columns, 0);
      for (std::size_t c = 0; c < sample.multilabel.size(); ++c) {
        if (sample.multilabel[c] != 0)
          row[static_cast<std::size_t>(columns[c])] = sample.multilabel[c];
      }
      sample.multilabel = std::move(row);
    }
  }
  list.class_names = index.class_names;
  list.group_names = index.group_names;
  list.multilabel_names = index.multilabel_names;
}

// Which inputs of the scan are new, and which changed since the dataset took
// them: the scan's selector, so that nothing but the stat of an input the
// dataset holds unchanged is spent on it (no groups, masks or boxes).
class Listing {
 public:
  explicit Listing(const DatasetIndex& index) : index_(index), held_(index) {}

  // True for an input to convert: new, or changed.
  bool take(const std::string& path, const FileStamp& stamp) {
    const std::optional<std::size_t> sample = held_.find(path);
    if (!sample) return true;
    const std::size_t s = *sample;
    const bool known = index_.has_file_stamps() && index_.sample_mtime[s] != kUnknownMtime;
    // A removed input stays out while it is as it was (the next append of
    // the same SRC does not bring it back); changed, it is taken anew as
    // any changed input is.
    if (known &&
        (index_.sample_size[s] != stamp.size || index_.sample_mtime[s] != stamp.mtime_ns)) {
      changed_.push_back(path);
      changed_ids.push_back(static_cast<int64_t>(s));
      return true;
    }
    ++held;
    if (index_.is_removed(s)) ++held_removed;
    return false;
  }

  const std::vector<std::string>& changed_paths() const { return changed_; }

  std::vector<int64_t> changed_ids;  // the changed inputs' samples in the dataset
  uint64_t held = 0;                 // inputs the dataset holds unchanged
  uint64_t held_removed = 0;         // of them, removed from it

 private:
  const DatasetIndex& index_;
  SampleLookup held_;
  std::vector<std::string> changed_;  // in the scan's order
};

[[noreturn]] void refuse_changed(const AppendOptions& request, const Listing& listing) {
  std::vector<std::string> changed = listing.changed_paths();
  std::sort(changed.begin(), changed.end());
  std::string first;
  for (std::size_t i = 0; i < std::min<std::size_t>(changed.size(), 3); ++i) {
    first += (i > 0 ? ", " : "") + (request.src / changed[i]).string();
  }
  throw UsageError(std::to_string(changed.size()) + (changed.size() == 1 ? " input" : " inputs") +
                   " changed since the dataset took them (another size or modification "
                   "time): " +
                   first + (changed.size() > 3 ? ", ..." : "") +
                   "; AppendOptions::replace_changed removes their old samples and adds them anew");
}

}  // namespace

AppendResult append(const AppendOptions& request, const ProgressFn& progress) {
  const Clock::time_point start = Clock::now();
  const fs::path& out = request.dataset;
  DatasetChange change = begin_change(out, "append");
  DatasetIndex& index = change.index;
  const uint64_t began_at = index.generation;
  const ConvertOptions options = append_options(request, index);
  ConversionThreads conversion_threads(options.threads);
  const unsigned threads = conversion_threads.count();
  tbb::task_arena& arena = conversion_threads.arena();

  Listing listing(index);
  const HeldTargets held{index.sample_path, index.box_class_names, index.keypoint_names,
                         index.keypoint_flip};
  ConversionPlan plan = make_plan(
      options, arena,
      [&](const std::string& path, const FileStamp& stamp) { return listing.take(path, stamp); },
      request.files, &held);
  if (plan.shape.bytes() != index.record_bytes() || plan.shape.channels != index.channels) {
    throw Error(out.string() + ": the append would write records of another shape");
  }
  AppendResult result;
  result.held = listing.held;
  result.held_removed = listing.held_removed;
  result.inputs = listing.held + plan.list.samples.size();
  result.ignored = plan.list.ignored_files;
  result.skipped = plan.list.skipped;
  check_skip_limit(options, plan, result.skipped, SkipLimitOf::append);
  if (!listing.changed_ids.empty() && !request.replace_changed) refuse_changed(request, listing);
  const std::size_t old_samples = index.num_samples();
  result.generation = index.generation;
  result.samples = old_samples;
  if (plan.list.samples.empty()) {
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return result;
  }

  // The new and changed inputs, in path order, with the dataset's names and ids.
  adopt_names(request, plan, plan.list, index, result);
  plan.order = write_order(options, plan.list.samples.size());
  plan.uuid = index.uuid;
  result.input_warnings = run_warnings(options, plan);

  if (!index.has_file_stamps()) {
    index.sample_size.resize(old_samples, 0);
    index.sample_mtime.resize(old_samples, kUnknownMtime);
    result.notes.push_back(
        "the dataset's conversion kept no file stamps: inputs whose paths it holds are taken "
        "as unchanged");
  }
  if (!listing.changed_ids.empty()) {
    index.sample_removed.resize(old_samples, 0);
    for (const int64_t s : listing.changed_ids) {
      index.sample_removed[static_cast<std::size_t>(s)] = 1;
    }
    result.replaced = listing.changed_ids.size();
  }

  std::optional<DatasetWriter> writer;
  writer.emplace(out, plan.shape, options.shard_size, index.uuid,
                 uint64_t{options.variants} * plan.order.size(), options.variants,
                 RecordExtras{.masks = options.has_masks(),
                              .boxes = plan.list.boxes,
                              .keypoints = plan.list.keypoint_names.size()});
  writer->continue_after(index.records, index.shards);
  const std::size_t old_shards = index.num_shards();
  const std::size_t old_records = index.num_records();
  result.plan_s = std::chrono::duration<double>(Clock::now() - start).count();
  ConvertResult converted;
  converted.skipped = plan.list.skipped;  // counted with those of the conversion
  try {
    ConversionPipeline pipeline(options, plan, threads, index, *writer, nullptr, converted);
    pipeline.run(arena, 0, 0, progress);
    writer->finish(index);
  } catch (...) {
    // The writer's files closed first: short of open files (the error may
    // be just that), removing what it wrote needs them.
    writer.reset();
    // Shards of no generation: nothing lists them; the next change removes
    // them too, should this process die before they go. What the dataset
    // held unlisted before (files a compaction kept for readers) stays.
    abandon_change(out, began_at, "nothing was appended", change.found_unlisted);
  }
  result.skipped = converted.skipped;
  result.added = index.num_samples() - old_samples;
  result.records = index.num_records() - old_records;
  result.shards = index.num_shards() - old_shards;
  if (result.added == 0 && result.replaced == 0) {
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return result;
  }
  if (!index.sample_removed.empty()) index.sample_removed.resize(index.num_samples(), 0);

  result.convert_s = std::chrono::duration<double>(Clock::now() - start).count() - result.plan_s;
  // The change is made: what the index did not list goes (files a
  // compaction kept for readers, an interrupted change's), as it is
  // committed.
  clear_leftovers(out, change);
  try {
    commit_change(out, index, "append", result.added, result.replaced, old_samples,
                  result.split_warnings);
  } catch (...) {
    abandon_change(out, began_at, "nothing was appended");
  }
  result.generation = index.generation;
  result.samples = index.num_samples();
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.commit_s = result.seconds - result.plan_s - result.convert_s;
  return result;
}

}  // namespace imgpack
