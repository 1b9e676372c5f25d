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
          index.height, index.width, index.channels,
          "index.h5",   index.masks, std::nullopt};
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
  // The index a merge renumbers it to is accepted too, and the contents say which it is.
  other_shard.or_shard = 1;
  EXPECT_EQ(read_shard_error(path, other_shard), "");
  EXPECT_EQ(read_shard(path, other_shard, fs::file_size(path)).shard, 1u);
  other_shard.or_shard = 3;
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

TEST(ReadShard, FindsTheMasksBesideTheImagesAlignedLikeThem) {
  TempDir dir;
  SyntheticOptions options;
  options.masks = true;
  const DatasetIndex index = test::write_synthetic_dataset(dir.path(), options);
  const fs::path path = dir / index.shards.file[2];
  const ShardContents contents = read_shard(path, expectation_for(index, 2), fs::file_size(path));
  const uint64_t rows = index.shards.records[2];
  EXPECT_EQ(contents.masks_offset, test::masks_offset(path));
  EXPECT_EQ(contents.masks_offset % 4096, 0u);
  EXPECT_EQ(contents.images_offset % 4096, 0u);
  EXPECT_EQ(contents.masks_bytes, rows * 30);
  ASSERT_EQ(contents.mask_checksums.size(), rows);
  const std::string bytes = test::read_bytes(path);
  for (uint64_t r = 0; r < index.num_records(); ++r) {
    if (index.records.shard[r] != 2) continue;
    const uint64_t row = index.records.row[r];
    const std::vector<uint8_t> mask =
        test::synthetic_mask(options, index.records.sample[r], index.records.variant[r]);
    EXPECT_EQ(0, bytes.compare(contents.masks_offset + row * 30, 30,
                               reinterpret_cast<const char*>(mask.data()), mask.size()));
    EXPECT_EQ(contents.mask_checksums[row], checksum(mask.data(), mask.size()));
  }
}

TEST(ReadShard, MasksMustBeThereExactlyWhenTheIndexHasThem) {
  TempDir with, without;
  SyntheticOptions options;
  options.masks = true;
  const DatasetIndex masked = test::write_synthetic_dataset(with.path(), options);
  options.masks = false;
  const DatasetIndex plain = test::write_synthetic_dataset(without.path(), options);
  const fs::path masked_shard = with / masked.shards.file[0];
  const fs::path plain_shard = without / plain.shards.file[0];
  EXPECT_EQ(read_shard_error(plain_shard, expectation_for(masked, 0)),
            plain_shard.string() + ": has no /masks, but index.h5 has masks");
  EXPECT_EQ(read_shard_error(masked_shard, expectation_for(plain, 0)),
            masked_shard.string() + ": has /masks, but index.h5 has no masks");
  // A file that ends inside the masks, which lie after the images.
  const uint64_t end = test::masks_offset(masked_shard) + 10;
  ASSERT_GT(end, test::images_offset(masked_shard) + 16 * kRecordBytes);
  try {
    read_shard(masked_shard, expectation_for(masked, 0), end);
    FAIL() << "a file ending inside its masks was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              masked_shard.string() + ": truncated: /masks ends at byte " +
                  std::to_string(test::masks_offset(masked_shard) + uint64_t{16} * 30) +
                  " but the file has " + std::to_string(end) + " bytes");
  }
}

}  // namespace
}  // namespace imgpack
