// imgpack's splits against scikit-learn's on the same input, run live when
// the system Python has scikit-learn (skipped otherwise): the quality figures
// of our split must be at least as good as those of the matching splitter,
// and the replays of scikit-learn's splitters and of numpy's arithmetic
// (libpack/src/split/split_sklearn.cpp) must match them to the sample and the bit.
#include "split/split_sklearn.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "imgpack/split.hpp"
#include "random.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

struct Input {
  std::vector<int32_t> labels, groups;
  int32_t classes = 0;
};

// 3000 samples, 150 groups of uneven size, 12 classes of skewed frequency;
// each group draws half its samples from one favourite class.
Input make_input(uint64_t seed) {
  Input in;
  in.classes = 12;
  CounterRng rng(seed);
  std::vector<double> class_weight;
  double total = 0;
  for (int32_t c = 0; c < in.classes; ++c) total += 1.0 / (c + 1);
  auto draw_class = [&] {
    double u = rng.uniform() * total;
    for (int32_t c = 0; c < in.classes; ++c) {
      u -= 1.0 / (c + 1);
      if (u <= 0) return c;
    }
    return in.classes - 1;
  };
  for (int32_t g = 0; g < 150; ++g) {
    const int32_t size = 1 + static_cast<int32_t>(rng.below(39));
    const int32_t favourite = draw_class();
    for (int32_t i = 0; i < size; ++i) {
      in.groups.push_back(g);
      in.labels.push_back(rng.uniform() < 0.5 ? favourite : draw_class());
    }
  }
  return in;
}

