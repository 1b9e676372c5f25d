// Tests for extend_split and split_extension_imbalance
// (libpack/src/split/split_extend.cpp): old parts kept, removals, groups
// joined and kept whole, balance against the targets, never worse than
// splitting the new samples alone, determinism, refusals.
#include "split/split_extend.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "imgpack/error.hpp"
#include "imgpack/split.hpp"
#include "random.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

// Labels of `n` samples over `classes` classes of falling frequency (class c
// about 1 / (c + 1) as common as class 0), a few unlabeled.
std::vector<int32_t> skewed_labels(std::size_t n, int32_t classes, uint64_t seed) {
  std::vector<double> cumulative;
  cumulative.reserve(static_cast<std::size_t>(classes));
  double total = 0;
  for (int32_t c = 0; c < classes; ++c) cumulative.push_back(total += 1.0 / (c + 1));
  CounterRng rng(seed, 7);
  std::vector<int32_t> labels(n);
  for (int32_t& label : labels) {
    if (rng.uniform() < 0.03) {
      label = -1;
      continue;
    }
    const double u = rng.uniform(0, total);
    label = static_cast<int32_t>(std::upper_bound(cumulative.begin(), cumulative.end(), u) -
                                 cumulative.begin());
    label = std::min(label, classes - 1);
  }
  return labels;
}

// Groups of 1..`max_size` consecutive samples numbered from `first_id`; every
// tenth sample has none.
std::vector<int32_t> consecutive_groups(std::size_t n, int32_t first_id, uint64_t max_size,
                                        uint64_t seed) {
  CounterRng rng(seed, 11);
  std::vector<int32_t> groups(n);
  int32_t id = first_id;
  uint64_t left = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (left == 0) {
      left = 1 + rng.below(max_size);
      ++id;
    }
    --left;
    groups[i] = i % 10 == 9 ? -1 : id;
  }
  return groups;
}

