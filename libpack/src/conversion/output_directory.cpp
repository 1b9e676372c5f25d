#include "conversion/output_directory.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>

#include "conversion/conversion_parts.hpp"
#include "conversion/output_files.hpp"
#include "files.hpp"
#include "h5.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/verify.hpp"
#include "record_check.hpp"
#include "shard_check.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

bool is_inside(const fs::path& child, const fs::path& parent) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(child, ec);
  fs::path p = fs::weakly_canonical(parent, ec);
  auto [pi, ci] = std::mismatch(p.begin(), p.end(), c.begin(), c.end());
  return pi == p.end();
}

void remove_file(const fs::path& path) {
  std::error_code ec;
  fs::remove(path, ec);
  if (ec) throw file_error(path, "cannot remove: " + ec.message());
}

// What OUT holds, all of which imgpack must have written: a dataset's
// files, and the part folders of a conversion in parts (ConvertOptions::part).
struct OutputContents {
  std::vector<fs::path> files;         // sorted
  std::vector<fs::path> part_folders;  // OUT/parts/I-of-N, each holding only dataset files
  bool parts = false;                  // OUT/parts exists
  bool merging = false;                // OUT/merge.journal exists: a merge under way
};

UsageError not_written_by_imgpack(const fs::path& out, const fs::path& what) {
  // Named as it lies in OUT (a link is not followed to name it).
  return UsageError(out.string() + ": not empty and holds " +
                    what.lexically_relative(out).string() +
                    ", which imgpack did not write; choose an empty or new directory");
}

// Each entry of `dir`, in no particular order. Throws UsageError naming
// `dir` where it cannot be listed.
std::vector<fs::directory_entry> entries_of(const fs::path& dir) {
  std::vector<fs::directory_entry> entries;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) entries.push_back(entry);
  if (ec) throw UsageError(dir.string() + ": cannot list directory: " + ec.message());
  return entries;
}

OutputContents list_output(const fs::path& out) {
  OutputContents contents;
  for (const fs::directory_entry& entry : entries_of(out)) {
    const std::string name = entry.path().filename().string();
    if (name == kPartsFolder && entry.is_directory() && !entry.is_symlink()) {
      contents.parts = true;
      for (const fs::directory_entry& part : entries_of(entry.path())) {
        const std::string part_name = part.path().filename().string();
        if (!parse_part_name(part_name) || !part.is_directory() || part.is_symlink()) {
          throw not_written_by_imgpack(out, part.path());
        }
        for (const fs::directory_entry& file : entries_of(part.path())) {
          if (!is_dataset_file_name(file.path().filename().string()) || file.is_symlink() ||
              !file.is_regular_file()) {
            throw not_written_by_imgpack(out, file.path());
          }
        }
        contents.part_folders.push_back(part.path());
      }
      continue;
    }
    if (!is_dataset_file_name(name)) throw not_written_by_imgpack(out, entry.path());
    contents.merging = contents.merging || name == kMergeJournalFile;
    contents.files.push_back(entry.path());
  }
  std::sort(contents.files.begin(), contents.files.end());
  std::sort(contents.part_folders.begin(), contents.part_folders.end());
  return contents;
}

// Locks every part folder of `contents`: a part being converted into one
// now is a UsageError, before anything in OUT is removed.
std::vector<DirectoryLock> lock_part_folders(const OutputContents& contents) {
  std::vector<DirectoryLock> locks;
  for (const fs::path& folder : contents.part_folders) {
    std::optional<DirectoryLock> lock = DirectoryLock::try_acquire(folder);
    if (!lock) {
      throw UsageError(folder.string() +
                       ": a part is being converted there now; wait for it to finish, then "
                       "run this conversion again");
    }
    locks.push_back(std::move(*lock));
  }
  return locks;
}

// Removes OUT/parts and the part folders in it (locked: lock_part_folders()).
void remove_part_folders(const fs::path& out, const OutputContents& contents) {
  for (const fs::path& folder : contents.part_folders) {
    std::error_code ec;
    fs::remove_all(folder, ec);
    if (ec) throw file_error(folder, "cannot remove: " + ec.message());
  }
  remove_file(out / kPartsFolder);
}

