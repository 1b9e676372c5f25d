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

// A sample converted with some of its annotated objects left out.
struct LeftOut {
  const SourceSample* sample = nullptr;
  uint64_t empty = 0;    // no area inside the image: left out by attach_boxes()
  uint64_t outside = 0;  // less than BoxOptions::min_visible inside: out of every variant
};

// The samples `order` lists that lose objects, sorted by path; skipped
// samples (a box problem) are passed over. What box_warnings() sums and
// objects_left_out() lists.
std::vector<LeftOut> samples_losing_objects(const SourceList& list,
                                            std::span<const std::size_t> order,
                                            const BoxOptions& options) {
  std::vector<LeftOut> out;
  for (const std::size_t s : order) {
    const SourceSample& sample = list.samples[s];
    if (!sample.box_problem.empty()) continue;
    const auto outside = static_cast<uint64_t>(
        std::count_if(sample.boxes.begin(), sample.boxes.end(),
                      [&](const SourceBox& box) { return box.inside < options.min_visible; }));
    if (sample.dropped_boxes == 0 && outside == 0) continue;
    out.push_back({&sample, sample.dropped_boxes, outside});
  }
  std::sort(out.begin(), out.end(),
            [](const LeftOut& a, const LeftOut& b) { return a.sample->path < b.sample->path; });
  return out;
}

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
  uint64_t empty = 0;
  uint64_t outside = 0;
  const SourceSample* first_empty = nullptr;  // the samples come sorted by path
  const SourceSample* first_outside = nullptr;
  for (const LeftOut& lost : samples_losing_objects(list, order, options)) {
    empty += lost.empty;
    outside += lost.outside;
    if (first_empty == nullptr && lost.empty > 0) first_empty = lost.sample;
    if (first_outside == nullptr && lost.outside > 0) first_outside = lost.sample;
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
  if (empty > 0) {
    const bool one = empty == 1;
    warnings.push_back(std::to_string(empty) +
                       (one ? " object has no area inside its image"
                            : " objects have no area inside their image") +
                       " (an empty box, or one wholly outside the image) and " +
                       (one ? "was" : "were") +
                       " left out; the first: " + first_dropped_place(*first_empty, src, options));
  }
  return warnings;
}

std::vector<SkippedInput> objects_left_out(const SourceList& list,
                                           std::span<const std::size_t> order, const fs::path& src,
                                           const BoxOptions& options) {
  std::vector<SkippedInput> out;
  for (const LeftOut& lost : samples_losing_objects(list, order, options)) {
    std::string reason;
    if (lost.empty > 0) {
      reason = objects(lost.empty) +
               " with no area inside the image (an empty box, or one wholly outside it) left "
               "out; the first: " +
               first_dropped_place(*lost.sample, src, options);
    }
    if (lost.outside > 0) {
      if (!reason.empty()) reason += "; ";
      reason += objects(lost.outside) + " mostly outside the image (less than " +
                number_text(options.min_visible) + " of the area inside) left out of every variant";
    }
    out.push_back({lost.sample->path, std::move(reason)});
  }
  return out;
}

}  // namespace imgpack