template <class T>
std::vector<T> concat(const std::vector<T>& a, const std::vector<T>& b) {
  std::vector<T> out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// A split stored by compute_split over the old samples.
Split stored_split(const SplitSpec& spec, const std::vector<int32_t>& labels,
                   const std::vector<int32_t>& groups, MultilabelRows multilabel = {}) {
  return named_split("cv", spec, compute_split(labels, groups, spec, {}, multilabel), "");
}

SplitSpec kfold(SplitKind kind, int32_t folds, uint64_t seed, double test_fraction = 0) {
  SplitSpec spec;
  spec.kind = kind;
  spec.folds = folds;
  spec.seed = seed;
  spec.test_fraction = test_fraction;
  return spec;
}

SplitSpec holdout(double val_fraction, uint64_t seed) {
  SplitSpec spec;
  spec.kind = SplitKind::holdout;
  spec.val_fraction = val_fraction;
  spec.seed = seed;
  return spec;
}

// Part index of an assignment: folds 0..k-1, the test set k.
std::size_t part_of(int16_t value, int32_t folds) {
  return value < 0 ? static_cast<std::size_t>(folds) : static_cast<std::size_t>(value);
}

// The largest |n_pc - w_p N_c| over classes c and parts p, the shares w_p
// taken from the old assignment, every sample counted (none removed).
double largest_class_deviation(const Split& split, const std::vector<int16_t>& assign,
                               const std::vector<int32_t>& labels) {
  const auto parts = static_cast<std::size_t>(split.folds) + 1;
  std::vector<double> share(parts, 0);
  for (int16_t v : split.assign) share[part_of(v, split.folds)] += 1;
  for (double& w : share) w /= static_cast<double>(split.assign.size());
  std::map<int32_t, std::vector<double>> count;
  std::map<int32_t, double> total;
  for (std::size_t i = 0; i < assign.size(); ++i) {
    auto& row = count[labels[i]];
    row.resize(parts, 0);
    row[part_of(assign[i], split.folds)] += 1;
    total[labels[i]] += 1;
  }
  double worst = 0;
  for (const auto& [label, row] : count) {
    for (std::size_t p = 0; p < parts; ++p) {
      worst = std::max(worst, std::abs(row[p] - share[p] * total[label]));
    }
  }
  return worst;
}

void expect_old_kept(const Split& split, const std::vector<int16_t>& assign) {
  ASSERT_GE(assign.size(), split.assign.size());
  for (std::size_t i = 0; i < split.assign.size(); ++i) {
    ASSERT_EQ(assign[i], split.assign[i]) << "old sample " << i;
  }
}

void expect_in_range(const std::vector<int16_t>& assign, int32_t folds) {
  for (std::size_t i = 0; i < assign.size(); ++i) {
    ASSERT_GE(assign[i], -1) << "sample " << i;
    ASSERT_LT(assign[i], folds) << "sample " << i;
  }
}

// The assignment where the new samples are split alone by compute_split with
// the split's spec: what rule 4 compares against when no new sample joins an
// old group. Empty when compute_split refuses them.
std::vector<int16_t> split_alone(const Split& split, const SplitSpec& spec,
                                 const std::vector<int32_t>& labels,
                                 const std::vector<int32_t>& groups) {
  const std::size_t old = split.assign.size();
  const std::vector<int32_t> new_labels(labels.begin() + static_cast<std::ptrdiff_t>(old),
                                        labels.end());
  const std::vector<int32_t> new_groups(groups.begin() + static_cast<std::ptrdiff_t>(old),
                                        groups.end());
  SplitResult alone;
  try {
    alone = compute_split(new_labels, new_groups, spec);
  } catch (const UsageError&) {
    return {};
  }
  return concat(std::vector<int16_t>(split.assign.begin(), split.assign.end()), alone.assign);
}

TEST(SplitExtend, OldAssignmentsAreKeptAndNewSamplesPlaced) {
  const std::vector<int32_t> labels = skewed_labels(800, 6, 1);
  const std::vector<int32_t> groups(800, -1);
  const std::vector<int32_t> old_labels(labels.begin(), labels.begin() + 500);
  const Split split =
      stored_split(kfold(SplitKind::stratified, 5, 3), old_labels, std::vector<int32_t>(500, -1));
  const SplitExtension out = extend_split(split, labels, groups, {}, {});
  ASSERT_EQ(out.assign.size(), 800u);
  expect_old_kept(split, out.assign);
  expect_in_range(out.assign, 5);
  EXPECT_TRUE(out.warnings.empty());
  // Every fold gets about a fifth of the 300 new samples.
  std::vector<int> new_per_fold(5, 0);
  for (std::size_t i = 500; i < 800; ++i) ++new_per_fold[static_cast<std::size_t>(out.assign[i])];
  for (int n : new_per_fold) EXPECT_NEAR(n, 60, 4);
}

TEST(SplitExtend, NothingNewReturnsTheOldAssignment) {
  const std::vector<int32_t> labels = skewed_labels(200, 3, 2);
  const std::vector<int32_t> groups(200, -1);
  const Split split = stored_split(kfold(SplitKind::stratified, 4, 9, 0.2), labels, groups);
  const SplitExtension out = extend_split(split, labels, groups, {}, {});
  EXPECT_EQ(out.assign, std::vector<int16_t>(split.assign.begin(), split.assign.end()));
  EXPECT_TRUE(out.warnings.empty());
}

TEST(SplitExtend, RemovedSamplesLeaveEveryRole) {
  const std::vector<int32_t> labels = skewed_labels(300, 3, 4);
  const std::vector<int32_t> groups(300, -1);
  Split split = stored_split(kfold(SplitKind::random, 3, 5),
                             std::vector<int32_t>(labels.begin(), labels.begin() + 200),
                             std::vector<int32_t>(200, -1));
  split.assign[7] = kRemovedFold;  // removed by an earlier extension
  std::vector<uint8_t> removed(300, 0);
  removed[0] = removed[50] = removed[199] = removed[200] = removed[299] = 1;
  const SplitExtension out = extend_split(split, labels, groups, {}, removed);
  for (std::size_t i : {0u, 7u, 50u, 199u, 200u, 299u}) {
    EXPECT_EQ(out.assign[i], kRemovedFold) << "sample " << i;
  }
  for (std::size_t i = 0; i < 300; ++i) {
    if (removed[i] != 0 || i == 7) continue;
    if (i < 200) {
      EXPECT_EQ(out.assign[i], split.assign[i]) << "sample " << i;
    } else {
      EXPECT_GE(out.assign[i], 0) << "sample " << i;
      EXPECT_LT(out.assign[i], 3) << "sample " << i;
    }
  }
}

TEST(SplitExtend, APartWhoseOldSamplesAreAllRemovedGetsNoNewOnes) {
  const std::vector<int32_t> labels = skewed_labels(400, 2, 6);
  const std::vector<int32_t> groups(400, -1);
  const Split split = stored_split(kfold(SplitKind::stratified, 4, 1),
                                   std::vector<int32_t>(labels.begin(), labels.begin() + 200),
                                   std::vector<int32_t>(200, -1));
  std::vector<uint8_t> removed(400, 0);
  for (std::size_t i = 0; i < 200; ++i) removed[i] = split.assign[i] == 2 ? 1 : 0;
  const SplitExtension out = extend_split(split, labels, groups, {}, removed);
  std::vector<int> new_per_fold(4, 0);
  for (std::size_t i = 200; i < 400; ++i) ++new_per_fold[static_cast<std::size_t>(out.assign[i])];
  EXPECT_EQ(new_per_fold[2], 0);
  for (std::size_t f : {0u, 1u, 3u}) EXPECT_NEAR(new_per_fold[f], 200.0 / 3, 3);
  ASSERT_EQ(out.warnings.size(), 1u);
  EXPECT_NE(out.warnings[0].find("fold 2"), std::string::npos) << out.warnings[0];
}

TEST(SplitExtend, EveryOldSampleRemovedFallsBackToTheSpecShares) {
  const std::vector<int32_t> labels = skewed_labels(600, 2, 8);
  const std::vector<int32_t> groups(600, -1);
  SplitSpec spec = kfold(SplitKind::stratified, 5, 2, 0.25);
  const Split split = stored_split(spec, std::vector<int32_t>(labels.begin(), labels.begin() + 100),
                                   std::vector<int32_t>(100, -1));
  std::vector<uint8_t> removed(600, 0);
  std::fill(removed.begin(), removed.begin() + 100, 1);
  const SplitExtension out = extend_split(split, labels, groups, {}, removed);
  int test = 0;
  std::vector<int> per_fold(5, 0);
  for (std::size_t i = 100; i < 600; ++i) {
    if (out.assign[i] == -1) {
      ++test;
    } else {
      ++per_fold[static_cast<std::size_t>(out.assign[i])];
    }
  }
  EXPECT_NEAR(test, 125, 3);
  for (int n : per_fold) EXPECT_NEAR(n, 75, 3);
}

TEST(SplitExtend, NewMembersOfAnOldGroupJoinItsPart) {
  // Old: 60 groups of 1..8 samples; new: members of old groups, then new groups.
  const std::vector<int32_t> old_groups = consecutive_groups(240, 0, 8, 1);
  const std::vector<int32_t> old_labels = skewed_labels(240, 3, 2);
  const Split split =
      stored_split(kfold(SplitKind::stratified_group, 4, 7, 0.2), old_labels, old_groups);
  ASSERT_TRUE(split.grouped);
  std::map<int32_t, int16_t> part_of_group;
  for (std::size_t i = 0; i < 240; ++i) {
    if (old_groups[i] >= 0) part_of_group[old_groups[i]] = split.assign[i];
  }
  std::vector<int32_t> groups = old_groups, labels = old_labels;
  CounterRng rng(3);
  std::vector<int32_t> old_ids;
  old_ids.reserve(part_of_group.size());
  for (const auto& [g, part] : part_of_group) old_ids.push_back(g);
  for (int i = 0; i < 120; ++i) {
    groups.push_back(old_ids[rng.below(old_ids.size())]);
    labels.push_back(static_cast<int32_t>(rng.below(3)));
  }
  const std::vector<int32_t> fresh = consecutive_groups(120, 1000, 6, 4);
  groups.insert(groups.end(), fresh.begin(), fresh.end());
  const std::vector<int32_t> fresh_labels = skewed_labels(120, 3, 5);
  labels.insert(labels.end(), fresh_labels.begin(), fresh_labels.end());

  const SplitExtension out = extend_split(split, labels, groups, {}, {});
  expect_old_kept(split, out.assign);
  bool saw_test = false;
  for (std::size_t i = 240; i < 360; ++i) {
    EXPECT_EQ(out.assign[i], part_of_group.at(groups[i])) << "sample " << i;
    saw_test = saw_test || out.assign[i] == -1;
  }
  EXPECT_TRUE(saw_test) << "no new sample joined a group of the test set";
  // Every group, old or new, sits in one part.
  std::map<int32_t, std::set<int16_t>> parts;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (groups[i] >= 0) parts[groups[i]].insert(out.assign[i]);
  }
  for (const auto& [g, in] : parts) EXPECT_EQ(in.size(), 1u) << "group " << g;
}

