// Tests for libpack/src/image/decode.cpp: every format against OpenCV's own decode,
// 16-bit, alpha, CMYK, EXIF orientation, DCT scaling, decompression bombs, bad
// inputs, and a corrupt JPEG never costing the next. Long because each input
// kind has its own cases over shared encoders.
#include "image/decode.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <thread>

#include "image/resize.hpp"
#include "image_fixtures.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

using test::encode_image;
using test::make_rgb_image;
using test::mean_abs_diff;

std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

DecodedImage decode(const std::string& bytes, DecodeOptions options = {}) {
  return decode_image(as_bytes(bytes), options);
}

// OpenCV's own decode (which applies EXIF orientation to JPEG and PNG),
// in RGB or gray.
cv::Mat opencv_decode(const std::string& bytes, bool gray = false) {
  std::vector<uint8_t> buffer(bytes.begin(), bytes.end());
  cv::Mat image = cv::imdecode(buffer, gray ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR);
  if (image.empty()) throw std::runtime_error("OpenCV cannot decode the test image");
  if (!gray) cv::cvtColor(image, image, cv::COLOR_BGR2RGB);
  return image;
}

int max_abs_diff(const cv::Mat& a, const cv::Mat& b) {
  EXPECT_EQ(a.size(), b.size());
  EXPECT_EQ(a.type(), b.type());
  if (a.size() != b.size() || a.type() != b.type()) return 1 << 20;
  cv::Mat diff;
  cv::absdiff(a, b, diff);
  double max = 0;
  cv::minMaxLoc(diff.reshape(1), nullptr, &max);
  return static_cast<int>(max);
}

// A photo-like image: smooth shading plus fine texture, so JPEG has real
// high-frequency content to lose.
cv::Mat make_photo(int width, int height, uint64_t seed) {
  cv::Mat base = make_rgb_image(width, height, seed);
  cv::Mat noise(height, width, CV_8UC3);
  cv::randn(noise, cv::Scalar::all(0), cv::Scalar::all(20));
  cv::Mat small(height / 8 + 1, width / 8 + 1, CV_8UC3);
  cv::randu(small, cv::Scalar::all(0), cv::Scalar::all(255));
  cv::Mat blobs;
  cv::resize(small, blobs, base.size(), 0, 0, cv::INTER_CUBIC);
  cv::Mat photo;
  cv::addWeighted(base, 0.6, blobs, 0.4, 0, photo);
  cv::add(photo, noise, photo, cv::noArray(), CV_8UC3);
  return photo;
}

struct FormatCase {
  std::string name;
  std::string bytes;
  int tolerance;  // largest per-sample difference allowed against OpenCV
};

