#include "imgpack/epoch_order.hpp"

#include <string>

#include "enum_names.hpp"
#include "imgpack/error.hpp"
#include "random.hpp"

namespace imgpack {

namespace {

constexpr uint64_t kOrderStream = 0x6f72646572ULL;   // "order"
constexpr uint64_t kShardStream = 0x7368617264ULL;   // "shard"
constexpr uint64_t kWindowStream = 0x77696e646fULL;  // "windo"

}  // namespace

EpochOrder::EpochOrder(Dataset dataset, std::vector<int64_t> samples, VariantPolicy policy,
                       OrderOptions options)
    : dataset_(std::move(dataset)),
      samples_(std::move(samples)),
      policy_(policy == VariantPolicy::automatic ? VariantPolicy::clean : policy),
      options_(options) {
  if (options_.world_size == 0) throw UsageError("world size must be at least 1");
  if (options_.rank >= options_.world_size) {
    throw UsageError("rank " + std::to_string(options_.rank) + " is out of range for world size " +
                     std::to_string(options_.world_size));
  }
  if (options_.window_shards == 0) throw UsageError("the shard window must hold at least 1 shard");
  for (int64_t s : samples_) {
    if (s < 0 || static_cast<uint64_t>(s) >= dataset_.num_samples()) {
      throw UsageError("sample " + std::to_string(s) + " is not in the dataset");
    }
    const std::size_t n = dataset_.sample_records(static_cast<uint64_t>(s)).size();
    epoch_size_ += policy_ == VariantPolicy::all ? n : (n > 0 ? 1 : 0);
  }
}

std::size_t EpochOrder::rank_size() const {
  const std::size_t w = options_.world_size;
  return options_.rank_policy == RankPolicy::pad ? (epoch_size_ + w - 1) / w : epoch_size_ / w;
}

std::vector<uint64_t> EpochOrder::global_order(uint64_t epoch) const {
  std::vector<uint64_t> records = epoch_records(dataset_, samples_, policy_, options_.seed, epoch);
  switch (options_.mode) {
    case OrderMode::sequential:
      break;
    case OrderMode::random: {
      CounterRng rng(options_.seed, kOrderStream, epoch);
      rng.shuffle(std::span<uint64_t>(records));
      break;
    }
    case OrderMode::shard_window: {
      // Records are in storage order, so each shard's records are one run.
      struct Run {
        std::size_t begin, end;
      };
      std::vector<Run> runs;
      for (std::size_t i = 0; i < records.size();) {
        std::size_t j = i;
        const uint32_t shard = dataset_.record_shard(records[i]);
        while (j < records.size() && dataset_.record_shard(records[j]) == shard) ++j;
        runs.push_back({i, j});
        i = j;
      }
      CounterRng shard_rng(options_.seed, kShardStream, epoch);
      shard_rng.shuffle(std::span<Run>(runs));
      std::vector<uint64_t> out;
      out.reserve(records.size());
      CounterRng window_rng(options_.seed, kWindowStream, epoch);
      for (std::size_t w = 0; w < runs.size(); w += options_.window_shards) {
        const std::size_t window_begin = out.size();
        const std::size_t w_end = std::min(runs.size(), w + options_.window_shards);
        for (std::size_t k = w; k < w_end; ++k) {
          out.insert(out.end(), records.begin() + static_cast<std::ptrdiff_t>(runs[k].begin),
                     records.begin() + static_cast<std::ptrdiff_t>(runs[k].end));
        }
        window_rng.shuffle(std::span<uint64_t>(out).subspan(window_begin));
      }
      records = std::move(out);
      break;
    }
  }
  return records;
}

EpochPlan EpochOrder::plan(uint64_t epoch) const {
  std::vector<uint64_t> global = global_order(epoch);
  EpochPlan plan;
  plan.epoch = epoch;
  const std::size_t n = global.size();
  const std::size_t w = options_.world_size;
  const std::size_t count = rank_size();
  if (n == 0) return plan;
  plan.records.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t position = options_.rank + i * w;
    plan.records[i] = global[position % n];
    if (position >= n) ++plan.padding;
  }
  return plan;
}

namespace {

constexpr std::array kOrderModeNames{EnumName{OrderMode::sequential, "sequential"},
                                     EnumName{OrderMode::random, "random"},
                                     EnumName{OrderMode::shard_window, "shard-window"}};
constexpr std::array kRankPolicyNames{EnumName{RankPolicy::pad, "pad"},
                                      EnumName{RankPolicy::drop, "drop"}};

}  // namespace

OrderMode parse_order_mode(std::string_view text) {
  return parse_name(kOrderModeNames, text, "order");
}

std::string_view order_mode_name(OrderMode mode) { return name_of(kOrderModeNames, mode); }

RankPolicy parse_rank_policy(std::string_view text) {
  return parse_name(kRankPolicyNames, text, "rank policy");
}

std::string_view rank_policy_name(RankPolicy policy) { return name_of(kRankPolicyNames, policy); }

}  // namespace imgpack
