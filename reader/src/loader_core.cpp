// The loader's pipeline: reader threads, the upload stage and delivery (see
// loader_core.hpp). What a reader thread does with the chunk it claimed is
// slot_fill.cpp's; this file is the ring and its synchronisation.
#include "loader_core.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "cpu_affinity.hpp"
#include "imgpack/error.hpp"
#include "loader_state.hpp"
#include "memory_cgroup.hpp"
#include "record_window.hpp"
#include "shard_prefetch.hpp"

namespace imgpack::detail {

LoaderCore::LoaderCore(Dataset dataset, LoaderOptions options)
    : dataset_((require_valid_options(dataset, options), std::move(dataset))),
      options_(std::move(options)),
      order_(dataset_, select_samples(dataset_.index(), options_.selection),
             resolve_variant_policy(options_.selection.variants, options_.selection.role),
             options_.order),
      stored_shape_{dataset_.height(), dataset_.width(), dataset_.channels()},
      shape_(delivered_shape(options_.crop, stored_shape_)),
      record_bytes_(dataset_.record_bytes()),
      slot_record_bytes_(shape_.bytes()),
      output_record_bytes_(slot_record_bytes_ * output_element_bytes(options_.output)),
      mask_bytes_(dataset_.mask_bytes()),
      slot_mask_bytes_(dataset_.has_masks() ? shape_.pixels() : 0),
      norm_(Normalization::from_mean_std(options_.mean.data(), options_.stddev.data(),
                                         dataset_.channels())),
      initial_state_(initial_loader_state(order_, options_)) {
  require_batches(order_, options_);
  backend_ = make_upload_backend(options_.device, options_.pin_host_memory);
  convert_on_host_ =
      !backend_->separate_device_memory() && options_.output != OutputFormat::uint8_nhwc;
  const uint64_t memory = memory_for_page_cache();
  UploadPath upload = open_upload_path(dataset_, options_, *backend_, memory);
  upload_ = std::move(upload.choice);
  direct_ = upload_.direct;
  registrations_ = std::move(upload.registrations);
  reader_threads_ =
      choose_threads(options_, backend_->separate_device_memory(), direct_, cores_available());
  filler_ = std::make_unique<SlotFiller>(
      dataset_, options_,
      SlotPlan{convert_on_host_, backend_->separate_device_memory(), direct_, memory});
  // Slots hold the largest batch an epoch delivers: a batch_size beyond the
  // epoch (last_batch partial) costs no memory it cannot fill.
  slot_capacity_ = std::min<std::size_t>(options_.batch_size, images_per_epoch());
  chunk_records_ = std::clamp<std::size_t>(filler_->chunk_records(), 1, slot_capacity_);
  chunks_per_batch_ = (slot_capacity_ + chunk_records_ - 1) / chunk_records_;
  slot_layout_ = {slot_capacity_,
                  slot_record_bytes_,
                  output_record_bytes_,
                  slot_mask_bytes_,
                  convert_on_host_,
                  direct_,
                  options_.output != OutputFormat::uint8_nhwc,
                  backend_->separate_device_memory()};
  slot_layout_.add_targets(dataset_.index());
  allocate_ring(memory);
  start_prefetch(memory);
}

// The ring's first `prefetch` slots; more are added only while a consumer
// keeps every slot held (grow_when_every_slot_is_held()).
void LoaderCore::allocate_ring(uint64_t memory) {
  memory_ = memory;
  // A consumer may keep 2 x prefetch batches alive besides the one it is
  // using (a for loop's variable) and still ask for the next.
  max_slots_ = 2 * options_.prefetch + 2;
  require_ring_fits(options_.prefetch, slot_capacity_, slot_layout_.host_bytes_per_image(), memory,
                    RingGrowth::initial);
  slots_.resize(max_slots_);
  leased_.assign(max_slots_, 0);
  for (std::size_t i = 0; i < options_.prefetch; ++i) {
    slots_[i] = make_slot();
    free_slots_.push_back(static_cast<int>(i));
  }
  slot_count_ = options_.prefetch;
  table_.resize(options_.prefetch);
}

Slot LoaderCore::make_slot() {
  SlotBytes bytes;
  Slot slot = detail::make_slot(*backend_, slot_layout_, bytes);
  ring_host_bytes_.fetch_add(bytes.host, std::memory_order_relaxed);
  ring_device_bytes_.fetch_add(bytes.device, std::memory_order_relaxed);
  return slot;
}

void LoaderCore::grow_when_every_slot_is_held(std::unique_lock<std::mutex>& lock) {
  if (held_ < slot_count_ || slot_count_ == max_slots_) return;
  // Only the consumer thread grows the ring, so slots_[index] is nobody
  // else's until it is put into free_slots_ below.
  const std::size_t index = slot_count_;
  require_ring_fits(index + 1, slot_capacity_, slot_layout_.host_bytes_per_image(), memory_,
                    RingGrowth::added);
  lock.unlock();
  Slot slot = make_slot();
  lock.lock();
  slots_[index] = std::move(slot);
  free_slots_.push_back(static_cast<int>(index));
  slot_count_ = index + 1;
  work_cv_.notify_all();
}

LoaderCore::~LoaderCore() {
  // In-flight copies read the staging memory: let them finish before it is freed.
  for (Slot& slot : slots_) {
    if (!slot.upload_done) continue;  // never allocated
    try {
      backend_->synchronize(*slot.upload_done);
    } catch (...) {  // the device is gone; nothing left to wait for
    }
  }
}

void LoaderCore::start_threads() {
  threads_.reserve(reader_threads_ + 1);
  try {
    for (unsigned i = 0; i < reader_threads_; ++i) threads_.emplace_back([this] { reader_main(); });
    threads_.emplace_back([this] { upload_main(); });
  } catch (...) {
    stop();
    throw;
  }
}

void LoaderCore::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  upload_cv_.notify_all();
  consumer_cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  // What the loader alone used goes with it; a Batch kept past it holds its
  // own slot, not the shard prefetcher's threads or the rest of the ring.
  prefetch_.reset();
  std::lock_guard lock(mu_);
  for (std::size_t i = 0; i < slot_count_; ++i) {
    if (leased_[i] != 0) continue;
    Slot& slot = slots_[i];
    // In-flight copies read its memory, and so may the consumer's stream
    // work on a batch released before.
    try {
      if (slot.upload_done) backend_->synchronize(*slot.upload_done);
      if (slot.consumer_pending && slot.consumer_done) backend_->synchronize(*slot.consumer_done);
    } catch (...) {  // the device is gone; nothing left to wait for
    }
    slot = Slot{};
  }
  free_slots_.clear();
}

