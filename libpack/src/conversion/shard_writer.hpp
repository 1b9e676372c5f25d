// Writing records into shard files, crash-safely.
//
// ShardWriter writes one shard: it creates SHARD.tmp with /images (and, for a
// dataset with masks, /masks) allocated contiguously for `capacity` records
// (4096-aligned, never filled), writes the records' pixels into that storage
// front to back in large writes past the page cache (RegionWriter), and
// commit() adds the per-record columns and attributes, fsyncs and renames
// the file into place. Where the file system takes no O_DIRECT, each write's
// pixels are handed to the kernel's write-back at once (start_writeback),
// and every 16 MiB an fdatasync of the file runs on a thread of its own (one
// at a time; a failure fails the shard), so the storage works, and empties
// its write cache, while the conversion goes on rather than in the commit's
// fsync. A shard that ends
// with fewer records than its capacity is compacted into an exactly sized
// file first (a kernel-side copy of its pixels and masks). A ShardWriter
// destroyed before commit() removes its temporary file.
//
// DatasetWriter rolls records over a sequence of shards of at most
// `shard_bytes` of pixels (images and masks) each and keeps the record table
// for the index. A full shard's fsync and rename run on a thread of their
// own while the next shard fills, so the conversion does not wait for the
// storage at every shard.
//
// In a dataset with boxes every record comes with its RecordBoxes, kept in
// memory until commit() writes the shard's ragged box tables (format.hpp).
//
// Neither class is thread-safe: one writer thread feeds them, in order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "conversion/region_writer.hpp"
#include "files.hpp"
#include "h5.hpp"
#include "imgpack/dataset_index.hpp"
#include "targets/record_boxes.hpp"

namespace imgpack {

// What every record of a dataset carries besides its pixels.
struct RecordExtras {
  bool masks = false;         // an H x W label map (/masks)
  bool boxes = false;         // boxes (/boxes and its companions)
  std::size_t keypoints = 0;  // K keypoints per box (with boxes)
  // The part of a conversion the shards are written for ("1-of-3", its
  // folder's name), kept in each shard's `part` attribute; empty outside a
  // part. A shard copied into another part's folder is told by it.
  std::string part{};
};

// One record's companions of its pixels, as RecordExtras says it has them.
struct RecordParts {
  const uint8_t* mask = nullptr;
  uint64_t mask_checksum = 0;
  const RecordBoxes* boxes = nullptr;
};

class ShardWriter {
 public:
  // `pixel_writes` chooses how the pixels reach the file (tests compare the
  // two; the bytes are the same).
  ShardWriter(std::filesystem::path final_path, RecordShape shape, uint64_t capacity,
              std::string dataset_uuid, uint32_t shard_index, const RecordExtras& extras = {},
              RegionWriter::Mode pixel_writes = RegionWriter::Mode::direct_where_possible);
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // Appends one record of shape.bytes() pixels and, in a shard with masks,
  // its mask of shape.pixels() bytes with the mask's checksum, and in one
  // with boxes its boxes. Throws if the shard is full, a mask or the boxes
  // are missing (or hold another number of keypoints) or a write fails
  // (naming the file).
  void append(const uint8_t* pixels, uint64_t checksum, int32_t label, int64_t sample,
              uint16_t variant, const RecordParts& parts = {});

  uint64_t size() const { return labels_.size(); }
  uint64_t capacity() const { return capacity_; }
  bool full() const { return size() == capacity_; }

  // Finishes the file and renames it into place. Requires size() > 0.
  void commit() {
    seal();
    publish();
  }

  // commit() in two halves, so that the second can overlap other work.
  // seal() writes what the shard holds and closes it (the HDF5 part, on the
  // writer's thread); nothing can be appended after it. publish() then makes
  // the sealed file durable and renames it into place, on any one thread,
  // while nothing else touches this writer. Both throw naming the file.
  void seal();
  void publish();

 private:
  void append_boxes(const RecordBoxes* record);
  // Counts `bytes` more written through the page cache; past
  // kBackgroundSyncBytes since the last one, starts an fdatasync on its own
  // thread unless one still runs.
  void sync_in_background(uint64_t bytes);
  // Creates the temporary file and its pixel tables (the constructor's work).
  void create_file(RegionWriter::Mode pixel_writes);
  // Stops the writes in flight and, unless committed, removes the files.
  void discard() noexcept;
  // Waits for the fdatasync started last; throws naming the file if it failed.
  void finish_background_sync();
  void write_columns_and_attrs(h5::File& file);
  void seal_compacted();

  std::filesystem::path final_path_;
  std::filesystem::path tmp_path_;
  RecordShape shape_;
  uint64_t capacity_;
  std::string uuid_;
  uint32_t shard_index_;

  bool masks_;
  RecordExtras extras_;

  h5::File file_;
  h5::Handle images_;
  h5::Handle masks_dataset_;
  // The temporary file again, for the background fdatasync, and where its
  // pixel datasets start in it.
  FileDescriptor writeback_fd_;
  uint64_t images_offset_ = 0;
  uint64_t masks_offset_ = 0;
  static constexpr uint64_t kBackgroundSyncBytes = uint64_t{16} << 20;
  uint64_t unsynced_bytes_ = 0;  // written since the last fdatasync started
  std::future<int> syncing_;     // that fdatasync: 0 or its errno
  // The writers of /images and /masks, until seal().
  std::optional<RegionWriter> pixels_;
  std::optional<RegionWriter> mask_pixels_;

