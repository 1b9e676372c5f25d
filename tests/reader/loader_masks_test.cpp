// The Loader's masks (loader_core.cpp, record_window.cpp): every batch of a
// dataset with segmentation masks carries each record's mask in the same
// slot as its image, cut with the same crop window and flips, on every read
// path and output format, and checked like the image.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "imgpack/error.hpp"
#include "imgpack/loader.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

using test::SyntheticOptions;
using test::TempDir;

// The window (top, left, flips) of a stored H x W x C record, the slow way.
std::vector<uint8_t> naive_window(const std::vector<uint8_t>& stored, RecordShape from,
                                  uint32_t height, uint32_t width, uint32_t top, uint32_t left,
                                  bool hflip, bool vflip) {
  std::vector<uint8_t> out;
  for (uint32_t y = 0; y < height; ++y) {
    const uint32_t sy = top + (vflip ? height - 1 - y : y);
    for (uint32_t x = 0; x < width; ++x) {
      const uint32_t sx = left + (hflip ? width - 1 - x : x);
      for (uint32_t c = 0; c < from.channels; ++c) {
        out.push_back(stored[(std::size_t{sy} * from.width + sx) * from.channels + c]);
      }
    }
  }
  return out;
}

class LoaderMasksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.samples = 29;
    options_.variants = 2;
    options_.height = 9;
    options_.width = 7;
    options_.records_per_shard = 8;
    options_.masks = true;
    test::write_synthetic_dataset(dir_.path(), options_);
    dataset_ = Dataset::open(dir_.path());
  }

  LoaderOptions loader_options() const {
    LoaderOptions o;
    o.batch_size = 4;  // 29 records: a short last batch
    o.threads = 2;
    o.prefetch = 3;
    o.order.seed = 5;
    return o;
  }

  // Reads epoch `epoch`, checking each entry's mask against the synthetic
  // one (whole records), and returns how many entries it checked.
  std::size_t check_whole_masks(Loader& loader, uint64_t epoch) {
    loader.set_epoch(epoch);
    std::size_t entries = 0;
    const std::size_t mask_bytes = dataset_.mask_bytes();
    while (std::optional<Batch> batch = loader.next()) {
      EXPECT_TRUE(batch->has_masks());
      EXPECT_EQ(batch->mask_bytes(), batch->size() * mask_bytes);
      for (std::size_t i = 0; i < batch->size(); ++i) {
        const uint64_t record = batch->records()[i];
        const std::vector<uint8_t> expected = test::synthetic_mask(
            options_, dataset_.record_sample(record), dataset_.record_variant(record));
        const uint8_t* mask = batch->masks() + i * mask_bytes;
        EXPECT_EQ(std::vector<uint8_t>(mask, mask + mask_bytes), expected) << "record " << record;
        const std::vector<uint8_t> pixels = test::synthetic_pixels(
            options_, dataset_.record_sample(record), dataset_.record_variant(record));
        if (batch->format() == OutputFormat::uint8_nhwc) {
          const uint8_t* image = batch->data_as<uint8_t>() + i * dataset_.record_bytes();
          EXPECT_EQ(std::vector<uint8_t>(image, image + pixels.size()), pixels);
        }
        ++entries;
      }
    }
    return entries;
  }

  SyntheticOptions options_;
  TempDir dir_;
  Dataset dataset_;
};

TEST_F(LoaderMasksTest, EveryBatchCarriesEachRecordsMaskOnEveryPathAndFormat) {
  ASSERT_TRUE(dataset_.has_masks());
  ASSERT_EQ(dataset_.mask_bytes(), 63u);
  // The read path with O_DIRECT too: masks of 63 bytes, many to a block.
  struct Path {
    ReadPath read;
    DirectIo direct;
  };
  for (Path path : {Path{ReadPath::mapped, DirectIo::off}, Path{ReadPath::read, DirectIo::off},
                    Path{ReadPath::read, DirectIo::on}, Path{ReadPath::automatic, DirectIo::off}}) {
    for (OutputFormat format : {OutputFormat::uint8_nhwc, OutputFormat::float32_nchw}) {
      SCOPED_TRACE(std::string(read_path_name(path.read)) + " direct " +
                   std::string(direct_io_name(path.direct)) + " " +
                   std::string(output_format_name(format)));
      LoaderOptions o = loader_options();
      o.read_path = path.read;
      o.direct_io = path.direct;
      o.output = format;
      o.verify_checksums = true;
      Loader loader(dataset_, o);
      EXPECT_EQ(check_whole_masks(loader, 0), 29u);
      EXPECT_EQ(check_whole_masks(loader, 1), 29u);
      const LoaderStats stats = loader.stats();
      EXPECT_EQ(stats.mask_bytes, 58u * 63u);
      EXPECT_EQ(stats.bytes, 58u * (63u + dataset_.record_bytes()));
    }
  }
}

