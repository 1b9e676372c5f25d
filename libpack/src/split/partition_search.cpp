// Over 500 lines: the passes below share the PartitionSearch's state and its inline cost
// helpers, which stay private to this file.
#include "split/partition_search.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "random.hpp"

namespace imgpack::detail {

Totals totals_of(const ItemTable& items) {
  Totals totals;
  totals.class_total.assign(static_cast<std::size_t>(items.num_classes), 0.0);
  for (std::size_t e = 0; e < items.cls.size(); ++e) {
    totals.class_total[static_cast<std::size_t>(items.cls[e])] += items.count[e];
  }
  for (int64_t size : items.size) totals.total += static_cast<double>(size);
  totals.present = static_cast<int32_t>(std::count_if(
      totals.class_total.begin(), totals.class_total.end(), [](double n) { return n > 0; }));
  return totals;
}

PartitionSearch::PartitionSearch(const ItemTable& items, const PartitionOptions& options,
                                 const Totals& totals)
    : items_(items),
      options_(options),
      totals_(totals),
      parts_(static_cast<int32_t>(options.weights.size())),
      shares_(options.balance == Balance::class_shares),
      part_(items.num_items(), -1),
      count_(static_cast<std::size_t>(items.num_classes) * options.weights.size(), 0.0),
      size_(options.weights.size(), 0.0),
      items_in_(options.weights.size(), 0),
      weight_(options.weights.size()),
      class_weight_(static_cast<std::size_t>(items.num_classes), 1.0),
      add_(options.weights.size()),
      diff_(static_cast<std::size_t>(items.num_classes), 0),
      stamp_(static_cast<std::size_t>(items.num_classes), 0) {
  const auto num_classes = static_cast<std::size_t>(items.num_classes);
  if (shares_) {
    // std over parts of n_pc / N_c is sqrt(sum_p (n_pc - N_c / P)^2) / (N_c sqrt(P)).
    tolerance_ = 1e-12;
    const double root_parts = std::sqrt(static_cast<double>(parts_));
    scale_.assign(num_classes, 0.0);
    for (std::size_t c = 0; c < num_classes; ++c) {
      const double n = totals.class_total[c];
      if (n > 0) scale_[c] = 1.0 / (n * root_parts * totals.present);
    }
    size_scale_ = options.share_size_weight / (totals.total * root_parts);
    dev2_.assign(num_classes, 0.0);
    std_.assign(num_classes, 0.0);
    return;
  }
  size_weight_ = options.size_weight;
  if (options.class_weighting != ClassWeighting::equal) {
    size_weight_ /= items.num_classes;
    const double mean = totals.total / items.num_classes;
    const bool squared = options.class_weighting == ClassWeighting::share;
    for (std::size_t c = 0; c < num_classes; ++c) {
      const double n = totals.class_total[c];
      class_weight_[c] = n > 0 ? (squared ? (mean / n) * (mean / n) : mean / n) : 0.0;
    }
  }
  for (int32_t p = 0; p < parts_; ++p) {
    const double w = target(p);
    weight_[static_cast<std::size_t>(p)] = 1.0 / ((parts_ * w) * (parts_ * w));
  }
}

void PartitionSearch::greedy(const std::vector<int32_t>& order) {
  if (shares_) {
    greedy_shares(order);
  } else {
    greedy_squares(order);
  }
}

void PartitionSearch::place(std::span<const int32_t> parts) {
  for (std::size_t i = 0; i < parts.size(); ++i) apply(static_cast<int32_t>(i), parts[i], +1);
}

void PartitionSearch::fill_empty_parts() {
  for (int32_t p = 0; p < parts_; ++p) {
    if (items_in(p) > 0) continue;
    refresh();
    int32_t best_item = -1;
    Cost best_cost;
    for (std::size_t i = 0; i < part_.size(); ++i) {
      const int32_t a = part_[i];
      if (items_in(a) < 2) continue;
      const Cost cost = move_cost(static_cast<int32_t>(i), a, p);
      if (best_item < 0 || better(cost, best_cost)) {
        best_item = static_cast<int32_t>(i);
        best_cost = cost;
      }
    }
    move(best_item, part_[static_cast<std::size_t>(best_item)], p);
  }
  refresh();
}

uint64_t PartitionSearch::move_pass(const std::vector<int32_t>& order) {
  uint64_t moves = 0;
  for (int32_t item : order) {
    if (work_ >= work_limit_) break;
    const int32_t a = part_[static_cast<std::size_t>(item)];
    if (items_in(a) < 2) continue;  // parts never become empty
    work_ += (end(item) - begin(item) + 1) * static_cast<uint64_t>(parts_);
    if (shares_) {
      share_changes_of_move(item, a);
    } else {
      square_changes_of_move(item, a);
    }
    int32_t best = -1;
    Cost best_cost;  // zero: only improvements
    for (int32_t b = 0; b < parts_; ++b) {
      if (b != a && better(add_[static_cast<std::size_t>(b)], best_cost)) {
        best = b;
        best_cost = add_[static_cast<std::size_t>(b)];
      }
    }
    if (best < 0) continue;
    const auto g = static_cast<double>(items_.size[static_cast<std::size_t>(item)]);
    if (!within_bounds(best_cost, a, -g, best, g)) continue;
    move(item, a, best);
    ++moves;
  }
  return moves;
}

namespace {

// The items of one part by size, ties in the order of the pass, and the runs
// of equal sizes among them. Partners of a given size are found by a binary
// search over the runs: there are few (the groups of N samples have fewer
// than sqrt(2N) distinct sizes), so the search stays in cache, where one over
// all the part's items missed it at every step once the parts held millions.
struct PartBySize {
  std::vector<int32_t> items;
  std::vector<int64_t> run_size;       // distinct sizes, ascending
  std::vector<std::size_t> run_start;  // where each run begins in items, then items.size()
};

// `rank` numbers the distinct sizes 0, 1, ... in ascending order (`sizes`
// lists them): a counting sort, O(items + parts x sizes) per pass.
std::vector<PartBySize> parts_by_size(const std::vector<int32_t>& order,
                                      const std::vector<int32_t>& part,
                                      const std::vector<int32_t>& rank,
                                      const std::vector<int64_t>& sizes, int32_t parts) {
  const std::size_t runs = sizes.size();
  std::vector<PartBySize> out(static_cast<std::size_t>(parts));
  std::vector<std::size_t> start(static_cast<std::size_t>(parts) * (runs + 1), 0);
  auto slot = [&](std::size_t p, std::size_t r) -> std::size_t& {
    return start[p * (runs + 1) + r];
  };
  for (int32_t item : order) {
    const auto i = static_cast<std::size_t>(item);
    ++slot(static_cast<std::size_t>(part[i]), static_cast<std::size_t>(rank[i]) + 1);
  }
  for (std::size_t p = 0; p < out.size(); ++p) {
    PartBySize& by_size = out[p];
    for (std::size_t r = 0; r < runs; ++r) {
      const std::size_t count = slot(p, r + 1);
      slot(p, r + 1) = slot(p, r) + count;
      if (count > 0) {
        by_size.run_size.push_back(sizes[r]);
        by_size.run_start.push_back(slot(p, r));
      }
    }
    by_size.run_start.push_back(slot(p, runs));
    by_size.items.resize(slot(p, runs));
  }
  for (int32_t item : order) {
    const auto i = static_cast<std::size_t>(item);
    const auto p = static_cast<std::size_t>(part[i]);
    out[p].items[slot(p, static_cast<std::size_t>(rank[i]))++] = item;
  }
  return out;
}

}  // namespace

uint64_t PartitionSearch::swap_pass(const std::vector<int32_t>& order) {
  if (work_ >= work_limit_) return 0;
  // Per part, its items by size (ties by position in `order`, for determinism).
  if (size_rank_.empty()) rank_sizes();
  const std::vector<PartBySize> by_size =
      parts_by_size(order, part_, size_rank_, distinct_size_, parts_);

  // Few items: look at many (up to all) partners; many items: a few each.
  const uint64_t per_item = options_.swap_budget /
                            std::max<uint64_t>(1, part_.size() * static_cast<uint64_t>(parts_ - 1));
  const auto window = static_cast<std::ptrdiff_t>(std::min<uint64_t>(
      std::max<uint64_t>(
          {1, static_cast<uint64_t>(std::max(0, options_.swap_candidates)), per_item}),
      part_.size()));
  uint64_t swaps = 0;
  for (std::size_t t = 0; t < order.size(); ++t) {
    if (work_ >= work_limit_) break;
    const int32_t item = order[t];
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
      const double wa = square_weight(a), wb = square_weight(b);
      const double transfer = (wa * size_dev(a) - wb * size_dev(b)) / (wa + wb);
      const double ideal = static_cast<double>(g) - transfer;
      const PartBySize& list = by_size[static_cast<std::size_t>(b)];
      const auto runs = static_cast<std::ptrdiff_t>(list.run_size.size());
      const std::ptrdiff_t run = std::lower_bound(list.run_size.begin(), list.run_size.end(),
                                                  static_cast<int64_t>(std::ceil(ideal))) -
                                 list.run_size.begin();
      std::ptrdiff_t center =
          static_cast<std::ptrdiff_t>(list.run_start[static_cast<std::size_t>(run)]);
      if (run < runs) {
        // Among many partners of the same size (groups of one sample, say)
        // each item looks at its own few, not all at the same first ones:
        // those about as far into the run as the item is into the pass, a
        // hash of the item apart. A run keeps the pass's order, which visits
        // blocks of neighbouring items together (local_shuffle), so the
        // partners of a block lie near it in memory: on millions of items,
        // partners drawn from anywhere missed the caches at every look.
        const auto length =
            static_cast<std::ptrdiff_t>(list.run_start[static_cast<std::size_t>(run) + 1] -
                                        list.run_start[static_cast<std::size_t>(run)]);
        if (length > window) {
          const auto room = static_cast<uint64_t>(length - window + 1);
          const auto along =
              static_cast<uint64_t>(static_cast<double>(t) / static_cast<double>(order.size()) *
                                    static_cast<double>(room));
          const uint64_t apart =
              mix64(static_cast<uint64_t>(item) ^ (uint64_t{generation_} << 32)) %
              (4 * static_cast<uint64_t>(window));
          center += static_cast<std::ptrdiff_t>(std::min(along + apart, room - 1));
        }
      }
      const std::ptrdiff_t lo = std::max<std::ptrdiff_t>(0, center - window / 2);
      const std::ptrdiff_t hi =
          std::min<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(list.items.size()), lo + window);
      for (std::ptrdiff_t k = lo; k < hi; ++k) {
        const int32_t other = list.items[static_cast<std::size_t>(k)];
        if (part_[static_cast<std::size_t>(other)] != b) continue;  // moved earlier in this pass
        if (options_.balance == Balance::sizes_first) {
          // The size change alone decides most candidates: skip the class sums.
          const int64_t dsize = items_.size[static_cast<std::size_t>(other)] - g;
          const double sizes = size_change(a, static_cast<double>(dsize)) +
                               size_change(b, -static_cast<double>(dsize));
          if (sizes > best_cost.primary + tolerance_) continue;
        }
        work_ += end(item) - begin(item) + end(other) - begin(other) + 1;
        const Cost cost = swap_cost(item, a, other, b);
        if (better(cost, best_cost)) {
          best_other = other;
          best_cost = cost;
        }
      }
    }
    if (best_other < 0) continue;
    const int32_t b = part_[static_cast<std::size_t>(best_other)];
    const auto dsize = static_cast<double>(items_.size[static_cast<std::size_t>(best_other)] - g);
    if (!within_bounds(best_cost, a, dsize, b, -dsize)) continue;
    move(item, a, b);
    move(best_other, b, a);
    ++swaps;
  }
  return swaps;
}