void LoaderCore::set_epoch(uint64_t epoch) {
  uint64_t consumed = 0;
  bool resumed = false;
  {
    std::lock_guard lock(mu_);
    if (resume_pending_ && epoch == epoch_) {
      consumed = resume_consumed_;
      resumed = true;
    } else if (adopt_next_epoch(epoch)) {
      return;
    }
  }
  start_epoch(epoch, consumed, resumed);
}

bool LoaderCore::adopt_next_epoch(uint64_t epoch) {
  if (!running_ || error_ || !next_work_ || next_work_->epoch != epoch ||
      next_deliver_ != end_seq_) {
    return false;
  }
  for (const InFlight& f : table_) {
    if (f.seq != kNoSeq && f.seq >= end_seq_ && f.stage == Stage::ready) ++read_ahead_;
  }
  work_ = std::move(next_work_);
  epoch_ = epoch;
  if (prefetch_) prefetch_->advance();
  base_seq_ = end_seq_;
  end_seq_ = base_seq_ + work_->batches;
  next_unit_ = next_epoch_unit_;
  total_units_ = work_->batches * chunks_per_batch_;
  next_epoch_unit_ = 0;
  plan_failed_ = false;
  resume_pending_ = false;
  work_cv_.notify_all();
  return true;
}

LoaderState LoaderCore::state() const {
  LoaderState state = initial_state_;
  std::lock_guard lock(mu_);
  if (started_) {
    state.epoch = epoch_;
    state.consumed = consumed_positions(*work_, static_cast<std::size_t>(next_deliver_ - base_seq_),
                                        state.global_batch, state.epoch_positions);
  }
  return state;
}

