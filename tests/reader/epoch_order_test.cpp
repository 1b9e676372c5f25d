#include "imgpack/epoch_order.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>

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
    return EpochOrder(dataset_, all_samples(dataset_), policy, std::move(options));
  }
  TempDir dir_;
  Dataset dataset_;
};

TEST_F(EpochOrderTest, SequentialIsStorageOrder) {
  EpochOrder order = make({.mode = OrderMode::sequential});
  const RecordIds storage = dataset_.storage_order();
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

// select_samples() leaves removed samples out; samples chosen by hand may
// not name one either.
TEST_F(EpochOrderTest, RejectsARemovedSample) {
  test::remove_samples(dir_.path(), {4});
  const Dataset removed = Dataset::open(dir_.path());
  const std::vector<int64_t> named = {3, 4, 5};
  try {
    const EpochOrder order(removed, named, VariantPolicy::clean, {});
    ADD_FAILURE() << "an order of " << order.epoch_size() << " over a removed sample";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("sample 4"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("was removed"), std::string::npos) << e.what();
  }
  EXPECT_EQ(EpochOrder(removed, all_samples(removed), VariantPolicy::clean, {}).epoch_size(), 52u);
  // The handle opened before the removal keeps its generation: sample 4 is in it.
  EXPECT_EQ(EpochOrder(dataset_, named, VariantPolicy::clean, {}).epoch_size(), 3u);
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

// A sample id outside the dataset is refused, as EpochOrder refuses it (it
// read past the sample table).
TEST_F(VariantPolicyTest, SamplesOutsideTheDatasetAreUsageErrors) {
  for (const int64_t outside : {int64_t{-1}, int64_t{20}, int64_t{1000000}}) {
    const std::vector<int64_t> samples = {0, outside};
    try {
      epoch_records(dataset_, samples, VariantPolicy::all, 0, 0);
      ADD_FAILURE() << outside << " was taken";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()),
                "sample " + std::to_string(outside) + " is not in the dataset (it has 20 samples)");
    }
  }
}

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

// --- Sampling ------------------------------------------------------------------

// A count of `n` draws of probability `p` lies within `sigmas` standard
// deviations of its mean: the binomial bound, not a tuned constant.
void expect_binomial(uint64_t count, uint64_t n, double p, const std::string& what,
                     double sigmas = 5) {
  const double mean = static_cast<double>(n) * p;
  const double sd = std::sqrt(static_cast<double>(n) * p * (1 - p));
  EXPECT_GE(static_cast<double>(count), mean - sigmas * sd) << what << ": " << count << " of " << n;
  EXPECT_LE(static_cast<double>(count), mean + sigmas * sd) << what << ": " << count << " of " << n;
}

// 200 samples in three classes of 89%, 10% and 1% (178, 20 and 2 samples),
// interleaved in sample order, with 2 variants each.
class SamplingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SyntheticOptions options;
    options.samples = 200;
    options.variants = 2;
    options.classes = 3;
    options.records_per_shard = 64;
    for (uint32_t s = 0; s < options.samples; ++s) {
      options.labels.push_back(s % 100 == 7 ? 2 : s % 10 == 3 ? 1 : 0);
    }
    test::write_synthetic_dataset(dir_.path(), options);
    dataset_ = Dataset::open(dir_.path());
  }
  EpochOrder make(OrderOptions options, VariantPolicy policy = VariantPolicy::clean) {
    return EpochOrder(dataset_, all_samples(dataset_), policy, std::move(options));
  }
  TempDir dir_;
  Dataset dataset_;
};

TEST_F(SamplingTest, TheDatasetIsImbalanced) {
  std::map<int32_t, int> counts;
  for (int32_t label : dataset_.index().sample_label) ++counts[label];
  EXPECT_EQ(counts, (std::map<int32_t, int>{{0, 178}, {1, 20}, {2, 2}}));
}

TEST_F(SamplingTest, ClassBalancedDrawsEveryClassEquallyOften) {
  for (uint64_t seed : {0u, 1u, 77u}) {
    EpochOrder order = make({.seed = seed, .sampling = Sampling::class_balanced});
    EXPECT_EQ(order.epoch_size(), 200u);  // default: the selection's size
    std::map<int32_t, uint64_t> total;
    std::map<int64_t, uint64_t> rare_samples;
    const uint64_t epochs = 10;
    for (uint64_t epoch = 0; epoch < epochs; ++epoch) {
      std::vector<uint64_t> drawn = order.global_order(epoch);
      ASSERT_EQ(drawn.size(), 200u);
      std::map<int32_t, uint64_t> counts;
      for (uint64_t r : drawn) {
        EXPECT_EQ(dataset_.record_variant(r), 0);  // the variant policy still applies
        ++counts[dataset_.record_label(r)];
        if (dataset_.record_label(r) == 2) ++rare_samples[dataset_.record_sample(r)];
      }
      for (int32_t c = 0; c < 3; ++c) {
        expect_binomial(counts[c], 200, 1.0 / 3,
                        "seed " + std::to_string(seed) + " epoch " + std::to_string(epoch) +
                            " class " + std::to_string(c));
        total[c] += counts[c];
      }
    }
    for (int32_t c = 0; c < 3; ++c) {
      expect_binomial(total[c], 200 * epochs, 1.0 / 3, "all epochs, class " + std::to_string(c));
    }
    // Within a class, records are equally likely: the two rare samples share
    // their class's third.
    ASSERT_EQ(rare_samples.size(), 2u);
    for (const auto& [sample, count] : rare_samples) {
      expect_binomial(count, 200 * epochs, 1.0 / 6, "rare sample " + std::to_string(sample));
    }
  }
}

