// imgpack merge OUT: join the parts that `convert --part I/N` wrote into OUT.
#include <cstdio>
#include <memory>

#include "cli_common.hpp"
#include "imgpack/merge.hpp"
#include "summaries.hpp"

namespace imgpack::cli {

namespace {

struct MergeArgs {
  std::string out;
  unsigned threads = 0;
  bool quiet = false, json = false;
};

int run_merge(const MergeArgs& args) {
  MergeOptions options;
  options.out = args.out;
  options.threads = args.threads;
  const MergeResult result = merge(options);
  print_messages("warning", result.split_warnings);
  for (const std::string& path : result.left_behind) {
    std::fprintf(stderr, "warning: %s: not written by imgpack, so merge left it where it is\n",
                 path.c_str());
  }
  if (args.json) {
    print_json(merge_json(result, args.out));
  } else if (!args.quiet && result.already_merged) {
    std::fprintf(stderr,
                 "%s: merged already (%llu records from %llu images in %llu shard%s): "
                 "nothing to do\n",
                 args.out.c_str(), static_cast<unsigned long long>(result.records),
                 static_cast<unsigned long long>(result.samples),
                 static_cast<unsigned long long>(result.shards), result.shards == 1 ? "" : "s");
  } else if (!args.quiet) {
    std::fprintf(stderr, "%s: merged %u parts: %llu records from %llu images in %llu shard%s%s\n",
                 args.out.c_str(), result.parts, static_cast<unsigned long long>(result.records),
                 static_cast<unsigned long long>(result.samples),
                 static_cast<unsigned long long>(result.shards), result.shards == 1 ? "" : "s",
                 result.resumed ? " (an interrupted merge, completed)" : "");
  }
  return kExitOk;
}

}  // namespace

void add_merge_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<MergeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "merge",
      "Join the parts that 'convert --part I/N' wrote into OUT/parts/ into one dataset in OUT");
  cmd->add_option("OUT", args->out, "The OUT the parts were converted into")
      ->required()
      ->check(not_empty());
  cmd->add_option("--threads", args->threads,
                  "Threads checking the parts' records (default: all cores)");
  cmd->add_flag("--quiet,-q", args->quiet, "No summary line");
  cmd->add_flag("--json", args->json, "Print a JSON summary on stdout");
  cmd->footer(
      "\nChecks that all N parts are present, complete, made with the same options from the "
      "same input listing, and together hold every input once, and checks every shard of every "
      "part as 'imgpack verify' does (structure, place, every record's checksum); only then "
      "renames their shards into OUT and writes index.h5, last. A damaged part is refused "
      "(exit 2, OUT unchanged): 'convert --part I/N --resume' converts it again. Splits given with "
      "--split are computed here. A merge "
      "stopped midway (kill -9, power loss) finishes when run again.");
  cmd->callback([args, &action] { action = [args] { return run_merge(*args); }; });
}

}  // namespace imgpack::cli
