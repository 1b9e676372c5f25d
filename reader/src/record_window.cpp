#include "record_window.hpp"

#include <cstring>

#include "random.hpp"

namespace imgpack::detail {

namespace {

// The stream of window draws, apart from every other use of the order's seed.
constexpr uint64_t kWindowStream = 0x63726f70666c6970ULL;  // "cropflip"

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
    if (channels == 3) {  // the common case, unrolled by the compiler
      for (uint32_t x = 0; x < delivered.width; ++x, out += 3) {
        pixel -= 3;
        out[0] = pixel[0];
        out[1] = pixel[1];
        out[2] = pixel[2];
      }
    } else {
      for (uint32_t x = 0; x < delivered.width; ++x, out += channels) {
        pixel -= channels;
        std::memcpy(out, pixel, channels);
      }
    }
  }
}

}  // namespace imgpack::detail
