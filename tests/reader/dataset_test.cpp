#include "imgpack/dataset.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "h5.hpp"
#include "imgpack/checksum.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/selection.hpp"
#include "imgpack/verify.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using test::SyntheticOptions;
using test::TempDir;

// Expects Dataset::open(dir) to throw an imgpack::Error whose message names
// `file` and contains `problem`.
void expect_open_fails(const fs::path& dir, const std::string& file, const std::string& problem) {
  try {
    Dataset::open(dir);
    ADD_FAILURE() << "opening " << dir << " succeeded, expected an error about " << file;
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(file), std::string::npos) << message;
    EXPECT_NE(message.find(problem), std::string::npos) << message;
  }
}

TEST(Dataset, OpensAndMapsEveryRecord) {
  TempDir dir;
  SyntheticOptions options;
  options.samples = 30;
  options.variants = 2;
  DatasetIndex written = test::write_synthetic_dataset(dir.path(), options);
  Dataset dataset = Dataset::open(dir.path());
  ASSERT_EQ(dataset.num_records(), 60u);
  EXPECT_EQ(dataset.num_samples(), 30u);
  EXPECT_EQ(dataset.num_shards(), 4u);  // 16 records per shard
  EXPECT_EQ(dataset.record_bytes(), 6u * 5u * 3u);
  for (uint64_t r = 0; r < dataset.num_records(); ++r) {
    const int64_t s = written.records.sample[r];
    const uint16_t v = written.records.variant[r];
    std::vector<uint8_t> expected = test::synthetic_pixels(options, s, v);
    std::span<const uint8_t> got = dataset.record(r);
    ASSERT_TRUE(std::equal(got.begin(), got.end(), expected.begin(), expected.end())) << r;
    EXPECT_EQ(dataset.record_checksum(r), checksum(expected.data(), expected.size()));
    EXPECT_EQ(dataset.record_label(r), static_cast<int32_t>(s % options.classes));
    EXPECT_EQ(dataset.record_sample(r), s);
    EXPECT_EQ(dataset.record_variant(r), v);
  }
  dataset.verify_checksums();
}

// read_record reads with pread exactly what record() maps, from every shard,
// and record_cached says the page cache holds a record once it was read.
TEST(Dataset, ReadRecordReadsWhatTheMappingHolds) {
  TempDir dir;
  SyntheticOptions options;
  options.samples = 30;
  options.variants = 2;
  test::write_synthetic_dataset(dir.path(), options);
  const Dataset dataset = Dataset::open(dir.path());
  std::vector<uint8_t> read(dataset.record_bytes() + 1, 0xAB);
  for (uint64_t r = 0; r < dataset.num_records(); ++r) {
    dataset.read_record(r, read.data());
    const std::span<const uint8_t> mapped = dataset.record(r);
    ASSERT_TRUE(std::equal(mapped.begin(), mapped.end(), read.begin())) << r;
    EXPECT_EQ(read.back(), 0xAB) << "wrote past the record";
    EXPECT_TRUE(dataset.record_cached(r)) << r;
  }
}

