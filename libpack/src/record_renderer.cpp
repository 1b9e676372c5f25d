#include "record_renderer.hpp"

#include "imgpack/checksum.hpp"

namespace imgpack {

RecordRenderer::RecordRenderer(const ConvertOptions& options, RecordShape shape,
                               const SourceList& list)
    : list_(list), variants_(options.variants), record_bytes_(shape.bytes()) {
  decode_.color = options.color;
  decode_.max_pixels = options.max_pixels;
  decode_.fill = options.fill;
  decode_.dct_scaling = options.dct_scaling;
  spec_.width = shape.width;
  spec_.height = shape.height;
  spec_.mode = options.resize;
  spec_.fill = options.fill;
  if (options.variants > 1) {
    augmenter_.emplace(parse_augment_spec(options.augment), spec_, options.seed);
  }
}

void RecordRenderer::render(InputSlot& slot) const {
  DecodeOptions decode = decode_;
  std::optional<ImageInfo> info = probe_image(slot.file_bytes);
  if (info) {
    cv::Size need = spec_.required_source_size(info->upright_width(), info->upright_height());
    decode.min_width = static_cast<uint32_t>(need.width);
    decode.min_height = static_cast<uint32_t>(need.height);
  }
  DecodedImage image = decode_image(slot.file_bytes, decode);
  slot.source_width = info ? info->upright_width() : static_cast<uint32_t>(image.pixels.cols);
  slot.source_height = info ? info->upright_height() : static_cast<uint32_t>(image.pixels.rows);
  resize_into(image.pixels, spec_, slot.pixels.data());
  slot.checksums[0] = checksum(slot.pixels.data(), record_bytes_);
  if (augmenter_) render_augmented(slot, info, image, decode);
}

void RecordRenderer::render_augmented(InputSlot& slot, const std::optional<ImageInfo>& info,
                                      const DecodedImage& image, DecodeOptions decode) const {
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
  const cv::Mat* source = &image.pixels;
  if (source->cols < need.width || source->rows < need.height) {
    decode.min_width = static_cast<uint32_t>(need.width);
    decode.min_height = static_cast<uint32_t>(need.height);
    larger = decode_image(slot.file_bytes, decode);
    source = &larger.pixels;
  }
  cv::Mat reduced;
  const cv::Mat& from = augmenter_->reduce_source(*source, slot.augment, reduced);
  for (uint32_t v = 1; v < variants_; ++v) {
    uint8_t* out = slot.pixels.data() + v * record_bytes_;
    augmenter_->render(from, slot.augment[v - 1], out);
    slot.checksums[v] = checksum(out, record_bytes_);
  }
}

}  // namespace imgpack