TEST(SplitExtend, NewGroupsStayWholeAndBalanced) {
  const std::vector<int32_t> old_groups = consecutive_groups(500, 0, 10, 5);
  const std::vector<int32_t> new_groups = consecutive_groups(500, 5000, 10, 6);
  const std::vector<int32_t> groups = concat(old_groups, new_groups);
  const std::vector<int32_t> labels = skewed_labels(1000, 4, 6);
  const Split split =
      stored_split(kfold(SplitKind::group, 5, 8),
                   std::vector<int32_t>(labels.begin(), labels.begin() + 500), old_groups);
  const SplitExtension out = extend_split(split, labels, groups, {}, {});
  expect_old_kept(split, out.assign);
  expect_in_range(out.assign, 5);
  std::map<int32_t, std::set<int16_t>> parts;
  for (std::size_t i = 500; i < 1000; ++i) {
    if (groups[i] >= 0) parts[groups[i]].insert(out.assign[i]);
  }
  for (const auto& [g, in] : parts) EXPECT_EQ(in.size(), 1u) << "group " << g;
  // Fold sizes after the growth within a group's size of the target.
  std::vector<double> share(5, 0), size(5, 0);
  for (int16_t v : split.assign) share[static_cast<std::size_t>(v)] += 1.0 / 500;
  for (int16_t v : out.assign) size[static_cast<std::size_t>(v)] += 1;
  for (std::size_t f = 0; f < 5; ++f) EXPECT_NEAR(size[f], share[f] * 1000, 10) << "fold " << f;
}

