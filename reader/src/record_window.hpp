// Online crop and flip: which window of a record a batch holds, and copying
// it (internal to the reader).
#pragma once

#include <cstdint>

#include "imgpack/loader.hpp"
#include "imgpack/record_shape.hpp"

namespace imgpack::detail {

// The part of a stored record that is delivered: the window's top-left
// corner in the record, and whether it is mirrored.
struct RecordWindow {
  uint32_t top = 0;
  uint32_t left = 0;
  bool hflip = false;  // left-right
  bool vflip = false;  // top-bottom
  friend bool operator==(const RecordWindow&, const RecordWindow&) = default;
};

// The window of the record of `sample`'s `variant` in `epoch`: a pure
// function of (seed, epoch, sample, variant) and the options, so the same for
// any thread count, rank layout or resume point. `stored` is the record's
// shape, `delivered` the window's (CropOptions::height x width, or `stored`
// without a crop). A random crop draws its corner uniformly among every
// position where the window fits; a centered one takes the middle (rounding
// up and left); each flip is drawn with its probability. The draws come from
// one stream in a fixed order, so changing one probability never moves the
// windows.
// Whether `options` cut random windows (else the center): CropMode::random,
// or automatic with role train or all.
bool random_windows(const LoaderOptions& options);

// Throws UsageError for a crop that does not fit `stored` or a flip
// probability outside [0, 1].
void check_crop(const CropOptions& crop, RecordShape stored);

// The shape records are delivered in: the crop's, or the record's.
RecordShape delivered_shape(const CropOptions& crop, RecordShape stored);

RecordWindow draw_window(const CropOptions& options, bool random_crop, RecordShape stored,
                         RecordShape delivered, uint64_t seed, uint64_t epoch, int64_t sample,
                         uint16_t variant);

// How copy_window() writes: `cached`, for a destination read again soon
// (a per-thread buffer converted next); `streaming`, non-temporal stores for
// a ring slot (see copy_streaming()), which saves reading every destination
// line before writing it: with a window's short rows, plain row memcpys
// delivered 0.7x of a whole-record memcpy's bandwidth, and the stores were
// most of the difference.
enum class Stores { cached, streaming };

// Copies `window` of `src` (a record of shape `stored`, HWC) to `dst` (HWC,
// of shape `delivered`): rows of the window, in reverse order for vflip, and
// the pixels of each row in reverse for hflip. `dst` must not overlap `src`.
// Streaming stores are fenced before it returns.
void copy_window(const uint8_t* src, RecordShape stored, uint8_t* dst, RecordShape delivered,
                 const RecordWindow& window, Stores stores = Stores::cached);

}  // namespace imgpack::detail
