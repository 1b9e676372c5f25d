// count_mask_labels() (mask_stats.cpp): every clean mask's labels counted
// exactly as the masks hold them; an evenly spaced subset within a byte
// budget; removed samples left out; a dataset without masks refused; a
// shard cut short since the dataset was opened an error naming it, not a
// process killed by SIGBUS.
#include "imgpack/mask_stats.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

using test::SyntheticOptions;
using test::TempDir;

SyntheticOptions masked() {
  SyntheticOptions o;
  o.masks = true;
  o.variants = 2;  // only variant 0 is counted
  o.height = 9;
  o.width = 7;
  return o;
}

// The counts over `samples`' clean masks, the slow way: from the masks the
// synthetic dataset was written with.
MaskLabelCounts expected_counts(const SyntheticOptions& o, const std::vector<int64_t>& samples) {
  MaskLabelCounts want;
  for (const int64_t s : samples) {
    std::array<bool, 256> seen{};
    for (const uint8_t label : test::synthetic_mask(o, s, 0)) {
      ++want.pixels[label];
      seen[label] = true;
    }
    for (std::size_t label = 0; label < 256; ++label) want.masks[label] += seen[label] ? 1 : 0;
  }
  want.masks_counted = samples.size();
  want.masks_total = samples.size();
  return want;
}

void expect_counts(const MaskLabelCounts& got, const MaskLabelCounts& want) {
  EXPECT_EQ(got.pixels, want.pixels);
  EXPECT_EQ(got.masks, want.masks);
  EXPECT_EQ(got.masks_counted, want.masks_counted);
  EXPECT_EQ(got.masks_total, want.masks_total);
}

TEST(MaskStats, CountsEveryCleanMasksLabels) {
  TempDir dir;
  const SyntheticOptions o = masked();
  test::write_synthetic_dataset(dir.path(), o);
  const Dataset dataset = Dataset::open(dir.path());
  std::vector<int64_t> all(o.samples);
  for (uint32_t s = 0; s < o.samples; ++s) all[s] = s;
  const MaskLabelCounts counts = count_mask_labels(dataset);
  expect_counts(counts, expected_counts(o, all));
  EXPECT_EQ(counts.pixels_counted(), uint64_t{o.samples} * o.height * o.width);
  double shares = 0;
  for (std::size_t label = 0; label < 256; ++label) {
    shares += counts.fraction(static_cast<uint8_t>(label));
  }
  EXPECT_NEAR(shares, 1.0, 1e-12);
  EXPECT_GT(counts.masks[255], 0u);  // the fill label is counted like the others
}

// Removed samples are not counted; a budget of ten masks counts every
// fourth of the 38 samples left.
TEST(MaskStats, LeavesRemovedSamplesOutAndKeepsToTheBudget) {
  TempDir dir;
  const SyntheticOptions o = masked();
  test::write_synthetic_dataset(dir.path(), o);
  test::remove_samples(dir.path(), {3, 7});
  const Dataset dataset = Dataset::open(dir.path());
  std::vector<int64_t> kept;
  for (uint32_t s = 0; s < o.samples; ++s) {
    if (s != 3 && s != 7) kept.push_back(s);
  }
  expect_counts(count_mask_labels(dataset), expected_counts(o, kept));

  std::vector<int64_t> every_fourth;
  for (std::size_t i = 0; i < kept.size(); i += 4) every_fourth.push_back(kept[i]);
  MaskLabelCounts want = expected_counts(o, every_fourth);
  want.masks_total = kept.size();
  expect_counts(count_mask_labels(dataset, 10 * dataset.mask_bytes()), want);
  EXPECT_EQ(want.masks_counted, 10u);
}

TEST(MaskStats, ADatasetWithoutMasksIsAUsageErrorNamingIt) {
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  const Dataset dataset = Dataset::open(dir.path());
  try {
    count_mask_labels(dataset);
    ADD_FAILURE() << "counted the masks of a dataset without any";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(dir.path().string()), std::string::npos) << e.what();
  }
}

// The masks column cut short after the dataset was opened: the counting
// reads it through the mapping, so the kernel answers with SIGBUS, which
// must come back as an error naming the shard and the row.
TEST(MaskStats, AShardCutShortWhileOpenIsAnErrorNamingItNotACrash) {
  TempDir dir;
  SyntheticOptions o = masked();
  o.samples = 1024;
  o.records_per_shard = 512;
  test::write_synthetic_dataset(dir.path(), o);
  const Dataset dataset = Dataset::open(dir.path());
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  for (std::size_t k = 0; k < dataset.num_shards(); ++k) {
    const std::filesystem::path shard = dataset.shard_path(k);
    const uint64_t start = test::dataset_offset(shard, format::kMasks);
    // The page holding the last mask and everything after it.
    const uint64_t cut = (start + uint64_t{511} * dataset.mask_bytes()) / page * page;
    ASSERT_GE(cut, start);
    ASSERT_EQ(::truncate(shard.c_str(), static_cast<off_t>(cut)), 0);
  }
  try {
    count_mask_labels(dataset);
    ADD_FAILURE() << "counted the masks of shards cut short";
  } catch (const UsageError& e) {
    ADD_FAILURE() << e.what();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find((dir.path() / "shard-").string()), std::string::npos) << what;
    EXPECT_NE(what.find("the masks of row"), std::string::npos) << what;
    EXPECT_NE(what.find("SIGBUS"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace imgpack
