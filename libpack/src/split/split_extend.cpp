#include "split/split_extend.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <utility>

#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "random.hpp"
#include "split/split_groups.hpp"

namespace imgpack {

namespace {

// Stream id for CounterRng, apart from compute_split's streams.
constexpr uint64_t kUnitOrderStream = 0x73706c6974657874;  // "splitext"

// Differences of the measure below this are rounding, not balance.
constexpr double kTolerance = 1e-9;

// Rounds of single-unit moves after the greedy pass, and the work (unit
// entries x parts looked at) after which they stop: a bound on the time of
// very large extensions that leaves ordinary ones their full search.
constexpr int kMoveRounds = 8;
constexpr uint64_t kMoveWorkBudget = 200'000'000;

// Assignment of a new sample not yet placed (never returned).
constexpr int16_t kUnplaced = -3;

[[noreturn]] void fail(const char* function, const Split& split, const std::string& what) {
  throw Error(std::string(function) + ": split '" + split.name + "': " + what);
}

// Parts are the folds 0..k-1 and the test set, index k.
std::size_t part_index(int16_t value, std::size_t folds) {
  return value == format::kTestFold ? folds : static_cast<std::size_t>(value);
}
int16_t part_value(std::size_t part, std::size_t folds) {
  return part == folds ? format::kTestFold : static_cast<int16_t>(part);
}
std::string part_name(std::size_t part, std::size_t folds) {
  return part == folds ? "the test set" : "fold " + std::to_string(part);
}

bool flagged(std::span<const uint8_t> removed, std::size_t i) {
  return !removed.empty() && removed[i] != 0;
}

// The checks both public functions share: folds in range, every old
// assignment in kRemovedFold..folds-1, labels, multi-label rows and flags over
// the same S samples, old_samples <= S.
void check_inputs(const char* function, const Split& split, std::span<const int32_t> labels,
                  MultilabelRows multilabel, std::span<const uint8_t> removed) {
  const std::size_t s = labels.size();
  if (split.folds < 1 || split.folds > kMaxFolds) {
    fail(function, split,
         "folds " + std::to_string(split.folds) + " is outside 1.." + std::to_string(kMaxFolds));
  }
  if (split.assign.size() > s) {
    fail(function, split,
         "it covers " + std::to_string(split.assign.size()) + " samples, more than the " +
             std::to_string(s) + " given");
  }
  if (!removed.empty() && removed.size() != s) {
    fail(function, split,
         std::to_string(removed.size()) + " removed flags for " + std::to_string(s) + " samples");
  }
  if (multilabel.values.size() != s * multilabel.classes) {
    fail(function, split,
         std::to_string(multilabel.values.size()) + " multi-label entries for " +
             std::to_string(s) + " samples x " + std::to_string(multilabel.classes) + " classes");
  }
  for (std::size_t i = 0; i < split.assign.size(); ++i) {
    const int16_t value = split.assign[i];
    if (value < kRemovedFold || value >= split.folds) {
      fail(function, split,
           "sample " + std::to_string(i) + " has assignment " + std::to_string(value) +
               ", outside " + std::to_string(kRemovedFold) + ".." +
               std::to_string(split.folds - 1));
    }
  }
}

// The share of every part (folds, then the test set) among the old samples
// that are neither removed nor flagged; the spec's shares when none is left.
std::vector<double> target_shares(const Split& split, std::span<const uint8_t> removed,
                                  bool* from_old_samples) {
  const auto k = static_cast<std::size_t>(split.folds);
  std::vector<double> share(k + 1, 0);
  int64_t total = 0;
  for (std::size_t i = 0; i < split.assign.size(); ++i) {
    const int16_t value = split.assign[i];
    if (value == kRemovedFold || flagged(removed, i)) continue;
    share[part_index(value, k)] += 1;
    ++total;
  }
  *from_old_samples = total > 0;
  if (total > 0) {
    for (double& w : share) w /= static_cast<double>(total);
    return share;
  }
  const double test =
      std::isfinite(split.test_fraction) && split.test_fraction > 0 && split.test_fraction < 1
          ? split.test_fraction
          : 0.0;
  share[k] = test;
  const double val = split.val_fraction;
  if (split.kind == "holdout" && k == 2 && std::isfinite(val) && val > 0 && val < 1 - test) {
    share[0] = val;
    share[1] = 1 - test - val;
  } else {
    for (std::size_t p = 0; p < k; ++p) share[p] = (1 - test) / static_cast<double>(k);
  }
  return share;
}

// The balance columns of every sample, in compressed rows: sample i counts in
// columns col[first[i] .. first[i + 1]). Stratified: its class (labels -1 one
// more class), its multi-label columns and the size column; otherwise the
// size column alone. Without the size column a stratified extension over
// many small classes would meet only ties (a class of two new samples over
// twenty folds lowers the measure as much in every fold) and pile them into
// one part.
struct Columns {
  std::size_t count = 0;
  std::vector<std::size_t> first;
  std::vector<int32_t> col;
};

Columns balance_columns(bool stratified, std::span<const int32_t> labels,
                        MultilabelRows multilabel) {
  const std::size_t s = labels.size();
  Columns columns;
  columns.first.reserve(s + 1);
  columns.first.push_back(0);
  if (!stratified) {
    columns.count = 1;
    columns.col.assign(s, 0);
    for (std::size_t i = 0; i < s; ++i) columns.first.push_back(i + 1);
    return columns;
  }
  const detail::Ids classes = detail::canonical_ids(labels, false);
  const auto num_classes = static_cast<std::size_t>(classes.count());
  const auto size_column = static_cast<int32_t>(num_classes + multilabel.classes);
  columns.count = num_classes + multilabel.classes + 1;
  columns.col.reserve(2 * s);
  for (std::size_t i = 0; i < s; ++i) {
    columns.col.push_back(classes.of[i]);
    for (std::size_t c = 0; c < multilabel.classes; ++c) {
      if (multilabel.values[i * multilabel.classes + c] != 0) {
        columns.col.push_back(static_cast<int32_t>(num_classes + c));
      }
    }
    columns.col.push_back(size_column);
    columns.first.push_back(columns.col.size());
  }
  return columns;
}

// split_extension_imbalance() once the inputs are checked: `assign` may also
// hold kUnplaced, which counts nowhere.
double imbalance(const Columns& columns, std::span<const int16_t> assign,
                 std::span<const uint8_t> removed, const std::vector<double>& share) {
  const std::size_t parts = share.size();
  const std::size_t k = parts - 1;
  std::vector<int64_t> count(columns.count * parts, 0), total(columns.count, 0);
  for (std::size_t i = 0; i < assign.size(); ++i) {
    if (assign[i] < format::kTestFold || flagged(removed, i)) continue;
    const std::size_t p = part_index(assign[i], k);
    for (std::size_t e = columns.first[i]; e < columns.first[i + 1]; ++e) {
      const auto c = static_cast<std::size_t>(columns.col[e]);
      ++count[c * parts + p];
      ++total[c];
    }
  }
  double sum = 0;
  for (std::size_t c = 0; c < columns.count; ++c) {
    for (std::size_t p = 0; p < parts; ++p) {
      sum += std::abs(static_cast<double>(count[c * parts + p]) -
                      share[p] * static_cast<double>(total[c]));
    }
  }
  return sum;
}

// The new samples placed by balance: units (a new group, or one sample) with
// their samples and their column histograms, both in compressed rows.
struct Units {
  std::vector<std::size_t> sample_first{0};
  std::vector<uint32_t> samples;
  std::vector<std::size_t> entry_first{0};
  std::vector<int32_t> col;
  std::vector<int64_t> count;
  std::vector<int64_t> size;