TEST(DecodeTest, EveryFormatMatchesOpenCvsOwnDecode) {
  const cv::Mat rgb = make_photo(64, 48, 1);
  const cv::Mat gray(48, 64, CV_8UC1, cv::Scalar(90));
  cv::Mat gray_ramp;
  cv::cvtColor(rgb, gray_ramp, cv::COLOR_RGB2GRAY);
  cv::Mat deep;
  rgb.convertTo(deep, CV_16UC3, 257.0);
  deep += cv::Scalar(100, 30, 7);  // low bits that only a 16-bit path sees
  const std::vector<FormatCase> cases = {
      {"baseline jpeg", encode_image(".jpg", rgb, {cv::IMWRITE_JPEG_QUALITY, 90}), 0},
      {"progressive jpeg",
       encode_image(".jpg", rgb, {cv::IMWRITE_JPEG_PROGRESSIVE, 1, cv::IMWRITE_JPEG_QUALITY, 85}),
       0},
      {"gray jpeg", encode_image(".jpg", gray_ramp), 0},
      {"png", encode_image(".png", rgb), 0},
      {"gray png", encode_image(".png", gray_ramp), 0},
      {"16-bit png", encode_image(".png", deep), 1},
      {"bmp", encode_image(".bmp", rgb), 0},
      {"gray bmp", encode_image(".bmp", gray_ramp), 0},
      {"tiff", encode_image(".tif", rgb), 0},
      {"16-bit tiff", encode_image(".tif", deep), 1},
      {"lossless webp", encode_image(".webp", rgb, {cv::IMWRITE_WEBP_QUALITY, 101}), 0},
      {"lossy webp", encode_image(".webp", rgb, {cv::IMWRITE_WEBP_QUALITY, 75}), 0},
      {"ppm", encode_image(".ppm", rgb), 0},
      {"ascii ppm", encode_image(".ppm", rgb, {cv::IMWRITE_PXM_BINARY, 0}), 0},
      {"pgm", encode_image(".pgm", gray_ramp), 0},
      {"pbm", encode_image(".pbm", gray), 0},
      {"pam", encode_image(".pam", rgb), 0},
  };
  for (const FormatCase& c : cases) {
    SCOPED_TRACE(c.name);
    DecodedImage image = decode(c.bytes);
    EXPECT_EQ(image.pixels.type(), CV_8UC3);
    EXPECT_LE(max_abs_diff(image.pixels, opencv_decode(c.bytes)), c.tolerance);
    DecodeOptions gray_options;
    gray_options.color = ColorMode::gray;
    DecodedImage gray_image = decode(c.bytes, gray_options);
    EXPECT_EQ(gray_image.pixels.type(), CV_8UC1);
    // For JPEG, OpenCV's gray decode is the luma plane; for the others the
    // reference is the colour decode converted to gray (OpenCV's own gray
    // PAM decode swaps red and blue).
    cv::Mat gray_reference;
    if (c.name.find("jpeg") != std::string::npos) {
      gray_reference = opencv_decode(c.bytes, true);
    } else {
      cv::cvtColor(opencv_decode(c.bytes), gray_reference, cv::COLOR_RGB2GRAY);
    }
    EXPECT_LE(max_abs_diff(gray_image.pixels, gray_reference), c.tolerance + 1);
  }
}

TEST(DecodeTest, SixteenBitIsScaledWithRounding) {
  std::vector<uint16_t> samples;
  samples.reserve(std::size_t{16} * 16);
  for (int i = 0; i < 16 * 16; ++i) samples.push_back(static_cast<uint16_t>(i * 257 + (i % 200)));
  const std::string png = test::png_raw(16, 16, 0, 16, samples);
  DecodeOptions options;
  options.color = ColorMode::gray;
  DecodedImage image = decode(png, options);
  ASSERT_EQ(image.pixels.type(), CV_8UC1);
  for (int i = 0; i < 16 * 16; ++i) {
    const int expected = static_cast<int>(std::lround(samples[i] / 257.0));
    ASSERT_EQ(image.pixels.at<uint8_t>(i / 16, i % 16), expected) << "sample " << samples[i];
  }
  // RGB output of a 16-bit gray PNG: three equal channels.
  DecodedImage rgb = decode(png);
  ASSERT_EQ(rgb.pixels.type(), CV_8UC3);
  EXPECT_EQ(rgb.pixels.at<cv::Vec3b>(3, 5),
            cv::Vec3b(image.pixels.at<uint8_t>(3, 5), image.pixels.at<uint8_t>(3, 5),
                      image.pixels.at<uint8_t>(3, 5)));
}

uint8_t over(int value, int alpha, int fill) {
  return static_cast<uint8_t>(std::lround((value * alpha + fill * (255.0 - alpha)) / 255.0));
}

