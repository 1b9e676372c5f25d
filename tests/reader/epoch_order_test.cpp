#include "imgpack/epoch_order.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "imgpack/error.hpp"
#include "imgpack/selection.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

using test::SyntheticOptions;
using test::TempDir;

std::vector<int64_t> all_samples(const Dataset& dataset) {
  return select_samples(dataset.index(), SelectionOptions{});
}

// The record of (sample, variant), from the index alone.
uint64_t record_of(const Dataset& dataset, int64_t sample, uint16_t variant) {
  const DatasetIndex& index = dataset.index();
  for (uint64_t r = 0; r < index.num_records(); ++r) {
    if (index.records.sample[r] == sample && index.records.variant[r] == variant) return r;
  }
  ADD_FAILURE() << "no record for sample " << sample << " variant " << variant;
  return 0;
}

class EpochOrderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SyntheticOptions options;
    options.samples = 53;
    options.variants = 1;
    options.records_per_shard = 8;  // 7 shards
    test::write_synthetic_dataset(dir_.path(), options);
    dataset_ = Dataset::open(dir_.path());
  }
  EpochOrder make(OrderOptions options, VariantPolicy policy = VariantPolicy::clean) {
    return EpochOrder(dataset_, all_samples(dataset_), policy, options);
  }
  TempDir dir_;
  Dataset dataset_;
};

TEST_F(EpochOrderTest, SequentialIsStorageOrder) {
  EpochOrder order = make({.mode = OrderMode::sequential});
  std::span<const uint64_t> storage = dataset_.storage_order();
  EXPECT_EQ(order.global_order(0), std::vector<uint64_t>(storage.begin(), storage.end()));
  EXPECT_EQ(order.global_order(5), order.global_order(0));
}

TEST_F(EpochOrderTest, RandomIsASeededPermutationThatChangesPerEpoch) {
  EpochOrder order = make({.mode = OrderMode::random, .seed = 11});
  std::vector<uint64_t> e0 = order.global_order(0);
  std::vector<uint64_t> e1 = order.global_order(1);
  std::vector<uint64_t> sorted = e0;
  std::sort(sorted.begin(), sorted.end());
  std::vector<uint64_t> expected(dataset_.num_records());
  for (uint64_t r = 0; r < expected.size(); ++r) expected[r] = r;
  EXPECT_EQ(sorted, expected);
  EXPECT_NE(e0, e1);
  EXPECT_EQ(make({.mode = OrderMode::random, .seed = 11}).global_order(0), e0);  // rerun
  EXPECT_NE(make({.mode = OrderMode::random, .seed = 12}).global_order(0), e0);  // other seed
}

TEST_F(EpochOrderTest, ShardWindowReadsOneWindowOfShardsAtATime) {
  const uint32_t window = 2;
  EpochOrder order = make({.mode = OrderMode::shard_window, .seed = 3, .window_shards = window});
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<uint64_t> records = order.global_order(epoch);
    ASSERT_EQ(records.size(), dataset_.num_records());
    EXPECT_EQ(std::set<uint64_t>(records.begin(), records.end()).size(), records.size());
    // Split the sequence where it enters a shard not in the current window:
    // every window has at most `window` shards, and no shard appears in two windows.
    std::set<uint32_t> done, current;
    for (uint64_t r : records) {
      uint32_t shard = dataset_.record_shard(r);
      if (!current.count(shard)) {
        ASSERT_FALSE(done.count(shard)) << "shard " << shard << " read in two windows";
        if (current.size() == window) {
          done.insert(current.begin(), current.end());
          current.clear();
        }
        current.insert(shard);
      }
    }
  }
  EXPECT_NE(order.global_order(0), order.global_order(1));
  // Within a window the records are shuffled, not left in storage order.
  std::vector<uint64_t> e0 = order.global_order(0);
  EXPECT_FALSE(std::is_sorted(e0.begin(), e0.begin() + 16, [&](uint64_t a, uint64_t b) {
    return dataset_.storage_position(a) < dataset_.storage_position(b);
  }));
}

