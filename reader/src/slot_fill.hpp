// Filling a slot of the loader's ring (internal to the reader).
//
// LoaderCore decides *when*: which chunk of which batch a reader thread takes,
// under the ring's lock. SlotFiller does the rest, without any lock: *where*
// a record's bytes come from (the shard mappings, or reads for records the
// page cache does not hold: ReadPath) and *how* they become the slot's
// contents. The how is fixed for a loader's life and chosen once, when the
// loader is made, as one RecordCopy per layer (images, masks): copied,
// cut to the online crop's window, converted to float on the host, or only
// pointed at for direct upload. A record's window is drawn once for both of
// its layers and its boxes; the checksum check is the same for both layers.
// A batch's boxes go straight into its slot's block (BatchBoxes), laid out
// when the slot is opened for the batch.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "box_window.hpp"
#include "epoch_batches.hpp"
#include "imgpack/dataset.hpp"
#include "imgpack/loader.hpp"
#include "imgpack/output_format.hpp"
#include "imgpack/record_shape.hpp"
#include "imgpack/upload_backend.hpp"
#include "record_reads.hpp"
#include "record_window.hpp"

namespace imgpack::detail {

// The memory and events of one slot of the ring; reused batch after batch.
// With masks, a slot's staging (and device) memory holds the batch's masks
// right after room for `capacity` images: [images][masks], so that one copy
// uploads a full batch's images and masks.
struct Slot {
  Memory staging;  // uint8 records written by reader threads (only their masks when converting on
                   // the host)
  Memory device;   // device copy of `staging` (CUDA)
  Memory output;   // converted images (float formats)
  uint8_t* host_images = nullptr;  // where reader threads write uint8 images (in `staging`)
  uint8_t* host_masks = nullptr;   // where reader threads write the masks (in `staging`)
  const void* images = nullptr;    // what Batch::data() shows
  const uint8_t* masks = nullptr;  // what Batch::masks() shows
  std::vector<int32_t> labels;
  std::vector<uint8_t> multilabel;  // capacity x C, with multi-label classes
  std::vector<float> targets;       // capacity x T, with numeric targets
  std::vector<int64_t> samples;
  std::vector<uint64_t> records;
  // With boxes: the batch's block, laid out when the slot is opened
  // (SlotFiller::open()), each entry's rows written into it by the reader
  // threads, its gaps closed once the batch is filled; Batch::boxes() and
  // its companions show it.
  BatchBoxes boxes;
  std::vector<const void*> sources;            // direct upload: where each record is in the mapping
  std::vector<const void*> mask_sources;       // and its mask
  std::unique_ptr<UploadEvent> upload_done;    // fires when the slot's upload is complete
  std::unique_ptr<UploadEvent> consumer_done;  // recorded on the consumer's stream
  bool consumer_pending = false;               // the next upload must wait for consumer_done
};

// A reader thread's means of reading records from their files (the read
// path): one for the images and, with masks, one for the masks; made on
// first use.
struct ThreadReaders {
  std::optional<RecordReader> images;
  std::optional<RecordReader> masks;
};

// What the loader decided about its ring, which the filling follows.
struct SlotPlan {
  bool convert_on_host = false;  // float output made by the reader threads
  bool read_by_device = false;   // staging is read only by the device's copy engine
  bool direct = false;           // the device copies from the mappings: slots hold pointers
  uint64_t memory = 0;           // what the page cache may use (memory_for_page_cache())
};

// How one layer (images or masks) of a record becomes the slot's: chosen
// once per loader (SlotFiller's constructor), called per record.
class RecordCopy {
 public:
  virtual ~RecordCopy() = default;
  // Places the stored bytes `src` of the record at position `pos` of `slot`,
  // cut to `window` where the loader crops or flips.
  virtual void place(Slot& slot, std::size_t pos, const uint8_t* src,
                     const RecordWindow& window) const = 0;
  // Where a read of the record should land so that place() finds it in
  // place and copies nothing; null when it must land elsewhere first.
  virtual uint8_t* read_target(Slot& /*slot*/, std::size_t /*pos*/) const { return nullptr; }
};

class SlotFiller {
 public:
  // Throws what opening the read path's files throws (imgpack::Error).
  SlotFiller(const Dataset& dataset, const LoaderOptions& options, const SlotPlan& plan);
  ~SlotFiller();
  SlotFiller(const SlotFiller&) = delete;
  SlotFiller& operator=(const SlotFiller&) = delete;

