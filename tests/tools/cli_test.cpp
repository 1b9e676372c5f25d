// The imgpack CLI as a user runs it: exit codes, messages, JSON output.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <thread>

#include "test_support.hpp"

namespace imgpack {
namespace {

using test::run_imgpack;
using test::shell_quote;

std::string q(const std::filesystem::path& p) { return shell_quote(p.string()); }

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = run_imgpack("sample-data " + q(dir_ / "src") +
                         " --classes 3 --groups 4 --per-class 6 --size 64x48 -q");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  test::TempDir dir_;
};

TEST_F(Cli, SampleDataConvertInspectEndToEnd) {
  auto convert = run_imgpack("convert " + q(dir_ / "src") + " " + q(dir_ / "out") +
                             " --size 32 --group-regex '/(g[0-9]+)_' --json");
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  auto summary = nlohmann::json::parse(convert.out);
  EXPECT_EQ(summary["records"], 18);
  EXPECT_EQ(summary["samples"], 18);
  EXPECT_EQ(summary["skipped"], 0);
  EXPECT_EQ(summary["shards"], 1);
  EXPECT_TRUE(summary["seconds"].is_number());

  auto inspect = run_imgpack("inspect " + q(dir_ / "out") + " --json");
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  auto info = nlohmann::json::parse(inspect.out);
  EXPECT_EQ(info["records"], 18);
  EXPECT_EQ(info["samples"], 18);
  EXPECT_EQ(info["height"], 32);
  EXPECT_EQ(info["width"], 32);
  EXPECT_EQ(info["channels"], 3);
  EXPECT_EQ(info["variants"], 1);
  EXPECT_EQ(info["groups"], 4);
  EXPECT_EQ(info["shards"], 1);
  ASSERT_EQ(info["classes"].size(), 3u);
  EXPECT_EQ(info["classes"][0]["name"], "circle");
  EXPECT_EQ(info["classes"][0]["count"], 6);
  EXPECT_TRUE(info["splits"].is_array());

  auto human = run_imgpack("inspect " + q(dir_ / "out"));
  ASSERT_EQ(human.exit_code, 0);
  EXPECT_NE(human.out.find("circle"), std::string::npos);
  EXPECT_NE(human.out.find("32 x 32 x 3"), std::string::npos);
}

// Output that cannot be written (a full disk: /dev/full) fails the command,
// in the front CLI and in the complete one, rather than ending in exit 0 with
// the output cut short.
// A class named with a control character (a folder "new\nline") keeps its
// one line in inspect's table, escaped; --json keeps the name as it is.
TEST_F(Cli, InspectShowsControlCharactersInNamesEscaped) {
  const std::filesystem::path src = dir_ / "odd";
  std::filesystem::create_directories(src / "new\nline");
  std::filesystem::create_directories(src / "plain");
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir_ / "src")) {
    if (entry.path().extension() != ".jpg") continue;
    std::filesystem::copy_file(entry.path(), src / "new\nline" / "a.jpg");
    std::filesystem::copy_file(entry.path(), src / "plain" / "a.jpg");
    break;
  }
  ASSERT_EQ(run_imgpack("convert " + q(src) + " " + q(dir_ / "odd-out") + " --size 8 -q").exit_code,
            0);
  auto text = run_imgpack("inspect " + q(dir_ / "odd-out"));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("    new\\nline  1\n"), std::string::npos) << text.out;
  auto json = run_imgpack("inspect " + q(dir_ / "odd-out") + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["classes"][0]["name"], "new\nline");
}

