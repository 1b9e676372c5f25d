// Tests for compute_split (libpack/src/split*.cpp): every kind's guarantees,
// scikit-learn's documentation examples, the refusals, the quality figures and
// split records. Long because each kind has its own cases over shared tables.
#include "imgpack/split.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <numeric>
#include <set>

#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "random.hpp"

namespace imgpack {
namespace {

struct Samples {
  std::vector<int32_t> labels;
  std::vector<int32_t> groups;
  int32_t classes = 0;
};

// Classes of the given sizes (e.g. 890/100/10), spread over `groups` groups of
// uneven size; each group leans towards one class, as a patient or a site does.
Samples skewed_samples(const std::vector<int32_t>& class_sizes, int32_t groups, uint64_t seed) {
  Samples s;
  s.classes = static_cast<int32_t>(class_sizes.size());
  for (int32_t c = 0; c < s.classes; ++c) {
    for (int32_t i = 0; i < class_sizes[static_cast<std::size_t>(c)]; ++i) s.labels.push_back(c);
  }
  CounterRng rng(seed, 1);
  rng.shuffle(std::span(s.labels));
  // Group sizes vary about 1:8; samples of one class tend to share groups.
  std::vector<double> cumulative;
  double total = 0;
  for (int32_t g = 0; g < groups; ++g) {
    total += 1 + 7 * rng.uniform();
    cumulative.push_back(total);
  }
  std::vector<std::size_t> order(s.labels.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return s.labels[a] < s.labels[b]; });
  s.groups.resize(s.labels.size());
  for (std::size_t r = 0; r < order.size(); ++r) {
    // Mostly contiguous by class, with a quarter of the samples anywhere.
    double position = rng.uniform() < 0.75 ? (static_cast<double>(r) + rng.uniform()) /
                                                 static_cast<double>(order.size())
                                           : rng.uniform();
    auto at = std::lower_bound(cumulative.begin(), cumulative.end(), position * total);
    s.groups[order[r]] =
        static_cast<int32_t>(std::min<std::ptrdiff_t>(at - cumulative.begin(), groups - 1));
  }
  return s;
}

SplitSpec kfold(SplitKind kind, int32_t folds, double test = 0, uint64_t seed = 0) {
  SplitSpec spec;
  spec.kind = kind;
  spec.folds = folds;
  spec.test_fraction = test;
  spec.seed = seed;
  return spec;
}

SplitSpec holdout(double val, double test = 0, uint64_t seed = 0) {
  SplitSpec spec;
  spec.kind = SplitKind::holdout;
  spec.val_fraction = val;
  spec.test_fraction = test;
  spec.seed = seed;
  return spec;
}

std::vector<int64_t> part_sizes(const std::vector<int16_t>& assign, int32_t folds) {
  std::vector<int64_t> sizes(static_cast<std::size_t>(folds), 0);
  for (int16_t a : assign) {
    if (a >= 0) ++sizes[static_cast<std::size_t>(a)];
  }
  return sizes;
}

// Groups (id >= 0) whose samples sit in more than one part, counted directly.
int64_t groups_on_two_sides(const std::vector<int16_t>& assign,
                            const std::vector<int32_t>& groups) {
  std::map<int32_t, std::set<int16_t>> parts;
  for (std::size_t i = 0; i < assign.size(); ++i) {
    if (groups[i] >= 0) parts[groups[i]].insert(assign[i]);
  }
  return std::count_if(parts.begin(), parts.end(),
                       [](const auto& p) { return p.second.size() > 1; });
}

const std::vector<SplitKind> kAllKinds = {SplitKind::random, SplitKind::stratified,
                                          SplitKind::group, SplitKind::stratified_group,
                                          SplitKind::holdout};

SplitSpec spec_for(SplitKind kind, double test, uint64_t seed = 0) {
  return kind == SplitKind::holdout ? holdout(0.2, test, seed) : kfold(kind, 5, test, seed);
}

TEST(Split, EverySampleIsInExactlyOneValidationFoldOrTest) {
  Samples s = skewed_samples({890, 100, 10}, 60, 1);
  for (SplitKind kind : kAllKinds) {
    for (double test : {0.0, 0.2}) {
      SCOPED_TRACE(std::string(split_kind_name(kind)) + " test " + std::to_string(test));
      SplitSpec spec = spec_for(kind, test);
      SplitResult result = compute_split(s.labels, s.groups, spec);
      ASSERT_EQ(result.assign.size(), s.labels.size());
      int64_t in_test = 0;
      for (int16_t a : result.assign) {
        ASSERT_GE(a, -1);
        ASSERT_LT(a, spec.stored_folds());
        in_test += a == -1;
      }
      // Every fold is used, and the test set exists exactly when asked for.
      for (int64_t size : part_sizes(result.assign, spec.stored_folds())) EXPECT_GT(size, 0);
      EXPECT_EQ(in_test > 0, test > 0);
      if (test > 0) {
        EXPECT_NEAR(static_cast<double>(in_test) / s.labels.size(), test, 0.05);
      }
    }
  }
}

TEST(Split, NonGroupKindsBalanceFoldSizesWithinOneSample) {
  Samples s = skewed_samples({890, 100, 10}, 60, 2);
  for (SplitKind kind : {SplitKind::random, SplitKind::stratified}) {
    for (double test : {0.0, 0.15}) {
      for (int32_t folds : {2, 3, 5, 7}) {
        SCOPED_TRACE(std::string(split_kind_name(kind)) + " k=" + std::to_string(folds));
        SplitResult result = compute_split(s.labels, s.groups, kfold(kind, folds, test));
        std::vector<int64_t> sizes = part_sizes(result.assign, folds);
        auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
        EXPECT_LE(*hi - *lo, 1);
        if (test > 0) {
          // round(n p) samples go to test.
          EXPECT_EQ(std::count(result.assign.begin(), result.assign.end(), -1),
                    static_cast<int64_t>(std::floor(1000 * test + 0.5)));
        }
      }
    }
  }
}

TEST(Split, StratifiedKeepsEveryClassWithinOneSampleOfItsShare) {
  Samples s = skewed_samples({890, 100, 10}, 60, 3);
  const std::vector<int32_t> class_sizes = {890, 100, 10};
  for (double test : {0.0, 0.2}) {
    SplitResult result = compute_split(s.labels, s.groups, kfold(SplitKind::stratified, 5, test));
    std::vector<std::vector<int64_t>> counts(6, std::vector<int64_t>(3, 0));  // test, folds 0..4
    for (std::size_t i = 0; i < s.labels.size(); ++i) {
      ++counts[static_cast<std::size_t>(result.assign[i] + 1)]
              [static_cast<std::size_t>(s.labels[i])];
    }
    for (int32_t c = 0; c < 3; ++c) {
      const double in_test = static_cast<double>(counts[0][static_cast<std::size_t>(c)]);
      EXPECT_LE(std::abs(in_test - class_sizes[static_cast<std::size_t>(c)] * test), 1.0);
      const double share =
          (class_sizes[static_cast<std::size_t>(c)] - in_test) / 5.0;  // per fold, of the rest
      for (std::size_t f = 1; f <= 5; ++f) {
        EXPECT_LT(std::abs(static_cast<double>(counts[f][static_cast<std::size_t>(c)]) - share),
                  1.0)
            << "class " << c << " fold " << f - 1;
      }
    }
    // So the figures users see are small: a class's share of a fold of 160 or
    // 200 samples is within one sample of the whole set's.
    SplitQuality q = split_quality(result.assign, 5, s.labels, s.groups, 3);
    for (const FoldStats& fold : q.folds) {
      EXPECT_LE(fold.max_class_dev, 1.0 / static_cast<double>(fold.size) + 0.002);
      EXPECT_TRUE(fold.missing_classes.empty());
    }
  }
}

TEST(Split, GroupKindsNeverPutAGroupOnTwoSides) {
  Samples s = skewed_samples({890, 100, 10}, 60, 4);
  for (SplitKind kind : {SplitKind::group, SplitKind::stratified_group, SplitKind::holdout}) {
    for (double test : {0.0, 0.2}) {
      SCOPED_TRACE(std::string(split_kind_name(kind)) + " test " + std::to_string(test));
      SplitSpec spec = spec_for(kind, test);
      SplitResult result = compute_split(s.labels, s.groups, spec);
      EXPECT_EQ(groups_on_two_sides(result.assign, s.groups), 0);
      EXPECT_EQ(
          split_quality(result.assign, spec.stored_folds(), s.labels, s.groups, 3).group_leakage,
          0);
    }
  }
}

TEST(Split, UngroupedSamplesAreGroupsOfTheirOwn) {
  Samples s = skewed_samples({300, 200, 100}, 20, 5);
  for (std::size_t i = 0; i < s.groups.size(); i += 3) s.groups[i] = -1;
  SplitResult result = compute_split(s.labels, s.groups, kfold(SplitKind::group, 4));
  EXPECT_EQ(groups_on_two_sides(result.assign, s.groups), 0);
  // The ungrouped third can go anywhere, so the folds come out very even.
  std::vector<int64_t> sizes = part_sizes(result.assign, 4);
  auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
  EXPECT_LE(*hi - *lo, 1);
}

TEST(Split, GroupFoldSizesAreAsEvenAsGreedyLargestFirst) {
  // GroupKFold's guarantee: largest groups first into the lightest fold. The
  // local search starts from there and only improves, so the spread of fold
  // sizes is never worse than that greedy's.
  Samples s = skewed_samples({500, 300, 200}, 40, 6);
  std::map<int32_t, int64_t> group_size;
  for (int32_t g : s.groups) ++group_size[g];
  std::vector<int64_t> sizes;
  sizes.reserve(group_size.size());
  for (auto [g, n] : group_size) sizes.push_back(n);
  std::sort(sizes.rbegin(), sizes.rend());
  std::vector<int64_t> greedy(5, 0);
  for (int64_t n : sizes) *std::min_element(greedy.begin(), greedy.end()) += n;
  const int64_t greedy_spread = *std::max_element(greedy.begin(), greedy.end()) -
                                *std::min_element(greedy.begin(), greedy.end());
  for (uint64_t seed : {0, 1, 2}) {
    SplitResult result = compute_split(s.labels, s.groups, kfold(SplitKind::group, 5, 0, seed));
    std::vector<int64_t> ours = part_sizes(result.assign, 5);
    EXPECT_LE(
        *std::max_element(ours.begin(), ours.end()) - *std::min_element(ours.begin(), ours.end()),
        greedy_spread);
  }
}

// Mean over folds of the mean class deviation.
double mean_class_dev(const SplitQuality& q) {
  double sum = 0;
  for (const FoldStats& f : q.folds) sum += f.mean_class_dev;
  return sum / static_cast<double>(q.folds.size());
}
double max_class_dev(const SplitQuality& q) {
  double m = 0;
  for (const FoldStats& f : q.folds) m = std::max(m, f.max_class_dev);
  return m;
}

TEST(Split, StratifiedGroupKeepsSkewedClassesProportional) {
  // 890/100/10 over 100 groups: folds of ~200 samples should hold ~178/20/2.
  Samples s = skewed_samples({890, 100, 10}, 100, 7);
  SplitResult result = compute_split(s.labels, s.groups, kfold(SplitKind::stratified_group, 5));
  SplitQuality q = split_quality(result.assign, 5, s.labels, s.groups, 3);
  EXPECT_EQ(q.group_leakage, 0);
  // Within 2.5 percentage points of the whole set's class shares in every
  // fold, and sizes within 10% of a fifth.
  for (const FoldStats& fold : q.folds) {
    EXPECT_LT(fold.max_class_dev, 0.025) << "fold " << fold.fold;
    EXPECT_NEAR(static_cast<double>(fold.size), 200.0, 20.0);
  }
  // Every class reaches as many folds as its groups allow (the 10-sample class
  // sits in only a few groups).
  for (int32_t c = 0; c < 3; ++c) {
    std::set<int32_t> groups_of_class;
    std::set<int16_t> folds_of_class;
    for (std::size_t i = 0; i < s.labels.size(); ++i) {
      if (s.labels[i] != c) continue;
      groups_of_class.insert(s.groups[i]);
      folds_of_class.insert(result.assign[i]);
    }
    EXPECT_EQ(folds_of_class.size(), std::min<std::size_t>(5, groups_of_class.size()))
        << "class " << c;
  }
  // Far better than assigning the same groups to folds at random.
  double random_mean = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<int16_t> fold_of_group(100);
    for (std::size_t g = 0; g < 100; ++g) fold_of_group[g] = static_cast<int16_t>(g % 5);
    CounterRng(seed, 99).shuffle(std::span(fold_of_group));
    std::vector<int16_t> assign(s.groups.size());
    for (std::size_t i = 0; i < assign.size(); ++i)
      assign[i] = fold_of_group[static_cast<std::size_t>(s.groups[i])];
    random_mean += mean_class_dev(split_quality(assign, 5, s.labels, s.groups, 3)) / 20;
  }
  EXPECT_LT(mean_class_dev(q), random_mean / 3);
}