// Whether the journal's account of `entry` is possible as the next shard
// after `kept` shards ending at `position` of the write order: "" or the problem.
std::string journal_problem(const JournalShard& entry, std::size_t kept, std::size_t position,
                            const ConversionPlan& plan, uint32_t variants) {
  if (entry.shard != kept || entry.file != format::shard_file_name(entry.shard)) {
    return "is out of sequence in the journal";
  }
  if (entry.next_position < position || entry.next_position > plan.order.size()) {
    return "has an impossible position in the journal";
  }
  for (std::size_t i = 0; i < entry.skipped.size(); ++i) {
    const uint64_t p = entry.skipped[i].first;
    if (p < position || p >= entry.next_position || (i > 0 && p <= entry.skipped[i - 1].first)) {
      return "has a skipped input out of place in the journal";
    }
  }
  const uint64_t converted = entry.next_position - position - entry.skipped.size();
  if (entry.records != converted * variants) return "disagrees with the journal";
  if (!entry.inputs) return "has no fingerprint of its inputs in the journal";
  if (*entry.inputs != inputs_fingerprint(plan, position, entry.next_position)) {
    return "was made from inputs that changed since (an input's size, modification or "
           "status-change time differs)";
  }
  return "";
}

// The shards of the journal that a resumed run keeps: the longest prefix that
// is whole, continues the sample numbering and matches its checksums.
ResumePoint keep_verified_shards(const ConvertOptions& options, const ConversionPlan& plan,
                                 const JournalState& journal) {
  const uint32_t variants = options.variants;
  const RecordShape& shape = plan.shape;
  std::vector<KeptShard> whole;
  std::vector<ShardRecords> records;  // of each shard in `whole`
  std::string problem;

  // Structure and numbering, shard by shard, up to the first problem.
  int64_t next_sample = 0;
  std::size_t position = 0;
  for (const JournalShard& entry : journal.shards) {
    const fs::path path = options.out / entry.file;
    problem = journal_problem(entry, whole.size(), position, plan, variants);
    if (!problem.empty()) {
      problem = file_error(path, problem).what();
      break;
    }
    try {
      const FileDescriptor fd = open_for_reading(path);
      ShardExpectation expected{plan.uuid,
                                entry.shard,
                                entry.records,
                                shape.height,
                                shape.width,
                                shape.channels,
                                "the conversion being resumed",
                                options.has_masks(),
                                std::nullopt};
      expected.boxes = plan.list.boxes;
      expected.box_classes = plan.list.box_class_names.size();
      expected.keypoints = plan.list.keypoint_names.size();
      if (options.part) expected.part = part_name(*options.part);
      ShardContents contents = read_shard(path, expected, fd.size(path));
      h5::File::open_read(path).check_metadata();  // as verify and merge do
      // Records must be the variants of the next samples, in order, each
      // with the label of the input it was converted from (the index made
      // on resuming gives the samples the plan's labels, not the shard's).
      for (uint64_t row = 0; row < entry.records; ++row) {
        if (contents.samples[row] != next_sample + static_cast<int64_t>(row / variants) ||
            contents.variants[row] != row % variants) {
          throw file_error(
              path, "row " + std::to_string(row) + " does not continue the sample numbering");
        }
      }
      uint64_t row = 0;
      auto skipped = entry.skipped.begin();
      for (uint64_t p = position; p < entry.next_position; ++p) {
        if (skipped != entry.skipped.end() && skipped->first == p) {
          ++skipped;
          continue;
        }
        const SourceSample& input = plan.list.samples[plan.order[p]];
        for (uint32_t v = 0; v < variants; ++v, ++row) {
          if (contents.labels[row] != input.label) {
            throw file_error(path, "row " + std::to_string(row) + " has label " +
                                       std::to_string(contents.labels[row]) + ", but its input " +
                                       input.path + " has label " + std::to_string(input.label));
          }
        }
      }
      records.push_back({path, fd.identity(path), contents.images_offset,
                         std::move(contents.checksums.values()),
                         options.has_masks() ? shape.pixels() : 0, contents.masks_offset,
                         std::move(contents.mask_checksums.values())});
      whole.push_back(
          {entry, std::move(contents.samples.values()), std::move(contents.variants.values())});
    } catch (const Error& e) {
      problem = e.what();
      break;
    }
    next_sample += static_cast<int64_t>(entry.records / variants);
    position = entry.next_position;
  }

  // Pixels: the records of every whole shard against their checksums, at once.
  VerifyOptions check_options;
  check_options.threads = options.threads;
  const RecordCheck check = check_records(records, shape.bytes(), check_options);
  std::size_t keep = whole.size();
  if (!check.unreadable.empty()) {
    keep = check.unreadable.front().shard;
    problem = check.unreadable.front().message;
  }
  if (!check.mismatched.empty() && check.mismatched.front().shard < keep) {
    const MismatchedRow& bad = check.mismatched.front();
    keep = bad.shard;
    problem = file_error(records[bad.shard].path, std::string(bad.mask ? "the mask of " : "") +
                                                      "record " + std::to_string(bad.row) +
                                                      " does not match its checksum")
                  .what();
  }

  ResumePoint point;
  if (!problem.empty()) point.notes.push_back(problem + "; it is converted again");
  whole.resize(keep);
  point.shards = std::move(whole);
  if (keep > 0) point.next_position = point.shards.back().journal.next_position;
  return point;
}

}  // namespace

