#include "split/multilabel_search.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace imgpack::detail {
namespace {

// Units of random sizes (1 to `largest` samples), each with up to `per_unit`
// distinct labels out of `columns`, counts up to its size.
LabelUnits random_units(std::size_t units, std::size_t columns, int64_t largest, int per_unit,
                        uint32_t seed) {
  std::mt19937 rng(seed);
  LabelUnits u;
  u.label_total.assign(columns, 0);
  u.begin.push_back(0);
  for (std::size_t i = 0; i < units; ++i) {
    const int64_t size = std::uniform_int_distribution<int64_t>(1, largest)(rng);
    u.size.push_back(size);
    for (int64_t s = 0; s < size; ++s) u.of_sample.push_back(static_cast<int32_t>(i));
    std::vector<bool> has(columns, false);
    for (int k = 0; k < per_unit; ++k) has[rng() % columns] = true;
    for (std::size_t l = 0; l < columns; ++l) {
      if (!has[l]) continue;
      const int64_t count = std::uniform_int_distribution<int64_t>(1, size)(rng);
      u.label.push_back(static_cast<int32_t>(l));
      u.count.push_back(count);
      u.label_total[l] += count;
    }
    u.begin.push_back(u.label.size());
    u.samples += size;
  }
  return u;
}

// The summed LD terms (L k LD) and ED terms (k ED) of `part`, counted afresh.
LabelTerms count_terms(const LabelUnits& u, const std::vector<double>& fractions,
                       const std::vector<int32_t>& part) {
  const std::size_t k = fractions.size();
  const std::size_t columns = u.label_total.size();
  std::vector<int64_t> size(k, 0);
  std::vector<int64_t> count(k * columns, 0);
  for (std::size_t i = 0; i < u.units(); ++i) {
    const auto j = static_cast<std::size_t>(part[i]);
    size[j] += u.size[i];
    for (std::size_t e = u.begin[i]; e < u.begin[i + 1]; ++e)
      count[j * columns + static_cast<std::size_t>(u.label[e])] += u.count[e];
  }
  LabelTerms terms;
  for (std::size_t j = 0; j < k; ++j) {
    terms.size +=
        std::abs(static_cast<double>(size[j]) - static_cast<double>(u.samples) * fractions[j]);
    for (std::size_t l = 0; l < columns; ++l) {
      terms.label += std::abs(label_ratio(count[j * columns + l], size[j]) -
                              label_ratio(u.label_total[l], u.samples));
    }
  }
  return terms;
}

std::vector<int32_t> round_robin(std::size_t units, std::size_t parts) {
  std::vector<int32_t> part(units);
  for (std::size_t i = 0; i < units; ++i) part[i] = static_cast<int32_t>(i % parts);
  return part;
}

// The search keeps each part's summed terms at many sizes and updates them
// move by move rather than recounting them; what it reports for the
// partition it leaves must be the partition's terms counted afresh. Units of
// up to 400 samples give a part more sizes than it keeps (some dropped), and
// units with many labels make it recount rather than update.
TEST(MultilabelSearch, ReportedTermsAreThePartitionsCountedAfresh) {
  struct Layout {
    std::size_t units, columns;
    int64_t largest;
    int per_unit;
  };
  const std::vector<Layout> layouts = {
      {2000, 300, 1, 3}, {600, 200, 12, 6}, {300, 150, 400, 40}, {120, 60, 30, 60}};
  const std::vector<double> fractions = {0.5, 0.2, 0.2, 0.1};
  for (std::size_t n = 0; n < layouts.size(); ++n) {
    const Layout& layout = layouts[n];
    SCOPED_TRACE(n);
    const LabelUnits units = random_units(layout.units, layout.columns, layout.largest,
                                          layout.per_unit, static_cast<uint32_t>(n + 1));
    std::vector<int32_t> part = round_robin(units.units(), fractions.size());
    const LabelTerms before = count_terms(units, fractions, part);
    const LabelTerms reported = search_label_parts(units, fractions, part, 7, 0);
    const LabelTerms counted = count_terms(units, fractions, part);
    EXPECT_NEAR(reported.label, counted.label, 1e-9 * counted.label);
    EXPECT_NEAR(reported.size, counted.size, 1e-9);
    EXPECT_LT(counted.label, before.label);  // the search did move units
  }
}

}  // namespace
}  // namespace imgpack::detail
