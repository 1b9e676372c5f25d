// Fitting a decoded image to the dataset's fixed record size.
//
//   crop     scale so the image covers the target, then take the centre
//   stretch  scale each axis independently (aspect ratio not kept)
//   pad      scale so the image fits inside the target, letterbox with a fill colour
//
// Downscaling uses area averaging, upscaling bilinear interpolation. Pure
// functions; safe from any thread.
#pragma once

#include <opencv2/core.hpp>

#include <array>
#include <cstdint>

#include "imgpack/image_modes.hpp"

namespace imgpack {

struct ResizeSpec {
  uint32_t width = 0;
  uint32_t height = 0;
  ResizeMode mode = ResizeMode::crop;
  std::array<uint8_t, 3> fill = {0, 0, 0};  // RGB, for pad

  // The smallest upright source size from which this resize only ever
  // downsamples: a decoder may deliver any image at least this large.
  cv::Size required_source_size(uint32_t source_width, uint32_t source_height) const;
};

// What resize_into() does to an image of `source` pixels: the rectangle of
// the source it scales (crop: the centred window; else the whole image)
// onto the rectangle of the output it fills (pad: the letterboxed inner
// rectangle, the rest is fill; else the whole output).
struct ResizeWindow {
  cv::Rect source;
  cv::Rect target;
};
ResizeWindow resize_window(cv::Size source, const ResizeSpec& spec);

// Resizes `src` (CV_8UC3 or CV_8UC1) into `dst`, a continuous buffer of
// spec.height x spec.width x src.channels() bytes.
void resize_into(const cv::Mat& src, const ResizeSpec& spec, uint8_t* dst);

// `src` shrunk into `dst` (of its type, allocated, the target size) by area
// averaging: byte for byte cv::resize(src, dst, dst.size(), 0, 0, INTER_AREA),
// which it calls for what it does not do faster itself (other types, integer
// ratios, growing). Pure; safe from any thread.
void resize_area(const cv::Mat& src, cv::Mat& dst);

// The code resize_area() may run: `best` the widest vectors this CPU has
// (AVX2 where present), `portable` the code for any CPU. Both give the same
// bytes; tests compare each with cv::resize.
enum class AreaKernels { best, portable };
void resize_area(const cv::Mat& src, cv::Mat& dst, AreaKernels kernels);

// The interpolation imgpack uses for a resize from `from` to `to`.
int interpolation_for(cv::Size from, cv::Size to);

// Fill colour as a cv::Scalar for an image of `channels` channels.
cv::Scalar fill_scalar(const std::array<uint8_t, 3>& fill, int channels);

}  // namespace imgpack
