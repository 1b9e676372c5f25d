// imgpack remove DATASET: mark samples removed, in a new generation.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "imgpack/error.hpp"
#include "imgpack/growth.hpp"

namespace imgpack::cli {

namespace {

struct RemoveArgs {
  std::string dataset;
  std::string paths;
  std::string csv;
  std::string csv_path = "path";
  bool quiet = false, json = false;
};

int run_remove(const RemoveArgs& args) {
  if (args.paths.empty() == args.csv.empty()) {
    throw UsageError(
        "give the samples to remove with --paths FILE or with --csv FILE, one of them");
  }
  const std::string list = args.paths.empty() ? args.csv : args.paths;
  const std::vector<std::string> paths =
      read_path_list(list, args.paths.empty() ? args.csv_path : std::string());
  const RemoveResult result = remove_samples(args.dataset, paths, list);
  if (args.json) {
    nlohmann::ordered_json j;
    j["generation"] = result.generation;
    j["removed"] = result.removed;
    j["already_removed"] = result.already_removed;
    j["remaining"] = result.remaining;
    j["dataset"] = args.dataset;
    print_json(j);
  } else if (!args.quiet) {
    std::fprintf(stderr,
                 "%s: generation %llu: removed %s (%llu listed %s removed before), %llu remain\n",
                 args.dataset.c_str(), static_cast<unsigned long long>(result.generation),
                 counted(result.removed, "sample").c_str(),
                 static_cast<unsigned long long>(result.already_removed),
                 result.already_removed == 1 ? "was" : "were",
                 static_cast<unsigned long long>(result.remaining));
  }
  return kExitOk;
}

}  // namespace

void add_remove_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<RemoveArgs>();
  CLI::App* cmd = app.add_subcommand(
      "remove", "Mark samples of a dataset removed: readers, splits and counts leave them out");
  cmd->add_option("DATASET", args->dataset, "Dataset directory")
      ->required()
      ->check(dataset_directory());
  cmd->add_option("--paths", args->paths,
                  "Text file of the paths to remove, one per line, as the dataset names them "
                  "(relative to the converted folder; '#' starts a comment line)")
      ->check(not_empty());
  cmd->add_option("--csv", args->csv, "CSV file whose --csv-path column names the paths")
      ->check(not_empty());
  cmd->add_option("--csv-path", args->csv_path, "The --csv column of paths")
      ->capture_default_str()
      ->check(not_empty());
  cmd->add_flag("--quiet,-q", args->quiet, "No summary line");
  cmd->add_flag("--json", args->json, "Print a JSON summary on stdout");
  cmd->footer(
      "\nCommits the dataset's next generation (index.h5 and splits.h5, each by rename): the "
      "samples stay in the shards, marked removed, and leave every split's folds. A reader "
      "opened before keeps its view until it reopens. A path that is not a sample of the "
      "dataset stops the command (exit 2) before anything changes.");
  cmd->callback([args, &action] { action = [args] { return run_remove(*args); }; });
}

}  // namespace imgpack::cli
