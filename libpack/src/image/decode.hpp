// Decoding one encoded image into upright 8-bit RGB or gray pixels.
//
// The header is probed first (image_probe.hpp): an image declaring more than
// DecodeOptions::max_pixels is rejected before any pixel memory is allocated,
// and so is a file whose header cannot be read.
//
// JPEG (baseline, progressive, gray, CMYK and YCCK) goes through TurboJPEG,
// decoding at the smallest DCT scale of DecodeOptions::dct_scales that
// still yields at least the size the caller needs, which skips most of the
// IDCT, colour conversion and resize work for large photos. CMYK and YCCK are
// decoded to CMYK and converted to RGB the way OpenCV and Photoshop do
// (Adobe's inverted ink values: R = (255-C)(255-K)/255, in OpenCV's integer
// form), so the pixels match OpenCV's own decode. PNG goes through libpng as
// OpenCV reads it (png_read.hpp), without loading OpenCV's image codecs.
// Every other format goes through OpenCV's imgcodecs (BMP, TIFF, WebP, PNM;
// GIF only where the OpenCV build reads it). On every path the EXIF
// orientation is applied once (JPEG APP1, PNG eXIf, WebP EXIF, the TIFF
// Orientation tag), samples deeper than 8 bits are scaled to 8 (16-bit v ->
// round(v/257)), palettes are expanded and alpha (RGBA, gray+alpha, palette
// transparency) is composited over DecodeOptions::fill.
//
// decode_image() is safe to call from many threads at once.
#pragma once

#include <opencv2/core.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "image/image_probe.hpp"
#include "imgpack/error.hpp"
#include "imgpack/image_modes.hpp"

namespace imgpack {

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
  // dimensions; 0 (in either) means full size.
  uint32_t min_width = 0;
  uint32_t min_height = 0;
  // Images with more pixels than this are rejected before decoding.
  uint64_t max_pixels = 0;
  // Background for alpha compositing, RGB.
  std::array<uint8_t, 3> fill = {0, 0, 0};
  // Allow the JPEG DCT-scaled path (off only for comparisons and tests).
  bool dct_scaling = true;
  // The reduced scales it may use.
  DctScales dct_scales = DctScales::halvings;
};

struct DecodedImage {
  cv::Mat pixels;  // CV_8UC3 (RGB) or CV_8UC1, upright
  ImageInfo info;  // header of the source (stored size, orientation)
  // The DCT scale the JPEG path decoded at (1/1 otherwise): `pixels` holds
  // ceil(stored size * num / denom) pixels per side before orientation.
  int scale_num = 1;
  int scale_denom = 1;
  // The EXIF orientation imgpack applied to `pixels` (1 where none was, or
  // where the decoder applied it itself at full size).
  int orientation_applied = 1;
};

// Throws DecodeError with the reason on any failure (empty, not an image,
// corrupt, truncated, too many pixels).
DecodedImage decode_image(std::span<const uint8_t> bytes, const DecodeOptions& options);
// The same for bytes whose header the caller has read already (probe_image()):
// the header is not read again.
DecodedImage decode_image(std::span<const uint8_t> bytes, const ImageInfo& info,
                          const DecodeOptions& options);

// Applies EXIF orientation 1..8 to an image.
cv::Mat apply_orientation(const cv::Mat& image, int orientation);

}  // namespace imgpack
