#include "conversion/conversion_plan.hpp"

#include <oneapi/tbb/parallel_for.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "files.hpp"
#include "image/decode.hpp"
#include "image/image_probe.hpp"
#include "imgpack/checksum.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/version.hpp"
#include "inputs/boxes_input.hpp"
#include "masks/mask_scan.hpp"
#include "parallel/tbb_tsan.hpp"
#include "random.hpp"
#include "targets/box_geometry.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

// Stream ids for CounterRng, so unrelated random choices never share a stream.
constexpr uint64_t kWriteOrderStream = 0x6f72646572;  // "order"

std::string format_uuid(Hash128 h) {
  // RFC 9562 layout with version 8 (custom) and the RFC variant bits.
  uint64_t hi = (h.high & ~0xF000ULL) | 0x8000ULL;
  uint64_t lo = (h.low & ~(3ULL << 62)) | (2ULL << 62);
  char text[40];
  std::snprintf(text, sizeof text, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xFFFF), static_cast<unsigned>(hi & 0xFFFF),
                static_cast<unsigned>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFULL));
  return text;
}

// The dataset uuid is derived from what determines the output, so a rerun of
// the same conversion yields the same bytes.
std::string derive_uuid(const std::string& options_json, const SourceList& list, bool masks) {
  std::string key = options_json;
  for (const SourceSample& s : list.samples) {
    key += '\n';
    key += s.path;
    key += '\t';
    key += std::to_string(s.file_size);
    key += '\t';
    key += std::to_string(s.label);
    key += '\t';
    key += std::to_string(s.group);
    if (masks) {
      key += '\t';
      key += s.mask_path;
      key += '\t';
      key += std::to_string(s.mask_stamp.size);
    }
  }
  return format_uuid(hash128(key, 0x696d677061636bULL));
}

std::string size_text(std::pair<uint32_t, uint32_t> size) {
  return std::to_string(size.first) + "x" + std::to_string(size.second);
}

// The upright size the readable inputs share, for conversions without
// ConvertOptions::size. A few inputs of another size (a corrupt file whose
// header declares one, say) are moved to list.skipped with the reason when
// one size is held by all others and skipping them stays within
// ConvertOptions::max_skipped; any other mix of sizes is a UsageError.
std::pair<uint32_t, uint32_t> common_input_size(const ConvertOptions& options, SourceList& list) {
  using Size = std::pair<uint32_t, uint32_t>;
  std::mutex mutex;
  std::map<Size, std::vector<std::size_t>> sizes;  // size -> the samples of that size
  const tsan::ForkJoinBody probe([&](std::size_t i) {
    // Headers sit at the start: read a prefix, and the whole file only when
    // the probe cannot tell the size from it.
    const fs::path path = options.src / list.samples[i].path;
    std::vector<uint8_t> bytes;
    if (!read_file(path, bytes, 256u << 10).empty()) return;
    std::optional<ImageInfo> info = probe_image(bytes);
    if (!info && bytes.size() == (256u << 10) && read_file(path, bytes).empty()) {
      info = probe_image(bytes);
    }
    Size size;
    if (info) {
      size = {info->upright_width(), info->upright_height()};
    } else {
      try {
        DecodeOptions decode;
        decode.max_pixels = options.max_pixels;
        decode.dct_scaling = false;
        DecodedImage image = decode_image(bytes, decode);
        size = {static_cast<uint32_t>(image.pixels.cols), static_cast<uint32_t>(image.pixels.rows)};
      } catch (const DecodeError&) {
        return;  // reported when the pipeline reaches it
      }
    }
    std::lock_guard lock(mutex);
    sizes[size].push_back(i);
  });
  probe.fork();
  tbb::parallel_for(std::size_t{0}, list.samples.size(), probe);
  probe.join();
  if (sizes.empty()) throw UsageError(options.src.string() + ": no readable images found");
  for (auto& entry : sizes) std::sort(entry.second.begin(), entry.second.end());
  if (sizes.size() == 1) return sizes.begin()->first;

  auto common = sizes.begin();
  std::size_t others = 0;
  for (auto it = sizes.begin(); it != sizes.end(); ++it) {
    if (it->second.size() > common->second.size()) common = it;
  }
  for (const auto& entry : sizes) {
    if (entry.first != common->first) others += entry.second.size();
  }
  const uint64_t inputs = list.samples.size() + list.skipped.size();
  const bool one_size_holds_the_rest = common->second.size() > others;
  if (options.on_error == OnError::skip && one_size_holds_the_rest &&
      list.skipped.size() + others <= options.max_skipped.allowed(inputs)) {
    std::vector<bool> odd(list.samples.size(), false);
    for (const auto& [size, samples] : sizes) {
      if (size == common->first) continue;
      for (std::size_t i : samples) {
        odd[i] = true;
        list.skipped.push_back({list.samples[i].path,
                                "is " + size_text(size) + ", not the " + size_text(common->first) +
                                    " of the other inputs (ConvertOptions::size resizes inputs "
                                    "of any size)"});
      }
    }
    std::vector<SourceSample> kept;
    kept.reserve(list.samples.size() - others);
    for (std::size_t i = 0; i < list.samples.size(); ++i) {
      if (!odd[i]) kept.push_back(std::move(list.samples[i]));
    }
    list.samples = std::move(kept);
    return common->first;
  }
  auto a = sizes.begin();
  auto b = std::next(a);
  throw UsageError("input images differ in size (" + list.samples[a->second.front()].path + " is " +
                   size_text(a->first) + ", " + list.samples[b->second.front()].path + " is " +
                   size_text(b->first) + ", " + std::to_string(sizes.size()) +
                   " sizes in all); ConvertOptions::size resizes them");
}

