// check_records(): reading and hashing the records of intact shards.
#include "record_check.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>
#include <utility>

#include "imgpack/checksum.hpp"
#include "imgpack/error.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

// More threads than this only add contention (and each holds a read buffer).
constexpr std::size_t kMaxThreads = 256;

// A shard at least this much in the page cache is read through it (at memory
// speed); a colder one with O_DIRECT, which costs the CPU no page cache to fill.
constexpr double kCachedEnough = 0.5;

// The share of the file's pages the page cache holds (mincore on a mapping
// that nothing reads through, so a file that shrinks cannot raise SIGBUS);
// 1 where that cannot be told, so that the file is read through the cache.
double cached_fraction(const fs::path& path) {
  const int raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (raw < 0) return 1;  // reading it reports why
  const FileDescriptor fd(raw);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || st.st_size <= 0) return 1;
  const auto size = static_cast<std::size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (map == MAP_FAILED) return 1;
  std::vector<unsigned char> pages((size + kDirectAlign - 1) / kDirectAlign);
  const bool known = ::mincore(map, size, pages.data()) == 0;
  ::munmap(map, size);
  if (!known) return 1;
  const auto cached =
      std::count_if(pages.begin(), pages.end(), [](unsigned char p) { return (p & 1) != 0; });
  return static_cast<double>(cached) / static_cast<double>(pages.size());
}

// Reads up to `length` bytes at `offset` (both aligned) with O_DIRECT;
// returns fewer only at the end of the file.
uint64_t read_direct(int fd, const fs::path& path, uint8_t* out, uint64_t length, uint64_t offset) {
  uint64_t done = 0;
  while (done < length) {
    const ssize_t n = ::pread(fd, out + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw system_error(path, "read failed at byte " + std::to_string(offset + done), errno);
    }
    if (n == 0) break;
    done += static_cast<uint64_t>(n);
    if ((offset + done) % kDirectAlign != 0) break;  // short of a block: the file's end
  }
  return done;
}

// Rows [first_row, first_row + rows) of one shard: what one pread covers.
struct ReadUnit {
  std::size_t shard = 0;
  uint64_t first_row = 0;
  uint64_t rows = 0;
};

// Reads exactly `length` bytes at `offset`; a short read means the file shrank.
void read_exactly(int fd, const fs::path& path, uint8_t* out, uint64_t length, uint64_t offset) {
  const std::size_t done = read_at(fd, path, out, length, offset);
  if (done < length) {
    throw file_error(path, "truncated while being checked: no bytes at " +
                               std::to_string(offset + done) + " (was the file changed?)");
  }
}

// Threads take read units in file order, read them with pread into their own
// buffer and hash every record.
class ChecksumPass {
 public:
  ChecksumPass(std::span<const ShardRecords> shards, uint64_t record_bytes,
               const VerifyOptions& options)
      : shards_(shards), record_bytes_(record_bytes), failed_(shards.size()) {
    const uint64_t rows_per_unit = std::max<uint64_t>(1, options.read_bytes / record_bytes);
    uint64_t row_bytes = record_bytes;  // the largest of a row's image and mask
    for (std::size_t s = 0; s < shards.size(); ++s) {
      const uint64_t rows = shards[s].checksums.size();
      for (uint64_t first = 0; first < rows; first += rows_per_unit) {
        units_.push_back({s, first, std::min(rows_per_unit, rows - first)});
      }
      total_bytes_ += rows * (record_bytes + shards[s].mask_bytes);
      total_records_ += rows;
      row_bytes = std::max(row_bytes, shards[s].mask_bytes);
    }
    buffer_bytes_ = rows_per_unit * row_bytes;
  }

  VerifyProgress progress() const {
    return {done_records_.load(std::memory_order_relaxed), total_records_,
            done_bytes_.load(std::memory_order_relaxed), total_bytes_};
  }

  // Runs the pass on `threads` threads, calling options.progress on this thread.
  RecordCheck run(unsigned threads, const VerifyOptions& options) {
    threads = static_cast<unsigned>(std::clamp<std::size_t>(
        threads, 1, std::clamp<std::size_t>(units_.size(), 1, kMaxThreads)));
    direct_.assign(shards_.size(), false);
    for (std::size_t s = 0; s < shards_.size(); ++s) {
      direct_[s] = cached_fraction(shards_[s].path) < kCachedEnough;
    }
    {
      std::vector<std::jthread> workers;
      workers.reserve(threads);
      for (unsigned t = 0; t < threads; ++t) workers.emplace_back([this] { work(); });
      try {
        std::unique_lock lock(mutex_);
        while (finished_ < threads) {
          if (options.progress) {
            lock.unlock();
            options.progress(progress());
            lock.lock();
          }
          finished_cv_.wait_for(lock, std::chrono::milliseconds(200),
                                [&] { return finished_ >= threads; });
        }
      } catch (...) {
        stop_.store(true);
        throw;  // the jthreads join on the way out
      }
    }
    if (worker_failure_) std::rethrow_exception(worker_failure_);
    if (options.progress) options.progress(progress());

    RecordCheck result;
    result.mismatched = std::move(mismatched_);
    std::sort(result.mismatched.begin(), result.mismatched.end(),
              [](const MismatchedRow& a, const MismatchedRow& b) {
                return std::tuple(a.shard, a.row, a.mask) < std::tuple(b.shard, b.row, b.mask);
              });
    result.unreadable = std::move(unreadable_);
    std::sort(result.unreadable.begin(), result.unreadable.end(),
              [](const UnreadableShard& a, const UnreadableShard& b) { return a.shard < b.shard; });
    result.records_checked = records_checked_.load();
    result.bytes_checked = done_bytes_.load();
    result.bytes_direct = direct_bytes_.load();
    result.threads = threads;
    return result;
  }