  std::size_t num_units() const { return size.size(); }
};

Units make_units(std::span<const uint32_t> free_samples, const std::vector<int32_t>& unit_of,
                 const Columns& columns) {
  // Units numbered by first appearance among the free samples.
  std::vector<std::vector<uint32_t>> members;
  if (unit_of.empty()) {
    members.reserve(free_samples.size());
    for (uint32_t i : free_samples) members.push_back({i});
  } else {
    std::vector<int32_t> seen(
        static_cast<std::size_t>(*std::max_element(unit_of.begin(), unit_of.end()) + 1), -1);
    for (uint32_t i : free_samples) {
      int32_t& slot = seen[static_cast<std::size_t>(unit_of[i])];
      if (slot < 0) {
        slot = static_cast<int32_t>(members.size());
        members.emplace_back();
      }
      members[static_cast<std::size_t>(slot)].push_back(i);
    }
  }
  Units units;
  std::vector<int32_t> cols;
  for (const std::vector<uint32_t>& unit : members) {
    units.samples.insert(units.samples.end(), unit.begin(), unit.end());
    units.sample_first.push_back(units.samples.size());
    units.size.push_back(static_cast<int64_t>(unit.size()));
    cols.clear();
    for (uint32_t i : unit) {
      cols.insert(cols.end(), columns.col.begin() + static_cast<std::ptrdiff_t>(columns.first[i]),
                  columns.col.begin() + static_cast<std::ptrdiff_t>(columns.first[i + 1]));
    }
    std::sort(cols.begin(), cols.end());
    for (std::size_t j = 0; j < cols.size(); ++j) {
      if (j == 0 || cols[j] != cols[j - 1]) {
        units.col.push_back(cols[j]);
        units.count.push_back(0);
      }
      ++units.count.back();
    }
    units.entry_first.push_back(units.col.size());
  }
  return units;
}

// The units largest first, units of equal size in an order seeded by `seed`.
std::vector<uint32_t> unit_order(const Units& units, uint64_t seed) {
  std::vector<uint32_t> order(units.num_units());
  std::iota(order.begin(), order.end(), 0u);
  CounterRng(seed, kUnitOrderStream).shuffle(std::span(order));
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return units.size[a] > units.size[b]; });
  return order;
}