void PartitionSearch::rank_sizes() {
  std::vector<int32_t> all(items_.num_items());
  std::iota(all.begin(), all.end(), 0);
  const std::vector<int32_t> largest_first = by_decreasing_size(all, items_.size);
  size_rank_.resize(all.size());
  for (auto it = largest_first.rbegin(); it != largest_first.rend(); ++it) {
    const int64_t size = items_.size[static_cast<std::size_t>(*it)];
    if (distinct_size_.empty() || distinct_size_.back() != size) distinct_size_.push_back(size);
    size_rank_[static_cast<std::size_t>(*it)] = static_cast<int32_t>(distinct_size_.size() - 1);
  }
}

void PartitionSearch::refresh() {
  if (!shares_) return;
  class_sum_ = 0;
  for (std::size_t c = 0; c < dev2_.size(); ++c) {
    dev2_[c] = squared_deviation(c);
    std_[c] = std::sqrt(dev2_[c]) * scale_[c];
    class_sum_ += std_[c];
  }
  size_dev2_ = 0;
  for (int32_t p = 0; p < parts_; ++p) size_dev2_ += size_dev(p) * size_dev(p);
  size_std_ = std::sqrt(size_dev2_) * size_scale_;
}

Cost PartitionSearch::objective() const {
  if (shares_) {
    double sizes = 0;
    for (int32_t p = 0; p < parts_; ++p) sizes += size_dev(p) * size_dev(p);
    return {class_criterion() + std::sqrt(sizes) * size_scale_, sizes};
  }
  Cost total;
  for (int32_t p = 0; p < parts_; ++p) {
    double classes = 0;
    for (int32_t c = 0; c < items_.num_classes; ++c) {
      const double d = dev(c, p);
      classes += cw(c) * d * d;
    }
    const double s = size_dev(p);
    total = total + cost_of(w(p) * classes, w(p) * s * s);
  }
  return total;
}