  std::vector<int32_t> labels_;
  std::vector<int64_t> samples_;
  std::vector<uint16_t> variants_;
  std::vector<uint64_t> checksums_;
  std::vector<uint64_t> mask_checksums_;
  RecordBoxes boxes_;                 // every record's rows, in order
  std::vector<int64_t> box_offsets_;  // [size() + 1] with boxes
  std::vector<uint64_t> box_checksums_;
  // What publish() renames into place: the temporary file, or the exactly
  // sized copy of it seal() made (after which the temporary file goes).
  std::filesystem::path sealed_path_;
  bool sealed_ = false;
  bool committed_ = false;
};

// The first shard file number past every shard file name in `files` (0
// for none): where a change may number the files it writes without
// writing over one a dataset lists.
uint64_t first_unused_shard_number(const std::vector<std::string>& files);

class DatasetWriter {
 public:
  // `max_records` bounds the records that will be added, so the last shard is
  // usually created at its exact size. Records come in runs of `run_length`
  // (the variants of one image), which are never split across shards, so a
  // shard boundary is always an image boundary. Every record comes with
  // what `extras` says (ShardWriter).
  DatasetWriter(std::filesystem::path out_dir, RecordShape shape, uint64_t shard_bytes,
                std::string dataset_uuid, uint64_t max_records, uint32_t run_length = 1,
                const RecordExtras& extras = {});

  // A full shard is sealed on the writer's thread and published (made
  // durable and renamed into place) on a thread of its own while the next
  // shard fills, one at a time. on_seal hears of shard `k` when it is
  // sealed, on_commit once it is in place; both on the writer's thread, in
  // shard order, each shard's on_commit before the next one's on_seal, by
  // add() or finish(). Adopted shards are not reported.
  using ShardEvent = std::function<void(std::size_t k)>;
  void on_seal(ShardEvent callback) { on_seal_ = std::move(callback); }
  void on_commit(ShardEvent callback) { on_commit_ = std::move(callback); }

  void add(const uint8_t* pixels, uint64_t checksum, int32_t label, int64_t sample,
           uint16_t variant, const RecordParts& parts = {});

  // Takes over a complete shard already in the directory (a resumed
  // conversion), as the next shard, with its /sample and /variant columns.
  // Only before the first add().
  void adopt(const std::string& file, std::span<const int64_t> samples,
             std::span<const uint16_t> variants);

  // Continues a dataset whose shards and records these are (an append): new
  // shards take the places after them, in files numbered past every file
  // they list (a compacted dataset's files are not numbered by place), and
  // finish() hands back these tables followed by the new records. Only
  // before the first add() or adopt().
  void continue_after(const RecordTable& records, const ShardTable& shards);

  // Shards committed so far (the one being filled or published not included).
  std::size_t committed_shards() const {
    return shards_.size() - (current_ ? 1 : 0) - (publishing_ ? 1 : 0);
  }
  const std::string& shard_file(std::size_t k) const { return shards_.file[k]; }
  uint64_t shard_records(std::size_t k) const { return shards_.records[k]; }

  // The caller will add `records` fewer records than `max_records` announced
  // (a skipped input), so the last shard can still be sized exactly.
  void forgo(uint64_t records) { remaining_ -= std::min(records, remaining_); }

  // Commits the last shard, waits until every shard is in place, and moves
  // the record and shard tables into `index`.
  void finish(DatasetIndex& index);

  // For a caller giving up on an error: waits for a shard being published
  // and reports it (on_commit) if it is in place, so that what is durable is
  // journaled. Never throws; a failed publish or report is left unreported.
  void settle() noexcept;

  // Waits for a shard still being published (its error, if any, is lost:
  // only a writer abandoned on another error is destroyed before finish()).
  ~DatasetWriter();
  DatasetWriter(const DatasetWriter&) = delete;
  DatasetWriter& operator=(const DatasetWriter&) = delete;

  uint64_t records() const { return records_.size(); }
  uint64_t records_per_shard() const { return records_per_shard_; }

 private:
  void commit_current();
  // Reports the shard being published once it is in place: waiting for it
  // (`wait`), or only if it is done already. Throws what publish() threw.
  void collect_published(bool wait);

  std::filesystem::path out_dir_;
  RecordShape shape_;
  std::string uuid_;
  RecordExtras extras_;
  uint64_t records_per_shard_;
  uint64_t remaining_;  // upper bound on records still to come
  std::unique_ptr<ShardWriter> current_;
  // The sealed shard being published, shard `publishing_index_`, and its
  // publish() running on a thread of its own (declared after the writer, so
  // destroyed, that is waited for, before it).
  std::unique_ptr<ShardWriter> publishing_;
  std::size_t publishing_index_ = 0;
  std::future<void> published_;

  ShardEvent on_seal_;
  ShardEvent on_commit_;

  RecordTable records_;
  ShardTable shards_;
  // A new shard's file number less its place (continue_after()).
  uint64_t file_number_offset_ = 0;
};

}  // namespace imgpack
