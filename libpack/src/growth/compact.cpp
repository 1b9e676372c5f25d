// compact_dataset(): shards rewritten without the records of removed
// samples, under new names, in the next generation.
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "conversion/shard_writer.hpp"
#include "files.hpp"
#include "growth/dataset_change.hpp"
#include "imgpack/checksum.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/growth.hpp"
#include "shard_check.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

// The number in a shard file name ("shard-00042.h5" -> 42).
uint64_t shard_number(const std::string& name) {
  return std::strtoull(name.c_str() + std::string("shard-").size(), nullptr, 10);
}

// Rewrites the rows `keep` of shard `k` as `name`: every kept record's
// pixels (and mask) checked against its checksum on the way, so that no
// damage passes into the new file. Throws imgpack::Error naming the shard.
void rewrite_shard(const fs::path& dir, const DatasetIndex& index, std::size_t k,
                   const std::vector<uint32_t>& keep, const std::string& name) {
  const fs::path path = dir / index.shards.file[k];
  ShardExpectation expected{index.uuid,   k,           index.shards.records[k],
                            index.height, index.width, index.channels,
                            "index.h5",   index.masks, std::nullopt};
  expected.boxes = index.boxes;
  expected.box_classes = index.box_class_names.size();
  expected.keypoints = index.num_keypoints();
  const FileDescriptor fd = open_for_reading(path);
  const ShardContents contents = read_shard(path, expected, fd.size(path));

  const RecordShape shape = index.shape();
  const std::size_t mask_bytes = index.mask_bytes();
  const std::size_t keypoint_values = index.num_keypoints() * 3;
  ShardWriter writer(
      dir / name, shape, keep.size(), index.uuid, static_cast<uint32_t>(k),
      {.masks = index.masks, .boxes = index.boxes, .keypoints = index.num_keypoints()});
  std::vector<uint8_t> pixels(shape.bytes());
  std::vector<uint8_t> mask(mask_bytes);
  RecordBoxes boxes;
  for (const uint32_t row : keep) {
    read_exact_at(fd.get(), path, pixels.data(), pixels.size(),
                  contents.images_offset + uint64_t{row} * shape.bytes());
    if (checksum(pixels.data(), pixels.size()) != contents.checksums[row]) {
      throw file_error(path, "row " + std::to_string(row) +
                                 " does not match its checksum: the shard is damaged (run "
                                 "imgpack verify); nothing was compacted");
    }
    RecordParts parts;
    if (index.masks) {
      read_exact_at(fd.get(), path, mask.data(), mask.size(),
                    contents.masks_offset + uint64_t{row} * mask_bytes);
      if (checksum(mask.data(), mask.size()) != contents.mask_checksums[row]) {
        throw file_error(path, "the mask of row " + std::to_string(row) +
                                   " does not match its checksum: the shard is damaged (run "
                                   "imgpack verify); nothing was compacted");
      }
      parts.mask = mask.data();
      parts.mask_checksum = contents.mask_checksums[row];
    }
    if (index.boxes) {  // read_shard() checked the rows against their checksums
      const auto first = static_cast<std::size_t>(contents.box_offsets[row]);
      const auto last = static_cast<std::size_t>(contents.box_offsets[row + 1]);
      boxes.boxes.assign(contents.boxes.begin() + static_cast<std::ptrdiff_t>(first * 4),
                         contents.boxes.begin() + static_cast<std::ptrdiff_t>(last * 4));
      boxes.classes.assign(contents.box_class.begin() + static_cast<std::ptrdiff_t>(first),
                           contents.box_class.begin() + static_cast<std::ptrdiff_t>(last));
      boxes.crowd.assign(contents.box_crowd.begin() + static_cast<std::ptrdiff_t>(first),
                         contents.box_crowd.begin() + static_cast<std::ptrdiff_t>(last));
      boxes.keypoints.assign(
          contents.keypoints.begin() + static_cast<std::ptrdiff_t>(first * keypoint_values),
          contents.keypoints.begin() + static_cast<std::ptrdiff_t>(last * keypoint_values));
      parts.boxes = &boxes;
    }
    writer.append(pixels.data(), contents.checksums[row], contents.labels[row],
                  contents.samples[row], contents.variants[row], parts);
  }
  writer.commit();
}

}  // namespace

