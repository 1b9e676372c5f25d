// Loader: batches of records, prefetched by reader threads into a ring of
// (pinned) host slots and uploaded to the device ahead of the training loop.
//
//   Dataset dataset = Dataset::open("data/train-224");
//   LoaderOptions options;
//   options.selection = {.split = "cv5", .fold = 0, .role = Role::train};
//   options.batch_size = 256;
//   options.device = Device::cuda(0);
//   options.output = OutputFormat::float32_nchw;  // normalized on the GPU
//   Loader loader(dataset, options);
//   for (uint64_t epoch = 0; epoch < 90; ++epoch) {
//     loader.set_epoch(epoch);
//     while (std::optional<Batch> batch = loader.next()) {
//       batch->wait_on_stream(stream);        // the upload is ordered before your work
//       train_step(batch->data_as<float>(), batch->labels(), stream);
//       batch->recycle_after(stream);         // the slot is reused only after that work
//     }
//   }
//
// Pipeline: `threads` reader threads copy records from the dataset's mappings
// into a ring of `prefetch` slots (cudaHostAlloc'd when uploading to a GPU,
// page-aligned memory otherwise; a few more while the consumer keeps batches
// alive, see LoaderOptions::prefetch); an upload stage issues, per batch and
// in batch order, cudaMemcpyAsync on its own stream into the slot's device
// buffer, the optional conversion kernel, and records the slot's ready event;
// next() hands out the batches in order. The reader threads never call HDF5,
// never allocate and take no lock per record (one per chunk of about 1 MiB).
//
// Segmentation masks: with a dataset that has them, every batch carries each
// record's mask beside its image (Batch::masks()), in the same slot and the
// same upload: the reader threads copy both (cutting the same crop window
// and flips from each) and the upload stage puts both on the device before
// the batch's ready event, a full batch's images and masks in one copy
// (direct upload gathers both from the mappings). Masks stay uint8 labels
// whatever the output format.
//
// What is delivered, and in which order, is a pure function of the dataset,
// the selection and the order options (see epoch_order.hpp): the thread count
// and prefetch depth never change it.
//
// Checkpoints: state() says where the loader is as a LoaderState (bytes or
// JSON for the checkpoint); restore() continues from one, on the same or on
// another number of ranks and batch size (see LoaderState below).
//
// Thread-safety: a Loader is used from one thread (construction, set_epoch,
// next, stats). Batches may be moved to and destroyed on any thread. Errors
// in the reader threads or the upload stage are rethrown from next().
// Destroying a Loader stops and joins its threads promptly (each finishes at
// most one chunk, the shard prefetcher's included) and frees the ring's
// slots but those of Batches still alive, which stay valid and free their
// slot when they die.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "imgpack/dataset.hpp"
#include "imgpack/epoch_order.hpp"
#include "imgpack/error.hpp"
#include "imgpack/output_format.hpp"
#include "imgpack/selection.hpp"
#include "imgpack/upload_backend.hpp"

