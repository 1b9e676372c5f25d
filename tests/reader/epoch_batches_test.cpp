#include "epoch_batches.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "imgpack/error.hpp"

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

TEST(EpochBatches, ConsumedPositionsCountWholeSteps) {
  // 61 positions, global batch 12: steps end at 0, 12, 24, ..., and the last
  // batch (6 batches: partial or pad) ends the epoch at 61.
  EXPECT_EQ(consumed_positions(0, 6, 12, 61), 0u);
  EXPECT_EQ(consumed_positions(2, 6, 12, 61), 24u);
  EXPECT_EQ(consumed_positions(5, 6, 12, 61), 60u);
  EXPECT_EQ(consumed_positions(6, 6, 12, 61), 61u);
  // With LastBatch::drop (5 batches) the dropped tail counts as consumed.
  EXPECT_EQ(consumed_positions(5, 5, 12, 61), 61u);
}

TEST(EpochBatches, ResumeBatchInvertsConsumedPositions) {
  for (std::size_t batches : {5u, 6u}) {
    for (std::size_t k = 0; k <= batches; ++k) {
      EXPECT_EQ(resume_batch(consumed_positions(k, batches, 12, 61), batches, 12, 61), k);
    }
  }
  // A state saved where the epoch had one more batch (another world size):
  // 60 positions consumed is the end for a topology with 5 batches.
  EXPECT_EQ(resume_batch(60, 5, 12, 61), 5u);
}

TEST(EpochBatches, ResumeBatchRejectsPositionsNoStepEndsAt) {
  EXPECT_THROW(resume_batch(13, 6, 12, 61), Error);  // not a multiple of the global batch
  EXPECT_THROW(resume_batch(62, 6, 12, 61), Error);  // past the epoch
  EXPECT_THROW(resume_batch(48, 3, 12, 61), Error);  // past the last batch
}

}  // namespace
}  // namespace imgpack::detail
