#include "imgpack/shard_check.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "imgpack/checksum.hpp"
#include "imgpack/error.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using test::SyntheticOptions;
using test::TempDir;

constexpr uint64_t kRecordBytes = uint64_t{6} * 5 * 3;  // SyntheticOptions' default shape

ShardExpectation expectation_for(const DatasetIndex& index, std::size_t shard) {
  return {index.uuid, shard, index.shard_records[shard], index.height, index.width, index.channels};
}

// read_shard() of `path` expecting `expected`, returning the error's text ("" if none).
std::string read_shard_error(const fs::path& path, const ShardExpectation& expected) {
  try {
    read_shard(path, expected, fs::file_size(path));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// What check_records() needs for shard `k` of a dataset in `dir`.
ShardRecords records_of(const fs::path& dir, const DatasetIndex& index, std::size_t k) {
  const fs::path path = dir / index.shard_file[k];
  const FileDescriptor fd = open_for_reading(path);
  ShardContents contents = read_shard(path, expectation_for(index, k), fd.size(path));
  return {path, fd.identity(path), contents.images_offset, std::move(contents.checksums)};
}

TEST(ReadShard, ReturnsTheColumnsAndWhereThePixelsAre) {
  TempDir dir;
  SyntheticOptions options;
  const DatasetIndex index = test::write_synthetic_dataset(dir.path(), options);
  const fs::path path = dir / index.shard_file[1];
  const ShardContents contents = read_shard(path, expectation_for(index, 1), fs::file_size(path));

  ASSERT_EQ(index.shard_records[1], 16u);
  EXPECT_EQ(contents.images_offset, test::images_offset(path));
  EXPECT_EQ(contents.images_bytes, 16 * kRecordBytes);
  ASSERT_EQ(contents.samples.size(), 16u);
  ASSERT_EQ(contents.labels.size(), 16u);
  ASSERT_EQ(contents.variants.size(), 16u);
  ASSERT_EQ(contents.checksums.size(), 16u);
  const std::string bytes = test::read_bytes(path);
  for (uint64_t r = 0; r < index.num_records(); ++r) {
    if (index.record_shard[r] != 1) continue;
    const uint64_t row = index.record_row[r];
    const int64_t sample = index.record_sample[r];
    EXPECT_EQ(contents.samples[row], sample);
    EXPECT_EQ(contents.variants[row], index.record_variant[r]);
    EXPECT_EQ(contents.labels[row], index.sample_label[static_cast<std::size_t>(sample)]);
    const std::vector<uint8_t> pixels = test::synthetic_pixels(options, sample, 0);
    EXPECT_EQ(0, bytes.compare(contents.images_offset + row * kRecordBytes, kRecordBytes,
                               reinterpret_cast<const char*>(pixels.data()), pixels.size()));
    EXPECT_EQ(contents.checksums[row], checksum(pixels.data(), pixels.size()));
  }
}

TEST(ReadShard, RefusesAShardThatIsNotTheOneExpectedNamingFileAndSource) {
  TempDir dir;
  const DatasetIndex index = test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  const fs::path path = dir / index.shard_file[1];
  const ShardExpectation good = expectation_for(index, 1);
  ASSERT_EQ(read_shard_error(path, good), "");

  ShardExpectation other_dataset = good;
  other_dataset.uuid = "5e7a0000-0000-4000-8000-00000000beef";
  other_dataset.expected_by = "the conversion being resumed";
  EXPECT_EQ(read_shard_error(path, other_dataset),
            path.string() + ": belongs to dataset " + index.uuid +
                ", but the conversion being resumed is dataset " + other_dataset.uuid +
                " (a shard from another dataset?)");

  ShardExpectation other_shard = good;
  other_shard.shard = 2;
  EXPECT_EQ(read_shard_error(path, other_shard),
            path.string() + ": is shard 1, index.h5 lists it as 2");

  ShardExpectation more_records = good;
  more_records.records = 17;
  EXPECT_EQ(read_shard_error(path, more_records),
            path.string() + ": /images has shape [16, 6, 5, 3], index.h5 expects [17, 6, 5, 3]");

  ShardExpectation other_width = good;
  other_width.width = 4;
  EXPECT_NE(read_shard_error(path, other_width).find("has shape"), std::string::npos);
}

TEST(ReadShard, AFileTooShortForItsPixelsIsTruncated) {
  TempDir dir;
  const DatasetIndex index = test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  const fs::path path = dir / index.shard_file[0];
  const uint64_t end = test::images_offset(path) + 16 * kRecordBytes;
  EXPECT_NO_THROW(read_shard(path, expectation_for(index, 0), end));
  try {
    read_shard(path, expectation_for(index, 0), end - 1);
    FAIL() << "a file one byte short was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path.string() + ": truncated: /images ends at byte " +
                                         std::to_string(end) + " but the file has " +
                                         std::to_string(end - 1) + " bytes");
  }
}

TEST(CheckRecords, FindsTheSameRowsWhateverTheThreadsAndReadSize) {
  TempDir dir;
  const DatasetIndex index = test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  for (auto [shard, row] : {std::pair<std::size_t, uint64_t>{0, 15}, {2, 0}, {2, 7}}) {
    const fs::path path = dir / index.shard_file[shard];
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

TEST(CheckRecords, ReportsAReplacedOrShrunkFileInsteadOfReadingIt) {
  TempDir dir;
  const DatasetIndex index = test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  std::vector<ShardRecords> shards;
  for (std::size_t k = 0; k < index.num_shards(); ++k)
    shards.push_back(records_of(dir.path(), index, k));

  // Shard 0 replaced by an identical copy renamed over it: another file.
  const fs::path first = dir / index.shard_file[0];
  fs::copy_file(first, dir / "copy.h5");
  fs::rename(dir / "copy.h5", first);
  // Shard 2 cut in the middle of its pixels after its structure was read.
  const fs::path last = dir / index.shard_file[2];
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
