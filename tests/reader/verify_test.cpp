#include "imgpack/verify.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "imgpack/dataset.hpp"
#include "imgpack/error.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using test::SyntheticOptions;
using test::TempDir;

// Flips one bit of row `row`'s pixels in `shard` (record_bytes bytes per row).
void flip_pixel(const fs::path& shard, uint64_t row, std::size_t record_bytes) {
  const uint64_t offset = test::images_offset(shard);
  std::string bytes = test::read_bytes(shard);
  bytes[offset + row * record_bytes + record_bytes / 2] ^= 0x10;
  test::write_bytes(shard, bytes);
}

bool mentions(const std::vector<std::string>& errors, const std::string& file,
              const std::string& problem) {
  for (const std::string& e : errors) {
    if (e.find(file) != std::string::npos && e.find(problem) != std::string::npos) return true;
  }
  return false;
}

std::string joined(const std::vector<std::string>& errors) {
  std::string text;
  for (const std::string& e : errors) text += e + "\n";
  return text;
}

TEST(Verify, CleanDatasetChecksEveryRecord) {
  TempDir dir;
  SyntheticOptions options;
  options.variants = 2;
  test::write_synthetic_dataset(dir.path(), options);  // 80 records in 5 shards
  VerifyReport report = verify_dataset(dir.path());
  EXPECT_TRUE(report.ok()) << joined(report.errors);
  EXPECT_EQ(report.records, 80u);
  EXPECT_EQ(report.shards, 5u);
  EXPECT_EQ(report.records_checked, 80u);
  EXPECT_EQ(report.bytes_checked, 80u * 90u);
  EXPECT_TRUE(report.bad_records.empty());
  EXPECT_TRUE(report.bad_shards.empty());
  EXPECT_GE(report.threads, 1u);
}

TEST(Verify, NamesEveryBadRecordWithItsShardRowAndSample) {
  TempDir dir;
  DatasetIndex index = test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  flip_pixel(dir / "shard-00002.h5", 3, 90);
  flip_pixel(dir / "shard-00000.h5", 0, 90);
  flip_pixel(dir / "shard-00000.h5", 15, 90);
  for (unsigned threads : {1u, 3u, 8u}) {
    for (std::size_t read_bytes : {std::size_t{1}, std::size_t{200}, std::size_t{1} << 20}) {
      SCOPED_TRACE("threads " + std::to_string(threads) + ", read " + std::to_string(read_bytes));
      VerifyOptions options;
      options.threads = threads;
      options.read_bytes = read_bytes;
      VerifyReport report = verify_dataset(dir.path(), options);
      EXPECT_FALSE(report.ok());
      EXPECT_TRUE(report.errors.empty()) << joined(report.errors);
      EXPECT_EQ(report.records_checked, 40u);
      ASSERT_EQ(report.bad_records.size(), 3u);
      const std::pair<uint32_t, uint64_t> expected[] = {{0, 0}, {0, 15}, {2, 3}};
      for (std::size_t i = 0; i < 3; ++i) {
        const BadRecord& b = report.bad_records[i];
        EXPECT_EQ(b.shard, expected[i].first);
        EXPECT_EQ(b.row, expected[i].second);
        EXPECT_EQ(b.shard_file, index.shards.file[b.shard]);
        EXPECT_EQ(index.records.shard[b.record], b.shard);
        EXPECT_EQ(index.records.row[b.record], b.row);
        EXPECT_EQ(b.sample, index.records.sample[b.record]);
        EXPECT_EQ(b.variant, index.records.variant[b.record]);
        EXPECT_EQ(b.sample_path, index.sample_path[static_cast<std::size_t>(b.sample)]);
      }
      EXPECT_EQ(report.bad_shards, (std::vector<uint32_t>{0, 2}));
    }
  }
}

