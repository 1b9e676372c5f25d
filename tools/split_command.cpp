// imgpack split DATASET: create, list, export, import, extend or delete the
// named splits.
//
// Creating or deleting a split replaces splits.h5 alone (format 2; a format 1
// dataset's index.h5, which holds its splits), crash-safely (tmp, fsync,
// rename); index.h5's sample table and the shard files are never touched. Runs that change one
// dataset at the same time take turns (a lock on its directory), so none
// loses another's split.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "cli_common.hpp"
#include "cli_wording.hpp"
#include "files.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/split.hpp"
#include "splits_file.hpp"
#include "summaries.hpp"

namespace imgpack::cli {

namespace {

struct SplitArgs {
  std::string dataset;
  std::string name, kind;
  int32_t folds = 5;
  double val = 0, test = 0;
  uint64_t seed = 0;
  bool force = false, no_stratify = false, no_groups = false;
  bool list = false;
  bool reset = false;
  std::string remove, export_name, out;
  std::string import_file;
  std::string extend;
  SplitImport import_columns;
  bool json = false;
  bool quiet = false;
  CLI::Option* folds_option = nullptr;
  CLI::Option* val_option = nullptr;
};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The lock under which the splits are read, changed and replaced; says so on
// stderr when another run holds it.
DirectoryLock lock_for_change(const std::string& dataset, bool quiet) {
  // Without a dataset there is nothing to lock: read_index() throws the error
  // every subcommand gives for that.
  if (!std::filesystem::is_directory(dataset)) read_index(dataset);
  if (std::optional<DirectoryLock> lock = DirectoryLock::try_acquire(dataset)) {
    return std::move(*lock);
  }
  if (!quiet) {
    std::cerr << "imgpack: waiting for another process changing " << dataset << "\n";
  }
  return DirectoryLock(dataset);
}

// The index as changing its splits needs it. A format 2 dataset keeps its
// splits in splits.h5, and a change rewrites that file alone: the sample
// table is read only for what the split and its quality report need (the
// labels and groups; the paths too for `paths`). A format 1 index.h5 holds
// its splits, so a change rewrites it whole, and it is read whole.
DatasetIndex read_for_change(const std::string& dataset, bool paths = false) {
  DatasetIndex index =
      read_index(dataset, {.sample_paths = paths, .group_names = false, .records = false});
  if (index.format_version < 2) index = read_index(dataset);
  return index;
}

// One CSV field, quoted when it holds a comma, quote or line break (RFC 4180)
// or begins or ends with a space or tab, which a reader drops from an unquoted
// field (a class folder named " cat" would not import back).
std::string csv_field(const std::string& text) {
  const bool padded = !text.empty() && (text.front() == ' ' || text.front() == '\t' ||
                                        text.back() == ' ' || text.back() == '\t');
  if (!padded && text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

const Split& find_or_fail(const DatasetIndex& index, const std::string& name,
                          const std::string& dataset) {
  const Split* split = index.find_split(name);
  if (!split) {
    std::string known;
    for (const Split& s : index.splits) known += (known.empty() ? "" : ", ") + s.name;
    throw UsageError(dataset + ": no split named '" + name +
                     "' (splits: " + (known.empty() ? "none" : known) + ")");
  }
  return *split;
}

// Whether `stored` is the split `made` is, its creation date aside (a split
// an append or a removal has changed since is not).
bool same_split(const Split& stored, const Split& made) {
  return stored.kind == made.kind && stored.folds == made.folds && stored.seed == made.seed &&
         stored.test_fraction == made.test_fraction && stored.val_fraction == made.val_fraction &&
         stored.stratified == made.stratified && stored.grouped == made.grouped &&
         stored.previous_samples.empty() && std::ranges::equal(stored.assign, made.assign);
}

int run_create(const SplitArgs& args) {
  if (args.kind.empty()) {
    throw UsageError("--name needs --kind (random, stratified, group, stratified-group, holdout)");
  }
  SplitSpec spec;
  spec.kind = parse_split_kind(args.kind);
  if (spec.kind == SplitKind::holdout && args.folds_option->count() > 0) {
    throw UsageError(
        "--folds does not apply to --kind holdout (it has one validation part: "
        "give its size with --val)");
  }
  if (spec.kind == SplitKind::holdout && args.val == 0 && args.val_option->count() == 0) {
    throw UsageError("--kind holdout needs --val FRACTION");
  }
  spec.folds = args.folds;
  spec.val_fraction = args.val;
  spec.test_fraction = args.test;
  spec.seed = args.seed;
  spec.use_labels = !args.no_stratify;
  spec.use_groups = !args.no_groups;
  check_split_name(args.name);
  spec.validate();

  Clock::time_point start = Clock::now();
  const DirectoryLock lock = lock_for_change(args.dataset, args.quiet);
  DatasetIndex index = read_for_change(args.dataset);
  const double read_s = seconds_since(start);
  Clock::time_point compute_start = Clock::now();
  std::vector<std::string> warnings;
  Split split = make_split(index, args.name, spec, utc_timestamp(), &warnings);
  const double compute_s = seconds_since(compute_start);
  // The same command again (after a run killed once it had saved, say)
  // finds its split there as it would make it: nothing to do.
  const Split* existing = index.find_split(args.name);
  const bool unchanged = existing != nullptr && same_split(*existing, split);
  if (existing != nullptr && !args.force && !unchanged) {
    throw UsageError(args.dataset + ": a split named '" + args.name +
                     "' exists; pass --force to replace it");
  }
  for (std::string& warning : warnings) {
    warning = cli_wording(warning);
    std::cerr << "imgpack: warning: " << warning << "\n";
  }
  double write_s = 0;
  if (unchanged) {
    if (!args.quiet && !args.json) {
      std::cerr << args.dataset << ": split " << args.name
                << " is there already as asked; nothing changed\n";
    }
  } else {
    store_split(index, std::move(split), args.force);
    Clock::time_point write_start = Clock::now();
    write_splits(args.dataset, index);
    write_s = seconds_since(write_start);
  }
  const Split& stored = *index.find_split(args.name);

  if (args.json) {
    nlohmann::ordered_json j = split_json(index, stored);
    j["warnings"] = warnings;
    j["unchanged"] = unchanged;
    j["timings"] = {{"read_s", read_s},
                    {"compute_s", compute_s},
                    {"write_s", write_s},
                    {"total_s", seconds_since(start)}};
    print_json(j);
  } else {
    print_split(std::cout, index, stored, true);
  }
  return kExitOk;
}

int run_list(const SplitArgs& args) {
  // Of the samples, the listing needs only the labels and groups: the paths,
  // group names and records, the bulk of a large index, are left out.
  DatasetIndex index =
      read_index(args.dataset, {.sample_paths = false, .group_names = false, .records = false});
  if (args.json) {
    nlohmann::ordered_json splits = nlohmann::ordered_json::array();
    for (const Split& split : index.splits) splits.push_back(split_json(index, split));
    print_json({{"splits", std::move(splits)}});
    return kExitOk;
  }
  if (index.splits.empty()) std::cout << args.dataset << ": no splits\n";
  for (const Split& split : index.splits) print_split(std::cout, index, split, false);
  return kExitOk;
}

int run_delete(const SplitArgs& args) {
  const DirectoryLock lock = lock_for_change(args.dataset, args.quiet);
  DatasetIndex index = read_for_change(args.dataset);
  const Split& split = find_or_fail(index, args.remove, args.dataset);
  index.splits.erase(index.splits.begin() + (&split - index.splits.data()));
  write_splits(args.dataset, index);
  if (args.json) {
    print_json({{"deleted", args.remove}});
  } else if (!args.quiet) {
    std::cerr << args.dataset << ": deleted split " << args.remove << "\n";
  }
  return kExitOk;
}

int run_export(const SplitArgs& args) {
  if (args.out.empty()) throw UsageError("--export needs --out FILE.csv (or --out - for stdout)");
  const DatasetIndex index = read_index(args.dataset, {.records = false});
  const Split& split = find_or_fail(index, args.export_name, args.dataset);
  std::string csv = "path,label,group,fold\n";
  for (std::size_t i = 0; i < index.num_samples(); ++i) {
    if (index.is_removed(i)) continue;  // in no part; an import gives them none
    const int32_t label = index.sample_label[i];
    const int32_t group = index.sample_group[i];
    csv += csv_field(index.sample_path[i]);
    csv += ',';
    if (label >= 0) csv += csv_field(index.class_names[static_cast<std::size_t>(label)]);
    csv += ',';
    if (group >= 0) csv += csv_field(index.group_names[static_cast<std::size_t>(group)]);
    csv += ',';
    csv += std::to_string(split.assign[i]);
    csv += '\n';
  }
  if (args.out == "-") {
    if (args.json) {
      throw UsageError(
          "--json with --out -: the CSV takes stdout, which leaves no place for the JSON "
          "summary; give --out FILE");
    }
    std::cout << csv << std::flush;
  } else {
    refuse_dataset_file_as_output(args.out, args.dataset, "--out");
    write_output_file(args.out, csv);
    if (!args.json && !args.quiet) {
      std::cerr << args.out << ": " << index.num_samples() - index.num_removed()
                << " samples of split " << split.name << " (fold -1 = test)\n";
    }
  }
  if (args.json && args.out != "-") {
    print_json({{"exported", split.name},
                {"out", args.out},
                {"samples", index.num_samples() - index.num_removed()}});
  }
  return kExitOk;
}

// --import FILE --name NAME: a split made elsewhere, checked and stored as
// run_create stores a computed one.
int run_import(const SplitArgs& args) {
  if (args.name.empty()) throw UsageError("--import needs --name NAME for the split");
  if (!args.kind.empty() || args.folds_option->count() > 0 || args.val != 0 || args.test != 0) {
    throw UsageError("--import takes the folds from " + args.import_file +
                     "; --kind, --folds, --val and --test do not apply");
  }
  const DirectoryLock lock = lock_for_change(args.dataset, args.quiet);
  DatasetIndex index = read_for_change(args.dataset, true);
  if (index.find_split(args.name) && !args.force) {
    throw UsageError(args.dataset + ": a split named '" + args.name +
                     "' exists; pass --force to replace it");
  }
  Split split =
      import_split(index, args.import_file, args.import_columns, args.name, utc_timestamp());
  store_split(index, std::move(split), args.force);
  write_splits(args.dataset, index);
  const Split& stored = *index.find_split(args.name);
  if (args.json) {
    print_json(split_json(index, stored));
  } else {
    print_split(std::cout, index, stored, true);
  }
  return kExitOk;
}

// --extend NAME: the stored split NAME covers every sample already (each
// change extends every stored split); with --import FILE, the split NAME of
// an earlier generation (an export made before an append), extended over
// the samples added since, stored as NAME.
int run_extend(const SplitArgs& args) {
  if (!args.name.empty() || !args.kind.empty() || args.folds_option->count() > 0 || args.val != 0 ||
      args.test != 0 || args.list || !args.remove.empty() || !args.export_name.empty()) {
    throw UsageError(
        "--extend NAME takes only --import FILE (a split of an earlier generation, as --export "
        "wrote it), --force, --path-column and --fold-column");
  }
  if (args.import_file.empty()) {
    const DatasetIndex index =
        read_index(args.dataset, {.sample_paths = false, .group_names = false, .records = false});
    const Split& split = find_or_fail(index, args.extend, args.dataset);
    if (!args.quiet) {
      std::cerr << args.dataset << ": split " << split.name << " covers all " << index.num_samples()
                << " samples of generation " << index.generation
                << " (every append extends every stored split); to extend an export of an "
                   "earlier generation, give it with --import FILE\n";
    }
    if (args.json) {
      print_json(split_json(index, split));
    } else {
      print_split(std::cout, index, split, true);
    }
    return kExitOk;
  }
  const DirectoryLock lock = lock_for_change(args.dataset, args.quiet);
  DatasetIndex index = read_for_change(args.dataset, true);
  if (index.find_split(args.extend) && !args.force) {
    throw UsageError(args.dataset + ": a split named '" + args.extend +
                     "' exists; pass --force to replace it with the extended " + args.import_file);
  }
  ExtendedImport extended = import_split_extended(index, args.import_file, args.import_columns,
                                                  args.extend, utc_timestamp());
  for (std::string& warning : extended.warnings) {
    warning = cli_wording(warning);
    std::cerr << "imgpack: warning: " << warning << "\n";
  }
  store_split(index, std::move(extended.split), args.force);
  write_splits(args.dataset, index);
  const Split& stored = *index.find_split(args.extend);
  if (args.json) {
    nlohmann::ordered_json j = split_json(index, stored);
    j["listed"] = extended.listed;
    j["placed"] = extended.placed;
    j["warnings"] = extended.warnings;
    print_json(j);
  } else {
    if (!args.quiet) {
      uint64_t removed = 0;  // among the listed ones: in no fold now
      for (uint64_t s = 0; s < extended.listed; ++s) removed += index.is_removed(s) ? 1 : 0;
      std::cerr << args.import_file << ": " << extended.listed - removed
                << " samples kept their folds"
                << (removed > 0 ? " (" + std::to_string(removed) + " more removed since)" : "")
                << ", " << extended.placed << " added since placed\n";
    }
    print_split(std::cout, index, stored, true);
  }
  return kExitOk;
}

// splits.h5 missing or damaged (every command refuses the dataset then):
// written anew without splits, the index and the shards untouched.
int run_reset(const SplitArgs& args) {
  if (!args.name.empty() || args.list || !args.remove.empty() || !args.export_name.empty() ||
      !args.import_file.empty() || !args.extend.empty()) {
    throw UsageError("--reset takes no other action: reset, then make the splits again");
  }
  const DirectoryLock lock = lock_for_change(args.dataset, args.quiet);
  const std::string problem = detail::reset_splits_file(args.dataset);
  if (args.json) {
    print_json({{"reset", true}, {"problem", cli_wording(problem)}});
  } else if (!args.quiet) {
    std::cerr << args.dataset << ": " << format::kSplitsFile
              << " written anew without splits; it was: " << cli_wording(problem)
              << "\nmake the splits again with imgpack split --name NAME --kind KIND ...\n";
  }
  return kExitOk;
}

int run_split(const SplitArgs& args) {
  if (args.reset) return run_reset(args);
  if (!args.extend.empty()) return run_extend(args);
  if (!args.import_file.empty()) {
    if (args.list || !args.remove.empty() || !args.export_name.empty()) {
      throw UsageError(
          "give one of --name (create), --import FILE --name NAME, --list, "
          "--delete NAME, --export NAME");
    }
    return run_import(args);
  }
  const int actions = (args.name.empty() ? 0 : 1) + (args.list ? 1 : 0) +
                      (args.remove.empty() ? 0 : 1) + (args.export_name.empty() ? 0 : 1);
  if (actions > 1) {
    throw UsageError("give one of --name (create), --list, --delete NAME, --export NAME");
  }
  if (!args.remove.empty()) return run_delete(args);
  if (!args.export_name.empty()) return run_export(args);
  if (!args.name.empty()) return run_create(args);
  if (!args.kind.empty() || args.folds_option->count() > 0 || args.val != 0 || args.test != 0 ||
      args.force || args.no_stratify || args.no_groups || !args.out.empty()) {
    throw UsageError(
        "--kind, --folds, --val, --test, --force, --no-stratify and --no-groups need --name "
        "NAME (the split to create), --out needs --export NAME");
  }
  return run_list(args);
}

}  // namespace

void add_split_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<SplitArgs>();
  CLI::App* cmd = app.add_subcommand(
      "split", "Create, list, export or delete named splits (rewrites splits.h5 only)");
  cmd->add_option("DATASET", args->dataset, "Dataset directory")
      ->required()
      ->check(dataset_directory());
  cmd->add_option("--name", args->name, "Create (or with --force replace) the split NAME")
      ->check(not_empty());
  cmd->add_option("--kind", args->kind, "random | stratified | group | stratified-group | holdout")
      ->check(not_empty());
  args->folds_option =
      cmd->add_option("--folds", args->folds, "Folds for k-fold kinds")->capture_default_str();
  args->val_option =
      cmd->add_option("--val", args->val, "holdout: validation fraction of all samples");
  cmd->add_option("--test", args->test,
                  "Fraction of all samples carved first as a test set that is in no fold")
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "Seed of every random choice")
      ->check(whole_number())
      ->capture_default_str();
  cmd->add_flag("--force", args->force, "Replace an existing split of the same name");
  cmd->add_flag("--no-stratify", args->no_stratify, "holdout: ignore the labels");
  cmd->add_flag("--no-groups", args->no_groups, "holdout: ignore the groups");
  cmd->add_flag("--list", args->list, "List the splits and their quality (the default)");
  cmd->add_option("--delete", args->remove, "Delete the split NAME")->check(not_empty());
  cmd->add_flag("--reset", args->reset,
                "Write splits.h5 anew without splits, where it is missing or damaged (every "
                "command refuses the dataset then); the splits are then made again");
  cmd->add_option("--export", args->export_name, "Write split NAME as CSV: path,label,group,fold")
      ->check(not_empty());
  cmd->add_option("--out", args->out, "CSV file for --export ('-' = stdout)")->check(not_empty());
  cmd->add_option("--import", args->import_file,
                  "Store the folds of FILE.csv (path,fold as --export writes; fold -1 = test) "
                  "as split --name")
      ->check(not_empty());
  cmd->add_option("--extend", args->extend,
                  "With --import FILE: store split NAME of an earlier generation (an export "
                  "from before an append) extended over the samples added since")
      ->check(not_empty());
  cmd->add_option("--path-column", args->import_columns.path, "--import: the column of paths")
      ->capture_default_str();
  cmd->add_option("--fold-column", args->import_columns.fold, "--import: the column of folds")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print one JSON object on stdout");
  cmd->add_flag("--quiet,-q", args->quiet, "No messages on stderr but warnings and errors");
  cmd->callback([args, &action] { action = [args] { return run_split(*args); }; });
}

}  // namespace imgpack::cli
