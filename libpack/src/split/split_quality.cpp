// Quality figures of a stored split assignment (split.hpp).
#include <algorithm>
#include <cmath>
#include <string>

#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/split.hpp"

namespace imgpack {

namespace {

// Fills a part's class figures from its per-class counts.
void class_figures(FoldStats& stats, const std::vector<int64_t>& counts,
                   const std::vector<int64_t>& class_total, int64_t labeled_total,
                   const std::vector<int64_t>& present_in) {
  int64_t labeled = 0;
  for (int64_t n : counts) labeled += n;
  double max_dev = 0, sum_dev = 0;
  int64_t classes = 0;
  for (std::size_t c = 0; c < class_total.size(); ++c) {
    if (class_total[c] == 0) continue;
    ++classes;
    const double whole = static_cast<double>(class_total[c]) / static_cast<double>(labeled_total);
    const double here =
        labeled > 0 ? static_cast<double>(counts[c]) / static_cast<double>(labeled) : 0.0;
    const double dev = std::abs(here - whole);
    max_dev = std::max(max_dev, dev);
    sum_dev += dev;
    if (counts[c] == 0 && present_in[c] > 0)
      stats.missing_classes.push_back(static_cast<int32_t>(c));
  }
  stats.max_class_dev = max_dev;
  stats.mean_class_dev = classes > 0 ? sum_dev / static_cast<double>(classes) : 0.0;
}

}  // namespace

SplitQuality split_quality(std::span<const int16_t> assign, int32_t folds,
                           std::span<const int32_t> labels, std::span<const int32_t> groups,
                           std::size_t num_classes) {
  if (assign.size() != labels.size() || assign.size() != groups.size()) {
    throw Error("split_quality: assign, labels and groups differ in length");
  }
  if (folds < 1 || folds > kMaxFolds) throw Error("split_quality: bad number of folds");
  // Part 0 is the test set, part f + 1 fold f.
  const auto parts = static_cast<std::size_t>(folds) + 1;
  int32_t max_group = -1;
  for (std::size_t i = 0; i < assign.size(); ++i) {
    if (assign[i] < format::kRemovedFold || assign[i] >= folds) {
      throw Error("split_quality: sample " + std::to_string(i) + " is in fold " +
                  std::to_string(assign[i]) + " of " + std::to_string(folds));
    }
    if (labels[i] < -1 || labels[i] >= static_cast<int64_t>(num_classes)) {
      throw Error("split_quality: sample " + std::to_string(i) + " has label " +
                  std::to_string(labels[i]) + " outside the classes");
    }
    if (groups[i] < -1) throw Error("split_quality: negative group id");
    max_group = std::max(max_group, groups[i]);
  }

  std::vector<int64_t> part_size(parts, 0);
  std::vector<int64_t> class_total(num_classes, 0), outside_test(num_classes, 0);
  int64_t labeled_total = 0;
  // Samples of every part, by a counting sort, so each part's class counts
  // take one dense pass and the whole costs O(samples + parts x classes).
  // Removed samples (kRemovedFold) are in no part and count nowhere.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < assign.size(); ++i) {
    if (assign[i] == format::kRemovedFold) continue;
    ++kept;
    ++part_size[static_cast<std::size_t>(assign[i] + 1)];
    if (labels[i] >= 0) {
      ++class_total[static_cast<std::size_t>(labels[i])];
      ++labeled_total;
      if (assign[i] != format::kTestFold) ++outside_test[static_cast<std::size_t>(labels[i])];
    }
  }
  std::vector<std::size_t> start(parts + 1, 0);
  for (std::size_t p = 0; p < parts; ++p)
    start[p + 1] = start[p] + static_cast<std::size_t>(part_size[p]);
  std::vector<int32_t> by_part(kept);
  {
    std::vector<std::size_t> next(start.begin(), start.end() - 1);
    for (std::size_t i = 0; i < assign.size(); ++i) {
      if (assign[i] == format::kRemovedFold) continue;
      by_part[next[static_cast<std::size_t>(assign[i] + 1)]++] = labels[i];
    }
  }

  SplitQuality quality;
  quality.test_size = part_size[0];
  std::vector<int64_t> counts(num_classes, 0);
  for (std::size_t p = 0; p < parts; ++p) {
    std::fill(counts.begin(), counts.end(), 0);
    for (std::size_t m = start[p]; m < start[p + 1]; ++m) {
      if (by_part[m] >= 0) ++counts[static_cast<std::size_t>(by_part[m])];
    }
    FoldStats stats;
    stats.fold = static_cast<int32_t>(p) - 1;
    stats.size = part_size[p];
    class_figures(stats, counts, class_total, labeled_total, p == 0 ? class_total : outside_test);
    if (p == 0) {
      quality.test = std::move(stats);
    } else {
      quality.folds.push_back(std::move(stats));
    }
  }

  // A group leaks when its samples sit in more than one part.
  std::vector<int32_t> first_part(static_cast<std::size_t>(max_group + 1), -2);
  std::vector<uint8_t> leaked(first_part.size(), 0);
  for (std::size_t i = 0; i < assign.size(); ++i) {
    if (groups[i] < 0 || assign[i] == format::kRemovedFold) continue;
    int32_t& seen = first_part[static_cast<std::size_t>(groups[i])];
    if (seen == -2) {
      seen = assign[i];
    } else if (seen != assign[i] && !leaked[static_cast<std::size_t>(groups[i])]) {
      leaked[static_cast<std::size_t>(groups[i])] = 1;
      ++quality.group_leakage;
    }
  }
  return quality;
}

SplitQuality split_quality(const DatasetIndex& index, const Split& split) {
  return split_quality(split.assign, split.folds, index.sample_label, index.sample_group,
                       index.class_names.size());
}

}  // namespace imgpack
