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
#include "imgpack/dataset.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/growth.hpp"
#include "shard_check.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

// Rewrites the rows `keep` of shard `k` as `name`, the shard at place
// `place` of the new table: every kept record's pixels (and mask) checked
// against its checksum on the way, so that no damage passes into the new
// file. Throws imgpack::Error naming the shard.
void rewrite_shard(const fs::path& dir, const DatasetIndex& index, std::size_t k, std::size_t place,
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
      dir / name, shape, keep.size(), index.uuid, static_cast<uint32_t>(place),
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
                                 "imgpack verify)");
    }
    RecordParts parts;
    if (index.masks) {
      read_exact_at(fd.get(), path, mask.data(), mask.size(),
                    contents.masks_offset + uint64_t{row} * mask_bytes);
      if (checksum(mask.data(), mask.size()) != contents.mask_checksums[row]) {
        throw file_error(path, "the mask of row " + std::to_string(row) +
                                   " does not match its checksum: the shard is damaged (run "
                                   "imgpack verify)");
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

// The table's shards in their new order: old place of the shard at each new
// place. A shard that keeps no record gives its place to the last shard that
// keeps any (one shard rewritten per such hole, the rest stay where they
// are); shards at the end that keep none go.
std::vector<std::size_t> new_table(const std::vector<std::vector<uint32_t>>& keep) {
  std::vector<std::size_t> table;
  std::size_t last = keep.size();  // shards [last, end) are placed or gone
  for (std::size_t k = 0; k < last; ++k) {
    if (!keep[k].empty()) {
      table.push_back(k);
      continue;
    }
    while (last > k + 1 && keep[last - 1].empty()) --last;
    if (last <= k + 1) break;
    table.push_back(--last);
  }
  return table;
}

// Writes the shards that change (the rows `keep` of each) and commits the
// generation that lists them; counts what it did in `result`.
void write_compacted(const fs::path& dataset, DatasetIndex& index,
                     const std::vector<std::vector<uint32_t>>& keep, CompactResult& result) {
  const std::size_t shards = index.num_shards();
  const std::vector<std::size_t> table = new_table(keep);

  uint64_t next_number = first_unused_shard_number(index.shards.file);
  // Each shard at its new place: as it was, or written anew (without the
  // removed samples' records, or under its new place's number).
  ShardTable shards_after;
  std::vector<uint32_t> place_of(shards, UINT32_MAX);
  for (std::size_t p = 0; p < table.size(); ++p) {
    const std::size_t k = table[p];
    place_of[k] = static_cast<uint32_t>(p);
    const bool moved = p != k;
    std::string file = index.shards.file[k];
    if (moved || keep[k].size() != index.shards.records[k]) {
      file = format::shard_file_name(next_number++);
      rewrite_shard(dataset, index, k, p, keep[k], file);
      ++result.shards_rewritten;
      if (moved) ++result.shards_moved;
    }
    shards_after.file.push_back(file);
    shards_after.records.push_back(keep[k].size());
  }
  // The record table in its order without the dropped records, each kept one
  // at its shard's new place and its new row there.
  std::vector<std::vector<uint32_t>> new_row(shards);
  for (std::size_t k = 0; k < shards; ++k) {
    if (place_of[k] == UINT32_MAX) continue;
    new_row[k].assign(index.shards.records[k], UINT32_MAX);
    for (std::size_t i = 0; i < keep[k].size(); ++i)
      new_row[k][keep[k][i]] = static_cast<uint32_t>(i);
  }
  RecordTable records;
  for (std::size_t r = 0; r < index.num_records(); ++r) {
    const uint32_t k = index.records.shard[r];
    if (place_of[k] == UINT32_MAX) continue;
    const uint32_t row = new_row[k][index.records.row[r]];
    if (row == UINT32_MAX) continue;
    records.push_back(place_of[k], row, index.records.sample[r], index.records.variant[r]);
  }
  result.shards_dropped = shards - table.size();
  index.records = std::move(records);
  index.shards = std::move(shards_after);

  std::vector<std::string> warnings;
  commit_change(dataset, index, "compact", 0, 0, index.num_samples(), warnings);
}

}  // namespace

CompactResult compact_dataset(const fs::path& dataset) {
  DatasetChange change = begin_change(dataset, "compact");
  // Run again once the readers of the replaced files are done, it removes
  // them, whether or not anything is left to drop.
  clear_leftovers(dataset, change);
  DatasetIndex& index = change.index;
  CompactResult result;
  result.generation = index.generation;
  result.leftovers_removed = change.leftovers_removed;

  // The rows each shard keeps, in order.
  const std::size_t shards = index.num_shards();
  std::vector<std::vector<uint32_t>> keep(shards);
  for (std::size_t r = 0; r < index.num_records(); ++r) {
    const uint32_t k = index.records.shard[r];
    if (index.is_removed(static_cast<std::size_t>(index.records.sample[r]))) {
      ++result.records_dropped;
    } else {
      keep[k].push_back(index.records.row[r]);
    }
  }
  if (result.records_dropped == 0) return result;
  for (auto& rows : keep) std::sort(rows.begin(), rows.end());

  const uint64_t began_at = index.generation;
  try {
    // Every shard as a reader opens them, before anything is written: its
    // structure and identity, and each row's label, sample and variant
    // against the index. The rewrite copies those columns and renumbers
    // shards, so damage in any of them would pass into the next generation
    // with the rewrite's fresh checksums; the pixels of the records it
    // copies are checked on the way.
    (void)Dataset::open(dataset);
    write_compacted(dataset, index, keep, result);
  } catch (...) {
    abandon_change(dataset, began_at, "nothing was compacted");
  }
  result.generation = index.generation;
  result.replaced = unlisted_shard_files(dataset, index);  // the change began with none
  return result;
}

}  // namespace imgpack
