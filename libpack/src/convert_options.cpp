// ConvertOptions: validation, the JSON stored in index.h5, and the names of
// the option enums.
#include <array>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <type_traits>

#include "augment_spec.hpp"
#include "enum_names.hpp"
#include "imgpack/convert_options.hpp"
#include "imgpack/error.hpp"
#include "inputs/json_integer.hpp"

namespace imgpack {

namespace {

using json = nlohmann::ordered_json;

std::string split_option_text(const NamedSplitSpec& split) {
  const SplitSpec& spec = split.spec;
  return split.name + ":" + split_kind_name(spec.kind) + ":" +
         (spec.kind == SplitKind::holdout ? json(spec.val_fraction).dump()
                                          : std::to_string(spec.folds));
}

}  // namespace

IMGPACK_ENUM_NAMES(ResizeMode, resize_mode, "resize mode", {ResizeMode::crop, "crop"},
                   {ResizeMode::stretch, "stretch"}, {ResizeMode::pad, "pad"})
IMGPACK_ENUM_NAMES(ColorMode, color_mode, "colour mode", {ColorMode::rgb, "rgb"},
                   {ColorMode::gray, "gray"})
IMGPACK_ENUM_NAMES(DctScales, dct_scales, "DCT scale set", {DctScales::halvings, "halvings"},
                   {DctScales::eighths, "eighths"})
IMGPACK_ENUM_NAMES(LabelSource, label_source, "label source", {LabelSource::dirs, "dirs"},
                   {LabelSource::none, "none"}, {LabelSource::csv, "csv"})
IMGPACK_ENUM_NAMES(WriteOrder, write_order, "write order", {WriteOrder::shuffle, "shuffle"},
                   {WriteOrder::sorted, "sorted"})
IMGPACK_ENUM_NAMES(OnError, on_error, "error policy", {OnError::skip, "skip"},
                   {OnError::fail, "fail"})

uint64_t SkipLimit::allowed(uint64_t inputs) const {
  if (count) return *count;
  // The epsilon keeps 0.29 * 100 at 29 despite binary fractions.
  return static_cast<uint64_t>(std::floor(fraction * static_cast<double>(inputs) + 1e-9));
}

std::string SkipLimit::text() const {
  if (count) return std::to_string(*count);
  std::ostringstream out;
  out << fraction * 100 << "%";
  return out.str();
}

void ConvertOptions::validate() const {
  if (size &&
      (size->first == 0 || size->second == 0 || size->first > 65535 || size->second > 65535)) {
    throw UsageError("ConvertOptions::size must be between 1 and 65535 pixels per side");
  }
  if (variants < 1 || variants > 1024)
    throw UsageError("ConvertOptions::variants must be between 1 and 1024");
  const AugmentSpec spec = parse_augment_spec(augment);  // throws UsageError naming the key
  if (variants > 2 && !augment.empty() && !spec.draws()) {
    throw UsageError("ConvertOptions::augment '" + augment + "' draws nothing at random, so its " +
                     std::to_string(variants - 1) +
                     " augmented variants of each image would be identical: give "
                     "ConvertOptions::variants 2, or an operation with a range or a "
                     "probability below 1");
  }
  if (!boxes.coco.empty() && boxes.yolo) {
    throw UsageError("BoxOptions::coco and BoxOptions::yolo both give the boxes; give one");
  }
  if (!(boxes.min_visible >= 0 && boxes.min_visible <= 1)) {
    throw UsageError("BoxOptions::min_visible must be between 0 and 1");
  }
  if (variants > 1 && augment.empty()) {
    throw UsageError("ConvertOptions::variants " + std::to_string(variants) +
                     " needs an augmentation spec in ConvertOptions::augment to say how the "
                     "augmented variants differ from the clean image (variant 0)");
  }
  if (variants == 1 && !augment.empty()) {
    throw UsageError(
        "ConvertOptions::augment needs ConvertOptions::variants of 2 or more (variant 0 is the "
        "clean image)");
  }
  if (shard_size < 4096) throw UsageError("ConvertOptions::shard_size must be at least 4K");
  if (max_pixels == 0) throw UsageError("ConvertOptions::max_pixels must be positive");
  if (threads > 4096) throw UsageError("ConvertOptions::threads must be at most 4096");
  if (!max_skipped.count && !(max_skipped.fraction >= 0 && max_skipped.fraction <= 1)) {
    throw UsageError(
        "ConvertOptions::max_skipped must be a count, or a fraction between 0% and 100%");
  }
  if (part && (part->count == 0 || part->count > 100000)) {
    throw UsageError("ConvertOptions::part count must be between 1 and 100000");
  }
  if (part && part->index >= part->count) {
    throw UsageError("ConvertOptions::part " + std::to_string(part->index) + "/" +
                     std::to_string(part->count) + ": parts are numbered from 0, so the part " +
                     "must be below " + std::to_string(part->count));
  }
  if (!has_masks() && (!masks.suffix.empty() || !masks.colors.empty() || !masks.classes.empty())) {
    const char* given = !masks.suffix.empty()   ? "MaskOptions::suffix"
                        : !masks.colors.empty() ? "MaskOptions::colors"
                                                : "MaskOptions::classes";
    throw UsageError(std::string(given) +
                     " is about masks, but there are none (MaskOptions::dir or CsvInput::mask "
                     "names them)");
  }
  if (!masks.suffix.empty() && (masks.suffix.find('/') != std::string::npos ||
                                masks.suffix.find('.') != std::string::npos)) {
    throw UsageError("MaskOptions::suffix '" + masks.suffix +
                     "' goes before the extension and may hold neither '/' nor '.'");
  }
  for (std::size_t i = 0; i < splits.size(); ++i) {
    check_split_name(splits[i].name);
    splits[i].spec.validate();
    for (std::size_t j = 0; j < i; ++j) {
      if (splits[j].name == splits[i].name) {
        throw UsageError("ConvertOptions::splits names '" + splits[i].name + "' twice");
      }
    }
  }
}

std::string ConvertOptions::to_json() const {
  json j;
  if (size) {
    j["width"] = size->first;
    j["height"] = size->second;
  } else {
    j["width"] = nullptr;
    j["height"] = nullptr;
  }
  j["resize"] = resize_mode_name(resize);
  j["fill"] = {fill[0], fill[1], fill[2]};
  j["color"] = color_mode_name(color);
  j["labels"] = label_source_name(scan.labels);
  j["group_regex"] = scan.group_regex;
  if (scan.csv) {
    j["csv"] = {{"file", scan.csv->file.string()},
                {"path", scan.csv->path},
                {"label", scan.csv->label},
                {"group", scan.csv->group}};
    // Only where given, so the options (and the uuid) of other conversions are as before.
    if (!scan.csv->targets.empty()) j["csv"]["targets"] = scan.csv->targets;
    if (!scan.csv->multilabel.empty()) j["csv"]["multilabel"] = scan.csv->multilabel;
  }
  if (has_masks()) {
    json m = {{"dir", masks.dir.string()}, {"suffix", masks.suffix}, {"fill", masks.fill}};
    if (scan.csv) m["csv"] = scan.csv->mask;
    if (!masks.colors.empty()) m["colors"] = masks.colors.string();
    if (!masks.classes.empty()) m["classes"] = masks.classes.string();
    j["masks"] = std::move(m);
  }
  if (has_boxes()) {
    json b = {{"min_visible", boxes.min_visible}};
    if (!boxes.coco.empty()) b["coco"] = boxes.coco.string();
    if (boxes.yolo) {
      b["yolo"] = true;
      if (!boxes.yolo_names.empty()) b["yolo_names"] = boxes.yolo_names.string();
      if (!boxes.yolo_keypoints.empty()) b["yolo_keypoints"] = boxes.yolo_keypoints;
    }
    if (!boxes.keypoint_flip_map.empty()) b["keypoint_flip_map"] = boxes.keypoint_flip_map;
    j["boxes"] = std::move(b);
  }
  j["variants"] = variants;
  j["augment"] = augment;
  j["seed"] = seed;
  j["order"] = write_order_name(order);
  j["shard_size"] = shard_size;
  j["max_pixels"] = max_pixels;
  j["dct_scaling"] = dct_scaling;
  // Absent, the JSON means eighths (written before the key was): a dataset
  // converted so keeps its options text, and with it its uuid.
  if (dct_scales != DctScales::eighths) j["dct_scales"] = dct_scales_name(dct_scales);
  if (!splits.empty()) {
    json names = json::array();
    for (const NamedSplitSpec& split : splits) names.push_back(split_option_text(split));
    j["splits"] = std::move(names);
  }
  // The part's index is not here: every part of one conversion has the same
  // options, and so the same dataset uuid.
  if (part) j["parts"] = part->count;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

ConvertOptions ConvertOptions::from_json(const std::string& text) {
  ConvertOptions options;
  const char* key = "";
  try {
    const json j = json::parse(text);
    auto take = [&](const json& object, const char* name, auto& value) {
      key = name;
      if (!object.contains(name)) return;
      using T = std::remove_cvref_t<decltype(value)>;
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        value = json_integer<T>(object.at(name));
      } else {
        object.at(name).get_to(value);
      }
    };
    key = "width";
    if (!j.at("width").is_null()) {
      const auto width = json_integer<uint32_t>(j.at("width"));
      key = "height";
      options.size = {width, json_integer<uint32_t>(j.at("height"))};
    }
    key = "resize";
    options.resize = parse_resize_mode(j.at("resize").get<std::string>());
    key = "fill";
    const json& fill = j.at("fill");
    if (!fill.is_array() || fill.size() != options.fill.size()) {
      throw json::type_error::create(302, "expected 3 channel values", &fill);
    }
    for (std::size_t c = 0; c < options.fill.size(); ++c) {
      options.fill[c] = json_integer<uint8_t>(fill[c]);
    }
    key = "color";
    options.color = parse_color_mode(j.at("color").get<std::string>());
    key = "labels";
    options.scan.labels = parse_label_source(j.at("labels").get<std::string>());
    take(j, "group_regex", options.scan.group_regex);
    if (j.contains("csv")) {
      const json& c = j.at("csv");
      CsvInput csv;
      std::string file;
      take(c, "file", file);
      csv.file = file;
      take(c, "path", csv.path);
      take(c, "label", csv.label);
      take(c, "group", csv.group);
      take(c, "targets", csv.targets);
      take(c, "multilabel", csv.multilabel);
      options.scan.csv = std::move(csv);
    }
    if (j.contains("masks")) {
      const json& m = j.at("masks");
      std::string dir;
      std::string colors;
      std::string classes;
      take(m, "dir", dir);
      take(m, "suffix", options.masks.suffix);
      take(m, "fill", options.masks.fill);
      take(m, "colors", colors);
      take(m, "classes", classes);
      options.masks.dir = dir;
      options.masks.colors = colors;
      options.masks.classes = classes;
      if (options.scan.csv) take(m, "csv", options.scan.csv->mask);
    }
    if (j.contains("boxes")) {
      const json& b = j.at("boxes");
      std::string coco;
      std::string names;
      take(b, "min_visible", options.boxes.min_visible);
      take(b, "coco", coco);
      take(b, "yolo", options.boxes.yolo);
      take(b, "yolo_names", names);
      take(b, "yolo_keypoints", options.boxes.yolo_keypoints);
      take(b, "keypoint_flip_map", options.boxes.keypoint_flip_map);
      options.boxes.coco = coco;
      options.boxes.yolo_names = names;
    }
    take(j, "variants", options.variants);
    take(j, "augment", options.augment);
    take(j, "seed", options.seed);
    key = "order";
    options.order = parse_write_order(j.at("order").get<std::string>());
    take(j, "shard_size", options.shard_size);
    take(j, "max_pixels", options.max_pixels);
    take(j, "dct_scaling", options.dct_scaling);
    key = "dct_scales";
    options.dct_scales = j.contains("dct_scales")
                             ? parse_dct_scales(j.at("dct_scales").get<std::string>())
                             : DctScales::eighths;
  } catch (const json::exception& e) {
    // e.what() is "[json.exception.KIND.ID] text": the text alone reads as
    // one of ours, and a missing key is said so once.
    constexpr int kKeyNotFound = 403;
    if (e.id == kKeyNotFound && *key != '\0') {
      throw Error(std::string("conversion options: key '") + key + "' is missing");
    }
    std::string reason = e.what();
    if (const std::size_t end = reason.find("] ");
        reason.starts_with("[json.") && end != std::string::npos) {
      reason.erase(0, end + 2);
    }
    throw Error(std::string("conversion options: ") +
                (*key != '\0' ? std::string("key '") + key + "': " : std::string()) + reason);
  } catch (const UsageError& e) {  // a name no option has (parse_resize_mode, ...)
    throw Error(std::string("conversion options: key '") + key + "': " + e.what());
  }
  return options;
}

}  // namespace imgpack