TEST(Verify, ChecksEveryMaskAndNamesABadOneApartFromItsImage) {
  TempDir dir;
  SyntheticOptions options;
  options.masks = true;
  DatasetIndex index = test::write_synthetic_dataset(dir.path(), options);
  VerifyReport clean = verify_dataset(dir.path());
  EXPECT_TRUE(clean.ok()) << joined(clean.errors);
  EXPECT_EQ(clean.records_checked, 40u);
  EXPECT_EQ(clean.bytes_checked, 40u * (90u + 30u));

  const fs::path shard = dir / "shard-00001.h5";
  std::string bytes = test::read_bytes(shard);
  bytes[test::masks_offset(shard) + uint64_t{6} * 30 + 3] ^= 0x01;  // row 6's mask
  test::write_bytes(shard, bytes);
  flip_pixel(shard, 9, 90);  // row 9's image
  VerifyReport report = verify_dataset(dir.path());
  EXPECT_FALSE(report.ok());
  EXPECT_TRUE(report.errors.empty()) << joined(report.errors);
  ASSERT_EQ(report.bad_records.size(), 2u);
  EXPECT_EQ(report.bad_records[0].row, 6u);
  EXPECT_TRUE(report.bad_records[0].mask);
  EXPECT_EQ(report.bad_records[1].row, 9u);
  EXPECT_FALSE(report.bad_records[1].mask);
  EXPECT_EQ(report.bad_records[0].sample_path,
            index.sample_path[static_cast<std::size_t>(report.bad_records[0].sample)]);
  EXPECT_EQ(report.bad_shards, (std::vector<uint32_t>{1}));
}

TEST(Verify, KeepsGoingPastMissingAndTruncatedShards) {
  TempDir dir;
  SyntheticOptions options;
  options.samples = 64;
  options.height = 32;  // records of 3 KiB: cutting a shard's tail cuts pixels
  options.width = 32;
  test::write_synthetic_dataset(dir.path(), options);  // 4 shards of 16
  fs::remove(dir / "shard-00001.h5");
  fs::resize_file(dir / "shard-00002.h5", fs::file_size(dir / "shard-00002.h5") - 5000);
  flip_pixel(dir / "shard-00003.h5", 7, std::size_t{32} * 32 * 3);

  VerifyReport report = verify_dataset(dir.path());
  EXPECT_FALSE(report.ok());
  ASSERT_EQ(report.errors.size(), 2u) << joined(report.errors);
  EXPECT_TRUE(mentions(report.errors, "shard-00001.h5", "missing")) << joined(report.errors);
  EXPECT_TRUE(mentions(report.errors, "shard-00002.h5", "")) << joined(report.errors);
  ASSERT_EQ(report.bad_records.size(), 1u);
  EXPECT_EQ(report.bad_records[0].shard_file, "shard-00003.h5");
  EXPECT_EQ(report.bad_records[0].row, 7u);
  EXPECT_EQ(report.records_checked, 32u);  // shards 0 and 3
  EXPECT_EQ(report.bad_shards, (std::vector<uint32_t>{1, 2, 3}));
}

TEST(Verify, AgreesWithDatasetOpenOnStructure) {
  // A shard whose column disagrees with the index: open() refuses the
  // dataset, verify names the same shard and still checks the others.
  TempDir dir;
  const DatasetIndex index = test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  const std::string shard = test::relabel_in_index_only(dir.path(), index, 3);
  std::string open_error;
  try {
    Dataset::open(dir.path());
  } catch (const Error& e) {
    open_error = e.what();
  }
  ASSERT_NE(open_error.find(shard), std::string::npos) << open_error;
  VerifyReport report = verify_dataset(dir.path());
  ASSERT_EQ(report.errors.size(), 1u) << joined(report.errors);
  EXPECT_EQ(report.errors[0], open_error);
  const auto k = static_cast<std::size_t>(
      std::find(index.shards.file.begin(), index.shards.file.end(), shard) -
      index.shards.file.begin());
  ASSERT_LT(k, index.num_shards());
  EXPECT_EQ(report.records_checked, 40u - index.shards.records[k]);
}

TEST(Verify, IndexOfAnotherDatasetFailsEveryShard) {
  TempDir dir;
  test::write_synthetic_dataset(dir / "a", SyntheticOptions{});
  test::write_foreign_twin(dir / "b", SyntheticOptions{});
  fs::copy_file(dir / "b/index.h5", dir / "a/index.h5", fs::copy_options::overwrite_existing);
  // Alone, it matches neither the splits.h5 beside it nor a shard: an error
  // for each, the splits first.
  VerifyReport alone = verify_dataset(dir / "a");
  ASSERT_EQ(alone.errors.size(), 4u) << joined(alone.errors);
  EXPECT_NE(alone.errors[0].find("splits.h5: belongs to dataset"), std::string::npos)
      << joined(alone.errors);
  EXPECT_EQ(alone.records_checked, 0u);
  fs::copy_file(dir / "b/splits.h5", dir / "a/splits.h5", fs::copy_options::overwrite_existing);
  VerifyReport report = verify_dataset(dir / "a");
  EXPECT_FALSE(report.ok());
  ASSERT_EQ(report.errors.size(), 3u) << joined(report.errors);
  for (const char* shard : {"shard-00000.h5", "shard-00001.h5", "shard-00002.h5"}) {
    EXPECT_TRUE(mentions(report.errors, shard, "belongs to dataset")) << joined(report.errors);
  }
  EXPECT_EQ(report.records_checked, 0u);
}

