#include "imgpack/preview.hpp"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>
#include <span>
#include <string_view>

#include "files.hpp"
#include "image/codecs.hpp"
#include "imgpack/checksum.hpp"
#include "imgpack/dataset.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "random.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kPreviewStream = 0x70726576696577;  // "preview"
constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;
constexpr double kFontScale = 0.35;
const cv::Scalar kBackground(24, 24, 24);
const cv::Scalar kText(235, 235, 235);

// A record's boxes as a tile draws them (record pixels, format.hpp).
struct TileBoxes {
  std::span<const float> boxes;      // [b x 4]
  std::span<const int32_t> classes;  // [b]
  std::span<const float> keypoints;  // [b x k x 3]
  std::size_t keypoints_per_box = 0;
  std::span<const int32_t> skeleton;  // [e x 2] keypoint pairs joined by a line
};

// Printable ASCII only: OpenCV's Hershey fonts draw nothing else.
std::string printable(std::string_view text) {
  std::string out;
  for (char c : text) out += (c >= 32 && c < 127) ? c : '?';
  return out;
}

int text_width(const std::string& text) {
  int baseline = 0;
  return cv::getTextSize(text, kFont, kFontScale, 1, &baseline).width;
}

// "CLASS vN" (or "CLASS eN" for views), with the class name shortened
// (ending in '~') to fit `width`.
std::string tile_label(const std::string& class_name, char kind, uint32_t n, int width) {
  const std::string suffix = std::string(" ") + kind + std::to_string(n);
  std::string name = printable(class_name);
  if (text_width(name + suffix) <= width) return name + suffix;
  while (!name.empty()) {
    name.pop_back();
    if (text_width(name + "~" + suffix) <= width) return name + "~" + suffix;
  }
  return suffix.substr(1);
}

// Draws `boxes` (record pixels) over `target`, the record scaled to the
// tile: each box's outline in its class's colour, each visible keypoint a
// dot of that colour, and the skeleton's lines between labelled keypoints.
void draw_boxes(cv::Mat& target, cv::Size record, const TileBoxes& boxes) {
  const double sx = static_cast<double>(target.cols) / record.width;
  const double sy = static_cast<double>(target.rows) / record.height;
  for (std::size_t b = 0; b < boxes.classes.size(); ++b) {
    const float* box = boxes.boxes.data() + b * 4;
    const cv::Vec3b c = mask_label_color(static_cast<uint8_t>(boxes.classes[b] % 254 + 1));
    const cv::Scalar colour(c[0], c[1], c[2]);
    cv::rectangle(target, cv::Point2d(box[0] * sx, box[1] * sy),
                  cv::Point2d(box[2] * sx - 1, box[3] * sy - 1), colour, 1, cv::LINE_8);
    const float* points = boxes.keypoints.data() + b * boxes.keypoints_per_box * 3;
    for (std::size_t e = 0; e + 1 < boxes.skeleton.size(); e += 2) {
      const float* p = points + static_cast<std::size_t>(boxes.skeleton[e]) * 3;
      const float* q = points + static_cast<std::size_t>(boxes.skeleton[e + 1]) * 3;
      if (p[2] == 0 || q[2] == 0) continue;
      cv::line(target, cv::Point2d(p[0] * sx, p[1] * sy), cv::Point2d(q[0] * sx, q[1] * sy), colour,
               1, cv::LINE_AA);
    }
    for (std::size_t k = 0; k < boxes.keypoints_per_box; ++k) {
      const float* point = points + k * 3;
      if (point[2] == 0) continue;
      cv::circle(target, cv::Point2d(point[0] * sx, point[1] * sy), 2, colour, cv::FILLED,
                 cv::LINE_AA);
    }
  }
}