  // Records a reader thread takes at once: about 1 MiB of them, and on the
  // read path at least as many as it keeps in flight.
  std::size_t chunk_records() const { return chunk_records_; }
  // The read path's files when some records may be read rather than copied
  // from the mappings, null otherwise.
  const ShardFiles* shard_files() const { return images_files_.get(); }

  // Prepares `slot` for batch `batch` of `work` before any of its entries is
  // filled: with boxes, lays out the batch's box block. Called by one
  // thread, ordered before the fill() calls of the batch (the ring's lock).
  void open(const EpochBatches& work, std::size_t batch, Slot& slot) const;

  // Fills entries [begin, end) of batch `batch` of `work` into positions
  // [begin, end) of `slot`: the records' pixels (and masks) with their
  // labels, samples, record ids and boxes. `in_memory`: the shard prefetcher has
  // read these records' shards into the page cache, so they are copied from
  // the mappings. Safe to call from several threads at once on different
  // slots or entries; each thread passes its own `readers`. Throws
  // imgpack::Error naming the shard for a record that does not match its
  // checksum (LoaderOptions::verify_checksums), a read that fails, and a
  // shard truncated or rewritten in place under the loader.
  void fill(const EpochBatches& work, std::size_t batch, std::size_t begin, std::size_t end,
            Slot& slot, ThreadReaders& readers, bool in_memory) const;

  // Records read from their files so far (LoaderStats::records_read).
  uint64_t records_read() const { return records_read_.load(std::memory_order_relaxed); }
  void reset_records_read() { records_read_.store(0, std::memory_order_relaxed); }

 private:
  // Whether the chunk starting at `first_record` is read with pread (ReadPath).
  bool reads_chunk(uint64_t first_record) const;
  // Whether every record of a chunk read with pread can be read from its
  // shard's file (ShardFiles::readable): a chunk holding one whose file is
  // gone from its path is copied from the mappings instead.
  bool files_readable(std::span<const uint64_t> records) const;
  // The chunk a fill() places: `records` at positions [begin, begin +
  // records.size()) of the slot, each cut to its window, with the checksums
  // their shards store (images, then masks, per record) when the loader
  // verifies them.
  struct Chunk {
    std::size_t begin;
    std::span<const uint64_t> records;
    std::span<const RecordWindow> windows;
    std::span<const uint64_t> checksums;
  };
  // Reads the stored checksums of `records` into `out` (per record: the
  // image's, then the mask's where the dataset has masks).
  void read_checksums(std::span<const uint64_t> records, std::vector<uint64_t>& out) const;
  // Throws if `src`, the `layer` of the chunk's record `i`, does not match
  // its stored checksum.
  void check(const Chunk& chunk, std::size_t i, const uint8_t* src, ShardFiles::Layer layer) const;
  // The chunk's pixels and masks, from the shard mappings or their files;
  // then its boxes.
  void copy_from_mappings(Slot& slot, const Chunk& chunk) const;
  void read_from_files(Slot& slot, const Chunk& chunk, ThreadReaders& readers) const;
  void place_boxes(Slot& slot, const Chunk& chunk) const;
  void place_image(Slot& slot, const Chunk& chunk, std::size_t i, const uint8_t* src) const;
  void place_mask(Slot& slot, const Chunk& chunk, std::size_t i, const uint8_t* src) const;
  // Throws the error for a fault (SIGBUS) while reading `what` of `record`
  // from its shard's mapping: the shard shrank or was rewritten in place
  // since the dataset was opened.
  [[noreturn]] void mapping_faulted(uint64_t record, const char* what) const;

  const Dataset& dataset_;
  const LoaderOptions& options_;
  const RecordShape stored_;     // the dataset's records
  const RecordShape delivered_;  // what a batch holds per image (the crop's window)
  const bool windowed_;          // crop or flip while copying
  const bool random_crop_;
  const bool direct_;
  const bool boxes_;          // the dataset has boxes
  BoxWindowRules box_rules_;  // with boxes
  BoxCounts box_counts_;      // with boxes
  std::unique_ptr<const RecordCopy> images_;
  std::unique_ptr<const RecordCopy> masks_;  // null without masks
  std::unique_ptr<ShardFiles> images_files_;
  std::unique_ptr<ShardFiles> masks_files_;
  std::size_t chunk_records_ = 1;
  mutable std::atomic<uint64_t> records_read_{0};
};

}  // namespace imgpack::detail
