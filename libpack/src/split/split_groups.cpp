#include "split/split_groups.hpp"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>
#include <unordered_map>

#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "random.hpp"
#include "split/item_partition.hpp"
#include "split/split_sklearn.hpp"

namespace imgpack::detail {

Ids canonical_ids(std::span<const int32_t> ids, bool negatives_alone) {
  Ids result;
  std::vector<int32_t>& out = result.of;
  std::vector<int32_t>& original = result.original;
  out.resize(ids.size());
  int32_t negative_id = -1;
  int32_t max_id = -1;
  for (int32_t id : ids) max_id = std::max(max_id, id);
  const bool dense = max_id < static_cast<int64_t>(4 * ids.size() + 1024);
  std::vector<int32_t> dense_map(dense ? static_cast<std::size_t>(max_id + 1) : 0, -1);
  std::unordered_map<int32_t, int32_t> sparse_map;
  auto next = [&](int32_t id) {
    original.push_back(id < 0 ? -1 : id);
    return static_cast<int32_t>(original.size() - 1);
  };
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (id < 0) {
      if (negatives_alone) {
        out[i] = next(id);
      } else {
        if (negative_id < 0) negative_id = next(id);
        out[i] = negative_id;
      }
    } else if (dense) {
      int32_t& slot = dense_map[static_cast<std::size_t>(id)];
      if (slot < 0) slot = next(id);
      out[i] = slot;
    } else {
      auto [it, inserted] = sparse_map.try_emplace(id, 0);
      if (inserted) it->second = next(id);
      out[i] = it->second;
    }
  }
  return result;
}