TEST_F(EpochOrderTest, RanksTakeEveryWthPositionWithPadding) {
  const uint32_t world = 4;  // 53 records: 14 per rank, 3 padding entries
  std::vector<uint64_t> global = make({.seed = 5, .world_size = world}).global_order(2);
  std::multiset<uint64_t> delivered;
  std::size_t padding = 0;
  for (uint32_t rank = 0; rank < world; ++rank) {
    EpochOrder order = make({.seed = 5, .rank = rank, .world_size = world});
    EpochPlan plan = order.plan(2);
    ASSERT_EQ(plan.records.size(), 14u);
    EXPECT_EQ(order.rank_size(), 14u);
    for (std::size_t i = 0; i < plan.records.size(); ++i) {
      const std::size_t position = rank + i * world;
      EXPECT_EQ(plan.records[i], global[position % global.size()]);
      if (position < global.size()) delivered.insert(plan.records[i]);
    }
    // Padding is the tail of the rank's plan.
    EXPECT_EQ(plan.padding, rank == 0 ? 0u : 1u);
    padding += plan.padding;
  }
  EXPECT_EQ(padding, 3u);
  // Without the padding, ranks are disjoint and complete.
  EXPECT_EQ(delivered, std::multiset<uint64_t>(global.begin(), global.end()));
}

TEST_F(EpochOrderTest, RanksDropTheRemainder) {
  const uint32_t world = 5;  // 53 records: 10 per rank, 3 read by no rank
  std::set<uint64_t> seen;
  for (uint32_t rank = 0; rank < world; ++rank) {
    EpochPlan plan =
        make({.seed = 5, .rank = rank, .world_size = world, .rank_policy = RankPolicy::drop})
            .plan(0);
    ASSERT_EQ(plan.records.size(), 10u);
    EXPECT_EQ(plan.padding, 0u);
    for (uint64_t r : plan.records) EXPECT_TRUE(seen.insert(r).second) << "record read twice";
  }
  EXPECT_EQ(seen.size(), 50u);
  std::vector<uint64_t> global = make({.seed = 5}).global_order(0);
  EXPECT_EQ(seen, std::set<uint64_t>(global.begin(), global.begin() + 50));
}

TEST_F(EpochOrderTest, MoreRanksThanRecords) {
  SyntheticOptions options;
  options.samples = 3;
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), options);
  Dataset small = Dataset::open(dir.path());
  for (uint32_t rank = 0; rank < 5; ++rank) {
    EpochOrder order(small, all_samples(small), VariantPolicy::clean,
                     {.rank = rank, .world_size = 5});
    EpochPlan plan = order.plan(0);
    ASSERT_EQ(plan.records.size(), 1u);
    EXPECT_EQ(plan.padding, rank < 3 ? 0u : 1u);
  }
}

TEST_F(EpochOrderTest, RejectsBadOptions) {
  EXPECT_THROW(make({.rank = 2, .world_size = 2}), UsageError);
  EXPECT_THROW(make({.world_size = 0}), UsageError);
  EXPECT_THROW(make({.mode = OrderMode::shard_window, .window_shards = 0}), UsageError);
}

TEST_F(EpochOrderTest, ParsesModeNames) {
  EXPECT_EQ(parse_order_mode("shard-window"), OrderMode::shard_window);
  EXPECT_EQ(order_mode_name(parse_order_mode("random")), "random");
  EXPECT_THROW(parse_order_mode("shuffle"), UsageError);
}

class VariantPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SyntheticOptions options;
    options.samples = 20;
    options.variants = 4;  // clean + 3 augmented
    test::write_synthetic_dataset(dir_.path(), options);
    dataset_ = Dataset::open(dir_.path());
  }
  TempDir dir_;
  Dataset dataset_;
};

