#include "split_partition.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "imgpack/error.hpp"
#include "random.hpp"

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

namespace {

// An objective value or change, compared lexicographically.
struct Cost {
  double primary = 0;
  double secondary = 0;
};

Cost operator+(Cost a, Cost b) { return {a.primary + b.primary, a.secondary + b.secondary}; }

// Changes smaller than this are rounding noise: counts are integers and the
// objective is a sum of squares of count deviations, so a real improvement is
// far larger. Requiring it also guarantees the local search terminates.
constexpr double kTolerance = 1e-6;

bool better(Cost a, Cost b) {
  if (a.primary < b.primary - kTolerance) return true;
  if (a.primary > b.primary + kTolerance) return false;
  return a.secondary < b.secondary - kTolerance;
}

// Bound on parts x classes, so that the dense count table stays small.
constexpr std::size_t kMaxCells = std::size_t{1} << 27;

class Partitioner {
 public:
  Partitioner(const ItemTable& items, const PartitionOptions& options)
      : items_(items),
        options_(options),
        parts_(static_cast<int32_t>(options.weights.size())),
        part_(items.num_items(), -1),
        weight_(options.weights.size()),
        dev_(static_cast<std::size_t>(items.num_classes) * options.weights.size()),
        size_dev_(options.weights.size()),
        items_in_(options.weights.size(), 0),
        add_class_(options.weights.size()),
        class_weight_(static_cast<std::size_t>(items.num_classes), 1.0),
        diff_(static_cast<std::size_t>(items.num_classes), 0),
        stamp_(static_cast<std::size_t>(items.num_classes), 0) {
    // Start from an empty partition: every deviation is minus its target.
    std::vector<int64_t> class_total(static_cast<std::size_t>(items.num_classes), 0);
    for (std::size_t e = 0; e < items.cls.size(); ++e) {
      class_total[static_cast<std::size_t>(items.cls[e])] += items.count[e];
    }
    const int64_t total = std::accumulate(items.size.begin(), items.size.end(), int64_t{0});
    size_weight_ = options.size_weight;
    if (options.class_weighting == ClassWeighting::chi_square) {
      size_weight_ /= items.num_classes;
      const double mean = static_cast<double>(total) / items.num_classes;
      for (std::size_t c = 0; c < class_weight_.size(); ++c) {
        class_weight_[c] = class_total[c] > 0 ? mean / static_cast<double>(class_total[c]) : 0.0;
      }
    }
    for (int32_t p = 0; p < parts_; ++p) {
      const double w = options.weights[static_cast<std::size_t>(p)];
      weight_[static_cast<std::size_t>(p)] = 1.0 / ((parts_ * w) * (parts_ * w));
      size_dev_[static_cast<std::size_t>(p)] = -w * static_cast<double>(total);
      for (int32_t c = 0; c < items.num_classes; ++c) {
        dev_[cell(c, p)] = -w * static_cast<double>(class_total[static_cast<std::size_t>(c)]);
      }
    }
  }

  // Places every item, largest first, where it leaves the items placed so far
  // best balanced: against targets that grow with the placed totals, so that
  // every part fills in step with its weight (a small part does not swallow
  // the largest items just because it is furthest from its final target).
  void greedy(const std::vector<int32_t>& order) {
    std::vector<double> unplaced(static_cast<std::size_t>(items_.num_classes), 0.0);
    for (std::size_t e = 0; e < items_.cls.size(); ++e) {
      unplaced[static_cast<std::size_t>(items_.cls[e])] += items_.count[e];
    }
    double unplaced_size = 0;
    for (int64_t size : items_.size) unplaced_size += static_cast<double>(size);
    for (int32_t item : order) {
      // dev_ is measured against the final targets; the items not yet placed
      // (this one excepted) turn it into the deviation from the growing target.
      std::fill(add_class_.begin(), add_class_.end(), 0.0);
      for (std::size_t e = begin(item); e < end(item); ++e) {
        const int32_t c = items_.cls[e];
        const double x = items_.count[e];
        const double later = unplaced[static_cast<std::size_t>(c)] - x;
        const double cx = cw(c) * x;
        for (int32_t p = 0; p < parts_; ++p) {
          const double dev =
              dev_[cell(c, p)] + options_.weights[static_cast<std::size_t>(p)] * later;
          add_class_[static_cast<std::size_t>(p)] += cx * (x + 2 * dev);
        }
      }
      const int64_t g = items_.size[static_cast<std::size_t>(item)];
      const double later_size = unplaced_size - static_cast<double>(g);
      int32_t best = 0;
      Cost best_cost;
      for (int32_t p = 0; p < parts_; ++p) {
        const double size_dev = size_dev_[static_cast<std::size_t>(p)] +
                                options_.weights[static_cast<std::size_t>(p)] * later_size;
        const auto d = static_cast<double>(g);
        Cost cost =
            cost_of(w(p) * add_class_[static_cast<std::size_t>(p)], w(p) * d * (d + 2 * size_dev));
        if (p == 0 || better(cost, best_cost) ||
            (!better(best_cost, cost) && fill(p) < fill(best))) {
          best = p;
          best_cost = cost;
        }
      }
      apply(item, best, +1);
      for (std::size_t e = begin(item); e < end(item); ++e) {
        unplaced[static_cast<std::size_t>(items_.cls[e])] -= items_.count[e];
      }
      unplaced_size -= static_cast<double>(g);
    }
  }

