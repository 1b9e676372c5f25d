#include "imgpack/dataset_index.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "h5.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "index_checksum.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

DatasetIndex small_index(int64_t version = format::kIndexVersion) {
  DatasetIndex index;
  index.format_version = version;
  index.uuid = "00000000-0000-8000-8000-000000000001";
  index.height = 4;
  index.width = 5;
  index.channels = 3;
  index.variants = 2;
  index.color = "rgb";
  index.convert_options = R"({"seed":1})";
  index.created_by = "test";
  index.sample_path = {"cat/a.jpg", "dog/b.png", "dog/c.jpg"};
  index.sample_label = {0, 1, 1};
  index.sample_group = {0, -1, 1};
  index.class_names = {"cat", "dog"};
  index.group_names = {"p1", "p2"};
  // Two shards: 4 records and 2 records, every sample with variants 0 and 1.
  index.records.shard = {0, 0, 0, 0, 1, 1};
  index.records.row = {0, 1, 2, 3, 0, 1};
  index.records.sample = {2, 2, 0, 0, 1, 1};
  index.records.variant = {0, 1, 0, 1, 0, 1};
  index.shards.file = {"shard-00000.h5", "shard-00001.h5"};
  index.shards.records = {4, 2};
  Split split;
  split.name = "cv5";
  split.kind = "stratified";
  split.folds = 2;
  split.seed = 9;
  split.test_fraction = 0.1;
  split.stratified = true;
  split.created = "2026-01-01T00:00:00Z";
  split.assign = {0, 1, -1};
  index.splits.push_back(split);
  return index;
}

// Both index formats: 2, which this imgpack writes, and 1, which it still
// reads and writes back (a split of a format 1 dataset).
class EveryFormat : public ::testing::TestWithParam<int64_t> {};
INSTANTIATE_TEST_SUITE_P(DatasetIndex, EveryFormat, ::testing::Values(1, 2),
                         [](const auto& param) { return "format" + std::to_string(param.param); });

TEST_P(EveryFormat, RoundTripsEveryField) {
  test::TempDir dir;
  DatasetIndex written = small_index(GetParam());
  write_index(dir.path(), written);
  EXPECT_FALSE(std::filesystem::exists(dir / "index.h5.tmp"));
  EXPECT_FALSE(std::filesystem::exists(dir / "splits.h5.tmp"));
  EXPECT_EQ(std::filesystem::exists(dir / "splits.h5"), GetParam() >= 2);
  DatasetIndex read = read_index(dir.path());
  EXPECT_EQ(read.format_version, GetParam());
  EXPECT_EQ(read.uuid, written.uuid);
  EXPECT_EQ(read.height, 4u);
  EXPECT_EQ(read.width, 5u);
  EXPECT_EQ(read.channels, 3u);
  EXPECT_EQ(read.variants, 2u);
  EXPECT_EQ(read.color, "rgb");
  EXPECT_EQ(read.convert_options, written.convert_options);
  EXPECT_EQ(read.sample_path, written.sample_path);
  EXPECT_EQ(read.sample_label, written.sample_label);
  EXPECT_EQ(read.sample_group, written.sample_group);
  EXPECT_EQ(read.class_names, written.class_names);
  EXPECT_EQ(read.group_names, written.group_names);
  EXPECT_EQ(read.records.shard, written.records.shard);
  EXPECT_EQ(read.records.row, written.records.row);
  EXPECT_EQ(read.records.sample, written.records.sample);
  EXPECT_EQ(read.records.variant, written.records.variant);
  EXPECT_EQ(read.shards.file, written.shards.file);
  EXPECT_EQ(read.shards.records, written.shards.records);
  ASSERT_EQ(read.splits.size(), 1u);
  EXPECT_EQ(read.splits[0].name, "cv5");
  EXPECT_EQ(read.splits[0].kind, "stratified");
  EXPECT_EQ(read.splits[0].folds, 2);
  EXPECT_EQ(read.splits[0].seed, 9u);
  EXPECT_DOUBLE_EQ(read.splits[0].test_fraction, 0.1);
  EXPECT_TRUE(read.splits[0].stratified);
  EXPECT_FALSE(read.splits[0].grouped);
  EXPECT_EQ(read.splits[0].assign, (std::vector<int16_t>{0, 1, -1}));
  ASSERT_NE(read.find_split("cv5"), nullptr);
  EXPECT_EQ(read.find_split("nope"), nullptr);
}

