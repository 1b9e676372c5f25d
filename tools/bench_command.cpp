// imgpack bench DATASET: reader throughput and starvation, with the machine's
// memcpy bandwidth over the same mapped bytes measured in the same run as the
// reference (and, for --device cuda:N, the pinned host-to-device copy rate);
// with --cold, epochs that start with the dataset evicted from the page
// cache, against the storage's own bandwidth over the same files. The
// measurements are in bench_measure.cpp and bench_cold.cpp; this file runs
// them in order and prints what they found.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench_cold.hpp"
#include "bench_measure.hpp"
#include "cli_common.hpp"
#include "cli_values.hpp"
#include "cpu_affinity.hpp"
#include "imgpack/dataset.hpp"
#include "imgpack/epoch_order.hpp"
#include "imgpack/error.hpp"
#include "imgpack/loader.hpp"
#include "imgpack/selection.hpp"
#include "memory_cgroup.hpp"
#include "memory_limit.hpp"

namespace imgpack::cli {

namespace {

// Seconds each read pattern of the --cold storage reference runs at most.
constexpr double kStorageSeconds = 2.0;

// Everything one bench run measured.
struct BenchResult {
  double open_seconds = 0;
  double memcpy_bps = 0;
  std::optional<StorageReference> storage;  // --cold only
  Eviction eviction;                        // --cold: the one that left the most cached
  std::optional<double> upload_bps;         // --device cuda:N only
  double step_images_per_s = 0;             // 0 without --step-ms
  unsigned cores = 0;
  std::vector<Capacity> capacities;  // the reader alone: the sweep, or --threads with a step
  Recommendation recommendation;     // --sweep-threads only; points into capacities
  const Capacity* capacity = nullptr;
  ReaderRun run;  // the epochs read with the chosen threads (and the step)
  uint64_t memory_bound = 0;
  // --memory-limit: the limit, the most the cgroup used (page cache
  // included) and which cgroup it was.
  uint64_t memory_limit = 0;
  uint64_t memory_peak = 0;
  std::string memory_cgroup;
  double reader_vs_memcpy() const { return memcpy_bps > 0 ? run.gb_per_s() * 1e9 / memcpy_bps : 0; }
  double reader_vs(double gb_per_s) const { return gb_per_s > 0 ? run.gb_per_s() / gb_per_s : 0; }
};

// One batch's bytes (images and masks) as the loader's slots hold them: a
// slot holds at most the records of an epoch, whatever --batch asks.
uint64_t batch_bytes_of(const Dataset& dataset, const BenchArgs& a, uint64_t epoch_size) {
  return std::min<uint64_t>(a.batch, epoch_size) * (dataset.record_bytes() + dataset.mask_bytes());
}

// The anonymous memory the reader may grow by: its ring of prefetch + 2
// batches, and 64 MiB besides.
uint64_t reader_memory_bound(const Dataset& dataset, const BenchArgs& a, uint64_t epoch_size) {
  return (a.prefetch + 2) * batch_bytes_of(dataset, a, epoch_size) + (uint64_t{64} << 20);
}

// The references first, then the reader alone at each thread count of the
// sweep (1 up to the cores available, or to --threads when given; or at
// --threads when there is a step to compare with), then the main run.
// Moving the result keeps `recommendation` and `capacity` valid: a moved
// vector keeps its elements where they are.
BenchResult measure(const Dataset& dataset, const BenchArgs& a, const Device& device,
                    uint64_t epoch_size) {
  const bool say = !a.json && !a.quiet;
  BenchResult r;
  const std::size_t batch_bytes = batch_bytes_of(dataset, a, epoch_size);
  r.memory_bound = reader_memory_bound(dataset, a, epoch_size);
  r.cores = detail::cores_available();
  r.step_images_per_s = a.step_ms > 0 ? static_cast<double>(a.batch) * 1000.0 / a.step_ms : 0;
  r.memcpy_bps = memcpy_bandwidth(dataset, batch_bytes, a.memcpy_threads, a.measure_seconds / 2);
  if (device.is_cuda()) r.upload_bps = upload_bandwidth(device, batch_bytes);
  if (a.cold) {
    if (say) std::fprintf(stderr, "bench: storage reference over the shard files...\n");
    r.storage = measure_storage(dataset, kStorageSeconds);
    if (say) {
      std::fprintf(stderr,
                   "bench: reading %u epoch(s) with %s thread%s, each from an evicted "
                   "page cache...\n",
                   a.epochs,
                   a.threads == 0 ? "the loader's choice of" : std::to_string(a.threads).c_str(),
                   a.threads == 1 ? "" : "s");
    }
    r.run = run_reader_cold(dataset, a, a.threads, r.eviction);
    return r;
  }
  if (a.sweep || a.step_ms > 0) {
    const unsigned first = a.sweep ? 1 : a.threads;
    const unsigned last = a.sweep && (!a.threads_given || a.threads == 0) ? r.cores : a.threads;
    for (unsigned t = first; t <= last; ++t) {
      if (say) std::fprintf(stderr, "bench: reader alone, %u thread%s...", t, t == 1 ? "" : "s");
      r.capacities.push_back(measure_capacity(dataset, a, t));
      const Capacity& c = r.capacities.back();
      if (say) {
        std::fprintf(stderr, " %.0f images/s (spread %s over %d runs)\n", c.images_per_s,
                     percent(c.spread).c_str(), c.runs);
      }
    }
  }
  if (a.sweep) r.recommendation = recommend(r.capacities, r.step_images_per_s);
  const unsigned threads = a.sweep ? r.recommendation.chosen->threads : a.threads;
  r.capacity = a.sweep                ? r.recommendation.chosen
               : r.capacities.empty() ? nullptr
                                      : &r.capacities.front();
  if (say) {
    std::fprintf(stderr, "bench: reading %u epoch(s) with %u thread%s%s...\n", a.epochs, threads,
                 threads == 1 ? "" : "s", a.step_ms > 0 ? " and the step" : "");
  }
  r.run = run_reader(dataset, a, threads);
  return r;
}

nlohmann::ordered_json capacity_json(const Capacity& c) {
  return {{"threads", c.threads},   {"images_per_s", c.images_per_s},
          {"gb_per_s", c.gb_per_s}, {"spread", c.spread},
          {"runs", c.runs},         {"seconds", c.seconds},
          {"stable", c.stable}};
}

nlohmann::ordered_json storage_json(const StorageReference& s) {
  nlohmann::ordered_json j;
  j["direct"] = s.direct;
  if (!s.note.empty()) j["note"] = s.note;
  for (const auto* rates : {&s.sequential, &s.random}) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const StorageRate& rate : *rates) {
      list.push_back({{"in_flight", rate.in_flight},
                      {"request_bytes", rate.request},
                      {"gb_per_s", rate.gb_per_s}});
    }
    j[rates == &s.sequential ? "sequential" : "random"] = std::move(list);
  }
  return j;
}