namespace imgpack {

// What happens to the last batch of an epoch when the rank's records do not
// fill it: drop it, pad it to batch_size by repeating the epoch's first
// records (Batch::padding() says how many), or deliver it short.
enum class LastBatch { drop, pad, partial };

// How reader threads take records out of the shard files.
//   mapped     copy from the shards' read-only mappings: memory speed from
//              the page cache; a record not in it is read by page faults, a
//              few pages at a time, one fault in flight per thread.
//   read       read every record from its file: each reader thread keeps
//              LoaderOptions::reads_in_flight records of its chunk in flight
//              at once (io_uring; one at a time with pread(2) where the
//              kernel has no io_uring), which a disk needs to reach its
//              bandwidth. DirectIo says whether the reads bypass the page
//              cache.
//   automatic  per chunk of a batch: mapped when the page cache holds the
//              chunk's first record (Dataset::record_cached) or the order is
//              sequential (the kernel's readahead serves it), else read. A
//              page-cached dataset stays on the mapped path; one larger than
//              memory is read. In sequential order, and in shard-window
//              order of a dataset read through the page cache (DirectIo),
//              whole shards are read into memory ahead of the reader threads
//              instead, in large requests (LoaderStats::prefetched_bytes).
// The bytes delivered are the same on every path.
enum class ReadPath { automatic, mapped, read };

// Whether the read path (ReadPath) reads with O_DIRECT, past the page cache.
//   automatic  when the dataset's pixels are more than the memory the page
//              cache may use (physical memory, or a lower memory cgroup
//              limit of this process): caching records that do not fit would
//              only evict pages needed sooner, at the cost of a copy. A
//              dataset that fits is read through the page cache, which its
//              first epoch then fills for the next ones.
//   on, off    always, never.
// A file system that refuses O_DIRECT (tmpfs) is read through the page cache
// whatever this says. Records are read as the 4096-byte aligned span around
// them and copied into the slot (straight into it when their size is a
// multiple of 4096).
enum class DirectIo { automatic, on, off };

// How batches reach a CUDA device (LoaderOptions::direct_upload):
//   automatic  direct where it is the faster and safe choice, staged
//              otherwise: direct when nothing needs the host to touch the
//              records (no crop or flip, no verify_checksums, no
//              ReadPath::read, no DirectIo::on) and the dataset's shards
//              fit in half the memory the page cache may use (registering
//              pins all of them); LoaderStats says which and why.
//   on         direct: the device's copy engine reads each batch's records
//              straight from the page cache through the registered shard
//              mappings (0.94-0.99x cudaMemcpy on an H200 where staged
//              reached 0.61-0.77x: docs/BENCHMARKS.md).
//   off        staged: reader threads copy the records into pinned host
//              memory, which is then copied to the device.
// Host delivery ignores it.
enum class DirectUpload { automatic, on, off };

// Online crop and flip: fresh views of every stored record each epoch, cut
// by the reader threads while they copy the record into the slot (no extra
// pass, nothing allocated per record), before any conversion or upload.
// Combined with K stored variants, a dataset stored at 256x256 delivers
// 224x224 windows that differ every epoch at copy speed.
//
// Each record's window and flips are drawn from a counter-based generator
// keyed by (OrderOptions::seed, epoch, sample, variant): a pure function like
// the order, identical for any thread count, rank layout and resume point.
// Delivered batches have the crop's shape (Batch::height(), width()).
//
// With a CUDA device the window is cut here too, on the host, and only the
// window is uploaded: the staged path copies every record into pinned memory
// anyway, so cutting during that copy adds no pass, moves fewer bytes over
// the bus (77% of a 256x256 record for a 224x224 window) and leaves the
// conversion kernel reading contiguous records. Cutting in the kernel instead
// would upload whole records; the two have not been compared on a GPU.
enum class CropMode {
  automatic,  // random for roles train and all, center for val and test
  random,     // the window's corner uniform among every position where it fits
  center,     // the middle of the record
};

struct CropOptions {
  // The window, at most the dataset's size; 0 x 0 = the whole record.
  uint32_t height = 0;
  uint32_t width = 0;
  CropMode mode = CropMode::automatic;
  double hflip = 0;  // probability of mirroring left-right, [0, 1]
  double vflip = 0;  // probability of mirroring top-bottom, [0, 1]

  // True when records are delivered whole and unflipped.
  bool is_identity() const { return height == 0 && width == 0 && hflip == 0 && vflip == 0; }
};

struct LoaderOptions {
  SelectionOptions selection;  // default: every sample, variant 0
  OrderOptions order;          // default: random order, seed 0, one rank

  // Images per batch. A slot of the ring holds the largest batch an epoch
  // delivers: with LastBatch::partial, a batch_size beyond the epoch's
  // images costs only their memory.
  std::size_t batch_size = 256;
  LastBatch last_batch = LastBatch::partial;

