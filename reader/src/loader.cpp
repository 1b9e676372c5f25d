// Loader and Batch: the public face of the pipeline in loader_core.cpp.
#include "imgpack/loader.hpp"

#include <memory>
#include <utility>

#include "fork_guard.hpp"
#include "imgpack/error.hpp"
#include "loader_core.hpp"

namespace imgpack {

// --- SlotLease and Batch -----------------------------------------------------

namespace detail {

SlotLease::SlotLease(SlotLease&& other) noexcept
    : core_(std::move(other.core_)),
      slot_(std::exchange(other.slot_, -1)),
      consumer_stream_event_(std::exchange(other.consumer_stream_event_, false)) {}

SlotLease& SlotLease::operator=(SlotLease&& other) noexcept {
  if (this != &other) {
    release();
    core_ = std::move(other.core_);
    slot_ = std::exchange(other.slot_, -1);
    consumer_stream_event_ = std::exchange(other.consumer_stream_event_, false);
  }
  return *this;
}

void SlotLease::release() {
  if (!core_) return;
  if (core_->made_before_fork()) {
    // The slot's lock may be held by a thread that stayed in the parent.
    abandon(std::move(core_));
    slot_ = -1;
    return;
  }
  const std::shared_ptr<LoaderCore> core = std::move(core_);
  core->release(slot_, consumer_stream_event_);
  slot_ = -1;
  consumer_stream_event_ = false;
}

}  // namespace detail

void Batch::release() {
  lease_.release();
  view_ = View{};
}

void* Batch::ready_event() const {
  if (!lease_ || !on_device()) return nullptr;
  return lease_.core().backend_event(lease_.slot());
}

void Batch::wait_on_stream(void* stream) const {
  if (!lease_ || !on_device()) return;
  lease_.core().wait_for_upload_on(lease_.slot(), stream);
}

void Batch::synchronize() const {
  if (!lease_) return;
  lease_.core().synchronize_upload(lease_.slot());
}

void Batch::recycle_after(void* stream) {
  if (!lease_ || !on_device()) return;
  lease_.core().record_consumer_event(lease_.slot(), stream);
  lease_.recycle_after_consumer_event();
}

void Batch::copy_to_host(void* dst) const {
  if (!lease_ || view_.bytes == 0) return;
  synchronize();
  lease_.core().backend().copy_to_host(dst, view_.data, view_.bytes);
}

void Batch::copy_masks_to_host(void* dst) const {
  if (!lease_ || view_.mask_bytes == 0) return;
  synchronize();
  lease_.core().backend().copy_to_host(dst, view_.masks, view_.mask_bytes);
}

// --- Loader -------------------------------------------------------------------

Loader::Loader(Dataset dataset, LoaderOptions options)
    : core_(std::make_shared<detail::LoaderCore>(std::move(dataset), std::move(options))) {
  core_->start_threads();
}

Loader::~Loader() {
  if (!core_) return;
  if (core_->made_before_fork()) {
    detail::abandon(std::move(core_));  // its threads, to join, are in the parent
    return;
  }
  core_->stop();
}

namespace {

// `core`, unless it was made before this process forked: its threads, and
// maybe a lock one of them held, stayed in the parent.
detail::LoaderCore& in_this_process(const std::shared_ptr<detail::LoaderCore>& core) {
  if (core->made_before_fork()) {
    throw Error(
        "this Loader was made before the process forked, and its reader threads stayed in the "
        "parent: make a Loader in the child instead (in a DataLoader worker, or in "
        "IterableDataset.__iter__)");
  }
  return *core;
}

}  // namespace

void Loader::set_epoch(uint64_t epoch) { in_this_process(core_).set_epoch(epoch); }
std::optional<Batch> Loader::next() { return in_this_process(core_).next(core_); }
bool Loader::wait_for_next(std::chrono::nanoseconds timeout) {
  return in_this_process(core_).wait_for_next(timeout);
}
uint64_t Loader::epoch() const { return in_this_process(core_).epoch(); }
LoaderState Loader::state() const { return in_this_process(core_).state(); }
void Loader::restore(const LoaderState& state) { in_this_process(core_).restore(state); }
std::size_t Loader::batches_per_epoch() const { return core_->batches_per_epoch(); }
std::size_t Loader::images_per_epoch() const { return core_->images_per_epoch(); }
std::size_t Loader::batches_left() const { return in_this_process(core_).batches_left(); }
const EpochOrder& Loader::order() const { return core_->order(); }
const LoaderOptions& Loader::options() const { return core_->options(); }
Device Loader::device() const { return core_->backend().device(); }
std::size_t Loader::ring_host_bytes() const { return core_->ring_host_bytes(); }
std::size_t Loader::ring_device_bytes() const { return core_->ring_device_bytes(); }
LoaderStats Loader::stats() const { return in_this_process(core_).stats(); }
void Loader::reset_stats() { in_this_process(core_).reset_stats(); }

}  // namespace imgpack