CompactResult compact_dataset(const fs::path& dataset) {
  DatasetChange change = begin_change(dataset, "compact");
  DatasetIndex& index = change.index;
  CompactResult result;
  result.generation = index.generation;

  // The rows each shard keeps, in order.
  const std::size_t shards = index.num_shards();
  std::vector<std::vector<uint32_t>> keep(shards);
  std::vector<uint64_t> dropped(shards, 0);
  for (std::size_t r = 0; r < index.num_records(); ++r) {
    const uint32_t k = index.records.shard[r];
    if (index.is_removed(static_cast<std::size_t>(index.records.sample[r]))) {
      ++dropped[k];
    } else {
      keep[k].push_back(index.records.row[r]);
    }
  }
  for (auto& rows : keep) std::sort(rows.begin(), rows.end());
  // A shard's place in the table is its number (its shard_index): only
  // shards at the end of the table can go whole.
  std::size_t kept_shards = shards;
  while (kept_shards > 0 && keep[kept_shards - 1].empty()) --kept_shards;

  uint64_t next_number = 0;
  for (const std::string& file : index.shards.file) {
    if (format::is_shard_file_name(file))
      next_number = std::max(next_number, shard_number(file) + 1);
  }
  std::vector<std::string> files = index.shards.file;
  for (std::size_t k = 0; k < kept_shards; ++k) {
    if (dropped[k] == 0) continue;
    if (keep[k].empty()) {
      ++result.shards_left;
      result.records_left += dropped[k];
      continue;
    }
    const std::string name = format::shard_file_name(next_number++);
    rewrite_shard(dataset, index, k, keep[k], name);
    files[k] = name;
    ++result.shards_rewritten;
    result.records_dropped += dropped[k];
  }
  for (std::size_t k = kept_shards; k < shards; ++k) {
    ++result.shards_dropped;
    result.records_dropped += dropped[k];
  }
  if (result.shards_rewritten == 0 && result.shards_dropped == 0) return result;

  // The record table without the dropped records, each kept one at its new row.
  RecordTable records;
  std::vector<std::vector<uint32_t>> new_row(shards);
  for (std::size_t k = 0; k < kept_shards; ++k) {
    if (dropped[k] == 0 || keep[k].empty()) continue;
    new_row[k].assign(index.shards.records[k], UINT32_MAX);
    for (std::size_t i = 0; i < keep[k].size(); ++i)
      new_row[k][keep[k][i]] = static_cast<uint32_t>(i);
  }
  for (std::size_t r = 0; r < index.num_records(); ++r) {
    const uint32_t k = index.records.shard[r];
    uint32_t row = index.records.row[r];
    if (k >= kept_shards) continue;
    if (!new_row[k].empty()) {
      row = new_row[k][row];
      if (row == UINT32_MAX) continue;
    }
    records.push_back(k, row, index.records.sample[r], index.records.variant[r]);
  }
  index.records = std::move(records);
  index.shards.file.assign(files.begin(), files.begin() + static_cast<std::ptrdiff_t>(kept_shards));
  std::vector<uint64_t> counts(kept_shards);
  for (std::size_t k = 0; k < kept_shards; ++k) {
    counts[k] = dropped[k] == 0 || keep[k].empty() ? index.shards.records[k] : keep[k].size();
  }
  index.shards.records = std::move(counts);

  std::vector<std::string> warnings;
  commit_change(dataset, index, "compact", 0, 0, index.num_samples(), warnings);
  result.generation = index.generation;
  return result;
}

}  // namespace imgpack
