#include "epoch_batches.hpp"

#include <gtest/gtest.h>

#include <algorithm>
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

// --- Resuming: the rest of an epoch dealt over any topology --------------------------

// A global order of n distinct records, 100, 101, ...
std::vector<uint64_t> global_of(std::size_t n) {
  std::vector<uint64_t> global(n);
  std::iota(global.begin(), global.end(), uint64_t{100});
  return global;
}

// Rank `rank` of `world`'s plan, dealt as EpochOrder::plan() deals it.
EpochPlan dealt(const std::vector<uint64_t>& global, uint32_t rank, uint32_t world,
                RankPolicy policy) {
  EpochPlan plan;
  plan.epoch = 3;
  const std::size_t n = global.size();
  const std::size_t count = policy == RankPolicy::pad ? (n + world - 1) / world : n / world;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t position = rank + i * world;
    plan.records.push_back(global[position % n]);
    if (position >= n) ++plan.padding;
  }
  return plan;
}

std::vector<uint64_t> non_padding(const EpochBatches& work) {
  std::vector<uint64_t> out;
  for (std::size_t b = 0; b < work.batches; ++b) {
    const std::size_t end = work.begin(b) + work.size(b) - work.padding(b);
    out.insert(out.end(), work.entries.begin() + static_cast<std::ptrdiff_t>(work.begin(b)),
               work.entries.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return out;
}

constexpr RankPolicy kRankPolicies[] = {RankPolicy::pad, RankPolicy::drop};
constexpr LastBatch kLastBatches[] = {LastBatch::partial, LastBatch::pad, LastBatch::drop};

TEST(EpochBatches, ConsumedPositionsCountFromWhereTheWorkStarts) {
  // 61 positions, global batch 12, 6 batches: steps end at 0, 12, 24, ...,
  // and the last batch ends the epoch at 61.
  EpochBatches whole;
  whole.batches = 6;
  EXPECT_EQ(consumed_positions(whole, 0, 12, 61), 0u);
  EXPECT_EQ(consumed_positions(whole, 2, 12, 61), 24u);
  EXPECT_EQ(consumed_positions(whole, 5, 12, 61), 60u);
  EXPECT_EQ(consumed_positions(whole, 6, 12, 61), 61u);
  // With LastBatch::drop (5 batches) the dropped tail counts as consumed.
  whole.batches = 5;
  EXPECT_EQ(consumed_positions(whole, 5, 12, 61), 61u);
  // The rest of an epoch resumed after 17 positions, in steps of 9.
  EpochBatches rest;
  rest.batches = 5;
  rest.first_position = 17;
  EXPECT_EQ(consumed_positions(rest, 0, 9, 61), 17u);
  EXPECT_EQ(consumed_positions(rest, 2, 9, 61), 35u);
  EXPECT_EQ(consumed_positions(rest, 5, 9, 61), 61u);
}

// Resumed at a step of its own global batch, a topology reads exactly the
// batches of its uninterrupted epoch from that step on: what makes a resume
// on the same topology byte-identical.
TEST(EpochBatches, ResumedAtAStepIsTheUninterruptedEpochFromThatStep) {
  for (std::size_t n : {61u, 37u, 5u}) {
    const std::vector<uint64_t> global = global_of(n);
    for (uint32_t world : {1u, 2u, 3u, 4u}) {
      for (std::size_t batch : {1u, 3u, 4u, 8u}) {
        for (RankPolicy policy : kRankPolicies) {
          for (LastBatch last : kLastBatches) {
            for (uint32_t rank = 0; rank < world; ++rank) {
              const EpochBatches whole =
                  make_epoch_batches(dealt(global, rank, world, policy), batch, last);
              for (std::size_t k = 0; k <= whole.batches; ++k) {
                const uint64_t first = std::min<uint64_t>(k * batch * world, n);
                SCOPED_TRACE(::testing::Message()
                             << "n " << n << ", rank " << rank << " of " << world << ", batch "
                             << batch << ", policies " << static_cast<int>(policy) << "/"
                             << static_cast<int>(last) << ", from step " << k);
                const EpochBatches rest =
                    make_resumed_batches(3, global, first, {rank, world, policy}, batch, last);
                if (first == n) {  // the end: nothing left, whatever the drop policies left out
                  EXPECT_EQ(rest.batches, 0u);
                  continue;
                }
                EXPECT_EQ(rest.first_index, k);
                EXPECT_EQ(rest.first_position, first);
                ASSERT_EQ(rest.batches, whole.batches - k);
                for (std::size_t b = 0; b < rest.batches; ++b) {
                  EXPECT_EQ(rest.size(b), whole.size(k + b));
                  EXPECT_EQ(rest.padding(b), whole.padding(k + b));
                  for (std::size_t i = 0; i < rest.size(b); ++i) {
                    EXPECT_EQ(rest.entries[rest.begin(b) + i],
                              whole.entries[whole.begin(k + b) + i]);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

// Resumed anywhere (a state of another global batch), the ranks read every
// remaining position once, padding aside, with RankPolicy::pad and
// LastBatch::partial or pad; the drop policies leave out what they leave out
// of any epoch. Batch indices start at floor(first / G'), and the rest holds
// at most the uninterrupted epoch's remaining batches.
TEST(EpochBatches, ResumedAnywhereDealsEveryRemainingPositionOnce) {
  const std::size_t n = 61;
  const std::vector<uint64_t> global = global_of(n);
  for (uint32_t world : {1u, 2u, 3u, 4u, 7u}) {
    for (std::size_t batch : {1u, 3u, 5u, 8u}) {
      const uint64_t g = batch * world;
      for (RankPolicy policy : kRankPolicies) {
        for (LastBatch last : kLastBatches) {
          const std::size_t whole_batches =
              make_epoch_batches(dealt(global, 0, world, policy), batch, last).batches;
          for (uint64_t first = 0; first <= n; ++first) {
            SCOPED_TRACE(::testing::Message()
                         << world << " ranks of " << batch << ", policies "
                         << static_cast<int>(policy) << "/" << static_cast<int>(last)
                         << ", from position " << first);
            std::vector<uint64_t> delivered;
            std::size_t batches = 0;
            for (uint32_t rank = 0; rank < world; ++rank) {
              const EpochBatches rest =
                  make_resumed_batches(3, global, first, {rank, world, policy}, batch, last);
              if (rank == 0) batches = rest.batches;
              EXPECT_EQ(rest.batches, batches) << "every rank steps alike";
              EXPECT_EQ(rest.first_index, first / g);
              if (rest.batches > 0) {
                EXPECT_LE(rest.first_index + rest.batches, whole_batches);
                EXPECT_GE(rest.first_index + rest.batches + 1, whole_batches);
              }
              const std::vector<uint64_t> mine = non_padding(rest);
              delivered.insert(delivered.end(), mine.begin(), mine.end());
            }
            std::sort(delivered.begin(), delivered.end());
            EXPECT_TRUE(std::adjacent_find(delivered.begin(), delivered.end()) == delivered.end())
                << "a position delivered twice";
            // What is read is a prefix of the remaining positions: the drop
            // policies leave out only the tail.
            std::vector<uint64_t> remaining(global.begin() + static_cast<std::ptrdiff_t>(first),
                                            global.end());
            const uint64_t left = n - first;
            uint64_t per_rank =
                policy == RankPolicy::pad ? (left + world - 1) / world : left / world;
            if (last == LastBatch::drop) per_rank = per_rank / batch * batch;
            remaining.resize(std::min<uint64_t>(left, per_rank * world));
            EXPECT_EQ(delivered, remaining);
            if (policy == RankPolicy::pad && last != LastBatch::drop) {
              EXPECT_EQ(delivered.size(), left) << "each remaining position exactly once";
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace imgpack::detail
