// A validated, memory-mapped, read-only view of an imgpack dataset.
//
// Dataset::open() reads index.h5 and the metadata of every shard once through
// HDF5, checks everything the format promises (version, dataset uuid, dtype,
// shape, contiguous allocated storage inside the file, per-record columns
// agreeing with the index), closes every HDF5 handle and maps each shard's
// pixels read-only. After open() no HDF5 call is ever made: record bytes are
// plain pointers into the mappings. A dataset with segmentation masks
// (has_masks()) maps each shard's /masks beside its /images: every record
// has an H x W uint8 label map, read like its pixels.
//
// A Dataset is a cheap handle: copies share the same mappings, which stay
// valid while any copy (or a Loader made from one) lives. All const methods
// are safe to call from many threads at once.
//
// A file that is truncated, foreign, of another dataset or laid out in a way
// that cannot be mapped is an imgpack::Error at open naming the file, never a
// crash later. The one thing open() cannot guard against is a shard being
// truncated or rewritten in place *after* it was mapped: do not modify a
// dataset that is being read (imgpack's own tools never do; they write new
// files and rename them into place, which leaves open mappings intact).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>

#include "imgpack/dataset_index.hpp"

namespace imgpack {

struct DatasetOpenOptions {
  // Also read every record once and compare it with its stored XXH3-64
  // checksum (slow: reads the whole dataset). Off by default; `imgpack verify`
  // does this for a whole dataset, Loader can do it per record as it reads.
  bool verify_checksums = false;
  // What of index.h5 to read (all of it by default; the records always). A
  // Dataset opened without the sample paths or group names has them empty in
  // index(); everything else works as usual, and errors that would quote a
  // sample's path give only its number.
  IndexReadOptions index;
};

class Dataset {
 public:
  // Opens and validates DIR. Throws imgpack::Error naming the offending file
  // (index.h5 or a shard) and the problem: missing index.h5 ("not a complete
  // imgpack dataset"), a missing or truncated shard, a file that is not an
  // imgpack shard, a shard of another dataset (uuid), a wrong dtype or shape,
  // chunked/compact/virtual/external/unallocated /images, or columns that
  // disagree with the index. Set HDF5_USE_FILE_LOCKING=FALSE on file systems
  // without flock (NFS); the error says so when that is the cause.
  static Dataset open(const std::filesystem::path& dir, const DatasetOpenOptions& options = {});

  Dataset() = default;  // an empty handle; only assignment and destruction are valid

  const std::filesystem::path& path() const;
  // The whole index (samples, records, shards, splits), as read at open().
  const DatasetIndex& index() const;

  uint32_t height() const { return index().height; }
  uint32_t width() const { return index().width; }
  uint32_t channels() const { return index().channels; }
  // H * W * C: the bytes of one record.
  std::size_t record_bytes() const;
  std::size_t num_records() const;
  std::size_t num_samples() const;
  std::size_t num_shards() const;

  // The pixels of record `r` (row-major H x W x C uint8), a pointer into the
  // shard's read-only mapping: valid while this Dataset or a copy lives.
  // `r` must be < num_records() (unchecked: this is the hot path).
  const uint8_t* record_data(uint64_t r) const;
  std::span<const uint8_t> record(uint64_t r) const { return {record_data(r), record_bytes()}; }

  // Segmentation masks (index().masks): whether the dataset has them, the
  // bytes of one record's mask (H * W; 0 without masks) and the label of
  // mask areas outside the source image.
  bool has_masks() const { return index().masks; }
  std::size_t mask_bytes() const { return index().mask_bytes(); }
  uint8_t mask_fill() const { return index().mask_fill; }
  // The mask of record `r` (row-major H x W uint8 labels), a pointer into
  // the shard's read-only mapping, valid while this Dataset or a copy lives.
  // Requires has_masks() and r < num_records() (unchecked: the hot path).
  const uint8_t* mask_data(uint64_t r) const;
  std::span<const uint8_t> mask(uint64_t r) const { return {mask_data(r), mask_bytes()}; }

  // Reads the pixels of record `r` into out[0, record_bytes()) with pread(2)
  // from its shard file instead of through the mapping. For records not in
  // the page cache: one read asks the storage for exactly the record (the
  // file's readahead is advised off), and threads calling it keep that many
  // reads in flight, where faults on the mapping ask for a few pages at a
  // time plus the kernel's readaround. The shard's file is opened on first
  // use and stays open while the Dataset lives. Thread-safe. Throws
  // imgpack::Error naming the shard file on an open or read error or a
  // short read.
  void read_record(uint64_t r, uint8_t* out) const;
  // Reads the mask of record `r` into out[0, mask_bytes()) the same way.
  // Requires has_masks(). Thread-safe; throws like read_record().
  void read_mask(uint64_t r, uint8_t* out) const;
  // Whether the page cache holds the page in the middle of record `r`
  // (mincore(2) on one page): a cheap test of whether record_data(r) reads
  // from memory or from storage. Pages are cached by the reads that needed
  // them and the readahead around those, so a record whose middle page is
  // cached is most likely cached whole. Thread-safe; false where mincore
  // fails.
  bool record_cached(uint64_t r) const;

  // Per-record metadata (r < num_records(), unchecked).
  uint32_t record_shard(uint64_t r) const;
  int32_t record_label(uint64_t r) const;   // label of the record's source sample, -1 = none
  int64_t record_sample(uint64_t r) const;  // row in index().sample_path
  uint16_t record_variant(uint64_t r) const;
  uint64_t record_checksum(uint64_t r) const;       // XXH3-64 stored in the shard
  uint64_t record_mask_checksum(uint64_t r) const;  // of its mask (0 without masks)

  // Every record, in the order they lie in the files (shard by shard, row by row).
  std::span<const uint64_t> storage_order() const;
  // Position of record `r` in storage_order().
  uint64_t storage_position(uint64_t r) const;
  // The records of source sample `s`, by ascending variant (empty if the
  // sample has no record).
  std::span<const uint64_t> sample_records(uint64_t s) const;

  // Path of shard `k` and the bytes of its mapped /images.
  std::filesystem::path shard_path(std::size_t k) const;
  std::span<const uint8_t> shard_images(std::size_t k) const;
  // The bytes of shard k's mapped /masks (empty without masks).
  std::span<const uint8_t> shard_masks(std::size_t k) const;

  // Compares every record (and its mask) with its stored checksum; throws
  // imgpack::Error naming the shard, row and sample of the first mismatch.
  void verify_checksums() const;

  explicit operator bool() const { return state_ != nullptr; }

  struct State;

 private:
  explicit Dataset(std::shared_ptr<const State> state) : state_(std::move(state)) {}
  std::shared_ptr<const State> state_;
};

}  // namespace imgpack
