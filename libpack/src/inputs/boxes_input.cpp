#include "inputs/boxes_input.hpp"

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

}  // namespace imgpack