bool output_is_complete(const ConvertOptions& options, const ConversionPlan& plan) {
  std::error_code ec;
  if (!fs::exists(options.out / format::kIndexFile, ec)) return false;
  try {
    h5::File index = h5::File::open_read(options.out / format::kIndexFile);
    return index.read_string_attr("/", format::kAttrUuid) == plan.uuid;
  } catch (const Error&) {
    return false;
  }
}

std::string discard_if_damaged(const ConvertOptions& options) {
  VerifyOptions verify;
  verify.threads = options.threads;
  const VerifyReport report = verify_dataset(options.out, verify);
  std::string problem;
  if (report.ok()) {
    // verify_dataset() knows no parts: a shard copied from another part of
    // the conversion, which can agree with this part's index in all it
    // checks, names the part that wrote it.
    if (options.part) {
      problem = foreign_part_shard(options.out, read_index(options.out), part_name(*options.part));
    }
    if (problem.empty()) return "";
  } else if (!report.errors.empty()) {
    problem = report.errors.front();
  } else {
    const BadRecord& bad = report.bad_records.front();
    problem =
        file_error(options.out / bad.shard_file,
                   std::string(bad.mask ? "the mask of " : "") + "row " + std::to_string(bad.row) +
                       " (" + bad.sample_path + ") does not match its stored checksum")
            .what();
  }
  const std::size_t problems = report.errors.size() + report.bad_records.size();
  if (problems > 1) problem += " (and " + std::to_string(problems - 1) + " more problems)";
  remove_file(options.out / format::kIndexFile);
  fsync_path(options.out);
  return problem +
         "; the complete dataset there was damaged since it was converted, so it is "
         "converted again";
}

std::string discard_if_report_unreadable(const ConvertOptions& options) {
  const fs::path report = options.out / format::kReportFile;
  std::vector<uint8_t> bytes;
  std::string problem = read_file(report, bytes);
  if (problem.empty()) {
    const nlohmann::json parsed = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
    if (parsed.is_object() && parsed.contains("skipped") && parsed["skipped"].is_array()) return "";
    problem = "not a conversion's report (no list of skipped inputs)";
  }
  remove_file(options.out / format::kIndexFile);
  fsync_path(options.out);
  return report.string() + ": " + problem +
         "; merge reads a part's skipped inputs there, so the part is converted again";
}

void refuse_output_among_inputs(const ConvertOptions& options) {
  const fs::path& out = options.out;
  if (is_inside(out, options.src)) {
    throw UsageError(out.string() + ": the output directory must not be SRC or inside it (" +
                     options.src.string() + "), which imgpack never modifies");
  }
  if (!options.masks.dir.empty() && is_inside(out, options.masks.dir)) {
    throw UsageError(out.string() +
                     ": the output directory must not be the mask folder or inside it (" +
                     options.masks.dir.string() + "), which imgpack never modifies");
  }
}

void make_output_directory(const fs::path& out) {
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec)) {
    throw UsageError(out.string() + ": exists and is not a directory");
  }
  if (!fs::exists(out, ec) && fs::is_symlink(fs::symlink_status(out, ec))) {
    throw UsageError(out.string() + ": a link to " + fs::read_symlink(out, ec).string() +
                     " that leads to no directory; create the directory it names, or give "
                     "another OUT");
  }
  if (!fs::exists(out, ec)) {
    fs::create_directories(out, ec);
    if (ec) {
      const std::string message = out.string() + ": cannot create directory: " + ec.message();
      // A path that cannot name a directory is the request's fault; a
      // read-only, full or failing file system is the machine's (exit 1).
      if (ec == std::errc::not_a_directory || ec == std::errc::filename_too_long) {
        throw UsageError(message);
      }
      throw Error(message);
    }
  }
}

DirectoryLock lock_output(const ConvertOptions& options) {
  const fs::path& out = options.out;
  refuse_output_among_inputs(options);
  make_output_directory(out);
  std::optional<DirectoryLock> lock = DirectoryLock::try_acquire(out);
  if (!lock) {
    throw UsageError(out.string() +
                     ": another conversion (or a split) is writing to it now; wait for it to "
                     "finish, then run this one again");
  }
  return std::move(*lock);
}

