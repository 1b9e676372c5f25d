// `imgpack bench --memory-limit`: this process moved into a memory cgroup of
// its own, so that the kernel limits what it may use, page cache included,
// as it would on a training machine with less memory than the dataset.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace imgpack::cli {

class MemoryLimit {
 public:
  // Creates a child of this process's memory cgroup (cgroup v2: memory.max;
  // v1: memory.limit_in_bytes) limited to `bytes` and moves this process
  // into it; first removes the cgroups of earlier runs that were stopped
  // before they could (their process gone, none left in them). Needs the
  // right to create cgroups there (root, or a delegated
  // v2 subtree whose memory controller is enabled). Throws imgpack::Error
  // saying what failed and how else to run under a limit (systemd-run
  // --scope -p MemoryMax=...).
  explicit MemoryLimit(uint64_t bytes);
  // Moves the process back to the cgroup it came from and removes the one
  // it made. Never throws.
  ~MemoryLimit();
  MemoryLimit(const MemoryLimit&) = delete;
  MemoryLimit& operator=(const MemoryLimit&) = delete;

  uint64_t bytes() const { return bytes_; }
  // The most memory the cgroup used so far, page cache included (v1
  // memory.max_usage_in_bytes, v2 memory.peak); 0 where the kernel does not
  // say.
  uint64_t peak_bytes() const;
  // "cgroup v1" or "cgroup v2", and the cgroup's directory.
  std::string description() const;

 private:
  uint64_t bytes_ = 0;
  bool v2_ = false;
  std::filesystem::path parent_;
  std::filesystem::path made_;
};

}  // namespace imgpack::cli
