#include "masks/mask_geometry.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace imgpack {

namespace {

// Whether EXIF orientation `o` reverses the upright x and y axes relative to
// the stored ones (apply_orientation() in decode.cpp).
bool reverses_x(int o) { return o == 2 || o == 3 || o == 6 || o == 7; }
bool reverses_y(int o) { return o == 3 || o == 4 || o == 7 || o == 8; }

// Where an image position `p` (OpenCV's convention: pixel centres at
// integers) reads along an axis of `n` pixels under `border`, as warpAffine
// reads it; NaN for the fill.
double border_position(double p, int n, int border) {
  const double last = n - 1;
  if (p >= 0 && p <= last) return p;
  switch (border) {
    case cv::BORDER_REPLICATE:
      return p < 0 ? 0 : last;
    case cv::BORDER_REFLECT_101: {
      if (n == 1) return 0;
      const double period = 2 * last;
      double q = std::fmod(p, period);
      if (q < 0) q += period;
      return q <= last ? q : period - q;
    }
    default:
      // Bilinear sampling reaches half a pixel past the edge centres.
      return p >= -0.5 && p <= last + 0.5 ? std::clamp(p, 0.0, last)
                                          : std::numeric_limits<double>::quiet_NaN();
  }
}

// Positions within this of a pixel boundary count as on it. Ratios of whole
// sizes put output pixel centres exactly on mask pixel boundaries (2x + 1
// for a halving), which the inverted map may miss by an ulp either way;
// positions that are not on one lie far farther from it than this.
constexpr double kBoundarySlack = 1e-7;

// The mask pixel (index along an axis of `n`) under image position `p`, or
// -1 for the fill: the image pixel's continuous position p + 1/2, carried
// into the frame (u' = scale u + offset, inverted), floored, a position on
// a boundary belonging to the pixel that starts there.
int mask_index(double p, double scale, double offset, int n) {
  if (std::isnan(p)) return -1;
  const double u = (p + 0.5 - offset) / scale;
  return static_cast<int>(
      std::clamp(std::floor(u + kBoundarySlack), 0.0, static_cast<double>(n - 1)));
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

cv::Matx23d resize_map(cv::Size source, const ResizeSpec& spec) {
  const ResizeWindow window = resize_window(source, spec);
  // Continuous u of the source window lands at target.x + (u - source.x) * r.
  const double rx = static_cast<double>(window.target.width) / window.source.width;
  const double ry = static_cast<double>(window.target.height) / window.source.height;
  return cv::Matx23d(rx, 0, window.target.x + (0.5 - window.source.x) * rx - 0.5,  //
                     0, ry, window.target.y + (0.5 - window.source.y) * ry - 0.5);
}

void warp_mask(const cv::Mat& mask, const cv::Matx23d& image_map, cv::Size image_size,
               const SourceFrame& frame, cv::Rect target, int border, uint8_t fill, cv::Mat& out) {
  CV_Assert(mask.type() == CV_8UC1 && out.type() == CV_8UC1);
  if (target != cv::Rect(0, 0, out.cols, out.rows)) out.setTo(fill);
  cv::Matx23d inverse;
  if (image_map(0, 1) == 0 && image_map(1, 0) == 0) {
    // Axis by axis, so that exact ratios stay exact.
    inverse = cv::Matx23d(1 / image_map(0, 0), 0, -image_map(0, 2) / image_map(0, 0),  //
                          0, 1 / image_map(1, 1), -image_map(1, 2) / image_map(1, 1));
  } else {
    cv::invertAffineTransform(image_map, inverse);
  }
  auto column = [&](double p) {
    return mask_index(border_position(p, image_size.width, border), frame.scale_x, frame.offset_x,
                      mask.cols);
  };
  auto row_of = [&](double p) {
    return mask_index(border_position(p, image_size.height, border), frame.scale_y, frame.offset_y,
                      mask.rows);
  };
  if (inverse(0, 1) == 0 && inverse(1, 0) == 0) {
    // Flips, scales and shifts: one column table, one mask row per row.
    std::vector<int> columns(static_cast<std::size_t>(target.width));
    for (int x = 0; x < target.width; ++x) {
      columns[static_cast<std::size_t>(x)] = column(inverse(0, 0) * (target.x + x) + inverse(0, 2));
    }
    for (int y = target.y; y < target.y + target.height; ++y) {
      uint8_t* row = out.ptr<uint8_t>(y) + target.x;
      const int from = row_of(inverse(1, 1) * y + inverse(1, 2));
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
  // Rotations and shears. Positions inside the image (most of them) take
  // the fast way: the mask index straight from the image position, by one
  // multiply-add and a truncation, clamped to the mask (the same as
  // mask_index(): truncation and flooring differ only below 0). An index may
  // fall below 0 where the image starts before the frame: the partial first
  // pixel of a DCT-scaled decode whose axis the EXIF orientation reversed
  // spans up to 8 frame pixels. The others go through the border rule.
  const double last_x = image_size.width - 1, last_y = image_size.height - 1;
  const double ax = 1 / frame.scale_x, ay = 1 / frame.scale_y;
  const double bx = (0.5 - frame.offset_x) / frame.scale_x + kBoundarySlack;
  const double by = (0.5 - frame.offset_y) / frame.scale_y + kBoundarySlack;
  const int max_x = mask.cols - 1, max_y = mask.rows - 1;
  for (int y = target.y; y < target.y + target.height; ++y) {
    uint8_t* row = out.ptr<uint8_t>(y);
    const double row_x = inverse(0, 1) * y + inverse(0, 2);
    const double row_y = inverse(1, 1) * y + inverse(1, 2);
    for (int x = target.x; x < target.x + target.width; ++x) {
      const double px = inverse(0, 0) * x + row_x;
      const double py = inverse(1, 0) * x + row_y;
      if (px >= 0 && px <= last_x && py >= 0 && py <= last_y) {
        const int sx = std::clamp(static_cast<int>(px * ax + bx), 0, max_x);
        const int sy = std::clamp(static_cast<int>(py * ay + by), 0, max_y);
        row[x] = mask.ptr<uint8_t>(sy)[sx];
        continue;
      }
      const int sx = column(px);
      const int sy = row_of(py);
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
  warp_mask(mask, resize_map(source, spec), source, frame, window.target, cv::BORDER_REPLICATE,
            fill, out);
}

}  // namespace imgpack
