#include "conversion/shard_writer.hpp"

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <csignal>

#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "h5.hpp"
#include "imgpack/checksum.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> record(RecordShape shape, uint8_t seed) {
  std::vector<uint8_t> pixels(shape.bytes());
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7 + seed);
  return pixels;
}

// Reads /images of a shard through HDF5 and checks the layout contract.
std::vector<uint8_t> read_images_checked(const fs::path& path, RecordShape shape, uint64_t n) {
  h5::File file = h5::File::open_read(path);
  h5::Handle images = file.open_dataset(format::kImages);
  EXPECT_EQ(file.shape(format::kImages),
            (std::vector<uint64_t>{n, shape.height, shape.width, shape.channels}));
  h5::Handle dcpl(H5Dget_create_plist(images.get()));
  EXPECT_EQ(H5Pget_layout(dcpl.get()), H5D_CONTIGUOUS);
  EXPECT_EQ(H5Pget_nfilters(dcpl.get()), 0);
  H5D_alloc_time_t alloc{};
  H5Pget_alloc_time(dcpl.get(), &alloc);
  EXPECT_EQ(alloc, H5D_ALLOC_TIME_EARLY);
  H5D_fill_time_t fill{};
  H5Pget_fill_time(dcpl.get(), &fill);
  EXPECT_EQ(fill, H5D_FILL_TIME_NEVER);
  haddr_t offset = H5Dget_offset(images.get());
  EXPECT_NE(offset, HADDR_UNDEF);
  EXPECT_EQ(offset % 4096, 0u);
  EXPECT_LE(offset + n * shape.bytes(), fs::file_size(path));
  h5::Handle type(H5Dget_type(images.get()));
  EXPECT_TRUE(H5Tequal(type.get(), H5T_NATIVE_UINT8) > 0);
  std::vector<uint8_t> pixels(n * shape.bytes());
  EXPECT_GE(H5Dread(images.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, pixels.data()),
            0);
  return pixels;
}

TEST(ShardWriter, FullShardMatchesTheContract) {
  test::TempDir dir;
  RecordShape shape{6, 5, 3};
  {
    ShardWriter writer(dir / "shard-00000.h5", shape, 3, "uuid-1", 0);
    for (uint8_t i = 0; i < 3; ++i) {
      std::vector<uint8_t> r = record(shape, i);
      writer.append(r.data(), checksum(r), i, 10 + i, 0);
    }
    EXPECT_TRUE(writer.full());
    writer.commit();
  }
  EXPECT_FALSE(fs::exists(dir / "shard-00000.h5.tmp"));
  std::vector<uint8_t> pixels = read_images_checked(dir / "shard-00000.h5", shape, 3);
  for (uint8_t i = 0; i < 3; ++i) {
    std::vector<uint8_t> expected = record(shape, i);
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), pixels.begin() + i * shape.bytes()));
  }
  h5::File file = h5::File::open_read(dir / "shard-00000.h5");
  EXPECT_EQ(file.read<int32_t>(format::kLabels), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(file.read<int64_t>(format::kSample), (std::vector<int64_t>{10, 11, 12}));
  EXPECT_EQ(file.read<uint16_t>(format::kVariant), (std::vector<uint16_t>{0, 0, 0}));
  std::vector<uint64_t> sums = file.read<uint64_t>(format::kChecksum);
  for (uint8_t i = 0; i < 3; ++i) EXPECT_EQ(sums[i], checksum(record(shape, i)));
  EXPECT_EQ(file.read_int_attr("/", format::kAttrFormat), 1);
  EXPECT_EQ(file.read_string_attr("/", format::kAttrUuid), "uuid-1");
  EXPECT_EQ(file.read_int_attr("/", format::kAttrShardIndex), 0);
}

TEST(ShardWriter, ShortShardIsCompactedToItsExactSize) {
  test::TempDir dir;
  RecordShape shape{64, 64, 3};  // 12 KiB records: several writes, real copy
  {
    ShardWriter writer(dir / "shard-00000.h5", shape, 50, "u", 0);
    for (uint8_t i = 0; i < 17; ++i) {
      std::vector<uint8_t> r = record(shape, i);
      writer.append(r.data(), checksum(r), 0, i, 0);
    }
    writer.commit();
  }
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().filename(), "shard-00000.h5") << "left behind: " << entry.path();
  }
  std::vector<uint8_t> pixels = read_images_checked(dir / "shard-00000.h5", shape, 17);
  for (uint8_t i = 0; i < 17; ++i) {
    EXPECT_EQ(checksum(pixels.data() + i * shape.bytes(), shape.bytes()),
              checksum(record(shape, i)));
  }
}

