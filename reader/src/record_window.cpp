#include "record_window.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#if defined(__x86_64__)
#include <tmmintrin.h>
#endif

#include "imgpack/error.hpp"
#include "random.hpp"

namespace imgpack::detail {

namespace {

// The stream of window draws, apart from every other use of the order's seed.
constexpr uint64_t kWindowStream = 0x63726f70666c6970ULL;  // "cropflip"

// Pixel x of `out` from pixel width-1-x of `row` (3 bytes each), one pixel
// at a time.
void mirror_rgb_pixels(const uint8_t* row, uint8_t* out, uint32_t width, uint32_t from,
                       uint32_t to) {
  for (uint32_t x = from; x < to; ++x) {
    std::memcpy(out + std::size_t{3} * x, row + std::size_t{3} * (width - 1 - x), 3);
  }
}

#if defined(__x86_64__)
// Sixteen pixels (48 bytes) per step: destination pixels x..x+15 are source
// pixels width-1-x down to width-16-x, read as three 16-byte loads. Each
// destination vector gathers its bytes from two or three of them with one
// shuffle each (a mask byte with the high bit set yields zero), ORed. Whole
// 16-byte loads and stores at 16-byte steps: an earlier five-pixel version
// stored at 15-byte steps and ran at a third of the speed, splitting cache
// lines. The last width % 16 pixels go one by one.
__attribute__((target("ssse3"))) void mirror_rgb_row_ssse3(const uint8_t* row, uint8_t* out,
                                                           uint32_t width) {
  constexpr char z = -128;
  // from<q><i>: the bytes of destination vector q taken from source vector i.
  const __m128i from01 = _mm_setr_epi8(z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, 14);
  const __m128i from02 = _mm_setr_epi8(13, 14, 15, 10, 11, 12, 7, 8, 9, 4, 5, 6, 1, 2, 3, z);
  const __m128i from10 = _mm_setr_epi8(z, z, z, z, z, z, z, z, z, z, z, z, z, z, 15, z);
  const __m128i from11 = _mm_setr_epi8(15, z, 11, 12, 13, 8, 9, 10, 5, 6, 7, 2, 3, 4, z, 0);
  const __m128i from12 = _mm_setr_epi8(z, 0, z, z, z, z, z, z, z, z, z, z, z, z, z, z);
  const __m128i from20 = _mm_setr_epi8(z, 12, 13, 14, 9, 10, 11, 6, 7, 8, 3, 4, 5, 0, 1, 2);
  const __m128i from21 = _mm_setr_epi8(1, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z);
  uint32_t x = 0;
  for (; x + 16 <= width; x += 16) {
    const auto* in = reinterpret_cast<const __m128i*>(row + 3 * (std::size_t{width} - 16 - x));
    const __m128i in0 = _mm_loadu_si128(in);
    const __m128i in1 = _mm_loadu_si128(in + 1);
    const __m128i in2 = _mm_loadu_si128(in + 2);
    auto* to = reinterpret_cast<__m128i*>(out + 3 * std::size_t{x});
    _mm_storeu_si128(to,
                     _mm_or_si128(_mm_shuffle_epi8(in2, from02), _mm_shuffle_epi8(in1, from01)));
    _mm_storeu_si128(to + 1, _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(in1, from11),
                                                       _mm_shuffle_epi8(in0, from10)),
                                          _mm_shuffle_epi8(in2, from12)));
    _mm_storeu_si128(to + 2,
                     _mm_or_si128(_mm_shuffle_epi8(in0, from20), _mm_shuffle_epi8(in1, from21)));
  }
  mirror_rgb_pixels(row, out, width, x, width);
}
#endif

void mirror_rgb_row(const uint8_t* row, uint8_t* out, uint32_t width) {
#if defined(__x86_64__)
  static const bool ssse3 = __builtin_cpu_supports("ssse3");
  if (ssse3) {
    mirror_rgb_row_ssse3(row, out, width);
    return;
  }
#endif
  mirror_rgb_pixels(row, out, width, 0, width);
}

}  // namespace

bool random_windows(const LoaderOptions& options) {
  const Role role = options.selection.role;
  return options.crop.mode == CropMode::random ||
         (options.crop.mode == CropMode::automatic && (role == Role::train || role == Role::all));
}