void LoaderCore::restore(const LoaderState& saved) {
  require_same_fingerprint(saved, initial_state_);
  if (saved.consumed > initial_state_.epoch_positions) {
    throw Error("loader state: " + std::to_string(saved.consumed) + " consumed positions of " +
                std::to_string(initial_state_.epoch_positions) + " (damaged state?)");
  }
  start_epoch(saved.epoch, saved.consumed, true);
}

std::shared_ptr<const EpochBatches> LoaderCore::plan_epoch(uint64_t epoch,
                                                           uint64_t consumed) const {
  const OrderOptions& order = order_.options();
  auto work = std::make_shared<const EpochBatches>(
      consumed == 0
          ? make_epoch_batches(order_.plan(epoch), options_.batch_size, options_.last_batch)
          : make_resumed_batches(epoch, order_.global_order(epoch), consumed,
                                 {order.rank, order.world_size, order.rank_policy},
                                 options_.batch_size, options_.last_batch));
  // Batch 0 is the largest.
  if (work->batches > 0 && work->size(0) > slot_capacity_) {
    throw Error("Loader: epoch " + std::to_string(epoch) + " has batches of " +
                std::to_string(work->size(0)) + " images, more than the " +
                std::to_string(slot_capacity_) + " its slots hold");
  }
  return work;
}

void LoaderCore::start_epoch(uint64_t epoch, uint64_t consumed, bool resumed) {
  std::shared_ptr<const EpochBatches> work = plan_epoch(epoch, consumed);
  std::unique_lock lock(mu_);
  ++generation_;
  running_ = false;
  // Threads finish the chunk or upload they are in (bounded work), then idle.
  consumer_cv_.wait(lock, [&] { return busy_readers_ == 0 && !upload_busy_; });
  for (InFlight& f : table_) {
    if (f.slot >= 0) free_slots_.push_back(f.slot);
    f = InFlight{};
  }
  work_ = std::move(work);
  epoch_ = epoch;
  if (prefetch_) prefetch_->reset(work_, 0);
  next_work_ = nullptr;
  next_epoch_unit_ = 0;
  planning_ = false;
  plan_failed_ = false;
  resume_pending_ = resumed;
  resume_consumed_ = consumed;
  base_seq_ = end_seq_;
  end_seq_ = base_seq_ + work_->batches;
  next_unit_ = 0;
  total_units_ = work_->batches * chunks_per_batch_;
  next_upload_ = next_deliver_ = base_seq_;
  error_ = nullptr;
  running_ = true;
  started_ = true;
  lock.unlock();
  work_cv_.notify_all();
}

void LoaderCore::fail(std::exception_ptr error) {
  if (!error_) error_ = std::move(error);
  running_ = false;
  consumer_cv_.notify_all();
}

bool LoaderCore::claimable() const {
  if (!running_) return false;
  if (next_unit_ < total_units_) return claimable_unit(base_seq_, next_unit_);
  return next_work_ && next_epoch_unit_ < next_work_->batches * chunks_per_batch_ &&
         claimable_unit(end_seq_, next_epoch_unit_);
}

bool LoaderCore::claimable_unit(uint64_t base, std::size_t unit) const {
  const uint64_t seq = base + unit / chunks_per_batch_;
  const InFlight& f = table_[seq % table_.size()];
  const bool free = unit % chunks_per_batch_ == 0 ? f.stage == Stage::empty && !free_slots_.empty()
                                                  : f.seq == seq && f.stage == Stage::filling;
  if (!free || !prefetch_) return free;
  const EpochBatches& work = base == base_seq_ ? *work_ : *next_work_;
  return prefetch_->ready(work, unit_end(work, unit));
}