// The pixels past the page cache and through it: the same shard files, byte
// for byte, full and compacted, with masks.
TEST(ShardWriter, PixelsWrittenPastThePageCacheOrThroughItMakeTheSameFile) {
  test::TempDir dir;
  RecordShape shape{100, 70, 3};  // 21,000-byte records: no record ends on a block
  const RecordExtras extras{.masks = true};
  for (const uint64_t records : {uint64_t{450}, uint64_t{449}}) {
    std::string files[2];
    for (int m = 0; m < 2; ++m) {
      const fs::path path = dir / ("shard-0000" + std::to_string(m) + ".h5");
      {
        ShardWriter writer(
            path, shape, 450, "u", 0, extras,
            m == 0 ? RegionWriter::Mode::direct_where_possible : RegionWriter::Mode::buffered);
        for (uint64_t i = 0; i < records; ++i) {
          std::vector<uint8_t> r = record(shape, static_cast<uint8_t>(i));
          std::vector<uint8_t> mask(shape.pixels(), static_cast<uint8_t>(i % 5));
          writer.append(r.data(), checksum(r), 0, static_cast<int64_t>(i), 0,
                        {mask.data(), checksum(mask)});
        }
        writer.commit();
      }
      files[m] = test::read_bytes(path);
    }
    EXPECT_EQ(files[0].size(), files[1].size()) << records << " records";
    EXPECT_TRUE(files[0] == files[1]) << records << " records";
    const std::vector<uint8_t> pixels = read_images_checked(dir / "shard-00000.h5", shape, records);
    for (uint64_t i = 0; i < records; ++i) {
      ASSERT_EQ(checksum(pixels.data() + i * shape.bytes(), shape.bytes()),
                checksum(record(shape, static_cast<uint8_t>(i))))
          << "record " << i;
    }
  }
}

// 40 MB of records, past the page cache and through it, where fdatasyncs
// start on their own threads as the shard fills (every 16 MiB). Committed,
// the shard holds every record's bytes; abandoned while a write or an
// fdatasync may still run, it leaves nothing.
class ShardWriterModes : public ::testing::TestWithParam<RegionWriter::Mode> {};

TEST_P(ShardWriterModes, AShardOfSeveralWritesKeepsItsBytesOrLeavesNothing) {
  test::TempDir dir;
  RecordShape shape{256, 256, 3};  // 192 KiB records
  constexpr uint8_t kRecords = 200;
  {
    ShardWriter writer(dir / "shard-00000.h5", shape, kRecords, "u", 0, {}, GetParam());
    for (uint8_t i = 0; i < kRecords; ++i) {
      std::vector<uint8_t> r = record(shape, i);
      writer.append(r.data(), checksum(r), 0, i, 0);
    }
    writer.commit();
  }
  std::vector<uint8_t> pixels = read_images_checked(dir / "shard-00000.h5", shape, kRecords);
  for (uint8_t i = 0; i < kRecords; ++i) {
    ASSERT_EQ(checksum(pixels.data() + i * shape.bytes(), shape.bytes()),
              checksum(record(shape, i)))
        << "record " << int{i};
  }
  {
    ShardWriter writer(dir / "shard-00001.h5", shape, kRecords, "u", 1, {}, GetParam());
    for (uint8_t i = 0; i < kRecords - 1; ++i) {
      std::vector<uint8_t> r = record(shape, i);
      writer.append(r.data(), checksum(r), 0, i, 0);
    }
  }
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().filename(), "shard-00000.h5") << "left behind: " << entry.path();
  }
}

INSTANTIATE_TEST_SUITE_P(PixelWrites, ShardWriterModes,
                         ::testing::Values(RegionWriter::Mode::direct_where_possible,
                                           RegionWriter::Mode::buffered),
                         [](const ::testing::TestParamInfo<RegionWriter::Mode>& mode) {
                           return mode.param == RegionWriter::Mode::buffered
                                      ? std::string("Buffered")
                                      : std::string("Direct");
                         });

