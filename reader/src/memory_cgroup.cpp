#include "memory_cgroup.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <istream>
#include <sstream>
#include <string>

namespace imgpack::detail {

namespace fs = std::filesystem;

std::optional<MemoryCgroup> memory_cgroup_in(std::istream& cgroups, const fs::path& root) {
  std::string line;
  std::optional<MemoryCgroup> unified;
  // "0::/path" (v2) or "N:controller,...:/path" (v1).
  while (std::getline(cgroups, line)) {
    const std::size_t first = line.find(':');
    const std::size_t second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const fs::path path = fs::path(line.substr(second + 1)).relative_path();
    if (controllers.empty()) {
      unified = MemoryCgroup{root / path, true};
      continue;
    }
    std::stringstream list(controllers);
    std::string controller;
    while (std::getline(list, controller, ',')) {
      // A hierarchy that is not mounted here (a container, a chroot) is none to see.
      const MemoryCgroup v1{root / "memory" / path};
      if (controller == "memory" && fs::exists(v1.dir / "cgroup.procs")) return v1;
    }
  }
  if (unified && fs::exists(unified->dir / "cgroup.procs")) return unified;
  return std::nullopt;
}

std::optional<MemoryCgroup> memory_cgroup() {
  std::ifstream cgroups("/proc/self/cgroup");
  return memory_cgroup_in(cgroups, "/sys/fs/cgroup");
}

uint64_t memory_for_page_cache() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  uint64_t limit = pages > 0 && page > 0
                       ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)
                       : ~uint64_t{0};
  const std::optional<MemoryCgroup> cgroup = memory_cgroup();
  if (!cgroup) return limit;
  const fs::path root = cgroup->v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory";
  for (fs::path dir = cgroup->dir;; dir = dir.parent_path()) {
    std::ifstream value(dir / cgroup->limit_file());
    std::string text;
    if (value >> text && text != "max") {
      try {
        limit = std::min<uint64_t>(limit, std::stoull(text));
      } catch (const std::exception&) {  // not a number: no limit here
      }
    }
    if (dir == root || !dir.has_relative_path() || dir == dir.parent_path()) break;
  }
  return limit;
}

}  // namespace imgpack::detail
