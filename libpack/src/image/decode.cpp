#include "image/decode.hpp"

#include <turbojpeg.h>

#include <array>
#include <cstdio>
#include <memory>
#include <new>
#include <opencv2/imgcodecs.hpp>  // the IMREAD_ flags; decoding goes through codecs.hpp
#include <opencv2/imgproc.hpp>
#include <optional>
#include <vector>

#include "image/codecs.hpp"
#include "image/png_read.hpp"

namespace imgpack {

namespace {

// "24.0 Mpx"; below 0.1 Mpx, which would print as 0.0, the pixels themselves.
std::string megapixels(uint64_t pixels) {
  if (pixels < 100'000) return std::to_string(pixels) + " pixels";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f Mpx", static_cast<double>(pixels) / 1e6);
  return text;
}

void check_pixel_limit(const ImageInfo& info, uint64_t max_pixels) {
  if (max_pixels != 0 && info.pixels() > max_pixels) {
    throw DecodeError("image declares " + std::to_string(info.width) + "x" +
                      std::to_string(info.height) + " (" + megapixels(info.pixels()) +
                      "), above the limit of " + megapixels(max_pixels) +
                      " (ConvertOptions::max_pixels)");
  }
}

struct TjDeleter {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using TjHandle = std::unique_ptr<void, TjDeleter>;

// One TurboJPEG decompressor per thread, replaced after any call on it fails.
//
// TurboJPEG 2.1 does not reset a decompressor whose call failed:
// tjDecompressHeader3() returns from inside a header it could not finish
// (a file cut at a few hundred bytes) with the handle still in that header,
// and the next file's markers are then read as its continuation ("Bogus
// Huffman table definition", "Invalid argument"). Every good JPEG after a bad
// one on that thread would fail. So a handle whose call returned an error or
// a warning is destroyed, and the thread's next decode gets a fresh one.
class ThreadDecompressor {
 public:
  static tjhandle get() {
    TjHandle& handle = slot();
    if (!handle) {
      handle.reset(tjInitDecompress());
      if (!handle) throw Error("TurboJPEG: cannot create a decompressor");
    }
    return handle.get();
  }
  // The handle's last call failed: never use it again.
  static void discard() { slot().reset(); }

 private:
  static TjHandle& slot() {
    thread_local TjHandle handle;
    return handle;
  }
};

// Whether `f` (< 1) belongs to `scales`. 7/8 and 3/4 belong to neither: their
// scaled IDCTs have no SIMD code, and decoding 1024x768 photos at 7/8 plus the
// resize measured slower than at full size (3/4 no faster). Nor, since,
// do 3/8 and 5/8 (DctScales::halvings): on 1024x768 photos one thread
// decoded at 3/8 in 2.56 ms against 2.36 at 1/2, at 5/8 in 3.53 against
// 2.77 at full size.
bool is_allowed_scale(tjscalingfactor f, DctScales scales) {
  if (f.num >= f.denom) return false;
  if (scales == DctScales::eighths) return 8 * f.num <= 5 * f.denom;
  return f.num == 1 && (f.denom == 2 || f.denom == 4 || f.denom == 8);
}

// Smallest allowed TurboJPEG scaling factor whose output is at least
// min_w x min_h; 1/1 when none is.
tjscalingfactor choose_scale(int width, int height, uint32_t min_w, uint32_t min_h,
                             DctScales scales) {
  int count = 0;
  tjscalingfactor* factors = tjGetScalingFactors(&count);
  tjscalingfactor best{1, 1};
  for (int i = 0; i < count; ++i) {
    tjscalingfactor f = factors[i];
    if (!is_allowed_scale(f, scales)) continue;
    int w = TJSCALED(width, f);
    int h = TJSCALED(height, f);
    if (w < static_cast<int>(min_w) || h < static_cast<int>(min_h)) continue;
    if (static_cast<int64_t>(f.num) * best.denom < static_cast<int64_t>(best.num) * f.denom) {
      best = f;
    }
  }
  return best;
}

// Adobe CMYK (inverted ink values, as Photoshop writes them and as libjpeg
// delivers them for both CMYK and YCCK files) to RGB, with the same integer
// formula as OpenCV's JPEG decoder so both decodes agree exactly.
void cmyk_to_rgb(const cv::Mat& cmyk, cv::Mat& rgb) {
  rgb.create(cmyk.rows, cmyk.cols, CV_8UC3);
  for (int y = 0; y < cmyk.rows; ++y) {
    const uint8_t* src = cmyk.ptr<uint8_t>(y);
    uint8_t* dst = rgb.ptr<uint8_t>(y);
    for (int x = 0; x < cmyk.cols; ++x, src += 4, dst += 3) {
      const int k = src[3];
      dst[0] = static_cast<uint8_t>(k - (((255 - src[0]) * k) >> 8));
      dst[1] = static_cast<uint8_t>(k - (((255 - src[1]) * k) >> 8));
      dst[2] = static_cast<uint8_t>(k - (((255 - src[2]) * k) >> 8));
    }
  }
}

// libjpeg reports damage it decoded through (missing data filled with gray)
// as warnings, so a warning means a damaged picture, except stray bytes
// between segments, which many cameras and editors write and which lose nothing.
bool is_harmless_warning(tjhandle tj) {
  if (tjGetErrorCode(tj) != TJERR_WARNING) return false;
  return std::string_view(tjGetErrorStr2(tj)).find("extraneous bytes before marker") !=
         std::string_view::npos;
}

// After a TurboJPEG call on `tj` returned `status`: a failure discards the
// thread's decompressor (see ThreadDecompressor) and, unless it was a harmless
// warning, throws DecodeError with `what` and TurboJPEG's reason.
void check_turbo_call(int status, tjhandle tj, const char* what) {
  if (status == 0) return;
  const bool harmless = is_harmless_warning(tj);
  const std::string reason = tjGetErrorStr2(tj);
  ThreadDecompressor::discard();
  // libjpeg's JERR_OUT_OF_MEMORY and TurboJPEG's own allocation failures: the
  // machine's memory, not the image's damage.
  if (reason.find("Insufficient memory") != std::string::npos ||
      reason.find("Memory allocation failure") != std::string::npos) {
    throw std::bad_alloc();
  }
  if (!harmless) throw DecodeError(what + reason);
}

cv::Mat decode_jpeg_turbo(std::span<const uint8_t> bytes, const ImageInfo& info,
                          const DecodeOptions& options, DecodedImage& decoded_image) {
  tjhandle tj = ThreadDecompressor::get();
  const auto size = static_cast<unsigned long>(bytes.size());
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  check_turbo_call(
      tjDecompressHeader3(tj, bytes.data(), size, &width, &height, &subsamp, &colorspace), tj,
      "corrupt JPEG header: ");
  // The pixel limit was checked against the probe's frame header; decode
  // only the frame it described.
  if (static_cast<uint32_t>(width) != info.width || static_cast<uint32_t>(height) != info.height) {
    throw DecodeError("corrupt JPEG: frame headers disagree (" + std::to_string(info.width) + "x" +
                      std::to_string(info.height) + " and " + std::to_string(width) + "x" +
                      std::to_string(height) + ")");
  }
  tj = ThreadDecompressor::get();  // a fresh one if the header left a warning
  // The caller's minimum is upright; the JPEG is stored before orientation.
  uint32_t min_w = info.transposed() ? options.min_height : options.min_width;
  uint32_t min_h = info.transposed() ? options.min_width : options.min_height;
  const bool may_scale = options.dct_scaling && min_w > 0 && min_h > 0;
  tjscalingfactor scale = may_scale ? choose_scale(width, height, min_w, min_h, options.dct_scales)
                                    : tjscalingfactor{1, 1};
  int out_w = TJSCALED(width, scale);
  int out_h = TJSCALED(height, scale);
  decoded_image.scale_num = scale.num;
  decoded_image.scale_denom = scale.denom;
  // LIMITSCANS refuses progressive files with absurd scan counts (a CPU bomb).
  const int flags = TJFLAG_LIMITSCANS;
  const bool gray = options.color == ColorMode::gray;
  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  cv::Mat decoded(out_h, out_w, cmyk ? CV_8UC4 : gray ? CV_8UC1 : CV_8UC3);
  const int format = cmyk ? TJPF_CMYK : gray ? TJPF_GRAY : TJPF_RGB;
  check_turbo_call(tjDecompress2(tj, bytes.data(), size, decoded.data, out_w,
                                 static_cast<int>(decoded.step), out_h, format, flags),
                   tj, "corrupt or truncated JPEG: ");
  if (!cmyk) return decoded;
  cv::Mat rgb;
  cmyk_to_rgb(decoded, rgb);
  if (!gray) return rgb;
  cv::Mat out;
  cv::cvtColor(rgb, out, cv::COLOR_RGB2GRAY);
  return out;
}

// A 2x1 gray TIFF whose Orientation tag (6) asks for a 90 degree clockwise
// rotation; OpenCV 4.6's TIFF decoder applies the tag itself, even with
// IMREAD_IGNORE_ORIENTATION. Whether this build does is asked once, so the
// orientation is never applied twice (or not at all) with another OpenCV.
bool opencv_applies_tiff_orientation() {
  static const bool applies = [] {
    constexpr std::size_t kEntries = 10;
    constexpr std::size_t kDataOffset = 10 + kEntries * 12 + 4;
    std::array<uint8_t, kDataOffset + 2> tiff{'I', 'I', 42, 0, 8, 0, 0, 0, kEntries, 0};
    std::size_t at = 10;
    auto entry = [&](uint16_t tag, uint16_t type, uint32_t value) {
      tiff[at + 0] = static_cast<uint8_t>(tag);
      tiff[at + 1] = static_cast<uint8_t>(tag >> 8);
      tiff[at + 2] = static_cast<uint8_t>(type);
      tiff[at + 4] = 1;  // count
      tiff[at + 8] = static_cast<uint8_t>(value);
      tiff[at + 9] = static_cast<uint8_t>(value >> 8);
      at += 12;
    };
    entry(256, 3, 2);            // ImageWidth
    entry(257, 3, 1);            // ImageLength
    entry(258, 3, 8);            // BitsPerSample
    entry(259, 3, 1);            // Compression: none
    entry(262, 3, 1);            // PhotometricInterpretation: BlackIsZero
    entry(273, 4, kDataOffset);  // StripOffsets
    entry(274, 3, 6);            // Orientation: rotate 90 clockwise
    entry(277, 3, 1);            // SamplesPerPixel
    entry(278, 3, 1);            // RowsPerStrip
    entry(279, 4, 2);            // StripByteCounts
    // The next-IFD offset (4 bytes) stays 0; then the two pixels.
    tiff[kDataOffset] = 10;
    tiff[kDataOffset + 1] = 200;
    try {
      const cv::Mat image =
          codecs::decode(tiff, cv::IMREAD_UNCHANGED | cv::IMREAD_IGNORE_ORIENTATION);
      return image.rows == 2 && image.cols == 1;
    } catch (const codecs::CodecError&) {
      return false;
    }
  }();
  return applies;
}

cv::Mat to_8bit(const cv::Mat& image) {
  if (image.depth() == CV_8U) return image;
  cv::Mat out;
  switch (image.depth()) {
    case CV_16U:
      image.convertTo(out, CV_8U, 1.0 / 257.0);
      break;
    case CV_16S:
      image.convertTo(out, CV_8U, 1.0 / 128.0, 128.0);
      break;
    case CV_32F:
    case CV_64F:
      image.convertTo(out, CV_8U, 255.0);
      break;
    default:
      throw DecodeError("unsupported sample type");
  }
  return out;
}

// Composites BGRA over an RGB fill colour, returning BGR.
cv::Mat composite_alpha(const cv::Mat& bgra, const std::array<uint8_t, 3>& fill) {
  cv::Mat out(bgra.rows, bgra.cols, CV_8UC3);
  const uint32_t fb = fill[2], fg = fill[1], fr = fill[0];
  for (int y = 0; y < bgra.rows; ++y) {
    const uint8_t* src = bgra.ptr<uint8_t>(y);
    uint8_t* dst = out.ptr<uint8_t>(y);
    for (int x = 0; x < bgra.cols; ++x, src += 4, dst += 3) {
      const uint32_t a = src[3], na = 255 - a;
      dst[0] = static_cast<uint8_t>((src[0] * a + fb * na + 127) / 255);
      dst[1] = static_cast<uint8_t>((src[1] * a + fg * na + 127) / 255);
      dst[2] = static_cast<uint8_t>((src[2] * a + fr * na + 127) / 255);
    }
  }
  return out;
}

// What OpenCV reads unchanged (any depth, 1 to 4 channels, BGR order) as 8-bit
// RGB or gray, alpha composited over the fill.
cv::Mat from_opencv_layout(cv::Mat image, const DecodeOptions& options) {
  image = to_8bit(image);
  cv::Mat bgr;
  switch (image.channels()) {
    case 1:
      bgr = image;
      break;
    case 2: {  // gray + alpha
      cv::Mat parts[2];
      cv::split(image, parts);
      cv::Mat gray_bgr, alpha_bgra;
      cv::cvtColor(parts[0], gray_bgr, cv::COLOR_GRAY2BGR);
      std::vector<cv::Mat> planes;
      cv::split(gray_bgr, planes);
      planes.push_back(parts[1]);
      cv::merge(planes, alpha_bgra);
      bgr = composite_alpha(alpha_bgra, options.fill);
      break;
    }
    case 3:
      bgr = image;
      break;
    case 4:
      bgr = composite_alpha(image, options.fill);
      break;
    default:
      throw DecodeError("unsupported channel count " + std::to_string(image.channels()));
  }
  cv::Mat out;
  if (options.color == ColorMode::gray) {
    if (bgr.channels() == 1) return bgr;
    cv::cvtColor(bgr, out, cv::COLOR_BGR2GRAY);
  } else {
    if (bgr.channels() == 1) {
      cv::cvtColor(bgr, out, cv::COLOR_GRAY2RGB);
    } else {
      cv::cvtColor(bgr, out, cv::COLOR_BGR2RGB);
    }
  }
  return out;
}

cv::Mat decode_opencv(std::span<const uint8_t> bytes, ImageFormat format,
                      const DecodeOptions& options) {
  // Orientation is applied by the caller from our own EXIF parse, the same
  // way for every path.
  if (format == ImageFormat::pnm) {
    if (const std::string problem = pnm_data_problem(bytes); !problem.empty()) {
      throw DecodeError("corrupt PNM: " + problem);
    }
  }
  cv::Mat image;
  try {
    image = codecs::decode(bytes, cv::IMREAD_UNCHANGED | cv::IMREAD_IGNORE_ORIENTATION);
  } catch (const codecs::CodecError& e) {
    throw DecodeError(std::string("cannot decode: ") + e.what());
  }
  if (image.empty()) {
    throw DecodeError(std::string("corrupt, truncated or unsupported ") + format_name(format) +
                      (format == ImageFormat::gif ? " (this OpenCV build cannot read GIF)" : ""));
  }
  return from_opencv_layout(image, options);
}

// A PNG through libpng, as OpenCV reads it (png_read.hpp), without loading
// OpenCV's image codecs.
cv::Mat decode_png(std::span<const uint8_t> bytes, const DecodeOptions& options) {
  std::string problem;
  const cv::Mat image = decode_png_as_opencv(bytes, problem);
  if (image.empty()) throw DecodeError("corrupt, truncated or unsupported PNG (" + problem + ")");
  return from_opencv_layout(image, options);
}

}  // namespace

cv::Mat apply_orientation(const cv::Mat& image, int orientation) {
  cv::Mat out;
  switch (orientation) {
    case 2:
      cv::flip(image, out, 1);
      return out;
    case 3:
      cv::rotate(image, out, cv::ROTATE_180);
      return out;
    case 4:
      cv::flip(image, out, 0);
      return out;
    case 5:
      cv::transpose(image, out);
      return out;
    case 6:
      cv::rotate(image, out, cv::ROTATE_90_CLOCKWISE);
      return out;
    case 7:
      cv::transpose(image, out);
      cv::rotate(out, out, cv::ROTATE_180);
      return out;
    case 8:
      cv::rotate(image, out, cv::ROTATE_90_COUNTERCLOCKWISE);
      return out;
    default:
      return image;
  }
}

DecodedImage decode_image(std::span<const uint8_t> bytes, const DecodeOptions& options) {
  if (bytes.empty()) throw DecodeError("empty file");
  const ImageFormat format = sniff_format(bytes);
  if (format == ImageFormat::unknown) throw DecodeError("not an image (unrecognised content)");
  const std::optional<ImageInfo> info = probe_image(bytes);
  if (!info) {
    throw DecodeError(std::string("corrupt or truncated ") + format_name(format) + " header");
  }
  return decode_image(bytes, *info, options);
}

DecodedImage decode_image(std::span<const uint8_t> bytes, const ImageInfo& info,
                          const DecodeOptions& options) {
  check_pixel_limit(info, options.max_pixels);
  const ImageFormat format = info.format;
  DecodedImage decoded;
  decoded.info = info;
  int orientation = info.orientation;
  if (format == ImageFormat::jpeg) {
    decoded.pixels = decode_jpeg_turbo(bytes, info, options, decoded);
  } else if (format == ImageFormat::png) {
    decoded.pixels = decode_png(bytes, options);
  } else {
    decoded.pixels = decode_opencv(bytes, format, options);
    if (format == ImageFormat::tiff && opencv_applies_tiff_orientation()) orientation = 1;
  }
  decoded.pixels = apply_orientation(decoded.pixels, orientation);
  decoded.orientation_applied = orientation;
  return decoded;
}

}  // namespace imgpack