void check_crop(const CropOptions& crop, RecordShape stored) {
  if ((crop.height == 0) != (crop.width == 0)) {
    throw UsageError("crop: give both height and width (or neither), not " +
                     std::to_string(crop.height) + " x " + std::to_string(crop.width));
  }
  if (crop.height > stored.height || crop.width > stored.width) {
    throw UsageError("crop " + std::to_string(crop.height) + " x " + std::to_string(crop.width) +
                     " is larger than the dataset's records (" + std::to_string(stored.height) +
                     " x " + std::to_string(stored.width) + ")");
  }
  if (!(crop.hflip >= 0 && crop.hflip <= 1) || !(crop.vflip >= 0 && crop.vflip <= 1)) {
    throw UsageError("crop: flip probabilities must be between 0 and 1");
  }
}

RecordShape delivered_shape(const CropOptions& crop, RecordShape stored) {
  return {crop.height != 0 ? crop.height : stored.height,
          crop.width != 0 ? crop.width : stored.width, stored.channels};
}

RecordWindow draw_window(const CropOptions& options, bool random_crop, RecordShape stored,
                         RecordShape delivered, uint64_t seed, uint64_t epoch, int64_t sample,
                         uint16_t variant) {
  CounterRng rng(mix64(seed ^ kWindowStream), epoch,
                 (static_cast<uint64_t>(sample) << 16) | variant);
  const uint32_t spare_rows = stored.height - delivered.height;
  const uint32_t spare_columns = stored.width - delivered.width;
  // Always drawn, in this order: a center crop or a zero probability leaves
  // the other draws where they are.
  const auto top = static_cast<uint32_t>(rng.below(uint64_t{spare_rows} + 1));
  const auto left = static_cast<uint32_t>(rng.below(uint64_t{spare_columns} + 1));
  const double h = rng.uniform();
  const double v = rng.uniform();
  RecordWindow window;
  window.top = random_crop ? top : spare_rows / 2;
  window.left = random_crop ? left : spare_columns / 2;
  window.hflip = h < options.hflip;
  window.vflip = v < options.vflip;
  return window;
}

void copy_window(const uint8_t* src, RecordShape stored, uint8_t* dst, RecordShape delivered,
                 const RecordWindow& window) {
  const std::size_t channels = stored.channels;
  const std::size_t row_bytes = std::size_t{delivered.width} * channels;
  for (uint32_t y = 0; y < delivered.height; ++y) {
    const uint32_t from_row = window.top + (window.vflip ? delivered.height - 1 - y : y);
    const uint8_t* row = src + (std::size_t{from_row} * stored.width + window.left) * channels;
    uint8_t* out = dst + std::size_t{y} * row_bytes;
    if (!window.hflip) {
      std::memcpy(out, row, row_bytes);
      continue;
    }
    const uint8_t* pixel = row + row_bytes;
    if (channels == 3) {
      mirror_rgb_row(row, out, delivered.width);
    } else if (channels == 1) {
      std::reverse_copy(row, row + row_bytes, out);  // gray images and masks
    } else {
      for (uint32_t x = 0; x < delivered.width; ++x, out += channels) {
        pixel -= channels;
        std::memcpy(out, pixel, channels);
      }
    }
  }
}

}  // namespace imgpack::detail

namespace imgpack {

void copy_delivered_view(const Dataset& dataset, const LoaderOptions& options, uint64_t epoch,
                         int64_t sample, uint16_t variant, const uint8_t* record, uint8_t* out) {
  const RecordShape stored{dataset.height(), dataset.width(), dataset.channels()};
  detail::check_crop(options.crop, stored);
  const RecordShape delivered = detail::delivered_shape(options.crop, stored);
  const detail::RecordWindow window =
      detail::draw_window(options.crop, detail::random_windows(options), stored, delivered,
                          options.order.seed, epoch, sample, variant);
  detail::copy_window(record, stored, out, delivered, window);
}

void copy_delivered_mask(const Dataset& dataset, const LoaderOptions& options, uint64_t epoch,
                         int64_t sample, uint16_t variant, const uint8_t* mask, uint8_t* out) {
  const RecordShape stored{dataset.height(), dataset.width(), dataset.channels()};
  detail::check_crop(options.crop, stored);
  const RecordShape delivered = detail::delivered_shape(options.crop, stored);
  const detail::RecordWindow window =
      detail::draw_window(options.crop, detail::random_windows(options), stored, delivered,
                          options.order.seed, epoch, sample, variant);
  detail::copy_window(mask, {stored.height, stored.width, 1}, out,
                      {delivered.height, delivered.width, 1}, window);
}

}  // namespace imgpack