namespace {

// Stream ids for CounterRng, so unrelated random choices never share a stream.
constexpr uint64_t kTestPartStream = 0x73706c697474;  // "splitt"
constexpr uint64_t kFoldPartStream = 0x73706c697470;  // "splitp"
constexpr uint64_t kRelabelStream = 0x73706c697472;   // "splitr"

// Fold renumberings tried when settling a tie with scikit-learn (settle_ties).
constexpr int kRelabelAttempts = 64;

// Weight of part-size balance against class balance in the squares objective
// of grouped holdouts and test sets, and of the search that stratified-group
// k-folds run first (see item_partition.hpp), in units of one class. Chosen
// with bench/splits/bench_splits.py on 24 inputs (3k to 50k samples, 60 to
// 2000 groups, 5 to 100 classes). Larger weights even the sizes further at
// the cost of class balance.
constexpr double kSizeWeight = 0.5;

// Stratified-group k-folds minimise StratifiedGroupKFold's own criterion
// (the mean over classes of the standard deviation over folds of a class's
// share in the fold) plus this weight times the same figure for the folds'
// shares of all samples: classes first, even fold sizes a close second.
// Chosen with bench/splits/adversarial.py and bench_splits.py: from 0.1 to 4
// it moves the criterion and the fold sizes by a few percent either way.
constexpr double kShareSizeWeight = 0.5;

// Swap candidates of a stratified-group search (PartitionOptions::swap_budget):
// wider windows gain about 2% on the criterion at 50,000 samples for three
// times the time.
constexpr uint64_t kShareSwapBudget = 20'000;

// Bound on each stratified-group search (PartitionOptions::work_budget): never
// reached at bench/splits's 50,000 samples (a round there looks at about
// 600,000 pairs); at 1,000,000 samples it stops each search after about one
// round, for a criterion 2% above a full search's in about 40% of the time,
// which keeps that split well under a second on a busy machine.
constexpr uint64_t kShareWork = 10'000'000;

// Most floating-point operations spent replaying StratifiedGroupKFold (about
// a second): beyond it (hundreds of folds with thousands of classes and tens
// of thousands of groups) the search runs without scikit-learn's result.
constexpr uint64_t kReplayBudget = 2'000'000'000;

// Search effort of group k-folds, holdouts and test sets, whose peers
// (GroupKFold, GroupShuffleSplit) balance little and take milliseconds: one
// greedy attempt and a search bounded to `rounds` times the (entry, part)
// pairs of the table (about two rounds of a group k-fold, one of a holdout),
// so that the time stays proportional to the input. On bench/splits's 50,000
// samples that keeps imgpack within its peers' time while balancing sizes and
// classes far better (docs/BENCHMARKS.md).
constexpr double kGroupFoldRounds = 2.4;
constexpr double kHoldoutRounds = 2.0;

void light_search(PartitionOptions& options, const ItemTable& items, double rounds) {
  options.max_attempts = 1;
  options.swap_budget = 4'000;
  options.work_budget = static_cast<uint64_t>(
      rounds * static_cast<double>(items.cls.size() * options.weights.size()));
}

// The groups as items with class histograms, in canonical group order.
ItemTable build_items(const std::vector<int32_t>& groups, int32_t num_groups,
                      const std::vector<int32_t>& classes, int32_t num_classes) {
  // The samples' classes grouped by group, by a counting sort: start[g] is
  // first the end of group g's run, then, filled from the back, its beginning.
  std::vector<std::size_t> start(static_cast<std::size_t>(num_groups) + 1, 0);
  for (int32_t g : groups) ++start[static_cast<std::size_t>(g)];
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<int32_t> members(groups.size());
  for (std::size_t i = groups.size(); i-- > 0;) {
    members[--start[static_cast<std::size_t>(groups[i])]] = classes[i];
  }
  ItemTable items;
  items.num_classes = num_classes;
  items.size.reserve(static_cast<std::size_t>(num_groups));
  items.first.reserve(static_cast<std::size_t>(num_groups) + 1);
  items.cls.reserve(groups.size());
  items.count.reserve(groups.size());
  std::vector<int32_t> count(static_cast<std::size_t>(num_classes), 0);
  std::vector<int32_t> seen, counts;
  for (int32_t g = 0; g < num_groups; ++g) {
    seen.clear();
    counts.clear();
    for (std::size_t m = start[static_cast<std::size_t>(g)];
         m < start[static_cast<std::size_t>(g) + 1]; ++m) {
      if (count[static_cast<std::size_t>(members[m])]++ == 0) seen.push_back(members[m]);
    }
    for (int32_t c : seen) {
      counts.push_back(count[static_cast<std::size_t>(c)]);
      count[static_cast<std::size_t>(c)] = 0;
    }
    items.add_item(seen, counts);
  }
  return items;
}

// The items `chosen` of `items`, with the classes they hold renumbered
// 0, 1, ... in order of first appearance; kept[new class] = old class.
ItemTable select_items(const ItemTable& items, const std::vector<int32_t>& chosen,
                       std::vector<int32_t>& kept) {
  std::vector<int32_t> renumber(static_cast<std::size_t>(items.num_classes), -1);
  kept.clear();
  for (int32_t i : chosen) {
    for (std::size_t e = items.first[static_cast<std::size_t>(i)];
         e < items.first[static_cast<std::size_t>(i) + 1]; ++e) {
      int32_t& slot = renumber[static_cast<std::size_t>(items.cls[e])];
      if (slot < 0) {
        slot = static_cast<int32_t>(kept.size());
        kept.push_back(items.cls[e]);
      }
    }
  }
  ItemTable out;
  out.num_classes = std::max<int32_t>(1, static_cast<int32_t>(kept.size()));
  std::vector<int32_t> cls;
  for (int32_t i : chosen) {
    const std::size_t b = items.first[static_cast<std::size_t>(i)];
    const std::size_t e = items.first[static_cast<std::size_t>(i) + 1];
    cls.clear();
    for (std::size_t j = b; j < e; ++j)
      cls.push_back(renumber[static_cast<std::size_t>(items.cls[j])]);
    out.add_item(cls, std::span(items.count).subspan(b, e - b));
  }
  return out;
}

// The index np.unique would give each of `ids` among them: ascending by the
// caller's id, ties (ungrouped samples, which are groups of their own here)
// in canonical order.
std::vector<int32_t> unique_ranks(const std::vector<int32_t>& original,
                                  const std::vector<int32_t>& ids) {
  std::vector<int32_t> order(ids.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return original[static_cast<std::size_t>(ids[static_cast<std::size_t>(a)])] <
           original[static_cast<std::size_t>(ids[static_cast<std::size_t>(b)])];
  });
  std::vector<int32_t> rank(ids.size());
  for (std::size_t r = 0; r < order.size(); ++r) {
    rank[static_cast<std::size_t>(order[r])] = static_cast<int32_t>(r);
  }
  return rank;
}

// partition_items() counts class-share criteria within rounding of the
// reference's as equal. Where numpy's rounding puts the result above
// StratifiedGroupKFold's own result, the folds are renumbered (which changes
// nothing but the order in which numpy sums over them) until it does not;
// failing that, the reference itself is the result. So the criterion as
// numpy computes it is never above scikit-learn's.
std::vector<int32_t> settle_ties(const ItemTable& items, std::vector<int32_t> part,
                                 const PartitionOptions& options,
                                 const std::vector<int32_t>& class_rank, uint64_t seed) {
  const auto folds = static_cast<int32_t>(options.weights.size());
  const double limit =
      sklearn::stratified_group_criterion(items, options.reference, class_rank, folds);
  if (sklearn::stratified_group_criterion(items, part, class_rank, folds) <= limit) return part;
  std::vector<int32_t> relabel(static_cast<std::size_t>(folds));
  std::iota(relabel.begin(), relabel.end(), 0);
  CounterRng rng(seed, kRelabelStream);
  std::vector<int32_t> renamed(part.size());
  for (int attempt = 0; attempt < kRelabelAttempts; ++attempt) {
    rng.shuffle(std::span(relabel));
    for (std::size_t i = 0; i < part.size(); ++i) {
      renamed[i] = relabel[static_cast<std::size_t>(part[i])];
    }
    if (sklearn::stratified_group_criterion(items, renamed, class_rank, folds) <= limit) {
      return renamed;
    }
  }
  return options.reference;
}

