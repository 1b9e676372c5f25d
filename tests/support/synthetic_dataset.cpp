#include "synthetic_dataset.hpp"

#include <bit>
#include <limits>
#include <stdexcept>

#include "conversion/shard_writer.hpp"
#include "h5.hpp"
#include "imgpack/checksum.hpp"
#include "imgpack/format.hpp"
#include "random.hpp"

namespace imgpack::test {

namespace fs = std::filesystem;

std::vector<uint8_t> synthetic_pixels(const SyntheticOptions& o, int64_t sample, uint16_t variant) {
  std::vector<uint8_t> pixels(std::size_t{o.height} * o.width * o.channels);
  CounterRng rng(o.seed, static_cast<uint64_t>(sample), variant);
  for (uint8_t& p : pixels) p = static_cast<uint8_t>(rng.next() >> 56);
  return pixels;
}

std::vector<uint8_t> synthetic_mask(const SyntheticOptions& o, int64_t sample, uint16_t variant) {
  std::vector<uint8_t> mask(std::size_t{o.height} * o.width);
  CounterRng rng(o.seed ^ 0x6d61736b, static_cast<uint64_t>(sample), variant);
  for (uint8_t& m : mask) {
    const uint64_t draw = rng.below(9);
    m = draw == 8 ? uint8_t{255} : static_cast<uint8_t>(draw);
  }
  return mask;
}

std::vector<uint8_t> synthetic_multilabel(const SyntheticOptions& options, int64_t sample) {
  std::vector<uint8_t> row(options.multilabel_classes);
  for (std::size_t c = 0; c < row.size(); ++c) {
    row[c] = (static_cast<uint64_t>(sample) * 7 + c * 3) % 5 < 2 ? 1 : 0;
  }
  return row;
}

std::vector<float> synthetic_targets(const SyntheticOptions& options, int64_t sample) {
  std::vector<float> row(options.targets);
  for (std::size_t t = 0; t < row.size(); ++t) {
    row[t] = (static_cast<uint64_t>(sample) + t) % 7 == 3
                 ? std::numeric_limits<float>::quiet_NaN()
                 : static_cast<float>(sample) * 0.5F - static_cast<float>(t);
  }
  return row;
}

RecordBoxes synthetic_boxes(const SyntheticOptions& o, int64_t sample, uint16_t variant) {
  RecordBoxes boxes;
  if (o.box_classes == 0) return boxes;
  CounterRng rng(o.seed ^ 0x626f78, static_cast<uint64_t>(sample), variant);
  const auto count = static_cast<std::size_t>((static_cast<uint64_t>(sample) + variant) % 4);
  const auto w = static_cast<float>(o.width);
  const auto h = static_cast<float>(o.height);
  for (std::size_t b = 0; b < count; ++b) {
    const float x0 = w * static_cast<float>(rng.below(50)) / 100;
    const float y0 = h * static_cast<float>(rng.below(50)) / 100;
    const float x1 = x0 + (w - x0) * static_cast<float>(1 + rng.below(99)) / 100;
    const float y1 = y0 + (h - y0) * static_cast<float>(1 + rng.below(99)) / 100;
    boxes.boxes.insert(boxes.boxes.end(), {x0, y0, x1, y1});
    boxes.classes.push_back(static_cast<int32_t>(rng.below(o.box_classes)));
    boxes.crowd.push_back(rng.below(5) == 0 ? 1 : 0);
    for (uint32_t k = 0; k < o.keypoints; ++k) {
      const auto visibility = static_cast<float>(rng.below(3));
      boxes.keypoints.insert(
          boxes.keypoints.end(),
          {x0 + (x1 - x0) * static_cast<float>(rng.below(101)) / 100,
           y0 + (y1 - y0) * static_cast<float>(rng.below(101)) / 100, visibility});
    }
  }
  return boxes;
}

DatasetIndex write_synthetic_dataset(const fs::path& dir, const SyntheticOptions& o) {
  fs::create_directories(dir);
  DatasetIndex index;
  index.format_version = o.format_version;
  index.uuid = o.uuid;
  index.height = o.height;
  index.width = o.width;
  index.channels = o.channels;
  index.variants = o.variants;
  index.color = o.channels == 1 ? "gray" : "rgb";
  index.convert_options = "{}";
  index.created_by = "imgpack tests";
  index.masks = o.masks;
  index.mask_fill = o.mask_fill;
  index.mask_class_names = o.mask_class_names;
  for (uint32_t c = 0; c < o.classes; ++c) index.class_names.push_back("class" + std::to_string(c));
  for (uint32_t g = 0; g < o.groups; ++g) index.group_names.push_back("group" + std::to_string(g));
  for (uint32_t s = 0; s < o.samples; ++s) {
    const int32_t label = o.labels.empty() ? static_cast<int32_t>(s % o.classes) : o.labels.at(s);
    index.sample_path.push_back("class" + std::to_string(label) + "/" + std::to_string(s) + ".png");
    index.sample_label.push_back(label);
    index.sample_group.push_back(static_cast<int32_t>(s % o.groups));
    for (uint8_t has : synthetic_multilabel(o, s)) index.sample_multilabel.push_back(has);
    for (float value : synthetic_targets(o, s)) index.sample_targets.push_back(value);
  }
  for (uint32_t c = 0; c < o.multilabel_classes; ++c) {
    index.multilabel_names.push_back("tag" + std::to_string(c));
  }
  for (uint32_t t = 0; t < o.targets; ++t) index.target_names.push_back("y" + std::to_string(t));
  index.boxes = o.box_classes > 0;
  for (uint32_t c = 0; c < o.box_classes; ++c) {
    index.box_class_names.push_back("object" + std::to_string(c));
  }
  for (uint32_t k = 0; k < o.keypoints; ++k) {
    index.keypoint_names.push_back((k % 2 == 0 ? "left_" : "right_") + std::to_string(k / 2));
    // Pairs (0, 1), (2, 3), ...; an odd last one is its own partner.
    index.keypoint_flip.push_back(
        static_cast<int32_t>(k + 1 < o.keypoints || k % 2 == 1 ? k ^ 1u : k));
    // A skeleton chaining the keypoints in order.
    if (k > 0) {
      index.keypoint_skeleton.insert(index.keypoint_skeleton.end(),
                                     {static_cast<int32_t>(k - 1), static_cast<int32_t>(k)});
    }
  }
  struct Item {
    int64_t sample;
    uint16_t variant;
  };
  std::vector<Item> items;
  for (uint32_t s = 0; s < o.samples; ++s) {
    for (uint32_t v = 0; v < o.variants; ++v) items.push_back({s, static_cast<uint16_t>(v)});
  }
  if (o.shuffle) CounterRng(o.seed, 99).shuffle(std::span<Item>(items));
  RecordShape shape{o.height, o.width, o.channels};
  const uint64_t shard_bytes =
      uint64_t{o.records_per_shard} * (shape.bytes() + (o.masks ? shape.pixels() : 0));
  DatasetWriter writer(dir, shape, shard_bytes, o.uuid, items.size(), 1,
                       {.masks = o.masks, .boxes = index.boxes, .keypoints = o.keypoints});
  for (const Item& item : items) {
    std::vector<uint8_t> pixels = synthetic_pixels(o, item.sample, item.variant);
    std::vector<uint8_t> mask;
    if (o.masks) mask = synthetic_mask(o, item.sample, item.variant);
    const RecordBoxes boxes = synthetic_boxes(o, item.sample, item.variant);
    RecordParts parts;
    if (o.masks) parts = {mask.data(), checksum(mask.data(), mask.size())};
    parts.boxes = &boxes;
    writer.add(pixels.data(), checksum(pixels.data(), pixels.size()),
               index.sample_label[static_cast<std::size_t>(item.sample)], item.sample, item.variant,
               parts);
  }
  writer.finish(index);
  write_index(dir, index);
  return index;
}

DatasetIndex write_foreign_twin(const fs::path& dir, SyntheticOptions options) {
  options.uuid = "5e7a0000-0000-4000-8000-00000000beef";
  return write_synthetic_dataset(dir, options);
}

std::string relabel_in_index_only(const fs::path& dir, DatasetIndex index, int64_t sample) {
  const auto s = static_cast<std::size_t>(sample);
  index.sample_label[s] =
      (index.sample_label[s] + 1) % static_cast<int32_t>(index.class_names.size());
  write_index(dir, index);
  uint64_t record = 0;
  while (index.records.sample[record] != sample) ++record;
  return index.shards.file[index.records.shard[record]];
}

void add_split(const fs::path& dir, const std::string& name, int32_t folds,
               const std::vector<int16_t>& assign, const std::string& kind) {
  DatasetIndex index = read_index(dir);
  std::erase_if(index.splits, [&](const Split& s) { return s.name == name; });
  Split split;
  split.name = name;
  split.kind = kind;
  split.folds = folds;
  split.seed = 7;
  split.created = "2026-01-01T00:00:00Z";
  split.assign = assign;
  index.splits.push_back(split);
  write_splits(dir, index);
}

DatasetIndex remove_samples(const fs::path& dir, const std::vector<int64_t>& samples) {
  DatasetIndex index = read_index(dir);
  const std::size_t count = index.num_samples();
  if (index.history.empty()) index.history.push_back({0, "", "convert", count, 0});
  ++index.generation;
  index.history.push_back({index.generation, utc_timestamp(), "remove", 0, samples.size()});
  if (index.sample_removed.empty()) index.sample_removed = std::vector<uint8_t>(count, 0);
  for (const int64_t s : samples) {
    const auto row = static_cast<std::size_t>(s);
    if (index.is_removed(row)) throw std::invalid_argument("sample removed twice");
    index.sample_removed[row] = 1;
    for (Split& split : index.splits) split.assign[row] = format::kRemovedFold;
  }
  write_index(dir, index);
  return index;
}

namespace {

template <class T>
void compare_field(std::vector<std::string>& out, const std::string& name, const T& a, const T& b) {
  if (a != b) out.push_back(name);
}

template <class Values>
void compare_column(std::vector<std::string>& out, const std::string& name, const Values& a,
                    const Values& b) {
  if (a.size() != b.size()) {
    out.push_back(name + ".size()");
    return;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) out.push_back(name + "[" + std::to_string(i) + "]");
  }
}

}  // namespace

