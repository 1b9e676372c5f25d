#include "targets/box_geometry.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "imgpack/checksum.hpp"

namespace imgpack {

cv::Matx23d source_to_output(const cv::Matx23d& pixel_map, const SourceFrame& frame) {
  // Continuous positions are pixel-centre positions + 1/2 on both sides:
  // out = L (image - 1/2) + t + 1/2, and image = scale * source + offset.
  const double l00 = pixel_map(0, 0), l01 = pixel_map(0, 1);
  const double l10 = pixel_map(1, 0), l11 = pixel_map(1, 1);
  const double tx = pixel_map(0, 2) + 0.5 - 0.5 * (l00 + l01);
  const double ty = pixel_map(1, 2) + 0.5 - 0.5 * (l10 + l11);
  return {
      l00 * frame.scale_x, l01 * frame.scale_y, l00 * frame.offset_x + l01 * frame.offset_y + tx,
      l10 * frame.scale_x, l11 * frame.scale_y, l10 * frame.offset_x + l11 * frame.offset_y + ty};
}

uint64_t annotation_hash(const SourceSample& sample) {
  std::string key;
  auto add = [&key](const void* data, std::size_t size) {
    key.append(static_cast<const char*>(data), size);
  };
  for (const SourceBox& box : sample.boxes) {
    add(&box.x0, sizeof box.x0);
    add(&box.y0, sizeof box.y0);
    add(&box.x1, sizeof box.x1);
    add(&box.y1, sizeof box.y1);
    add(&box.cls, sizeof box.cls);
    add(&box.crowd, sizeof box.crowd);
    // Only where it says something: a box within the image hashes as before.
    if (box.inside != 1) add(&box.inside, sizeof box.inside);
  }
  add(sample.keypoints.data(), sample.keypoints.size() * sizeof(float));
  add(&sample.box_width, sizeof sample.box_width);
  add(&sample.box_height, sizeof sample.box_height);
  key += sample.box_problem;
  return checksum(key.data(), key.size());
}

namespace {

cv::Point2d apply(const cv::Matx23d& m, double x, double y) {
  return {m(0, 0) * x + m(0, 1) * y + m(0, 2), m(1, 0) * x + m(1, 1) * y + m(1, 2)};
}

}  // namespace

void place_boxes(const SourceSample& sample, cv::Size full, const cv::Matx23d& map, cv::Size output,
                 const BoxRules& rules, RecordBoxes& out) {
  out.clear();
  const double w = full.width;
  const double h = full.height;
  const double out_w = output.width;
  const double out_h = output.height;
  const std::size_t k = rules.keypoints();
  const bool mirrors = map(0, 0) * map(1, 1) - map(0, 1) * map(1, 0) < 0;
  std::array<float, 3> moved{};
  for (std::size_t b = 0; b < sample.boxes.size(); ++b) {
    const SourceBox& box = sample.boxes[b];
    const double x0 = box.x0 * w, y0 = box.y0 * h, x1 = box.x1 * w, y1 = box.y1 * h;
    const std::array<cv::Point2d, 4> corners = {apply(map, x0, y0), apply(map, x1, y0),
                                                apply(map, x0, y1), apply(map, x1, y1)};
    double a0 = corners[0].x, a1 = corners[0].x, b0 = corners[0].y, b1 = corners[0].y;
    for (const cv::Point2d& c : corners) {
      a0 = std::min(a0, c.x);
      a1 = std::max(a1, c.x);
      b0 = std::min(b0, c.y);
      b1 = std::max(b1, c.y);
    }
    const double c0 = std::clamp(a0, 0.0, out_w), c1 = std::clamp(a1, 0.0, out_w);
    const double d0 = std::clamp(b0, 0.0, out_h), d1 = std::clamp(b1, 0.0, out_h);
    const double area = (a1 - a0) * (b1 - b0);
    const double inside = (c1 - c0) * (d1 - d0);
    // A box of no area (a point or a line) stays while it lies inside the
    // frame. The part of the box as annotated that lay past the image's
    // edges (1 - box.inside of it) counts as outside too.
    const bool kept = area > 0 ? inside > 0 && inside * box.inside >= rules.min_visible * area
                               : a0 >= 0 && a1 <= out_w && b0 >= 0 && b1 <= out_h;
    if (!kept) continue;
    out.boxes.insert(out.boxes.end(), {static_cast<float>(c0), static_cast<float>(d0),
                                       static_cast<float>(c1), static_cast<float>(d1)});
    out.classes.push_back(box.cls);
    out.crowd.push_back(box.crowd);
    if (k == 0) continue;
    const std::size_t first = out.keypoints.size();
    out.keypoints.resize(first + k * 3);
    const float* points = sample.keypoints.data() + b * k * 3;
    for (std::size_t j = 0; j < k; ++j) {
      const float* p = points + j * 3;
      moved = {0, 0, 0};
      if (p[2] > 0) {
        const cv::Point2d q = apply(map, p[0] * w, p[1] * h);
        if (q.x >= 0 && q.x <= out_w && q.y >= 0 && q.y <= out_h) {
          moved = {static_cast<float>(q.x), static_cast<float>(q.y), p[2]};
        }
      }
      // Under a mirror, the point that now shows where keypoint j's side is
      // is its partner's: slot j takes what partner(j) became.
      const std::size_t slot = mirrors ? static_cast<std::size_t>(rules.keypoint_flip[j]) : j;
      std::copy(moved.begin(), moved.end(),
                out.keypoints.begin() + static_cast<std::ptrdiff_t>(first + slot * 3));
    }
  }
}

}  // namespace imgpack
