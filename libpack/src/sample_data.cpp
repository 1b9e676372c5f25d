#include "imgpack/sample_data.hpp"

#include <opencv2/imgcodecs.hpp>  // the IMWRITE_ flags; encoding goes through codecs.hpp
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "files.hpp"
#include "image/codecs.hpp"
#include "imgpack/error.hpp"
#include "random.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

constexpr const char* kShapes[] = {"circle", "square", "triangle", "star",
                                   "cross",  "ring",   "diamond",  "hexagon"};
constexpr uint32_t kShapeCount = sizeof(kShapes) / sizeof(kShapes[0]);

cv::Scalar hsv_to_bgr(double hue_deg, double sat, double val) {
  cv::Mat hsv(1, 1, CV_8UC3, cv::Scalar(hue_deg / 2.0, sat * 255, val * 255));
  cv::Mat bgr;
  cv::cvtColor(hsv, bgr, cv::COLOR_HSV2BGR);
  cv::Vec3b c = bgr.at<cv::Vec3b>(0, 0);
  return {static_cast<double>(c[0]), static_cast<double>(c[1]), static_cast<double>(c[2])};
}

std::vector<cv::Point> polygon(cv::Point2d centre, double radius, int corners, double angle,
                               double inner_ratio = 1.0) {
  std::vector<cv::Point> points;
  int n = inner_ratio < 1.0 ? corners * 2 : corners;
  for (int i = 0; i < n; ++i) {
    double r = (inner_ratio < 1.0 && i % 2 == 1) ? radius * inner_ratio : radius;
    double a = angle + 2 * std::numbers::pi * i / n;
    points.emplace_back(static_cast<int>(std::lround(centre.x + r * std::cos(a))),
                        static_cast<int>(std::lround(centre.y + r * std::sin(a))));
  }
  return points;
}

// Draws the shape anti-aliased (`line` cv::LINE_AA, the image) or with hard
// edges (cv::LINE_8, its label map).
void draw_shape(cv::Mat& image, uint32_t shape, cv::Point2d centre, double radius, double angle,
                const cv::Scalar& colour, int line = cv::LINE_AA) {
  const int thickness = std::max(2, static_cast<int>(radius / 4));
  auto fill = [&](const std::vector<cv::Point>& points) {
    cv::fillPoly(image, std::vector<std::vector<cv::Point>>{points}, colour, line);
  };
  switch (shape % kShapeCount) {
    case 0:
      cv::circle(image, centre, static_cast<int>(radius), colour, cv::FILLED, line);
      break;
    case 1:
      fill(polygon(centre, radius, 4, angle + std::numbers::pi / 4));
      break;
    case 2:
      fill(polygon(centre, radius, 3, angle));
      break;
    case 3:
      fill(polygon(centre, radius, 5, angle, 0.45));
      break;
    case 4: {
      for (double a : {angle, angle + std::numbers::pi / 2}) {
        cv::Point2d d(radius * std::cos(a), radius * std::sin(a));
        cv::line(image, centre - d, centre + d, colour, thickness, line);
      }
      break;
    }
    case 5:
      cv::circle(image, centre, static_cast<int>(radius * 0.8), colour, thickness, line);
      break;
    case 6:
      fill(polygon(centre, radius, 4, angle));
      break;
    case 7:
      fill(polygon(centre, radius, 6, angle));
      break;
  }
}

// A group's background: a two-colour gradient with a texture of its own.
void paint_background(cv::Mat& image, uint32_t group, CounterRng& rng) {
  CounterRng group_rng(0x67726f7570, group);  // same look for every image of the group
  double hue = group_rng.uniform(0, 360);
  cv::Scalar a =
      hsv_to_bgr(hue, 0.25 + 0.3 * group_rng.uniform(), 0.35 + 0.5 * group_rng.uniform());
  cv::Scalar b = hsv_to_bgr(std::fmod(hue + 40, 360), 0.2, 0.5 + 0.4 * group_rng.uniform());
  int stripe = 4 + static_cast<int>(group_rng.below(12));
  bool vertical = group_rng.below(2) == 1;
  for (int y = 0; y < image.rows; ++y) {
    auto* row = image.ptr<cv::Vec3b>(y);
    for (int x = 0; x < image.cols; ++x) {
      double t =
          vertical ? static_cast<double>(x) / image.cols : static_cast<double>(y) / image.rows;
      bool band = ((vertical ? y : x) / stripe) % 2 == 0;
      double noise = (static_cast<double>(rng.below(17)) - 8.0);
      for (int c = 0; c < 3; ++c) {
        double v = a[c] * (1 - t) + b[c] * t + (band ? 10.0 : -10.0) + noise;
        row[x][c] = cv::saturate_cast<uint8_t>(v);
      }
    }
  }
}