TEST(SplitExtend, OldGroupSplitAcrossPartsJoinsTheMostCommonOne) {
  Split split;
  split.name = "mixed";
  split.kind = "group";
  split.folds = 3;
  split.grouped = true;
  split.assign = {1, 1, 2, 0, 2, -1, 0, 1};
  const std::vector<int32_t> groups = {7, 7, 7, 8, 8, 8, 9, 9, 7, 8, 9};
  const std::vector<int32_t> labels(groups.size(), 0);
  const SplitExtension out = extend_split(split, labels, groups, {}, {});
  EXPECT_EQ(out.assign[8], 1);   // group 7: 1, 1, 2
  EXPECT_EQ(out.assign[9], -1);  // group 8: 0, 2, -1 tie: the lowest value
  EXPECT_EQ(out.assign[10], 0);  // group 9: 0, 1 tie
  ASSERT_EQ(out.warnings.size(), 1u);
  EXPECT_NE(out.warnings[0].find("'mixed'"), std::string::npos) << out.warnings[0];
}

TEST(SplitExtend, UngroupedSplitPlacesNewMembersOfOldGroupsByBalance) {
  // A stratified (not grouped) split: groups mean nothing to it.
  const std::vector<int32_t> labels(400, 0);
  std::vector<int32_t> groups(400, 1);
  const Split split = stored_split(kfold(SplitKind::random, 4, 1),
                                   std::vector<int32_t>(labels.begin(), labels.begin() + 200),
                                   std::vector<int32_t>(groups.begin(), groups.begin() + 200));
  const SplitExtension out = extend_split(split, labels, groups, {}, {});
  std::vector<int> per_fold(4, 0);
  for (std::size_t i = 200; i < 400; ++i) ++per_fold[static_cast<std::size_t>(out.assign[i])];
  for (int n : per_fold) EXPECT_EQ(n, 50);
}