// Runs a Python script under the system Python with one argument, the path of
// a file holding `data`, and returns its standard output.
std::string run_python(const std::string& script, const std::string& data) {
  test::TempDir dir;
  {
    std::ofstream(dir / "input.txt") << data;
    std::ofstream(dir / "run.py") << script;
  }
  test::CommandResult r =
      test::run_command(test::system_python() + " " + test::shell_quote((dir / "run.py").string()) +
                        " " + test::shell_quote((dir / "input.txt").string()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

std::string samples_text(const Input& in) {
  std::ostringstream data;
  for (std::size_t i = 0; i < in.labels.size(); ++i)
    data << in.labels[i] << ' ' << in.groups[i] << '\n';
  return data.str();
}

// Runs the scikit-learn splitters `splitters` (Python expressions) in one
// process and returns the fold of every sample for each.
std::vector<std::vector<int16_t>> sklearn_folds(const Input& in,
                                                const std::vector<std::string>& splitters) {
  std::string list;
  for (const std::string& splitter : splitters) list += splitter + ", ";
  const std::string out = run_python(
      "import sys, warnings\n"
      "import numpy as np\n"
      "from sklearn.model_selection import *\n"
      "warnings.simplefilter('ignore')\n"
      "d = np.loadtxt(sys.argv[1], dtype=np.int64).reshape(-1, 2)\n"
      "y, g = d[:, 0], d[:, 1]\n"
      "for splitter in [" +
          list +
          "]:\n"
          "    fold = np.full(len(y), -1)\n"
          "    for f, (_, te) in enumerate(splitter.split(np.zeros((len(y), 1)), y, g)):\n"
          "        fold[te] = f\n"
          "    print(' '.join(map(str, fold)))\n",
      samples_text(in));
  std::vector<std::vector<int16_t>> folds;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    folds.emplace_back();
    std::istringstream values(line);
    int value;
    while (values >> value) folds.back().push_back(static_cast<int16_t>(value));
  }
  EXPECT_EQ(folds.size(), splitters.size());
  folds.resize(splitters.size());
  return folds;
}

std::vector<int16_t> sklearn_folds(const Input& in, const std::string& splitter) {
  return sklearn_folds(in, std::vector<std::string>{splitter})[0];
}

// The groups of `in` as the replay sees them: items in order of first
// appearance, with np.unique's ranks of the group ids and of the labels.
struct Replay {
  ItemTable items;
  std::vector<int32_t> item_of_sample, item_rank, class_rank;
};

std::vector<int32_t> ranks_of(const std::vector<int32_t>& ids) {
  std::vector<int32_t> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int32_t> rank;
  rank.reserve(ids.size());
  for (int32_t id : ids) {
    rank.push_back(
        static_cast<int32_t>(std::lower_bound(sorted.begin(), sorted.end(), id) - sorted.begin()));
  }
  return rank;
}

Replay replay_of(const Input& in) {
  Replay r;
  std::map<int32_t, int32_t> class_of, item_of;
  std::vector<int32_t> class_ids, group_ids;
  std::vector<std::map<int32_t, int32_t>> histogram;
  for (std::size_t i = 0; i < in.labels.size(); ++i) {
    auto [c, new_class] =
        class_of.try_emplace(in.labels[i], static_cast<int32_t>(class_ids.size()));
    if (new_class) class_ids.push_back(in.labels[i]);
    auto [g, new_group] = item_of.try_emplace(in.groups[i], static_cast<int32_t>(group_ids.size()));
    if (new_group) {
      group_ids.push_back(in.groups[i]);
      histogram.emplace_back();
    }
    r.item_of_sample.push_back(g->second);
    ++histogram[static_cast<std::size_t>(g->second)][c->second];
  }
  r.items.num_classes = static_cast<int32_t>(class_ids.size());
  for (const auto& counts : histogram) {
    std::vector<int32_t> classes, numbers;
    for (auto [c, n] : counts) {
      classes.push_back(c);
      numbers.push_back(n);
    }
    r.items.add_item(classes, numbers);
  }
  r.item_rank = ranks_of(group_ids);
  r.class_rank = ranks_of(class_ids);
  return r;
}

// The fold of every item, read off a per-sample assignment.
std::vector<int32_t> item_folds(const Replay& r, const std::vector<int16_t>& assign) {
  std::vector<int32_t> part(r.items.num_items(), -1);
  for (std::size_t i = 0; i < assign.size(); ++i) {
    part[static_cast<std::size_t>(r.item_of_sample[i])] = assign[i];
  }
  return part;
}

// StratifiedGroupKFold's criterion of each assignment into k folds, as numpy
// computes it.
struct Folds {
  std::vector<int16_t> assign;
  int32_t k = 0;
};

std::vector<double> numpy_criteria(const Input& in, const std::vector<Folds>& splits) {
  std::ostringstream data;
  for (const Folds& split : splits) {
    data << split.k;
    for (std::size_t i = 0; i < in.labels.size(); ++i)
      data << ' ' << in.labels[i] << ' ' << split.assign[i];
    data << '\n';
  }
  std::istringstream out(
      run_python("import sys\n"
                 "import numpy as np\n"
                 "for line in open(sys.argv[1]):\n"
                 "    k, *rest = map(int, line.split())\n"
                 "    d = np.array(rest, dtype=np.int64).reshape(-1, 2)\n"
                 "    _, y = np.unique(d[:, 0], return_inverse=True)\n"
                 "    counts = np.zeros((k, y.max() + 1))\n"
                 "    np.add.at(counts, (d[:, 1], y), 1)\n"
                 "    print(repr(float(np.mean(np.std(counts / np.bincount(y).reshape(1, -1), "
                 "axis=0)))))\n",
                 data.str()));
  std::vector<double> values;
  std::string value;
  while (out >> value) values.push_back(std::stod(value));
  EXPECT_EQ(values.size(), splits.size());
  values.resize(splits.size());
  return values;
}

int64_t spread_of(const std::vector<int16_t>& assign, int32_t folds) {
  std::vector<int64_t> sizes(static_cast<std::size_t>(folds), 0);
  for (int16_t a : assign) ++sizes[static_cast<std::size_t>(a)];
  return *std::max_element(sizes.begin(), sizes.end()) -
         *std::min_element(sizes.begin(), sizes.end());
}

// The layout of the issue that asked for these guarantees: group sizes
// Zipf-like (exponent 1.6, 150 groups, about 860 samples), classes at about
// 89 / 10 / 1 %, ten small groups almost entirely of the rare class. Labels and
// group ids are scattered integers.
Input issue_layout(uint64_t seed) {
  Input in;
  in.classes = 3;
  CounterRng rng(seed, 19);
  std::vector<int32_t> size(150);
  for (std::size_t g = 0; g < size.size(); ++g) {
    size[g] = std::max(1, static_cast<int32_t>(330 / std::pow(static_cast<double>(g + 1), 1.6))) +
              static_cast<int32_t>(rng.below(2));
  }
  std::set<std::size_t> rare;  // ten of the sixty smallest groups (the last ones)
  while (rare.size() < 10) rare.insert(90 + rng.below(60));
  const int32_t label_id[3] = {40, 17, 83};
  for (std::size_t g = 0; g < size.size(); ++g) {
    for (int32_t i = 0; i < size[g]; ++i) {
      int32_t c = rng.uniform() < 0.9 ? 0 : 1;
      if (rare.count(g) && rng.uniform() < 0.9) c = 2;
      in.labels.push_back(label_id[c]);
      in.groups.push_back(static_cast<int32_t>(7919 * (g + 3) % 1009));
    }
  }
  return in;
}

struct Figures {
  int64_t size_spread = 0;
  double max_dev = 0, mean_dev = 0;
  int64_t missing = 0, leakage = 0;
};

Figures figures(const std::vector<int16_t>& assign, const Input& in, int32_t folds) {
  SplitQuality q =
      split_quality(assign, folds, in.labels, in.groups, static_cast<std::size_t>(in.classes));
  Figures f;
  int64_t lo = INT64_MAX, hi = 0;
  for (const FoldStats& fold : q.folds) {
    lo = std::min(lo, fold.size);
    hi = std::max(hi, fold.size);
    f.max_dev = std::max(f.max_dev, fold.max_class_dev);
    f.mean_dev += fold.mean_class_dev / folds;
    f.missing += static_cast<int64_t>(fold.missing_classes.size());
  }
  f.size_spread = hi - lo;
  f.leakage = q.group_leakage;
  return f;
}

class AgainstScikitLearn : public ::testing::Test {
 protected:
  void SetUp() override {
    // Figures against scikit-learn's, which a sanitizer build would compare a
    // second time at ten times the cost; the code they drive (compute_split,
    // the replay of StratifiedGroupKFold) runs under the sanitizers in
    // split_test.cpp and split_extend_test.cpp.
    if (test::kSanitizer) GTEST_SKIP() << "compared with scikit-learn in the plain build";
    if (!test::python_has_modules({"numpy", "sklearn"})) {
      GTEST_SKIP() << "scikit-learn not available to " << test::system_python();
    }
  }
};

SplitSpec kfold(SplitKind kind, int32_t folds, uint64_t seed) {
  SplitSpec spec;
  spec.kind = kind;
  spec.folds = folds;
  spec.seed = seed;
  return spec;
}

TEST_F(AgainstScikitLearn, StratifiedGroupKFoldIsBeatenOnEveryFigure) {
  for (uint64_t seed : {1, 2}) {
    Input in = make_input(seed);
    std::vector<int16_t> theirs = sklearn_folds(in, "StratifiedGroupKFold(5)");
    ASSERT_EQ(theirs.size(), in.labels.size());
    Figures sk = figures(theirs, in, 5);
    Figures ours = figures(
        compute_split(in.labels, in.groups, kfold(SplitKind::stratified_group, 5, seed)).assign, in,
        5);
    EXPECT_EQ(ours.leakage, 0);
    EXPECT_EQ(sk.leakage, 0);
    EXPECT_LE(ours.size_spread, sk.size_spread);
    EXPECT_LE(ours.max_dev, sk.max_dev);
    EXPECT_LE(ours.mean_dev, sk.mean_dev);
    EXPECT_LE(ours.missing, sk.missing);
  }
}

TEST_F(AgainstScikitLearn, TheReplayOfStratifiedGroupKFoldGivesItsFolds) {
  Input scattered = make_input(2);
  for (int32_t& g : scattered.groups) g = (g * 37) % 1013;  // ids out of order
  for (int32_t& l : scattered.labels) l = 50 - 3 * l;
  Input singletons = make_input(3);
  for (std::size_t i = 0; i < singletons.groups.size(); ++i) {
    singletons.groups[i] = static_cast<int32_t>((i * 7919) % 30011);  // a group per sample
  }
  const Input inputs[] = {make_input(1), scattered, singletons, issue_layout(1)};
  const std::vector<int32_t> ks = {2, 3, 5, 7};
  for (const Input& in : inputs) {
    std::vector<std::string> splitters;
    splitters.reserve(ks.size());
    for (int32_t k : ks) splitters.push_back("StratifiedGroupKFold(" + std::to_string(k) + ")");
    const std::vector<std::vector<int16_t>> theirs = sklearn_folds(in, splitters);
    const Replay r = replay_of(in);
    for (std::size_t j = 0; j < ks.size(); ++j) {
      SCOPED_TRACE("k " + std::to_string(ks[j]) + ", " + std::to_string(in.labels.size()) +
                   " samples");
      const std::vector<int32_t> replayed =
          sklearn::stratified_group_kfold(r.items, r.item_rank, r.class_rank, ks[j]);
      ASSERT_EQ(theirs[j].size(), in.labels.size());
      for (std::size_t i = 0; i < theirs[j].size(); ++i) {
        ASSERT_EQ(replayed[static_cast<std::size_t>(r.item_of_sample[i])], theirs[j][i])
            << "sample " << i;
      }
    }
  }
}

TEST_F(AgainstScikitLearn, TheReplayedCriterionIsNumpysToTheBit) {
  for (uint64_t seed : {1, 2}) {
    const Input in = seed == 1 ? make_input(seed) : issue_layout(seed);
    const Replay r = replay_of(in);
    const std::vector<int32_t> ks = {2, 5, 9};
    std::vector<std::string> splitters;
    splitters.reserve(ks.size());
    for (int32_t k : ks) splitters.push_back("StratifiedGroupKFold(" + std::to_string(k) + ")");
    const std::vector<std::vector<int16_t>> theirs = sklearn_folds(in, splitters);
    // For every k: scikit-learn's folds, imgpack's, and groups dealt at random.
    std::vector<Folds> splits;
    for (std::size_t j = 0; j < ks.size(); ++j) {
      const int32_t k = ks[j];
      splits.push_back({theirs[j], k});
      splits.push_back(
          {compute_split(in.labels, in.groups, kfold(SplitKind::stratified_group, k, 0)).assign,
           k});
      CounterRng rng(seed, static_cast<uint64_t>(k));
      std::vector<int16_t> fold_of_item(r.items.num_items());
      for (auto& f : fold_of_item) f = static_cast<int16_t>(rng.below(static_cast<uint64_t>(k)));
      splits.push_back({{}, k});
      for (int32_t item : r.item_of_sample) {
        splits.back().assign.push_back(fold_of_item[static_cast<std::size_t>(item)]);
      }
    }
    const std::vector<double> expected = numpy_criteria(in, splits);
    for (std::size_t v = 0; v < splits.size(); ++v) {
      EXPECT_EQ(sklearn::stratified_group_criterion(r.items, item_folds(r, splits[v].assign),
                                                    r.class_rank, splits[v].k),
                expected[v])
          << "k " << splits[v].k << ", assignment " << v % 3;
    }
  }
}

TEST_F(AgainstScikitLearn, NumpySumIsNumpysToTheBit) {
  CounterRng rng(5);
  std::ostringstream data;
  data << std::setprecision(17);
  std::vector<std::vector<double>> arrays;
  for (std::size_t n : {0, 1, 7, 8, 9, 127, 128, 129, 1000, 8191, 8192, 8193, 20000}) {
    std::vector<double> values(n);
    for (double& v : values) v = rng.uniform() * std::pow(10.0, rng.uniform(-6, 6));
    for (double v : values) data << v << ' ';
    data << '\n';
    arrays.push_back(std::move(values));
  }
  std::istringstream sums(run_python(
      "import sys\n"
      "import numpy as np\n"
      "for line in open(sys.argv[1]):\n"
      "    print(repr(float(np.add.reduce(np.array(line.split(), dtype=np.float64)))))\n",
      data.str()));
  for (const std::vector<double>& values : arrays) {
    std::string expected;
    ASSERT_TRUE(sums >> expected);
    EXPECT_EQ(sklearn::numpy_sum(values), std::stod(expected)) << values.size() << " values";
  }
}

TEST_F(AgainstScikitLearn, StratifiedGroupIsNoWorseOnTheIssuesLayout) {
  // Where scikit-learn beat the earlier search on its own criterion.
  for (uint64_t layout : {1, 2, 3}) {
    const Input in = issue_layout(layout);
    const Replay r = replay_of(in);
    const std::vector<int16_t> theirs = sklearn_folds(in, "StratifiedGroupKFold(5)");
    const double their_criterion =
        sklearn::stratified_group_criterion(r.items, item_folds(r, theirs), r.class_rank, 5);
    for (uint64_t seed = 0; seed < 4; ++seed) {
      SCOPED_TRACE("layout " + std::to_string(layout) + ", seed " + std::to_string(seed));
      const std::vector<int16_t> ours =
          compute_split(in.labels, in.groups, kfold(SplitKind::stratified_group, 5, seed)).assign;
      EXPECT_LE(sklearn::stratified_group_criterion(r.items, item_folds(r, ours), r.class_rank, 5),
                their_criterion);
      EXPECT_LE(spread_of(ours, 5), spread_of(theirs, 5));
      EXPECT_EQ(split_quality(ours, 5, in.labels, in.groups, 100).group_leakage, 0);
    }
  }
}

TEST_F(AgainstScikitLearn, GroupKFoldIsMatchedOnSizesAndBeatenOnClasses) {
  Input in = make_input(3);
  Figures sk = figures(sklearn_folds(in, "GroupKFold(5)"), in, 5);
  Figures ours =
      figures(compute_split(in.labels, in.groups, kfold(SplitKind::group, 5, 0)).assign, in, 5);
  EXPECT_EQ(ours.leakage, 0);
  EXPECT_LE(ours.size_spread, sk.size_spread);
  EXPECT_LE(ours.mean_dev, sk.mean_dev);
}

TEST_F(AgainstScikitLearn, StratifiedKFoldIsMatched) {
  Input in = make_input(4);
  Figures sk =
      figures(sklearn_folds(in, "StratifiedKFold(5, shuffle=True, random_state=0)"), in, 5);
  Figures ours = figures(
      compute_split(in.labels, in.groups, kfold(SplitKind::stratified, 5, 0)).assign, in, 5);
  EXPECT_LE(ours.size_spread, sk.size_spread);
  EXPECT_LE(ours.max_dev, sk.max_dev + 1e-12);
  EXPECT_LE(ours.missing, sk.missing);
}

TEST_F(AgainstScikitLearn, KFoldFoldSizesAreMatched) {
  Input in = make_input(5);
  Figures sk = figures(sklearn_folds(in, "KFold(5, shuffle=True, random_state=0)"), in, 5);
  Figures ours =
      figures(compute_split(in.labels, in.groups, kfold(SplitKind::random, 5, 0)).assign, in, 5);
  EXPECT_LE(ours.size_spread, sk.size_spread);
}

}  // namespace
}  // namespace imgpack
