// import_split(): folds made elsewhere, checked row by row.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/split.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

DatasetIndex four_samples() {
  DatasetIndex index;
  index.sample_path = {"a/1.jpg", "a/2.jpg", "b/3.jpg", "b/4.jpg"};
  index.sample_label = {0, 0, 1, 1};
  index.sample_group = {-1, -1, -1, -1};
  index.class_names = {"a", "b"};
  return index;
}

class SplitImportTest : public ::testing::Test {
 protected:
  // import_split over a CSV file holding `text`.
  Split import(const std::string& text, const SplitImport& columns = {}) {
    test::write_bytes(dir_ / "folds.csv", text);
    return import_split(index_, dir_ / "folds.csv", columns, "theirs", "2026-01-01T00:00:00Z");
  }
  // The message of the UsageError that importing `text` throws.
  std::string error_of(const std::string& text) {
    try {
      import(text);
    } catch (const UsageError& e) {
      return e.what();
    }
    ADD_FAILURE() << "no error for:\n" << text;
    return "";
  }
  test::TempDir dir_;
  DatasetIndex index_ = four_samples();
};

TEST_F(SplitImportTest, StoresTheFoldsOfEveryRowInAnyOrder) {
  const Split split = import(
      "path,label,group,fold\nb/4.jpg,b,,1\na/1.jpg,a,,0\n"
      "a/2.jpg,a,,-1\nb/3.jpg,b,,0\n");
  EXPECT_EQ(split.name, "theirs");
  EXPECT_EQ(split.kind, kImportedSplitKind);
  EXPECT_EQ(split.folds, 2);
  EXPECT_EQ(split.assign, (std::vector<int16_t>{0, -1, 0, 1}));
  EXPECT_DOUBLE_EQ(split.test_fraction, 0.25);
  EXPECT_EQ(split.created, "2026-01-01T00:00:00Z");
  EXPECT_TRUE(split.stratified);  // the samples have labels: an append balances them
  EXPECT_FALSE(split.grouped);    // they have no groups
}

// An imported split that keeps every group whole is recorded as grouped, so
// an append puts a new member of an old group into its group's fold.
TEST_F(SplitImportTest, FoldsThatKeepGroupsWholeAreRecordedAsGrouped) {
  index_.sample_group = {0, 0, 1, 1};
  EXPECT_TRUE(import("path,fold\na/1.jpg,0\na/2.jpg,0\nb/3.jpg,1\nb/4.jpg,1\n").grouped);
  EXPECT_FALSE(import("path,fold\na/1.jpg,0\na/2.jpg,1\nb/3.jpg,1\nb/4.jpg,1\n").grouped);
  index_.sample_label = {-1, -1, -1, -1};
  EXPECT_FALSE(import("path,fold\na/1.jpg,0\na/2.jpg,0\nb/3.jpg,1\nb/4.jpg,1\n").stratified);
}

TEST_F(SplitImportTest, ColumnsCanBeNamed) {
  SplitImport columns;
  columns.path = "image";
  columns.fold = "kfold";
  const Split split = import("kfold,image\n0,a/1.jpg\n1,a/2.jpg\n2,b/3.jpg\n0,b/4.jpg\n", columns);
  EXPECT_EQ(split.folds, 3);
  EXPECT_EQ(split.assign, (std::vector<int16_t>{0, 1, 2, 0}));
}

TEST_F(SplitImportTest, BadRowsAreNamedByLine) {
  const std::string header = "path,fold\n";
  std::string e = error_of(header + "a/1.jpg,0\nc/9.jpg,1\n");
  EXPECT_NE(e.find("folds.csv:3: 'c/9.jpg' is not a sample of the dataset"), std::string::npos)
      << e;
  e = error_of(header + "a/1.jpg,0\na/2.jpg,1\na/1.jpg,1\n");
  EXPECT_NE(e.find("folds.csv:4: 'a/1.jpg' is given twice (first on line 2)"), std::string::npos)
      << e;
  for (const char* fold : {"x", "1.5", "-2", "", "40000"}) {
    e = error_of(header + "a/1.jpg," + fold + "\n");
    EXPECT_NE(e.find("folds.csv:2: fold '" + std::string(fold) + "' is not an integer"),
              std::string::npos)
        << e;
  }
}

TEST_F(SplitImportTest, EverySampleAndEveryFoldIsNeeded) {
  std::string e = error_of("path,fold\na/1.jpg,0\nb/4.jpg,1\n");
  EXPECT_NE(e.find("2 of the dataset's 4 samples have no row, the first: 'a/2.jpg'"),
            std::string::npos)
      << e;
  e = error_of("path,fold\na/1.jpg,0\na/2.jpg,2\nb/3.jpg,0\nb/4.jpg,2\n");
  EXPECT_NE(e.find("fold 1 holds no sample"), std::string::npos) << e;
  e = error_of("path,fold\na/1.jpg,0\na/2.jpg,0\nb/3.jpg,-1\nb/4.jpg,0\n");
  EXPECT_NE(e.find("at least two folds"), std::string::npos) << e;
  e = error_of("file,fold\na/1.jpg,0\n");
  EXPECT_NE(e.find("no column 'path'"), std::string::npos) << e;
  EXPECT_NE(e.find("the header has: file, fold"), std::string::npos) << e;
}

