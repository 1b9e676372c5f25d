#include "split/multilabel_split.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <queue>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>

#include "imgpack/error.hpp"
#include "random.hpp"
#include "split/multilabel_search.hpp"
#include "split/split_groups.hpp"

namespace imgpack {

namespace {

// Stream ids for CounterRng, so unrelated random choices never share a stream.
constexpr uint64_t kLabelOrderStream = 0x6d6c6f72646572;  // "mlorder"
constexpr uint64_t kPartTieStream = 0x6d6c746965;         // "mltie"

// Greedy passes, each followed by the local search, of which the best is
// kept: kStarts, or fewer where that would search more than kStartUnits units
// in all (large inputs vary less from start to start).
constexpr uint64_t kStarts = 4;
constexpr std::size_t kStartUnits = 40000;
// Desired counts closer than this (relative) are ties.
constexpr double kTieTolerance = 1e-9;

std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

void check_fractions(const char* what, std::span<const double> fractions) {
  if (fractions.empty()) throw UsageError(std::string(what) + ": no fractions");
  double sum = 0;
  for (double f : fractions) {
    if (!std::isfinite(f) || f < 0) {
      throw UsageError(std::string(what) + ": fraction " + number_text(f) +
                       " is not a number >= 0");
    }
    sum += f;
  }
  if (std::abs(sum - 1) > 1e-9) {
    throw UsageError(std::string(what) + ": fractions sum to " + number_text(sum) + ", not 1");
  }
}

void check_labels(const char* what, const LabelRows& labels) {
  const auto refuse = [&](const std::string& problem) {
    throw UsageError(std::string(what) + ": " + problem);
  };
  if (labels.begin.empty() || labels.begin.front() != 0 ||
      labels.begin.back() != labels.label.size()) {
    refuse("the label rows' offsets do not span their " + std::to_string(labels.label.size()) +
           " labels");
  }
  for (std::size_t i = 0; i < labels.rows(); ++i) {
    if (labels.begin[i + 1] < labels.begin[i]) {
      refuse("the label row of sample " + std::to_string(i) + " ends before it begins");
    }
    for (std::size_t e = labels.begin[i]; e < labels.begin[i + 1]; ++e) {
      const int32_t l = labels.label[e];
      if (l < 0 || static_cast<std::size_t>(l) >= labels.columns) {
        refuse("sample " + std::to_string(i) + " has label " + std::to_string(l) + ", outside 0.." +
               std::to_string(labels.columns) + "-1");
      }
      if (e > labels.begin[i] && l <= labels.label[e - 1]) {
        refuse("the labels of sample " + std::to_string(i) + " are not ascending");
      }
    }
  }
}

// The units of a split: the samples, or with groups the groups.
detail::LabelUnits make_units(const LabelRows& labels, std::span<const int32_t> groups) {
  const std::size_t rows = labels.rows(), columns = labels.columns;
  detail::LabelUnits units;
  std::size_t count = 0;
  if (groups.empty()) {
    units.of_sample.resize(rows);
    std::iota(units.of_sample.begin(), units.of_sample.end(), 0);
    count = rows;
  } else {
    detail::Ids ids = detail::canonical_ids(groups, /*negatives_alone=*/true);
    units.of_sample = std::move(ids.of);
    count = ids.original.size();
  }
  // The samples of every unit, in sample order (a counting sort).
  std::vector<std::size_t> start(count + 1, 0);
  for (int32_t u : units.of_sample) ++start[static_cast<std::size_t>(u) + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<std::size_t> members(rows);
  {
    std::vector<std::size_t> next(start.begin(), start.end() - 1);
    for (std::size_t i = 0; i < rows; ++i)
      members[next[static_cast<std::size_t>(units.of_sample[i])]++] = i;
  }
  units.size.resize(count);
  units.begin.assign(1, 0);
  units.label_total.assign(columns, 0);
  units.samples = static_cast<int64_t>(rows);
  std::vector<int64_t> scratch(columns, 0);
  std::vector<int32_t> touched;
  for (std::size_t u = 0; u < count; ++u) {
    units.size[u] = static_cast<int64_t>(start[u + 1] - start[u]);
    for (std::size_t m = start[u]; m < start[u + 1]; ++m) {
      const std::size_t i = members[m];
      for (std::size_t e = labels.begin[i]; e < labels.begin[i + 1]; ++e) {
        const int32_t l = labels.label[e];
        if (scratch[static_cast<std::size_t>(l)]++ == 0) touched.push_back(l);
      }
    }
    std::sort(touched.begin(), touched.end());
    for (int32_t l : touched) {
      const auto label = static_cast<std::size_t>(l);
      units.label.push_back(l);
      units.count.push_back(scratch[label]);
      units.label_total[label] += scratch[label];
      scratch[label] = 0;
    }
    touched.clear();
    units.begin.push_back(units.label.size());
  }
  return units;
}

// The part among 0..key1.size()-1 with the largest key1, ties to the largest
// key2, further ties drawn from `rng`. `ties` is scratch space.
template <class Key1, class Key2>
int32_t best_part(const Key1& key1, const Key2& key2, std::size_t parts, CounterRng& rng,
                  std::vector<int32_t>& ties) {
  auto close = [](double value, double best) {
    return value >= best - kTieTolerance * std::max(1.0, std::abs(best));
  };
  double best1 = -std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < parts; ++j) best1 = std::max(best1, key1(j));
  double best2 = -std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < parts; ++j)
    if (close(key1(j), best1)) best2 = std::max(best2, key2(j));
  ties.clear();
  for (std::size_t j = 0; j < parts; ++j)
    if (close(key1(j), best1) && close(key2(j), best2)) ties.push_back(static_cast<int32_t>(j));
  return ties.size() == 1 ? ties[0] : ties[rng.below(ties.size())];
}

// The paper's Algorithm 1 over units: the part of every unit.
std::vector<int32_t> greedy_parts(const detail::LabelUnits& units,
                                  std::span<const double> fractions, uint64_t seed,
                                  uint64_t start) {
  const std::size_t parts = fractions.size(), columns = units.label_total.size();
  const std::size_t count = units.units();
  // The units with every label, in unit order.
  std::vector<std::size_t> holders_begin(columns + 1, 0);
  for (int32_t l : units.label) ++holders_begin[static_cast<std::size_t>(l) + 1];
  std::partial_sum(holders_begin.begin(), holders_begin.end(), holders_begin.begin());
  std::vector<uint32_t> holders(units.label.size());
  {
    std::vector<std::size_t> next(holders_begin.begin(), holders_begin.end() - 1);
    for (std::size_t u = 0; u < count; ++u)
      for (std::size_t e = units.begin[u]; e < units.begin[u + 1]; ++e)
        holders[next[static_cast<std::size_t>(units.label[e])]++] = static_cast<uint32_t>(u);
  }
  std::vector<double> desired_size(parts), desired(parts * columns);
  for (std::size_t j = 0; j < parts; ++j) {
    desired_size[j] = static_cast<double>(units.samples) * fractions[j];
    for (std::size_t l = 0; l < columns; ++l)
      desired[j * columns + l] = static_cast<double>(units.label_total[l]) * fractions[j];
  }
  // Ties between labels of equally few samples follow a seeded order.
  std::vector<uint32_t> label_rank(columns);
  {
    std::vector<uint32_t> order(columns);
    std::iota(order.begin(), order.end(), 0u);
    CounterRng(seed, kLabelOrderStream, start).shuffle(std::span(order));
    for (std::size_t r = 0; r < columns; ++r) label_rank[order[r]] = static_cast<uint32_t>(r);
  }
  std::vector<int64_t> remaining = units.label_total;
  // (samples left, rank, label); stale entries (the count has dropped since) are skipped.
  using Entry = std::tuple<int64_t, uint32_t, std::size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> fewest;
  for (std::size_t l = 0; l < columns; ++l)
    if (remaining[l] > 0) fewest.emplace(remaining[l], label_rank[l], l);

  CounterRng rng(seed, kPartTieStream, start);
  std::vector<int32_t> part(count, -1), ties;
  auto assign = [&](std::size_t u, int32_t to, std::size_t current) {
    const auto j = static_cast<std::size_t>(to);
    part[u] = to;
    desired_size[j] -= static_cast<double>(units.size[u]);
    for (std::size_t e = units.begin[u]; e < units.begin[u + 1]; ++e) {
      const auto l = static_cast<std::size_t>(units.label[e]);
      desired[j * columns + l] -= static_cast<double>(units.count[e]);
      remaining[l] -= units.count[e];
      if (l != current && remaining[l] > 0) fewest.emplace(remaining[l], label_rank[l], l);
    }
  };
  const auto by_size = [&](std::size_t j) { return desired_size[j]; };
  while (!fewest.empty()) {
    const auto [left, rank, l] = fewest.top();
    fewest.pop();
    if (left != remaining[l] || left == 0) continue;
    const auto by_label = [&, l = l](std::size_t j) { return desired[j * columns + l]; };
    for (std::size_t h = holders_begin[l]; h < holders_begin[l + 1]; ++h) {
      const uint32_t u = holders[h];
      if (part[u] >= 0) continue;
      assign(u, best_part(by_label, by_size, parts, rng, ties), l);
    }
  }
  // Units without labels, largest first, balance the sizes.
  std::vector<uint32_t> unlabeled;
  for (std::size_t u = 0; u < count; ++u)
    if (part[u] < 0) unlabeled.push_back(static_cast<uint32_t>(u));
  std::stable_sort(unlabeled.begin(), unlabeled.end(),
                   [&](uint32_t a, uint32_t b) { return units.size[a] > units.size[b]; });
  for (uint32_t u : unlabeled) assign(u, best_part(by_size, by_size, parts, rng, ties), columns);
  return part;
}

}  // namespace

