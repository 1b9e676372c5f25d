// Reading each input's object boxes and keypoints (internal to imgpack::pack).
//
// attach_boxes() gives every sample of a listing its objects (BoxOptions):
//   - a COCO-style JSON file (BoxOptions::coco), parsed once; its images are
//     matched to the listing by file_name relative to SRC or, where that
//     names no listed file, by a bare file name that exactly one listed file
//     has. Box and keypoint pixels are divided by the image entry's width and
//     height, which become SourceSample::box_width / box_height; boxes are
//     clamped to the image (a box left without area is a problem).
//   - YOLO text files beside the images (BoxOptions::yolo): SRC/a/b.jpg's
//     objects are the lines of SRC/a/b.txt, each read once (in parallel);
//     values may lie outside [0, 1] by 1e-3 and are clamped, and the corners
//     cx -/+ w/2, cy -/+ h/2 are clamped to the image too.
// Coordinates come out normalised, as SourceBox says. A sample whose
// annotations cannot be used keeps its place in the listing with
// SourceSample::box_problem naming the file and line (or the annotation)
// and no boxes; the conversion skips it with that reason. Nothing is opened
// but the COCO file, the names file and the label files (the files of COCO
// images the listing lacks are stat()ed); nothing is modified.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "imgpack/convert_options.hpp"
#include "inputs/scan.hpp"

namespace imgpack {

// What a dataset holds already, for the listing of an append: the listing
// lacks those samples, so their names and the classes and keypoints the
// dataset fixed must come from it.
struct HeldTargets {
  std::span<const std::string> sample_paths;  // the dataset's samples (relative paths)
  std::vector<std::string> box_class_names;   // its box classes
  std::vector<std::string> keypoint_names;    // its keypoints
  std::vector<int32_t> keypoint_flip;         // its flip pairs (kept where no map is given)
};

// Attaches boxes (and keypoints) as `options` says to every sample of `list`
// (a listing of SRC); nothing without BoxOptions::enabled(). Sets
// list.boxes, box_class_names, keypoint_names and keypoint_flip.
//
// With `held` (an append), COCO images are matched over the held samples
// and the listing together: an image naming a held sample (by path, or by
// a file name unique among both) is left out, neither attached nor
// missing, and a file name that a held sample shares with a listed one
// names neither. YOLO class ids and keypoints without a names file or
// BoxOptions::yolo_keypoints are the held ones (ids past them are a
// problem of the line), not inferred from the new files; without
// BoxOptions::keypoint_flip_map the flip pairs of the same keypoints are
// the held ones (the dataset's, whatever pairs a later build would find).
//
// COCO: the categories sorted by id are the classes (their names the class
// names); the categories' `keypoints` names (all that have them must agree)
// are the keypoints, K of them; an annotation of a category without them
// gets K triples of zeros. A sample's boxes are its image's annotations in
// the file's order; `iscrowd` sets SourceBox::crowd. A listed sample the
// file has no image for, or that one of its annotations names an unknown
// category for, gets a box_problem (the latter naming the COCO file, the
// annotation's index and id, and the category id). An image that neither
// its relative path nor a unique file name matches to the listing is, where
// its file is missing under SRC, a SkippedInput in list.skipped: its path
// relative to SRC (as written where it lies outside SRC) and why ("missing:
// listed in FILE (images[3]) but not found under SRC"), once per path and
// not where the scan already skipped that path; list.skipped stays sorted
// by path where the scan left it sorted (scan_csv() does), else these come
// after in the file's order. One whose file exists under SRC is not an input
// of this conversion (a CSV does not list it, the scan skipped it) and is
// ignored.
//
// YOLO: the class names are the lines of BoxOptions::yolo_names, else of
// SRC/classes.txt where it exists, else the ids "0" .. the largest id used.
// K is the count of BoxOptions::yolo_keypoints names (comma-separated), else
// inferred from the first label line (in listing order) with more than five
// numbers; the keypoint names are then "0" .. "K-1".
//
// Throws UsageError naming the file (and line or JSON place) for: a COCO or
// names file that cannot be read or is malformed (wrong JSON types, missing
// fields, an id twice), both `coco` and `yolo` set, categories whose
// keypoint names disagree, an annotation naming an unknown image id, and
// the errors of keypoint_flip_table().
void attach_boxes(SourceList& list, const std::filesystem::path& src, const BoxOptions& options,
                  const HeldTargets* held = nullptr);

// The warnings about the boxes of the samples `order` lists (indices into
// list.samples): the annotations attach_boxes() left out because they have
// no area inside their image, naming the first (skipped samples passed
// over), the boxes every variant leaves out because less than
// BoxOptions::min_visible of them lies inside their image, naming the first
// image, and YOLO labels of which no image has a file. None where all is
// well.
std::vector<std::string> box_warnings(const SourceList& list, std::span<const std::size_t> order,
                                      const std::filesystem::path& src, const BoxOptions& options);

// The samples `order` lists that are converted with some of their annotated
// objects left out, each with why, sorted by path: the annotations
// attach_boxes() left out (no area inside the image), counted and the first
// named by its place in the label or COCO file, and the objects every
// variant leaves out because less than BoxOptions::min_visible of them lies
// inside the image, counted. Skipped samples are passed over. What
// report.json's `objects_left_out` lists.
std::vector<SkippedInput> objects_left_out(const SourceList& list,
                                           std::span<const std::size_t> order,
                                           const std::filesystem::path& src,
                                           const BoxOptions& options);

// The keypoint that each of `names` becomes under a horizontal flip: entry k
// is the index of keypoint k's partner, or k where it has none. From
// `flip_map` ("a:b,c:d", names or indices, spaces around them ignored) when
// it is not empty, else from the names: two names that are the same but
// for "left" in one where the other has "right" (case-insensitive, anywhere
// in the name: left_eye / right_eye, LeftHand / RightHand), or "l" and "r"
// as words of their own (l_eye / r_eye, eye.L / eye.R), swap. Throws
// UsageError quoting the map for an entry that is not "a:b", a name or index
// that is not a keypoint, and a keypoint paired twice or with itself.
std::vector<int32_t> keypoint_flip_table(const std::vector<std::string>& names,
                                         const std::string& flip_map);

}  // namespace imgpack