std::vector<std::string> index_differences(const DatasetIndex& a, const DatasetIndex& b) {
  std::vector<std::string> out;
  compare_field(out, "format_version", a.format_version, b.format_version);
  compare_field(out, "uuid", a.uuid, b.uuid);
  compare_field(out, "height", a.height, b.height);
  compare_field(out, "width", a.width, b.width);
  compare_field(out, "channels", a.channels, b.channels);
  compare_field(out, "variants", a.variants, b.variants);
  compare_field(out, "color", a.color, b.color);
  compare_field(out, "convert_options", a.convert_options, b.convert_options);
  compare_field(out, "created_by", a.created_by, b.created_by);
  compare_field(out, "masks", a.masks, b.masks);
  compare_field(out, "mask_fill", a.mask_fill, b.mask_fill);
  compare_column(out, "mask_class_names", a.mask_class_names, b.mask_class_names);
  compare_column(out, "multilabel_names", a.multilabel_names, b.multilabel_names);
  compare_column(out, "sample_multilabel", a.sample_multilabel, b.sample_multilabel);
  compare_column(out, "target_names", a.target_names, b.target_names);
  compare_field(out, "boxes", a.boxes, b.boxes);
  compare_column(out, "box_class_names", a.box_class_names, b.box_class_names);
  compare_column(out, "keypoint_names", a.keypoint_names, b.keypoint_names);
  compare_column(out, "keypoint_flip", a.keypoint_flip, b.keypoint_flip);
  compare_column(out, "keypoint_skeleton", a.keypoint_skeleton, b.keypoint_skeleton);
  compare_field(out, "box_min_visible", a.box_min_visible, b.box_min_visible);
  // Bit for bit: NaN (no value) equals itself here.
  std::vector<uint32_t> a_bits, b_bits;
  for (float v : a.sample_targets) a_bits.push_back(std::bit_cast<uint32_t>(v));
  for (float v : b.sample_targets) b_bits.push_back(std::bit_cast<uint32_t>(v));
  compare_column(out, "sample_targets", a_bits, b_bits);
  compare_column(out, "sample_path", a.sample_path, b.sample_path);
  compare_column(out, "sample_label", a.sample_label, b.sample_label);
  compare_column(out, "sample_group", a.sample_group, b.sample_group);
  compare_column(out, "class_names", a.class_names, b.class_names);
  compare_column(out, "group_names", a.group_names, b.group_names);
  compare_column(out, "records.shard", a.records.shard, b.records.shard);
  compare_column(out, "records.row", a.records.row, b.records.row);
  compare_column(out, "records.sample", a.records.sample, b.records.sample);
  compare_column(out, "records.variant", a.records.variant, b.records.variant);
  compare_column(out, "shards.file", a.shards.file, b.shards.file);
  compare_column(out, "shards.records", a.shards.records, b.shards.records);
  if (a.splits.size() != b.splits.size()) {
    out.push_back("splits.size()");
    return out;
  }
  for (std::size_t i = 0; i < a.splits.size(); ++i) {
    const Split& x = a.splits[i];
    const Split& y = b.splits[i];
    const std::string name = "splits[" + std::to_string(i) + "].";
    compare_field(out, name + "name", x.name, y.name);
    compare_field(out, name + "kind", x.kind, y.kind);
    compare_field(out, name + "folds", x.folds, y.folds);
    compare_field(out, name + "seed", x.seed, y.seed);
    // Bit patterns: a flip must not pass as a NaN that compares unequal to itself.
    compare_field(out, name + "test_fraction", std::bit_cast<uint64_t>(x.test_fraction),
                  std::bit_cast<uint64_t>(y.test_fraction));
    compare_field(out, name + "val_fraction", std::bit_cast<uint64_t>(x.val_fraction),
                  std::bit_cast<uint64_t>(y.val_fraction));
    compare_field(out, name + "stratified", x.stratified, y.stratified);
    compare_field(out, name + "grouped", x.grouped, y.grouped);
    compare_field(out, name + "created", x.created, y.created);
    compare_column(out, name + "assign", x.assign, y.assign);
  }
  return out;
}

uint64_t object_header_address(const fs::path& file, const std::string& object) {
  h5::File f = h5::File::open_read(file);
  H5O_info_t info{};
  if (H5Oget_info_by_name2(f.id(), object.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
    throw std::runtime_error("cannot locate " + object + " in " + file.string());
  }
  return info.addr;
}

uint64_t dataset_offset(const fs::path& shard, const std::string& name) {
  h5::File file = h5::File::open_read(shard);
  h5::Handle dataset = file.open_dataset(name);
  haddr_t offset = H5Dget_offset(dataset.get());
  if (offset == HADDR_UNDEF) {
    throw std::runtime_error("no offset for " + name + " in " + shard.string());
  }
  return offset;
}

uint64_t images_offset(const fs::path& shard) { return dataset_offset(shard, format::kImages); }
uint64_t masks_offset(const fs::path& shard) { return dataset_offset(shard, format::kMasks); }

}  // namespace imgpack::test
