// The loader's pipeline behind Loader and Batch (internal to the reader).
//
// Reader threads claim work in chunks of a batch (about 1 MiB of records)
// and have a SlotFiller (slot_fill.hpp) fill them into a slot of the ring,
// outside the lock; the batch is filled when its last chunk is done. The
// upload stage issues the copy to the device, the conversion and the slot's
// ready event, in batch order; next() hands batches out in order, as Batches
// leasing their slot. One mutex guards the ring's state. set_epoch() bumps a
// generation so that work of an abandoned epoch is discarded, never
// delivered; an epoch may start after some of its positions (restore()),
// whose rest epoch_batches.hpp deals.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "epoch_batches.hpp"
#include "fork_guard.hpp"
#include "imgpack/loader.hpp"
#include "shard_prefetch.hpp"
#include "slot_fill.hpp"
#include "slot_memory.hpp"
#include "upload_choice.hpp"

namespace imgpack::detail {

using Clock = std::chrono::steady_clock;

inline constexpr uint64_t kNoSeq = ~uint64_t{0};
// Threads of the shard prefetcher: shard pieces read into memory at once.
inline constexpr unsigned kPrefetchThreads = 4;

inline uint64_t nanoseconds_since(Clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
}

inline double seconds(uint64_t ns) { return static_cast<double>(ns) * 1e-9; }

// Where a batch is in the pipeline.
enum class Stage { empty, opening, filling, filled, uploading, ready };

// A batch between being opened by a reader thread and delivered by next().
struct InFlight {
  uint64_t seq = kNoSeq;
  int slot = -1;
  Stage stage = Stage::empty;
  std::size_t chunks_done = 0;
};

// Throws imgpack::UsageError for options that the dataset or each other rule
// out (sizes out of range, direct upload with a crop, a crop that does not
// fit, a zero stddev), saying which; LoaderCore's constructor calls it first.
void require_valid_options(const Dataset& dataset, const LoaderOptions& options);

class LoaderCore {
 public:
  LoaderCore(Dataset dataset, LoaderOptions options);
  ~LoaderCore();
  LoaderCore(const LoaderCore&) = delete;
  LoaderCore& operator=(const LoaderCore&) = delete;

  void start_threads();
  // Joins the reader and upload threads and ends the shard prefetcher; frees
  // every slot no live Batch holds (the Loader is gone: what remains serves
  // the kept batches alone).
  void stop();
  void set_epoch(uint64_t epoch);
  LoaderState state() const;
  void restore(const LoaderState& saved);
  std::optional<Batch> next(const std::shared_ptr<LoaderCore>& self);
  bool wait_for_next(Clock::duration timeout);
  // Returns a slot leased by a Batch (SlotLease::release()).
  void release(int slot, bool consumer_stream_event);
  void record_consumer_event(int slot, void* stream);
  void* backend_event(int slot) const {
    return slots_[static_cast<std::size_t>(slot)].upload_done->native_handle();
  }
  void wait_for_upload_on(int slot, void* stream) const {
    backend_->wait_on_stream(*slots_[static_cast<std::size_t>(slot)].upload_done, stream);
  }
  // Blocks until the slot's upload is done; the time counts as consumer wait.
  void synchronize_upload(int slot) {
    const Clock::time_point start = Clock::now();
    backend_->synchronize(*slots_[static_cast<std::size_t>(slot)].upload_done);
    const uint64_t waited = nanoseconds_since(start);
    std::lock_guard lock(mu_);
    wait_ns_ += waited;
  }

  uint64_t epoch() const {
    std::lock_guard lock(mu_);
    return epoch_;
  }
  std::size_t batches_per_epoch() const {
    return detail::batches_per_epoch(order_.rank_size(), options_.batch_size, options_.last_batch);
  }
  std::size_t batches_left() const {
    std::lock_guard lock(mu_);
    return started_ ? static_cast<std::size_t>(end_seq_ - next_deliver_) : batches_per_epoch();
  }
  std::size_t images_per_epoch() const {
    return detail::images_per_epoch(order_.rank_size(), options_.batch_size, options_.last_batch);
  }
  LoaderStats stats() const;
  void reset_stats();

