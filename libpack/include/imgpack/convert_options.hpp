// The options of a conversion (imgpack convert), and the value types they are
// made of. Plain values; ConvertOptions::validate() checks them.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "imgpack/image_modes.hpp"
#include "imgpack/split.hpp"

namespace imgpack {

// dirs: the first folder below SRC names the class; none: every label is -1;
// csv: the CSV's label column names the class (scan_csv only).
enum class LabelSource { dirs, none, csv };

// Where scan_csv() finds each sample's path, label and group.
struct CsvInput {
  std::filesystem::path file;
  // The column holding each image's path relative to SRC, or a template that
  // builds the path from columns: "train/{classname}/{img}". Absolute paths
  // are accepted when they lie inside SRC.
  std::string path = "path";
  // The column naming the class (with LabelSource::csv); an empty cell
  // leaves the sample unlabeled (-1).
  std::string label;
  // The column naming the group; empty = no group column. An empty cell is
  // an error unless ScanOptions::group_missing_ok (then group -1).
  std::string group;
  // The column (or template, like `path`) holding each image's mask path,
  // relative to MaskOptions::dir when set, else to SRC; empty = no masks
  // from the CSV.
  std::string mask;
  // Numeric target columns, stored per sample as float32 in this order
  // (/samples/targets): a cell holds a decimal number, or nothing (NaN, no
  // value). Empty = none.
  std::vector<std::string> targets;
  // The column listing each image's classes of a multi-label task, names
  // separated by ';' (spaces around a name ignored, an empty cell: none),
  // stored as a multi-hot row over every name the CSV uses, sorted
  // (/samples/multilabel). Empty = none.
  std::string multilabel;
};

struct ScanOptions {
  LabelSource labels = LabelSource::dirs;
  // ECMAScript regex searched in the relative path; its first capture group
  // names the sample's group. Empty = no groups.
  std::string group_regex;
  // A sample the regex does not match (or whose CSV group cell is empty):
  // error (false) or group -1 (true).
  bool group_missing_ok = false;
  // Set: the inputs are the rows of this CSV file (scan_csv), not a directory walk.
  std::optional<CsvInput> csv;
};

// An input that was found but not converted, and why.
struct SkippedInput {
  std::string path;  // relative to the input root
  std::string reason;
};

// Segmentation masks: one label map per input, packed beside its image with
// the same geometry (docs/FORMAT.md). A mask is a single-channel 8-bit image
// (or a 16-bit one whose values all fit in 8 bits) whose values are the
// labels, or a palette PNG whose indices are; an RGB mask with three equal
// channels is read as gray, any other RGB mask needs `colors`. The mask must
// be the size of its image after the image's EXIF orientation; a missing
// mask, or one of another size or kind, makes its input skipped (or the run
// fail, with OnError::fail).
struct MaskOptions {
  // The folder of the masks: the mask of SRC/a/b.jpg is DIR/a/b<suffix>.EXT
  // for any image extension EXT (a second candidate is an error for that
  // input). A DIR inside SRC is not scanned for images; DIR may be SRC
  // itself when `suffix` is set: files whose name ends in the suffix are then
  // masks, never images. With a CSV mask column (CsvInput::mask) its paths
  // are relative to DIR. Empty: no mask folder.
  std::filesystem::path dir;
  std::string suffix;  // before the extension: "_mask" for b_mask.png
  // The label of mask areas outside the source image: letterbox (pad),
  // FillMode::constant warps. 255 is the usual "ignore" index.
  uint8_t fill = 255;
  // A CSV file with a header row and columns r, g, b and label (0..255, and
  // optionally name): each colour of an RGB mask maps to its label. A pixel
  // of a colour not listed makes its input skipped.
  std::filesystem::path colors;
  // A text file naming the labels, one per line: line i names label i
  // (index.h5 /mask_classes/name). The `name` column of `colors` does the same.
  std::filesystem::path classes;
};

// Object boxes (and keypoints) per image, packed beside each record with the
// record's own geometry (docs/FORMAT.md): either a COCO-style JSON file or
// YOLO text files beside the images. Box coordinates refer to the upright
// image (after its EXIF orientation).
struct BoxOptions {
  // A COCO-style JSON file: `images` (id, file_name relative to SRC or, where
  // unique, a bare file name; width, height), `annotations` (image_id,
  // category_id, bbox [x, y, w, h] in pixels, optional iscrowd and keypoints
  // [x, y, v] * K) and `categories` (id, name, optional keypoints names). The
  // categories, by id, are the box classes. An input the file does not list
  // is skipped.
  std::filesystem::path coco;
  // YOLO labels: SRC/a/b.jpg's objects are the lines of SRC/a/b.txt, each
  // `class cx cy w h` normalised to the image (and, for pose data, K triples
  // `x y v` after them). A missing file means no objects.
  bool yolo = false;
  // The YOLO class names, one per line (line i names class i); empty: SRC's
  // classes.txt where there is one, else the ids as names.
  std::filesystem::path yolo_names;
  // Keypoint names for YOLO pose labels, comma-separated; empty: "0", "1", ...
  std::string yolo_keypoints;
  // A box of a variant is kept when at least this fraction of its area (the
  // transformed box's) lies inside the output frame.
  double min_visible = 0.3;
  // Which keypoints swap under a horizontal flip, as "a:b,c:d" (names or
  // indices); "none": no swap; empty: pairs whose names differ only by
  // left/right. A map that names no pair is a UsageError.
  std::string keypoint_flip_map;

