#include "resize.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>

namespace imgpack {

int interpolation_for(cv::Size from, cv::Size to) {
  bool shrinking = to.width <= from.width && to.height <= from.height;
  return shrinking ? cv::INTER_AREA : cv::INTER_LINEAR;
}

cv::Scalar fill_scalar(const std::array<uint8_t, 3>& fill, int channels) {
  if (channels == 1) {
    double luma = 0.299 * fill[0] + 0.587 * fill[1] + 0.114 * fill[2];
    return cv::Scalar(std::round(luma));
  }
  return cv::Scalar(fill[0], fill[1], fill[2]);
}

cv::Size ResizeSpec::required_source_size(uint32_t w, uint32_t h) const {
  double sx = static_cast<double>(width) / w;
  double sy = static_cast<double>(height) / h;
  double s = 1;
  switch (mode) {
    case ResizeMode::stretch:
      return {static_cast<int>(width), static_cast<int>(height)};
    case ResizeMode::crop:
      s = std::max(sx, sy);
      break;
    case ResizeMode::pad:
      s = std::min(sx, sy);
      break;
  }
  return {static_cast<int>(std::ceil(w * s - 1e-9)), static_cast<int>(std::ceil(h * s - 1e-9))};
}

void resize_into(const cv::Mat& src, const ResizeSpec& spec, uint8_t* dst) {
  const int w = static_cast<int>(spec.width);
  const int h = static_cast<int>(spec.height);
  cv::Mat out(h, w, CV_8UC(src.channels()), dst);
  const double sx = static_cast<double>(w) / src.cols;
  const double sy = static_cast<double>(h) / src.rows;
  switch (spec.mode) {
    case ResizeMode::stretch: {
      cv::resize(src, out, out.size(), 0, 0, interpolation_for(src.size(), out.size()));
      break;
    }
    case ResizeMode::crop: {
      // The source window that maps onto the whole output at scale s.
      const double s = std::max(sx, sy);
      int roi_w = std::clamp(static_cast<int>(std::lround(w / s)), 1, src.cols);
      int roi_h = std::clamp(static_cast<int>(std::lround(h / s)), 1, src.rows);
      cv::Rect roi((src.cols - roi_w) / 2, (src.rows - roi_h) / 2, roi_w, roi_h);
      cv::resize(src(roi), out, out.size(), 0, 0, interpolation_for(roi.size(), out.size()));
      break;
    }
    case ResizeMode::pad: {
      const double s = std::min(sx, sy);
      int fit_w = std::clamp(static_cast<int>(std::lround(src.cols * s)), 1, w);
      int fit_h = std::clamp(static_cast<int>(std::lround(src.rows * s)), 1, h);
      out.setTo(fill_scalar(spec.fill, src.channels()));
      cv::Rect inner((w - fit_w) / 2, (h - fit_h) / 2, fit_w, fit_h);
      cv::Mat target = out(inner);
      cv::resize(src, target, target.size(), 0, 0, interpolation_for(src.size(), target.size()));
      break;
    }
  }
}

}  // namespace imgpack
