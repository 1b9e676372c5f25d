#include "record_window.hpp"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <tmmintrin.h>
#endif

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
// Five pixels per 16-byte shuffle. The group of destination pixels x..x+4
// comes from the 15 source bytes of pixels width-5-x..width-1-x, loaded with
// the byte after them (the first of pixel width-x: inside the row for x >= 1)
// and stored with one byte too many (the first of pixel x+5, which a later
// group or the scalar tail writes). So groups start at x = 1 and stop while
// x + 5 < width; the ends go pixel by pixel.
__attribute__((target("ssse3"))) void mirror_rgb_row_ssse3(const uint8_t* row, uint8_t* out,
                                                           uint32_t width) {
  const __m128i reverse = _mm_setr_epi8(12, 13, 14, 9, 10, 11, 6, 7, 8, 3, 4, 5, 0, 1, 2, 15);
  mirror_rgb_pixels(row, out, width, 0, std::min<uint32_t>(width, 1));
  uint32_t x = 1;
  for (; x + 5 < width; x += 5) {
    const __m128i in =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 3 * (std::size_t{width} - 5 - x)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 3 * std::size_t{x}),
                     _mm_shuffle_epi8(in, reverse));
  }
  mirror_rgb_pixels(row, out, width, std::min(x, width), width);
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
    } else {
      for (uint32_t x = 0; x < delivered.width; ++x, out += channels) {
        pixel -= channels;
        std::memcpy(out, pixel, channels);
      }
    }
  }
}

}  // namespace imgpack::detail