std::size_t LoaderCore::unit_end(const EpochBatches& work, std::size_t unit) const {
  const std::size_t batch = unit / chunks_per_batch_;
  const std::size_t chunk = unit % chunks_per_batch_;
  return work.begin(batch) + std::min((chunk + 1) * chunk_records_, work.size(batch));
}

// Shard-window and sequential epochs visit the shards a few at a time: when
// records are taken as the page cache allows (ReadPath::automatic), a
// prefetcher reads the shards an epoch visits next in large requests and the
// reader threads copy from the mapping once their shards are in memory. It
// takes half the memory the page cache may use besides the ring, and only
// where a window of the largest shards fits in that: a window that does not
// fit would be evicted while it is read (the read path serves it instead,
// record by record). A shard-window epoch of a dataset larger than memory
// (records read with O_DIRECT) does without it: filling the page cache with
// shards that are dropped after one use costs more than reading the window's
// records past it, many in flight (docs/BENCHMARKS.md, "Cold reads").
void LoaderCore::start_prefetch(uint64_t memory) {
  const OrderMode mode = options_.order.mode;
  if (options_.read_path != ReadPath::automatic || direct_ ||
      options_.order.sampling != Sampling::uniform ||
      (mode != OrderMode::shard_window && mode != OrderMode::sequential) ||
      (mode == OrderMode::shard_window && filler_->shard_files() &&
       filler_->shard_files()->direct())) {
    return;
  }
  const uint64_t budget = memory > ring_host_bytes_ ? (memory - ring_host_bytes_) / 2 : 0;
  uint64_t largest = 0;
  for (std::size_t k = 0; k < dataset_.num_shards(); ++k) {
    largest = std::max<uint64_t>(largest,
                                 dataset_.shard_images(k).size() + dataset_.shard_masks(k).size());
  }
  const uint64_t window = mode == OrderMode::sequential ? 1 : options_.order.window_shards;
  if (window * largest > budget) return;
  ShardPrefetch::Options prefetch;
  prefetch.budget = budget;
  prefetch.evict_finished = dataset_.num_records() * (record_bytes_ + mask_bytes_) > memory;
  prefetch.threads = kPrefetchThreads;
  prefetch.unit_entries = chunk_records_;
  prefetch_ = std::make_unique<ShardPrefetch>(dataset_, prefetch, [this] {
    { std::lock_guard lock(mu_); }
    work_cv_.notify_all();
  });
}

bool LoaderCore::plannable() const {
  return running_ && next_unit_ >= total_units_ && !next_work_ && !planning_ && !plan_failed_;
}

void LoaderCore::plan_next_epoch(std::unique_lock<std::mutex>& lock) {
  planning_ = true;
  const uint64_t generation = generation_;
  const uint64_t epoch = epoch_ + 1;
  lock.unlock();
  std::shared_ptr<const EpochBatches> work;
  try {
    work = plan_epoch(epoch);
  } catch (...) {
    // set_epoch() plans the epoch again and reports what went wrong.
  }
  lock.lock();
  if (generation != generation_) return;  // set_epoch() came first and reset planning_
  planning_ = false;
  next_work_ = std::move(work);
  plan_failed_ = !next_work_;
  if (prefetch_ && next_work_) prefetch_->append(next_work_);
  work_cv_.notify_all();
}