LabelRows LabelRows::from_dense(std::span<const uint8_t> values, std::size_t columns) {
  if (columns == 0 ? !values.empty() : values.size() % columns != 0) {
    throw UsageError("LabelRows: " + std::to_string(values.size()) +
                     " label values are not rows of " + std::to_string(columns));
  }
  LabelRows rows;
  rows.columns = columns;
  const std::size_t samples = columns == 0 ? 0 : values.size() / columns;
  rows.begin.reserve(samples + 1);
  for (std::size_t i = 0; i < samples; ++i) {
    for (std::size_t l = 0; l < columns; ++l) {
      if (values[i * columns + l] != 0) rows.label.push_back(static_cast<int32_t>(l));
    }
    rows.end_row();
  }
  return rows;
}

std::vector<int32_t> iterative_stratification(const LabelRows& labels,
                                              std::span<const int32_t> groups,
                                              std::span<const double> fractions, uint64_t seed) {
  constexpr const char* what = "iterative_stratification";
  check_fractions(what, fractions);
  check_labels(what, labels);
  const std::size_t rows = labels.rows();
  if (!groups.empty() && groups.size() != rows) {
    throw UsageError(std::string(what) + ": " + std::to_string(groups.size()) + " groups for " +
                     std::to_string(rows) + " samples");
  }
  const detail::LabelUnits units = make_units(labels, groups);
  // The best of a few starts: the lowest LD, ties to the lowest ED.
  std::vector<int32_t> part;
  double best_ld = 0, best_ed = 0;
  const uint64_t starts =
      std::clamp<uint64_t>(kStartUnits / std::max<std::size_t>(1, units.units()), 1, kStarts);
  for (uint64_t start = 0; start < starts; ++start) {
    std::vector<int32_t> candidate = greedy_parts(units, fractions, seed, start);
    const auto [ld, ed] = detail::search_label_parts(units, fractions, candidate, seed, start);
    if (start == 0 || ld < best_ld - detail::kMinLabelGain ||
        (ld <= best_ld + detail::kMinLabelGain && ed < best_ed)) {
      part = std::move(candidate);
      best_ld = ld;
      best_ed = ed;
    }
  }
  std::vector<int32_t> out(rows);
  for (std::size_t i = 0; i < rows; ++i)
    out[i] = part[static_cast<std::size_t>(units.of_sample[i])];
  return out;
}