// The shards do not depend on splits.h5: a damaged one is an error of its
// own, and every record is checked all the same.
TEST(Verify, ADamagedSplitsFileIsOneErrorAndTheRecordsAreChecked) {
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  const VerifyReport clean = verify_dataset(dir.path());
  ASSERT_TRUE(clean.ok()) << joined(clean.errors);
  fs::resize_file(dir / "splits.h5", 2000);
  const VerifyReport report = verify_dataset(dir.path());
  ASSERT_EQ(report.errors.size(), 1u) << joined(report.errors);
  EXPECT_NE(report.errors[0].find("splits.h5"), std::string::npos) << report.errors[0];
  EXPECT_NE(report.errors[0].find("do not depend on it"), std::string::npos) << report.errors[0];
  EXPECT_EQ(report.records_checked, clean.records_checked);
  EXPECT_GT(report.records_checked, 0u);
  EXPECT_TRUE(report.bad_records.empty());
}

TEST(Verify, UnreadableIndexIsOneErrorNamingIt) {
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  test::write_bytes(dir / "index.h5", "");
  VerifyReport report = verify_dataset(dir.path());
  EXPECT_FALSE(report.ok());
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_NE(report.errors[0].find("index.h5"), std::string::npos) << report.errors[0];
  EXPECT_EQ(report.records, 0u);

  fs::remove(dir / "index.h5");
  report = verify_dataset(dir.path());
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_NE(report.errors[0].find("not a complete imgpack dataset"), std::string::npos)
      << report.errors[0];
}

// A fractal heap's free-space header (signature FSHD) holds no record and
// no column, so no read of the reader's touches it; h5py's visititems() and
// h5stat do, and refuse the file when it fails its checksum. verify reads it
// too, in index.h5 and in every shard that has one.
TEST(Verify, NamesAFileWhoseFreeSpaceHeaderFailsItsChecksum) {
  TempDir dir;
  SyntheticOptions options;
  options.records_per_shard = 16;
  test::write_synthetic_dataset(dir.path(), options);
  ASSERT_TRUE(verify_dataset(dir.path()).ok());
  int flipped = 0;
  for (const fs::path& file : {dir / "index.h5", dir / "shard-00000.h5"}) {
    const std::string pristine = test::read_bytes(file);
    const std::size_t header = pristine.find("FSHD");
    if (header == std::string::npos) continue;
    std::string bytes = pristine;
    bytes[header + 8] ^= 0x10;  // past the signature, version and heap address's first byte
    test::write_bytes(file, bytes);
    const VerifyReport report = verify_dataset(dir.path());
    EXPECT_FALSE(report.ok()) << file;
    EXPECT_TRUE(mentions(report.errors, file.filename().string(), "checksum"))
        << joined(report.errors);
    test::write_bytes(file, pristine);
    ++flipped;
  }
  EXPECT_GE(flipped, 1) << "index.h5 holds its root group's links in a fractal heap";
}

TEST(Verify, NotADirectoryThrows) {
  TempDir dir;
  EXPECT_THROW(verify_dataset(dir / "nothing"), Error);
  test::write_synthetic_dataset(dir / "d", SyntheticOptions{});
  VerifyOptions options;
  options.read_bytes = 0;
  EXPECT_THROW(verify_dataset(dir / "d", options), UsageError);
}

TEST(Verify, ProgressEndsAtTheTotal) {
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  std::vector<VerifyProgress> calls;
  VerifyOptions options;
  options.threads = 2;
  options.progress = [&](const VerifyProgress& p) { calls.push_back(p); };
  VerifyReport report = verify_dataset(dir.path(), options);
  EXPECT_TRUE(report.ok());
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back().records_done, 40u);
  EXPECT_EQ(calls.back().records_total, 40u);
  EXPECT_EQ(calls.back().bytes_done, 40u * 90u);
  for (std::size_t i = 1; i < calls.size(); ++i) {
    EXPECT_LE(calls[i - 1].bytes_done, calls[i].bytes_done);
  }
  // An exception from the callback ends verification and reaches the caller.
  options.progress = [](const VerifyProgress&) { throw std::runtime_error("stop"); };
  EXPECT_THROW(verify_dataset(dir.path(), options), std::runtime_error);
}

}  // namespace
}  // namespace imgpack