// Draws `record` (with `mask` over it, when not empty, and its boxes) into its tile.
void draw_tile(cv::Mat& sheet, cv::Point origin, cv::Size tile, const cv::Mat& record,
               const cv::Mat& mask, const std::string& label, const TileBoxes& boxes = {}) {
  cv::Mat rgb;
  if (record.channels() == 1) {
    cv::cvtColor(record, rgb, cv::COLOR_GRAY2RGB);
  } else {
    rgb = mask.empty() ? record : record.clone();
  }
  if (!mask.empty()) overlay_mask(rgb, mask);
  cv::Mat target = sheet(cv::Rect(origin, tile));
  if (rgb.size() == tile) {
    rgb.copyTo(target);
  } else {
    const bool grow = tile.width > rgb.cols;
    cv::resize(rgb, target, tile, 0, 0, grow ? cv::INTER_NEAREST : cv::INTER_AREA);
  }
  if (!boxes.classes.empty()) draw_boxes(target, record.size(), boxes);
  cv::putText(sheet, label, cv::Point(origin.x + 2, origin.y + tile.height + 12), kFont, kFontScale,
              kText, 1, cv::LINE_AA);
}

// The samples shown: `options.samples` of the eligible ones (not removed,
// of the class asked for), drawn with the seed, in index order.
std::vector<int64_t> choose_samples(const DatasetIndex& index, const fs::path& dataset_dir,
                                    const PreviewOptions& options) {
  int32_t wanted_class = format::kNoLabel;
  if (!options.class_name.empty()) {
    auto it = std::find(index.class_names.begin(), index.class_names.end(), options.class_name);
    if (it == index.class_names.end()) {
      std::string names;
      for (std::size_t c = 0; c < index.class_names.size() && c < 20; ++c) {
        names += (c == 0 ? "" : ", ") + index.class_names[c];
      }
      if (index.class_names.size() > 20) names += ", ...";
      throw UsageError(dataset_dir.string() + ": no class '" + options.class_name + "'" +
                       (names.empty() ? " (the dataset is unlabeled)" : "; classes: " + names));
    }
    wanted_class = static_cast<int32_t>(it - index.class_names.begin());
  }

  // Removed samples are left out, as every reader leaves them out.
  std::vector<int64_t> eligible;
  std::size_t removed = 0;
  for (std::size_t s = 0; s < index.num_samples(); ++s) {
    if (!options.class_name.empty() && index.sample_label[s] != wanted_class) continue;
    if (index.is_removed(s)) {
      ++removed;
    } else {
      eligible.push_back(static_cast<int64_t>(s));
    }
  }
  if (eligible.empty()) {
    throw UsageError(
        dataset_dir.string() + ": no samples" +
        (options.class_name.empty() ? "" : " of class '" + options.class_name + "'") +
        (removed > 0 ? " (" + std::to_string(removed) + " removed by imgpack remove)" : ""));
  }
  CounterRng(options.seed, kPreviewStream).shuffle(std::span(eligible));
  eligible.resize(std::min<std::size_t>(eligible.size(), options.samples));
  std::sort(eligible.begin(), eligible.end());
  return eligible;
}

}  // namespace

cv::Vec3b mask_label_color(uint8_t label) {
  // PASCAL VOC's colour map: the label's bits spread over the three
  // channels' high bits.
  uint8_t r = 0, g = 0, b = 0;
  unsigned c = label;
  for (int shift = 7; shift >= 0 && c != 0; --shift, c >>= 3) {
    r |= static_cast<uint8_t>((c & 1) << shift);
    g |= static_cast<uint8_t>(((c >> 1) & 1) << shift);
    b |= static_cast<uint8_t>(((c >> 2) & 1) << shift);
  }
  return {r, g, b};
}

void overlay_mask(cv::Mat& rgb, const cv::Mat& mask) {
  CV_Assert(rgb.type() == CV_8UC3 && mask.type() == CV_8UC1 && rgb.size() == mask.size());
  for (int y = 0; y < rgb.rows; ++y) {
    auto* pixel = rgb.ptr<cv::Vec3b>(y);
    const uint8_t* label = mask.ptr<uint8_t>(y);
    for (int x = 0; x < rgb.cols; ++x) {
      if (label[x] == 0) continue;
      const cv::Vec3b colour = mask_label_color(label[x]);
      for (int c = 0; c < 3; ++c) {
        pixel[x][c] = static_cast<uint8_t>((pixel[x][c] + colour[c] + 1) / 2);
      }
    }
  }
}

