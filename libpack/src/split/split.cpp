#include "imgpack/split.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <unordered_map>

#include "enum_names.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "random.hpp"
#include "split/multilabel_split.hpp"
#include "split/split_groups.hpp"

namespace imgpack {

namespace {

// Stream ids for CounterRng, so unrelated random choices never share a stream.
constexpr uint64_t kClassOrderStream = 0x73706c6974636c;  // "splitcl"
constexpr uint64_t kSampleOrderStream = 0x73706c697473;   // "splits"
constexpr uint64_t kFoldStartStream = 0x73706c697466;     // "splitf"

std::string fraction_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// Samples ordered by class, classes in a seeded order, samples of a class in
// a seeded order: dealing this sequence round-robin (or by a fraction) gives
// every part within one sample of its share of every class.
std::vector<uint32_t> stratified_order(const std::vector<int32_t>& classes, int32_t num_classes,
                                       uint64_t seed) {
  std::vector<uint32_t> class_rank(static_cast<std::size_t>(num_classes));
  {
    std::vector<uint32_t> order(class_rank.size());
    std::iota(order.begin(), order.end(), 0u);
    CounterRng(seed, kClassOrderStream).shuffle(std::span(order));
    for (std::size_t r = 0; r < order.size(); ++r) class_rank[order[r]] = static_cast<uint32_t>(r);
  }
  std::vector<uint32_t> shuffled(classes.size());
  std::iota(shuffled.begin(), shuffled.end(), 0u);
  CounterRng(seed, kSampleOrderStream).shuffle(std::span(shuffled));
  // Stable counting sort of the shuffled samples by class rank.
  std::vector<std::size_t> start(class_rank.size() + 1, 0);
  for (int32_t c : classes) ++start[class_rank[static_cast<std::size_t>(c)] + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<uint32_t> out(classes.size());
  for (uint32_t i : shuffled) out[start[class_rank[static_cast<std::size_t>(classes[i])]]++] = i;
  return out;
}

// Splits `sequence` (runs of samples of one class, as stratified_order makes
// it) into a fraction p of the samples and the rest, both in sequence order.
// The selection takes round(n p) samples; each class gives floor(n_c p) or
// ceil(n_c p) of them, the ceilings going to the classes with the largest
// remainders (ties: earlier run first), so every class's share of the
// selection is as close to its share of the whole as counts allow.
void carve(const std::vector<uint32_t>& sequence, const std::vector<int32_t>& classes, double p,
           std::vector<uint32_t>& selected, std::vector<uint32_t>& rest) {
  struct Run {
    std::size_t begin, length, take;
    double remainder;
  };
  std::vector<Run> runs;
  for (std::size_t j = 0; j < sequence.size(); ++j) {
    if (j == 0 || classes[sequence[j]] != classes[sequence[j - 1]]) runs.push_back({j, 0, 0, 0});
    ++runs.back().length;
  }
  const auto target =
      static_cast<std::size_t>(std::floor(static_cast<double>(sequence.size()) * p + 0.5));
  std::size_t taken = 0;
  for (Run& run : runs) {
    const double exact = static_cast<double>(run.length) * p;
    run.take = std::min(run.length, static_cast<std::size_t>(std::floor(exact)));
    run.remainder = exact - static_cast<double>(run.take);
    taken += run.take;
  }
  std::vector<std::size_t> by_remainder(runs.size());
  std::iota(by_remainder.begin(), by_remainder.end(), std::size_t{0});
  std::stable_sort(by_remainder.begin(), by_remainder.end(), [&](std::size_t a, std::size_t b) {
    return runs[a].remainder > runs[b].remainder;
  });
  for (std::size_t r = 0; taken < target && r < by_remainder.size(); ++r) {
    Run& run = runs[by_remainder[r]];
    if (run.take < run.length) {
      ++run.take;
      ++taken;
    }
  }
  selected.clear();
  rest.clear();
  for (const Run& run : runs) {
    selected.insert(selected.end(), sequence.begin() + static_cast<std::ptrdiff_t>(run.begin),
                    sequence.begin() + static_cast<std::ptrdiff_t>(run.begin + run.take));
    rest.insert(rest.end(), sequence.begin() + static_cast<std::ptrdiff_t>(run.begin + run.take),
                sequence.begin() + static_cast<std::ptrdiff_t>(run.begin + run.length));
  }
}

struct Problem {
  const SplitSpec& spec;
  std::size_t samples;
  bool stratify;
  bool grouped;
};

std::vector<int16_t> split_samples(const Problem& problem, const std::vector<int32_t>& classes,
                                   int32_t num_classes) {
  const SplitSpec& spec = problem.spec;
  std::vector<int16_t> assign(problem.samples, 0);
  std::vector<uint32_t> rest = stratified_order(classes, num_classes, spec.seed);
  std::vector<uint32_t> selected, remaining;
  if (spec.test_fraction > 0) {
    carve(rest, classes, spec.test_fraction, selected, remaining);
    if (selected.empty()) {
      throw UsageError("SplitSpec::test_fraction " + fraction_text(spec.test_fraction) +
                       " selects none of the " + std::to_string(problem.samples) + " samples");
    }
    for (uint32_t i : selected) assign[i] = format::kTestFold;
    rest.swap(remaining);
  }
  if (spec.kind == SplitKind::holdout) {
    carve(rest, classes, spec.val_fraction / (1 - spec.test_fraction), selected, remaining);
    if (selected.empty()) {
      throw UsageError("SplitSpec::val_fraction " + fraction_text(spec.val_fraction) +
                       " selects none of the " + std::to_string(rest.size()) + " samples");
    }
    if (remaining.empty()) {
      throw UsageError("SplitSpec::val_fraction " + fraction_text(spec.val_fraction) +
                       " leaves no training samples");
    }
    for (uint32_t i : remaining) assign[i] = 1;
    return assign;
  }
  if (rest.size() < static_cast<std::size_t>(spec.folds)) {
    throw UsageError("SplitSpec::folds " + std::to_string(spec.folds) + " is more than the " +
                     std::to_string(rest.size()) + " samples" +
                     (spec.test_fraction > 0 ? " left after SplitSpec::test_fraction" : ""));
  }
  const auto k = static_cast<uint64_t>(spec.folds);
  const uint64_t start = CounterRng(spec.seed, kFoldStartStream).below(k);
  for (std::size_t j = 0; j < rest.size(); ++j) {
    assign[rest[j]] = static_cast<int16_t>((j + start) % k);
  }
  return assign;
}

// Checks the class sizes against the folds as scikit-learn does: an error when
// every class is smaller than k, a warning when some are.
void check_class_sizes(std::span<const int32_t> labels, const SplitSpec& spec,
                       std::span<const std::string> class_names, SplitResult& result) {
  std::unordered_map<int32_t, int64_t> members;
  for (int32_t label : labels) {
    if (label >= 0) ++members[label];
  }
  int32_t smallest = -1;
  int64_t largest_size = 0, too_small = 0;
  for (const auto& [label, n] : members) {
    largest_size = std::max(largest_size, n);
    if (n < spec.folds) ++too_small;
    if (smallest < 0 || n < members[smallest] || (n == members[smallest] && label < smallest)) {
      smallest = label;
    }
  }
  if (largest_size < spec.folds) {
    throw UsageError("SplitSpec::folds " + std::to_string(spec.folds) +
                     " is more than the members of every class (the largest has " +
                     std::to_string(largest_size) + ")");
  }
  if (too_small > 0) {
    const auto s = static_cast<std::size_t>(smallest);
    std::string name =
        s < class_names.size() ? "'" + class_names[s] + "'" : "id " + std::to_string(smallest);
    result.warnings.push_back(std::to_string(too_small) + " of " + std::to_string(members.size()) +
                              " classes have fewer members than the " + std::to_string(spec.folds) +
                              " folds (the least populated, " + name + ", has " +
                              std::to_string(members[smallest]) +
                              "); they cannot appear in every fold");
  }
}

// Whole groups only approximate a fraction: a warning where the set made is
// far from the share asked (a small validation fraction met by one large
// group, say), so that it is not found out only in the summary's sizes.
void check_group_share(std::span<const int16_t> assign, int16_t fold, double asked, const char* set,
                       const char* option, const SplitSpec& spec, SplitResult& result) {
  if (asked <= 0) return;
  const auto n = static_cast<double>(assign.size());
  const auto made = static_cast<double>(std::count(assign.begin(), assign.end(), fold));
  if (std::abs(made - asked * n) < std::max(2.0, asked * n / 2)) return;
  std::ostringstream out;
  out.precision(3);
  out << "the " << set << " holds " << static_cast<uint64_t>(made) << " of "
      << static_cast<uint64_t>(n) << " samples (" << 100 * made / n << "%), not the " << 100 * asked
      << "% " << option << " asks: whole groups come no closer ("
      << (spec.kind == SplitKind::holdout ? "SplitSpec::use_groups false splits"
                                          : "a SplitSpec::kind without groups splits")
      << " the samples alone)";
  result.warnings.push_back(out.str());
}

}  // namespace

namespace {

constexpr EnumNames kSplitKindNames{
    "split kind",
    {EnumName{SplitKind::random, "random"}, EnumName{SplitKind::stratified, "stratified"},
     EnumName{SplitKind::group, "group"}, EnumName{SplitKind::stratified_group, "stratified-group"},
     EnumName{SplitKind::holdout, "holdout"}}};

}  // namespace

// The names are string literals: data() ends in a NUL.
const char* split_kind_name(SplitKind kind) { return kSplitKindNames.name(kind).data(); }
SplitKind parse_split_kind(std::string_view name) { return kSplitKindNames.parse(name); }

void SplitSpec::validate() const {
  if (!std::isfinite(test_fraction) || test_fraction < 0 || test_fraction >= 1) {
    throw UsageError("SplitSpec::test_fraction " + fraction_text(test_fraction) +
                     " is outside [0, 1)");
  }
  if (kind == SplitKind::holdout) {
    if (!std::isfinite(val_fraction) || val_fraction <= 0 || val_fraction >= 1) {
      throw UsageError("SplitSpec::val_fraction " + fraction_text(val_fraction) +
                       " is outside (0, 1)");
    }
    if (val_fraction + test_fraction >= 1) {
      throw UsageError("SplitSpec::val_fraction " + fraction_text(val_fraction) +
                       " and SplitSpec::test_fraction " + fraction_text(test_fraction) +
                       " leave nothing to train on");
    }
    return;
  }
  if (val_fraction != 0) {
    throw UsageError("SplitSpec::val_fraction applies only to SplitSpec::kind holdout");
  }
  if (!use_labels || !use_groups) {
    throw UsageError(std::string("SplitSpec::kind ") + split_kind_name(kind) +
                     " decides itself whether labels and groups are used; "
                     "SplitSpec::use_labels and SplitSpec::use_groups apply only to holdout");
  }
  if (folds < 2 || folds > kMaxFolds) {
    throw UsageError("SplitSpec::folds " + std::to_string(folds) + " is outside 2.." +
                     std::to_string(kMaxFolds));
  }
}

namespace {

// The parts of a multi-label split: the test set first (where asked), then
// the folds (holdout: validation, then train); each a share of the samples.
std::vector<double> multilabel_fractions(const SplitSpec& spec) {
  std::vector<double> fractions;
  const double test = spec.test_fraction;
  if (test > 0) fractions.push_back(test);
  if (spec.kind == SplitKind::holdout) {
    fractions.push_back(spec.val_fraction);
    fractions.push_back(1 - test - spec.val_fraction);
  } else {
    fractions.insert(fractions.end(), static_cast<std::size_t>(spec.folds),
                     (1 - test) / spec.folds);
  }
  return fractions;
}

// Iterative stratification over every sample's labels: its multi-label row
// and, where it has one, its class (one more column per class).
SplitResult split_multilabel(std::span<const int32_t> labels, std::span<const int32_t> groups,
                             const SplitSpec& spec, MultilabelRows multilabel, bool grouped) {
  const std::size_t s = labels.size();
  if (multilabel.values.size() != s * multilabel.classes) {
    throw Error("compute_split: " + std::to_string(multilabel.values.size()) +
                " multi-label entries for " + std::to_string(s) + " samples x " +
                std::to_string(multilabel.classes) + " classes");
  }
  const detail::Ids classes = detail::canonical_ids(labels, false);
  const bool has_labels =
      std::any_of(labels.begin(), labels.end(), [](int32_t l) { return l >= 0; });
  const std::size_t class_columns = has_labels ? static_cast<std::size_t>(classes.count()) : 0;
  LabelRows rows;
  rows.columns = multilabel.classes + class_columns;
  rows.begin.reserve(s + 1);
  for (std::size_t i = 0; i < s; ++i) {
    for (std::size_t c = 0; c < multilabel.classes; ++c) {
      if (multilabel.values[i * multilabel.classes + c] != 0) {
        rows.label.push_back(static_cast<int32_t>(c));
      }
    }
    if (class_columns > 0 && labels[i] >= 0) {
      rows.label.push_back(static_cast<int32_t>(multilabel.classes) + classes.of[i]);
    }
    rows.end_row();
  }
  const std::vector<double> fractions = multilabel_fractions(spec);
  const std::vector<int32_t> parts = iterative_stratification(
      rows, grouped ? groups : std::span<const int32_t>(), fractions, spec.seed);
  SplitResult result;
  result.stratified = true;
  result.grouped = grouped;
  const int32_t first_fold = spec.test_fraction > 0 ? 1 : 0;
  result.assign.resize(s);
  for (std::size_t i = 0; i < s; ++i) {
    result.assign[i] =
        static_cast<int16_t>(parts[i] < first_fold ? format::kTestFold : parts[i] - first_fold);
  }
  for (std::size_t j = 0; j < fractions.size(); ++j) {
    if (std::find(parts.begin(), parts.end(), static_cast<int32_t>(j)) == parts.end()) {
      throw UsageError("SplitSpec: a part of the " + std::to_string(fractions.size()) +
                       " parts the split needs would be empty (too few samples or groups)");
    }
  }
  return result;
}

}  // namespace

SplitResult compute_split(std::span<const int32_t> labels, std::span<const int32_t> groups,
                          const SplitSpec& spec, std::span<const std::string> class_names,
                          MultilabelRows multilabel) {
  spec.validate();
  if (labels.size() != groups.size()) {
    throw Error("compute_split: " + std::to_string(labels.size()) + " labels but " +
                std::to_string(groups.size()) + " groups");
  }
  if (labels.empty()) throw UsageError("the dataset has no samples to split");
  if (labels.size() > UINT32_MAX) throw UsageError("more than 2^32 samples");
  const bool has_labels =
      std::any_of(labels.begin(), labels.end(), [](int32_t l) { return l >= 0; });
  const bool has_groups =
      std::any_of(groups.begin(), groups.end(), [](int32_t g) { return g >= 0; });
  const char* kind = split_kind_name(spec.kind);
  if (multilabel.classes > 0) {
    const bool stratify = spec.kind == SplitKind::stratified ||
                          spec.kind == SplitKind::stratified_group ||
                          (spec.kind == SplitKind::holdout && spec.use_labels);
    const bool grouped = spec.kind == SplitKind::stratified_group ||
                         (spec.kind == SplitKind::holdout && spec.use_groups && has_groups);
    if (stratify) {
      if (grouped && !has_groups) {
        throw UsageError(std::string("SplitSpec::kind ") + kind +
                         " needs groups and these samples have none (convert with "
                         "ScanOptions::group_regex or a CSV group column)");
      }
      return split_multilabel(labels, groups, spec, multilabel, grouped);
    }
  }

  Problem problem{spec, labels.size(), false, false};
  switch (spec.kind) {
    case SplitKind::random:
      break;
    case SplitKind::stratified:
      problem.stratify = true;
      break;
    case SplitKind::group:
      problem.grouped = true;
      break;
    case SplitKind::stratified_group:
      problem.stratify = problem.grouped = true;
      break;
    case SplitKind::holdout:
      problem.stratify = spec.use_labels && has_labels;
      problem.grouped = spec.use_groups && has_groups;
      break;
  }
  SplitResult result;
  result.stratified = problem.stratify;
  result.grouped = problem.grouped;
  if (spec.kind != SplitKind::holdout) {
    if (problem.grouped && !has_groups) {
      throw UsageError(std::string("SplitSpec::kind ") + kind +
                       " needs groups and these samples have none (convert with "
                       "ScanOptions::group_regex or a CSV group column)");
    }
    if (problem.stratify) {
      if (!has_labels) {
        throw UsageError(std::string("SplitSpec::kind ") + kind +
                         " needs labels and these samples have none");
      }
      check_class_sizes(labels, spec, class_names, result);
    }
  }

  // A group kfold balances sizes first and then, within that, classes: the
  // labels cost nothing to use there and only make the folds better.
  const bool use_labels = problem.stratify || (spec.kind == SplitKind::group && has_labels);
  detail::Ids classes;
  if (use_labels) {
    classes = detail::canonical_ids(labels, false);
  } else {
    classes.of.assign(labels.size(), 0);
    classes.original = {-1};
  }
  if (!problem.grouped) {
    result.assign = split_samples(problem, classes.of, classes.count());
    return result;
  }
  const detail::Ids group_ids = detail::canonical_ids(groups, true);
  const int32_t num_groups = group_ids.count();
  const int32_t needed = spec.stored_folds() + (spec.test_fraction > 0 ? 1 : 0);
  if (num_groups < needed && spec.kind != SplitKind::holdout) {
    throw UsageError(
        "SplitSpec::folds " + std::to_string(spec.folds) + " is more than the " +
        std::to_string(num_groups) + " groups" +
        (spec.test_fraction > 0 ? " (one more is needed for SplitSpec::test_fraction)" : ""));
  }
  result.assign = detail::split_groups(spec, problem.stratify, classes, group_ids);
  check_group_share(result.assign, -1, spec.test_fraction, "test set", "SplitSpec::test_fraction",
                    spec, result);
  if (spec.kind == SplitKind::holdout) {
    check_group_share(result.assign, 0, spec.val_fraction, "validation set",
                      "SplitSpec::val_fraction", spec, result);
  }
  return result;
}

void check_split_name(const std::string& name) {
  const bool ok =
      !name.empty() && name.size() <= 128 && name[0] != '.' &&
      std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
      });
  if (!ok) {
    throw UsageError("split name '" + name +
                     "' must be 1..128 letters, digits, '_', '-' or '.', not starting with '.'");
  }
}

