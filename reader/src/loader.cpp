#include "imgpack/loader.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "imgpack/checksum.hpp"
#include "imgpack/error.hpp"

namespace imgpack {

namespace detail {

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kNoSeq = ~uint64_t{0};
// Reader threads claim work in chunks of about this many bytes: one lock per
// chunk, small enough to spread a batch over many threads.
constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

uint64_t nanoseconds_since(Clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
}

double seconds(uint64_t ns) { return static_cast<double>(ns) * 1e-9; }

// Where a batch is in the pipeline.
enum class Stage { empty, opening, filling, filled, uploading, ready };

// The memory and events of one slot of the ring; reused batch after batch.
struct Slot {
  Memory staging;  // uint8 records written by reader threads (unless converting on the host)
  Memory device;   // device copy of `staging` (CUDA)
  Memory output;   // converted images (float formats)
  const void* images = nullptr;  // what Batch::data() shows
  std::vector<int32_t> labels;
  std::vector<int64_t> samples;
  std::vector<uint64_t> records;
  std::unique_ptr<UploadEvent> upload_done;    // fires when the slot's upload is complete
  std::unique_ptr<UploadEvent> consumer_done;  // recorded on the consumer's stream
  bool consumer_pending = false;               // the next upload must wait for consumer_done
};

// A batch between being opened by a reader thread and delivered by next().
struct InFlight {
  uint64_t seq = kNoSeq;
  int slot = -1;
  Stage stage = Stage::empty;
  std::size_t chunks_done = 0;
};

// Everything one epoch delivers, fixed when the epoch starts.
struct EpochWork {
  uint64_t epoch = 0;
  std::vector<uint64_t> entries;  // record of every batch position, last-batch padding included
  std::size_t batches = 0;
  std::size_t pad_from = 0;  // entries at or after this index are padding
};

void validate(const Dataset& dataset, const LoaderOptions& o) {
  if (!dataset) throw UsageError("Loader: the dataset is not open");
  if (o.batch_size == 0) throw UsageError("batch size must be at least 1");
  if (o.threads == 0 || o.threads > 1024) throw UsageError("threads must be between 1 and 1024");
  if (o.prefetch == 0 || o.prefetch > 4096) {
    throw UsageError("prefetch must be between 1 and 4096 slots");
  }
  if (o.output != OutputFormat::uint8_nhwc) {
    for (uint32_t c = 0; c < dataset.channels(); ++c) {
      if (!(o.stddev[c] > 0)) throw UsageError("stddev must be positive for every channel");
    }
  }
}

}  // namespace

class LoaderCore {
 public:
  LoaderCore(Dataset dataset, LoaderOptions options);
  ~LoaderCore();
  LoaderCore(const LoaderCore&) = delete;
  LoaderCore& operator=(const LoaderCore&) = delete;

  void start_threads();
  void stop();
  void set_epoch(uint64_t epoch);
  std::optional<Batch> next(const std::shared_ptr<LoaderCore>& self);
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
  std::size_t batches_per_epoch() const;
  std::size_t images_per_epoch() const;
  LoaderStats stats() const;
  void reset_stats();

  const EpochOrder& order() const { return order_; }
  const LoaderOptions& options() const { return options_; }
  UploadBackend& backend() const { return *backend_; }
  std::size_t ring_host_bytes() const { return ring_host_bytes_; }
  std::size_t ring_device_bytes() const { return ring_device_bytes_; }

 private:
  std::shared_ptr<const EpochWork> build_work(uint64_t epoch) const;
  std::size_t batch_entries(const EpochWork& work, std::size_t b) const {
    return std::min(options_.batch_size, work.entries.size() - b * options_.batch_size);
  }
  bool claimable() const;
  bool uploadable() const;
  void reader_main();
  void upload_main();
  void fill_chunk(const EpochWork& work, std::size_t batch, std::size_t chunk, Slot& slot);
  void fail(std::exception_ptr error);  // with mu_ held