  // Reader threads, 0..1024. 0 (the default): chosen when the loader is
  // made, LoaderStats::threads says how many: 2, or for staged upload to a
  // CUDA device (DirectUpload) enough to keep its copy engine busy: half the
  // cores this process may run on (its CPU affinity), at least 2 and at
  // most 8. Staged, each thread copies about 6 GB/s from the page cache into
  // pinned memory, and the copy engine takes about 54 (an H200 beside 16
  // cores: 2 threads delivered 12 GB/s, 8 threads 35, more than 10 no more);
  // direct upload and host delivery need no more than 2.
  unsigned threads = 0;
  // Slots in the ring (the one the consumer holds included), >= 1: the
  // reader threads work at most this many batches ahead of the consumer.
  // A consumer that keeps batches alive (a Batch, or in Python any array or
  // tensor viewing one, such as the labels kept for metrics) holds their
  // slots. When it holds every slot and asks for the next batch, the loader
  // adds a slot to the ring rather than stop, so that it may keep up to
  // 2 x prefetch batches alive besides the one it is using (a for loop's
  // variable) and still get the next one: up to prefetch + 2 added slots,
  // 2 x prefetch + 2 in all. Beyond that next() throws. Added slots stay in the ring for the
  // loader's life (the reader threads still work at most `prefetch` batches ahead; order and bytes
  // do not change) and cost what the first ones do: the ring's host memory (ring_host_bytes(), and
  // device memory when delivering to a device) can reach (2 x prefetch + 2) / prefetch times what
  // it was at construction. LoaderStats::added_slots counts them.
  std::size_t prefetch = 4;
  Device device = Device::host();
  // Host delivery only: allocate the slots with cudaHostAlloc when a CUDA
  // device is present, so that the caller can upload them quickly itself.
  bool pin_host_memory = false;
  // CUDA delivery only (DirectUpload): direct upload registers the dataset's
  // shard mappings with the device and lets its copy engine read each
  // batch's records straight from the page cache, instead of reader threads
  // copying them into a pinned staging slot first. Saves the CPU copy (and a
  // third of the host memory traffic) per byte. Registration pins every page
  // of the dataset for the Loader's lifetime, reading in any that are not
  // resident. With DirectUpload::on the Loader throws imgpack::Error at
  // construction if the mappings cannot be registered, and UsageError
  // without a CUDA device or with what needs the host's copy (crop, flip,
  // ReadPath::read); DirectUpload::automatic falls back to staged instead,
  // saying why in LoaderStats::upload.
  DirectUpload direct_upload = DirectUpload::automatic;

  // Output layout. For float formats: (x / 255 - mean[c]) / stddev[c], NCHW, with mean
  // and stddev in [0, 1] units (torchvision's convention); stddev must be positive, and
  // large enough that pixels 0 and 255 stay finite in the format (UsageError otherwise).
  OutputFormat output = OutputFormat::uint8_nhwc;
  std::array<float, 4> mean = {0, 0, 0, 0};
  std::array<float, 4> stddev = {1, 1, 1, 1};

  // Online crop and flip (CropOptions). A window larger than the records, a
  // window with one side 0, or a probability outside [0, 1] is a UsageError;
  // so is combining it with direct_upload, whose copy engine reads whole
  // records.
  CropOptions crop;

  // Compare every record read with its stored checksum; a mismatch is an
  // imgpack::Error from next() naming the shard and row. Costs a hash per record.
  bool verify_checksums = false;