TEST_F(Cli, OutputThatCannotBeWrittenFailsTheCommand) {
  const std::string out = q(dir_ / "out");
  auto convert = run_imgpack("convert " + q(dir_ / "src") + " " + out +
                             " --size 32 --split cv:stratified:2 --json > /dev/full");
  EXPECT_EQ(convert.exit_code, 1) << convert.err;
  EXPECT_NE(convert.err.find("imgpack: standard output: write failed"), std::string::npos)
      << convert.err;
  ASSERT_TRUE(std::filesystem::exists(dir_ / "out" / "index.h5")) << "the conversion itself ran";
  for (const std::string& args :
       {"inspect " + out + " --json", "split " + out + " --export cv --out -",
        std::string("--version")}) {
    SCOPED_TRACE(args);
    auto r = run_imgpack(args + " > /dev/full");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("imgpack: standard output: write failed"), std::string::npos) << r.err;
    EXPECT_EQ(run_imgpack(args + " > /dev/null").exit_code, 0);
  }
}

// More threads than cores is a choice (to hide I/O waits): oneTBB runs them
// and says nothing.
TEST_F(Cli, MoreThreadsThanCoresRunQuietly) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency()) + 2;
  auto r = run_imgpack("convert " + q(dir_ / "src") + " " + q(dir_ / "out") + " --size 16 -q " +
                       "--threads " + std::to_string(threads));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

// The default thread count is the cores the process may run on (an MPI
// rank bound to one core, a Slurm task's cpus), not the machine's: it asked
// oneTBB for more than the binding allowed, which printed a warning.
TEST_F(Cli, TheDefaultThreadsFollowTheCpuBinding) {
  if (test::run_command("command -v taskset").exit_code != 0) GTEST_SKIP() << "no taskset";
  auto r =
      test::run_command("taskset -c 0 " + test::shell_quote(test::imgpack_cli()) + " convert " +
                        q(dir_ / "src") + " " + q(dir_ / "out") + " --size 16 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto report = nlohmann::json::parse(test::read_bytes(dir_ / "out" / "report.json"));
  EXPECT_EQ(report["threads"], 1);
}

// An OUT that cannot name a directory is the request's fault (exit 2); one
// the file system cannot make (read-only, full) is a failure (exit 1).
TEST_F(Cli, AnOutputPathThroughAFileIsAUsageError) {
  test::write_bytes(dir_ / "file", "x");
  auto r =
      run_imgpack("convert " + q(dir_ / "src") + " " + q(dir_ / "file" / "out") + " --size 16");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find((dir_ / "file" / "out").string() + ": cannot create directory: Not a "
                                                          "directory"),
            std::string::npos)
      << r.err;
}