// A dataset with masks maps them beside the images: mask_data() and
// read_mask() give each record's mask, with its stored checksum.
TEST(Dataset, MapsEachRecordsMaskBesideItsPixels) {
  TempDir dir;
  SyntheticOptions options;
  options.samples = 30;
  options.variants = 2;
  options.masks = true;
  options.mask_fill = 7;
  const DatasetIndex written = test::write_synthetic_dataset(dir.path(), options);
  const Dataset dataset = Dataset::open(dir.path());
  ASSERT_TRUE(dataset.has_masks());
  EXPECT_EQ(dataset.mask_bytes(), 30u);
  EXPECT_EQ(dataset.mask_fill(), 7);
  std::vector<uint8_t> read(dataset.mask_bytes() + 1, 0xAB);
  for (uint64_t r = 0; r < dataset.num_records(); ++r) {
    const std::vector<uint8_t> expected =
        test::synthetic_mask(options, written.records.sample[r], written.records.variant[r]);
    const std::span<const uint8_t> mapped = dataset.mask(r);
    ASSERT_TRUE(std::equal(mapped.begin(), mapped.end(), expected.begin(), expected.end())) << r;
    dataset.read_mask(r, read.data());
    ASSERT_TRUE(std::equal(expected.begin(), expected.end(), read.begin())) << r;
    EXPECT_EQ(read.back(), 0xAB) << "wrote past the mask";
    EXPECT_EQ(dataset.record_mask_checksum(r), checksum(expected.data(), expected.size()));
    // The image is where it always was.
    const std::vector<uint8_t> pixels =
        test::synthetic_pixels(options, written.records.sample[r], written.records.variant[r]);
    ASSERT_TRUE(std::equal(pixels.begin(), pixels.end(), dataset.record(r).begin())) << r;
  }
  for (std::size_t k = 0; k < dataset.num_shards(); ++k) {
    EXPECT_EQ(dataset.shard_masks(k).size(), written.shards.records[k] * 30);
  }
  dataset.verify_checksums();

  // A damaged mask is found by the checksums, not at open.
  const fs::path shard = dir / "shard-00001.h5";
  std::string bytes = test::read_bytes(shard);
  bytes[test::masks_offset(shard) + uint64_t{5} * 30 + 1] ^= 0x02;  // row 5's mask
  test::write_bytes(shard, bytes);
  try {
    Dataset::open(dir.path(), DatasetOpenOptions{.verify_checksums = true, .index = {}});
    ADD_FAILURE() << "a damaged mask was not detected";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shard-00001.h5: the mask of row 5"), std::string::npos)
        << e.what();
  }
}

TEST(Dataset, StorageOrderAndSampleTableAreConsistent) {
  TempDir dir;
  SyntheticOptions options;
  options.variants = 3;
  test::write_synthetic_dataset(dir.path(), options);
  Dataset dataset = Dataset::open(dir.path());
  const DatasetIndex& index = dataset.index();
  const RecordIds order = dataset.storage_order();
  ASSERT_EQ(order.size(), dataset.num_records());
  for (std::size_t p = 1; p < order.size(); ++p) {
    auto key = [&](uint64_t r) { return std::pair(index.records.shard[r], index.records.row[r]); };
    EXPECT_LT(key(order[p - 1]), key(order[p]));
    EXPECT_EQ(dataset.storage_position(order[p]), p);
  }
  // Record data of consecutive storage positions is contiguous within a shard.
  EXPECT_EQ(dataset.record_data(order[1]), dataset.record_data(order[0]) + dataset.record_bytes());
  for (uint64_t s = 0; s < dataset.num_samples(); ++s) {
    const RecordIds records = dataset.sample_records(s);
    ASSERT_EQ(records.size(), 3u);
    for (uint16_t v = 0; v < 3; ++v) {
      EXPECT_EQ(dataset.record_sample(records[v]), static_cast<int64_t>(s));
      EXPECT_EQ(dataset.record_variant(records[v]), v);
    }
  }
}

// A dataset written in order (as convert writes it: record r at storage
// position r, sample s's records s*K .. s*K+K-1) is read without building
// the storage or sample tables, and reads the same.
TEST(Dataset, ADatasetWrittenInOrderIsReadWithoutTables) {
  TempDir dir;
  SyntheticOptions options;
  options.variants = 3;
  options.shuffle = false;
  const DatasetIndex written = test::write_synthetic_dataset(dir.path(), options);
  const Dataset dataset = Dataset::open(dir.path());
  const RecordIds order = dataset.storage_order();
  ASSERT_EQ(order.size(), 120u);
  for (uint64_t p = 0; p < order.size(); ++p) {
    EXPECT_EQ(order[p], p);
    EXPECT_EQ(dataset.storage_position(p), p);
  }
  EXPECT_EQ(std::vector<uint64_t>(order.begin(), order.end()).back(), 119u);
  for (uint64_t s = 0; s < dataset.num_samples(); ++s) {
    const RecordIds records = dataset.sample_records(s);
    ASSERT_EQ(records.size(), 3u);
    for (uint16_t v = 0; v < 3; ++v) {
      EXPECT_EQ(records[v], 3 * s + v);
      EXPECT_EQ(written.records.sample[records[v]], static_cast<int64_t>(s));
      EXPECT_EQ(written.records.variant[records[v]], v);
    }
  }
  for (uint64_t r = 0; r < dataset.num_records(); ++r) {
    const std::vector<uint8_t> expected =
        test::synthetic_pixels(options, written.records.sample[r], written.records.variant[r]);
    const std::span<const uint8_t> got = dataset.record(r);
    ASSERT_TRUE(std::equal(got.begin(), got.end(), expected.begin(), expected.end())) << r;
  }
}