// Splits the groups `rest` (items of `all`) into the kind's folds, from
// StratifiedGroupKFold's or GroupKFold's result and never worse than it.
std::vector<int32_t> group_folds(const SplitSpec& spec, bool stratify, const ItemTable& all,
                                 const std::vector<int32_t>& rest, const Ids& classes,
                                 const Ids& groups) {
  // Without a test set every group and every class is left: no copy.
  std::vector<int32_t> kept;
  std::optional<ItemTable> selected;
  if (rest.size() == all.num_items()) {
    kept.resize(static_cast<std::size_t>(all.num_classes));
    std::iota(kept.begin(), kept.end(), 0);
  } else {
    selected = select_items(all, rest, kept);
  }
  const ItemTable& items = selected ? *selected : all;
  PartitionOptions options;
  options.weights.assign(static_cast<std::size_t>(spec.folds), 1.0 / spec.folds);
  options.seed = spec.seed;
  options.stream = kFoldPartStream;
  if (!stratify) {
    light_search(options, items, kGroupFoldRounds);
    options.balance = Balance::sizes_first;
    options.reference = sklearn::group_kfold(items.size, spec.folds);
    return partition_items(items, options);
  }
  options.balance = Balance::class_shares;
  options.share_size_weight = kShareSizeWeight;
  options.class_weighting = ClassWeighting::share;
  options.size_weight = kSizeWeight;
  options.swap_budget = kShareSwapBudget;
  options.work_budget = kShareWork;
  if (sklearn::stratified_group_kfold_work(items, spec.folds) > kReplayBudget) {
    return partition_items(items, options);
  }
  const std::vector<int32_t> class_rank = unique_ranks(classes.original, kept);
  options.reference = sklearn::stratified_group_kfold(items, unique_ranks(groups.original, rest),
                                                      class_rank, spec.folds);
  std::vector<int32_t> part = partition_items(items, options);
  return settle_ties(items, std::move(part), options, class_rank, spec.seed);
}

}  // namespace

std::vector<int16_t> split_groups(const SplitSpec& spec, bool stratify, const Ids& classes,
                                  const Ids& groups) {
  const int32_t num_groups = groups.count();
  const ItemTable items = build_items(groups.of, num_groups, classes.of, classes.count());
  std::vector<int16_t> group_assign(static_cast<std::size_t>(num_groups), 0);
  std::vector<int32_t> rest(static_cast<std::size_t>(num_groups));
  std::iota(rest.begin(), rest.end(), 0);

  PartitionOptions options;
  options.balance = stratify ? Balance::classes_and_sizes : Balance::sizes_first;
  options.size_weight = kSizeWeight;
  options.seed = spec.seed;
  if (spec.test_fraction > 0) {
    if (num_groups < 2) {
      throw UsageError("SplitSpec::test_fraction needs at least two groups; the samples have " +
                       std::to_string(num_groups));
    }
    options.weights = {spec.test_fraction, 1 - spec.test_fraction};
    options.stream = kTestPartStream;
    light_search(options, items, kHoldoutRounds);
    std::vector<int32_t> part = partition_items(items, options);
    rest.clear();
    for (int32_t g = 0; g < num_groups; ++g) {
      if (part[static_cast<std::size_t>(g)] == 0) {
        group_assign[static_cast<std::size_t>(g)] = format::kTestFold;
      } else {
        rest.push_back(g);
      }
    }
  }

  const auto left = static_cast<int32_t>(rest.size());
  const char* after_test = spec.test_fraction > 0 ? " left after SplitSpec::test_fraction" : "";
  std::vector<int32_t> part;
  if (spec.kind == SplitKind::holdout) {
    if (left < 2) {
      throw UsageError("a grouped holdout needs at least two groups; there are " +
                       std::to_string(left) + after_test);
    }
    const double val = spec.val_fraction / (1 - spec.test_fraction);
    options.weights = {val, 1 - val};
    options.stream = kFoldPartStream;
    if (spec.test_fraction > 0) {
      std::vector<int32_t> kept;
      const ItemTable left_items = select_items(items, rest, kept);
      light_search(options, left_items, kHoldoutRounds);
      part = partition_items(left_items, options);
    } else {
      light_search(options, items, kHoldoutRounds);
      part = partition_items(items, options);
    }
  } else {
    if (left < spec.folds) {
      throw UsageError("SplitSpec::folds " + std::to_string(spec.folds) + " is more than the " +
                       std::to_string(left) + " groups" + after_test);
    }
    part = group_folds(spec, stratify, items, rest, classes, groups);
  }
  for (std::size_t r = 0; r < rest.size(); ++r) {
    group_assign[static_cast<std::size_t>(rest[r])] = static_cast<int16_t>(part[r]);
  }

  std::vector<int16_t> assign(groups.of.size());
  for (std::size_t i = 0; i < assign.size(); ++i) {
    assign[i] = group_assign[static_cast<std::size_t>(groups.of[i])];
  }
  return assign;
}

}  // namespace imgpack::detail
