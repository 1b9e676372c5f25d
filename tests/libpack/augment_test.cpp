// Tests for libpack/src/augment.cpp: parameter sampling, the geometry of the
// one-warp render and the 8-bit colour operations, each on a synthetic image
// whose expected result follows from the maths. Long because every key of the
// augmentation spec has its own case; they share the helpers. (The spec's
// parsing: augment_spec_test.cpp.)
#include "augment.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <opencv2/imgproc.hpp>
#include <random>

#include "imgpack/error.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

ResizeSpec output_spec(int width, int height, ResizeMode mode = ResizeMode::stretch,
                       std::array<uint8_t, 3> fill = {0, 0, 0}) {
  ResizeSpec spec;
  spec.width = static_cast<uint32_t>(width);
  spec.height = static_cast<uint32_t>(height);
  spec.mode = mode;
  spec.fill = fill;
  return spec;
}

AugmentSpec spec_with_fill(FillMode fill) {
  AugmentSpec spec;
  spec.fill = fill;
  return spec;
}

cv::Mat render(const Augmenter& augmenter, const cv::Mat& source, const AugmentParams& params) {
  cv::Mat out(static_cast<int>(augmenter.output().height),
              static_cast<int>(augmenter.output().width), source.type());
  augmenter.render(source, params, out.data);
  return out;
}

int count_different(const cv::Mat& a, const cv::Mat& b) {
  cv::Mat diff;
  cv::absdiff(a, b, diff);
  return cv::countNonZero(diff.reshape(1));
}

// Intensity-weighted centroid of a single-channel image.
cv::Point2d centroid(const cv::Mat& gray) {
  cv::Moments m = cv::moments(gray);
  return {m.m10 / m.m00, m.m01 / m.m00};
}

// Sub-pixel size of the bright object in a single-channel image: its mass
// along the row and the column through its centroid.
cv::Size2d object_size(const cv::Mat& gray) {
  const cv::Point2d c = centroid(gray);
  const int row = static_cast<int>(std::lround(c.y)), column = static_cast<int>(std::lround(c.x));
  return {cv::sum(gray.row(row))[0] / 255, cv::sum(gray.col(column))[0] / 255};
}

// A mid-range random RGB image, so scaling does not clip.
cv::Mat mid_range_image(int width, int height, int lo, int hi, uint64_t seed) {
  cv::Mat image(height, width, CV_8UC3);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> value(lo, hi);
  for (auto it = image.begin<cv::Vec3b>(); it != image.end<cv::Vec3b>(); ++it) {
    *it = cv::Vec3b(static_cast<uint8_t>(value(rng)), static_cast<uint8_t>(value(rng)),
                    static_cast<uint8_t>(value(rng)));
  }
  return image;
}

double gray_mean(const cv::Mat& rgb) {
  cv::Scalar m = cv::mean(rgb);
  return 0.299 * m[0] + 0.587 * m[1] + 0.114 * m[2];
}

// ------------------------------------------------------------------ sampling

TEST(AugmenterSampleTest, SameKeySameParametersAndEveryVariantDiffers) {
  Augmenter augmenter(parse_augment_spec("rotate=30,zoom=0.5:2,brightness=0.5"),
                      output_spec(64, 64), 7);
  const cv::Size source(200, 100);
  AugmentParams a = augmenter.sample(11, 1, source);
  AugmentParams b = augmenter.sample(11, 1, source);
  EXPECT_EQ(a.rotate, b.rotate);
  EXPECT_EQ(a.zoom, b.zoom);
  EXPECT_EQ(a.brightness, b.brightness);
  EXPECT_NE(augmenter.sample(11, 2, source).rotate, a.rotate);
  EXPECT_NE(augmenter.sample(12, 1, source).rotate, a.rotate);
  Augmenter other_seed(parse_augment_spec("rotate=30"), output_spec(64, 64), 8);
  EXPECT_NE(other_seed.sample(11, 1, source).rotate, a.rotate);
}