// Greedy placement and single-unit moves over the units, against fixed
// counts of the samples already placed. Works on the measure's own terms.
class BalancePlacer {
 public:
  BalancePlacer(const Columns& columns, std::span<const int16_t> assign,
                std::span<const uint8_t> removed, const Units& units,
                const std::vector<double>& share)
      : units_(units), parts_(share.size()) {
    const std::size_t k = parts_ - 1;
    count_.assign(columns.count * parts_, 0);
    std::vector<int64_t> total(columns.count, 0);
    for (std::size_t i = 0; i < assign.size(); ++i) {
      const bool placed = assign[i] >= format::kTestFold && !flagged(removed, i);
      if (!placed && assign[i] != kUnplaced) continue;
      for (std::size_t e = columns.first[i]; e < columns.first[i + 1]; ++e) {
        const auto c = static_cast<std::size_t>(columns.col[e]);
        if (placed) ++count_[c * parts_ + part_index(assign[i], k)];
        ++total[c];
      }
    }
    target_.resize(count_.size());
    for (std::size_t c = 0; c < columns.count; ++c) {
      for (std::size_t p = 0; p < parts_; ++p) {
        target_[c * parts_ + p] = share[p] * static_cast<double>(total[c]);
      }
    }
    for (std::size_t p = 0; p < parts_; ++p) {
      if (share[p] > 0) open_parts_.push_back(p);
    }
  }

  // The part of every unit: placed greedily, then moved while a move pays.
  // `order` is the units largest first (unit_order()).
  std::vector<std::size_t> place(const std::vector<uint32_t>& order) {
    std::vector<std::size_t> part(units_.num_units(), 0);
    for (uint32_t u : order) {
      std::size_t best = open_parts_.front();
      Delta best_delta = add_delta(u, best);
      for (std::size_t p : open_parts_) {
        const Delta delta = add_delta(u, p);
        if (delta.l1 < best_delta.l1 - kTolerance ||
            (delta.l1 <= best_delta.l1 + kTolerance && delta.l2 < best_delta.l2 - kTolerance)) {
          best = p;
          best_delta = delta;
        }
      }
      part[u] = best;
      apply(u, best, 1);
    }
    improve(order, part);
    return part;
  }

  // `part` (every unit's part, from elsewhere) moved while a move pays.
  std::vector<std::size_t> refine(const std::vector<uint32_t>& order,
                                  std::vector<std::size_t> part) {
    for (uint32_t u : order) apply(u, part[u], 1);
    improve(order, part);
    return part;
  }

