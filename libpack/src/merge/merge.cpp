// merge(): check the parts, journal the plan, move the shards, then the
// splits, report.json and index.h5, last; then the parts' folders go.
//
// Crash points (crash_point() in files.hpp) for the crash-safety tests:
// "merge-patch:K" (merged shard K renumbered but still open for writing),
// "merge-shard:K" (renumbered and closed, not yet renamed into OUT),
// "splits-committed" (splits.h5 in place, index.h5 not yet written; from
// write_index()) and "merge-index-committed" (index.h5 in place, parts not
// yet removed).
#include "imgpack/merge.hpp"

#include <hdf5.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "conversion/conversion_parts.hpp"
#include "conversion/convert_journal.hpp"
#include "conversion/output_files.hpp"
#include "error_note.hpp"
#include "files.hpp"
#include "h5.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/split.hpp"
#include "inputs/json_integer.hpp"
#include "merge/merge_check.hpp"
#include "merge/merge_plan.hpp"

namespace imgpack {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

bool path_exists(const fs::path& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

// Gives a part shard its place in the merged dataset: its /sample column the
// merged sample ids, its shard_index attribute the merged shard number.
//
// A merge killed while it had the shard open leaves HDF5's "open for writing"
// mark in its superblock, which makes every later open fail; the shard's
// contents are whole (only its /sample column and an attribute are
// rewritten, with values a rerun writes again), so the mark is cleared.
void patch_shard(const fs::path& path, const ShardMove& move) {
  h5::File file = h5::File::open_write_clearing_mark(path);
  auto fail = [&](const char* call) {
    throw file_error(path, std::string(call) + " failed: " + h5::last_error_message());
  };
  {
    h5::Handle samples(H5Dopen2(file.id(), format::kSample, H5P_DEFAULT));
    if (!samples) fail("H5Dopen2 /sample");
    h5::Handle space(H5Dget_space(samples.get()));
    if (!space ||
        H5Sget_simple_extent_npoints(space.get()) != static_cast<hssize_t>(move.samples.size())) {
      throw file_error(path, "its /sample column does not have the length its part's index gives");
    }
    if (!move.samples.empty() && H5Dwrite(samples.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL,
                                          H5P_DEFAULT, move.samples.data()) < 0) {
      fail("H5Dwrite /sample");
    }
    h5::Handle attr(H5Aopen(file.id(), format::kAttrShardIndex, H5P_DEFAULT));
    if (!attr) fail("H5Aopen shard_index");
    const int64_t shard = move.shard;
    if (H5Awrite(attr.get(), H5T_NATIVE_INT64, &shard) < 0) fail("H5Awrite shard_index");
  }
  if (H5Fflush(file.id(), H5F_SCOPE_LOCAL) < 0) fail("H5Fflush");
  crash_point("merge-patch", move.shard);  // the shard still marked open for writing
  file.close();
}

// Moves one part shard to its place in OUT. Done already (a rerun after a
// crash) when it is there and the part's file is gone.
void move_shard(const fs::path& out, const ShardMove& move) {
  const fs::path from = out / move.from;
  const fs::path to = out / move.to;
  if (path_exists(to) && !path_exists(from)) return;
  if (!path_exists(from))
    throw file_error(from, "missing: the part's shard is gone (and not in OUT)");
  patch_shard(from, move);
  fsync_path(from);
  crash_point("merge-shard", move.shard);
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) throw file_error(from, "cannot move to " + to.string() + ": " + ec.message());
  fsync_path(out);
  fsync_path(from.parent_path());
}

// The splits of the merged conversion's options, over the merged samples.
void compute_splits(DatasetIndex& index, std::vector<std::string>& warnings) {
  const json options = json::parse(index.convert_options);
  if (!options.contains("splits")) return;
  const auto seed = json_integer<uint64_t>(options.at("seed"));
  for (const json& text : options.at("splits")) {
    const NamedSplitSpec split = parse_split_option(text.get<std::string>(), seed);
    try {
      store_split(index, make_split(index, split.name, split.spec, "", &warnings), false);
    } catch (const UsageError& e) {
      throw UsageError("ConvertOptions::splits " + split.name +
                       " over the merged samples: " + e.what());
    }
  }
}

// A field of a part's report where it has the kind asked for, else
// `otherwise`: a report is informational, and one a part's run left damaged
// must not stop a merge whose shards have moved already.
json report_field(const json& report, const char* name, json::value_t kind, json otherwise) {
  const auto it = report.find(name);
  if (it == report.end()) return otherwise;
  const bool number = kind == json::value_t::number_float && it->is_number();
  return number || it->type() == kind ? *it : otherwise;
}

// OUT/report.json: the parts' reports summed.
void write_merged_report(const fs::path& out, const MergePlan& plan, const MergeResult& result) {
  const json first = json::parse(plan.parts.front().report);
  json report;
  report["imgpack_format"] = format::kIndexVersion;
  report["created_by"] = plan.index.created_by;
  report["dataset_uuid"] = plan.index.uuid;
  report["source"] = report_field(first, "source", json::value_t::string, "");
  report["records"] = result.records;
  report["samples"] = result.samples;
  report["shards"] = result.shards;
  report["ignored_files"] = report_field(first, "ignored_files", json::value_t::number_unsigned, 0);
  json skipped = json::array();
  json left_out = json::array();
  json warnings = json::array();
  json parts = json::array();
  double seconds = 0;
  for (const PartDataset& part : plan.parts) {
    const json part_report = json::parse(part.report);
    for (const json& s :
         report_field(part_report, "skipped", json::value_t::array, json::array())) {
      skipped.push_back(s);
    }
    for (const json& o :
         report_field(part_report, "objects_left_out", json::value_t::array, json::array())) {
      left_out.push_back(o);
    }
    for (const json& w :
         report_field(part_report, "warnings", json::value_t::array, json::array())) {
      if (w.is_string()) {
        warnings.push_back("part " + part_name(part.record.part) + ": " + w.get<std::string>());
      }
    }
    const json timings =
        report_field(part_report, "timings", json::value_t::object, json::object());
    const double part_s =
        report_field(timings, "total_s", json::value_t::number_float, 0.0).get<double>();
    seconds += part_s;
    parts.push_back({{"part", part_name(part.record.part)},
                     {"records", part.index.num_records()},
                     {"samples", part.index.num_samples()},
                     {"skipped", part.skipped},
                     {"total_s", part_s}});
  }
  report["skipped"] = std::move(skipped);
  if (first.contains("objects_left_out")) {
    // Sorted by path, as a whole conversion lists them.
    const auto path = [](const json& entry) {
      const auto found = entry.is_object() ? entry.find("path") : entry.end();
      return found != entry.end() && found->is_string() ? found->get<std::string>() : std::string();
    };
    std::stable_sort(left_out.begin(), left_out.end(),
                     [&](const json& a, const json& b) { return path(a) < path(b); });
    report["objects_left_out"] = std::move(left_out);
  }
  if (!warnings.empty()) report["warnings"] = std::move(warnings);
  report["max_skipped"] = report_field(first, "max_skipped", json::value_t::string, "");
  report["parts"] = std::move(parts);
  report["timings"] = {{"parts_total_s", seconds}, {"merge_s", result.seconds}};
  json options = first.value("options", json::object());
  report["options"] = std::move(options);
  write_file_atomic(out / format::kReportFile,
                    report.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

// After index.h5: the parts' folders, holding only their index, splits and
// report now. Returns what is left in them: files no conversion wrote, which
// are not merge's to remove.
std::vector<std::string> remove_parts(const fs::path& out) {
  const fs::path parts = out / kPartsFolder;
  std::vector<std::string> left;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(parts, ec)) {
    for (const char* name : {format::kIndexFile, format::kSplitsFile, format::kReportFile}) {
      fs::remove(entry.path() / name, ec);
    }
    fs::remove(entry.path(), ec);  // only if empty: nothing else is ours to remove
    const fs::file_status kept = fs::symlink_status(entry.path(), ec);
    if (!fs::exists(kept)) continue;
    if (!fs::is_directory(kept)) {
      left.push_back(entry.path().string());
      continue;
    }
    for (const fs::directory_entry& stray : fs::directory_iterator(entry.path(), ec)) {
      left.push_back(stray.path().string());
    }
  }
  fs::remove(parts, ec);
  fs::remove(out / kMergeJournalFile, ec);
  fsync_path(out);
  std::sort(left.begin(), left.end());
  return left;
}

// OUT holds a dataset that a merge made: its index.h5, and a report.json
// that lists the parts it was merged from.
bool merged_already(const fs::path& out) {
  if (!path_exists(out / format::kIndexFile)) return false;
  std::vector<uint8_t> bytes;
  if (!read_file(out / format::kReportFile, bytes).empty()) return false;
  const json report = json::parse(bytes.begin(), bytes.end(), nullptr, false);
  return report.is_object() && report.contains("parts");
}

// How many parts OUT/report.json, which a merge writes before index.h5, says
// were merged; 0 where it does not say.
uint32_t parts_in_report(const fs::path& out) {
  std::vector<uint8_t> bytes;
  if (!read_file(out / format::kReportFile, bytes).empty()) return 0;
  const json report = json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (!report.is_object() || !report.contains("parts") || !report["parts"].is_array()) return 0;
  return static_cast<uint32_t>(report["parts"].size());
}

// Refuses an OUT holding anything but the parts (and what a merge that was
// interrupted left: its journal, shards and temporary files).
void check_output(const fs::path& out, bool resuming) {
  for (const fs::directory_entry& entry : fs::directory_iterator(out)) {
    const std::string name = entry.path().filename().string();
    // A temporary file is what a merge killed while writing it left.
    if (name == kPartsFolder || name == kMergeJournalFile || name.ends_with(format::kTmpSuffix)) {
      continue;
    }
    if (resuming && (format::is_shard_file_name(name) || name == format::kReportFile ||
                     name == format::kSplitsFile)) {
      continue;
    }
    throw UsageError(out.string() + ": holds " + name +
                     " besides the parts; merge writes only into an OUT that holds nothing but "
                     "its parts folder");
  }
}

// The merge's steps after its journal: the shards moved into place, the
// report, index.h5 (which makes the dataset complete) and the parts' folders
// removed.
void finish_merge(const fs::path& out, MergePlan& plan, bool journaled,
                  std::chrono::steady_clock::time_point start, MergeResult& result) {
  for (const ShardMove& move : plan.moves) move_shard(out, move);
  result.parts = static_cast<uint32_t>(plan.parts.size());
  result.records = plan.index.num_records();
  result.samples = plan.index.num_samples();
  result.shards = plan.index.num_shards();
  result.uuid = plan.index.uuid;
  result.resumed = journaled;
  for (const PartDataset& part : plan.parts) {
    result.skipped += part.skipped;
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  write_merged_report(out, plan, result);
  write_index(out, plan.index);  // last: its presence makes the dataset complete
  crash_point("merge-index-committed");
  plan.locks.clear();
  result.left_behind = remove_parts(out);
}

}  // namespace

std::string parts_merged_into(const fs::path& out, const std::string& uuid) {
  if (path_exists(out / kMergeJournalFile)) {
    std::vector<uint8_t> bytes;
    if (!read_file(out / kMergeJournalFile, bytes).empty()) return "";
    const json journal = json::parse(bytes.begin(), bytes.end(), nullptr, false);
    const auto named = journal.is_object() ? journal.find("dataset_uuid") : journal.end();
    if (named == journal.end() || !named->is_string() || named->get<std::string>() != uuid) {
      return "";
    }
    return "the parts are being merged into " + out.string() + " (" + kMergeJournalFile +
           "): nothing to convert; merge() finishes the merge";
  }
  if (!path_exists(out / format::kIndexFile)) return "";
  std::string held;
  try {
    held = h5::File::open_read(out / format::kIndexFile).read_string_attr("/", format::kAttrUuid);
  } catch (const Error& e) {
    held = std::string("unreadable: ") + e.what();
  }
  if (held != uuid) {
    // No part can be merged into an OUT that holds a dataset: refused before
    // anything is converted (a job run again after the dataset grew, say).
    throw UsageError((out / format::kIndexFile).string() + ": " + out.string() +
                     " holds a dataset of another conversion (dataset " + held + ", this one " +
                     uuid +
                     "; its inputs or options changed since, or it was converted in another number "
                     "of parts?), so no part of this one can be merged there: convert into "
                     "another OUT, or replace it (ConvertOptions::overwrite)");
  }
  return "the parts are merged into " + out.string() + " already: nothing to convert";
}

namespace {

// What discard_merged_dataset() removes from OUT: the dataset's files, and
// the folders of parts of a conversion into another number of parts.
struct Discarded {
  std::vector<fs::path> files;
  std::vector<fs::path> other_parts;
  bool empty() const { return files.empty() && other_parts.empty(); }
};

Discarded dataset_to_discard(const fs::path& out, uint32_t parts) {
  Discarded found;
  for (const fs::directory_entry& entry : fs::directory_iterator(out)) {
    const std::string name = entry.path().filename().string();
    if (name == kPartsFolder) continue;
    if (!is_dataset_file_name(name) || !entry.is_regular_file() || entry.is_symlink()) {
      throw UsageError(out.string() + ": holds " + name +
                       ", which imgpack did not write, so the dataset there is not replaced");
    }
    found.files.push_back(entry.path());
  }
  // Parts of a conversion into another number of parts, which no merge of
  // this one could take.
  if (fs::is_directory(out / kPartsFolder)) {
    for (const fs::directory_entry& entry : fs::directory_iterator(out / kPartsFolder)) {
      const std::optional<ConvertPart> part = parse_part_name(entry.path().filename().string());
      if (part && part->count != parts && entry.is_directory() && !entry.is_symlink()) {
        found.other_parts.push_back(entry.path());
      }
    }
  }
  return found;
}

}  // namespace

bool discard_merged_dataset(const fs::path& out, uint32_t parts) {
  if (!fs::is_directory(out)) return false;
  // Nothing to remove (the first of the parts run again removed it): no
  // lock, which would wait for the parts converting now.
  if (dataset_to_discard(out, parts).empty()) return false;
  const DirectoryLock lock(out);
  // Everything checked before anything is removed.
  const Discarded found = dataset_to_discard(out, parts);
  if (found.empty()) return false;
  const auto remove = [](const fs::path& path) {
    std::error_code ec;
    fs::remove_all(path, ec);
    if (ec) throw file_error(path, "cannot remove: " + ec.message());
  };
  remove(out / format::kIndexFile);  // first: without it no reader accepts OUT
  fsync_path(out);
  for (const fs::path& path : found.files) remove(path);
  for (const fs::path& path : found.other_parts) remove(path);
  fsync_path(out);
  return true;
}

MergeResult merge(const MergeOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const fs::path& out = options.out;
  if (!fs::is_directory(out)) {
    std::error_code ec;
    throw UsageError(out.string() + (fs::exists(fs::symlink_status(out, ec))
                                         ? ": not a directory"
                                         : ": no such directory"));
  }
  std::optional<DirectoryLock> lock = DirectoryLock::try_acquire(out);
  if (!lock) {
    throw UsageError(out.string() +
                     ": another merge, conversion (or a part of one) or split is using it now");
  }
  MergeResult result;
  if (!fs::is_directory(out / kPartsFolder) && !path_exists(out / kMergeJournalFile)) {
    // A merge stopped after its last step (the journal's removal) left a
    // finished dataset: running it again has nothing left to do.
    if (merged_already(out)) {
      const DatasetIndex done = read_index(out);
      result.records = done.num_records();
      result.samples = done.num_samples();
      result.shards = done.num_shards();
      result.uuid = done.uuid;
      result.already_merged = true;
      return result;
    }
    throw UsageError(out.string() + ": no parts to merge (" + (out / kPartsFolder).string() +
                     " does not exist; ConvertOptions::part I/N converts part I there)");
  }
  const bool journaled = path_exists(out / kMergeJournalFile);
  if (journaled && path_exists(out / format::kIndexFile)) {
    // Stopped after index.h5: only the parts' folders are left to remove.
    const DatasetIndex done = read_index(out);
    result.left_behind = remove_parts(out);
    result.parts = parts_in_report(out);
    result.records = done.num_records();
    result.samples = done.num_samples();
    result.shards = done.num_shards();
    result.uuid = done.uuid;
    result.resumed = true;
    return result;
  }
  if (path_exists(out / format::kIndexFile)) {
    throw UsageError(out.string() + ": already holds a dataset (" + format::kIndexFile +
                     "); merge joins parts into an OUT without one");
  }
  if (journaled && !fs::is_directory(out / kPartsFolder)) {
    throw UsageError((out / kMergeJournalFile).string() + ": a merge under way, but " +
                     (out / kPartsFolder).string() +
                     " is gone, so it cannot be finished; convert again into another OUT, or "
                     "replace this one (ConvertOptions::overwrite)");
  }
  check_output(out, journaled);
  MergePlan plan = plan_merge(out);
  // Before anything moves: a split the merged samples cannot make is refused here.
  compute_splits(plan.index, result.split_warnings);
  const std::string journal = merge_journal_text(plan);
  if (journaled) {
    std::vector<uint8_t> bytes;
    const std::string problem = read_file(out / kMergeJournalFile, bytes);
    if (!problem.empty() || std::string(bytes.begin(), bytes.end()) != journal) {
      throw UsageError((out / kMergeJournalFile).string() +
                       ": an interrupted merge of other parts; its shards are already in " +
                       out.string() + ", so these parts cannot be merged there");
    }
  }
  // Shards move by rename, which cannot cross file systems: a part folder
  // that is a link to another one would fail after the first moves.
  struct stat out_stat {};
  if (::stat(out.c_str(), &out_stat) != 0) throw system_error(out, "cannot stat", errno);
  for (const PartDataset& part : plan.parts) {
    struct stat part_stat {};
    if (::stat(part.dir.c_str(), &part_stat) != 0) {
      throw system_error(part.dir, "cannot stat", errno);
    }
    if (part_stat.st_dev != out_stat.st_dev) {
      throw UsageError(part.dir.string() + ": on another file system than " + out.string() +
                       "; merge moves the parts' shards into it by rename: move the part onto " +
                       out.string() + "'s file system first");
    }
  }
  // Every shard, pixels included, before the first is renumbered: merging
  // rewrites what would tell a damaged shard from a good one.
  check_adopted_shards(out, plan, journaled, options.threads);
  if (!journaled) write_file_atomic(out / kMergeJournalFile, journal);
  try {
    finish_merge(out, plan, journaled, start, result);
  } catch (const Error&) {
    // The journal holds the plan and the shards moved so far: the same
    // merge again continues from there.
    rethrow_with_note("the merge is journaled in " + (out / kMergeJournalFile).string() +
                      ": run it again once that is fixed");
  }
  return result;
}

std::string check_part_shards(const fs::path& dir) {
  const DatasetIndex index = read_index(dir);
  if (!is_conversion_part(index.convert_options)) return "";
  try {
    return foreign_part_shard(dir, index, part_name(read_part_record(index.convert_options).part));
  } catch (const nlohmann::json::exception& e) {
    throw file_error(dir / format::kIndexFile,
                     std::string("convert_options: a part record that does not read: ") + e.what());
  }
}

}  // namespace imgpack