TEST(DecodeTest, AlphaIsCompositedOverTheFill) {
  const std::array<uint8_t, 3> fill = {10, 200, 60};
  DecodeOptions options;
  options.fill = fill;
  // RGBA PNG written by OpenCV.
  cv::Mat rgba(20, 30, CV_8UC4);
  for (int y = 0; y < 20; ++y) {
    for (int x = 0; x < 30; ++x) {
      rgba.at<cv::Vec4b>(y, x) =
          cv::Vec4b(static_cast<uint8_t>(x * 8), static_cast<uint8_t>(y * 12), 200,
                    static_cast<uint8_t>((x * 9 + y * 5) % 256));
    }
  }
  for (const std::string& ext : {std::string(".png"), std::string(".tif")}) {
    SCOPED_TRACE(ext);
    DecodedImage image = decode(encode_image(ext, rgba), options);
    ASSERT_EQ(image.pixels.type(), CV_8UC3);
    for (int y = 0; y < 20; ++y) {
      for (int x = 0; x < 30; ++x) {
        const cv::Vec4b s = rgba.at<cv::Vec4b>(y, x);
        const cv::Vec3b d = image.pixels.at<cv::Vec3b>(y, x);
        for (int c = 0; c < 3; ++c) ASSERT_EQ(d[c], over(s[c], s[3], fill[c])) << x << "," << y;
      }
    }
  }
  // RGBA lossless WebP.
  DecodedImage webp = decode(encode_image(".webp", rgba, {cv::IMWRITE_WEBP_QUALITY, 101}), options);
  const cv::Vec4b s = rgba.at<cv::Vec4b>(7, 11);
  EXPECT_EQ(
      webp.pixels.at<cv::Vec3b>(7, 11),
      cv::Vec3b(over(s[0], s[3], fill[0]), over(s[1], s[3], fill[1]), over(s[2], s[3], fill[2])));

  // Gray + alpha PNG (colour type 4), 8 and 16 bit.
  std::vector<uint16_t> la = {100, 0, 100, 255, 100, 128, 250, 64};
  DecodedImage gray_alpha = decode(test::png_raw(4, 1, 4, 8, la), options);
  for (int x = 0; x < 4; ++x) {
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(gray_alpha.pixels.at<cv::Vec3b>(0, x)[c],
                over(la[2 * static_cast<std::size_t>(x)], la[2 * static_cast<std::size_t>(x) + 1],
                     fill[c]));
    }
  }
  std::vector<uint16_t> la16;
  la16.reserve(la.size());
  for (uint16_t v : la) la16.push_back(static_cast<uint16_t>(v * 257));
  DecodedImage gray_alpha16 = decode(test::png_raw(4, 1, 4, 16, la16), options);
  EXPECT_LE(max_abs_diff(gray_alpha16.pixels, gray_alpha.pixels), 1);

  // Palette PNG with transparency (tRNS): entry 1 is half transparent.
  const std::string plte("\xff\x00\x00\x00\x00\xff\x20\x40\x60", 9);
  const std::string trns("\xff\x80\x00", 3);
  DecodedImage palette = decode(test::png_raw(3, 1, 3, 8, {0, 1, 2}, plte, trns), options);
  EXPECT_EQ(palette.pixels.at<cv::Vec3b>(0, 0), cv::Vec3b(255, 0, 0));
  EXPECT_EQ(palette.pixels.at<cv::Vec3b>(0, 1),
            cv::Vec3b(over(0, 128, fill[0]), over(0, 128, fill[1]), over(255, 128, fill[2])));
  EXPECT_EQ(palette.pixels.at<cv::Vec3b>(0, 2), cv::Vec3b(fill[0], fill[1], fill[2]));
  // Palette without transparency: plain expansion.
  DecodedImage opaque = decode(test::png_raw(3, 1, 3, 8, {2, 1, 0}, plte), options);
  EXPECT_EQ(opaque.pixels.at<cv::Vec3b>(0, 0), cv::Vec3b(0x20, 0x40, 0x60));
  EXPECT_EQ(opaque.pixels.at<cv::Vec3b>(0, 1), cv::Vec3b(0, 0, 255));

  // Gray output composites in colour, then converts.
  options.color = ColorMode::gray;
  DecodedImage gray = decode(encode_image(".png", rgba), options);
  ASSERT_EQ(gray.pixels.type(), CV_8UC1);
  const cv::Vec4b p = rgba.at<cv::Vec4b>(5, 5);
  const double luma = 0.299 * over(p[0], p[3], fill[0]) + 0.587 * over(p[1], p[3], fill[1]) +
                      0.114 * over(p[2], p[3], fill[2]);
  EXPECT_NEAR(gray.pixels.at<uint8_t>(5, 5), luma, 1.0);
}

