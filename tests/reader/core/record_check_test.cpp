#include "record_check.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
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
          "index.h5",   index.masks, std::nullopt};
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

std::vector<ShardRecords> records_of_all(const fs::path& dir, const DatasetIndex& index) {
  std::vector<ShardRecords> shards;
  for (std::size_t k = 0; k < index.num_shards(); ++k) shards.push_back(records_of(dir, index, k));
  return shards;
}

// The (shard, row) records that damage_rows() damages, in check order.
constexpr std::array<std::pair<std::size_t, uint64_t>, 3> kDamagedRows{{{0, 15}, {2, 0}, {2, 7}}};

// Flips one bit at byte `at` of each kDamagedRows record's image.
void damage_rows(const fs::path& dir, const DatasetIndex& index, uint64_t record_bytes,
                 uint64_t at) {
  for (const auto& [shard, row] : kDamagedRows) {
    const fs::path path = dir / index.shards.file[shard];
    std::string bytes = test::read_bytes(path);
    bytes[test::images_offset(path) + row * record_bytes + at] ^= 0x01;
    test::write_bytes(path, bytes);
  }
}

// The check found exactly the records damage_rows() damaged.
void expect_damaged_rows(const RecordCheck& check) {
  ASSERT_EQ(check.mismatched.size(), kDamagedRows.size());
  for (std::size_t i = 0; i < kDamagedRows.size(); ++i) {
    EXPECT_EQ(std::pair(check.mismatched[i].shard, check.mismatched[i].row), kDamagedRows[i]) << i;
  }
}

// Bytes of [offset, offset + length) of the file at `path` that the page cache
// holds, in whole pages.
uint64_t resident_bytes(const fs::path& path, uint64_t offset, uint64_t length) {
  const FileDescriptor fd = open_for_reading(path);
  const auto size = static_cast<std::size_t>(fd.size(path));
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (map == MAP_FAILED) throw std::runtime_error("mmap failed");
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident((size + page - 1) / page);
  const int failed = ::mincore(map, size, resident.data());
  ::munmap(map, size);
  if (failed != 0) throw std::runtime_error("mincore failed");
  uint64_t bytes = 0;
  for (uint64_t p = offset / page; p * page < offset + length; ++p) {
    if ((resident[p] & 1) != 0) bytes += page;
  }
  return bytes;
}

bool on_tmpfs(const fs::path& path) {
  struct statfs fs {};
  return ::statfs(path.c_str(), &fs) == 0 && fs.f_type == TMPFS_MAGIC;
}

// Drops every shard of the dataset from the page cache (nothing maps them;
// written back first: dirty pages would stay).
void evict_shards(const fs::path& dir, const DatasetIndex& index) {
  for (const std::string& file : index.shards.file) {
    const FileDescriptor fd = open_for_reading(dir / file);
    ASSERT_EQ(::fdatasync(fd.get()), 0) << file;
    ASSERT_EQ(::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED), 0) << file;
  }
}

TEST(CheckRecords, FindsTheSameRowsWhateverTheThreadsAndReadSize) {
  TempDir dir;
  const DatasetIndex index = test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  damage_rows(dir.path(), index, kRecordBytes, 11);
  const std::vector<ShardRecords> shards = records_of_all(dir.path(), index);

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
      expect_damaged_rows(check);
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
  const std::vector<ShardRecords> shards = records_of_all(dir.path(), index);

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

// Whether the shards are read through the page cache or past it (evicted
// first: O_DIRECT where the file system takes it), the same problems.
TEST(CheckRecords, ReportsAReplacedOrShrunkFileInsteadOfReadingIt) {
  for (const bool evicted : {false, true}) {
    SCOPED_TRACE(evicted ? "evicted" : "cached");
    TempDir dir;
    const DatasetIndex index = test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
    const std::vector<ShardRecords> shards = records_of_all(dir.path(), index);

    // Shard 0 replaced by an identical copy renamed over it: another file.
    const fs::path first = dir / index.shards.file[0];
    fs::copy_file(first, dir / "copy.h5");
    fs::rename(dir / "copy.h5", first);
    // Shard 2 cut in the middle of its pixels after its structure was read.
    const fs::path last = dir / index.shards.file[2];
    fs::resize_file(last, test::images_offset(last) + 3 * kRecordBytes + 1);
    if (evicted) evict_shards(dir.path(), index);

    VerifyOptions options;
    options.threads = 1;  // with more, rows of shard 2 before the cut may be skipped too
    options.read_bytes = kRecordBytes;
    const RecordCheck check = check_records(shards, kRecordBytes, options);
    EXPECT_TRUE(check.mismatched.empty());
    ASSERT_EQ(check.unreadable.size(), 2u);
    EXPECT_EQ(check.unreadable[0].shard, 0u);
    EXPECT_EQ(check.unreadable[0].message, first.string() + ": was replaced while being checked");
    EXPECT_EQ(check.unreadable[1].shard, 2u);
    EXPECT_EQ(
        check.unreadable[1].message.rfind(last.string() + ": truncated while being checked", 0), 0u)
        << check.unreadable[1].message;
    // Shard 1 whole, and the three rows of shard 2 before the cut.
    EXPECT_EQ(check.records_checked, 16u + 3u);
    EXPECT_EQ(check.bytes_direct > 0, evicted && !on_tmpfs(dir.path()));
  }
}

// A dataset the page cache does not hold is read past it: the same rows
// found, in every read size (records straddle the 4 KiB blocks O_DIRECT
// reads), and nothing left in the page cache.
TEST(CheckRecords, ReadsAnEvictedDatasetPastThePageCacheFindingTheSameRows) {
  TempDir dir;
  if (on_tmpfs(dir.path())) GTEST_SKIP() << "tmpfs keeps its pages and refuses O_DIRECT";
  SyntheticOptions big;
  big.height = 61;  // records of 61 x 37 x 3 = 6771 bytes: not a multiple of 4096
  big.width = 37;
  big.masks = true;
  const DatasetIndex index = test::write_synthetic_dataset(dir.path(), big);
  const uint64_t record_bytes = uint64_t{61} * 37 * 3;
  const uint64_t mask_bytes = uint64_t{61} * 37;
  damage_rows(dir.path(), index, record_bytes, 4095);
  const std::vector<ShardRecords> shards = records_of_all(dir.path(), index);

  for (unsigned threads : {1u, 3u}) {
    for (std::size_t read_bytes : {std::size_t{1}, 3 * record_bytes, std::size_t{8} << 20}) {
      SCOPED_TRACE("threads " + std::to_string(threads) + ", read " + std::to_string(read_bytes));
      evict_shards(dir.path(), index);
      VerifyOptions options;
      options.threads = threads;
      options.read_bytes = read_bytes;
      const RecordCheck check = check_records(shards, record_bytes, options);
      EXPECT_TRUE(check.unreadable.empty());
      EXPECT_EQ(check.records_checked, 40u);
      EXPECT_EQ(check.bytes_checked, 40 * (record_bytes + mask_bytes));
      EXPECT_EQ(check.bytes_direct, check.bytes_checked);
      expect_damaged_rows(check);
      for (const MismatchedRow& m : check.mismatched) EXPECT_FALSE(m.mask);
      for (const ShardRecords& shard : shards) {
        const uint64_t rows = shard.checksums.size();
        EXPECT_EQ(resident_bytes(shard.path, shard.images_offset, rows * record_bytes), 0u)
            << shard.path;
      }
    }
  }
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
