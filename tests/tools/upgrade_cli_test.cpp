// imgpack upgrade from the shell: a format 1 dataset becomes format 2 in
// place, shards untouched; killed with SIGKILL at each point of the rewrite,
// the dataset still opens and verifies (as format 1), and running the command
// again finishes the job.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_fixture.hpp"
#include "h5.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/format.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;

class UpgradeCli : public test::CliTest {
 protected:
  void SetUp() override {
    make_sample_data("--classes 3 --groups 3 --per-class 5 --size 40x32");
    auto r = test::run_imgpack("convert " + q(dir_ / "src") + " " + q(reference()) +
                               " --size 16 --shard-size 4K --group-regex '/(g[0-9]+)_'"
                               " --split cv:stratified-group:3 -q");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = test::run_imgpack("split " + q(reference()) + " --name hold --kind holdout --val 0.3 -q");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    fs::copy(reference(), old(), fs::copy_options::recursive);
    test::rewrite_as_format1(old());
  }
  fs::path reference() const { return dir_ / "reference"; }
  fs::path old() const { return dir_ / "old"; }
};

TEST_F(UpgradeCli, UpgradesInPlaceAndSaysSo) {
  auto r = test::run_imgpack("upgrade " + q(old()) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["upgraded"], true);
  EXPECT_EQ(j["from_format"], 1);
  EXPECT_EQ(j["to_format"], 2);
  EXPECT_EQ(j["samples"], 15);
  EXPECT_EQ(j["splits"], 2);
  test::expect_same_dataset_bytes(old(), reference());
  EXPECT_EQ(test::run_imgpack("verify " + q(old()) + " -q").exit_code, 0);

  r = test::run_imgpack("upgrade " + q(old()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("format 2 already; nothing to do"), std::string::npos) << r.err;
  r = test::run_imgpack("upgrade " + q(dir_ / "nothing"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no such dataset directory"), std::string::npos) << r.err;
  r = test::run_imgpack("upgrade " + q(old() / "index.h5"));  // the file, not its folder
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("index.h5: not a directory (a dataset is the folder holding index.h5)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(test::run_imgpack("upgrade").exit_code, 2);
}

// A kill at any point of the rewrite leaves a dataset that opens, verifies
// and keeps its splits (format 1 until index.h5 is renamed into place); the
// command run again produces what an uninterrupted run does.
TEST_F(UpgradeCli, KilledAtAnyPointLeavesAValidDatasetAndFinishesWhenRunAgain) {
  const nlohmann::json expected =
      nlohmann::json::parse(test::run_imgpack("inspect " + q(reference()) + " --json").out);
  for (const std::string point : {"splits-commit", "splits-committed", "index-commit"}) {
    SCOPED_TRACE(point);
    const fs::path data = dir_ / ("killed-" + point);
    fs::copy(old(), data, fs::copy_options::recursive);
    auto killed = run_killed_at(point, "upgrade " + q(data) + " -q");
    ASSERT_EQ(killed.exit_code, kKilledBySigkill) << killed.err;

    EXPECT_EQ(read_index(data).format_version, 1);
    auto verified = test::run_imgpack("verify " + q(data) + " -q");
    EXPECT_EQ(verified.exit_code, 0) << verified.err;
    auto inspected = test::run_imgpack("inspect " + q(data) + " --json");
    ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
    nlohmann::json j = nlohmann::json::parse(inspected.out);
    EXPECT_EQ(j["imgpack_format"], 1);
    EXPECT_EQ(j["splits"], expected["splits"]);
    EXPECT_EQ(j["records"], expected["records"]);

    auto again = test::run_imgpack("upgrade " + q(data) + " --json");
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(nlohmann::json::parse(again.out)["upgraded"], true);
    test::expect_same_dataset_bytes(data, reference());
  }
}

}  // namespace
}  // namespace imgpack
