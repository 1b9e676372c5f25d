// Attaching the object boxes and keypoints of YOLO label files
// (BoxOptions::yolo: SRC/a/b.txt beside SRC/a/b.jpg) and their class names
// to a listing, for attach_boxes() (internal to imgpack::pack).
#pragma once

#include <filesystem>
#include <string>

#include "imgpack/convert_options.hpp"
#include "inputs/boxes_input.hpp"
#include "inputs/scan.hpp"

namespace imgpack {

// attach_boxes() for BoxOptions::yolo, as boxes_input.hpp says: sets
// list.box_class_names, keypoint_names and keypoint_flip, and each sample's
// boxes and keypoints, or its box_problem; reads the label files in parallel
// (oneTBB). Expects those of the samples cleared; a sample given a
// box_problem may keep boxes added before it, which attach_boxes() then
// drops. Throws UsageError as attach_boxes() does.
// The label file of SRC-relative `sample_path`: SRC/a/b.jpg -> SRC/a/b.txt.
std::filesystem::path yolo_label_path(const std::filesystem::path& src,
                                      const std::string& sample_path);

void attach_yolo(SourceList& list, const std::filesystem::path& src, const BoxOptions& options,
                 const HeldTargets* held);

}  // namespace imgpack
