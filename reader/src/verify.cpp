#include "imgpack/verify.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "imgpack/checksum.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "mapped_region.hpp"
#include "shard_validation.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// More threads than this only add contention (and each holds a read buffer).
constexpr std::size_t kMaxThreads = 256;

// A shard whose structure passed validation: what its records are checked against.
struct ShardJob {
  uint32_t shard = 0;
  fs::path path;
  uint64_t images_offset = 0;
  std::vector<uint64_t> checksums;  // per row
  dev_t device = 0;                 // identity of the file that was validated
  ino_t inode = 0;
};

// Rows [first_row, first_row + rows) of one job: what one pread covers.
struct ReadUnit {
  std::size_t job = 0;
  uint64_t first_row = 0;
  uint64_t rows = 0;
};

struct BadRow {
  std::size_t job = 0;
  uint64_t row = 0;
};

// A problem tied to a shard (or, with kNoShard, to index.h5), kept in shard order.
constexpr uint64_t kNoShard = ~uint64_t{0};
struct Problem {
  uint64_t shard = kNoShard;
  std::string message;
};

// Reads exactly `length` bytes at `offset`; a short read means the file shrank.
void read_exactly(int fd, const fs::path& path, uint8_t* out, uint64_t length, uint64_t offset) {
  while (length > 0) {
    const ssize_t n = ::pread(fd, out, length, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw system_error(path, "read failed at byte " + std::to_string(offset), errno);
    }
    if (n == 0) {
      throw file_error(path, "truncated while being verified: no bytes at " +
                                 std::to_string(offset) + " (was the file changed?)");
    }
    out += n;
    offset += static_cast<uint64_t>(n);
    length -= static_cast<uint64_t>(n);
  }
}

struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
};

FileIdentity identity(const FileDescriptor& fd, const fs::path& path) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw system_error(path, "cannot stat", errno);
  return {st.st_dev, st.st_ino};
}

// The checksum phase: threads take read units in file order, read them with
// pread into their own buffer and hash every record.
class ChecksumPass {
 public:
  ChecksumPass(std::vector<ShardJob>& jobs, std::size_t record_bytes, const VerifyOptions& options)
      : jobs_(jobs), record_bytes_(record_bytes), failed_(jobs.size()) {
    const uint64_t rows_per_unit = std::max<uint64_t>(1, options.read_bytes / record_bytes);
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      const uint64_t rows = jobs[j].checksums.size();
      for (uint64_t first = 0; first < rows; first += rows_per_unit) {
        units_.push_back({j, first, std::min(rows_per_unit, rows - first)});
      }
      total_bytes_ += rows * record_bytes;
    }
    buffer_bytes_ = rows_per_unit * record_bytes;
  }

  VerifyProgress progress() const {
    const uint64_t bytes = done_bytes_.load(std::memory_order_relaxed);
    return {bytes / record_bytes_, total_bytes_ / record_bytes_, bytes, total_bytes_};
  }

  // Runs the pass on `threads` threads, calling `progress` on this thread.
  void run(unsigned threads, const VerifyOptions& options) {
    threads = static_cast<unsigned>(std::clamp<std::size_t>(
        threads, 1, std::clamp<std::size_t>(units_.size(), 1, kMaxThreads)));
    threads_used_ = threads;
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
  }

  unsigned threads_used() const { return threads_used_; }
  uint64_t records_checked() const { return records_checked_.load(); }
  uint64_t bytes_checked() const { return done_bytes_.load(); }
  std::vector<BadRow>& bad_rows() { return bad_rows_; }
  std::vector<Problem>& problems() { return problems_; }

 private:
  void work() {
    try {
      std::vector<uint8_t> buffer(buffer_bytes_);
      std::vector<BadRow> bad;
      std::optional<FileDescriptor> fd;
      std::size_t fd_job = ~std::size_t{0};
      uint64_t records = 0;
      for (;;) {
        const std::size_t u = next_unit_.fetch_add(1, std::memory_order_relaxed);
        if (u >= units_.size() || stop_.load(std::memory_order_relaxed)) break;
        const ReadUnit& unit = units_[u];
        const ShardJob& job = jobs_[unit.job];
        if (failed_[unit.job].load(std::memory_order_relaxed)) continue;
        try {
          if (fd_job != unit.job) {
            fd.reset();
            fd_job = unit.job;
            fd.emplace(job.path);
            const FileIdentity id = identity(*fd, job.path);
            if (id.device != job.device || id.inode != job.inode) {
              throw file_error(job.path, "was replaced while being verified");
            }
            ::posix_fadvise(fd->get(), 0, 0, POSIX_FADV_SEQUENTIAL);
          }
          const uint64_t bytes = unit.rows * record_bytes_;
          read_exactly(fd->get(), job.path, buffer.data(), bytes,
                       job.images_offset + unit.first_row * record_bytes_);
          for (uint64_t i = 0; i < unit.rows; ++i) {
            const uint64_t row = unit.first_row + i;
            if (checksum(buffer.data() + i * record_bytes_, record_bytes_) != job.checksums[row]) {
              bad.push_back({unit.job, row});
            }
          }
          records += unit.rows;
          done_bytes_.fetch_add(bytes, std::memory_order_relaxed);
        } catch (const Error& e) {
          // The first read problem of a shard is reported; its other units are skipped.
          if (!failed_[unit.job].exchange(true)) {
            std::lock_guard lock(mutex_);
            problems_.push_back({job.shard, e.what()});
          }
        }
      }
      records_checked_.fetch_add(records);
      std::lock_guard lock(mutex_);
      bad_rows_.insert(bad_rows_.end(), bad.begin(), bad.end());
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!worker_failure_) worker_failure_ = std::current_exception();
      stop_.store(true);
    }
    std::lock_guard lock(mutex_);
    ++finished_;
    finished_cv_.notify_all();
  }

  std::vector<ShardJob>& jobs_;
  const std::size_t record_bytes_;
  std::vector<ReadUnit> units_;
  std::size_t buffer_bytes_ = 0;
  uint64_t total_bytes_ = 0;
  unsigned threads_used_ = 0;

  std::vector<std::atomic<bool>> failed_;  // per job: a read failed, skip the rest
  std::atomic<std::size_t> next_unit_{0};
  std::atomic<uint64_t> done_bytes_{0};
  std::atomic<uint64_t> records_checked_{0};
  std::atomic<bool> stop_{false};

  std::mutex mutex_;  // guards what follows
  std::condition_variable finished_cv_;
  unsigned finished_ = 0;
  std::vector<BadRow> bad_rows_;
  std::vector<Problem> problems_;
  std::exception_ptr worker_failure_;
};

}  // namespace