TEST_F(VariantPolicyTest, CleanReadsVariantZero) {
  std::vector<uint64_t> records =
      epoch_records(dataset_, all_samples(dataset_), VariantPolicy::clean, 1, 3);
  ASSERT_EQ(records.size(), 20u);
  std::set<int64_t> samples;
  for (uint64_t r : records) {
    EXPECT_EQ(dataset_.record_variant(r), 0);
    samples.insert(dataset_.record_sample(r));
    EXPECT_EQ(r, record_of(dataset_, dataset_.record_sample(r), 0));
  }
  EXPECT_EQ(samples.size(), 20u);
}

TEST_F(VariantPolicyTest, RotateReadsEachAugmentedVariantOnceEveryKMinusOneEpochs) {
  std::map<int64_t, std::multiset<uint16_t>> seen;
  std::set<std::vector<uint64_t>> distinct_epochs;
  for (uint64_t epoch = 10; epoch < 13; ++epoch) {
    std::vector<uint64_t> records =
        epoch_records(dataset_, all_samples(dataset_), VariantPolicy::rotate, 9, epoch);
    ASSERT_EQ(records.size(), 20u);
    std::set<int64_t> samples;
    for (uint64_t r : records) {
      EXPECT_NE(dataset_.record_variant(r), 0) << "train read a clean record";
      EXPECT_TRUE(samples.insert(dataset_.record_sample(r)).second) << "sample twice in an epoch";
      seen[dataset_.record_sample(r)].insert(dataset_.record_variant(r));
    }
    distinct_epochs.insert(records);
  }
  ASSERT_EQ(seen.size(), 20u);
  for (const auto& [sample, variants] : seen) {
    EXPECT_EQ(variants, (std::multiset<uint16_t>{1, 2, 3})) << "sample " << sample;
  }
  EXPECT_EQ(distinct_epochs.size(), 3u);
  // Samples do not all move in lock step: in one epoch several variants occur.
  std::set<uint16_t> variants_in_epoch;
  for (uint64_t r : epoch_records(dataset_, all_samples(dataset_), VariantPolicy::rotate, 9, 0)) {
    variants_in_epoch.insert(dataset_.record_variant(r));
  }
  EXPECT_GT(variants_in_epoch.size(), 1u);
}

TEST_F(VariantPolicyTest, AllReadsEveryVariantAsItsOwnSample) {
  std::vector<int64_t> samples = {2, 5, 7};
  std::vector<uint64_t> records = epoch_records(dataset_, samples, VariantPolicy::all, 1, 0);
  std::set<uint64_t> expected;
  for (int64_t s : samples) {
    for (uint16_t v = 0; v < 4; ++v) expected.insert(record_of(dataset_, s, v));
  }
  EXPECT_EQ(std::set<uint64_t>(records.begin(), records.end()), expected);
  EXPECT_EQ(records.size(), 12u);
  EpochOrder order(dataset_, samples, VariantPolicy::all, {});
  EXPECT_EQ(order.epoch_size(), 12u);
}

TEST_F(VariantPolicyTest, AutomaticRotatesForTrainOnly) {
  EXPECT_EQ(resolve_variant_policy(VariantPolicy::automatic, Role::train), VariantPolicy::rotate);
  EXPECT_EQ(resolve_variant_policy(VariantPolicy::automatic, Role::val), VariantPolicy::clean);
  EXPECT_EQ(resolve_variant_policy(VariantPolicy::automatic, Role::test), VariantPolicy::clean);
  EXPECT_EQ(resolve_variant_policy(VariantPolicy::automatic, Role::all), VariantPolicy::clean);
  EXPECT_EQ(resolve_variant_policy(VariantPolicy::all, Role::val), VariantPolicy::all);
}

TEST(VariantPolicy, RotateFallsBackToTheCleanRecordWithoutAugmentedOnes) {
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), SyntheticOptions{});  // 1 variant
  Dataset dataset = Dataset::open(dir.path());
  std::vector<uint64_t> records =
      epoch_records(dataset, all_samples(dataset), VariantPolicy::rotate, 1, 4);
  EXPECT_EQ(records.size(), dataset.num_records());
}

}  // namespace
}  // namespace imgpack
