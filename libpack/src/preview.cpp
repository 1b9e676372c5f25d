#include "imgpack/preview.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string_view>

#include "files.hpp"
#include "h5.hpp"
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

h5::File open_listed_shard(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw file_error(path, "missing (listed in index.h5)");
  return h5::File::open_read(path);
}

// Reads single records out of one shard's /images, after checking its shape
// against the index.
class ShardRecords {
 public:
  ShardRecords(const fs::path& path, const DatasetIndex& index, uint64_t records)
      : file_(open_listed_shard(path)), record_bytes_(index.record_bytes()) {
    if (file_.read_string_attr("/", format::kAttrUuid) != index.uuid) {
      throw file_error(path,
                       "belongs to another dataset (its dataset_uuid differs from "
                       "index.h5's)");
    }
    images_ = file_.open_dataset(format::kImages);
    h5::Handle space(file_.check(H5Dget_space(images_.get()), "H5Dget_space", format::kImages));
    hsize_t dims[4] = {};
    if (H5Sget_simple_extent_ndims(space.get()) != 4 ||
        H5Sget_simple_extent_dims(space.get(), dims, nullptr) != 4 || dims[0] < records ||
        dims[1] != index.height || dims[2] != index.width || dims[3] != index.channels) {
      throw file_error(path, std::string(format::kImages) +
                                 " does not have the shape index.h5 "
                                 "gives (" +
                                 std::to_string(records) + " x " + std::to_string(index.height) +
                                 " x " + std::to_string(index.width) + " x " +
                                 std::to_string(index.channels) + ")");
    }
    h5::Handle type(file_.check(H5Dget_type(images_.get()), "H5Dget_type", format::kImages));
    if (H5Tget_class(type.get()) != H5T_INTEGER || H5Tget_size(type.get()) != 1) {
      throw file_error(path, std::string(format::kImages) + " is not uint8");
    }
    rows_ = records;
  }

  void read(uint64_t row, uint8_t* out) const {
    if (row >= rows_) {
      throw file_error(file_.path(), "record row " + std::to_string(row) + " is out of range");
    }
    h5::Handle space(file_.check(H5Dget_space(images_.get()), "H5Dget_space", format::kImages));
    hsize_t dims[4] = {};
    H5Sget_simple_extent_dims(space.get(), dims, nullptr);
    const hsize_t start[4] = {row, 0, 0, 0};
    const hsize_t count[4] = {1, dims[1], dims[2], dims[3]};
    file_.check_status(
        H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr),
        "H5Sselect_hyperslab", format::kImages);
    const hsize_t bytes = record_bytes_;
    h5::Handle memory(
        file_.check(H5Screate_simple(1, &bytes, nullptr), "H5Screate_simple", format::kImages));
    file_.check_status(
        H5Dread(images_.get(), H5T_NATIVE_UINT8, memory.get(), space.get(), H5P_DEFAULT, out),
        "H5Dread", format::kImages);
  }

 private:
  h5::File file_;
  h5::Handle images_;
  std::size_t record_bytes_;
  uint64_t rows_ = 0;
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

void draw_tile(cv::Mat& sheet, cv::Point origin, cv::Size tile, const cv::Mat& record,
               const std::string& label) {
  cv::Mat rgb;
  if (record.channels() == 1) {
    cv::cvtColor(record, rgb, cv::COLOR_GRAY2RGB);
  } else {
    rgb = record;
  }
  cv::Mat target = sheet(cv::Rect(origin, tile));
  if (rgb.size() == tile) {
    rgb.copyTo(target);
  } else {
    const bool grow = tile.width > rgb.cols;
    cv::resize(rgb, target, tile, 0, 0, grow ? cv::INTER_NEAREST : cv::INTER_AREA);
  }
  cv::putText(sheet, label, cv::Point(origin.x + 2, origin.y + tile.height + 12), kFont, kFontScale,
              kText, 1, cv::LINE_AA);
}