// The storage reference and what the eviction left, as text.
void print_storage(const BenchResult& r) {
  const StorageReference& s = *r.storage;
  const char* how = s.direct ? "O_DIRECT" : "through the page cache, evicted first";
  for (const auto* rates : {&s.sequential, &s.random}) {
    std::cout << "  storage   " << (rates == &s.sequential ? "sequential" : "random    ") << " "
              << human_bytes(rates->front().request) << " reads, " << how << ":";
    for (const StorageRate& rate : *rates) {
      std::cout << " " << fixed(rate.gb_per_s, 2) << " GB/s at " << rate.in_flight;
      if (&rate != &rates->back()) std::cout << ",";
    }
    std::cout << " in flight\n";
  }
  if (!s.note.empty()) std::cout << "  note      " << s.note << "\n";
  std::cout << "  evicted   before each epoch; at most " << percent(r.eviction.resident_fraction())
            << " of the pixels stayed in the page cache"
            << (r.eviction.resident_fraction() > 0.05
                    ? " (tmpfs, or another process maps them): not a cold read"
                    : "")
            << "\n";
}

void print_result_json(const Dataset& dataset, const BenchArgs& a, const Device& device,
                       const BenchResult& r) {
  nlohmann::ordered_json j;
  j["images_per_s"] = r.run.images_per_s();
  j["gb_per_s"] = r.run.gb_per_s();
  j["memcpy_gb_per_s"] = r.memcpy_bps / 1e9;
  j["starvation"] = r.run.stats.starvation();
  j["starvation_after_first_batch"] = r.run.starvation_after_first_batch();
  j["first_batch_wait_seconds"] = r.run.first_batch_wait_seconds;
  j["epoch_start_wait_seconds"] = r.run.epoch_start_wait_seconds;
  j["threads"] = r.run.threads;
  j["batch"] = a.batch;
  j["reader_vs_memcpy"] = r.reader_vs_memcpy();
  if (r.storage) {
    j["cold"] = true;
    j["storage"] = storage_json(*r.storage);
    j["reader_vs_sequential"] = r.reader_vs(r.storage->best_sequential());
    j["reader_vs_random"] = r.reader_vs(r.storage->best_random());
    j["resident_after_eviction"] = r.eviction.resident_fraction();
  }
  if (r.upload_bps) j["upload_reference_gb_per_s"] = *r.upload_bps / 1e9;
  j["memcpy_threads"] = a.memcpy_threads;
  j["device"] = device.name();
  j["output"] = a.output;
  j["order"] = a.order;
  j["sampling"] = a.sampling;
  if (a.crop.empty()) {
    j["crop"] = nullptr;
  } else {
    j["crop"] = a.crop;
  }
  j["hflip"] = a.hflip;
  j["prefetch"] = a.prefetch;
  j["epochs"] = a.epochs;
  j["measure_seconds"] = a.measure_seconds;
  j["step_ms"] = a.step_ms;
  j["images"] = r.run.stats.images;
  j["bytes"] = r.run.stats.bytes;
  j["mask_bytes"] = r.run.stats.mask_bytes;
  j["seconds"] = r.run.seconds;
  j["wait_seconds"] = r.run.stats.wait_seconds;
  j["reader_busy_seconds"] = r.run.stats.reader_busy_seconds;
  j["upload_busy_seconds"] = r.run.stats.upload_busy_seconds;
  j["direct_upload"] = r.run.stats.direct_upload;
  j["upload"] = r.run.stats.upload;
  if (r.memory_limit > 0) {
    j["memory_limit_bytes"] = r.memory_limit;
    j["memory_peak_bytes"] = r.memory_peak;
    j["memory_cgroup"] = r.memory_cgroup;
  }
  // What the reader takes for the memory its page cache may use (DirectIo).
  j["page_cache_memory_bytes"] = detail::memory_for_page_cache();
  j["read_path"] = a.read_path;
  j["reads_in_flight"] = a.reads_in_flight;
  j["direct_io"] = a.direct_io;
  j["records_read"] = r.run.stats.records_read;
  j["prefetched_bytes"] = r.run.stats.prefetched_bytes;
  j["record_bytes"] = dataset.record_bytes();
  j["masks"] = dataset.has_masks();
  j["records"] = dataset.num_records();
  j["shards"] = dataset.num_shards();
  j["open_seconds"] = r.open_seconds;
  j["ring_host_bytes"] = r.run.ring_host_bytes;
  j["ring_device_bytes"] = r.run.ring_device_bytes;
  j["reader_memory_bytes"] = r.run.anon_growth_bytes;
  j["memory_bound_bytes"] = r.memory_bound;
  j["cores_available"] = r.cores;
  if (a.step_ms > 0) j["step_images_per_s"] = r.step_images_per_s;
  if (r.capacity != nullptr) {
    j["reader_alone_images_per_s"] = r.capacity->images_per_s;
    if (a.step_ms > 0) j["headroom"] = r.capacity->images_per_s / r.step_images_per_s;
  }
  if (a.sweep) {
    nlohmann::ordered_json sweep = nlohmann::ordered_json::array();
    for (const Capacity& c : r.capacities) sweep.push_back(capacity_json(c));
    j["sweep"] = std::move(sweep);
    j["recommended_threads"] = r.recommendation.chosen->threads;
    j["recommendation"] = r.recommendation.why;
  }
  print_json(j);
}

