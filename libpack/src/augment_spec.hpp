// What augmented variants may do (convert --augment SPEC): the spec and its
// parser, apart from the rendering (augment.hpp), so that checking the
// conversion's options needs nothing of the pipeline (internal to
// imgpack::pack). Plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace imgpack {

// How pixels outside the source are filled after a rotation, shift or zoom-out.
enum class FillMode {
  reflect,   // mirror without repeating the edge pixel (torchvision "reflect")
  constant,  // the --fill colour (torchvision fill=, Keras "constant")
  edge,      // repeat the edge pixel (torchvision "edge", Keras "nearest")
};

// What augmented variants may do. A default-constructed spec does nothing.
// Ranges are closed; the ones parse_augment_spec() accepts are listed in
// augment_spec_help().
struct AugmentSpec {
  double hflip = 0;   // probability of a left-right mirror
  double vflip = 0;   // probability of an upside-down mirror
  double rotate = 0;  // degrees: angle uniform in [-rotate, rotate]
  double shift = 0;   // fraction of the output size: per axis uniform in [-shift, shift]
  double zoom_min = 1, zoom_max = 1;  // object scale factor, uniform
  double shear = 0;                   // degrees: horizontal shear angle uniform in [-shear, shear]
  bool crop = false;                  // random resized crop (torchvision RandomResizedCrop)
  double crop_scale_min = 1, crop_scale_max = 1;  // crop area / source area, uniform
  double aspect_min = 1, aspect_max = 1;          // crop aspect / output aspect, log-uniform
  double brightness = 0;                          // factor uniform in [max(0, 1-b), 1+b]
  double contrast = 0;                            // factor uniform in [max(0, 1-c), 1+c]
  double saturation = 0;                          // factor uniform in [max(0, 1-s), 1+s]
  double hue = 0;   // hue shift uniform in [-hue, hue], in turns of the hue circle
  double gray = 0;  // probability of converting to grayscale
  FillMode fill = FillMode::reflect;

  bool has_color() const;
  // Whether a variant draws anything at random (a probability strictly
  // between 0 and 1, or a range wider than a point): without, every augmented
  // variant of an image is the same.
  bool draws() const;
};

// Parses a comma-separated spec such as
// "hflip,rotate=15,shift=0.1,zoom=0.8:1.2,crop_scale=0.35:1,brightness=0.2,fill=edge".
// Throws UsageError naming the key and its allowed range for an unknown key, a
// missing, malformed or out-of-range value, or a key given twice. An empty
// text gives the default (do-nothing) spec.
AugmentSpec parse_augment_spec(std::string_view text);

// augment_spec_help() (convert_options.hpp) lists the keys, one line each.

// For a conversion with boxes and augmented variants: the warning that
// `augment` (a spec as parse_augment_spec() reads it) fills what a rotation,
// shift, shear or zoom-out uncovers with a mirror of the image
// (fill=reflect), where objects appear again without boxes; "" where it
// does not, or without boxes or variants.
std::string reflected_objects_warning(std::string_view augment, uint32_t variants, bool boxes);

}  // namespace imgpack