// The samples shown: `options.samples` of the eligible ones (of the class
// asked for), drawn with the seed, in index order.
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

  std::vector<int64_t> eligible;
  for (std::size_t s = 0; s < index.num_samples(); ++s) {
    if (options.class_name.empty() || index.sample_label[s] == wanted_class) {
      eligible.push_back(static_cast<int64_t>(s));
    }
  }
  if (eligible.empty()) {
    throw UsageError(dataset_dir.string() + ": no samples" +
                     (options.class_name.empty() ? "" : " of class '" + options.class_name + "'"));
  }
  CounterRng(options.seed, kPreviewStream).shuffle(std::span(eligible));
  eligible.resize(std::min<std::size_t>(eligible.size(), options.samples));
  std::sort(eligible.begin(), eligible.end());
  return eligible;
}

}  // namespace

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
  const DatasetIndex index = read_index(dataset_dir);

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
  sheet.image = cv::Mat(layout.height(), layout.width(), CV_8UC3, kBackground);

  // Which record fills each tile, by shard so every shard is opened once.
  std::map<int64_t, int> position;  // sample -> index in eligible
  for (int i = 0; i < n; ++i) position[eligible[i]] = i;
  std::map<uint32_t, std::vector<std::size_t>> by_shard;
  for (std::size_t r = 0; r < index.num_records(); ++r) {
    if (index.records.variant[r] < sheet.variants && position.count(index.records.sample[r])) {
      by_shard[index.records.shard[r]].push_back(r);
    }
  }

  std::vector<uint8_t> pixels(index.record_bytes());
  const cv::Mat record(static_cast<int>(index.height), static_cast<int>(index.width),
                       CV_8UC(static_cast<int>(index.channels)), pixels.data());
  std::vector<uint8_t> view_pixels(std::size_t{options.view_height} * options.view_width *
                                   index.channels);
  const cv::Mat view(static_cast<int>(options.view_height), static_cast<int>(options.view_width),
                     CV_8UC(static_cast<int>(index.channels)), view_pixels.data());
  const auto origin = [&](int row, int column) {
    return cv::Point(kPreviewMargin + column * (tile.width + kPreviewMargin),
                     kPreviewMargin + row * (tile.height + kPreviewLabelHeight + kPreviewMargin));
  };
  for (const auto& [shard, records] : by_shard) {
    ShardRecords reader(dataset_dir / index.shards.file[shard], index, index.shards.records[shard]);
    for (std::size_t r : records) {
      reader.read(index.records.row[r], pixels.data());
      const int64_t sample = index.records.sample[r];
      const int i = position[sample];
      const int32_t label = index.sample_label[static_cast<std::size_t>(sample)];
      const std::string name =
          label >= 0 ? index.class_names[static_cast<std::size_t>(label)] : "unlabeled";
      if (views) {
        for (uint32_t k = 0; k < options.views; ++k) {
          options.view(pixels.data(), sample, k, view_pixels.data());
          draw_tile(sheet.image, origin(i, static_cast<int>(k)), tile, view,
                    tile_label(name, 'e', k, tile.width - 2));
        }
        continue;
      }
      const uint32_t variant = index.records.variant[r];
      const int row = index.variants > 1 ? i : i / layout.columns;
      const int column = index.variants > 1 ? static_cast<int>(variant) : i % layout.columns;
      draw_tile(sheet.image, origin(row, column), tile, record,
                tile_label(name, 'v', variant, tile.width - 2));
    }
  }
  return sheet;
}

void write_png(const fs::path& path, const cv::Mat& rgb) {
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  std::vector<uint8_t> png;
  if (!cv::imencode(".png", bgr, png)) throw file_error(path, "cannot encode the PNG");
  write_file_atomic(path, std::string_view(reinterpret_cast<const char*>(png.data()), png.size()));
}

}  // namespace imgpack
