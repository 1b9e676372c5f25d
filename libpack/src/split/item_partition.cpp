#include "split/item_partition.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <unordered_map>

#include "imgpack/error.hpp"
#include "random.hpp"
#include "split/partition_search.hpp"

namespace imgpack {

void ItemTable::add_item(std::span<const int32_t> classes, std::span<const int32_t> counts) {
  if (classes.size() != counts.size())
    throw Error("ItemTable::add_item: classes and counts differ");
  int64_t total = 0;
  for (std::size_t e = 0; e < classes.size(); ++e) {
    if (classes[e] < 0 || classes[e] >= num_classes) {
      throw Error("ItemTable::add_item: class " + std::to_string(classes[e]) + " outside 0.." +
                  std::to_string(num_classes - 1));
    }
    if (counts[e] < 1) throw Error("ItemTable::add_item: count below 1");
    cls.push_back(classes[e]);
    count.push_back(counts[e]);
    total += counts[e];
  }
  size.push_back(total);
  first.push_back(cls.size());
}

std::vector<int32_t> by_decreasing_size(std::span<const int32_t> items,
                                        std::span<const int64_t> size) {
  // Each item's rank among the distinct sizes, largest first: sizes below
  // kDense (nearly all: most groups are small) through a table, others
  // through a map.
  constexpr int64_t kDense = 1 << 16;
  std::vector<int32_t> dense(kDense, -1);
  std::unordered_map<int64_t, int32_t> sparse;
  std::vector<int64_t> distinct;
  auto slot = [&](int64_t value) -> int32_t& {
    return value >= 0 && value < kDense ? dense[static_cast<std::size_t>(value)] : sparse[value];
  };
  for (int32_t item : items) {
    const int64_t value = size[static_cast<std::size_t>(item)];
    if (value >= 0 && value < kDense) {
      if (dense[static_cast<std::size_t>(value)] < 0) {
        dense[static_cast<std::size_t>(value)] = 0;
        distinct.push_back(value);
      }
    } else if (sparse.emplace(value, 0).second) {
      distinct.push_back(value);
    }
  }
  std::sort(distinct.begin(), distinct.end(), std::greater<>());
  for (std::size_t r = 0; r < distinct.size(); ++r) slot(distinct[r]) = static_cast<int32_t>(r);
  std::vector<std::size_t> start(distinct.size() + 1, 0);
  std::vector<int32_t> item_rank(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    item_rank[i] = slot(size[static_cast<std::size_t>(items[i])]);
    ++start[static_cast<std::size_t>(item_rank[i]) + 1];
  }
  for (std::size_t r = 0; r < distinct.size(); ++r) start[r + 1] += start[r];
  std::vector<int32_t> out(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    out[start[static_cast<std::size_t>(item_rank[i])]++] = items[i];
  }
  return out;
}

namespace {

using detail::Bounds;
using detail::Cost;
using detail::kEqualCriterion;
using detail::PartitionSearch;
using detail::Totals;

// Bound on parts x classes, so that the dense count table stays small.
constexpr std::size_t kMaxCells = std::size_t{1} << 27;

void check_options(const ItemTable& items, const PartitionOptions& options) {
  const std::size_t parts = options.weights.size();
  if (parts < 1) throw Error("partition_items: no parts");
  double sum = 0;
  for (double w : options.weights) {
    if (!(w > 0)) throw Error("partition_items: part weights must be positive");
    sum += w;
  }
  if (std::abs(sum - 1) > 1e-9) throw Error("partition_items: part weights do not sum to 1");
  if (options.balance == Balance::class_shares &&
      std::any_of(options.weights.begin(), options.weights.end(),
                  [&](double w) { return std::abs(w * static_cast<double>(parts) - 1) > 1e-9; })) {
    throw Error("partition_items: class_shares needs parts of equal weight");
  }
  if (items.num_items() < parts) {
    throw Error("partition_items: " + std::to_string(items.num_items()) + " items for " +
                std::to_string(parts) + " parts");
  }
  if (items.num_classes < 1) throw Error("partition_items: no classes");
  if (static_cast<std::size_t>(items.num_classes) * parts > kMaxCells) {
    throw Error("partition_items: " + std::to_string(parts) + " parts x " +
                std::to_string(items.num_classes) + " classes is too many");
  }
  if (items.first.size() != items.num_items() + 1 || items.first.back() != items.cls.size() ||
      items.count.size() != items.cls.size()) {
    throw Error("partition_items: malformed item table");
  }
  if (!options.reference.empty()) {
    if (options.reference.size() != items.num_items()) {
      throw Error("partition_items: the reference partition has " +
                  std::to_string(options.reference.size()) + " items, the table " +
                  std::to_string(items.num_items()));
    }
    for (int32_t p : options.reference) {
      if (p < 0 || static_cast<std::size_t>(p) >= parts) {
        throw Error("partition_items: reference part " + std::to_string(p) + " out of range");
      }
    }
  }
}

struct Attempt {
  std::vector<int32_t> parts;
  Cost objective;
  double classes = 0;  // class_shares criterion
  int64_t spread = 0;
  PartitionStats stats;
};

// Items visited together in a local shuffle (below).
constexpr std::size_t kShuffleBlock = 256;

// A random order of 0..n-1 that visits blocks of kShuffleBlock consecutive
// items together: the blocks in random order, the items of a block in random
// order. Random enough for the search, and on large inputs far kinder to the
// caches than a full shuffle (items are visited near their neighbours in
// memory).
std::vector<int32_t> local_shuffle(std::size_t n, CounterRng rng) {
  std::vector<uint32_t> blocks((n + kShuffleBlock - 1) / kShuffleBlock);
  std::iota(blocks.begin(), blocks.end(), 0u);
  rng.shuffle(std::span(blocks));
  std::vector<int32_t> order(n);
  std::size_t at = 0;
  for (uint32_t block : blocks) {
    const std::size_t begin = block * kShuffleBlock;
    const std::size_t end = std::min(n, begin + kShuffleBlock);
    for (std::size_t i = begin; i < end; ++i) order[at + i - begin] = static_cast<int32_t>(i);
    rng.shuffle(std::span(order).subspan(at, end - begin));
    at += end - begin;
  }
  return order;
}

// The local search from the current partition.
void search(PartitionSearch& partition, const PartitionOptions& options, uint64_t attempt,
            std::size_t items, PartitionStats& stats) {
  Cost before = partition.objective();
  stats.greedy_objective = before.primary;
  const uint64_t start_work = partition.work();
  partition.limit_work(options.work_budget > UINT64_MAX - start_work
                           ? UINT64_MAX
                           : start_work + options.work_budget);
  for (int round = 0; round < options.max_rounds; ++round) {
    const std::vector<int32_t> order =
        local_shuffle(items, CounterRng(options.seed, options.stream,
                                        (attempt << 32) + static_cast<uint64_t>(round) + 1));
    const uint64_t moves = partition.move_pass(order);
    const uint64_t swaps = partition.swap_pass(order);
    partition.refresh();
    stats.moves += moves;
    stats.swaps += swaps;
    stats.rounds = round + 1;
    const Cost after = partition.objective();
    stats.round_objective.push_back(after.primary);
    stats.round_secondary.push_back(after.secondary);
    if (moves == 0 && swaps == 0) break;
    if (partition.work() - start_work >= options.work_budget) break;
    const bool primary_moved = partition.better({after.primary, 0}, {before.primary, 0});
    const double gain = primary_moved ? (before.primary - after.primary) / before.primary
                                      : (before.secondary - after.secondary) /
                                            std::max(std::abs(before.secondary), 1e-12);
    if (gain < options.min_round_gain) break;
    before = after;
  }
}

Attempt finish(PartitionSearch& partition, PartitionStats& stats) {
  Attempt result;
  result.objective = partition.objective();
  result.classes = partition.class_criterion();
  result.spread = partition.spread();
  stats.final_objective = result.objective.primary;
  stats.spread = result.spread;
  result.stats = std::move(stats);
  result.parts = partition.take_parts();
  return result;
}

// One greedy placement and local partition. Attempt 0 places items strictly
// largest first; later attempts perturb that order at random (sizes scaled by
// 0.5..1.5), so they start the search from other, nearby partitions. Within
// `bounds` when the greedy's partition is.
Attempt greedy_attempt(const ItemTable& items, const PartitionOptions& options,
                       const Totals& totals, uint64_t attempt,
                       const std::optional<Bounds>& bounds) {
  const auto n = static_cast<int32_t>(items.num_items());
  CounterRng rng(options.seed, options.stream, attempt << 32);
  std::vector<int32_t> order = local_shuffle(items.num_items(), rng);
  if (attempt == 0) {
    order = by_decreasing_size(order, items.size);
  } else {
    std::vector<double> key(static_cast<std::size_t>(n));
    for (int32_t i = 0; i < n; ++i) {
      const auto size = static_cast<double>(items.size[static_cast<std::size_t>(i)]);
      key[static_cast<std::size_t>(i)] = size * (0.5 + rng.uniform());
    }
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return key[static_cast<std::size_t>(a)] > key[static_cast<std::size_t>(b)];
    });
  }

