// OpenCV's image codecs load only when an image needs them: commands that
// touch no image, and conversions of JPEGs and PNGs, never load
// libimgpack_codecs.so (nor imgcodecs and the libraries it links), and a
// conversion that needs the module but cannot load it stops with a message
// naming it instead of skipping the images.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include "test_support.hpp"

namespace imgpack {
namespace {

using test::run_command;
using test::run_imgpack;
using test::shell_quote;

std::string q(const std::filesystem::path& p) { return shell_quote(p.string()); }

// The CLI with the codecs module made unloadable.
test::CommandResult run_without_codecs(const std::string& arguments) {
  return run_command("IMGPACK_CODECS_MODULE=/nonexistent/libimgpack_codecs.so " +
                     shell_quote(test::imgpack_cli()) + " " + arguments);
}

class CodecsModule : public ::testing::Test {
 protected:
  void SetUp() override {
    // JPEGs only: TurboJPEG decodes them without the module (each test adds
    // what it needs).
    auto made = run_imgpack("sample-data " + q(dir_ / "src") + " --classes 2 --per-class 4 " +
                            "--size 40x32 -q");
    ASSERT_EQ(made.exit_code, 0) << made.err;
    // sample-data writes a PNG now and then: keep the JPEGs only.
    std::vector<std::filesystem::path> pngs;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir_ / "src")) {
      if (entry.path().extension() == ".png") pngs.push_back(entry.path());
      if (entry.path().extension() == ".jpg") ++jpeg_count_;
    }
    for (const auto& png : pngs) std::filesystem::remove(png);
    ASSERT_GT(jpeg_count_, 0);
  }
  int jpeg_count_ = 0;
  test::TempDir dir_;
};

TEST_F(CodecsModule, CommandsThatTouchNoImageRunWithoutIt) {
  auto convert =
      run_without_codecs("convert " + q(dir_ / "src") + " " + q(dir_ / "out") + " --size 16 -q");
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  for (const std::string& command : std::vector<std::string>{
           "--version", "inspect " + q(dir_ / "out"), "verify " + q(dir_ / "out"),
           "split " + q(dir_ / "out") + " --list"}) {
    auto r = run_without_codecs(command);
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.err;
  }
}

TEST_F(CodecsModule, VersionLoadsNoImageCodecs) {
  // The dynamic linker's own record of what it loaded.
  auto r = run_command("LD_DEBUG=libs " + shell_quote(test::imgpack_cli()) + " --version");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("libstdc++"), std::string::npos) << "LD_DEBUG printed nothing useful";
  EXPECT_EQ(r.err.find("imgcodecs"), std::string::npos);
  EXPECT_EQ(r.err.find("libimgpack_codecs"), std::string::npos);
  EXPECT_EQ(r.err.find("libgdal"), std::string::npos);
}