// Writes `contents` to `path` whole or not at all, so that a full disk leaves
// no cut image under an image's name (one that still decodes, its end
// missing). Not synced: inputs to try imgpack on, remade by running again.
void write_generated(const fs::path& path, std::string_view contents) {
  write_file_atomic(path, contents, Durability::unsynced);
}

void write_encoded(const fs::path& path, const cv::Mat& image, const char* extension,
                   const std::vector<int>& params, SampleDataResult& result) {
  std::vector<uint8_t> encoded;
  if (!codecs::encode(extension, image, encoded, params)) {
    throw file_error(path, "cannot encode image");
  }
  write_generated(path, {reinterpret_cast<const char*>(encoded.data()), encoded.size()});
  result.bytes += encoded.size();
}

// The YOLO label of a shape: its class, the box of its hard-edged pixels
// (`exact`, continuous pixel edges) normalised, and the keypoints `left` and
// `right` half a radius either side of its centre (pixel centres at +0.5).
std::string yolo_label(uint32_t class_id, const cv::Rect& exact, cv::Point2d centre, double radius,
                       cv::Size size) {
  const double w = size.width, h = size.height;
  char line[256];
  std::snprintf(line, sizeof line, "%u %.6f %.6f %.6f %.6f %.6f %.6f 2 %.6f %.6f 2\n", class_id,
                (exact.x + exact.width / 2.0) / w, (exact.y + exact.height / 2.0) / h,
                exact.width / w, exact.height / h, (centre.x + 0.5 - radius / 2) / w,
                (centre.y + 0.5) / h, (centre.x + 0.5 + radius / 2) / w, (centre.y + 0.5) / h);
  return line;
}

void make_directory(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw file_error(dir, "cannot create directory: " + ec.message());
}

SampleDataResult write_sample_files(const fs::path& out, const SampleDataOptions& options);

}  // namespace

std::string sample_class_name(uint32_t class_id) {
  std::string name = kShapes[class_id % kShapeCount];
  if (class_id >= kShapeCount) name += std::to_string(class_id / kShapeCount + 1);
  return name;
}

SampleDataResult write_sample_data(const fs::path& out, const SampleDataOptions& options) {
  if (options.classes < 1 || options.classes > 1000)
    throw UsageError("SampleDataOptions::classes must be 1..1000");
  if (options.groups < 1 || options.groups > 100000)
    throw UsageError("SampleDataOptions::groups must be 1..100000");
  if (options.per_class < 1) throw UsageError("SampleDataOptions::per_class must be at least 1");
  if (options.width < 16 || options.height < 16 || options.width > 8192 || options.height > 8192) {
    throw UsageError("SampleDataOptions::width and height must be between 16 and 8192 pixels");
  }
  // Its names are fixed (circle/g00_00000.jpg, labels.csv): in a folder that
  // holds files already, they would overwrite the user's.
  std::error_code ec;
  if (fs::exists(out, ec) && !(fs::is_directory(out, ec) && fs::is_empty(out, ec))) {
    throw UsageError(out.string() + (fs::is_directory(out, ec)
                                         ? ": not empty; sample data goes into a new or "
                                           "empty folder, where it overwrites nothing"
                                         : ": not a folder"));
  }
  const bool existed = fs::exists(out, ec);
  make_directory(out);
  try {
    return write_sample_files(out, options);
  } catch (...) {
    // Nothing half-written stays (the folder was new or empty), so the same
    // command runs again once the disk has room.
    std::error_code ignored;
    if (existed) {
      for (const fs::directory_entry& entry : fs::directory_iterator(out, ignored)) {
        fs::remove_all(entry.path(), ignored);
      }
    } else {
      fs::remove_all(out, ignored);
    }
    throw;
  }
}

