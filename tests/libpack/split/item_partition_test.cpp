#include "split/item_partition.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "imgpack/error.hpp"
#include "imgpack/split.hpp"
#include "random.hpp"
#include "test_support.hpp"

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

// StratifiedGroupKFold's criterion: the mean over classes of the standard
// deviation over parts of the class's share in each part.
double class_share_criterion(const ItemTable& items, const std::vector<int32_t>& parts, int k) {
  const auto classes = static_cast<std::size_t>(items.num_classes);
  std::vector<double> count(classes * static_cast<std::size_t>(k), 0), total(classes, 0);
  for (std::size_t i = 0; i < items.num_items(); ++i) {
    for (std::size_t e = items.first[i]; e < items.first[i + 1]; ++e) {
      const auto c = static_cast<std::size_t>(items.cls[e]);
      count[c * static_cast<std::size_t>(k) + static_cast<std::size_t>(parts[i])] += items.count[e];
      total[c] += items.count[e];
    }
  }
  double sum = 0;
  int present = 0;
  for (std::size_t c = 0; c < classes; ++c) {
    if (total[c] == 0) continue;
    ++present;
    double var = 0;
    for (int p = 0; p < k; ++p) {
      const double d =
          count[c * static_cast<std::size_t>(k) + static_cast<std::size_t>(p)] / total[c] - 1.0 / k;
      var += d * d / k;
    }
    sum += std::sqrt(var);
  }
  return sum / present;
}

int64_t size_spread(const ItemTable& items, const std::vector<int32_t>& parts, int k) {
  std::vector<int64_t> sizes(static_cast<std::size_t>(k), 0);
  for (std::size_t i = 0; i < parts.size(); ++i)
    sizes[static_cast<std::size_t>(parts[i])] += items.size[i];
  return *std::max_element(sizes.begin(), sizes.end()) -
         *std::min_element(sizes.begin(), sizes.end());
}

TEST(PartitionItems, EveryItemGoesToOnePartAndNoPartIsEmpty) {
  ItemTable items = random_items(12, 4, 1);
  for (Balance balance :
       {Balance::sizes_first, Balance::classes_and_sizes, Balance::class_shares}) {
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
  // One of the five layouts under a sanitizer (the same code on other random
  // items; the Release run checks all five).
  const uint64_t layouts = test::kSanitizer ? 1 : 5;
  for (uint64_t seed = 0; seed < layouts; ++seed) {
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

    PartitionStats shares;
    partition_items(items, equal_parts(5, Balance::class_shares), &shares);
    EXPECT_LE(shares.final_objective, shares.greedy_objective);
    previous = shares.greedy_objective;
    for (double objective : shares.round_objective) {
      EXPECT_LE(objective, previous + 1e-12);
      previous = objective;
    }
  }
}

TEST(PartitionItems, ClassSharesNeverWorseThanTheReference) {
  // Whatever the reference (poor, or already the search's own result), the
  // result is no worse on its criterion and no less even in part sizes. Two
  // of the six seeds under a sanitizer (test::sweep_step).
  for (uint64_t seed = 0; seed < 6; seed += test::sweep_step(3)) {
    ItemTable items = random_items(120, 6, seed);
    PartitionOptions options = equal_parts(4, Balance::class_shares);
    options.seed = seed;
    std::vector<int32_t> dealt(items.num_items());
    for (std::size_t i = 0; i < dealt.size(); ++i) dealt[i] = static_cast<int32_t>(i % 4);
    for (const std::vector<int32_t>& reference : {dealt, partition_items(items, options)}) {
      options.reference = reference;
      PartitionStats stats;
      const std::vector<int32_t> parts = partition_items(items, options, &stats);
      const double limit = class_share_criterion(items, reference, 4);
      EXPECT_LE(class_share_criterion(items, parts, 4), limit * (1 + 1e-11)) << "seed " << seed;
      EXPECT_LE(size_spread(items, parts, 4), size_spread(items, reference, 4)) << "seed " << seed;
      EXPECT_EQ(stats.reference_spread, size_spread(items, reference, 4));
      EXPECT_EQ(stats.spread, size_spread(items, parts, 4));
    }
    // From the poor reference, the search finds far better.
    options.reference = dealt;
    EXPECT_LT(class_share_criterion(items, partition_items(items, options), 4),
              0.5 * class_share_criterion(items, dealt, 4));
  }
}

TEST(PartitionItems, SizesFirstNeverSpreadsMoreThanTheReference) {
  for (uint64_t seed = 0; seed < 6; ++seed) {
    ItemTable items = random_items(60, 5, seed);
    PartitionOptions options = equal_parts(5, Balance::sizes_first);
    // Largest first into the lightest part, as GroupKFold does.
    std::vector<int32_t> order(items.num_items());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return items.size[static_cast<std::size_t>(a)] > items.size[static_cast<std::size_t>(b)];
    });
    std::vector<int64_t> load(5, 0);
    options.reference.assign(items.num_items(), 0);
    for (int32_t i : order) {
      const auto p = std::min_element(load.begin(), load.end()) - load.begin();
      options.reference[static_cast<std::size_t>(i)] = static_cast<int32_t>(p);
      load[static_cast<std::size_t>(p)] += items.size[static_cast<std::size_t>(i)];
    }
    const std::vector<int32_t> parts = partition_items(items, options);
    EXPECT_LE(size_spread(items, parts, 5), size_spread(items, options.reference, 5));
  }
}

