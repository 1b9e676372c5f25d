// Decoding one encoded image into upright 8-bit RGB or gray pixels.
//
// JPEG goes through TurboJPEG, decoding at the smallest DCT scale (1/2, 1/4,
// 1/8, ...) that still yields at least the size the caller needs, which skips
// most of the IDCT, colour conversion and resize work for large photos. Every
// other format (and CMYK JPEG) goes through OpenCV's imgcodecs. On both paths
// the EXIF orientation is applied, 16-bit samples are scaled to 8 bits and
// alpha is composited over a fill colour.
//
// decode_image() is safe to call from many threads at once.
#pragma once

#include <opencv2/core.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "imgpack/error.hpp"
#include "imgpack/image_probe.hpp"

namespace imgpack {

enum class ColorMode { rgb, gray };

// A file that cannot be decoded; what() is the reason, without the path
// (the caller adds it).
class DecodeError : public Error {
 public:
  using Error::Error;
};

struct DecodeOptions {
  ColorMode color = ColorMode::rgb;
  // Smallest upright size the caller needs. The JPEG path may decode at a
  // reduced DCT scale as long as the result is at least this large in both
  // dimensions; 0 means full size.
  uint32_t min_width = 0;
  uint32_t min_height = 0;
  // Images with more pixels than this are rejected before decoding.
  uint64_t max_pixels = 0;
  // Background for alpha compositing, RGB.
  std::array<uint8_t, 3> fill = {0, 0, 0};
  // Allow the JPEG DCT-scaled path (off only for comparisons and tests).
  bool dct_scaling = true;
};

struct DecodedImage {
  cv::Mat pixels;  // CV_8UC3 (RGB) or CV_8UC1, upright
  ImageInfo info;  // header of the source (stored size, orientation)
};

// Throws DecodeError with the reason on any failure (empty, not an image,
// corrupt, truncated, too many pixels).
DecodedImage decode_image(std::span<const uint8_t> bytes, const DecodeOptions& options);

// Applies EXIF orientation 1..8 to an image.
cv::Mat apply_orientation(const cv::Mat& image, int orientation);

}  // namespace imgpack