TEST_P(EveryFormat, ASummaryReadLeavesOutPathsGroupNamesAndRecordsButCountsThem) {
  test::TempDir dir;
  const DatasetIndex written = small_index(GetParam());
  write_index(dir.path(), written);
  DatasetIndex read =
      read_index(dir.path(), {.sample_paths = false, .group_names = false, .records = false});
  EXPECT_FALSE(read.has_sample_paths);
  EXPECT_FALSE(read.has_group_names);
  EXPECT_FALSE(read.has_records);
  EXPECT_TRUE(read.sample_path.empty());
  EXPECT_TRUE(read.group_names.empty());
  EXPECT_EQ(read.records.size(), 0u);
  EXPECT_EQ(read.num_samples(), 3u);
  EXPECT_EQ(read.num_groups(), 2u);
  EXPECT_EQ(read.num_records(), 6u);
  EXPECT_EQ(read.sample_label, written.sample_label);
  EXPECT_EQ(read.sample_group, written.sample_group);
  EXPECT_EQ(read.class_names, written.class_names);
  EXPECT_EQ(read.shards.records, written.shards.records);
  ASSERT_EQ(read.splits.size(), 1u);
  EXPECT_EQ(read.splits[0].assign, written.splits[0].assign);
  // Writing it back would lose what was left out.
  EXPECT_THROW(write_index(dir.path(), read), Error);
  EXPECT_EQ(read_index(dir.path()).sample_path, written.sample_path);
}

TEST(DatasetIndex, MissingIndexMeansIncompleteDataset) {
  test::TempDir dir;
  try {
    read_index(dir.path());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index.h5"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("not a complete imgpack dataset"), std::string::npos);
  }
}

TEST(DatasetIndex, ValidateRejectsInconsistentTables) {
  auto expect_invalid = [](const DatasetIndex& index, const std::string& fragment) {
    try {
      index.validate("idx");
      FAIL() << "expected an error mentioning " << fragment;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  DatasetIndex index = small_index();
  EXPECT_NO_THROW(index.validate("idx"));

  DatasetIndex bad = small_index();
  bad.sample_label[1] = 2;
  expect_invalid(bad, "outside the 2 classes");
  bad = small_index();
  bad.records.row[5] = 2;
  expect_invalid(bad, "points past the end");
  bad = small_index();
  bad.records.sample[0] = 3;
  expect_invalid(bad, "missing sample");
  bad = small_index();
  bad.shards.records[1] = 3;
  expect_invalid(bad, "holds 3 records");
  bad = small_index();
  bad.splits[0].assign = {0, 2, -1};
  expect_invalid(bad, "assigns fold 2");
  bad = small_index();
  bad.splits[0].folds = 40000;  // more than an int16 assignment can name
  expect_invalid(bad, "has 40000 folds, more than the 32767");
  bad = small_index();
  bad.shards.file[0] = "../evil.h5";
  expect_invalid(bad, "not a plain file name");
  bad = small_index();
  bad.channels = 2;
  expect_invalid(bad, "invalid image shape");
  // The colour says what the channels hold: "gray" on three channels (or a
  // name no converter writes) would leave a reader guessing.
  bad = small_index();
  bad.color = "gray";
  expect_invalid(bad, "color 'gray' with 3 channels, expected 'rgb'");
  bad = small_index();
  bad.color = "bgr";
  expect_invalid(bad, "color 'bgr' with 3 channels");
  bad = small_index();
  bad.channels = 1;
  expect_invalid(bad, "color 'rgb' with 1 channel, expected 'gray'");
}

// Rewrites the elements of the string table `name` of DIR/index.h5 in place,
// as damage to its global heap or a foreign writer would, leaving its
// checksum attribute as it was.
void overwrite_strings(const std::filesystem::path& dir, const std::string& name,
                       const std::vector<std::string>& values) {
  h5::File file = h5::File::open_write(dir / "index.h5");
  h5::Handle dataset = file.open_dataset(name);
  h5::Handle type(H5Dget_type(dataset.get()));
  std::vector<const char*> raw;
  raw.reserve(values.size());
  for (const std::string& value : values) raw.push_back(value.c_str());
  ASSERT_GE(H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()), 0);
  file.close();
}

void expect_refused_naming(const std::filesystem::path& dir, const std::string& table,
                           const std::string& file = "index.h5",
                           const std::string& problem = "checksum") {
  try {
    read_index(dir);
    ADD_FAILURE() << "read an index whose " << table << " was changed";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(file), std::string::npos) << message;
    EXPECT_NE(message.find(table), std::string::npos) << message;
    EXPECT_NE(message.find(problem), std::string::npos) << message;
  }
}