TEST_F(SamplingTest, UniformReadsTheRareClassOncePerSample) {
  // The contrast the balanced sampler exists for.
  std::vector<uint64_t> drawn = make({.seed = 1}).global_order(0);
  EXPECT_EQ(std::count_if(drawn.begin(), drawn.end(),
                          [&](uint64_t r) { return dataset_.record_label(r) == 2; }),
            2);
}

TEST_F(SamplingTest, ClassBalancedWithEveryVariantAndARotation) {
  // Classes stay equally likely whatever records the variant policy offers.
  for (VariantPolicy policy : {VariantPolicy::all, VariantPolicy::rotate}) {
    EpochOrder order = make({.seed = 3, .sampling = Sampling::class_balanced}, policy);
    std::map<int32_t, uint64_t> counts;
    for (uint64_t epoch = 0; epoch < 4; ++epoch) {
      for (uint64_t r : order.global_order(epoch)) ++counts[dataset_.record_label(r)];
    }
    const uint64_t n = order.epoch_size() * 4;
    EXPECT_EQ(order.epoch_size(), policy == VariantPolicy::all ? 400u : 200u);
    for (int32_t c = 0; c < 3; ++c) {
      expect_binomial(counts[c], n, 1.0 / 3,
                      std::string(variant_policy_name(policy)) + " class " + std::to_string(c));
    }
  }
}

TEST_F(SamplingTest, WeightedDrawsInProportionToTheWeights) {
  // Weight 3 for samples s % 4 == 0 (50 of them), 1 for s % 4 == 1 (50), 0 for the rest.
  std::vector<double> weights(200);
  for (std::size_t s = 0; s < weights.size(); ++s) weights[s] = s % 4 == 0 ? 3 : s % 4 == 1 ? 1 : 0;
  EpochOrder order = make({.seed = 8, .sampling = Sampling::weighted, .weights = weights});
  uint64_t heavy = 0, n = 0;
  for (uint64_t epoch = 0; epoch < 10; ++epoch) {
    for (uint64_t r : order.global_order(epoch)) {
      const int64_t s = dataset_.record_sample(r);
      ASSERT_NE(weights[static_cast<std::size_t>(s)], 0) << "drew sample " << s << " of weight 0";
      heavy += s % 4 == 0 ? 1 : 0;
      ++n;
    }
  }
  EXPECT_EQ(n, 2000u);
  expect_binomial(heavy, n, 0.75, "weight-3 samples");
}

// Weights each finite but whose sum overflows a double draw in their
// proportions too (they once drew the last sample only), and the same draws
// as those weights scaled down to a sum that fits.
TEST_F(SamplingTest, WeightsWhoseSumOverflowsDrawInTheirProportions) {
  std::vector<double> huge(200), small(200);
  for (std::size_t s = 0; s < huge.size(); ++s) {
    huge[s] = s % 4 == 0 ? 1.5e308 : s % 4 == 1 ? 0.5e308 : 0;
    small[s] = huge[s] / 1.5e308;
  }
  const EpochOrder big = make({.seed = 8, .sampling = Sampling::weighted, .weights = huge});
  const EpochOrder fits = make({.seed = 8, .sampling = Sampling::weighted, .weights = small});
  uint64_t heavy = 0, n = 0;
  std::set<int64_t> drawn;
  for (uint64_t epoch = 0; epoch < 10; ++epoch) {
    const std::vector<uint64_t> order = big.global_order(epoch);
    EXPECT_EQ(order, fits.global_order(epoch)) << epoch;
    for (uint64_t r : order) {
      const int64_t s = dataset_.record_sample(r);
      ASSERT_NE(huge[static_cast<std::size_t>(s)], 0) << "drew sample " << s << " of weight 0";
      drawn.insert(s);
      heavy += s % 4 == 0 ? 1 : 0;
      ++n;
    }
  }
  EXPECT_GT(drawn.size(), 90u);  // of the 100 with a weight
  expect_binomial(heavy, n, 0.75, "weight-1.5e308 samples");
}

