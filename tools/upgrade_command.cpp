// imgpack upgrade DATASET: rewrite a format 1 index as format 2, in place.
//
// The shards are not touched; the index is replaced atomically (splits.h5,
// then index.h5, each written aside and renamed), so a run killed at any point
// leaves a dataset that opens, and running it again finishes (upgrade.hpp).
#include <iostream>
#include <memory>

#include "cli_common.hpp"
#include "imgpack/format.hpp"
#include "imgpack/upgrade.hpp"

namespace imgpack::cli {

namespace {

struct UpgradeArgs {
  std::string dataset;
  bool json = false;
  bool quiet = false;
};

int run_upgrade(const UpgradeArgs& args) {
  const UpgradeResult result = upgrade_dataset(args.dataset);
  if (args.json) {
    print_json({{"upgraded", result.upgraded},
                {"from_format", result.from_version},
                {"to_format", result.to_version},
                {"samples", result.samples},
                {"records", result.records},
                {"splits", result.splits},
                {"seconds", result.seconds}});
  } else if (!args.quiet) {
    if (result.upgraded) {
      std::cerr << args.dataset << ": index upgraded from format " << result.from_version
                << " to format " << result.to_version << " (" << result.samples << " samples, "
                << result.splits << " split" << (result.splits == 1 ? "" : "s") << " moved to "
                << format::kSplitsFile << "; shards untouched)\n";
    } else {
      std::cerr << args.dataset << ": index is format " << result.to_version
                << " already; nothing to do\n";
    }
  }
  return kExitOk;
}

}  // namespace

void add_upgrade_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<UpgradeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "upgrade", "Rewrite a format 1 index (index.h5) as format 2, atomically; shards untouched");
  cmd->add_option("DATASET", args->dataset, "Dataset directory")
      ->required()
      ->check(dataset_directory());
  cmd->add_flag("--json", args->json, "Print one JSON object on stdout");
  cmd->add_flag("--quiet,-q", args->quiet, "No messages on stderr but errors");
  cmd->callback([args, &action] { action = [args] { return run_upgrade(*args); }; });
}

}  // namespace imgpack::cli