// The sample paths and group names are left out of index() and read on
// first use, once, whichever thread asks first, for either index format.
TEST(Dataset, PathsAndGroupNamesAreReadOnFirstUseFromAnyThread) {
  for (int64_t version : {1, 2}) {
    SCOPED_TRACE("format " + std::to_string(version));
    TempDir dir;
    SyntheticOptions options;
    options.format_version = version;
    const DatasetIndex written = test::write_synthetic_dataset(dir.path(), options);
    const Dataset dataset = Dataset::open(dir.path());
    EXPECT_FALSE(dataset.index().has_sample_paths);
    EXPECT_TRUE(dataset.index().sample_path.empty());
    EXPECT_EQ(dataset.index().num_groups(), written.group_names.size());
    std::vector<std::vector<std::string>> seen(4);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < seen.size(); ++t) {
      threads.emplace_back([&, t] {
        for (uint64_t s = 0; s < dataset.num_samples(); ++s) {
          seen[t].push_back(dataset.sample_path(s));
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (const std::vector<std::string>& paths : seen) EXPECT_EQ(paths, written.sample_path);
    EXPECT_EQ(dataset.sample_paths(), written.sample_path);
    EXPECT_EQ(dataset.group_names(), written.group_names);
    // Asked for at open, they are in index() as before.
    const Dataset eager = Dataset::open(dir.path(), {.index = {}});
    EXPECT_EQ(eager.index().sample_path, written.sample_path);
    EXPECT_EQ(eager.sample_path(3), written.sample_path[3]);
  }
}

// A reader keeps the index it opened: a format 2 dataset's paths come from
// its mapping of index.h5 even once another index.h5 is renamed into place;
// a format 1 index, read again for them, is refused if it was replaced.
TEST(Dataset, PathsComeFromTheIndexThatWasOpened) {
  for (int64_t version : {1, 2}) {
    SCOPED_TRACE("format " + std::to_string(version));
    TempDir dir;
    SyntheticOptions options;
    options.format_version = version;
    DatasetIndex index = test::write_synthetic_dataset(dir.path(), options);
    const std::vector<std::string> old_paths = index.sample_path;
    const Dataset dataset = Dataset::open(dir.path());
    for (std::string& path : index.sample_path) path += ".renamed";
    write_index(dir.path(), index);
    if (version >= 2) {
      EXPECT_EQ(dataset.sample_paths(), old_paths);
    } else {
      try {
        (void)dataset.sample_path(0);
        ADD_FAILURE() << "read the paths of another index.h5";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("index.h5"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("was replaced"), std::string::npos) << e.what();
      }
    }
    EXPECT_EQ(Dataset::open(dir.path()).sample_path(0), old_paths[0] + ".renamed");
  }
}

// A removal commits index.h5 and splits.h5 of the next generation by
// rename: a Dataset opened before keeps generation 0, its samples (none
// removed), its splits and its paths; one opened after sees generation 1.
TEST(Dataset, KeepsTheGenerationItOpened) {
  TempDir dir;
  SyntheticOptions options;
  options.samples = 12;
  const DatasetIndex written = test::write_synthetic_dataset(dir.path(), options);
  test::add_split(dir.path(), "cv2", 2, std::vector<int16_t>(12, 1));
  const Dataset before = Dataset::open(dir.path());
  ASSERT_EQ(before.generation(), 0u);

  const DatasetIndex committed = test::remove_samples(dir.path(), {2, 5});
  EXPECT_EQ(committed.history.size(), 2u);
  EXPECT_EQ(before.generation(), 0u);
  EXPECT_EQ(before.index().num_removed(), 0u);
  EXPECT_FALSE(before.index().is_removed(2));
  EXPECT_EQ(before.index().splits[0].assign.to_vector(), std::vector<int16_t>(12, 1));
  EXPECT_EQ(select_samples(before.index(), {.split = "cv2", .role = Role::train}).size(), 12u);
  EXPECT_EQ(before.sample_paths(), written.sample_path);  // read on first use: after the commit

  const Dataset after = Dataset::open(dir.path());
  EXPECT_EQ(after.generation(), 1u);
  EXPECT_EQ(after.num_samples(), 12u);  // ids stay rows: removed samples are counted here
  EXPECT_EQ(after.index().num_removed(), 2u);
  EXPECT_TRUE(after.index().is_removed(5));
  EXPECT_EQ(after.index().splits[0].assign[2], format::kRemovedFold);
  EXPECT_EQ(select_samples(after.index(), {.split = "cv2", .role = Role::train}).size(), 10u);
  EXPECT_EQ(after.sample_paths(), written.sample_path);
}

// splits.h5 one generation ahead of index.h5 is a change interrupted
// between its renames, and reads as the index's generation. One two or more
// ahead (restored from another copy) was read as it stood: samples the later
// generations removed were in no fold, the index holding them still.
TEST(Dataset, RefusesASplitsFileGenerationsAhead) {
  TempDir dir;
  SyntheticOptions options;
  options.samples = 12;
  test::write_synthetic_dataset(dir.path(), options);
  test::add_split(dir.path(), "cv2", 2, std::vector<int16_t>(12, 1));
  const fs::path index_file = dir / "index.h5";
  const std::string generation0 = test::read_bytes(index_file);
  test::remove_samples(dir.path(), {2});
  const std::string generation1 = test::read_bytes(index_file);
  test::remove_samples(dir.path(), {5});

  test::write_bytes(index_file, generation1);  // splits.h5 one generation ahead
  EXPECT_EQ(Dataset::open(dir.path()).generation(), 1u);

  test::write_bytes(index_file, generation0);  // two ahead
  expect_open_fails(dir.path(), "splits.h5",
                    "is generation 2 of this dataset, index.h5 generation 0: the two come from "
                    "different copies of it");
}

TEST(Dataset, CopiesShareMappingsThatOutliveTheOriginal) {
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  Dataset copy;
  const uint8_t* data = nullptr;
  {
    Dataset dataset = Dataset::open(dir.path());
    copy = dataset;
    data = dataset.record_data(0);
  }
  EXPECT_EQ(copy.record_data(0), data);
  EXPECT_EQ(checksum(copy.record_data(0), copy.record_bytes()), copy.record_checksum(0));
}

TEST(Dataset, OpensADatasetWrittenByConvert) {
  // The ThreadSanitizer tree builds no CLI (scripts/sanitize): there the
  // conversion's threads run in libpack_test's pipeline tests; the Release and
  // ASan runs keep this one.
  if (test::kThreadSanitizer) GTEST_SKIP() << "no CLI in the ThreadSanitizer tree";
  TempDir dir;
  fs::path src = dir / "src", out = dir / "out";
  for (int i = 0; i < 6; ++i) {
    test::write_image(src / (i % 2 ? "cat" : "dog") / (std::to_string(i) + ".png"),
                      test::make_rgb_image(40 + i, 30, static_cast<uint64_t>(i)));
  }
  test::CommandResult result =
      test::run_imgpack("convert " + test::shell_quote(src.string()) + " " +
                        test::shell_quote(out.string()) + " --size 32x24 --quiet");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  Dataset dataset = Dataset::open(out, DatasetOpenOptions{.verify_checksums = true, .index = {}});
  EXPECT_EQ(dataset.num_records(), 6u);
  EXPECT_EQ(dataset.height(), 24u);
  EXPECT_EQ(dataset.width(), 32u);
  // /images (>= 4096 bytes here) starts on a page boundary, as the format promises.
  EXPECT_EQ(test::images_offset(dataset.shard_path(0)) % format::kAlignment, 0u);
}

TEST(Dataset, MissingIndexNamesIt) {
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  fs::remove(dir / "index.h5");
  expect_open_fails(dir.path(), "index.h5", "not a complete imgpack dataset");
}

TEST(Dataset, MissingShardNamesIt) {
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  fs::remove(dir / "shard-00001.h5");
  expect_open_fails(dir.path(), "shard-00001.h5", "missing");
}

TEST(Dataset, TruncatedShardFailsAtOpen) {
  TempDir dir;
  SyntheticOptions options;
  options.height = 64;  // shards large enough that cutting the tail cuts pixels
  options.width = 64;
  test::write_synthetic_dataset(dir.path(), options);
  fs::path shard = dir / "shard-00002.h5";
  // Keep the front (superblock and metadata) but lose the end of the pixels.
  fs::resize_file(shard, fs::file_size(shard) - 5000);
  expect_open_fails(dir.path(), "shard-00002.h5", "");
}

TEST(Dataset, TruncationInsidePixelsIsCaughtBeforeMapping) {
  // Cut the file just after the first pixels: whichever check sees it first
  // (HDF5's end-of-file check at open, or ours on the /images range), open
  // fails naming the shard and nothing is mapped.
  TempDir dir;
  SyntheticOptions options;
  options.height = 32;
  options.width = 32;
  test::write_synthetic_dataset(dir.path(), options);
  fs::path shard = dir / "shard-00000.h5";
  const uint64_t offset = test::images_offset(shard);
  fs::resize_file(shard, offset + 10);
  expect_open_fails(dir.path(), "shard-00000.h5", "");
}

TEST(Dataset, ForeignFilesAreRefused) {
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  test::write_bytes(dir / "shard-00001.h5", std::string(10000, 'x'));
  expect_open_fails(dir.path(), "shard-00001.h5", "cannot open as HDF5");

  // A valid HDF5 file that is not an imgpack shard.
  {
    h5::File file = h5::File::create(dir / "shard-00001.h5");
    file.write<int32_t>("/something", std::vector<int32_t>{1, 2, 3});
    file.close();
  }
  expect_open_fails(dir.path(), "shard-00001.h5", "not an imgpack shard");
}

TEST(Dataset, ShardOfAnotherDatasetIsRefused) {
  TempDir dir;
  test::write_synthetic_dataset(dir / "a", SyntheticOptions{});
  test::write_foreign_twin(dir / "b", SyntheticOptions{});
  fs::copy_file(dir / "b" / "shard-00001.h5", dir / "a" / "shard-00001.h5",
                fs::copy_options::overwrite_existing);
  expect_open_fails(dir / "a", "shard-00001.h5", "belongs to dataset");
}

TEST(Dataset, ShardsInTheWrongPlaceAreRefused) {
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  fs::rename(dir / "shard-00000.h5", dir / "tmp.h5");
  fs::rename(dir / "shard-00001.h5", dir / "shard-00000.h5");
  fs::rename(dir / "tmp.h5", dir / "shard-00001.h5");
  expect_open_fails(dir.path(), "shard-00000.h5", "is shard 1");
}

// Rewrites /images of a shard with the given layout, keeping everything else.
void rewrite_images(const fs::path& shard, H5D_layout_t layout) {
  std::vector<uint8_t> pixels;
  std::vector<uint64_t> dims;
  std::string uuid;
  int64_t shard_index = 0;
  std::vector<int32_t> labels;
  std::vector<int64_t> samples;
  std::vector<uint16_t> variants;
  std::vector<uint64_t> checksums;
  {
    h5::File in = h5::File::open_read(shard);
    dims = in.shape(format::kImages);
    pixels.resize(dims[0] * dims[1] * dims[2] * dims[3]);
    h5::Handle images = in.open_dataset(format::kImages);
    ASSERT_GE(H5Dread(images.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, pixels.data()),
              0);
    uuid = in.read_string_attr("/", format::kAttrUuid);
    shard_index = in.read_int_attr("/", format::kAttrShardIndex);
    labels = in.read<int32_t>(format::kLabels);
    samples = in.read<int64_t>(format::kSample);
    variants = in.read<uint16_t>(format::kVariant);
    checksums = in.read<uint64_t>(format::kChecksum);
  }
  h5::File out = h5::File::create(shard);
  std::vector<hsize_t> hdims(dims.begin(), dims.end());
  h5::Handle space(H5Screate_simple(4, hdims.data(), nullptr));
  h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
  if (layout == H5D_CHUNKED) {
    hsize_t chunk[4] = {1, hdims[1], hdims[2], hdims[3]};
    ASSERT_GE(H5Pset_chunk(dcpl.get(), 4, chunk), 0);
  } else {
    ASSERT_GE(H5Pset_layout(dcpl.get(), layout), 0);
  }
  h5::Handle images(H5Dcreate2(out.id(), format::kImages, H5T_NATIVE_UINT8, space.get(),
                               H5P_DEFAULT, dcpl.get(), H5P_DEFAULT));
  ASSERT_TRUE(images);
  ASSERT_GE(H5Dwrite(images.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, pixels.data()),
            0);
  images.reset();
  out.write(format::kLabels, labels);
  out.write(format::kSample, samples);
  out.write(format::kVariant, variants);
  out.write(format::kChecksum, checksums);
  out.write_attr("/", format::kAttrFormat, int64_t{format::kShardVersion});
  out.write_attr("/", format::kAttrUuid, uuid);
  out.write_attr("/", format::kAttrShardIndex, shard_index);
  out.close();
}

TEST(Dataset, ChunkedImagesAreRefused) {
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  rewrite_images(dir / "shard-00001.h5", H5D_CHUNKED);
  expect_open_fails(dir.path(), "shard-00001.h5", "/images is chunked");
}

TEST(Dataset, CompactImagesAreRefused) {
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  rewrite_images(dir / "shard-00000.h5", H5D_COMPACT);
  expect_open_fails(dir.path(), "shard-00000.h5", "/images is compact");
}

TEST(Dataset, ContiguousRewriteStillOpens) {
  // The same rewrite with a contiguous layout is a valid shard: the two tests
  // above fail for the layout, not for the rewrite.
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  rewrite_images(dir / "shard-00000.h5", H5D_CONTIGUOUS);
  Dataset dataset =
      Dataset::open(dir.path(), DatasetOpenOptions{.verify_checksums = true, .index = {}});
  EXPECT_EQ(dataset.num_records(), 40u);
}

TEST(Dataset, ColumnsThatDisagreeWithTheIndexAreRefused) {
  TempDir dir;
  const DatasetIndex index = test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  expect_open_fails(dir.path(), test::relabel_in_index_only(dir.path(), index, 3), "has label");
}

TEST(Dataset, ShapeThatDisagreesWithTheIndexIsRefused) {
  TempDir dir;
  DatasetIndex index = test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  index.width = 4;  // shards hold 5 columns
  write_index(dir.path(), index);
  expect_open_fails(dir.path(), "shard-00000.h5", "has shape [16, 6, 5, 3]");
}

// An index whose `variants` its samples do not have (one record each where
// it says two) is refused at open and by verify, naming the index.
TEST(Dataset, SamplesWithoutTheirVariantsAreRefused) {
  TempDir dir;
  DatasetIndex index = test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  index.variants = 2;
  write_index(dir.path(), index);
  expect_open_fails(dir.path(), "index.h5", "sample 0 has 1 records, not variants 0..1 once each");
  const VerifyReport report = verify_dataset(dir.path());
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_NE(report.errors[0].find("not variants 0..1"), std::string::npos) << report.errors[0];
}

// A path names one sample in use: verify refuses an index where two share
// one, or one has none, but not a removed sample sharing its path with the
// sample that replaced it.
TEST(Dataset, VerifyRefusesSamplePathsThatNameNoneOrTwoSamples) {
  TempDir dir;
  DatasetIndex index = test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  const std::string first = index.sample_path[0];
  index.sample_path[7] = first;
  write_index(dir.path(), index);
  VerifyReport report = verify_dataset(dir.path());
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_NE(report.errors[0].find("samples 0 and 7 both have the path '" + first + "'"),
            std::string::npos)
      << report.errors[0];
  std::vector<uint8_t> removed(index.num_samples(), 0);
  removed[0] = 1;  // replaced by sample 7
  index.sample_removed = removed;
  write_index(dir.path(), index);
  report = verify_dataset(dir.path());
  EXPECT_TRUE(report.errors.empty()) << report.errors[0];
  index.sample_path[3].clear();
  write_index(dir.path(), index);
  report = verify_dataset(dir.path());
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_NE(report.errors[0].find("sample 3 has no path"), std::string::npos) << report.errors[0];
}

TEST(Dataset, VerifyChecksumsFindsDamagedPixels) {
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  fs::path shard = dir / "shard-00002.h5";
  const uint64_t offset = test::images_offset(shard);
  {
    std::string bytes = test::read_bytes(shard);
    bytes[offset + uint64_t{3} * 90 + 7] ^= 0x40;  // row 3
    test::write_bytes(shard, bytes);
  }
  Dataset::open(dir.path());  // structure is intact
  try {
    Dataset::open(dir.path(), DatasetOpenOptions{.verify_checksums = true, .index = {}});
    ADD_FAILURE() << "damaged pixels were not detected";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shard-00002.h5: row 3"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace imgpack
