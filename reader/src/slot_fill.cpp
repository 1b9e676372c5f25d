#include "slot_fill.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "imgpack/checksum.hpp"
#include "imgpack/error.hpp"
#include "mapping_fault.hpp"
#include "record_copy.hpp"

namespace imgpack::detail {

namespace {

// Reader threads take about this many bytes at once: one lock per chunk,
// small enough to spread a batch over many threads.
constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

using Layer = ShardFiles::Layer;

// Where a layer's uint8 bytes go in a slot: Slot::host_images or Slot::host_masks.
using SlotBytes = uint8_t* Slot::*;
// Where direct upload finds a layer's records: Slot::sources or Slot::mask_sources.
using SlotSources = std::vector<const void*> Slot::*;

// The whole record, to the slot (a read lands there directly).
class WholeCopy final : public RecordCopy {
 public:
  WholeCopy(SlotBytes base, std::size_t bytes, bool streaming)
      : base_(base), bytes_(bytes), streaming_(streaming) {}
  void place(Slot& slot, std::size_t pos, const uint8_t* src,
             const RecordWindow& /*window*/) const override {
    uint8_t* dst = read_target(slot, pos);
    if (src == dst) return;  // read into the slot already
    if (streaming_) {
      copy_streaming(dst, src, bytes_);
    } else {
      std::memcpy(dst, src, bytes_);
    }
  }
  uint8_t* read_target(Slot& slot, std::size_t pos) const override {
    return slot.*base_ + pos * bytes_;
  }

 private:
  SlotBytes base_;
  std::size_t bytes_;
  bool streaming_;  // staging only the device's copy engine reads
};

// The record's window, to the slot, with streaming stores.
class WindowCopy final : public RecordCopy {
 public:
  WindowCopy(SlotBytes base, RecordShape stored, RecordShape delivered)
      : base_(base), stored_(stored), delivered_(delivered) {}
  void place(Slot& slot, std::size_t pos, const uint8_t* src,
             const RecordWindow& window) const override {
    copy_window(src, stored_, slot.*base_ + pos * delivered_.bytes(), delivered_, window,
                Stores::streaming);
  }

 private:
  SlotBytes base_;
  RecordShape stored_;
  RecordShape delivered_;
};

// The whole record (or its window first, into a buffer of the reader
// thread), converted to float on the host into the slot's output.
class HostConversion final : public RecordCopy {
 public:
  HostConversion(const LoaderOptions& options, RecordShape stored, RecordShape delivered,
                 bool windowed)
      : format_(options.output),
        norm_(Normalization::from_mean_std(options.mean.data(), options.stddev.data(),
                                           stored.channels)),
        stored_(stored),
        delivered_(delivered),
        output_bytes_(delivered.bytes() * output_element_bytes(options.output)),
        windowed_(windowed) {}
  void place(Slot& slot, std::size_t pos, const uint8_t* src,
             const RecordWindow& window) const override {
    auto* out = static_cast<uint8_t*>(slot.output.data()) + pos * output_bytes_;
    if (windowed_) {
      thread_local std::vector<uint8_t> window_pixels;
      window_pixels.resize(delivered_.bytes());
      copy_window(src, stored_, window_pixels.data(), delivered_, window);
      src = window_pixels.data();
    }
    convert_record_host(src, out, format_, delivered_, norm_);
  }

 private:
  OutputFormat format_;
  Normalization norm_;
  RecordShape stored_;
  RecordShape delivered_;
  std::size_t output_bytes_;
  bool windowed_;
};

// Direct upload: the device copies the record from the mapping itself.
class MappingPointer final : public RecordCopy {
 public:
  explicit MappingPointer(SlotSources sources) : sources_(sources) {}
  void place(Slot& slot, std::size_t pos, const uint8_t* src,
             const RecordWindow& /*window*/) const override {
    (slot.*sources_)[pos] = src;
  }

