#include "image/resize.hpp"

#include <gtest/gtest.h>

#include <opencv2/imgproc.hpp>

#include "test_support.hpp"

namespace imgpack {
namespace {

cv::Mat run(const cv::Mat& src, ResizeSpec spec) {
  cv::Mat out(static_cast<int>(spec.height), static_cast<int>(spec.width), CV_8UC(src.channels()));
  resize_into(src, spec, out.data);
  return out;
}

TEST(Resize, StretchEqualsOpenCvAreaResize) {
  cv::Mat src = test::make_rgb_image(300, 200, 1);
  cv::Mat expected;
  cv::resize(src, expected, cv::Size(60, 50), 0, 0, cv::INTER_AREA);
  cv::Mat out = run(src, {60, 50, ResizeMode::stretch});
  EXPECT_EQ(cv::norm(out, expected, cv::NORM_INF), 0);
}

TEST(Resize, CropTakesTheCentreOfTheCoveringScale) {
  // 400x200 -> 100x100: scale to 200x100, keep the middle 100 columns, i.e. source x 100..300.
  cv::Mat src = test::make_rgb_image(400, 200, 2);
  cv::Mat expected;
  cv::resize(src(cv::Rect(100, 0, 200, 200)), expected, cv::Size(100, 100), 0, 0, cv::INTER_AREA);
  cv::Mat out = run(src, {100, 100, ResizeMode::crop});
  EXPECT_EQ(cv::norm(out, expected, cv::NORM_INF), 0);
}

TEST(Resize, PadLetterboxesWithTheFill) {
  cv::Mat src(100, 200, CV_8UC3, cv::Scalar(10, 20, 30));
  cv::Mat out = run(src, {100, 100, ResizeMode::pad, {200, 100, 50}});
  // The image occupies rows 25..74; above and below is fill.
  EXPECT_EQ(out.at<cv::Vec3b>(0, 50), cv::Vec3b(200, 100, 50));
  EXPECT_EQ(out.at<cv::Vec3b>(99, 50), cv::Vec3b(200, 100, 50));
  EXPECT_EQ(out.at<cv::Vec3b>(50, 50), cv::Vec3b(10, 20, 30));
  EXPECT_EQ(out.at<cv::Vec3b>(25, 0), cv::Vec3b(10, 20, 30));
  EXPECT_EQ(out.at<cv::Vec3b>(24, 0), cv::Vec3b(200, 100, 50));
}

TEST(Resize, UpscalingUsesBilinear) {
  cv::Mat src = test::make_rgb_image(20, 10, 3);
  cv::Mat expected;
  cv::resize(src, expected, cv::Size(40, 20), 0, 0, cv::INTER_LINEAR);
  EXPECT_EQ(cv::norm(run(src, {40, 20, ResizeMode::stretch}), expected, cv::NORM_INF), 0);
}

TEST(Resize, GrayImages) {
  cv::Mat rgb = test::make_rgb_image(50, 50, 4), gray;
  cv::cvtColor(rgb, gray, cv::COLOR_RGB2GRAY);
  cv::Mat out = run(gray, {25, 25, ResizeMode::pad, {255, 255, 255}});
  EXPECT_EQ(out.channels(), 1);
}

TEST(Resize, RequiredSourceSizeNeverUpsamples) {
  ResizeSpec crop{224, 224, ResizeMode::crop};
  EXPECT_EQ(crop.required_source_size(1024, 768), cv::Size(299, 224));
  ResizeSpec pad{224, 224, ResizeMode::pad};
  EXPECT_EQ(pad.required_source_size(1024, 768), cv::Size(224, 168));
  ResizeSpec stretch{100, 50, ResizeMode::stretch};
  EXPECT_EQ(stretch.required_source_size(1024, 768), cv::Size(100, 50));
}

}  // namespace
}  // namespace imgpack
