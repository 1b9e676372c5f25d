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

}  // namespace imgpack
