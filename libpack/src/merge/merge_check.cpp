#include "merge/merge_check.hpp"

#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "files.hpp"
#include "h5.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "record_check.hpp"
#include "shard_check.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

bool path_exists(const fs::path& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

// A problem with one shard: which move it is (to name its part), and what.
struct ShardProblem {
  std::size_t move = 0;
  std::string message;  // names the file
};

// Clears HDF5's "open for writing" mark that a merge killed while it
// renumbered the shard leaves in its superblock, as h5clear does; nothing
// else in the file changes. Best effort: a shard that still does not open is
// reported by read_shard().
void clear_write_mark(const fs::path& path) {
  try {
    h5::File::open_write_clearing_mark(path);
  } catch (const Error&) {
    return;  // read_shard() names the file and what is wrong with it
  }
}

// The structure and columns of the shard of `move`, found where the merge
// has left it; its records for the checksum pass go to `records`.
void check_structure(const fs::path& out, const MergePlan& plan, const ShardMove& move,
                     bool resuming, std::vector<ShardRecords>& records) {
  const fs::path from = out / move.from;
  const fs::path to = out / move.to;
  const bool moved = resuming && !path_exists(from) && path_exists(to);
  const fs::path& path = moved ? to : from;
  if (!moved && !path_exists(from)) {
    throw file_error(from,
                     std::string("missing (listed in the part's ") + format::kIndexFile + ")");
  }
  const DatasetIndex& index = plan.parts[move.part].index;
  ShardExpectation expected{index.uuid,
                            moved ? move.shard : move.part_shard,
                            move.samples.size(),
                            index.height,
                            index.width,
                            index.channels,
                            moved ? std::string("the merge journal") : "the part's index.h5",
                            index.masks,
                            std::nullopt};
  expected.boxes = index.boxes;
  expected.box_classes = index.box_class_names.size();
  expected.keypoints = index.num_keypoints();
  expected.part = part_name(plan.parts[move.part].record.part);
  if (resuming && !moved) {
    expected.or_shard = move.shard;
    clear_write_mark(from);
  }
  const FileDescriptor fd = open_for_reading(path);
  ShardContents contents = read_shard(path, expected, fd.size(path));
  h5::File::open_read(path).check_metadata();  // as verify does: what h5py reads too
  // A merge killed while it renumbered this shard may leave its /sample
  // column renumbered and its shard_index attribute not, or the other way
  // round (HDF5 writes them back in no set order): on a rerun the column
  // itself says which numbering it holds.
  auto holds = [&](const std::vector<int64_t>& ids) {
    for (std::size_t row = 0; row < ids.size(); ++row) {
      if (contents.samples[row] != ids[row]) return false;
    }
    return true;
  };
  const bool renumbered = moved || (resuming ? holds(move.samples) && !holds(move.part_samples)
                                             : contents.shard != move.part_shard);
  const std::vector<int64_t>& samples = renumbered ? move.samples : move.part_samples;
  for (std::size_t row = 0; row < samples.size(); ++row) {
    if (contents.samples[row] != samples[row] || contents.variants[row] != move.variants[row]) {
      throw file_error(path, "row " + std::to_string(row) + " holds sample " +
                                 std::to_string(contents.samples[row]) + " variant " +
                                 std::to_string(contents.variants[row]) + ", " +
                                 expected.expected_by + " says sample " +
                                 std::to_string(samples[row]) + " variant " +
                                 std::to_string(move.variants[row]));
    }
    if (contents.labels[row] != move.labels[row]) {
      throw file_error(path, "row " + std::to_string(row) + " has label " +
                                 std::to_string(contents.labels[row]) + ", " +
                                 expected.expected_by + " gives its sample label " +
                                 std::to_string(move.labels[row]));
    }
  }
  records.push_back({path, fd.identity(path), contents.images_offset,
                     std::move(contents.checksums.values()), index.mask_bytes(),
                     contents.masks_offset, std::move(contents.mask_checksums.values())});
}

std::string part_label(const MergePlan& plan, std::size_t part) {
  return "part " + part_name(plan.parts[part].record.part);
}

// A shard merge would change through a link, or could not change, found
// before anything is: merge renumbers each shard in place and renames it out
// of its part's folder. A symbolic link would take the file it names into
// OUT as a link, a hard link would carry the renumbering into the other
// names (a backup made with `cp -al`), and a shard or folder that cannot be
// written would stop the merge half done.
void check_changeable(const fs::path& out, const MergePlan& plan, const ShardMove& move) {
  const fs::path from = out / move.from;
  struct stat st {};
  if (::lstat(from.c_str(), &st) != 0) return;  // moved already, or missing: checked after
  const std::string part = part_label(plan, move.part);
  if (S_ISLNK(st.st_mode)) {
    throw UsageError(from.string() + " (" + part +
                     ") is a symbolic link; merge renumbers and renames the shards it adopts, "
                     "which would change the file it names: put the shard itself there");
  }
  if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
    throw UsageError(from.string() + " (" + part + ") has " + std::to_string(st.st_nlink) +
                     " hard links; merge renumbers the shards it adopts in place, which every "
                     "other link would show (a copy made with cp -al?): copy the part's files "
                     "instead of linking them");
  }
  if (::access(from.c_str(), W_OK) != 0) {
    throw system_error(from, "cannot be written, which merging it needs (" + part + ")", errno);
  }
  if (::access(from.parent_path().c_str(), W_OK) != 0) {
    throw system_error(from.parent_path(),
                       "cannot be written, which moving its shards into " + out.string() + " needs",
                       errno);
  }
}

}  // namespace