 private:
  // Reads the unit's rows of one pixel dataset (row_bytes each, from
  // `offset`; with O_DIRECT when `direct`) and notes each row whose hash is
  // not its checksum.
  void check_rows(int fd, bool direct, const ShardRecords& shard, const ReadUnit& unit,
                  uint64_t offset, uint64_t row_bytes, const std::vector<uint64_t>& checksums,
                  bool mask, uint8_t* buffer, std::vector<MismatchedRow>& mismatched) {
    const uint64_t bytes = unit.rows * row_bytes;
    const uint64_t at = offset + unit.first_row * row_bytes;
    const uint8_t* rows = buffer;
    if (direct) {
      // The aligned span around the rows.
      const uint64_t start = align_down(at);
      const uint64_t got = read_direct(fd, shard.path, buffer, align_up(at + bytes) - start, start);
      if (got < at - start + bytes) {
        throw file_error(shard.path, "truncated while being checked: no bytes at " +
                                         std::to_string(start + got) + " (was the file changed?)");
      }
      rows = buffer + (at - start);
      direct_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    } else {
      read_exactly(fd, shard.path, buffer, bytes, at);
    }
    for (uint64_t i = 0; i < unit.rows; ++i) {
      const uint64_t row = unit.first_row + i;
      if (checksum(rows + i * row_bytes, row_bytes) != checksums[row]) {
        mismatched.push_back({unit.shard, row, mask});
      }
    }
    done_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }

  void work() {
    try {
      // Room for a unit's rows and the aligned blocks at either end.
      const IoBuffer buffer = allocate_io_buffer(align_up(buffer_bytes_) + 2 * kDirectAlign);
      std::vector<MismatchedRow> mismatched;
      std::optional<FileDescriptor> fd;
      bool direct = false;
      std::size_t fd_shard = ~std::size_t{0};
      uint64_t records = 0;
      for (;;) {
        const std::size_t u = next_unit_.fetch_add(1, std::memory_order_relaxed);
        if (u >= units_.size() || stop_.load(std::memory_order_relaxed)) break;
        const ReadUnit& unit = units_[u];
        const ShardRecords& shard = shards_[unit.shard];
        if (failed_[unit.shard].load(std::memory_order_relaxed)) continue;
        try {
          if (fd_shard != unit.shard) {
            fd.reset();
            fd_shard = unit.shard;
            if (direct_[unit.shard]) fd = open_direct(shard.path);
            direct = fd.has_value();
            if (!direct) fd.emplace(open_for_reading(shard.path));
            if (fd->identity(shard.path) != shard.file) {
              throw file_error(shard.path, "was replaced while being checked");
            }
            if (!direct) ::posix_fadvise(fd->get(), 0, 0, POSIX_FADV_SEQUENTIAL);
          }
          check_rows(fd->get(), direct, shard, unit, shard.images_offset, record_bytes_,
                     shard.checksums, false, buffer.get(), mismatched);
          if (shard.mask_bytes > 0) {
            check_rows(fd->get(), direct, shard, unit, shard.masks_offset, shard.mask_bytes,
                       shard.mask_checksums, true, buffer.get(), mismatched);
          }
          records += unit.rows;
          done_records_.fetch_add(unit.rows, std::memory_order_relaxed);
        } catch (const ResourceShortage&) {
          throw;  // the machine's, not the shard's: the check stops
        } catch (const Error& e) {
          // The first read problem of a shard is reported; its other units are skipped.
          if (!failed_[unit.shard].exchange(true)) {
            std::lock_guard lock(mutex_);
            unreadable_.push_back({unit.shard, e.what()});
          }
        }
      }
      records_checked_.fetch_add(records);
      std::lock_guard lock(mutex_);
      mismatched_.insert(mismatched_.end(), mismatched.begin(), mismatched.end());
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!worker_failure_) worker_failure_ = std::current_exception();
      stop_.store(true);
    }
    std::lock_guard lock(mutex_);
    ++finished_;
    finished_cv_.notify_all();
  }

  std::span<const ShardRecords> shards_;
  const uint64_t record_bytes_;
  std::vector<ReadUnit> units_;
  std::size_t buffer_bytes_ = 0;
  uint64_t total_bytes_ = 0;
  uint64_t total_records_ = 0;

  std::vector<bool> direct_;  // per shard: read with O_DIRECT (set before the threads start)
  std::vector<std::atomic<bool>> failed_;  // per shard: a read failed, skip the rest
  std::atomic<std::size_t> next_unit_{0};
  std::atomic<uint64_t> done_bytes_{0};
  std::atomic<uint64_t> done_records_{0};
  std::atomic<uint64_t> direct_bytes_{0};
  std::atomic<uint64_t> records_checked_{0};
  std::atomic<bool> stop_{false};

  std::mutex mutex_;  // guards what follows
  std::condition_variable finished_cv_;
  unsigned finished_ = 0;
  std::vector<MismatchedRow> mismatched_;
  std::vector<UnreadableShard> unreadable_;
  std::exception_ptr worker_failure_;
};

}  // namespace

RecordCheck check_records(std::span<const ShardRecords> shards, uint64_t record_bytes,
                          const VerifyOptions& options) {
  if (options.read_bytes == 0) throw UsageError("read size must be at least 1 byte");
  if (record_bytes == 0) throw UsageError("records must be at least 1 byte");
  ChecksumPass pass(shards, record_bytes, options);
  const unsigned threads =
      options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  return pass.run(threads, options);
}

}  // namespace imgpack
