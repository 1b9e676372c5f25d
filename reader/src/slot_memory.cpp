#include "slot_memory.hpp"

#include <cstdio>
#include <string>

#include "imgpack/error.hpp"

namespace imgpack::detail {

uint64_t SlotLayout::host_bytes_per_image() const {
  if (convert_on_host) return output_record_bytes + mask_bytes;
  return direct ? 0 : record_bytes + mask_bytes;
}

// Every slot: host staging (or host output when converting on the host),
// device copy and device output when uploading, the per-entry columns and
// the slot's two events.
void SlotLayout::add_targets(const DatasetIndex& index) {
  multilabel_classes = index.multilabel_names.size();
  targets = index.target_names.size();
  boxes = index.boxes;
  keypoints = index.num_keypoints();
}

Slot make_slot(UploadBackend& backend, const SlotLayout& layout, SlotBytes& bytes) {
  const std::size_t batch = layout.capacity;
  const std::size_t masks = batch * layout.mask_bytes;
  Slot slot;
  if (layout.convert_on_host) {
    slot.output = backend.allocate_host(batch * layout.output_record_bytes);
    slot.images = slot.output.data();
    bytes.host += slot.output.size();
    if (masks > 0) {
      slot.staging = backend.allocate_host(masks);
      slot.host_masks = static_cast<uint8_t*>(slot.staging.data());
      bytes.host += slot.staging.size();
    }
  } else if (layout.direct) {
    slot.sources.resize(batch);  // the copy engine reads the mapping: no staging
    slot.mask_sources.resize(masks > 0 ? batch : 0);
  } else {
    slot.staging = backend.allocate_host(batch * layout.record_bytes + masks);
    slot.images = slot.staging.data();
    slot.host_images = static_cast<uint8_t*>(slot.staging.data());
    if (masks > 0) {
      slot.host_masks = static_cast<uint8_t*>(slot.staging.data()) + batch * layout.record_bytes;
    }
    bytes.host += slot.staging.size();
  }
  slot.masks = slot.host_masks;
  if (layout.device_copy) {
    slot.device = backend.allocate_device(batch * layout.record_bytes + masks);
    slot.images = slot.device.data();
    if (masks > 0) {
      slot.masks = static_cast<const uint8_t*>(slot.device.data()) + batch * layout.record_bytes;
    }
    bytes.device += slot.device.size();
    if (layout.convert_on_device) {
      slot.output = backend.allocate_device(batch * layout.output_record_bytes);
      slot.images = slot.output.data();
      bytes.device += slot.output.size();
    }
  }
  slot.labels.resize(batch);
  slot.multilabel.resize(batch * layout.multilabel_classes);
  slot.targets.resize(batch * layout.targets);
  if (layout.boxes) slot.boxes = BatchBoxes(batch, layout.keypoints);
  slot.samples.resize(batch);
  slot.records.resize(batch);
  slot.upload_done = backend.create_event();
  slot.consumer_done = backend.create_event();
  return slot;
}

// Host memory is allocated lazily and only touched when filled: a ring larger
// than the memory there is would be killed by the kernel later instead of
// refused now.
void require_ring_fits(uint64_t slots, uint64_t slot_images, uint64_t per_image, uint64_t memory,
                       RingGrowth growth) {
  if (per_image == 0 || slots == 0 || slot_images <= memory / slots / per_image) return;
  const long double bytes = static_cast<long double>(slots) * slot_images * per_image;
  char size[32];
  std::snprintf(size, sizeof size, "%.3Lg", bytes);
  const std::string limit = std::string(size) + " bytes of host memory, more than the " +
                            std::to_string(memory) +
                            " this process may use (physical memory or its memory cgroup's limit)";
  if (growth == RingGrowth::initial) {
    throw UsageError("the loader's ring of " + std::to_string(slots) + " prefetch slots of " +
                     std::to_string(slot_images) + " images (" + std::to_string(per_image) +
                     " bytes each) needs " + limit + "; lower batch_size or prefetch");
  }
  throw Error(
      "Loader::next: every prefetch slot is held by a live Batch object, and adding one "
      "would make the ring " +
      std::to_string(slots) + " slots of " + std::to_string(slot_images) + " images (" +
      std::to_string(per_image) + " bytes each): " + limit +
      "; release a batch (keep copies of what you keep) or lower batch_size");
}

}  // namespace imgpack::detail