// 1000 old samples of a stratified 5-fold split, 100 or 1000 new ones: every
// class's count in every fold stays within 2 samples of its target (old
// samples within 1 and the new ones split alone within 1 give no better)
// and every fold's size within 1.
TEST(SplitExtend, StratifiedFoldsStayBalanced) {
  for (std::size_t added : {100u, 1000u}) {
    for (uint64_t seed = 0; seed < 20; ++seed) {
      const std::vector<int32_t> labels = skewed_labels(1000 + added, 8, seed);
      const std::vector<int32_t> groups(labels.size(), -1);
      const Split split = stored_split(kfold(SplitKind::stratified, 5, seed),
                                       std::vector<int32_t>(labels.begin(), labels.begin() + 1000),
                                       std::vector<int32_t>(1000, -1));
      const SplitExtension out = extend_split(split, labels, groups, {}, {});
      expect_old_kept(split, out.assign);
      expect_in_range(out.assign, 5);
      EXPECT_LE(largest_class_deviation(split, out.assign, labels), 2.0)
          << added << " new samples, seed " << seed;
      const std::vector<int32_t> one_class(labels.size(), 0);
      EXPECT_LE(largest_class_deviation(split, out.assign, one_class), 1.0)
          << added << " new samples, seed " << seed;
    }
  }
}

TEST(SplitExtend, TestPartKeepsItsShare) {
  const std::vector<int32_t> labels = skewed_labels(2000, 5, 12);
  const std::vector<int32_t> groups(2000, -1);
  const Split split = stored_split(kfold(SplitKind::stratified, 5, 4, 0.2),
                                   std::vector<int32_t>(labels.begin(), labels.begin() + 1000),
                                   std::vector<int32_t>(1000, -1));
  const SplitExtension out = extend_split(split, labels, groups, {}, {});
  expect_old_kept(split, out.assign);
  expect_in_range(out.assign, 5);
  int test = 0;
  for (std::size_t i = 1000; i < 2000; ++i) test += out.assign[i] == -1 ? 1 : 0;
  EXPECT_NEAR(test, 200, 3);
  EXPECT_LE(largest_class_deviation(split, out.assign, labels), 1.5);
}

TEST(SplitExtend, HoldoutKeepsItsValidationShare) {
  const std::vector<int32_t> labels = skewed_labels(1500, 4, 13);
  const std::vector<int32_t> groups(1500, -1);
  const Split split =
      stored_split(holdout(0.2, 6), std::vector<int32_t>(labels.begin(), labels.begin() + 1000),
                   std::vector<int32_t>(1000, -1));
  ASSERT_EQ(split.folds, 2);
  ASSERT_TRUE(split.stratified);
  const SplitExtension out = extend_split(split, labels, groups, {}, {});
  expect_old_kept(split, out.assign);
  expect_in_range(out.assign, 2);
  int val = 0;
  for (std::size_t i = 1000; i < 1500; ++i) val += out.assign[i] == 0 ? 1 : 0;
  EXPECT_NEAR(val, 100, 3);
  EXPECT_LE(largest_class_deviation(split, out.assign, labels), 1.5);
}

TEST(SplitExtend, ImportedSplitIsExtendedByBalance) {
  Split split;
  split.name = "theirs";
  split.kind = kImportedSplitKind;
  split.folds = 3;
  // Uneven folds: 50%, 30%, 20%.
  std::vector<int16_t> assign(100, 0);
  std::fill(assign.begin() + 50, assign.begin() + 80, int16_t{1});
  std::fill(assign.begin() + 80, assign.end(), int16_t{2});
  split.assign = assign;
  const std::vector<int32_t> labels = skewed_labels(300, 3, 14);
  const std::vector<int32_t> groups(300, -1);
  const SplitExtension out = extend_split(split, labels, groups, {}, {});
  expect_old_kept(split, out.assign);
  std::vector<int> per_fold(3, 0);
  for (std::size_t i = 100; i < 300; ++i) ++per_fold[static_cast<std::size_t>(out.assign[i])];
  EXPECT_EQ(per_fold, (std::vector<int>{100, 60, 40}));
}

