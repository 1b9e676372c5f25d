#include "image/resize.hpp"

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

ResizeWindow resize_window(cv::Size source, const ResizeSpec& spec) {
  const int w = static_cast<int>(spec.width);
  const int h = static_cast<int>(spec.height);
  const double sx = static_cast<double>(w) / source.width;
  const double sy = static_cast<double>(h) / source.height;
  ResizeWindow window{cv::Rect(cv::Point(0, 0), source), cv::Rect(0, 0, w, h)};
  switch (spec.mode) {
    case ResizeMode::stretch:
      break;
    case ResizeMode::crop: {
      // The source window that maps onto the whole output at scale s.
      const double s = std::max(sx, sy);
      int roi_w = std::clamp(static_cast<int>(std::lround(w / s)), 1, source.width);
      int roi_h = std::clamp(static_cast<int>(std::lround(h / s)), 1, source.height);
      window.source =
          cv::Rect((source.width - roi_w) / 2, (source.height - roi_h) / 2, roi_w, roi_h);
      break;
    }
    case ResizeMode::pad: {
      const double s = std::min(sx, sy);
      int fit_w = std::clamp(static_cast<int>(std::lround(source.width * s)), 1, w);
      int fit_h = std::clamp(static_cast<int>(std::lround(source.height * s)), 1, h);
      window.target = cv::Rect((w - fit_w) / 2, (h - fit_h) / 2, fit_w, fit_h);
      break;
    }
  }
  return window;
}

void resize_into(const cv::Mat& src, const ResizeSpec& spec, uint8_t* dst) {
  const int w = static_cast<int>(spec.width);
  const int h = static_cast<int>(spec.height);
  cv::Mat out(h, w, CV_8UC(src.channels()), dst);
  const ResizeWindow window = resize_window(src.size(), spec);
  if (spec.mode == ResizeMode::pad) out.setTo(fill_scalar(spec.fill, src.channels()));
  cv::Mat target = out(window.target);
  const cv::Mat source = src(window.source);
  if (interpolation_for(source.size(), target.size()) == cv::INTER_AREA) {
    resize_area(source, target);
  } else {
    cv::resize(source, target, target.size(), 0, 0, cv::INTER_LINEAR);
  }
}

}  // namespace imgpack