double PartitionSearch::class_criterion() const {
  double sum = 0;
  for (std::size_t c = 0; c < scale_.size(); ++c)
    sum += std::sqrt(squared_deviation(c)) * scale_[c];
  return sum;
}

int64_t PartitionSearch::spread() const {
  auto [lo, hi] = std::minmax_element(size_.begin(), size_.end());
  return static_cast<int64_t>(*hi - *lo);
}

// Defined inline: called per candidate, and only from this file.
inline void PartitionSearch::square_changes_of_move(int32_t item, int32_t a) {
  for (auto& cost : add_) cost = {};
  double remove_class = 0;
  for (std::size_t e = begin(item); e < end(item); ++e) {
    const int32_t c = items_.cls[e];
    const double x = items_.count[e];
    const double cx = cw(c) * x;
    remove_class += cx * (x - 2 * dev(c, a));
    const double* n = &count_[cell(c, 0)];
    const double nc = totals_.class_total[static_cast<std::size_t>(c)];
    for (int32_t p = 0; p < parts_; ++p) {
      add_[static_cast<std::size_t>(p)].primary += cx * (x + 2 * (n[p] - target(p) * nc));
    }
  }
  const auto g = static_cast<double>(items_.size[static_cast<std::size_t>(item)]);
  const Cost remove = cost_of(w(a) * remove_class, size_change(a, -g));
  for (int32_t b = 0; b < parts_; ++b) {
    auto& cost = add_[static_cast<std::size_t>(b)];
    cost = remove + cost_of(w(b) * cost.primary, size_change(b, g));
  }
}

