// What a slot of the loader's ring is made of (internal to the reader).
//
// LoaderCore decides when the ring has how many slots; this says what one
// slot holds for the loader's delivery, fixed when the loader is made: host
// staging, host output (float made on the host), a device copy and device
// output, or for direct upload only the pointers the copy engine gathers;
// and whether a ring of some size fits the memory the process may use.
#pragma once

#include <cstddef>
#include <cstdint>

#include "imgpack/upload_backend.hpp"
#include "slot_fill.hpp"

namespace imgpack::detail {

struct SlotLayout {
  std::size_t capacity = 1;             // images a slot holds
  std::size_t record_bytes = 0;         // uint8 bytes of one delivered image
  std::size_t output_record_bytes = 0;  // bytes of one image in the output format
  std::size_t mask_bytes = 0;           // bytes of one delivered mask; 0 without masks
  bool convert_on_host = false;         // float output made by the reader threads
  bool direct = false;                  // the device copies from the mappings
  bool convert_on_device = false;       // float output made by the device
  bool device_copy = false;             // the device has memory of its own
  std::size_t multilabel_classes = 0;   // per image, in the host column `multilabel`
  std::size_t targets = 0;              // per image, in the host column `targets`
  bool boxes = false;                   // per image, rows in the block `boxes`
  std::size_t keypoints = 0;            // per box, with boxes

  // Sets the targets beyond one label that every image of `index` has.
  void add_targets(const DatasetIndex& index);

  // Host bytes a slot needs per image (0 for direct upload).
  uint64_t host_bytes_per_image() const;
};

// Host and device bytes allocated for one slot.
struct SlotBytes {
  std::size_t host = 0;
  std::size_t device = 0;
};

// A slot for `layout` from `backend`: its memory, the per-entry columns and
// its two events. Throws what the backend's allocations throw.
Slot make_slot(UploadBackend& backend, const SlotLayout& layout, SlotBytes& bytes);

// Whether a ring is being made (a UsageError refuses the options) or grown
// by a slot while the consumer keeps every slot held (an Error from next()).
enum class RingGrowth { initial, added };

// Throws, naming the size, when `slots` slots of `slot_images` images of
// `per_image` host bytes each are more than `memory`, what the process may
// use (memory_for_page_cache()).
void require_ring_fits(uint64_t slots, uint64_t slot_images, uint64_t per_image, uint64_t memory,
                       RingGrowth growth);

}  // namespace imgpack::detail
