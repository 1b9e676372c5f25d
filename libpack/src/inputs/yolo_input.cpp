#include "inputs/yolo_input.hpp"

#include <oneapi/tbb/parallel_for.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "escaped_text.hpp"
#include "files.hpp"
#include "imgpack/error.hpp"
#include "inputs/annotation_text.hpp"
#include "inputs/boxes_input.hpp"
#include "inputs/text_lines.hpp"
#include "parallel/tbb_tsan.hpp"

namespace imgpack {

namespace fs = std::filesystem;

fs::path yolo_label_path(const fs::path& src, const std::string& sample_path) {
  const std::size_t slash = sample_path.rfind('/');
  const std::size_t dot = sample_path.rfind('.');
  const std::size_t name = slash == std::string::npos ? 0 : slash + 1;
  const std::size_t stem_end = dot == std::string::npos || dot <= name ? sample_path.size() : dot;
  return src / (sample_path.substr(0, stem_end) + ".txt");
}

namespace {

// How far a YOLO value may lie outside [0, 1] and still be taken (clamped):
// label tools round, and write 1.0005 for an object touching the edge.
constexpr double kRangeTolerance = 1e-3;
// Without a names file the ids name the classes, "0" up to the largest:
// a larger id is taken for a typo rather than a class of its own.
constexpr double kMaxUnnamedClassId = 65535;

// One name per line (line i names class i), spaces around it dropped; blank
// lines are allowed at the end only, where they name nothing.
std::vector<std::string> read_class_names(const fs::path& path) {
  const std::string text = read_text_file(path, "a class names file");
  require_text(text, path.string());
  std::vector<std::string> names;
  uint32_t first_blank = 0;  // since the last name
  for_each_line(text, [&](uint32_t line, std::string_view content) {
    const std::string_view name = trim(content);
    if (name.empty()) {
      if (first_blank == 0) first_blank = line;
    } else if (first_blank != 0) {
      throw UsageError(path.string() + ":" + std::to_string(first_blank) +
                       ": blank line before more class names (line i names class i - 1; "
                       "only the end may have blank lines)");
    } else {
      names.emplace_back(name);
    }
    return true;
  });
  if (names.empty()) throw UsageError(path.string() + ": names no class");
  if (const auto repeat = first_repeat(names)) {
    throw UsageError(path.string() + ":" + std::to_string(repeat->second + 1) + ": class '" +
                     names[repeat->second] + "' is also named on line " +
                     std::to_string(repeat->first + 1) + " (each class needs a name of its own)");
  }
  return names;
}

// What the label files say that decides the whole dataset's reading: the
// classes used, and the numbers per line (5, or 5 + 3 per keypoint).
struct YoloFileSummary {
  bool has_file = false;  // a label file was found (and read or not)
  double max_class = -1;
  uint32_t first_line = 0;   // the first object line, 0 where none
  std::size_t per_line = 0;  // numbers on each object line (all alike)
};

// Parses one label file's lines into `sample`, or sets its box_problem at the
// first bad line. `class_count` is 0 where the ids name the classes;
// `per_line` is 0 where K is not known yet (then every line of the file must
// have as many numbers as its first).
void parse_yolo_labels(std::string_view text, const fs::path& file, std::size_t class_count,
                       std::size_t per_line, SourceSample& sample, YoloFileSummary& summary) {
  std::vector<double> values;
  for_each_line(text, [&](uint32_t line, std::string_view content) {
    auto fail = [&](const std::string& message) {
      sample.box_problem = file.string() + ":" + std::to_string(line) + ": " + message;
      return false;
    };
    values.clear();
    content = trim(content);
    while (!content.empty()) {
      const std::size_t end = std::min(content.find_first_of(" \t"), content.size());
      const std::string_view token = content.substr(0, end);
      double value = 0;
      const auto [next, error] = std::from_chars(token.data(), token.data() + token.size(), value);
      if (error != std::errc{} || next != token.data() + token.size() || !std::isfinite(value)) {
        // A control character is shown escaped (a CR inside a token is a
        // file whose lines end in CR alone, which this reads as one line).
        // Appended rather than "'" + ...: GCC 12 -O3 takes that operator+
        // for an overlapping memcpy (a false -Wrestrict).
        std::string shown =
            std::string("'").append(with_controls_escaped(token)).append("' is not a number");
        if (token.find('\r') != std::string_view::npos) {
          shown += " (lines that end in a carriage return alone: save the file with LF line ends)";
        }
        return fail(shown);
      }
      values.push_back(value);
      content = trim(content.substr(end));
    }
    if (values.empty()) return true;
    if (values.size() < 5 || (values.size() - 5) % 3 != 0) {
      return fail(std::to_string(values.size()) +
                  " numbers; a YOLO line is 'class cx cy w h', then 'x y v' per keypoint");
    }
    const std::size_t expected = per_line != 0 ? per_line : summary.per_line;
    if (expected != 0 && values.size() != expected) {
      return fail(std::to_string(values.size()) + " numbers, but " +
                  (per_line != 0 ? "the keypoint names make "
                                 : "line " + std::to_string(summary.first_line) + " has ") +
                  std::to_string(expected) + " (5, then 3 per keypoint)");
    }
    if (summary.first_line == 0) {
      summary.first_line = line;
      summary.per_line = values.size();
    }
    const double cls = values[0];
    if (cls < 0 || cls != std::floor(cls) || (class_count == 0 && cls > kMaxUnnamedClassId)) {
      return fail("class id " + number_text(cls) +
                  (class_count == 0
                       ? " is not an integer in 0.." + number_text(kMaxUnnamedClassId) +
                             " (more classes need class names)"
                   : cls < 0 ? " is negative"
                             : " is not an integer"));
    }
    if (class_count != 0 && cls >= static_cast<double>(class_count)) {
      return fail("class id " + number_text(cls) + ", but the class names are " +
                  std::to_string(class_count) + " (ids 0.." + std::to_string(class_count - 1) +
                  ")");
    }
    static constexpr std::array<const char*, 5> kBoxValues = {"class", "cx", "cy", "w", "h"};
    for (std::size_t v = 1; v < values.size(); ++v) {
      const bool visibility = v >= 5 && (v - 5) % 3 == 2;
      const double value = values[v];
      if (visibility ? value != 0 && value != 1 && value != 2
                     : value < -kRangeTolerance || value > 1 + kRangeTolerance) {
        const std::string name =
            v < 5 ? kBoxValues[v]
                  : "keypoint " + std::to_string((v - 5) / 3) + " " + "xyv"[(v - 5) % 3];
        return fail(name + " = " + number_text(value) +
                    (visibility ? " is not 0, 1 or 2 (not labelled, hidden, visible)"
                                : " is outside [0, 1] (YOLO values are fractions of the image)"));
      }
    }
    // Within the tolerance: clamped, before the corners are computed from them.
    const double cx = std::clamp(values[1], 0.0, 1.0), cy = std::clamp(values[2], 0.0, 1.0);
    const double w = std::clamp(values[3], 0.0, 1.0), h = std::clamp(values[4], 0.0, 1.0);
    const SourceBox box =
        clipped_box(cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, static_cast<int32_t>(cls), 0);
    if (!(w > 0 && h > 0) || !(box.x1 > box.x0 && box.y1 > box.y0)) {
      sample.drop_box(line);  // no area: left out, with its keypoints
      return true;
    }
    summary.max_class = std::max(summary.max_class, cls);
    sample.boxes.push_back(box);
    for (std::size_t v = 5; v < values.size(); ++v) {
      sample.keypoints.push_back((v - 5) % 3 == 2 ? static_cast<float>(values[v])
                                                  : clamp_unit(values[v]));
    }
    return true;
  });
}

}  // namespace

void attach_yolo(SourceList& list, const fs::path& src, const BoxOptions& options,
                 const HeldTargets* held) {
  std::vector<std::string> class_names;
  if (!options.yolo_names.empty()) {
    class_names = read_class_names(options.yolo_names);
  } else if (std::error_code ec; fs::exists(src / "classes.txt", ec)) {
    // Found, not named: a FIFO there would block the read for ever.
    if (!fs::is_regular_file(src / "classes.txt", ec)) {
      throw UsageError((src / "classes.txt").string() +
                       ": not a regular file (BoxOptions::yolo_names names another)");
    }
    class_names = read_class_names(src / "classes.txt");
  } else if (held != nullptr) {
    class_names = held->box_class_names;  // ids as names, fixed by the dataset
  }
  std::vector<std::string> keypoint_names;
  for (std::string_view rest = options.yolo_keypoints; !rest.empty();) {
    const std::size_t comma = rest.find(',');
    const std::string_view name = trim(rest.substr(0, comma));
    if (name.empty()) {
      throw UsageError("BoxOptions::yolo_keypoints '" + options.yolo_keypoints +
                       "': an empty keypoint name");
    }
    keypoint_names.emplace_back(name);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  if (const auto repeat = first_repeat(keypoint_names)) {
    throw UsageError("BoxOptions::yolo_keypoints '" + options.yolo_keypoints + "': keypoint '" +
                     keypoint_names[repeat->second] + "' is named twice");
  }
  if (keypoint_names.empty() && held != nullptr) keypoint_names = held->keypoint_names;
  // Check the flip map against the names before reading a million files.
  if (!keypoint_names.empty()) keypoint_flip_table(keypoint_names, options.keypoint_flip_map);
  const std::size_t known_per_line = keypoint_names.empty() ? 0 : 5 + 3 * keypoint_names.size();

  std::vector<YoloFileSummary> summaries(list.samples.size());
  tsan::ForkJoinBody read([&](std::size_t i) {
    SourceSample& sample = list.samples[i];
    const fs::path path = yolo_label_path(src, sample.path);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) {
      // No file: no objects. A link to nothing is a label file lost, not that.
      struct stat link {};
      if (::lstat(path.c_str(), &link) == 0) {
        sample.box_problem =
            path.string() + ": a link to nothing (cannot stat: " + std::strerror(ENOENT) + ")";
      }
      return;
    }
    summaries[i].has_file = true;
    // A FIFO found beside an image would block the read for ever.
    if (st.st_mode != 0 && !S_ISREG(st.st_mode)) {
      sample.box_problem = path.string() + ": not a regular file";
      return;
    }
    std::vector<uint8_t> bytes;
    const std::string failure = read_file(path, bytes);
    if (!failure.empty()) {
      sample.box_problem = path.string() + ": " + failure;
      return;
    }
    parse_yolo_labels(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                      path, class_names.size(), known_per_line, sample, summaries[i]);
  });
  read.fork();
  tbb::parallel_for(std::size_t{0}, list.samples.size(), read);
  read.join();
  list.label_files = static_cast<uint64_t>(
      std::count_if(summaries.begin(), summaries.end(),
                    [](const YoloFileSummary& summary) { return summary.has_file; }));
  // A label file beside two images of one name (a.jpg and a.png): which one
  // it labels is a guess, so neither takes it.
  std::unordered_map<std::string, std::size_t> labelled;
  for (std::size_t i = 0; i < list.samples.size(); ++i) {
    if (!summaries[i].has_file) continue;
    const std::string path = yolo_label_path(src, list.samples[i].path).string();
    const auto [first, inserted] = labelled.emplace(path, i);
    if (inserted) continue;
    for (const std::size_t s : {first->second, i}) {
      SourceSample& sample = list.samples[s];
      const std::string& other = list.samples[s == i ? first->second : i].path;
      sample.box_problem = path + ": the label file of both " + sample.path + " and " + other +
                           " (two images of one name); YOLO pairs a label file with one image";
    }
  }

  // K: from the names, else from the first file (in listing order) with keypoints.
  std::size_t per_line = known_per_line;
  std::size_t decided_by = 0;
  for (std::size_t i = 0; i < summaries.size() && per_line == 0; ++i) {
    if (summaries[i].per_line > 5) {
      per_line = summaries[i].per_line;
      decided_by = i;
    }
  }
  if (per_line == 0) per_line = 5;
  double max_class = -1;
  for (std::size_t i = 0; i < list.samples.size(); ++i) {
    SourceSample& sample = list.samples[i];
    const YoloFileSummary& summary = summaries[i];
    if (!sample.box_problem.empty() || summary.first_line == 0) continue;
    if (summary.per_line != per_line) {
      sample.box_problem =
          yolo_label_path(src, sample.path).string() + ":" + std::to_string(summary.first_line) +
          ": " + std::to_string(summary.per_line) + " numbers, but " +
          yolo_label_path(src, list.samples[decided_by].path).string() + ":" +
          std::to_string(summaries[decided_by].first_line) + " has " + std::to_string(per_line) +
          " (5, then 3 per keypoint; every line of a dataset has as many)";
      continue;
    }
    max_class = std::max(max_class, summary.max_class);
  }
  if (class_names.empty()) {
    for (int64_t id = 0; id <= static_cast<int64_t>(max_class); ++id) {
      class_names.push_back(std::to_string(id));
    }
  }
  if (keypoint_names.empty()) {
    for (std::size_t k = 0; k < (per_line - 5) / 3; ++k) {
      keypoint_names.push_back(std::to_string(k));
    }
  }
  list.box_class_names = std::move(class_names);
  list.keypoint_names = std::move(keypoint_names);
  list.keypoint_flip = held != nullptr && options.keypoint_flip_map.empty() &&
                               list.keypoint_names == held->keypoint_names
                           ? held->keypoint_flip
                           : keypoint_flip_table(list.keypoint_names, options.keypoint_flip_map);
}

}  // namespace imgpack
