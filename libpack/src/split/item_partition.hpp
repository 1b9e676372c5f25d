// Balanced partition of labelled items into parts: the engine of group-aware splits.
//
// An item is a group of samples that must stay together (a patient, a driver, a
// camera site); it has a size and a histogram of its samples' classes.
// partition_items() puts every item whole into one of P parts so that each part's
// size and class counts come close to the part's target fraction of the totals.
//
// Method: a greedy pass places items from the largest down, each into the part
// where it lowers the objective most; then rounds of local search move single
// items between parts and swap items with items of similar size in other
// parts while that lowers the objective, until a round gains little or
// max_rounds. A round costs about O(entries x P + items x swap_candidates x
// entries per item), where entries is the number of (item, class) pairs, so the
// whole run is near-linear in the number of samples. Where that is cheap the
// search is repeated from perturbed greedy orders and the best result kept.
//
// Objectives, with n_pc the samples of class c in part p, s_p the part's size,
// N_c and N the totals, w_p the part's target fraction:
// - Balance::sizes_first (what GroupKFold wants: equal parts; class balance as
//   a free bonus): the sizes term, then the classes term, lexicographically.
// - Balance::classes_and_sizes (holdouts, test sets): classes + size_weight * sizes.
//   With weight_p = 1 / (P w_p)^2 (a small part's proportions count as much as a
//   large part's) and, with ClassWeighting::chi_square, a_c = (N / C) / N_c (the
//   chi-square statistic of the part x class table, scaled so an average class
//   has weight 1), a_c = ((N / C) / N_c)^2 with ClassWeighting::share (each
//   class's deviation relative to its own total, as the class_shares
//   criterion sees it) or a_c = 1 with ClassWeighting::equal:
//     classes(p) = weight_p * sum_c a_c (n_pc - w_p N_c)^2
//     sizes(p)   = weight_p * (s_p - w_p N)^2 * (1 / C with chi_square, else 1)
// - Balance::class_shares (equal parts only; what StratifiedGroupKFold wants):
//   scikit-learn's own criterion, the mean over the C classes present of the
//   standard deviation over parts of n_pc / N_c, plus share_size_weight times
//   the standard deviation over parts of s_p / N. Square roots make its
//   local search stall early, so its greedy attempts first minimise
//   classes_and_sizes (with class_weighting and size_weight), then this.
//
// A reference partition (options.reference, e.g. scikit-learn's result) bounds
// the result: its part-size spread (largest minus smallest) is at most the
// reference's and, with class_shares, so is its class-share criterion (within
// a relative 1e-12: partitions equal in exact arithmetic differ by rounding
// alone, which depends on the order of summation; split.cpp settles such ties
// the way numpy sums). Greedy attempts that end outside the bounds are
// dropped; the reference itself is refined within them as an attempt of its
// own wherever no greedy attempt ends within them, or the input is small, so
// a result within them always exists. A reference that leaves a part empty is
// first given the item whose move there costs least.
//
// Deterministic: the result depends only on the table, the options and the seed,
// not on the machine or thread count. Pure function; safe to call from many
// threads at once.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace imgpack {

// Items and their class histograms in compressed rows: item i's entries are
// [first[i], first[i + 1]) of cls/count, with distinct classes 0..num_classes-1
// and positive counts. size[i] is the sum of the item's counts.
struct ItemTable {
  int32_t num_classes = 0;
  std::vector<int64_t> size;
  std::vector<std::size_t> first{0};
  std::vector<int32_t> cls;
  std::vector<int32_t> count;

  std::size_t num_items() const { return size.size(); }
  // Appends an item from its (class, count) entries. Throws imgpack::Error for
  // a class out of range or a count below 1.
  void add_item(std::span<const int32_t> classes, std::span<const int32_t> counts);
};

enum class Balance { sizes_first, classes_and_sizes, class_shares };
enum class ClassWeighting { equal, chi_square, share };

struct PartitionOptions {
  // Target fraction of every part; positive, summing to 1 (within 1e-9).
  std::vector<double> weights;
  Balance balance = Balance::classes_and_sizes;
  // Weight of the size term against the class term for classes_and_sizes
  // (with chi_square weights, in units of one class).
  double size_weight = 1.0;
  ClassWeighting class_weighting = ClassWeighting::chi_square;
  // Weight of the size term of Balance::class_shares.
  double share_size_weight = 0.5;
  uint64_t seed = 0;
  uint64_t stream = 0;  // keeps the random choices of separate calls apart
  // Local search rounds at most (each a move pass and a swap pass); 0 = greedy only.
  int max_rounds = 24;
  // The search of an attempt stops once it has looked at this many (item
  // entry, part) pairs, within a pass if need be: a bound on the time of
  // large inputs that leaves small ones their full search.
  uint64_t work_budget = UINT64_MAX;
  // The search stops after a round that lowers the objective by less than
  // this fraction (the primary objective, or the secondary where the primary
  // did not change): later rounds gain little and cost as much.
  double min_round_gain = 1e-3;
  // Swap candidates looked at per item and other part: at least this many,
  // more while items x (parts - 1) x candidates stays within swap_budget.
  int swap_candidates = 2;
  uint64_t swap_budget = 100'000;
  // Independent attempts (greedy + search from perturbed orders; the best
  // wins): as many as restart_budget / (entries x parts) allows, 1..max_attempts.
  int max_attempts = 8;
  uint64_t restart_budget = 250'000;
  // The part of every item in a partition to match or beat (see above); empty: none.
  std::vector<int32_t> reference;
};

// What the search did, for tests and benchmarks.
struct PartitionStats {
  // Attempts made (the reference's included); the figures below are the best one's.
  int attempts = 0;
  // Primary objective where the search began: after the greedy pass, after the
  // search on the squares objective for class_shares, or the reference's.
  double greedy_objective = 0;
  double final_objective = 0;
  std::vector<double> round_objective;  // primary objective after each round
  std::vector<double> round_secondary;  // secondary objective after each round
  int rounds = 0;
  uint64_t moves = 0;
  uint64_t swaps = 0;
  // With a reference: its primary objective and part-size spread, and whether
  // the result is the refined reference (rather than a greedy attempt's).
  double reference_objective = 0;
  int64_t reference_spread = 0;
  bool from_reference = false;
  int64_t spread = 0;  // the result's largest minus smallest part size
};

// `items` reordered by decreasing size[item], ties kept in their order: what
// std::stable_sort with `size[a] > size[b]` gives, by a counting sort over the
// distinct sizes (few: groups of N samples have fewer than sqrt(2N)), so that
// it costs O(items) rather than O(items log items) on millions of items.
std::vector<int32_t> by_decreasing_size(std::span<const int32_t> items,
                                        std::span<const int64_t> size);

// Returns the part 0..P-1 of every item. Every part gets at least one item
// (needs num_items >= P). Throws imgpack::Error for invalid options or fewer
// items than parts.
std::vector<int32_t> partition_items(const ItemTable& items, const PartitionOptions& options,
                                     PartitionStats* stats = nullptr);

}  // namespace imgpack