  // Gives every empty part the item whose move there costs least.
  void fill_empty_parts() {
    for (int32_t p = 0; p < parts_; ++p) {
      if (items_in_[static_cast<std::size_t>(p)] > 0) continue;
      int32_t best_item = -1;
      Cost best_cost;
      for (std::size_t i = 0; i < part_.size(); ++i) {
        const int32_t a = part_[i];
        if (items_in_[static_cast<std::size_t>(a)] < 2) continue;
        Cost cost = move_cost(static_cast<int32_t>(i), a, p);
        if (best_item < 0 || better(cost, best_cost)) {
          best_item = static_cast<int32_t>(i);
          best_cost = cost;
        }
      }
      move(best_item, part_[static_cast<std::size_t>(best_item)], p);
    }
  }

  // Moves single items to the part that lowers the objective most. Returns the moves made.
  uint64_t move_pass(const std::vector<int32_t>& order) {
    uint64_t moves = 0;
    for (int32_t item : order) {
      const int32_t a = part_[static_cast<std::size_t>(item)];
      if (items_in_[static_cast<std::size_t>(a)] < 2) continue;  // parts never become empty
      class_changes_if_added(item);
      const int64_t g = items_.size[static_cast<std::size_t>(item)];
      double remove_class = 0;
      for (std::size_t e = begin(item); e < end(item); ++e) {
        const double x = items_.count[e];
        remove_class += cw(items_.cls[e]) * x * (x - 2 * dev_[cell(items_.cls[e], a)]);
      }
      const Cost remove = cost_of(w(a) * remove_class, size_change(a, -g));
      int32_t best = -1;
      Cost best_cost;  // zero: only improvements
      for (int32_t b = 0; b < parts_; ++b) {
        if (b == a) continue;
        Cost cost =
            remove + cost_of(w(b) * add_class_[static_cast<std::size_t>(b)], size_change(b, g));
        if (better(cost, best_cost)) {
          best = b;
          best_cost = cost;
        }
      }
      if (best >= 0) {
        move(item, a, best);
        ++moves;
      }
    }
    return moves;
  }

