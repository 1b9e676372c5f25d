#include "conversion_pipeline.hpp"

#include <oneapi/tbb/info.h>
#include <opencv2/core.hpp>

#include <algorithm>
#include <new>
#include <string>

#include "augment_spec.hpp"
#include "conversion/resume.hpp"
#include "files.hpp"
#include "image/decode.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "parallel/tbb_tsan.hpp"

namespace imgpack {

namespace {

// The cores this process may run on: its CPU affinity, which oneTBB
// respects (an MPI rank bound to one core, a Slurm task given 16), rather
// than every core of the machine.
unsigned usable_cores() {
  return static_cast<unsigned>(std::max(1, tbb::info::default_concurrency()));
}

// Lets oneTBB run `threads` threads where that is more than its default.
std::optional<tbb::global_control> leave_for(unsigned threads) {
  if (threads <= usable_cores()) return std::nullopt;
  return std::optional<tbb::global_control>(std::in_place,
                                            tbb::global_control::max_allowed_parallelism, threads);
}

}  // namespace

ConversionThreads::ConversionThreads(unsigned requested)
    : count_(requested != 0 ? requested : usable_cores()),
      allow_(leave_for(count_)),
      arena_(static_cast<int>(count_)) {}

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Inputs the run found: those planned for conversion and those skipped by the scan.
uint64_t inputs_found(const ConversionPlan& plan) {
  return plan.order.size() + plan.list.skipped.size();
}

}  // namespace

void check_skip_limit(const ConvertOptions& options, const ConversionPlan& plan,
                      const std::vector<SkippedInput>& skipped, SkipLimitOf run) {
  const bool append = run == SkipLimitOf::append;
  const std::string unchanged = append
                                    ? "nothing was appended to " + options.out.string()
                                    : "stopped without writing " + std::string(format::kIndexFile);
  if (options.on_error == OnError::fail) {
    if (skipped.empty()) return;
    const SkippedInput& first = skipped.front();
    throw TooManySkipped(
        (options.src / first.path).string() + ": " + first.reason + " (OnError::fail; " +
        (skipped.size() > 1 ? std::to_string(skipped.size()) + " inputs skipped, " : "") +
        unchanged + ")");
  }
  const uint64_t inputs = inputs_found(plan);
  const uint64_t allowed = options.max_skipped.allowed(inputs);
  if (skipped.size() <= allowed) return;
  std::string message = options.src.string() + ": " + std::to_string(skipped.size()) + " of the " +
                        std::to_string(inputs) + (append ? " new" : "") +
                        " inputs skipped so far, more than ConvertOptions::max_skipped " +
                        options.max_skipped.text() + " allows (" + std::to_string(allowed) + "); " +
                        unchanged + ". The first: ";
  for (std::size_t i = 0; i < std::min<std::size_t>(skipped.size(), 3); ++i) {
    message += (i > 0 ? "; " : "") + skipped[i].path + ": " + skipped[i].reason;
  }
  if (append) {
    message +=
        ". Fix the inputs, or append again with a larger ConvertOptions::max_skipped "
        "to accept them";
  } else {
    message += " (every reason in " + (options.out / format::kReportFile).string() +
               "). Fix the inputs, or rerun with ConvertOptions::resume and a larger "
               "ConvertOptions::max_skipped to accept them";
  }
  throw TooManySkipped(message);
}

std::vector<std::string> run_warnings(const ConvertOptions& options, const ConversionPlan& plan) {
  std::vector<std::string> warnings = input_warnings(options, plan);
  std::string reflected =
      reflected_objects_warning(options.augment, options.variants, plan.list.boxes);
  if (!reflected.empty()) warnings.push_back(std::move(reflected));
  return warnings;
}

ConversionPipeline::ConversionPipeline(const ConvertOptions& options, const ConversionPlan& plan,
                                       unsigned threads, DatasetIndex& index, DatasetWriter& writer,
                                       ShardCommitJournal* journal, ConvertResult& result)
    : options_(options),
      plan_(plan),
      index_(index),
      writer_(writer),
      journal_(journal),
      result_(result),
      renderer_(options, plan.shape, plan.list, plan.mask_colors),
      slots_(std::size_t{threads} * 4) {
  try {
    for (InputSlot& slot : slots_) {
      slot.pixels.resize(options.variants * plan.shape.bytes());
      slot.checksums.resize(options.variants);
      if (options.has_masks()) {
        slot.masks.resize(options.variants * plan.shape.pixels());
        slot.mask_checksums.resize(options.variants);
      }
      if (plan.list.boxes) slot.boxes.resize(options.variants);
    }
  } catch (const std::bad_alloc&) {
    // Each image in flight holds its records: say what that comes to.
    const double mib =
        static_cast<double>(slots_.size()) * static_cast<double>(options.variants) *
        static_cast<double>(plan.shape.bytes() + (options.has_masks() ? plan.shape.pixels() : 0)) /
        (1 << 20);
    throw Error(options.out.string() + ": out of memory for the images in flight: " +
                std::to_string(slots_.size()) + " images x " + std::to_string(options.variants) +
                " variants of " + std::to_string(plan.shape.width) + "x" +
                std::to_string(plan.shape.height) + "x" + std::to_string(plan.shape.channels) +
                " bytes need " + std::to_string(static_cast<uint64_t>(mib)) +
                " MiB; a smaller ConvertOptions::size or fewer ConvertOptions::threads needs less");
  }
}

