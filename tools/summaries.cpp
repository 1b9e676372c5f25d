#include "summaries.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "cli_common.hpp"
#include "imgpack/split.hpp"

namespace imgpack::cli {

nlohmann::ordered_json split_json(const DatasetIndex& index, const Split& split) {
  SplitQuality quality = split_quality(index, split);
  nlohmann::ordered_json stats = nlohmann::ordered_json::array();
  auto missing_names = [&](const FoldStats& fold) {
    nlohmann::ordered_json names = nlohmann::ordered_json::array();
    for (int32_t c : fold.missing_classes)
      names.push_back(index.class_names[static_cast<std::size_t>(c)]);
    return names;
  };
  for (const FoldStats& fold : quality.folds) {
    stats.push_back({{"fold", fold.fold},
                     {"size", fold.size},
                     {"max_class_dev", fold.max_class_dev},
                     {"mean_class_dev", fold.mean_class_dev},
                     {"missing_classes", missing_names(fold)}});
  }
  nlohmann::ordered_json j;
  j["name"] = split.name;
  j["kind"] = split.kind;
  j["folds"] = split.folds;
  j["seed"] = split.seed;
  j["stratified"] = split.stratified;
  j["grouped"] = split.grouped;
  j["test_size"] = quality.test_size;
  j["group_leakage"] = quality.group_leakage;
  j["fold_stats"] = std::move(stats);
  if (quality.test_size > 0) {
    j["test_stats"] = {{"size", quality.test.size},
                       {"max_class_dev", quality.test.max_class_dev},
                       {"mean_class_dev", quality.test.mean_class_dev},
                       {"missing_classes", missing_names(quality.test)}};
  }
  j["test_fraction"] = split.test_fraction;
  if (split.kind == "holdout") j["val_fraction"] = split.val_fraction;
  j["created"] = split.created;
  return j;
}

void print_split(std::ostream& out, const DatasetIndex& index, const Split& split, bool per_fold) {
  SplitQuality quality = split_quality(index, split);
  int64_t smallest = INT64_MAX, largest = 0, missing = 0;
  double max_dev = 0, mean_dev = 0;
  for (const FoldStats& fold : quality.folds) {
    smallest = std::min(smallest, fold.size);
    largest = std::max(largest, fold.size);
    missing += static_cast<int64_t>(fold.missing_classes.size());
    max_dev = std::max(max_dev, fold.max_class_dev);
    mean_dev += fold.mean_class_dev / static_cast<double>(quality.folds.size());
  }
  out << split.name << ": " << split.kind;
  if (split.kind == "holdout" && quality.folds.size() == 2) {
    out << " (val " << quality.folds[0].size << ", train " << quality.folds[1].size << "; "
        << (split.stratified ? "stratified" : "not stratified") << ", "
        << (split.grouped ? "groups whole" : "not grouped") << ")";
  } else {
    out << ", " << split.folds << " folds of " << smallest << ".." << largest << " samples";
  }
  out << ", test " << quality.test_size << ", seed " << split.seed << "; group leakage "
      << quality.group_leakage << ", class deviation max " << fixed(max_dev, 4) << " mean "
      << fixed(mean_dev, 4) << ", " << missing << " missing class" << (missing == 1 ? "" : "es")
      << " over folds\n";
  if (!per_fold) return;
  out << "  fold      size  max_class_dev  mean_class_dev  missing_classes\n";
  auto row = [&](const std::string& label, const FoldStats& fold) {
    std::string missing_text = std::to_string(fold.missing_classes.size());
    for (std::size_t m = 0; m < fold.missing_classes.size() && m < 3; ++m) {
      missing_text += (m == 0 ? " (" : ", ") +
                      index.class_names[static_cast<std::size_t>(fold.missing_classes[m])];
    }
    if (!fold.missing_classes.empty())
      missing_text += fold.missing_classes.size() > 3 ? ", ...)" : ")";
    char line[128];
    std::snprintf(line, sizeof line, "  %-6s %9lld  %13.4f  %14.4f  ", label.c_str(),
                  static_cast<long long>(fold.size), fold.max_class_dev, fold.mean_class_dev);
    out << line << missing_text << "\n";
  };
  for (const FoldStats& fold : quality.folds) {
    const bool holdout = split.kind == "holdout" && quality.folds.size() == 2;
    row(holdout ? (fold.fold == 0 ? "val" : "train") : std::to_string(fold.fold), fold);
  }
  if (quality.test_size > 0) row("test", quality.test);
}

nlohmann::ordered_json merge_json(const MergeResult& result, const std::string& out) {
  nlohmann::ordered_json j;
  j["parts"] = result.parts;
  j["records"] = result.records;
  j["samples"] = result.samples;
  j["skipped"] = result.skipped;
  j["shards"] = result.shards;
  j["seconds"] = result.seconds;
  j["dataset_uuid"] = result.uuid;
  j["resumed"] = result.resumed;
  j["already_merged"] = result.already_merged;
  j["left_behind"] = result.left_behind;
  j["out"] = out;
  return j;
}

}  // namespace imgpack::cli
