// The text of annotation files as the box readers (COCO, YOLO) and the
// keypoint flip map read it: a whole file, names trimmed and joined, numbers
// printed for messages, and a coordinate read from them clamped to the image
// (internal to imgpack::pack). Pure functions but read_text_file(), which
// only reads; all safe from any thread.
#pragma once

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "inputs/scan.hpp"

namespace imgpack {

// `text` without the spaces, tabs and CRs around it.
inline std::string_view trim(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\r") + 1 - first);
}

// "a, b, c", for messages.
std::string join(const std::vector<std::string>& names);

// The first name of `names` that an earlier one repeats, as (earlier,
// later) positions; none where every name is different. Class and keypoint
// names are what readers find classes and keypoints by: a file that gives
// one twice is refused with the positions.
std::optional<std::pair<std::size_t, std::size_t>> first_repeat(
    const std::vector<std::string>& names);

// The shortest text that reads back as `value`, for messages.
std::string number_text(double value);

// A whole file as text; UsageError naming it and `what` it is when it cannot be read.
std::string read_text_file(const std::filesystem::path& path, const std::string& what);

// A normalised coordinate clamped to the image, [0, 1].
inline float clamp_unit(double value) { return static_cast<float>(std::clamp(value, 0.0, 1.0)); }

// The box from (x0, y0) to (x1, y1) in fractions of the image (x1 > x0,
// y1 > y0, finite), clipped to the image, with the share of its area the
// image holds.
inline SourceBox clipped_box(double x0, double y0, double x1, double y1, int32_t cls,
                             uint8_t crowd) {
  SourceBox box{clamp_unit(x0), clamp_unit(y0), clamp_unit(x1), clamp_unit(y1), cls, crowd};
  if (x0 < 0 || y0 < 0 || x1 > 1 || y1 > 1) {
    const double held = (std::clamp(x1, 0.0, 1.0) - std::clamp(x0, 0.0, 1.0)) *
                        (std::clamp(y1, 0.0, 1.0) - std::clamp(y0, 0.0, 1.0));
    box.inside = static_cast<float>(held / ((x1 - x0) * (y1 - y0)));
  }
  return box;
}

}  // namespace imgpack
