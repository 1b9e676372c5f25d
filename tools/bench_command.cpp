// imgpack bench DATASET: reader throughput and starvation, with the machine's
// memcpy bandwidth over the same mapped bytes measured in the same run as the
// reference (and, for --device cuda:N, the pinned host-to-device copy rate).
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli_common.hpp"
#include "cli_values.hpp"
#include "imgpack/dataset.hpp"
#include "imgpack/epoch_order.hpp"
#include "imgpack/error.hpp"
#include "imgpack/loader.hpp"
#include "imgpack/selection.hpp"

namespace imgpack::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct BenchArgs {
  std::string dataset;
  std::size_t batch = 256;
  unsigned threads = 2;
  bool threads_given = false;
  std::size_t prefetch = 4;
  unsigned epochs = 3;
  std::string order = "random";
  std::string sampling = "uniform";
  uint32_t window = 4;
  uint64_t seed = 0;
  std::string split;
  int32_t fold = 0;
  std::string role = "all";
  std::string variants = "auto";
  double step_ms = 0;
  bool sweep = false;
  std::string device = "host";
  bool direct_upload = false;
  std::string crop;  // "224" or "WxH"; empty: whole records
  double hflip = 0;
  std::string output = "uint8";
  unsigned memcpy_threads = 2;
  bool json = false;
  bool quiet = false;
};

struct ReaderRun {
  unsigned threads = 0;
  double seconds = 0;
  LoaderStats stats;
  std::size_t ring_host_bytes = 0;
  std::size_t ring_device_bytes = 0;
  uint64_t anon_growth_bytes = 0;  // peak anonymous memory above the baseline
  double images_per_s() const {
    return seconds > 0 ? static_cast<double>(stats.images) / seconds : 0;
  }
  double gb_per_s() const {
    return seconds > 0 ? static_cast<double>(stats.bytes) / seconds / 1e9 : 0;
  }
};

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100 * fraction);
  return text;
}

std::string fixed(double value, int digits) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

// Anonymous resident memory of this process (heap, thread stacks, batch
// slots), excluding mapped file pages, which belong to the page cache.
uint64_t anon_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("RssAnon:", 0) == 0) return std::stoull(line.substr(8)) * 1024;
  }
  return 0;
}

// Copies every shard's mapped pixels in batch-sized pieces with `threads`
// threads, each into its own buffer; returns bytes per second. The first
// pass (untimed) faults the mapping in and warms the page cache, so the
// timed passes and the reader see the same memory state.
double memcpy_bandwidth(const Dataset& dataset, std::size_t piece, unsigned threads) {
  struct Piece {
    const uint8_t* data;
    std::size_t size;
  };
  std::vector<Piece> pieces;
  uint64_t total = 0;
  for (std::size_t k = 0; k < dataset.num_shards(); ++k) {
    std::span<const uint8_t> images = dataset.shard_images(k);
    for (std::size_t at = 0; at < images.size(); at += piece) {
      pieces.push_back({images.data() + at, std::min(piece, images.size() - at)});
      total += pieces.back().size;
    }
  }
  if (total == 0) return 0;
  std::vector<std::vector<uint8_t>> buffers(threads, std::vector<uint8_t>(piece, 1));
  // Passes until half a second was timed (a small dataset copies in
  // milliseconds, too short to time alone); the median of them.
  std::vector<double> rates;
  double timed = 0;
  for (int pass = 0; pass < 3 || timed < 0.5; ++pass) {
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> workers;
    const Clock::time_point start = Clock::now();
    for (unsigned t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        for (std::size_t i = next++; i < pieces.size(); i = next++) {
          std::memcpy(buffers[t].data(), pieces[i].data, pieces[i].size);
        }
      });
    }
    for (std::thread& w : workers) w.join();
    const double seconds = since(start);
    if (pass > 0) {
      rates.push_back(static_cast<double>(total) / seconds);
      timed += seconds;
    }
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