TEST_F(LoaderMasksTest, MasksAreCutWithTheirImagesWindowAndFlips) {
  LoaderOptions o = loader_options();
  o.crop = {5, 4, CropMode::random, 0.5, 0.5};
  const RecordShape stored{options_.height, options_.width, options_.channels};
  for (uint64_t epoch : {0u, 1u, 2u}) {
    for (ReadPath path : {ReadPath::mapped, ReadPath::read}) {
      o.read_path = path;
      Loader loader(dataset_, o);
      loader.set_epoch(epoch);
      std::size_t flipped = 0, entries = 0;
      while (std::optional<Batch> batch = loader.next()) {
        ASSERT_EQ(batch->mask_bytes(), batch->size() * 20u);
        for (std::size_t i = 0; i < batch->size(); ++i) {
          const uint64_t record = batch->records()[i];
          const int64_t sample = dataset_.record_sample(record);
          const uint16_t variant = dataset_.record_variant(record);
          const std::vector<uint8_t> pixels = test::synthetic_pixels(options_, sample, variant);
          const std::vector<uint8_t> mask = test::synthetic_mask(options_, sample, variant);
          const std::vector<uint8_t> image(batch->data_as<uint8_t>() + i * 60,
                                           batch->data_as<uint8_t>() + (i + 1) * 60);
          const std::vector<uint8_t> delivered_mask(batch->masks() + i * 20,
                                                    batch->masks() + (i + 1) * 20);
          // The window the image was cut with, found the slow way, cuts the mask.
          bool found = false;
          for (uint32_t top = 0; top <= 4 && !found; ++top) {
            for (uint32_t left = 0; left <= 3 && !found; ++left) {
              for (int flips = 0; flips < 4 && !found; ++flips) {
                const bool h = (flips & 1) != 0, v = (flips & 2) != 0;
                if (naive_window(pixels, stored, 5, 4, top, left, h, v) != image) continue;
                found = true;
                flipped += h || v;
                EXPECT_EQ(delivered_mask, naive_window(mask, {stored.height, stored.width, 1}, 5, 4,
                                                       top, left, h, v))
                    << "record " << record;
              }
            }
          }
          EXPECT_TRUE(found) << "record " << record;
          // What preview --crop draws is what the loader delivered.
          std::vector<uint8_t> view(20);
          copy_delivered_mask(dataset_, o, epoch, sample, variant, mask.data(), view.data());
          EXPECT_EQ(view, delivered_mask);
          ++entries;
        }
      }
      EXPECT_EQ(entries, 29u);
      EXPECT_GT(flipped, 0u);
    }
  }
}

TEST_F(LoaderMasksTest, ADamagedMaskIsAnErrorNamingItsRow) {
  const DatasetIndex& index = dataset_.index();
  const std::filesystem::path shard = dir_ / index.shards.file[0];
  std::string bytes = test::read_bytes(shard);
  bytes[test::masks_offset(shard) + uint64_t{2} * 63 + 7] ^= 0x40;  // row 2's mask
  test::write_bytes(shard, bytes);
  const Dataset damaged = Dataset::open(dir_.path());
  EXPECT_THROW(damaged.verify_checksums(), Error);
  LoaderOptions o = loader_options();
  o.verify_checksums = true;
  o.order.mode = OrderMode::sequential;
  Loader loader(damaged, o);
  try {
    while (loader.next()) {
    }
    FAIL() << "a damaged mask was delivered";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(shard.string() + ": the mask of row 2"), std::string::npos)
        << e.what();
  }
}

TEST(LoaderMasks, ADatasetWithoutMasksDeliversNone) {
  TempDir dir;
  SyntheticOptions options;
  test::write_synthetic_dataset(dir.path(), options);
  const Dataset dataset = Dataset::open(dir.path());
  EXPECT_FALSE(dataset.has_masks());
  EXPECT_EQ(dataset.mask_bytes(), 0u);
  EXPECT_TRUE(dataset.shard_masks(0).empty());
  LoaderOptions o;
  o.batch_size = 8;
  Loader loader(dataset, o);
  std::optional<Batch> batch = loader.next();
  ASSERT_TRUE(batch);
  EXPECT_FALSE(batch->has_masks());
  EXPECT_EQ(batch->masks(), nullptr);
  EXPECT_EQ(batch->mask_bytes(), 0u);
  EXPECT_EQ(loader.stats().mask_bytes, 0u);
  EXPECT_EQ(loader.stats().bytes, 8u * dataset.record_bytes());
}

}  // namespace
}  // namespace imgpack