  bool enabled() const { return !coco.empty() || yolo; }
};

enum class WriteOrder { shuffle, sorted };

// One of `count` parts of a conversion spread over machines (convert --part
// I/N). A part converts the inputs whose relative path hashes (XXH3-64,
// modulo `count`) to `index`, numbered from 0 like a Slurm array task, into
// OUT/parts/I-of-N/ (part_directory() in merge.hpp); merge() then joins the
// parts into OUT. The hash keeps parts balanced, and adding inputs moves
// only the new ones. Every part scans the whole listing, so class and group
// ids agree across parts.
struct ConvertPart {
  uint32_t index = 0;  // 0 <= index < count
  uint32_t count = 1;
  bool operator==(const ConvertPart&) const = default;
};
// What a conversion does with an input it cannot take (missing, unreadable,
// outside a class folder, undecodable, a mask or label file that does not
// fit): skip it and list it in report.json, within max_skipped, or stop the
// run at the first (imgpack::Error naming it; no index.h5).
enum class OnError { skip, fail };

// The most inputs a conversion may skip (convert --max-skipped): a number of
// inputs, or a fraction of the inputs found (those converted plus those
// skipped, scan-time skips included).
struct SkipLimit {
  std::optional<uint64_t> count;  // set: at most this many; unset: `fraction` applies
  double fraction = 0.01;         // 0..1

  // The most skipped inputs allowed among `inputs`: `count`, or
  // floor(fraction * inputs).
  uint64_t allowed(uint64_t inputs) const;
  // As the CLI takes it: "25" (a count) or "1%", "0.5%" (a fraction).
  std::string text() const;
};

struct ConvertOptions {
  std::filesystem::path src;
  std::filesystem::path out;

  // Output size; unset = the size all inputs share (they must share one).
  std::optional<std::pair<uint32_t, uint32_t>> size;  // width, height
  ResizeMode resize = ResizeMode::crop;
  std::array<uint8_t, 3> fill = {0, 0, 0};
  ColorMode color = ColorMode::rgb;

  ScanOptions scan;
  MaskOptions masks;
  BoxOptions boxes;

  // Records per image: variant 0 is the clean resized image, variants
  // 1..K-1 are augmented as `augment` says (the `--augment` text, e.g.
  // "hflip,rotate=15"; README's Augmentation section lists the keys). K > 1
  // needs a spec and a spec needs K > 1.
  uint32_t variants = 1;
  std::string augment;  // spec; empty = none

  uint64_t shard_size = uint64_t{1} << 30;  // bytes of pixels per shard at most
  unsigned threads = 0;                     // 0 = the cores the process may run on
  uint64_t seed = 0;
  WriteOrder order = WriteOrder::shuffle;
  OnError on_error = OnError::skip;
  // With OnError::skip, a run that skips more inputs than this fails
  // (imgpack::Error naming the count and the first reasons, report.json
  // listing them all, no index.h5) as soon as the limit is passed, rather than
  // finish with much of the data missing. It decides only whether the run
  // succeeds, not what it writes, so a --resume may change it.
  SkipLimit max_skipped;
  bool overwrite = false;
  // Continue an interrupted run of the same conversion in OUT: keep its
  // shards that are whole and match their checksums, redo the rest. The
  // result is byte-identical to an uninterrupted run. A finished conversion
  // is verified whole (every record's checksum): intact, there is nothing
  // to do; damaged since (a part merge refused, say), it is converted again.
  bool resume = false;
  uint64_t max_pixels = uint64_t{1} << 28;
  bool dct_scaling = true;
  // The reduced JPEG scales dct_scaling may use (image_modes.hpp). A new
  // conversion's; from_json() of options that name none gives eighths, the
  // set those datasets were converted with.
  DctScales dct_scales = DctScales::halvings;

  // Splits to store in index.h5 (convert --split NAME:KIND:K), computed with
  // the conversion's seed after the records are written. Their `created` is
  // empty, so index.h5 stays byte-identical across identical conversions.
  std::vector<NamedSplitSpec> splits;

  // Set: convert only this part of the inputs, into OUT/parts/I-of-N/. Its
  // splits are computed when the parts are merged, over all of them.
  std::optional<ConvertPart> part;

  // How report.json words the messages it keeps (skip reasons, resume notes,
  // the failure): a front end passes its own names for the options they
  // name (the CLI: --max-skipped for ConvertOptions::max_skipped). Empty: as
  // the library words them. Changes no other output; called on the thread
  // that runs convert().
  std::function<std::string(std::string_view)> report_wording;

  // True when the conversion packs masks (MaskOptions::dir or CsvInput::mask).
  bool has_masks() const { return !masks.dir.empty() || (scan.csv && !scan.csv->mask.empty()); }
  bool has_boxes() const { return boxes.enabled(); }

  // Throws UsageError naming the first invalid value.
  void validate() const;
  // The options that determine the output, as JSON (stored in index.h5).
  std::string to_json() const;
  // The inverse of to_json(): the options that determine the output, as a
  // dataset's index.h5 stores them (src, out, splits, the part and the run's
  // policies left at their defaults; keys to_json() does not write are
  // ignored). Throws imgpack::Error for text that is not such JSON, naming the
  // key.
  static ConvertOptions from_json(const std::string& text);
};

// The table of --augment keys, their ranges and meanings, for help texts.
std::string augment_spec_help();

// Each enum's names, as the CLI and index.h5's convert_options spell them:
// "dirs", "none", "csv"; "shuffle", "sorted"; "skip", "fail" (ResizeMode's
// and ColorMode's: image_modes.hpp). The parsers throw UsageError naming the
// choices for anything else.
LabelSource parse_label_source(std::string_view text);
std::string_view label_source_name(LabelSource source);
WriteOrder parse_write_order(std::string_view text);
std::string_view write_order_name(WriteOrder order);
OnError parse_on_error(std::string_view text);
std::string_view on_error_name(OnError policy);

}  // namespace imgpack