void LoaderCore::reader_main() {
  ThreadReaders readers;  // the read path's queues and buffers, made on first use
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || claimable() || plannable(); });
    if (stop_) return;
    if (!claimable()) {
      plan_next_epoch(lock);
      continue;
    }
    const uint64_t generation = generation_;
    // The current epoch's next unit, or the next epoch's once it is all claimed.
    const bool ahead = next_unit_ >= total_units_;
    const std::size_t unit = ahead ? next_epoch_unit_++ : next_unit_++;
    const std::size_t batch = unit / chunks_per_batch_;
    const std::size_t chunk = unit % chunks_per_batch_;
    const uint64_t seq = (ahead ? end_seq_ : base_seq_) + batch;
    if (prefetch_) {
      const EpochBatches& claimed = ahead ? *next_work_ : *work_;
      prefetch_->claimed(claimed, unit_end(claimed, unit));
    }
    InFlight& f = table_[seq % table_.size()];
    const bool opening = chunk == 0;
    if (opening) {
      f = InFlight{seq, free_slots_.front(), Stage::opening, 0};
      free_slots_.pop_front();
    }
    Slot& slot = slots_[static_cast<std::size_t>(f.slot)];
    std::shared_ptr<const EpochBatches> work = ahead ? next_work_ : work_;
    ++busy_readers_;
    lock.unlock();

    const Clock::time_point start = Clock::now();
    std::exception_ptr error;
    if (opening) {
      // The slot's previous upload may still be reading its staging memory.
      // Then the slot is readied for the batch (its box block laid out)
      // before another thread may claim one of the batch's chunks.
      try {
        backend_->synchronize(*slot.upload_done);
        filler_->open(*work, batch, slot);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      if (generation == generation_ && !error) f.stage = Stage::filling;
      lock.unlock();
      work_cv_.notify_all();
    }
    if (!error) {
      try {
        fill_chunk(*work, batch, chunk, slot, readers);
      } catch (...) {
        error = std::current_exception();
      }
    }
    reader_ns_.fetch_add(nanoseconds_since(start), std::memory_order_relaxed);

    lock.lock();
    --busy_readers_;
    if (generation == generation_) {
      if (error) {
        fail(error);
      } else if (++f.chunks_done == chunks_per_batch_) {
        f.stage = Stage::filled;
        upload_cv_.notify_one();
      }
    }
    if (busy_readers_ == 0) consumer_cv_.notify_all();
  }
}

void LoaderCore::fill_chunk(const EpochBatches& work, std::size_t batch, std::size_t chunk,
                            Slot& slot, ThreadReaders& readers) const {
  const std::size_t begin = chunk * chunk_records_;
  const std::size_t end = std::min(begin + chunk_records_, work.size(batch));
  if (begin >= end) return;  // a chunk past the end of a short last batch
  // A chunk the prefetcher gated is in memory.
  const bool in_memory = prefetch_ && batch * options_.batch_size + begin < work.pad_from;
  if (in_memory) prefetch_->check();
  filler_->fill(work, batch, begin, end, slot, readers, in_memory);
}

bool LoaderCore::uploadable() const {
  const uint64_t read_ahead = next_work_ ? next_work_->batches : 0;
  if (!running_ || next_upload_ >= end_seq_ + read_ahead) return false;
  const InFlight& f = table_[next_upload_ % table_.size()];
  return f.seq == next_upload_ && f.stage == Stage::filled;
}

void LoaderCore::upload_main() {
  std::unique_lock lock(mu_);
  for (;;) {
    upload_cv_.wait(lock, [&] { return stop_ || uploadable(); });
    if (stop_) return;
    const uint64_t generation = generation_;
    const uint64_t seq = next_upload_;
    InFlight& f = table_[seq % table_.size()];
    f.stage = Stage::uploading;
    Slot& slot = slots_[static_cast<std::size_t>(f.slot)];
    const bool wait_for_consumer = slot.consumer_pending;
    slot.consumer_pending = false;
    const std::size_t count =
        seq < end_seq_ ? work_->size(seq - base_seq_) : next_work_->size(seq - end_seq_);
    upload_busy_ = true;
    lock.unlock();

    const Clock::time_point start = Clock::now();
    std::exception_ptr error;
    try {
      if (slot_layout_.boxes) slot.boxes.close_gaps(count);
      if (backend_->separate_device_memory()) {
        if (wait_for_consumer) backend_->stream_wait(*slot.consumer_done);
        // Masks ride in the same upload: after the batch's images in both
        // staging and device memory.
        auto* device_masks =
            static_cast<uint8_t*>(slot.device.data()) + slot_capacity_ * slot_record_bytes_;
        if (direct_) {
          backend_->gather_to_device(slot.device.data(), slot.sources.data(), count, record_bytes_);
          if (slot_mask_bytes_ > 0) {
            backend_->gather_to_device(device_masks, slot.mask_sources.data(), count, mask_bytes_);
          }
        } else if (slot_mask_bytes_ > 0 && count == slot_capacity_) {
          backend_->copy_to_device(slot.device.data(), slot.staging.data(),
                                   count * (slot_record_bytes_ + slot_mask_bytes_));
        } else {
          backend_->copy_to_device(slot.device.data(), slot.staging.data(),
                                   count * slot_record_bytes_);
          if (slot_mask_bytes_ > 0) {
            backend_->copy_to_device(device_masks, slot.host_masks, count * slot_mask_bytes_);
          }
        }
        if (options_.output != OutputFormat::uint8_nhwc) {
          ConvertJob job;
          job.src = static_cast<const uint8_t*>(slot.device.data());
          job.dst = slot.output.data();
          job.count = count;
          job.format = options_.output;
          job.shape = shape_;
          job.norm = norm_;
          backend_->convert(job);
        }
      }
      backend_->record(*slot.upload_done);
    } catch (...) {
      error = std::current_exception();
    }
    upload_ns_.fetch_add(nanoseconds_since(start), std::memory_order_relaxed);

    lock.lock();
    upload_busy_ = false;
    if (generation == generation_) {
      if (error) {
        fail(error);
      } else {
        f.stage = Stage::ready;
        ++next_upload_;
      }
    }
    consumer_cv_.notify_all();
  }
}

