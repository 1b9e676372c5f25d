// Many file reads in flight from one thread (internal to imgpack).
//
// A disk reaches its bandwidth only with many requests queued: the loader's
// read path keeps a chunk's records in flight at once from each reader
// thread. ReadQueue
// submits reads through io_uring (Linux 5.7 and later, called through its
// system calls: no library) and hands back their completions in any order.
// Where io_uring is missing or refused (an older kernel, a seccomp filter,
// io_uring_disabled), every read runs synchronously with pread(2) when it is
// submitted: the same results, one at a time.
//
// Not thread-safe: one queue per thread. Buffers must stay valid until their
// read completes; destroying the queue waits for reads still in flight.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <deque>

namespace imgpack::detail {

// One finished read: the caller's tag, and the byte count or -errno.
struct ReadCompletion {
  uint64_t tag = 0;
  ssize_t result = 0;
};

class ReadQueue {
 public:
  // kAsynchronous: io_uring where the kernel allows it; kSynchronous: pread
  // at submit() always (what the fallback does, and its tests use).
  static constexpr bool kAsynchronous = true;
  static constexpr bool kSynchronous = false;

  // A queue for up to `depth` reads in flight (at least 1). Never throws for
  // a missing io_uring: it falls back to synchronous reads (asynchronous()
  // says which). Throws imgpack::Error only if memory for the ring cannot be
  // mapped after the kernel created it.
  explicit ReadQueue(unsigned depth, bool asynchronous = kAsynchronous);
  ~ReadQueue();
  ReadQueue(const ReadQueue&) = delete;
  ReadQueue& operator=(const ReadQueue&) = delete;

  // Whether reads really overlap (io_uring) or run one by one at submit().
  bool asynchronous() const { return ring_fd_ >= 0; }
  unsigned depth() const { return depth_; }
  // Reads submitted whose completion next() has not returned yet.
  unsigned pending() const { return pending_; }

  // Queues a read of `length` bytes at `offset` of `fd` into `buffer`, to be
  // reported with `tag`. At most depth() may be pending: the caller takes a
  // completion first. The read is handed to the kernel at the next call of
  // next() (or at once when synchronous), so submit the reads you have, then
  // collect.
  void submit(int fd, void* buffer, std::size_t length, uint64_t offset, uint64_t tag);

  // Waits for and returns the next completed read. Must not be called with
  // nothing pending. Throws imgpack::Error if io_uring_enter fails for any
  // reason but an interruption.
  ReadCompletion next();

 private:
  void enter(unsigned to_submit, unsigned wait_for);

  unsigned depth_ = 1;
  unsigned pending_ = 0;
  unsigned unsubmitted_ = 0;
  std::deque<ReadCompletion> done_;  // synchronous mode: results in submit order

  // io_uring: -1 when synchronous.
  int ring_fd_ = -1;
  void* rings_ = nullptr;  // the submission and completion rings (one mapping)
  std::size_t rings_bytes_ = 0;
  void* sqes_ = nullptr;  // the submission queue entries
  std::size_t sqes_bytes_ = 0;
  unsigned* sq_tail_ = nullptr;
  unsigned sq_mask_ = 0;
  unsigned* sq_array_ = nullptr;
  unsigned* cq_head_ = nullptr;
  unsigned* cq_tail_ = nullptr;
  unsigned cq_mask_ = 0;
  void* cqes_ = nullptr;
};

}  // namespace imgpack::detail