  // How records are taken from the shards (ReadPath). direct_upload copies
  // from the mappings: ReadPath::read with it is a UsageError.
  ReadPath read_path = ReadPath::automatic;
  // Records each reader thread keeps in flight on the read path (1..4096);
  // a chunk of a batch holds at least this many records when records may be
  // read. Storage that serves random reads fastest with Q requests queued
  // wants threads * reads_in_flight >= Q.
  unsigned reads_in_flight = 16;
  // O_DIRECT on the read path (DirectIo).
  DirectIo direct_io = DirectIo::automatic;
};

// Where a loader is in its epochs: what a training checkpoint stores so that
// a restarted job continues an epoch where it stopped, on the same or on
// another number of ranks. A plain value: copy it, compare it, use it from
// any thread.
//
// Delivered: a batch counts once next() has returned it (whether or not the
// training step that used it finished). The state a rank takes after its
// k-th batch of an epoch says "every rank has been delivered its batches
// 0..k-1": data-parallel ranks step together, and since the state names no
// rank it is the same on every rank at the same step (one rank's copy, rank
// 0's, serves all).
//
// Positions: with batch_size b on each of W ranks, the global batch is
// G = b * W and step k (batch k of every rank) covers positions [kG, kG + G)
// of the epoch's global order of N positions (epoch_order.hpp; rank r gets
// kG + r, kG + r + W, ...). `consumed` is kG after k steps, and N once the
// epoch's last batch has been delivered (a tail that drop policies leave out
// counts as consumed).
//
// Restoring (Loader::restore) on W' ranks of batch_size b' (G' = b' * W'):
// - Same world size and batch size: the next batch is batch k, byte for byte
//   what an uninterrupted run delivers (records, labels, pixels, index() and
//   padding()), and so is everything after it.
// - Any other world size or batch size: the positions not yet consumed,
//   [c, N) with c = `consumed`, are dealt over the W' ranks as an epoch is:
//   rank r reads positions c + r, c + r + W', c + r + 2W', ... in batches of
//   b', so every remaining position is delivered once, by one of the new
//   ranks, and none of [0, c) again. Where c is a multiple of G' (always when
//   G' = G) those are exactly batches c / G', c / G' + 1, ... of an
//   uninterrupted epoch of the new topology; elsewhere Batch::index() starts
//   at floor(c / G') and the resumed epoch may hold one batch fewer than
//   batches_per_epoch() - floor(c / G'). The epochs after it are those of a
//   fresh run of the new topology.
// - The tail follows the new topology's rules applied to the remaining
//   positions, as in its uninterrupted epoch: with RankPolicy::pad every new
//   rank reads ceil((N - c) / W') entries, those past N wrapping to the start
//   of the epoch (padding entries, counted by Batch::padding()), and
//   LastBatch::pad fills the last batch with the first records the rank
//   would read in an uninterrupted epoch of W' ranks (padding too). So with
//   RankPolicy::pad and LastBatch::partial or pad, each of the N positions is
//   delivered exactly once over the old and new ranks, padding aside. The
//   drop policies drop here as they do in any epoch: RankPolicy::drop leaves
//   the last (N - c) mod W' positions unread, LastBatch::drop each rank's
//   last short batch (under G' positions in all); they count as consumed.
// - A state saved after the epoch's last batch resumes into nothing: next()
//   returns nullopt. A state saved in a resumed epoch counts its positions
//   from c (c + k'G' after k' batches there), so it may be restored again on
//   any topology; on the same one the continuation is byte for byte.
//
// The fingerprint says what the positions refer to; restore() requires every
// field to match the loader's and names each one that does not. The
// topology it was saved in (world_size, batch_size, global_batch) is
// informative. It names the dataset's generation (Dataset::generation()): a
// dataset that has grown or lost samples since the state was saved deals
// other positions, so a state is restored only on the generation it was
// saved on (a state saved before generations existed, version 1, is of
// generation 0).
struct LoaderState {
  uint64_t epoch = 0;
  uint64_t consumed = 0;  // global positions of `epoch` consumed (above)

  uint32_t world_size = 1;     // the ranks that saved it
  std::size_t batch_size = 0;  // per rank, when saved

  // Fingerprint.
  std::string dataset_uuid;
  uint64_t generation = 0;  // of the dataset (Dataset::generation())
  std::string split;        // selection
  int32_t fold = 0;
  Role role = Role::all;
  VariantPolicy variants = VariantPolicy::clean;  // resolved (never automatic)
  uint64_t selected_samples = 0;
  uint64_t selection_hash = 0;  // of the selected sample ids: a split re-made under one name
  OrderMode order = OrderMode::random;
  uint64_t seed = 0;
  uint32_t window_shards = 0;  // shard-window only (0 otherwise)
  RankPolicy rank_policy = RankPolicy::pad;
  Sampling sampling = Sampling::uniform;
  uint64_t weights_hash = 0;     // weighted only (0 otherwise)
  uint64_t epoch_positions = 0;  // N
  uint64_t global_batch = 0;     // batch_size * world_size
  LastBatch last_batch = LastBatch::partial;

  // Bytes for a checkpoint: the JSON below behind a header line and its
  // XXH3-64 checksum. from_bytes() throws imgpack::Error for bytes that are
  // not a loader state or are damaged.
  std::vector<uint8_t> to_bytes() const;
  static LoaderState from_bytes(std::span<const uint8_t> bytes);
  // One JSON object, every field above by name, enums by their names
  // ("train", "random", ...), hashes as 16 hex digits, behind its version
  // ("imgpack_loader_state": 2). from_json() accepts what to_json() writes
  // (members in any order, unknown ones ignored) and what version 1 wrote
  // (no generation: 0), and throws imgpack::Error naming the first member
  // that is missing or wrong, or a version it does not read.
  std::string to_json() const;
  static LoaderState from_json(std::string_view json);