ResumePoint prepare_output(const ConvertOptions& options, const ConversionPlan& plan) {
  const fs::path& out = options.out;
  const OutputContents contents = list_output(out);
  const std::vector<fs::path>& ours = contents.files;
  if (contents.parts && contents.part_folders.empty()) {
    // An empty OUT/parts (a run stopped while removing parts) is no
    // conversion; removing an empty folder loses nothing.
    remove_file(out / kPartsFolder);
  } else if (contents.parts || contents.merging) {
    // The folders of a conversion in parts (this call converts in one
    // piece: a part's OUT is its own folder), or a merge of them under way.
    std::string held = contents.merging ? std::string("a merge under way (") + kMergeJournalFile
                                        : std::string("a conversion in parts (") + kPartsFolder;
    for (std::size_t i = 0; i < contents.part_folders.size() && !contents.merging; ++i) {
      held += (i == 0 ? "/" : ", ") + contents.part_folders[i].filename().string();
    }
    held += ")";
    if (!options.overwrite) {
      throw UsageError(out.string() + ": holds " + held +
                       (options.resume ? ", which ConvertOptions::resume cannot continue in one "
                                         "piece"
                                       : std::string()) +
                       (contents.merging ? "; merge() finishes the merge, or "
                                           "ConvertOptions::overwrite replaces it with this "
                                           "conversion"
                                         : "; merge() joins them, or ConvertOptions::overwrite "
                                           "replaces them with this conversion"));
    }
  }
  if (ours.empty() && contents.part_folders.empty()) return {};

  std::error_code ec;
  const bool complete = fs::exists(out / format::kIndexFile, ec);
  std::optional<JournalState> journal;
  std::string journal_problem;
  if (!complete && !options.overwrite) {
    try {
      journal = ConvertJournal::read(out);
    } catch (const Error& e) {
      journal_problem = e.what();
    }
  }

  if (!options.overwrite && !options.resume) {
    if (complete) {
      throw UsageError(out.string() +
                       ": already holds a dataset; ConvertOptions::overwrite replaces it");
    }
    throw UsageError(out.string() + ": holds an unfinished conversion" +
                     (journal ? " (" + std::to_string(journal->shards.size()) + " shards written)"
                              : std::string()) +
                     "; rerun the same conversion with ConvertOptions::resume to keep its "
                     "complete shards and continue, or with ConvertOptions::overwrite to start "
                     "over");
  }

  ResumePoint point;
  if (journal && journal->torn_header) {
    // A run stopped while creating its journal committed nothing.
    if (options.resume && !options.overwrite) {
      point.notes.push_back((out / kJournalFile).string() +
                            " is empty (a run stopped while creating it): starting over");
    }
    journal.reset();
  }
  if (options.resume && !options.overwrite) {
    if (complete) {
      throw UsageError(out.string() +
                       ": holds a complete dataset of another conversion (other "
                       "inputs or options); ConvertOptions::resume continues only the same "
                       "conversion, ConvertOptions::overwrite replaces it");
    }
    if (!journal_problem.empty()) {
      throw UsageError("cannot resume: " + journal_problem +
                       "; ConvertOptions::overwrite starts over");
    }
    if (journal && journal->dataset_uuid != plan.uuid) {
      throw UsageError(out.string() +
                       ": the unfinished conversion there had other inputs or "
                       "options, so its shards cannot be reused; rerun it with its original "
                       "options and ConvertOptions::resume, or with ConvertOptions::overwrite "
                       "to start over");
    }
    if (journal) point = keep_verified_shards(options, plan, *journal);
  } else {
    // --overwrite: invalidate the old dataset first; without index.h5 no
    // reader accepts it. A part converted now refuses it all, before that.
    const std::vector<DirectoryLock> locks = lock_part_folders(contents);
    remove_file(out / format::kIndexFile);
    fsync_path(out);
    if (!contents.part_folders.empty()) remove_part_folders(out, contents);
  }

  // Remove everything not kept, the journal last (a crash meanwhile leaves it
  // describing shards that are still there or are redone).
  for (const fs::path& path : ours) {
    const std::string name = path.filename().string();
    bool kept = name == kJournalFile && !point.shards.empty();
    for (const KeptShard& shard : point.shards) kept = kept || name == shard.journal.file;
    if (!kept && name != kJournalFile) remove_file(path);
  }
  if (point.shards.empty()) remove_file(out / kJournalFile);
  fsync_path(out);
  return point;
}

}  // namespace imgpack
