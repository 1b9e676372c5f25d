// imgpack convert --part I/N and imgpack merge from the shell: the Slurm job
// array's commands run in a loop, then the merge; a merge killed with SIGKILL
// at each crash point finishes when run again.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "imgpack/dataset_index.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using test::run_command;
using test::shell_quote;

constexpr int kKilledBySigkill = 128 + 9;

class MergeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = test::run_imgpack("sample-data " + q(dir_ / "src") +
                               " --classes 3 --groups 3 --per-class 5 --size 40x32 -q");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  static std::string q(const fs::path& p) { return shell_quote(p.string()); }
  static std::string imgpack() { return shell_quote(IMGPACK_CLI); }

  std::string convert_args(const std::string& out) const {
    return "convert " + q(dir_ / "src") + " " + q(dir_ / out) +
           " --size 16x12 --variants 2 --augment hflip --shard-size 4K --threads 2"
           " --group-regex '/(g[0-9]+)_' --split cv:stratified-group:3 -q";
  }

  // The commands of the Slurm job array of README.md, for tasks 0..N-1 in a
  // loop (the merge job's command is the test's).
  test::CommandResult array_tasks(const std::string& out, int count) const {
    const std::string script = "set -e; N=" + std::to_string(count) +
                               "; for I in $(seq 0 $((N - 1))); do " + imgpack() + " " +
                               convert_args(out) + " --part $I/$N; done";
    return run_command("sh -c " + shell_quote(script));
  }

  static nlohmann::json inspect(const fs::path& dir) {
    auto r = test::run_imgpack("inspect " + shell_quote(dir.string()) + " --json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }

  void expect_like_single(const fs::path& dir) {
    auto verify = test::run_imgpack("verify " + q(dir) + " -q");
    EXPECT_EQ(verify.exit_code, 0) << verify.err;
    const nlohmann::json merged = inspect(dir);
    if (single_.is_null()) single_ = inspect(dir_ / "single");
    for (const char* key : {"records", "samples", "classes", "groups", "variants"}) {
      EXPECT_EQ(merged[key], single_[key]) << key;
    }
    EXPECT_EQ(merged["splits"].size(), 1u);
    EXPECT_FALSE(fs::exists(dir / "parts"));
    EXPECT_FALSE(fs::exists(dir / "merge.journal"));
  }

  test::TempDir dir_;
  nlohmann::json single_;  // inspect --json of the conversion in one piece
};

// One test, so the inputs, the one-piece conversion and the parts are made once.
TEST_F(MergeCli, ArrayTasksThenMergeAndKilledMergesFinishWhenRunAgain) {
  ASSERT_EQ(test::run_imgpack(convert_args("single")).exit_code, 0);
  auto tasks = array_tasks("parts", 3);
  ASSERT_EQ(tasks.exit_code, 0) << tasks.err;
  for (const std::string point :
       {"", "merge-patch:1", "merge-shard:2", "splits-committed", "merge-index-committed"}) {
    SCOPED_TRACE(point);
    const fs::path out = dir_ / ("out" + point);
    fs::copy(dir_ / "parts", out, fs::copy_options::recursive);
    if (!point.empty()) {
      auto killed =
          run_command("IMGPACK_CRASH_AT=" + point + " " + imgpack() + " merge " + q(out) + " -q");
      ASSERT_EQ(killed.exit_code, kKilledBySigkill) << killed.err;
      EXPECT_EQ(fs::exists(out / "index.h5"), point == "merge-index-committed");
    }
    auto merged = test::run_imgpack("merge " + q(out) + " --json");
    ASSERT_EQ(merged.exit_code, 0) << merged.err;
    const nlohmann::json summary = nlohmann::json::parse(merged.out);
    EXPECT_EQ(summary["resumed"], !point.empty());
    if (point.empty()) {
      EXPECT_EQ(summary["parts"], 3);
    }
    expect_like_single(out);
  }
}

TEST_F(MergeCli, PartOutOfRangeIsAUsageError) {
  auto r = test::run_imgpack(convert_args("out") + " --part 3/3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--part 3/3"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
  auto merged = test::run_imgpack("merge " + q(dir_ / "src"));
  EXPECT_EQ(merged.exit_code, 2);
  EXPECT_NE(merged.err.find("no parts to merge"), std::string::npos) << merged.err;
}

}  // namespace
}  // namespace imgpack
