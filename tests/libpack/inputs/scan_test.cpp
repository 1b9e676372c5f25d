#include "inputs/scan.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "imgpack/error.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::write_bytes;

std::vector<std::string> paths_of(const SourceList& list) {
  std::vector<std::string> out;
  for (const SourceSample& s : list.samples) out.push_back(s.path);
  return out;
}

const SourceSample& sample(const SourceList& list, const std::string& path) {
  for (const SourceSample& s : list.samples) {
    if (s.path == path) return s;
  }
  throw std::runtime_error("no sample " + path);
}

std::string usage_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

// The layout of the State Farm distracted-driver data: class folders, file
// names without the driver, and a CSV that maps each file to its driver.
class StateFarmLayout : public ::testing::Test {
 protected:
  void SetUp() override {
    write_bytes(dir_ / "src/train/c0/img_1.jpg", "x");
    write_bytes(dir_ / "src/train/c0/img_2.jpg", "xy");
    write_bytes(dir_ / "src/train/c1/img_3.jpg", "xyz");
    write_bytes(dir_ / "src/train/c1/img_4.jpg", "xyzw");
    write_bytes(dir_ / "list.csv",
                "subject,classname,img\r\n"
                "p021,c1,img_4.jpg\r\n"
                "p002,c0,img_1.jpg\r\n"
                "p021,c0,img_2.jpg\r\n"
                "p002,c1,img_3.jpg\r\n");
  }
  ScanOptions options(const std::string& path = "train/{classname}/{img}") const {
    ScanOptions o;
    o.labels = LabelSource::csv;
    o.csv = CsvInput{dir_ / "list.csv", path, "classname", "subject", "", {}, ""};
    return o;
  }
  fs::path src() const { return dir_ / "src"; }
  TempDir dir_;
};

TEST_F(StateFarmLayout, TemplatePathLabelsAndGroupsFromColumns) {
  SourceList list = scan_csv(src(), options());
  EXPECT_EQ(paths_of(list), (std::vector<std::string>{"train/c0/img_1.jpg", "train/c0/img_2.jpg",
                                                      "train/c1/img_3.jpg", "train/c1/img_4.jpg"}));
  EXPECT_EQ(list.class_names, (std::vector<std::string>{"c0", "c1"}));
  EXPECT_EQ(list.group_names, (std::vector<std::string>{"p002", "p021"}));
  EXPECT_EQ(sample(list, "train/c1/img_4.jpg").label, 1);
  EXPECT_EQ(sample(list, "train/c1/img_4.jpg").group, 1);
  EXPECT_EQ(sample(list, "train/c0/img_1.jpg").label, 0);
  EXPECT_EQ(sample(list, "train/c0/img_1.jpg").group, 0);
  EXPECT_EQ(sample(list, "train/c0/img_2.jpg").group, 1);
  EXPECT_EQ(sample(list, "train/c0/img_2.jpg").file_size, 2u);
  EXPECT_TRUE(list.skipped.empty());
}

TEST_F(StateFarmLayout, MissingFilesAreSkippedWithTheirLine) {
  fs::remove(src() / "train/c1/img_3.jpg");
  fs::remove(src() / "train/c0/img_2.jpg");
  fs::create_directories(src() / "train/c0/img_2.jpg");
  SourceList list = scan_csv(src(), options());
  ASSERT_EQ(list.samples.size(), 2u);
  ASSERT_EQ(list.skipped.size(), 2u);
  EXPECT_EQ(list.skipped[0].path, "train/c0/img_2.jpg");
  EXPECT_NE(list.skipped[0].reason.find("not a regular file (listed on"), std::string::npos)
      << list.skipped[0].reason;
  EXPECT_EQ(list.skipped[1].path, "train/c1/img_3.jpg");
  EXPECT_NE(list.skipped[1].reason.find("missing"), std::string::npos);
  EXPECT_NE(list.skipped[1].reason.find("list.csv line 5"), std::string::npos)
      << list.skipped[1].reason;
  // Class ids come from the whole CSV, so they do not depend on which files exist.
  EXPECT_EQ(list.class_names, (std::vector<std::string>{"c0", "c1"}));
  EXPECT_EQ(sample(list, "train/c1/img_4.jpg").label, 1);
}

TEST_F(StateFarmLayout, NoFileFoundSuggestsThePathRule) {
  std::string error = usage_error([&] { scan_csv(src(), options("img")); });
  EXPECT_NE(error.find("none of the 4 files it lists exists"), std::string::npos) << error;
  EXPECT_NE(error.find("relative to SRC, and a CsvInput::path template can add folders, e.g. "
                       "'train/{img}'"),
            std::string::npos)
      << error;
}