TEST_F(SamplingTest, EpochLengthSetsTheDrawsPerEpoch) {
  EpochOrder order =
      make({.seed = 2, .world_size = 3, .sampling = Sampling::class_balanced, .epoch_length = 50});
  EXPECT_EQ(order.epoch_size(), 50u);
  EXPECT_EQ(order.global_order(0).size(), 50u);
  EXPECT_EQ(order.rank_size(), 17u);  // ceil(50 / 3), padded
}

TEST_F(SamplingTest, WeightedEpochsArePureFunctionsOfSeedEpochRankAndWorld) {
  const OrderOptions base{.seed = 21, .sampling = Sampling::class_balanced};
  std::vector<uint64_t> e0 = make(base).global_order(0);
  EXPECT_EQ(make(base).global_order(0), e0);  // rerun
  EXPECT_NE(make(base).global_order(1), e0);  // another epoch
  OrderOptions other = base;
  other.seed = 22;
  EXPECT_NE(make(other).global_order(0), e0);  // another seed
  // Ranks take every W-th draw of the one global order.
  const uint32_t world = 3;
  for (uint32_t rank = 0; rank < world; ++rank) {
    OrderOptions o = base;
    o.rank = rank;
    o.world_size = world;
    EpochOrder order = make(o);
    EXPECT_EQ(order.global_order(0), e0);
    EpochPlan plan = order.plan(0);
    ASSERT_EQ(plan.records.size(), 67u);
    for (std::size_t i = 0; i < plan.records.size(); ++i) {
      EXPECT_EQ(plan.records[i], e0[(rank + i * world) % e0.size()]);
    }
    EXPECT_EQ(plan.padding, rank < 2 ? 0u : 1u);  // 200 = 66 * 3 + 2
  }
}

TEST_F(SamplingTest, RejectsSamplingThatCannotWork) {
  auto message = [&](OrderOptions o) -> std::string {
    try {
      make(std::move(o));
    } catch (const UsageError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_NE(message({.mode = OrderMode::sequential, .sampling = Sampling::class_balanced})
                .find("needs the random order"),
            std::string::npos);
  EXPECT_NE(
      message({.sampling = Sampling::weighted, .weights = {1, 2}}).find("one weight per sample"),
      std::string::npos);
  std::vector<double> weights(200, 1);
  weights[17] = -1;
  EXPECT_NE(message({.sampling = Sampling::weighted, .weights = weights}).find("sample 17"),
            std::string::npos);
  weights[17] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(message({.sampling = Sampling::weighted, .weights = weights}).find("finite"),
            std::string::npos);
  EXPECT_NE(message({.sampling = Sampling::weighted, .weights = std::vector<double>(200, 0)})
                .find("positive weight"),
            std::string::npos);
  EXPECT_NE(message({.weights = std::vector<double>(200, 1)}).find("sampling is uniform"),
            std::string::npos);
  EXPECT_NE(message({.epoch_length = 5}).find("epoch_length"), std::string::npos);
  // Weights outside the selection do not matter: only the selected samples need a positive one.
  std::vector<double> only_first(200, 0);
  only_first[0] = 1;
  EXPECT_EQ(message({.sampling = Sampling::weighted, .weights = only_first}), "(accepted)");
  EXPECT_THROW(EpochOrder(dataset_, {1, 2, 3}, VariantPolicy::clean,
                          {.sampling = Sampling::weighted, .weights = only_first}),
               UsageError);
}

TEST(Sampling, ClassBalancedNeedsLabels) {
  SyntheticOptions options;
  options.samples = 10;
  options.labels = {0, 1, 0, 1, -1, 0, 1, 0, 1, 0};
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), options);
  Dataset dataset = Dataset::open(dir.path());
  std::string message = "(accepted)";
  try {
    const EpochOrder order(dataset, all_samples(dataset), VariantPolicy::clean,
                           {.sampling = Sampling::class_balanced});
  } catch (const UsageError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("sample 4"), std::string::npos) << message;
  // Without the unlabeled sample it works.
  EXPECT_NO_THROW(EpochOrder(dataset, {0, 1, 2, 3, 5}, VariantPolicy::clean,
                             {.sampling = Sampling::class_balanced}));
}

TEST(Sampling, Names) {
  for (Sampling sampling : {Sampling::uniform, Sampling::class_balanced, Sampling::weighted}) {
    EXPECT_EQ(parse_sampling(sampling_name(sampling)), sampling);
  }
  EXPECT_EQ(sampling_name(Sampling::class_balanced), "class-balanced");
  EXPECT_THROW(parse_sampling("balanced"), UsageError);
}

}  // namespace
}  // namespace imgpack