TEST(PartitionItems, NoWorkBudgetLeavesTheGreedysPartition) {
  ItemTable items = random_items(300, 8, 7);
  PartitionOptions options = equal_parts(5, Balance::classes_and_sizes);
  options.work_budget = 0;
  PartitionStats stats;
  partition_items(items, options, &stats);
  EXPECT_EQ(stats.moves + stats.swaps, 0u);
  EXPECT_EQ(stats.final_objective, stats.greedy_objective);
  options.work_budget = 5'000;  // part of one round
  partition_items(items, options, &stats);
  EXPECT_GT(stats.moves + stats.swaps, 0u);
  EXPECT_EQ(stats.rounds, 1);
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
  bad.weights = {0.25, 0.75};
  bad.balance = Balance::class_shares;
  EXPECT_THROW(partition_items(items, bad), Error);  // needs equal parts
  PartitionOptions two = equal_parts(2, Balance::class_shares);
  two.reference = {0, 1};  // three items
  EXPECT_THROW(partition_items(items, two), Error);
  two.reference = {0, 1, 2};  // part 2 of two
  EXPECT_THROW(partition_items(items, two), Error);
  ItemTable table;
  table.num_classes = 2;
  EXPECT_THROW(table.add_item(std::vector<int32_t>{2}, std::vector<int32_t>{1}), Error);
  EXPECT_THROW(table.add_item(std::vector<int32_t>{0}, std::vector<int32_t>{0}), Error);
}

// Mostly groups of one image (where each part holds tens of thousands of
// items of the same size) and a few larger ones: every group stays whole and
// the group k-fold's sizes are as even as GroupKFold's greedy makes them.
TEST(PartitionItems, ManyGroupsOfOneImageStayWholeAndEven) {
  constexpr int32_t kSingles = 30'000, kShared = 10'000, kFolds = 5;
  std::vector<int32_t> labels, groups;
  CounterRng rng(5, 0);
  for (int32_t i = 0; i < kSingles + kShared; ++i) {
    labels.push_back(static_cast<int32_t>(rng.below(10)));
    groups.push_back(i < kSingles ? 3 * i : 1'000'000 + static_cast<int32_t>(rng.below(400)));
  }
  std::map<int32_t, int64_t> group_size;
  for (int32_t g : groups) ++group_size[g];
  std::vector<int64_t> sizes;
  sizes.reserve(group_size.size());
  for (auto [g, n] : group_size) sizes.push_back(n);
  std::sort(sizes.rbegin(), sizes.rend());
  std::vector<int64_t> greedy(kFolds, 0);
  for (int64_t n : sizes) *std::min_element(greedy.begin(), greedy.end()) += n;
  const int64_t greedy_spread = *std::max_element(greedy.begin(), greedy.end()) -
                                *std::min_element(greedy.begin(), greedy.end());

  for (SplitKind kind : {SplitKind::group, SplitKind::stratified_group, SplitKind::holdout}) {
    SplitSpec spec;
    spec.kind = kind;
    spec.folds = kind == SplitKind::holdout ? 5 : kFolds;
    spec.val_fraction = kind == SplitKind::holdout ? 0.2 : 0;
    spec.test_fraction = kind == SplitKind::holdout ? 0.1 : 0;
    const std::vector<int16_t> assign = compute_split(labels, groups, spec).assign;
    ASSERT_EQ(assign.size(), labels.size());
    std::map<int32_t, int16_t> part_of;
    std::vector<int64_t> part_size(kFolds + 1, 0);
    for (std::size_t i = 0; i < assign.size(); ++i) {
      const auto at = part_of.emplace(groups[i], assign[i]).first;
      ASSERT_EQ(at->second, assign[i]) << "group " << groups[i] << " is split";
      ++part_size[static_cast<std::size_t>(assign[i] + 1)];
    }
    if (kind == SplitKind::holdout) {
      EXPECT_GT(part_size[0], 0);  // test
      EXPECT_GT(part_size[1], 0);  // validation
      EXPECT_GT(part_size[2], part_size[1]);
      continue;
    }
    EXPECT_EQ(part_size[0], 0);
    const auto [lo, hi] = std::minmax_element(part_size.begin() + 1, part_size.end());
    EXPECT_GT(*lo, 0);
    if (kind == SplitKind::group) {
      EXPECT_LE(*hi - *lo, greedy_spread);
    }
  }
}

}  // namespace
}  // namespace imgpack