// Defined inline: called per candidate, and only from this file.
inline void PartitionSearch::share_changes_of_move(int32_t item, int32_t a) {
  for (auto& cost : add_) cost = {};
  for (std::size_t e = begin(item); e < end(item); ++e) {
    const auto c = static_cast<std::size_t>(items_.cls[e]);
    const double x = items_.count[e];
    const double* n = &count_[c * static_cast<std::size_t>(parts_)];
    const double base = x - n[a];
    for (int32_t b = 0; b < parts_; ++b) {
      add_[static_cast<std::size_t>(b)].primary += share_change(c, 2 * x * (base + n[b]));
    }
  }
  const auto g = static_cast<double>(items_.size[static_cast<std::size_t>(item)]);
  for (int32_t b = 0; b < parts_; ++b) {
    auto& cost = add_[static_cast<std::size_t>(b)];
    const double dq =
        2 * g * (g + size_[static_cast<std::size_t>(b)] - size_[static_cast<std::size_t>(a)]);
    cost.secondary = dq;
    cost.classes = cost.primary;
    cost.primary += size_share_change(dq);
  }
}

// Defined inline: called per candidate, and only from this file.
inline Cost PartitionSearch::move_cost(int32_t item, int32_t from, int32_t to) {
  if (shares_) {
    share_changes_of_move(item, from);
  } else {
    square_changes_of_move(item, from);
  }
  return add_[static_cast<std::size_t>(to)];
}