TEST(DecodeTest, CmykAndYcckJpegDecodeToTheColoursOpenCvShows) {
  // Inks in Adobe's inverted convention (255 = no ink).
  cv::Mat cmyk(48, 64, CV_8UC4);
  cv::Mat photo = make_photo(64, 48, 2);
  for (int y = 0; y < 48; ++y) {
    for (int x = 0; x < 64; ++x) {
      const cv::Vec3b p = photo.at<cv::Vec3b>(y, x);
      cmyk.at<cv::Vec4b>(y, x) = cv::Vec4b(p[0], p[1], p[2], static_cast<uint8_t>(255 - x));
    }
  }
  const std::string ycck = test::cmyk_jpeg(cmyk, 100);
  DecodedImage image = decode(ycck);
  ASSERT_EQ(image.pixels.type(), CV_8UC3);
  // Exactly what OpenCV's decoder makes of the same file...
  EXPECT_LE(max_abs_diff(image.pixels, opencv_decode(ycck)), 0);
  // ...which is the CMYK -> RGB of the inks, within JPEG loss.
  EXPECT_LT(mean_abs_diff(image.pixels, test::cmyk_to_rgb_reference(cmyk)), 2.0);
  // Gray output of CMYK.
  DecodeOptions gray;
  gray.color = ColorMode::gray;
  EXPECT_LE(max_abs_diff(decode(ycck, gray).pixels, opencv_decode(ycck, true)), 1);
  // DCT-scaled CMYK.
  DecodeOptions scaled;
  scaled.min_width = 32;
  scaled.min_height = 24;
  DecodedImage half = decode(ycck, scaled);
  EXPECT_EQ(half.pixels.cols, 32);
  EXPECT_EQ(half.pixels.rows, 24);
  cv::Mat full_small;
  cv::resize(image.pixels, full_small, {32, 24}, 0, 0, cv::INTER_AREA);
  EXPECT_LT(mean_abs_diff(half.pixels, full_small), 2.0);
}

