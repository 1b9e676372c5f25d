#include "conversion/read_ahead.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

namespace imgpack {

ReadAhead::ReadAhead(std::function<std::filesystem::path(uint64_t)> path_of, uint64_t first,
                     uint64_t end, uint64_t window)
    : path_of_(std::move(path_of)),
      end_(end),
      window_(window),
      limit_(std::min(end, first + window)),
      walked_(first),
      thread_([this] { walk(); }) {}

ReadAhead::~ReadAhead() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void ReadAhead::taken(uint64_t i) {
  const uint64_t limit = std::min(end_, i + 1 + window_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (limit <= limit_) return;
    limit_ = limit;
    if (!worth_walking()) return;
  }
  wake_.notify_one();
}

bool ReadAhead::worth_walking() const {
  return walked_ < limit_ &&
         (limit_ - walked_ >= std::max<uint64_t>(1, window_ / 2) || limit_ == end_);
}

uint64_t ReadAhead::walked() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return walked_;
}

void ReadAhead::walk() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stop_ || worth_walking(); });
    // Once woken, everything up to the limit, which may grow meanwhile.
    while (!stop_ && walked_ < limit_) {
      const uint64_t position = walked_;
      lock.unlock();
      const std::filesystem::path path = path_of_(position);
      if (!path.empty()) {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
          ::posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
          ::close(fd);
        }
      }
      lock.lock();
      walked_ = position + 1;
    }
    if (stop_ || walked_ == end_) return;
  }
}

}  // namespace imgpack
