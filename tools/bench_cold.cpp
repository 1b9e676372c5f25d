// `imgpack bench --cold`: eviction of the dataset from the page cache, the
// storage reference read over the same shard files, and reader epochs that
// start cold.
#include "bench_cold.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <thread>

#include "files.hpp"
#include "imgpack/error.hpp"
#include "imgpack/loader.hpp"
#include "page_cache.hpp"

namespace imgpack::cli {

namespace {

constexpr std::size_t kSequentialRequest = std::size_t{4} << 20;

struct ShardFile {
  std::filesystem::path path;
  uint64_t size = 0;
  FileDescriptor fd;
};

// Opens every shard file for reading, with O_DIRECT when `direct`; returns
// nothing when the file system refuses O_DIRECT (EINVAL), saying why in `why`.
std::optional<std::vector<ShardFile>> open_shards(const Dataset& dataset, bool direct,
                                                  std::string& why) {
  std::vector<ShardFile> files;
  for (std::size_t k = 0; k < dataset.num_shards(); ++k) {
    ShardFile file;
    file.path = dataset.shard_path(k);
    file.size = std::filesystem::file_size(file.path);
    if (!direct) {
      file.fd = open_for_reading(file.path);
    } else if (std::optional<FileDescriptor> fd = open_direct(file.path)) {
      file.fd = std::move(*fd);
    } else {
      why =
          file.path.string() + ": the file system refuses O_DIRECT (" + std::strerror(EINVAL) + ")";
      return std::nullopt;
    }
    files.push_back(std::move(file));
  }
  return files;
}

// Reads with `threads` threads, each calling `read_one(buffer, rng)` (which
// returns the bytes it read, 0 when there is nothing left) until the time or
// `budget` bytes are used up; returns bytes per second.
template <typename ReadOne>
double timed_reads(unsigned threads, std::size_t request, double seconds, uint64_t budget,
                   ReadOne read_one) {
  std::atomic<uint64_t> total{0};
  std::atomic<bool> stop{false};
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
  // Joined however this ends: a thread that cannot start (ulimit -u)
  // throws, after telling those started to stop.
  std::vector<std::jthread> workers;
  const Clock::time_point start = Clock::now();
  const auto work = [&](unsigned t) {
    try {
      const IoBuffer buffer = allocate_io_buffer(request);
      std::mt19937_64 rng(0x5eed + t);
      while (!stop.load(std::memory_order_relaxed)) {
        const std::size_t got = read_one(buffer.get(), rng);
        if (got == 0) break;
        if (total.fetch_add(got) + got >= budget || since(start) >= seconds) stop = true;
      }
    } catch (...) {
      if (!failed.exchange(true)) failure = std::current_exception();
      stop = true;
    }
  };
  for (unsigned t = 0; t < threads; ++t) {
    try {
      workers.emplace_back(work, t);
    } catch (...) {
      stop = true;
      throw;
    }
  }
  for (std::jthread& w : workers) w.join();
  if (failure) std::rethrow_exception(failure);
  const double elapsed = since(start);
  return elapsed > 0 ? static_cast<double>(total.load()) / elapsed / 1e9 : 0;
}

// One pread; throws on an error, naming the file.
std::size_t read_at(const ShardFile& file, uint8_t* buffer, std::size_t length, uint64_t offset) {
  const ssize_t got = ::pread(file.fd.get(), buffer, length, static_cast<off_t>(offset));
  if (got < 0) throw system_error(file.path, "read failed", errno);
  return static_cast<std::size_t>(got);
}

double sequential_rate(const std::vector<ShardFile>& files, unsigned in_flight, double seconds) {
  struct Chunk {
    std::size_t file;
    uint64_t offset;
  };
  std::vector<Chunk> chunks;
  uint64_t bytes = 0;
  for (std::size_t f = 0; f < files.size(); ++f) {
    for (uint64_t at = 0; at < files[f].size; at += kSequentialRequest) chunks.push_back({f, at});
    bytes += files[f].size;
  }
  std::atomic<std::size_t> next{0};
  return timed_reads(in_flight, kSequentialRequest, seconds, bytes,
                     [&](uint8_t* buffer, std::mt19937_64&) -> std::size_t {
                       const std::size_t i = next++;
                       if (i >= chunks.size()) return 0;
                       const ShardFile& file = files[chunks[i].file];
                       // Whole aligned requests: a short read at the end is fine.
                       return read_at(file, buffer, kSequentialRequest, chunks[i].offset);
                     });
}

double random_rate(const std::vector<ShardFile>& files, std::size_t request, unsigned in_flight,
                   double seconds) {
  uint64_t bytes = 0;
  for (const ShardFile& f : files) bytes += f.size;
  return timed_reads(in_flight, request, seconds, bytes,
                     [&](uint8_t* buffer, std::mt19937_64& rng) -> std::size_t {
                       // A file in proportion to its size, then an aligned offset in it.
                       uint64_t at = std::uniform_int_distribution<uint64_t>(0, bytes - 1)(rng);
                       std::size_t f = 0;
                       while (at >= files[f].size) at -= files[f++].size;
                       const uint64_t last = files[f].size > request ? files[f].size - request : 0;
                       const uint64_t offset = align_down(std::min(at, last));
                       const std::size_t got = read_at(files[f], buffer, request, offset);
                       return got > 0 ? got : 1;  // an empty file: count on, not stop
                     });
}

double best_of(const std::vector<StorageRate>& rates) {
  double best = 0;
  for (const StorageRate& r : rates) best = std::max(best, r.gb_per_s);
  return best;
}

}  // namespace

Eviction evict_dataset(const Dataset& dataset) {
  Eviction result;
  for (std::size_t k = 0; k < dataset.num_shards(); ++k) {
    const std::filesystem::path path = dataset.shard_path(k);
    // The pixels, and the masks of a dataset with masks.
    const std::pair<std::span<const uint8_t>, uint64_t> layers[] = {
        {dataset.shard_images(k), dataset.shard_images_offset(k)},
        {dataset.shard_masks(k), dataset.shard_masks_offset(k)}};
    for (const auto& [bytes, offset] : layers) {
      detail::evict(bytes, path, offset);
      result.bytes += bytes.size();
      result.resident_bytes += detail::resident_bytes(bytes, path);
    }
  }
  return result;
}

double StorageReference::best_sequential() const { return best_of(sequential); }
double StorageReference::best_random() const { return best_of(random); }

StorageReference measure_storage(const Dataset& dataset, double seconds) {
  StorageReference ref;
  std::optional<std::vector<ShardFile>> files = open_shards(dataset, true, ref.note);
  if (!files) {
    ref.direct = false;
    ref.note += "; the references read through the page cache, the dataset evicted first";
    std::string unused;
    files = open_shards(dataset, false, unused);
  }
  const std::size_t request = align_up(dataset.record_bytes());
  // Without O_DIRECT every pattern starts from an evicted cache; with it the
  // cache is not involved.
  auto fresh = [&] {
    if (!ref.direct) (void)evict_dataset(dataset);
  };
  for (const unsigned in_flight : {1u, 4u, 16u}) {
    fresh();
    ref.sequential.push_back(
        {"sequential", kSequentialRequest, in_flight, sequential_rate(*files, in_flight, seconds)});
  }
  for (const unsigned in_flight : {1u, 4u, 16u, 32u}) {
    fresh();
    ref.random.push_back(
        {"random", request, in_flight, random_rate(*files, request, in_flight, seconds)});
  }
  return ref;
}

ReaderRun run_reader_cold(const Dataset& dataset, const BenchArgs& a, unsigned threads,
                          Eviction& eviction) {
  const uint64_t baseline = anon_rss_bytes();
  ReaderRun run;
  run.threads = threads;
  uint64_t peak = baseline;
  eviction = {};
  for (unsigned epoch = 0; epoch < a.epochs; ++epoch) {
    Loader loader(dataset, loader_options(a, threads));
    run.threads = loader.stats().threads;  // threads 0: the loader's choice
    run.ring_host_bytes = loader.ring_host_bytes();
    run.ring_device_bytes = loader.ring_device_bytes();
    const Eviction e = evict_dataset(dataset);
    if (epoch == 0 || e.resident_bytes > eviction.resident_bytes) eviction = e;
    const auto step = std::chrono::duration<double, std::milli>(a.step_ms);
    const Clock::time_point start = Clock::now();
    loader.set_epoch(epoch);
    while (std::optional<Batch> batch = loader.next()) {
      if (a.step_ms > 0) std::this_thread::sleep_for(step);
      if (batch->on_device()) batch->synchronize();
    }
    run.seconds += since(start);
    peak = std::max(peak, anon_rss_bytes());
    const LoaderStats s = loader.stats();
    run.stats.batches += s.batches;
    run.stats.images += s.images;
    run.stats.padding += s.padding;
    run.stats.bytes += s.bytes;
    run.stats.consumer_seconds += s.consumer_seconds;
    run.stats.wait_seconds += s.wait_seconds;
    run.stats.reader_busy_seconds += s.reader_busy_seconds;
    run.stats.upload_busy_seconds += s.upload_busy_seconds;
    run.stats.records_read += s.records_read;
    run.stats.prefetched_bytes += s.prefetched_bytes;
    run.stats.prefetch_cached_shards += s.prefetch_cached_shards;
  }
  run.anon_growth_bytes = peak > baseline ? peak - baseline : 0;
  return run;
}

}  // namespace imgpack::cli
