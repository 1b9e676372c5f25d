// How a decoded image becomes a record: its fit to the record size, its
// channels and the JPEG decoder's reduced scales (ConvertOptions::resize,
// ::color and ::dct_scales). A header of their own, so
// that the decoder and the resizer need nothing else of the conversion's
// options. Plain values.
#pragma once

#include <string_view>

namespace imgpack {

// How a decoded image is fitted to the record size:
//   crop     scale so the image covers the target, then take the centre
//   stretch  scale each axis independently (aspect ratio not kept)
//   pad      scale so the image fits inside the target, letterbox with the fill colour
enum class ResizeMode { crop, stretch, pad };

// Output channels: RGB, or BT.601 luma.
enum class ColorMode { rgb, gray };

// The reduced scales a JPEG may be decoded at before the resize (TurboJPEG's
// DCT-domain downscaling; the smallest that leaves the image at least as large
// as the resize needs is used):
//   halvings  1/2, 1/4 and 1/8, the scales whose inverse DCTs libjpeg-turbo
//             has in SIMD code; else full size
//   eighths   also 3/8 and 5/8, which have none: slower to decode than 1/2
//             or full size, and so left out since; the scales of every dataset
//             whose convert_options do not name theirs
// A record's bytes depend on the scale, so a dataset keeps its set: an
// append, a resume or a merge decodes as the dataset was converted.
enum class DctScales { halvings, eighths };

// Their names, as the CLI and index.h5's convert_options spell them: "crop",
// "stretch", "pad"; "rgb", "gray"; "halvings", "eighths". The parsers throw
// UsageError naming the choices for anything else.
ResizeMode parse_resize_mode(std::string_view text);
std::string_view resize_mode_name(ResizeMode mode);
ColorMode parse_color_mode(std::string_view text);
std::string_view color_mode_name(ColorMode mode);
DctScales parse_dct_scales(std::string_view text);
std::string_view dct_scales_name(DctScales scales);

}  // namespace imgpack