// Defined inline: called per candidate, and only from this file.
inline Cost PartitionSearch::swap_cost(int32_t item, int32_t a, int32_t other, int32_t b) {
  // d samples of class c move into a and out of b.
  double classes = 0;
  auto add_class = [&](int32_t c, double d) {
    if (shares_) {
      const double na = count_[cell(c, a)], nb = count_[cell(c, b)];
      classes += share_change(static_cast<std::size_t>(c), 2 * d * (d + na - nb));
    } else {
      classes += cw(c) * (w(a) * d * (d + 2 * dev(c, a)) + w(b) * d * (d - 2 * dev(c, b)));
    }
  };
  for (std::size_t e = begin(other); e < end(other); ++e) {
    const auto c = static_cast<std::size_t>(items_.cls[e]);
    if (stamp_[c] == generation_) {
      diff_[c] += items_.count[e];
    } else {
      add_class(items_.cls[e], items_.count[e]);
    }
  }
  for (std::size_t e = begin(item); e < end(item); ++e) {
    add_class(items_.cls[e], static_cast<double>(diff_[static_cast<std::size_t>(items_.cls[e])]));
  }
  for (std::size_t e = begin(other); e < end(other); ++e) {
    const auto c = static_cast<std::size_t>(items_.cls[e]);
    if (stamp_[c] == generation_) diff_[c] -= items_.count[e];
  }
  const auto d = static_cast<double>(items_.size[static_cast<std::size_t>(other)] -
                                     items_.size[static_cast<std::size_t>(item)]);
  if (shares_) {
    const double dq =
        2 * d * (d + size_[static_cast<std::size_t>(a)] - size_[static_cast<std::size_t>(b)]);
    return {classes + size_share_change(dq), dq, classes};
  }
  return cost_of(classes, size_change(a, d) + size_change(b, -d));
}

// Defined inline: called per candidate, and only from this file.
inline bool PartitionSearch::within_bounds(const Cost& cost, int32_t a, double da, int32_t b,
                                           double db) const {
  if (shares_ && class_sum_ + cost.classes > bounds_.max_classes) return false;
  if (bounds_.max_spread == std::numeric_limits<int64_t>::max()) return true;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (int32_t p = 0; p < parts_; ++p) {
    double s = size_[static_cast<std::size_t>(p)];
    if (p == a) s += da;
    if (p == b) s += db;
    lo = std::min(lo, s);
    hi = std::max(hi, s);
  }
  return static_cast<int64_t>(hi - lo) <= bounds_.max_spread;
}

void PartitionSearch::greedy_squares(const std::vector<int32_t>& order) {
  std::vector<double> unplaced(totals_.class_total);
  double unplaced_size = totals_.total;
  for (int32_t item : order) {
    // dev() is measured against the final targets; the items not yet placed
    // (this one excepted) turn it into the deviation from the growing target.
    for (auto& cost : add_) cost = {};
    for (std::size_t e = begin(item); e < end(item); ++e) {
      const int32_t c = items_.cls[e];
      const double x = items_.count[e];
      const double later = unplaced[static_cast<std::size_t>(c)] - x;
      const double cx = cw(c) * x;
      for (int32_t p = 0; p < parts_; ++p) {
        const double d = dev(c, p) + target(p) * later;
        add_[static_cast<std::size_t>(p)].primary += cx * (x + 2 * d);
      }
    }
    const auto g = static_cast<double>(items_.size[static_cast<std::size_t>(item)]);
    const double later_size = unplaced_size - g;
    int32_t best = 0;
    Cost best_cost;
    for (int32_t p = 0; p < parts_; ++p) {
      const double d = size_dev(p) + target(p) * later_size;
      const Cost cost =
          cost_of(w(p) * add_[static_cast<std::size_t>(p)].primary, w(p) * g * (g + 2 * d));
      if (p == 0 || better(cost, best_cost) || (!better(best_cost, cost) && fill(p) < fill(best))) {
        best = p;
        best_cost = cost;
      }
    }
    apply(item, best, +1);
    for (std::size_t e = begin(item); e < end(item); ++e) {
      unplaced[static_cast<std::size_t>(items_.cls[e])] -= items_.count[e];
    }
    unplaced_size -= g;
  }
}

