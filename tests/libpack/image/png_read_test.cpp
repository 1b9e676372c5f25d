// decode_png_as_opencv() against OpenCV's own decode of the same bytes
// (cv::imdecode through the codecs module, IMREAD_UNCHANGED): the same type,
// size and samples for every PNG colour type and bit depth, with and without
// transparency, interlaced or not, with a gamma chunk; and no image where
// OpenCV gives none. PNGs are written here with libpng, which writes every
// layout (OpenCV's encoder writes only some).
#include "image/png_read.hpp"

#include <gtest/gtest.h>
#include <png.h>

#include <opencv2/imgcodecs.hpp>

#include <csetjmp>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "image/codecs.hpp"
#include "image/decode.hpp"

namespace imgpack {
namespace {

struct Layout {
  int color_type = PNG_COLOR_TYPE_RGB;
  int bit_depth = 8;
  bool interlaced = false;
  bool transparency = false;  // a tRNS chunk (palette, gray, RGB)
  bool gamma = false;         // a gAMA chunk of 1/2.2

  std::string name() const {
    return "color type " + std::to_string(color_type) + ", " + std::to_string(bit_depth) + " bits" +
           (interlaced ? ", interlaced" : "") + (transparency ? ", tRNS" : "") +
           (gamma ? ", gAMA" : "");
  }
};

void on_write(png_structp png, png_bytep data, png_size_t length) {
  auto* out = static_cast<std::vector<uint8_t>*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + length);
}

void on_flush(png_structp /*png*/) {}

// A PNG of `layout`, `width` x `height`, random samples.
std::vector<uint8_t> encode(const Layout& layout, int width, int height, std::mt19937& rng) {
  int channels = 1;
  if (layout.color_type == PNG_COLOR_TYPE_RGB) channels = 3;
  if (layout.color_type == PNG_COLOR_TYPE_GRAY_ALPHA) channels = 2;
  if (layout.color_type == PNG_COLOR_TYPE_RGB_ALPHA) channels = 4;
  const int bits_per_pixel = channels * layout.bit_depth;
  const std::size_t row_bytes = (static_cast<std::size_t>(width) * bits_per_pixel + 7) / 8;
  std::vector<uint8_t> pixels(row_bytes * height);
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : pixels) b = static_cast<uint8_t>(byte(rng));
  const int palette_size = 1 << std::min(layout.bit_depth, 8);
  if (layout.color_type == PNG_COLOR_TYPE_PALETTE && layout.bit_depth == 8) {
    for (uint8_t& b : pixels) b = static_cast<uint8_t>(b % 200);  // within a 200-entry palette
  }
  std::vector<png_bytep> rows(height);
  for (int y = 0; y < height; ++y) rows[y] = pixels.data() + row_bytes * y;

  std::vector<uint8_t> out;
  // Everything with a destructor from before setjmp (libpng's errors longjmp there).
  std::vector<png_color> palette;
  std::vector<png_byte> alphas;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    ADD_FAILURE() << "libpng could not write " << layout.name();
    return {};
  }
  png_set_write_fn(png, &out, on_write, on_flush);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height),
               layout.bit_depth, layout.color_type,
               layout.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_color_16 transparent{};
  if (layout.color_type == PNG_COLOR_TYPE_PALETTE) {
    const int entries = layout.bit_depth == 8 ? 200 : palette_size;
    for (int i = 0; i < entries; ++i) {
      palette.push_back({static_cast<png_byte>(byte(rng)), static_cast<png_byte>(byte(rng)),
                         static_cast<png_byte>(byte(rng))});
    }
    png_set_PLTE(png, info, palette.data(), entries);
    if (layout.transparency) {
      for (int i = 0; i < entries / 2; ++i) alphas.push_back(static_cast<png_byte>(byte(rng)));
      png_set_tRNS(png, info, alphas.data(), static_cast<int>(alphas.size()), nullptr);
    }
  } else if (layout.transparency) {
    const int most = (1 << layout.bit_depth) - 1;
    transparent.gray = static_cast<png_uint_16>(most / 3);
    transparent.red = static_cast<png_uint_16>(most / 5);
    transparent.green = static_cast<png_uint_16>(most / 7);
    transparent.blue = static_cast<png_uint_16>(most / 2);
    png_set_tRNS(png, info, nullptr, 0, &transparent);
  }
  if (layout.gamma) png_set_gAMA(png, info, 1.0 / 2.2);
  png_write_info(png, info);
  png_write_image(png, rows.data());
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
  return out;
}