  bool operator==(const LoaderState&) const = default;
};

namespace detail {

// Where a batch's boxes are (Batch::boxes() and its companions): plain
// pointers into the slot; `offsets` null without boxes.
struct BoxBlock {
  const float* boxes = nullptr;
  const int32_t* classes = nullptr;
  const uint8_t* crowd = nullptr;
  const float* keypoints = nullptr;
  const int64_t* offsets = nullptr;
  std::size_t count = 0;
  std::size_t keypoints_per_box = 0;
};

}  // namespace detail

namespace detail {

class LoaderCore;

// A claim on one slot of a loader's ring: the slot goes back to the ring
// when the lease is released or destroyed, also after the Loader itself is
// gone (the lease keeps the ring alive). Move-only.
class SlotLease {
 public:
  SlotLease() = default;
  SlotLease(std::shared_ptr<LoaderCore> core, int slot) : core_(std::move(core)), slot_(slot) {}
  ~SlotLease() { release(); }
  SlotLease(SlotLease&& other) noexcept;
  SlotLease& operator=(SlotLease&& other) noexcept;
  SlotLease(const SlotLease&) = delete;
  SlotLease& operator=(const SlotLease&) = delete;

  explicit operator bool() const { return core_ != nullptr; }
  LoaderCore& core() const { return *core_; }
  int slot() const { return slot_; }
  // The slot may be reused only after the consumer event recorded for it.
  void recycle_after_consumer_event() { consumer_stream_event_ = true; }
  void release();

 private:
  std::shared_ptr<LoaderCore> core_;
  int slot_ = -1;
  bool consumer_stream_event_ = false;
};

}  // namespace detail

// Thrown by Loader::next() when every slot of the ring is held by a live
// Batch and the ring may grow no further: the consumer keeps more batches
// alive than the loader can make room for.
class SlotsHeldError : public Error {
 public:
  using Error::Error;
};

// One batch: a handle on a slot of the loader's ring. Move-only; destroying
// (or release()-ing) it returns the slot. Everything it points to stays valid
// until then, even if the Loader is destroyed first. A moved-from or
// released Batch is empty (operator bool is false, size() is 0).
class Batch {
 public:
  Batch() = default;
  // The view moves with the lease: the moved-from Batch shows nothing,
  // rather than a slot the ring may since have filled with another batch.
  Batch(Batch&& other) noexcept
      : lease_(std::move(other.lease_)), view_(std::exchange(other.view_, View{})) {}
  Batch& operator=(Batch&& other) noexcept {
    if (this != &other) {
      lease_ = std::move(other.lease_);  // returns the slot this one held
      view_ = std::exchange(other.view_, View{});
    }
    return *this;
  }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  ~Batch() = default;

  explicit operator bool() const { return static_cast<bool>(lease_); }

  uint64_t epoch() const { return view_.epoch; }
  std::size_t index() const { return view_.index; }  // batch number within the epoch
  std::size_t size() const { return view_.size; }    // entries, padding included
  // The last padding() entries repeat records delivered earlier in the
  // epoch (rank padding and last-batch padding); leave them out of metrics.
  std::size_t padding() const { return view_.padding; }

  OutputFormat format() const { return view_.format; }
  Device device() const { return view_.device; }
  bool on_device() const { return view_.device.is_cuda(); }
  // The images: size() records, uint8 N x H x W x C or float/half N x C x H x W.
  // A device pointer when on_device(): read it only on a stream that
  // wait_on_stream() was called for (or after synchronize()).
  const void* data() const { return view_.data; }
  template <class T>
  const T* data_as() const {
    return static_cast<const T*>(view_.data);
  }
  std::size_t bytes() const { return view_.bytes; }
  uint32_t height() const { return view_.shape.height; }
  uint32_t width() const { return view_.shape.width; }
  uint32_t channels() const { return view_.shape.channels; }

  // The masks, with a dataset that has them (has_masks()): size() uint8
  // label maps of height() x width(), N x H x W, where the images are (a
  // device pointer when on_device(), read under the same rules as data()),
  // each cut with its image's crop window and flips. nullptr without masks.
  bool has_masks() const { return view_.masks != nullptr; }
  const uint8_t* masks() const { return view_.masks; }
  std::size_t mask_bytes() const { return view_.mask_bytes; }  // size() * H * W, or 0
  // Copies the masks (mask_bytes() bytes) to host memory, synchronously.
  void copy_masks_to_host(void* dst) const;

