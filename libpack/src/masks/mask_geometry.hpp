// Giving a mask exactly the geometry its image got (internal to imgpack::pack).
//
// The image is resampled from what the decoder delivered: a JPEG may be
// decoded at a reduced DCT scale (and rotated upright), and a strongly
// shrinking augmentation reduces it further first. The mask is never
// reduced: each output pixel takes, nearest neighbour, the label of the
// full-resolution mask at the spot the image's own map sampled the image
// from, carried into the full-resolution upright frame (SourceFrame). Where
// the image's map looks outside the image, the border rule is applied where
// the image applied it, in the image's pixels: a reflection about the image's
// edge pixel centres (which depend on its resolution) reflects the mask
// about the very same line. So a label lands where the image's pixels of
// that spot land, and every mask value is a value of the source mask or the
// fill: nearest neighbour creates no label.
//
// Coordinates: continuous positions have pixel centres at +0.5 (a W-pixel
// image spans [0, W)); affine maps passed to OpenCV and to warp_mask() use
// OpenCV's convention, pixel centres at integers. Pure functions; safe from
// any thread.
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>

#include "image/decode.hpp"
#include "image/resize.hpp"

namespace imgpack {

// Where the pixels of a decoded image lie in the full-resolution upright
// frame: continuous position u of the frame is position scale * u + offset
// of the image, per axis.
struct SourceFrame {
  double scale_x = 1, scale_y = 1;
  double offset_x = 0, offset_y = 0;

  // The frame of a copy of this image resized from `from` to `to` pixels
  // (cv::resize maps continuous positions by the ratio of the sizes).
  SourceFrame resized(cv::Size from, cv::Size to) const;
};

// The frame of `image` decoded from a source of upright size `full`: the
// identity at full size; a JPEG decoded at DCT scale k holds ceil(k * size)
// pixels per stored side, its pixel i covering stored positions [i/k,
// (i+1)/k), so the partial last pixel ends past the image: an axis that the
// EXIF orientation reversed starts that much early.
SourceFrame decoded_frame(const DecodedImage& image, cv::Size full);

// resize_into()'s geometry for an image of `source` pixels as an affine map
// from image pixels to output pixels (OpenCV's convention).
cv::Matx23d resize_map(cv::Size source, const ResizeSpec& spec);

// Fills `out` (CV_8UC1, the output size): each pixel of `target` looks up,
// through the inverse of `image_map` (image pixel -> output pixel, OpenCV's
// convention, as warpAffine takes it), its position in an image of
// `image_size` pixels; a position outside the image follows `border` there
// (cv::BORDER_REFLECT_101 about the edge pixels' centres, BORDER_REPLICATE
// clamped to them, BORDER_CONSTANT: `fill`); the position, carried into the
// full-resolution frame by `frame`, picks the label of the mask pixel it
// falls in (clamped to the mask). Pixels outside `target` get `fill`.
void warp_mask(const cv::Mat& mask, const cv::Matx23d& image_map, cv::Size image_size,
               const SourceFrame& frame, cv::Rect target, int border, uint8_t fill, cv::Mat& out);

// The mask of a clean record (variant 0): `mask` (full-resolution upright,
// CV_8UC1) given the geometry resize_into() gave the image decoded as
// `source` pixels in `frame`; letterbox areas (ResizeMode::pad) get `fill`.
// Writes spec.height x spec.width bytes to `dst`.
void resize_mask_into(const cv::Mat& mask, cv::Size source, const SourceFrame& frame,
                      const ResizeSpec& spec, uint8_t fill, uint8_t* dst);

}  // namespace imgpack
