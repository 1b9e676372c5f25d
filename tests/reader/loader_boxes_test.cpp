// Boxes through the reader (dataset.cpp, box_window.cpp, slot_fill.cpp,
// loader_core.cpp): Dataset::record_boxes() holds each record's stored rows;
// every batch carries its entries' boxes as one block with per-image
// offsets, on every read path and delivery, written straight into the block
// (BatchBoxes); the online crop and flips move them as they move the pixels;
// a damaged box table is refused at open.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "box_window.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/loader.hpp"
#include "imgpack/record_shape.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

using test::SyntheticOptions;
using test::TempDir;

template <class T>
std::vector<T> to_vector(std::span<const T> values) {
  return {values.begin(), values.end()};
}

class LoaderBoxesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.samples = 21;
    options_.variants = 2;
    options_.height = 8;
    options_.width = 10;
    options_.records_per_shard = 8;
    options_.box_classes = 3;
    options_.keypoints = 3;
    test::write_synthetic_dataset(dir_.path(), options_);
    dataset_ = Dataset::open(dir_.path());
  }

  SyntheticOptions options_;
  TempDir dir_;
  Dataset dataset_;
};

TEST_F(LoaderBoxesTest, TheDatasetHoldsEveryRecordsRows) {
  ASSERT_TRUE(dataset_.has_boxes());
  EXPECT_EQ(dataset_.num_keypoints(), 3u);
  EXPECT_EQ(dataset_.index().box_class_names,
            (std::vector<std::string>{"object0", "object1", "object2"}));
  EXPECT_EQ(dataset_.index().keypoint_flip, (std::vector<int32_t>{1, 0, 2}));
  EXPECT_EQ(dataset_.index().keypoint_skeleton, (std::vector<int32_t>{0, 1, 1, 2}));
  std::size_t boxes = 0;
  for (uint64_t r = 0; r < dataset_.num_records(); ++r) {
    const RecordBoxes want =
        test::synthetic_boxes(options_, dataset_.record_sample(r), dataset_.record_variant(r));
    const Dataset::BoxRows got = dataset_.record_boxes(r);
    EXPECT_EQ(to_vector(got.boxes), want.boxes) << "record " << r;
    EXPECT_EQ(to_vector(got.classes), want.classes);
    EXPECT_EQ(to_vector(got.crowd), want.crowd);
    EXPECT_EQ(to_vector(got.keypoints), want.keypoints);
    boxes += got.size();
  }
  EXPECT_GT(boxes, 30u);
}

TEST_F(LoaderBoxesTest, EveryBatchCarriesItsEntriesBoxesOnEveryPath) {
  for (ReadPath path : {ReadPath::mapped, ReadPath::read}) {
    for (OutputFormat format : {OutputFormat::uint8_nhwc, OutputFormat::float32_nchw}) {
      SCOPED_TRACE(std::string(read_path_name(path)) + " " +
                   std::string(output_format_name(format)));
      LoaderOptions o;
      o.batch_size = 4;  // 42 records: a short last batch
      o.threads = 2;
      o.order.seed = 5;
      o.selection.variants = VariantPolicy::all;
      o.read_path = path;
      o.output = format;
      Loader loader(dataset_, o);
      std::size_t entries = 0;
      while (std::optional<Batch> batch = loader.next()) {
        ASSERT_TRUE(batch->has_boxes());
        EXPECT_EQ(batch->num_keypoints(), 3u);
        const std::span<const int64_t> offsets = batch->box_offsets();
        ASSERT_EQ(offsets.size(), batch->size() + 1);
        EXPECT_EQ(offsets.front(), 0);
        EXPECT_EQ(static_cast<std::size_t>(offsets.back()), batch->num_boxes());
        for (std::size_t i = 0; i < batch->size(); ++i) {
          const uint64_t r = batch->records()[i];
          const RecordBoxes want = test::synthetic_boxes(options_, dataset_.record_sample(r),
                                                         dataset_.record_variant(r));
          const auto first = static_cast<std::size_t>(offsets[i]);
          const auto count = static_cast<std::size_t>(offsets[i + 1]) - first;
          EXPECT_EQ(to_vector(batch->boxes().subspan(first * 4, count * 4)), want.boxes);
          EXPECT_EQ(to_vector(batch->box_classes().subspan(first, count)), want.classes);
          EXPECT_EQ(to_vector(batch->box_crowd().subspan(first, count)), want.crowd);
          EXPECT_EQ(to_vector(batch->keypoints().subspan(first * 9, count * 9)), want.keypoints);
          ++entries;
        }
      }
      EXPECT_EQ(entries, 42u);
    }
  }
}