// A CMYK JPEG as an image editor writes it (Adobe marker, transform 0, inverted
// inks), made by PIL from an RGB picture: it must come back as that picture.
TEST(DecodeTest, PillowCmykJpegComesBackAsTheRgbPicture) {
  if (!test::python_has_modules({"PIL", "numpy"})) {
    GTEST_SKIP() << "no PIL under the tests' Python (" << test::system_python() << ")";
  }
  test::TempDir dir;
  const cv::Mat rgb = make_photo(64, 48, 3);
  test::write_image(dir / "source.png", rgb);
  const std::string script =
      "from PIL import Image; import sys; "
      "Image.open(sys.argv[1]).convert('CMYK').save(sys.argv[2], quality=100, subsampling=0)";
  test::CommandResult r =
      test::run_command(test::system_python() + " -c " + test::shell_quote(script) + " " +
                        test::shell_quote((dir / "source.png").string()) + " " +
                        test::shell_quote((dir / "cmyk.jpg").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string bytes = test::read_bytes(dir / "cmyk.jpg");
  std::optional<ImageInfo> info = probe_image(as_bytes(bytes));
  ASSERT_TRUE(info);
  ASSERT_TRUE(info->cmyk);
  DecodedImage image = decode(bytes);
  EXPECT_LE(max_abs_diff(image.pixels, opencv_decode(bytes)), 0);
  EXPECT_LT(mean_abs_diff(image.pixels, rgb), 2.5);
}

TEST(DecodeTest, ExifOrientationIsAppliedOnEveryPath) {
  const cv::Mat upright = make_photo(40, 24, 4);  // wider than tall, asymmetric
  cv::Mat cmyk_upright(24, 40, CV_8UC4);
  for (int y = 0; y < 24; ++y) {
    for (int x = 0; x < 40; ++x) {
      const cv::Vec3b& p = upright.at<cv::Vec3b>(y, x);
      cmyk_upright.at<cv::Vec4b>(y, x) = cv::Vec4b(p[0], p[1], p[2], 255);
    }
  }
  for (int o = 1; o <= 8; ++o) {
    SCOPED_TRACE("orientation " + std::to_string(o));
    const cv::Mat stored = test::store_for_orientation(upright, o);
    const cv::Mat stored_cmyk = test::store_for_orientation(cmyk_upright, o);
    const std::string jpeg =
        test::jpeg_with_exif(encode_image(".jpg", stored, {cv::IMWRITE_JPEG_QUALITY, 100}), o);
    const std::string png = test::png_with_exif(encode_image(".png", stored), o);
    struct Case {
      const char* name;
      std::string bytes;
      double mean_tolerance;
      bool opencv_orients;  // OpenCV's imdecode applies this orientation itself
    };
    const std::vector<Case> cases = {
        // 4:2:0 chroma on a noisy picture loses ~9 levels on average; a
        // wrong orientation loses far more (checked below).
        {"jpeg", jpeg, 12, true},
        {"cmyk jpeg", test::jpeg_with_exif(test::cmyk_jpeg(stored_cmyk, 100), o), 2.0, true},
        {"png", png, 0, true},
        {"webp",
         test::webp_with_exif(encode_image(".webp", stored, {cv::IMWRITE_WEBP_QUALITY, 101}),
                              stored.cols, stored.rows, o),
         0, false},
        {"tiff", test::tiff_rgb(stored, o), 0, true},
        {"bigtiff big-endian", test::tiff_rgb(stored, o, true, true), 0, true},
    };
    for (const Case& c : cases) {
      SCOPED_TRACE(c.name);
      DecodedImage image = decode(c.bytes);
      ASSERT_EQ(image.pixels.cols, 40);
      ASSERT_EQ(image.pixels.rows, 24);
      EXPECT_EQ(image.info.orientation, o);
      EXPECT_LE(mean_abs_diff(image.pixels, upright), c.mean_tolerance);
      if (c.opencv_orients) {
        EXPECT_LE(max_abs_diff(image.pixels, opencv_decode(c.bytes)), 1);
      }
    }
    if (o >= 2 && o <= 4) {
      EXPECT_GT(mean_abs_diff(stored, upright), 30.0);
    }
    // The DCT-scaled path orients too (its minimum is in upright terms).
    DecodeOptions scaled;
    scaled.min_width = 20;
    scaled.min_height = 12;
    DecodedImage half = decode(jpeg, scaled);
    EXPECT_EQ(half.pixels.cols, 20);
    EXPECT_EQ(half.pixels.rows, 12);
    cv::Mat expected;
    cv::resize(upright, expected, {20, 12}, 0, 0, cv::INTER_AREA);
    EXPECT_LT(mean_abs_diff(half.pixels, expected), 3.0);
  }
}

TEST(DecodeTest, DctScaledDecodeStaysCloseToFullDecodeAndResize) {
  const cv::Mat photo = make_photo(1024, 768, 5);
  const std::string jpeg = encode_image(".jpg", photo, {cv::IMWRITE_JPEG_QUALITY, 90});
  for (ResizeMode mode : {ResizeMode::crop, ResizeMode::pad, ResizeMode::stretch}) {
    for (ColorMode color : {ColorMode::rgb, ColorMode::gray}) {
      SCOPED_TRACE(static_cast<int>(mode) * 10 + static_cast<int>(color));
      ResizeSpec spec;
      spec.width = 224;
      spec.height = 224;
      spec.mode = mode;
      const cv::Size need = spec.required_source_size(1024, 768);
      DecodeOptions options;
      options.color = color;
      options.min_width = static_cast<uint32_t>(need.width);
      options.min_height = static_cast<uint32_t>(need.height);
      DecodedImage scaled = decode(jpeg, options);
      options.dct_scaling = false;
      DecodedImage full = decode(jpeg, options);
      ASSERT_EQ(full.pixels.cols, 1024);
      // The scaled decode is really smaller, and still big enough.
      EXPECT_LT(scaled.pixels.cols, 1024);
      EXPECT_GE(scaled.pixels.cols, need.width);
      EXPECT_GE(scaled.pixels.rows, need.height);
      const int channels = color == ColorMode::gray ? 1 : 3;
      cv::Mat a(224, 224, CV_8UC(channels)), b(224, 224, CV_8UC(channels));
      resize_into(scaled.pixels, spec, a.data);
      resize_into(full.pixels, spec, b.data);
      const double mad = mean_abs_diff(a, b);
      EXPECT_LT(mad, 2.0);
      EXPECT_GT(cv::PSNR(a, b), 33.0);
    }
  }
}

TEST(DecodeTest, ScaleIsTheSmallestOfTheSetThatCoversTheMinimum) {
  const std::string jpeg = encode_image(".jpg", make_photo(800, 600, 6));
  struct Expect {
    uint32_t min_w, min_h;
    int halvings, eighths;  // the decoded width with each set
  };
  for (const Expect& e : std::vector<Expect>{{0, 0, 800, 800},
                                             {800, 600, 800, 800},
                                             {400, 300, 400, 400},
                                             {401, 300, 800, 500},
                                             {300, 225, 400, 300},
                                             {301, 225, 400, 400},
                                             {200, 150, 200, 200},
                                             {201, 150, 400, 300},
                                             {100, 75, 100, 100},
                                             {99, 10, 100, 100},
                                             {90, 70, 100, 100},
                                             {1000, 10, 800, 800},
                                             // 7/8 and 3/4 are in neither (no faster than 1/1)
                                             {700, 525, 800, 800},
                                             {600, 450, 800, 800},
                                             {500, 375, 800, 500}}) {
    DecodeOptions options;
    options.min_width = e.min_w;
    options.min_height = e.min_h;
    EXPECT_EQ(decode(jpeg, options).pixels.cols, e.halvings) << e.min_w << "x" << e.min_h;
    options.dct_scales = DctScales::eighths;
    EXPECT_EQ(decode(jpeg, options).pixels.cols, e.eighths) << e.min_w << "x" << e.min_h;
  }
}

TEST(DecodeTest, DecompressionBombsAreRejectedFromTheHeader) {
  for (const char* kind : {"jpeg", "png", "bmp", "tiff", "bigtiff", "webp", "gif", "pnm", "pam"}) {
    SCOPED_TRACE(kind);
    DecodeOptions options;
    options.max_pixels = uint64_t{1} << 28;
    try {
      decode(test::bomb_header(kind, 60000, 60000), options);
      ADD_FAILURE() << "a 60000x60000 header was accepted";
    } catch (const DecodeError& e) {
      EXPECT_NE(std::string(e.what()).find("declares 60000x60000"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("ConvertOptions::max_pixels"), std::string::npos)
          << e.what();
    }
  }
  for (const char* kind : {"webp-vp8", "webp-vp8l"}) {
    DecodeOptions options;
    options.max_pixels = 1000000;
    EXPECT_THROW(decode(test::bomb_header(kind, 16000, 12000), options), DecodeError) << kind;
  }
}

// The pixel limit is checked against the header the caller probed; a JPEG
// whose frame is another size than that header said is refused before it is
// decoded, so no limit can be passed by a header the probe read otherwise.
TEST(DecodeTest, AJpegIsDecodedOnlyAsTheSizeItsProbedHeaderSaid) {
  const std::string jpeg = encode_image(".jpg", make_rgb_image(64, 48, 3));
  const std::optional<ImageInfo> probed = probe_image(as_bytes(jpeg));
  ASSERT_TRUE(probed);
  EXPECT_EQ(decode_image(as_bytes(jpeg), *probed, {}).pixels.size(), cv::Size(64, 48));
  ImageInfo stale = *probed;
  stale.width = 32;
  try {
    decode_image(as_bytes(jpeg), stale, {});
    ADD_FAILURE() << "a frame of another size than its probed header was decoded";
  } catch (const DecodeError& e) {
    EXPECT_NE(std::string(e.what()).find("frame headers disagree (32x48 and 64x48)"),
              std::string::npos)
        << e.what();
  }
}

// The same bombs in a child process whose address space is capped far below
// their declared size (60000 x 60000 x 3 = 10.8 GB): rejection must come
// without trying to allocate. The child first proves the cap is real.
TEST(DecodeTest, BombsAreRejectedUnderAnAddressSpaceCap) {
  if (test::kAddressSanitizer) GTEST_SKIP() << "an address-space cap cannot hold ASan's shadow";
  const int status = test::run_under_address_space_cap(uint64_t{512} << 20, [] {
    try {
      std::vector<uint8_t> huge(size_t{60000} * 60000 * 3);
      return 11;  // the cap does not hold: the test would prove nothing
    } catch (const std::bad_alloc&) {
    }
    for (const char* kind : {"jpeg", "png", "bmp", "tiff", "bigtiff", "webp", "gif", "pnm"}) {
      try {
        DecodeOptions options;
        options.max_pixels = uint64_t{1} << 28;
        decode(test::bomb_header(kind, 60000, 60000), options);
        return 12;
      } catch (const DecodeError& e) {
        if (std::string(e.what()).find("ConvertOptions::max_pixels") == std::string::npos)
          return 13;
      } catch (...) {
        return 14;
      }
    }
    return 0;
  });
  EXPECT_EQ(status, 0);
}

TEST(DecodeTest, BadInputsGiveReasons) {
  auto reason = [](const std::string& bytes) {
    try {
      decode(bytes);
    } catch (const DecodeError& e) {
      return std::string(e.what());
    }
    return std::string("(decoded)");
  };
  EXPECT_EQ(reason(""), "empty file");
  EXPECT_NE(reason("plain text, not an image").find("not an image"), std::string::npos);
  const std::string jpeg = encode_image(".jpg", make_photo(64, 48, 7));
  EXPECT_NE(reason(jpeg.substr(0, jpeg.size() / 2)).find("JPEG"), std::string::npos);
  EXPECT_NE(reason(jpeg.substr(0, 30)).find("corrupt or truncated JPEG header"), std::string::npos);
  const std::string png = encode_image(".png", make_photo(64, 48, 7));
  EXPECT_NE(reason(png.substr(0, 20)).find("corrupt or truncated PNG header"), std::string::npos);
  EXPECT_NE(reason(png.substr(0, png.size() / 2)).find("PNG"), std::string::npos);
  EXPECT_NE(reason(test::bomb_header("gif", 20, 10)).find("GIF"), std::string::npos);
  std::string webp = encode_image(".webp", make_photo(64, 48, 7));
  EXPECT_NE(reason(webp.substr(0, webp.size() / 2)).find("WebP"), std::string::npos);
}

TEST(DecodeTest, StrayBytesBetweenSegmentsAreHarmlessButLostDataIsNot) {
  const cv::Mat photo = make_photo(64, 48, 8);
  const std::string jpeg = encode_image(".jpg", photo);
  // Two junk bytes after the first segment (APP0): libjpeg warns about
  // "extraneous bytes before marker" and decodes the picture intact.
  ASSERT_EQ(static_cast<uint8_t>(jpeg[3]), 0xE0);
  const std::size_t app0_end =
      4 + (static_cast<uint8_t>(jpeg[4]) << 8 | static_cast<uint8_t>(jpeg[5]));
  const std::string stray =
      jpeg.substr(0, app0_end) + std::string("\x12\x34", 2) + jpeg.substr(app0_end);
  const cv::Mat clean = decode(jpeg).pixels;
  EXPECT_EQ(max_abs_diff(decode(stray).pixels, clean), 0);
  // Entropy-coded data cut short (the end-of-image marker kept) is real loss.
  const std::string cut = jpeg.substr(0, jpeg.size() * 2 / 3) + "\xFF\xD9";
  EXPECT_THROW(decode(cut), DecodeError);
}

// A JPEG cut short inside its header (a download that stopped at 400-900
// bytes), or with a damaged marker, must not leave the thread's decoder in a
// state that breaks the next file: every good JPEG decoded after one, on the
// same thread, equals its decode on a fresh thread, byte for byte.
TEST(DecodeTest, ACorruptJpegNeverCostsTheNextOne) {
  std::vector<std::string> good;
  for (uint64_t seed = 0; seed < 3; ++seed) {
    good.push_back(encode_image(".jpg", make_photo(160, 120, 20 + seed)));
  }
  good.push_back(encode_image(".jpg", make_photo(96, 64, 30), {cv::IMWRITE_JPEG_PROGRESSIVE, 1}));
  std::vector<cv::Mat> expected(good.size());
  DecodeOptions scaled;
  scaled.min_width = 40;
  scaled.min_height = 30;
  std::vector<cv::Mat> expected_scaled(good.size());
  std::thread([&] {
    for (std::size_t i = 0; i < good.size(); ++i) {
      expected[i] = decode(good[i]).pixels;
      expected_scaled[i] = decode(good[i], scaled).pixels;
    }
  }).join();

  std::vector<std::pair<std::string, std::string>> broken;  // name, bytes
  for (std::size_t cut = 400; cut <= 900; cut += 50) {
    broken.emplace_back("cut at " + std::to_string(cut), good[0].substr(0, cut));
  }
  for (std::size_t cut : {4u, 20u, 100u, 200u}) {
    broken.emplace_back("cut at " + std::to_string(cut), good[1].substr(0, cut));
  }
  broken.emplace_back("cut in the scan", good[2].substr(0, good[2].size() / 2));
  broken.emplace_back("progressive cut", good[3].substr(0, good[3].size() / 3));
  // Every marker of the header's first kilobyte replaced by an invalid one, in turn.
  for (std::size_t at = 2; at + 1 < 1024; ++at) {
    if (static_cast<uint8_t>(good[0][at]) != 0xFF) continue;
    std::string bad = good[0];
    bad[at + 1] = '\x01';
    broken.emplace_back("bad marker at " + std::to_string(at), bad);
  }
  ASSERT_GT(broken.size(), 20u);

  std::size_t refused = 0;
  for (const auto& [name, bytes] : broken) {
    SCOPED_TRACE(name);
    try {
      decode(bytes);
    } catch (const DecodeError&) {
      ++refused;
    }
    for (std::size_t i = 0; i < good.size(); ++i) {
      SCOPED_TRACE(i);
      try {
        EXPECT_EQ(max_abs_diff(decode(good[i]).pixels, expected[i]), 0);
        EXPECT_EQ(max_abs_diff(decode(good[i], scaled).pixels, expected_scaled[i]), 0);
      } catch (const DecodeError& e) {
        ADD_FAILURE() << "a good JPEG was refused: " << e.what();
      }
    }
  }
  EXPECT_GT(refused, broken.size() / 2);
}

}  // namespace
}  // namespace imgpack
