#include "fuzz_datasets.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "synthetic_dataset.hpp"

namespace imgpack::fuzz {

namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Files of one dataset directory: index.h5 first, then the others by name
// (the shards, splits.h5).
void collect(const fs::path& root, const fs::path& dataset, std::vector<DatasetFile>& out) {
  std::vector<fs::path> names;
  for (const auto& entry : fs::directory_iterator(root / dataset)) {
    names.push_back(entry.path().filename());
  }
  std::sort(names.begin(), names.end(), [](const fs::path& a, const fs::path& b) {
    if ((a == "index.h5") != (b == "index.h5")) return a == "index.h5";
    return a < b;
  });
  for (const fs::path& name : names) {
    out.push_back({dataset / name, read_all(root / dataset / name)});
  }
}

}  // namespace

std::vector<DatasetFile> write_fuzz_datasets(const fs::path& dir) {
  std::vector<DatasetFile> files;

  // Index format 2 (index.h5, splits.h5): RGB, two variants per sample,
  // labels and groups, three shards, a split.
  test::SyntheticOptions rgb;
  rgb.samples = 6;
  rgb.variants = 2;
  rgb.height = 4;
  rgb.width = 3;
  rgb.channels = 3;
  rgb.records_per_shard = 5;
  rgb.classes = 2;
  rgb.groups = 3;
  rgb.uuid = "f0220000-0000-4000-8000-000000000001";
  test::write_synthetic_dataset(dir / "rgb", rgb);
  test::add_split(dir / "rgb", "cv3", 3, {0, 1, 2, -1, 0, 1}, "stratified");
  collect(dir, "rgb", files);

  // Gray, one shard, one group, a holdout split; multi-label classes and
  // numeric targets (2-D tables) in its index.
  test::SyntheticOptions gray;
  gray.multilabel_classes = 3;
  gray.targets = 2;
  gray.samples = 4;
  gray.height = 2;
  gray.width = 5;
  gray.channels = 1;
  gray.records_per_shard = 8;
  gray.classes = 3;
  gray.groups = 1;
  gray.uuid = "f0220000-0000-4000-8000-000000000002";
  test::write_synthetic_dataset(dir / "gray", gray);
  test::add_split(dir / "gray", "holdout", 2, {0, 1, 1, -1}, "holdout");
  collect(dir, "gray", files);

  // Index format 1 (strings in HDF5's global heap, the split inside
  // index.h5), which the reader still opens.
  test::SyntheticOptions legacy;
  legacy.samples = 5;
  legacy.height = 3;
  legacy.width = 2;
  legacy.records_per_shard = 3;
  legacy.classes = 2;
  legacy.groups = 2;
  legacy.uuid = "f0220000-0000-4000-8000-000000000003";
  legacy.format_version = 1;
  test::write_synthetic_dataset(dir / "legacy", legacy);
  test::add_split(dir / "legacy", "cv2", 2, {0, 1, 0, 1, -1}, "random");
  collect(dir, "legacy", files);
  // Segmentation masks beside RGB records, with label names, two shards;
  // object boxes with keypoints (the shards' ragged box tables).
  test::SyntheticOptions masked;
  masked.samples = 5;
  masked.height = 3;
  masked.width = 4;
  masked.channels = 3;
  masked.records_per_shard = 3;
  masked.classes = 2;
  masked.groups = 2;
  masked.masks = true;
  masked.mask_class_names = {"background", "thing"};
  masked.box_classes = 2;
  masked.keypoints = 3;
  masked.uuid = "f0220000-0000-4000-8000-000000000004";
  test::write_synthetic_dataset(dir / "masked", masked);
  collect(dir, "masked", files);
  return files;
}

}  // namespace imgpack::fuzz