TEST(AugmenterSampleTest, AddingKeysLeavesOtherDrawsUnchanged) {
  Augmenter few(parse_augment_spec("rotate=10"), output_spec(64, 64), 3);
  Augmenter many(parse_augment_spec("hflip,rotate=10,zoom=0.9:1.1,brightness=0.2,crop_scale=0.5:1"),
                 output_spec(64, 64), 3);
  for (uint32_t v = 1; v < 20; ++v) {
    EXPECT_EQ(few.sample(99, v, {80, 60}).rotate, many.sample(99, v, {80, 60}).rotate);
  }
}

TEST(AugmenterSampleTest, ParametersStayInsideTheSpecAndCoverIt) {
  Augmenter augmenter(
      parse_augment_spec("hflip,vflip=0.2,rotate=20,shift=0.1,zoom=0.8:1.25,shear=5,"
                         "aspect=0.75:1.33,brightness=0.3,contrast=0.2,saturation=0.4,"
                         "hue=0.1,gray=0.25"),
      output_spec(64, 64), 1);
  double min_rotate = 1e9, max_rotate = -1e9, min_zoom = 1e9, max_zoom = 0;
  int hflips = 0, vflips = 0, grays = 0;
  const int n = 2000;
  for (int i = 0; i < n; ++i) {
    AugmentParams p = augmenter.sample(static_cast<uint64_t>(i), 1, {64, 64});
    ASSERT_LE(std::abs(p.rotate), 20);
    ASSERT_LE(std::abs(p.shift_x), 0.1);
    ASSERT_LE(std::abs(p.shift_y), 0.1);
    ASSERT_GE(p.zoom, 0.8);
    ASSERT_LE(p.zoom, 1.25);
    ASSERT_LE(std::abs(p.shear), 5);
    ASSERT_GE(p.aspect, 0.75);
    ASSERT_LE(p.aspect, 1.33);
    ASSERT_GE(p.brightness, 0.7);
    ASSERT_LE(p.brightness, 1.3);
    ASSERT_GE(p.contrast, 0.8);
    ASSERT_LE(p.contrast, 1.2);
    ASSERT_GE(p.saturation, 0.6);
    ASSERT_LE(p.saturation, 1.4);
    ASSERT_LE(std::abs(p.hue), 0.1);
    ASSERT_FALSE(p.crop);
    min_rotate = std::min(min_rotate, p.rotate);
    max_rotate = std::max(max_rotate, p.rotate);
    min_zoom = std::min(min_zoom, p.zoom);
    max_zoom = std::max(max_zoom, p.zoom);
    hflips += p.hflip;
    vflips += p.vflip;
    grays += p.gray;
  }
  EXPECT_LT(min_rotate, -18);
  EXPECT_GT(max_rotate, 18);
  EXPECT_LT(min_zoom, 0.82);
  EXPECT_GT(max_zoom, 1.22);
  EXPECT_NEAR(hflips, n * 0.5, n * 0.05);
  EXPECT_NEAR(vflips, n * 0.2, n * 0.05);
  EXPECT_NEAR(grays, n * 0.25, n * 0.05);
}

TEST(AugmenterSampleTest, DefaultSpecSamplesTheIdentity) {
  Augmenter augmenter(AugmentSpec{}, output_spec(32, 32), 5);
  AugmentParams p = augmenter.sample(1, 1, {32, 32});
  EXPECT_FALSE(p.hflip || p.vflip || p.crop || p.gray);
  EXPECT_EQ(p.zoom, 1);
  EXPECT_EQ(p.aspect, 1);
  EXPECT_EQ(p.brightness, 1);
  EXPECT_EQ(p.rotate, 0);
  cv::Mat source = test::make_rgb_image(32, 32, 1);
  EXPECT_EQ(count_different(render(augmenter, source, p), source), 0);
}

// ------------------------------------------------------------------ geometry

TEST(AugmentGeometryTest, FlipsMirrorExactly) {
  cv::Mat source = test::make_rgb_image(64, 48, 3);
  for (ResizeMode mode : {ResizeMode::stretch, ResizeMode::crop, ResizeMode::pad}) {
    Augmenter augmenter(AugmentSpec{}, output_spec(64, 48, mode), 0);
    AugmentParams p;
    p.hflip = true;
    cv::Mat expected;
    cv::flip(source, expected, 1);
    EXPECT_EQ(count_different(render(augmenter, source, p), expected), 0);
    p.hflip = false;
    p.vflip = true;
    cv::flip(source, expected, 0);
    EXPECT_EQ(count_different(render(augmenter, source, p), expected), 0);
    p.hflip = true;
    cv::flip(source, expected, -1);
    EXPECT_EQ(count_different(render(augmenter, source, p), expected), 0);
  }
}

