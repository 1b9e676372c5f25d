// scikit-learn 1.2's group k-fold splitters (split_sklearn.hpp). Built with
// -ffp-contract=off: a fused multiply-add rounds once where numpy rounds twice.
#include "split/split_sklearn.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <queue>
#include <utility>

#include "imgpack/error.hpp"
#include "split/item_partition.hpp"

namespace imgpack::sklearn {

namespace {

// numpy's pairwise_sum (PW_BLOCKSIZE 128, eight partial sums) and the size of
// the chunks its reductions hand to it (NPY_BUFSIZE).
constexpr std::size_t kPairwiseBlock = 128;
constexpr std::size_t kReduceChunk = 8192;

double pairwise_sum(const double* a, std::size_t n) {
  if (n < 8) {
    double sum = 0.;
    for (std::size_t i = 0; i < n; ++i) sum += a[i];
    return sum;
  }
  if (n <= kPairwiseBlock) {
    double r[8];
    for (std::size_t j = 0; j < 8; ++j) r[j] = a[j];
    std::size_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (std::size_t j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    double sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) sum += a[i];
    return sum;
  }
  std::size_t half = n / 2;
  half -= half % 8;
  return pairwise_sum(a, half) + pairwise_sum(a + half, n - half);
}

// np.isclose(a, b) with its default tolerances, for finite a; b may be +inf.
bool numpy_isclose(double a, double b) {
  if (std::isinf(b)) return false;
  return std::abs(a - b) <= 1e-08 + 1e-05 * std::abs(b);
}

// The folds x classes table of counts StratifiedGroupKFold keeps
// (y_counts_per_fold, classes in np.unique order) and its criterion.
class ShareTable {
 public:
  ShareTable(const ItemTable& items, std::span<const int32_t> class_rank, int32_t folds)
      : items_(items),
        class_rank_(class_rank),
        folds_(static_cast<std::size_t>(folds)),
        classes_(static_cast<std::size_t>(items.num_classes)),
        class_total_(classes_, 0.0),
        counts_(folds_ * classes_, 0.0),
        fold_size_(folds_, 0.0),
        std_(classes_, 0.0),
        column_(folds_) {
    for (std::size_t e = 0; e < items.cls.size(); ++e) {
      class_total_[rank(items.cls[e])] += items.count[e];
    }
  }

  void add(int32_t item, std::size_t fold) {
    for (std::size_t e = begin(item); e < end(item); ++e) {
      counts_[fold * classes_ + rank(items_.cls[e])] += items_.count[e];
    }
    for (std::size_t e = begin(item); e < end(item); ++e) {
      const std::size_t r = rank(items_.cls[e]);
      std_[r] = class_std(r, folds_, 0);
    }
    fold_size_[fold] += static_cast<double>(items_.size[static_cast<std::size_t>(item)]);
  }

  // np.mean(np.std(y_counts_per_fold / y_cnt, axis=0)) with `item` added to
  // fold `with` (none when with is the number of folds).
  double criterion(int32_t item, std::size_t with) {
    if (with == folds_) return numpy_sum(std_) / static_cast<double>(classes_);
    saved_.clear();
    for (std::size_t e = begin(item); e < end(item); ++e) {
      const std::size_t r = rank(items_.cls[e]);
      saved_.push_back(std_[r]);
      std_[r] = class_std(r, with, items_.count[e]);
    }
    const double value = numpy_sum(std_) / static_cast<double>(classes_);
    std::size_t s = 0;
    for (std::size_t e = begin(item); e < end(item); ++e) std_[rank(items_.cls[e])] = saved_[s++];
    return value;
  }

  double fold_size(std::size_t fold) const { return fold_size_[fold]; }
  std::size_t folds() const { return folds_; }

  // np.std(y_counts_per_group, axis=1) of one item.
  double item_std(int32_t item, std::vector<double>& row) const {
    const auto c = static_cast<double>(classes_);
    const double mean = static_cast<double>(items_.size[static_cast<std::size_t>(item)]) / c;
    const double absent = (0.0 - mean) * (0.0 - mean);
    row.assign(classes_, absent);
    for (std::size_t e = begin(item); e < end(item); ++e) {
      const double d = static_cast<double>(items_.count[e]) - mean;
      row[rank(items_.cls[e])] = d * d;
    }
    return std::sqrt(numpy_sum(row) / c);
  }

 private:
  std::size_t rank(int32_t cls) const {
    return static_cast<std::size_t>(class_rank_[static_cast<std::size_t>(cls)]);
  }
  std::size_t begin(int32_t item) const { return items_.first[static_cast<std::size_t>(item)]; }
  std::size_t end(int32_t item) const { return items_.first[static_cast<std::size_t>(item) + 1]; }

  // np.std over the folds of class r's share of its total, with `extra`
  // samples added to fold `with` (none when with == folds_). numpy reduces
  // axis 0 of the folds x classes table row after row, except for a single
  // class, where the folds are contiguous and summed pairwise.
  double class_std(std::size_t r, std::size_t with, int32_t extra) {
    for (std::size_t f = 0; f < folds_; ++f) {
      double n = counts_[f * classes_ + r];
      if (f == with) n += extra;
      column_[f] = n / class_total_[r];
    }
    const auto k = static_cast<double>(folds_);
    const double mean = sum_over_folds(column_) / k;
    for (double& v : column_) {
      const double d = v - mean;
      v = d * d;
    }
    return std::sqrt(sum_over_folds(column_) / k);
  }

