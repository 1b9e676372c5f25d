#include "inputs/boxes_input.hpp"

#include "inputs/annotation_text.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "imgpack/error.hpp"
#include "inputs/coco_input.hpp"
#include "inputs/yolo_input.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

// Where the first annotation that attach_boxes() left out of `sample` lies:
// its label file's line, or its place in the COCO file.
std::string first_dropped_place(const SourceSample& sample, const fs::path& src,
                                const BoxOptions& options) {
  return options.yolo ? yolo_label_path(src, sample.path).string() + ":" +
                            std::to_string(sample.first_dropped)
                      : options.coco.string() + ": annotations[" +
                            std::to_string(sample.first_dropped) + "] (of " + sample.path + ")";
}

// "1 object" or "N objects".
std::string objects(uint64_t n) { return std::to_string(n) + (n == 1 ? " object" : " objects"); }

}  // namespace

void attach_boxes(SourceList& list, const fs::path& src, const BoxOptions& options,
                  const HeldTargets* held) {
  if (!options.enabled()) return;
  if (!options.coco.empty() && options.yolo) {
    throw UsageError("BoxOptions::coco and BoxOptions::yolo both give the boxes; give one");
  }
  for (SourceSample& sample : list.samples) {
    sample.boxes.clear();
    sample.keypoints.clear();
    sample.box_width = 0;
    sample.box_height = 0;
    sample.box_problem.clear();
  }
  list.boxes = true;
  if (options.yolo) {
    attach_yolo(list, src, options, held);
  } else {
    attach_coco(list, src, options, held);
  }
  for (SourceSample& sample : list.samples) {
    if (sample.box_problem.empty()) continue;
    sample.boxes.clear();
    sample.keypoints.clear();
  }
}

std::vector<std::string> box_warnings(const SourceList& list, std::span<const std::size_t> order,
                                      const fs::path& src, const BoxOptions& options) {
  std::vector<std::string> warnings;
  if (options.yolo && list.label_files == 0 && !order.empty()) {
    warnings.push_back(
        "no image has a YOLO label file beside it (" +
        yolo_label_path(src, list.samples[order.front()].path).string() + " for " +
        (src / list.samples[order.front()].path).string() +
        "), so every image is stored without objects; where the labels lie in a folder of "
        "their own (images/ and labels/), put each beside its image");
  }
  uint64_t count = 0;
  const SourceSample* first = nullptr;
  for (const std::size_t s : order) {
    const SourceSample& sample = list.samples[s];
    if (sample.dropped_boxes == 0 || !sample.box_problem.empty()) continue;
    count += sample.dropped_boxes;
    if (first == nullptr || sample.path < first->path) first = &sample;
  }
  // Boxes that lie mostly outside their image: clipped to it, less than
  // BoxOptions::min_visible of each stays, so every variant leaves them out.
  uint64_t outside = 0;
  const SourceSample* first_outside = nullptr;
  for (const std::size_t s : order) {
    const SourceSample& sample = list.samples[s];
    if (!sample.box_problem.empty()) continue;
    for (const SourceBox& box : sample.boxes) {
      if (box.inside >= options.min_visible) continue;
      ++outside;
      if (first_outside == nullptr || sample.path < first_outside->path) first_outside = &sample;
    }
  }
  if (outside > 0) {
    const bool one = outside == 1;
    warnings.push_back(std::to_string(outside) + (one ? " object lies" : " objects lie") +
                       " mostly outside " + (one ? "its image" : "their images") +
                       " (less than BoxOptions::min_visible " + number_text(options.min_visible) +
                       " of " + (one ? "its" : "their") + " area inside) and " +
                       (one ? "is" : "are") + " left out of every variant; the first in " +
                       (src / first_outside->path).string());
  }
  if (count == 0) return warnings;
  const std::string where = first_dropped_place(*first, src, options);
  const bool one = count == 1;
  warnings.push_back(
      std::to_string(count) +
      (one ? " object has no area inside its image" : " objects have no area inside their image") +
      " (an empty box, or one wholly outside the image) and " + (one ? "was" : "were") +
      " left out; the first: " + where);
  return warnings;
}

std::vector<SkippedInput> objects_left_out(const SourceList& list,
                                           std::span<const std::size_t> order, const fs::path& src,
                                           const BoxOptions& options) {
  std::vector<SkippedInput> out;
  for (const std::size_t s : order) {
    const SourceSample& sample = list.samples[s];
    if (!sample.box_problem.empty()) continue;
    const auto outside = static_cast<uint64_t>(
        std::count_if(sample.boxes.begin(), sample.boxes.end(),
                      [&](const SourceBox& box) { return box.inside < options.min_visible; }));
    if (sample.dropped_boxes == 0 && outside == 0) continue;
    std::string reason;
    if (sample.dropped_boxes > 0) {
      reason = objects(sample.dropped_boxes) +
               " with no area inside the image (an empty box, or one wholly outside it) left "
               "out; the first: " +
               first_dropped_place(sample, src, options);
    }
    if (outside > 0) {
      if (!reason.empty()) reason += "; ";
      reason += objects(outside) + " mostly outside the image (less than " +
                number_text(options.min_visible) + " of the area inside) left out of every variant";
    }
    out.push_back({sample.path, std::move(reason)});
  }
  std::sort(out.begin(), out.end(),
            [](const SkippedInput& a, const SkippedInput& b) { return a.path < b.path; });
  return out;
}

}  // namespace imgpack