TEST_F(StateFarmLayout, UnknownColumnsAreUsageErrorsNamingTheCsv) {
  for (auto [path, label, group, column] :
       std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
           {"image", "classname", "", "image"},
           {"train/{class}/{img}", "classname", "", "class"},
           {"img", "label", "", "label"},
           {"img", "classname", "driver", "driver"}}) {
    ScanOptions o = options();
    o.csv->path = path;
    o.csv->label = label;
    o.csv->group = group;
    std::string error = usage_error([&] { scan_csv(src(), o); });
    EXPECT_NE(error.find("list.csv:1: no column '" + column + "'"), std::string::npos) << error;
    EXPECT_NE(error.find("subject, classname, img"), std::string::npos) << error;
  }
  ScanOptions bad = options("train/{classname/{img}");
  EXPECT_NE(usage_error([&] { scan_csv(src(), bad); }).find("CsvInput::path"), std::string::npos);
}

TEST_F(StateFarmLayout, DuplicatePathsAreUsageErrorsNamingBothLines) {
  write_bytes(dir_ / "list.csv",
              "subject,classname,img\np021,c1,img_4.jpg\np002,c0,img_1.jpg\n"
              "p003,c1,./img_4.jpg\n");
  std::string error = usage_error([&] { scan_csv(src(), options("train/c1/{img}")); });
  EXPECT_NE(error.find("list.csv:4: path 'train/c1/img_4.jpg' is listed twice (first on line 2)"),
            std::string::npos)
      << error;
}

TEST_F(StateFarmLayout, PathsOutsideSrcAndEmptyCellsAreErrors) {
  write_bytes(dir_ / "list.csv", "subject,classname,img\np021,c1,../../../x.jpg\n");
  std::string error = usage_error([&] { scan_csv(src(), options()); });
  EXPECT_NE(error.find("list.csv:2: path"), std::string::npos) << error;
  EXPECT_NE(error.find("outside SRC"), std::string::npos) << error;
  write_bytes(dir_ / "list.csv", "subject,classname,img\np021,c1,\n");
  error = usage_error([&] { scan_csv(src(), options()); });
  EXPECT_NE(error.find("list.csv:2: empty 'img' cell"), std::string::npos) << error;
}

TEST_F(StateFarmLayout, AbsolutePathsInsideSrcBecomeRelative) {
  write_bytes(dir_ / "list.csv", "path,label\n" + (src() / "train/c0/img_1.jpg").string() +
                                     ",a\ntrain/c1/img_3.jpg,b\n");
  ScanOptions o;
  o.labels = LabelSource::csv;
  o.csv = CsvInput{dir_ / "list.csv", "path", "label", "", "", {}, ""};
  SourceList list = scan_csv(src(), o);
  EXPECT_EQ(paths_of(list), (std::vector<std::string>{"train/c0/img_1.jpg", "train/c1/img_3.jpg"}));
}

TEST_F(StateFarmLayout, EmptyLabelIsUnlabeledAndEmptyGroupNeedsGroupMissingOk) {
  write_bytes(dir_ / "list.csv",
              "subject,classname,img\np021,,img_4.jpg\n,c0,img_1.jpg\np021,c0,img_2.jpg\n");
  ScanOptions o = options("{img}");
  write_bytes(dir_ / "src/img_4.jpg", "a");
  write_bytes(dir_ / "src/img_1.jpg", "b");
  write_bytes(dir_ / "src/img_2.jpg", "c");
  std::string error = usage_error([&] { scan_csv(src(), o); });
  EXPECT_NE(error.find("list.csv:3: empty 'subject' cell"), std::string::npos) << error;
  EXPECT_NE(error.find("ScanOptions::group_missing_ok"), std::string::npos) << error;
  o.group_missing_ok = true;
  SourceList list = scan_csv(src(), o);
  EXPECT_EQ(sample(list, "img_4.jpg").label, -1);
  EXPECT_EQ(sample(list, "img_1.jpg").label, 0);
  EXPECT_EQ(sample(list, "img_1.jpg").group, -1);
  EXPECT_EQ(list.class_names, (std::vector<std::string>{"c0"}));
  EXPECT_EQ(list.group_names, (std::vector<std::string>{"p021"}));
}

