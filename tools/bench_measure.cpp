// Measurements behind imgpack bench: the same-run references (memcpy over
// the mapped bytes, pinned host-to-device copies), reader runs and the
// thread-count sweep with its recommendation.
#include "bench_measure.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <thread>

#include "cli_common.hpp"
#include "cli_values.hpp"
#include "imgpack/error.hpp"

namespace imgpack::cli {

namespace {

// A rate is measured in runs of a fifth of --measure-seconds, after one
// warm-up run (threads started, ring filled, pages touched), until the last
// kStableRuns agree within kStableSpread and at least --measure-seconds were
// timed; a noisy machine stops at kMaxTimesMeasure times that with the
// spread it got. Runs of a few milliseconds scatter by tens of percent and
// made recommendations differ run to run.
constexpr double kRunsPerMeasure = 5;
constexpr double kMaxTimesMeasure = 6;
constexpr int kStableRuns = 5;
constexpr double kStableSpread = 0.05;

}  // namespace

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100 * fraction);
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

// Copies every shard's mapped pixels (and masks) in batch-sized pieces with `threads`
// threads, each into its own buffer; returns bytes per second. The first
// pass (untimed) faults the mapping in and warms the page cache, so the
// timed passes and the reader see the same memory state.
double memcpy_bandwidth(const Dataset& dataset, std::size_t piece, unsigned threads,
                        double seconds_to_time) {
  struct Piece {
    const uint8_t* data;
    std::size_t size;
  };
  std::vector<Piece> pieces;
  uint64_t total = 0;
  for (std::size_t k = 0; k < dataset.num_shards(); ++k) {
    // The images, then the masks (empty without): what the reader copies.
    for (const std::span<const uint8_t> bytes : {dataset.shard_images(k), dataset.shard_masks(k)}) {
      for (std::size_t at = 0; at < bytes.size(); at += piece) {
        pieces.push_back({bytes.data() + at, std::min(piece, bytes.size() - at)});
        total += pieces.back().size;
      }
    }
  }
  if (total == 0) return 0;
  std::vector<std::vector<uint8_t>> buffers(threads, std::vector<uint8_t>(piece, 1));
  // Passes until `seconds_to_time` were timed (a small dataset copies in
  // milliseconds, too short to time alone); the median of them.
  std::vector<double> rates;
  double timed = 0;
  for (int pass = 0; pass < 3 || timed < seconds_to_time; ++pass) {
    std::atomic<std::size_t> next{0};
    // Joined however this ends: a thread that cannot start (ulimit -u)
    // throws, and those started finish their copies first.
    std::vector<std::jthread> workers;
    const Clock::time_point start = Clock::now();
    for (unsigned t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        for (std::size_t i = next++; i < pieces.size(); i = next++) {
          std::memcpy(buffers[t].data(), pieces[i].data, pieces[i].size);
        }
      });
    }
    for (std::jthread& w : workers) w.join();
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
  o.direct_upload = parse_direct_upload(a.direct_upload);
  o.read_path = parse_read_path(a.read_path);
  o.reads_in_flight = a.reads_in_flight;
  o.direct_io = parse_direct_io(a.direct_io);
  if (!a.crop.empty()) {
    const auto [width, height] = parse_image_size(a.crop, "--crop");
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
  run.threads = loader.stats().threads;  // threads 0: the loader's choice
  run.ring_host_bytes = loader.ring_host_bytes();
  run.ring_device_bytes = loader.ring_device_bytes();
  const auto step = std::chrono::duration<double, std::milli>(a.step_ms);
  uint64_t peak = anon_rss_bytes();
  const Clock::time_point start = Clock::now();
  for (unsigned epoch = 0; epoch < a.epochs; ++epoch) {
    loader.set_epoch(epoch);
    // The wait of the epoch's first next(), as the loader counts it.
    const double waited_before = loader.stats().wait_seconds;
    std::optional<Batch> batch = loader.next();
    (epoch == 0 ? run.first_batch_wait_seconds : run.epoch_start_wait_seconds) +=
        loader.stats().wait_seconds - waited_before;
    for (; batch; batch = loader.next()) {
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
  const double run_seconds = a.measure_seconds / kRunsPerMeasure;
  read_for(run_seconds);
  Capacity c;
  c.threads = loader.stats().threads;  // threads 0: the loader's choice
  std::vector<double> rates;
  while (true) {
    const auto [images, seconds] = read_for(run_seconds);
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
    if ((c.stable && c.seconds >= a.measure_seconds) ||
        c.seconds >= kMaxTimesMeasure * a.measure_seconds) {
      break;
    }
  }
  c.gb_per_s =
      c.images_per_s * static_cast<double>(dataset.record_bytes() + dataset.mask_bytes()) / 1e9;
  return c;
}

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

}  // namespace imgpack::cli