// Overwrites element `i` (in row-major order, of any rank) of the numeric
// dataset `name` of the file at `path` in place, leaving its checksum
// attribute as it was.
template <class T>
void overwrite_number(const std::filesystem::path& path, const std::string& name, std::size_t i,
                      T value) {
  h5::File file = h5::File::open_write(path);
  std::vector<T> values = file.read_shaped<T>(name, file.shape(name));
  ASSERT_LT(i, values.size());
  values[i] = value;
  h5::Handle dataset = file.open_dataset(name);
  ASSERT_GE(
      H5Dwrite(dataset.get(), h5::native_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
      0);
  file.close();
}

// Index contents are checksummed: a class name, a sample path, a fold, a
// record's row or a root attribute changed behind the checksums is refused,
// naming the table, where HDF5 alone reads the new values happily.
TEST(DatasetIndex, Format1ContentsChangedBehindTheirChecksumsAreRefusedNamingTheTable) {
  test::TempDir dir;
  write_index(dir.path(), small_index(1));
  overwrite_strings(dir.path(), format::kClassesName, {"cat", "dig"});
  expect_refused_naming(dir.path(), format::kClassesName);

  write_index(dir.path(), small_index(1));
  overwrite_strings(dir.path(), format::kSamplesPath, {"cat/a.jpg", "dog/b.png", "dog/d.jpg"});
  expect_refused_naming(dir.path(), format::kSamplesPath);

  write_index(dir.path(), small_index(1));
  {
    h5::File file = h5::File::open_write(dir / "index.h5");
    h5::Handle assign = file.open_dataset("/splits/cv5/assign");
    const int16_t moved[] = {1, 1, -1};  // sample 0 from fold 0 to fold 1
    ASSERT_GE(H5Dwrite(assign.get(), H5T_NATIVE_INT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, moved), 0);
    file.close();
  }
  expect_refused_naming(dir.path(), "/splits/cv5/assign");

  write_index(dir.path(), small_index(1));
  {
    h5::File file = h5::File::open_write(dir / "index.h5");
    file.write_attr("/", format::kAttrConvertOptions, std::string(R"({"seed":2})"));
    file.close();
  }
  expect_refused_naming(dir.path(), "/: its attributes");

  write_index(dir.path(), small_index(1));
  {
    h5::File file = h5::File::open_write(dir / "index.h5");
    file.write_attr("/splits/cv5", format::kSplitKind, std::string("random"));
    file.close();
  }
  expect_refused_naming(dir.path(), "/splits/cv5: its attributes");
}

// Format 2 keeps the same promise over its own layout: the bytes and offsets
// of every string table, the numeric tables, splits.h5's assignments and the
// attributes of its root and of every split.
TEST(DatasetIndex, Format2ContentsChangedBehindTheirChecksumsAreRefusedNamingTheTable) {
  test::TempDir dir;
  const std::filesystem::path index_file = dir / "index.h5";
  const std::filesystem::path splits_file = dir / "splits.h5";
  write_index(dir.path(), small_index());
  overwrite_number<uint8_t>(index_file, "/classes/name/bytes", 4, 'i');  // "dog" -> "dig"
  expect_refused_naming(dir.path(), "/classes/name/bytes");

  write_index(dir.path(), small_index());
  overwrite_number<uint64_t>(index_file, "/samples/path/offsets", 1, 8);
  expect_refused_naming(dir.path(), "/samples/path/offsets");

  write_index(dir.path(), small_index());
  overwrite_number<uint8_t>(index_file, "/shards/file/bytes", 0, 'S');
  expect_refused_naming(dir.path(), "/shards/file/bytes");

  write_index(dir.path(), small_index());
  overwrite_number<uint32_t>(index_file, format::kRecordsRow, 1, 0);
  expect_refused_naming(dir.path(), format::kRecordsRow);

  write_index(dir.path(), small_index());
  overwrite_number<int16_t>(splits_file, "/splits/cv5/assign", 0, 1);
  expect_refused_naming(dir.path(), "/splits/cv5/assign", "splits.h5");

  write_index(dir.path(), small_index());
  {
    h5::File file = h5::File::open_write(splits_file);
    file.write_attr("/splits/cv5", format::kSplitKind, std::string("random"));
    file.close();
  }
  expect_refused_naming(dir.path(), "/splits/cv5: its attributes", "splits.h5");

  write_index(dir.path(), small_index());
  {
    h5::File file = h5::File::open_write(splits_file);
    file.write_attr("/", format::kAttrSamples, int64_t{4});
    file.close();
  }
  expect_refused_naming(dir.path(), "/: its attributes", "splits.h5");

  write_index(dir.path(), small_index());
  {
    h5::File file = h5::File::open_write(index_file);
    file.write_attr("/", format::kAttrConvertOptions, std::string(R"({"seed":2})"));
    file.close();
  }
  expect_refused_naming(dir.path(), "/: its attributes");
}

// A format 2 string table whose offsets run backwards or past its bytes, with
// checksums to match (a writer other than imgpack), is refused too.
TEST(DatasetIndex, Format2StringTablesWithBadOffsetsAreRefused) {
  test::TempDir dir;
  write_index(dir.path(), small_index());
  {
    h5::File file = h5::File::open_write(dir / "index.h5");
    std::vector<uint64_t> offsets = file.read<uint64_t>("/classes/name/offsets");
    ASSERT_EQ(offsets, (std::vector<uint64_t>{0, 3, 6}));
    offsets = {0, 7, 6};
    file.unlink("/classes/name/offsets");
    file.write("/classes/name/offsets", offsets);
    file.write_uint64_attr("/classes/name/offsets", format::kAttrChecksum,
                           index_checksum::of_numbers(offsets));
    file.close();
  }
  expect_refused_naming(dir.path(), "/classes/name/offsets", "index.h5", "decreases");
}

// An assignment outside the split's folds, with a checksum to match (a
// writer other than imgpack): the fault is splits.h5's, and said so, with
// the way on (the index and the shards do not depend on it).
TEST(DatasetIndex, Format2SplitAssigningAFoldItLacksIsRefusedNamingSplitsH5) {
  test::TempDir dir;
  write_index(dir.path(), small_index());
  {
    h5::File file = h5::File::open_write(dir / "splits.h5");
    std::vector<int16_t> assign = file.read<int16_t>("/splits/cv5/assign");
    assign[0] = 7;
    file.unlink("/splits/cv5/assign");
    file.write("/splits/cv5/assign", assign);
    file.write_uint64_attr("/splits/cv5/assign", format::kAttrChecksum,
                           index_checksum::of_numbers(assign));
    file.close();
  }
  try {
    read_index(dir.path());
    ADD_FAILURE() << "read a split assigning fold 7";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find((dir / "splits.h5").string() + ": split cv5 assigns fold 7 of"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("do not depend on it"), std::string::npos) << message;
  }
}

// A format 2 dataset keeps its splits in splits.h5: one that is missing, or
// that belongs to another index (another uuid, another sample count), is
// refused naming it; a format 1 index ignores a splits.h5 beside it.
TEST(DatasetIndex, SplitsFileMustBelongToTheIndex) {
  test::TempDir dir, other;
  write_index(dir.path(), small_index());
  std::filesystem::remove(dir / "splits.h5");
  expect_refused_naming(dir.path(), "splits.h5", "splits.h5", "missing");

  DatasetIndex foreign = small_index();
  foreign.uuid = "00000000-0000-8000-8000-00000000beef";
  write_index(other.path(), foreign);
  std::filesystem::copy_file(other / "splits.h5", dir / "splits.h5");
  expect_refused_naming(dir.path(), "splits.h5", "splits.h5", "belongs to dataset");

  write_index(dir.path(), small_index(1));
  DatasetIndex read = read_index(dir.path());
  EXPECT_EQ(read.format_version, 1);
  ASSERT_EQ(read.splits.size(), 1u);  // index.h5's own, not splits.h5's
  EXPECT_EQ(read.splits[0].assign, small_index().splits[0].assign);
}

// Format 2 has checksums on every table, always.
TEST(DatasetIndex, Format2WithoutAChecksumIsRefused) {
  test::TempDir dir;
  write_index(dir.path(), small_index());
  {
    h5::File file = h5::File::open_write(dir / "index.h5");
    ASSERT_GE(H5Adelete(file.open_dataset("/samples/path/bytes").get(), format::kAttrChecksum), 0);
    file.close();
  }
  expect_refused_naming(dir.path(), "/samples/path/bytes", "index.h5", "has no xxh3");
}

// Format 2 is strings in bulk: every string table a group of two numeric
// datasets, and no variable-length string dataset anywhere.
TEST(DatasetIndex, Format2StoresStringsAsBytesAndOffsets) {
  test::TempDir dir;
  write_index(dir.path(), small_index());
  h5::File file = h5::File::open_read(dir / "index.h5");
  EXPECT_EQ(file.read_int_attr("/", format::kAttrFormat), 2);
  EXPECT_FALSE(file.exists(format::kSplitsGroup));
  const std::string paths = "cat/a.jpgdog/b.pngdog/c.jpg";
  EXPECT_EQ(file.read<uint8_t>("/samples/path/bytes"),
            std::vector<uint8_t>(paths.begin(), paths.end()));
  EXPECT_EQ(file.read<uint64_t>("/samples/path/offsets"), (std::vector<uint64_t>{0, 9, 18, 27}));
  EXPECT_EQ(file.read<uint64_t>("/groups/name/offsets"), (std::vector<uint64_t>{0, 2, 4}));
  EXPECT_EQ(file.read<uint64_t>("/shards/file/offsets"), (std::vector<uint64_t>{0, 14, 28}));
  h5::File splits = h5::File::open_read(dir / "splits.h5");
  EXPECT_EQ(splits.read_int_attr("/", format::kAttrFormat), 2);
  EXPECT_EQ(splits.read_string_attr("/", format::kAttrUuid), small_index().uuid);
  EXPECT_EQ(splits.read_int_attr("/", format::kAttrSamples), 3);
  EXPECT_EQ(splits.read<int16_t>("/splits/cv5/assign"), (std::vector<int16_t>{0, 1, -1}));
}

// Changing a split of a format 2 dataset replaces splits.h5 alone: index.h5,
// the sample table, keeps its bytes, so an index read without its paths or
// records will do. Format 1 rewrites index.h5 (which holds the splits).
TEST_P(EveryFormat, WriteSplitsStoresTheSplits) {
  test::TempDir dir;
  DatasetIndex index = small_index(GetParam());
  write_index(dir.path(), index);
  const std::string index_bytes = test::read_bytes(dir / "index.h5");
  DatasetIndex summary =
      read_index(dir.path(), {.sample_paths = false, .group_names = false, .records = false});
  summary.splits[0].assign = {1, 0, 0};
  summary.splits[0].created = "2026-02-02T00:00:00Z";
  if (GetParam() >= 2) {
    write_splits(dir.path(), summary);
    EXPECT_EQ(test::read_bytes(dir / "index.h5"), index_bytes);
  } else {
    EXPECT_THROW(write_splits(dir.path(), summary), Error);  // would lose the paths
    index.splits[0].assign = {1, 0, 0};
    index.splits[0].created = "2026-02-02T00:00:00Z";
    write_splits(dir.path(), index);
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "splits.h5.tmp"));
  EXPECT_FALSE(std::filesystem::exists(dir / "index.h5.tmp"));
  const DatasetIndex read = read_index(dir.path());
  EXPECT_EQ(read.splits.at(0).assign, (std::vector<int16_t>{1, 0, 0}));
  EXPECT_EQ(read.splits.at(0).created, "2026-02-02T00:00:00Z");
  EXPECT_EQ(read.sample_path, small_index().sample_path);
}

