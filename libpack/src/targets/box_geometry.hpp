// Giving an image's boxes and keypoints the geometry its record got
// (internal to imgpack::pack).
//
// A record is its source carried through one affine map (a resize, or a
// variant's warp); its boxes go through the very same map: each box's four
// corners are transformed and their bounding box, clipped to the output
// frame, is the record's box (for a rotation it holds the object, and a
// little more). A box is dropped when less than `min_visible` of the
// transformed box's area lies inside the frame. Keypoints are transformed
// exactly; one outside the frame ([0, W] x [0, H], edges included), or not
// labelled, becomes (0, 0, 0). A map
// that mirrors (negative determinant) swaps each keypoint with its flip
// partner, so that a left eye stays a left eye.
//
// Coordinates are continuous: a W-pixel image spans [0, W), pixel i covering
// [i, i + 1). Pure functions; safe from any thread.
#pragma once

#include <opencv2/core.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

#include "image/decode.hpp"
#include "inputs/scan.hpp"
#include "masks/mask_geometry.hpp"
#include "targets/record_boxes.hpp"

namespace imgpack {

// How boxes are kept and keypoints paired (from BoxOptions and the listing).
struct BoxRules {
  double min_visible = 0.3;
  std::span<const int32_t> keypoint_flip;  // [K]; empty without keypoints
  std::size_t keypoints() const { return keypoint_flip.size(); }
};

// The map from continuous positions of the full-resolution upright source to
// continuous output positions, for a record rendered from an image lying in
// that frame as `frame` says, through `pixel_map` (image pixel -> output
// pixel, OpenCV's convention of pixel centres at integers, as warpAffine and
// resize_map() give it).
cv::Matx23d source_to_output(const cv::Matx23d& pixel_map, const SourceFrame& frame);

// The record's rows for `sample`'s boxes (normalised to the upright source of
// `full` pixels) under `map` (source_to_output()), in an output of `output`
// pixels. Replaces `out`'s contents; keeps the boxes' order.
void place_boxes(const SourceSample& sample, cv::Size full, const cv::Matx23d& map, cv::Size output,
                 const BoxRules& rules, RecordBoxes& out);

// A hash of `sample`'s annotations (boxes, keypoints, the size they name):
// what a resumed conversion or the parts of one compare to tell edited
// annotations.
uint64_t annotation_hash(const SourceSample& sample);

}  // namespace imgpack
