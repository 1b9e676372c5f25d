// What every imgpack subcommand shares: how it is registered, how it reports
// errors and how it prints JSON.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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
void add_remove_command(CLI::App& app, Action& action);
void add_compact_command(CLI::App& app, Action& action);
void add_preview_command(CLI::App& app, Action& action);
void add_sample_data_command(CLI::App& app, Action& action);
void add_split_command(CLI::App& app, Action& action);
void add_bench_command(CLI::App& app, Action& action);
void add_upgrade_command(CLI::App& app, Action& action);
void add_verify_command(CLI::App& app, Action& action);

// The check of an option read into a 64-bit unsigned (a seed, a pixel
// count): digits only, at most 2^64 - 1. CLI11 alone would read "-1" as
// 2^64 - 1 and a number past the range as that too.
const CLI::Validator& whole_number();

// The check of an option naming a split or a file: "" would read as not
// given (a script's unset variable would then do something else than asked).
const CLI::Validator& not_empty();

// The check of a DATASET argument: an existing directory, else a usage
// error (exit 2) naming the path: "PATH: no such dataset directory", or "not
// a directory" for a file (index.h5 given for its folder, say).
const CLI::Validator& dataset_directory();

// Refuses (a UsageError naming `option`) an output file that would replace
// one of `dataset`'s own files, by its name or through a link: index.h5,
// splits.h5, a shard, a journal, report.json. An output is written by
// replacing the file it names (write_output_file), so `--out DATASET/index.h5`
// would leave no dataset. Other files beside them are allowed.
void refuse_dataset_file_as_output(const std::filesystem::path& out,
                                   const std::filesystem::path& dataset, const char* option);

// Prints one JSON object on stdout, followed by a newline.
void print_json(const nlohmann::ordered_json& value);

// Prints each of `lines` on stderr as "imgpack: KIND: LINE", worded for the
// CLI (cli_wording: option names rather than the library's fields).
void print_messages(const char* kind, const std::vector<std::string>& lines);

// "1.5 GiB", "320 KiB", "12 B"
std::string human_bytes(uint64_t bytes);

// "1 shard", "2 shards": `count` and `noun`, plural by an added "s".
std::string counted(uint64_t count, const std::string& noun);

// `value` with `digits` digits after the point (printf's %.*f).
std::string fixed(double value, int digits);

}  // namespace imgpack::cli
