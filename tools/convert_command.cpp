// imgpack convert SRC OUT: pack an image directory into a dataset.
#include <algorithm>
#include <charconv>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "cli_common.hpp"
#include "cli_values.hpp"
#include "cli_wording.hpp"
#include "imgpack/convert.hpp"
#include "imgpack/error.hpp"
#include "imgpack/growth.hpp"
#include "mpi_convert.hpp"
#include "progress.hpp"

namespace imgpack::cli {

namespace {

struct ConvertArgs {
  std::string src, out;
  std::string size, resize = "crop", fill = "0", color = "rgb";
  std::string labels;  // empty: dirs, or with --csv: csv when --csv-label is given, else none
  std::string csv, csv_path = "path", csv_label, csv_group, csv_mask, csv_targets, csv_multilabel;
  std::string masks, mask_suffix, mask_colors, mask_classes;
  std::optional<int> mask_fill;  // 255 unless given
  std::string coco, yolo_names, yolo_keypoints, keypoint_flip_map;
  bool yolo = false;
  std::optional<double> box_min_visible;  // BoxOptions::min_visible where not given
  std::string group_regex, group_missing = "error";
  uint32_t variants = 1;
  std::string augment;
  std::string shard_size = "1G";
  unsigned threads = 0;
  uint64_t seed = 0;
  std::string order = "shuffle", on_error = "skip", max_skipped = "1%";
  bool overwrite = false;
  bool resume = false;
  uint64_t max_pixels = uint64_t{1} << 28;
  bool no_dct_scaling = false;
  std::string dct_scales = "halvings";
  std::vector<std::string> splits;
  std::string part;
  bool quiet = false, json = false;
  bool append = false, replace_changed = false;
  std::string files;               // --files: the inputs of an append, listed
  std::vector<std::string> given;  // the options given, by name ("--size")
};

// The options that fix what a conversion writes: an append takes them from
// the dataset, so giving one with --append is an error.
constexpr const char* kStoredOptions[] = {
    "--size",        "--resize",     "--fill",           "--color",           "--labels",
    "--csv-path",    "--csv-label",  "--csv-group",      "--csv-targets",     "--csv-multilabel",
    "--mask-suffix", "--csv-mask",   "--mask-fill",      "--mask-colors",     "--mask-classes",
    "--yolo",        "--yolo-names", "--yolo-keypoints", "--box-min-visible", "--keypoint-flip-map",
    "--group-regex", "--variants",   "--augment",        "--shard-size",      "--seed",
    "--order",       "--max-pixels", "--no-dct-scaling", "--dct-scales",      "--split",
    "--part",        "--overwrite",  "--resume"};

// "age,score" -> {"age", "score"}: column names around commas, spaces dropped.
std::vector<std::string> split_target_columns(const std::string& text) {
  std::vector<std::string> columns;
  if (text.empty()) return columns;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    const std::size_t first = text.find_first_not_of(' ', begin);
    const std::size_t last = text.find_last_not_of(' ', comma == 0 ? 0 : comma - 1);
    if (first == std::string::npos || first >= comma || last < first) {
      throw UsageError("--csv-targets '" + text +
                       "': an empty column name; expected names "
                       "separated by commas, e.g. 'age,score'");
    }
    columns.push_back(text.substr(first, last + 1 - first));
    if (comma == text.size()) return columns;
    begin = comma + 1;
  }
}

// "I/N" -> part I of N (0-based, like Slurm array task ids).
ConvertPart parse_part(const std::string& text) {
  const std::size_t slash = text.find('/');
  const auto number = [&](std::string_view digits) {
    uint32_t value = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (digits.empty() || error != std::errc{} || end != digits.data() + digits.size()) {
      throw UsageError("--part " + text +
                       ": expected I/N, part I of N counting from 0 (0/4 .. 3/4)");
    }
    return value;
  };
  if (slash == std::string::npos) number("");  // refused
  const std::string_view whole(text);
  return ConvertPart{number(whole.substr(0, slash)), number(whole.substr(slash + 1))};
}

ConvertOptions to_options(const ConvertArgs& a) {
  ConvertOptions o;
  o.src = a.src;
  o.out = a.out;
  o.report_wording = [](std::string_view message) { return cli_wording(message); };
  if (!a.size.empty()) o.size = parse_image_size(a.size);
  o.resize = parse_resize_mode(a.resize);
  o.fill = parse_fill(a.fill);
  o.color = parse_color_mode(a.color);
  if (a.csv.empty() &&
      (!a.csv_label.empty() || !a.csv_group.empty() || a.csv_path != "path" ||
       !a.csv_mask.empty() || !a.csv_targets.empty() || !a.csv_multilabel.empty())) {
    throw UsageError(
        "--csv-path, --csv-label, --csv-group, --csv-mask, --csv-targets and --csv-multilabel "
        "need --csv FILE");
  }
  if (a.mask_fill && (*a.mask_fill < 0 || *a.mask_fill > 255)) {
    throw UsageError("--mask-fill " + std::to_string(*a.mask_fill) + ": a label from 0 to 255");
  }
  if (a.mask_fill && a.masks.empty() && a.csv_mask.empty()) {
    throw UsageError("--mask-fill needs masks: --masks DIR or --csv-mask COLUMN");
  }
  if (a.labels.empty()) {
    o.scan.labels = a.csv.empty()         ? LabelSource::dirs
                    : a.csv_label.empty() ? LabelSource::none
                                          : LabelSource::csv;
  } else {
    o.scan.labels = parse_label_source(a.labels);
  }
  if (o.scan.labels == LabelSource::csv && a.csv.empty()) {
    throw UsageError("--labels csv needs --csv FILE and --csv-label COLUMN");
  }
  if (!a.csv.empty()) {
    o.scan.csv = CsvInput{a.csv,           a.csv_path, a.csv_label,
                          a.csv_group,     a.csv_mask, split_target_columns(a.csv_targets),
                          a.csv_multilabel};
  }
  o.masks.dir = a.masks;
  o.masks.suffix = a.mask_suffix;
  o.masks.fill = static_cast<uint8_t>(a.mask_fill.value_or(255));
  o.masks.colors = a.mask_colors;
  o.masks.classes = a.mask_classes;
  if (!a.yolo && (!a.yolo_names.empty() || !a.yolo_keypoints.empty())) {
    throw UsageError("--yolo-names and --yolo-keypoints need --yolo");
  }
  if (!a.yolo && a.coco.empty() && (a.box_min_visible || !a.keypoint_flip_map.empty())) {
    throw UsageError("--box-min-visible and --keypoint-flip-map need boxes: --coco or --yolo");
  }
  o.boxes.coco = a.coco;
  o.boxes.yolo = a.yolo;
  o.boxes.yolo_names = a.yolo_names;
  o.boxes.yolo_keypoints = a.yolo_keypoints;
  if (a.box_min_visible) o.boxes.min_visible = *a.box_min_visible;
  o.boxes.keypoint_flip_map = a.keypoint_flip_map;
  o.scan.group_regex = a.group_regex;
  o.scan.group_missing_ok = a.group_missing == "ok";
  o.variants = a.variants;
  o.augment = a.augment;
  o.shard_size = parse_byte_size(a.shard_size);
  o.threads = a.threads;
  o.seed = a.seed;
  o.order = parse_write_order(a.order);
  o.on_error = parse_on_error(a.on_error);
  o.max_skipped = parse_skip_limit(a.max_skipped);
  o.overwrite = a.overwrite;
  o.resume = a.resume;
  o.max_pixels = a.max_pixels;
  o.dct_scaling = !a.no_dct_scaling;
  o.dct_scales = parse_dct_scales(a.dct_scales);
  for (const std::string& split : a.splits) o.splits.push_back(parse_split_option(split, a.seed));
  if (!a.part.empty()) o.part = parse_part(a.part);
  if (a.overwrite && a.resume) {
    throw UsageError(
        "--overwrite and --resume: give one (--resume continues an unfinished conversion, "
        "--overwrite starts over and would throw its shards away)");
  }
  return o;
}

int run_append(const ConvertArgs& args) {
  for (const std::string& name : args.given) {
    throw UsageError(name + ": an append converts with the dataset's own options (" + args.out +
                     "/index.h5 keeps them); leave " + name + " out");
  }
  AppendOptions options;
  options.src = args.src;
  options.dataset = args.out;
  options.csv = args.csv;
  options.masks = args.masks;
  options.coco = args.coco;
  options.files = args.files;
  options.group_missing_ok = args.group_missing == "ok";
  options.threads = args.threads;
  options.on_error = parse_on_error(args.on_error);
  options.max_skipped = parse_skip_limit(args.max_skipped);
  options.replace_changed = args.replace_changed;
  Progress progress("append", args.quiet || args.json);
  const AppendResult result = append(
      options, [&](const ConvertProgress& p) { progress.update(p.done, p.total, p.skipped); });
  if (result.added + result.skipped.size() > 0) {
    progress.finish(result.added + result.skipped.size(), result.added + result.skipped.size(),
                    result.skipped.size());
  }
  print_messages("warning", result.input_warnings);
  print_messages("warning", result.split_warnings);
  if (!args.quiet && !args.json) print_messages("note", result.notes);
  if (args.json) {
    nlohmann::ordered_json j;
    j["generation"] = result.generation;
    j["inputs"] = result.inputs;
    j["ignored"] = result.ignored;
    j["held"] = result.held;
    j["held_removed"] = result.held_removed;
    j["added"] = result.added;
    j["replaced"] = result.replaced;
    j["records"] = result.records;
    j["shards"] = result.shards;
    j["samples"] = result.samples;
    j["skipped"] = result.skipped.size();
    nlohmann::ordered_json skipped = nlohmann::ordered_json::array();
    for (const SkippedInput& s : result.skipped) {
      skipped.push_back({{"path", s.path}, {"reason", cli_wording(s.reason)}});
    }
    j["skipped_inputs"] = std::move(skipped);
    j["new_classes"] = result.new_classes;
    j["notes"] = result.notes;
    nlohmann::ordered_json warnings = nlohmann::ordered_json::array();
    for (const std::string& warning : result.input_warnings)
      warnings.push_back(cli_wording(warning));
    j["warnings"] = std::move(warnings);
    j["seconds"] = result.seconds;
    j["timings"] = {
        {"plan_s", result.plan_s}, {"convert_s", result.convert_s}, {"commit_s", result.commit_s}};
    j["out"] = args.out;
    print_json(j);
  } else if (!args.quiet) {
    if (result.added == 0 && result.replaced == 0) {
      std::string held = std::to_string(result.held) + " in the dataset";
      if (result.held_removed > 0) {
        held += ", " + std::to_string(result.held_removed) + " of them removed from it";
      }
      std::fprintf(stderr, "%s: nothing new in %s (%llu inputs: %s); generation %llu",
                   args.out.c_str(), args.src.c_str(),
                   static_cast<unsigned long long>(result.inputs), held.c_str(),
                   static_cast<unsigned long long>(result.generation));
    } else {
      std::fprintf(stderr,
                   "%s: generation %llu: added %llu images (%llu records, %llu new shard%s), "
                   "%llu already held%s, %llu replaced, %.1f s",
                   args.out.c_str(), static_cast<unsigned long long>(result.generation),
                   static_cast<unsigned long long>(result.added),
                   static_cast<unsigned long long>(result.records),
                   static_cast<unsigned long long>(result.shards), result.shards == 1 ? "" : "s",
                   static_cast<unsigned long long>(result.held),
                   result.held_removed > 0
                       ? (" (" + std::to_string(result.held_removed) + " of them removed)").c_str()
                       : "",
                   static_cast<unsigned long long>(result.replaced), result.seconds);
      if (!result.new_classes.empty()) {
        std::fprintf(stderr, "; %zu new classes", result.new_classes.size());
      }
    }
    if (result.ignored > 0) {
      std::fprintf(stderr, "; %llu ignored (not images)",
                   static_cast<unsigned long long>(result.ignored));
    }
    if (!result.skipped.empty()) {
      std::fprintf(stderr, "; %zu skipped, first: %s: %s", result.skipped.size(),
                   result.skipped[0].path.c_str(), cli_wording(result.skipped[0].reason).c_str());
    }
    std::fputc('\n', stderr);
  }
  return kExitOk;
}

int run_convert(const ConvertArgs& args) {
  if (args.append) return run_append(args);
  if (args.replace_changed) throw UsageError("--replace-changed needs --append");
  if (!args.files.empty()) throw UsageError("--files needs --append");
  ConvertOptions options = to_options(args);
  if (started_by_mpi_launcher() && !options.part) {
    return run_convert_with_mpi(std::move(options), args.quiet, args.json);
  }
  Progress progress("convert", args.quiet || args.json);
  ConvertResult result = convert(
      options, [&](const ConvertProgress& p) { progress.update(p.done, p.total, p.skipped); });
  if (result.already_complete) {
    // A part whose parts are merged already says so in its resume note.
    if (!args.quiet && !args.json && result.resume_notes.empty()) {
      std::fprintf(stderr, "%s: already complete (%llu records); nothing to resume\n",
                   args.out.c_str(), static_cast<unsigned long long>(result.records));
    }
  } else {
    progress.finish(result.samples + result.skipped.size(), result.samples + result.skipped.size(),
                    result.skipped.size());
  }
  if (!args.quiet && !args.json && args.resume && !result.already_complete) {
    std::fprintf(stderr, "resume: kept %llu shards covering %llu inputs\n",
                 static_cast<unsigned long long>(result.resumed_shards),
                 static_cast<unsigned long long>(result.resumed_inputs));
  }
  print_messages("resume", result.resume_notes);
  print_messages("warning", result.input_warnings);
  print_messages("warning", result.split_warnings);
  if (!args.quiet && !args.json) print_messages("note", result.resize_notes);
  if (args.json) {
    nlohmann::ordered_json j;
    j["records"] = result.records;
    j["samples"] = result.samples;
    j["skipped"] = result.skipped.size();
    j["shards"] = result.shards;
    j["seconds"] = result.seconds;
    j["width"] = result.width;
    j["height"] = result.height;
    j["channels"] = result.channels;
    j["masks"] = options.has_masks();
    j["boxes"] = options.has_boxes();
    j["dataset_uuid"] = result.uuid;
    nlohmann::ordered_json notes = nlohmann::ordered_json::array();
    for (const std::string& note : result.resize_notes) notes.push_back(cli_wording(note));
    j["resize_notes"] = std::move(notes);
    if (args.resume) {
      j["resumed_shards"] = result.resumed_shards;
      j["resumed_inputs"] = result.resumed_inputs;
      j["already_complete"] = result.already_complete;
    }
    j["out"] = args.out;
    print_json(j);
  } else if (!args.quiet && !result.already_complete) {
    std::fprintf(stderr, "%s: %llu records from %llu images (%ux%ux%u) in %llu shard%s, %.1f s",
                 args.out.c_str(), static_cast<unsigned long long>(result.records),
                 static_cast<unsigned long long>(result.samples), result.width, result.height,
                 result.channels, static_cast<unsigned long long>(result.shards),
                 result.shards == 1 ? "" : "s", result.seconds);
    if (!result.skipped.empty()) {
      std::fprintf(stderr, "; %zu skipped (reasons in %s/report.json), first: %s: %s",
                   result.skipped.size(), args.out.c_str(), result.skipped[0].path.c_str(),
                   cli_wording(result.skipped[0].reason).c_str());
    }
    std::fputc('\n', stderr);
  }
  return kExitOk;
}

}  // namespace