// The sweep, the step and the headroom it leaves, as text.
void print_capacities(const BenchArgs& a, const BenchResult& r) {
  if (a.sweep) {
    std::cout << "  reader alone, no training step (each rate the median of timed runs until "
                 "they agree; "
              << r.cores << " core" << (r.cores == 1 ? "" : "s") << " available):\n";
    for (const Capacity& c : r.capacities) {
      std::cout << "    " << c.threads << " thread" << (c.threads == 1 ? " " : "s")
                << (c.threads < 10 ? " " : "") << " " << fixed(c.images_per_s, 0) << " images/s, "
                << fixed(c.gb_per_s, 2) << " GB/s, "
                << percent(r.memcpy_bps > 0 ? c.gb_per_s * 1e9 / r.memcpy_bps : 0)
                << " of memcpy (spread " << percent(c.spread) << " over " << c.runs << " runs"
                << (c.stable ? "" : ", unsteady: the machine is busy") << ")"
                << (c.threads > r.cores ? ", more threads than cores" : "") << "\n";
    }
  }
  if (a.step_ms > 0) {
    std::cout << "  step      " << fixed(a.step_ms, 1) << " ms per batch of " << a.batch
              << " consumes " << fixed(r.step_images_per_s, 0) << " images/s\n";
  }
  if (a.sweep) {
    std::cout << "  recommended threads: " << r.run.threads << " (" << r.recommendation.why
              << ")\n";
  }
  if (r.capacity != nullptr && a.step_ms > 0) {
    const Capacity& c = *r.capacity;
    const double headroom = c.images_per_s / r.step_images_per_s;
    std::cout << "  headroom  " << c.threads << " thread" << (c.threads == 1 ? "" : "s") << " read "
              << fixed(c.images_per_s, 0) << " images/s alone, " << fixed(headroom, 1)
              << "x what the step consumes"
              << (headroom < 1           ? ": the reader cannot keep up, expect the step to wait"
                  : headroom < kHeadroom ? ": little to spare, expect some waiting"
                                         : "")
              << "\n";
  }
}

