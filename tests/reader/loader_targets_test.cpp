// The Loader's targets beyond one class (slot_fill.cpp, loader_core.cpp):
// every batch carries each entry's multi-label row and numeric targets, those
// of its record's source sample, on every read path and delivery, padding
// and variants included; a dataset without them delivers none.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "imgpack/loader.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

using test::SyntheticOptions;
using test::TempDir;

std::vector<uint32_t> bits_of(std::span<const float> values) {
  std::vector<uint32_t> bits;
  for (float v : values) bits.push_back(std::bit_cast<uint32_t>(v));
  return bits;
}

class LoaderTargetsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.samples = 23;
    options_.variants = 2;
    options_.records_per_shard = 8;
    options_.multilabel_classes = 5;
    options_.targets = 3;
    test::write_synthetic_dataset(dir_.path(), options_);
    dataset_ = Dataset::open(dir_.path());
  }

  // Reads epoch `epoch`, checking every entry's rows against its sample's,
  // and returns how many entries it checked.
  std::size_t check_epoch(Loader& loader, uint64_t epoch) {
    loader.set_epoch(epoch);
    std::size_t entries = 0;
    while (std::optional<Batch> batch = loader.next()) {
      EXPECT_EQ(batch->multilabel_classes(), 5u);
      EXPECT_EQ(batch->num_targets(), 3u);
      EXPECT_EQ(batch->multilabel().size(), batch->size() * 5);
      EXPECT_EQ(batch->targets().size(), batch->size() * 3);
      for (std::size_t i = 0; i < batch->size(); ++i) {
        const int64_t sample = batch->samples()[i];
        const std::span<const uint8_t> row = batch->multilabel().subspan(i * 5, 5);
        EXPECT_EQ(std::vector<uint8_t>(row.begin(), row.end()),
                  test::synthetic_multilabel(options_, sample))
            << "sample " << sample;
        EXPECT_EQ(bits_of(batch->targets().subspan(i * 3, 3)),
                  bits_of(test::synthetic_targets(options_, sample)))
            << "sample " << sample;
        ++entries;
      }
    }
    return entries;
  }

  SyntheticOptions options_;
  TempDir dir_;
  Dataset dataset_;
};

TEST_F(LoaderTargetsTest, EveryEntryCarriesItsSamplesRowsOnEveryPath) {
  ASSERT_EQ(dataset_.index().multilabel_names.size(), 5u);
  ASSERT_EQ(dataset_.index().target_names, (std::vector<std::string>{"y0", "y1", "y2"}));
  for (ReadPath path : {ReadPath::mapped, ReadPath::read}) {
    for (OutputFormat format : {OutputFormat::uint8_nhwc, OutputFormat::float32_nchw}) {
      SCOPED_TRACE(std::string(read_path_name(path)) + " " +
                   std::string(output_format_name(format)));
      LoaderOptions o;
      o.batch_size = 4;  // 46 records: a short last batch
      o.threads = 2;
      o.prefetch = 3;
      o.order.seed = 3;
      o.selection.variants = VariantPolicy::all;  // both variants: 46 records
      o.read_path = path;
      o.output = format;
      Loader loader(dataset_, o);
      EXPECT_EQ(check_epoch(loader, 0), 46u);
      EXPECT_EQ(check_epoch(loader, 1), 46u);
    }
  }
}

// Rank padding repeats records, and their samples' rows with them.
TEST_F(LoaderTargetsTest, PaddedEntriesCarryTheRowsOfTheRecordsTheyRepeat) {
  std::size_t entries = 0;
  uint64_t padding = 0;
  for (uint32_t rank = 0; rank < 3; ++rank) {
    LoaderOptions o;
    o.batch_size = 5;
    o.order.rank = rank;
    o.selection.variants = VariantPolicy::all;
    o.order.world_size = 3;  // 46 records over 3 ranks: 16 each, 2 of them padding
    Loader loader(dataset_, o);
    entries += check_epoch(loader, 0);
    padding += loader.stats().padding;
  }
  EXPECT_EQ(entries, 48u);
  EXPECT_EQ(padding, 2u);
}

TEST(LoaderTargets, ADatasetWithoutThemDeliversNone) {
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  const Dataset dataset = Dataset::open(dir.path());
  LoaderOptions o;
  o.batch_size = 8;
  Loader loader(dataset, o);
  std::optional<Batch> batch = loader.next();
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->multilabel_classes(), 0u);
  EXPECT_TRUE(batch->multilabel().empty());
  EXPECT_EQ(batch->num_targets(), 0u);
  EXPECT_TRUE(batch->targets().empty());
}

}  // namespace
}  // namespace imgpack