// Indexes written before the checksums (no xxh3 attributes at all) still
// open; one that has them must have them on every table.
TEST(DatasetIndex, Format1IndexesWithoutChecksumsStillOpen) {
  test::TempDir dir;
  write_index(dir.path(), small_index(1));
  const std::vector<std::string> tables = {
      format::kSamplesPath, format::kSamplesLabel,  format::kSamplesGroup,
      format::kClassesName, format::kGroupsName,    format::kRecordsShard,
      format::kRecordsRow,  format::kRecordsSample, format::kRecordsVariant,
      format::kShardsFile,  format::kShardsRecords, "/splits/cv5/assign"};
  {
    h5::File file = h5::File::open_write(dir / "index.h5");
    for (const std::string& table : tables) {
      ASSERT_TRUE(file.has_attr(table, format::kAttrChecksum)) << table;
    }
    ASSERT_GE(H5Adelete(file.open_dataset(format::kRecordsRow).get(), format::kAttrChecksum), 0);
    file.close();
  }
  expect_refused_naming(dir.path(), format::kRecordsRow);
  {
    h5::File file = h5::File::open_write(dir / "index.h5");
    for (const std::string& table : tables) {
      if (table != format::kRecordsRow) {
        ASSERT_GE(H5Adelete(file.open_dataset(table).get(), format::kAttrChecksum), 0) << table;
      }
    }
    h5::Handle root(H5Gopen2(file.id(), "/", H5P_DEFAULT));
    ASSERT_GE(H5Adelete(root.get(), format::kAttrAttributesChecksum), 0);
    h5::Handle split(H5Gopen2(file.id(), "/splits/cv5", H5P_DEFAULT));
    ASSERT_GE(H5Adelete(split.get(), format::kAttrAttributesChecksum), 0);
    file.close();
  }
  const DatasetIndex read = read_index(dir.path());
  EXPECT_EQ(read.sample_path, small_index().sample_path);
  EXPECT_EQ(read.splits.at(0).assign, small_index().splits.at(0).assign);
}