std::optional<Batch> LoaderCore::next(const std::shared_ptr<LoaderCore>& self) {
  if (!started_) set_epoch(0);
  std::unique_lock lock(mu_);
  const Clock::time_point entered = Clock::now();
  consumer_entered(entered);
  if (error_) std::rethrow_exception(error_);
  if (next_deliver_ >= end_seq_) {
    consumer_last_ = entered;
    return std::nullopt;
  }
  const uint64_t seq = next_deliver_;
  InFlight& f = table_[seq % table_.size()];
  auto ready = [&] { return error_ || (f.seq == seq && f.stage == Stage::ready); };
  if (!ready()) {
    while (!ready()) {
      grow_when_every_slot_is_held(lock);
      if (stalled()) {
        throw SlotsHeldError(
            "Loader::next: all " + std::to_string(slot_count_) +
            " prefetch slots are held by live Batch objects (prefetch " +
            std::to_string(options_.prefetch) + " and " +
            std::to_string(slot_count_ - options_.prefetch) +
            " added for batches kept alive): a consumer may keep at most 2 x prefetch = " +
            std::to_string(2 * options_.prefetch) +
            " batches alive besides the one it is using while it asks for the next; "
            "release one (or raise prefetch) first");
      }
      if (!ready()) consumer_cv_.wait(lock);
    }
    wait_ns_ += nanoseconds_since(entered);
  }
  if (error_) std::rethrow_exception(error_);

  const auto b = static_cast<std::size_t>(seq - base_seq_);
  const Batch::View view = batch_view(b, slots_[static_cast<std::size_t>(f.slot)]);
  Batch batch(SlotLease(self, f.slot), view);
  leased_[static_cast<std::size_t>(f.slot)] = 1;
  f = InFlight{};
  ++next_deliver_;
  if (prefetch_) prefetch_->delivered(work_->begin(b) + view.size);
  resume_pending_ = false;
  ++held_;
  ++batches_;
  images_ += view.size;
  padding_ += view.padding;
  consumer_last_ = Clock::now();
  lock.unlock();
  work_cv_.notify_all();
  return batch;
}

bool LoaderCore::deliverable() const {
  if (error_ || next_deliver_ >= end_seq_ || stalled()) return true;
  const InFlight& f = table_[next_deliver_ % table_.size()];
  return f.seq == next_deliver_ && f.stage == Stage::ready;
}

void LoaderCore::consumer_entered(Clock::time_point entered) {
  if (!consumer_started_) {
    consumer_started_ = true;
    consumer_first_ = entered;
  }
}