// A black image with a bright 5x5 marker centred on pixel (x, y).
cv::Mat marker_image(int width, int height, int x, int y) {
  cv::Mat image(height, width, CV_8UC3, cv::Scalar(0, 0, 0));
  cv::rectangle(image, cv::Rect(x - 2, y - 2, 5, 5), cv::Scalar(255, 255, 255), cv::FILLED);
  return image;
}

cv::Point2d marker_position(const cv::Mat& rgb) {
  cv::Mat gray;
  cv::cvtColor(rgb, gray, cv::COLOR_RGB2GRAY);
  return centroid(gray);
}

TEST(AugmentGeometryTest, RotationMovesAMarkedPointWhereTheMathsPutsIt) {
  // 101x101: the centre of rotation is the centre of pixel (50, 50).
  cv::Mat source = marker_image(101, 101, 70, 30);
  Augmenter augmenter(spec_with_fill(FillMode::constant), output_spec(101, 101), 0);
  for (double degrees : {30.0, -45.0, 90.0, 137.0}) {
    AugmentParams p;
    p.rotate = degrees;
    cv::Point2d got = marker_position(render(augmenter, source, p));
    // Counter-clockwise on screen with y pointing down.
    const double t = degrees * std::numbers::pi / 180, dx = 20, dy = -20;
    const double x = 50 + std::cos(t) * dx + std::sin(t) * dy;
    const double y = 50 - std::sin(t) * dx + std::cos(t) * dy;
    EXPECT_NEAR(got.x, x, 0.3) << degrees;
    EXPECT_NEAR(got.y, y, 0.3) << degrees;
  }
  // 90 degrees counter-clockwise: the upper-right marker ends up upper-left.
  AugmentParams quarter;
  quarter.rotate = 90;
  cv::Point2d got = marker_position(render(augmenter, source, quarter));
  EXPECT_NEAR(got.x, 30, 0.3);
  EXPECT_NEAR(got.y, 30, 0.3);
}

TEST(AugmentGeometryTest, ShiftAndZoomMoveAMarkedPointAsSpecified) {
  cv::Mat source = marker_image(101, 101, 70, 40);
  Augmenter augmenter(spec_with_fill(FillMode::constant), output_spec(101, 101), 0);
  AugmentParams shift;
  shift.shift_x = 0.1;
  shift.shift_y = -0.2;
  cv::Point2d got = marker_position(render(augmenter, source, shift));
  EXPECT_NEAR(got.x, 70 + 10.1, 0.3);
  EXPECT_NEAR(got.y, 40 - 20.2, 0.3);
  AugmentParams zoom;
  zoom.zoom = 1.5;  // distances from the centre grow by half
  got = marker_position(render(augmenter, source, zoom));
  EXPECT_NEAR(got.x, 50 + 1.5 * 20, 0.3);
  EXPECT_NEAR(got.y, 50 - 1.5 * 10, 0.3);
}

TEST(AugmentGeometryTest, ShearSlantsVerticalLines) {
  // A vertical line through the centre; a shear of 20 degrees moves a point
  // at height dy by tan(20) * dy horizontally.
  cv::Mat source(101, 101, CV_8UC3, cv::Scalar(0, 0, 0));
  cv::line(source, {50, 0}, {50, 100}, cv::Scalar(255, 255, 255), 1);
  Augmenter augmenter(spec_with_fill(FillMode::constant), output_spec(101, 101), 0);
  AugmentParams p;
  p.shear = 20;
  cv::Mat out = render(augmenter, source, p);
  cv::Mat gray;
  cv::cvtColor(out, gray, cv::COLOR_RGB2GRAY);
  for (int y : {10, 30, 70, 90}) {
    cv::Point2d row = centroid(gray.row(y));
    EXPECT_NEAR(row.x, 50 + std::tan(20 * std::numbers::pi / 180) * (y - 50), 0.3) << y;
  }
}