TEST(SplitExtend, MultilabelColumnsStayBalanced) {
  const std::size_t n = 1200, columns = 4;
  CounterRng rng(15);
  std::vector<uint8_t> rows(n * columns);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i] = rng.uniform() < 0.1 * static_cast<double>(1 + i % columns) ? 1 : 0;
  }
  const std::vector<int32_t> labels(n, -1), groups(n, -1);
  const SplitSpec spec = kfold(SplitKind::stratified, 4, 2);
  const Split split =
      stored_split(spec, std::vector<int32_t>(600, -1), std::vector<int32_t>(600, -1),
                   {std::span(rows).first(600 * columns), columns});
  ASSERT_TRUE(split.stratified);
  const SplitExtension out = extend_split(split, labels, groups, {rows, columns}, {});
  expect_old_kept(split, out.assign);
  expect_in_range(out.assign, 4);
  std::vector<double> share(4, 0);
  for (int16_t v : split.assign) share[static_cast<std::size_t>(v)] += 1.0 / 600;
  for (std::size_t c = 0; c < columns; ++c) {
    std::vector<double> count(4, 0);
    double total = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (rows[i * columns + c] == 0) continue;
      count[static_cast<std::size_t>(out.assign[i])] += 1;
      total += 1;
    }
    for (std::size_t f = 0; f < 4; ++f) {
      EXPECT_LE(std::abs(count[f] - share[f] * total), 4) << "column " << c << " fold " << f;
    }
  }
}

TEST(SplitExtend, FewNewSamplesArePlacedByBalanceAlone) {
  // One new sample: too few for a 5-fold split of its own.
  const std::vector<int32_t> labels = skewed_labels(101, 3, 16);
  const std::vector<int32_t> groups(101, -1);
  const Split split = stored_split(kfold(SplitKind::stratified, 5, 1),
                                   std::vector<int32_t>(labels.begin(), labels.begin() + 100),
                                   std::vector<int32_t>(100, -1));
  const SplitExtension out = extend_split(split, labels, groups, {}, {});
  expect_old_kept(split, out.assign);
  expect_in_range(out.assign, 5);
  EXPECT_LE(largest_class_deviation(split, out.assign, labels), 1.0);
}

TEST(SplitExtend, IsDeterministic) {
  const std::vector<int32_t> labels = skewed_labels(900, 5, 17);
  const std::vector<int32_t> groups =
      concat(consecutive_groups(400, 0, 6, 1), consecutive_groups(500, 900, 6, 2));
  const Split split = stored_split(kfold(SplitKind::stratified_group, 3, 5),
                                   std::vector<int32_t>(labels.begin(), labels.begin() + 400),
                                   std::vector<int32_t>(groups.begin(), groups.begin() + 400));
  const SplitExtension a = extend_split(split, labels, groups, {}, {});
  const SplitExtension b = extend_split(split, labels, groups, {}, {});
  EXPECT_EQ(a.assign, b.assign);
  EXPECT_EQ(a.warnings, b.warnings);
}

