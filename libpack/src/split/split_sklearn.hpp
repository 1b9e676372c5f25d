// scikit-learn 1.2's group k-fold splitters, replayed exactly.
//
// split.cpp starts its group-aware k-fold searches from what scikit-learn
// would return on the same labels and groups and keeps the result only where
// it is no worse, so imgpack's splits are never worse than scikit-learn's by
// construction. That needs scikit-learn's result to the sample, not an
// approximation of it:
//
// - StratifiedGroupKFold(k, shuffle=False) visits the groups by decreasing
//   standard deviation of their class counts and puts each into the fold
//   where np.mean(np.std(counts_per_fold / class_totals, axis=0)) comes out
//   lowest, ties within np.isclose going to the fold with fewer samples. Many
//   of those comparisons are ties in exact arithmetic (empty folds, groups of
//   one sample) that numpy's rounding decides, so every figure is computed
//   here with numpy's summation order and numpy's operations, bit for bit
//   (split_sklearn.cpp is built without floating-point contraction).
// - GroupKFold(k) puts the groups, largest first, into the fold with the
//   fewest samples: its fold sizes depend only on the group sizes.
//
// Internal to libpack. Pure functions; safe to call from many threads at once.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "split/item_partition.hpp"

namespace imgpack::sklearn {

// np.add.reduce over a contiguous float64 array, bit for bit: numpy's
// pairwise summation over chunks of 8192 values, the chunks' sums added in
// order to 0.
double numpy_sum(std::span<const double> values);

// The fold 0..folds-1 of every item where StratifiedGroupKFold(folds) puts it.
// `items` are the groups with their class histograms; item_rank[i] is item i's
// index in np.unique of the group ids and class_rank[c] class c's index in
// np.unique of the labels (both permutations). Every class of the table must
// occur in some item. Cost: O(items x folds x (classes + folds x entries per
// item)).
std::vector<int32_t> stratified_group_kfold(const ItemTable& items,
                                            std::span<const int32_t> item_rank,
                                            std::span<const int32_t> class_rank, int32_t folds);

// StratifiedGroupKFold's criterion of a partition (part[i]: the fold of item
// i), np.mean(np.std(counts_per_fold / class_totals, axis=0)), as numpy
// computes it: the figure that scikit-learn's greedy minimises, bit for bit.
double stratified_group_criterion(const ItemTable& items, std::span<const int32_t> part,
                                  std::span<const int32_t> class_rank, int32_t folds);

// The work stratified_group_kfold() would do, in floating-point operations,
// so that callers can leave it out where it would take too long.
uint64_t stratified_group_kfold_work(const ItemTable& items, int32_t folds);

// The fold of every item of the given sizes as GroupKFold(folds) puts it
// (equal sizes in item order; scikit-learn's order among them differs, its
// fold sizes do not).
std::vector<int32_t> group_kfold(std::span<const int64_t> sizes, int32_t folds);

}  // namespace imgpack::sklearn
