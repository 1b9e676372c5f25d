// A record's boxes through the online crop and flip, and a batch's boxes as
// one block (internal to the reader).
//
// The window a batch delivers of a record (RecordWindow) moves its boxes the
// way it moves its pixels: shifted by the window's corner, clipped to the
// window, mirrored with it. A box keeps its place when at least
// DatasetIndex::box_min_visible of its stored area stays inside the window;
// a keypoint outside the window (edges included: [0, W] x [0, H]) becomes (0, 0, 0), and under one
// mirror (not two) each keypoint swaps with its flip partner. Coordinates are continuous pixels: a
// W-pixel window spans [0, W).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "imgpack/dataset.hpp"
#include "imgpack/loader.hpp"
#include "imgpack/record_shape.hpp"
#include "record_window.hpp"

namespace imgpack::detail {

// Rows of boxes (format.hpp's columns) in growable buffers, reused batch
// after batch.
struct BoxBuffer {
  std::vector<float> boxes;           // [B x 4]
  std::vector<int32_t> classes;       // [B]
  std::vector<uint8_t> crowd;         // [B]
  std::vector<float> keypoints;       // [B x K x 3]
  std::size_t keypoints_per_box = 0;  // K

  std::size_t size() const { return classes.size(); }
  void clear();
};

// How a loader keeps boxes: the dataset's rule and keypoint pairs.
struct BoxWindowRules {
  double min_visible = 0.3;
  std::span<const int32_t> keypoint_flip;  // [K]
};

// `rows` (a record of shape `stored`) as the window of shape `delivered`
// shows them, into `out` (replacing its contents). Pure; thread-safe.
void window_boxes(const Dataset::BoxRows& rows, RecordShape stored, RecordShape delivered,
                  const RecordWindow& window, const BoxWindowRules& rules, BoxBuffer& out);

// Concatenates the first `count` of `entries` (one per image of a batch, in
// order) into `block`, with offsets[i]..offsets[i + 1] the rows of entry i
// (offsets gets count + 1 values).
void gather_boxes(std::span<const BoxBuffer> entries, std::size_t count, BoxBuffer& block,
                  std::vector<int64_t>& offsets);

// What a Batch shows of `block` and its `offsets`.
BoxBlock box_block(const BoxBuffer& block, const std::vector<int64_t>& offsets);

}  // namespace imgpack::detail
