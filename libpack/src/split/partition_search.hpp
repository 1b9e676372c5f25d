// The partition under construction inside partition_items()
// (item_partition.hpp): item counts per part and class, the objective kept up
// to date as items move, and the greedy and local-search passes over it.
// Internal to libpack. A PartitionSearch is not thread-safe; each attempt of
// partition_items() has its own.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "split/item_partition.hpp"

namespace imgpack::detail {

// An objective value or change, compared lexicographically.
// `classes` is the part of a class_shares change due to the class criterion
// alone (what the bounds limit).
struct Cost {
  double primary = 0;
  double secondary = 0;
  double classes = 0;
};

inline Cost operator+(Cost a, Cost b) {
  return {a.primary + b.primary, a.secondary + b.secondary, a.classes + b.classes};
}

// class_shares criteria this close (relative) are equal up to rounding.
constexpr double kEqualCriterion = 1e-12;

// The totals every attempt shares.
struct Totals {
  std::vector<double> class_total;  // [C] N_c
  double total = 0;                 // N
  int32_t present = 0;              // classes with at least one sample
};

// Limits a constrained search keeps to (class_shares criterion, size spread).
struct Bounds {
  double max_classes = std::numeric_limits<double>::infinity();
  int64_t max_spread = std::numeric_limits<int64_t>::max();
};

// The totals of a table.
Totals totals_of(const ItemTable& items);

// One partition under construction and its objective, kept up to date as
// items move. Counts are exact integers held in doubles. Keeps references to
// the table, the options and the totals, which must outlive it.
class PartitionSearch {
 public:
  PartitionSearch(const ItemTable& items, const PartitionOptions& options, const Totals& totals);

  // Places every item in `order`, each where it leaves the items placed so
  // far best balanced, against targets that grow with the placed totals so
  // that every part fills in step with its weight.
  void greedy(const std::vector<int32_t>& order);

  // Starts from a given partition.
  void place(std::span<const int32_t> parts);

  // Gives every empty part the item whose move there costs least.
  void fill_empty_parts();

  // Constrains the search to partitions within `bounds` (the current one must be).
  void constrain(const Bounds& bounds) { bounds_ = bounds; }

  // Moves single items to the part that lowers the objective most. Returns the moves made.
  uint64_t move_pass(const std::vector<int32_t>& order);

  // Swaps items with items of similar size in other parts where that lowers
  // the objective. Returns the swaps made.
  uint64_t swap_pass(const std::vector<int32_t>& order);

  // Recomputes the running class_shares sums from the counts, so that
  // rounding does not accumulate over many moves.
  void refresh();

  // The objective of the current partition, computed afresh.
  Cost objective() const;

  // class_shares: scikit-learn's criterion of the current partition, afresh.
  double class_criterion() const;

  // Largest minus smallest part size.
  int64_t spread() const;

  bool better(Cost a, Cost b) const {
    if (a.primary < b.primary - tolerance_) return true;
    if (a.primary > b.primary + tolerance_) return false;
    return a.secondary < b.secondary - tolerance_;
  }

  const std::vector<int32_t>& parts() const { return part_; }
  // Entries x parts looked at by the local search so far, and the most it
  // may look at: the passes stop there.
  uint64_t work() const { return work_; }
  void limit_work(uint64_t limit) { work_limit_ = limit; }
  std::vector<int32_t> take_parts() { return std::move(part_); }

 private:
  std::size_t cell(int32_t c, int32_t p) const {
    return static_cast<std::size_t>(c) * static_cast<std::size_t>(parts_) +
           static_cast<std::size_t>(p);
  }
  double target(int32_t p) const { return options_.weights[static_cast<std::size_t>(p)]; }
  double w(int32_t p) const { return weight_[static_cast<std::size_t>(p)]; }
  // The weight of part p's size deviation when choosing swap partners.
  double square_weight(int32_t p) const { return shares_ ? 1.0 : w(p); }
  double cw(int32_t c) const { return class_weight_[static_cast<std::size_t>(c)]; }
  int64_t items_in(int32_t p) const { return items_in_[static_cast<std::size_t>(p)]; }
  std::size_t begin(int32_t item) const { return items_.first[static_cast<std::size_t>(item)]; }
  std::size_t end(int32_t item) const { return items_.first[static_cast<std::size_t>(item) + 1]; }
  // n_pc - w_p N_c and s_p - w_p N.
  double dev(int32_t c, int32_t p) const {
    return count_[cell(c, p)] - target(p) * totals_.class_total[static_cast<std::size_t>(c)];
  }
  double size_dev(int32_t p) const {
    return size_[static_cast<std::size_t>(p)] - target(p) * totals_.total;
  }
  double squared_deviation(std::size_t c) const {
    double sum = 0;
    for (int32_t p = 0; p < parts_; ++p) {
      const double d = dev(static_cast<int32_t>(c), p);
      sum += d * d;
    }
    return sum;
  }