// The requested splits over every input in write order, the sample order of
// the dataset when nothing is skipped. Requests the inputs cannot meet (a
// group kind without groups, more folds than groups) fail here, before
// anything is written.
std::vector<SplitResult> plan_splits(const ConvertOptions& options, const ConversionPlan& plan) {
  std::vector<SplitResult> results;
  if (options.splits.empty()) return results;
  std::vector<int32_t> labels, groups;
  std::vector<uint8_t> multilabel;
  labels.reserve(plan.order.size());
  groups.reserve(plan.order.size());
  multilabel.reserve(plan.order.size() * plan.list.multilabel_names.size());
  for (std::size_t i : plan.order) {
    labels.push_back(plan.list.samples[i].label);
    groups.push_back(plan.list.samples[i].group);
    const std::vector<uint8_t>& row = plan.list.samples[i].multilabel;
    multilabel.insert(multilabel.end(), row.begin(), row.end());
  }
  for (const NamedSplitSpec& split : options.splits) {
    try {
      results.push_back(compute_split(labels, groups, split.spec, plan.list.class_names,
                                      {multilabel, plan.list.multilabel_names.size()}));
    } catch (const UsageError& e) {
      throw UsageError("ConvertOptions::splits " + split.name + ": " + e.what());
    }
  }
  return results;
}

// Keeps in plan.order and plan.list.skipped only the inputs of
// ConvertOptions::part, and records what merge() checks of the part.
void select_part(const ConvertOptions& options, ConversionPlan& plan) {
  const ConvertPart& part = *options.part;
  PartRecord record;
  record.part = part;
  record.fingerprint = listing_fingerprint(plan.options_json, plan.list);
  record.listing_inputs = plan.list.samples.size() + plan.list.skipped.size();
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < plan.list.samples.size(); ++i) {
    if (part_of_path(plan.list.samples[i].path, part.count) == part.index) order.push_back(i);
  }
  std::vector<SkippedInput> skipped;
  for (SkippedInput& input : plan.list.skipped) {
    if (part_of_path(input.path, part.count) == part.index) skipped.push_back(std::move(input));
  }
  plan.order = std::move(order);
  plan.list.skipped = std::move(skipped);
  record.part_inputs = plan.order.size() + plan.list.skipped.size();
  plan.part = std::move(record);
}

// The colour table and label names of MaskOptions, and the options JSON
// extended with the table's fingerprint: its colours decide the labels, so
// they are part of what the dataset uuid covers.
void plan_masks(const ConvertOptions& options, ConversionPlan& plan) {
  const MaskOptions& masks = options.masks;
  if (!masks.colors.empty()) {
    plan.mask_colors = MaskColors::read(masks.colors);
    plan.mask_class_names = plan.mask_colors.names();
    nlohmann::ordered_json json = nlohmann::ordered_json::parse(plan.options_json);
    char text[20];
    std::snprintf(text, sizeof text, "%016llx",
                  static_cast<unsigned long long>(plan.mask_colors.fingerprint()));
    json["masks"]["colors_xxh3"] = text;
    plan.options_json = json.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  }
  if (!masks.classes.empty()) {
    if (!plan.mask_class_names.empty()) {
      throw UsageError(
          "MaskOptions::classes and the name column of MaskOptions::colors both name the "
          "labels; give only one");
    }
    plan.mask_class_names = read_mask_class_names(masks.classes);
  }
}

}  // namespace