 private:
  // The change of the measure (l1) and of the sum of squared deviations (l2,
  // the tie-break: the part furthest below its target) when unit u joins
  // (sign 1) or leaves (sign -1) part p.
  struct Delta {
    double l1 = 0, l2 = 0;
  };
  Delta add_delta(uint32_t u, std::size_t p, int sign = 1) const {
    Delta delta;
    for (std::size_t e = units_.entry_first[u]; e < units_.entry_first[u + 1]; ++e) {
      const std::size_t cell = static_cast<std::size_t>(units_.col[e]) * parts_ + p;
      const double dev = static_cast<double>(count_[cell]) - target_[cell];
      const double step = static_cast<double>(sign * units_.count[e]);
      delta.l1 += std::abs(dev + step) - std::abs(dev);
      delta.l2 += step * (2 * dev + step);
    }
    return delta;
  }

  void apply(uint32_t u, std::size_t p, int sign) {
    for (std::size_t e = units_.entry_first[u]; e < units_.entry_first[u + 1]; ++e) {
      count_[static_cast<std::size_t>(units_.col[e]) * parts_ + p] += sign * units_.count[e];
    }
  }

  // Moves single units to another part while that lowers the measure.
  void improve(const std::vector<uint32_t>& order, std::vector<std::size_t>& part) {
    uint64_t work = 0;
    for (int round = 0; round < kMoveRounds && work < kMoveWorkBudget; ++round) {
      bool moved = false;
      for (uint32_t u : order) {
        const std::size_t from = part[u];
        const double leave = add_delta(u, from, -1).l1;
        std::size_t best = from;
        double best_gain = -kTolerance;
        for (std::size_t p : open_parts_) {
          if (p == from) continue;
          const double gain = leave + add_delta(u, p).l1;
          if (gain < best_gain) {
            best = p;
            best_gain = gain;
          }
        }
        work += (units_.entry_first[u + 1] - units_.entry_first[u]) * open_parts_.size();
        if (best != from) {
          apply(u, from, -1);
          apply(u, best, 1);
          part[u] = best;
          moved = true;
        }
      }
      if (!moved) break;
    }
  }

  const Units& units_;
  std::size_t parts_;
  std::vector<int64_t> count_;           // [column x part] placed samples
  std::vector<double> target_;           // [column x part] share x the column's final total
  std::vector<std::size_t> open_parts_;  // parts with a positive share
};

// The spec the split was made with; nullopt for an imported split or a kind
// this build does not know (with a warning).
std::optional<SplitSpec> stored_spec(const Split& split, std::vector<std::string>& warnings) {
  if (split.kind == kImportedSplitKind) return std::nullopt;
  SplitSpec spec;
  try {
    spec.kind = parse_split_kind(split.kind);
  } catch (const UsageError&) {
    warnings.push_back("split '" + split.name + "' is of kind '" + split.kind +
                       "', unknown here: its new samples are placed by balance alone");
    return std::nullopt;
  }
  spec.seed = split.seed;
  spec.test_fraction = split.test_fraction;
  if (spec.kind == SplitKind::holdout) {
    spec.val_fraction = split.val_fraction;
    spec.use_labels = split.stratified;
    spec.use_groups = split.grouped;
  } else {
    spec.folds = split.folds;
  }
  return spec;
}

// compute_split() over `samples` alone, written into `assign`; false (and
// `assign` unchanged) when it refuses them or its parts do not fit the split.
bool split_alone(const SplitSpec& spec, const Split& split, std::span<const uint32_t> samples,
                 std::span<const int32_t> labels, std::span<const int32_t> groups,
                 MultilabelRows multilabel, std::vector<int16_t>& assign) {
  if (samples.empty()) return false;
  std::vector<int32_t> sub_labels, sub_groups;
  std::vector<uint8_t> sub_rows;
  sub_labels.reserve(samples.size());
  sub_groups.reserve(samples.size());
  sub_rows.reserve(samples.size() * multilabel.classes);
  for (uint32_t i : samples) {
    sub_labels.push_back(labels[i]);
    sub_groups.push_back(groups[i]);
    const auto row = multilabel.values.subspan(i * multilabel.classes, multilabel.classes);
    sub_rows.insert(sub_rows.end(), row.begin(), row.end());
  }
  SplitResult result;
  try {
    result = compute_split(sub_labels, sub_groups, spec, {}, {sub_rows, multilabel.classes});
  } catch (const UsageError&) {
    return false;
  }
  const bool fits = std::all_of(result.assign.begin(), result.assign.end(), [&](int16_t v) {
    return v >= format::kTestFold && v < split.folds;
  });
  if (!fits) return false;
  for (std::size_t j = 0; j < samples.size(); ++j) assign[samples[j]] = result.assign[j];
  return true;
}

