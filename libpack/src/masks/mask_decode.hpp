// Decoding mask files into the label maps they hold (internal to
// imgpack::pack).
//
// A mask is a label map: each pixel's value is a label id. decode_mask()
// reads it as stored, never as a picture: no EXIF orientation, no colour
// conversion, no palette expansion, no alpha compositing.
//   - PNG goes through libpng: a palette PNG gives its palette *indices*
//     (OpenCV would expand them to colours), gray gives its values (1, 2 and
//     4-bit samples unscaled), gray+alpha its gray values.
//   - Everything else (TIFF, BMP, PNM, WebP, JPEG) goes through OpenCV's
//     imdecode with IMREAD_UNCHANGED.
//   - 16-bit samples are accepted when every value fits in 8 bits.
//   - A colour mask (RGB or RGBA, alpha ignored) whose three channels are
//     equal everywhere is read as gray; one whose channels differ needs a
//     MaskColors table mapping each colour to its label.
// The header is read before any pixel memory is allocated, so a mask
// declaring more than `max_pixels` is refused without decoding it.
//
// Pure functions; safe from any thread.
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace imgpack {

// Colours of RGB masks and the labels they stand for (MaskOptions::colors),
// with the label names the table gives (empty when it has no `name` column).
class MaskColors {
 public:
  MaskColors() = default;

  // Reads a CSV with a header row and columns r, g, b and label (and
  // optionally name), each r, g, b and label an integer 0..255. Throws
  // UsageError naming the file and line for a missing column, a value out of
  // range, a colour listed twice or a table without rows.
  static MaskColors read(const std::filesystem::path& csv);

  // Adds one colour; throws UsageError if it is already there.
  void add(uint8_t r, uint8_t g, uint8_t b, uint8_t label);

  bool empty() const { return colors_.empty(); }
  // The label of colour (r, g, b), or -1 when the table does not list it.
  int label_of(uint8_t r, uint8_t g, uint8_t b) const;
  // Label id -> name, from the `name` column ("" for ids it does not name).
  const std::vector<std::string>& names() const { return names_; }
  // XXH3-64 of the table, so that a conversion's identity covers it.
  uint64_t fingerprint() const;

 private:
  std::vector<uint32_t> colors_;  // 0xRRGGBB, sorted
  std::vector<uint8_t> labels_;   // labels_[i] is the label of colors_[i]
  std::vector<std::string> names_;
};

// Reads a text file naming mask labels, one per line (line i names label i;
// trailing spaces, CRLF line ends, a UTF-8 BOM and a final empty line
// dropped). Throws UsageError naming the file if it cannot be read, is empty
// or names more than 256 labels.
std::vector<std::string> read_mask_class_names(const std::filesystem::path& path);

// Decodes a mask file's bytes into a CV_8UC1 label map of the size stored.
// `colors` may be null (no colour table). Throws DecodeError with the reason
// (without the path; the caller adds it): not an image, truncated, more than
// `max_pixels` pixels, samples that are not 8- or 16-bit integers, a 16-bit
// value above 255, a colour mask without `colors` or with a colour the table
// does not list.
cv::Mat decode_mask(std::span<const uint8_t> bytes, const MaskColors* colors, uint64_t max_pixels);

}  // namespace imgpack
