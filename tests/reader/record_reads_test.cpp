// Reading records from their shard files with many in flight: the bytes of
// the mapping, through the page cache or past it, and a clear error when a
// shard shrank after the dataset was opened.
#include "record_reads.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "imgpack/error.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack::detail {
namespace {

namespace fs = std::filesystem;

// Every record, in an order that jumps between shards, delivered exactly once
// with the mapping's bytes, straight into the destination when asked for one.
TEST(RecordReader, ReadsEveryRecordAsTheMappingHoldsIt) {
  test::TempDir dir;
  test::SyntheticOptions options;
  options.samples = 50;
  options.records_per_shard = 13;
  test::write_synthetic_dataset(dir.path(), options);
  const Dataset dataset = Dataset::open(dir.path());
  std::vector<uint64_t> records(dataset.num_records());
  std::iota(records.begin(), records.end(), 0);
  std::reverse(records.begin(), records.end());
  for (const bool direct : {false, true}) {
    for (const bool into : {false, true}) {
      const ShardFiles files(dataset, ShardFiles::Layer::images, direct);
      RecordReader reader(files, 6);
      std::vector<uint8_t> out(records.size() * dataset.record_bytes(), 0);
      std::vector<int> seen(records.size(), 0);
      reader.read(
          records,
          [&](std::size_t i) { return into ? out.data() + i * dataset.record_bytes() : nullptr; },
          [&](std::size_t i, const uint8_t* pixels) {
            ++seen[i];
            uint8_t* to = out.data() + i * dataset.record_bytes();
            if (pixels != to) std::copy_n(pixels, dataset.record_bytes(), to);
          });
      for (std::size_t i = 0; i < records.size(); ++i) {
        ASSERT_EQ(seen[i], 1) << i;
        const std::span<const uint8_t> mapped = dataset.record(records[i]);
        ASSERT_TRUE(std::equal(mapped.begin(), mapped.end(),
                               out.begin() + static_cast<long>(i * dataset.record_bytes())))
            << "record " << records[i] << ", direct " << direct << ", into " << into;
      }
    }
  }
}

// A shard cut short after open: the read names the shard file and the row,
// and the reader stays usable.
TEST(RecordReader, AShardTruncatedAfterOpenIsAnErrorNamingIt) {
  test::TempDir dir;
  test::SyntheticOptions options;
  options.samples = 20;
  options.records_per_shard = 20;
  options.height = 64;
  options.width = 64;  // 12 KiB records: the cut falls well inside the pixels
  test::write_synthetic_dataset(dir.path(), options);
  const Dataset dataset = Dataset::open(dir.path());
  const fs::path shard = dataset.shard_path(0);
  ASSERT_EQ(::truncate(shard.c_str(), static_cast<off_t>(dataset.shard_images_offset(0) +
                                                         5 * dataset.record_bytes() + 100)),
            0);
  const std::vector<uint64_t> last{dataset.storage_order().back()};
  for (const bool direct : {false, true}) {
    const ShardFiles files(dataset, ShardFiles::Layer::images, direct);
    RecordReader reader(files, 4);
    try {
      reader.read(
          last, [](std::size_t) { return nullptr; }, [](std::size_t, const uint8_t*) {});
      FAIL() << "no error for a truncated shard, direct " << direct;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(shard.string()), std::string::npos) << what;
      EXPECT_NE(what.find("truncated"), std::string::npos) << what;
    }
    // The first records are still there.
    const std::vector<uint64_t> first{dataset.storage_order().front()};
    bool arrived = false;
    reader.read(
        first, [](std::size_t) { return nullptr; },
        [&](std::size_t, const uint8_t* pixels) {
          arrived =
              std::equal(pixels, pixels + dataset.record_bytes(), dataset.record(first[0]).begin());
        });
    EXPECT_TRUE(arrived);
  }
}

}  // namespace
}  // namespace imgpack::detail