// Rule 2: the part each group's new members join, for groups with old
// non-removed members (-2 for the rest), by the most common old part.
std::vector<int16_t> group_parts(const Split& split, const detail::Ids& groups,
                                 std::span<const uint8_t> removed,
                                 std::vector<std::string>& warnings) {
  std::vector<int16_t> part(static_cast<std::size_t>(groups.count()), kRemovedFold);
  std::vector<uint8_t> mixed(part.size(), 0);
  for (std::size_t i = 0; i < split.assign.size(); ++i) {
    const int16_t value = split.assign[i];
    if (value == kRemovedFold || flagged(removed, i)) continue;
    int16_t& slot = part[static_cast<std::size_t>(groups.of[i])];
    if (slot == kRemovedFold) {
      slot = value;
    } else if (slot != value) {
      mixed[static_cast<std::size_t>(groups.of[i])] = 1;
    }
  }
  // Mixed groups: count (group, part index) pairs and take the largest run;
  // ties go to the lowest assignment value (the test set first).
  std::vector<std::pair<int32_t, int32_t>> pairs;
  for (std::size_t i = 0; i < split.assign.size(); ++i) {
    const int16_t value = split.assign[i];
    if (value == kRemovedFold || flagged(removed, i)) continue;
    const int32_t g = groups.of[i];
    if (mixed[static_cast<std::size_t>(g)] != 0) pairs.emplace_back(g, value);
  }
  std::sort(pairs.begin(), pairs.end());
  int64_t mixed_groups = 0;
  for (std::size_t j = 0; j < pairs.size();) {
    const int32_t g = pairs[j].first;
    ++mixed_groups;
    std::size_t best_run = 0;
    while (j < pairs.size() && pairs[j].first == g) {
      std::size_t end = j;
      while (end < pairs.size() && pairs[end] == pairs[j]) ++end;
      if (end - j > best_run) {
        best_run = end - j;
        part[static_cast<std::size_t>(g)] = static_cast<int16_t>(pairs[j].second);
      }
      j = end;
    }
  }
  if (mixed_groups > 0) {
    warnings.push_back(std::to_string(mixed_groups) + " groups of split '" + split.name +
                       "' have old samples in more than one part; their new samples join the "
                       "part most of their old ones are in");
  }
  return part;
}

}  // namespace

double split_extension_imbalance(const Split& split, std::span<const int16_t> assign,
                                 std::span<const int32_t> labels, MultilabelRows multilabel,
                                 std::span<const uint8_t> removed) {
  constexpr const char* kFunction = "split_extension_imbalance";
  check_inputs(kFunction, split, labels, multilabel, removed);
  if (assign.size() != labels.size()) {
    fail(kFunction, split,
         std::to_string(assign.size()) + " assignments for " + std::to_string(labels.size()) +
             " samples");
  }
  for (std::size_t i = 0; i < assign.size(); ++i) {
    if (assign[i] < kRemovedFold || assign[i] >= split.folds) {
      fail(kFunction, split,
           "sample " + std::to_string(i) + " has assignment " + std::to_string(assign[i]) +
               ", outside " + std::to_string(kRemovedFold) + ".." +
               std::to_string(split.folds - 1));
    }
  }
  bool from_old_samples = false;
  const std::vector<double> share = target_shares(split, removed, &from_old_samples);
  return imbalance(balance_columns(split.stratified, labels, multilabel), assign, removed, share);
}