void check_adopted_shards(const fs::path& out, const MergePlan& plan, bool resuming,
                          unsigned threads) {
  for (const ShardMove& move : plan.moves) check_changeable(out, plan, move);
  if (::access(out.c_str(), W_OK) != 0) {
    throw system_error(out, "cannot be written, which merging into it needs", errno);
  }
  std::vector<ShardProblem> problems;
  std::vector<ShardRecords> records;
  std::vector<std::size_t> record_move;  // the move of each entry of `records`
  for (std::size_t m = 0; m < plan.moves.size(); ++m) {
    try {
      check_structure(out, plan, plan.moves[m], resuming, records);
      record_move.push_back(m);
    } catch (const ResourceShortage&) {
      throw;  // the process ran short, no fault of the part
    } catch (const Error& e) {
      problems.push_back({m, e.what()});
    }
  }

  VerifyOptions options;
  options.threads = threads;
  const RecordCheck check = check_records(records, plan.index.record_bytes(), options);
  for (const UnreadableShard& u : check.unreadable) {
    problems.push_back({record_move[u.shard], u.message});
  }
  for (const MismatchedRow& m : check.mismatched) {
    const ShardMove& move = plan.moves[record_move[m.shard]];
    const std::string path = plan.parts[move.part].index.sample_path.at(
        static_cast<std::size_t>(move.part_samples[m.row]));
    problems.push_back(
        {record_move[m.shard],
         file_error(records[m.shard].path, std::string(m.mask ? "the mask of " : "") + "row " +
                                               std::to_string(m.row) + " (" + path + " variant " +
                                               std::to_string(move.variants[m.row]) +
                                               ") does not match its stored checksum")
             .what()});
  }
  if (problems.empty()) return;

  std::stable_sort(problems.begin(), problems.end(),
                   [](const ShardProblem& a, const ShardProblem& b) { return a.move < b.move; });
  const ShardProblem& first = problems.front();
  const PartDataset& part = plan.parts[plan.moves[first.move].part];
  std::string problem = first.message;
  if (problems.size() > 1) {
    problem += " (and " + std::to_string(problems.size() - 1) + " more problem" +
               (problems.size() > 2 ? "s" : "") + "; verify_dataset() on a part lists its own)";
  }
  if (!resuming) throw damaged_part(part.dir, part.record.part, problem);
  throw UsageError(part_label(plan, plan.moves[first.move].part) + " (" + part.dir.string() +
                   ") is damaged: " + problem + "; the interrupted merge in " + out.string() +
                   " cannot finish with it: convert the dataset again");
}

}  // namespace imgpack