// Pinned host -> device copy rate of one batch-sized buffer through the
// backend (the cudaMemcpy-from-pinned reference for GPU runs).
double upload_bandwidth(const Device& device, std::size_t bytes) {
  std::unique_ptr<UploadBackend> backend = make_upload_backend(device);
  Memory host = backend->allocate_host(bytes);
  Memory dev = backend->allocate_device(bytes);
  std::unique_ptr<UploadEvent> done = backend->create_event();
  backend->copy_to_device(dev.data(), host.data(), bytes);  // warm-up
  backend->record(*done);
  backend->synchronize(*done);
  const int repeats = 20;
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < repeats; ++i) backend->copy_to_device(dev.data(), host.data(), bytes);
  backend->record(*done);
  backend->synchronize(*done);
  return static_cast<double>(bytes) * repeats / since(start);
}

LoaderOptions loader_options(const BenchArgs& a, unsigned threads) {
  LoaderOptions o;
  o.selection.split = a.split;
  o.selection.fold = a.fold;
  o.selection.role = parse_role(a.role);
  o.selection.variants = parse_variant_policy(a.variants);
  o.order.mode = parse_order_mode(a.order);
  o.order.seed = a.seed;
  o.order.window_shards = a.window;
  o.order.sampling = parse_sampling(a.sampling);
  o.batch_size = a.batch;
  o.last_batch = LastBatch::partial;
  o.threads = threads;
  o.prefetch = a.prefetch;
  o.device = parse_device(a.device);
  o.direct_upload = a.direct_upload;
  if (!a.crop.empty()) {
    const auto [width, height] = parse_image_size(a.crop);
    o.crop.width = width;
    o.crop.height = height;
  }
  o.crop.hflip = a.hflip;
  o.output = parse_output_format(a.output);
  if (o.output != OutputFormat::uint8_nhwc) {
    o.mean = {0.485f, 0.456f, 0.406f, 0};
    o.stddev = {0.229f, 0.224f, 0.225f, 1};
  }
  return o;
}

ReaderRun run_reader(const Dataset& dataset, const BenchArgs& a, unsigned threads) {
  const uint64_t baseline = anon_rss_bytes();
  ReaderRun run;
  run.threads = threads;
  Loader loader(dataset, loader_options(a, threads));
  run.ring_host_bytes = loader.ring_host_bytes();
  run.ring_device_bytes = loader.ring_device_bytes();
  const auto step = std::chrono::duration<double, std::milli>(a.step_ms);
  uint64_t peak = anon_rss_bytes();
  const Clock::time_point start = Clock::now();
  for (unsigned epoch = 0; epoch < a.epochs; ++epoch) {
    loader.set_epoch(epoch);
    while (std::optional<Batch> batch = loader.next()) {
      // A training step: the consumer is busy (on the GPU) and lets the
      // readers work ahead.
      if (a.step_ms > 0) std::this_thread::sleep_for(step);
      if (batch->on_device()) batch->synchronize();
    }
    peak = std::max(peak, anon_rss_bytes());
  }
  run.seconds = since(start);
  run.stats = loader.stats();
  run.anon_growth_bytes = peak > baseline ? peak - baseline : 0;
  return run;
}