  const Dataset dataset_;
  const LoaderOptions options_;
  const EpochOrder order_;
  const std::size_t record_bytes_;
  const std::size_t output_record_bytes_;
  const RecordGeometry geometry_;
  const Normalization norm_;
  bool convert_on_host_ = false;
  std::size_t chunk_records_ = 1;
  std::size_t chunks_per_batch_ = 1;
  std::size_t ring_host_bytes_ = 0;
  std::size_t ring_device_bytes_ = 0;

  // Declared before the slots: their memory and events die first.
  std::unique_ptr<UploadBackend> backend_;
  std::vector<Slot> slots_;

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
  std::shared_ptr<const EpochWork> work_;
  std::vector<InFlight> table_;  // batch seq lives at table_[seq % prefetch]
  std::deque<int> free_slots_;
  std::size_t held_ = 0;  // slots held by live Batches
  uint64_t base_seq_ = 0, end_seq_ = 0;
  std::size_t next_unit_ = 0, total_units_ = 0;
  uint64_t next_upload_ = 0, next_deliver_ = 0;
  unsigned busy_readers_ = 0;
  bool upload_busy_ = false;
  std::exception_ptr error_;

  // Stats (guarded by mu_, except the two busy counters).
  uint64_t batches_ = 0, images_ = 0, padding_ = 0;
  uint64_t wait_ns_ = 0;
  bool consumer_started_ = false;
  Clock::time_point consumer_first_{}, consumer_last_{};
  std::atomic<uint64_t> reader_ns_{0};
  std::atomic<uint64_t> upload_ns_{0};

  std::vector<std::thread> threads_;
};

LoaderCore::LoaderCore(Dataset dataset, LoaderOptions options)
    : dataset_((validate(dataset, options), std::move(dataset))),
      options_(std::move(options)),
      order_(dataset_, select_samples(dataset_.index(), options_.selection),
             resolve_variant_policy(options_.selection.variants, options_.selection.role),
             options_.order),
      record_bytes_(dataset_.record_bytes()),
      output_record_bytes_(record_bytes_ * output_element_bytes(options_.output)),
      geometry_{dataset_.height(), dataset_.width(), dataset_.channels()},
      norm_(Normalization::from_mean_std(options_.mean.data(), options_.stddev.data(),
                                         dataset_.channels())) {
  backend_ = make_upload_backend(options_.device, options_.pin_host_memory);
  const bool device_copy = backend_->separate_device_memory();
  const bool converting = options_.output != OutputFormat::uint8_nhwc;
  convert_on_host_ = !device_copy && converting;
  const std::size_t batch = options_.batch_size;
  chunk_records_ = std::clamp<std::size_t>(kChunkBytes / record_bytes_, 1, batch);
  chunks_per_batch_ = (batch + chunk_records_ - 1) / chunk_records_;

  slots_.resize(options_.prefetch);
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    if (convert_on_host_) {
      slot.output = backend_->allocate_host(batch * output_record_bytes_);
      slot.images = slot.output.data();
      ring_host_bytes_ += slot.output.size();
    } else {
      slot.staging = backend_->allocate_host(batch * record_bytes_);
      slot.images = slot.staging.data();
      ring_host_bytes_ += slot.staging.size();
    }
    if (device_copy) {
      slot.device = backend_->allocate_device(batch * record_bytes_);
      slot.images = slot.device.data();
      ring_device_bytes_ += slot.device.size();
      if (converting) {
        slot.output = backend_->allocate_device(batch * output_record_bytes_);
        slot.images = slot.output.data();
        ring_device_bytes_ += slot.output.size();
      }
    }
    slot.labels.resize(batch);
    slot.samples.resize(batch);
    slot.records.resize(batch);
    slot.upload_done = backend_->create_event();
    slot.consumer_done = backend_->create_event();
    free_slots_.push_back(static_cast<int>(i));
  }
  table_.resize(options_.prefetch);
}

LoaderCore::~LoaderCore() {
  // In-flight copies read the staging memory: let them finish before it is freed.
  for (Slot& slot : slots_) {
    try {
      backend_->synchronize(*slot.upload_done);
    } catch (...) {  // the device is gone; nothing left to wait for
    }
  }
}