namespace {

SampleDataResult write_sample_files(const fs::path& out, const SampleDataOptions& options) {
  SampleDataResult result;
  // Mask labels number the classes as a conversion does (names sorted), from 1.
  std::vector<std::string> sorted_names;
  for (uint32_t c = 0; c < options.classes; ++c) sorted_names.push_back(sample_class_name(c));
  std::sort(sorted_names.begin(), sorted_names.end());
  std::string csv = "path,class,group\n";
  const int group_digits = options.groups > 100 ? 5 : 2;
  for (uint32_t c = 0; c < options.classes; ++c) {
    const std::string class_name = sample_class_name(c);
    make_directory(out / class_name);
    if (options.masks) make_directory(out / kSampleMasksFolder / class_name);
    // Hues spread over the circle, so each class has its own colour.
    const cv::Scalar colour = hsv_to_bgr(360.0 * c / options.classes, 0.85, 0.95);
    const auto mask_label =
        static_cast<double>(1 + (std::find(sorted_names.begin(), sorted_names.end(), class_name) -
                                 sorted_names.begin()));
    for (uint32_t i = 0; i < options.per_class; ++i) {
      CounterRng rng(options.seed, c, i);
      const uint32_t group = (i + c) % options.groups;
      double jitter_w = options.vary_size ? rng.uniform(0.75, 1.25) : 1.0;
      double jitter_h = options.vary_size ? rng.uniform(0.75, 1.25) : 1.0;
      int w = std::max(16, static_cast<int>(std::lround(options.width * jitter_w)));
      int h = std::max(16, static_cast<int>(std::lround(options.height * jitter_h)));
      cv::Mat image(h, w, CV_8UC3);
      paint_background(image, group, rng);
      double radius = std::min(w, h) * rng.uniform(0.18, 0.32);
      cv::Point2d centre(rng.uniform(radius, w - radius), rng.uniform(radius, h - radius));
      const double angle = rng.uniform(0, 2 * std::numbers::pi);
      draw_shape(image, c, centre, radius, angle, colour);

      char group_name[16];
      std::snprintf(group_name, sizeof group_name, "g%0*u", group_digits, group);
      bool png = options.png_every != 0 && i % options.png_every == options.png_every - 1;
      char file_name[64];
      std::snprintf(file_name, sizeof file_name, "%s_%05u.%s", group_name, i, png ? "png" : "jpg");
      fs::path path = out / class_name / file_name;
      std::vector<int> params = png ? std::vector<int>{cv::IMWRITE_PNG_COMPRESSION, 3}
                                    : std::vector<int>{cv::IMWRITE_JPEG_QUALITY, 90};
      write_encoded(path, image, png ? ".png" : ".jpg", params, result);
      result.images += 1;
      if (options.masks) {
        // The same shape, hard-edged, in its class's label on background 0.
        cv::Mat mask(h, w, CV_8UC1, cv::Scalar(0));
        draw_shape(mask, c, centre, radius, angle, cv::Scalar(mask_label), cv::LINE_8);
        fs::path mask_path = out / kSampleMasksFolder / class_name / file_name;
        mask_path.replace_extension(".png");
        write_encoded(mask_path, mask, ".png", {cv::IMWRITE_PNG_COMPRESSION, 3}, result);
        result.masks += 1;
      }
      if (options.boxes) {
        cv::Mat shape(h, w, CV_8UC1, cv::Scalar(0));
        draw_shape(shape, c, centre, radius, angle, cv::Scalar(255), cv::LINE_8);
        fs::path label_path = path;
        label_path.replace_extension(".txt");
        write_generated(label_path,
                        yolo_label(c, cv::boundingRect(shape), centre, radius, cv::Size(w, h)));
        result.labels += 1;
      }
      csv += class_name + "/" + file_name + "," + class_name + "," + group_name + "\n";
    }
  }
  write_generated(out / "labels.csv", csv);
  if (options.boxes) {
    std::string names;
    for (uint32_t c = 0; c < options.classes; ++c) names += sample_class_name(c) + "\n";
    write_generated(out / "classes.txt", names);
  }
  if (options.masks) {
    std::string names = "background\n";
    for (const std::string& name : sorted_names) names += name + "\n";
    write_generated(out / kSampleMasksFolder / "classes.txt", names);
  }
  return result;
}

}  // namespace

}  // namespace imgpack