// PNG images are read with libpng, as OpenCV reads them: a conversion of
// JPEGs and PNGs loads no image codecs module.
TEST_F(CodecsModule, AConversionOfJpegsAndPngsLoadsNoImageCodecs) {
  const cv::Mat pixels(24, 24, CV_8UC3, cv::Scalar(10, 200, 30));
  ASSERT_TRUE(cv::imwrite((dir_ / "src" / "circle" / "extra.png").string(), pixels));
  auto r = run_command("LD_DEBUG=libs IMGPACK_CODECS_MODULE=/nonexistent/libimgpack_codecs.so " +
                       shell_quote(test::imgpack_cli()) + " convert " + q(dir_ / "src") + " " +
                       q(dir_ / "out") + " --size 16 -q --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("libturbojpeg"), std::string::npos) << "LD_DEBUG printed nothing useful";
  EXPECT_EQ(r.err.find("imgcodecs"), std::string::npos);
  EXPECT_EQ(r.err.find("libimgpack_codecs"), std::string::npos);
  const std::string json = r.out.substr(r.out.find('{'));
  EXPECT_EQ(nlohmann::json::parse(json)["records"], jpeg_count_ + 1) << r.out;
}

TEST_F(CodecsModule, AConversionThatNeedsItAndCannotLoadItStopsNamingIt) {
  // BMP is one of the formats only OpenCV's codecs read.
  const cv::Mat pixels(24, 24, CV_8UC3, cv::Scalar(10, 200, 30));
  ASSERT_TRUE(cv::imwrite((dir_ / "src" / "circle" / "extra.bmp").string(), pixels));
  auto r =
      run_without_codecs("convert " + q(dir_ / "src") + " " + q(dir_ / "out") + " --size 16 -q");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("IMGPACK_CODECS_MODULE names no usable image codecs module"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("/nonexistent/libimgpack_codecs.so: not found"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out" / "index.h5"));

  // With the module found, the same conversion packs the BMP too.
  auto converted = run_imgpack("convert " + q(dir_ / "src") + " " + q(dir_ / "out") +
                               " --size 16 --resume -q --json");
  ASSERT_EQ(converted.exit_code, 0) << converted.err;
  EXPECT_EQ(nlohmann::json::parse(converted.out)["records"], jpeg_count_ + 1) << converted.out;
}

TEST_F(CodecsModule, AForeignLibraryIsRefusedNamingIt) {
  // A shared library that is not the module: the search says why.
  const std::string foreign = "libz.so.1";
  auto r = run_command("IMGPACK_CODECS_MODULE=" + foreign + " " + shell_quote(test::imgpack_cli()) +
                       " sample-data " + q(dir_ / "more") + " --per-class 1 -q");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("libz.so.1: not imgpack's image codecs module"), std::string::npos) << r.err;
}

// A copy of the programs outside the build tree (a moved or partly installed
// one) loads the module beside it or by the installed layout, and otherwise
// says it is missing: never the build tree's copy, whatever name the program
// was started under (argv[0] is the caller's to choose).
TEST_F(CodecsModule, AProgramOutsideTheBuildTreeNeverLoadsTheBuildTreesModule) {
  const std::filesystem::path front(test::imgpack_cli());
  const std::filesystem::path build_tree = front.parent_path().parent_path();
  const std::filesystem::path bin = dir_ / "bin";
  std::filesystem::create_directories(bin);
  for (const char* program : {"imgpack", "imgpack-complete"}) {
    std::filesystem::copy_file(front.parent_path() / program, bin / program);
  }
  const cv::Mat pixels(24, 24, CV_8UC3, cv::Scalar(10, 200, 30));
  ASSERT_TRUE(cv::imwrite((dir_ / "src" / "circle" / "extra.bmp").string(), pixels));
  const std::string convert =
      " convert " + q(dir_ / "src") + " " + q(dir_ / "out") + " --size 16 -q --overwrite";
  for (const std::string& start : {shell_quote((bin / "imgpack").string()),
                                   "exec -a " + shell_quote(test::imgpack_cli()) + " " +
                                       shell_quote((bin / "imgpack").string())}) {
    SCOPED_TRACE(start);
    const test::CommandResult r =
        run_command("env -u IMGPACK_CODECS_MODULE -u IMGPACK_COMPLETE_CLI " +
                    std::string("bash -c ") + shell_quote(start + convert));
    if (r.exit_code == 0) {
      GTEST_SKIP() << "an installed libimgpack_codecs.so was found outside the build tree";
    }
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("the image codecs module libimgpack_codecs.so was not found"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find((bin / "libimgpack_codecs.so").string() + ": not found"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find(build_tree.string()), std::string::npos) << r.err;
  }
  // Beside the program, the module is found there.
  std::filesystem::copy_file(build_tree / "libpack" / "libimgpack_codecs.so",
                             bin / "libimgpack_codecs.so");
  const test::CommandResult r =
      run_command("env -u IMGPACK_CODECS_MODULE -u IMGPACK_COMPLETE_CLI " +
                  shell_quote((bin / "imgpack").string()) + convert);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace imgpack
