// Tests for libpack/src/preview.cpp: the contact sheet's layout, its tiles'
// pixels, sample choice, and errors.
#include "imgpack/preview.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <set>
#include <string>
#include <vector>

#include "h5.hpp"
#include "imgpack/convert.hpp"
#include "imgpack/dataset.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/growth.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;

// Pixels of (sample, variant) as stored.
cv::Mat read_record(const fs::path& dir, int64_t sample, uint16_t variant) {
  const DatasetIndex index = read_index(dir);
  for (std::size_t r = 0; r < index.num_records(); ++r) {
    if (index.records.sample[r] != sample || index.records.variant[r] != variant) continue;
    h5::File file = h5::File::open_read(dir / index.shards.file[index.records.shard[r]]);
    h5::Handle images = file.open_dataset(format::kImages);
    cv::Mat all(static_cast<int>(index.shards.records[index.records.shard[r]]),
                static_cast<int>(index.record_bytes()), CV_8UC1);
    file.check_status(
        H5Dread(images.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data), "H5Dread",
        format::kImages);
    return all.row(static_cast<int>(index.records.row[r]))
        .clone()
        .reshape(static_cast<int>(index.channels), static_cast<int>(index.height));
  }
  throw std::runtime_error("no such record");
}

class PreviewTest : public ::testing::Test {
 protected:
  // 3 classes x `per_class` PNGs of 64x48, converted to `size` with K variants.
  fs::path make_dataset(const std::string& name, int size, uint32_t variants, ColorMode color,
                        int per_class = 4) {
    const fs::path src = dir_ / ("src-" + name);
    if (!fs::exists(src)) {
      int n = 0;
      for (const char* label : {"ant", "bee", "wasp"}) {
        for (int i = 0; i < per_class; ++i, ++n) {
          test::write_image(src / label / (std::to_string(i) + ".png"),
                            test::make_rgb_image(64, 48, static_cast<uint64_t>(n)));
        }
      }
    }
    ConvertOptions options;
    options.src = src;
    options.out = dir_ / name;
    options.size = std::make_pair(static_cast<uint32_t>(size), static_cast<uint32_t>(size));
    options.color = color;
    options.variants = variants;
    if (variants > 1) options.augment = "hflip,rotate=10,brightness=0.2";
    options.threads = 1;
    convert(options);
    return options.out;
  }

  test::TempDir dir_;
};

TEST(PreviewTileSizeTest, SmallGrowLargeShrinkOthersStay) {
  EXPECT_EQ(preview_tile_size(32, 32), cv::Size(96, 96));
  EXPECT_EQ(preview_tile_size(50, 10), cv::Size(100, 20));
  EXPECT_EQ(preview_tile_size(95, 95), cv::Size(190, 190));
  EXPECT_EQ(preview_tile_size(96, 96), cv::Size(96, 96));
  EXPECT_EQ(preview_tile_size(224, 160), cv::Size(224, 160));
  EXPECT_EQ(preview_tile_size(256, 256), cv::Size(256, 256));
  EXPECT_EQ(preview_tile_size(512, 256), cv::Size(256, 128));
  EXPECT_EQ(preview_tile_size(20, 400), cv::Size(13, 256));
  EXPECT_EQ(preview_tile_size(8, 300), cv::Size(7, 256));
  EXPECT_EQ(preview_tile_size(10, 250), cv::Size(20, 500));  // growth stops at 512
}

