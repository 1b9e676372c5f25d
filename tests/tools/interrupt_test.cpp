// The CLI stopped by a signal (tools/interrupt.cpp): Ctrl-C, SIGTERM or
// SIGHUP ends it by that signal after it removed the temporary file of an
// output it was writing and said on stderr how to finish what it leaves.
// Each run raises the signal itself at a crash point (IMGPACK_CRASH_SIGNAL),
// so the moment is exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli_fixture.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;

class InterruptCli : public test::CliTest {
 protected:
  void SetUp() override {
    make_sample_data("--classes 2 --groups 2 --per-class 12 --size 40x32");
    const test::CommandResult r = test::run_imgpack(convert_args("ds") + " --split cv:random:2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  // 24 images to 24x24 records, 4 to a shard.
  std::string convert_args(const std::string& out) const {
    return "convert " + q(dir_ / "src") + " " + q(dir_ / out) + " --size 24 --shard-size " +
           std::to_string(4 * 24 * 24 * 3) + " -q";
  }

  // `imgpack ARGS` sent `signal` (INT, TERM, HUP or KILL) at crash point `point`.
  static test::CommandResult run_signalled_at(const std::string& point, const std::string& signal,
                                              const std::string& args) {
    return test::run_command("IMGPACK_CRASH_AT=" + point + " IMGPACK_CRASH_SIGNAL=" + signal + " " +
                             imgpack() + " " + args);
  }

  std::vector<std::string> names_in(const fs::path& folder) const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(folder)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }
};

// Stopped while its output is written aside: the temporary file goes, the
// output is not made, a file of the user's under OUTPUT.tmp keeps its bytes,
// and the message names the signal, with nothing to finish (no dataset
// changed). The shell sees 128 + the signal's number.
TEST_F(InterruptCli, AnOutputStoppedMidWriteLeavesNothingBehind) {
  fs::create_directory(dir_ / "out");
  test::write_bytes(dir_ / "out" / "folds.csv.tmp", "the user's notes");
  const auto exported = run_signalled_at(
      "output-written", "INT",
      "split " + q(dir_ / "ds") + " --export cv --out " + q(dir_ / "out" / "folds.csv"));
  EXPECT_EQ(exported.exit_code, 128 + 2) << exported.err;
  EXPECT_NE(exported.err.find("imgpack: stopped by SIGINT\n"), std::string::npos) << exported.err;

  const auto preview = run_signalled_at(
      "output-written", "TERM",
      "preview " + q(dir_ / "ds") + " --samples 4 --out " + q(dir_ / "out" / "sheet.png") + " -q");
  EXPECT_EQ(preview.exit_code, 128 + 15) << preview.err;
  EXPECT_NE(preview.err.find("imgpack: stopped by SIGTERM\n"), std::string::npos) << preview.err;

  EXPECT_EQ(names_in(dir_ / "out"), std::vector<std::string>{"folds.csv.tmp"});
  EXPECT_EQ(test::read_bytes(dir_ / "out" / "folds.csv.tmp"), "the user's notes");

  // kill -9 cannot be handled: the temporary file stays, under a name of
  // the process's own, and the next run writes the output all the same.
  const std::string export_args =
      "split " + q(dir_ / "ds") + " --export cv --out " + q(dir_ / "out" / "folds.csv");
  const auto killed = run_signalled_at("output-written", "KILL", export_args);
  EXPECT_EQ(killed.exit_code, kKilledBySigkill) << killed.err;
  EXPECT_EQ(names_in(dir_ / "out").size(), 2u);
  const auto again = test::run_imgpack(export_args + " -q");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(fs::exists(dir_ / "out" / "folds.csv"));
}

// A conversion stopped by SIGTERM says how to continue it, and that way
// finishes with the bytes of a run never stopped.
TEST_F(InterruptCli, AConversionStoppedSaysHowToContinue) {
  const auto stopped = run_signalled_at("record:9", "TERM", convert_args("stopped"));
  EXPECT_EQ(stopped.exit_code, 128 + 15) << stopped.err;
  EXPECT_NE(stopped.err.find("imgpack: stopped by SIGTERM; what was converted stays in the "
                             "output folder: the same command with --resume continues it"),
            std::string::npos)
      << stopped.err;
  const auto resumed = test::run_imgpack(convert_args("stopped") + " --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto reference = test::run_imgpack(convert_args("reference"));
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  test::expect_same_dataset_bytes(dir_ / "stopped", dir_ / "reference");
}

// A change to a dataset stopped by SIGHUP (a closed terminal) says the same
// command again finishes it, which it does.
TEST_F(InterruptCli, AChangeStoppedSaysTheSameCommandFinishesIt) {
  const std::string first_class = names_in(dir_ / "src").front();
  const std::string first_image = names_in(dir_ / "src" / first_class).front();
  test::write_bytes(dir_ / "gone.txt", first_class + "/" + first_image + "\n");
  const std::string remove = "remove " + q(dir_ / "ds") + " --paths " + q(dir_ / "gone.txt");
  const auto stopped = run_signalled_at("index-commit", "HUP", remove);
  EXPECT_EQ(stopped.exit_code, 128 + 1) << stopped.err;
  EXPECT_NE(stopped.err.find("imgpack: stopped by SIGHUP; the dataset is as before the change or "
                             "after it: the same command again finishes it"),
            std::string::npos)
      << stopped.err;
  const auto again = test::run_imgpack(remove + " --json");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("\"removed\": 1"), std::string::npos) << again.out;
}

// A signal ignored when imgpack started (nohup's SIGHUP) stays ignored: the
// run goes on to the crash point's SIGKILL, with no word of a stop.
TEST_F(InterruptCli, ASignalIgnoredAtStartStaysIgnored) {
  const auto run = test::run_command(
      "trap '' HUP; IMGPACK_CRASH_AT=output-written IMGPACK_CRASH_SIGNAL=HUP exec " + imgpack() +
      " split " + q(dir_ / "ds") + " --export cv --out " + q(dir_ / "folds.csv"));
  EXPECT_EQ(run.exit_code, kKilledBySigkill) << run.err;
  EXPECT_EQ(run.err.find("stopped by"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace imgpack
