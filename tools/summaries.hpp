// Summaries that more than one subcommand prints: a split and its quality
// (split, inspect), and a merge's result (merge, and rank 0 of an MPI
// conversion).
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "imgpack/dataset_index.hpp"
#include "imgpack/merge.hpp"

namespace imgpack::cli {

// The split object of the JSON contract (split --json, inside inspect --json):
// name, kind, folds, seed, test_size, group_leakage, fold_stats, with quality
// computed from the stored assignment.
nlohmann::ordered_json split_json(const DatasetIndex& index, const Split& split);
// A split and its quality in one line, with a per-fold table when `per_fold`.
void print_split(std::ostream& out, const DatasetIndex& index, const Split& split, bool per_fold);

// The --json summary of a merge into `out`.
nlohmann::ordered_json merge_json(const MergeResult& result, const std::string& out);

}  // namespace imgpack::cli