  // Whether this process forked since the loader was made (fork_guard.hpp):
  // its threads are then in the parent.
  bool made_before_fork() const { return fork_generation() != fork_generation_; }
  const EpochOrder& order() const { return order_; }
  const LoaderOptions& options() const { return options_; }
  UploadBackend& backend() const { return *backend_; }
  std::size_t ring_host_bytes() const { return ring_host_bytes_.load(std::memory_order_relaxed); }
  std::size_t ring_device_bytes() const {
    return ring_device_bytes_.load(std::memory_order_relaxed);
  }

 private:
  // Allocates the ring's first `prefetch` slots; `memory` is what this
  // process may use (memory_for_page_cache()).
  void allocate_ring(uint64_t memory);
  // A slot with its memory and events; adds the bytes it holds to the ring's.
  Slot make_slot();
  // When every slot is held by a live Batch, adds one to the ring (up to
  // max_slots_), so that a consumer keeping batches alive can go on; takes
  // `lock` (held) off while it allocates. Throws imgpack::Error naming the
  // size if the ring would need more host memory than the process may use.
  void grow_when_every_slot_is_held(std::unique_lock<std::mutex>& lock);
  // Every slot is held and the ring may not grow: next() throws (mu_ held).
  bool stalled() const { return held_ == slot_count_ && slot_count_ == max_slots_; }
  // The batches of `epoch` after `consumed` of its global positions (0: the
  // whole epoch; make_resumed_batches()), checked to fit the slots.
  std::shared_ptr<const EpochBatches> plan_epoch(uint64_t epoch, uint64_t consumed = 0) const;
  // Starts `epoch` after `consumed` of its positions (0 unless resuming);
  // `resumed` marks a restore() that set_epoch(epoch) keeps until the next
  // delivery.
  void start_epoch(uint64_t epoch, uint64_t consumed, bool resumed);
  // What Batch shows of batch `b` of the current epoch, filled into `slot` (mu_ held).
  Batch::View batch_view(std::size_t b, const Slot& slot) const;
  // next() would return without waiting (mu_ held).
  bool deliverable() const;
  bool claimable() const;
  // Unit `unit` of the epoch whose batch 0 has sequence number `base` could be
  // claimed now (mu_ held).
  bool claimable_unit(uint64_t base, std::size_t unit) const;
  // The entry after the last one of unit `unit` of `work`.
  std::size_t unit_end(const EpochBatches& work, std::size_t unit) const;
  // Makes prefetch_ where the order and read path call for one; `memory` is
  // what the page cache may use (memory_for_page_cache()).
  void start_prefetch(uint64_t memory);
  // A reader thread should plan the epoch after the current one (mu_ held).
  bool plannable() const;
  // Plans epoch_ + 1 for reading ahead; called by a reader thread with `lock`
  // held, which it releases while it plans.
  void plan_next_epoch(std::unique_lock<std::mutex>& lock);
  // set_epoch(epoch) continues into the epoch read ahead, when that is
  // `epoch` and the current one was delivered to its end (mu_ held).
  bool adopt_next_epoch(uint64_t epoch);
  bool uploadable() const;
  void reader_main();
  void upload_main();
  // Fills chunk `chunk` of batch `batch` of `work` into `slot` (SlotFiller).
  void fill_chunk(const EpochBatches& work, std::size_t batch, std::size_t chunk, Slot& slot,
                  ThreadReaders& readers) const;
  // The consumer entered next() or wait_for_next() at `entered` (mu_ held).
  void consumer_entered(Clock::time_point entered);
  void fail(std::exception_ptr error);  // with mu_ held

  const uint64_t fork_generation_ = fork_generation();
  const Dataset dataset_;
  const LoaderOptions options_;
  const EpochOrder order_;
  const RecordShape stored_shape_;       // the dataset's records
  const RecordShape shape_;              // what a batch holds per image (the crop's window)
  const std::size_t record_bytes_;       // stored_shape_.bytes(): what the checksums cover
  const std::size_t slot_record_bytes_;  // shape_.bytes(): uint8 bytes per image in a slot
  const std::size_t output_record_bytes_;
  // Masks (0 without): bytes of a stored mask, and of a delivered one (the window's).
  const std::size_t mask_bytes_;
  const std::size_t slot_mask_bytes_;
  const Normalization norm_;
  const LoaderState initial_state_;  // the fingerprint; epoch 0, nothing consumed
  bool convert_on_host_ = false;
  std::unique_ptr<SlotFiller> filler_;
  std::size_t slot_capacity_ = 1;  // images a slot holds: the largest batch of an epoch
  SlotLayout slot_layout_;         // what each slot holds (slot_memory.hpp)
  std::size_t chunk_records_ = 1;
  std::size_t chunks_per_batch_ = 1;
  // Added to by the consumer thread when the ring grows, outside the lock.
  std::atomic<std::size_t> ring_host_bytes_{0};
  std::atomic<std::size_t> ring_device_bytes_{0};
  uint64_t memory_ = 0;  // what the process may use (memory_for_page_cache()), at construction