TEST_F(PreviewTest, RowsAreSamplesAndColumnsVariants) {
  const fs::path ds = make_dataset("rgb", 96, 3, ColorMode::rgb);
  PreviewOptions options;
  options.samples = 5;
  PreviewSheet sheet = render_preview(ds, options);
  EXPECT_EQ(sheet.layout.rows, 5);
  EXPECT_EQ(sheet.layout.columns, 3);
  EXPECT_EQ(sheet.variants, 3u);
  ASSERT_EQ(sheet.samples.size(), 5u);
  EXPECT_TRUE(std::is_sorted(sheet.samples.begin(), sheet.samples.end()));
  EXPECT_EQ(sheet.image.cols, kPreviewMargin + 3 * (96 + kPreviewMargin));
  EXPECT_EQ(sheet.image.rows, kPreviewMargin + 5 * (96 + kPreviewLabelHeight + kPreviewMargin));
  EXPECT_EQ(sheet.image.cols, sheet.layout.width());
  EXPECT_EQ(sheet.image.rows, sheet.layout.height());

  for (int row = 0; row < 5; ++row) {
    for (uint16_t v = 0; v < 3; ++v) {
      const cv::Point origin(kPreviewMargin + v * (96 + kPreviewMargin),
                             kPreviewMargin + row * (96 + kPreviewLabelHeight + kPreviewMargin));
      cv::Mat tile = sheet.image(cv::Rect(origin, cv::Size(96, 96)));
      EXPECT_EQ(test::mean_abs_diff(tile, read_record(ds, sheet.samples[row], v)), 0);
      // The label strip below holds text: some pixels far from the background.
      cv::Mat strip = sheet.image(cv::Rect(origin.x, origin.y + 96, 96, kPreviewLabelHeight));
      cv::Mat gray;
      cv::cvtColor(strip, gray, cv::COLOR_RGB2GRAY);
      EXPECT_GT(cv::countNonZero(gray > 150), 10);
    }
  }

  // Written as PNG and read back unchanged.
  const fs::path png = dir_ / "sheet.png";
  write_png(png, sheet.image);
  cv::Mat back = test::opencv_decode_rgb(png);
  ASSERT_EQ(back.size(), sheet.image.size());
  EXPECT_EQ(test::mean_abs_diff(back, sheet.image), 0);
  for (const auto& entry : fs::directory_iterator(dir_.path())) {
    EXPECT_FALSE(entry.path().string().ends_with(".tmp")) << entry.path();  // none left aside
  }
}

TEST_F(PreviewTest, WithoutVariantsSamplesFillAGrid) {
  const fs::path ds = make_dataset("plain", 100, 1, ColorMode::rgb, 5);
  PreviewOptions options;
  options.samples = 11;
  PreviewSheet sheet = render_preview(ds, options);
  EXPECT_EQ(sheet.layout.columns, kPreviewGridColumns);
  EXPECT_EQ(sheet.layout.rows, 2);
  EXPECT_EQ(sheet.variants, 1u);
  EXPECT_EQ(sheet.image.cols, kPreviewMargin + 8 * (100 + kPreviewMargin));
  EXPECT_EQ(sheet.image.rows, kPreviewMargin + 2 * (100 + kPreviewLabelHeight + kPreviewMargin));
  // Sample 10 is the third tile of the second row.
  cv::Mat tile =
      sheet.image(cv::Rect(kPreviewMargin + 2 * 104,
                           kPreviewMargin + 100 + kPreviewLabelHeight + kPreviewMargin, 100, 100));
  EXPECT_EQ(test::mean_abs_diff(tile, read_record(ds, sheet.samples[10], 0)), 0);
  // The cells after the last sample stay background.
  cv::Mat empty = sheet.image(cv::Rect(kPreviewMargin + 4 * 104, kPreviewMargin + 116, 100, 100));
  EXPECT_EQ(cv::countNonZero(empty.reshape(1) != 24), 0);

  options.samples = 100;  // more than there are
  EXPECT_EQ(render_preview(ds, options).samples.size(), 15u);
}

TEST_F(PreviewTest, SmallGrayRecordsAreEnlargedWithoutBlending) {
  const fs::path ds = make_dataset("gray", 32, 2, ColorMode::gray);
  PreviewOptions options;
  options.samples = 2;
  PreviewSheet sheet = render_preview(ds, options);
  ASSERT_EQ(sheet.layout.tile_width, 96);
  EXPECT_EQ(sheet.image.type(), CV_8UC3);
  cv::Mat record = read_record(ds, sheet.samples[1], 1);
  ASSERT_EQ(record.type(), CV_8UC1);
  const cv::Point origin(kPreviewMargin + 1 * (96 + kPreviewMargin),
                         kPreviewMargin + 1 * (96 + kPreviewLabelHeight + kPreviewMargin));
  for (int y = 0; y < 32; ++y) {
    for (int x = 0; x < 32; ++x) {
      const uint8_t value = record.at<uint8_t>(y, x);
      for (int dy = 0; dy < 3; ++dy) {
        for (int dx = 0; dx < 3; ++dx) {
          ASSERT_EQ(sheet.image.at<cv::Vec3b>(origin.y + 3 * y + dy, origin.x + 3 * x + dx),
                    cv::Vec3b(value, value, value));
        }
      }
    }
  }
}