TEST_F(Cli, PlainProgressLinesWhenStderrIsNotATerminal) {
  auto r = run_imgpack("convert " + q(dir_ / "src") + " " + q(dir_ / "out") + " --size 16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("convert: 18/18 (100%)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << "no carriage returns in logs";
  EXPECT_TRUE(r.out.empty());
  auto quiet = run_imgpack("convert " + q(dir_ / "src") + " " + q(dir_ / "out2") + " --size 16 -q");
  EXPECT_EQ(quiet.exit_code, 0);
  EXPECT_TRUE(quiet.err.empty()) << quiet.err;
}

TEST_F(Cli, UsageErrorsExitTwoWithAOneLineReason) {
  struct Case {
    std::string args;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {"convert " + q(dir_ / "missing") + " " + q(dir_ / "o1") + " --size 8", "no such directory"},
      {"convert " + q(dir_ / "src") + " " + q(dir_ / "o2") + " --resize squash", "squash"},
      {"convert " + q(dir_ / "src") + " " + q(dir_ / "o3") + " --size 0", "--size"},
      {"convert " + q(dir_ / "src") + " " + q(dir_ / "o4") + " --shard-size 12Q", "12Q"},
      {"convert " + q(dir_ / "src") + " " + q(dir_ / "o5"), "--size"},  // sizes vary
      {"convert " + q(dir_ / "src") + " " + q(dir_ / "o6") + " --size 8 --group-regex '('",
       "--group-regex"},
      {"inspect", "DATASET"},
      // A DATASET that names no directory is an argument to correct.
      {"inspect " + q(dir_ / "none"), "none: no such dataset directory"},
      {"verify " + q(dir_ / "none"), "none: no such dataset directory"},
      {"compact " + q(dir_ / "none"), "none: no such dataset directory"},
      {"frobnicate", "frobnicate"},
      // 64-bit values: a negative number or one past the range is not read
      // as 2^64 - 1.
      {"convert " + q(dir_ / "src") + " " + q(dir_ / "o7") + " --size 8 --seed -1", "'-1'"},
      {"convert " + q(dir_ / "src") + " " + q(dir_ / "o8") + " --size 8 --max-pixels -1", "'-1'"},
      {"convert " + q(dir_ / "src") + " " + q(dir_ / "o9") +
           " --size 8 --seed 18446744073709551616",
       "'18446744073709551616'"},
      {"convert " + q(dir_ / "src") + " " + q(dir_ / "o10") + " --size 8 --split cv:random:70000",
       "70000 folds"},
      {"sample-data " + q(dir_ / "s1") + " --seed -2", "'-2'"},
      {"split " + q(dir_ / "src") + " --name a --kind random --seed -3", "'-3'"},
      {"bench " + q(dir_ / "src") + " --seed 1e3", "'1e3'"},
      {"preview " + q(dir_ / "src") + " --out x.png --seed -4", "'-4'"},
      // Trailing text or a number past 32 bits is not read as a part.
      {"convert " + q(dir_ / "src") + " " + q(dir_ / "o11") + " --size 8 --part 1/2/9",
       "--part 1/2/9: expected I/N"},
      {"convert " + q(dir_ / "src") + " " + q(dir_ / "o12") + " --size 8 --part 0/4294967297",
       "--part 0/4294967297: expected I/N"},
      {"convert " + q(dir_ / "src") + " " + q(dir_ / "o13") + " --size 8 --overwrite --resume",
       "--overwrite and --resume: give one"},
      // An empty name is no name: refused, not read as absent (checked before
      // the folder, here one that holds no dataset).
      {"split " + q(dir_ / "src") + " --name ''", "--name: an empty value"},
      {"split " + q(dir_ / "src") + " --export ''", "--export: an empty value"},
      {"preview " + q(dir_ / "src") + " --out ''", "--out: an empty value"},
      // A script's unset variable: no conversion that is not in parts, no
      // target columns silently left out, no folder named "".
      {"convert " + q(dir_ / "src") + " " + q(dir_ / "o17") + " --size 8 --part ''",
       "--part: an empty value"},
      {"convert " + q(dir_ / "src") + " " + q(dir_ / "o18") + " --size 8 --csv-targets ''",
       "--csv-targets: an empty value"},
      {"convert " + q(dir_ / "src") + " '' --size 8", "OUT: an empty value"},
      {"convert '' " + q(dir_ / "o19") + " --size 8", "SRC: an empty value"},
      {"merge ''", "OUT: an empty value"},
      {"merge " + q(dir_ / "none"), "none: no such directory"},
      {"inspect ''", "DATASET: an empty value"},
      {"remove " + q(dir_ / "src") + " --paths ''", "--paths: an empty value"},
      // Sample data never writes into a folder holding files.
      {"sample-data " + q(dir_ / "src"), "not empty"},
      {"sample-data " + q(dir_ / "s2") + " --size 8x8", "between 16 and 8192"},
      // Too large is said so, not "not an integer".
      {"convert " + q(dir_ / "src") + " " + q(dir_ / "o14") +
           " --size 8 --shard-size 184467440737095516150",
       "is too large"},
      // A holdout's fraction named as the option gives it.
      {"convert " + q(dir_ / "src") + " " + q(dir_ / "o15") + " --size 8 --split a:holdout:5",
       "the validation fraction 5 is outside (0, 1)"},
      // Options that contradict each other are refused, not one ignored.
      {"convert " + q(dir_ / "src") + " " + q(dir_ / "o16") +
           " --size 8 --dct-scales eighths --no-dct-scaling",
       "excludes"},
      {"bench " + q(dir_ / "src") + " --fold 2", "--fold requires --split"},
      // An append onto a file: not a directory, rather than "no such".
      {"convert " + q(dir_ / "src") + " " + q(dir_ / "src" / "labels.csv") + " --append",
       "labels.csv: not a directory"},
  };
  for (const Case& c : cases) {
    auto r = run_imgpack(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.fragment), std::string::npos) << c.args << "\n" << r.err;
  }
}

