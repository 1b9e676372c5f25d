// Offline augmentation: the variants 1..K-1 that `convert --variants K
// --augment SPEC` stores beside each clean image.
//
// A spec (AugmentSpec, parsed from "hflip,rotate=15,zoom=0.8:1.2,...") says
// what a variant may do; AugmentParams says what one variant does, drawn from
// a CounterRng keyed by (seed, sample key, variant) so the same image gets the
// same variants on every run and at every thread count. Rendering a variant is
// one cv::warpAffine that takes the decoded image straight to the output size
// (crop window, flips, zoom, shear, rotation and shift composed into one
// matrix) followed by colour operations on the 8-bit result in place (lookup
// tables, OpenCV's vectorised 8-bit conversions and blends, and a vectorised
// hue kernel over 8-bit planes; never a float copy of the image). Colour
// operations keep per-thread 8-bit scratch buffers, so rendering allocates
// nothing per record once a thread has seen the record size.
//
// Geometry conventions: positions are in pixels with y pointing down; a
// positive rotation turns the picture counter-clockwise as seen on screen;
// a positive shift moves it right / down; zoom > 1 shows objects larger.
//
// A variant's mask (render_mask) goes through the same warp, nearest
// neighbour, from its full resolution (mask_geometry.hpp); colour operations
// never touch it.
//
// Everything here is a pure function or a const method: an Augmenter is safe
// to share between threads once constructed.
#pragma once

#include <array>
#include <cstdint>
#include <opencv2/core.hpp>
#include <span>
#include <string>
#include <string_view>

#include "augment_spec.hpp"
#include "image/resize.hpp"
#include "masks/mask_geometry.hpp"

namespace imgpack {

// What one variant does. Fields at their defaults are the identity.
struct AugmentParams {
  bool hflip = false;
  bool vflip = false;
  double rotate = 0;   // degrees, counter-clockwise as seen
  double shift_x = 0;  // fraction of the output width, + = right
  double shift_y = 0;  // fraction of the output height, + = down
  double zoom = 1;
  double shear = 0;  // degrees
  // Random resized crop: the source window shown, as fractions of the source
  // width and height (centre and size). Without it the window is the one the
  // resize mode frames for the clean image, narrowed by `aspect`.
  bool crop = false;
  double crop_cx = 0.5, crop_cy = 0.5, crop_w = 1, crop_h = 1;
  double aspect = 1;  // window aspect / output aspect (when !crop)
  double brightness = 1;
  double contrast = 1;
  double saturation = 1;
  double hue = 0;  // turns
  bool gray = false;
};

// The key under which a sample's variants are drawn: a hash of its path
// relative to the input root, so it does not change when other inputs are
// added, removed or skipped.
uint64_t augment_sample_key(std::string_view relative_path);

// Draws and renders the augmented variants of a dataset. Immutable after
// construction; safe to share between threads.
class Augmenter {
 public:
  // `output` gives the record size, the resize mode that frames the clean
  // image (and so the augmented window when the spec has no crop_scale) and
  // the colour used by FillMode::constant.
  Augmenter(AugmentSpec spec, ResizeSpec output, uint64_t seed);

  const AugmentSpec& spec() const { return spec_; }
  const ResizeSpec& output() const { return output_; }

  // The parameters of `variant` (>= 1) of the sample with `sample_key`.
  // `source` is the upright size of the full-resolution source (the crop
  // window depends on its aspect ratio). Every parameter is drawn whether or
  // not the spec uses it, so adding a key to a spec leaves the others' draws
  // unchanged.
  AugmentParams sample(uint64_t sample_key, uint32_t variant, cv::Size source) const;

  // The affine map from source pixel positions to output pixel positions
  // (OpenCV's warpAffine convention, pixel centres at integers) for an image
  // of size `source`.
  cv::Matx23d transform(const AugmentParams& params, cv::Size source) const;

  // The smallest source size from which none of `variants` needs upsampling:
  // the full size scaled by the largest magnification any of them applies
  // (capped at the full size). A decoder may deliver anything at least this
  // large.
  cv::Size required_source_size(std::span<const AugmentParams> variants, cv::Size full) const;

  // `source`, or an area-averaged reduction of it stored in `scratch` when it
  // is more than twice as large as `variants` need: bilinear warping from a
  // much larger image would alias. The variants' parameters stay valid for the
  // returned image.
  const cv::Mat& reduce_source(const cv::Mat& source, std::span<const AugmentParams> variants,
                               cv::Mat& scratch) const;

  // Renders one variant of `source` (CV_8UC3 RGB or CV_8UC1) into `dst`, a
  // continuous buffer of height x width x source.channels() bytes: one warp,
  // then the colour operations in place.
  void render(const cv::Mat& source, const AugmentParams& params, uint8_t* dst) const;

  // Renders the mask of the variant that render() made from an image of
  // `source` pixels lying in the full-resolution frame as `frame` says:
  // `mask` (CV_8UC1, full resolution) through the same warp, nearest
  // neighbour, with the spec's fill mode (FillMode::constant fills with
  // `fill`), and no colour operation. Writes height x width bytes to `dst`.
  void render_mask(const cv::Mat& mask, const AugmentParams& params, cv::Size source,
                   const SourceFrame& frame, uint8_t fill, uint8_t* dst) const;

 private:
  AugmentSpec spec_;
  ResizeSpec output_;
  uint64_t seed_;
};

// Largest factor by which the linear part of `m` stretches any direction
// (output pixels per source pixel).
double magnification(const cv::Matx23d& m);

// The colour operations of `params` applied in place to an 8-bit RGB
// (CV_8UC3) or gray (CV_8UC1) image, in the order brightness, contrast,
// saturation, hue, gray, with torchvision's meanings: brightness scales
// values, contrast blends with the mean gray level, saturation blends with
// the pixel's gray level, hue rotates the HSV hue with value and HSV
// saturation kept, gray replaces each pixel by its luma. On a gray image only
// brightness and contrast apply.
void apply_color(const AugmentParams& params, cv::Mat& image);

}  // namespace imgpack