// Multi-label classes: every name the column uses, sorted, as a multi-hot
// row per sample; numeric targets: one float per column, NaN for an empty
// cell. Names and values come from the whole CSV, missing files or not.
TEST_F(StateFarmLayout, MultilabelAndNumericTargetsFromColumns) {
  write_bytes(dir_ / "list.csv",
              "subject,classname,img,tags,age,score\n"
              "p021,c1,img_4.jpg,\" sunny ; people\",31.5,-2\n"
              "p002,c0,img_1.jpg,,,1e-3\n"
              "p021,c0,img_2.jpg,indoor;;indoor;,7,\n"
              "p002,c1,img_3.jpg,people,40,0.25\n");
  fs::remove(src() / "train/c1/img_3.jpg");
  ScanOptions o = options();
  o.csv->multilabel = "tags";
  o.csv->targets = {"age", "score"};
  SourceList list = scan_csv(src(), o);
  EXPECT_EQ(list.multilabel_names, (std::vector<std::string>{"indoor", "people", "sunny"}));
  EXPECT_EQ(list.target_names, (std::vector<std::string>{"age", "score"}));
  EXPECT_EQ(sample(list, "train/c1/img_4.jpg").multilabel, (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(sample(list, "train/c0/img_1.jpg").multilabel, (std::vector<uint8_t>{0, 0, 0}));
  EXPECT_EQ(sample(list, "train/c0/img_2.jpg").multilabel, (std::vector<uint8_t>{1, 0, 0}));
  const std::vector<float>& a = sample(list, "train/c1/img_4.jpg").targets;
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0], 31.5F);
  EXPECT_EQ(a[1], -2.0F);
  const std::vector<float>& b = sample(list, "train/c0/img_1.jpg").targets;
  EXPECT_TRUE(std::isnan(b[0]));
  EXPECT_EQ(b[1], 1e-3F);
  EXPECT_TRUE(std::isnan(sample(list, "train/c0/img_2.jpg").targets[1]));

  // Without the columns, nothing of them.
  SourceList plain = scan_csv(src(), options());
  EXPECT_TRUE(plain.multilabel_names.empty());
  EXPECT_TRUE(plain.target_names.empty());
  EXPECT_TRUE(plain.samples[0].multilabel.empty());
  EXPECT_TRUE(plain.samples[0].targets.empty());
}

// A multi-hot table past half the machine's memory (a few thousand rows of
// unique tags can make one) is refused before it is allocated, saying why.
TEST_F(StateFarmLayout, AMultiHotTableTooLargeForMemoryIsRefusedFirst) {
  const uint64_t memory = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                          static_cast<uint64_t>(::sysconf(_SC_PAGE_SIZE));
  constexpr uint64_t kLabels = 200000;
  const uint64_t rows = memory / 4 / kLabels + 1;  // held twice, past half the memory
  if (rows > 1000000) GTEST_SKIP() << "this machine's memory takes a CSV too large for a test";
  std::string csv = "subject,classname,img,tags\n";
  for (uint64_t r = 0; r < std::max(rows, kLabels); ++r) {
    csv += "p021,c0,img_" + std::to_string(r) + ".jpg,t" + std::to_string(r % kLabels) + "\n";
  }
  write_bytes(dir_ / "list.csv", csv);
  ScanOptions o = options();
  o.csv->multilabel = "tags";
  const std::string error = usage_error([&] { scan_csv(src(), o); });
  EXPECT_NE(error.find("list.csv: multi-label column 'tags' (CsvInput::multilabel) names 200000 "
                       "distinct labels over "),
            std::string::npos)
      << error;
  EXPECT_NE(
      error.find("their multi-hot table, one byte a row and label held up to twice, would take "),
      std::string::npos)
      << error;
}

