// The two imgpack programs (tools/complete_cli.cpp): `imgpack` runs the
// commands that touch no image itself, without the image pipeline's
// libraries, and hands the others (and --help) to imgpack-complete.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_support.hpp"

namespace imgpack {
namespace {

using test::run_command;
using test::run_imgpack;
using test::shell_quote;

std::string q(const std::filesystem::path& p) { return shell_quote(p.string()); }

constexpr const char* kMissing = "/nonexistent/imgpack-complete";

// The front program with the complete CLI out of reach.
test::CommandResult run_front_alone(const std::string& arguments) {
  return run_command(std::string("IMGPACK_COMPLETE_CLI=") + kMissing + " " +
                     shell_quote(test::imgpack_cli()) + " " + arguments);
}

class CompleteCli : public ::testing::Test {
 protected:
  void SetUp() override {
    auto made = run_imgpack("sample-data " + q(dir_ / "src") + " --classes 2 --per-class 4 " +
                            "--size 40x32 -q");
    ASSERT_EQ(made.exit_code, 0) << made.err;
    auto converted =
        run_imgpack("convert " + q(dir_ / "src") + " " + q(dir_ / "out") + " --size 16 -q");
    ASSERT_EQ(converted.exit_code, 0) << converted.err;
  }
  test::TempDir dir_;
};

TEST_F(CompleteCli, TheCommandsThatTouchNoImageRunWithoutIt) {
  for (const std::string& command :
       {std::string("--version"), "inspect " + q(dir_ / "out"), "verify " + q(dir_ / "out"),
        "split " + q(dir_ / "out") + " --list"}) {
    auto r = run_front_alone(command);
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.err;
    EXPECT_EQ(r.err.find("IMGPACK_COMPLETE_CLI"), std::string::npos) << command << ": " << r.err;
  }
  for (const char* command :
       {"inspect", "verify", "split", "merge", "upgrade", "remove", "compact", "bench"}) {
    auto r = run_front_alone(std::string(command) + " --help");
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.err;
    EXPECT_NE(r.out.find(command), std::string::npos) << r.out;
  }
}

TEST_F(CompleteCli, ImageCommandsAndHelpNeedItAndSayWhereItWasLookedFor) {
  for (const std::string& command :
       {"convert " + q(dir_ / "src") + " " + q(dir_ / "again") + " --size 16",
        "preview " + q(dir_ / "out") + " " + q(dir_ / "grid.png"),
        "sample-data " + q(dir_ / "more"), std::string("--help"), std::string("")}) {
    auto r = run_front_alone(command);
    EXPECT_EQ(r.exit_code, 1) << command;
    EXPECT_NE(r.err.find(std::string("IMGPACK_COMPLETE_CLI names no program that runs (") +
                         kMissing + ": No such file or directory)"),
              std::string::npos)
        << command << ": " << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "again"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "grid.png"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "more"));
}

// IMGPACK_COMPLETE_CLI naming imgpack itself would hand the command on forever.
TEST_F(CompleteCli, ItIsNeverThisProgramItself) {
  auto r = run_command("IMGPACK_COMPLETE_CLI=" + shell_quote(test::imgpack_cli()) + " " +
                       shell_quote(test::imgpack_cli()) + " convert " + q(dir_ / "src") + " " +
                       q(dir_ / "again") + " --size 16");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(test::imgpack_cli() + ": this program itself"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "again"));
}

TEST_F(CompleteCli, HelpListsEveryCommandAndUnknownOnesAreUsageErrors) {
  auto help = run_imgpack("--help");
  ASSERT_EQ(help.exit_code, 0) << help.err;
  for (const char* command : {"convert", "inspect", "merge", "remove", "compact", "preview",
                              "sample-data", "split", "bench", "upgrade", "verify"}) {
    EXPECT_NE(help.out.find(command), std::string::npos) << command;
  }
  auto unknown = run_imgpack("frobnicate");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(unknown.err.rfind("imgpack: unknown command 'frobnicate'", 0), 0u) << unknown.err;
}

TEST_F(CompleteCli, TheFrontLoadsNoLibraryOfTheImagePipeline) {
  for (const std::string& command : {std::string("--version"), "inspect " + q(dir_ / "out")}) {
    // The dynamic linker's own record of what it loaded.
    auto r = run_command("LD_DEBUG=libs " + shell_quote(test::imgpack_cli()) + " " + command);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("libstdc++"), std::string::npos) << "LD_DEBUG printed nothing useful";
    for (const char* library :
         {"libopencv", "libtbb", "libturbojpeg", "libpng", "libcurl", "libimgpack_codecs"}) {
      EXPECT_EQ(r.err.find(library), std::string::npos) << command << " loaded " << library;
    }
  }
}

}  // namespace
}  // namespace imgpack