  // Declared before the slots and registrations: their memory, events and
  // registrations die first.
  std::unique_ptr<UploadBackend> backend_;
  // Room for max_slots_ slots, never resized (reader threads and Batches
  // hold references into it): slots_[0, slot_count_) are allocated, the
  // first `prefetch` at construction, the others by
  // grow_when_every_slot_is_held() while a consumer keeps batches alive.
  std::vector<Slot> slots_;
  std::size_t max_slots_ = 1;  // 2 x prefetch + 2: 2 x prefetch kept, one in use, one filled
  // Direct upload: the shard mappings registered with the device.
  UploadChoice upload_;  // direct or staged, and why (upload_choice.hpp)
  bool direct_ = false;  // upload_.direct
  std::vector<std::unique_ptr<HostRegistration>> registrations_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;      // reader threads: work to claim
  std::condition_variable upload_cv_;    // upload stage: a batch is filled
  std::condition_variable consumer_cv_;  // next() and set_epoch(): a batch is ready, or idle

  // All below guarded by mu_.
  bool stop_ = false;
  bool running_ = false;  // an epoch is set and not aborted
  bool started_ = false;
  uint64_t generation_ = 0;  // bumped by set_epoch(); work of an older one is discarded
  uint64_t epoch_ = 0;
  std::shared_ptr<const EpochBatches> work_;
  // Batch seq lives at table_[seq % prefetch]: at most `prefetch` batches are
  // between being opened and being delivered, however many slots were added.
  std::vector<InFlight> table_;
  std::deque<int> free_slots_;
  std::size_t slot_count_ = 0;   // slots allocated: prefetch, and those added since
  std::size_t held_ = 0;         // slots held by live Batches
  std::vector<uint8_t> leased_;  // [max_slots_]: 1 where a live Batch holds the slot
  uint64_t base_seq_ = 0, end_seq_ = 0;
  std::size_t next_unit_ = 0, total_units_ = 0;
  // Reading ahead: once every unit of the current epoch is claimed, reader
  // threads plan epoch_ + 1 and fill free slots with its first batches
  // (sequence numbers from end_seq_ on), which set_epoch(epoch_ + 1) after a
  // fully delivered epoch keeps instead of starting over; the consumer never
  // waits on an empty ring at the epoch boundary. Any other set_epoch() or
  // restore() discards them.
  std::shared_ptr<const EpochBatches> next_work_;
  std::size_t next_epoch_unit_ = 0;
  bool planning_ = false;     // a reader thread is planning epoch_ + 1
  bool plan_failed_ = false;  // planning threw: no reading ahead this epoch
  uint64_t next_upload_ = 0, next_deliver_ = 0;
  bool resume_pending_ = false;  // restore() started epoch_ after resume_consumed_ positions
  uint64_t resume_consumed_ = 0;
  unsigned busy_readers_ = 0;
  bool upload_busy_ = false;
  std::exception_ptr error_;

  // Stats (guarded by mu_, except the two busy counters).
  uint64_t batches_ = 0, images_ = 0, padding_ = 0, read_ahead_ = 0;
  uint64_t wait_ns_ = 0;
  bool consumer_started_ = false;
  Clock::time_point consumer_first_{}, consumer_last_{};
  std::atomic<uint64_t> reader_ns_{0};
  std::atomic<uint64_t> upload_ns_{0};

  std::vector<std::thread> threads_;
  unsigned reader_threads_ = 1;  // LoaderOptions::threads, or its automatic choice

  // Shard-window and sequential orders on the automatic read path: whole
  // shards read ahead into the page cache (shard_prefetch.hpp); null
  // otherwise. Last: its threads stop before the mutex and condition
  // variables they wake go.
  std::unique_ptr<ShardPrefetch> prefetch_;
};

}  // namespace imgpack::detail
