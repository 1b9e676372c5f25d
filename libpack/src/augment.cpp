#include "augment.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <opencv2/imgproc.hpp>

#include "imgpack/checksum.hpp"
#include "imgpack/error.hpp"
#include "random.hpp"

namespace imgpack {

namespace {

// Stream id for CounterRng, so augmentation never shares a stream with the
// write order or anything else keyed by the same seed.
constexpr uint64_t kAugmentStream = 0x6175676d656e74;  // "augment"

// ---------------------------------------------------------------- colour

inline uint8_t clamp_u8(long value) { return static_cast<uint8_t>(std::clamp(value, 0L, 255L)); }

void apply_table(cv::Mat& image, const std::array<uint8_t, 256>& table) {
  const cv::Mat lut(1, 256, CV_8UC1, const_cast<uint8_t*>(table.data()));
  cv::LUT(image, lut, image);
}

// Brightness, then contrast about the mean gray level of the result: one
// lookup table pass each (SIMD in OpenCV), and one SIMD mean.
void apply_levels(const AugmentParams& params, cv::Mat& image) {
  std::array<uint8_t, 256> table;
  if (params.brightness != 1) {
    for (int v = 0; v < 256; ++v) table[v] = clamp_u8(std::lround(v * params.brightness));
    apply_table(image, table);
  }
  if (params.contrast != 1) {
    const cv::Scalar mean = cv::mean(image);
    const double gray =
        image.channels() == 1 ? mean[0] : 0.299 * mean[0] + 0.587 * mean[1] + 0.114 * mean[2];
    const double offset = (1 - params.contrast) * gray;
    for (int v = 0; v < 256; ++v) {
      table[v] = clamp_u8(static_cast<long>(std::floor(params.contrast * v + offset + 0.5)));
    }
    apply_table(image, table);
  }
}

// Shifts the HSV hue of n pixels held as planes by `shift` sixths of the
// circle (0..6), keeping HSV value (max) and chroma (max - min) as
// torchvision's adjust_hue does. Branch-free so the compiler vectorises it;
// the float arithmetic lives in registers, the image stays 8-bit.
void rotate_hue_planes(uint8_t* __restrict red, uint8_t* __restrict green, uint8_t* __restrict blue,
                       int n, float shift) {
  // HSV to RGB: channel value = max - chroma * clamp(min(k, 4 - k), 0, 1),
  // k = (offset + h) mod 6 with offset 5, 3, 1 for red, green, blue.
  const auto channel = [](float hi, float chroma, float h, float offset) {
    float k = h + offset;
    k -= k >= 6 ? 6.0f : 0.0f;
    float t = k < 4 - k ? k : 4 - k;
    t = t < 1 ? t : 1.0f;
    t = t > 0 ? t : 0.0f;
    // Halves up, in [0, 255]: std::lround would be a library call and stop
    // the loop from vectorising.
    return static_cast<uint8_t>(hi - chroma * t + 0.5f);  // NOLINT(bugprone-incorrect-roundings)
  };
  for (int i = 0; i < n; ++i) {
    const float r = red[i], g = green[i], b = blue[i];
    const float hi_gb = g > b ? g : b, lo_gb = g < b ? g : b;
    const float hi = r > hi_gb ? r : hi_gb, lo = r < lo_gb ? r : lo_gb;
    const float chroma = hi - lo;
    const float inverse = 1.0f / (chroma > 1 ? chroma : 1.0f);  // chroma 0 keeps the pixel
    const float from_red = (g - b) * inverse, from_green = 2 + (b - r) * inverse,
                from_blue = 4 + (r - g) * inverse;
    float h = hi == r ? from_red : (hi == g ? from_green : from_blue);
    h += shift;                 // in [-1, 11)
    h += h < 0 ? 6.0f : 0.0f;   // in [0, 11)
    h -= h >= 6 ? 6.0f : 0.0f;  // in [0, 6)
    red[i] = channel(hi, chroma, h, 5);
    green[i] = channel(hi, chroma, h, 3);
    blue[i] = channel(hi, chroma, h, 1);
  }
}

// Per-thread scratch images, so colour operations allocate nothing per record
// once a thread has seen the record size.
struct ColorScratch {
  cv::Mat gray, gray3;
  cv::Mat planes[3];
};

ColorScratch& color_scratch() {
  thread_local ColorScratch scratch;
  return scratch;
}

// Saturation, hue and grayscale on an RGB image, in that order. Saturation
// and grayscale use OpenCV's vectorised conversions (BT.601 luma, as
// torchvision) and blending on 8-bit data.
void apply_chroma(const AugmentParams& params, cv::Mat& image) {
  ColorScratch& scratch = color_scratch();
  if (params.saturation != 1) {
    cv::cvtColor(image, scratch.gray, cv::COLOR_RGB2GRAY);
    cv::cvtColor(scratch.gray, scratch.gray3, cv::COLOR_GRAY2RGB);
    cv::addWeighted(image, params.saturation, scratch.gray3, 1 - params.saturation, 0, image);
  }
  double turns = std::fmod(params.hue, 1.0);
  if (turns < 0) turns += 1;
  if (turns != 0) {
    cv::split(image, scratch.planes);
    for (cv::Mat& plane : scratch.planes) CV_Assert(plane.isContinuous());
    rotate_hue_planes(scratch.planes[0].data, scratch.planes[1].data, scratch.planes[2].data,
                      image.rows * image.cols, static_cast<float>(turns * 6));
    cv::merge(scratch.planes, 3, image);
  }
  if (params.gray) {
    cv::cvtColor(image, scratch.gray, cv::COLOR_RGB2GRAY);
    cv::cvtColor(scratch.gray, image, cv::COLOR_GRAY2RGB);
  }
}

int border_mode(FillMode fill) {
  switch (fill) {
    case FillMode::reflect:
      return cv::BORDER_REFLECT_101;
    case FillMode::constant:
      return cv::BORDER_CONSTANT;
    case FillMode::edge:
      return cv::BORDER_REPLICATE;
  }
  return cv::BORDER_CONSTANT;
}

double radians(double degrees) { return degrees * std::numbers::pi / 180.0; }

}  // namespace

uint64_t augment_sample_key(std::string_view relative_path) {
  return checksum(relative_path.data(), relative_path.size());
}

Augmenter::Augmenter(AugmentSpec spec, ResizeSpec output, uint64_t seed)
    : spec_(spec), output_(output), seed_(seed) {}

AugmentParams Augmenter::sample(uint64_t sample_key, uint32_t variant, cv::Size source) const {
  CounterRng rng(mix64(seed_ + kAugmentStream), sample_key, variant);
  const AugmentSpec& s = spec_;
  AugmentParams p;
  // Fixed draw order, every draw taken: a key's values never depend on
  // which other keys the spec has.
  p.hflip = rng.uniform() < s.hflip;
  p.vflip = rng.uniform() < s.vflip;
  p.rotate = rng.uniform(-s.rotate, s.rotate);
  p.shift_x = rng.uniform(-s.shift, s.shift);
  p.shift_y = rng.uniform(-s.shift, s.shift);
  p.zoom = rng.uniform(s.zoom_min, s.zoom_max);
  p.shear = rng.uniform(-s.shear, s.shear);
  const double log_aspect_lo = std::log(s.aspect_min), log_aspect_hi = std::log(s.aspect_max);
  p.aspect = std::exp(rng.uniform(log_aspect_lo, log_aspect_hi));
  p.brightness = rng.uniform(std::max(0.0, 1 - s.brightness), 1 + s.brightness);
  p.contrast = rng.uniform(std::max(0.0, 1 - s.contrast), 1 + s.contrast);
  p.saturation = rng.uniform(std::max(0.0, 1 - s.saturation), 1 + s.saturation);
  p.hue = rng.uniform(-s.hue, s.hue);
  p.gray = rng.uniform() < s.gray;
  if (!s.crop) return p;

  // torchvision's RandomResizedCrop.get_params, in continuous coordinates and
  // with the aspect ratio relative to the output's. It draws a variable number
  // of values, so it comes last.
  p.crop = true;
  const double w = source.width, h = source.height;
  const double out_aspect = static_cast<double>(output_.width) / output_.height;
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double area = w * h * rng.uniform(s.crop_scale_min, s.crop_scale_max);
    const double ratio = std::exp(rng.uniform(log_aspect_lo, log_aspect_hi)) * out_aspect;
    const double cw = std::sqrt(area * ratio), ch = std::sqrt(area / ratio);
    if (cw <= w && ch <= h) {
      const double x0 = rng.uniform(0, w - cw), y0 = rng.uniform(0, h - ch);
      p.crop_cx = (x0 + cw / 2) / w;
      p.crop_cy = (y0 + ch / 2) / h;
      p.crop_w = cw / w;
      p.crop_h = ch / h;
      return p;
    }
  }
  // Fallback, as torchvision: the whole source, cut to the nearest allowed ratio.
  const double in_ratio = w / h;
  const double lo = s.aspect_min * out_aspect, hi = s.aspect_max * out_aspect;
  double cw = w, ch = h;
  if (in_ratio < lo) {
    ch = w / lo;
  } else if (in_ratio > hi) {
    cw = h * hi;
  }
  p.crop_cx = p.crop_cy = 0.5;
  p.crop_w = cw / w;
  p.crop_h = ch / h;
  return p;
}