void PartitionSearch::greedy_shares(const std::vector<int32_t>& order) {
  const auto num_classes = static_cast<std::size_t>(items_.num_classes);
  const double keep = 1.0 - 1.0 / parts_;  // x^2 (1 - 1/P): a new item's own share
  std::vector<double> placed(num_classes, 0.0), partial(num_classes, 0.0);
  double placed_size = 0, partial_size = 0;
  for (int32_t item : order) {
    for (auto& cost : add_) cost = {};
    for (std::size_t e = begin(item); e < end(item); ++e) {
      const auto c = static_cast<std::size_t>(items_.cls[e]);
      const double x = items_.count[e];
      const double mean = placed[c] / parts_;
      const double base = partial[c] + x * x * keep;
      const double* n = &count_[c * static_cast<std::size_t>(parts_)];
      for (int32_t b = 0; b < parts_; ++b) {
        add_[static_cast<std::size_t>(b)].primary +=
            std::sqrt(std::max(0.0, base + 2 * x * (n[b] - mean))) * scale_[c];
      }
    }
    const auto g = static_cast<double>(items_.size[static_cast<std::size_t>(item)]);
    const double mean_size = placed_size / parts_;
    int32_t best = 0;
    for (int32_t b = 0; b < parts_; ++b) {
      auto& cost = add_[static_cast<std::size_t>(b)];
      const double s = size_[static_cast<std::size_t>(b)];
      cost.primary +=
          std::sqrt(std::max(0.0, partial_size + g * g * keep + 2 * g * (s - mean_size))) *
          size_scale_;
      cost.secondary = s;
      if (b > 0 && better(cost, add_[static_cast<std::size_t>(best)])) best = b;
    }
    for (std::size_t e = begin(item); e < end(item); ++e) {
      const auto c = static_cast<std::size_t>(items_.cls[e]);
      const double x = items_.count[e];
      partial[c] =
          std::max(0.0, partial[c] + x * x * keep +
                            2 * x * (count_[cell(items_.cls[e], best)] - placed[c] / parts_));
      placed[c] += x;
    }
    partial_size =
        std::max(0.0, partial_size + g * g * keep +
                          2 * g * (size_[static_cast<std::size_t>(best)] - placed_size / parts_));
    placed_size += g;
    apply(item, best, +1);
  }
}

// Defined inline: called per candidate, and only from this file.
inline void PartitionSearch::apply(int32_t item, int32_t p, int sign) {
  for (std::size_t e = begin(item); e < end(item); ++e) {
    count_[cell(items_.cls[e], p)] += sign * items_.count[e];
  }
  size_[static_cast<std::size_t>(p)] +=
      static_cast<double>(sign * items_.size[static_cast<std::size_t>(item)]);
  items_in_[static_cast<std::size_t>(p)] += sign;
  part_[static_cast<std::size_t>(item)] = sign > 0 ? p : -1;
}

// Defined inline: called per candidate, and only from this file.
inline void PartitionSearch::move(int32_t item, int32_t from, int32_t to) {
  if (shares_) {
    // The running sums follow the move; refresh() clears their rounding.
    for (std::size_t e = begin(item); e < end(item); ++e) {
      const auto c = static_cast<std::size_t>(items_.cls[e]);
      const double x = items_.count[e];
      const double dq =
          2 * x * (x + count_[cell(items_.cls[e], to)] - count_[cell(items_.cls[e], from)]);
      dev2_[c] = std::max(0.0, dev2_[c] + dq);
      const double next = std::sqrt(dev2_[c]) * scale_[c];
      class_sum_ += next - std_[c];
      std_[c] = next;
    }
    const auto g = static_cast<double>(items_.size[static_cast<std::size_t>(item)]);
    size_dev2_ = std::max(0.0, size_dev2_ + 2 * g *
                                                (g + size_[static_cast<std::size_t>(to)] -
                                                 size_[static_cast<std::size_t>(from)]));
    size_std_ = std::sqrt(size_dev2_) * size_scale_;
  }
  apply(item, from, -1);
  apply(item, to, +1);
}

}  // namespace imgpack::detail