  double sum_over_folds(const std::vector<double>& v) const {
    if (classes_ == 1) return numpy_sum(v);
    double sum = 0;
    for (double x : v) sum += x;
    return sum;
  }

  const ItemTable& items_;
  std::span<const int32_t> class_rank_;
  const std::size_t folds_;
  const std::size_t classes_;
  std::vector<double> class_total_;  // [C] y_cnt
  std::vector<double> counts_;       // [folds x C] y_counts_per_fold
  std::vector<double> fold_size_;    // [folds] samples per fold
  std::vector<double> std_;          // [C] np.std over folds of the current table
  std::vector<double> column_;       // scratch [folds]
  std::vector<double> saved_;        // scratch
};

// _find_best_fold: the fold where the criterion comes out lowest, ties within
// np.isclose going to the fold with fewer samples.
std::size_t best_fold(ShareTable& table, int32_t item) {
  std::size_t best = 0;
  double min_eval = std::numeric_limits<double>::infinity();
  double min_samples = std::numeric_limits<double>::infinity();
  for (std::size_t fold = 0; fold < table.folds(); ++fold) {
    const double fold_eval = table.criterion(item, fold);
    const double samples_in_fold = table.fold_size(fold);
    if (fold_eval < min_eval ||
        (numpy_isclose(fold_eval, min_eval) && samples_in_fold < min_samples)) {
      min_eval = fold_eval;
      min_samples = samples_in_fold;
      best = fold;
    }
  }
  return best;
}

void check_ranks(const ItemTable& items, std::span<const int32_t> class_rank, int32_t folds) {
  if (class_rank.size() != static_cast<std::size_t>(items.num_classes) || folds < 1) {
    throw Error("sklearn: class ranks or folds do not match the item table");
  }
}

}  // namespace

double numpy_sum(std::span<const double> values) {
  double sum = 0;
  for (std::size_t at = 0; at < values.size(); at += kReduceChunk) {
    sum += pairwise_sum(values.data() + at, std::min(kReduceChunk, values.size() - at));
  }
  return sum;
}

std::vector<int32_t> stratified_group_kfold(const ItemTable& items,
                                            std::span<const int32_t> item_rank,
                                            std::span<const int32_t> class_rank, int32_t folds) {
  const std::size_t n = items.num_items();
  check_ranks(items, class_rank, folds);
  if (item_rank.size() != n) throw Error("sklearn: item ranks do not match the item table");
  ShareTable table(items, class_rank, folds);
  // Items in np.unique order, then stably by decreasing np.std of their counts.
  std::vector<int32_t> order(n);
  for (std::size_t i = 0; i < n; ++i) {
    order[static_cast<std::size_t>(item_rank[i])] = static_cast<int32_t>(i);
  }
  std::vector<double> key(n);
  std::vector<double> row;
  for (std::size_t i = 0; i < n; ++i) key[i] = table.item_std(static_cast<int32_t>(i), row);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return key[static_cast<std::size_t>(a)] > key[static_cast<std::size_t>(b)];
  });
  std::vector<int32_t> part(n, -1);
  for (int32_t item : order) {
    const std::size_t fold = best_fold(table, item);
    table.add(item, fold);
    part[static_cast<std::size_t>(item)] = static_cast<int32_t>(fold);
  }
  return part;
}

double stratified_group_criterion(const ItemTable& items, std::span<const int32_t> part,
                                  std::span<const int32_t> class_rank, int32_t folds) {
  check_ranks(items, class_rank, folds);
  if (part.size() != items.num_items()) throw Error("sklearn: partition does not match the items");
  ShareTable table(items, class_rank, folds);
  for (std::size_t i = 0; i < part.size(); ++i) {
    table.add(static_cast<int32_t>(i), static_cast<std::size_t>(part[i]));
  }
  return table.criterion(0, static_cast<std::size_t>(folds));
}

uint64_t stratified_group_kfold_work(const ItemTable& items, int32_t folds) {
  const auto k = static_cast<uint64_t>(std::max(folds, 1));
  const auto c = static_cast<uint64_t>(std::max(items.num_classes, 1));
  return items.num_items() * (k + 1) * c + 3 * k * k * items.cls.size();
}

std::vector<int32_t> group_kfold(std::span<const int64_t> sizes, int32_t folds) {
  if (folds < 1) throw Error("sklearn::group_kfold: no folds");
  std::vector<int32_t> all(sizes.size());
  std::iota(all.begin(), all.end(), 0);
  // Stably by decreasing size, as np.argsort(-sizes, kind="stable").
  const std::vector<int32_t> order = by_decreasing_size(all, sizes);
  // The lightest fold, the first of equals as np.argmin takes it.
  using Fold = std::pair<int64_t, int32_t>;
  std::priority_queue<Fold, std::vector<Fold>, std::greater<>> lightest;
  for (int32_t f = 0; f < folds; ++f) lightest.emplace(0, f);
  std::vector<int32_t> part(sizes.size(), -1);
  for (int32_t item : order) {
    auto [size, fold] = lightest.top();
    lightest.pop();
    part[static_cast<std::size_t>(item)] = fold;
    lightest.emplace(size + sizes[static_cast<std::size_t>(item)], fold);
  }
  return part;
}

}  // namespace imgpack::sklearn
