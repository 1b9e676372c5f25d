// Attaching the object boxes and keypoints of a COCO file
// (BoxOptions::coco) to a listing, for attach_boxes() (internal to
// imgpack::pack).
#pragma once

#include <filesystem>

#include "imgpack/convert_options.hpp"
#include "inputs/boxes_input.hpp"
#include "inputs/scan.hpp"

namespace imgpack {

// attach_boxes() for BoxOptions::coco, as boxes_input.hpp says: sets
// list.box_class_names, keypoint_names and keypoint_flip, and each sample's
// boxes, keypoints, box_width and box_height, or its box_problem (an
// annotation of an unknown category is one); appends to list.skipped the
// images whose files are missing under SRC. Expects those of the samples
// cleared; a sample given a box_problem may keep boxes added before it,
// which attach_boxes() then drops. Throws UsageError as attach_boxes() does.
void attach_coco(SourceList& list, const std::filesystem::path& src, const BoxOptions& options,
                 const HeldTargets* held);

}  // namespace imgpack
