// resize_area() against cv::resize(..., INTER_AREA): the same bytes for every
// size pair, channel count and source layout (a window of a larger image),
// with each of its kernels, so that datasets converted before and after it,
// and on CPUs with and without AVX2, are byte-identical. Should
// a new OpenCV change its arithmetic, this test says so.
#include <gtest/gtest.h>

#include <opencv2/imgproc.hpp>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "image/resize.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

cv::Mat noise(int width, int height, int type, std::mt19937& rng) {
  cv::Mat image(height, width, type);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int y = 0; y < image.rows; ++y) {
    uint8_t* row = image.ptr<uint8_t>(y);
    for (int x = 0; x < image.cols * image.channels(); ++x)
      row[x] = static_cast<uint8_t>(byte(rng));
  }
  return image;
}

// The first difference between resize_area() and cv::resize, or "", for each
// of the kernels resize_area() may run (on a CPU without AVX2 `best` is the
// portable code again).
std::string compare(const cv::Mat& src, cv::Size to) {
  cv::Mat expected;
  cv::resize(src, expected, to, 0, 0, cv::INTER_AREA);
  for (const auto& [kernels, name] :
       {std::pair{AreaKernels::best, "best"}, std::pair{AreaKernels::portable, "portable"}}) {
    cv::Mat out(to, src.type());
    resize_area(src, out, kernels);
    cv::Mat diff;
    cv::absdiff(out.reshape(1), expected.reshape(1), diff);
    cv::Point where;
    double worst = 0;
    cv::minMaxLoc(diff, nullptr, &worst, nullptr, &where);
    if (worst == 0) continue;
    return std::string(name) + " " + std::to_string(src.cols) + "x" + std::to_string(src.rows) +
           "x" + std::to_string(src.channels()) + " -> " + std::to_string(to.width) + "x" +
           std::to_string(to.height) + ": differs by " + std::to_string(worst) + " at value (" +
           std::to_string(where.x) + ", " + std::to_string(where.y) + ")";
  }
  return "";
}

TEST(AreaResize, TheBytesOfOpenCvsAreaResizeForRandomSizes) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> side(1, 420);
  // 300 size pairs; 60 under a sanitizer (test::sweep_step).
  const int pairs = static_cast<int>(300 / test::sweep_step(5));
  int compared = 0;
  for (int i = 0; i < pairs; ++i) {
    const int sw = side(rng), sh = side(rng);
    const int dw = std::uniform_int_distribution<int>(1, sw)(rng);
    const int dh = std::uniform_int_distribution<int>(1, sh)(rng);
    for (const int type : {CV_8UC1, CV_8UC3}) {
      const cv::Mat src = noise(sw, sh, type, rng);
      ASSERT_EQ(compare(src, {dw, dh}), "");
      ++compared;
    }
  }
  EXPECT_EQ(compared, 2 * pairs);
}

// The shrinks a conversion makes: a DCT-scaled decode (or its centre window)
// to a square output, an augmented source reduced, one axis unchanged, ratios
// just off an integer, and sources of one row or column.
TEST(AreaResize, TheBytesOfOpenCvsAreaResizeForTheConversionsShrinks) {
  std::mt19937 rng(11);
  const std::vector<std::pair<cv::Size, cv::Size>> cases = {
      {{288, 288}, {224, 224}},   {{384, 288}, {224, 224}},  {{313, 235}, {224, 224}},
      {{235, 235}, {224, 224}},   {{1024, 768}, {454, 341}}, {{640, 480}, {224, 168}},
      {{224, 300}, {224, 224}},   {{300, 224}, {224, 224}},  {{201, 100}, {100, 50}},
      {{199, 100}, {100, 50}},    {{1000, 1}, {7, 1}},       {{1, 1000}, {1, 3}},
      {{4000, 3000}, {224, 224}}, {{97, 89}, {1, 1}},        {{97, 89}, {96, 88}}};
  // Every third case under a sanitizer (test::sweep_step).
  for (std::size_t i = 0; i < cases.size(); i += test::sweep_step(3)) {
    const auto& [from, to] = cases[i];
    for (const int type : {CV_8UC1, CV_8UC3}) {
      EXPECT_EQ(compare(noise(from.width, from.height, type, rng), to), "");
    }
  }
}

TEST(AreaResize, WindowsOfALargerImageAndSaturatedValues) {
  std::mt19937 rng(3);
  const cv::Mat large = noise(500, 400, CV_8UC3, rng);
  EXPECT_EQ(compare(large(cv::Rect(37, 11, 313, 235)), {224, 224}), "");
  EXPECT_EQ(compare(large(cv::Rect(0, 0, 499, 1)), {100, 1}), "");
  // All 255: sums of weights that add to a hair over 1 must still give 255.
  for (const int type : {CV_8UC1, CV_8UC3}) {
    const cv::Mat white(301, 299, type, cv::Scalar::all(255));
    const cv::Mat black(301, 299, type, cv::Scalar::all(0));
    for (const cv::Size to : {cv::Size(224, 224), cv::Size(100, 37), cv::Size(298, 300)}) {
      EXPECT_EQ(compare(white, to), "");
      EXPECT_EQ(compare(black, to), "");
    }
  }
}

// What it leaves to cv::resize gives cv::resize's bytes too: integer ratios,
// the same size, growing, other types.
TEST(AreaResize, WhatItLeavesToOpenCvIsOpenCvs) {
  std::mt19937 rng(5);
  EXPECT_EQ(compare(noise(448, 448, CV_8UC3, rng), {224, 224}), "");
  EXPECT_EQ(compare(noise(300, 200, CV_8UC3, rng), {100, 100}), "");
  EXPECT_EQ(compare(noise(224, 224, CV_8UC3, rng), {224, 224}), "");
  EXPECT_EQ(compare(noise(100, 100, CV_8UC1, rng), {150, 80}), "");
  EXPECT_EQ(compare(noise(90, 70, CV_8UC4, rng), {40, 30}), "");
}

}  // namespace
}  // namespace imgpack