cv::Matx23d Augmenter::transform(const AugmentParams& p, cv::Size source) const {
  const double w = source.width, h = source.height;
  const double out_w = output_.width, out_h = output_.height;
  // The source window (centre, size) that fills the output before the
  // output-space transforms.
  double cx = w / 2, cy = h / 2, win_w = w, win_h = h;
  if (p.crop) {
    cx = p.crop_cx * w;
    cy = p.crop_cy * h;
    win_w = p.crop_w * w;
    win_h = p.crop_h * h;
  } else {
    if (output_.mode != ResizeMode::stretch) {
      const double sx = out_w / w, sy = out_h / h;
      const double scale = output_.mode == ResizeMode::crop ? std::max(sx, sy) : std::min(sx, sy);
      win_w = out_w / scale;
      win_h = out_h / scale;
    }
    if (p.aspect > 1) {
      win_h /= p.aspect;
    } else {
      win_w *= p.aspect;
    }
  }
  const cv::Matx22d fit(out_w / win_w, 0, 0, out_h / win_h);
  const cv::Matx22d flip(p.hflip ? -1 : 1, 0, 0, p.vflip ? -1 : 1);
  const cv::Matx22d zoom(p.zoom, 0, 0, p.zoom);
  const cv::Matx22d shear(1, std::tan(radians(p.shear)), 0, 1);
  const double c = std::cos(radians(p.rotate)), s = std::sin(radians(p.rotate));
  // With y down, [c s; -s c] turns the picture counter-clockwise on screen.
  const cv::Matx22d rotate(c, s, -s, c);
  const cv::Matx22d linear = rotate * shear * zoom * flip * fit;
  // Continuous positions have pixel centres at +0.5; OpenCV's at integers.
  const cv::Vec2d t =
      linear * cv::Vec2d(0.5 - cx, 0.5 - cy) +
      cv::Vec2d(out_w / 2 - 0.5 + p.shift_x * out_w, out_h / 2 - 0.5 + p.shift_y * out_h);
  return cv::Matx23d(linear(0, 0), linear(0, 1), t[0], linear(1, 0), linear(1, 1), t[1]);
}

