// What every imgpack subcommand shares: how it is registered, how it reports
// errors and how it prints JSON.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "imgpack/dataset_index.hpp"
#include "imgpack/merge.hpp"

namespace imgpack::cli {

// The work a parsed subcommand will do; returns the process exit code.
using Action = std::function<int()>;

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Each subcommand adds itself to `app` and, when it is the one parsed, stores
// its work in `action`.
void add_convert_command(CLI::App& app, Action& action);
void add_inspect_command(CLI::App& app, Action& action);
void add_merge_command(CLI::App& app, Action& action);
// The --json summary of a merge into `out` (imgpack merge, and rank 0 of an
// MPI conversion).
nlohmann::ordered_json merge_json(const MergeResult& result, const std::string& out);
void add_preview_command(CLI::App& app, Action& action);
void add_sample_data_command(CLI::App& app, Action& action);
void add_split_command(CLI::App& app, Action& action);

// The split object of the JSON contract (split --json, inside inspect --json):
// name, kind, folds, seed, test_size, group_leakage, fold_stats, with quality
// computed from the stored assignment.
nlohmann::ordered_json split_json(const DatasetIndex& index, const Split& split);
// A split and its quality in one line, with a per-fold table when `per_fold`.
void print_split(std::ostream& out, const DatasetIndex& index, const Split& split, bool per_fold);
void add_bench_command(CLI::App& app, Action& action);
void add_upgrade_command(CLI::App& app, Action& action);
void add_verify_command(CLI::App& app, Action& action);

// Prints one JSON object on stdout, followed by a newline.
void print_json(const nlohmann::ordered_json& value);

// "1.5 GiB", "320 KiB", "12 B"
std::string human_bytes(uint64_t bytes);

}  // namespace imgpack::cli