 private:
  SlotSources sources_;
};

// How the layer at `base` (`sources` for direct upload) of shape `stored`,
// delivered as `delivered`, becomes the slot's.
std::unique_ptr<const RecordCopy> choose_copy(const SlotPlan& plan, bool windowed, SlotBytes base,
                                              SlotSources sources, RecordShape stored,
                                              RecordShape delivered) {
  if (plan.direct) return std::make_unique<MappingPointer>(sources);
  if (windowed) return std::make_unique<WindowCopy>(base, stored, delivered);
  return std::make_unique<WholeCopy>(base, stored.bytes(), plan.read_by_device);
}

}  // namespace

SlotFiller::SlotFiller(const Dataset& dataset, const LoaderOptions& options, const SlotPlan& plan)
    : dataset_(dataset),
      options_(options),
      stored_{dataset.height(), dataset.width(), dataset.channels()},
      delivered_(delivered_shape(options.crop, stored_)),
      windowed_(!options.crop.is_identity()),
      random_crop_(random_windows(options)),
      direct_(plan.direct),
      boxes_(dataset.has_boxes()) {
  const RecordShape stored_mask{stored_.height, stored_.width, 1};
  const RecordShape delivered_mask{delivered_.height, delivered_.width, 1};
  if (boxes_) {
    box_rules_.min_visible = dataset.index().box_min_visible;
    box_rules_.keypoint_flip = dataset.index().keypoint_flip;
    box_counts_ = BoxCounts(dataset);
  }
  if (plan.convert_on_host) {
    images_ = std::make_unique<HostConversion>(options, stored_, delivered_, windowed_);
  } else {
    images_ = choose_copy(plan, windowed_, &Slot::host_images, &Slot::sources, stored_, delivered_);
  }
  if (dataset.has_masks()) {
    masks_ = choose_copy(plan, windowed_, &Slot::host_masks, &Slot::mask_sources, stored_mask,
                         delivered_mask);
  }

  std::size_t chunk = kChunkBytes / (delivered_.bytes() + (masks_ ? delivered_mask.bytes() : 0));
  if (options.read_path != ReadPath::mapped && !direct_) {
    const uint64_t bytes = dataset.num_records() * (dataset.record_bytes() + dataset.mask_bytes());
    const bool direct_io = options.direct_io == DirectIo::on ||
                           (options.direct_io == DirectIo::automatic && bytes > plan.memory);
    images_files_ = std::make_unique<ShardFiles>(dataset, Layer::images, direct_io);
    if (masks_) masks_files_ = std::make_unique<ShardFiles>(dataset, Layer::masks, direct_io);
    // A chunk is what one thread keeps in flight when it reads.
    chunk = std::max<std::size_t>(chunk, options.reads_in_flight);
  }
  chunk_records_ = std::max<std::size_t>(chunk, 1);
}

SlotFiller::~SlotFiller() = default;

void SlotFiller::open(const EpochBatches& work, std::size_t batch, Slot& slot) const {
  if (!boxes_) return;
  slot.boxes.lay_out(
      box_counts_,
      std::span<const uint64_t>(work.entries).subspan(work.begin(batch), work.size(batch)));
}

void SlotFiller::fill(const EpochBatches& work, std::size_t batch, std::size_t begin,
                      std::size_t end, Slot& slot, ThreadReaders& readers, bool in_memory) const {
  if (begin >= end) return;  // a chunk past the end of a short last batch
  const std::span<const uint64_t> records(work.entries.data() + batch * options_.batch_size + begin,
                                          end - begin);
  // Each record's window, drawn once for its image, its mask and its boxes;
  // one buffer per reader thread.
  thread_local std::vector<RecordWindow> windows;
  windows.assign(records.size(), RecordWindow{});
  if (windowed_) {
    for (std::size_t i = 0; i < records.size(); ++i) {
      windows[i] = draw_window(options_.crop, random_crop_, stored_, delivered_,
                               options_.order.seed, work.epoch, dataset_.record_sample(records[i]),
                               dataset_.record_variant(records[i]));
    }
  }
  thread_local std::vector<uint64_t> checksums;
  checksums.clear();
  if (options_.verify_checksums) read_checksums(records, checksums);
  const Chunk chunk{begin, records, windows, checksums};
  if (in_memory || !reads_chunk(records.front()) || !files_readable(records)) {
    copy_from_mappings(slot, chunk);
  } else {
    read_from_files(slot, chunk, readers);
  }
  if (boxes_) place_boxes(slot, chunk);
}

void SlotFiller::mapping_faulted(uint64_t record, const char* what) const {
  throw detail::mapping_fault_error(
      dataset_.shard_path(dataset_.record_shard(record)),
      std::string(what) + " of row " + std::to_string(dataset_.index().records.row[record]));
}

// The shards store their checksums in columns of their own, mapped as the
// pixels are: read under the SIGBUS guard too, since records read with
// pread leave the mappings alone and a shard cut short after its pixels
// still has them to give.
void SlotFiller::read_checksums(std::span<const uint64_t> records,
                                std::vector<uint64_t>& out) const {
  const std::size_t layers = masks_ ? 2 : 1;
  out.resize(records.size() * layers);  // before the guard: it allocates
  volatile std::size_t current = 0;     // read after a jump out of the loop
  const void* fault = read_mapped([&] {
    for (std::size_t i = 0; i < records.size(); ++i) {
      current = i;
      out[i * layers] = dataset_.record_checksum(records[i]);
      if (masks_) out[i * layers + 1] = dataset_.record_mask_checksum(records[i]);
    }
  });
  if (fault != nullptr) mapping_faulted(records[current], "the stored checksum");
}

void SlotFiller::copy_from_mappings(Slot& slot, const Chunk& chunk) const {
  volatile std::size_t current = 0;  // read after a jump out of the loop
  const void* fault = read_mapped([&] {
    for (std::size_t i = 0; i < chunk.records.size(); ++i) {
      current = i;
      place_image(slot, chunk, i, dataset_.record_data(chunk.records[i]));
      if (masks_) place_mask(slot, chunk, i, dataset_.mask_data(chunk.records[i]));
    }
  });
  if (fault != nullptr) mapping_faulted(chunk.records[current], "the pixels");
}

void SlotFiller::read_from_files(Slot& slot, const Chunk& chunk, ThreadReaders& readers) const {
  records_read_.fetch_add(chunk.records.size(), std::memory_order_relaxed);
  if (!readers.images) readers.images.emplace(*images_files_, options_.reads_in_flight);
  readers.images->read(
      chunk.records, [&](std::size_t i) { return images_->read_target(slot, chunk.begin + i); },
      [&](std::size_t i, const uint8_t* pixels) { place_image(slot, chunk, i, pixels); });
  if (!masks_) return;
  if (!readers.masks) readers.masks.emplace(*masks_files_, options_.reads_in_flight);
  readers.masks->read(
      chunk.records, [&](std::size_t i) { return masks_->read_target(slot, chunk.begin + i); },
      [&](std::size_t i, const uint8_t* mask) { place_mask(slot, chunk, i, mask); });
}

// A record's box rows lie far from its pixels (and from the next record's
// rows): fetched one record at a time they stall the thread on a cache miss
// or two per record (where its rows start, then the rows). Looked up for the
// whole chunk first, then asked for together, their misses overlap. After
// the chunk's pixels, since copying those would evict rows fetched before.
// (The box tables are read into memory when the dataset is opened, not
// mapped.)
void SlotFiller::place_boxes(Slot& slot, const Chunk& chunk) const {
  thread_local std::vector<Dataset::BoxRows> rows;  // one buffer per reader thread
  rows.resize(chunk.records.size());
  for (std::size_t i = 0; i < chunk.records.size(); ++i) {
    rows[i] = dataset_.record_boxes(chunk.records[i]);
  }
  for (const Dataset::BoxRows& record_rows : rows) prefetch_boxes(record_rows);
  slot.boxes.prefetch_for_writing(chunk.begin, chunk.begin + chunk.records.size());
  for (std::size_t i = 0; i < chunk.records.size(); ++i) {
    slot.boxes.place(chunk.begin + i, rows[i], stored_, delivered_, chunk.windows[i], box_rules_);
  }
}

void SlotFiller::check(const Chunk& chunk, std::size_t i, const uint8_t* src,
                       ShardFiles::Layer layer) const {
  const bool image = layer == Layer::images;
  const uint64_t stored = chunk.checksums[i * (masks_ ? 2 : 1) + (image ? 0 : 1)];
  if (checksum(src, image ? dataset_.record_bytes() : dataset_.mask_bytes()) == stored) return;
  const uint64_t record = chunk.records[i];
  throw file_error(dataset_.shard_path(dataset_.record_shard(record)),
                   std::string(image ? "" : "the mask of ") + "row " +
                       std::to_string(dataset_.index().records.row[record]) + " (sample " +
                       std::to_string(dataset_.record_sample(record)) +
                       ") does not match its stored checksum");
}

void SlotFiller::place_image(Slot& slot, const Chunk& chunk, std::size_t i,
                             const uint8_t* src) const {
  if (options_.verify_checksums) check(chunk, i, src, Layer::images);
  const uint64_t record = chunk.records[i];
  const std::size_t pos = chunk.begin + i;
  images_->place(slot, pos, src, chunk.windows[i]);
  slot.labels[pos] = dataset_.record_label(record);
  const int64_t sample = dataset_.record_sample(record);
  const DatasetIndex& index = dataset_.index();
  if (index.has_multilabel()) {
    const std::span<const uint8_t> row = index.multilabel_of(static_cast<std::size_t>(sample));
    std::copy(row.begin(), row.end(), slot.multilabel.data() + pos * row.size());
  }
  if (index.has_targets()) {
    const std::span<const float> row = index.targets_of(static_cast<std::size_t>(sample));
    std::copy(row.begin(), row.end(), slot.targets.data() + pos * row.size());
  }
  slot.samples[pos] = sample;
  slot.records[pos] = record;
}

void SlotFiller::place_mask(Slot& slot, const Chunk& chunk, std::size_t i,
                            const uint8_t* src) const {
  if (options_.verify_checksums) check(chunk, i, src, Layer::masks);
  masks_->place(slot, chunk.begin + i, src, chunk.windows[i]);
}

bool SlotFiller::files_readable(std::span<const uint64_t> records) const {
  uint32_t checked = UINT32_MAX;
  for (const uint64_t r : records) {
    const uint32_t k = dataset_.record_shard(r);
    if (k == checked) continue;
    if (!images_files_->readable(k) || (masks_files_ && !masks_files_->readable(k))) return false;
    checked = k;
  }
  return true;
}

bool SlotFiller::reads_chunk(uint64_t first_record) const {
  switch (options_.read_path) {
    case ReadPath::mapped:
      return false;
    case ReadPath::read:
      return true;
    case ReadPath::automatic:
      break;
  }
  // Sequential order reads the files front to back, which the kernel's
  // readaround on the mapping already turns into large requests.
  return !direct_ && options_.order.mode != OrderMode::sequential &&
         !dataset_.record_cached(first_record);
}

}  // namespace imgpack::detail