TEST_F(StateFarmLayout, BadTargetCellsAndColumnsAreUsageErrorsNamingTheLine) {
  write_bytes(dir_ / "list.csv",
              "subject,classname,img,tags,age\n"
              "p021,c1,img_4.jpg,a,31\n"
              "p002,c0,img_1.jpg,b,thirty\n");
  ScanOptions o = options();
  o.csv->targets = {"age"};
  std::string error = usage_error([&] { scan_csv(src(), o); });
  EXPECT_NE(error.find("list.csv:3: 'thirty' in target column 'age' is not a finite number"),
            std::string::npos)
      << error;
  // Past float32's largest value by half a step or more (it would round to
  // infinity): 3.4028235677973366e38 is that half step.
  // Zero-padded or with a negative exponent, a number past double's range
  // is still a large one, not a small one.
  const std::string padded = "00" + std::string(400, '9');
  const std::string scaled = "1" + std::string(500, '0') + "e-10";
  for (const std::string& bad :
       {std::string("1.5x"), std::string("inf"), std::string("nan"), std::string("1e99"),
        std::string("--1"), std::string("1e39"), std::string("-1e400"),
        std::string("3.4028235677973366e38"), padded, "-" + padded, scaled}) {
    write_bytes(dir_ / "list.csv",
                std::string("subject,classname,img,age\np021,c1,img_4.jpg,") + bad + "\n");
    error = usage_error([&] { scan_csv(src(), o); });
    EXPECT_NE(error.find("list.csv:2:"), std::string::npos) << bad << ": " << error;
    const bool large = bad.find_first_of("e9") != std::string::npos;
    EXPECT_NE(error.find(large ? "is beyond float32's range" : "is not a finite number"),
              std::string::npos)
        << bad << ": " << error;
  }
  // Its largest value as NumPy prints it (3.4028235e+38, above the value
  // itself), and anything below the half step, round to it.
  for (const char* largest : {"3.4028235e+38", "-3.4028235e38", "3.40282356e38"}) {
    write_bytes(dir_ / "list.csv",
                std::string("subject,classname,img,age\np021,c1,img_4.jpg,") + largest + "\n");
    SourceList list = scan_csv(src(), o);
    EXPECT_EQ(std::abs(list.samples[0].targets.at(0)), std::numeric_limits<float>::max())
        << largest;
  }
  // Finite but smaller than float32 holds: rounded, to 0 where nothing nearer.
  const std::string tiny_padded = "0." + std::string(400, '0') + "1";
  const std::string tiny_scaled = std::string(400, '9') + "e-800";
  for (const std::string& tiny : {std::string("1e-50"), std::string("-1e-400"),
                                  std::string("0.0000000000000000000000000000000000000000000001"),
                                  tiny_padded, "-" + tiny_padded, tiny_scaled}) {
    write_bytes(dir_ / "list.csv",
                std::string("subject,classname,img,age\np021,c1,img_4.jpg,") + tiny + "\n");
    SourceList list = scan_csv(src(), o);
    EXPECT_EQ(list.samples[0].targets, std::vector<float>{0.0F}) << tiny;
  }
  o.csv->targets = {"weight"};
  error = usage_error([&] { scan_csv(src(), o); });
  EXPECT_NE(error.find("no column 'weight' (CsvInput::targets)"), std::string::npos) << error;
  write_bytes(dir_ / "list.csv", "subject,classname,img,age,tags\np021,c1,img_4.jpg,1,\n");
  o.csv->targets = {"age", "age"};
  error = usage_error([&] { scan_csv(src(), o); });
  EXPECT_NE(error.find("target column 'age' is named twice"), std::string::npos) << error;
  o.csv->targets.clear();
  o.csv->multilabel = "tags";
  error = usage_error([&] { scan_csv(src(), o); });
  EXPECT_NE(error.find("multi-label column 'tags' names no class in any row"), std::string::npos)
      << error;
}

TEST_F(StateFarmLayout, LabelSourcesAndGroupRegexWithCsv) {
  ScanOptions none = options();
  none.labels = LabelSource::none;
  none.csv->label.clear();
  SourceList unlabeled = scan_csv(src(), none);
  for (const SourceSample& s : unlabeled.samples) EXPECT_EQ(s.label, -1);
  EXPECT_TRUE(unlabeled.class_names.empty());

  ScanOptions conflict = options();
  conflict.labels = LabelSource::none;
  EXPECT_NE(usage_error([&] { scan_csv(src(), conflict); }).find("CsvInput::label"),
            std::string::npos);
  ScanOptions needs_column = options();
  needs_column.csv->label.clear();
  EXPECT_NE(usage_error([&] { scan_csv(src(), needs_column); }).find("CsvInput::label"),
            std::string::npos);

  // Class folders of the listed paths.
  ScanOptions dirs = none;
  dirs.labels = LabelSource::dirs;
  SourceList by_folder = scan_csv(src(), dirs);
  EXPECT_EQ(by_folder.class_names, (std::vector<std::string>{"train"}));

  // Groups from a regex over the listed path instead of a column.
  ScanOptions regex = options();
  regex.csv->group.clear();
  regex.group_regex = "/(c[0-9])/";
  SourceList grouped = scan_csv(src(), regex);
  EXPECT_EQ(grouped.group_names, (std::vector<std::string>{"c0", "c1"}));
  regex.csv->group = "subject";
  EXPECT_NE(usage_error([&] { scan_csv(src(), regex); }).find("ScanOptions::group_regex"),
            std::string::npos);
}