TEST(Split, RelabellingClassesOrGroupsDoesNotChangeTheSplit) {
  Samples s = skewed_samples({890, 100, 10}, 60, 8);
  // A bijection of class ids (reversal, shifted) and of group ids (scrambled).
  std::vector<int32_t> labels(s.labels.size()), groups(s.groups.size());
  std::vector<int32_t> group_map(60);
  std::iota(group_map.begin(), group_map.end(), 1000);
  CounterRng(5).shuffle(std::span(group_map));
  for (std::size_t i = 0; i < labels.size(); ++i) {
    labels[i] = 7 - s.labels[i];
    groups[i] = group_map[static_cast<std::size_t>(s.groups[i])];
  }
  for (SplitKind kind : kAllKinds) {
    if (kind == SplitKind::stratified_group) continue;  // below
    for (double test : {0.0, 0.1}) {
      SCOPED_TRACE(split_kind_name(kind));
      SplitSpec spec = spec_for(kind, test, 42);
      EXPECT_EQ(compute_split(s.labels, s.groups, spec).assign,
                compute_split(labels, groups, spec).assign);
    }
  }
}

TEST(Split, StratifiedGroupDependsOnIdsOnlyThroughTheirOrder) {
  // Its promise is against StratifiedGroupKFold, which visits groups and sums
  // classes in the order of their ids; any renumbering that keeps that order
  // leaves the split as it is.
  Samples s = skewed_samples({890, 100, 10}, 60, 8);
  std::vector<int32_t> labels(s.labels.size()), groups(s.groups.size());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    labels[i] = 3 + 5 * s.labels[i];
    groups[i] = 1000 + 7 * s.groups[i];
  }
  for (double test : {0.0, 0.1}) {
    SplitSpec spec = spec_for(SplitKind::stratified_group, test, 42);
    EXPECT_EQ(compute_split(s.labels, s.groups, spec).assign,
              compute_split(labels, groups, spec).assign);
  }
}

