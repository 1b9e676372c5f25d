#include "imgpack/epoch_order.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "imgpack/error.hpp"
#include "memory_cgroup.hpp"
#include "random.hpp"

namespace imgpack {

namespace {

constexpr uint64_t kOrderStream = 0x6f72646572ULL;         // "order"
constexpr uint64_t kShardStream = 0x7368617264ULL;         // "shard"
constexpr uint64_t kWindowStream = 0x77696e646fULL;        // "windo"
constexpr uint64_t kBalancedStream = 0x62616c616e6365ULL;  // "balance"
constexpr uint64_t kWeightedStream = 0x776569676874ULL;    // "weight"

// `count` draws from the epoch's records (storage order): a class uniformly,
// then one of its records uniformly. Labels are checked to be >= 0.
std::vector<uint64_t> draw_class_balanced(const Dataset& dataset, std::span<const uint64_t> records,
                                          uint64_t count, CounterRng& rng) {
  std::vector<std::vector<uint64_t>> by_label(dataset.index().class_names.size());
  for (uint64_t r : records) {
    const auto label = static_cast<std::size_t>(dataset.record_label(r));
    if (label >= by_label.size()) by_label.resize(label + 1);
    by_label[label].push_back(r);
  }
  std::erase_if(by_label, [](const std::vector<uint64_t>& members) { return members.empty(); });
  std::vector<uint64_t> out(count);
  for (uint64_t& drawn : out) {
    const std::vector<uint64_t>& members = by_label[rng.below(by_label.size())];
    drawn = members[rng.below(members.size())];
  }
  return out;
}

// `count` draws from the epoch's records, each with probability proportional
// to its sample's weight (at least one is positive).
std::vector<uint64_t> draw_weighted(const Dataset& dataset, std::span<const uint64_t> records,
                                    std::span<const double> weights, uint64_t count,
                                    CounterRng& rng) {
  std::vector<double> cumulative(records.size());
  double total = 0;
  std::size_t last_positive = 0;
  // Weights whose sum overflows a double (each finite, 1e308 say) are summed
  // divided by the largest: the same proportions. Sums that fit are summed
  // as given, so their draws stay what they were.
  double divisor = 1;
  for (int pass = 0; pass < 2; ++pass) {
    total = 0;
    double largest = 0;
    for (std::size_t i = 0; i < records.size(); ++i) {
      const double w = weights[static_cast<std::size_t>(dataset.record_sample(records[i]))];
      if (w > 0) last_positive = i;
      largest = std::max(largest, w);
      total += w / divisor;
      cumulative[i] = total;
    }
    if (std::isfinite(total)) break;
    divisor = largest;
  }
  std::vector<uint64_t> out(count);
  for (uint64_t& drawn : out) {
    // The first record whose cumulative weight exceeds u has a positive
    // weight; rounding can put u at the total, which is the last such record.
    const double u = rng.uniform() * total;
    const auto at = static_cast<std::size_t>(
        std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin());
    drawn = records[std::min(at, last_positive)];
  }
  return out;
}

// " (PATH)" of sample s, for errors; nothing where the path cannot be read.
std::string path_note(const Dataset& dataset, std::size_t s) {
  try {
    return " (" + dataset.sample_path(s) + ")";
  } catch (const Error&) {
    return "";
  }
}

}  // namespace

EpochOrder::EpochOrder(Dataset dataset, std::vector<int64_t> samples, VariantPolicy policy,
                       OrderOptions options)
    : dataset_(std::move(dataset)),
      samples_(std::move(samples)),
      policy_(policy == VariantPolicy::automatic ? VariantPolicy::clean : policy),
      options_(std::move(options)) {
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
    if (dataset_.index().is_removed(static_cast<std::size_t>(s))) {
      throw UsageError("sample " + std::to_string(s) +
                       path_note(dataset_, static_cast<std::size_t>(s)) +
                       " was removed from the dataset (generation " +
                       std::to_string(dataset_.generation()) + ")");
    }
    const std::size_t n = dataset_.sample_records(static_cast<uint64_t>(s)).size();
    epoch_size_ += policy_ == VariantPolicy::all ? n : (n > 0 ? 1 : 0);
  }
  check_sampling();
  if (options_.sampling != Sampling::uniform && options_.epoch_length > 0) {
    epoch_size_ = options_.epoch_length;
  }
}