TEST(ScanDirectoryTest, ClassFoldersRegexGroupsAndIgnoredFiles) {
  TempDir dir;
  write_bytes(dir / "c0/p021_img_1.jpg", "a");
  write_bytes(dir / "c0/p002_img_2.PNG", "b");
  write_bytes(dir / "c1/sub/p021_img_3.jpeg", "c");
  write_bytes(dir / "c1/notes.txt", "d");
  write_bytes(dir / "c1/.hidden.jpg", "e");
  write_bytes(dir / "loose.jpg", "f");
  ScanOptions o;
  o.group_regex = "([^/_]+)_img";
  SourceList list = scan_directory(dir.path(), o);
  EXPECT_EQ(paths_of(list), (std::vector<std::string>{"c0/p002_img_2.PNG", "c0/p021_img_1.jpg",
                                                      "c1/sub/p021_img_3.jpeg"}));
  EXPECT_EQ(list.class_names, (std::vector<std::string>{"c0", "c1"}));
  EXPECT_EQ(list.group_names, (std::vector<std::string>{"p002", "p021"}));
  EXPECT_EQ(sample(list, "c1/sub/p021_img_3.jpeg").label, 1);
  EXPECT_EQ(sample(list, "c1/sub/p021_img_3.jpeg").group, 1);
  EXPECT_EQ(list.ignored_files, 1u);
  ASSERT_EQ(list.skipped.size(), 1u);
  EXPECT_EQ(list.skipped[0].path, "loose.jpg");
}

// A FIFO (or socket, or device) named like an image is listed as skipped,
// as a CSV list reports it, instead of vanishing from the report; one without
// an image name is ignored like any other file.
TEST(ScanDirectoryTest, AFifoNamedLikeAnImageIsSkippedWithTheReason) {
  TempDir dir;
  write_bytes(dir / "c0/a.jpg", "a");
  ASSERT_EQ(::mkfifo((dir / "c0/x.jpg").c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo((dir / "c0/pipe").c_str(), 0600), 0);
  SourceList list = scan_directory(dir.path(), ScanOptions{});
  EXPECT_EQ(paths_of(list), (std::vector<std::string>{"c0/a.jpg"}));
  ASSERT_EQ(list.skipped.size(), 1u);
  EXPECT_EQ(list.skipped[0].path, "c0/x.jpg");
  EXPECT_EQ(list.skipped[0].reason, "not a regular file (a FIFO)");
  EXPECT_EQ(list.ignored_files, 1u);
}

// The example: `^([^_]+)_` names the driver of p021_img_1.jpg. The
// regex sees the path relative to SRC, so it applies as written to files
// directly in SRC (--labels none), and a sample it misses is an error that
// lists the first few, unless --group-missing ok.
TEST(ScanDirectoryTest, GroupRegexOverTheRelativePath) {
  TempDir dir;
  write_bytes(dir / "p021_img_1.jpg", "a");
  write_bytes(dir / "p002_img_2.jpg", "b");
  write_bytes(dir / "nodriver.jpg", "c");
  ScanOptions o;
  o.labels = LabelSource::none;
  o.group_regex = "^([^_]+)_";
  std::string error = usage_error([&] { scan_directory(dir.path(), o); });
  EXPECT_NE(error.find("does not match 1 of 3 paths, e.g. nodriver.jpg"), std::string::npos)
      << error;
  o.group_missing_ok = true;
  SourceList list = scan_directory(dir.path(), o);
  EXPECT_EQ(list.group_names, (std::vector<std::string>{"p002", "p021"}));
  EXPECT_EQ(sample(list, "nodriver.jpg").group, -1);
  EXPECT_EQ(sample(list, "p021_img_1.jpg").group, 1);
  EXPECT_EQ(sample(list, "p021_img_1.jpg").label, -1);

  o.group_regex = "no_capture";
  EXPECT_NE(usage_error([&] { scan_directory(dir.path(), o); }).find("no capture group"),
            std::string::npos);
  o.group_regex = "([";
  EXPECT_NE(usage_error([&] { scan_directory(dir.path(), o); }).find("not a valid regular"),
            std::string::npos);
}

// An InputSelector sees every usable input once, as the walk reaches it, with
// its stamp; the inputs it leaves out are counted, and the group regex is not
// asked about them (an append's held inputs need no group).
TEST(ScanDirectoryTest, ASelectorKeepsSomeInputsAndTheRegexSeesOnlyThose) {
  TempDir dir;
  write_bytes(dir / "c0/p1_a.jpg", "a");
  write_bytes(dir / "c0/old.jpg", "bb");
  write_bytes(dir / "c1/p2_c.jpg", "ccc");
  write_bytes(dir / "c1/x.txt", "d");
  ScanOptions o;
  o.group_regex = "/([^_]+)_";
  EXPECT_NE(usage_error([&] { scan_directory(dir.path(), o); }).find("does not match 1 of 3"),
            std::string::npos);
  std::vector<std::pair<std::string, uint64_t>> seen;
  const SourceList list =
      scan_directory(dir.path(), o, {}, [&](const std::string& path, const FileStamp& stamp) {
        seen.emplace_back(path, stamp.size);
        return path != "c0/old.jpg";
      });
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, uint64_t>>{
                      {"c0/old.jpg", 2}, {"c0/p1_a.jpg", 1}, {"c1/p2_c.jpg", 3}}));
  EXPECT_EQ(paths_of(list), (std::vector<std::string>{"c0/p1_a.jpg", "c1/p2_c.jpg"}));
  EXPECT_EQ(list.unselected, 1u);
  EXPECT_EQ(list.ignored_files, 1u);
  EXPECT_EQ(list.class_names, (std::vector<std::string>{"c0", "c1"}));
  EXPECT_EQ(list.group_names, (std::vector<std::string>{"p1", "p2"}));
}

