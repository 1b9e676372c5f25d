#include "memory_limit.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string_view>
#include <system_error>

#include "imgpack/error.hpp"
#include "memory_cgroup.hpp"

namespace imgpack::cli {

namespace {

namespace fs = std::filesystem;

const char* const kElsewise =
    "; or run without --memory-limit inside a limit of your own, e.g. "
    "`systemd-run --scope -p MemoryMax=4G imgpack bench ...`";

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  if (!out) {
    throw system_error(path, std::string("--memory-limit: cannot write '") + text + "'", errno);
  }
}

uint64_t read_number(const fs::path& path) {
  std::ifstream in(path);
  uint64_t value = 0;
  return in >> value ? value : 0;
}

// Removes the cgroups earlier runs made in `parent` and left behind when
// they were stopped (Ctrl-C, a timeout, kill): those whose process is gone
// and that hold none. Another process's that still runs stays.
void remove_stale_cgroups(const fs::path& parent) {
  constexpr std::string_view kPrefix = "imgpack-bench-";
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(parent, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(kPrefix) || name.size() == kPrefix.size() ||
        name.find_first_not_of("0123456789", kPrefix.size()) != std::string::npos) {
      continue;
    }
    const long pid = std::strtol(name.c_str() + kPrefix.size(), nullptr, 10);
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    (void)::rmdir(entry.path().c_str());  // fails, and stays, while it holds a process
  }
}

}  // namespace

MemoryLimit::MemoryLimit(uint64_t bytes) : bytes_(bytes) {
  const std::optional<detail::MemoryCgroup> own = detail::memory_cgroup();
  if (!own) {
    throw Error(std::string("--memory-limit: this process is in no memory cgroup ") +
                "(/proc/self/cgroup names none)" + kElsewise);
  }
  parent_ = own->dir;
  v2_ = own->v2;
  if (v2_) {
    std::ifstream controllers(parent_ / "cgroup.subtree_control");
    std::string enabled((std::istreambuf_iterator<char>(controllers)), {});
    if (enabled.find("memory") == std::string::npos) {
      throw Error("--memory-limit: the memory controller is not enabled for the children of " +
                  parent_.string() + " (cgroup.subtree_control)" + kElsewise);
    }
  }
  remove_stale_cgroups(parent_);
  made_ = parent_ / ("imgpack-bench-" + std::to_string(::getpid()));
  std::error_code error;
  if (!fs::create_directory(made_, error) || error) {
    throw Error("--memory-limit: cannot create the cgroup " + made_.string() + ": " +
                (error ? error.message() : std::string("it exists already")) +
                " (creating cgroups needs root or a delegated subtree)" + kElsewise);
  }
  try {
    write_file(made_ / own->limit_file(), std::to_string(bytes));
    write_file(made_ / "cgroup.procs", std::to_string(::getpid()));
  } catch (...) {
    fs::remove(made_, error);
    throw;
  }
}

MemoryLimit::~MemoryLimit() {
  try {
    write_file(parent_ / "cgroup.procs", std::to_string(::getpid()));
  } catch (const Error&) {  // stays in its cgroup; the directory cannot go then
    return;
  }
  // A cgroup goes once no process is in it; the kernel may take a moment to
  // see the move. An rmdir that fails leaves an empty cgroup behind.
  (void)::rmdir(made_.c_str());
}

uint64_t MemoryLimit::peak_bytes() const {
  return read_number(made_ / (v2_ ? "memory.peak" : "memory.max_usage_in_bytes"));
}

std::string MemoryLimit::description() const {
  return std::string(v2_ ? "cgroup v2 " : "cgroup v1 ") + made_.string();
}

}  // namespace imgpack::cli
