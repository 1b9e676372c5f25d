#include "box_window.hpp"

#include <algorithm>
#include <array>

namespace imgpack::detail {

void BoxBuffer::clear() {
  boxes.clear();
  classes.clear();
  crowd.clear();
  keypoints.clear();
}

void window_boxes(const Dataset::BoxRows& rows, RecordShape stored, RecordShape delivered,
                  const RecordWindow& window, const BoxWindowRules& rules, BoxBuffer& out) {
  out.clear();
  const bool whole = window == RecordWindow{} && stored.height == delivered.height &&
                     stored.width == delivered.width;
  const std::size_t k = rules.keypoint_flip.size();
  if (whole) {
    out.boxes.assign(rows.boxes.begin(), rows.boxes.end());
    out.classes.assign(rows.classes.begin(), rows.classes.end());
    out.crowd.assign(rows.crowd.begin(), rows.crowd.end());
    out.keypoints.assign(rows.keypoints.begin(), rows.keypoints.end());
    return;
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
  for (std::size_t b = 0; b < rows.size(); ++b) {
    const float* box = rows.boxes.data() + b * 4;
    const float area = (box[2] - box[0]) * (box[3] - box[1]);
    const float x0 = std::clamp(box[0] - left, 0.0F, w), x1 = std::clamp(box[2] - left, 0.0F, w);
    const float y0 = std::clamp(box[1] - top, 0.0F, h), y1 = std::clamp(box[3] - top, 0.0F, h);
    const float inside = (x1 - x0) * (y1 - y0);
    const bool in_window =
        box[0] - left >= 0 && box[2] - left <= w && box[1] - top >= 0 && box[3] - top <= h;
    const bool kept = area > 0 ? inside > 0 && inside >= rules.min_visible * area : in_window;
    if (!kept) continue;
    const float a0 = window.hflip ? w - x1 : x0, a1 = window.hflip ? w - x0 : x1;
    const float b0 = window.vflip ? h - y1 : y0, b1 = window.vflip ? h - y0 : y1;
    out.boxes.insert(out.boxes.end(), {a0, b0, a1, b1});
    out.classes.push_back(rows.classes[b]);
    out.crowd.push_back(rows.crowd[b]);
    if (k == 0) continue;
    const std::size_t first = out.keypoints.size();
    out.keypoints.resize(first + k * 3);
    for (std::size_t j = 0; j < k; ++j) {
      const float* p = rows.keypoints.data() + (b * k + j) * 3;
      moved = {0, 0, 0};
      const float x = x_of(p[0]);
      const float y = y_of(p[1]);
      // Inside the window's frame [0, w] x [0, h], edges included.
      const float u = p[0] - left, v = p[1] - top;
      if (p[2] > 0 && u >= 0 && u <= w && v >= 0 && v <= h) moved = {x, y, p[2]};
      const std::size_t slot = mirrors ? static_cast<std::size_t>(rules.keypoint_flip[j]) : j;
      std::copy(moved.begin(), moved.end(),
                out.keypoints.begin() + static_cast<std::ptrdiff_t>(first + slot * 3));
    }
  }
}

void gather_boxes(std::span<const BoxBuffer> entries, std::size_t count, BoxBuffer& block,
                  std::vector<int64_t>& offsets) {
  block.clear();
  offsets.assign(1, 0);
  for (const BoxBuffer& entry : entries.first(count)) {
    block.boxes.insert(block.boxes.end(), entry.boxes.begin(), entry.boxes.end());
    block.classes.insert(block.classes.end(), entry.classes.begin(), entry.classes.end());
    block.crowd.insert(block.crowd.end(), entry.crowd.begin(), entry.crowd.end());
    block.keypoints.insert(block.keypoints.end(), entry.keypoints.begin(), entry.keypoints.end());
    offsets.push_back(static_cast<int64_t>(block.size()));
  }
}

BoxBlock box_block(const BoxBuffer& block, const std::vector<int64_t>& offsets) {
  return {block.boxes.data(), block.classes.data(), block.crowd.data(),     block.keypoints.data(),
          offsets.data(),     block.size(),         block.keypoints_per_box};
}

}  // namespace imgpack::detail
