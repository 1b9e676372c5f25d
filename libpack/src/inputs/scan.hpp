// Finding the inputs of a conversion: which files, with which label and group.
//
// scan_directory() walks SRC (following symbolic links, never looping),
// keeps files with an image extension, and derives labels from class folders
// (the first path component below SRC) and groups from an optional regular
// expression over the relative path. scan_csv() takes the files, labels and
// groups from the columns of a CSV file instead. Either way the result is
// sorted by path, so it is the same on every machine and run. Nothing is
// opened or modified except directories being listed and the CSV file read.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "imgpack/convert_options.hpp"

namespace imgpack {

// What stat() said of an input when it was scanned: a resumed conversion
// compares it with what the interrupted one saw (size, and modification and
// status-change times in nanoseconds), to tell an input edited in place.
struct FileStamp {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

// An object's box in its image, in the upright image (after the EXIF
// orientation), normalised: x as a fraction of the upright width, y of the
// height (0 = the left / top edge, 1 = the right / bottom edge), so that
// x0 <= x1 and y0 <= y1.
// One object's box, in fractions of the image, clipped to it: `inside` is
// the share of the box as annotated that the image holds (1 for a box
// within it), so that the visibility rule of each record (BoxRules) counts
// what lay past the image's edges as not visible.
struct SourceBox {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  int32_t cls = 0;    // index into SourceList::box_class_names
  uint8_t crowd = 0;  // 1 for a COCO `iscrowd` annotation
  float inside = 1;
};

struct SourceSample {
  std::string path;  // relative to the input root, '/'-separated
  int32_t label = -1;
  int32_t group = -1;
  uint64_t file_size = 0;  // bytes, when scanned
  FileStamp stamp;         // when scanned
  // With masks (MaskOptions): the mask's path relative to the mask root
  // ('/'-separated) and its stamp when scanned, or, when the sample has no
  // usable mask (none found, two found, missing, empty CSV cell), why: the
  // conversion then skips the sample with that reason.
  std::string mask_path;
  FileStamp mask_stamp;
  std::string mask_problem;
  // With CsvInput::multilabel: one entry per SourceList::multilabel_names, 1
  // where the sample has the class. With CsvInput::targets: one value per
  // target, NaN for an empty cell.
  std::vector<uint8_t> multilabel;
  std::vector<float> targets;
  // With boxes (BoxOptions): the sample's objects, and with keypoints
  // (SourceList::keypoint_names, K of them) boxes.size() x K x 3 values, per
  // keypoint x and y normalised as the boxes are and the visibility (0 = not
  // labelled, 1 = labelled but hidden, 2 = visible, as COCO has it).
  // `box_width` x `box_height`, where the annotations name the image's size
  // (COCO), is checked against the decoded image's upright size; 0 where
  // they do not (YOLO). `box_problem` says why the sample's annotations
  // cannot be used (an unreadable label file, a malformed line): the
  // conversion then skips the sample with that reason. An annotation with
  // no area inside the image (an empty box, or one wholly outside it) is
  // left out, not a problem: the sample keeps its other objects, and
  // `dropped_boxes` counts such annotations, `first_dropped` names the first
  // (its index in the COCO file's annotations, or its line in the label
  // file), for the conversion's warning.
  std::vector<SourceBox> boxes;
  std::vector<float> keypoints;
  uint32_t box_width = 0;
  uint32_t box_height = 0;
  uint32_t dropped_boxes = 0;
  uint32_t first_dropped = 0;
  std::string box_problem;

