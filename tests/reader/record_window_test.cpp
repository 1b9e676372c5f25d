// Online crop and flip: the window draw, the windowed copy, and the loader
// delivering windows (LoaderOptions::crop).
#include "record_window.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <vector>

#include "imgpack/error.hpp"
#include "imgpack/loader.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack::detail {
namespace {

// A record whose every byte says where it is: (row * 16 + column) * 4 + channel.
std::vector<uint8_t> numbered(RecordShape shape) {
  std::vector<uint8_t> pixels(shape.bytes());
  std::iota(pixels.begin(), pixels.end(), uint8_t{0});
  return pixels;
}

// The window as plain index arithmetic, independent of copy_window.
std::vector<uint8_t> naive_window(const std::vector<uint8_t>& src, RecordShape stored,
                                  RecordShape delivered, const RecordWindow& w) {
  std::vector<uint8_t> out(delivered.bytes());
  for (uint32_t y = 0; y < delivered.height; ++y) {
    for (uint32_t x = 0; x < delivered.width; ++x) {
      const uint32_t sy = w.top + (w.vflip ? delivered.height - 1 - y : y);
      const uint32_t sx = w.left + (w.hflip ? delivered.width - 1 - x : x);
      for (uint32_t c = 0; c < stored.channels; ++c) {
        out[(std::size_t{y} * delivered.width + x) * stored.channels + c] =
            src[(std::size_t{sy} * stored.width + sx) * stored.channels + c];
      }
    }
  }
  return out;
}

TEST(RecordWindow, CopiesTheWindowMirroredAsAsked) {
  for (uint32_t channels : {1u, 3u, 4u}) {
    const RecordShape stored{7, 9, channels};
    const RecordShape delivered{4, 5, channels};
    const std::vector<uint8_t> src = numbered(stored);
    for (bool hflip : {false, true}) {
      for (bool vflip : {false, true}) {
        for (uint32_t top : {0u, 1u, 3u}) {
          for (uint32_t left : {0u, 2u, 4u}) {
            const RecordWindow w{top, left, hflip, vflip};
            std::vector<uint8_t> out(delivered.bytes());
            copy_window(src.data(), stored, out.data(), delivered, w);
            EXPECT_EQ(out, naive_window(src, stored, delivered, w))
                << channels << " channels, top " << top << " left " << left << " hflip " << hflip
                << " vflip " << vflip;
          }
        }
      }
    }
  }
  // Every width of a mirrored RGB row, through the vectorised groups of
  // sixteen pixels (up to three) and their scalar ends, at offsets of the window.
  const RecordShape wide{2, 53, 3};
  const std::vector<uint8_t> wide_src = numbered(wide);
  for (uint32_t width = 1; width <= wide.width; ++width) {
    for (uint32_t left = 0; left + width <= wide.width; left += 3) {
      const RecordShape delivered{2, width, 3};
      const RecordWindow w{0, left, true, false};
      std::vector<uint8_t> out(delivered.bytes());
      copy_window(wide_src.data(), wide, out.data(), delivered, w);
      EXPECT_EQ(out, naive_window(wide_src, wide, delivered, w))
          << "width " << width << " left " << left;
    }
  }
  // The whole record, unflipped: the record itself.
  const RecordShape shape{3, 4, 3};
  const std::vector<uint8_t> src = numbered(shape);
  std::vector<uint8_t> out(shape.bytes());
  copy_window(src.data(), shape, out.data(), shape, RecordWindow{});
  EXPECT_EQ(out, src);
}

// The streaming copy writes a slot in pieces: unaligned heads up to a 16-byte
// boundary, vector groups, scalar tails. Every width of a one- and a
// three-channel row, mirrored or not, at each destination offset modulo 16,
// must equal the plain index arithmetic, and write nothing outside the window.
TEST(RecordWindow, StreamingStoresCopyEveryWidthAtEveryAlignment) {
  for (uint32_t channels : {1u, 3u}) {
    const RecordShape wide{3, 70, channels};
    const std::vector<uint8_t> src = numbered(wide);
    for (Stores stores : {Stores::cached, Stores::streaming}) {
      for (uint32_t width = 1; width <= wide.width; width += (width < 40 ? 1 : 7)) {
        const RecordShape delivered{2, width, channels};
        for (bool hflip : {false, true}) {
          const RecordWindow w{1, wide.width - width, hflip, true};
          const std::vector<uint8_t> expected = naive_window(src, wide, delivered, w);
          for (std::size_t offset = 0; offset < 16; ++offset) {
            std::vector<uint8_t> buffer(delivered.bytes() + 48, 0xEE);
            copy_window(src.data(), wide, buffer.data() + 16 + offset, delivered, w, stores);
            const std::vector<uint8_t> got(buffer.begin() + 16 + static_cast<long>(offset),
                                           buffer.begin() + 16 + static_cast<long>(offset) +
                                               static_cast<long>(delivered.bytes()));
            ASSERT_EQ(got, expected)
                << channels << " channels, width " << width << " hflip " << hflip << " offset "
                << offset << " streaming " << (stores == Stores::streaming);
            const auto untouched = [](uint8_t b) { return b == 0xEE; };
            ASSERT_TRUE(std::all_of(buffer.begin(), buffer.begin() + 16 + static_cast<long>(offset),
                                    untouched));
            ASSERT_TRUE(std::all_of(buffer.begin() + 16 + static_cast<long>(offset) +
                                        static_cast<long>(delivered.bytes()),
                                    buffer.end(), untouched));
          }
        }
      }
    }
  }
}

TEST(RecordWindow, CenterCropsTakeTheMiddle) {
  CropOptions crop{4, 4, CropMode::center, 0, 0};
  const RecordWindow w = draw_window(crop, false, {8, 7, 3}, {4, 4, 3}, 1, 2, 3, 0);
  EXPECT_EQ(w, (RecordWindow{2, 1, false, false}));
}

TEST(RecordWindow, RandomWindowsAreAPureFunctionCoveringEveryPosition) {
  CropOptions crop{4, 4, CropMode::random, 0.5, 0};
  const RecordShape stored{6, 7, 3};
  const RecordShape delivered{4, 4, 3};
  std::set<std::pair<uint32_t, uint32_t>> corners;
  int mirrored = 0;
  int changed_by_epoch = 0;
  for (int64_t sample = 0; sample < 2000; ++sample) {
    const RecordWindow w = draw_window(crop, true, stored, delivered, 9, 0, sample, 1);
    EXPECT_EQ(w, draw_window(crop, true, stored, delivered, 9, 0, sample, 1));
    EXPECT_LE(w.top, 2u);
    EXPECT_LE(w.left, 3u);
    EXPECT_FALSE(w.vflip);
    corners.insert({w.top, w.left});
    mirrored += w.hflip ? 1 : 0;
    changed_by_epoch += w == draw_window(crop, true, stored, delivered, 9, 1, sample, 1) ? 0 : 1;
    // Another flip probability moves no window.
    CropOptions flipping = crop;
    flipping.vflip = 1;
    const RecordWindow f = draw_window(flipping, true, stored, delivered, 9, 0, sample, 1);
    EXPECT_EQ((std::pair{f.top, f.left}), (std::pair{w.top, w.left}));
    EXPECT_EQ(f.hflip, w.hflip);
    EXPECT_TRUE(f.vflip);
  }
  EXPECT_EQ(corners.size(), 12u);  // 3 rows x 4 columns of corners
  EXPECT_NEAR(mirrored, 1000, 150);
  EXPECT_GT(changed_by_epoch, 1800);
  // Other variants and seeds draw other windows.
  int same = 0;
  for (int64_t sample = 0; sample < 200; ++sample) {
    same += draw_window(crop, true, stored, delivered, 9, 0, sample, 1) ==
                    draw_window(crop, true, stored, delivered, 9, 0, sample, 2)
                ? 1
                : 0;
  }
  EXPECT_LT(same, 60);
}

// --- the loader --------------------------------------------------------------------------------

class LoaderCropTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.samples = 37;
    options_.variants = 2;
    options_.height = 9;
    options_.width = 11;
    options_.records_per_shard = 10;
    test::write_synthetic_dataset(dir_.path(), options_);
    std::vector<int16_t> assign(options_.samples);
    for (std::size_t s = 0; s < assign.size(); ++s) assign[s] = static_cast<int16_t>(s % 2);
    test::add_split(dir_.path(), "cv2", 2, assign);
    dataset_ = Dataset::open(dir_.path());
  }

  LoaderOptions options(CropOptions crop) const {
    LoaderOptions o;
    o.batch_size = 5;
    o.threads = 2;
    o.prefetch = 3;
    o.order.seed = 7;
    o.crop = crop;
    return o;
  }

  // Every image of `epoch`, by record, checked to be some window of the
  // record (found by trying every corner and flip) and returned with the one
  // it is.
  std::map<uint64_t, RecordWindow> read_windows(Loader& loader, uint64_t epoch,
                                                std::vector<uint8_t>* bytes = nullptr) {
    loader.set_epoch(epoch);
    std::map<uint64_t, RecordWindow> windows;
    while (std::optional<Batch> batch = loader.next()) {
      const RecordShape delivered{batch->height(), batch->width(), batch->channels()};
      EXPECT_EQ(batch->bytes(), batch->size() * delivered.bytes());
      for (std::size_t i = 0; i < batch->size(); ++i) {
        const uint64_t record = batch->records()[i];
        const uint8_t* image = batch->data_as<uint8_t>() + i * delivered.bytes();
        if (bytes != nullptr) bytes->insert(bytes->end(), image, image + delivered.bytes());
        const std::vector<uint8_t> stored_pixels = test::synthetic_pixels(
            options_, dataset_.record_sample(record), dataset_.record_variant(record));
        const RecordShape stored{options_.height, options_.width, options_.channels};
        std::optional<RecordWindow> found;
        for (uint32_t top = 0; top + delivered.height <= stored.height && !found; ++top) {
          for (uint32_t left = 0; left + delivered.width <= stored.width && !found; ++left) {
            for (int flips = 0; flips < 4 && !found; ++flips) {
              const RecordWindow w{top, left, (flips & 1) != 0, (flips & 2) != 0};
              if (naive_window(stored_pixels, stored, delivered, w) ==
                  std::vector<uint8_t>(image, image + delivered.bytes())) {
                found = w;
              }
            }
          }
        }
        EXPECT_TRUE(found) << "record " << record << " is no window of itself";
        if (found) windows[record] = *found;
      }
    }
    return windows;
  }

  test::SyntheticOptions options_;
  test::TempDir dir_;
  Dataset dataset_;
};

