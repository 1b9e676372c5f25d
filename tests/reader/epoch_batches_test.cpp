#include "epoch_batches.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace imgpack::detail {
namespace {

EpochPlan plan_of(std::size_t records, std::size_t padding = 0) {
  EpochPlan plan;
  plan.epoch = 3;
  plan.records.resize(records);
  std::iota(plan.records.begin(), plan.records.end(), uint64_t{100});
  plan.padding = padding;
  return plan;
}

TEST(EpochBatches, CountsPerLastBatchPolicy) {
  // 10 records in batches of 4: 2 full batches and 2 left over.
  EXPECT_EQ(batches_per_epoch(10, 4, LastBatch::drop), 2u);
  EXPECT_EQ(batches_per_epoch(10, 4, LastBatch::partial), 3u);
  EXPECT_EQ(batches_per_epoch(10, 4, LastBatch::pad), 3u);
  EXPECT_EQ(images_per_epoch(10, 4, LastBatch::drop), 8u);
  EXPECT_EQ(images_per_epoch(10, 4, LastBatch::partial), 10u);
  EXPECT_EQ(images_per_epoch(10, 4, LastBatch::pad), 12u);
  // An exact fit is the same for every policy; fewer records than a batch
  // drop to nothing.
  for (LastBatch last : {LastBatch::drop, LastBatch::partial, LastBatch::pad}) {
    EXPECT_EQ(batches_per_epoch(8, 4, last), 2u);
    EXPECT_EQ(images_per_epoch(8, 4, last), 8u);
  }
  EXPECT_EQ(batches_per_epoch(3, 4, LastBatch::drop), 0u);
  EXPECT_EQ(images_per_epoch(3, 4, LastBatch::pad), 4u);
}

TEST(EpochBatches, PadRepeatsTheEpochsFirstRecords) {
  const EpochBatches work = make_epoch_batches(plan_of(10), 4, LastBatch::pad);
  EXPECT_EQ(work.epoch, 3u);
  ASSERT_EQ(work.entries.size(), 12u);
  EXPECT_EQ(work.entries[10], 100u);
  EXPECT_EQ(work.entries[11], 101u);
  EXPECT_EQ(work.size(2), 4u);
  EXPECT_EQ(work.padding(2), 2u);
  EXPECT_EQ(work.padding(1), 0u);
}

TEST(EpochBatches, PadCyclesWhenTheEpochIsShorterThanABatch) {
  const EpochBatches work = make_epoch_batches(plan_of(3), 8, LastBatch::pad);
  EXPECT_EQ(work.entries, (std::vector<uint64_t>{100, 101, 102, 100, 101, 102, 100, 101}));
  EXPECT_EQ(work.padding(0), 5u);
}

TEST(EpochBatches, DropAndPartial) {
  const EpochBatches dropped = make_epoch_batches(plan_of(10), 4, LastBatch::drop);
  EXPECT_EQ(dropped.batches, 2u);
  EXPECT_EQ(dropped.entries.size(), 8u);
  const EpochBatches partial = make_epoch_batches(plan_of(10), 4, LastBatch::partial);
  EXPECT_EQ(partial.batches, 3u);
  EXPECT_EQ(partial.size(2), 2u);
  EXPECT_EQ(partial.begin(2), 8u);
}

TEST(EpochBatches, RankPaddingCountsAsPadding) {
  // The rank's last 2 of 10 records repeat earlier ones (RankPolicy::pad).
  const EpochBatches work = make_epoch_batches(plan_of(10, 2), 4, LastBatch::partial);
  EXPECT_EQ(work.padding(0), 0u);
  EXPECT_EQ(work.padding(1), 0u);
  EXPECT_EQ(work.padding(2), 2u);
  const EpochBatches padded = make_epoch_batches(plan_of(10, 2), 4, LastBatch::pad);
  EXPECT_EQ(padded.padding(2), 4u);  // rank padding and last-batch padding
}

}  // namespace
}  // namespace imgpack::detail