// Rule 4 over hundreds of random layouts and several kinds: the result's
// imbalance is never above that of the new samples split alone by the
// split's own kind (no new sample joins an old group here, so that candidate
// is old assignment + compute_split over the new samples).
TEST(SplitExtend, NeverWorseThanSplittingTheNewSamplesAlone) {
  // Every fifth layout under a sanitizer (all six kinds: 5 and 6 are coprime).
  const uint64_t step = test::sweep_step(5);
  const int layouts = static_cast<int>(300 / step);
  int compared = 0, better = 0;
  for (uint64_t seed = 0; seed < 300; seed += step) {
    CounterRng rng(seed, 99);
    const std::size_t old = 200 + rng.below(801);
    const std::size_t added = 10 + rng.below(991);
    const auto classes = static_cast<int32_t>(2 + rng.below(9));
    const std::vector<int32_t> labels = skewed_labels(old + added, classes, seed);
    const std::vector<int32_t> groups = concat(consecutive_groups(old, 0, 8, seed),
                                               consecutive_groups(added, 100'000, 8, seed + 1));
    SplitSpec spec;
    switch (seed % 6) {
      case 0:
        spec = kfold(SplitKind::stratified, 5, seed);
        break;
      case 1:
        spec = kfold(SplitKind::stratified, 5, seed, 0.2);
        break;
      case 2:
        spec = kfold(SplitKind::random, 4, seed);
        break;
      case 3:
        spec = holdout(0.25, seed);
        break;
      case 4:
        spec = kfold(SplitKind::stratified_group, 5, seed);
        break;
      default:
        spec = kfold(SplitKind::group, 3, seed, 0.1);
        break;
    }
    const Split split = stored_split(
        spec,
        std::vector<int32_t>(labels.begin(), labels.begin() + static_cast<std::ptrdiff_t>(old)),
        std::vector<int32_t>(groups.begin(), groups.begin() + static_cast<std::ptrdiff_t>(old)));
    const SplitExtension out = extend_split(split, labels, groups, {}, {});
    expect_old_kept(split, out.assign);
    expect_in_range(out.assign, split.folds);
    const std::vector<int16_t> alone = split_alone(split, spec, labels, groups);
    if (alone.empty()) continue;
    ++compared;
    const double ours = split_extension_imbalance(split, out.assign, labels, {}, {});
    const double theirs = split_extension_imbalance(split, alone, labels, {}, {});
    EXPECT_LE(ours, theirs) << "seed " << seed << ", kind " << split.kind;
    better += ours < theirs ? 1 : 0;
  }
  // Nearly every layout leaves the new samples enough for a split of their own.
  EXPECT_GE(compared, layouts * 14 / 15);
  // And balancing against the old parts usually does strictly better.
  EXPECT_GE(better, compared / 2);
}

// The same with large groups that lean to one class, where placing whole
// groups by balance is hardest: the result never loses to the new groups
// split alone, and every new group stays whole.
TEST(SplitExtend, NeverWorseThanSplittingTheNewGroupsAlone) {
  // Every fifth layout under a sanitizer (both kinds: 5 is odd).
  const uint64_t step = test::sweep_step(5);
  const int layouts = static_cast<int>(200 / step);
  int compared = 0;
  for (uint64_t seed = 0; seed < 200; seed += step) {
    CounterRng rng(seed, 5);
    const std::size_t old = 100 + rng.below(300), added = 30 + rng.below(300);
    const auto classes = static_cast<int32_t>(2 + rng.below(5));
    const uint64_t largest_group = 10 + rng.below(60);
    std::vector<int32_t> labels = skewed_labels(old + added, classes, seed);
    const std::vector<int32_t> groups =
        concat(consecutive_groups(old, 0, largest_group, seed),
               consecutive_groups(added, 100'000, largest_group, seed + 1));
    for (std::size_t i = 1; i < labels.size(); ++i) {
      if (groups[i] >= 0 && groups[i] == groups[i - 1] && rng.uniform() < 0.8) {
        labels[i] = labels[i - 1];
      }
    }
    const SplitSpec spec = kfold(seed % 2 ? SplitKind::stratified_group : SplitKind::group,
                                 3 + static_cast<int32_t>(rng.below(3)), seed);
    const auto old_end = static_cast<std::ptrdiff_t>(old);
    const Split split =
        stored_split(spec, std::vector<int32_t>(labels.begin(), labels.begin() + old_end),
                     std::vector<int32_t>(groups.begin(), groups.begin() + old_end));
    const SplitExtension out = extend_split(split, labels, groups, {}, {});
    expect_old_kept(split, out.assign);
    expect_in_range(out.assign, split.folds);
    std::map<int32_t, std::set<int16_t>> parts;
    for (std::size_t i = old; i < labels.size(); ++i) {
      if (groups[i] >= 0) parts[groups[i]].insert(out.assign[i]);
    }
    for (const auto& [g, in] : parts) EXPECT_EQ(in.size(), 1u) << "seed " << seed << " group " << g;
    const std::vector<int16_t> alone = split_alone(split, spec, labels, groups);
    if (alone.empty()) continue;
    ++compared;
    EXPECT_LE(split_extension_imbalance(split, out.assign, labels, {}, {}),
              split_extension_imbalance(split, alone, labels, {}, {}))
        << "seed " << seed << ", kind " << split.kind;
  }
  EXPECT_GE(compared, layouts * 9 / 10);
}

// Many classes of a few new samples each place as well in any fold by
// their class: the fold sizes decide, so they do not pile into fold 0
// (2000 old and 2000 new samples, half of class 0, the rest over 499
// classes, 20 folds; plain and grouped by singleton groups).
TEST(SplitExtend, ManySmallClassesKeepTheFoldSizes) {
  std::vector<int32_t> labels(4000);
  CounterRng rng(3, 11);
  for (int32_t& label : labels) {
    label = rng.uniform() < 0.5 ? 0 : static_cast<int32_t>(rng.uniform(1, 500));
  }
  std::vector<int32_t> groups(labels.size());
  std::iota(groups.begin(), groups.end(), 0);
  for (const SplitKind kind : {SplitKind::stratified, SplitKind::stratified_group}) {
    const Split split = stored_split(kfold(kind, 20, 5),
                                     std::vector<int32_t>(labels.begin(), labels.begin() + 2000),
                                     std::vector<int32_t>(groups.begin(), groups.begin() + 2000));
    const SplitExtension out = extend_split(split, labels, groups, {}, {});
    expect_old_kept(split, out.assign);
    const std::vector<int32_t> one_class(labels.size(), 0);
    EXPECT_LE(largest_class_deviation(split, out.assign, one_class), 1.0) << split.kind;
    EXPECT_LE(largest_class_deviation(split, out.assign, labels), 2.0) << split.kind;
  }
}

TEST(SplitExtensionImbalance, SumsAbsoluteDeviationsFromTheTargets) {
  Split split;
  split.name = "hand";
  split.kind = "random";
  split.folds = 2;
  split.assign = {0, 0, 1, 1};  // shares 1/2, 1/2, no test set
  const std::vector<int32_t> labels = {0, 1, 0, 1, 0, 0};
  // Sizes 4 and 2 against 3 and 3.
  EXPECT_DOUBLE_EQ(
      split_extension_imbalance(split, std::vector<int16_t>{0, 0, 1, 1, 0, 0}, labels, {}, {}),
      2.0);
  // A removed sample counts nowhere: sizes 3 and 2 against 2.5 and 2.5.
  EXPECT_DOUBLE_EQ(
      split_extension_imbalance(split, std::vector<int16_t>{0, 0, 1, 1, 0, -2}, labels, {}, {}),
      1.0);
  // Stratified: class 0 (4 samples) 3 and 1 against 2 and 2, class 1 (2) 1
  // and 1, and the sizes as above: total 4.
  split.stratified = true;
  EXPECT_DOUBLE_EQ(
      split_extension_imbalance(split, std::vector<int16_t>{0, 0, 1, 1, 0, 0}, labels, {}, {}),
      4.0);
  // A test sample where the split has no test set: its whole weight, in its
  // class and in the sizes (3, 2 and 1 against 3, 3 and 0).
  EXPECT_DOUBLE_EQ(
      split_extension_imbalance(split, std::vector<int16_t>{0, 0, 1, 1, 0, -1}, labels, {}, {}),
      4.0);
  // Multi-label column 0 on samples 0 and 1 (both fold 0): 2 and 0 against 1 and 1.
  const std::vector<uint8_t> rows = {1, 1, 0, 0, 0, 0};
  EXPECT_DOUBLE_EQ(split_extension_imbalance(split, std::vector<int16_t>{0, 0, 1, 1, 0, 1}, labels,
                                             {rows, 1}, {}),
                   2.0);
}

TEST(SplitExtend, RefusesInconsistentInputsNamingTheSplit) {
  Split split;
  split.name = "cv5";
  split.kind = "random";
  split.folds = 2;
  split.assign = {0, 1, 0, 1};
  const std::vector<int32_t> three(3, 0), five(5, 0), six(6, 0);
  const std::vector<uint8_t> flags4(4, 0), rows(7, 0);
  auto expect_error = [](auto&& call, const char* what) {
    try {
      call();
      ADD_FAILURE() << what << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("'cv5'"), std::string::npos) << e.what();
    }
  };
  expect_error([&] { extend_split(split, five, six, {}, {}); }, "labels and groups");
  expect_error([&] { extend_split(split, three, three, {}, {}); }, "old samples > S");
  expect_error([&] { extend_split(split, five, five, {}, flags4); }, "removed flags");
  expect_error([&] { extend_split(split, five, five, {rows, 1}, {}); }, "multi-label rows");
  Split bad = split;
  bad.assign[2] = 2;
  expect_error([&] { extend_split(bad, five, five, {}, {}); }, "fold out of range");
  bad = split;
  bad.folds = 0;
  expect_error([&] { extend_split(bad, five, five, {}, {}); }, "no folds");
  expect_error([&] { split_extension_imbalance(split, std::vector<int16_t>(4, 0), five, {}, {}); },
               "assign of the wrong length");
  expect_error(
      [&] {
        split_extension_imbalance(split, std::vector<int16_t>{0, 1, 0, 1, 3}, five, {}, {});
      },
      "assign out of range");
}

}  // namespace
}  // namespace imgpack
