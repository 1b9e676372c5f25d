// Datasets that grow and shrink without a new conversion.
//
// append() converts the inputs of SRC that a dataset does not hold yet into
// new shards, with the dataset's own stored options (size, resize, colour,
// variants, augmentation, masks, boxes, seed, shard size), and commits the
// next generation of index.h5 and splits.h5: the new samples after the old
// ones (every earlier sample keeps its id), every earlier shard untouched and
// unread, every stored split extended over the new samples with its earlier
// assignments kept. remove_samples() marks samples removed: readers, splits
// and counts leave them out from the next generation on, their records stay
// in the shards until compact_dataset() rewrites those shards without them.
//
// Each change commits splits.h5, then index.h5, each by rename; a reader that
// opened the dataset before keeps its generation's view until it reopens.
// Killed at any point, the same call again gives the dataset an uninterrupted
// call gives (byte for byte, with the history's date fixed by
// SOURCE_DATE_EPOCH); nothing it leaves behind is visible to a reader.
// Neither function is thread-safe against another change of the same
// dataset: each holds the dataset directory's lock (a second one is a
// UsageError naming the directory).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "imgpack/convert.hpp"
#include "imgpack/convert_options.hpp"

namespace imgpack {

struct AppendOptions {
  std::filesystem::path src;      // the input root, scanned as the conversion did
  std::filesystem::path dataset;  // the dataset to append to
  // Where the inputs are described, for a dataset converted from such files:
  // a newer CSV list (the same columns), another mask folder, a newer COCO
  // file. Empty: the file the conversion read (its options name it).
  std::filesystem::path csv;
  std::filesystem::path masks;
  std::filesystem::path coco;
  // For a dataset converted from a folder: a text file naming the inputs to
  // consider, one path per line, relative to `src` or absolute inside it (as
  // `find . -type f -newer STAMP` prints them from inside `src`). Only these
  // are stat-ed and `src` is not walked: an append of a few files to a large
  // dataset then costs a few stat calls, not one per file it holds. Listed
  // inputs the dataset holds unchanged are passed over; changed ones are
  // treated as a walk would find them. Inputs not listed are not looked at,
  // so changes to them go unnoticed. A list line outside `src`, a path
  // listed twice or an unreadable list is a UsageError naming the list and
  // line; a dataset converted from a CSV list takes its new rows by `csv`.
  // Empty: `src` is walked.
  std::filesystem::path files;
  unsigned threads = 0;  // 0 = the cores the process may run on
  OnError on_error = OnError::skip;
  SkipLimit max_skipped;
  // An input whose path the dataset holds but whose size or modification
  // time differs from the conversion's is an error (UsageError naming it);
  // with replace_changed its old sample is removed and the input added anew.
  bool replace_changed = false;
  // New inputs the dataset's group regex does not match join no group, as
  // ScanOptions::group_missing_ok says for a conversion; without it they
  // stop the append (a UsageError naming them).
  bool group_missing_ok = false;
};

struct AppendResult {
  // The dataset's generation afterwards (unchanged when nothing was added).
  uint64_t generation = 0;
  uint64_t inputs = 0;        // usable inputs found in SRC
  uint64_t ignored = 0;       // files found that are not images (and a list's folders)
  uint64_t held = 0;          // of them, already in the dataset, unchanged
  uint64_t held_removed = 0;  // of those, removed from it (an append leaves them out)
  uint64_t added = 0;         // samples added
  uint64_t replaced = 0;      // changed inputs whose old sample was removed (replace_changed)
  uint64_t records = 0;       // records added
  uint64_t shards = 0;        // shards added
  uint64_t samples = 0;       // samples of the dataset afterwards, removed ones included
  std::vector<SkippedInput> skipped;     // inputs that could not be used, and why
  std::vector<std::string> new_classes;  // class names the dataset did not have
  std::vector<std::string> notes;        // e.g. stamps unknown for old samples
  // What the new inputs hold that converts but is likely not what was meant
  // (masks saved as JPEG), as ConvertResult::input_warnings.
  std::vector<std::string> input_warnings;
  std::vector<std::string> split_warnings;
  // Where the time went: reading the index and scanning SRC (plan_s),
  // converting the new inputs (convert_s), extending the splits and writing
  // splits.h5 and index.h5 (commit_s); seconds = all of it.
  double plan_s = 0;
  double convert_s = 0;
  double commit_s = 0;
  double seconds = 0;
};

// Appends the new inputs of options.src to options.dataset. Throws
// UsageError for a request the dataset cannot take (not an imgpack dataset,
// index format 1, a part folder, inputs that changed without
// replace_changed, targets, box classes or mask classes other than the
// dataset's) and Error for failures while converting, naming the file; the
// dataset is then as it was.
AppendResult append(const AppendOptions& options, const ProgressFn& progress = {});

struct RemoveResult {
  uint64_t generation = 0;       // afterwards (unchanged when nothing was newly removed)
  uint64_t removed = 0;          // samples newly removed
  uint64_t already_removed = 0;  // listed, but removed before
  uint64_t remaining = 0;        // samples not removed afterwards
};

// Marks the samples with these paths (as index.h5 names them, relative to
// the input root) removed. `list_name` names where the paths came from in
// errors. Throws UsageError naming the list and the first path that is not a
// sample of the dataset; nothing is changed then.
RemoveResult remove_samples(const std::filesystem::path& dataset,
                            std::span<const std::string> paths, const std::string& list_name);

// A count of files and their bytes.
struct FileTally {
  uint64_t files = 0;
  uint64_t bytes = 0;
};

// The shard files in `dataset` that `index` (read from it) does not list:
// those a compaction replaced, which stay so that readers opened before
// keep working until the dataset's next change removes them, and those an
// interrupted change left. Reads only the directory listing; a file that
// goes meanwhile is not counted. Safe from any thread.
FileTally unlisted_shard_files(const std::filesystem::path& dataset, const DatasetIndex& index);

struct CompactResult {
  uint64_t generation = 0;        // afterwards (unchanged when there was nothing to drop)
  uint64_t shards_rewritten = 0;  // shards written anew (shards_moved included)
  // Of those, shards written under another place in the table: each took the
  // place of a shard that held only removed samples' records.
  uint64_t shards_moved = 0;
  uint64_t shards_dropped = 0;  // shards that held only removed samples' records
  uint64_t records_dropped = 0;
  // The shard files this compaction replaced or dropped, left in the
  // directory for readers opened before: the next change (compact again,
  // say) removes them.
  FileTally replaced;
  // Files it removed first: those an earlier compaction replaced, and what
  // an interrupted change left.
  FileTally leftovers_removed;
};

// Drops every record of a removed sample from the shards and commits the
// next generation. A shard that holds such records is written anew without
// them, as a new file under the next free shard number; a shard that holds
// nothing else leaves the table, and its place (a shard's place in the table
// is its shard_index) is taken by the table's last shard, written anew under
// that place: one shard rewritten per such hole, every other shard where it
// was. Every record carried over is checked against its checksum; the
// record table keeps its order, less the dropped records. Removed
// samples keep their rows in the sample table (ids never change) and have no
// records afterwards. The replaced shard files stay in the directory, so
// that a reader opened before keeps working, until the next change of the
// dataset removes them. Throws UsageError for a dataset it cannot change,
// Error naming the shard for a damaged record (nothing is committed then).
CompactResult compact_dataset(const std::filesystem::path& dataset);

// The paths listed in `file`: a CSV file with a header naming `column`, or,
// when `column` is empty, a text file of one path per line (blank lines and
// lines starting with '#' ignored; CRLF line ends and a UTF-8 BOM are fine).
// A relative path is taken as the dataset names its samples: "./a/b.jpg"
// (as `find .` lists it) and "a//b.jpg" are "a/b.jpg". Throws UsageError
// naming the file.
std::vector<std::string> read_path_list(const std::filesystem::path& file,
                                        const std::string& column);

}  // namespace imgpack