  Cost cost_of(double classes, double sizes) const {
    if (options_.balance == Balance::sizes_first) return {sizes, classes};
    return {classes + size_weight_ * sizes, sizes};
  }

  // Weighted change of the squares' size term when part p grows by `delta` samples.
  double size_change(int32_t p, double delta) const {
    return w(p) * delta * (delta + 2 * size_dev(p));
  }

  // class_shares: the change of a class's term when its sum of squared
  // deviations changes by `dq`.
  double share_change(std::size_t c, double dq) const {
    return std::sqrt(std::max(0.0, dev2_[c] + dq)) * scale_[c] - std_[c];
  }
  double size_share_change(double dq) const {
    return std::sqrt(std::max(0.0, size_dev2_ + dq)) * size_scale_ - size_std_;
  }

  // add_[b] = the change of the objective if `item` moved from a to b (squares).
  void square_changes_of_move(int32_t item, int32_t a);

  // add_[b] = the change of the objective if `item` moved from a to b (class_shares).
  void share_changes_of_move(int32_t item, int32_t a);

  Cost move_cost(int32_t item, int32_t from, int32_t to);

  // Change of the objective if `item` (in a) and `other` (in b) traded places.
  // diff_ holds minus item's counts for the classes stamped with generation_.
  Cost swap_cost(int32_t item, int32_t a, int32_t other, int32_t b);

  // Whether moving da samples into a and db into b (and, for class_shares,
  // changing the class criterion by cost.classes) stays within the bounds.
  bool within_bounds(const Cost& cost, int32_t a, double da, int32_t b, double db) const;

  void greedy_squares(const std::vector<int32_t>& order);

  // scikit-learn's rule (the part where the criterion over the items placed
  // so far comes out lowest) plus the size term; ties go to the lighter part.
  void greedy_shares(const std::vector<int32_t>& order);

  // How full part p is relative to its target (for tie-breaks).
  double fill(int32_t p) const { return size_dev(p) / target(p); }

  void apply(int32_t item, int32_t p, int sign);

  // Numbers the items' distinct sizes, ascending (size_rank_, distinct_size_).
  void rank_sizes();

  void move(int32_t item, int32_t from, int32_t to);

  const ItemTable& items_;
  const PartitionOptions& options_;
  const Totals& totals_;
  const int32_t parts_;
  const bool shares_;
  double tolerance_ = 1e-6;  // squares: counts are integers, real changes are far larger
  std::vector<int32_t> part_;
  std::vector<double> count_;      // [C x P] n_pc
  std::vector<double> size_;       // [P] s_p
  std::vector<int64_t> items_in_;  // [P]
  // Squares.
  std::vector<double> weight_;        // [P] weight_p
  std::vector<double> class_weight_;  // [C] a_c
  double size_weight_ = 1;
  // class_shares: per class sum_p (n_pc - N_c / P)^2 and its term of the criterion.
  std::vector<double> scale_;  // [C] 1 / (N_c sqrt(P) C)
  std::vector<double> dev2_;   // [C]
  std::vector<double> std_;    // [C] sqrt(dev2_) * scale_
  double class_sum_ = 0;       // the criterion: sum of std_
  double size_scale_ = 0, size_dev2_ = 0, size_std_ = 0;
  Bounds bounds_;
  // The items' sizes ranked, for the swap pass's counting sort (made on its first call).
  std::vector<int32_t> size_rank_;      // [items] rank of the item's size in distinct_size_
  std::vector<int64_t> distinct_size_;  // ascending
  // Scratch.
  std::vector<Cost> add_;        // [P]
  std::vector<int64_t> diff_;    // [C]
  std::vector<uint32_t> stamp_;  // [C] which classes diff_ holds
  uint32_t generation_ = 0;
  uint64_t work_ = 0;
  uint64_t work_limit_ = std::numeric_limits<uint64_t>::max();
};

}  // namespace imgpack::detail