MultilabelQuality multilabel_quality(const LabelRows& labels, std::span<const int32_t> parts,
                                     std::span<const double> fractions) {
  constexpr const char* what = "multilabel_quality";
  check_fractions(what, fractions);
  check_labels(what, labels);
  const std::size_t rows = labels.rows(), columns = labels.columns, k = fractions.size();
  if (parts.size() != rows) {
    throw UsageError(std::string(what) + ": " + std::to_string(parts.size()) + " parts for " +
                     std::to_string(rows) + " samples");
  }
  std::vector<int64_t> size(k, 0), count(k * columns, 0), total(columns, 0);
  for (std::size_t i = 0; i < rows; ++i) {
    if (parts[i] < 0 || static_cast<std::size_t>(parts[i]) >= k) {
      throw UsageError(std::string(what) + ": sample " + std::to_string(i) + " is in part " +
                       std::to_string(parts[i]) + " of " + std::to_string(k));
    }
    const auto j = static_cast<std::size_t>(parts[i]);
    ++size[j];
    for (std::size_t e = labels.begin[i]; e < labels.begin[i + 1]; ++e) {
      const auto l = static_cast<std::size_t>(labels.label[e]);
      ++count[j * columns + l];
      ++total[l];
    }
  }
  MultilabelQuality q;
  const auto n = static_cast<int64_t>(rows);
  if (columns > 0) {
    double sum = 0;
    for (std::size_t l = 0; l < columns; ++l) {
      const double whole = detail::label_ratio(total[l], n);
      double label_sum = 0;
      for (std::size_t j = 0; j < k; ++j)
        label_sum += std::abs(detail::label_ratio(count[j * columns + l], size[j]) - whole);
      sum += label_sum / static_cast<double>(k);
    }
    q.label_distribution = sum / static_cast<double>(columns);
  }
  double deviation = 0;
  for (std::size_t j = 0; j < k; ++j)
    deviation += std::abs(static_cast<double>(size[j]) - static_cast<double>(n) * fractions[j]);
  q.examples_distribution = deviation / static_cast<double>(k);
  return q;
}

}  // namespace imgpack