  // Host arrays, one entry per image.
  std::span<const int32_t> labels() const { return {view_.labels, view_.size}; }
  // With a dataset that has multi-label classes (DatasetIndex::multilabel_names):
  // size() rows of multilabel_classes() entries, row-major, 1 where the image
  // has the class. Empty without.
  std::size_t multilabel_classes() const { return view_.multilabel_classes; }
  std::span<const uint8_t> multilabel() const {
    return {view_.multilabel, view_.size * view_.multilabel_classes};
  }
  // With a dataset that has numeric targets (DatasetIndex::target_names):
  // size() rows of num_targets() float32 values, NaN where the image has no
  // value. Empty without.
  std::size_t num_targets() const { return view_.num_targets; }
  std::span<const float> targets() const { return {view_.targets, view_.size * view_.num_targets}; }
  // With a dataset that has boxes (Dataset::has_boxes()): the batch's boxes
  // as one block, host memory wherever the images are. Image i owns rows
  // box_offsets()[i] .. box_offsets()[i + 1] (size() + 1 offsets) of
  // boxes() (num_boxes() x 4: x0, y0, x1, y1 in the delivered image's
  // pixels, moved with its crop window and flips), box_classes()
  // (DatasetIndex::box_class_names), box_crowd() (1 for a crowd region) and
  // keypoints() (num_boxes() x num_keypoints() x 3: x, y, visibility; a
  // keypoint outside the window is 0, 0, 0, and a flip swaps left/right
  // pairs). A box stays where at least DatasetIndex::box_min_visible of its
  // area stays inside the window. Empty spans (and has_boxes() false) without.
  bool has_boxes() const { return view_.boxes.offsets != nullptr; }
  std::size_t num_boxes() const { return view_.boxes.count; }
  std::size_t num_keypoints() const { return view_.boxes.keypoints_per_box; }
  std::span<const float> boxes() const { return {view_.boxes.boxes, num_boxes() * 4}; }
  std::span<const int32_t> box_classes() const { return {view_.boxes.classes, num_boxes()}; }
  std::span<const uint8_t> box_crowd() const { return {view_.boxes.crowd, num_boxes()}; }
  std::span<const float> keypoints() const {
    return {view_.boxes.keypoints, num_boxes() * num_keypoints() * 3};
  }
  std::span<const int64_t> box_offsets() const {
    return {view_.boxes.offsets, has_boxes() ? view_.size + 1 : 0};
  }
  std::span<const int64_t> samples() const { return {view_.samples, view_.size}; }  // source ids
  std::span<const uint64_t> records() const { return {view_.records, view_.size}; }

  // cudaEvent_t that fires when the upload (and conversion) is done; nullptr
  // for host delivery, where the batch is complete when next() returns.
  void* ready_event() const;
  // Makes `stream` (a cudaStream_t; nullptr = legacy default stream) wait for
  // the upload. No-op for host delivery.
  void wait_on_stream(void* stream) const;
  // Blocks the calling thread until the upload is done (counted as consumer
  // wait in LoaderStats).
  void synchronize() const;
  // Declares that work already issued on `stream` reads this batch: the
  // loader will not overwrite the slot before that work completes. Without
  // it, destroying the Batch means "done with it now". No-op on host.
  void recycle_after(void* stream);
  // Copies the images (bytes() bytes) to host memory, synchronously.
  void copy_to_host(void* dst) const;

  // Returns the slot now (what the destructor does).
  void release();

 private:
  friend class detail::LoaderCore;

  // What the batch shows: plain values pointing into the leased slot.
  struct View {
    uint64_t epoch = 0;
    std::size_t index = 0;
    std::size_t size = 0;
    std::size_t padding = 0;
    OutputFormat format = OutputFormat::uint8_nhwc;
    Device device;
    const void* data = nullptr;
    std::size_t bytes = 0;
    const uint8_t* masks = nullptr;
    std::size_t mask_bytes = 0;
    RecordShape shape;
    const int32_t* labels = nullptr;
    const uint8_t* multilabel = nullptr;
    std::size_t multilabel_classes = 0;
    const float* targets = nullptr;
    std::size_t num_targets = 0;
    const int64_t* samples = nullptr;
    const uint64_t* records = nullptr;
    detail::BoxBlock boxes;
  };

  Batch(detail::SlotLease lease, const View& view) : lease_(std::move(lease)), view_(view) {}