// A split rewrite (write_splits of the changed index) writes the new split's
// checksums with it, in the file that holds the splits.
TEST_P(EveryFormat, ASplitRewriteUpdatesItsChecksums) {
  test::TempDir dir;
  DatasetIndex index = small_index(GetParam());
  write_index(dir.path(), index);
  index.splits[0].assign = {1, 0, 0};
  index.splits[0].kind = "random";
  write_splits(dir.path(), index);
  EXPECT_EQ(read_index(dir.path()).splits.at(0).assign, (std::vector<int16_t>{1, 0, 0}));
  h5::File file = h5::File::open_read(dir / (GetParam() >= 2 ? "splits.h5" : "index.h5"));
  EXPECT_EQ(file.read_uint64_attr("/splits/cv5/assign", format::kAttrChecksum),
            index_checksum::of_numbers(index.splits[0].assign));
  EXPECT_EQ(file.read_uint64_attr("/splits/cv5", format::kAttrAttributesChecksum),
            index_checksum::of_split_attributes(index.splits[0]));
}

TEST_P(EveryFormat, MaskAttributesAndClassNamesRoundTripChecksummed) {
  test::TempDir dir;
  DatasetIndex index = small_index(GetParam());
  write_index(dir.path(), index);
  {
    // Without masks nothing of them is written.
    h5::File file = h5::File::open_read(dir / "index.h5");
    EXPECT_FALSE(file.has_attr("/", format::kAttrMasks));
    EXPECT_FALSE(file.has_attr("/", format::kAttrMaskFill));
    EXPECT_FALSE(file.exists("/mask_classes"));
  }
  DatasetIndex read = read_index(dir.path());
  EXPECT_FALSE(read.masks);
  EXPECT_EQ(read.mask_bytes(), 0u);

  index.masks = true;
  index.mask_fill = 254;
  index.mask_class_names = {"background", "cat", "dog"};
  write_index(dir.path(), index);
  read = read_index(dir.path());
  EXPECT_TRUE(read.masks);
  EXPECT_EQ(read.mask_fill, 254);
  EXPECT_EQ(read.mask_class_names, index.mask_class_names);
  EXPECT_EQ(read.mask_bytes(), 20u);
  {
    h5::File file = h5::File::open_read(dir / "index.h5");
    EXPECT_EQ(file.read_int_attr("/", format::kAttrMasks), 1);
    EXPECT_EQ(file.read_int_attr("/", format::kAttrMaskFill), 254);
  }
  // Without names the table is there, empty: its absence would be damage.
  DatasetIndex unnamed = index;
  unnamed.mask_class_names.clear();
  write_index(dir.path(), unnamed);
  EXPECT_TRUE(read_index(dir.path()).mask_class_names.empty());
  {
    h5::File file = h5::File::open_write(dir / "index.h5");
    if (GetParam() >= 2) {
      // Format 2: a string table is bytes plus n + 1 offsets.
      EXPECT_EQ(file.length(std::string(format::kMaskClassesName) + "/offsets"), 1u);
    } else {
      EXPECT_EQ(file.length(format::kMaskClassesName), 0u);
    }
    file.unlink("/mask_classes");
    file.close();
  }
  try {
    read_index(dir.path());
    ADD_FAILURE() << "an index with masks but no /mask_classes/name was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has masks but no /mask_classes/name"), std::string::npos)
        << e.what();
  }
  write_index(dir.path(), index);

  // The fill is covered by the root's checksum, the names by their table's.
  {
    h5::File file = h5::File::open_write(dir / "index.h5");
    file.write_attr("/", format::kAttrMaskFill, int64_t{0});
    file.close();
  }
  expect_refused_naming(dir.path(), "/: its attributes");
  write_index(dir.path(), index);
  if (GetParam() == 1) {
    overwrite_strings(dir.path(), format::kMaskClassesName, {"background", "cat", "dig"});
    expect_refused_naming(dir.path(), format::kMaskClassesName);
    write_index(dir.path(), index);
  }
  {
    h5::File file = h5::File::open_write(dir / "index.h5");
    h5::Handle root(H5Gopen2(file.id(), "/", H5P_DEFAULT));
    ASSERT_GE(H5Adelete(root.get(), format::kAttrMasks), 0);
    file.close();
  }
  expect_refused_naming(dir.path(), "/: its attributes");

  // Names without masks are an inconsistent index.
  DatasetIndex names_only = small_index(GetParam());
  names_only.mask_class_names = {"background"};
  EXPECT_THROW(write_index(dir.path(), names_only), Error);
}