TEST(AugmentGeometryTest, ZoomKeepsObjectScaleInsideTheRange) {
  // A 40-pixel square in the centre; each variant shows it at p.zoom times.
  cv::Mat source(128, 128, CV_8UC1, cv::Scalar(0));
  cv::rectangle(source, cv::Rect(44, 44, 40, 40), cv::Scalar(255), cv::FILLED);
  AugmentSpec spec = parse_augment_spec("zoom=0.8:1.2,fill=constant");
  Augmenter augmenter(spec, output_spec(128, 128), 21);
  double smallest = 1e9, largest = 0;
  for (uint32_t v = 1; v <= 40; ++v) {
    AugmentParams p = augmenter.sample(5, v, source.size());
    cv::Size2d size = object_size(render(augmenter, source, p));
    const double scale = size.width / 40.0;
    EXPECT_NEAR(size.width, 40 * p.zoom, 0.3);
    EXPECT_NEAR(size.height, 40 * p.zoom, 0.3);
    EXPECT_GE(scale, 0.8 - 0.01);
    EXPECT_LE(scale, 1.2 + 0.01);
    smallest = std::min(smallest, scale);
    largest = std::max(largest, scale);
  }
  EXPECT_LT(smallest, 0.9);
  EXPECT_GT(largest, 1.1);
}

TEST(AugmentGeometryTest, CropScaleKeepsObjectScaleInsideTheRange) {
  // Output 100x100 from a 200x200 source: the clean framing halves, a crop of
  // area fraction a shows objects at 0.5 / sqrt(a) of their size. A 40-pixel
  // square drawn at the crop's centre must land in the output's centre at
  // that scale, between 0.5/sqrt(0.64) and 0.5/sqrt(0.25).
  Augmenter augmenter(parse_augment_spec("crop_scale=0.25:0.64"), output_spec(100, 100), 4);
  const cv::Size size(200, 200);
  for (uint32_t v = 1; v <= 30; ++v) {
    AugmentParams p = augmenter.sample(17, v, size);
    ASSERT_TRUE(p.crop);
    const double area = p.crop_w * p.crop_h;
    EXPECT_GE(area, 0.25 - 1e-9);
    EXPECT_LE(area, 0.64 + 1e-9);
    EXPECT_NEAR(p.crop_w, p.crop_h, 1e-9);  // aspect 1 by default
    cv::Mat source(size, CV_8UC1, cv::Scalar(0));
    const cv::Point centre(static_cast<int>(p.crop_cx * 200), static_cast<int>(p.crop_cy * 200));
    cv::rectangle(source, cv::Rect(centre.x - 20, centre.y - 20, 40, 40), cv::Scalar(255),
                  cv::FILLED);
    cv::Mat out = render(augmenter, source, p);
    cv::Size2d shown = object_size(out);
    const double scale = shown.width / 40.0;
    EXPECT_NEAR(shown.width, 40 * 0.5 / std::sqrt(area), 0.6);
    EXPECT_NEAR(shown.height, 40 * 0.5 / std::sqrt(area), 0.6);
    EXPECT_GE(scale, 0.5 / std::sqrt(0.64) - 0.015);
    EXPECT_LE(scale, 0.5 / std::sqrt(0.25) + 0.015);
    // The crop's centre lands on the output's centre (49.5 in pixel indices);
    // the square sits where it was drawn relative to it.
    const double m = 0.5 / std::sqrt(area);
    cv::Point2d c = centroid(out);
    EXPECT_NEAR(c.x, 49.5 + (centre.x - p.crop_cx * 200) * m, 0.3);
    EXPECT_NEAR(c.y, 49.5 + (centre.y - p.crop_cy * 200) * m, 0.3);
  }
}

