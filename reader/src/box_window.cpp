#include "box_window.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <string>

#include "imgpack/error.hpp"

namespace imgpack::detail {

std::size_t window_boxes(const Dataset::BoxRows& rows, RecordShape stored, RecordShape delivered,
                         const RecordWindow& window, const BoxWindowRules& rules,
                         const BoxRowsTarget& out) {
  const bool whole = window == RecordWindow{} && stored.height == delivered.height &&
                     stored.width == delivered.width;
  const std::size_t k = rules.keypoint_flip.size();
  if (whole) {
    std::copy(rows.boxes.begin(), rows.boxes.end(), out.boxes);
    std::copy(rows.classes.begin(), rows.classes.end(), out.classes);
    std::copy(rows.crowd.begin(), rows.crowd.end(), out.crowd);
    std::copy(rows.keypoints.begin(), rows.keypoints.end(), out.keypoints);
    return rows.size();
  }
  const auto w = static_cast<float>(delivered.width);
  const auto h = static_cast<float>(delivered.height);
  const auto left = static_cast<float>(window.left);
  const auto top = static_cast<float>(window.top);
  // Window position -> delivered position along an axis, mirrored or not.
  auto x_of = [&](float x) { return window.hflip ? w - (x - left) : x - left; };
  auto y_of = [&](float y) { return window.vflip ? h - (y - top) : y - top; };
  const bool mirrors = window.hflip != window.vflip;
  std::array<float, 3> moved{};
  std::size_t kept = 0;
  for (std::size_t b = 0; b < rows.size(); ++b) {
    const float* box = rows.boxes.data() + b * 4;
    const float area = (box[2] - box[0]) * (box[3] - box[1]);
    const float x0 = std::clamp(box[0] - left, 0.0F, w), x1 = std::clamp(box[2] - left, 0.0F, w);
    const float y0 = std::clamp(box[1] - top, 0.0F, h), y1 = std::clamp(box[3] - top, 0.0F, h);
    const float inside = (x1 - x0) * (y1 - y0);
    const bool in_window =
        box[0] - left >= 0 && box[2] - left <= w && box[1] - top >= 0 && box[3] - top <= h;
    const bool keep = area > 0 ? inside > 0 && inside >= rules.min_visible * area : in_window;
    if (!keep) continue;
    const float a0 = window.hflip ? w - x1 : x0, a1 = window.hflip ? w - x0 : x1;
    const float b0 = window.vflip ? h - y1 : y0, b1 = window.vflip ? h - y0 : y1;
    float* placed = out.boxes + kept * 4;
    placed[0] = a0;
    placed[1] = b0;
    placed[2] = a1;
    placed[3] = b1;
    out.classes[kept] = rows.classes[b];
    out.crowd[kept] = rows.crowd[b];
    if (k > 0) {
      float* points = out.keypoints + kept * k * 3;
      // A flip table that is not a permutation leaves some keypoints unset: (0, 0, 0).
      std::fill(points, points + k * 3, 0.0F);
      for (std::size_t j = 0; j < k; ++j) {
        const float* p = rows.keypoints.data() + (b * k + j) * 3;
        moved = {0, 0, 0};
        const float x = x_of(p[0]);
        const float y = y_of(p[1]);
        // Inside the window's frame [0, w] x [0, h], edges included.
        const float u = p[0] - left, v = p[1] - top;
        if (p[2] > 0 && u >= 0 && u <= w && v >= 0 && v <= h) moved = {x, y, p[2]};
        const std::size_t slot = mirrors ? static_cast<std::size_t>(rules.keypoint_flip[j]) : j;
        std::copy(moved.begin(), moved.end(), points + slot * 3);
      }
    }
    ++kept;
  }
  return kept;
}

namespace {

enum class Access { read, write };

template <class T>
void prefetch_lines(std::span<const T> values, Access access = Access::read) {
  constexpr std::size_t kLine = 64;
  const auto* bytes = reinterpret_cast<const char*>(values.data());
  const std::size_t size = values.size_bytes();
  if (size == 0) return;
  // Every line the span touches: from its first byte's line to its last byte's.
  const auto first = reinterpret_cast<std::uintptr_t>(bytes) / kLine;
  const auto last = (reinterpret_cast<std::uintptr_t>(bytes) + size - 1) / kLine;
  for (std::uintptr_t line = first; line <= last; ++line) {
    if (access == Access::write) {
      __builtin_prefetch(bytes + (line - first) * kLine, 1);
    } else {
      __builtin_prefetch(bytes + (line - first) * kLine, 0);
    }
  }
}

}  // namespace

void prefetch_boxes(const Dataset::BoxRows& rows) {
  prefetch_lines(rows.boxes);
  prefetch_lines(rows.classes);
  prefetch_lines(rows.crowd);
  prefetch_lines(rows.keypoints);
}

BoxCounts::BoxCounts(const Dataset& dataset) : counts_(dataset.num_records()) {
  for (uint64_t r = 0; r < counts_.size(); ++r) {
    const std::size_t count = dataset.record_boxes(r).size();
    if (count > std::numeric_limits<uint32_t>::max()) {
      throw Error("record " + std::to_string(r) + " has " + std::to_string(count) +
                  " boxes, more than the reader takes per image (2^32 - 1)");
    }
    counts_[r] = static_cast<uint32_t>(count);
  }
}

BatchBoxes::BatchBoxes(std::size_t entries, std::size_t keypoints_per_box)
    : keypoints_per_box_(keypoints_per_box), offsets_(entries + 1, 0), kept_(entries, 0) {
  reserve(1);
}

void BatchBoxes::reserve(std::size_t rows) {
  if (rows <= capacity_ && boxes_) return;
  // Grown by half at least, so that a few batches settle the size.
  const std::size_t capacity = std::max(rows, capacity_ + capacity_ / 2);
  // Every row is written (laid out, then placed) before it is read: no zeroing.
  boxes_ = std::make_unique_for_overwrite<float[]>(capacity * 4);
  classes_ = std::make_unique_for_overwrite<int32_t[]>(capacity);
  crowd_ = std::make_unique_for_overwrite<uint8_t[]>(capacity);
  keypoints_ = std::make_unique_for_overwrite<float[]>(
      std::max<std::size_t>(capacity * keypoints_per_box_ * 3, 1));
  capacity_ = capacity;
}

void BatchBoxes::lay_out(const BoxCounts& counts, std::span<const uint64_t> records) {
  int64_t rows = 0;
  offsets_[0] = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    rows += static_cast<int64_t>(counts[records[i]]);
    offsets_[i + 1] = rows;
  }
  reserve(static_cast<std::size_t>(rows));
}