  PartitionStats stats;
  std::vector<int32_t> start;
  if (options.balance == Balance::class_shares) {
    // The squares objective first: its search goes further (see the header).
    PartitionOptions squares = options;
    squares.balance = Balance::classes_and_sizes;
    PartitionSearch surrogate(items, squares, totals);
    surrogate.greedy(order);
    surrogate.fill_empty_parts();
    PartitionStats ignored;
    search(surrogate, squares, attempt, items.num_items(), ignored);
    stats.moves += ignored.moves;
    stats.swaps += ignored.swaps;
    start = surrogate.take_parts();
  }
  PartitionSearch partition(items, options, totals);
  if (start.empty()) {
    partition.greedy(order);
  } else {
    partition.place(start);
  }
  partition.fill_empty_parts();
  if (bounds && partition.spread() <= bounds->max_spread &&
      partition.class_criterion() <= bounds->max_classes) {
    partition.constrain(*bounds);
  }
  search(partition, options, attempt, items.num_items(), stats);
  return finish(partition, stats);
}

// The search from the reference partition, within the bounds it sets.
Attempt reference_attempt(const ItemTable& items, const PartitionOptions& options,
                          const Totals& totals, uint64_t attempt, const Bounds& bounds) {
  PartitionSearch partition(items, options, totals);
  partition.place(options.reference);
  partition.fill_empty_parts();
  partition.constrain(bounds);
  PartitionStats stats;
  search(partition, options, attempt, items.num_items(), stats);
  stats.from_reference = true;
  return finish(partition, stats);
}

}  // namespace

