// The measurements behind `imgpack bench` (bench_measure.cpp); the command
// itself (bench_command.cpp) parses options and prints what these return.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "imgpack/dataset.hpp"
#include "imgpack/loader.hpp"

namespace imgpack::cli {

using Clock = std::chrono::steady_clock;

// The command line of `imgpack bench`, as parsed.
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
  double measure_seconds = 1.0;  // the least time each rate of the reader alone is timed
  std::string device = "host";
  std::string direct_upload = "auto";  // auto, on or off (DirectUpload)
  std::string crop;                    // "224" or "WxH"; empty: whole records
  double hflip = 0;
  std::string output = "uint8";
  unsigned memcpy_threads = 2;
  std::string memory_limit;        // --memory-limit BYTES (empty: none)
  bool cold = false;               // evict before each epoch; the storage as the reference
  std::string read_path = "auto";  // auto, mapped or read (ReadPath)
  unsigned reads_in_flight = LoaderOptions{}.reads_in_flight;
  std::string direct_io = "auto";  // auto, on or off (DirectIo)
  bool json = false;
  bool quiet = false;
};

// One timed read of --epochs epochs, with the step when one is given.
struct ReaderRun {
  unsigned threads = 0;
  double seconds = 0;
  LoaderStats stats;
  std::size_t ring_host_bytes = 0;
  std::size_t ring_device_bytes = 0;
  uint64_t anon_growth_bytes = 0;  // peak anonymous memory above the baseline
  // Where the consumer's waits (stats.wait_seconds) fell: in the run's first
  // next(), which finds the ring empty whatever the loader does, and in the
  // first next() of every later epoch (the epoch boundaries).
  double first_batch_wait_seconds = 0;
  double epoch_start_wait_seconds = 0;
  // The consumer's waits after its first batch, as a fraction of its time
  // after it: what a training run longer than this one converges to.
  double starvation_after_first_batch() const {
    const double time = stats.consumer_seconds - first_batch_wait_seconds;
    const double wait = stats.wait_seconds - first_batch_wait_seconds;
    return time > 0 && wait > 0 ? wait / time : 0;
  }
  double images_per_s() const {
    return seconds > 0 ? static_cast<double>(stats.images) / seconds : 0;
  }
  double gb_per_s() const {
    return seconds > 0 ? static_cast<double>(stats.bytes) / seconds / 1e9 : 0;
  }
};

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

// The thread count to use, and why.
struct Recommendation {
  const Capacity* chosen = nullptr;  // points into the sweep it was made from
  std::string why;
  bool keeps_up = true;  // false: no thread count reads as fast as the step consumes
};

// A reader that only just keeps up with the step starves it at every hiccup:
// the recommendation asks for this much more than the step consumes.
inline constexpr double kHeadroom = 1.25;

double since(Clock::time_point start);
std::string percent(double fraction);  // 0.123 -> "12.3%"

// Anonymous resident memory of this process, in bytes.
uint64_t anon_rss_bytes();

// Bytes per second of `threads` threads copying the dataset's mapped pixels
// in `piece`-sized pieces, the page cache warmed first: the median of passes
// over at least `seconds_to_time` seconds.
double memcpy_bandwidth(const Dataset& dataset, std::size_t piece, unsigned threads,
                        double seconds_to_time);

// Bytes per second of pinned host-to-device copies of `bytes` through the
// device's upload backend.
double upload_bandwidth(const Device& device, std::size_t bytes);

// The loader options the arguments ask for, with `threads` reader threads.
// Throws UsageError for values the library refuses.
LoaderOptions loader_options(const BenchArgs& a, unsigned threads);

// Reads --epochs epochs with --step-ms of simulated work per batch.
ReaderRun run_reader(const Dataset& dataset, const BenchArgs& a, unsigned threads);

// The reader alone at `threads` threads, timed until the rate is steady.
Capacity measure_capacity(const Dataset& dataset, const BenchArgs& a, unsigned threads);

// The thread count of `sweep` (not empty) to use for a step consuming
// `step_images_per_s` (0: no step).
Recommendation recommend(const std::vector<Capacity>& sweep, double step_images_per_s);

}  // namespace imgpack::cli
