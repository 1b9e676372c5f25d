#include "imgpack/sample_data.hpp"

#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

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

TEST(SampleData, RejectsInvalidOptions) {
  test::TempDir dir;
  SampleDataOptions options;
  options.classes = 0;
  EXPECT_THROW(write_sample_data(dir.path(), options), UsageError);
}

}  // namespace
}  // namespace imgpack