TEST_F(PreviewTest, ClassAndSeedChooseTheSamples) {
  const fs::path ds = make_dataset("choose", 48, 1, ColorMode::rgb, 6);
  const DatasetIndex index = read_index(ds);
  PreviewOptions options;
  options.samples = 4;
  options.class_name = "bee";
  PreviewSheet sheet = render_preview(ds, options);
  ASSERT_EQ(sheet.samples.size(), 4u);
  for (int64_t s : sheet.samples) EXPECT_EQ(index.class_names[index.sample_label[s]], "bee");

  options.class_name.clear();
  std::set<std::vector<int64_t>> choices;
  for (uint64_t seed = 0; seed < 5; ++seed) {
    options.seed = seed;
    choices.insert(render_preview(ds, options).samples);
    EXPECT_EQ(render_preview(ds, options).samples, render_preview(ds, options).samples);
  }
  EXPECT_GT(choices.size(), 1u);
}

// Removed samples are never shown, before compact drops their records or
// after; a class with none left is an error that says why.
TEST_F(PreviewTest, RemovedSamplesAreLeftOut) {
  const fs::path ds = make_dataset("removed", 48, 2, ColorMode::rgb, 6);
  const DatasetIndex index = read_index(ds);
  std::vector<std::string> gone;
  std::set<int64_t> gone_ids;
  for (std::size_t s = 0; s < index.num_samples(); ++s) {
    if (index.class_names[index.sample_label[s]] == "bee" || s % 3 == 0) {
      gone.push_back(index.sample_path[s]);
      gone_ids.insert(static_cast<int64_t>(s));
    }
  }
  remove_samples(ds, gone, "test");
  PreviewOptions options;
  options.samples = 100;
  for (const bool compacted : {false, true}) {
    SCOPED_TRACE(compacted ? "after compact" : "before compact");
    if (compacted) compact_dataset(ds);
    const PreviewSheet sheet = render_preview(ds, options);
    EXPECT_EQ(sheet.samples.size(), index.num_samples() - gone_ids.size());
    for (const int64_t s : sheet.samples) EXPECT_EQ(gone_ids.count(s), 0u) << s;
    options.class_name = "bee";
    try {
      render_preview(ds, options);
      ADD_FAILURE() << "a class whose every sample is removed";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("no samples of class 'bee' (6 removed"),
                std::string::npos)
          << e.what();
    }
    options.class_name.clear();
  }
}