  // Swaps items with items of similar size in other parts where that lowers
  // the objective. Returns the swaps made.
  uint64_t swap_pass(const std::vector<int32_t>& order) {
    // Per part, its items by size (ties by position in `order`, for determinism).
    std::vector<int32_t> rank(part_.size());
    for (std::size_t r = 0; r < order.size(); ++r)
      rank[static_cast<std::size_t>(order[r])] = static_cast<int32_t>(r);
    std::vector<std::vector<std::pair<int64_t, int32_t>>> by_size(static_cast<std::size_t>(parts_));
    for (std::size_t i = 0; i < part_.size(); ++i) {
      by_size[static_cast<std::size_t>(part_[i])].push_back({items_.size[i], rank[i]});
    }
    for (auto& list : by_size) std::sort(list.begin(), list.end());

    // Few items: look at many (up to all) partners; many items: a few each.
    const uint64_t per_item =
        options_.swap_budget /
        std::max<uint64_t>(1, part_.size() * static_cast<uint64_t>(parts_ - 1));
    const auto window = static_cast<std::ptrdiff_t>(std::min<uint64_t>(
        std::max<uint64_t>(
            {1, static_cast<uint64_t>(std::max(0, options_.swap_candidates)), per_item}),
        part_.size()));
    uint64_t swaps = 0;
    for (int32_t item : order) {
      const int32_t a = part_[static_cast<std::size_t>(item)];
      const int64_t g = items_.size[static_cast<std::size_t>(item)];
      ++generation_;
      for (std::size_t e = begin(item); e < end(item); ++e) {
        const auto c = static_cast<std::size_t>(items_.cls[e]);
        diff_[c] = -items_.count[e];
        stamp_[c] = generation_;
      }
      int32_t best_other = -1;
      Cost best_cost;
      for (int32_t b = 0; b < parts_; ++b) {
        if (b == a) continue;
        // The size of the partner that would balance the two parts' sizes best.
        const double wa = w(a), wb = w(b);
        const double transfer = (wa * size_dev_[static_cast<std::size_t>(a)] -
                                 wb * size_dev_[static_cast<std::size_t>(b)]) /
                                (wa + wb);
        const double ideal = static_cast<double>(g) - transfer;
        const auto& list = by_size[static_cast<std::size_t>(b)];
        auto at = std::lower_bound(
            list.begin(), list.end(),
            std::pair<int64_t, int32_t>{static_cast<int64_t>(std::ceil(ideal)), -1});
        const std::ptrdiff_t center = at - list.begin();
        const std::ptrdiff_t lo = std::max<std::ptrdiff_t>(0, center - window / 2);
        const std::ptrdiff_t hi =
            std::min<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(list.size()), lo + window);
        for (std::ptrdiff_t k = lo; k < hi; ++k) {
          const int32_t other =
              order[static_cast<std::size_t>(list[static_cast<std::size_t>(k)].second)];
          if (part_[static_cast<std::size_t>(other)] != b) continue;  // moved earlier in this pass
          if (options_.balance == Balance::sizes_first) {
            // The size change alone decides most candidates: skip the class sums.
            const int64_t dsize = items_.size[static_cast<std::size_t>(other)] - g;
            const double sizes = size_change(a, dsize) + size_change(b, -dsize);
            if (sizes > best_cost.primary + kTolerance) continue;
          }
          Cost cost = swap_cost(item, a, other, b);
          if (better(cost, best_cost)) {
            best_other = other;
            best_cost = cost;
          }
        }
      }
      if (best_other >= 0) {
        const int32_t b = part_[static_cast<std::size_t>(best_other)];
        move(item, a, b);
        move(best_other, b, a);
        ++swaps;
      }
    }
    return swaps;
  }

  // The objective of the current partition.
  Cost objective() const {
    Cost total;
    for (int32_t p = 0; p < parts_; ++p) {
      double classes = 0;
      for (int32_t c = 0; c < items_.num_classes; ++c)
        classes += cw(c) * dev_[cell(c, p)] * dev_[cell(c, p)];
      const double s = size_dev_[static_cast<std::size_t>(p)];
      total = total + cost_of(w(p) * classes, w(p) * s * s);
    }
    return total;
  }

  std::vector<int32_t> take_parts() { return std::move(part_); }

 private:
  std::size_t cell(int32_t c, int32_t p) const {
    return static_cast<std::size_t>(c) * static_cast<std::size_t>(parts_) +
           static_cast<std::size_t>(p);
  }
  double w(int32_t p) const { return weight_[static_cast<std::size_t>(p)]; }
  double cw(int32_t c) const { return class_weight_[static_cast<std::size_t>(c)]; }
  std::size_t begin(int32_t item) const { return items_.first[static_cast<std::size_t>(item)]; }
  std::size_t end(int32_t item) const { return items_.first[static_cast<std::size_t>(item) + 1]; }
  // How full part p is relative to its target (for tie-breaks).
  double fill(int32_t p) const {
    return size_dev_[static_cast<std::size_t>(p)] / options_.weights[static_cast<std::size_t>(p)];
  }

  Cost cost_of(double classes, double sizes) const {
    if (options_.balance == Balance::sizes_first) return {sizes, classes};
    return {classes + size_weight_ * sizes, sizes};
  }