// The walk goes depth first, each folder's entries by name, so a subfolder
// "a" comes before "a.jpg" beside it, where path order puts "a.jpg" first
// ('.' < '/'): the selector sees the walk's order, the list is in path order,
// and a class folder whose images are all left out is still a class (ids do
// not depend on what is selected). Images directly in SRC are skipped, never
// offered.
TEST(ScanDirectoryTest, TheSelectorSeesTheWalksOrderAndTheListIsInPathOrder) {
  TempDir dir;
  write_bytes(dir / "c0/a/x.jpg", "a");
  write_bytes(dir / "c0/a.jpg", "b");
  write_bytes(dir / "c1/y.jpg", "c");
  write_bytes(dir / "c2/z.jpg", "d");
  write_bytes(dir / "loose.jpg", "e");
  std::vector<std::string> seen;
  const SourceList list =
      scan_directory(dir.path(), ScanOptions{}, {}, [&](const std::string& path, const FileStamp&) {
        seen.push_back(path);
        return path != "c1/y.jpg";
      });
  EXPECT_EQ(seen, (std::vector<std::string>{"c0/a/x.jpg", "c0/a.jpg", "c1/y.jpg", "c2/z.jpg"}));
  EXPECT_EQ(paths_of(list), (std::vector<std::string>{"c0/a.jpg", "c0/a/x.jpg", "c2/z.jpg"}));
  EXPECT_EQ(list.class_names, (std::vector<std::string>{"c0", "c1", "c2"}));
  EXPECT_EQ(sample(list, "c0/a/x.jpg").label, 0);
  EXPECT_EQ(sample(list, "c2/z.jpg").label, 2);
  EXPECT_EQ(list.unselected, 1u);
  ASSERT_EQ(list.skipped.size(), 1u);
  EXPECT_EQ(list.skipped[0].path, "loose.jpg");
  EXPECT_EQ(list.skipped[0].reason, "not inside a class folder (LabelSource::dirs)");
}

TEST_F(StateFarmLayout, ASelectorKeepsSomeRowsAndNoneKeptIsNoError) {
  ScanOptions o = options();
  std::vector<std::string> seen;
  SourceList list = scan_csv(dir_ / "src", o, [&](const std::string& path, const FileStamp&) {
    seen.push_back(path);
    return path.ends_with("_3.jpg");
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"train/c0/img_1.jpg", "train/c0/img_2.jpg",
                                            "train/c1/img_3.jpg", "train/c1/img_4.jpg"}));
  EXPECT_EQ(paths_of(list), (std::vector<std::string>{"train/c1/img_3.jpg"}));
  EXPECT_EQ(list.unselected, 3u);
  EXPECT_EQ(list.samples[0].label, 1);
  list = scan_csv(dir_ / "src", o, [](const std::string&, const FileStamp&) { return false; });
  EXPECT_TRUE(list.samples.empty());
  EXPECT_EQ(list.unselected, 4u);
}