cv::Size preview_tile_size(int width, int height) {
  const int longest = std::max(width, height);
  if (longest > 256) {
    const double scale = 256.0 / longest;
    return {std::max(1, static_cast<int>(std::lround(width * scale))),
            std::max(1, static_cast<int>(std::lround(height * scale)))};
  }
  if (width < 96) {
    const int factor = std::max(1, std::min((96 + width - 1) / width, 512 / longest));
    return {width * factor, height * factor};
  }
  return {width, height};
}

PreviewSheet render_preview(const fs::path& dataset_dir, const PreviewOptions& options) {
  if (options.samples == 0) throw UsageError("PreviewOptions::samples must be at least 1");
  if (options.max_variants == 0) throw UsageError("at least one variant column is needed");
  if (options.views > 0 && (!options.view || options.view_height == 0 || options.view_width == 0)) {
    throw UsageError("PreviewOptions::views needs a view function and its size");
  }
  const Dataset dataset = Dataset::open(dataset_dir);
  const DatasetIndex& index = dataset.index();

  const std::vector<int64_t> eligible = choose_samples(index, dataset_dir, options);

  PreviewSheet sheet;
  sheet.samples = eligible;
  const bool views = options.views > 0;
  sheet.variants = views ? 1 : std::min(index.variants, options.max_variants);
  sheet.views = options.views;
  const auto n = static_cast<int>(eligible.size());
  PreviewLayout& layout = sheet.layout;
  if (views) {
    layout.rows = n;
    layout.columns = static_cast<int>(options.views);
  } else if (index.variants > 1) {
    layout.rows = n;
    layout.columns = static_cast<int>(sheet.variants);
  } else {
    layout.columns = std::min(n, kPreviewGridColumns);
    layout.rows = (n + layout.columns - 1) / layout.columns;
  }
  const cv::Size tile =
      views ? preview_tile_size(static_cast<int>(options.view_width),
                                static_cast<int>(options.view_height))
            : preview_tile_size(static_cast<int>(index.width), static_cast<int>(index.height));
  layout.tile_width = tile.width;
  layout.tile_height = tile.height;
  // In 64 bits: layout.width() and height() are ints, which a sheet of many
  // thousands of columns would overflow.
  const int64_t sheet_width =
      kPreviewMargin + int64_t{layout.columns} * (layout.tile_width + kPreviewMargin);
  const int64_t sheet_height =
      kPreviewMargin +
      int64_t{layout.rows} * (layout.tile_height + kPreviewLabelHeight + kPreviewMargin);
  constexpr int64_t kMaxSide = 65535;
  constexpr int64_t kMaxBytes = int64_t{1} << 30;
  if (sheet_width > kMaxSide || sheet_height > kMaxSide ||
      sheet_width * sheet_height * 3 > kMaxBytes) {
    throw UsageError("the sheet of " + std::to_string(layout.rows) + " rows x " +
                     std::to_string(layout.columns) + " columns would be " +
                     std::to_string(sheet_width) + "x" + std::to_string(sheet_height) +
                     " pixels, more than a preview holds (65535 a side, 1 GiB); show fewer "
                     "samples (PreviewOptions::samples), variants or epochs");
  }
  sheet.image = cv::Mat(layout.height(), layout.width(), CV_8UC3, kBackground);

  std::vector<uint8_t> pixels(index.record_bytes());
  const cv::Mat record(static_cast<int>(index.height), static_cast<int>(index.width),
                       CV_8UC(static_cast<int>(index.channels)), pixels.data());
  std::vector<uint8_t> view_pixels(std::size_t{options.view_height} * options.view_width *
                                   index.channels);
  const cv::Mat view(static_cast<int>(options.view_height), static_cast<int>(options.view_width),
                     CV_8UC(static_cast<int>(index.channels)), view_pixels.data());
  // The masks drawn over the tiles, when the dataset has them.
  const bool masks = index.masks && options.overlay_masks && (!views || options.mask_view);
  sheet.masks = masks;
  std::vector<uint8_t> mask_pixels(masks ? index.mask_bytes() : 0);
  const cv::Mat mask = masks ? cv::Mat(static_cast<int>(index.height),
                                       static_cast<int>(index.width), CV_8UC1, mask_pixels.data())
                             : cv::Mat();
  std::vector<uint8_t> mask_view_pixels(
      masks && views ? std::size_t{options.view_height} * options.view_width : 0);
  const cv::Mat mask_view = masks && views ? cv::Mat(static_cast<int>(options.view_height),
                                                     static_cast<int>(options.view_width), CV_8UC1,
                                                     mask_view_pixels.data())
                                           : cv::Mat();
  const auto origin = [&](int row, int column) {
    return cv::Point(kPreviewMargin + column * (tile.width + kPreviewMargin),
                     kPreviewMargin + row * (tile.height + kPreviewLabelHeight + kPreviewMargin));
  };

  // Each shown sample's records, read through the Dataset opened above (so
  // checked as every reader checks a dataset) and each against its checksum:
  // a preview never draws damaged pixels as if they were the dataset's.
  const auto checked = [&](uint64_t r, std::span<const uint8_t> bytes, uint64_t expected,
                           const char* what) {
    if (checksum(bytes) == expected) return;
    throw file_error(dataset.shard_path(dataset.record_shard(r)),
                     std::string(what) + " of record " + std::to_string(r) + " (sample " +
                         std::to_string(dataset.record_sample(r)) + ", variant " +
                         std::to_string(dataset.record_variant(r)) +
                         ") does not match its checksum: the shard is damaged (imgpack "
                         "verify names every damaged record)");
  };
  for (int i = 0; i < n; ++i) {
    const int64_t sample = eligible[static_cast<std::size_t>(i)];
    const int32_t label = index.sample_label[static_cast<std::size_t>(sample)];
    const std::string name =
        label >= 0 ? index.class_names[static_cast<std::size_t>(label)] : "unlabeled";
    for (const uint64_t r : dataset.sample_records(static_cast<uint64_t>(sample))) {
      const uint32_t variant = dataset.record_variant(r);
      if (variant >= sheet.variants) continue;
      dataset.read_record(r, pixels.data());
      checked(r, pixels, dataset.record_checksum(r), "the pixels");
      if (masks) {
        dataset.read_mask(r, mask_pixels.data());
        checked(r, mask_pixels, dataset.record_mask_checksum(r), "the mask");
      }
      if (views) {
        for (uint32_t k = 0; k < options.views; ++k) {
          options.view(pixels.data(), sample, k, view_pixels.data());
          if (masks) options.mask_view(mask_pixels.data(), sample, k, mask_view_pixels.data());
          draw_tile(sheet.image, origin(i, static_cast<int>(k)), tile, view, mask_view,
                    tile_label(name, 'e', k, tile.width - 2));
        }
        continue;
      }
      TileBoxes boxes;
      if (options.draw_boxes && dataset.has_boxes()) {
        const Dataset::BoxRows rows = dataset.record_boxes(r);
        boxes = {rows.boxes, rows.classes, rows.keypoints, dataset.num_keypoints(),
                 index.keypoint_skeleton};
      }
      const int row = index.variants > 1 ? i : i / layout.columns;
      const int column = index.variants > 1 ? static_cast<int>(variant) : i % layout.columns;
      draw_tile(sheet.image, origin(row, column), tile, record, mask,
                tile_label(name, 'v', variant, tile.width - 2), boxes);
    }
  }
  return sheet;
}

void write_png(const fs::path& path, const cv::Mat& rgb) {
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  std::vector<uint8_t> png;
  if (!codecs::encode(".png", bgr, png)) throw file_error(path, "cannot encode the PNG");
  write_output_file(path, std::string_view(reinterpret_cast<const char*>(png.data()), png.size()));
}

}  // namespace imgpack