void print_result_text(const Dataset& dataset, const BenchArgs& a, const Device& device,
                       const BenchResult& r) {
  std::cout << a.dataset << ": " << dataset.num_records() << " records of " << dataset.height()
            << "x" << dataset.width() << "x" << dataset.channels() << " ("
            << human_bytes(dataset.num_records() * dataset.record_bytes())
            << (dataset.has_masks()
                    ? " + " + human_bytes(dataset.num_records() * dataset.mask_bytes()) +
                          " of masks"
                    : "")
            << ") in " << dataset.num_shards() << " shard" << (dataset.num_shards() == 1 ? "" : "s")
            << ", opened in " << fixed(r.open_seconds, 3) << " s\n";
  std::cout << "  reading   "
            << (a.split.empty() ? "all samples"
                                : a.split + " fold " + std::to_string(a.fold) + " " + a.role)
            << ", " << a.order << " order"
            << (a.sampling == "uniform" ? "" : ", " + a.sampling + " sampling")
            << (a.crop.empty() ? "" : ", crop " + a.crop)
            << (a.hflip > 0 ? ", flip " + fixed(a.hflip, 2) : "") << ", batch " << a.batch
            << ", prefetch " << a.prefetch << ", " << device.name() << ", " << a.output << " output"
            << (a.step_ms > 0 ? ", step " + fixed(a.step_ms, 1) + " ms" : "") << "\n";
  std::cout << "  memcpy    " << fixed(r.memcpy_bps / 1e9, 2) << " GB/s (" << a.memcpy_threads
            << " threads, same bytes, same run" << (r.storage ? ", page-cached" : "") << ")\n";
  if (r.storage) print_storage(r);
  if (r.upload_bps)
    std::cout << "  upload    " << fixed(*r.upload_bps / 1e9, 2) << " GB/s pinned H2D\n";
  print_capacities(a, r);
  const ReaderRun& run = r.run;
  std::cout << "  reader    " << fixed(run.images_per_s(), 0) << " images/s, "
            << fixed(run.gb_per_s(), 2) << " GB/s with " << run.threads << " thread"
            << (run.threads == 1 ? "" : "s");
  if (a.step_ms > 0) {
    std::cout << " and the step, starvation " << percent(run.stats.starvation())
              << " (time the step waited for a batch)\n"
              << "  waits     " << fixed(run.first_batch_wait_seconds * 1e3, 2)
              << " ms for the run's first batch, " << fixed(run.epoch_start_wait_seconds * 1e3, 2)
              << " ms at later epochs' starts; after the first batch, starvation "
              << percent(run.starvation_after_first_batch()) << "\n";
  } else if (r.storage) {
    std::cout << " (" << fixed(r.reader_vs(r.storage->best_sequential()), 2)
              << "x the best sequential read, " << fixed(r.reader_vs(r.storage->best_random()), 2)
              << "x the best random read, " << percent(r.reader_vs_memcpy())
              << " of page-cached memcpy)\n";
    std::cout << "  read path " << a.read_path << ": " << run.stats.records_read
              << " records read from their files, " << human_bytes(run.stats.prefetched_bytes)
              << " of shards read ahead whole (reading ahead into the next epoch included), "
              << run.stats.images - run.stats.padding << " delivered\n";
  } else {
    std::cout << " (" << percent(r.reader_vs_memcpy()) << " of memcpy)\n";
    std::cout << "  no step   the consumer does no work, so it waits for every batch (starvation "
              << percent(run.stats.starvation())
              << " says nothing); pass --step-ms with your training step's time to see whether "
                 "the reader keeps up\n";
  }
  if (run.stats.upload != "host delivery: nothing to upload") {
    std::cout << "  upload    " << run.stats.upload << "\n";
  }
  std::cout << "  memory    ring " << human_bytes(run.ring_host_bytes) << " host"
            << (run.ring_device_bytes > 0 ? " + " + human_bytes(run.ring_device_bytes) + " device"
                                          : "")
            << "; reader anonymous memory " << human_bytes(run.anon_growth_bytes) << " (bound "
            << human_bytes(r.memory_bound) << ")\n";
  if (r.memory_limit > 0) {
    std::cout << "  limit     " << human_bytes(r.memory_limit) << " (" << r.memory_cgroup
              << "): at most " << human_bytes(r.memory_peak) << " used, page cache included\n";
  }
}

