// Reading input files ahead of a conversion, for inputs on cold storage.
//
// ReadAhead walks the files a consumer will read, in its order, on a thread
// of its own, and asks the kernel to start reading each one
// (posix_fadvise(POSIX_FADV_WILLNEED)) while the consumer is at most
// `window` files behind: the storage works on the next inputs while the
// workers decode the current ones, instead of each worker waiting for its
// file in turn. A hint only: a file that cannot be opened is passed over
// (the consumer's own read reports it), and a file already in the page cache
// costs an open and a close.
//
// The walk sleeps until half a window is free (or what is left of the
// files, if less) and then asks for all of it: one wake-up per half window,
// not one per file taken, which on a machine whose cores all decode would
// cost a context switch per file.
//
// The consumer calls taken() from one thread at a time; the object joins its
// thread when destroyed.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

namespace imgpack {

class ReadAhead {
 public:
  // `path_of(i)` for i in [first, end): the file read at position i, or an
  // empty path for a position not worth reading ahead.
  ReadAhead(std::function<std::filesystem::path(uint64_t)> path_of, uint64_t first, uint64_t end,
            uint64_t window);
  ~ReadAhead();
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // The consumer has taken position `i` (positions are taken in order):
  // files up to i + window may be asked for.
  void taken(uint64_t i);

  // How many positions the walk has passed (asked for or passed over): for tests.
  uint64_t walked() const;

 private:
  void walk();
  bool worth_walking() const;  // with mutex_ held

  const std::function<std::filesystem::path(uint64_t)> path_of_;
  const uint64_t end_;
  const uint64_t window_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  uint64_t limit_;  // the walk may ask for positions below this
  uint64_t walked_;
  bool stop_ = false;
  std::thread thread_;  // last: started once the rest is set
};

}  // namespace imgpack
