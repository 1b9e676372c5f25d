// The order in which one rank reads the records of an epoch (contract).
//
// The order is a pure function of (seed, epoch, selection, rank, world_size):
// the same arguments give the same sequence on every machine, whatever the
// number of reader threads. The global order of an epoch's records is
//
//   sequential    storage order (shard by shard, row by row);
//   random        a seeded permutation of all of them;
//   shard-window  the shards in a seeded order, then, for each window of
//                 `window_shards` consecutive shards of that order, a seeded
//                 permutation of the window's records. Reads touch one window
//                 of shards at a time: page-cache locality for datasets larger
//                 than memory, at the price of less mixing.
//
// Rank r of W takes positions r, r + W, r + 2W, ... of the global order. With
// RankPolicy::pad every rank gets ceil(N / W) records, positions past the end
// wrapping around to the start of the global order (those entries are
// padding); with RankPolicy::drop every rank gets floor(N / W) and the last
// N mod W records of the epoch are read by no rank.
//
// Sampling decides what the N positions hold:
//
//   uniform         every record of the epoch once, in the order of the mode
//                   above (N = the epoch's records);
//   class_balanced  N independent draws with replacement: a class uniformly
//                   among the classes of the epoch's records, then a record
//                   uniformly among that class's records, so every class is
//                   equally likely at every position;
//   weighted        N independent draws with replacement, record r with
//                   probability proportional to the weight of its sample.
//
// Weighted epochs (class_balanced, weighted) draw in the `random` mode only;
// their length N is `epoch_length`, by default the uniform epoch's size (the
// selection's records). Their draws are a function of (seed, epoch) alone, so
// they are rank-sharded, thread-independent and resumable like any order.
//
// EpochOrder is immutable after construction and safe to share between threads.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "imgpack/dataset.hpp"
#include "imgpack/selection.hpp"

namespace imgpack {

enum class OrderMode { sequential, random, shard_window };
enum class RankPolicy { pad, drop };
enum class Sampling { uniform, class_balanced, weighted };

struct OrderOptions {
  OrderMode mode = OrderMode::random;
  uint64_t seed = 0;
  uint32_t window_shards = 4;  // shard-window only; >= 1
  uint32_t rank = 0;
  uint32_t world_size = 1;
  RankPolicy rank_policy = RankPolicy::pad;

  Sampling sampling = Sampling::uniform;
  // weighted only: one weight per source sample of the dataset (index row,
  // Dataset::num_samples() of them), finite and >= 0; a sample's records all
  // carry its weight, samples outside the selection are ignored.
  std::vector<double> weights = {};
  // class_balanced and weighted: draws per epoch; 0 = the uniform epoch's size.
  uint64_t epoch_length = 0;
};

// One rank's records for one epoch, in reading order. The last `padding`
// entries repeat records that the epoch already holds (RankPolicy::pad only).
struct EpochPlan {
  uint64_t epoch = 0;
  std::vector<uint64_t> records;
  std::size_t padding = 0;
};

class EpochOrder {
 public:
  // `samples` are the selected source samples (select_samples()); `policy`
  // the variant policy after resolve_variant_policy(). Throws
  // imgpack::UsageError for a sample out of range or removed
  // (DatasetIndex::is_removed()), if world_size is 0, rank >= world_size or
  // window_shards is 0, and for sampling options that cannot work: a weighted
  // epoch in a mode other than random, weights of the wrong count, negative
  // or not finite, no positive weight in the selection, class_balanced with
  // an unlabeled selected sample, weights or epoch_length with uniform
  // sampling.
  EpochOrder(Dataset dataset, std::vector<int64_t> samples, VariantPolicy policy,
             OrderOptions options);

  // The plan of this rank for `epoch`. Allocates O(records); call once per epoch.
  EpochPlan plan(uint64_t epoch) const;

  // The global order of `epoch`, before the rank split (all ranks agree on
  // it): epoch_size() records, repeating records in weighted epochs.
  std::vector<uint64_t> global_order(uint64_t epoch) const;

  // Records per epoch for this rank (padding included), and positions of the
  // global order before the split (N). Both are the same for every epoch.
  std::size_t rank_size() const;
  std::size_t epoch_size() const { return epoch_size_; }

  const OrderOptions& options() const { return options_; }
  VariantPolicy variant_policy() const { return policy_; }
  std::span<const int64_t> samples() const { return samples_; }
  const Dataset& dataset() const { return dataset_; }

 private:
  void check_sampling() const;

  Dataset dataset_;
  std::vector<int64_t> samples_;
  VariantPolicy policy_;
  OrderOptions options_;
  std::size_t epoch_size_ = 0;
};

// "sequential", "random", "shard-window". Throws imgpack::UsageError.
OrderMode parse_order_mode(std::string_view text);
std::string_view order_mode_name(OrderMode mode);
// "pad", "drop". Throws imgpack::UsageError.
RankPolicy parse_rank_policy(std::string_view text);
std::string_view rank_policy_name(RankPolicy policy);
// "uniform", "class-balanced", "weighted". Throws imgpack::UsageError.
Sampling parse_sampling(std::string_view text);
std::string_view sampling_name(Sampling sampling);

}  // namespace imgpack
