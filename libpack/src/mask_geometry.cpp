#include "mask_geometry.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace imgpack {

namespace {

// Whether EXIF orientation `o` reverses the upright x and y axes relative to
// the stored ones (apply_orientation() in decode.cpp).
bool reverses_x(int o) { return o == 2 || o == 3 || o == 6 || o == 7; }
bool reverses_y(int o) { return o == 3 || o == 4 || o == 7 || o == 8; }

// The mask index a sample position `p` (nearest pixel, already rounded)
// reads along an axis of `n` pixels, or -1 for the fill.
int border_index(int64_t p, int n, int border) {
  if (p >= 0 && p < n) return static_cast<int>(p);
  switch (border) {
    case cv::BORDER_REPLICATE:
      return p < 0 ? 0 : n - 1;
    case cv::BORDER_REFLECT_101: {
      if (n == 1) return 0;
      const int64_t period = 2 * static_cast<int64_t>(n) - 2;
      int64_t q = p % period;
      if (q < 0) q += period;
      return static_cast<int>(q < n ? q : period - q);
    }
    default:
      return -1;
  }
}

// The nearest pixel to position `v` (OpenCV's convention): ties go up, as in
// OpenCV's own nearest-neighbour warps. Far-off positions are clamped so the
// conversion stays defined; they lie outside any mask either way.
int64_t nearest(double v) {
  return static_cast<int64_t>(std::floor(std::clamp(v, -4e9, 4e9) + 0.5));
}

}  // namespace

SourceFrame SourceFrame::resized(cv::Size from, cv::Size to) const {
  const double rx = static_cast<double>(to.width) / from.width;
  const double ry = static_cast<double>(to.height) / from.height;
  return {scale_x * rx, scale_y * ry, offset_x * rx, offset_y * ry};
}

SourceFrame decoded_frame(const DecodedImage& image, cv::Size full) {
  SourceFrame frame;
  if (image.scale_num == image.scale_denom) return frame;
  const double k = static_cast<double>(image.scale_num) / image.scale_denom;
  frame.scale_x = frame.scale_y = k;
  const int o = image.orientation_applied;
  if (reverses_x(o)) frame.offset_x = image.pixels.cols - k * full.width;
  if (reverses_y(o)) frame.offset_y = image.pixels.rows - k * full.height;
  return frame;
}

cv::Matx23d mask_map(const cv::Matx23d& m, const SourceFrame& frame) {
  // Mask pixel x: continuous x + 0.5 in the frame, so image position
  // k (x + 0.5) + offset, image pixel k x + (k / 2 + offset - 1/2).
  const double kx = frame.scale_x, ky = frame.scale_y;
  const double cx = kx / 2 + frame.offset_x - 0.5;
  const double cy = ky / 2 + frame.offset_y - 0.5;
  return cv::Matx23d(m(0, 0) * kx, m(0, 1) * ky, m(0, 0) * cx + m(0, 1) * cy + m(0, 2),
                     m(1, 0) * kx, m(1, 1) * ky, m(1, 0) * cx + m(1, 1) * cy + m(1, 2));
}

cv::Matx23d resize_map(cv::Size source, const ResizeSpec& spec) {
  const ResizeWindow window = resize_window(source, spec);
  // Continuous u of the source window lands at target.x + (u - source.x) * r.
  const double rx = static_cast<double>(window.target.width) / window.source.width;
  const double ry = static_cast<double>(window.target.height) / window.source.height;
  return cv::Matx23d(rx, 0, window.target.x + (0.5 - window.source.x) * rx - 0.5,  //
                     0, ry, window.target.y + (0.5 - window.source.y) * ry - 0.5);
}

void warp_mask(const cv::Mat& mask, const cv::Matx23d& map, cv::Rect target, int border,
               uint8_t fill, cv::Mat& out) {
  CV_Assert(mask.type() == CV_8UC1 && out.type() == CV_8UC1);
  if (target != cv::Rect(0, 0, out.cols, out.rows)) out.setTo(fill);
  cv::Matx23d inverse;
  cv::invertAffineTransform(map, inverse);
  const int w = mask.cols, h = mask.rows;
  const bool axis_aligned = inverse(0, 1) == 0 && inverse(1, 0) == 0;
  if (axis_aligned) {
    // Flips, scales and shifts: one column table, one source row per row.
    std::vector<int> columns(static_cast<std::size_t>(target.width));
    for (int x = 0; x < target.width; ++x) {
      columns[static_cast<std::size_t>(x)] =
          border_index(nearest(inverse(0, 0) * (target.x + x) + inverse(0, 2)), w, border);
    }
    for (int y = target.y; y < target.y + target.height; ++y) {
      uint8_t* row = out.ptr<uint8_t>(y) + target.x;
      const int from = border_index(nearest(inverse(1, 1) * y + inverse(1, 2)), h, border);
      if (from < 0) {
        std::fill(row, row + target.width, fill);
        continue;
      }
      const uint8_t* src = mask.ptr<uint8_t>(from);
      for (int x = 0; x < target.width; ++x) {
        const int c = columns[static_cast<std::size_t>(x)];
        row[x] = c < 0 ? fill : src[c];
      }
    }
    return;
  }
  for (int y = target.y; y < target.y + target.height; ++y) {
    uint8_t* row = out.ptr<uint8_t>(y);
    const double row_x = inverse(0, 1) * y + inverse(0, 2);
    const double row_y = inverse(1, 1) * y + inverse(1, 2);
    for (int x = target.x; x < target.x + target.width; ++x) {
      const int sx = border_index(nearest(inverse(0, 0) * x + row_x), w, border);
      const int sy = border_index(nearest(inverse(1, 0) * x + row_y), h, border);
      row[x] = sx < 0 || sy < 0 ? fill : mask.ptr<uint8_t>(sy)[sx];
    }
  }
}

void resize_mask_into(const cv::Mat& mask, cv::Size source, const SourceFrame& frame,
                      const ResizeSpec& spec, uint8_t fill, uint8_t* dst) {
  cv::Mat out(static_cast<int>(spec.height), static_cast<int>(spec.width), CV_8UC1, dst);
  const ResizeWindow window = resize_window(source, spec);
  // Inside the target every position is inside the image up to the last
  // partial pixel of a DCT-scaled decode: the edge holds there.
  warp_mask(mask, mask_map(resize_map(source, spec), frame), window.target, cv::BORDER_REPLICATE,
            fill, out);
}

}  // namespace imgpack
