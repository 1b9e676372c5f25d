// Contact sheets: a PNG that shows what a dataset holds, so a user sees what
// the augmentation did before training on it.
//
// With variants (K > 1) the sheet has one row per chosen sample and its
// variants across (variant 0, the clean image, first). Without variants it is
// a grid of samples, kGridColumns wide. Every tile is the record's pixels,
// scaled to a readable size, above a strip labelled "CLASS vN". In a dataset
// with segmentation masks, each tile shows its record's mask over the
// pixels, half transparent, one colour per label (PASCAL VOC's colour map;
// label 0, the usual background, left clear), so a glance tells whether
// masks and images line up in every variant. In a dataset with boxes, each
// tile shows its record's boxes as outlines in their class's colour (the
// same colour map) and their visible keypoints as dots.
//
//   sheet width  = kMargin + columns * (tile_width + kMargin)
//   sheet height = kMargin + rows * (tile_height + kLabelHeight + kMargin)
//
// Functions here read the dataset through HDF5 (so not on any hot path); they
// are safe to call from several threads on different datasets.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

namespace imgpack {

struct PreviewOptions {
  uint32_t samples = 8;        // samples shown (fewer if the dataset has fewer)
  std::string class_name;      // only samples of this class; empty = any
  uint64_t seed = 0;           // which samples are chosen
  uint32_t max_variants = 16;  // columns per row at most, in variant order

  // Views instead of variants: with views > 0 each row shows one sample's
  // variant 0 `views` times, tile k being what `view` makes of the record for
  // k (view_height x view_width pixels, the record's channels, written to
  // `out`), labelled "CLASS eK". imgpack preview --crop shows the reader's
  // online crops of epochs 0..views-1 this way.
  using ViewFn =
      std::function<void(const uint8_t* record, int64_t sample, uint32_t k, uint8_t* out)>;
  uint32_t views = 0;
  uint32_t view_height = 0;
  uint32_t view_width = 0;
  ViewFn view;
  // With masks and views: what `view` makes of the record's mask
  // (view_height x view_width labels); the mask is not drawn without it.
  ViewFn mask_view;

  // Draw each record's mask over it (datasets with masks).
  bool overlay_masks = true;
  // Draw each record's boxes (outlines in their class's colour) and visible
  // keypoints over it (datasets with boxes; not on views).
  bool draw_boxes = true;
};

// The colour a preview gives mask label `label` (RGB): PASCAL VOC's map
// (label 255, the usual "ignore", is cream).
cv::Vec3b mask_label_color(uint8_t label);

// Blends `mask` (CV_8UC1 labels, the size of `rgb`) over `rgb` (CV_8UC3) in
// place: each pixel of a label other than 0 half its colour.
void overlay_mask(cv::Mat& rgb, const cv::Mat& mask);

// Space around and between tiles, and the height of a tile's label strip.
inline constexpr int kPreviewMargin = 4;
inline constexpr int kPreviewLabelHeight = 16;
// Samples per row of a sheet of a dataset without variants.
inline constexpr int kPreviewGridColumns = 8;

struct PreviewLayout {
  int rows = 0;
  int columns = 0;
  int tile_width = 0;  // the record as shown, without its label strip
  int tile_height = 0;

  int width() const { return kPreviewMargin + columns * (tile_width + kPreviewMargin); }
  int height() const {
    return kPreviewMargin + rows * (tile_height + kPreviewLabelHeight + kPreviewMargin);
  }
};

// The size a record of `width` x `height` is shown at: records larger than
// 256 pixels on a side shrink to fit 256, records narrower than 96 pixels grow
// by an integer factor (nearest neighbour) to at least 96 wide, as far as 512
// pixels on a side allows; others are shown as they are.
cv::Size preview_tile_size(int width, int height);

struct PreviewSheet {
  cv::Mat image;  // CV_8UC3, RGB
  PreviewLayout layout;
  std::vector<int64_t> samples;  // the samples shown, in sheet order (index.h5 rows)
  uint32_t variants = 0;         // variant columns shown per sample (1 without variants)
  uint32_t views = 0;            // view columns per sample (PreviewOptions::views)
  bool masks = false;            // masks drawn over the tiles
};

// Renders a contact sheet of the dataset in `dataset_dir`. Throws UsageError
// for an unknown class (naming the classes there are), no matching samples,
// samples == 0, or views without a view function and size, and Error naming
// the file for a missing or damaged index or shard; what `view` throws
// passes through.
PreviewSheet render_preview(const std::filesystem::path& dataset_dir,
                            const PreviewOptions& options);

// Writes an RGB image as PNG: a file crash-safely (via PATH.tmp; a symbolic
// link's target, the link kept), a device or FIFO (/dev/stdout) as it is.
// Throws Error naming the path on failure.
void write_png(const std::filesystem::path& path, const cv::Mat& rgb);

}  // namespace imgpack