void BatchBoxes::prefetch_for_writing(std::size_t begin, std::size_t end) {
  const auto first = static_cast<std::size_t>(offsets_[begin]);
  const auto rows = static_cast<std::size_t>(offsets_[end]) - first;
  const std::size_t k3 = keypoints_per_box_ * 3;
  prefetch_lines(std::span<const float>(boxes_.get() + first * 4, rows * 4), Access::write);
  prefetch_lines(std::span<const int32_t>(classes_.get() + first, rows), Access::write);
  prefetch_lines(std::span<const uint8_t>(crowd_.get() + first, rows), Access::write);
  prefetch_lines(std::span<const float>(keypoints_.get() + first * k3, rows * k3), Access::write);
}

BoxRowsTarget BatchBoxes::target(std::size_t first_row) {
  return {boxes_.get() + first_row * 4, classes_.get() + first_row, crowd_.get() + first_row,
          keypoints_.get() + first_row * keypoints_per_box_ * 3};
}

void BatchBoxes::place(std::size_t i, const Dataset::BoxRows& rows, RecordShape stored,
                       RecordShape delivered, const RecordWindow& window,
                       const BoxWindowRules& rules) {
  kept_[i] = window_boxes(rows, stored, delivered, window, rules,
                          target(static_cast<std::size_t>(offsets_[i])));
}

void BatchBoxes::close_gaps(std::size_t entries) {
  const std::size_t k3 = keypoints_per_box_ * 3;
  std::size_t to = 0;
  for (std::size_t i = 0; i < entries; ++i) {
    const auto from = static_cast<std::size_t>(offsets_[i]);
    const std::size_t rows = kept_[i];
    if (from != to) {
      // Rows only move towards the front (to < from): a forward copy is safe.
      std::copy(boxes_.get() + from * 4, boxes_.get() + (from + rows) * 4, boxes_.get() + to * 4);
      std::copy(classes_.get() + from, classes_.get() + from + rows, classes_.get() + to);
      std::copy(crowd_.get() + from, crowd_.get() + from + rows, crowd_.get() + to);
      std::copy(keypoints_.get() + from * k3, keypoints_.get() + (from + rows) * k3,
                keypoints_.get() + to * k3);
      offsets_[i] = static_cast<int64_t>(to);
    }
    to += rows;
  }
  offsets_[entries] = static_cast<int64_t>(to);
}

BoxBlock BatchBoxes::block(std::size_t entries) const {
  return {boxes_.get(),      classes_.get(),  crowd_.get(),
          keypoints_.get(),  offsets_.data(), static_cast<std::size_t>(offsets_[entries]),
          keypoints_per_box_};
}

}  // namespace imgpack::detail