TEST_F(LoaderCropTest, RandomWindowsAndFlipsAreFreshEveryEpochAndIndependentOfThreads) {
  Loader loader(dataset_, options({5, 6, CropMode::automatic, 0.5, 0}));
  const std::map<uint64_t, RecordWindow> first = read_windows(loader, 0);
  ASSERT_EQ(first.size(), dataset_.num_records() / 2);  // variant rotation: one per sample
  std::set<std::pair<uint32_t, uint32_t>> corners;
  int mirrored = 0;
  for (const auto& [record, w] : first) {
    corners.insert({w.top, w.left});
    mirrored += w.hflip ? 1 : 0;
    EXPECT_FALSE(w.vflip);
  }
  EXPECT_GT(corners.size(), 8u);  // of 5 x 6 possible
  EXPECT_GT(mirrored, 5);
  EXPECT_LT(mirrored, 32);

  std::vector<uint8_t> two_threads, one_thread;
  read_windows(loader, 3, &two_threads);
  LoaderOptions single = options({5, 6, CropMode::automatic, 0.5, 0});
  single.threads = 1;
  Loader again(dataset_, single);
  read_windows(again, 3, &one_thread);
  EXPECT_EQ(two_threads, one_thread);
  int moved = 0;
  for (const auto& [record, w] : read_windows(loader, 1)) {
    moved += first.count(record) && first.at(record) == w ? 0 : 1;
  }
  EXPECT_GT(moved, 20);
}