bool LoaderCore::wait_for_next(Clock::duration timeout) {
  if (!started_) set_epoch(0);
  std::unique_lock lock(mu_);
  const Clock::time_point entered = Clock::now();
  consumer_entered(entered);
  if (!deliverable()) {
    try {
      grow_when_every_slot_is_held(lock);
    } catch (const Error&) {
      return true;  // next() grows the ring or throws this error
    }
  }
  if (deliverable()) return true;
  // A timeout past any deadline the clock can hold (nanoseconds::max(), "for
  // ever") is waited without one: now + timeout would overflow and time out
  // at once.
  constexpr auto kForever = std::chrono::hours(24 * 365 * 100);
  bool ready = true;
  if (timeout >= kForever) {
    consumer_cv_.wait(lock, [&] { return deliverable(); });
  } else {
    ready = consumer_cv_.wait_for(lock, timeout, [&] { return deliverable(); });
  }
  wait_ns_ += nanoseconds_since(entered);
  return ready;
}

Batch::View LoaderCore::batch_view(std::size_t b, const Slot& slot) const {
  Batch::View view;
  view.epoch = work_->epoch;
  view.index = work_->first_index + b;
  view.size = work_->size(b);
  view.padding = work_->padding(b);
  view.format = options_.output;
  view.device = backend_->device();
  view.data = slot.images;
  view.bytes = view.size * output_record_bytes_;
  view.masks = slot.masks;
  view.mask_bytes = view.size * slot_mask_bytes_;
  view.shape = shape_;
  view.labels = slot.labels.data();
  view.multilabel = slot.multilabel.data();
  view.multilabel_classes = slot_layout_.multilabel_classes;
  view.targets = slot.targets.data();
  view.num_targets = slot_layout_.targets;
  view.samples = slot.samples.data();
  view.records = slot.records.data();
  if (slot_layout_.boxes) view.boxes = slot.boxes.block(view.size);
  return view;
}

void LoaderCore::record_consumer_event(int slot, void* stream) {
  backend_->record_on_stream(*slots_[static_cast<std::size_t>(slot)].consumer_done, stream);
}

void LoaderCore::release(int slot, bool consumer_stream_event) {
  {
    std::lock_guard lock(mu_);
    Slot& s = slots_[static_cast<std::size_t>(slot)];
    s.consumer_pending = s.consumer_pending || consumer_stream_event;
    free_slots_.push_back(slot);
    leased_[static_cast<std::size_t>(slot)] = 0;
    --held_;
  }
  work_cv_.notify_all();
  consumer_cv_.notify_all();
}

LoaderStats LoaderCore::stats() const {
  std::lock_guard lock(mu_);
  LoaderStats s;
  s.batches = batches_;
  s.images = images_;
  s.padding = padding_;
  s.bytes = images_ * (slot_record_bytes_ + slot_mask_bytes_);
  s.mask_bytes = images_ * slot_mask_bytes_;
  if (consumer_started_) {
    s.consumer_seconds = std::chrono::duration<double>(consumer_last_ - consumer_first_).count();
  }
  s.wait_seconds = seconds(wait_ns_);
  s.reader_busy_seconds = seconds(reader_ns_.load(std::memory_order_relaxed));
  s.upload_busy_seconds = seconds(upload_ns_.load(std::memory_order_relaxed));
  s.read_ahead_batches = read_ahead_;
  s.added_slots = slot_count_ - options_.prefetch;
  s.threads = reader_threads_;
  s.direct_upload = upload_.direct;
  s.upload = upload_.reason;
  s.records_read = filler_->records_read();
  if (prefetch_) {
    s.prefetched_bytes = prefetch_->populated_bytes();
    s.prefetch_cached_shards = prefetch_->cached_visits();
  }
  return s;
}

void LoaderCore::reset_stats() {
  std::lock_guard lock(mu_);
  batches_ = images_ = padding_ = wait_ns_ = read_ahead_ = 0;
  consumer_started_ = false;
  reader_ns_.store(0, std::memory_order_relaxed);
  upload_ns_.store(0, std::memory_order_relaxed);
  filler_->reset_records_read();
}

}  // namespace imgpack::detail