Split make_split(const DatasetIndex& index, const std::string& name, const SplitSpec& spec,
                 const std::string& created, std::vector<std::string>* warnings) {
  check_split_name(name);
  if (index.num_removed() == 0) {
    SplitResult result =
        compute_split(index.sample_label, index.sample_group, spec, index.class_names,
                      {index.sample_multilabel.span(), index.multilabel_names.size()});
    if (warnings) warnings->insert(warnings->end(), result.warnings.begin(), result.warnings.end());
    return named_split(name, spec, std::move(result), created);
  }
  // Removed samples are in no part: the split is of the others.
  const std::size_t columns = index.multilabel_names.size();
  std::vector<std::size_t> kept;
  std::vector<int32_t> labels;
  std::vector<int32_t> groups;
  std::vector<uint8_t> multilabel;
  for (std::size_t s = 0; s < index.num_samples(); ++s) {
    if (index.is_removed(s)) continue;
    kept.push_back(s);
    labels.push_back(index.sample_label[s]);
    groups.push_back(index.sample_group[s]);
    const std::span<const uint8_t> row = index.multilabel_of(s);
    multilabel.insert(multilabel.end(), row.begin(), row.end());
  }
  SplitResult result =
      compute_split(labels, groups, spec, index.class_names, {multilabel, columns});
  std::vector<int16_t> assign(index.num_samples(), format::kRemovedFold);
  for (std::size_t i = 0; i < kept.size(); ++i) assign[kept[i]] = result.assign[i];
  result.assign = std::move(assign);
  if (warnings) warnings->insert(warnings->end(), result.warnings.begin(), result.warnings.end());
  return named_split(name, spec, std::move(result), created);
}