// A left-right flip of the whole record mirrors every box (x0' = W - x1)
// and swaps each keypoint with its partner, moved the same way.
TEST_F(LoaderBoxesTest, AFlipMirrorsBoxesAndSwapsKeypointPairs) {
  LoaderOptions o;
  o.batch_size = 42;
  o.selection.variants = VariantPolicy::all;
  o.crop.hflip = 1;
  Loader loader(dataset_, o);
  std::optional<Batch> batch = loader.next();
  ASSERT_TRUE(batch);
  const float w = 10;
  std::size_t checked = 0;
  for (std::size_t i = 0; i < batch->size(); ++i) {
    const uint64_t r = batch->records()[i];
    const RecordBoxes want =
        test::synthetic_boxes(options_, dataset_.record_sample(r), dataset_.record_variant(r));
    const auto first = static_cast<std::size_t>(batch->box_offsets()[i]);
    ASSERT_EQ(static_cast<std::size_t>(batch->box_offsets()[i + 1]) - first, want.size());
    for (std::size_t b = 0; b < want.size(); ++b) {
      const float* got = batch->boxes().data() + (first + b) * 4;
      EXPECT_FLOAT_EQ(got[0], w - want.boxes[b * 4 + 2]);
      EXPECT_FLOAT_EQ(got[1], want.boxes[b * 4 + 1]);
      EXPECT_FLOAT_EQ(got[2], w - want.boxes[b * 4 + 0]);
      EXPECT_FLOAT_EQ(got[3], want.boxes[b * 4 + 3]);
      const int32_t partner[3] = {1, 0, 2};
      for (std::size_t k = 0; k < 3; ++k) {
        const float* point = batch->keypoints().data() + ((first + b) * 3 + k) * 3;
        const float* source =
            want.keypoints.data() + (b * 3 + static_cast<std::size_t>(partner[k])) * 3;
        if (source[2] == 0) {
          EXPECT_EQ(point[2], 0);
          continue;
        }
        EXPECT_FLOAT_EQ(point[0], w - source[0]);
        EXPECT_FLOAT_EQ(point[1], source[1]);
        EXPECT_EQ(point[2], source[2]);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 20u);
}

// A crop keeps only boxes inside the window, clipped to it.
TEST_F(LoaderBoxesTest, ACropClipsBoxesToItsWindow) {
  LoaderOptions o;
  o.batch_size = 42;
  o.selection.variants = VariantPolicy::all;
  o.crop.height = 4;
  o.crop.width = 5;
  o.crop.mode = CropMode::random;
  Loader loader(dataset_, o);
  std::optional<Batch> batch = loader.next();
  ASSERT_TRUE(batch);
  std::size_t stored = 0;
  for (std::size_t i = 0; i < batch->size(); ++i) {
    const uint64_t r = batch->records()[i];
    stored += dataset_.record_boxes(r).size();
    EXPECT_LE(batch->box_offsets()[i + 1] - batch->box_offsets()[i],
              static_cast<int64_t>(dataset_.record_boxes(r).size()));
  }
  EXPECT_LT(batch->num_boxes(), stored);
  for (std::size_t b = 0; b < batch->num_boxes(); ++b) {
    const float* box = batch->boxes().data() + b * 4;
    EXPECT_GE(box[0], 0);
    EXPECT_GE(box[1], 0);
    EXPECT_LE(box[2], 5);
    EXPECT_LE(box[3], 4);
    EXPECT_LT(box[0], box[2]);
    EXPECT_LT(box[1], box[3]);
  }
}

// Room for `rows` rows of K keypoints, and where window_boxes() writes them.
struct RowsOut {
  explicit RowsOut(std::size_t rows, std::size_t k = 0)
      : boxes(rows * 4, -1), classes(rows, -1), crowd(rows, 9), keypoints(rows * k * 3 + 1, -1) {}
  detail::BoxRowsTarget target() {
    return {boxes.data(), classes.data(), crowd.data(), keypoints.data()};
  }
  std::vector<float> boxes;
  std::vector<int32_t> classes;
  std::vector<uint8_t> crowd;
  std::vector<float> keypoints;
};

TEST(BoxWindow, MovesClipsAndDropsByTheVisibleShare) {
  // Two boxes in a 10 x 8 record; a 5 x 4 window at (left 4, top 2), mirrored left-right.
  const std::vector<float> boxes = {5, 3, 7, 5, 0, 0, 5, 3};
  const std::vector<int32_t> classes = {1, 2};
  const std::vector<uint8_t> crowd = {0, 1};
  const Dataset::BoxRows rows{boxes, classes, crowd, {}};
  detail::RecordWindow window;
  window.left = 4;
  window.top = 2;
  window.hflip = true;
  RowsOut out(2);
  // The first: (1, 1)-(3, 3) in the window, mirrored: (2, 1)-(4, 3). The
  // second keeps (0, 0)-(1, 1) of its 15 pixels: 1/15 < 0.3, dropped.
  ASSERT_EQ(detail::window_boxes(rows, {8, 10, 3}, {4, 5, 3}, window, {0.3, {}}, out.target()), 1u);
  EXPECT_EQ(std::vector<float>(out.boxes.begin(), out.boxes.begin() + 4),
            (std::vector<float>{2, 1, 4, 3}));
  EXPECT_EQ(out.classes[0], 1);
  ASSERT_EQ(detail::window_boxes(rows, {8, 10, 3}, {4, 5, 3}, window, {0.05, {}}, out.target()),
            2u);
  EXPECT_EQ(out.crowd, (std::vector<uint8_t>{0, 1}));
  EXPECT_EQ(std::vector<float>(out.boxes.begin() + 4, out.boxes.end()),
            (std::vector<float>{4, 0, 5, 1}));
}

// The block a batch shows: entries laid out from their stored counts,
// written in any order, the gaps of dropped rows closed; nothing moves
// where every entry keeps its rows.
TEST(BatchBoxes, LaysOutPlacesAndClosesTheGapsOfDroppedRows) {
  TempDir dir;
  SyntheticOptions options;
  options.samples = 12;
  options.height = 8;
  options.width = 10;
  options.box_classes = 3;
  options.keypoints = 3;
  test::write_synthetic_dataset(dir.path(), options);
  const Dataset dataset = Dataset::open(dir.path());
  const std::vector<uint64_t> records = {5, 0, 11, 3, 3, 7};
  const detail::BoxWindowRules rules{0.3, dataset.index().keypoint_flip};
  const RecordShape stored{dataset.height(), dataset.width(), dataset.channels()};
  const detail::BoxCounts counts(dataset);
  for (uint64_t r = 0; r < dataset.num_records(); ++r) {
    ASSERT_EQ(counts[r], dataset.record_boxes(r).size()) << "record " << r;
  }
  detail::BatchBoxes block(8, 3);
  for (const bool crop : {false, true, false}) {
    SCOPED_TRACE(crop ? "cropped" : "whole");
    const RecordShape delivered = crop ? RecordShape{4, 5, stored.channels} : stored;
    detail::RecordWindow window;
    window.left = crop ? 3 : 0;
    window.top = crop ? 2 : 0;
    window.hflip = crop;
    block.lay_out(counts, records);
    block.prefetch_for_writing(0, records.size());
    for (std::size_t i = records.size(); i-- > 0;) {  // any order
      block.place(i, dataset.record_boxes(records[i]), stored, delivered, window, rules);
    }
    block.close_gaps(records.size());
    const detail::BoxBlock got = block.block(records.size());
    ASSERT_EQ(got.offsets[0], 0);
    ASSERT_EQ(got.keypoints_per_box, 3u);
    std::size_t stored_rows = 0;
    for (std::size_t i = 0; i < records.size(); ++i) {
      const Dataset::BoxRows rows = dataset.record_boxes(records[i]);
      stored_rows += rows.size();
      RowsOut want(rows.size(), 3);
      const std::size_t kept =
          detail::window_boxes(rows, stored, delivered, window, rules, want.target());
      const auto first = static_cast<std::size_t>(got.offsets[i]);
      ASSERT_EQ(static_cast<std::size_t>(got.offsets[i + 1]) - first, kept) << "entry " << i;
      EXPECT_EQ(std::vector<float>(got.boxes + first * 4, got.boxes + (first + kept) * 4),
                std::vector<float>(want.boxes.begin(), want.boxes.begin() + kept * 4));
      EXPECT_EQ(std::vector<int32_t>(got.classes + first, got.classes + first + kept),
                std::vector<int32_t>(want.classes.begin(), want.classes.begin() + kept));
      EXPECT_EQ(std::vector<uint8_t>(got.crowd + first, got.crowd + first + kept),
                std::vector<uint8_t>(want.crowd.begin(), want.crowd.begin() + kept));
      EXPECT_EQ(std::vector<float>(got.keypoints + first * 9, got.keypoints + (first + kept) * 9),
                std::vector<float>(want.keypoints.begin(), want.keypoints.begin() + kept * 9));
    }
    if (crop) {
      EXPECT_LT(got.count, stored_rows);  // the crop dropped some: gaps were closed
    } else {
      EXPECT_EQ(got.count, stored_rows);
    }
    EXPECT_GE(block.capacity(), stored_rows);
  }
}

TEST(BatchBoxes, AnEmptyBatchStillShowsAddresses) {
  detail::BatchBoxes block(4, 0);
  block.close_gaps(0);
  const detail::BoxBlock got = block.block(0);
  EXPECT_EQ(got.count, 0u);
  EXPECT_NE(got.boxes, nullptr);
  EXPECT_NE(got.classes, nullptr);
  EXPECT_NE(got.crowd, nullptr);
  EXPECT_NE(got.keypoints, nullptr);
  EXPECT_NE(got.offsets, nullptr);
}

TEST(LoaderBoxes, ADamagedBoxTableIsRefusedAtOpen) {
  TempDir dir;
  SyntheticOptions options;
  options.box_classes = 2;
  test::write_synthetic_dataset(dir.path(), options);
  const std::string shard = (dir.path() / "shard-00000.h5").string();
  const uint64_t offset = test::dataset_offset(shard, format::kBoxes);
  {
    std::fstream file(shard, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(static_cast<std::streamoff>(offset + 2));
    char byte = 0;
    file.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x40);
    file.seekp(static_cast<std::streamoff>(offset + 2));
    file.write(&byte, 1);
  }
  try {
    (void)Dataset::open(dir.path());
    ADD_FAILURE() << "opened a dataset with a damaged box";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shard-00000.h5"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("do not match their checksum"), std::string::npos)
        << e.what();
  }
}

TEST(LoaderBoxes, ADatasetWithoutThemDeliversNone) {
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  const Dataset dataset = Dataset::open(dir.path());
  EXPECT_FALSE(dataset.has_boxes());
  LoaderOptions o;
  o.batch_size = 8;
  Loader loader(dataset, o);
  std::optional<Batch> batch = loader.next();
  ASSERT_TRUE(batch);
  EXPECT_FALSE(batch->has_boxes());
  EXPECT_TRUE(batch->box_offsets().empty());
  EXPECT_TRUE(batch->boxes().empty());
}

}  // namespace
}  // namespace imgpack