TEST(Split, TheSeedDecidesAndOnlyTheSeed) {
  Samples s = skewed_samples({890, 100, 10}, 60, 9);
  for (SplitKind kind : kAllKinds) {
    SCOPED_TRACE(split_kind_name(kind));
    std::vector<int16_t> a = compute_split(s.labels, s.groups, spec_for(kind, 0.1, 1)).assign;
    EXPECT_EQ(a, compute_split(s.labels, s.groups, spec_for(kind, 0.1, 1)).assign);
    EXPECT_NE(a, compute_split(s.labels, s.groups, spec_for(kind, 0.1, 2)).assign);
  }
}

TEST(Split, HoldoutValidationIsFoldZeroOfTheAskedFraction) {
  Samples s = skewed_samples({890, 100, 10}, 80, 10);
  // Without groups: exactly round(n p) samples, stratified.
  SplitSpec spec = holdout(0.25, 0.1);
  spec.use_groups = false;
  SplitResult result = compute_split(s.labels, s.groups, spec);
  EXPECT_TRUE(result.stratified);
  EXPECT_FALSE(result.grouped);
  EXPECT_EQ(std::count(result.assign.begin(), result.assign.end(), -1), 100);
  EXPECT_EQ(std::count(result.assign.begin(), result.assign.end(), 0), 250);
  EXPECT_EQ(std::count(result.assign.begin(), result.assign.end(), 1), 650);
  SplitQuality q = split_quality(result.assign, 2, s.labels, s.groups, 3);
  EXPECT_LE(q.folds[0].max_class_dev, 1.0 / 250 + 1e-9);
  // With groups: whole groups, close to the fraction.
  result = compute_split(s.labels, s.groups, holdout(0.25, 0.1));
  EXPECT_TRUE(result.stratified);
  EXPECT_TRUE(result.grouped);
  EXPECT_EQ(groups_on_two_sides(result.assign, s.groups), 0);
  EXPECT_NEAR(std::count(result.assign.begin(), result.assign.end(), 0), 250, 15);
  EXPECT_NEAR(std::count(result.assign.begin(), result.assign.end(), -1), 100, 15);
  // Unstratified and ungrouped: still the exact sizes.
  spec.use_labels = false;
  result = compute_split(s.labels, s.groups, spec);
  EXPECT_FALSE(result.stratified);
  EXPECT_FALSE(result.grouped);
  EXPECT_EQ(std::count(result.assign.begin(), result.assign.end(), 0), 250);
  // Without labels or groups in the data, holdout can be neither.
  const std::vector<int32_t> none(s.labels.size(), -1);
  result = compute_split(none, none, holdout(0.25));
  EXPECT_FALSE(result.stratified);
  EXPECT_FALSE(result.grouped);
}