// "" when both decodes agree, else what differs.
std::string compare(const std::vector<uint8_t>& bytes) {
  std::string problem;
  const cv::Mat ours = decode_png_as_opencv(bytes, problem);
  cv::Mat theirs;
  try {
    theirs = codecs::decode(bytes, cv::IMREAD_UNCHANGED | cv::IMREAD_IGNORE_ORIENTATION);
  } catch (const codecs::CodecError&) {
    theirs = cv::Mat();
  }
  if (ours.empty() != theirs.empty()) {
    return std::string("OpenCV ") + (theirs.empty() ? "gives no image" : "gives an image") +
           ", libpng " + (ours.empty() ? "none (" + problem + ")" : "one");
  }
  if (ours.empty()) return "";
  if (ours.type() != theirs.type() || ours.size() != theirs.size()) {
    return "type " + std::to_string(ours.type()) + " against OpenCV's " +
           std::to_string(theirs.type()) + ", " + std::to_string(ours.cols) + "x" +
           std::to_string(ours.rows) + " against " + std::to_string(theirs.cols) + "x" +
           std::to_string(theirs.rows);
  }
  for (int y = 0; y < ours.rows; ++y) {
    const auto* a = ours.ptr<uint8_t>(y);
    const auto* b = theirs.ptr<uint8_t>(y);
    const std::size_t n = static_cast<std::size_t>(ours.cols) * ours.elemSize();
    for (std::size_t i = 0; i < n; ++i) {
      if (a[i] != b[i]) return "byte " + std::to_string(i) + " of row " + std::to_string(y);
    }
  }
  return "";
}

TEST(PngRead, EveryLayoutAsOpenCvReadsIt) {
  std::mt19937 rng(17);
  const std::vector<std::pair<int, std::vector<int>>> depths = {
      {PNG_COLOR_TYPE_GRAY, {1, 2, 4, 8, 16}},
      {PNG_COLOR_TYPE_RGB, {8, 16}},
      {PNG_COLOR_TYPE_PALETTE, {1, 2, 4, 8}},
      {PNG_COLOR_TYPE_GRAY_ALPHA, {8, 16}},
      {PNG_COLOR_TYPE_RGB_ALPHA, {8, 16}}};
  int compared = 0;
  for (const auto& [color_type, bit_depths] : depths) {
    for (const int bit_depth : bit_depths) {
      for (const bool interlaced : {false, true}) {
        for (const bool transparency : {false, true}) {
          if (transparency && (color_type & PNG_COLOR_MASK_ALPHA) != 0) continue;
          for (const bool gamma : {false, true}) {
            const Layout layout{color_type, bit_depth, interlaced, transparency, gamma};
            const std::vector<uint8_t> bytes = encode(layout, 37, 23, rng);
            ASSERT_FALSE(bytes.empty());
            EXPECT_EQ(compare(bytes), "") << layout.name();
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_EQ(compared, 104);
}

// Damage OpenCV refuses is refused too, with libpng's reason; the decode
// error names the format.
TEST(PngRead, NoImageWhereOpenCvGivesNone) {
  std::mt19937 rng(5);
  const std::vector<uint8_t> good = encode({}, 64, 48, rng);
  ASSERT_EQ(compare(good), "");

  const auto half = static_cast<std::ptrdiff_t>(good.size() / 2);
  const std::vector<uint8_t> truncated(good.begin(), good.begin() + half);
  EXPECT_EQ(compare(truncated), "");
  std::string problem;
  EXPECT_TRUE(decode_png_as_opencv(truncated, problem).empty());
  EXPECT_FALSE(problem.empty());

  const std::vector<uint8_t> no_end(good.begin(), good.end() - 12);  // IEND cut off
  EXPECT_EQ(compare(no_end), "");
  EXPECT_TRUE(decode_png_as_opencv(no_end, problem).empty());

  std::vector<uint8_t> bad_crc = good;
  bad_crc[good.size() / 2] ^= 0x40;  // inside IDAT
  EXPECT_EQ(compare(bad_crc), "");
  EXPECT_TRUE(decode_png_as_opencv(bad_crc, problem).empty());

  try {
    decode_image(bad_crc, DecodeOptions{});
    ADD_FAILURE() << "decoded a PNG with a damaged IDAT";
  } catch (const DecodeError& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt, truncated or unsupported PNG"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace imgpack