VerifyReport verify_dataset(const fs::path& dir, const VerifyOptions& options) {
  const Clock::time_point start = Clock::now();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw file_error(dir, "no such dataset directory");
  if (options.read_bytes == 0) throw UsageError("verify: read size must be at least 1 byte");

  VerifyReport report;
  auto finish = [&] {
    report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return std::move(report);
  };

  DatasetIndex index;
  detail::StorageTable table;
  try {
    index = read_index(dir);
    report.records = index.num_records();
    report.shards = index.num_shards();
    table = detail::build_storage_table(index, dir / format::kIndexFile);
  } catch (const Error& e) {
    report.errors.emplace_back(e.what());
    return finish();
  }

  // Structure, shard by shard (HDF5 serialises everything: no gain from threads).
  std::vector<Problem> problems;
  std::vector<ShardJob> jobs;
  for (std::size_t k = 0; k < index.num_shards(); ++k) {
    const fs::path path = dir / index.shard_file[k];
    try {
      detail::require_shard_exists(path);
      FileDescriptor fd(path);
      const FileIdentity id = identity(fd, path);
      const std::span<const uint64_t> row_records =
          std::span<const uint64_t>(table.order)
              .subspan(table.first_position[k], index.shard_records[k]);
      detail::ShardLayout layout =
          detail::validate_shard(path, index, k, row_records, fd.size(path));
      ShardJob job;
      job.shard = static_cast<uint32_t>(k);
      job.path = path;
      job.images_offset = layout.images_offset;
      job.checksums = std::move(layout.checksums);
      job.device = id.device;
      job.inode = id.inode;
      jobs.push_back(std::move(job));
    } catch (const Error& e) {
      problems.push_back({k, e.what()});
    }
  }

  // Checksums.
  const Clock::time_point checksum_start = Clock::now();
  report.structure_seconds = std::chrono::duration<double>(checksum_start - start).count();
  ChecksumPass pass(jobs, index.record_bytes(), options);
  const unsigned threads =
      options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  pass.run(threads, options);
  report.checksum_seconds = std::chrono::duration<double>(Clock::now() - checksum_start).count();
  report.threads = pass.threads_used();
  report.records_checked = pass.records_checked();
  report.bytes_checked = pass.bytes_checked();

  problems.insert(problems.end(), pass.problems().begin(), pass.problems().end());
  std::stable_sort(problems.begin(), problems.end(),
                   [](const Problem& a, const Problem& b) { return a.shard < b.shard; });
  for (Problem& p : problems) {
    report.errors.push_back(std::move(p.message));
    if (p.shard != kNoShard) report.bad_shards.push_back(static_cast<uint32_t>(p.shard));
  }

  std::vector<BadRow>& bad = pass.bad_rows();
  std::sort(bad.begin(), bad.end(), [](const BadRow& a, const BadRow& b) {
    return std::pair(a.job, a.row) < std::pair(b.job, b.row);
  });
  for (const BadRow& b : bad) {
    const ShardJob& job = jobs[b.job];
    BadRecord record;
    record.shard = job.shard;
    record.shard_file = index.shard_file[job.shard];
    record.row = b.row;
    record.record = table.order[table.first_position[job.shard] + b.row];
    record.sample = index.record_sample[record.record];
    record.variant = index.record_variant[record.record];
    record.sample_path = index.sample_path[static_cast<std::size_t>(record.sample)];
    report.bad_records.push_back(std::move(record));
    report.bad_shards.push_back(job.shard);
  }
  std::sort(report.bad_shards.begin(), report.bad_shards.end());
  report.bad_shards.erase(std::unique(report.bad_shards.begin(), report.bad_shards.end()),
                          report.bad_shards.end());
  return finish();
}

}  // namespace imgpack
