#include "imgpack/sample_data.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>

#include <algorithm>
#include <opencv2/imgcodecs.hpp>
#include <set>

#include "imgpack/error.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;

TEST(SampleData, WritesDecodableImagesInClassFolders) {
  test::TempDir dir;
  SampleDataOptions options;
  options.classes = 3;
  options.groups = 2;
  options.per_class = 8;
  SampleDataResult result = write_sample_data(dir.path(), options);
  EXPECT_EQ(result.images, 24u);
  int jpeg = 0, png = 0;
  for (uint32_t c = 0; c < 3; ++c) {
    fs::path folder = dir / sample_class_name(c);
    ASSERT_TRUE(fs::is_directory(folder));
    for (const auto& entry : fs::directory_iterator(folder)) {
      cv::Mat image = cv::imread(entry.path().string());
      EXPECT_FALSE(image.empty()) << entry.path();
      EXPECT_GE(image.cols, 120 - 1);
      EXPECT_LE(image.cols, 200 + 1);
      (entry.path().extension() == ".png" ? png : jpeg)++;
      EXPECT_TRUE(entry.path().filename().string().starts_with("g0"));
    }
  }
  EXPECT_EQ(jpeg + png, 24);
  EXPECT_GT(png, 0);
  EXPECT_GT(jpeg, 0);
  std::string csv = test::read_bytes(dir / "labels.csv");
  EXPECT_TRUE(csv.starts_with("path,class,group\n"));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 25);
}

TEST(SampleData, IsDeterministic) {
  test::TempDir a, b;
  SampleDataOptions options;
  options.per_class = 3;
  write_sample_data(a.path(), options);
  write_sample_data(b.path(), options);
  for (const auto& entry : fs::recursive_directory_iterator(a.path())) {
    if (!entry.is_regular_file()) continue;
    fs::path other = b.path() / fs::relative(entry.path(), a.path());
    EXPECT_EQ(test::read_bytes(entry.path()), test::read_bytes(other)) << entry.path();
  }
}

// Its file names are fixed: a folder holding anything already is refused,
// whatever it holds, and left as it was; a new or empty one is written, with
// nothing written aside left behind.
TEST(SampleData, WritesIntoANewOrEmptyFolderOnly) {
  test::TempDir dir;
  SampleDataOptions options;
  options.per_class = 2;
  test::write_bytes(dir / "mine" / "labels.csv", "my,own\n");
  try {
    write_sample_data(dir / "mine", options);
    ADD_FAILURE() << "wrote into a folder holding a file";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "mine").string() +
                                         ": not empty; sample data goes into a new or empty "
                                         "folder, where it overwrites nothing");
  }
  EXPECT_EQ(test::read_bytes(dir / "mine" / "labels.csv"), "my,own\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir / "mine"), fs::directory_iterator()), 1);
  EXPECT_THROW(write_sample_data(dir / "mine" / "labels.csv", options), UsageError);

  fs::create_directory(dir / "empty");
  const SampleDataResult result = write_sample_data(dir / "empty", options);
  EXPECT_EQ(result.images, 2u * options.classes);
  for (const auto& entry : fs::recursive_directory_iterator(dir / "empty")) {
    EXPECT_NE(entry.path().extension(), ".tmp") << entry.path();
  }
  EXPECT_THROW(write_sample_data(dir / "empty", options), UsageError);  // not empty now
  write_sample_data(dir / "new" / "deeper", options);
  EXPECT_TRUE(fs::exists(dir / "new" / "deeper" / "labels.csv"));
}

// A write that fails (here a file size limit, as a full disk would) leaves
// nothing behind: a new folder is gone, an empty one empty again, so the
// same command runs again once there is room.
TEST(SampleData, AFailedWriteLeavesNothingBehind) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "empty");
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit low = old;
  low.rlim_cur = 4096;
  void (*previous)(int) = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG rather than the signal
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &low), 0);
  SampleDataOptions options;
  options.per_class = 5;
  EXPECT_THROW(write_sample_data(dir / "new", options), Error);
  EXPECT_THROW(write_sample_data(dir / "empty", options), Error);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old), 0);
  std::signal(SIGXFSZ, previous);
  EXPECT_FALSE(std::filesystem::exists(dir / "new"));
  EXPECT_TRUE(std::filesystem::is_empty(dir / "empty"));
  EXPECT_EQ(write_sample_data(dir / "new", options).images, 20u);
}

TEST(SampleData, RejectsInvalidOptions) {
  test::TempDir dir;
  SampleDataOptions options;
  options.classes = 0;
  EXPECT_THROW(write_sample_data(dir.path(), options), UsageError);
}

// --masks: every image's label map, the size of the image, holding 0 and
// the label a conversion gives its class (names sorted) plus one, where the
// shape is drawn in the class's colour.
TEST(SampleData, MasksAreTheShapesLabelMaps) {
  test::TempDir dir;
  SampleDataOptions options;
  options.classes = 5;
  options.per_class = 4;
  options.masks = true;
  const SampleDataResult result = write_sample_data(dir.path(), options);
  EXPECT_EQ(result.masks, 20u);
  std::vector<std::string> sorted;
  for (uint32_t c = 0; c < 5; ++c) sorted.push_back(sample_class_name(c));
  std::sort(sorted.begin(), sorted.end());
  std::string names = "background\n";
  for (const std::string& name : sorted) names += name + "\n";
  EXPECT_EQ(test::read_bytes(dir / "masks/classes.txt"), names);
  int masks = 0;
  for (uint32_t c = 0; c < 5; ++c) {
    const std::string name = sample_class_name(c);
    const int label =
        1 + static_cast<int>(std::find(sorted.begin(), sorted.end(), name) - sorted.begin());
    for (const auto& entry : fs::directory_iterator(dir / name)) {
      const cv::Mat image = cv::imread(entry.path().string());
      fs::path mask_path = dir / "masks" / name / entry.path().filename();
      mask_path.replace_extension(".png");
      const cv::Mat mask = cv::imread(mask_path.string(), cv::IMREAD_UNCHANGED);
      ASSERT_FALSE(mask.empty()) << mask_path;
      ++masks;
      EXPECT_EQ(mask.type(), CV_8UC1);
      EXPECT_EQ(mask.size(), image.size());
      std::set<int> values(mask.begin<uint8_t>(), mask.end<uint8_t>());
      EXPECT_EQ(values, (std::set<int>{0, label})) << mask_path;
      EXPECT_GT(cv::countNonZero(mask), mask.total() / 50);
    }
  }
  EXPECT_EQ(masks, 20);
  // The same options give the same masks.
  test::TempDir again;
  write_sample_data(again.path(), options);
  EXPECT_EQ(test::read_bytes(again / "masks/star/g00_00003.png"),
            test::read_bytes(dir / "masks/star/g00_00003.png"));
}

}  // namespace
}  // namespace imgpack