TEST_F(PreviewTest, BadRequestsAndDamagedShardsAreErrors) {
  const fs::path ds = make_dataset("small", 32, 1, ColorMode::rgb);
  PreviewOptions options;
  options.class_name = "moth";
  try {
    render_preview(ds, options);
    ADD_FAILURE() << "unknown class accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'moth'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ant, bee, wasp"), std::string::npos) << e.what();
  }
  options.class_name.clear();
  options.samples = 0;
  EXPECT_THROW(render_preview(ds, options), UsageError);

  // A sheet too large to hold (many thousands of view columns) is refused
  // before any of it is allocated.
  options.samples = 3;
  options.views = 100000;
  options.view_height = 32;
  options.view_width = 32;
  options.view = [](const uint8_t*, int64_t, uint32_t, uint8_t*) {};
  try {
    render_preview(ds, options);
    ADD_FAILURE() << "a sheet of 100000 columns accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("3 rows x 100000 columns would be"), std::string::npos)
        << e.what();
  }
  options.views = 0;
  options.view = nullptr;

  // A shard of another dataset in place of the real one.
  const fs::path other = make_dataset("other", 40, 1, ColorMode::rgb);
  fs::copy_file(other / "shard-00000.h5", ds / "shard-00000.h5",
                fs::copy_options::overwrite_existing);
  options.samples = 3;
  try {
    render_preview(ds, options);
    ADD_FAILURE() << "mismatched shard accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shard-00000.h5"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("another dataset"), std::string::npos) << e.what();
  }

  // A forged shard of this dataset's uuid, without the shard's attributes.
  {
    const DatasetIndex index = read_index(ds);
    h5::File forged = h5::File::create(ds / "shard-00000.h5");
    forged.write_attr("/", format::kAttrUuid, index.uuid);
    const hsize_t dims[4] = {index.shards.records[0], 31, 32, 3};
    h5::Handle space(H5Screate_simple(4, dims, nullptr));
    h5::Handle images(H5Dcreate2(forged.id(), format::kImages, H5T_NATIVE_UINT8, space.get(),
                                 H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    ASSERT_TRUE(images);
  }
  try {
    render_preview(ds, options);
    ADD_FAILURE() << "forged shard accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shard-00000.h5: not an imgpack shard"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(render_preview(dir_ / "missing", options), Error);
}

// The records a preview draws are checked against their checksums: one
// flipped bit in a drawn record is an error naming its shard, never a tile.
TEST_F(PreviewTest, ADrawnRecordThatFailsItsChecksumIsAnError) {
  const fs::path ds = make_dataset("flipped", 32, 2, ColorMode::rgb);
  uint64_t record = 0;
  fs::path shard;
  {
    const Dataset dataset = Dataset::open(ds);
    record = dataset.sample_records(5)[1];
    const uint32_t k = dataset.record_shard(record);
    shard = dataset.shard_path(k);
    const uint64_t offset = dataset.shard_images_offset(k) +
                            dataset.index().records.row[record] * dataset.record_bytes() + 7;
    test::flip_bits(shard, offset, 0x10);
  }
  PreviewOptions options;
  options.samples = 100;  // every sample, so the damaged record is drawn
  try {
    render_preview(ds, options);
    ADD_FAILURE() << "a damaged record was drawn";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(shard.string() + ": the pixels of record " + std::to_string(record) +
                        " (sample 5, variant 1) does not match its checksum"),
              std::string::npos)
        << what;
  }
  // A preview that leaves the damaged record out (sample 5 is a bee) is drawn.
  options.samples = 1;
  options.class_name = "ant";
  EXPECT_EQ(render_preview(ds, options).samples.size(), 1u);
}

}  // namespace
}  // namespace imgpack