TEST(AugmentGeometryTest, CropAspectStretchesObjectsInsideTheRange) {
  // A wider crop (aspect r > 1) squeezes objects horizontally by r.
  Augmenter augmenter(parse_augment_spec("crop_scale=0.3:0.3,aspect=0.5:2"), output_spec(100, 100),
                      9);
  const cv::Size size(300, 300);
  double smallest = 1e9, largest = 0;
  for (uint32_t v = 1; v <= 30; ++v) {
    AugmentParams p = augmenter.sample(2, v, size);
    const double ratio = p.crop_w / p.crop_h;
    EXPECT_GE(ratio, 0.5 - 1e-9);
    EXPECT_LE(ratio, 2 + 1e-9);
    cv::Mat source(size, CV_8UC1, cv::Scalar(0));
    const cv::Point centre(static_cast<int>(p.crop_cx * 300), static_cast<int>(p.crop_cy * 300));
    cv::rectangle(source, cv::Rect(centre.x - 30, centre.y - 30, 60, 60), cv::Scalar(255),
                  cv::FILLED);
    cv::Size2d shown = object_size(render(augmenter, source, p));
    EXPECT_NEAR(shown.height / shown.width, ratio, 0.03 * ratio);
    smallest = std::min(smallest, ratio);
    largest = std::max(largest, ratio);
  }
  EXPECT_LT(smallest, 0.7);
  EXPECT_GT(largest, 1.4);
}

TEST(AugmentGeometryTest, FillModesDecideWhatAppearsOutsideTheSource) {
  cv::Mat source = test::make_rgb_image(64, 32, 8);
  AugmentParams p;
  p.shift_x = 0.5;  // 32 pixels right: output column x shows source column x - 32
  Augmenter reflect(spec_with_fill(FillMode::reflect), output_spec(64, 32), 0);
  Augmenter edge(spec_with_fill(FillMode::edge), output_spec(64, 32), 0);
  Augmenter constant(spec_with_fill(FillMode::constant),
                     output_spec(64, 32, ResizeMode::stretch, {10, 20, 30}), 0);
  cv::Mat r = render(reflect, source, p), e = render(edge, source, p),
          c = render(constant, source, p);
  for (int y = 0; y < 32; y += 7) {
    for (int x = 0; x < 32; x += 5) {
      EXPECT_EQ(r.at<cv::Vec3b>(y, x), source.at<cv::Vec3b>(y, 32 - x)) << x << "," << y;
      EXPECT_EQ(e.at<cv::Vec3b>(y, x), source.at<cv::Vec3b>(y, 0));
      EXPECT_EQ(c.at<cv::Vec3b>(y, x), cv::Vec3b(10, 20, 30));
    }
    for (int x = 32; x < 64; x += 5) {
      EXPECT_EQ(r.at<cv::Vec3b>(y, x), source.at<cv::Vec3b>(y, x - 32));
      EXPECT_EQ(c.at<cv::Vec3b>(y, x), source.at<cv::Vec3b>(y, x - 32));
    }
  }
}

TEST(AugmentGeometryTest, RequiredSourceSizeCoversTheLargestZoom) {
  // Crop framing of 1000x800 into 100x100 shows 800x800 at 1/8; zoom 2
  // needs a quarter of the source, zoom 10 more than all of it.
  Augmenter augmenter(AugmentSpec{}, output_spec(100, 100, ResizeMode::crop), 0);
  AugmentParams small, large, huge;
  small.zoom = 1;
  large.zoom = 2;
  huge.zoom = 10;
  const cv::Size full(1000, 800);
  std::vector<AugmentParams> variants = {small, large};
  EXPECT_EQ(augmenter.required_source_size(variants, full), cv::Size(250, 200));
  variants.push_back(huge);
  EXPECT_EQ(augmenter.required_source_size(variants, full), full);
  // A rotation by 45 degrees of the same framing needs no more pixels.
  AugmentParams rotated;
  rotated.rotate = 45;
  EXPECT_EQ(augmenter.required_source_size(std::vector{rotated}, full), cv::Size(125, 100));
}