Split named_split(const std::string& name, const SplitSpec& spec, SplitResult result,
                  const std::string& created) {
  Split split;
  split.name = name;
  split.kind = split_kind_name(spec.kind);
  split.folds = spec.stored_folds();
  split.seed = spec.seed;
  split.test_fraction = spec.test_fraction;
  split.val_fraction = spec.kind == SplitKind::holdout ? spec.val_fraction : 0;
  split.stratified = result.stratified;
  split.grouped = result.grouped;
  split.created = created;
  split.assign = std::move(result.assign);
  return split;
}

void store_split(DatasetIndex& index, Split split, bool replace) {
  auto at = std::lower_bound(index.splits.begin(), index.splits.end(), split.name,
                             [](const Split& s, const std::string& name) { return s.name < name; });
  if (at != index.splits.end() && at->name == split.name) {
    if (!replace) {
      throw UsageError("a split named '" + split.name +
                       "' exists; store_split replaces it only when asked to");
    }
    *at = std::move(split);
    return;
  }
  index.splits.insert(at, std::move(split));
}

NamedSplitSpec parse_split_option(const std::string& text, uint64_t seed) {
  const auto first = text.find(':');
  const auto second = first == std::string::npos ? first : text.find(':', first + 1);
  if (second == std::string::npos || text.find(':', second + 1) != std::string::npos) {
    throw UsageError("parse_split_option: '" + text +
                     "' must be NAME:KIND:K (or NAME:holdout:FRACTION)");
  }
  NamedSplitSpec out;
  out.name = text.substr(0, first);
  check_split_name(out.name);
  out.spec.kind = parse_split_kind(text.substr(first + 1, second - first - 1));
  out.spec.seed = seed;
  const std::string value = text.substr(second + 1);
  std::size_t used = 0;
  long long folds = 0;
  try {
    if (out.spec.kind == SplitKind::holdout) {
      out.spec.val_fraction = std::stod(value, &used);
    } else {
      folds = std::stoll(value, &used);
    }
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size()) {
    throw UsageError("parse_split_option: '" + text + "': '" + value + "' is not " +
                     (out.spec.kind == SplitKind::holdout ? "a fraction" : "a number of folds"));
  }
  if (out.spec.kind != SplitKind::holdout) {
    if (folds < 2 || folds > kMaxFolds) {
      throw UsageError("parse_split_option: '" + text + "': " + value + " folds is outside 2.." +
                       std::to_string(kMaxFolds));
    }
    out.spec.folds = static_cast<int32_t>(folds);
  } else if (!(out.spec.val_fraction > 0 && out.spec.val_fraction < 1)) {
    // Named as the option gives it: a holdout's fraction, not a field.
    throw UsageError("parse_split_option: '" + text + "': the validation fraction " + value +
                     " is outside (0, 1)");
  }
  out.spec.validate();
  return out;
}

}  // namespace imgpack