TEST_F(Cli, ExistingOutputNeedsOverwrite) {
  std::string args = "convert " + q(dir_ / "src") + " " + q(dir_ / "out") + " --size 16 -q";
  ASSERT_EQ(run_imgpack(args).exit_code, 0);
  auto again = run_imgpack(args);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("--overwrite"), std::string::npos) << again.err;
  EXPECT_EQ(run_imgpack(args + " --overwrite").exit_code, 0);
}

TEST_F(Cli, OnErrorFailExitsOneAndLeavesNoIndex) {
  test::write_bytes(dir_ / "src" / "circle" / "broken.jpg", "\xFF\xD8\xFF\xE0 truncated");
  auto r = run_imgpack("convert " + q(dir_ / "src") + " " + q(dir_ / "out") +
                       " --size 16 --on-error fail -q");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("broken.jpg"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out" / "index.h5"));

  auto skip = run_imgpack("convert " + q(dir_ / "src") + " " + q(dir_ / "out2") +
                          " --size 16 --json --max-skipped 1");
  EXPECT_EQ(skip.exit_code, 0) << skip.err;
  EXPECT_EQ(nlohmann::json::parse(skip.out)["skipped"], 1);
}

TEST_F(Cli, InspectOfAnIncompleteDatasetFails) {
  std::filesystem::create_directories(dir_ / "partial");
  auto r = run_imgpack("inspect " + q(dir_ / "partial"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("index.h5"), std::string::npos) << r.err;
}

// A dataset folder that may be entered but not listed (a shared folder of
// mode 711, say) is read by inspect as by every reader; only the count of
// shard files the index does not list, which needs the listing, is left out.
TEST_F(Cli, InspectOfAFolderThatCannotBeListedLeavesOutOnlyTheUnlistedFiles) {
  const std::filesystem::path out = dir_ / "ds";
  ASSERT_EQ(run_imgpack("convert " + q(dir_ / "src") + " " + q(out) + " --size 16 -q").exit_code,
            0);
  ASSERT_EQ(::chmod(out.c_str(), 0311), 0);
  // The owner's bits apply to root too once it drops the two capabilities
  // that pass over them, if setpriv can drop them.
  std::string prefix;
  if (test::run_command("ls " + q(out) + " >/dev/null 2>&1").exit_code == 0) {
    prefix = "setpriv --bounding-set=-dac_override,-dac_read_search ";
    if (test::run_command(prefix + "ls " + q(out) + " >/dev/null 2>&1").exit_code == 0) {
      ::chmod(out.c_str(), 0755);
      GTEST_SKIP() << "a mode-311 folder stays listable here and setpriv cannot drop "
                      "CAP_DAC_READ_SEARCH: such a folder cannot be made";
    }
  }
  const std::string cli = prefix + shell_quote(test::imgpack_cli());
  const test::CommandResult text = test::run_command(cli + " inspect " + q(out));
  const test::CommandResult json = test::run_command(cli + " inspect " + q(out) + " --json");
  const test::CommandResult verify = test::run_command(cli + " verify " + q(out) + " -q");
  ::chmod(out.c_str(), 0755);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("  unlisted    not counted (" + out.string() +
                          ": cannot list: Permission denied)"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("18 images"), std::string::npos) << text.out;
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_TRUE(j["unlisted_shard_files"].is_null()) << json.out;
  EXPECT_EQ(j["samples"], 18);
  EXPECT_EQ(verify.exit_code, 0) << verify.err;
}

}  // namespace
}  // namespace imgpack