int run_bench(const BenchArgs& a) {
  // Validate every option before the (possibly long) measurements.
  (void)loader_options(a, a.threads);
  if (a.epochs == 0) throw UsageError("--epochs must be at least 1");
  if (a.memcpy_threads == 0) throw UsageError("--memcpy-threads must be at least 1");
  if (!std::isfinite(a.step_ms) || a.step_ms < 0) {
    throw UsageError("--step-ms must be a number of milliseconds, 0 or more");
  }
  if (!std::isfinite(a.measure_seconds)) throw UsageError("--measure-seconds must be a number");
  if (a.cold && a.sweep) {
    throw UsageError("--cold reads at one thread count: give --threads instead of --sweep-threads");
  }
  if (a.cold && parse_direct_upload(a.direct_upload) == DirectUpload::on) {
    throw UsageError("--cold and --direct-upload: direct upload pins the whole dataset in memory");
  }
  const Device device = parse_device(a.device);
  // Before the dataset is opened and read: its pages are charged to the cgroup.
  // A limit below what the process holds already, or then needs for its
  // batches, would have the kernel kill it without a word: refused instead.
  std::optional<MemoryLimit> limit;
  if (!a.memory_limit.empty()) {
    const uint64_t bytes = parse_byte_size(a.memory_limit);
    const uint64_t floor = anon_rss_bytes() + (uint64_t{64} << 20);
    if (bytes < floor) {
      throw UsageError("--memory-limit " + a.memory_limit + " is below the " + human_bytes(floor) +
                       " this process holds already and needs to start (64 MiB above its " +
                       "resident memory)");
    }
    limit.emplace(bytes);
  }

  const Clock::time_point open_start = Clock::now();
  Dataset dataset = Dataset::open(a.dataset);
  const double open_seconds = since(open_start);
  // What the loader checks of the selection and the sampling, before the
  // measurements; and how many records an epoch holds, which bounds a batch.
  uint64_t epoch_size = 0;
  {
    LoaderOptions o = loader_options(a, a.threads);
    const EpochOrder order(dataset, select_samples(dataset.index(), o.selection),
                           resolve_variant_policy(o.selection.variants, o.selection.role), o.order);
    if (order.epoch_size() == 0) {
      throw UsageError("the selection holds no samples (" +
                       (a.split.empty() ? std::string("no sample of the dataset is in use")
                                        : "split " + a.split + " fold " + std::to_string(a.fold) +
                                              " " + a.role + " is empty") +
                       ")");
    }
    epoch_size = order.epoch_size();
  }
  {
    // The loader's ring and the memcpy reference's buffers, besides what the
    // process holds with the dataset open: refused where they could not be
    // held, rather than found out by the kernel's OOM killer mid-run.
    const uint64_t batch_bytes = batch_bytes_of(dataset, a, epoch_size);
    const uint64_t need = anon_rss_bytes() + reader_memory_bound(dataset, a, epoch_size) +
                          a.memcpy_threads * batch_bytes;
    const std::string needs = " the reader needs besides the page cache (" +
                              std::to_string(a.prefetch + 2 + a.memcpy_threads) + " batches of " +
                              human_bytes(batch_bytes) + ", the dataset's index and 64 MiB)";
    // Under --memory-limit this process's cgroup is the limit's.
    const uint64_t memory = limit ? limit->bytes() : detail::memory_for_page_cache();
    if (memory < need) {
      throw UsageError(
          (limit ? "--memory-limit " + a.memory_limit + " is below the " + human_bytes(need) + needs
                 : "--batch " + std::to_string(a.batch) + " and --prefetch " +
                       std::to_string(a.prefetch) + ": " + human_bytes(need) + needs +
                       ", more than the " + human_bytes(memory) +
                       " this process may use (physical memory or its memory cgroup's limit)") +
          ": a smaller --batch or --prefetch fits");
    }
  }
  if (!a.json && !a.quiet) {
    std::fprintf(stderr, "bench: opened %zu records in %zu shards in %.3f s; memcpy reference...\n",
                 dataset.num_records(), dataset.num_shards(), open_seconds);
  }
  BenchResult result = measure(dataset, a, device, epoch_size);
  result.open_seconds = open_seconds;
  if (limit) {
    result.memory_limit = limit->bytes();
    result.memory_peak = limit->peak_bytes();
    result.memory_cgroup = limit->description();
  }
  if (a.json) {
    print_result_json(dataset, a, device, result);
  } else {
    print_result_text(dataset, a, device, result);
  }
  return kExitOk;
}

}  // namespace

