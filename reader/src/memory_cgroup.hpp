// The memory cgroup this process runs in, and the memory that leaves its page
// cache (internal to the reader; the CLI's bench --memory-limit uses it too).
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>

namespace imgpack::detail {

// A cgroup directory of the memory controller: under /sys/fs/cgroup in the
// unified hierarchy (v2), under /sys/fs/cgroup/memory in v1.
struct MemoryCgroup {
  std::filesystem::path dir;
  bool v2 = false;
  // The limit file in a cgroup directory of this version: memory.max or
  // memory.limit_in_bytes.
  const char* limit_file() const { return v2 ? "memory.max" : "memory.limit_in_bytes"; }
};

// This process's memory cgroup as /proc/self/cgroup names it (v1's memory
// line before the unified one), or nothing where there is none to see: a
// cgroup counts only where its directory, with its cgroup.procs, is there.
std::optional<MemoryCgroup> memory_cgroup();

// The same for `cgroups`, read as /proc/self/cgroup, with the cgroup file
// system mounted at `root` (/sys/fs/cgroup).
std::optional<MemoryCgroup> memory_cgroup_in(std::istream& cgroups,
                                             const std::filesystem::path& root);

// The memory the page cache may use for this process: physical memory, or
// less where its memory cgroup or one of that cgroup's ancestors sets a lower
// limit ("max", or v1's huge number, is none).
uint64_t memory_for_page_cache();

}  // namespace imgpack::detail
