// Rendering one input into its records: decode, resize, augment, checksum
// (internal to imgpack::pack).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "augment.hpp"
#include "image/decode.hpp"
#include "image/resize.hpp"
#include "imgpack/convert_options.hpp"
#include "imgpack/record_shape.hpp"
#include "inputs/scan.hpp"
#include "masks/mask_decode.hpp"
#include "targets/box_geometry.hpp"
#include "targets/record_boxes.hpp"

namespace imgpack {

// One input in flight through the pipeline. Slots are reused round-robin, so
// the pipeline allocates nothing per image beyond what decoding needs.
struct InputSlot {
  std::size_t position = 0;  // in the write order
  std::size_t sample = 0;    // index into SourceList::samples
  std::vector<uint8_t> file_bytes;
  std::vector<uint8_t> pixels;  // variants x record bytes
  std::vector<uint64_t> checksums;
  // With masks: the mask file, and the variants' masks (variants x H x W) and checksums.
  std::vector<uint8_t> mask_file_bytes;
  std::vector<uint8_t> masks;
  std::vector<uint64_t> mask_checksums;
  // With boxes: each variant's rows.
  std::vector<RecordBoxes> boxes;
  std::vector<AugmentParams> augment;  // variants 1..K-1
  uint32_t source_width = 0;           // the input's upright size, set by render()
  uint32_t source_height = 0;
  std::string error;
};

// Turns the bytes of one input into its records. Built once per conversion;
// render() is const and safe to call from many threads at once, each with
// its own slot.
class RecordRenderer {
 public:
  // `mask_colors` (with masks; may be empty) must outlive the renderer.
  RecordRenderer(const ConvertOptions& options, RecordShape shape, const SourceList& list,
                 const MaskColors& mask_colors);

  // Decodes slot.file_bytes and renders every variant into slot.pixels:
  // variant 0 exactly as a conversion without augmentation, the others from
  // the same decode when it is large enough for them. With masks, reads and
  // decodes the sample's mask too and renders each variant's mask into
  // slot.masks with its image's geometry; with boxes, places the sample's
  // boxes in each variant (slot.boxes). Throws DecodeError or cv::Exception
  // for an input (or mask, or annotation) that cannot be used.
  void render(InputSlot& slot) const;

 private:
  // The sample's mask, full resolution, checked against its image's upright size.
  cv::Mat read_mask(InputSlot& slot, cv::Size full) const;
  void render_augmented(InputSlot& slot, const std::optional<ImageInfo>& info,
                        const DecodedImage& image, const cv::Mat& mask, DecodeOptions decode) const;
  cv::Size output_size() const {
    return {static_cast<int>(spec_.width), static_cast<int>(spec_.height)};
  }
  // Throws DecodeError where the sample's annotations name another image size.
  void check_box_size(const SourceSample& sample, cv::Size full) const;

  const SourceList& list_;
  // Masks: where they are, their colour table, the label outside the source.
  bool masks_ = false;
  std::filesystem::path mask_root_;
  const MaskColors* mask_colors_ = nullptr;
  uint8_t mask_fill_ = 255;
  // Boxes: whether the dataset has them, and how they are kept.
  bool boxes_ = false;
  BoxRules box_rules_;
  uint64_t max_pixels_ = 0;
  std::size_t mask_bytes_ = 0;
  uint32_t variants_ = 1;
  DecodeOptions decode_;  // the conversion's; min_width/min_height set per input
  ResizeSpec spec_;
  std::optional<Augmenter> augmenter_;
  std::size_t record_bytes_ = 0;
};

}  // namespace imgpack