TEST_F(SplitImportTest, TheNameIsCheckedFirst) {
  test::write_bytes(dir_ / "folds.csv", "path,fold\n");
  EXPECT_THROW(import_split(index_, dir_ / "folds.csv", {}, "a/b", ""), UsageError);
}

// import_split_extended(): an export of an earlier generation, over a
// dataset that grew since.
class SplitImportExtendedTest : public ::testing::Test {
 protected:
  // Eight samples in two classes and four groups of two; the first four were
  // the earlier generation.
  SplitImportExtendedTest() {
    index_.sample_path = {"a/1.jpg", "a/2.jpg", "b/3.jpg", "b/4.jpg",
                          "a/5.jpg", "a/6.jpg", "b/7.jpg", "b/8.jpg"};
    index_.sample_label = {0, 0, 1, 1, 0, 0, 1, 1};
    index_.sample_group = {0, 1, 2, 3, 0, 1, 4, 5};
    index_.class_names = {"a", "b"};
    index_.group_names = {"g0", "g1", "g2", "g3", "g4", "g5"};
  }
  ExtendedImport extend(const std::string& text) {
    test::write_bytes(dir_ / "earlier.csv", text);
    return import_split_extended(index_, dir_ / "earlier.csv", {}, "cv", "2026-01-01T00:00:00Z");
  }
  std::string error_of(const std::string& text) {
    try {
      extend(text);
    } catch (const UsageError& e) {
      return e.what();
    }
    ADD_FAILURE() << "no error for:\n" << text;
    return "";
  }
  test::TempDir dir_;
  DatasetIndex index_;
};

TEST_F(SplitImportExtendedTest, KeepsEveryListedFoldAndPlacesTheSamplesAddedSince) {
  const ExtendedImport result = extend("path,fold\na/1.jpg,0\na/2.jpg,1\nb/3.jpg,0\nb/4.jpg,1\n");
  EXPECT_EQ(result.listed, 4u);
  EXPECT_EQ(result.placed, 4u);
  const Split& split = result.split;
  ASSERT_EQ(split.assign.size(), 8u);
  EXPECT_EQ(split.name, "cv");
  EXPECT_EQ(split.kind, kImportedSplitKind);
  EXPECT_EQ(split.folds, 2);
  EXPECT_EQ((std::vector<int16_t>(split.assign.begin(), split.assign.begin() + 4)),
            (std::vector<int16_t>{0, 1, 0, 1}));
  // Groups the file kept whole stay whole: a/5 joins a/1 (group 0), a/6
  // joins a/2 (group 1).
  EXPECT_EQ(split.assign[4], 0);
  EXPECT_EQ(split.assign[5], 1);
  // The two new groups of class b go one to each fold: each class half and
  // half.
  EXPECT_NE(split.assign[6], split.assign[7]);
  EXPECT_GE(split.assign[6], 0);
  EXPECT_GE(split.assign[7], 0);
}

TEST_F(SplitImportExtendedTest, AFileOfTheCurrentGenerationImportsAsItIs) {
  const ExtendedImport result = extend(
      "path,fold\na/1.jpg,0\na/2.jpg,1\nb/3.jpg,0\nb/4.jpg,1\n"
      "a/5.jpg,0\na/6.jpg,1\nb/7.jpg,1\nb/8.jpg,0\n");
  EXPECT_EQ(result.placed, 0u);
  EXPECT_EQ(result.split.assign, (std::vector<int16_t>{0, 1, 0, 1, 0, 1, 1, 0}));
}

TEST_F(SplitImportExtendedTest, RemovedSamplesAreInNoPart) {
  index_.sample_removed = {0, 1, 0, 0, 0, 0, 0, 1};
  // An export leaves removed samples out; a/2 was removed after it was made.
  const ExtendedImport result = extend("path,fold\na/1.jpg,0\na/2.jpg,1\nb/3.jpg,0\nb/4.jpg,1\n");
  EXPECT_EQ(result.split.assign[1], format::kRemovedFold);
  EXPECT_EQ(result.split.assign[7], format::kRemovedFold);
  for (std::size_t i : {0u, 2u, 3u, 4u, 5u, 6u}) EXPECT_GE(result.split.assign[i], 0) << i;
}

TEST_F(SplitImportExtendedTest, EverySampleUpToTheLastListedOneNeedsARow) {
  // b/3 was in the dataset when b/4 was: a file without it is not an export
  // of an earlier generation.
  const std::string e = error_of("path,fold\na/1.jpg,0\na/2.jpg,1\nb/4.jpg,1\n");
  EXPECT_NE(e.find("1 of the dataset's 4 samples have no row, the first: 'b/3.jpg'"),
            std::string::npos)
      << e;
  EXPECT_NE(error_of("path,fold\n").find("has no rows"), std::string::npos);
  EXPECT_NE(error_of("path,fold\na/1.jpg,0\na/2.jpg,0\n").find("at least two folds"),
            std::string::npos);
}

}  // namespace
}  // namespace imgpack
