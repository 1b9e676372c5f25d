// Test driver for the split property tests (split_sklearn_property_test.py):
// reads split requests and prints the assignments, so that hundreds of
// layouts can be checked against scikit-learn in one process.
//
// usage: split_driver [FILE]   (standard input without FILE)
//
// Every request is three lines:
//   KIND FOLDS SEED N     KIND: random, stratified, group, stratified-group,
//                         holdout (validation 0.2), or the replays of
//                         scikit-learn's splitters: sklearn-stratified-group,
//                         sklearn-group
//   N labels
//   N groups
// and gets one line: N fold ids, or "error: MESSAGE" for a request that
// compute_split() rejects.
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "imgpack/error.hpp"
#include "imgpack/split.hpp"
#include "split/item_partition.hpp"
#include "split/split_sklearn.hpp"

namespace {

using imgpack::ItemTable;

// The groups of a replay request as items, canonical ids in order of first
// appearance, and the np.unique ranks of both.
struct Table {
  ItemTable items;
  std::vector<int32_t> item_of_sample, item_rank, class_rank;
};

std::vector<int32_t> unique_ranks(const std::vector<int32_t>& values) {
  std::vector<int32_t> order(values.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return values[static_cast<std::size_t>(a)] < values[static_cast<std::size_t>(b)];
  });
  std::vector<int32_t> rank(values.size());
  for (std::size_t r = 0; r < order.size(); ++r)
    rank[static_cast<std::size_t>(order[r])] = static_cast<int32_t>(r);
  return rank;
}

std::vector<int32_t> renumber(const std::vector<int32_t>& ids, std::vector<int32_t>& original) {
  std::vector<int32_t> out(ids.size());
  std::map<int32_t, int32_t> seen;
  original.clear();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto [at, added] = seen.try_emplace(ids[i], static_cast<int32_t>(original.size()));
    if (added) original.push_back(ids[i]);
    out[i] = at->second;
  }
  return out;
}

Table table_of(const std::vector<int32_t>& labels, const std::vector<int32_t>& groups) {
  Table t;
  std::vector<int32_t> class_ids, group_ids;
  const std::vector<int32_t> cls = renumber(labels, class_ids);
  t.item_of_sample = renumber(groups, group_ids);
  t.items.num_classes = static_cast<int32_t>(class_ids.size());
  std::vector<std::map<int32_t, int32_t>> histogram(group_ids.size());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    ++histogram[static_cast<std::size_t>(t.item_of_sample[i])][cls[i]];
  }
  for (const auto& counts : histogram) {
    std::vector<int32_t> classes, numbers;
    for (auto [c, n] : counts) {
      classes.push_back(c);
      numbers.push_back(n);
    }
    t.items.add_item(classes, numbers);
  }
  t.item_rank = unique_ranks(group_ids);
  t.class_rank = unique_ranks(class_ids);
  return t;
}

std::string run(const std::string& kind, int32_t folds, uint64_t seed,
                const std::vector<int32_t>& labels, const std::vector<int32_t>& groups) {
  std::vector<int32_t> fold_of_sample;
  if (kind == "sklearn-stratified-group" || kind == "sklearn-group") {
    const Table t = table_of(labels, groups);
    const std::vector<int32_t> part =
        kind == "sklearn-group"
            ? imgpack::sklearn::group_kfold(t.items.size, folds)
            : imgpack::sklearn::stratified_group_kfold(t.items, t.item_rank, t.class_rank, folds);
    for (int32_t item : t.item_of_sample)
      fold_of_sample.push_back(part[static_cast<std::size_t>(item)]);
  } else {
    imgpack::SplitSpec spec;
    spec.kind = imgpack::parse_split_kind(kind);
    spec.seed = seed;
    if (spec.kind == imgpack::SplitKind::holdout) {
      spec.val_fraction = 0.2;
    } else {
      spec.folds = folds;
    }
    for (int16_t a : imgpack::compute_split(labels, groups, spec).assign)
      fold_of_sample.push_back(a);
  }
  std::ostringstream out;
  for (std::size_t i = 0; i < fold_of_sample.size(); ++i)
    out << (i ? " " : "") << fold_of_sample[i];
  return out.str();
}

}  // namespace

int main(int argc, char** argv) {
  std::ifstream file;
  if (argc > 1) {
    file.open(argv[1]);
    if (!file) {
      std::cerr << "split_driver: cannot open " << argv[1] << "\n";
      return 1;
    }
  }
  std::istream& in = argc > 1 ? file : std::cin;
  std::string kind;
  int32_t folds = 0;
  uint64_t seed = 0;
  std::size_t n = 0;
  while (in >> kind >> folds >> seed >> n) {
    std::vector<int32_t> labels(n), groups(n);
    for (int32_t& v : labels) in >> v;
    for (int32_t& v : groups) in >> v;
    if (!in) {
      std::cerr << "split_driver: truncated request\n";
      return 1;
    }
    try {
      std::cout << run(kind, folds, seed, labels, groups) << "\n";
    } catch (const imgpack::Error& e) {
      std::cout << "error: " << e.what() << "\n";
    }
  }
  return 0;
}
