// Reading PNG files with libpng directly, from memory.
//
// decode_png_as_opencv() gives what OpenCV's imdecode(bytes,
// IMREAD_UNCHANGED | IMREAD_IGNORE_ORIENTATION) gives for a PNG, sample for
// sample: the same libpng, asked for the same transformations (palettes and
// transparency to BGRA, gray+alpha to BGRA, colour to BGR, 1, 2 and 4-bit
// gray to 8 bits, 16-bit samples kept in native byte order). A conversion of
// PNG images thus never loads OpenCV's image codecs (libimgpack_codecs.so and
// the 130 libraries behind it, about 0.2 s of a process's start), and its
// records are the bytes they were when OpenCV read them
// (png_read_test.cpp compares the two over every PNG colour type, bit depth,
// transparency and interlacing).
//
// PngReader is the libpng plumbing it shares with the mask reader
// (masks/mask_decode.cpp). Everything here is safe from any thread: each call
// has its own libpng structures.
#pragma once

#include <png.h>

#include <opencv2/core/mat.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace imgpack {

// What libpng's callbacks share with the reading function: the bytes and the
// error message. Plain data, since libpng reports errors by longjmp, which
// must not skip a destructor.
struct PngInput {
  const uint8_t* data = nullptr;
  std::size_t size = 0;
  std::size_t position = 0;
  char message[256] = {};
};

// libpng's read and info structures over `input` (read from memory; errors
// longjmp to png_jmpbuf(png()) with the message in input.message; warnings
// are ignored), destroyed with it. A check of the caller's between libpng
// calls fails the same way: snprintf into input.message, then png_longjmp
// (never with a temporary that has a destructor alive).
class PngReader {
 public:
  explicit PngReader(PngInput& input);
  ~PngReader();
  PngReader(const PngReader&) = delete;
  PngReader& operator=(const PngReader&) = delete;
  png_structp png() const { return png_; }
  png_infop info() const { return info_; }

 private:
  png_structp png_ = nullptr;
  png_infop info_ = nullptr;
};

// The PNG in `bytes` as OpenCV decodes it unchanged (above): CV_8U or CV_16U
// samples, 1, 3 or 4 channels (BGR, BGRA). An empty Mat, with the reason in
// `problem`, where OpenCV would give none: not a PNG, corrupt, truncated
// (up to its IEND chunk), or a side over 2^20 pixels or more than 2^30 pixels
// in all (OpenCV's limits).
cv::Mat decode_png_as_opencv(std::span<const uint8_t> bytes, std::string& problem);

}  // namespace imgpack