// The cores this process may run on (its CPU affinity), which is what reader
// threads can use; more threads than that only take turns.
unsigned cores_available() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) {
    return static_cast<unsigned>(CPU_COUNT(&set));
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

// What a reader alone delivers with some thread count, the consumer taking
// each batch as it comes: the median rate of repeated timed runs.
struct Capacity {
  unsigned threads = 0;
  double images_per_s = 0;
  double gb_per_s = 0;
  double spread = 0;  // (max - min) / median over the runs the median is taken from
  int runs = 0;       // timed runs, the warm-up excluded
  double seconds = 0;
  bool stable = false;
};

// A rate is measured in runs of kRunSeconds, after one warm-up run (threads
// started, ring filled, pages touched), until the last kStableRuns agree
// within kStableSpread and at least kMinSeconds were timed; a noisy machine
// stops at kMaxSeconds with the spread it got. Runs of a few milliseconds
// scatter by tens of percent and made recommendations differ run to run.
constexpr double kRunSeconds = 0.2;
constexpr double kMinSeconds = 1.0;
constexpr double kMaxSeconds = 6.0;
constexpr int kStableRuns = 5;
constexpr double kStableSpread = 0.05;
// A reader that only just keeps up with the step starves it at every hiccup:
// the recommendation asks for this much more than the step consumes.
constexpr double kHeadroom = 1.25;

Capacity measure_capacity(const Dataset& dataset, const BenchArgs& a, unsigned threads) {
  Loader loader(dataset, loader_options(a, threads));
  if (loader.batches_per_epoch() == 0) throw UsageError("the selection holds no records");
  uint64_t epoch = 0;
  loader.set_epoch(epoch);
  // Images read in about `seconds`, and the time it took; epochs follow one another.
  auto read_for = [&](double seconds) {
    uint64_t images = 0;
    const Clock::time_point start = Clock::now();
    while (since(start) < seconds) {
      std::optional<Batch> batch = loader.next();
      if (!batch) {
        loader.set_epoch(++epoch);
        continue;
      }
      if (batch->on_device()) batch->synchronize();
      images += batch->size();
    }
    return std::pair<uint64_t, double>(images, since(start));
  };
  read_for(kRunSeconds);
  Capacity c;
  c.threads = threads;
  std::vector<double> rates;
  while (true) {
    const auto [images, seconds] = read_for(kRunSeconds);
    rates.push_back(static_cast<double>(images) / seconds);
    c.seconds += seconds;
    std::vector<double> last(
        rates.end() - static_cast<std::ptrdiff_t>(std::min<std::size_t>(rates.size(), kStableRuns)),
        rates.end());
    std::sort(last.begin(), last.end());
    c.images_per_s = last[last.size() / 2];
    c.spread = c.images_per_s > 0 ? (last.back() - last.front()) / c.images_per_s : 0;
    c.runs = static_cast<int>(rates.size());
    c.stable = last.size() >= kStableRuns && c.spread <= kStableSpread;
    if ((c.stable && c.seconds >= kMinSeconds) || c.seconds >= kMaxSeconds) break;
  }
  c.gb_per_s = c.images_per_s * static_cast<double>(dataset.record_bytes()) / 1e9;
  return c;
}

// The thread count to use, and why.
struct Recommendation {
  const Capacity* chosen = nullptr;
  std::string why;
  bool keeps_up = true;  // false: no thread count reads as fast as the step consumes
};

// With a training step: the fewest threads whose reader alone delivers
// kHeadroom times what the step consumes. Without one: the fewest within 5%
// of the best rate.
Recommendation recommend(const std::vector<Capacity>& sweep, double step_images_per_s) {
  Recommendation r;
  const Capacity* best = &sweep.front();
  for (const Capacity& c : sweep) {
    if (c.images_per_s > best->images_per_s) best = &c;
  }
  if (step_images_per_s > 0) {
    for (const Capacity& c : sweep) {
      if (c.images_per_s >= kHeadroom * step_images_per_s) {
        r.chosen = &c;
        r.why = "the fewest that read at least " + fixed(kHeadroom, 2) + "x what the step consumes";
        return r;
      }
    }
    r.chosen = best;
    r.keeps_up = false;
    r.why = "the fastest; none reads " + fixed(kHeadroom, 2) + "x what the step consumes";
    return r;
  }
  for (const Capacity& c : sweep) {
    if (c.images_per_s >= 0.95 * best->images_per_s) {
      r.chosen = &c;
      break;
    }
  }
  r.why = "the fewest within 5% of the best";
  return r;
}

nlohmann::ordered_json capacity_json(const Capacity& c) {
  return {{"threads", c.threads},   {"images_per_s", c.images_per_s},
          {"gb_per_s", c.gb_per_s}, {"spread", c.spread},
          {"runs", c.runs},         {"seconds", c.seconds},
          {"stable", c.stable}};
}

int run_bench(const BenchArgs& a) {
  // Validate every option before the (possibly long) measurements.
  (void)loader_options(a, a.threads);
  if (a.epochs == 0) throw UsageError("--epochs must be at least 1");
  if (a.memcpy_threads == 0) throw UsageError("--memcpy-threads must be at least 1");
  if (a.step_ms < 0) throw UsageError("--step-ms must not be negative");
  const bool say = !a.json && !a.quiet;

  const Clock::time_point open_start = Clock::now();
  Dataset dataset = Dataset::open(a.dataset);
  const double open_seconds = since(open_start);
  {
    // What the loader checks of the selection and the sampling, before the measurements.
    LoaderOptions o = loader_options(a, a.threads);
    const EpochOrder order(dataset, select_samples(dataset.index(), o.selection),
                           resolve_variant_policy(o.selection.variants, o.selection.role), o.order);
    if (order.epoch_size() == 0) throw UsageError("the selection holds no samples");
  }
  const std::size_t batch_bytes = a.batch * dataset.record_bytes();
  if (say) {
    std::fprintf(stderr, "bench: opened %zu records in %zu shards in %.3f s; memcpy reference...\n",
                 dataset.num_records(), dataset.num_shards(), open_seconds);
  }
  const double memcpy_bps = memcpy_bandwidth(dataset, batch_bytes, a.memcpy_threads);
  const Device device = parse_device(a.device);
  std::optional<double> upload_bps;
  if (device.is_cuda()) upload_bps = upload_bandwidth(device, batch_bytes);

  // The rate the step consumes, and what the reader alone delivers: at each
  // thread count of the sweep (1 up to the cores available, or to --threads
  // when given), or at --threads when there is a step to compare with.
  const double step_images_per_s =
      a.step_ms > 0 ? static_cast<double>(a.batch) * 1000.0 / a.step_ms : 0;
  const unsigned cores = cores_available();
  std::vector<Capacity> capacities;
  if (a.sweep || a.step_ms > 0) {
    const unsigned first = a.sweep ? 1 : a.threads;
    const unsigned last = a.sweep && !a.threads_given ? cores : a.threads;
    for (unsigned t = first; t <= last; ++t) {
      if (say) std::fprintf(stderr, "bench: reader alone, %u thread%s...", t, t == 1 ? "" : "s");
      capacities.push_back(measure_capacity(dataset, a, t));
      const Capacity& c = capacities.back();
      if (say) {
        std::fprintf(stderr, " %.0f images/s (spread %s over %d runs)\n", c.images_per_s,
                     percent(c.spread).c_str(), c.runs);
      }
    }
  }
  Recommendation recommendation;
  if (a.sweep) recommendation = recommend(capacities, step_images_per_s);
  const unsigned threads = a.sweep ? recommendation.chosen->threads : a.threads;
  const Capacity* capacity = a.sweep              ? recommendation.chosen
                             : capacities.empty() ? nullptr
                                                  : &capacities.front();

  if (say) {
    std::fprintf(stderr, "bench: reading %u epoch(s) with %u thread%s%s...\n", a.epochs, threads,
                 threads == 1 ? "" : "s", a.step_ms > 0 ? " and the step" : "");
  }
  const ReaderRun main_run = run_reader(dataset, a, threads);
  const ReaderRun* chosen = &main_run;
  const uint64_t memory_bound = (a.prefetch + 2) * batch_bytes + (uint64_t{64} << 20);

  if (a.json) {
    nlohmann::ordered_json j;
    j["images_per_s"] = chosen->images_per_s();
    j["gb_per_s"] = chosen->gb_per_s();
    j["memcpy_gb_per_s"] = memcpy_bps / 1e9;
    j["starvation"] = chosen->stats.starvation();
    j["threads"] = chosen->threads;
    j["batch"] = a.batch;
    j["reader_vs_memcpy"] = memcpy_bps > 0 ? chosen->gb_per_s() * 1e9 / memcpy_bps : 0;
    if (upload_bps) j["upload_reference_gb_per_s"] = *upload_bps / 1e9;
    j["memcpy_threads"] = a.memcpy_threads;
    j["device"] = device.name();
    j["output"] = a.output;
    j["order"] = a.order;
    j["sampling"] = a.sampling;
    j["prefetch"] = a.prefetch;
    j["epochs"] = a.epochs;
    j["step_ms"] = a.step_ms;
    j["images"] = chosen->stats.images;
    j["bytes"] = chosen->stats.bytes;
    j["seconds"] = chosen->seconds;
    j["wait_seconds"] = chosen->stats.wait_seconds;
    j["reader_busy_seconds"] = chosen->stats.reader_busy_seconds;
    j["upload_busy_seconds"] = chosen->stats.upload_busy_seconds;
    j["record_bytes"] = dataset.record_bytes();
    j["records"] = dataset.num_records();
    j["shards"] = dataset.num_shards();
    j["open_seconds"] = open_seconds;
    j["ring_host_bytes"] = chosen->ring_host_bytes;
    j["ring_device_bytes"] = chosen->ring_device_bytes;
    j["reader_memory_bytes"] = chosen->anon_growth_bytes;
    j["memory_bound_bytes"] = memory_bound;
    j["cores_available"] = cores;
    if (a.step_ms > 0) j["step_images_per_s"] = step_images_per_s;
    if (capacity != nullptr) {
      j["reader_alone_images_per_s"] = capacity->images_per_s;
      if (a.step_ms > 0) j["headroom"] = capacity->images_per_s / step_images_per_s;
    }
    if (a.sweep) {
      nlohmann::ordered_json sweep = nlohmann::ordered_json::array();
      for (const Capacity& c : capacities) sweep.push_back(capacity_json(c));
      j["sweep"] = std::move(sweep);
      j["recommended_threads"] = recommendation.chosen->threads;
      j["recommendation"] = recommendation.why;
    }
    print_json(j);
    return kExitOk;
  }

  std::cout << a.dataset << ": " << dataset.num_records() << " records of " << dataset.height()
            << "x" << dataset.width() << "x" << dataset.channels() << " ("
            << human_bytes(dataset.num_records() * dataset.record_bytes()) << ") in "
            << dataset.num_shards() << " shard" << (dataset.num_shards() == 1 ? "" : "s")
            << ", opened in " << fixed(open_seconds, 3) << " s\n";
  std::cout << "  reading   "
            << (a.split.empty() ? "all samples"
                                : a.split + " fold " + std::to_string(a.fold) + " " + a.role)
            << ", " << a.order << " order"
            << (a.sampling == "uniform" ? "" : ", " + a.sampling + " sampling") << ", batch "
            << a.batch << ", prefetch " << a.prefetch << ", " << device.name() << ", " << a.output
            << " output" << (a.step_ms > 0 ? ", step " + fixed(a.step_ms, 1) + " ms" : "") << "\n";
  std::cout << "  memcpy    " << fixed(memcpy_bps / 1e9, 2) << " GB/s (" << a.memcpy_threads
            << " threads, same bytes, same run)\n";
  if (upload_bps)
    std::cout << "  upload    " << fixed(*upload_bps / 1e9, 2) << " GB/s pinned H2D\n";
  if (a.sweep) {
    std::cout << "  reader alone, no training step (each rate the median of timed runs until "
                 "they agree; "
              << cores << " core" << (cores == 1 ? "" : "s") << " available):\n";
    for (const Capacity& c : capacities) {
      std::cout << "    " << c.threads << " thread" << (c.threads == 1 ? " " : "s")
                << (c.threads < 10 ? " " : "") << " " << fixed(c.images_per_s, 0) << " images/s, "
                << fixed(c.gb_per_s, 2) << " GB/s, "
                << percent(memcpy_bps > 0 ? c.gb_per_s * 1e9 / memcpy_bps : 0)
                << " of memcpy (spread " << percent(c.spread) << " over " << c.runs << " runs"
                << (c.stable ? "" : ", unsteady: the machine is busy") << ")"
                << (c.threads > cores ? ", more threads than cores" : "") << "\n";
    }
  }
  if (a.step_ms > 0) {
    std::cout << "  step      " << fixed(a.step_ms, 1) << " ms per batch of " << a.batch
              << " consumes " << fixed(step_images_per_s, 0) << " images/s\n";
  }
  if (a.sweep) {
    std::cout << "  recommended threads: " << threads << " (" << recommendation.why << ")\n";
  }
  if (capacity != nullptr && a.step_ms > 0) {
    const double headroom = capacity->images_per_s / step_images_per_s;
    std::cout << "  headroom  " << capacity->threads << " thread"
              << (capacity->threads == 1 ? "" : "s") << " read " << fixed(capacity->images_per_s, 0)
              << " images/s alone, " << fixed(headroom, 1) << "x what the step consumes"
              << (headroom < 1           ? ": the reader cannot keep up, expect the step to wait"
                  : headroom < kHeadroom ? ": little to spare, expect some waiting"
                                         : "")
              << "\n";
  }
  std::cout << "  reader    " << fixed(chosen->images_per_s(), 0) << " images/s, "
            << fixed(chosen->gb_per_s(), 2) << " GB/s with " << chosen->threads << " thread"
            << (chosen->threads == 1 ? "" : "s");
  if (a.step_ms > 0) {
    std::cout << " and the step, starvation " << percent(chosen->stats.starvation())
              << " (time the step waited for a batch)\n";
  } else {
    std::cout << " (" << percent(memcpy_bps > 0 ? chosen->gb_per_s() * 1e9 / memcpy_bps : 0)
              << " of memcpy)\n";
    std::cout << "  no step   the consumer does no work, so it waits for every batch (starvation "
              << percent(chosen->stats.starvation())
              << " says nothing); pass --step-ms with your training step's time to see whether "
                 "the reader keeps up\n";
  }
  std::cout << "  memory    ring " << human_bytes(chosen->ring_host_bytes) << " host"
            << (chosen->ring_device_bytes > 0
                    ? " + " + human_bytes(chosen->ring_device_bytes) + " device"
                    : "")
            << "; reader anonymous memory " << human_bytes(chosen->anon_growth_bytes) << " (bound "
            << human_bytes(memory_bound) << ")\n";
  return kExitOk;
}

}  // namespace

