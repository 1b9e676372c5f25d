#include "split_partition.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "imgpack/error.hpp"
#include "random.hpp"

namespace imgpack {
namespace {

// `n` items of 1..40 samples over `classes` classes, each item mostly one class.
ItemTable random_items(int32_t n, int32_t classes, uint64_t seed) {
  ItemTable items;
  items.num_classes = classes;
  CounterRng rng(seed);
  for (int32_t i = 0; i < n; ++i) {
    const auto main_class = static_cast<int32_t>(rng.below(static_cast<uint64_t>(classes)));
    std::vector<int32_t> cls = {main_class}, count = {1 + static_cast<int32_t>(rng.below(30))};
    const auto other = static_cast<int32_t>(rng.below(static_cast<uint64_t>(classes)));
    if (other != main_class) {
      cls.push_back(other);
      count.push_back(1 + static_cast<int32_t>(rng.below(10)));
    }
    items.add_item(cls, count);
  }
  return items;
}

PartitionOptions equal_parts(int parts, Balance balance) {
  PartitionOptions options;
  options.weights.assign(static_cast<std::size_t>(parts), 1.0 / parts);
  options.balance = balance;
  options.size_weight = 3;
  return options;
}

TEST(PartitionItems, EveryItemGoesToOnePartAndNoPartIsEmpty) {
  ItemTable items = random_items(12, 4, 1);
  for (Balance balance : {Balance::sizes_first, Balance::classes_and_sizes}) {
    std::vector<int32_t> parts = partition_items(items, equal_parts(12, balance));
    ASSERT_EQ(parts.size(), 12u);
    std::vector<int32_t> sorted = parts;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int32_t> expected(12);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(sorted, expected);  // 12 items, 12 parts: one each
  }
}

TEST(PartitionItems, LocalSearchNeverMakesTheObjectiveWorse) {
  for (uint64_t seed = 0; seed < 5; ++seed) {
    ItemTable items = random_items(300, 12, seed);
    PartitionStats stats;
    partition_items(items, equal_parts(5, Balance::classes_and_sizes), &stats);
    EXPECT_LT(stats.final_objective, stats.greedy_objective);  // it also finds improvements
    double previous = stats.greedy_objective;
    for (double objective : stats.round_objective) {
      EXPECT_LE(objective, previous + 1e-6);
      previous = objective;
    }
    EXPECT_GT(stats.moves + stats.swaps, 0u);

    PartitionStats sized;
    partition_items(items, equal_parts(5, Balance::sizes_first), &sized);
    EXPECT_LE(sized.final_objective, sized.greedy_objective + 1e-9);
    previous = sized.greedy_objective;
    for (double objective : sized.round_objective) {
      EXPECT_LE(objective, previous + 1e-6);
      previous = objective;
    }
  }
}

TEST(PartitionItems, UnequalWeightsGiveProportionalParts) {
  ItemTable items = random_items(400, 6, 3);
  const int64_t total = std::accumulate(items.size.begin(), items.size.end(), int64_t{0});
  PartitionOptions options;
  options.weights = {0.1, 0.9};
  options.size_weight = 3;
  std::vector<int32_t> parts = partition_items(items, options);
  int64_t small = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i] == 0) small += items.size[i];
  }
  // Items are at most 40 samples; the small part lands within one item of 10%.
  EXPECT_NEAR(static_cast<double>(small), 0.1 * static_cast<double>(total), 40.0);
}

TEST(PartitionItems, DeterministicForASeed) {
  ItemTable items = random_items(200, 5, 4);
  PartitionOptions options = equal_parts(4, Balance::classes_and_sizes);
  std::vector<int32_t> a = partition_items(items, options);
  EXPECT_EQ(a, partition_items(items, options));
  options.seed = 1;
  EXPECT_NE(a, partition_items(items, options));
}

TEST(PartitionItems, RejectsInvalidInput) {
  ItemTable items = random_items(3, 2, 5);
  EXPECT_THROW(partition_items(items, equal_parts(4, Balance::sizes_first)), Error);
  PartitionOptions bad;
  bad.weights = {0.5, 0.6};
  EXPECT_THROW(partition_items(items, bad), Error);
  bad.weights = {1.0, 0.0};
  EXPECT_THROW(partition_items(items, bad), Error);
  ItemTable table;
  table.num_classes = 2;
  EXPECT_THROW(table.add_item(std::vector<int32_t>{2}, std::vector<int32_t>{1}), Error);
  EXPECT_THROW(table.add_item(std::vector<int32_t>{0}, std::vector<int32_t>{0}), Error);
}

}  // namespace
}  // namespace imgpack
