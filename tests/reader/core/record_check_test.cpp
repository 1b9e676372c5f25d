#include "record_check.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "imgpack/checksum.hpp"
#include "imgpack/error.hpp"
#include "shard_check.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using test::SyntheticOptions;
using test::TempDir;

constexpr uint64_t kRecordBytes = uint64_t{6} * 5 * 3;  // SyntheticOptions' default shape

ShardExpectation expectation_for(const DatasetIndex& index, std::size_t shard) {
  return {index.uuid,   shard,       index.shards.records[shard],
          index.height, index.width, index.channels,
          "index.h5",   index.masks};
}

// What check_records() needs for shard `k` of a dataset in `dir`.
ShardRecords records_of(const fs::path& dir, const DatasetIndex& index, std::size_t k) {
  const fs::path path = dir / index.shards.file[k];
  const FileDescriptor fd = open_for_reading(path);
  ShardContents contents = read_shard(path, expectation_for(index, k), fd.size(path));
  return {path,
          fd.identity(path),
          contents.images_offset,
          std::move(contents.checksums.values()),
          index.mask_bytes(),
          contents.masks_offset,
          std::move(contents.mask_checksums.values())};
}

TEST(CheckRecords, FindsTheSameRowsWhateverTheThreadsAndReadSize) {
  TempDir dir;
  const DatasetIndex index = test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  for (auto [shard, row] : {std::pair<std::size_t, uint64_t>{0, 15}, {2, 0}, {2, 7}}) {
    const fs::path path = dir / index.shards.file[shard];
    std::string bytes = test::read_bytes(path);
    bytes[test::images_offset(path) + row * kRecordBytes + 11] ^= 0x01;
    test::write_bytes(path, bytes);
  }
  std::vector<ShardRecords> shards;
  for (std::size_t k = 0; k < index.num_shards(); ++k)
    shards.push_back(records_of(dir.path(), index, k));

  for (unsigned threads : {1u, 2u, 7u}) {
    for (std::size_t read_bytes : {std::size_t{1}, 3 * kRecordBytes, std::size_t{8} << 20}) {
      SCOPED_TRACE("threads " + std::to_string(threads) + ", read " + std::to_string(read_bytes));
      VerifyOptions options;
      options.threads = threads;
      options.read_bytes = read_bytes;
      const RecordCheck check = check_records(shards, kRecordBytes, options);
      EXPECT_TRUE(check.unreadable.empty());
      EXPECT_EQ(check.records_checked, 40u);
      EXPECT_EQ(check.bytes_checked, 40 * kRecordBytes);
      ASSERT_EQ(check.mismatched.size(), 3u);
      EXPECT_EQ(check.mismatched[0].shard, 0u);
      EXPECT_EQ(check.mismatched[0].row, 15u);
      EXPECT_EQ(check.mismatched[1].shard, 2u);
      EXPECT_EQ(check.mismatched[1].row, 0u);
      EXPECT_EQ(check.mismatched[2].shard, 2u);
      EXPECT_EQ(check.mismatched[2].row, 7u);
    }
  }
}

TEST(CheckRecords, ChecksMasksApartFromImages) {
  TempDir dir;
  SyntheticOptions options;
  options.masks = true;
  const DatasetIndex index = test::write_synthetic_dataset(dir.path(), options);
  const uint64_t mask_bytes = index.mask_bytes();
  ASSERT_EQ(mask_bytes, 30u);
  // Shard 1: row 4's mask and row 9's image; row 2's image and mask both.
  const fs::path path = dir / index.shards.file[1];
  std::string bytes = test::read_bytes(path);
  bytes[test::masks_offset(path) + 4 * mask_bytes + 29] ^= 0x10;
  bytes[test::images_offset(path) + 9 * kRecordBytes] ^= 0x10;
  bytes[test::images_offset(path) + 2 * kRecordBytes + 5] ^= 0x01;
  bytes[test::masks_offset(path) + 2 * mask_bytes] ^= 0x01;
  test::write_bytes(path, bytes);
  std::vector<ShardRecords> shards;
  for (std::size_t k = 0; k < index.num_shards(); ++k)
    shards.push_back(records_of(dir.path(), index, k));

  for (std::size_t read_bytes : {std::size_t{1}, 4 * kRecordBytes, std::size_t{8} << 20}) {
    VerifyOptions verify;
    verify.threads = 2;
    verify.read_bytes = read_bytes;
    const RecordCheck check = check_records(shards, kRecordBytes, verify);
    EXPECT_TRUE(check.unreadable.empty());
    EXPECT_EQ(check.records_checked, 40u);
    EXPECT_EQ(check.bytes_checked, 40 * (kRecordBytes + mask_bytes));
    ASSERT_EQ(check.mismatched.size(), 4u);
    const std::vector<std::tuple<std::size_t, uint64_t, bool>> expected = {
        {1, 2, false}, {1, 2, true}, {1, 4, true}, {1, 9, false}};
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(
          std::tuple(check.mismatched[i].shard, check.mismatched[i].row, check.mismatched[i].mask),
          expected[i])
          << i;
    }
  }
}

TEST(CheckRecords, ReportsAReplacedOrShrunkFileInsteadOfReadingIt) {
  TempDir dir;
  const DatasetIndex index = test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  std::vector<ShardRecords> shards;
  for (std::size_t k = 0; k < index.num_shards(); ++k)
    shards.push_back(records_of(dir.path(), index, k));

  // Shard 0 replaced by an identical copy renamed over it: another file.
  const fs::path first = dir / index.shards.file[0];
  fs::copy_file(first, dir / "copy.h5");
  fs::rename(dir / "copy.h5", first);
  // Shard 2 cut in the middle of its pixels after its structure was read.
  const fs::path last = dir / index.shards.file[2];
  fs::resize_file(last, test::images_offset(last) + 3 * kRecordBytes + 1);

  VerifyOptions options;
  options.threads = 1;  // with more, rows of shard 2 before the cut may be skipped too
  options.read_bytes = kRecordBytes;
  const RecordCheck check = check_records(shards, kRecordBytes, options);
  EXPECT_TRUE(check.mismatched.empty());
  ASSERT_EQ(check.unreadable.size(), 2u);
  EXPECT_EQ(check.unreadable[0].shard, 0u);
  EXPECT_EQ(check.unreadable[0].message, first.string() + ": was replaced while being checked");
  EXPECT_EQ(check.unreadable[1].shard, 2u);
  EXPECT_EQ(check.unreadable[1].message.rfind(last.string() + ": truncated while being checked", 0),
            0u)
      << check.unreadable[1].message;
  // Shard 1 whole, and the three rows of shard 2 before the cut.
  EXPECT_EQ(check.records_checked, 16u + 3u);
}

TEST(CheckRecords, RefusesZeroSizes) {
  VerifyOptions options;
  options.read_bytes = 0;
  EXPECT_THROW(check_records({}, kRecordBytes, options), UsageError);
  EXPECT_THROW(check_records({}, 0), UsageError);
  const RecordCheck nothing = check_records({}, kRecordBytes);
  EXPECT_EQ(nothing.records_checked, 0u);
  EXPECT_TRUE(nothing.mismatched.empty());
  EXPECT_TRUE(nothing.unreadable.empty());
}

}  // namespace
}  // namespace imgpack
