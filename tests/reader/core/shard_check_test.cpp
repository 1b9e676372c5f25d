#include "shard_check.hpp"

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
  return {index.uuid,   shard,       index.shards.records[shard],
          index.height, index.width, index.channels};
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

TEST(ReadShard, ReturnsTheColumnsAndWhereThePixelsAre) {
  TempDir dir;
  SyntheticOptions options;
  const DatasetIndex index = test::write_synthetic_dataset(dir.path(), options);
  const fs::path path = dir / index.shards.file[1];
  const ShardContents contents = read_shard(path, expectation_for(index, 1), fs::file_size(path));

  ASSERT_EQ(index.shards.records[1], 16u);
  EXPECT_EQ(contents.images_offset, test::images_offset(path));
  EXPECT_EQ(contents.images_bytes, 16 * kRecordBytes);
  ASSERT_EQ(contents.samples.size(), 16u);
  ASSERT_EQ(contents.labels.size(), 16u);
  ASSERT_EQ(contents.variants.size(), 16u);
  ASSERT_EQ(contents.checksums.size(), 16u);
  const std::string bytes = test::read_bytes(path);
  for (uint64_t r = 0; r < index.num_records(); ++r) {
    if (index.records.shard[r] != 1) continue;
    const uint64_t row = index.records.row[r];
    const int64_t sample = index.records.sample[r];
    EXPECT_EQ(contents.samples[row], sample);
    EXPECT_EQ(contents.variants[row], index.records.variant[r]);
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
  const fs::path path = dir / index.shards.file[1];
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
  const fs::path path = dir / index.shards.file[0];
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

}  // namespace
}  // namespace imgpack