TEST(AugmentGeometryTest, MuchLargerSourcesAreAreaReducedOnceBeforeTheWarp) {
  // A 1-pixel checkerboard averages to mid-gray; a bilinear warp from 8x the
  // needed size would alias it into a pattern.
  cv::Mat source(800, 800, CV_8UC1);
  for (int y = 0; y < 800; ++y) {
    for (int x = 0; x < 800; ++x) source.at<uint8_t>(y, x) = ((x + y) % 2) ? 255 : 0;
  }
  Augmenter augmenter(AugmentSpec{}, output_spec(100, 100), 0);
  AugmentParams p;
  p.rotate = 10;
  std::vector<AugmentParams> variants = {p};
  cv::Mat scratch;
  const cv::Mat& reduced = augmenter.reduce_source(source, variants, scratch);
  EXPECT_EQ(reduced.size(), cv::Size(100, 100));
  cv::Mat out(100, 100, CV_8UC1);
  augmenter.render(reduced, p, out.data);
  cv::Scalar mean, spread;
  cv::meanStdDev(out(cv::Rect(20, 20, 60, 60)), mean, spread);
  EXPECT_NEAR(mean[0], 127.5, 3);
  EXPECT_LT(spread[0], 3);
  // Close enough already: left as it is.
  cv::Mat small(150, 150, CV_8UC1, cv::Scalar(9));
  EXPECT_EQ(augmenter.reduce_source(small, variants, scratch).data, small.data);
}

// ------------------------------------------------------------------ colour

TEST(AugmentColorTest, BrightnessScalesTheMean) {
  const cv::Mat source = mid_range_image(64, 64, 60, 160, 1);
  for (double factor : {0.6, 1.3, 1.5}) {
    cv::Mat image = source.clone();
    AugmentParams p;
    p.brightness = factor;
    apply_color(p, image);
    EXPECT_NEAR(gray_mean(image) / gray_mean(source), factor, 0.005) << factor;
  }
}

TEST(AugmentColorTest, ContrastScalesTheSpreadAboutTheMeanGray) {
  const cv::Mat source = mid_range_image(64, 64, 90, 160, 2);
  cv::Scalar source_mean, source_spread;
  cv::meanStdDev(source, source_mean, source_spread);
  for (double factor : {0.5, 1.5}) {
    cv::Mat image = source.clone();
    AugmentParams p;
    p.contrast = factor;
    apply_color(p, image);
    cv::Scalar mean, spread;
    cv::meanStdDev(image, mean, spread);
    for (int c = 0; c < 3; ++c) {
      EXPECT_NEAR(spread[c] / source_spread[c], factor, 0.02) << factor;
    }
    EXPECT_NEAR(gray_mean(image), gray_mean(source), 0.6) << factor;
  }
}

TEST(AugmentColorTest, SampledBrightnessAndContrastMoveMeanAndSpreadAsDrawn) {
  const cv::Mat source = mid_range_image(48, 48, 100, 150, 3);
  Augmenter augmenter(parse_augment_spec("brightness=0.4"), output_spec(48, 48), 6);
  Augmenter contrast(parse_augment_spec("contrast=0.5"), output_spec(48, 48), 6);
  cv::Scalar source_mean, source_spread;
  cv::meanStdDev(source, source_mean, source_spread);
  for (uint32_t v = 1; v <= 10; ++v) {
    AugmentParams p = augmenter.sample(3, v, source.size());
    const double ratio = gray_mean(render(augmenter, source, p)) / gray_mean(source);
    EXPECT_NEAR(ratio, p.brightness, 0.006);
    EXPECT_GE(ratio, 0.6 - 0.006);
    EXPECT_LE(ratio, 1.4 + 0.006);
    AugmentParams q = contrast.sample(3, v, source.size());
    cv::Scalar mean, spread;
    cv::meanStdDev(render(contrast, source, q), mean, spread);
    EXPECT_NEAR(spread[1] / source_spread[1], q.contrast, 0.03);
  }
}