std::vector<std::string> input_warnings(const ConvertOptions& options, const ConversionPlan& plan) {
  std::vector<std::string> warnings =
      box_warnings(plan.list, plan.order, options.src, options.boxes);
  std::size_t count = 0;
  const SourceSample* first = nullptr;
  for (const std::size_t s : plan.order) {
    const SourceSample& sample = plan.list.samples[s];
    std::string ext = fs::path(sample.mask_path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (ext != ".jpg" && ext != ".jpeg" && ext != ".jpe" && ext != ".jfif") continue;
    if (++count == 1 || sample.path < first->path) first = &sample;
  }
  if (count == 0) return warnings;
  const fs::path root = !options.masks.dir.empty() ? options.masks.dir : options.src;
  warnings.push_back(std::to_string(count) + " of the " + std::to_string(plan.order.size()) +
                     " masks are JPEG files (the first: " + (root / first->mask_path).string() +
                     "): JPEG's lossy compression changes the labels along every edge and puts "
                     "labels between them that no pixel had; they are stored as they decode. "
                     "Save label maps as PNG");
  return warnings;
}

ConversionPlan make_plan(const ConvertOptions& options, tbb::task_arena& arena,
                         const InputSelector& keep, const std::filesystem::path& listed,
                         const HeldTargets* held) {
  ConversionPlan plan;
  const std::filesystem::path masks_inside = mask_folder_inside_source(options.src, options.masks);
  if (options.scan.csv) {
    plan.list = scan_csv(options.src, options.scan, keep);
  } else if (!listed.empty()) {
    plan.list = scan_file_list(options.src, options.scan, listed, masks_inside, keep);
  } else {
    plan.list = scan_directory(options.src, options.scan, masks_inside, keep,
                               static_cast<unsigned>(arena.max_concurrency()));
  }
  attach_masks(plan.list, options.src, options.scan, options.masks);
  attach_boxes(plan.list, options.src, options.boxes, held);
  // A list of new files may name none: an append with nothing to add.
  if (plan.list.samples.empty() && plan.list.unselected == 0 && listed.empty()) {
    throw UsageError(options.src.string() +
                     ": no images found (extensions: jpg, jpeg, png, bmp, "
                     "tif, tiff, webp, pnm, pam" +
                     std::string(options.scan.labels == LabelSource::dirs
                                     ? "; with LabelSource::dirs they must be inside class folders"
                                     : "") +
                     ")");
  }
  std::pair<uint32_t, uint32_t> size;
  if (options.size) {
    size = *options.size;
  } else {
    arena.execute([&] { size = common_input_size(options, plan.list); });
  }
  plan.shape = {size.second, size.first, options.color == ColorMode::gray ? 1u : 3u};
  plan.options_json = options.to_json();
  plan_masks(options, plan);
  plan.uuid = derive_uuid(plan.options_json, plan.list, options.has_masks());
  plan.order = write_order(options, plan.list.samples.size());
  plan.splits = plan_splits(options, plan);
  if (options.part) {
    select_part(options, plan);
    if (options.order == WriteOrder::shuffle) {
      CounterRng(options.seed, kWriteOrderStream).shuffle(std::span(plan.order));
    }
  }
  return plan;
}

std::vector<std::size_t> write_order(const ConvertOptions& options, std::size_t samples) {
  std::vector<std::size_t> order(samples);
  for (std::size_t i = 0; i < samples; ++i) order[i] = i;
  if (options.order == WriteOrder::shuffle) {
    CounterRng(options.seed, kWriteOrderStream).shuffle(std::span(order));
  }
  return order;
}

uint64_t inputs_fingerprint(const ConversionPlan& plan, uint64_t first, uint64_t end) {
  std::string key;
  for (uint64_t position = first; position < end && position < plan.order.size(); ++position) {
    const SourceSample& sample = plan.list.samples[plan.order[position]];
    key += sample.path;
    key += '\0';
    key += std::to_string(sample.stamp.size) + ' ' + std::to_string(sample.stamp.mtime_ns) + ' ' +
           std::to_string(sample.stamp.ctime_ns) + '\n';
    if (!sample.mask_path.empty()) {
      key += sample.mask_path;
      key += '\0';
      key += std::to_string(sample.mask_stamp.size) + ' ' +
             std::to_string(sample.mask_stamp.mtime_ns) + ' ' +
             std::to_string(sample.mask_stamp.ctime_ns) + '\n';
    }
    if (plan.list.boxes) key += std::to_string(annotation_hash(sample)) + '\n';
  }
  return checksum(key.data(), key.size());
}

DatasetIndex planned_index(const ConvertOptions& options, const ConversionPlan& plan) {
  DatasetIndex index;
  index.format_version = format::kIndexVersion;
  index.uuid = plan.uuid;
  index.height = plan.shape.height;
  index.width = plan.shape.width;
  index.channels = plan.shape.channels;
  index.variants = options.variants;
  index.color = color_mode_name(options.color);
  index.convert_options =
      plan.part ? with_part_record(plan.options_json, *plan.part) : plan.options_json;
  index.created_by = std::string("imgpack ") + kVersionString;
  index.class_names = plan.list.class_names;
  index.group_names = plan.list.group_names;
  index.multilabel_names = plan.list.multilabel_names;
  index.target_names = plan.list.target_names;
  if (plan.list.boxes) {
    index.boxes = true;
    index.box_class_names = plan.list.box_class_names;
    index.keypoint_names = plan.list.keypoint_names;
    index.keypoint_flip = plan.list.keypoint_flip;
    index.keypoint_skeleton = plan.list.keypoint_skeleton;
    index.box_min_visible = options.boxes.min_visible;
  }
  if (options.has_masks()) {
    index.masks = true;
    index.mask_fill = options.masks.fill;
    index.mask_class_names = plan.mask_class_names;
  }
  return index;
}

}  // namespace imgpack
