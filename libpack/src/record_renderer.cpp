#include "record_renderer.hpp"

#include "files.hpp"
#include "imgpack/checksum.hpp"
#include "masks/mask_geometry.hpp"
#include "masks/mask_scan.hpp"

namespace imgpack {

RecordRenderer::RecordRenderer(const ConvertOptions& options, RecordShape shape,
                               const SourceList& list, const MaskColors& mask_colors)
    : list_(list),
      masks_(options.has_masks()),
      mask_root_(mask_root(options.src, options.masks)),
      mask_colors_(&mask_colors),
      mask_fill_(options.masks.fill),
      max_pixels_(options.max_pixels),
      mask_bytes_(shape.pixels()),
      variants_(options.variants),
      record_bytes_(shape.bytes()) {
  decode_.color = options.color;
  decode_.max_pixels = options.max_pixels;
  decode_.fill = options.fill;
  decode_.dct_scaling = options.dct_scaling;
  decode_.dct_scales = options.dct_scales;
  spec_.width = shape.width;
  spec_.height = shape.height;
  spec_.mode = options.resize;
  spec_.fill = options.fill;
  boxes_ = list.boxes;
  box_rules_.min_visible = options.boxes.min_visible;
  box_rules_.keypoint_flip = list.keypoint_flip;
  if (options.variants > 1) {
    augmenter_.emplace(parse_augment_spec(options.augment), spec_, options.seed);
  }
}

cv::Mat RecordRenderer::read_mask(InputSlot& slot, cv::Size full) const {
  const SourceSample& sample = list_.samples[slot.sample];
  const std::filesystem::path path = mask_root_ / sample.mask_path;
  const std::string problem = read_file(path, slot.mask_file_bytes);
  if (!problem.empty()) throw DecodeError("mask " + path.string() + ": " + problem);
  cv::Mat mask;
  try {
    mask = decode_mask(slot.mask_file_bytes, mask_colors_, max_pixels_);
  } catch (const DecodeError& e) {
    throw DecodeError("mask " + path.string() + ": " + e.what());
  }
  if (mask.size() != full) {
    throw DecodeError("mask " + path.string() + " is " + std::to_string(mask.cols) + "x" +
                      std::to_string(mask.rows) + ", its image " + std::to_string(full.width) +
                      "x" + std::to_string(full.height) +
                      " (after the image's EXIF orientation): a mask must be the size of its "
                      "image");
  }
  return mask;
}

void RecordRenderer::check_box_size(const SourceSample& sample, cv::Size full) const {
  if (sample.box_width == 0 || (static_cast<int>(sample.box_width) == full.width &&
                                static_cast<int>(sample.box_height) == full.height)) {
    return;
  }
  throw DecodeError("its annotations are for a " + std::to_string(sample.box_width) + "x" +
                    std::to_string(sample.box_height) + " image, the image is " +
                    std::to_string(full.width) + "x" + std::to_string(full.height) +
                    " (after its EXIF orientation)");
}

void RecordRenderer::render(InputSlot& slot) const {
  const SourceSample& sample = list_.samples[slot.sample];
  if (masks_ && !sample.mask_problem.empty()) throw DecodeError(sample.mask_problem);
  if (boxes_ && !sample.box_problem.empty()) throw DecodeError(sample.box_problem);
  DecodeOptions decode = decode_;
  // The header is read once: here, for the size to decode at.
  std::optional<ImageInfo> info = probe_image(slot.file_bytes);
  if (info) {
    cv::Size need = spec_.required_source_size(info->upright_width(), info->upright_height());
    decode.min_width = static_cast<uint32_t>(need.width);
    decode.min_height = static_cast<uint32_t>(need.height);
  }
  // Without a header, decode_image() says what is wrong with the file.
  DecodedImage image =
      info ? decode_image(slot.file_bytes, *info, decode) : decode_image(slot.file_bytes, decode);
  slot.source_width = info ? info->upright_width() : static_cast<uint32_t>(image.pixels.cols);
  slot.source_height = info ? info->upright_height() : static_cast<uint32_t>(image.pixels.rows);
  resize_into(image.pixels, spec_, slot.pixels.data());
  slot.checksums[0] = checksum(slot.pixels.data(), record_bytes_);
  cv::Mat mask;
  if (masks_) {
    const cv::Size full(static_cast<int>(slot.source_width), static_cast<int>(slot.source_height));
    mask = read_mask(slot, full);
    resize_mask_into(mask, image.pixels.size(), decoded_frame(image, full), spec_, mask_fill_,
                     slot.masks.data());
    slot.mask_checksums[0] = checksum(slot.masks.data(), mask_bytes_);
  }
  if (boxes_) {
    const cv::Size full(static_cast<int>(slot.source_width), static_cast<int>(slot.source_height));
    check_box_size(sample, full);
    const cv::Matx23d map =
        source_to_output(resize_map(image.pixels.size(), spec_), decoded_frame(image, full));
    place_boxes(sample, full, map, output_size(), box_rules_, slot.boxes[0]);
  }
  if (augmenter_) render_augmented(slot, info, image, mask, decode);
}

void RecordRenderer::render_augmented(InputSlot& slot, const std::optional<ImageInfo>& info,
                                      const DecodedImage& image, const cv::Mat& mask,
                                      DecodeOptions decode) const {
  const cv::Size full = info ? cv::Size(static_cast<int>(info->upright_width()),
                                        static_cast<int>(info->upright_height()))
                             : image.pixels.size();
  // Keyed by the path, not the write position, which shifts when inputs are skipped.
  const uint64_t key = augment_sample_key(list_.samples[slot.sample].path);
  slot.augment.resize(variants_ - 1);
  for (uint32_t v = 1; v < variants_; ++v) {
    slot.augment[v - 1] = augmenter_->sample(key, v, full);
  }
  // A zoomed-in variant may need more pixels than the clean image's reduced
  // JPEG decode has: decode again rather than upsample.
  const cv::Size need = augmenter_->required_source_size(slot.augment, full);
  DecodedImage larger;
  const DecodedImage* decoded = &image;
  if (image.pixels.cols < need.width || image.pixels.rows < need.height) {
    decode.min_width = static_cast<uint32_t>(need.width);
    decode.min_height = static_cast<uint32_t>(need.height);
    larger = decode_image(slot.file_bytes, image.info, decode);
    decoded = &larger;
  }
  const cv::Mat* source = &decoded->pixels;
  cv::Mat reduced;
  const cv::Mat& from = augmenter_->reduce_source(*source, slot.augment, reduced);
  for (uint32_t v = 1; v < variants_; ++v) {
    uint8_t* out = slot.pixels.data() + v * record_bytes_;
    augmenter_->render(from, slot.augment[v - 1], out);
    slot.checksums[v] = checksum(out, record_bytes_);
  }
  // Masks and boxes through the warps of the very pixels the images came from.
  const SourceFrame frame = decoded_frame(*decoded, full).resized(source->size(), from.size());
  if (boxes_) {
    const SourceSample& sample = list_.samples[slot.sample];
    for (uint32_t v = 1; v < variants_; ++v) {
      const cv::Matx23d map =
          source_to_output(augmenter_->transform(slot.augment[v - 1], from.size()), frame);
      place_boxes(sample, full, map, output_size(), box_rules_, slot.boxes[v]);
    }
  }
  if (!masks_) return;
  for (uint32_t v = 1; v < variants_; ++v) {
    uint8_t* out = slot.masks.data() + v * mask_bytes_;
    augmenter_->render_mask(mask, slot.augment[v - 1], from.size(), frame, mask_fill_, out);
    slot.mask_checksums[v] = checksum(out, mask_bytes_);
  }
}

}  // namespace imgpack
