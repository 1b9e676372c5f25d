#include "image/image_probe.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <random>

#include "image_fixtures.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

using test::bomb_header;
using test::encode_image;
using test::make_rgb_image;

std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::optional<ImageInfo> probe(const std::string& s) { return probe_image(as_bytes(s)); }

struct Encoded {
  const char* ext;
  ImageFormat format;
  std::vector<int> params;
};

TEST(ImageProbeTest, ReadsTheSizeOfEveryFormatOpenCvWrites) {
  const cv::Mat rgb = make_rgb_image(37, 23, 1);
  const std::vector<Encoded> cases = {
      {".jpg", ImageFormat::jpeg, {}},
      {".jpg", ImageFormat::jpeg, {cv::IMWRITE_JPEG_PROGRESSIVE, 1}},
      {".png", ImageFormat::png, {}},
      {".bmp", ImageFormat::bmp, {}},
      {".tif", ImageFormat::tiff, {}},
      {".webp", ImageFormat::webp, {cv::IMWRITE_WEBP_QUALITY, 80}},   // VP8
      {".webp", ImageFormat::webp, {cv::IMWRITE_WEBP_QUALITY, 101}},  // VP8L
      {".ppm", ImageFormat::pnm, {}},
      {".ppm", ImageFormat::pnm, {cv::IMWRITE_PXM_BINARY, 0}},  // P3, ASCII
      {".pam", ImageFormat::pnm, {}},
  };
  for (const Encoded& c : cases) {
    SCOPED_TRACE(std::string(c.ext) + " params " + std::to_string(c.params.size()));
    const std::string bytes = encode_image(c.ext, rgb, c.params);
    EXPECT_EQ(sniff_format(as_bytes(bytes)), c.format);
    std::optional<ImageInfo> info = probe(bytes);
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->format, c.format);
    EXPECT_EQ(info->width, 37u);
    EXPECT_EQ(info->height, 23u);
    EXPECT_EQ(info->orientation, 1);
  }
  // Gray and 16-bit variants.
  cv::Mat gray(23, 37, CV_8UC1, cv::Scalar(7));
  for (const char* ext : {".pgm", ".pbm", ".png", ".tif", ".bmp"}) {
    SCOPED_TRACE(ext);
    std::optional<ImageInfo> info = probe(encode_image(ext, gray));
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->width, 37u);
    EXPECT_EQ(info->height, 23u);
  }
  cv::Mat deep(23, 37, CV_16UC3, cv::Scalar(1000, 2000, 3000));
  for (const char* ext : {".png", ".tif"}) {
    std::optional<ImageInfo> info = probe(encode_image(ext, deep));
    ASSERT_TRUE(info.has_value()) << ext;
    EXPECT_EQ(info->width, 37u);
    EXPECT_EQ(info->height, 23u);
  }
}

// Every Netpbm kind OpenCV writes holds its data; cut short, or with a
// plain value that is no number or above the maximum, it does not, and
// the problem says why (OpenCV's reader would print its own complaint).
TEST(ImageProbeTest, NetpbmDataIsCheckedAgainstItsHeader) {
  const cv::Mat rgb = make_rgb_image(37, 23, 1);
  cv::Mat gray;
  cv::cvtColor(rgb, gray, cv::COLOR_RGB2GRAY);
  cv::Mat deep(23, 37, CV_16UC1, cv::Scalar(40000));
  const std::vector<std::pair<std::string, std::string>> files = {
      {"P6", encode_image(".ppm", rgb)},
      {"P3", encode_image(".ppm", rgb, {cv::IMWRITE_PXM_BINARY, 0})},
      {"P5", encode_image(".pgm", gray)},
      {"P2", encode_image(".pgm", gray, {cv::IMWRITE_PXM_BINARY, 0})},
      {"P5 16-bit", encode_image(".pgm", deep)},
      {"P4", encode_image(".pbm", gray)},
      {"P1", encode_image(".pbm", gray, {cv::IMWRITE_PXM_BINARY, 0})},
      {"P7", encode_image(".pam", rgb)},
  };
  for (const auto& [kind, bytes] : files) {
    SCOPED_TRACE(kind);
    EXPECT_EQ(pnm_data_problem(as_bytes(bytes)), "");
    const std::string cut = bytes.substr(0, bytes.size() - 7);
    EXPECT_NE(pnm_data_problem(as_bytes(cut)).find("truncated"), std::string::npos)
        << pnm_data_problem(as_bytes(cut));
  }
  EXPECT_EQ(pnm_data_problem(as_bytes(std::string("P6\n4 4\n255\n\x01\x02"))),
            "truncated: 2 bytes of pixel data where its header declares 48");
  EXPECT_EQ(pnm_data_problem(as_bytes(std::string("P2\n2 1\n255\n3 x\n"))),
            "its value number 2, 'x', is not a number");
  EXPECT_EQ(pnm_data_problem(as_bytes(std::string("P2\n2 1\n255\n3 256\n"))),
            "value 256 is above its maximum value 255");
  EXPECT_EQ(pnm_data_problem(as_bytes(std::string("P6\n4 4\n0\n"))),
            "its maximum value 0 is outside 1..65535");
  EXPECT_EQ(pnm_data_problem(as_bytes(encode_image(".png", rgb))), "");  // not Netpbm
}