  detail::SlotLease lease_;
  View view_;
};

struct LoaderStats {
  uint64_t batches = 0;
  uint64_t images = 0;   // entries delivered, padding included
  uint64_t padding = 0;  // of which padding
  // Bytes delivered for them: images * H * W * C of pixels, plus their
  // masks' images * H * W in a dataset with masks (of which `mask_bytes`).
  uint64_t bytes = 0;
  uint64_t mask_bytes = 0;
  // From the consumer's first next() to its latest return from next().
  double consumer_seconds = 0;
  // Time the consumer spent blocked in next() waiting for a batch, or in
  // Batch::synchronize() waiting for its upload.
  double wait_seconds = 0;
  // Busy time summed over the reader threads (copying, converting, hashing),
  // and of the upload stage (issuing copies and kernels).
  double reader_busy_seconds = 0;
  double upload_busy_seconds = 0;
  // Batches that were ready when set_epoch() started their epoch: after an
  // epoch delivered to its end, the reader threads go on into the next one
  // (epoch + 1) with the slots the consumer frees, and set_epoch(epoch + 1)
  // keeps what they read, so the consumer does not wait on an empty ring at
  // every epoch boundary. Any other set_epoch() or restore() discards it.
  uint64_t read_ahead_batches = 0;
  // Records read from their files (ReadPath::read, or ReadPath::automatic on
  // records the page cache did not hold); the others were copied from the
  // mappings.
  uint64_t records_read = 0;
  // Bytes of shards read into the page cache ahead of the reader threads
  // (ReadPath::automatic: see ReadPath), and shards
  // the page cache held already when their turn came. Cumulative over the
  // loader's life: reset_stats() leaves them.
  uint64_t prefetched_bytes = 0;
  uint64_t prefetch_cached_shards = 0;
  // Slots added to the ring, beyond `prefetch`, because the consumer held
  // every slot with live Batches (LoaderOptions::prefetch): 0..prefetch + 2.
  // The ring keeps them: reset_stats() leaves this.
  uint64_t added_slots = 0;
  // Reader threads running (LoaderOptions::threads, or its automatic
  // choice).
  unsigned threads = 0;
  // How batches reach the device, chosen when the loader was made
  // (LoaderOptions::direct_upload): direct or staged, and why in one line
  // ("host delivery: nothing to upload" without a device).
  bool direct_upload = false;
  std::string upload;