TEST(AugmentColorTest, GrayAndZeroSaturationGiveEqualChannels) {
  cv::Mat source = test::make_rgb_image(32, 32, 4);
  cv::Mat gray = source.clone();
  AugmentParams p;
  p.gray = true;
  apply_color(p, gray);
  cv::Mat reference;
  cv::cvtColor(source, reference, cv::COLOR_RGB2GRAY);
  for (int y = 0; y < 32; ++y) {
    for (int x = 0; x < 32; ++x) {
      cv::Vec3b px = gray.at<cv::Vec3b>(y, x);
      ASSERT_EQ(px[0], px[1]);
      ASSERT_EQ(px[1], px[2]);
      ASSERT_NEAR(px[0], reference.at<uint8_t>(y, x), 1);
    }
  }
  cv::Mat desaturated = source.clone();
  AugmentParams q;
  q.saturation = 0;
  apply_color(q, desaturated);
  EXPECT_EQ(count_different(desaturated, gray), 0);
  // Saturation 2 doubles each channel's distance from the pixel's gray.
  cv::Mat vivid(1, 1, CV_8UC3, cv::Scalar(120, 100, 80));
  AugmentParams r;
  r.saturation = 2;
  apply_color(r, vivid);
  const int luma = static_cast<int>(std::lround(0.299 * 120 + 0.587 * 100 + 0.114 * 80));
  EXPECT_EQ(vivid.at<cv::Vec3b>(0, 0), cv::Vec3b(static_cast<uint8_t>(luma + 2 * (120 - luma)),
                                                 static_cast<uint8_t>(luma + 2 * (100 - luma)),
                                                 static_cast<uint8_t>(luma + 2 * (80 - luma))));
}

TEST(AugmentColorTest, HueTurnsAroundTheColourCircle) {
  auto shifted = [](cv::Vec3b rgb, double turns) {
    cv::Mat px(1, 1, CV_8UC3, cv::Scalar(rgb[0], rgb[1], rgb[2]));
    AugmentParams p;
    p.hue = turns;
    apply_color(p, px);
    return px.at<cv::Vec3b>(0, 0);
  };
  EXPECT_EQ(shifted({255, 0, 0}, 1.0 / 3), cv::Vec3b(0, 255, 0));
  EXPECT_EQ(shifted({255, 0, 0}, -1.0 / 3), cv::Vec3b(0, 0, 255));
  EXPECT_EQ(shifted({255, 0, 0}, 1.0 / 6), cv::Vec3b(255, 255, 0));
  EXPECT_EQ(shifted({200, 100, 50}, 0.5), cv::Vec3b(50, 150, 200));
  EXPECT_EQ(shifted({90, 90, 90}, 0.3), cv::Vec3b(90, 90, 90));
  // HSV value and saturation stay; OpenCV's own HSV agrees on the new hue.
  cv::Mat image = test::make_rgb_image(32, 32, 5), turned = image.clone();
  AugmentParams p;
  p.hue = 0.125;
  apply_color(p, turned);
  cv::Mat hsv_before, hsv_after;
  cv::cvtColor(image, hsv_before, cv::COLOR_RGB2HSV_FULL);
  cv::cvtColor(turned, hsv_after, cv::COLOR_RGB2HSV_FULL);
  for (int y = 0; y < 32; ++y) {
    for (int x = 0; x < 32; ++x) {
      cv::Vec3b a = image.at<cv::Vec3b>(y, x), b = turned.at<cv::Vec3b>(y, x);
      ASSERT_EQ(std::max({a[0], a[1], a[2]}), std::max({b[0], b[1], b[2]}));
      ASSERT_EQ(std::min({a[0], a[1], a[2]}), std::min({b[0], b[1], b[2]}));
      if (std::max({a[0], a[1], a[2]}) - std::min({a[0], a[1], a[2]}) < 40) continue;
      const int dh =
          (hsv_after.at<cv::Vec3b>(y, x)[0] - hsv_before.at<cv::Vec3b>(y, x)[0] + 256) % 256;
      ASSERT_NEAR(dh, 32, 3) << x << "," << y;  // 0.125 turns of 256
    }
  }
}

TEST(AugmentColorTest, GrayImagesTakeBrightnessAndContrastOnly) {
  cv::Mat image(16, 16, CV_8UC1, cv::Scalar(100));
  AugmentParams p;
  p.brightness = 1.5;
  p.saturation = 0;
  p.hue = 0.2;
  p.gray = true;
  apply_color(p, image);
  EXPECT_EQ(cv::countNonZero(image != 150), 0);
}

}  // namespace
}  // namespace imgpack
