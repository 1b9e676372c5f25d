// libFuzzer target for the dataset open/validate path: Dataset::open (and so
// read_index and every shard check) over a dataset with one damaged file.
//
// Input: byte 0 selects a file of the template datasets (fuzz_datasets.hpp),
// the remaining bytes replace its contents (index.h5 and splits.h5 of format 2
// datasets, index.h5 of a format 1 one, shards). An imgpack::Error is the
// expected answer to a damaged file; any other exception, a crash, a
// sanitizer report, a hang or an HDF5 handle left open is a bug. When open()
// succeeds every record is read in full, as a training program would, and
// the sample paths and group names it defers.
#include <hdf5.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_datasets.hpp"
#include "imgpack/checksum.hpp"
#include "imgpack/dataset.hpp"
#include "imgpack/error.hpp"

namespace fs = std::filesystem;
using imgpack::fuzz::DatasetFile;

namespace {

fs::path g_root;
std::vector<DatasetFile> g_files;

void write_file(const fs::path& path, const uint8_t* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) {
    std::fprintf(stderr, "dataset_open_fuzzer: cannot write %s\n", path.c_str());
    std::abort();
  }
}

void remove_root() {
  std::error_code ec;
  fs::remove_all(g_root, ec);
}

// Reads everything a training program could touch after a successful open.
uint64_t touch_every_record(const imgpack::Dataset& dataset) {
  uint64_t sum = 0;
  for (uint64_t r = 0; r < dataset.num_records(); ++r) {
    std::span<const uint8_t> pixels = dataset.record(r);
    sum += imgpack::checksum(pixels.data(), pixels.size());
    sum += dataset.record_shard(r) + static_cast<uint64_t>(dataset.record_label(r)) +
           static_cast<uint64_t>(dataset.record_sample(r)) + dataset.record_variant(r) +
           dataset.record_checksum(r) + dataset.storage_position(r);
    if (dataset.has_masks()) {
      const std::span<const uint8_t> mask = dataset.mask(r);
      sum += imgpack::checksum(mask.data(), mask.size()) + dataset.record_mask_checksum(r);
    }
    if (dataset.has_boxes()) {
      const imgpack::Dataset::BoxRows rows = dataset.record_boxes(r);
      for (float v : rows.boxes) sum += static_cast<uint64_t>(v != 0);
      for (int32_t c : rows.classes) sum += static_cast<uint64_t>(c);
      sum += rows.crowd.size() + rows.keypoints.size();
    }
  }
  for (uint64_t s = 0; s < dataset.num_samples(); ++s) {
    for (uint64_t r : dataset.sample_records(s)) sum += r;
  }
  for (uint64_t r : dataset.storage_order()) sum += r;
  for (std::size_t k = 0; k < dataset.num_shards(); ++k) {
    std::span<const uint8_t> images = dataset.shard_images(k);
    if (!images.empty()) sum += images.front() + images.back();
    std::span<const uint8_t> masks = dataset.shard_masks(k);
    if (!masks.empty()) sum += masks.front() + masks.back();
  }
  try {
    dataset.verify_checksums();
  } catch (const imgpack::Error&) {
    // A damaged pixel is what verify_checksums() exists to report.
  }
  // The sample paths and group names open() defers, read on first use.
  try {
    for (const std::string& path : dataset.sample_paths()) sum += path.size();
    for (const std::string& name : dataset.group_names()) sum += name.size();
    if (dataset.num_samples() > 0) sum += dataset.sample_path(dataset.num_samples() - 1).size();
  } catch (const imgpack::Error&) {
    // Damage to them is found when they are read.
  }
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char pattern[] = "/tmp/imgpack-fuzz-XXXXXX";
  if (mkdtemp(pattern) == nullptr) {
    std::perror("dataset_open_fuzzer: mkdtemp");
    std::abort();
  }
  g_root = pattern;
  std::atexit(remove_root);
  // No HDF5 free lists: freed blocks go back to malloc at once, so ASan sees
  // reuse after free and a leak report names the allocation that leaked
  // rather than the first use of a recycled block.
  H5set_free_list_limits(0, 0, 0, 0, 0, 0);
  g_files = imgpack::fuzz::write_fuzz_datasets(g_root);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const DatasetFile& file = g_files[imgpack::fuzz::selected_file(data[0], g_files.size())];
  const fs::path path = g_root / file.path;
  write_file(path, data + 1, size - 1);
  try {
    imgpack::Dataset dataset = imgpack::Dataset::open(path.parent_path());
    volatile uint64_t sink = touch_every_record(dataset);
    (void)sink;
  } catch (const imgpack::Error&) {
    // A damaged dataset is refused with a message: the expected outcome.
  }
  // Every HDF5 object opened on the way must be closed again, on the error
  // paths too (a leaked file id would also keep serving the old contents).
  if (H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) != 0) {
    std::fprintf(stderr, "dataset_open_fuzzer: %zd HDF5 objects left open\n",
                 static_cast<ssize_t>(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL)));
    std::abort();
  }
  write_file(path, file.contents.data(), file.contents.size());
  return 0;
}
