#include "imgpack/selection.hpp"

#include <gtest/gtest.h>

#include "imgpack/error.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

using test::TempDir;

// 12 samples; fold of sample s in split "cv3" is kAssign[s] (-1 = test).
const std::vector<int16_t> kAssign = {0, 1, 2, -1, 0, 1, 2, -1, 0, 0, 1, 2};

class SelectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::SyntheticOptions options;
    options.samples = 12;
    test::write_synthetic_dataset(dir_.path(), options);
    test::add_split(dir_.path(), "cv3", 3, kAssign);
    test::add_split(dir_.path(), "hold", 2, {0, 1, 1, 1, 0, 1, 1, 1, -1, 1, 1, 0}, "holdout");
    index_ = read_index(dir_.path());
  }
  std::vector<int64_t> select(const std::string& split, int32_t fold, Role role) {
    return select_samples(index_, SelectionOptions{.split = split, .fold = fold, .role = role});
  }
  TempDir dir_;
  DatasetIndex index_;
};

TEST_F(SelectionTest, RolesFollowTheFoldRule) {
  EXPECT_EQ(select("cv3", 0, Role::val), (std::vector<int64_t>{0, 4, 8, 9}));
  EXPECT_EQ(select("cv3", 0, Role::train), (std::vector<int64_t>{1, 2, 5, 6, 10, 11}));
  EXPECT_EQ(select("cv3", 0, Role::test), (std::vector<int64_t>{3, 7}));
  EXPECT_EQ(select("cv3", 2, Role::val), (std::vector<int64_t>{2, 6, 11}));
  EXPECT_EQ(select("cv3", 2, Role::train), (std::vector<int64_t>{0, 1, 4, 5, 8, 9, 10}));
  EXPECT_EQ(select("cv3", 1, Role::all).size(), 12u);
  EXPECT_EQ(select("", 0, Role::all).size(), 12u);
}

TEST_F(SelectionTest, EveryFoldPartitionsTheNonTestSamples) {
  for (int32_t fold = 0; fold < 3; ++fold) {
    std::vector<int64_t> train = select("cv3", fold, Role::train);
    std::vector<int64_t> val = select("cv3", fold, Role::val);
    std::vector<int64_t> test = select("cv3", fold, Role::test);
    std::vector<int64_t> all;
    all.insert(all.end(), train.begin(), train.end());
    all.insert(all.end(), val.begin(), val.end());
    all.insert(all.end(), test.begin(), test.end());
    std::sort(all.begin(), all.end());
    std::vector<int64_t> expected(12);
    for (int64_t s = 0; s < 12; ++s) expected[static_cast<std::size_t>(s)] = s;
    EXPECT_EQ(all, expected) << "fold " << fold;
  }
}

TEST_F(SelectionTest, HoldoutUsesFoldZero) {
  EXPECT_EQ(select("hold", 0, Role::val), (std::vector<int64_t>{0, 4, 11}));
  EXPECT_EQ(select("hold", 0, Role::train), (std::vector<int64_t>{1, 2, 3, 5, 6, 7, 9, 10}));
  EXPECT_EQ(select("hold", 0, Role::test), (std::vector<int64_t>{8}));
  EXPECT_THROW(select("hold", 1, Role::val), UsageError);
}

// Samples 1 (fold 1), 3 (test) and 8 (fold 0; test of "hold") removed: in
// no role of any split, nor in `all`, with or without a split.
TEST_F(SelectionTest, RemovedSamplesAreInNoRole) {
  test::remove_samples(dir_.path(), {1, 3, 8});
  index_ = read_index(dir_.path());
  ASSERT_EQ(index_.generation, 1u);
  ASSERT_EQ(index_.num_removed(), 3u);
  EXPECT_EQ(select("cv3", 0, Role::val), (std::vector<int64_t>{0, 4, 9}));
  EXPECT_EQ(select("cv3", 0, Role::train), (std::vector<int64_t>{2, 5, 6, 10, 11}));
  EXPECT_EQ(select("cv3", 0, Role::test), (std::vector<int64_t>{7}));
  EXPECT_EQ(select("cv3", 1, Role::val), (std::vector<int64_t>{5, 10}));
  const std::vector<int64_t> kept = {0, 2, 4, 5, 6, 7, 9, 10, 11};
  EXPECT_EQ(select("", 0, Role::all), kept);
  EXPECT_EQ(select("cv3", 2, Role::all), kept);
  EXPECT_EQ(select("hold", 0, Role::all), kept);
  EXPECT_EQ(select("hold", 0, Role::test), (std::vector<int64_t>{}));
  EXPECT_EQ(select("hold", 0, Role::train), (std::vector<int64_t>{2, 5, 6, 7, 9, 10}));
  // A removed sample whose split was left as it was (a split written before
  // the removal, by a tool that kept it) is still in no role.
  DatasetIndex kept_assignments = index_;
  kept_assignments.splits[0].assign = kAssign;  // splits in name order: cv3 first
  EXPECT_EQ(select_samples(kept_assignments, {.split = "cv3", .fold = 0, .role = Role::train}),
            (std::vector<int64_t>{2, 5, 6, 10, 11}));
}

TEST_F(SelectionTest, ClearErrorsForBadRequests) {
  try {
    select("cv5", 0, Role::train);
    ADD_FAILURE() << "unknown split accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("cv3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(select("cv3", 3, Role::val), UsageError);
  EXPECT_THROW(select("cv3", -1, Role::val), UsageError);
  EXPECT_THROW(select("", 0, Role::train), UsageError);
}

TEST(SelectionNames, ParseAndPrint) {
  EXPECT_EQ(parse_role("val"), Role::val);
  EXPECT_EQ(role_name(Role::test), "test");
  EXPECT_THROW(parse_role("validation"), UsageError);
  EXPECT_EQ(parse_variant_policy("rotate"), VariantPolicy::rotate);
  EXPECT_EQ(parse_variant_policy("auto"), VariantPolicy::automatic);
  EXPECT_THROW(parse_variant_policy("some"), UsageError);
}

}  // namespace
}  // namespace imgpack