SplitExtension extend_split(const Split& split, std::span<const int32_t> labels,
                            std::span<const int32_t> groups, MultilabelRows multilabel,
                            std::span<const uint8_t> removed) {
  constexpr const char* kFunction = "extend_split";
  check_inputs(kFunction, split, labels, multilabel, removed);
  if (groups.size() != labels.size()) {
    fail(
        kFunction, split,
        std::to_string(labels.size()) + " labels but " + std::to_string(groups.size()) + " groups");
  }
  if (labels.size() > UINT32_MAX) fail(kFunction, split, "more than 2^32 samples");
  const std::size_t s = labels.size();
  const std::size_t old_samples = split.assign.size();
  const auto k = static_cast<std::size_t>(split.folds);

  SplitExtension out;
  out.assign.assign(split.assign.begin(), split.assign.end());
  out.assign.resize(s, kUnplaced);
  for (std::size_t i = 0; i < s; ++i) {
    if (flagged(removed, i)) out.assign[i] = kRemovedFold;
  }
  if (old_samples == s) return out;

  // Rule 2: new members of old groups join them; the rest are free.
  std::vector<int32_t> unit_of;  // empty: every free sample is a unit of its own
  if (split.grouped) {
    detail::Ids group_ids = detail::canonical_ids(groups, true);
    const std::vector<int16_t> joined = group_parts(split, group_ids, removed, out.warnings);
    for (std::size_t i = old_samples; i < s; ++i) {
      if (out.assign[i] == kRemovedFold) continue;
      const int16_t part = joined[static_cast<std::size_t>(group_ids.of[i])];
      if (part != kRemovedFold) out.assign[i] = part;
    }
    unit_of = std::move(group_ids.of);
  }
  std::vector<uint32_t> free_samples;
  for (std::size_t i = old_samples; i < s; ++i) {
    if (out.assign[i] == kUnplaced) free_samples.push_back(static_cast<uint32_t>(i));
  }
  if (free_samples.empty()) return out;

  bool from_old_samples = false;
  const std::vector<double> share = target_shares(split, removed, &from_old_samples);
  if (from_old_samples) {
    for (std::size_t p = 0; p < k; ++p) {
      if (share[p] == 0) {
        out.warnings.push_back(part_name(p, k) + " of split '" + split.name +
                               "' holds none of the old samples left; it gets no new ones");
      }
    }
  }

  // Rule 3: the greedy candidate.
  const Columns columns = balance_columns(split.stratified, labels, multilabel);
  const Units units = make_units(free_samples, unit_of, columns);
  const std::vector<uint32_t> order = unit_order(units, split.seed);
  auto assignment = [&](const std::vector<std::size_t>& part) {
    std::vector<int16_t> assign = out.assign;
    for (std::size_t u = 0; u < units.num_units(); ++u) {
      for (std::size_t j = units.sample_first[u]; j < units.sample_first[u + 1]; ++j) {
        assign[units.samples[j]] = part_value(part[u], k);
      }
    }
    return assign;
  };
  std::vector<int16_t> greedy =
      assignment(BalancePlacer(columns, out.assign, removed, units, share).place(order));

  // Rule 4: the free samples split alone by the split's own kind, then
  // refined by the same moves (each lowers the measure, so the result is
  // never worse than the split alone) where it keeps the units whole, as
  // compute_split does for every grouped kind.
  std::vector<int16_t> alone = out.assign;
  const std::optional<SplitSpec> spec = stored_spec(split, out.warnings);
  if (spec && split_alone(*spec, split, free_samples, labels, groups, multilabel, alone)) {
    std::vector<std::size_t> part(units.num_units());
    bool whole = true;
    for (std::size_t u = 0; u < units.num_units(); ++u) {
      const int16_t first = alone[units.samples[units.sample_first[u]]];
      part[u] = part_index(first, k);
      for (std::size_t j = units.sample_first[u]; j < units.sample_first[u + 1]; ++j) {
        whole = whole && alone[units.samples[j]] == first;
      }
    }
    if (whole) {
      alone =
          assignment(BalancePlacer(columns, out.assign, removed, units, share).refine(order, part));
    }
    if (imbalance(columns, alone, removed, share) < imbalance(columns, greedy, removed, share)) {
      out.assign = std::move(alone);
      return out;
    }
  }
  out.assign = std::move(greedy);
  return out;
}

}  // namespace imgpack