TEST_F(LoaderCropTest, ValidationTakesTheCenterAndFloatOutputConvertsTheWindow) {
  LoaderOptions o = options({5, 7, CropMode::automatic, 0, 0});
  o.selection.split = "cv2";
  o.selection.role = Role::val;
  Loader loader(dataset_, o);
  for (const auto& [record, w] : read_windows(loader, 0)) {
    EXPECT_EQ(w, (RecordWindow{2, 2, false, false})) << record;
  }

  o.output = OutputFormat::float32_nchw;
  o.mean = {0.5f, 0.25f, 0.0f, 0.0f};
  o.stddev = {0.5f, 0.5f, 1.0f, 1.0f};
  o.crop.mode = CropMode::random;
  o.crop.hflip = 0.5;
  Loader as_float(dataset_, o);
  o.output = OutputFormat::uint8_nhwc;
  Loader as_bytes(dataset_, o);
  std::size_t checked = 0;
  while (std::optional<Batch> f = as_float.next()) {
    std::optional<Batch> b = as_bytes.next();
    ASSERT_TRUE(b);
    ASSERT_EQ(f->height(), 5u);
    ASSERT_EQ(f->width(), 7u);
    for (std::size_t i = 0; i < f->size(); ++i) {
      for (uint32_t c = 0; c < 3; ++c) {
        for (std::size_t p = 0; p < 35; ++p) {
          const float want =
              (static_cast<float>(b->data_as<uint8_t>()[(i * 35 + p) * 3 + c]) / 255.0f -
               o.mean[c]) /
              o.stddev[c];
          ASSERT_NEAR(f->data_as<float>()[(i * 3 + c) * 35 + p], want, 1e-6f);
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 0u);
}

TEST_F(LoaderCropTest, TheDeliveredViewIsWhatTheLoaderDelivers) {
  for (const LoaderOptions& o :
       {options({5, 6, CropMode::automatic, 0.5, 0.5}), options({5, 6, CropMode::center, 0, 0}),
        options({0, 0, CropMode::automatic, 1, 0})}) {
    Loader loader(dataset_, o);
    for (uint64_t epoch : {0u, 2u}) {
      loader.set_epoch(epoch);
      std::size_t checked = 0;
      while (std::optional<Batch> batch = loader.next()) {
        const std::size_t bytes = std::size_t{batch->height()} * batch->width() * batch->channels();
        std::vector<uint8_t> view(bytes);
        for (std::size_t i = 0; i < batch->size(); ++i) {
          const uint64_t record = batch->records()[i];
          copy_delivered_view(dataset_, o, epoch, dataset_.record_sample(record),
                              dataset_.record_variant(record), dataset_.record_data(record),
                              view.data());
          const uint8_t* image = batch->data_as<uint8_t>() + i * bytes;
          ASSERT_EQ(view, std::vector<uint8_t>(image, image + bytes)) << "record " << record;
          ++checked;
        }
      }
      EXPECT_EQ(checked, loader.images_per_epoch());
    }
  }
  std::vector<uint8_t> out(dataset_.record_bytes());
  EXPECT_THROW(copy_delivered_view(dataset_, options({10, 11, CropMode::random, 0, 0}), 0, 0, 0,
                                   dataset_.record_data(0), out.data()),
               UsageError);
}

TEST_F(LoaderCropTest, ImpossibleRequestsAreUsageErrors) {
  const auto message = [&](const LoaderOptions& o) -> std::string {
    try {
      Loader loader(dataset_, o);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_NE(message(options({10, 6, CropMode::random, 0, 0})).find("larger than the dataset's"),
            std::string::npos);
  EXPECT_NE(message(options({5, 0, CropMode::random, 0, 0})).find("both height and width"),
            std::string::npos);
  EXPECT_NE(message(options({0, 0, CropMode::random, 1.5, 0})).find("between 0 and 1"),
            std::string::npos);
  LoaderOptions direct = options({5, 6, CropMode::random, 0, 0});
  direct.direct_upload = DirectUpload::on;
  EXPECT_NE(message(direct).find("crop and flip need the reader threads' copy"), std::string::npos);
  EXPECT_EQ(message(options({9, 11, CropMode::random, 1, 1})), "(accepted)");  // a full flip
}

TEST(LoaderCropNames, EveryModeRoundTrips) {
  for (CropMode mode : {CropMode::automatic, CropMode::random, CropMode::center}) {
    EXPECT_EQ(parse_crop_mode(crop_mode_name(mode)), mode);
  }
  EXPECT_THROW(parse_crop_mode("middle"), UsageError);
}

}  // namespace
}  // namespace imgpack::detail
