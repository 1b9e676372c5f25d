#include "read_queue.hpp"

#include <linux/io_uring.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "imgpack/error.hpp"

namespace imgpack::detail {

namespace {

int io_uring_setup(unsigned entries, io_uring_params* params) {
  return static_cast<int>(::syscall(__NR_io_uring_setup, entries, params));
}

int io_uring_enter(int fd, unsigned to_submit, unsigned min_complete, unsigned flags) {
  return static_cast<int>(
      ::syscall(__NR_io_uring_enter, fd, to_submit, min_complete, flags, nullptr, 0));
}

// The kernel and this thread share the rings' head and tail words: the side
// that produces publishes with a release store, the other reads with an
// acquire load (io_uring's documented ordering).
unsigned load_acquire(unsigned* word) {
  return std::atomic_ref<unsigned>(*word).load(std::memory_order_acquire);
}

void store_release(unsigned* word, unsigned value) {
  std::atomic_ref<unsigned>(*word).store(value, std::memory_order_release);
}

template <typename T>
T* at(void* base, std::size_t offset) {
  return reinterpret_cast<T*>(static_cast<uint8_t*>(base) + offset);
}

}  // namespace

ReadQueue::ReadQueue(unsigned depth, bool asynchronous) : depth_(depth == 0 ? 1 : depth) {
  if (!asynchronous) return;
  io_uring_params params{};
  const int fd = io_uring_setup(depth_, &params);
  if (fd < 0) return;  // no io_uring here: synchronous reads
  // IORING_OP_READ needs Linux 5.6; FAST_POLL (5.7) is the nearest feature
  // bit that proves it. One mapping for both rings (SINGLE_MMAP, 5.4).
  if ((params.features & IORING_FEAT_FAST_POLL) == 0 ||
      (params.features & IORING_FEAT_SINGLE_MMAP) == 0) {
    ::close(fd);
    return;
  }
  const std::size_t sq_bytes = params.sq_off.array + params.sq_entries * sizeof(unsigned);
  const std::size_t cq_bytes = params.cq_off.cqes + params.cq_entries * sizeof(io_uring_cqe);
  rings_bytes_ = std::max(sq_bytes, cq_bytes);
  void* rings = ::mmap(nullptr, rings_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                       IORING_OFF_SQ_RING);
  if (rings == MAP_FAILED) {
    const int error = errno;
    ::close(fd);
    throw Error(std::string("cannot map io_uring's rings: ") + std::strerror(error));
  }
  sqes_bytes_ = params.sq_entries * sizeof(io_uring_sqe);
  void* sqes = ::mmap(nullptr, sqes_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                      IORING_OFF_SQES);
  if (sqes == MAP_FAILED) {
    const int error = errno;
    ::munmap(rings, rings_bytes_);
    ::close(fd);
    throw Error(std::string("cannot map io_uring's submission entries: ") + std::strerror(error));
  }
  ring_fd_ = fd;
  rings_ = rings;
  sqes_ = sqes;
  sq_tail_ = at<unsigned>(rings_, params.sq_off.tail);
  sq_mask_ = *at<unsigned>(rings_, params.sq_off.ring_mask);
  sq_array_ = at<unsigned>(rings_, params.sq_off.array);
  cq_head_ = at<unsigned>(rings_, params.cq_off.head);
  cq_tail_ = at<unsigned>(rings_, params.cq_off.tail);
  cq_mask_ = *at<unsigned>(rings_, params.cq_off.ring_mask);
  cqes_ = at<void>(rings_, params.cq_off.cqes);
}

ReadQueue::~ReadQueue() {
  if (ring_fd_ < 0) return;
  // The kernel may still write into the callers' buffers: let every read
  // finish before they are freed.
  try {
    while (pending_ > 0) (void)next();
  } catch (const Error&) {  // the ring broke: closing it cancels what is left
  }
  ::munmap(sqes_, sqes_bytes_);
  ::munmap(rings_, rings_bytes_);
  ::close(ring_fd_);
}

void ReadQueue::submit(int fd, void* buffer, std::size_t length, uint64_t offset, uint64_t tag) {
  if (pending_ >= depth_) throw Error("ReadQueue: more reads submitted than its depth");
  ++pending_;
  if (ring_fd_ < 0) {
    ssize_t got;
    do {
      got = ::pread(fd, buffer, length, static_cast<off_t>(offset));
    } while (got < 0 && errno == EINTR);
    done_.push_back({tag, got < 0 ? -errno : got});
    return;
  }
  // This thread alone writes the tail; the kernel moves the head.
  const unsigned tail = *sq_tail_;
  const unsigned index = tail & sq_mask_;
  auto* sqe = static_cast<io_uring_sqe*>(sqes_) + index;
  std::memset(sqe, 0, sizeof(*sqe));
  sqe->opcode = IORING_OP_READ;
  sqe->fd = fd;
  sqe->addr = reinterpret_cast<uint64_t>(buffer);
  sqe->len = static_cast<uint32_t>(length);
  sqe->off = offset;
  sqe->user_data = tag;
  sq_array_[index] = index;
  store_release(sq_tail_, tail + 1);
  ++unsubmitted_;
}

void ReadQueue::enter(unsigned to_submit, unsigned wait_for) {
  const unsigned flags = wait_for > 0 ? IORING_ENTER_GETEVENTS : 0;
  for (;;) {
    const int got = io_uring_enter(ring_fd_, to_submit, wait_for, flags);
    if (got >= 0) {
      unsubmitted_ -= static_cast<unsigned>(got);
      return;
    }
    // An interrupted wait, or a kernel short of memory for a moment: again.
    if (errno == EINTR || errno == EAGAIN) continue;
    throw Error(std::string("io_uring_enter failed: ") + std::strerror(errno));
  }
}

ReadCompletion ReadQueue::next() {
  if (pending_ == 0) throw Error("ReadQueue::next: no read is pending");
  if (ring_fd_ < 0) {
    const ReadCompletion done = done_.front();
    done_.pop_front();
    --pending_;
    return done;
  }
  if (unsubmitted_ > 0) enter(unsubmitted_, 0);
  for (;;) {
    const unsigned head = *cq_head_;
    if (head != load_acquire(cq_tail_)) {
      const auto& cqe = static_cast<const io_uring_cqe*>(cqes_)[head & cq_mask_];
      const ReadCompletion done{cqe.user_data, cqe.res};
      store_release(cq_head_, head + 1);
      --pending_;
      return done;
    }
    enter(unsubmitted_, 1);
  }
}

}  // namespace imgpack::detail