void ConversionPipeline::run(tbb::task_arena& arena, uint64_t first, uint64_t skipped_before,
                             const ProgressFn& progress) {
  next_ = first;
  status_.total = plan_.order.size();
  status_.done = first;
  status_.skipped = skipped_before;
  progress_ = &progress;
  start_ = Clock::now();
  // Files worth asking for ahead: any whose decode costs far more than the
  // open and close a hint costs (the size is the scan's; 0 where unknown).
  constexpr uint64_t kReadAheadBytes = uint64_t{32} << 10;
  ReadAhead read_ahead(
      [this](uint64_t position) {
        const SourceSample& sample = plan_.list.samples[plan_.order[position]];
        if (sample.file_size != 0 && sample.file_size < kReadAheadBytes)
          return std::filesystem::path();
        return options_.src / sample.path;
      },
      first, plan_.order.size(), slots_.size() * 2 + 16);
  read_ahead_ = &read_ahead;
  struct Forget {  // the source's pointer goes with the object, also on an exception
    ReadAhead*& pointer;
    ~Forget() { pointer = nullptr; }
  } forget{read_ahead_};
  tsan::ForkJoin region;  // joins before the slots go, also on an exception
  arena.execute([&] {
    const auto filters =
        tbb::make_filter<void, InputSlot*>(tbb::filter_mode::serial_in_order,
                                           [&](tbb::flow_control& fc) {
                                             tsan::enter_body();
                                             tsan::TaskScope task(region);
                                             return next_input(fc);
                                           }) &
        tbb::make_filter<InputSlot*, InputSlot*>(tbb::filter_mode::parallel,
                                                 [&](InputSlot* slot) {
                                                   tsan::enter_body();
                                                   tsan::TaskScope task(region);
                                                   render(*slot);
                                                   return slot;
                                                 }) &
        tbb::make_filter<InputSlot*, void>(tbb::filter_mode::serial_in_order, [&](InputSlot* slot) {
          tsan::enter_body();
          tsan::TaskScope task(region);
          write(*slot);
        });
    region.fork(filters);  // after make_filter has copied the bodies the workers call
    tbb::parallel_pipeline(slots_.size(), filters);
  });
  region.join();
}

// Serial source: the next write position, in a slot of its own.
InputSlot* ConversionPipeline::next_input(tbb::flow_control& fc) {
  tsan::Handoff serial(&next_);
  if (next_ == plan_.order.size()) {
    fc.stop();
    return nullptr;
  }
  read_ahead_->taken(next_);
  InputSlot* slot = &slots_[next_ % slots_.size()];
  tsan::Handoff item(slot);
  slot->position = next_;
  slot->sample = plan_.order[next_++];
  return slot;
}

// Parallel: reads and renders one input, or notes why it cannot be used.
void ConversionPipeline::render(InputSlot& slot) const {
  tsan::Handoff item(&slot);
  slot.error = read_file(options_.src / plan_.list.samples[slot.sample].path, slot.file_bytes);
  if (!slot.error.empty()) return;
  // Memory runs out for the machine, not for the image: skipping the image
  // would make the output depend on what else ran at the time, so the
  // conversion stops, resumable, instead.
  const auto out_of_memory = [&] {
    return Error((options_.src / plan_.list.samples[slot.sample].path).string() +
                 ": out of memory while converting it; free memory or lower "
                 "ConvertOptions::threads");
  };
  try {
    renderer_.render(slot);
  } catch (const DecodeError& e) {
    slot.error = e.what();
  } catch (const cv::Exception& e) {
    if (e.code == cv::Error::StsNoMem) throw out_of_memory();
    slot.error = std::string("image processing failed: ") + e.what();
  } catch (const std::bad_alloc&) {
    throw out_of_memory();
  }
}

// Serial sink, in write order: the input's records, or its skip.
void ConversionPipeline::write(InputSlot& slot) {
  tsan::Handoff serial(&status_);
  tsan::Handoff item(&slot);
  const SourceSample& sample = plan_.list.samples[slot.sample];
  const uint32_t variants = options_.variants;
  if (!slot.error.empty()) {
    if (options_.on_error == OnError::fail) {
      throw Error((options_.src / sample.path).string() + ": " + slot.error + " (OnError::fail)");
    }
    result_.skipped.push_back({sample.path, slot.error});
    if (journal_) journal_->skipped(slot.position, slot.error);
    writer_.forgo(variants);
    ++status_.skipped;
    check_skip_limit(options_, plan_, result_.skipped,
                     journal_ != nullptr ? SkipLimitOf::conversion : SkipLimitOf::append);
  } else {
    const auto id = static_cast<int64_t>(index_.num_samples());
    add_sample(index_, sample);
    ++source_sizes_[{slot.source_width, slot.source_height}];
    if (journal_) journal_->inputs_done(slot.position + 1);  // a shard committed now ends here
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

}  // namespace imgpack