void EpochOrder::check_sampling() const {
  const OrderOptions& o = options_;
  const std::string sampling(sampling_name(o.sampling));
  if (o.sampling == Sampling::uniform) {
    if (!o.weights.empty()) {
      throw UsageError("weights are given but sampling is uniform (use weighted sampling)");
    }
    if (o.epoch_length > 0) {
      throw UsageError("epoch_length applies to class-balanced and weighted sampling only");
    }
    return;
  }
  if (o.mode != OrderMode::random) {
    throw UsageError(sampling +
                     " sampling draws records at random: it needs the random order, not " +
                     std::string(order_mode_name(o.mode)));
  }
  if (o.sampling == Sampling::weighted && o.weights.size() != dataset_.num_samples()) {
    throw UsageError("weighted sampling needs one weight per sample of the dataset (" +
                     std::to_string(dataset_.num_samples()) + "), got " +
                     std::to_string(o.weights.size()));
  }
  if (o.sampling == Sampling::class_balanced && !o.weights.empty()) {
    throw UsageError("weights are given but sampling is class-balanced (use weighted sampling)");
  }
  // An epoch's draws are held in memory, 8 bytes each, while it is planned
  // and again in its plan: refused before that would take half of what the
  // process may use, rather than failing (or swapping) at the first batch.
  constexpr uint64_t kBytesPerDraw = 16;
  const uint64_t memory = detail::memory_for_page_cache();
  if (o.epoch_length > memory / 2 / kBytesPerDraw) {
    throw UsageError(
        "epoch_length " + std::to_string(o.epoch_length) + " would hold " +
        std::to_string(kBytesPerDraw) + " bytes a draw in memory, more than half of the " +
        std::to_string(memory >> 20) + " MiB this process may use; draw fewer per epoch (at most " +
        std::to_string(memory / 2 / kBytesPerDraw) + ")");
  }
  bool drawable = false;
  for (int64_t s : samples_) {
    const auto sample = static_cast<std::size_t>(s);
    if (dataset_.sample_records(sample).empty()) continue;
    if (o.sampling == Sampling::weighted) {
      const double w = o.weights[sample];
      if (!std::isfinite(w) || w < 0) {
        throw UsageError("weight " + std::to_string(w) + " of sample " + std::to_string(s) +
                         path_note(dataset_, sample) + ": weights must be finite and not negative");
      }
      drawable = drawable || w > 0;
    } else {
      if (dataset_.index().sample_label[sample] < 0) {
        throw UsageError("class-balanced sampling needs labels: sample " + std::to_string(s) +
                         path_note(dataset_, sample) + " has none");
      }
      drawable = true;
    }
  }
  if (!drawable && (o.epoch_length > 0 || epoch_size_ > 0)) {
    throw UsageError(sampling + " sampling has nothing to draw from: " +
                     (epoch_size_ == 0 ? std::string("the selection holds no records")
                                       : std::string("no selected sample has a positive weight")));
  }
}

std::size_t EpochOrder::rank_size() const {
  const std::size_t w = options_.world_size;
  return options_.rank_policy == RankPolicy::pad ? (epoch_size_ + w - 1) / w : epoch_size_ / w;
}

std::vector<uint64_t> EpochOrder::global_order(uint64_t epoch) const {
  std::vector<uint64_t> records = epoch_records(dataset_, samples_, policy_, options_.seed, epoch);
  if (options_.sampling == Sampling::class_balanced) {
    CounterRng rng(options_.seed, kBalancedStream, epoch);
    return draw_class_balanced(dataset_, records, epoch_size_, rng);
  }
  if (options_.sampling == Sampling::weighted) {
    CounterRng rng(options_.seed, kWeightedStream, epoch);
    return draw_weighted(dataset_, records, options_.weights, epoch_size_, rng);
  }
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

}  // namespace imgpack