  // Weighted change of the size term when part p grows by `delta` samples.
  double size_change(int32_t p, int64_t delta) const {
    const auto d = static_cast<double>(delta);
    return w(p) * d * (d + 2 * size_dev_[static_cast<std::size_t>(p)]);
  }

  // add_class_[p] = unweighted change of part p's class term if `item` joined it.
  void class_changes_if_added(int32_t item) {
    std::fill(add_class_.begin(), add_class_.end(), 0.0);
    for (std::size_t e = begin(item); e < end(item); ++e) {
      const double x = items_.count[e];
      const double cx = cw(items_.cls[e]) * x;
      const double* dev = &dev_[cell(items_.cls[e], 0)];
      for (int32_t p = 0; p < parts_; ++p)
        add_class_[static_cast<std::size_t>(p)] += cx * (x + 2 * dev[p]);
    }
  }

  Cost move_cost(int32_t item, int32_t from, int32_t to) const {
    double remove_class = 0, add_class = 0;
    for (std::size_t e = begin(item); e < end(item); ++e) {
      const double x = items_.count[e];
      remove_class += cw(items_.cls[e]) * x * (x - 2 * dev_[cell(items_.cls[e], from)]);
      add_class += cw(items_.cls[e]) * x * (x + 2 * dev_[cell(items_.cls[e], to)]);
    }
    const int64_t g = items_.size[static_cast<std::size_t>(item)];
    return cost_of(w(from) * remove_class, size_change(from, -g)) +
           cost_of(w(to) * add_class, size_change(to, g));
  }

  // Change of the objective if `item` (in a) and `other` (in b) traded places.
  // diff_ holds minus item's counts for the classes stamped with generation_.
  Cost swap_cost(int32_t item, int32_t a, int32_t other, int32_t b) {
    double da = 0, db = 0;  // part a gains other and loses item; part b the reverse
    for (std::size_t e = begin(other); e < end(other); ++e) {
      const auto c = static_cast<std::size_t>(items_.cls[e]);
      if (stamp_[c] == generation_) {
        diff_[c] += items_.count[e];
      } else {
        const double d = items_.count[e];
        da += cw(items_.cls[e]) * d * (d + 2 * dev_[cell(items_.cls[e], a)]);
        db += cw(items_.cls[e]) * d * (d - 2 * dev_[cell(items_.cls[e], b)]);
      }
    }
    for (std::size_t e = begin(item); e < end(item); ++e) {
      const double d = static_cast<double>(diff_[static_cast<std::size_t>(items_.cls[e])]);
      da += cw(items_.cls[e]) * d * (d + 2 * dev_[cell(items_.cls[e], a)]);
      db += cw(items_.cls[e]) * d * (d - 2 * dev_[cell(items_.cls[e], b)]);
    }
    for (std::size_t e = begin(other); e < end(other); ++e) {
      const auto c = static_cast<std::size_t>(items_.cls[e]);
      if (stamp_[c] == generation_) diff_[c] -= items_.count[e];
    }
    const int64_t dsize =
        items_.size[static_cast<std::size_t>(other)] - items_.size[static_cast<std::size_t>(item)];
    return cost_of(w(a) * da + w(b) * db, size_change(a, dsize) + size_change(b, -dsize));
  }

  void apply(int32_t item, int32_t p, int sign) {
    for (std::size_t e = begin(item); e < end(item); ++e) {
      dev_[cell(items_.cls[e], p)] += sign * items_.count[e];
    }
    size_dev_[static_cast<std::size_t>(p)] +=
        static_cast<double>(sign * items_.size[static_cast<std::size_t>(item)]);
    items_in_[static_cast<std::size_t>(p)] += sign;
    part_[static_cast<std::size_t>(item)] = sign > 0 ? p : -1;
  }

  void move(int32_t item, int32_t from, int32_t to) {
    apply(item, from, -1);
    apply(item, to, +1);
  }