void LoaderCore::start_threads() {
  threads_.reserve(options_.threads + 1);
  try {
    for (unsigned i = 0; i < options_.threads; ++i)
      threads_.emplace_back([this] { reader_main(); });
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
}

std::shared_ptr<const EpochWork> LoaderCore::build_work(uint64_t epoch) const {
  EpochPlan plan = order_.plan(epoch);
  auto work = std::make_shared<EpochWork>();
  work->epoch = epoch;
  const std::size_t m = plan.records.size();
  const std::size_t b = options_.batch_size;
  const std::size_t full = m / b, rest = m % b;
  work->pad_from = m - plan.padding;
  work->entries = std::move(plan.records);
  switch (options_.last_batch) {
    case LastBatch::drop:
      work->entries.resize(full * b);
      work->batches = full;
      break;
    case LastBatch::partial:
      work->batches = full + (rest > 0 ? 1 : 0);
      break;
    case LastBatch::pad:
      for (std::size_t j = 0; rest > 0 && j < b - rest; ++j) {
        work->entries.push_back(work->entries[j % m]);
      }
      work->batches = full + (rest > 0 ? 1 : 0);
      break;
  }
  work->pad_from = std::min(work->pad_from, work->entries.size());
  return work;
}

std::size_t LoaderCore::batches_per_epoch() const {
  const std::size_t m = order_.rank_size(), b = options_.batch_size;
  return options_.last_batch == LastBatch::drop ? m / b : (m + b - 1) / b;
}

std::size_t LoaderCore::images_per_epoch() const {
  const std::size_t m = order_.rank_size(), b = options_.batch_size;
  switch (options_.last_batch) {
    case LastBatch::drop:
      return m / b * b;
    case LastBatch::partial:
      return m;
    case LastBatch::pad:
      return (m + b - 1) / b * b;
  }
  return m;
}

void LoaderCore::set_epoch(uint64_t epoch) {
  std::shared_ptr<const EpochWork> work = build_work(epoch);
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
  if (!running_ || next_unit_ >= total_units_) return false;
  const uint64_t seq = base_seq_ + next_unit_ / chunks_per_batch_;
  const InFlight& f = table_[seq % table_.size()];
  if (next_unit_ % chunks_per_batch_ == 0) return f.stage == Stage::empty && !free_slots_.empty();
  return f.seq == seq && f.stage == Stage::filling;
}

void LoaderCore::reader_main() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || claimable(); });
    if (stop_) return;
    const uint64_t generation = generation_;
    const std::size_t unit = next_unit_++;
    const std::size_t batch = unit / chunks_per_batch_;
    const std::size_t chunk = unit % chunks_per_batch_;
    const uint64_t seq = base_seq_ + batch;
    InFlight& f = table_[seq % table_.size()];
    const bool opening = chunk == 0;
    if (opening) {
      f = InFlight{seq, free_slots_.front(), Stage::opening, 0};
      free_slots_.pop_front();
    }
    Slot& slot = slots_[static_cast<std::size_t>(f.slot)];
    std::shared_ptr<const EpochWork> work = work_;
    ++busy_readers_;
    lock.unlock();

    const Clock::time_point start = Clock::now();
    std::exception_ptr error;
    if (opening) {
      // The slot's previous upload may still be reading its staging memory.
      try {
        backend_->synchronize(*slot.upload_done);
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
        fill_chunk(*work, batch, chunk, slot);
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

void LoaderCore::fill_chunk(const EpochWork& work, std::size_t batch, std::size_t chunk,
                            Slot& slot) {
  const std::size_t batch_begin = batch * options_.batch_size;
  const std::size_t in_batch = batch_entries(work, batch);
  const std::size_t begin = chunk * chunk_records_;
  const std::size_t end = std::min(begin + chunk_records_, in_batch);
  auto* staging = static_cast<uint8_t*>(slot.staging.data());
  auto* output = static_cast<uint8_t*>(slot.output.data());
  for (std::size_t pos = begin; pos < end; ++pos) {
    const uint64_t record = work.entries[batch_begin + pos];
    const uint8_t* src = dataset_.record_data(record);
    if (options_.verify_checksums &&
        checksum(src, record_bytes_) != dataset_.record_checksum(record)) {
      const DatasetIndex& index = dataset_.index();
      throw file_error(dataset_.shard_path(dataset_.record_shard(record)),
                       "row " + std::to_string(index.record_row[record]) + " (sample " +
                           std::to_string(dataset_.record_sample(record)) +
                           ") does not match its stored checksum");
    }
    if (convert_on_host_) {
      convert_record_host(src, output + pos * output_record_bytes_, options_.output, geometry_,
                          norm_);
    } else {
      std::memcpy(staging + pos * record_bytes_, src, record_bytes_);
    }
    slot.labels[pos] = dataset_.record_label(record);
    slot.samples[pos] = dataset_.record_sample(record);
    slot.records[pos] = record;
  }
}

bool LoaderCore::uploadable() const {
  if (!running_ || next_upload_ >= end_seq_) return false;
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
    const std::size_t count = batch_entries(*work_, seq - base_seq_);
    upload_busy_ = true;
    lock.unlock();

    const Clock::time_point start = Clock::now();
    std::exception_ptr error;
    try {
      if (backend_->separate_device_memory()) {
        if (wait_for_consumer) backend_->stream_wait(*slot.consumer_done);
        backend_->copy_to_device(slot.device.data(), slot.staging.data(), count * record_bytes_);
        if (options_.output != OutputFormat::uint8_nhwc) {
          ConvertJob job;
          job.src = static_cast<const uint8_t*>(slot.device.data());
          job.dst = slot.output.data();
          job.count = count;
          job.format = options_.output;
          job.geometry = geometry_;
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
  if (!consumer_started_) {
    consumer_started_ = true;
    consumer_first_ = entered;
  }
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
      if (held_ == slots_.size()) {
        throw Error("Loader::next: all " + std::to_string(slots_.size()) +
                    " prefetch slots are held by live Batch objects; release one (or raise "
                    "prefetch) before asking for the next batch");
      }
      consumer_cv_.wait(lock);
    }
    wait_ns_ += nanoseconds_since(entered);
  }
  if (error_) std::rethrow_exception(error_);

  const EpochWork& work = *work_;
  const std::size_t b = seq - base_seq_;
  const std::size_t begin = b * options_.batch_size;
  const std::size_t count = batch_entries(work, b);
  const std::size_t padded_begin = std::max(begin, work.pad_from);
  Slot& slot = slots_[static_cast<std::size_t>(f.slot)];

  Batch batch;
  batch.core_ = self;
  batch.slot_ = f.slot;
  batch.epoch_ = work.epoch;
  batch.index_ = b;
  batch.size_ = count;
  batch.padding_ = begin + count > padded_begin ? begin + count - padded_begin : 0;
  batch.format_ = options_.output;
  batch.device_ = backend_->device();
  batch.data_ = slot.images;
  batch.bytes_ = count * output_record_bytes_;
  batch.height_ = geometry_.height;
  batch.width_ = geometry_.width;
  batch.channels_ = geometry_.channels;
  batch.labels_ = slot.labels.data();
  batch.samples_ = slot.samples.data();
  batch.records_ = slot.records.data();

  f = InFlight{};
  ++next_deliver_;
  ++held_;
  ++batches_;
  images_ += count;
  padding_ += batch.padding_;
  consumer_last_ = Clock::now();
  lock.unlock();
  work_cv_.notify_all();
  return batch;
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
  s.bytes = images_ * record_bytes_;
  if (consumer_started_) {
    s.consumer_seconds = std::chrono::duration<double>(consumer_last_ - consumer_first_).count();
  }
  s.wait_seconds = seconds(wait_ns_);
  s.reader_busy_seconds = seconds(reader_ns_.load(std::memory_order_relaxed));
  s.upload_busy_seconds = seconds(upload_ns_.load(std::memory_order_relaxed));
  return s;
}

void LoaderCore::reset_stats() {
  std::lock_guard lock(mu_);
  batches_ = images_ = padding_ = wait_ns_ = 0;
  consumer_started_ = false;
  reader_ns_.store(0, std::memory_order_relaxed);
  upload_ns_.store(0, std::memory_order_relaxed);
}

}  // namespace detail

// --- Batch ------------------------------------------------------------------

Batch::~Batch() { release(); }

Batch::Batch(Batch&& other) noexcept { *this = std::move(other); }

Batch& Batch::operator=(Batch&& other) noexcept {
  if (this != &other) {
    release();
    core_ = std::move(other.core_);
    slot_ = std::exchange(other.slot_, -1);
    consumer_stream_event_ = std::exchange(other.consumer_stream_event_, false);
    epoch_ = other.epoch_;
    index_ = other.index_;
    size_ = std::exchange(other.size_, 0);
    padding_ = std::exchange(other.padding_, 0);
    format_ = other.format_;
    device_ = other.device_;
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    height_ = other.height_;
    width_ = other.width_;
    channels_ = other.channels_;
    labels_ = std::exchange(other.labels_, nullptr);
    samples_ = std::exchange(other.samples_, nullptr);
    records_ = std::exchange(other.records_, nullptr);
  }
  return *this;
}

void Batch::release() {
  if (!core_) return;
  std::shared_ptr<detail::LoaderCore> core = std::move(core_);
  core->release(slot_, consumer_stream_event_);
  slot_ = -1;
  consumer_stream_event_ = false;
  size_ = padding_ = bytes_ = 0;
  data_ = nullptr;
  labels_ = nullptr;
  samples_ = nullptr;
  records_ = nullptr;
}

void* Batch::ready_event() const {
  if (!core_ || !on_device()) return nullptr;
  return core_->backend_event(slot_);
}

void Batch::wait_on_stream(void* stream) const {
  if (!core_ || !on_device()) return;
  core_->wait_for_upload_on(slot_, stream);
}

void Batch::synchronize() const {
  if (!core_) return;
  core_->synchronize_upload(slot_);
}

void Batch::recycle_after(void* stream) {
  if (!core_ || !on_device()) return;
  core_->record_consumer_event(slot_, stream);
  consumer_stream_event_ = true;
}

void Batch::copy_to_host(void* dst) const {
  if (!core_ || bytes_ == 0) return;
  synchronize();
  core_->backend().copy_to_host(dst, data_, bytes_);
}

// --- Loader -------------------------------------------------------------------

Loader::Loader(Dataset dataset, LoaderOptions options)
    : core_(std::make_shared<detail::LoaderCore>(std::move(dataset), std::move(options))) {
  core_->start_threads();
}

Loader::~Loader() {
  if (core_) core_->stop();
}

void Loader::set_epoch(uint64_t epoch) { core_->set_epoch(epoch); }
std::optional<Batch> Loader::next() { return core_->next(core_); }
uint64_t Loader::epoch() const { return core_->epoch(); }
std::size_t Loader::batches_per_epoch() const { return core_->batches_per_epoch(); }
std::size_t Loader::images_per_epoch() const { return core_->images_per_epoch(); }
const EpochOrder& Loader::order() const { return core_->order(); }
const LoaderOptions& Loader::options() const { return core_->options(); }
Device Loader::device() const { return core_->backend().device(); }
std::size_t Loader::ring_host_bytes() const { return core_->ring_host_bytes(); }
std::size_t Loader::ring_device_bytes() const { return core_->ring_device_bytes(); }
LoaderStats Loader::stats() const { return core_->stats(); }
void Loader::reset_stats() { core_->reset_stats(); }

LastBatch parse_last_batch(std::string_view text) {
  if (text == "drop") return LastBatch::drop;
  if (text == "pad") return LastBatch::pad;
  if (text == "partial") return LastBatch::partial;
  throw UsageError("unknown last-batch policy '" + std::string(text) +
                   "' (use drop, pad or partial)");
}

RankPolicy parse_rank_policy(std::string_view text) {
  if (text == "pad") return RankPolicy::pad;
  if (text == "drop") return RankPolicy::drop;
  throw UsageError("unknown rank policy '" + std::string(text) + "' (use pad or drop)");
}

OutputFormat parse_output_format(std::string_view text) {
  if (text == "uint8") return OutputFormat::uint8_nhwc;
  if (text == "float32") return OutputFormat::float32_nchw;
  if (text == "float16") return OutputFormat::float16_nchw;
  throw UsageError("unknown output format '" + std::string(text) +
                   "' (use uint8, float32 or float16)");
}

}  // namespace imgpack
