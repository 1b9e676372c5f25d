#include "index_checksum.hpp"

#include <gtest/gtest.h>

#include "imgpack/checksum.hpp"

namespace imgpack {
namespace {

// The canonical bytes, spelt out: what docs/FORMAT.md promises a reader in
// another language can recompute.
TEST(IndexChecksum, NumbersAreHashedLittleEndianAtTheirWidth) {
  const std::vector<int32_t> labels = {1, -1, 258};
  const uint8_t bytes[] = {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 2, 1, 0, 0};
  EXPECT_EQ(index_checksum::of_numbers(labels), checksum(bytes, sizeof bytes));
  const std::vector<uint16_t> variants = {1, 2};
  const uint8_t variant_bytes[] = {1, 0, 2, 0};
  EXPECT_EQ(index_checksum::of_numbers(variants), checksum(variant_bytes, sizeof variant_bytes));
  EXPECT_EQ(index_checksum::of_numbers(std::vector<int64_t>{}), checksum(nullptr, 0));
}

TEST(IndexChecksum, StringsAreHashedAsLengthThenBytes) {
  const std::vector<std::string> names = {"ab", ""};
  const uint8_t bytes[] = {2, 0, 0, 0, 0, 0, 0, 0, 'a', 'b', 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(index_checksum::of_strings(names), checksum(bytes, sizeof bytes));
  // Lengths keep the boundaries: "a","bc" is not "ab","c".
  EXPECT_NE(index_checksum::of_strings({"a", "bc"}), index_checksum::of_strings({"ab", "c"}));
}

TEST(IndexChecksum, EveryAttributeCounts) {
  DatasetIndex index;
  index.format_version = 1;
  index.uuid = "u";
  index.height = 2;
  index.width = 3;
  index.channels = 3;
  index.color = "rgb";
  index.convert_options = "{}";
  index.created_by = "test";
  const uint64_t base = index_checksum::of_root_attributes(index);
  auto changed = [&](auto change) {
    DatasetIndex other = index;
    change(other);
    return index_checksum::of_root_attributes(other) != base;
  };
  EXPECT_TRUE(changed([](DatasetIndex& i) { i.format_version = 2; }));
  EXPECT_TRUE(changed([](DatasetIndex& i) { i.uuid = "v"; }));
  EXPECT_TRUE(changed([](DatasetIndex& i) { i.height = 3; }));
  EXPECT_TRUE(changed([](DatasetIndex& i) { i.width = 2; }));
  EXPECT_TRUE(changed([](DatasetIndex& i) { i.channels = 1; }));
  EXPECT_TRUE(changed([](DatasetIndex& i) { i.variants = 2; }));
  EXPECT_TRUE(changed([](DatasetIndex& i) { i.color = "gray"; }));
  EXPECT_TRUE(changed([](DatasetIndex& i) { i.convert_options = "{ }"; }));
  EXPECT_TRUE(changed([](DatasetIndex& i) { i.created_by = "tests"; }));
  EXPECT_FALSE(changed([](DatasetIndex& i) { i.sample_path = {"a.png"}; }));  // a table's own
  // Masks count, and only in a dataset with masks: any other keeps its checksum.
  EXPECT_TRUE(changed([](DatasetIndex& i) { i.masks = true; }));
  EXPECT_FALSE(changed([](DatasetIndex& i) { i.mask_fill = 0; }));
  index.masks = true;
  const uint64_t masked = index_checksum::of_root_attributes(index);
  index.mask_fill = 0;
  EXPECT_NE(index_checksum::of_root_attributes(index), masked);
  index.mask_fill = 255;
  index.mask_class_names.emplace_back("background");  // a table's own
  EXPECT_EQ(index_checksum::of_root_attributes(index), masked);

  Split split;
  split.name = "cv";
  split.kind = "random";
  split.folds = 5;
  const uint64_t split_base = index_checksum::of_split_attributes(split);
  auto split_changed = [&](auto change) {
    Split other = split;
    change(other);
    return index_checksum::of_split_attributes(other) != split_base;
  };
  EXPECT_TRUE(split_changed([](Split& s) { s.name = "cw"; }));
  EXPECT_TRUE(split_changed([](Split& s) { s.kind = "group"; }));
  EXPECT_TRUE(split_changed([](Split& s) { s.folds = 4; }));
  EXPECT_TRUE(split_changed([](Split& s) { s.seed = 1; }));
  EXPECT_TRUE(split_changed([](Split& s) { s.test_fraction = 0.1; }));
  EXPECT_TRUE(split_changed([](Split& s) { s.val_fraction = 0.1; }));
  EXPECT_TRUE(split_changed([](Split& s) { s.created = "now"; }));
  EXPECT_TRUE(split_changed([](Split& s) { s.stratified = true; }));
  EXPECT_TRUE(split_changed([](Split& s) { s.grouped = true; }));
  EXPECT_FALSE(split_changed([](Split& s) { s.assign = {0}; }));  // the assign table's own
}

}  // namespace
}  // namespace imgpack