TEST(ShardWriter, AbandonedShardLeavesNothing) {
  test::TempDir dir;
  RecordShape shape{4, 4, 1};
  {
    ShardWriter writer(dir / "shard-00000.h5", shape, 10, "u", 0);
    std::vector<uint8_t> r = record(shape, 1);
    writer.append(r.data(), checksum(r), 0, 0, 0);
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

// A shard whose creation fails part-way (the disk full as HDF5 writes the
// file's first blocks, here a file size limit) leaves no file behind: the
// temporary file was created before the failure.
TEST(ShardWriter, AShardThatCannotBeCreatedLeavesNothing) {
  test::TempDir dir;
  const RecordShape shape{64, 64, 3};
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto previous = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG rather than the signal
  rlimit tiny = saved;
  tiny.rlim_cur = 8;  // less than HDF5's superblock
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &tiny), 0);
  std::string failure;
  try {
    ShardWriter writer(dir / "shard-00000.h5", shape, 64, "u", 0);
    std::vector<uint8_t> r = record(shape, 1);
    writer.append(r.data(), checksum(r), 0, 0, 0);
  } catch (const Error& e) {
    failure = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous);
  EXPECT_NE(failure.find((dir / "shard-00000.h5.tmp").string() + ": "), std::string::npos)
      << failure;
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(DatasetWriter, RollsOverAtTheShardSizeAndTracksRecords) {
  test::TempDir dir;
  RecordShape shape{8, 8, 3};  // 192 bytes
  DatasetIndex index;
  {
    // 1000 bytes per shard -> 5 records per shard; 12 records announced, 11 arrive.
    DatasetWriter writer(dir.path(), shape, 1000, "u", 12);
    EXPECT_EQ(writer.records_per_shard(), 5u);
    for (int i = 0; i < 11; ++i) {
      std::vector<uint8_t> r = record(shape, static_cast<uint8_t>(i));
      writer.add(r.data(), checksum(r), i % 3, i, 0);
    }
    writer.forgo(1);
    writer.finish(index);
  }
  EXPECT_EQ(index.shards.file,
            (std::vector<std::string>{"shard-00000.h5", "shard-00001.h5", "shard-00002.h5"}));
  EXPECT_EQ(index.shards.records, (std::vector<uint64_t>{5, 5, 1}));
  ASSERT_EQ(index.num_records(), 11u);
  for (uint32_t i = 0; i < 11; ++i) {
    EXPECT_EQ(index.records.shard[i], i / 5);
    EXPECT_EQ(index.records.row[i], i % 5);
    EXPECT_EQ(index.records.sample[i], i);
  }
  read_images_checked(dir / "shard-00002.h5", shape, 1);
}

// A full shard is published (fsync, rename) on a thread of its own while the
// next fills: the events still come on the caller's thread, in order, each
// shard in place when its on_commit comes, and all of them after finish().
TEST(DatasetWriter, ReportsEachShardSealedThenInPlaceInOrderOnItsOwnThread) {
  test::TempDir dir;
  RecordShape shape{8, 8, 3};
  DatasetIndex index;
  std::vector<std::string> events;
  const std::thread::id caller = std::this_thread::get_id();
  {
    DatasetWriter writer(dir.path(), shape, 1000, "u", 23);  // 5 records a shard
    writer.on_seal([&](std::size_t k) {
      EXPECT_EQ(std::this_thread::get_id(), caller);
      events.push_back("seal " + std::to_string(k));
    });
    writer.on_commit([&](std::size_t k) {
      EXPECT_EQ(std::this_thread::get_id(), caller);
      EXPECT_TRUE(fs::exists(dir / format::shard_file_name(static_cast<uint32_t>(k))));
      events.push_back("commit " + std::to_string(k));
    });
    for (int i = 0; i < 23; ++i) {
      std::vector<uint8_t> r = record(shape, static_cast<uint8_t>(i));
      writer.add(r.data(), checksum(r), 0, i, 0);
    }
    writer.finish(index);
  }
  EXPECT_EQ(events,
            (std::vector<std::string>{"seal 0", "commit 0", "seal 1", "commit 1", "seal 2",
                                      "commit 2", "seal 3", "commit 3", "seal 4", "commit 4"}));
  for (uint32_t k = 0; k < 5; ++k) {
    EXPECT_EQ(read_images_checked(dir / format::shard_file_name(k), shape, k < 4 ? 5 : 3).size(),
              (k < 4 ? 5u : 3u) * shape.bytes());
  }
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().extension(), ".h5") << entry.path() << " left behind";
  }
}

// A shard that cannot be renamed into place fails the writer on the caller's
// thread, naming the file, at the latest in finish(); no temporary file stays.
TEST(DatasetWriter, APublishThatFailsIsThrownOnTheCallersThread) {
  test::TempDir dir;
  RecordShape shape{8, 8, 3};
  // A non-empty directory where shard 1 goes: rename() cannot replace it.
  fs::create_directories(dir / "shard-00001.h5" / "in-the-way");
  std::vector<std::size_t> committed;
  std::string error;
  {
    DatasetWriter writer(dir.path(), shape, 1000, "u", 15);
    writer.on_commit([&](std::size_t k) { committed.push_back(k); });
    try {
      for (int i = 0; i < 15; ++i) {
        std::vector<uint8_t> r = record(shape, static_cast<uint8_t>(i));
        writer.add(r.data(), checksum(r), 0, i, 0);
      }
      DatasetIndex index;
      writer.finish(index);
    } catch (const Error& e) {
      error = e.what();
    }
  }
  EXPECT_NE(error.find("shard-00001.h5"), std::string::npos) << error;
  EXPECT_EQ(committed, (std::vector<std::size_t>{0}));
  EXPECT_TRUE(fs::exists(dir / "shard-00000.h5"));
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().string().find(format::kTmpSuffix), std::string::npos)
        << entry.path() << " left behind";
  }
}

TEST(DatasetWriter, NeverSplitsTheVariantsOfAnImageAcrossShards) {
  test::TempDir dir;
  RecordShape shape{8, 8, 3};  // 192 bytes; 1000 bytes hold 5 records, i.e. one run of 3
  DatasetWriter writer(dir.path(), shape, 1000, "u", 9, 3);
  EXPECT_EQ(writer.records_per_shard(), 3u);
  DatasetWriter big(dir / "x", shape, uint64_t{192} * 7, "u", 9, 3);
  EXPECT_EQ(big.records_per_shard(), 6u);
  DatasetWriter tiny(dir / "y", shape, 100, "u", 9, 3);
  EXPECT_EQ(tiny.records_per_shard(), 3u) << "at least one whole run, even above the shard size";
}

}  // namespace
}  // namespace imgpack