void add_bench_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Measure reader throughput and starvation against same-run memcpy bandwidth");
  cmd->add_option("DATASET", args->dataset, "Dataset directory")
      ->required()
      ->check(dataset_directory());
  cmd->add_option("--batch", args->batch, "Batch size")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20U));
  CLI::Option* threads = cmd->add_option("--threads", args->threads,
                                         "Reader threads (the maximum with --sweep-threads; 0: "
                                         "the loader's automatic choice, LoaderOptions::threads)")
                             ->capture_default_str()
                             ->check(CLI::Range(0u, 1024u));
  cmd->add_option("--prefetch", args->prefetch, "Slots in the ring")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{4096}));
  cmd->add_option("--epochs", args->epochs, "Epochs to read")
      ->capture_default_str()
      ->check(CLI::Range(1U, 1000000U));
  cmd->add_option("--order", args->order, "sequential, random or shard-window")
      ->capture_default_str()
      ->check(CLI::IsMember({"sequential", "random", "shard-window"}));
  cmd->add_option("--sampling", args->sampling,
                  "uniform (every record once per epoch) or class-balanced (every class equally "
                  "likely per draw, with replacement; random order)")
      ->capture_default_str()
      ->check(CLI::IsMember({"uniform", "class-balanced"}));
  cmd->add_option("--window", args->window, "Shards per window (shard-window order)")
      ->capture_default_str()
      ->check(CLI::Range(1U, 1000000U));
  cmd->add_option("--seed", args->seed, "Order seed")->check(whole_number())->capture_default_str();
  CLI::Option* split = cmd->add_option("--split", args->split, "Split to select from");
  cmd->add_option("--fold", args->fold, "Fold of the split")->capture_default_str()->needs(split);
  cmd->add_option("--role", args->role, "train, val, test or all")
      ->capture_default_str()
      ->check(CLI::IsMember({"train", "val", "test", "all"}));
  cmd->add_option("--variants", args->variants, "Variant policy: auto, clean, rotate or all")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "clean", "rotate", "all"}));
  cmd->add_option("--step-ms", args->step_ms,
                  "Simulated training step per batch (ms): your training step's time, for "
                  "starvation and headroom figures that mean something")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600000.0));
  cmd->add_flag("--sweep-threads", args->sweep,
                "Time the reader alone at 1..N threads (N: the cores available, or --threads) "
                "and recommend the fewest that read 1.25x what --step-ms consumes (without a "
                "step: the fewest within 5% of the best)");
  cmd->add_option("--measure-seconds", args->measure_seconds,
                  "The least time each rate of the reader alone is timed, in runs of a fifth of "
                  "it until five agree within 5% (at most 6 times it on a noisy machine); the "
                  "memcpy reference is timed for half of it")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 600.0));
  cmd->add_option("--device", args->device, "host or cuda:N")->capture_default_str();
  cmd->add_flag("--direct-upload{on}", args->direct_upload,
                "With cuda:N: auto (direct where the shards fit in half the memory and nothing "
                "needs the host to touch the records), on (the GPU copies records straight from "
                "the page cache, pinning the whole dataset in memory) or off (reader threads "
                "stage them in pinned memory); --direct-upload alone is on")
      ->capture_default_str();
  cmd->add_option("--crop", args->crop,
                  "Online crop N or WxH (random for train and all, center for val and test); "
                  "GB/s then counts the cropped bytes");
  cmd->add_option("--hflip,--flip", args->hflip, "Probability of mirroring each record left-right")
      ->capture_default_str();
  cmd->add_option("--output", args->output, "uint8, float32 or float16 (normalized NCHW)")
      ->capture_default_str()
      ->check(CLI::IsMember({"uint8", "float32", "float16"}));
  cmd->add_option("--memcpy-threads", args->memcpy_threads, "Threads of the memcpy reference")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1024u));
  cmd->add_option("--read-path", args->read_path,
                  "auto (mapped where the page cache holds the records, else read), mapped or "
                  "read (read every record, --reads-in-flight per thread)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "mapped", "read"}));
  cmd->add_option("--reads-in-flight", args->reads_in_flight,
                  "Records each reader thread keeps in flight when it reads")
      ->capture_default_str()
      ->check(CLI::Range(1u, 4096u));
  cmd->add_option("--direct-io", args->direct_io,
                  "Reads past the page cache (O_DIRECT): auto (when the dataset is larger than "
                  "the memory the page cache may use), on or off")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "on", "off"}));
  cmd->add_option("--memory-limit", args->memory_limit,
                  "Run in a memory cgroup of this size (K/M/G suffixes; page cache included), as "
                  "on a machine with less memory than the dataset; needs the right to create "
                  "cgroups (root)");
  cmd->add_flag("--cold", args->cold,
                "Evict the dataset from the page cache before each epoch and compare with the "
                "storage's own bandwidth over the same files (O_DIRECT sequential and random "
                "reads, measured in the same run)");
  cmd->add_flag("--json", args->json, "Print one JSON object on stdout");
  cmd->add_flag("--quiet,-q", args->quiet, "No progress lines");
  cmd->callback([args, threads, &action] {
    args->threads_given = threads->count() > 0;
    action = [args] { return run_bench(*args); };
  });
}

}  // namespace imgpack::cli
