// A fixture for tests that run the imgpack CLI as a user does: a scratch
// directory, shell quoting, sample images to convert, and runs killed with
// SIGKILL at a crash point (IMGPACK_CRASH_AT, files.hpp's crash_point()).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "test_support.hpp"

namespace imgpack::test {

class CliTest : public ::testing::Test {
 protected:
  // The exit status of a process killed by SIGKILL, as the shell reports it.
  static constexpr int kKilledBySigkill = 128 + 9;

  static std::string q(const std::filesystem::path& path) { return shell_quote(path.string()); }
  // The CLI, quoted for a command line.
  static std::string imgpack() { return shell_quote(imgpack_cli()); }

  // `imgpack sample-data DIR/src ARGS -q`; a failure fails the test.
  void make_sample_data(const std::string& args) const {
    const CommandResult r = run_imgpack("sample-data " + q(dir_ / "src") + " " + args + " -q");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  // `imgpack ARGS`, killed with SIGKILL when it reaches crash point `point`.
  static CommandResult run_killed_at(const std::string& point, const std::string& args) {
    return run_command("IMGPACK_CRASH_AT=" + point + " " + imgpack() + " " + args);
  }

  // `imgpack ARGS` unable to write any file past `bytes` (RLIMIT_FSIZE set
  // by util-linux's prlimit, as `ulimit -f` sets it): imgpack ignores
  // SIGXFSZ, so a write past it fails with EFBIG, as one on a full disk
  // fails with ENOSPC.
  static CommandResult run_with_file_limit(uint64_t bytes, const std::string& args) {
    const std::string limit = std::to_string(bytes);
    return run_command("prlimit --fsize=" + limit + ":" + limit + " " + imgpack() + " " + args);
  }

  TempDir dir_;
};

}  // namespace imgpack::test
