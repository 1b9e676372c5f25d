#include "inputs/boxes_input.hpp"

#include "inputs/annotation_text.hpp"

#include <string>
#include <vector>

#include "imgpack/error.hpp"
#include "inputs/coco_input.hpp"
#include "inputs/yolo_input.hpp"

namespace imgpack {

namespace fs = std::filesystem;

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
  const std::string where =
      options.yolo
          ? yolo_label_path(src, first->path).string() + ":" + std::to_string(first->first_dropped)
          : options.coco.string() + ": annotations[" + std::to_string(first->first_dropped) +
                "] (of " + first->path + ")";
  const bool one = count == 1;
  warnings.push_back(
      std::to_string(count) +
      (one ? " object has no area inside its image" : " objects have no area inside their image") +
      " (an empty box, or one wholly outside the image) and " + (one ? "was" : "were") +
      " left out; the first: " + where);
  return warnings;
}

}  // namespace imgpack
