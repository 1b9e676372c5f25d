// imgpack compact DATASET: drop the records of removed samples from the shards.
#include <cstdio>
#include <memory>
#include <string>

#include "cli_common.hpp"
#include "imgpack/growth.hpp"

namespace imgpack::cli {

namespace {

struct CompactArgs {
  std::string dataset;
  bool quiet = false, json = false;
};

int run_compact(const CompactArgs& args) {
  const CompactResult result = compact_dataset(args.dataset);
  if (args.json) {
    nlohmann::ordered_json j;
    j["generation"] = result.generation;
    j["shards_rewritten"] = result.shards_rewritten;
    j["shards_moved"] = result.shards_moved;
    j["shards_dropped"] = result.shards_dropped;
    j["records_dropped"] = result.records_dropped;
    j["replaced_files"] = result.replaced.files;
    j["replaced_bytes"] = result.replaced.bytes;
    j["leftovers_removed"] = result.leftovers_removed.files;
    j["leftover_bytes_removed"] = result.leftovers_removed.bytes;
    j["dataset"] = args.dataset;
    print_json(j);
    return kExitOk;
  }
  if (args.quiet) return kExitOk;
  std::string line = args.dataset + ": ";
  if (result.shards_rewritten + result.shards_dropped == 0) {
    line += "nothing to compact (generation " + std::to_string(result.generation) + ")";
  } else {
    line += "generation " + std::to_string(result.generation) + ": dropped " +
            counted(result.records_dropped, "record") + " of removed images; " +
            counted(result.shards_rewritten, "shard") + " rewritten (" +
            std::to_string(result.shards_moved) +
            " of them moved into the place of a dropped one), " +
            std::to_string(result.shards_dropped) + " dropped";
  }
  if (result.leftovers_removed.files > 0) {
    line += "; removed " + counted(result.leftovers_removed.files, "shard file") +
            " no generation uses any more (" + human_bytes(result.leftovers_removed.bytes) + ")";
  }
  std::fprintf(stderr, "%s\n", line.c_str());
  if (result.replaced.files > 0) {
    std::fprintf(stderr,
                 "%s: the replaced shard files (%s, %s) stay for readers opened before; the "
                 "dataset's next change removes them (imgpack compact again, once those "
                 "readers are done)\n",
                 args.dataset.c_str(), counted(result.replaced.files, "file").c_str(),
                 human_bytes(result.replaced.bytes).c_str());
  }
  return kExitOk;
}

}  // namespace

void add_compact_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<CompactArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compact", "Rewrite the shards that hold records of removed images without them");
  cmd->add_option("DATASET", args->dataset, "Dataset directory")
      ->required()
      ->check(dataset_directory());
  cmd->add_flag("--quiet,-q", args->quiet, "No summary line");
  cmd->add_flag("--json", args->json, "Print a JSON summary on stdout");
  cmd->footer(
      "\nEach shard holding records of removed images is written anew without them, under "
      "the next free shard number, every record it keeps checked against its checksum. A "
      "shard that held only removed images goes, and the last shard is written anew in its "
      "place (a shard's place in the table is its number). Then "
      "the next generation is committed (splits.h5, index.h5). Sample ids never change. The "
      "replaced shard files stay until the dataset's next change, so that readers opened "
      "before keep working: run compact again once they are done to remove them (it also "
      "removes what an interrupted change left). Killed at any point, run it again.");
  cmd->callback([args, &action] { action = [args] { return run_compact(*args); }; });
}

}  // namespace imgpack::cli