// Many files in one folder, stat-ed on several threads (a folder is split
// into runs of at least 1024 entries): the same listing, skips and stamps, in
// path order, as on one thread, including a FIFO named like an image and a
// subfolder among them.
TEST(ScanDirectoryTest, ManyFilesKeepTheirOrderAndStampsOnAnyThreadCount) {
  TempDir dir;
  std::vector<std::string> expected;
  for (int i = 0; i < 4500; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "c%d/%04d.jpg", i < 4200 ? 0 : 1, i);
    write_bytes(dir / name, std::string(static_cast<std::size_t>(i % 7) + 1, 'x'));
    expected.emplace_back(name);
  }
  write_bytes(dir / "c0/sub/deep.png", "p");
  expected.emplace_back("c0/sub/deep.png");
  write_bytes(dir / "c0/notes.txt", "n");
  ASSERT_EQ(::mkfifo((dir / "c0/2500.5.jpg").c_str(), 0600), 0);
  std::sort(expected.begin(), expected.end());
  const SourceList one = scan_directory(dir.path(), ScanOptions{}, {}, {}, 1);
  EXPECT_EQ(paths_of(one), expected);
  for (const SourceSample& s : one.samples) {
    if (s.path == "c0/sub/deep.png") continue;
    const int i = std::stoi(s.path.substr(3, 4));
    EXPECT_EQ(s.stamp.size, static_cast<uint64_t>(i % 7) + 1) << s.path;
  }
  ASSERT_EQ(one.skipped.size(), 1u);
  EXPECT_EQ(one.skipped[0].path, "c0/2500.5.jpg");
  EXPECT_EQ(one.ignored_files, 1u);
  for (const unsigned threads : {2U, 3U, 8U}) {
    const SourceList many = scan_directory(dir.path(), ScanOptions{}, {}, {}, threads);
    ASSERT_EQ(paths_of(many), expected) << threads << " threads";
    for (std::size_t i = 0; i < many.samples.size(); ++i) {
      EXPECT_EQ(many.samples[i].stamp, one.samples[i].stamp) << many.samples[i].path;
      EXPECT_EQ(many.samples[i].label, one.samples[i].label) << many.samples[i].path;
    }
    ASSERT_EQ(many.skipped.size(), 1u);
    EXPECT_EQ(many.skipped[0].reason, one.skipped[0].reason);
    EXPECT_EQ(many.ignored_files, 1u);
  }
}