std::vector<int32_t> partition_items(const ItemTable& items, const PartitionOptions& options,
                                     PartitionStats* stats) {
  check_options(items, options);
  const Totals totals = detail::totals_of(items);
  const bool shares = options.balance == Balance::class_shares;

  // The reference's figures (after giving any part it left empty an item)
  // and the bounds they set. Class-share criteria within a relative 1e-12
  // count as equal: partitions with the same criterion in exact arithmetic
  // (many, where groups are small) differ by rounding alone, which depends on
  // the order of summation; the caller settles such ties (split.cpp).
  std::optional<Bounds> bounds;
  Attempt reference;
  if (!options.reference.empty()) {
    PartitionSearch partition(items, options, totals);
    partition.place(options.reference);
    partition.fill_empty_parts();
    PartitionStats none;
    reference = finish(partition, none);
    bounds = Bounds{};
    bounds->max_spread = reference.spread;
    if (shares) bounds->max_classes = reference.classes * (1 + kEqualCriterion);
  }
  auto admissible = [&](const Attempt& a) {
    if (!bounds) return true;
    if (a.spread > reference.spread) return false;
    return !shares || a.classes <= reference.classes * (1 + 2 * kEqualCriterion);
  };

  // Restarts pay off where the search is cheap and its local optima coarse:
  // few items. The count depends only on the input's size, so the result
  // stays a pure function of the input.
  const uint64_t work = std::max<uint64_t>(1, items.cls.size() * options.weights.size());
  const auto attempts = static_cast<int>(std::clamp<uint64_t>(
      options.restart_budget / work, 1, static_cast<uint64_t>(std::max(1, options.max_attempts))));
  std::optional<Attempt> best;
  int made = 0;
  auto consider = [&](Attempt next) {
    ++made;
    if (!admissible(next)) return;
    // Lexicographic, with the search's tolerance.
    const double tolerance = shares ? 1e-12 : 1e-6;
    const Cost a = next.objective;
    const bool better = !best || a.primary < best->objective.primary - tolerance ||
                        (a.primary <= best->objective.primary + tolerance &&
                         a.secondary < best->objective.secondary - tolerance);
    if (better) best = std::move(next);
  };
  for (int a = 0; a < attempts; ++a) {
    consider(greedy_attempt(items, options, totals, static_cast<uint64_t>(a), bounds));
  }
  // The reference's own search stays within its bounds, so a result always
  // exists; where a greedy attempt's result is within them already, it runs
  // only if the input is small enough for restarts. (Sizes first, the first
  // greedy attempt is GroupKFold's greedy, ties aside, so it always is.)
  if (bounds && (!best || (shares && options.restart_budget / work >= 2))) {
    Attempt refined =
        reference_attempt(items, options, totals, static_cast<uint64_t>(attempts), *bounds);
    if (!admissible(refined)) refined = reference;  // rounding, in theory; keep the promise
    consider(std::move(refined));
  }
  best->stats.attempts = made;
  if (bounds) {
    best->stats.reference_objective = reference.objective.primary;
    best->stats.reference_spread = reference.spread;
  }
  if (stats) *stats = best->stats;
  return std::move(best->parts);
}

}  // namespace imgpack