void add_bench_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Measure reader throughput and starvation against same-run memcpy bandwidth");
  cmd->add_option("DATASET", args->dataset, "Dataset directory")->required();
  cmd->add_option("--batch", args->batch, "Batch size")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  CLI::Option* threads = cmd->add_option("--threads", args->threads,
                                         "Reader threads (the maximum with --sweep-threads)")
                             ->capture_default_str()
                             ->check(CLI::Range(1u, 1024u));
  cmd->add_option("--prefetch", args->prefetch, "Slots in the ring")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{4096}));
  cmd->add_option("--epochs", args->epochs, "Epochs to read")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
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
      ->check(CLI::PositiveNumber);
  cmd->add_option("--seed", args->seed, "Order seed")->capture_default_str();
  cmd->add_option("--split", args->split, "Split to select from");
  cmd->add_option("--fold", args->fold, "Fold of the split")->capture_default_str();
  cmd->add_option("--role", args->role, "train, val, test or all")
      ->capture_default_str()
      ->check(CLI::IsMember({"train", "val", "test", "all"}));
  cmd->add_option("--variants", args->variants, "Variant policy: auto, clean, rotate or all")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "clean", "rotate", "all"}));
  cmd->add_option("--step-ms", args->step_ms,
                  "Simulated training step per batch (ms): your training step's time, for "
                  "starvation and headroom figures that mean something")
      ->capture_default_str();
  cmd->add_flag("--sweep-threads", args->sweep,
                "Time the reader alone at 1..N threads (N: the cores available, or --threads) "
                "and recommend the fewest that read 1.25x what --step-ms consumes (without a "
                "step: the fewest within 5% of the best)");
  cmd->add_option("--device", args->device, "host or cuda:N")->capture_default_str();
  cmd->add_flag("--direct-upload", args->direct_upload,
                "With cuda:N: the GPU copies records straight from the page cache (pins the "
                "whole dataset in memory) instead of reader threads staging them");
  cmd->add_option("--crop", args->crop,
                  "Online crop N or WxH (random for train and all, center for val and test); "
                  "GB/s then counts the cropped bytes");
  cmd->add_option("--hflip", args->hflip, "Probability of mirroring each record left-right")
      ->capture_default_str();
  cmd->add_option("--output", args->output, "uint8, float32 or float16 (normalized NCHW)")
      ->capture_default_str()
      ->check(CLI::IsMember({"uint8", "float32", "float16"}));
  cmd->add_option("--memcpy-threads", args->memcpy_threads, "Threads of the memcpy reference")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1024u));
  cmd->add_flag("--json", args->json, "Print one JSON object on stdout");
  cmd->add_flag("--quiet,-q", args->quiet, "No progress lines");
  cmd->callback([args, threads, &action] {
    args->threads_given = threads->count() > 0;
    action = [args] { return run_bench(*args); };
  });
}

}  // namespace imgpack::cli