namespace imgpack {
namespace {

TEST(PreviewMasks, LabelColoursFollowPascalVoc) {
  EXPECT_EQ(mask_label_color(0), cv::Vec3b(0, 0, 0));
  EXPECT_EQ(mask_label_color(1), cv::Vec3b(128, 0, 0));
  EXPECT_EQ(mask_label_color(2), cv::Vec3b(0, 128, 0));
  EXPECT_EQ(mask_label_color(15), cv::Vec3b(192, 128, 128));
  EXPECT_EQ(mask_label_color(255), cv::Vec3b(224, 224, 192));
}

// Each tile is its record with its own mask blended over it (label 0 clear),
// so a mask that does not line up with its image shows.
TEST(PreviewMasks, EachTileShowsItsRecordsMaskOverItsPixels) {
  test::TempDir dir;
  test::SyntheticOptions options;
  options.samples = 3;
  options.variants = 2;
  options.masks = true;
  test::write_synthetic_dataset(dir.path(), options);
  const Dataset dataset = Dataset::open(dir.path());
  PreviewOptions preview;
  preview.samples = 3;
  const PreviewSheet sheet = render_preview(dir.path(), preview);
  EXPECT_TRUE(sheet.masks);
  preview.overlay_masks = false;
  const PreviewSheet plain = render_preview(dir.path(), preview);
  EXPECT_FALSE(plain.masks);
  const cv::Size tile = preview_tile_size(5, 6);
  ASSERT_EQ(sheet.samples.size(), 3u);
  for (uint64_t r = 0; r < dataset.num_records(); ++r) {
    const int row = static_cast<int>(
        std::find(sheet.samples.begin(), sheet.samples.end(), dataset.record_sample(r)) -
        sheet.samples.begin());
    const int column = dataset.record_variant(r);
    const cv::Point origin(
        kPreviewMargin + column * (tile.width + kPreviewMargin),
        kPreviewMargin + row * (tile.height + kPreviewLabelHeight + kPreviewMargin));
    cv::Mat record = cv::Mat(6, 5, CV_8UC3, const_cast<uint8_t*>(dataset.record_data(r))).clone();
    const cv::Mat mask(6, 5, CV_8UC1, const_cast<uint8_t*>(dataset.mask_data(r)));
    cv::Mat shown;
    cv::resize(record, shown, tile, 0, 0, cv::INTER_NEAREST);
    EXPECT_EQ(test::mean_abs_diff(plain.image(cv::Rect(origin, tile)), shown), 0) << r;
    overlay_mask(record, mask);
    cv::resize(record, shown, tile, 0, 0, cv::INTER_NEAREST);
    EXPECT_EQ(test::mean_abs_diff(sheet.image(cv::Rect(origin, tile)), shown), 0) << r;
    // Where the label is not 0 the blend moved the pixel halfway to its colour.
    for (int i = 0; i < 30; ++i) {
      const uint8_t label = mask.data[i];
      const cv::Vec3b before = cv::Mat(6, 5, CV_8UC3, const_cast<uint8_t*>(dataset.record_data(r)))
                                   .at<cv::Vec3b>(i / 5, i % 5);
      const cv::Vec3b after = record.at<cv::Vec3b>(i / 5, i % 5);
      for (int c = 0; c < 3; ++c) {
        const int expected =
            label == 0 ? before[c] : (before[c] + mask_label_color(label)[c] + 1) / 2;
        EXPECT_EQ(after[c], expected);
      }
    }
  }
}

// Each tile draws its record's boxes as outlines in their class's colour
// (scaled with the tile) and nothing else changes; without boxes, or with
// draw_boxes off, the tile is the record alone.
TEST(PreviewBoxes, EachTileOutlinesItsRecordsBoxesInTheirClassColour) {
  test::TempDir dir;
  test::SyntheticOptions options;
  options.samples = 4;
  options.height = 24;
  options.width = 32;
  options.box_classes = 3;
  test::write_synthetic_dataset(dir.path(), options);
  const Dataset dataset = Dataset::open(dir.path());
  PreviewOptions preview;
  preview.samples = 4;
  const PreviewSheet sheet = render_preview(dir.path(), preview);
  preview.draw_boxes = false;
  const PreviewSheet plain = render_preview(dir.path(), preview);
  const cv::Size tile = preview_tile_size(32, 24);
  const double scale = static_cast<double>(tile.width) / 32;
  std::size_t outlined = 0;
  for (uint64_t r = 0; r < dataset.num_records(); ++r) {
    const int i = static_cast<int>(
        std::find(sheet.samples.begin(), sheet.samples.end(), dataset.record_sample(r)) -
        sheet.samples.begin());
    const cv::Point origin(
        kPreviewMargin + (i % sheet.layout.columns) * (tile.width + kPreviewMargin),
        kPreviewMargin +
            (i / sheet.layout.columns) * (tile.height + kPreviewLabelHeight + kPreviewMargin));
    const cv::Mat drawn = sheet.image(cv::Rect(origin, tile));
    const cv::Mat bare = plain.image(cv::Rect(origin, tile));
    const Dataset::BoxRows rows = dataset.record_boxes(r);
    if (rows.size() == 0) {
      EXPECT_EQ(test::mean_abs_diff(drawn, bare), 0) << r;
      continue;
    }
    // The middle of each box's top edge is drawn in its class's colour.
    for (std::size_t b = 0; b < rows.size(); ++b) {
      const float* box = rows.boxes.data() + b * 4;
      const cv::Point top(static_cast<int>(std::lround((box[0] + box[2]) / 2 * scale)),
                          static_cast<int>(std::lround(box[1] * scale)));
      const cv::Vec3b colour = mask_label_color(static_cast<uint8_t>(rows.classes[b] + 1));
      bool found = false;
      for (int dy = -1; dy <= 1 && !found; ++dy) {
        const cv::Point at(top.x, std::clamp(top.y + dy, 0, tile.height - 1));
        found = drawn.at<cv::Vec3b>(at) == colour;
      }
      EXPECT_TRUE(found) << "record " << r << " box " << b;
      ++outlined;
    }
  }
  EXPECT_GT(outlined, 0u);
}

}  // namespace
}  // namespace imgpack
