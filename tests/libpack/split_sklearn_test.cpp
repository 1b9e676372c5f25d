// imgpack's splits against scikit-learn's on the same input, run live when
// the system Python has scikit-learn (skipped otherwise): the quality figures
// of our split must be at least as good as those of the matching splitter.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
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

// Runs the scikit-learn splitter `splitter` (a Python expression) and returns
// the fold of every sample.
std::vector<int16_t> sklearn_folds(const Input& in, const std::string& splitter) {
  test::TempDir dir;
  {
    std::ofstream data(dir / "input.txt");
    for (std::size_t i = 0; i < in.labels.size(); ++i)
      data << in.labels[i] << ' ' << in.groups[i] << '\n';
    std::ofstream script(dir / "run.py");
    script << "import sys, warnings\n"
              "import numpy as np\n"
              "from sklearn.model_selection import *\n"
              "warnings.simplefilter('ignore')\n"
              "d = np.loadtxt(sys.argv[1], dtype=np.int64).reshape(-1, 2)\n"
              "y, g = d[:, 0], d[:, 1]\n"
              "fold = np.full(len(y), -1)\n"
              "for f, (_, te) in enumerate("
           << splitter
           << ".split(np.zeros((len(y), 1)), y, g)):\n"
              "    fold[te] = f\n"
              "print(' '.join(map(str, fold)))\n";
  }
  test::CommandResult r = test::run_command(std::string(IMGPACK_SYSTEM_PYTHON) + " " +
                                            test::shell_quote((dir / "run.py").string()) + " " +
                                            test::shell_quote((dir / "input.txt").string()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<int16_t> folds;
  std::istringstream out(r.out);
  int value;
  while (out >> value) folds.push_back(static_cast<int16_t>(value));
  return folds;
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
    if (!test::python_has_modules({"numpy", "sklearn"})) {
      GTEST_SKIP() << "scikit-learn not available to " << IMGPACK_SYSTEM_PYTHON;
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
