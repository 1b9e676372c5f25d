#include "conversion/region_writer.hpp"

#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "imgpack/error.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using Mode = RegionWriter::Mode;

std::string pattern(std::size_t size, uint8_t seed) {
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(i * 31 + i / 4096 + seed);
  return bytes;
}

// Writes `region` at `offset` of a file of `file_size` bytes of 0xEE, in
// appends of the sizes in `chunks` (cycled), and returns the file.
std::string write_region(const fs::path& path, std::size_t file_size, uint64_t offset,
                         const std::string& region, std::size_t buffer_bytes, Mode mode,
                         const std::vector<std::size_t>& chunks, bool* direct = nullptr) {
  test::write_bytes(path, std::string(file_size, '\xEE'));
  RegionWriter writer(path, offset, region.size(), buffer_bytes, mode);
  std::size_t at = 0;
  for (std::size_t i = 0; at < region.size(); ++i) {
    const std::size_t n = std::min(chunks[i % chunks.size()], region.size() - at);
    writer.append(reinterpret_cast<const uint8_t*>(region.data()) + at, n);
    at += n;
    EXPECT_EQ(writer.appended(), at);
  }
  writer.finish();
  if (direct != nullptr) *direct = writer.direct();
  return test::read_bytes(path);
}

std::string expected_file(std::size_t file_size, uint64_t offset, const std::string& region) {
  std::string file(file_size, '\xEE');
  file.replace(offset, region.size(), region);
  return file;
}

// Buffers of one and two blocks, flushed many times over; a region ending
// inside a block, appends of every size from 1 byte to several buffers.
TEST(RegionWriter, WritesTheRegionAndNothingElseInEitherMode) {
  test::TempDir dir;
  const std::vector<std::size_t> chunks = {1, 4095, 3000, 20000, 7, 8192, 150528};
  for (Mode mode : {Mode::direct_where_possible, Mode::buffered}) {
    for (std::size_t buffer : {std::size_t{4096}, std::size_t{8192}, std::size_t{1} << 20}) {
      SCOPED_TRACE(::testing::Message()
                   << "mode " << static_cast<int>(mode) << " buffer " << buffer);
      const std::string region = pattern(5 * 4096 + 37 + buffer, static_cast<uint8_t>(buffer));
      const std::size_t file_size = 4096 + region.size() + 600;
      bool direct = true;
      EXPECT_EQ(write_region(dir / "f", file_size, 4096, region, buffer, mode, chunks, &direct),
                expected_file(file_size, 4096, region));
      if (mode == Mode::buffered) {
        EXPECT_FALSE(direct);
      }
    }
  }
}

TEST(RegionWriter, ARegionOffTheBlockBoundaryGoesThroughThePageCache) {
  test::TempDir dir;
  const std::string region = pattern(3 * 4096 + 5, 9);
  bool direct = true;
  EXPECT_EQ(write_region(dir / "f", 100 + region.size() + 3, 100, region, 4096,
                         Mode::direct_where_possible, {777}, &direct),
            expected_file(100 + region.size() + 3, 100, region));
  EXPECT_FALSE(direct);
}

// tmpfs, whose page cache is the file: before Linux 6.6 it refuses O_DIRECT
// (the open fails with EINVAL) and the writer goes through the page cache.
TEST(RegionWriter, TmpfsGetsTheSameBytes) {
  struct statfs fs_info {};
  if (::statfs("/dev/shm", &fs_info) != 0 || fs_info.f_type != TMPFS_MAGIC) {
    GTEST_SKIP() << "no tmpfs at /dev/shm";
  }
  const fs::path path = fs::path("/dev/shm") / ("imgpack-region-" + std::to_string(::getpid()));
  const std::string region = pattern(4 * 4096 + 11, 3);
  const std::string written = write_region(path, 4096 + region.size(), 4096, region, 8192,
                                           Mode::direct_where_possible, {5000});
  fs::remove(path);
  EXPECT_EQ(written, expected_file(4096 + region.size(), 4096, region));
}

TEST(RegionWriter, RefusesBytesPastTheRegionNamingTheFile) {
  test::TempDir dir;
  test::write_bytes(dir / "f", std::string(std::size_t{3} * 4096, '\0'));
  RegionWriter writer(dir / "f", 4096, 4096, 4096);
  const std::string bytes = pattern(4097, 1);
  writer.append(reinterpret_cast<const uint8_t*>(bytes.data()), 4000);
  try {
    writer.append(reinterpret_cast<const uint8_t*>(bytes.data()), 97);
    FAIL() << "a write past the region was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "f").string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("past the end"), std::string::npos) << e.what();
  }
  EXPECT_EQ(writer.appended(), 4000u);
}

TEST(RegionWriter, AMissingFileIsNamed) {
  test::TempDir dir;
  try {
    RegionWriter writer(dir / "absent", 0, 4096, 4096);
    FAIL() << "opened a missing file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "absent").string()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace imgpack