  // Fraction of the consumer's time spent waiting: 0 = never starved.
  double starvation() const { return consumer_seconds > 0 ? wait_seconds / consumer_seconds : 0; }
};

class Loader {
 public:
  // Validates the options against the dataset and allocates the ring.
  // Throws imgpack::UsageError for invalid options, a selection the dataset
  // cannot satisfy (unknown split, fold out of range) and a configuration
  // whose epochs hold no batch (an empty selection, more ranks than records
  // with RankPolicy::drop, a batch larger than each rank's records with
  // LastBatch::drop), saying which, and for a ring that needs more host
  // memory than the process may use (physical memory or its memory cgroup's
  // limit), naming the size, before any of it is allocated; imgpack::Error if
  // the device cannot be used or memory not allocated.
  //
  // fork(): a Loader's threads stay in the parent. In a child, every call
  // that needs them (next, set_epoch, wait_for_next, epoch, state, restore,
  // stats, reset_stats) throws imgpack::Error saying so; make a Loader in the
  // child instead. Destroying the Loader or releasing its batches there does
  // not join or lock anything: the child keeps them, unused, until it exits.
  Loader(Dataset dataset, LoaderOptions options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Starts epoch `epoch`: batches of an earlier epoch not yet delivered are
  // discarded, and reading of `epoch` begins at once. Batches already
  // delivered stay valid. Clears a pending error. Right after restore(),
  // before its first next(), set_epoch(state.epoch) keeps the restored
  // position (so a loop that calls set_epoch at the top of every epoch
  // resumes); any other call starts the epoch from its first batch.
  void set_epoch(uint64_t epoch);

  // The next batch of the current epoch, in order; std::nullopt once the
  // epoch is exhausted (call set_epoch() for the next). If no epoch was
  // started, starts epoch 0. Rethrows the first error of a reader thread or
  // the upload stage (among them an imgpack::Error naming a shard truncated
  // or rewritten in place while it was read, on every read path). When
  // every slot of the ring is held by live Batches, adds a slot to the ring
  // (LoaderOptions::prefetch) and reads into it; throws imgpack::Error when
  // 2 x prefetch + 2 Batches are alive (the ring's bound), or when one more
  // slot would need more host memory than the process may use (naming the
  // size): no progress is possible then, release a Batch first.
  std::optional<Batch> next();

  // Waits at most `timeout` until next() would return at once: a batch is
  // ready, the epoch is exhausted, an error is pending, or every slot is held
  // and the ring can grow no more (which next() reports); adds a slot to the
  // ring first, as next() does, when every slot is held. Returns whether it
  // would; false means the time ran out. Starts epoch 0 if no epoch was
  // started, like next(); the time waited counts as consumer wait in
  // LoaderStats, as if spent in next(). For a caller that waits in slices to
  // react to something else meanwhile (a signal, a shutdown request):
  // `while (!loader.wait_for_next(50ms)) poll();`. A timeout of a century
  // or more (nanoseconds::max()) waits without a deadline.
  bool wait_for_next(std::chrono::nanoseconds timeout);

  uint64_t epoch() const;

  // Where the loader is: the epoch and the positions consumed by the batches
  // next() has returned on every rank so far (see LoaderState). Before any
  // epoch: epoch 0, nothing consumed. Cheap; call it at every checkpoint.
  LoaderState state() const;
  // Continues from `state`: switches to state.epoch at the saved step and
  // starts reading there at once (as set_epoch() does; batches already
  // delivered stay valid). Throws imgpack::Error for a state of another
  // generation of this dataset, saying which generation the state is of and
  // which the dataset is now (reopen the old data to continue that epoch,
  // or start a new epoch without the state); imgpack::UsageError naming
  // every field of the fingerprint that differs from this loader's (dataset
  // uuid, split, fold, role, variants, selected samples, order, seed,
  // window, rank policy, sampling, weights, epoch length, last batch); and
  // imgpack::Error for a position past the epoch (a damaged state). Any
  // world size and batch size are accepted (see LoaderState). The loader is
  // unchanged when it throws. (LoaderState::from_bytes() and from_json() already
  // refuse a state whose fields contradict each other, such as a world_size
  // of 0, even behind a valid checksum.)
  void restore(const LoaderState& state);

  // Per rank and epoch, after the last-batch policy (a resumed epoch
  // delivers the batches from its resume step to this count, or one fewer
  // after a resume on another global batch: see LoaderState).
  std::size_t batches_per_epoch() const;
  std::size_t images_per_epoch() const;
  // Batches the current epoch has still to deliver: batches_per_epoch() before
  // the first set_epoch() or next(), then fewer with each next(), and after
  // restore() what the restored epoch has left (0 for a state saved at the
  // end of its epoch: the next set_epoch(state.epoch + 1) continues).
  std::size_t batches_left() const;

  const EpochOrder& order() const;
  const LoaderOptions& options() const;
  Device device() const;
  // Bytes of slot memory the ring holds (host and device), added slots included.
  std::size_t ring_host_bytes() const;
  std::size_t ring_device_bytes() const;

  LoaderStats stats() const;
  void reset_stats();

 private:
  std::shared_ptr<detail::LoaderCore> core_;
};

// The pixels a Loader with `options` delivers for one record of `dataset` in
// `epoch`: the window and flips its reader threads cut (options.crop, with
// the mode the role implies), uint8 HWC of the delivered shape (the crop's,
// or the record's), written to `out`. `record` holds the stored record's
// pixels (Dataset::record_data(), or a copy of them). A pure function of its
// arguments, for tools that show or check what training sees (imgpack
// preview --crop); not a hot path. Throws UsageError for a crop the Loader
// refuses. Safe from any thread.
void copy_delivered_view(const Dataset& dataset, const LoaderOptions& options, uint64_t epoch,
                         int64_t sample, uint16_t variant, const uint8_t* record, uint8_t* out);
// The same for the record's mask (`mask`, Dataset::mask_data() or a copy):
// the very window and flips of its image, H x W of the delivered shape.
void copy_delivered_mask(const Dataset& dataset, const LoaderOptions& options, uint64_t epoch,
                         int64_t sample, uint16_t variant, const uint8_t* mask, uint8_t* out);

// "drop", "pad", "partial". Throws imgpack::UsageError.
LastBatch parse_last_batch(std::string_view text);
std::string_view last_batch_name(LastBatch last);
// "auto", "random", "center". Throws imgpack::UsageError.
CropMode parse_crop_mode(std::string_view text);
std::string_view crop_mode_name(CropMode mode);
// "auto", "mapped", "read". Throws imgpack::UsageError.
ReadPath parse_read_path(std::string_view text);
std::string_view read_path_name(ReadPath path);
// "auto", "on", "off". Throws imgpack::UsageError.
DirectIo parse_direct_io(std::string_view text);
std::string_view direct_io_name(DirectIo io);
// "auto", "on", "off". Throws imgpack::UsageError.
DirectUpload parse_direct_upload(std::string_view text);
std::string_view direct_upload_name(DirectUpload upload);

}  // namespace imgpack
