// libFuzzer target for what a conversion does with each input file's bytes
// before any pixel is resized: the header probe (every format), the decode
// of the formats imgpack decodes itself (JPEG through TurboJPEG, PNG through
// libpng), and the mask decode (PNG label maps).
//
// Input: byte 0 selects the call, the rest is the file:
//   0  decode_image, RGB, full size
//   1  decode_image, RGB, at least 16x16 (a reduced DCT scale where one fits)
//   2  decode_image, gray, at least 16x16
//   3  decode_mask, without a colour table
// Any input may be an answer's reason: DecodeError is the documented one. Any
// other exception, a crash, a sanitizer report, a hang or an allocation past
// the limit is a bug, and so is an image that breaks the contract of what
// came back: its size is the probed header's (scaled by the DCT scale the
// JPEG path chose, then turned upright), within the pixel limit the probe
// was checked against; RGB has 3 channels, gray and masks 1.
//
// Formats OpenCV's codecs read (BMP, TIFF, WebP, PNM, GIF) are probed but
// not decoded here: their decoders are OpenCV's, fuzzed by its project.
#include <opencv2/core.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <span>

#include "image/decode.hpp"
#include "image/image_probe.hpp"
#include "imgpack/error.hpp"
#include "masks/mask_decode.hpp"

namespace {

// 4 Mpx: a decode stays far inside the fuzzer's memory limit.
constexpr uint64_t kMaxPixels = uint64_t{1} << 22;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "image_decode_fuzzer: %s\n", what);
  std::abort();
}

uint64_t scaled(uint32_t side, int num, int denom) {
  return (uint64_t{side} * static_cast<uint64_t>(num) + static_cast<uint64_t>(denom) - 1) /
         static_cast<uint64_t>(denom);
}

void check_image(const imgpack::DecodedImage& decoded, const imgpack::ImageInfo& probed,
                 int channels) {
  const cv::Mat& pixels = decoded.pixels;
  if (pixels.empty()) fail("decode_image returned no pixels without an error");
  if (pixels.depth() != CV_8U || pixels.channels() != channels) fail("wrong pixel type");
  if (decoded.info.width != probed.width || decoded.info.height != probed.height) {
    fail("the decoded image's header is not the probed one");
  }
  if (probed.pixels() > kMaxPixels) fail("an image above the pixel limit was decoded");
  uint64_t width = scaled(probed.width, decoded.scale_num, decoded.scale_denom);
  uint64_t height = scaled(probed.height, decoded.scale_num, decoded.scale_denom);
  if (decoded.orientation_applied >= 5) std::swap(width, height);
  if (static_cast<uint64_t>(pixels.cols) != width || static_cast<uint64_t>(pixels.rows) != height) {
    std::fprintf(stderr, "probed %ux%u scale %d/%d orientation %d, decoded %dx%d\n", probed.width,
                 probed.height, decoded.scale_num, decoded.scale_denom, decoded.orientation_applied,
                 pixels.cols, pixels.rows);
    fail("the decoded size is not the probed one");
  }
}

void decode(std::span<const uint8_t> file, int call) {
  const std::optional<imgpack::ImageInfo> probed = imgpack::probe_image(file);
  const imgpack::ImageFormat format = imgpack::sniff_format(file);
  if (probed && probed->format != format) fail("probe and sniff disagree on the format");
  if (format != imgpack::ImageFormat::jpeg && format != imgpack::ImageFormat::png) return;
  if (call == 3) {
    if (format != imgpack::ImageFormat::png) return;
    const cv::Mat mask = imgpack::decode_mask(file, nullptr, kMaxPixels);
    if (mask.empty() || mask.type() != CV_8UC1) fail("decode_mask: not a CV_8UC1 label map");
    if (!probed || static_cast<uint64_t>(mask.cols) != probed->width ||
        static_cast<uint64_t>(mask.rows) != probed->height) {
      fail("decode_mask: the mask's size is not the probed one");
    }
    return;
  }
  imgpack::DecodeOptions options;
  options.max_pixels = kMaxPixels;
  options.color = call == 2 ? imgpack::ColorMode::gray : imgpack::ColorMode::rgb;
  if (call != 0) options.min_width = options.min_height = 16;
  const imgpack::DecodedImage decoded = imgpack::decode_image(file, options);
  if (!probed) fail("decode_image decoded a file whose header the probe refused");
  check_image(decoded, *probed, call == 2 ? 1 : 3);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const int call = data[0] % 4;
  try {
    decode(std::span<const uint8_t>(data + 1, size - 1), call);
  } catch (const imgpack::DecodeError&) {
    // The documented answer to a damaged file.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "image_decode_fuzzer: unexpected exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
