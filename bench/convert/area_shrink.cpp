// The area shrink a conversion makes for each record, timed on one thread:
// resize_area() with the widest kernels this CPU has ("best": AVX2 where
// present), with the portable ones, and cv::resize(INTER_AREA), whose bytes
// both must give (checked before timing). Alternated rounds; prints
// microseconds per shrink (median, min, max over the rounds) and the ratios
// to cv::resize, as JSON lines.
//
// usage: imgpack_area_shrink [--rounds N]
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "image/resize.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Case {
  const char* what;
  cv::Size from;
  cv::Size to;
  int type;
};

// A photo-like source: smooth noise, so no value repeats in a pattern.
cv::Mat source(cv::Size size, int type) {
  cv::Mat image(size, type);
  cv::randu(image, 0, 256);
  cv::GaussianBlur(image, image, cv::Size(5, 5), 0);
  return image;
}

template <class Shrink>
double microseconds(int repeats, Shrink&& shrink) {
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < repeats; ++i) shrink();
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / repeats;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::max(1, std::atoi(argv[i + 1]));
  }
  cv::setNumThreads(0);  // one thread, as a conversion's worker runs it
  // The centre windows a 224x224 crop shrinks: a 500x375 photo at full size,
  // a 1024x768 one decoded at 1/2, and a 640x480 one at full size; gray too.
  const std::vector<Case> cases = {
      {"500x375 -> 224 (window 375x375)", {375, 375}, {224, 224}, CV_8UC3},
      {"1024x768 at 1/2 -> 224 (window 384x384)", {384, 384}, {224, 224}, CV_8UC3},
      {"640x480 -> 224 (window 480x480)", {480, 480}, {224, 224}, CV_8UC3},
      {"500x375 gray -> 224", {375, 375}, {224, 224}, CV_8UC1}};
  for (const Case& c : cases) {
    const cv::Mat src = source(c.from, c.type);
    cv::Mat expected(c.to, c.type);
    cv::Mat best(c.to, c.type);
    cv::Mat portable(c.to, c.type);
    cv::resize(src, expected, c.to, 0, 0, cv::INTER_AREA);
    imgpack::resize_area(src, best, imgpack::AreaKernels::best);
    imgpack::resize_area(src, portable, imgpack::AreaKernels::portable);
    if (cv::norm(best, expected, cv::NORM_INF) != 0 ||
        cv::norm(portable, expected, cv::NORM_INF) != 0) {
      std::fprintf(stderr, "imgpack_area_shrink: %s: not cv::resize's bytes\n", c.what);
      return 1;
    }
    const int repeats = 200;
    std::vector<double> t_best, t_portable, t_opencv;
    for (int r = 0; r < rounds; ++r) {
      t_best.push_back(microseconds(
          repeats, [&] { imgpack::resize_area(src, best, imgpack::AreaKernels::best); }));
      t_portable.push_back(microseconds(
          repeats, [&] { imgpack::resize_area(src, portable, imgpack::AreaKernels::portable); }));
      t_opencv.push_back(
          microseconds(repeats, [&] { cv::resize(src, expected, c.to, 0, 0, cv::INTER_AREA); }));
    }
    std::vector<double> best_ratio, portable_ratio;
    for (int r = 0; r < rounds; ++r) {
      best_ratio.push_back(t_best[r] / t_opencv[r]);
      portable_ratio.push_back(t_portable[r] / t_opencv[r]);
    }
    const auto summary = [](const std::vector<double>& v) {
      char text[96];
      std::snprintf(text, sizeof text, "[%.3f, %.3f, %.3f]", median(v),
                    *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()));
      return std::string(text);
    };
    std::printf(
        "{\"case\": \"%s\", \"us_best\": %s, \"us_portable\": %s, \"us_cv_resize\": %s, "
        "\"best_vs_cv_resize\": %s, \"portable_vs_cv_resize\": %s}\n",
        c.what, summary(t_best).c_str(), summary(t_portable).c_str(), summary(t_opencv).c_str(),
        summary(best_ratio).c_str(), summary(portable_ratio).c_str());
  }
  return 0;
}
