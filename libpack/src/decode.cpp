#include "imgpack/decode.hpp"

#include <turbojpeg.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <memory>

namespace imgpack {

namespace {

std::string megapixels(uint64_t pixels) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f Mpx", static_cast<double>(pixels) / 1e6);
  return text;
}

void check_pixel_limit(const ImageInfo& info, uint64_t max_pixels) {
  if (max_pixels != 0 && info.pixels() > max_pixels) {
    throw DecodeError("image declares " + std::to_string(info.width) + "x" +
                      std::to_string(info.height) + " (" + megapixels(info.pixels()) +
                      "), above the limit of " + megapixels(max_pixels) + " (--max-pixels)");
  }
}

struct TjDeleter {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using TjHandle = std::unique_ptr<void, TjDeleter>;

tjhandle thread_decompressor() {
  thread_local TjHandle handle(tjInitDecompress());
  if (!handle) throw Error("TurboJPEG: cannot create a decompressor");
  return handle.get();
}

// Smallest TurboJPEG scaling factor <= 1 whose output is at least min_w x min_h.
tjscalingfactor choose_scale(int width, int height, uint32_t min_w, uint32_t min_h) {
  int count = 0;
  tjscalingfactor* factors = tjGetScalingFactors(&count);
  tjscalingfactor best{1, 1};
  for (int i = 0; i < count; ++i) {
    tjscalingfactor f = factors[i];
    if (f.num > f.denom) continue;
    int w = TJSCALED(width, f);
    int h = TJSCALED(height, f);
    if (w < static_cast<int>(min_w) || h < static_cast<int>(min_h)) continue;
    if (static_cast<int64_t>(f.num) * best.denom < static_cast<int64_t>(best.num) * f.denom) {
      best = f;
    }
  }
  return best;
}

cv::Mat decode_jpeg_turbo(std::span<const uint8_t> bytes, const ImageInfo& info,
                          const DecodeOptions& options) {
  tjhandle tj = thread_decompressor();
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(tj, bytes.data(), static_cast<unsigned long>(bytes.size()), &width,
                          &height, &subsamp, &colorspace) != 0) {
    throw DecodeError(std::string("corrupt JPEG header: ") + tjGetErrorStr2(tj));
  }
  // The caller's minimum is upright; the JPEG is stored before orientation.
  uint32_t min_w = info.transposed() ? options.min_height : options.min_width;
  uint32_t min_h = info.transposed() ? options.min_width : options.min_height;
  tjscalingfactor scale = options.dct_scaling ? choose_scale(width, height, min_w, min_h)
                                              : tjscalingfactor{1, 1};
  int out_w = TJSCALED(width, scale);
  int out_h = TJSCALED(height, scale);
  bool gray = options.color == ColorMode::gray;
  cv::Mat out(out_h, out_w, gray ? CV_8UC1 : CV_8UC3);
  int flags = TJFLAG_STOPONWARNING;
  if (tjDecompress2(tj, bytes.data(), static_cast<unsigned long>(bytes.size()), out.data, out_w,
                    static_cast<int>(out.step), out_h, gray ? TJPF_GRAY : TJPF_RGB, flags) != 0) {
    throw DecodeError(std::string("corrupt or truncated JPEG: ") + tjGetErrorStr2(tj));
  }
  return out;
}

cv::Mat to_8bit(const cv::Mat& image) {
  if (image.depth() == CV_8U) return image;
  cv::Mat out;
  switch (image.depth()) {
    case CV_16U: image.convertTo(out, CV_8U, 1.0 / 257.0); break;
    case CV_16S: image.convertTo(out, CV_8U, 1.0 / 128.0, 128.0); break;
    case CV_32F:
    case CV_64F: image.convertTo(out, CV_8U, 255.0); break;
    default: throw DecodeError("unsupported sample type");
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

cv::Mat decode_opencv(std::span<const uint8_t> bytes, const DecodeOptions& options) {
  // Orientation is applied by the caller from our own EXIF parse, the same
  // way for every path.
  const cv::Mat buffer(1, static_cast<int>(bytes.size()), CV_8UC1,
                       const_cast<uint8_t*>(bytes.data()));
  cv::Mat image;
  try {
    image = cv::imdecode(buffer, cv::IMREAD_UNCHANGED | cv::IMREAD_IGNORE_ORIENTATION);
  } catch (const cv::Exception& e) {
    throw DecodeError(std::string("cannot decode: ") + e.what());
  }
  if (image.empty()) throw DecodeError("corrupt, truncated or unsupported image");
  image = to_8bit(image);
  cv::Mat bgr;
  switch (image.channels()) {
    case 1: bgr = image; break;
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
    case 3: bgr = image; break;
    case 4: bgr = composite_alpha(image, options.fill); break;
    default: throw DecodeError("unsupported channel count " + std::to_string(image.channels()));
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

}  // namespace

cv::Mat apply_orientation(const cv::Mat& image, int orientation) {
  cv::Mat out;
  switch (orientation) {
    case 2: cv::flip(image, out, 1); return out;
    case 3: cv::rotate(image, out, cv::ROTATE_180); return out;
    case 4: cv::flip(image, out, 0); return out;
    case 5: cv::transpose(image, out); return out;
    case 6: cv::rotate(image, out, cv::ROTATE_90_CLOCKWISE); return out;
    case 7: cv::transpose(image, out); cv::rotate(out, out, cv::ROTATE_180); return out;
    case 8: cv::rotate(image, out, cv::ROTATE_90_COUNTERCLOCKWISE); return out;
    default: return image;
  }
}

DecodedImage decode_image(std::span<const uint8_t> bytes, const DecodeOptions& options) {
  if (bytes.empty()) throw DecodeError("empty file");
  ImageFormat format = sniff_format(bytes);
  if (format == ImageFormat::unknown) throw DecodeError("not an image (unrecognised content)");
  std::optional<ImageInfo> info = probe_image(bytes);
  DecodedImage decoded;
  if (info) {
    check_pixel_limit(*info, options.max_pixels);
    decoded.info = *info;
  } else {
    decoded.info.format = format;
    if (format == ImageFormat::jpeg || format == ImageFormat::png) {
      throw DecodeError(std::string("corrupt or truncated ") + format_name(format) + " header");
    }
  }
  if (format == ImageFormat::jpeg && !decoded.info.cmyk) {
    decoded.pixels = decode_jpeg_turbo(bytes, decoded.info, options);
  } else {
    decoded.pixels = decode_opencv(bytes, options);
  }
  if (!info) {
    decoded.info.width = static_cast<uint32_t>(decoded.pixels.cols);
    decoded.info.height = static_cast<uint32_t>(decoded.pixels.rows);
  }
  decoded.pixels = apply_orientation(decoded.pixels, decoded.info.orientation);
  return decoded;
}

}  // namespace imgpack