TEST(Split, ScikitLearnStratifiedGroupKFoldDocumentationExample) {
  // The example of scikit-learn 1.2's StratifiedGroupKFold documentation, and
  // the folds it prints there (test groups {3,6,7}, {1,2,8}, {4,5}).
  const std::vector<int32_t> y = {0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  const std::vector<int32_t> groups = {1, 1, 2, 2, 3, 3, 3, 4, 5, 5, 5, 5, 6, 6, 7, 8, 8};
  const std::vector<int16_t> sklearn = {1, 1, 1, 1, 0, 0, 0, 2, 2, 2, 2, 2, 0, 0, 0, 1, 1};
  const SplitQuality theirs = split_quality(sklearn, 3, y, groups, 2);
  for (uint64_t seed = 0; seed < 10; ++seed) {
    SplitResult result = compute_split(y, groups, kfold(SplitKind::stratified_group, 3, 0, seed));
    SplitQuality ours = split_quality(result.assign, 3, y, groups, 2);
    EXPECT_EQ(ours.group_leakage, 0);
    EXPECT_EQ(groups_on_two_sides(result.assign, groups), 0);
    for (const FoldStats& fold : ours.folds) {
      EXPECT_GT(fold.size, 0);
      EXPECT_TRUE(fold.missing_classes.empty());
    }
    EXPECT_LE(mean_class_dev(ours), mean_class_dev(theirs) + 1e-12) << "seed " << seed;
    EXPECT_LE(max_class_dev(ours), max_class_dev(theirs) + 1e-12) << "seed " << seed;
  }
}

TEST(Split, ScikitLearnGroupKFoldDocumentationExamples) {
  // GroupKFold's documentation examples (scikit-learn 1.2 and later versions).
  struct Example {
    std::vector<int32_t> groups;
    int32_t folds;
    int64_t sklearn_spread;  // largest minus smallest fold there
  };
  for (const Example& e : {Example{{0, 0, 2, 2}, 2, 0}, Example{{0, 0, 2, 2, 3, 3}, 2, 2}}) {
    const std::vector<int32_t> y(e.groups.size(), -1);
    SplitResult result = compute_split(y, e.groups, kfold(SplitKind::group, e.folds));
    EXPECT_EQ(groups_on_two_sides(result.assign, e.groups), 0);
    std::vector<int64_t> sizes = part_sizes(result.assign, e.folds);
    EXPECT_LE(*std::max_element(sizes.begin(), sizes.end()) -
                  *std::min_element(sizes.begin(), sizes.end()),
              e.sklearn_spread);
    EXPECT_GT(*std::min_element(sizes.begin(), sizes.end()), 0);
  }
}

void expect_usage_error(const Samples& s, const SplitSpec& spec, const std::string& words) {
  try {
    compute_split(s.labels, s.groups, spec);
    ADD_FAILURE() << "no error; expected one about: " << words;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(Split, RequestsThatCannotBeMetAreUsageErrors) {
  Samples s = skewed_samples({30, 20, 4}, 6, 11);
  expect_usage_error(s, kfold(SplitKind::group, 7), "more than the 6 groups");
  expect_usage_error(s, kfold(SplitKind::stratified_group, 7), "more than the 6 groups");
  expect_usage_error(s, kfold(SplitKind::group, 6, 0.2),
                     "one more is needed for SplitSpec::test_fraction");
  expect_usage_error(s, kfold(SplitKind::stratified, 31), "more than the members of every class");
  expect_usage_error(s, kfold(SplitKind::stratified, 1), "SplitSpec::folds 1");
  expect_usage_error(s, kfold(SplitKind::random, 55), "more than the 54 samples");
  expect_usage_error(s, kfold(SplitKind::random, 5, 1.5), "SplitSpec::test_fraction 1.5");
  expect_usage_error(s, kfold(SplitKind::random, 5, -0.1), "SplitSpec::test_fraction -0.1");
  expect_usage_error(s, holdout(0), "SplitSpec::val_fraction 0");
  expect_usage_error(s, holdout(1.2), "SplitSpec::val_fraction 1.2");
  expect_usage_error(s, holdout(0.6, 0.4), "leave nothing to train on");
  expect_usage_error(s, kfold(SplitKind::random, 5, 0.001), "selects none");
  SplitSpec val_on_kfold = kfold(SplitKind::stratified, 5);
  val_on_kfold.val_fraction = 0.2;
  expect_usage_error(s, val_on_kfold,
                     "SplitSpec::val_fraction applies only to SplitSpec::kind holdout");

  Samples no_groups = s;
  std::fill(no_groups.groups.begin(), no_groups.groups.end(), -1);
  expect_usage_error(no_groups, kfold(SplitKind::group, 3), "needs groups");
  expect_usage_error(no_groups, kfold(SplitKind::stratified_group, 3), "needs groups");
  Samples no_labels = s;
  std::fill(no_labels.labels.begin(), no_labels.labels.end(), -1);
  expect_usage_error(no_labels, kfold(SplitKind::stratified, 3), "needs labels");
  expect_usage_error(Samples{}, kfold(SplitKind::random, 3), "no samples");
  EXPECT_THROW(parse_split_kind("stratfied"), UsageError);
}

TEST(Split, WarnsWhenOnlySomeClassesHaveFewerMembersThanFolds) {
  Samples s = skewed_samples({30, 20, 4}, 6, 12);
  const std::vector<std::string> names = {"cat", "dog", "eel"};
  SplitResult result = compute_split(s.labels, s.groups, kfold(SplitKind::stratified, 5), names);
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_NE(result.warnings[0].find("'eel', has 4"), std::string::npos) << result.warnings[0];
  EXPECT_TRUE(compute_split(s.labels, s.groups, kfold(SplitKind::stratified, 4)).warnings.empty());
  // Like scikit-learn, a class too small for the folds still gets split as well as it can.
  std::vector<int64_t> eel_per_fold(5, 0);
  for (std::size_t i = 0; i < s.labels.size(); ++i) {
    if (s.labels[i] == 2) ++eel_per_fold[static_cast<std::size_t>(result.assign[i])];
  }
  EXPECT_EQ(*std::max_element(eel_per_fold.begin(), eel_per_fold.end()), 1);
}

// Whole groups can only come near a share: four groups of 150 give a
// validation set of 150 where 1% (6) was asked, and the split says so.
TEST(Split, WarnsWhenWholeGroupsMissTheShareAskedByFar) {
  Samples s;
  for (int32_t i = 0; i < 600; ++i) {
    s.labels.push_back(i % 3);
    s.groups.push_back(i / 150);
  }
  SplitResult result = compute_split(s.labels, s.groups, holdout(0.01));
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_NE(result.warnings[0].find("the validation set holds 150 of 600 samples (25%), not the 1% "
                                    "SplitSpec::val_fraction asks"),
            std::string::npos)
      << result.warnings[0];
  result = compute_split(s.labels, s.groups, kfold(SplitKind::group, 2, 0.05));
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_NE(result.warnings[0].find("the test set holds 150"), std::string::npos)
      << result.warnings[0];
  // Near enough, or ungrouped: nothing to say.
  EXPECT_TRUE(compute_split(s.labels, s.groups, holdout(0.2)).warnings.empty());
  SplitSpec ungrouped = holdout(0.01);
  ungrouped.use_groups = false;
  EXPECT_TRUE(compute_split(s.labels, s.groups, ungrouped).warnings.empty());
}

TEST(Split, UnlabeledSamplesAreSpreadLikeAClass) {
  Samples s = skewed_samples({500, 400, 100}, 50, 13);
  for (std::size_t i = 0; i < s.labels.size(); i += 10) s.labels[i] = -1;  // 100 unlabeled
  SplitResult result = compute_split(s.labels, s.groups, kfold(SplitKind::stratified, 5));
  std::vector<int64_t> unlabeled(5, 0);
  for (std::size_t i = 0; i < s.labels.size(); ++i) {
    if (s.labels[i] < 0) ++unlabeled[static_cast<std::size_t>(result.assign[i])];
  }
  for (int64_t n : unlabeled) EXPECT_EQ(n, 20);
}

TEST(SplitQuality, FiguresOfAHandCheckedExample) {
  // Classes a(0) x6, b(1) x2, c(2) x2: shares 0.6, 0.2, 0.2. Groups 0..4.
  const std::vector<int32_t> labels = {0, 0, 0, 0, 0, 0, 1, 1, 2, 2};
  const std::vector<int32_t> groups = {0, 0, 1, 1, 2, 2, 3, 4, 4, -1};
  const std::vector<int16_t> assign = {0, 0, 1, 1, 0, 1, 0, 1, 1, -1};
  SplitQuality q = split_quality(assign, 2, labels, groups, 4);  // class 3 is empty
  EXPECT_EQ(q.test_size, 1);
  EXPECT_EQ(q.group_leakage, 1);  // group 2 sits in folds 0 and 1; ungrouped samples never leak
  ASSERT_EQ(q.folds.size(), 2u);
  // Fold 0: a a a b -> shares 0.75, 0.25, 0: deviations 0.15, 0.05, 0.2.
  EXPECT_EQ(q.folds[0].size, 4);
  EXPECT_NEAR(q.folds[0].max_class_dev, 0.2, 1e-12);
  EXPECT_NEAR(q.folds[0].mean_class_dev, (0.15 + 0.05 + 0.2) / 3, 1e-12);
  EXPECT_EQ(q.folds[0].missing_classes, std::vector<int32_t>{2});
  // Fold 1: a a a b c -> 0.6, 0.2, 0.2: no deviation.
  EXPECT_EQ(q.folds[1].size, 5);
  EXPECT_NEAR(q.folds[1].max_class_dev, 0, 1e-12);
  EXPECT_TRUE(q.folds[1].missing_classes.empty());
  // Test: one c.
  EXPECT_EQ(q.test.fold, -1);
  EXPECT_EQ(q.test.size, 1);
  EXPECT_NEAR(q.test.max_class_dev, 0.8, 1e-12);
  EXPECT_EQ(q.test.missing_classes, (std::vector<int32_t>{0, 1}));
}

TEST(SplitQuality, RejectsMismatchedInput) {
  const std::vector<int32_t> labels = {0, 1}, groups = {0, 0};
  EXPECT_THROW(split_quality(std::vector<int16_t>{0}, 2, labels, groups, 2), Error);
  EXPECT_THROW(split_quality(std::vector<int16_t>{0, 2}, 2, labels, groups, 2), Error);
  EXPECT_THROW(split_quality(std::vector<int16_t>{0, 1}, 2, labels, groups, 1), Error);
}

TEST(SplitRecords, MakeStoreAndParse) {
  DatasetIndex index;
  index.sample_label = {0, 1, 0, 1, 0, 1};
  index.sample_group = {0, 0, 1, 1, 2, 2};
  index.class_names = {"a", "b"};
  index.group_names = {"x", "y", "z"};
  Split split = make_split(index, "cv3", kfold(SplitKind::group, 3, 0, 7), "2026-01-01T00:00:00Z");
  EXPECT_EQ(split.name, "cv3");
  EXPECT_EQ(split.kind, "group");
  EXPECT_EQ(split.folds, 3);
  EXPECT_EQ(split.seed, 7u);
  EXPECT_EQ(split.created, "2026-01-01T00:00:00Z");
  EXPECT_FALSE(split.stratified);
  EXPECT_TRUE(split.grouped);
  EXPECT_EQ(groups_on_two_sides(split.assign.to_vector(), index.sample_group.to_vector()), 0);
  Split hold = make_split(index, "hold", holdout(0.3), "");
  EXPECT_EQ(hold.kind, "holdout");
  EXPECT_EQ(hold.folds, 2);
  EXPECT_DOUBLE_EQ(hold.val_fraction, 0.3);

  store_split(index, hold, false);
  store_split(index, split, false);
  ASSERT_EQ(index.splits.size(), 2u);
  EXPECT_EQ(index.splits[0].name, "cv3");  // name order
  EXPECT_THROW(store_split(index, split, false), UsageError);
  split.seed = 8;
  store_split(index, split, true);
  EXPECT_EQ(index.find_split("cv3")->seed, 8u);
  EXPECT_EQ(index.splits.size(), 2u);

  EXPECT_THROW(make_split(index, "bad/name", kfold(SplitKind::group, 3), ""), UsageError);
  EXPECT_THROW(check_split_name(".hidden"), UsageError);
  EXPECT_THROW(check_split_name(""), UsageError);
  EXPECT_NO_THROW(check_split_name("cv5_seed-1.v2"));

  NamedSplitSpec parsed = parse_split_option("cv:stratified-group:5", 3);
  EXPECT_EQ(parsed.name, "cv");
  EXPECT_EQ(parsed.spec.kind, SplitKind::stratified_group);
  EXPECT_EQ(parsed.spec.folds, 5);
  EXPECT_EQ(parsed.spec.seed, 3u);
  parsed = parse_split_option("val:holdout:0.2", 0);
  EXPECT_EQ(parsed.spec.kind, SplitKind::holdout);
  EXPECT_DOUBLE_EQ(parsed.spec.val_fraction, 0.2);
  for (const char* bad : {"cv", "cv:group", "cv:group:5:1", "cv:grup:5", "cv:group:x", "cv:group:1",
                          "cv:group:5x", "val:holdout:1.5", ":group:5"}) {
    EXPECT_THROW(parse_split_option(bad, 0), UsageError) << bad;
  }
  // A fold count too large for the table names the value given, not a wrapped one.
  for (const char* big : {"cv:group:32768", "cv:group:100000", "cv:group:99999999999999999999"}) {
    try {
      parse_split_option(big, 0);
      ADD_FAILURE() << big << " was accepted";
    } catch (const UsageError& e) {
      const std::string value = std::string(big).substr(9);
      EXPECT_NE(std::string(e.what()).find(value), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find("-1"), std::string::npos) << e.what();
    }
  }
}

// Multi-label data: the stratified kinds balance every multi-label class
// (and the class, where samples have one) over the folds; groups stay whole
// in stratified-group; the test set is carved as a part of its own.
TEST(Split, MultilabelClassesAreBalancedAcrossTheFolds) {
  // 120 samples, 4 multi-label classes of different frequencies, 3 classes.
  const std::size_t n = 120, c = 4;
  std::vector<int32_t> labels(n), groups(n);
  std::vector<uint8_t> rows(n * c, 0);
  for (std::size_t i = 0; i < n; ++i) {
    labels[i] = static_cast<int32_t>(i % 3);
    groups[i] = static_cast<int32_t>(i / 4);  // 30 groups of 4
    rows[i * c + 0] = i % 2 == 0 ? 1 : 0;
    rows[i * c + 1] = i % 5 == 0 ? 1 : 0;
    rows[i * c + 2] = i % 12 == 1 ? 1 : 0;
    rows[i * c + 3] = (i * 7) % 11 < 3 ? 1 : 0;
  }
  const MultilabelRows multilabel{rows, c};
  SplitSpec spec;
  spec.kind = SplitKind::stratified;
  spec.folds = 5;
  spec.seed = 3;
  const SplitResult result = compute_split(labels, groups, spec, {}, multilabel);
  EXPECT_TRUE(result.stratified);
  EXPECT_FALSE(result.grouped);
  ASSERT_EQ(result.assign.size(), n);
  for (std::size_t l = 0; l < c; ++l) {
    std::vector<int> per_fold(5, 0);
    int total = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (rows[i * c + l] == 0) continue;
      ++per_fold[static_cast<std::size_t>(result.assign[i])];
      ++total;
    }
    for (int count : per_fold) EXPECT_LE(std::abs(count * 5 - total), 5) << "label " << l;
  }
  std::vector<int> sizes(5, 0);
  for (int16_t a : result.assign) ++sizes[static_cast<std::size_t>(a)];
  for (int size : sizes) EXPECT_EQ(size, 24);
  // The same spec, the same assignment.
  EXPECT_EQ(compute_split(labels, groups, spec, {}, multilabel).assign, result.assign);

  spec.kind = SplitKind::stratified_group;
  spec.test_fraction = 0.2;
  const SplitResult grouped = compute_split(labels, groups, spec, {}, multilabel);
  EXPECT_TRUE(grouped.grouped);
  std::size_t test = 0;
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(grouped.assign[i], grouped.assign[(i / 4) * 4]) << "group " << i / 4;
    if (grouped.assign[i] == format::kTestFold) ++test;
  }
  EXPECT_NEAR(static_cast<double>(test), 24.0, 8.0);

  // Without multi-label rows the single-label path and its promises hold.
  spec.kind = SplitKind::stratified;
  spec.test_fraction = 0;
  const SplitResult single = compute_split(labels, groups, spec);
  std::vector<std::vector<int>> per_class(3, std::vector<int>(5, 0));
  for (std::size_t i = 0; i < n; ++i) {
    ++per_class[static_cast<std::size_t>(labels[i])][static_cast<std::size_t>(single.assign[i])];
  }
  for (const auto& counts : per_class) {
    for (int count : counts) EXPECT_EQ(count, 8);
  }
}

}  // namespace
}  // namespace imgpack