double magnification(const cv::Matx23d& m) {
  const double a = m(0, 0), b = m(0, 1), c = m(1, 0), d = m(1, 1);
  const double sum = a * a + b * b + c * c + d * d;
  const double det = a * d - b * c;
  return std::sqrt((sum + std::sqrt(std::max(0.0, sum * sum - 4 * det * det))) / 2);
}

cv::Size Augmenter::required_source_size(std::span<const AugmentParams> variants,
                                         cv::Size full) const {
  double largest = 0;
  for (const AugmentParams& p : variants) {
    largest = std::max(largest, magnification(transform(p, full)));
  }
  const double scale = std::min(1.0, largest);
  return {std::max(1, static_cast<int>(std::ceil(full.width * scale - 1e-9))),
          std::max(1, static_cast<int>(std::ceil(full.height * scale - 1e-9)))};
}

const cv::Mat& Augmenter::reduce_source(const cv::Mat& source,
                                        std::span<const AugmentParams> variants,
                                        cv::Mat& scratch) const {
  if (variants.empty()) return source;
  double largest = 0;
  for (const AugmentParams& p : variants) {
    largest = std::max(largest, magnification(transform(p, source.size())));
  }
  if (largest >= 0.5) return source;
  const cv::Size reduced(std::max(1, static_cast<int>(std::ceil(source.cols * largest - 1e-6))),
                         std::max(1, static_cast<int>(std::ceil(source.rows * largest - 1e-6))));
  scratch.create(reduced, source.type());
  resize_area(source, scratch);
  return scratch;
}

void Augmenter::render(const cv::Mat& source, const AugmentParams& params, uint8_t* dst) const {
  const int channels = source.channels();
  cv::Mat out(static_cast<int>(output_.height), static_cast<int>(output_.width), CV_8UC(channels),
              dst);
  cv::warpAffine(source, out, transform(params, source.size()), out.size(), cv::INTER_LINEAR,
                 border_mode(spec_.fill), fill_scalar(output_.fill, channels));
  apply_color(params, out);
}

void Augmenter::render_mask(const cv::Mat& mask, const AugmentParams& params, cv::Size source,
                            const SourceFrame& frame, uint8_t fill, uint8_t* dst) const {
  const int w = static_cast<int>(output_.width), h = static_cast<int>(output_.height);
  cv::Mat out(h, w, CV_8UC1, dst);
  warp_mask(mask, transform(params, source), source, frame, cv::Rect(0, 0, w, h),
            border_mode(spec_.fill), fill, out);
}

void apply_color(const AugmentParams& params, cv::Mat& image) {
  CV_Assert(image.depth() == CV_8U && (image.channels() == 1 || image.channels() == 3));
  if (params.brightness != 1 || params.contrast != 1) apply_levels(params, image);
  if (image.channels() == 3 && (params.saturation != 1 || params.hue != 0 || params.gray)) {
    apply_chroma(params, image);
  }
}

}  // namespace imgpack
