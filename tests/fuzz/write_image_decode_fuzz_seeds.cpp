// Writes the seed corpus of image_decode_fuzzer into OUT_DIR: small valid
// files of every layout the JPEG and PNG paths take (baseline, progressive,
// gray and CMYK JPEG, EXIF orientations; PNG of every colour type and bit
// depth, palettes with transparency, 16-bit samples, eXIf), files of the
// other formats for the probe (TIFF and BigTIFF with orientations, WebP with
// EXIF, BMP, PNM), and headers of every format that declare too many
// pixels, each once per call of the fuzzer (its selector byte, then the
// file).
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_seeds.hpp"
#include "image_fixtures.hpp"
#include "test_support.hpp"

using imgpack::test::encode_image;

namespace {

std::vector<std::pair<std::string, std::string>> seed_files() {
  const cv::Mat rgb = imgpack::test::make_rgb_image(24, 20, 7);
  cv::Mat gray;
  cv::cvtColor(rgb, gray, cv::COLOR_RGB2GRAY);
  const std::string jpeg = encode_image(".jpg", rgb, {cv::IMWRITE_JPEG_QUALITY, 90});
  const std::string png = encode_image(".png", rgb);
  std::vector<std::pair<std::string, std::string>> files = {
      {"baseline.jpg", jpeg},
      {"progressive.jpg",
       encode_image(".jpg", rgb, {cv::IMWRITE_JPEG_PROGRESSIVE, 1, cv::IMWRITE_JPEG_QUALITY, 80})},
      {"gray.jpg", encode_image(".jpg", gray)},
      {"exif6.jpg", imgpack::test::jpeg_with_exif(jpeg, 6)},
      {"rgb.png", png},
      {"gray.png", encode_image(".png", gray)},
      {"exif8.png", imgpack::test::png_with_exif(png, 8)},
      {"bomb.jpg", imgpack::test::bomb_header("jpeg", 40000, 40000)},
      {"bomb.png", imgpack::test::bomb_header("png", 40000, 40000)},
  };
  // The other formats are probed only (their decoders are OpenCV's).
  files.emplace_back("orientation6.tif", imgpack::test::tiff_rgb(rgb, 6));
  files.emplace_back("big.tif", imgpack::test::tiff_rgb(rgb, 3, true, true));
  files.emplace_back("exif5.webp",
                     imgpack::test::webp_with_exif(
                         encode_image(".webp", rgb, {cv::IMWRITE_WEBP_QUALITY, 101}), 24, 20, 5));
  files.emplace_back("rgb.bmp", encode_image(".bmp", rgb));
  files.emplace_back("rgb.ppm", encode_image(".ppm", rgb));
  for (const char* kind :
       {"bmp", "tiff", "bigtiff", "webp", "webp-vp8", "webp-vp8l", "gif", "pnm", "pam"}) {
    files.emplace_back(std::string("bomb-") + kind, imgpack::test::bomb_header(kind, 40000, 30000));
  }
  cv::Mat cmyk(20, 24, CV_8UC4);
  cv::randu(cmyk, 0, 256);
  files.emplace_back("ycck.jpg", imgpack::test::cmyk_jpeg(cmyk, 85));
  // PNG layouts OpenCV does not write: colour type x bit depth, 5 x 4 pixels.
  struct Layout {
    int color_type;
    int bit_depth;
    int channels;
  };
  const Layout layouts[] = {{0, 1, 1}, {0, 4, 1}, {0, 16, 1}, {2, 16, 3}, {3, 2, 1},
                            {3, 8, 1}, {4, 8, 2}, {4, 16, 2}, {6, 8, 4},  {6, 16, 4}};
  for (const Layout& layout : layouts) {
    const int max = (1 << (layout.color_type == 3 ? 2 : layout.bit_depth)) - 1;
    std::vector<uint16_t> samples(std::size_t{5} * 4 * layout.channels);
    for (std::size_t i = 0; i < samples.size(); ++i) {
      samples[i] = static_cast<uint16_t>((i * 37) % (max + 1));
    }
    const std::string plte = layout.color_type == 3 ? std::string(12, '\x40') : "";
    const std::string trns = layout.color_type == 3 ? std::string("\x00\x80", 2) : "";
    files.emplace_back(
        "type" + std::to_string(layout.color_type) + "-" + std::to_string(layout.bit_depth) +
            ".png",
        imgpack::test::png_raw(5, 4, layout.color_type, layout.bit_depth, samples, plte, trns));
  }
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  return imgpack::fuzz::seeds_main(argc, argv, "write_image_decode_fuzz_seeds", [](auto& seeds) {
    for (const auto& [name, bytes] : seed_files()) {
      for (char call = 0; call < 4; ++call) seeds.write(call, bytes, name);
    }
  });
}
