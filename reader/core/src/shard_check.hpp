// Checking one shard file's structure.
//
// Dataset::open(), verify_dataset() and `imgpack convert --resume` all judge
// shards with read_shard() (and their pixels with check_records(),
// record_check.hpp), so a shard that one of them accepts is a shard that all
// of them accept. read_shard() reads only HDF5 metadata and the per-row
// columns, and only reads.
//
// Safe to call from several threads at once; the structs are plain values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "imgpack/column.hpp"
#include "mapped_region.hpp"

namespace imgpack {

// What a shard must be: shard `shard` of dataset `uuid`, holding `records`
// records of height x width x channels bytes. `expected_by` names where the
// expectation comes from, for error messages ("index.h5 expects [...]").
struct ShardExpectation {
  std::string uuid;
  uint64_t shard = 0;
  uint64_t records = 0;
  uint64_t height = 0;
  uint64_t width = 0;
  uint64_t channels = 0;
  std::string expected_by = "index.h5";
  // The dataset has masks: /masks [records, H, W] and /mask_checksum must
  // be there; without, they must not.
  bool masks = false;
  // Also accepted as the shard's index: a merge renumbers the shards it
  // adopts, so a merge that stopped may have renumbered a shard it had not
  // moved yet. ShardContents::shard says which of the two the file holds.
  std::optional<uint64_t> or_shard;
  // The dataset has boxes of `box_classes` classes with `keypoints` keypoints
  // each: /boxes and its companions must be there; without, they must not.
  bool boxes = false;
  uint64_t box_classes = 0;
  uint64_t keypoints = 0;
  // A shard of a part of a conversion ("1-of-3"): its `part` attribute must
  // name it. Parts number their samples and shards alike, so a shard copied
  // from another part can agree with this one's index in everything else.
  // Empty: not checked (a merged dataset's shards keep the attribute).
  std::string part{};
};

// What a structurally intact shard holds: where its pixels are, and its
// per-row columns (each of length `records`).
struct ShardContents {
  uint64_t shard = 0;          // its shard_index attribute
  uint64_t images_offset = 0;  // byte offset of /images in the file (0 if no records)
  uint64_t images_bytes = 0;   // records * height * width * channels
  Column<int32_t> labels;
  Column<int64_t> samples;
  Column<uint16_t> variants;
  Column<uint64_t> checksums;  // stored XXH3-64 of each row's bytes
  // With masks (ShardExpectation::masks): where /masks is and its checksums.
  uint64_t masks_offset = 0;        // byte offset of /masks (0 if none or no records)
  uint64_t masks_bytes = 0;         // records * height * width
  Column<uint64_t> mask_checksums;  // stored XXH3-64 of each row's mask bytes
  // With boxes (ShardExpectation::boxes): the ragged tables, whole (format.hpp).
  std::vector<float> boxes;          // [B x 4]
  std::vector<int32_t> box_class;    // [B]
  std::vector<uint8_t> box_crowd;    // [B]
  std::vector<float> keypoints;      // [B x K x 3]
  std::vector<int64_t> box_offsets;  // [records + 1]
};

// Checks the shard at `path`, whose open descriptor reported `file_size`
// bytes (pass the size of the descriptor that will be read or mapped, so the
// check is about that very file): no user block; format version, dataset
// uuid and shard index (or the other accepted index) as expected; /images uint8 of shape [records,
// H, W, C], contiguous, unfiltered, not external, allocated and inside the file; /labels, /sample,
// /variant and /checksum of length `records`; with masks, /masks uint8 [records, H, W] held like
// /images and /mask_checksum of length `records`, and without, neither of them; with boxes, the box
// tables of consistent lengths, offsets that start at 0, never decrease and end at the boxes'
// count, class ids in range, crowd flags 0 or 1, keypoint visibilities 0, 1 or 2, finite
// coordinates, and every record's rows hashing to its /box_checksum (the tables are small: they are
// read whole and checked here, so every reader of a shard checks them); without, none of them.
// Whether the columns agree with an index is the caller's business. With `mapping`, a read-only
// mapping of the whole file (file_size bytes), the columns are viewed in it where they lie
// contiguous (as imgpack writes them) and keep it alive; without, they are read. Throws
// imgpack::Error naming `path` and the first problem found. Keeps no HDF5 handle open after it
// returns.
ShardContents read_shard(const std::filesystem::path& path, const ShardExpectation& expected,
                         uint64_t file_size,
                         const std::shared_ptr<const MappedRegion>& mapping = nullptr);

}  // namespace imgpack
