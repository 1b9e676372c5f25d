#include "random.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

namespace imgpack {
namespace {

TEST(CounterRng, SameKeySameStream) {
  CounterRng a(42, 7, 9), b(42, 7, 9);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next(), b.next());
}

TEST(CounterRng, DifferentKeysDiffer) {
  CounterRng a(42, 7, 9), b(42, 7, 10), c(43, 7, 9), d(42, 8, 9);
  uint64_t x = a.next();
  EXPECT_NE(x, b.next());
  EXPECT_NE(x, c.next());
  EXPECT_NE(x, d.next());
}

TEST(CounterRng, BelowIsInRangeAndRoughlyUniform) {
  CounterRng rng(1);
  std::vector<int> counts(10, 0);
  for (int i = 0; i < 100000; ++i) {
    uint64_t v = rng.below(10);
    ASSERT_LT(v, 10u);
    ++counts[v];
  }
  for (int c : counts) EXPECT_NEAR(c, 10000, 500);
}

TEST(CounterRng, UniformIsInUnitInterval) {
  CounterRng rng(5);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    double u = rng.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.01);
}

TEST(CounterRng, ShuffleIsAPermutationAndSeeded) {
  std::vector<int> a(1000), b(1000);
  std::iota(a.begin(), a.end(), 0);
  std::iota(b.begin(), b.end(), 0);
  CounterRng(3).shuffle(std::span(a));
  CounterRng(3).shuffle(std::span(b));
  EXPECT_EQ(a, b);
  std::vector<int> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(sorted[i], i);
  std::vector<int> c(1000);
  std::iota(c.begin(), c.end(), 0);
  CounterRng(4).shuffle(std::span(c));
  EXPECT_NE(a, c);
}

}  // namespace
}  // namespace imgpack