  void drop_box(uint32_t where) {
    if (dropped_boxes++ == 0) first_dropped = where;
  }
};

// The stamp of a file from its stat().
FileStamp file_stamp(const struct stat& st);

struct SourceList {
  std::vector<SourceSample> samples;          // sorted by path
  std::vector<std::string> class_names;       // id -> name, sorted
  std::vector<std::string> group_names;       // id -> name, sorted
  std::vector<std::string> multilabel_names;  // CsvInput::multilabel: every name used, sorted
  std::vector<std::string> target_names;      // CsvInput::targets
  // With boxes (BoxOptions): the box classes (id -> name), and with
  // keypoints their names [K] and, per keypoint, the one it becomes under a
  // horizontal flip (its own index where none: a left/right pair swaps),
  // and the skeleton joining them (COCO's categories: pairs of keypoint
  // indices from 0, [E x 2]; empty where none is given).
  bool boxes = false;
  std::vector<std::string> box_class_names;
  std::vector<std::string> keypoint_names;
  std::vector<int32_t> keypoint_flip;
  std::vector<int32_t> keypoint_skeleton;
  uint64_t label_files = 0;           // BoxOptions::yolo: the samples with a label file beside them
  std::vector<SkippedInput> skipped;  // found but unusable (e.g. outside a class folder)
  uint64_t ignored_files = 0;         // files without an image extension
  uint64_t unselected = 0;            // usable inputs an InputSelector left out
};

// True for the file name extensions imgpack converts (case-insensitive).
bool has_image_extension(const std::filesystem::path& path);
bool is_image_file_name(std::string_view file_name);  // the same, of a file name

// Which of the inputs a scan finds it keeps: called once per usable input, on
// the calling thread, with the input's path (relative to SRC) and stamp,
// before groups, masks and the CSV's other columns are derived for it (a
// folder scan calls it as its walk reaches each file: depth first, each
// folder's entries by name; a CSV scan in the list's order); false leaves the
// input out silently (an append keeps the inputs its dataset does not hold
// yet). Empty: every input is kept.
using InputSelector = std::function<bool(const std::string& path, const FileStamp& stamp)>;

// Throws UsageError if SRC is not a readable directory or the group regex is
// invalid or misses samples; unreadable subdirectories become skipped inputs.
// `exclude`, when set, is a directory below SRC that is not walked (a mask
// folder inside SRC). A directory of many files has its entries stat-ed on up
// to `threads` threads (threads of its own, joined before it returns: none
// outlives the scan); the result does not depend on the count.
SourceList scan_directory(const std::filesystem::path& src, const ScanOptions& options,
                          const std::filesystem::path& exclude = {}, const InputSelector& keep = {},
                          unsigned threads = 1);

// The inputs named in `list_file`, a text file of one path per line
// (relative to SRC, or absolute inside it; "./" parts and empty lines are
// fine, as `find . -type f` prints them from inside SRC, and so are CRLF line
// ends and a UTF-8 BOM, as Windows editors write them): each is stat-ed where
// it is, and SRC is not walked, so that an append of a few new files to a
// large folder dataset costs a few stat calls rather than a walk of every
// file. A listed file is taken as a walk of SRC would take it: labels from
// class folders, the group regex; files a walk passes over (without an image
// extension, hidden, under `exclude`) and listed folders (SRC itself as ".")
// are counted in ignored_files; a file directly in SRC (with class folders),
// one that does not exist and one that is not a regular file become skipped
// inputs saying why. `keep` is called in the list's order. Throws UsageError,
// naming the list file and line, for an unreadable list, a path outside SRC
// and a path listed twice.
SourceList scan_file_list(const std::filesystem::path& src, const ScanOptions& options,
                          const std::filesystem::path& list_file,
                          const std::filesystem::path& exclude = {},
                          const InputSelector& keep = {});

// The samples listed in options.csv->file, paths relative to SRC.
//
// Class ids number the distinct non-empty labels of the whole CSV in name
// order, so they do not shift when a file goes missing; group ids likewise.
// A row whose file does not exist (or is not a regular file) becomes a
// skipped input naming its CSV line. Throws UsageError, naming the CSV file
// and line, for: an unreadable or malformed CSV, a column that does not
// exist, an empty or outside-SRC path, a path listed twice, an empty group
// cell (unless group_missing_ok), a group column together with a group
// regex, a label column without LabelSource::csv or the reverse, and a CSV
// none of whose files exist. With a mask column (CsvInput::mask) each
// sample's mask_path is the path its row lists, as listed (attach_masks() in
// mask_scan.hpp resolves it), or its mask_problem says the cell is empty.
// With target columns (CsvInput::targets) a cell that is not a finite
// decimal number, and with a multi-label column (CsvInput::multilabel) a CSV
// whose cells name no class at all, are UsageErrors naming the file, line
// and column.
SourceList scan_csv(const std::filesystem::path& src, const ScanOptions& options,
                    const InputSelector& keep = {});

// The path `listed` (relative to `root`, or absolute inside it) relative to
// `root`, '/'-separated and without "." or ".." parts, or "" if it points
// outside `root` (or at `root` itself).
std::string relative_to_root(const std::string& listed, const std::filesystem::path& root);

// Assigns group ids from the first capture of `regex` over each path
// (sorted group names); throws UsageError listing the first unmatched paths
// unless `missing_ok`.
void assign_groups_by_regex(SourceList& list, const std::string& regex, bool missing_ok);

}  // namespace imgpack