TEST(ImageProbeTest, JpegComponentsAndCmyk) {
  std::optional<ImageInfo> rgb = probe(encode_image(".jpg", make_rgb_image(16, 8, 2)));
  ASSERT_TRUE(rgb);
  EXPECT_EQ(rgb->components, 3);
  EXPECT_FALSE(rgb->cmyk);
  std::optional<ImageInfo> gray = probe(encode_image(".jpg", cv::Mat(8, 16, CV_8UC1, 50)));
  ASSERT_TRUE(gray);
  EXPECT_EQ(gray->components, 1);
  std::optional<ImageInfo> cmyk =
      probe(test::cmyk_jpeg(cv::Mat(8, 16, CV_8UC4, cv::Scalar(200, 100, 50, 220)), 90));
  ASSERT_TRUE(cmyk);
  EXPECT_EQ(cmyk->components, 4);
  EXPECT_TRUE(cmyk->cmyk);
  EXPECT_EQ(cmyk->width, 16u);
  EXPECT_EQ(cmyk->height, 8u);
}

TEST(ImageProbeTest, ExifOrientationInJpegPngWebpAndTiff) {
  const cv::Mat rgb = make_rgb_image(30, 20, 3);
  const std::string jpeg = encode_image(".jpg", rgb);
  const std::string png = encode_image(".png", rgb);
  const std::string webp = encode_image(".webp", rgb, {cv::IMWRITE_WEBP_QUALITY, 101});
  const std::string webp_lossy = encode_image(".webp", rgb, {cv::IMWRITE_WEBP_QUALITY, 80});
  for (int o = 1; o <= 8; ++o) {
    SCOPED_TRACE("orientation " + std::to_string(o));
    const std::vector<std::pair<std::string, std::string>> files = {
        {"jpeg", test::jpeg_with_exif(jpeg, o)},
        {"png", test::png_with_exif(png, o)},
        {"webp-lossless", test::webp_with_exif(webp, 30, 20, o)},
        {"webp-lossy", test::webp_with_exif(webp_lossy, 30, 20, o)},
        {"tiff", test::tiff_rgb(rgb, o)},
        {"tiff-mm", test::tiff_rgb(rgb, o, false, true)},
        {"bigtiff", test::tiff_rgb(rgb, o, true)},
        {"bigtiff-mm", test::tiff_rgb(rgb, o, true, true)},
    };
    for (const auto& [name, bytes] : files) {
      SCOPED_TRACE(name);
      std::optional<ImageInfo> info = probe(bytes);
      ASSERT_TRUE(info.has_value());
      EXPECT_EQ(info->width, 30u);
      EXPECT_EQ(info->height, 20u);
      EXPECT_EQ(info->orientation, o);
      EXPECT_EQ(info->upright_width(), o >= 5 ? 20u : 30u);
    }
  }
}

TEST(ImageProbeTest, PngExifAfterImageDataAndExifBlocks) {
  const cv::Mat rgb = make_rgb_image(30, 20, 4);
  const std::string png = encode_image(".png", rgb);
  // Move eXIf behind IDAT: cut it from where png_with_exif() puts it (after
  // the 33 bytes of signature and IHDR) and put it before IEND (the last 12).
  const std::string with = test::png_with_exif(png, 6);
  const std::string exif_chunk = with.substr(33, with.size() - png.size());
  const std::string late =
      png.substr(0, png.size() - 12) + exif_chunk + png.substr(png.size() - 12);
  std::optional<ImageInfo> info = probe(late);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->orientation, 6);

  EXPECT_EQ(exif_orientation(as_bytes(test::exif_block(8))), 8);
  EXPECT_EQ(exif_orientation(as_bytes(test::exif_block(3, true))), 3);
  EXPECT_EQ(exif_orientation(as_bytes(std::string("garbage"))), 1);
  EXPECT_EQ(exif_orientation(as_bytes(test::exif_block(9))), 1);  // out of range
}

// An empty EXIF chunk that ends the file (found by image_decode_fuzzer): its
// payload starts one past the last byte and is never indexed there.
TEST(ImageProbeTest, AnEmptyExifChunkAtTheEndOfTheFileIsNoOrientation) {
  const cv::Mat rgb = make_rgb_image(24, 20, 6);
  const std::string png = encode_image(".png", rgb);
  const std::string png_cut = png.substr(0, 33) + std::string("\0\0\0\0eXIf", 8);
  const std::vector<uint8_t> png_exact(png_cut.begin(), png_cut.end());
  std::optional<ImageInfo> info = probe_image(png_exact);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->width, 24u);
  EXPECT_EQ(info->orientation, 1);

  const std::string webp =
      test::webp_with_exif(encode_image(".webp", rgb, {cv::IMWRITE_WEBP_QUALITY, 101}), 24, 20, 6);
  const std::size_t exif = webp.rfind("EXIF");
  ASSERT_NE(exif, std::string::npos);
  const std::string webp_cut = webp.substr(0, exif) + std::string("EXIF\0\0\0\0", 8);
  const std::vector<uint8_t> webp_exact(webp_cut.begin(), webp_cut.end());
  info = probe_image(webp_exact);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->width, 24u);
  EXPECT_EQ(info->orientation, 1);
}

