// How a decoded image becomes a record: its fit to the record size and its
// channels (ConvertOptions::resize and ::color). A header of their own, so
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

// Their names, as the CLI and index.h5's convert_options spell them: "crop",
// "stretch", "pad"; "rgb", "gray". The parsers throw UsageError naming the
// choices for anything else.
ResizeMode parse_resize_mode(std::string_view text);
std::string_view resize_mode_name(ResizeMode mode);
ColorMode parse_color_mode(std::string_view text);
std::string_view color_mode_name(ColorMode mode);

}  // namespace imgpack