  const ItemTable& items_;
  const PartitionOptions& options_;
  const int32_t parts_;
  std::vector<int32_t> part_;
  std::vector<double> weight_;        // [P] weight_p of the objective
  std::vector<double> dev_;           // [C x P] n_pc - w_p N_c
  std::vector<double> size_dev_;      // [P] s_p - w_p N
  std::vector<int64_t> items_in_;     // [P]
  std::vector<double> add_class_;     // scratch [P]
  std::vector<double> class_weight_;  // [C]
  std::vector<int64_t> diff_;         // scratch [C]
  std::vector<uint32_t> stamp_;       // [C] which classes diff_ holds
  uint32_t generation_ = 0;
  double size_weight_ = 1;
};

void check_options(const ItemTable& items, const PartitionOptions& options) {
  const std::size_t parts = options.weights.size();
  if (parts < 1) throw Error("partition_items: no parts");
  double sum = 0;
  for (double w : options.weights) {
    if (!(w > 0)) throw Error("partition_items: part weights must be positive");
    sum += w;
  }
  if (std::abs(sum - 1) > 1e-9) throw Error("partition_items: part weights do not sum to 1");
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
}

}  // namespace

namespace {

struct Attempt {
  std::vector<int32_t> parts;
  Cost objective;
  PartitionStats stats;
};

// One greedy placement and local search. Attempt 0 places items strictly
// largest first; later attempts perturb that order at random (sizes scaled by
// 0.5..1.5), so they start the search from other, nearby partitions.
Attempt run_attempt(const ItemTable& items, const PartitionOptions& options, uint64_t attempt) {
  const auto n = static_cast<int32_t>(items.num_items());
  std::vector<int32_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  CounterRng rng(options.seed, options.stream, attempt << 32);
  rng.shuffle(std::span(order));
  std::vector<double> key(static_cast<std::size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    const auto size = static_cast<double>(items.size[static_cast<std::size_t>(i)]);
    key[static_cast<std::size_t>(i)] = attempt == 0 ? size : size * (0.5 + rng.uniform());
  }
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return key[static_cast<std::size_t>(a)] > key[static_cast<std::size_t>(b)];
  });

  Partitioner partitioner(items, options);
  partitioner.greedy(order);
  partitioner.fill_empty_parts();
  Attempt result;
  PartitionStats& local = result.stats;
  local.greedy_objective = partitioner.objective().primary;

  Cost before = partitioner.objective();
  for (int round = 0; round < options.max_rounds; ++round) {
    CounterRng(options.seed, options.stream, (attempt << 32) + static_cast<uint64_t>(round) + 1)
        .shuffle(std::span(order));
    const uint64_t moves = partitioner.move_pass(order);
    const uint64_t swaps = partitioner.swap_pass(order);
    local.moves += moves;
    local.swaps += swaps;
    local.rounds = round + 1;
    const Cost after = partitioner.objective();
    local.round_objective.push_back(after.primary);
    local.round_secondary.push_back(after.secondary);
    if (moves == 0 && swaps == 0) break;
    const bool primary_moved = after.primary < before.primary - kTolerance;
    const double gain = primary_moved ? (before.primary - after.primary) / before.primary
                                      : (before.secondary - after.secondary) /
                                            std::max(before.secondary, kTolerance);
    if (gain < options.min_round_gain) break;
    before = after;
  }
  result.objective = partitioner.objective();
  local.final_objective = result.objective.primary;
  result.parts = partitioner.take_parts();
  return result;
}

}  // namespace

std::vector<int32_t> partition_items(const ItemTable& items, const PartitionOptions& options,
                                     PartitionStats* stats) {
  check_options(items, options);
  // Restarts pay off where the search is cheap and its local optima coarse:
  // few items. The count depends only on the input's size, so the result
  // stays a pure function of the input.
  const uint64_t work = std::max<uint64_t>(1, items.cls.size() * options.weights.size());
  const auto attempts = static_cast<int>(std::clamp<uint64_t>(
      options.restart_budget / work, 1, static_cast<uint64_t>(std::max(1, options.max_attempts))));
  Attempt best = run_attempt(items, options, 0);
  for (int a = 1; a < attempts; ++a) {
    Attempt next = run_attempt(items, options, static_cast<uint64_t>(a));
    if (better(next.objective, best.objective)) best = std::move(next);
  }
  best.stats.attempts = attempts;
  if (stats) *stats = best.stats;
  return std::move(best.parts);
}

}  // namespace imgpack