TEST(ImageProbeTest, BombHeadersOfEveryFormatDeclareTheirSize) {
  for (const char* kind : {"jpeg", "png", "bmp", "tiff", "bigtiff", "webp", "gif", "pnm", "pam"}) {
    SCOPED_TRACE(kind);
    const std::string bytes = bomb_header(kind, 60000, 60000);
    EXPECT_LT(bytes.size(), 300u);
    std::optional<ImageInfo> info = probe(bytes);
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->width, 60000u);
    EXPECT_EQ(info->height, 60000u);
    EXPECT_EQ(info->pixels(), 3600000000ULL);
  }
  // Simple-format WebP stores 14-bit sizes.
  for (const char* kind : {"webp-vp8", "webp-vp8l"}) {
    std::optional<ImageInfo> info = probe(bomb_header(kind, 16000, 12000));
    ASSERT_TRUE(info.has_value()) << kind;
    EXPECT_EQ(info->width, 16000u) << kind;
    EXPECT_EQ(info->height, 12000u) << kind;
  }
}

TEST(ImageProbeTest, BmpTopDownAndCoreHeaders) {
  std::string bmp = bomb_header("bmp", 40, 30);
  // Negative height: rows stored top-down.
  int32_t negative = -30;
  std::memcpy(&bmp[22], &negative, 4);
  std::optional<ImageInfo> info = probe(bmp);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->height, 30u);
  // Zero or negative width is damage.
  int32_t zero = 0;
  std::memcpy(&bmp[18], &zero, 4);
  EXPECT_FALSE(probe(bmp));
}

TEST(ImageProbeTest, ZeroSizesAndUnknownContentAreRejected) {
  for (const char* kind : {"jpeg", "png", "tiff", "gif", "pnm"}) {
    EXPECT_FALSE(probe(bomb_header(kind, 0, 10))) << kind;
  }
  EXPECT_EQ(sniff_format(as_bytes(std::string("hello world"))), ImageFormat::unknown);
  EXPECT_FALSE(probe("hello world"));
  EXPECT_FALSE(probe(""));
  EXPECT_FALSE(probe("P6"));
  EXPECT_FALSE(probe("P6\n12"));
  EXPECT_FALSE(probe("P6\n12 x\n"));
  EXPECT_FALSE(probe("P6\n99999999999 2\n255\n"));
}

// Every prefix and many corruptions of real files: the probe may say
// nullopt, but must never read out of bounds (run under ASan in CI builds
// with IMGPACK_SANITIZE) or report a size the header does not hold.
TEST(ImageProbeTest, TruncatedAndCorruptedHeadersAreSafe) {
  const cv::Mat rgb = make_rgb_image(30, 20, 5);
  std::vector<std::string> files = {
      test::jpeg_with_exif(encode_image(".jpg", rgb), 6),
      test::png_with_exif(encode_image(".png", rgb), 6),
      test::webp_with_exif(encode_image(".webp", rgb, {cv::IMWRITE_WEBP_QUALITY, 101}), 30, 20, 6),
      test::tiff_rgb(rgb, 6),
      test::tiff_rgb(rgb, 6, true),
      encode_image(".bmp", rgb),
      encode_image(".ppm", rgb),
      bomb_header("gif", 30, 20),
      bomb_header("pam", 30, 20),
  };
  std::mt19937 rng(7);
  std::size_t probed = 0;
  for (const std::string& file : files) {
    for (std::size_t n = 0; n < std::min<std::size_t>(file.size(), 400); ++n) {
      // An exact-size copy, so ASan sees any read past the end.
      std::vector<uint8_t> prefix(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(n));
      (void)probe_image(prefix);
      ++probed;
    }
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<uint8_t> damaged(file.begin(), file.end());
      for (int k = 0; k < 3; ++k) {
        damaged[rng() % std::min<std::size_t>(damaged.size(), 200)] = static_cast<uint8_t>(rng());
      }
      std::optional<ImageInfo> info = probe_image(damaged);
      if (info) {
        EXPECT_GT(info->width, 0u);
        EXPECT_GT(info->height, 0u);
        EXPECT_GE(info->orientation, 1);
        EXPECT_LE(info->orientation, 8);
      }
      ++probed;
    }
  }
  EXPECT_GT(probed, 3000u);
}

}  // namespace
}  // namespace imgpack