// Targets beyond one class: written only where present, read back as
// written (NaN included), covered by their tables' checksums and by the
// root's, and required where the root says they are there.
TEST_P(EveryFormat, MultilabelAndTargetsRoundTripChecksummed) {
  test::TempDir dir;
  const std::filesystem::path index_file = dir / "index.h5";
  DatasetIndex index = small_index(GetParam());
  write_index(dir.path(), index);
  {
    h5::File file = h5::File::open_read(index_file);
    EXPECT_FALSE(file.has_attr("/", format::kAttrMultilabelClasses));
    EXPECT_FALSE(file.has_attr("/", format::kAttrTargets));
    EXPECT_FALSE(file.exists(format::kSamplesMultilabel));
    EXPECT_FALSE(file.exists(format::kSamplesTargets));
  }
  const uint64_t plain_checksum = index_checksum::of_root_attributes(index);

  index.multilabel_names = {"indoor", "people", "sunny"};
  index.sample_multilabel = {1, 0, 0, /**/ 0, 1, 1, /**/ 0, 0, 0};
  index.target_names = {"age", "score"};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  index.sample_targets = {31.5F, -2.0F, /**/ nan, 0.25F, /**/ 7.0F, nan};
  EXPECT_NE(index_checksum::of_root_attributes(index), plain_checksum);
  write_index(dir.path(), index);
  DatasetIndex read = read_index(dir.path());
  EXPECT_EQ(read.multilabel_names, index.multilabel_names);
  EXPECT_EQ(read.sample_multilabel, index.sample_multilabel.to_vector());
  EXPECT_EQ(read.target_names, index.target_names);
  ASSERT_EQ(read.sample_targets.size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) {
    if (std::isnan(index.sample_targets[i])) {
      EXPECT_TRUE(std::isnan(read.sample_targets[i])) << i;
    } else {
      EXPECT_EQ(read.sample_targets[i], index.sample_targets[i]) << i;
    }
  }
  EXPECT_EQ(std::vector<uint8_t>(read.multilabel_of(1).begin(), read.multilabel_of(1).end()),
            (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(read.targets_of(0)[0], 31.5F);
  {
    // Two-dimensional, [S, C] and [S, T], as h5py shows them.
    h5::File file = h5::File::open_read(index_file);
    EXPECT_EQ(file.shape(format::kSamplesMultilabel), (std::vector<uint64_t>{3, 3}));
    EXPECT_EQ(file.shape(format::kSamplesTargets), (std::vector<uint64_t>{3, 2}));
    EXPECT_EQ(file.read_int_attr("/", format::kAttrMultilabelClasses), 3);
    EXPECT_EQ(file.read_int_attr("/", format::kAttrTargets), 2);
  }

  // One value changed behind the table's checksum.
  overwrite_number<uint8_t>(index_file, format::kSamplesMultilabel, 1, 1);
  expect_refused_naming(dir.path(), format::kSamplesMultilabel);
  write_index(dir.path(), index);
  overwrite_number(index_file, format::kSamplesTargets, 1, 2.5F);
  expect_refused_naming(dir.path(), format::kSamplesTargets);
  write_index(dir.path(), index);

  // A table gone while the root says it is there is damage, not "no targets";
  // the counts are covered by the root's checksum.
  {
    h5::File file = h5::File::open_write(index_file);
    file.unlink(format::kSamplesTargets);
    file.close();
  }
  EXPECT_THROW(read_index(dir.path()), Error);
  write_index(dir.path(), index);
  {
    h5::File file = h5::File::open_write(index_file);
    file.write_attr("/", format::kAttrMultilabelClasses, int64_t{2});
    file.close();
  }
  EXPECT_THROW(read_index(dir.path()), Error);
  write_index(dir.path(), index);
  {
    h5::File file = h5::File::open_write(index_file);
    h5::Handle root(H5Gopen2(file.id(), "/", H5P_DEFAULT));
    ASSERT_GE(H5Adelete(root.get(), format::kAttrTargets), 0);
    file.close();
  }
  expect_refused_naming(dir.path(), "/: its attributes");

  // Rows that do not match the samples, or a multi-label entry other than 0
  // or 1, are an inconsistent index.
  DatasetIndex short_rows = index;
  short_rows.sample_targets.resize(4);
  EXPECT_THROW(write_index(dir.path(), short_rows), Error);
  DatasetIndex two = index;
  two.sample_multilabel[4] = 2;
  EXPECT_THROW(write_index(dir.path(), two), Error);
}

// A keypoint skeleton: absent where there is none (the index as before),
// else a [E, 2] table under its own checksum, its edge count under the
// root's; edges joining keypoints that do not exist are an inconsistent index.
TEST_P(EveryFormat, AKeypointSkeletonRoundTripsChecksummed) {
  test::TempDir dir;
  const std::filesystem::path index_file = dir / "index.h5";
  DatasetIndex index = small_index(GetParam());
  index.boxes = true;
  index.box_class_names = {"person"};
  index.keypoint_names = {"left_eye", "right_eye", "nose"};
  index.keypoint_flip = {1, 0, 2};
  write_index(dir.path(), index);
  {
    h5::File file = h5::File::open_read(index_file);
    EXPECT_FALSE(file.has_attr("/", format::kAttrKeypointEdges));
    EXPECT_FALSE(file.exists(format::kKeypointsSkeleton));
  }
  EXPECT_TRUE(read_index(dir.path()).keypoint_skeleton.empty());
  const uint64_t without = index_checksum::of_root_attributes(index);

  index.keypoint_skeleton = {0, 1, 0, 2, 1, 2};
  EXPECT_NE(index_checksum::of_root_attributes(index), without);
  write_index(dir.path(), index);
  EXPECT_EQ(read_index(dir.path()).keypoint_skeleton, index.keypoint_skeleton);
  {
    h5::File file = h5::File::open_read(index_file);
    EXPECT_EQ(file.shape(format::kKeypointsSkeleton), (std::vector<uint64_t>{3, 2}));
    EXPECT_EQ(file.read_int_attr("/", format::kAttrKeypointEdges), 3);
  }
  overwrite_number<int32_t>(index_file, format::kKeypointsSkeleton, 1, 2);  // an end moved
  expect_refused_naming(dir.path(), format::kKeypointsSkeleton);
  write_index(dir.path(), index);
  {
    // The table gone while the root counts its edges: damage, not "no skeleton".
    h5::File file = h5::File::open_write(index_file);
    file.unlink(format::kKeypointsSkeleton);
    file.close();
  }
  EXPECT_THROW(read_index(dir.path()), Error);
  write_index(dir.path(), index);
  {
    // And both gone: the root's checksum misses the count.
    h5::File file = h5::File::open_write(index_file);
    file.unlink(format::kKeypointsSkeleton);
    h5::Handle root(H5Gopen2(file.id(), "/", H5P_DEFAULT));
    ASSERT_GE(H5Adelete(root.get(), format::kAttrKeypointEdges), 0);
    file.close();
  }
  expect_refused_naming(dir.path(), "/: its attributes");

  for (const std::vector<int32_t>& wrong :
       {std::vector<int32_t>{0, 3}, std::vector<int32_t>{1, 1}, std::vector<int32_t>{-1, 0},
        std::vector<int32_t>{0, 1, 2}}) {
    DatasetIndex bad = index;
    bad.keypoint_skeleton = wrong;
    EXPECT_THROW(write_index(dir.path(), bad), Error) << wrong.size();
  }
}

TEST_P(EveryFormat, RewriteIsByteIdentical) {
  test::TempDir a, b;
  write_index(a.path(), small_index(GetParam()));
  write_index(b.path(), small_index(GetParam()));
  EXPECT_EQ(test::read_bytes(a / "index.h5"), test::read_bytes(b / "index.h5"));
  if (GetParam() >= 2) {
    EXPECT_EQ(test::read_bytes(a / "splits.h5"), test::read_bytes(b / "splits.h5"));
  }
}

// An index of a format this imgpack does not know is refused naming the file
// and the versions it reads.
TEST(DatasetIndex, UnknownFormatVersionsAreRefused) {
  test::TempDir dir;
  write_index(dir.path(), small_index());
  {
    h5::File file = h5::File::open_write(dir / "index.h5");
    file.write_attr("/", format::kAttrFormat, int64_t{3});
    file.close();
  }
  expect_refused_naming(dir.path(), "format version 3", "index.h5", "reads versions 1 to 2");
  DatasetIndex three = small_index();
  three.format_version = 3;
  EXPECT_THROW(write_index(dir.path(), three), Error);
}

}  // namespace
}  // namespace imgpack
