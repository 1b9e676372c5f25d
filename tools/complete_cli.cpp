#include "complete_cli.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>

namespace imgpack::cli {

namespace fs = std::filesystem;

bool runs_in_front(int argc, char** argv) {
  static constexpr std::array<std::string_view, 9> kOwn = {
      "--version", "inspect", "verify", "split", "merge", "upgrade", "remove", "compact", "bench"};
  if (argc < 2) return false;
  const std::string_view first = argv[1];
  for (const std::string_view own : kOwn) {
    if (first == own) return true;
  }
  return false;
}

std::vector<std::string> complete_cli_candidates() {
  if (const char* path = std::getenv(kCompleteCliVariable); path != nullptr && path[0] != '\0') {
    return {path};
  }
  std::vector<std::string> list;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    list.push_back((self.parent_path() / "imgpack-complete").string());
    list.push_back(
        (self.parent_path() / IMGPACK_COMPLETE_CLI_FROM_BIN).lexically_normal().string());
  }
  // No build tree's copy: run from the build tree, the first place is it, and
  // an installed or moved front end must not run another build's.
  list.emplace_back(IMGPACK_COMPLETE_CLI_INSTALL_PATH);
  std::vector<std::string> unique;
  for (std::string& candidate : list) {
    if (std::find(unique.begin(), unique.end(), candidate) == unique.end()) {
      unique.push_back(std::move(candidate));
    }
  }
  return unique;
}

std::string exec_complete_cli(char** argv) {
  std::string tried;
  for (const std::string& candidate : complete_cli_candidates()) {
    std::error_code ec;
    if (fs::equivalent(candidate, "/proc/self/exe", ec)) {  // would hand itself the command forever
      tried += (tried.empty() ? "" : "; ") + candidate + ": this program itself";
      continue;
    }
    ::execv(candidate.c_str(), argv);
    tried += (tried.empty() ? "" : "; ") + candidate + ": " + std::strerror(errno);
  }
  const char* variable = std::getenv(kCompleteCliVariable);
  if (variable != nullptr && variable[0] != '\0') {
    return std::string(kCompleteCliVariable) + " names no program that runs (" + tried + ")";
  }
  return "the complete imgpack CLI, which runs the commands that touch images, was not found (" +
         tried + "); it is installed with imgpack as libexec/imgpack/imgpack-complete, or set " +
         kCompleteCliVariable + " to its path";
}

}  // namespace imgpack::cli