void add_convert_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<ConvertArgs>();
  CLI::App* cmd =
      app.add_subcommand("convert", "Pack an image directory (or a --csv list) into a dataset");
  cmd->add_option("SRC", args->src,
                  "Input directory: class folders below it, or the root that --csv paths are "
                  "relative to")
      ->required()
      ->check(not_empty());
  cmd->add_option("OUT", args->out, "Output dataset directory (new or empty)")
      ->required()
      ->check(not_empty());
  cmd->add_option("--size", args->size, "Output size N or WxH (default: the size all inputs share)")
      ->check(not_empty());
  cmd->add_option("--resize", args->resize, "crop: cover and centre-crop; stretch; pad: letterbox")
      ->check(CLI::IsMember({"crop", "stretch", "pad"}))
      ->capture_default_str();
  cmd->add_option("--fill", args->fill, "Fill for pad and alpha: V or R,G,B")
      ->capture_default_str()
      ->check(not_empty());
  cmd->add_option("--color", args->color, "Output colour")
      ->check(CLI::IsMember({"rgb", "gray"}))
      ->capture_default_str();
  cmd->add_option("--labels", args->labels,
                  "dirs: class = first folder below SRC; none: unlabeled (-1); csv: from "
                  "--csv-label. Default: dirs, or with --csv: csv if --csv-label is given, else "
                  "none")
      ->check(CLI::IsMember({"dirs", "none", "csv"}));
  cmd->add_option("--csv", args->csv,
                  "Take the images from this CSV file (header row required; quoted fields, "
                  "CRLF and a BOM are fine) instead of walking SRC. A listed file that does not "
                  "exist is skipped and reported; a path listed twice is an error")
      ->check(not_empty());
  cmd->add_option("--csv-path", args->csv_path,
                  "Column holding each image's path relative to SRC (absolute paths must lie "
                  "inside SRC), or a template built from columns, e.g. "
                  "'imgs/train/{classname}/{img}' for the State Farm driver list")
      ->capture_default_str()
      ->check(not_empty());
  cmd->add_option("--csv-label", args->csv_label,
                  "Column naming each image's class (class ids: names sorted); an empty cell "
                  "leaves the image unlabeled (-1)")
      ->check(not_empty());
  cmd->add_option("--csv-group", args->csv_group,
                  "Column naming each image's group (driver, patient, ...); an empty cell is an "
                  "error unless --group-missing ok")
      ->check(not_empty());
  cmd->add_option("--csv-targets", args->csv_targets,
                  "Numeric target columns, comma-separated ('age,score'), stored per image as "
                  "float32 [S, T] (/samples/targets; an empty cell is NaN, no value)")
      ->check(not_empty());
  cmd->add_option("--csv-multilabel", args->csv_multilabel,
                  "Column listing each image's classes of a multi-label task, separated by ';' "
                  "('cat;outdoor'), stored as a multi-hot uint8 [S, C] over every name used "
                  "(/samples/multilabel, names sorted)")
      ->check(not_empty());
  cmd->add_option("--masks", args->masks,
                  "Segmentation masks: the mask of SRC/a/b.jpg is DIR/a/b.<png|tif|bmp|...>, a "
                  "label map (8-bit gray, palette PNG indices, 16-bit values up to 255) the size "
                  "of its image; packed beside it with the same geometry (nearest neighbour)")
      ->check(not_empty());
  cmd->add_option("--mask-suffix", args->mask_suffix,
                  "Text before a mask's extension: '_mask' for DIR/a/b_mask.png (DIR may then "
                  "be SRC itself)");
  cmd->add_option("--csv-mask", args->csv_mask,
                  "Column (or template, like --csv-path) holding each image's mask path, "
                  "relative to --masks DIR, or to SRC without it")
      ->check(not_empty());
  cmd->add_option("--mask-fill", args->mask_fill,
                  "Label of mask areas outside the image (letterbox, fill=constant warps); "
                  "default 255");
  cmd->add_option("--mask-colors", args->mask_colors,
                  "CSV with columns r,g,b,label (and name) mapping the colours of RGB masks to "
                  "labels")
      ->check(not_empty());
  cmd->add_option("--mask-classes", args->mask_classes,
                  "Text file naming the mask labels, one per line (line i names label i)")
      ->check(not_empty());
  cmd->add_option("--coco", args->coco,
                  "COCO-style JSON with the images' object boxes (bbox [x, y, w, h], iscrowd, "
                  "keypoints): each record stores its boxes moved with its geometry; the "
                  "categories are the box classes. An image the file does not list is skipped")
      ->check(not_empty());
  cmd->add_flag("--yolo", args->yolo,
                "Object boxes from YOLO label files beside the images (a/b.jpg: a/b.txt, lines "
                "'class cx cy w h' normalised, pose keypoints 'x y v' after them); a missing "
                "file means no objects");
  cmd->add_option("--yolo-names", args->yolo_names,
                  "With --yolo: the class names, one per line (default: SRC/classes.txt, else "
                  "the ids)")
      ->check(not_empty());
  cmd->add_option("--yolo-keypoints", args->yolo_keypoints,
                  "With --yolo: the keypoint names of pose labels, comma-separated");
  cmd->add_option("--box-min-visible", args->box_min_visible,
                  "Keep a box in a record (or an augmented variant) when at least this share of "
                  "its area stays inside (default: 0.3)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--keypoint-flip-map", args->keypoint_flip_map,
                  "Keypoints that swap under a horizontal flip, 'a:b,c:d' (names or indices); "
                  "'none': no swap; default: names that differ only by left/right")
      ->check(not_empty());
  cmd->add_option("--group-regex", args->group_regex,
                  "ECMAScript regex searched in each path relative to SRC (class folder "
                  "included); its first capture names the group, e.g. '([^/_]+)_[^/]*$' for "
                  "c0/p021_img_1.jpg")
      ->check(not_empty());
  cmd->add_option("--group-missing", args->group_missing,
                  "A path the group regex does not match, or an empty --csv-group cell: error, "
                  "or ok (group -1)")
      ->check(CLI::IsMember({"error", "ok"}))
      ->capture_default_str();
  cmd->add_option("--variants", args->variants, "Records per image: 1 clean + K-1 augmented")
      ->capture_default_str();
  cmd->add_option("--augment", args->augment,
                  "Augmentation for variants 1..K-1: comma-separated keys, listed below")
      ->check(not_empty());
  cmd->add_option("--shard-size", args->shard_size, "Most pixel bytes per shard (K/M/G suffixes)")
      ->capture_default_str();
  cmd->add_option("--threads", args->threads, "Worker threads (0 = all cores)")
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "Seed for write order and augmentation")
      ->check(whole_number())
      ->capture_default_str();
  cmd->add_option("--order", args->order, "Write order: shuffle (seeded) or sorted by path")
      ->check(CLI::IsMember({"shuffle", "sorted"}))
      ->capture_default_str();
  cmd->add_option("--on-error", args->on_error, "Unreadable input: skip and report, or fail")
      ->check(CLI::IsMember({"skip", "fail"}))
      ->capture_default_str();
  cmd->add_option("--max-skipped", args->max_skipped,
                  "Fail (exit 1, no index.h5) once more inputs are skipped than this: a count "
                  "(25), a percentage (1%) or a fraction (0.01) of the inputs found")
      ->capture_default_str();
  cmd->add_flag("--overwrite", args->overwrite, "Replace the dataset already in OUT");
  cmd->add_flag("--resume", args->resume,
                "Continue an interrupted run of the same command in OUT: keep its complete, "
                "checksum-verified shards and convert the rest");
  cmd->add_option("--max-pixels", args->max_pixels,
                  "Skip images whose header declares more pixels than this, before decoding "
                  "(decompression bombs)")
      ->check(whole_number())
      ->capture_default_str();
  CLI::Option* no_dct_scaling =
      cmd->add_flag("--no-dct-scaling", args->no_dct_scaling,
                    "Decode JPEGs at full size before resizing (slower; for comparisons)");
  cmd->add_option("--dct-scales", args->dct_scales,
                  "Reduced JPEG scales: halvings (1/2, 1/4, 1/8); eighths (also 3/8 and 5/8, "
                  "slower; the records of datasets converted before halvings)")
      ->check(CLI::IsMember({"halvings", "eighths"}))
      ->capture_default_str()
      ->excludes(no_dct_scaling);
  cmd->add_option("--split", args->splits,
                  "Also store a split NAME:KIND:K (holdout: NAME:holdout:VAL_FRACTION), seeded "
                  "with --seed; repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--part", args->part,
                  "Convert only part I of N (0 <= I < N; a hash of each path picks its part) "
                  "into OUT/parts/I-of-N/; 'imgpack merge OUT' joins the N parts")
      ->check(not_empty());
  cmd->add_flag("--append", args->append,
                "Add the inputs of SRC that the dataset in OUT does not hold yet, with its own "
                "options, into new shards; its splits extend over them");
  cmd->add_flag("--replace-changed", args->replace_changed,
                "With --append: an input whose size or modification time changed since the "
                "dataset took it replaces its old sample (removed) instead of stopping the run");
  cmd->add_option("--files", args->files,
                  "With --append to a dataset converted from a folder: consider only the inputs "
                  "this text file lists (one path per line, relative to SRC, as `find . -type f "
                  "-newer STAMP` prints them inside SRC) instead of walking SRC")
      ->check(not_empty());
  cmd->add_flag("--quiet,-q", args->quiet, "No progress output");
  cmd->add_flag("--json", args->json, "Print a JSON summary on stdout");
  cmd->footer(
      "\n--augment SPEC: comma-separated keys, e.g. hflip,rotate=15,zoom=0.8:1.2,brightness=0.2\n"
      "(U(a, b) = uniform; README.md, section Augmentation, has the details)\n"
      "  KEY               ALLOWED  MEANING\n" +
      cli_wording(augment_spec_help()));
  cmd->callback([args, cmd, &action] {
    if (args->append) {
      for (const char* name : kStoredOptions) {
        if (cmd->count(name) > 0) args->given.emplace_back(name);
      }
    }
    action = [args] { return run_convert(*args); };
  });
}

}  // namespace imgpack::cli