// A list of files is scanned as a walk would take those files: the same
// samples, labels, groups, skips and ignored entries, each listed file
// stat-ed where it is and nothing else of SRC looked at.
TEST(ScanFileListTest, ListedFilesAreTakenAsTheWalkTakesThem) {
  TempDir dir;
  const fs::path src = dir / "src";
  write_bytes(src / "c0/p021_img_1.jpg", "a");
  write_bytes(src / "c0/p002_img_2.PNG", "bb");
  write_bytes(src / "c1/sub/p021_img_3.jpeg", "c");
  write_bytes(src / "c1/notes.txt", "d");
  write_bytes(src / "c1/.hidden.jpg", "e");
  write_bytes(src / "loose.jpg", "f");
  write_bytes(src / "c2/p003_img_9.jpg", "not listed");
  ASSERT_EQ(::mkfifo((src / "c0/x.jpg").c_str(), 0600), 0);
  write_bytes(dir / "new.txt",
              "./c1/sub/p021_img_3.jpeg\r\n"
              "c0/p021_img_1.jpg\n"
              "\n" +
                  (src / "c0/p002_img_2.PNG").string() +
                  "\n"
                  "c1/notes.txt\nc1/.hidden.jpg\nc1\n.\nloose.jpg\nc0/x.jpg\nc0/gone.jpg");
  ScanOptions o;
  o.group_regex = "([^/_]+)_img";
  const SourceList list = scan_file_list(src, o, dir / "new.txt");
  EXPECT_EQ(paths_of(list), (std::vector<std::string>{"c0/p002_img_2.PNG", "c0/p021_img_1.jpg",
                                                      "c1/sub/p021_img_3.jpeg"}));
  EXPECT_EQ(list.class_names, (std::vector<std::string>{"c0", "c1"}));
  EXPECT_EQ(list.group_names, (std::vector<std::string>{"p002", "p021"}));
  EXPECT_EQ(sample(list, "c1/sub/p021_img_3.jpeg").label, 1);
  EXPECT_EQ(sample(list, "c1/sub/p021_img_3.jpeg").group, 1);
  EXPECT_EQ(sample(list, "c0/p002_img_2.PNG").stamp.size, 2u);
  EXPECT_EQ(list.ignored_files, 4u);  // notes.txt, .hidden.jpg, the folders c1 and .
  ASSERT_EQ(list.skipped.size(), 3u);
  EXPECT_EQ(list.skipped[0].path, "c0/gone.jpg");
  EXPECT_EQ(list.skipped[0].reason, "cannot stat: No such file or directory");
  EXPECT_EQ(list.skipped[1].path, "c0/x.jpg");
  EXPECT_EQ(list.skipped[1].reason, "not a regular file (a FIFO)");
  EXPECT_EQ(list.skipped[2].path, "loose.jpg");
  EXPECT_EQ(list.skipped[2].reason, "not inside a class folder (LabelSource::dirs)");

  // The selector sees the listed inputs in the list's order.
  std::vector<std::string> seen;
  const SourceList kept =
      scan_file_list(src, o, dir / "new.txt", {}, [&](const std::string& path, const FileStamp&) {
        seen.push_back(path);
        return path != "c0/p021_img_1.jpg";
      });
  EXPECT_EQ(seen, (std::vector<std::string>{"c1/sub/p021_img_3.jpeg", "c0/p021_img_1.jpg",
                                            "c0/p002_img_2.PNG"}));
  EXPECT_EQ(paths_of(kept),
            (std::vector<std::string>{"c0/p002_img_2.PNG", "c1/sub/p021_img_3.jpeg"}));
  EXPECT_EQ(kept.unselected, 1u);

  // Files under the excluded folder (a mask folder inside SRC) are passed over.
  write_bytes(src / "c0/masks/m.png", "m");
  write_bytes(dir / "masks.txt", "c0/masks/m.png\nc0/p021_img_1.jpg\n");
  const SourceList excluded = scan_file_list(src, o, dir / "masks.txt", src / "c0/masks");
  EXPECT_EQ(paths_of(excluded), (std::vector<std::string>{"c0/p021_img_1.jpg"}));
  EXPECT_EQ(excluded.ignored_files, 1u);
}

TEST(ScanFileListTest, BadListsAreUsageErrorsNamingTheListAndLine) {
  TempDir dir;
  const fs::path src = dir / "src";
  write_bytes(src / "c0/a.jpg", "a");
  const fs::path list = dir / "list.txt";
  auto scan = [&] { scan_file_list(src, ScanOptions{}, list); };

  write_bytes(list, "c0/a.jpg\n../elsewhere.jpg\n");
  EXPECT_EQ(usage_error(scan), list.string() + ":2: '../elsewhere.jpg' is not a file inside " +
                                   src.string() +
                                   " (paths are relative to it, or absolute inside it)");
  write_bytes(list, "c0/a.jpg\n\n./c0/a.jpg\n");
  EXPECT_EQ(usage_error(scan), list.string() + ":3: c0/a.jpg is listed twice (first on line 1)");
  fs::remove(list);
  EXPECT_EQ(usage_error(scan), list.string() + ": cannot open: No such file or directory");
  write_bytes(list, "c0/a.jpg\n");
  EXPECT_NE(usage_error([&] {
              scan_file_list(dir / "nowhere", ScanOptions{}, list);
            }).find("no such directory"),
            std::string::npos);

  // An empty list is no error: nothing to take.
  write_bytes(list, "");
  const SourceList empty = scan_file_list(src, ScanOptions{}, list);
  EXPECT_TRUE(empty.samples.empty());
  EXPECT_TRUE(empty.skipped.empty());
}

TEST(ScanTest, ImageFileNames) {
  EXPECT_TRUE(is_image_file_name("a.jpg"));
  EXPECT_TRUE(is_image_file_name("a.b.JPEG"));
  EXPECT_TRUE(is_image_file_name("x.Png"));
  EXPECT_FALSE(is_image_file_name(".jpg"));
  EXPECT_FALSE(is_image_file_name("jpg"));
  EXPECT_FALSE(is_image_file_name("a.jpgx"));
  EXPECT_FALSE(is_image_file_name("a.txt"));
  EXPECT_FALSE(is_image_file_name("a."));
  EXPECT_EQ(has_image_extension(fs::path("dir.jpg/a.TIF")), true);
  EXPECT_EQ(has_image_extension(fs::path("a.jpg/b")), false);
}

}  // namespace
}  // namespace imgpack
