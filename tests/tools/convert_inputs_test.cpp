// imgpack convert on real-world inputs: CSV lists, groups, every image
// format and colour model, EXIF orientation, and decompression bombs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <span>

#include "h5.hpp"
#include "image_fixtures.hpp"
#include "imgpack/dataset_index.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using test::CommandResult;
using test::encode_image;
using test::run_imgpack;
using test::shell_quote;
using test::TempDir;
using test::write_bytes;

std::string q(const fs::path& p) { return shell_quote(p.string()); }

// Every record's pixels (variant 0), by source path.
std::map<std::string, cv::Mat> read_records(const fs::path& dataset) {
  DatasetIndex index = read_index(dataset);
  std::map<std::string, cv::Mat> out;
  for (std::size_t s = 0; s < index.num_shards(); ++s) {
    h5::File shard = h5::File::open_read(dataset / index.shards.file[s]);
    const std::vector<int64_t> samples = shard.read<int64_t>("/sample");
    const std::size_t n = samples.size();
    std::vector<uint8_t> pixels(n * index.record_bytes());
    h5::Handle images = shard.open_dataset("/images");
    if (n > 0) {
      EXPECT_GE(
          H5Dread(images.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, pixels.data()), 0);
    }
    for (std::size_t r = 0; r < n; ++r) {
      cv::Mat record(static_cast<int>(index.height), static_cast<int>(index.width),
                     CV_8UC(static_cast<int>(index.channels)),
                     pixels.data() + r * index.record_bytes());
      out[index.sample_path[static_cast<std::size_t>(samples[r])]] = record.clone();
    }
  }
  return out;
}

nlohmann::json read_report(const fs::path& dataset) {
  return nlohmann::json::parse(test::read_bytes(dataset / "report.json"));
}

std::string reason_for(const nlohmann::json& report, const std::string& path) {
  for (const auto& s : report["skipped"]) {
    if (s["path"] == path) return s["reason"];
  }
  return "(not skipped)";
}

class StateFarmCsv : public ::testing::Test {
 protected:
  void SetUp() override {
    // subject,classname,img as in driver_imgs_list.csv; images under imgs/train/CLASS/.
    std::string csv = "subject,classname,img\r\n";
    int i = 0;
    for (const char* driver : {"p002", "p012", "p021"}) {
      for (const char* cls : {"c0", "c1", "c2"}) {
        const std::string img = "img_" + std::to_string(100 + i) + ".jpg";
        test::write_image(src_ / "imgs/train" / cls / img, test::make_rgb_image(40, 30, i));
        csv += std::string(driver) + "," + cls + "," + img + "\r\n";
        ++i;
      }
    }
    csv += "p021,c2,img_999.jpg\r\n";  // listed, not on disk
    write_bytes(csv_, csv);
  }
  CommandResult convert(const std::string& extra) {
    return run_imgpack("convert " + q(src_) + " " + q(out_) + " --csv " + q(csv_) +
                       " --size 32 --order sorted --quiet --max-skipped 1 " + extra);
  }
  TempDir dir_;
  fs::path src_ = dir_ / "statefarm";
  fs::path csv_ = dir_ / "driver_imgs_list.csv";
  fs::path out_ = dir_ / "out";
};

TEST_F(StateFarmCsv, LabelsAndGroupsFromColumnsLandInTheIndex) {
  CommandResult r = convert(
      "--csv-path 'imgs/train/{classname}/{img}' --csv-label classname --csv-group subject --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["samples"], 9);
  EXPECT_EQ(nlohmann::json::parse(r.out)["skipped"], 1);
  DatasetIndex index = read_index(out_);
  EXPECT_EQ(index.class_names, (std::vector<std::string>{"c0", "c1", "c2"}));
  EXPECT_EQ(index.group_names, (std::vector<std::string>{"p002", "p012", "p021"}));
  ASSERT_EQ(index.num_samples(), 9u);
  for (std::size_t s = 0; s < index.num_samples(); ++s) {
    const std::string& path = index.sample_path[s];
    SCOPED_TRACE(path);
    // imgs/train/cK/img_(100 + 3*driver + K).jpg
    const int n = std::stoi(path.substr(path.find("img_") + 4)) - 100;
    EXPECT_EQ(path.substr(0, 14), "imgs/train/c" + std::to_string(n % 3) + "/");
    EXPECT_EQ(index.sample_label[s], n % 3);
    EXPECT_EQ(index.sample_group[s], n / 3);
  }
  const nlohmann::json report = read_report(out_);
  const std::string reason = reason_for(report, "imgs/train/c2/img_999.jpg");
  EXPECT_NE(reason.find("missing"), std::string::npos) << reason;
  EXPECT_NE(reason.find("line 11"), std::string::npos) << reason;
  EXPECT_EQ(report["options"]["labels"], "csv");
  EXPECT_EQ(report["options"]["csv"]["group"], "subject");
}

// A group whose every row names a missing file is in the group table but
// holds no image: inspect says so instead of counting it silently.
TEST_F(StateFarmCsv, InspectNamesGroupsWithoutImages) {
  std::string csv = test::read_bytes(csv_);
  csv.replace(csv.find("p021,c2,img_999.jpg"), 19, "p099,c0,gone_1.jpg");  // its only row
  write_bytes(csv_, csv);
  CommandResult r = convert(
      "--csv-path 'imgs/train/{classname}/{img}' --csv-label classname --csv-group subject");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(read_index(out_).group_names.size(), 4u);
  r = run_imgpack("inspect " + q(out_));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("groups      4 (1 without images, e.g. p099)"), std::string::npos) << r.out;
  r = run_imgpack("inspect " + q(out_) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["empty_groups"], 1);
}

// --csv-multilabel and --csv-targets: per-sample rows in the index, the same
// whether converted at once or in parts and merged; inspect summarises them.
TEST_F(StateFarmCsv, MultilabelAndTargetsLandInTheIndexAndSurviveAMerge) {
  // Image n (img_(100 + n).jpg): tags by n % 4, age n * 1.5 (none for n = 4),
  // score -n.
  const char* tags[] = {"cat;outdoor", "", "dog", " dog ; cat "};
  std::string csv = "subject,classname,img,tags,age,score\n";
  for (int n = 0; n < 9; ++n) {
    csv += "p00" + std::to_string(n / 3) + ",c" + std::to_string(n % 3) + ",img_" +
           std::to_string(100 + n) + ".jpg," + tags[n % 4] + "," +
           (n == 4 ? std::string() : std::to_string(n * 1.5)) + "," + std::to_string(-n) + "\n";
  }
  write_bytes(csv_, csv);
  const std::string args =
      "--csv-path 'imgs/train/{classname}/{img}' --csv-label classname --csv-multilabel tags "
      "--csv-targets 'age, score'";
  CommandResult r = convert(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const DatasetIndex index = read_index(out_);
  EXPECT_EQ(index.multilabel_names, (std::vector<std::string>{"cat", "dog", "outdoor"}));
  EXPECT_EQ(index.target_names, (std::vector<std::string>{"age", "score"}));
  const std::vector<std::vector<uint8_t>> multi_hot = {{1, 0, 1}, {0, 0, 0}, {0, 1, 0}, {1, 1, 0}};
  ASSERT_EQ(index.num_samples(), 9u);
  for (std::size_t s = 0; s < index.num_samples(); ++s) {
    const std::string& path = index.sample_path[s];
    SCOPED_TRACE(path);
    const int n = std::stoi(path.substr(path.find("img_") + 4)) - 100;
    const std::span<const uint8_t> row = index.multilabel_of(s);
    EXPECT_EQ(std::vector<uint8_t>(row.begin(), row.end()), multi_hot[n % 4]);
    if (n == 4) {
      EXPECT_TRUE(std::isnan(index.targets_of(s)[0]));
    } else {
      EXPECT_EQ(index.targets_of(s)[0], static_cast<float>(n * 1.5));
    }
    EXPECT_EQ(index.targets_of(s)[1], static_cast<float>(-n));
  }
  EXPECT_EQ(read_report(out_)["options"]["csv"]["targets"], (nlohmann::json{"age", "score"}));
  r = run_imgpack("verify " + q(out_) + " --quiet");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;

  r = run_imgpack("inspect " + q(out_));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("multi-label 3 classes (2 images with none)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    dog      4\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("targets     2 float32 per image"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("age    8 values, min 0, mean 6, max 12"), std::string::npos) << r.out;
  r = run_imgpack("inspect " + q(out_) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["multilabel"]["classes"][0]["name"], "cat");
  EXPECT_EQ(j["multilabel"]["classes"][0]["count"], 5);
  EXPECT_EQ(j["multilabel"]["none"], 2);
  EXPECT_EQ(j["targets"][1]["name"], "score");
  EXPECT_EQ(j["targets"][1]["values"], 9);
  EXPECT_EQ(j["targets"][1]["min"], -8.0);

  // A removed image leaves the counts: img_100 (cat;outdoor, age 0, score 0).
  const fs::path removed = dir_ / "removed.txt";
  write_bytes(removed, "imgs/train/c0/img_100.jpg\n");
  r = run_imgpack("remove " + q(out_) + " --paths " + q(removed) + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_imgpack("inspect " + q(out_) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json after_removal = nlohmann::json::parse(r.out);
  EXPECT_EQ(after_removal["multilabel"]["classes"][0]["count"], 4);
  EXPECT_EQ(after_removal["multilabel"]["none"], 2);
  EXPECT_EQ(after_removal["targets"][0]["values"], 7);
  EXPECT_EQ(after_removal["targets"][0]["min"], 1.5);
  EXPECT_EQ(after_removal["targets"][1]["values"], 8);
  EXPECT_EQ(after_removal["targets"][1]["max"], -1.0);

  // In two parts, merged: the same rows for the same paths.
  const fs::path parts = dir_ / "parts";
  for (int part = 0; part < 2; ++part) {
    r = run_imgpack("convert " + q(src_) + " " + q(parts) + " --csv " + q(csv_) +
                    " --size 32 --order sorted --quiet --max-skipped 1 " + args + " --part " +
                    std::to_string(part) + "/2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  r = run_imgpack("merge " + q(parts) + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const DatasetIndex merged = read_index(parts);
  EXPECT_EQ(merged.multilabel_names, index.multilabel_names);
  EXPECT_EQ(merged.target_names, index.target_names);
  ASSERT_EQ(merged.num_samples(), index.num_samples());
  for (std::size_t m = 0; m < merged.num_samples(); ++m) {
    const auto at =
        std::find(index.sample_path.begin(), index.sample_path.end(), merged.sample_path[m]);
    ASSERT_NE(at, index.sample_path.end());
    const auto s = static_cast<std::size_t>(at - index.sample_path.begin());
    const std::span<const uint8_t> a = merged.multilabel_of(m), b = index.multilabel_of(s);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << merged.sample_path[m];
    const std::span<const float> x = merged.targets_of(m), y = index.targets_of(s);
    for (std::size_t t = 0; t < 2; ++t) {
      EXPECT_TRUE(x[t] == y[t] || (std::isnan(x[t]) && std::isnan(y[t])))
          << merged.sample_path[m] << " target " << t;
    }
  }

  // Bad input: a cell that is not a number names the file and line; the
  // columns need --csv.
  write_bytes(csv_, csv + "p002,c0,img_555.jpg,cat,old,1\n");
  r = convert(args + " --overwrite");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("driver_imgs_list.csv:11: 'old' in target column 'age' is not a finite "
                       "number"),
            std::string::npos)
      << r.err;
  r = run_imgpack("convert " + q(src_) + " " + q(dir_ / "other") + " --csv-targets age --size 32");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("need --csv FILE"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "other"));
}

// An append takes from a newer CSV the rows of new images only: the names
// of a held image's new label, tags or group are no names of the dataset's.
TEST_F(StateFarmCsv, AnAppendTakesNamesFromTheRowsOfNewImagesOnly) {
  auto row = [](int n, const std::string& cls, const std::string& subject,
                const std::string& tags) {
    return "imgs/train/c" + std::to_string(n % 3) + "/img_" + std::to_string(100 + n) + ".jpg," +
           cls + "," + subject + "," + tags + "\n";
  };
  std::string csv = "file,classname,subject,tags\n";
  for (int n = 0; n < 8; ++n) {
    csv +=
        row(n, "c" + std::to_string(n % 3), "p00" + std::to_string(n / 3), n % 2 ? "cat" : "dog");
  }
  write_bytes(csv_, csv);
  const std::string args =
      "--csv-path file --csv-label classname --csv-group subject --csv-multilabel tags";
  CommandResult r = convert(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const DatasetIndex before = read_index(out_);
  ASSERT_EQ(before.num_samples(), 8u);

  // img_100 relabelled (class, group and tags the dataset lacks); img_108 new.
  std::string newer = "file,classname,subject,tags\n" + row(0, "kite", "p999", "ghost");
  for (int n = 1; n < 8; ++n) {
    newer +=
        row(n, "c" + std::to_string(n % 3), "p00" + std::to_string(n / 3), n % 2 ? "cat" : "dog");
  }
  newer += row(8, "c2", "p002", "dog;bird");
  const fs::path newer_csv = dir_ / "newer.csv";
  write_bytes(newer_csv, newer);
  r = run_imgpack("convert " + q(src_) + " " + q(out_) + " --append --csv " + q(newer_csv) +
                  " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const DatasetIndex after = read_index(out_);
  ASSERT_EQ(after.num_samples(), 9u);
  EXPECT_EQ(after.class_names, before.class_names);
  EXPECT_EQ(after.group_names, before.group_names);
  EXPECT_EQ(after.multilabel_names, (std::vector<std::string>{"cat", "dog", "bird"}));
  EXPECT_EQ(after.sample_label[0], before.sample_label[0]);
  const std::span<const uint8_t> held = after.multilabel_of(0), added = after.multilabel_of(8);
  EXPECT_EQ(std::vector<uint8_t>(held.begin(), held.end()), (std::vector<uint8_t>{0, 1, 0}));
  EXPECT_EQ(std::vector<uint8_t>(added.begin(), added.end()), (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(after.class_names[static_cast<std::size_t>(after.sample_label[8])], "c2");
  r = run_imgpack("inspect " + q(out_));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("kite"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("ghost"), std::string::npos) << r.out;
}

TEST_F(StateFarmCsv, LabelsNoneGivesUnlabeledSamples) {
  CommandResult r = convert(
      "--csv-path 'imgs/train/{classname}/{img}' --csv-group subject "
      "--labels none");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  DatasetIndex index = read_index(out_);
  EXPECT_TRUE(index.class_names.empty());
  for (int32_t label : index.sample_label) EXPECT_EQ(label, -1);
  EXPECT_EQ(index.group_names.size(), 3u);
  // Without --csv-label the default is unlabeled too.
  r = convert("--csv-path 'imgs/train/{classname}/{img}' --overwrite");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int32_t label : read_index(out_).sample_label) EXPECT_EQ(label, -1);
}

TEST_F(StateFarmCsv, BadListsAreUsageErrorsNamingFileAndLine) {
  CommandResult r = convert("--csv-path img --csv-label class");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("driver_imgs_list.csv:1: no column 'class'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out_ / "index.h5"));

  std::string csv = test::read_bytes(csv_);
  write_bytes(csv_, csv + "p002,c0,img_100.jpg\r\n");
  r = convert("--csv-path 'imgs/train/{classname}/{img}' --csv-label classname");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("driver_imgs_list.csv:12: path 'imgs/train/c0/img_100.jpg' is listed "
                       "twice (first on line 2)"),
            std::string::npos)
      << r.err;

  write_bytes(csv_, csv);
  r = convert("--csv-path img --csv-label classname");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("relative to SRC"), std::string::npos) << r.err;

  r = convert("--csv-path 'imgs/train/{classname}/{img}' --csv-label classname --labels none");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--csv-label"), std::string::npos) << r.err;

  r = run_imgpack("convert " + q(src_) + " " + q(out_) + " --csv-label classname --size 32");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("need --csv"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out_ / "index.h5"));
}

TEST(ConvertGroupsTest, GroupRegexOverRelativePaths) {
  TempDir dir;
  for (const char* path :
       {"c0/p021_img_1.jpg", "c0/p002_img_2.jpg", "c1/p021_img_3.jpg", "c1/other.jpg"}) {
    test::write_image(dir / "src" / path, test::make_rgb_image(20, 20, 1));
  }
  const std::string base = "convert " + q(dir / "src") + " " + q(dir / "out") +
                           " --order sorted --quiet --group-regex '([^/_]+)_[^/]*$'";
  CommandResult r = run_imgpack(base);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("does not match 1 of 4 paths, e.g. c1/other.jpg"), std::string::npos)
      << r.err;
  r = run_imgpack(base + " --group-missing ok");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  DatasetIndex index = read_index(dir / "out");
  EXPECT_EQ(index.group_names, (std::vector<std::string>{"p002", "p021"}));
  EXPECT_EQ(index.sample_path, (std::vector<std::string>{"c0/p002_img_2.jpg", "c0/p021_img_1.jpg",
                                                         "c1/other.jpg", "c1/p021_img_3.jpg"}));
  EXPECT_EQ(index.sample_group, (std::vector<int32_t>{0, 1, -1, 1}));
  EXPECT_EQ(index.sample_label, (std::vector<int32_t>{0, 0, 1, 1}));
}

// One file per format and colour model, all 48x32 once upright, converted at
// that size: every record must equal OpenCV's own decode of its file (EXIF
// orientation applied), or for what OpenCV does not orient or composite,
// the picture the file was made from.
TEST(ConvertFormatsTest, EveryFormatConvertsToCorrectUprightRgb) {
  TempDir dir;
  const fs::path src = dir / "src";
  const cv::Mat upright = test::make_rgb_image(48, 32, 3);
  std::map<std::string, cv::Mat> expected;  // exact picture, for lossless files
  std::map<std::string, double> tolerance;
  auto add = [&](const std::string& name, const std::string& bytes, const cv::Mat& picture,
                 double max_error) {
    write_bytes(src / "all" / name, bytes);
    expected[name] = picture;
    tolerance[name] = max_error;
  };
  const cv::Mat stored6 = test::store_for_orientation(upright, 6);
  const cv::Mat stored3 = test::store_for_orientation(upright, 3);
  add("baseline.jpg", encode_image(".jpg", upright), cv::Mat(), 0);
  add("progressive.jpg", encode_image(".jpg", upright, {cv::IMWRITE_JPEG_PROGRESSIVE, 1}),
      cv::Mat(), 0);
  add("rotated-exif.jpg", test::jpeg_with_exif(encode_image(".jpg", stored6), 6), cv::Mat(), 0);
  cv::Mat cmyk(32, 48, CV_8UC4);
  for (int y = 0; y < 32; ++y) {
    for (int x = 0; x < 48; ++x) {
      const cv::Vec3b& p = upright.at<cv::Vec3b>(y, x);
      cmyk.at<cv::Vec4b>(y, x) = cv::Vec4b(p[0], p[1], p[2], 255);
    }
  }
  add("cmyk.jpg", test::cmyk_jpeg(cmyk, 95), cv::Mat(), 0);
  add("plain.png", encode_image(".png", upright), upright, 0);
  add("rotated-exif.png", test::png_with_exif(encode_image(".png", stored6), 6), upright, 0);
  cv::Mat deep;
  upright.convertTo(deep, CV_16UC3, 257.0);
  add("16bit.png", encode_image(".png", deep), upright, 0);
  cv::Mat rgba;
  cv::cvtColor(upright, rgba, cv::COLOR_RGB2RGBA);
  rgba.forEach<cv::Vec4b>([](cv::Vec4b& p, const int* pos) { p[3] = pos[1] < 24 ? 255 : 0; });
  cv::Mat composited = upright.clone();
  composited.colRange(24, 48).setTo(cv::Scalar(0, 128, 255));  // --fill 0,128,255
  add("rgba.png", encode_image(".png", rgba), composited, 0);
  add("tiff.tif", encode_image(".tif", upright), upright, 0);
  add("rotated.tif", test::tiff_rgb(stored3, 3), upright, 0);
  add("bmp.bmp", encode_image(".bmp", upright), upright, 0);
  add("lossless.webp", encode_image(".webp", upright, {cv::IMWRITE_WEBP_QUALITY, 101}), upright, 0);
  add("rotated-exif.webp",
      test::webp_with_exif(encode_image(".webp", stored6, {cv::IMWRITE_WEBP_QUALITY, 101}), 32, 48,
                           6),
      upright, 0);
  add("lossy.webp", encode_image(".webp", upright, {cv::IMWRITE_WEBP_QUALITY, 90}), cv::Mat(), 0);
  add("pixmap.ppm", encode_image(".ppm", upright), upright, 0);
  cv::Mat gray;
  cv::cvtColor(upright, gray, cv::COLOR_RGB2GRAY);
  cv::Mat gray_rgb;
  cv::cvtColor(gray, gray_rgb, cv::COLOR_GRAY2RGB);
  add("gray.pgm", encode_image(".pgm", gray), gray_rgb, 0);
  add("gray.png", encode_image(".png", gray), gray_rgb, 0);

  CommandResult r = run_imgpack("convert " + q(src) + " " + q(dir / "out") +
                                " --size 48x32 --resize stretch --fill 0,128,255 --labels none "
                                "--order sorted --quiet --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json summary = nlohmann::json::parse(r.out);
  EXPECT_EQ(summary["skipped"], 0) << test::read_bytes(dir / "out/report.json");
  const std::map<std::string, cv::Mat> records = read_records(dir / "out");
  ASSERT_EQ(records.size(), expected.size());
  for (const auto& [name, picture] : expected) {
    SCOPED_TRACE(name);
    const cv::Mat& record = records.at("all/" + name);
    ASSERT_EQ(record.cols, 48);
    ASSERT_EQ(record.rows, 32);
    if (!picture.empty()) {
      EXPECT_LE(test::max_pixel_difference(record, picture), tolerance[name]);
    } else {
      // OpenCV orients JPEG itself and decodes CMYK the same way.
      EXPECT_LE(test::max_pixel_difference(record, test::opencv_decode_rgb(src / "all" / name)), 0);
    }
  }
  // The rotated and the CMYK JPEG are the upright picture, JPEG loss aside.
  EXPECT_LT(test::mean_abs_diff(records.at("all/rotated-exif.jpg"), upright), 8);
  EXPECT_LT(test::mean_abs_diff(records.at("all/cmyk.jpg"), upright), 8);
}

// A directory of small files declaring 60000 x 60000 (10.8 GB of RGB), converted
// under an address-space cap of 3 GiB: every bomb is skipped with the pixel
// limit as reason, and the real image is converted.
TEST(ConvertBombsTest, BombsAreSkippedWithoutAllocatingTheirSize) {
  if (test::kAddressSanitizer) GTEST_SKIP() << "ulimit -v cannot hold ASan's shadow memory";
  TempDir dir;
  const std::map<std::string, std::string> bombs = {
      {"bomb.jpg", "jpeg"},   {"bomb.png", "png"},   {"bomb.bmp", "bmp"}, {"bomb.tif", "tiff"},
      {"big.tif", "bigtiff"}, {"bomb.webp", "webp"}, {"bomb.ppm", "pnm"}, {"bomb.pam", "pam"}};
  for (const auto& [name, kind] : bombs) {
    write_bytes(dir / "src/c" / name, test::bomb_header(kind, 60000, 60000));
  }
  test::write_image(dir / "src/c/real.jpg", test::make_rgb_image(64, 48, 1));
  const std::string args = "convert " + q(dir / "src") + " " + q(dir / "out") +
                           " --size 32 --quiet --threads 2 --max-skipped 100%";
  CommandResult r =
      test::run_command("ulimit -v 3145728; " + shell_quote(test::imgpack_cli()) + " " + args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json report = read_report(dir / "out");
  EXPECT_EQ(report["samples"], 1);
  for (const auto& [name, kind] : bombs) {
    const std::string reason = reason_for(report, "c/" + name);
    EXPECT_NE(reason.find("declares 60000x60000"), std::string::npos) << name << ": " << reason;
    // The CLI's report.json names the flag, as its messages do, not the
    // library's option (ConvertOptions::report_wording).
    EXPECT_NE(reason.find("--max-pixels"), std::string::npos) << name << ": " << reason;
    EXPECT_EQ(reason.find("ConvertOptions::"), std::string::npos) << name << ": " << reason;
  }
  // --on-error fail stops at the first bomb, leaving no dataset.
  r = run_imgpack(args + " --overwrite --on-error fail");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--max-pixels"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out/index.h5"));
}

// Memory running out is the machine's state, not the image's fault: a
// conversion that cannot allocate an image within the pixel limit stops,
// naming it and resumable, instead of skipping it (which would make the
// dataset depend on what else ran at the time).
TEST(ConvertBombsTest, RunningOutOfMemoryStopsTheConversionInsteadOfSkipping) {
  if (test::kAddressSanitizer) GTEST_SKIP() << "ulimit -v cannot hold ASan's shadow memory";
  TempDir dir;
  // 16384 x 16384 is the default pixel limit; its RGB is 805 MB, its data cut.
  write_bytes(dir / "src/c/huge.png", test::bomb_header("png", 16384, 16384));
  test::write_image(dir / "src/c/real.jpg", test::make_rgb_image(64, 48, 1));
  const std::string args = "convert " + q(dir / "src") + " " + q(dir / "out") +
                           " --size 32 --quiet --threads 1 --max-skipped 100%";
  CommandResult r =
      test::run_command("ulimit -v 600000; " + shell_quote(test::imgpack_cli()) + " " + args);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("huge.png: out of memory while converting it"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--threads"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out/index.h5"));
  // With the memory it needs, the same image is read and found cut: a skip.
  r = run_imgpack(args + " --resume");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json report = read_report(dir / "out");
  EXPECT_EQ(report["samples"], 1);
  EXPECT_NE(reason_for(report, "c/huge.png").find("PNG"), std::string::npos);
}

// Records too large for the images in flight to fit: the conversion says so
// before it decodes anything, with what they need and what needs less.
TEST(ConvertBombsTest, RecordsTooLargeForMemoryStopTheConversionSayingWhatTheyNeed) {
  if (test::kAddressSanitizer) GTEST_SKIP() << "ulimit -v cannot hold ASan's shadow memory";
  TempDir dir;
  test::write_image(dir / "src/c/real.jpg", test::make_rgb_image(64, 48, 1));
  const std::string args =
      "convert " + q(dir / "src") + " " + q(dir / "out") + " --size 20000 --quiet --threads 1";
  CommandResult r =
      test::run_command("ulimit -v 600000; " + shell_quote(test::imgpack_cli()) + " " + args);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("out: out of memory for the images in flight: 4 images x 1 variants of "
                       "20000x20000x3 bytes need 4577 MiB; a smaller --size or fewer --threads"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir / "out/index.h5"));
}

TEST(ConvertBombsTest, MaxPixelsIsConfigurable) {
  TempDir dir;
  test::write_image(dir / "src/c/large.png", test::make_rgb_image(64, 48, 1));
  test::write_image(dir / "src/c/small.png", test::make_rgb_image(16, 16, 2));
  CommandResult r = run_imgpack("convert " + q(dir / "src") + " " + q(dir / "out") +
                                " --size 16 --quiet --max-pixels 3000 --max-skipped 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json report = read_report(dir / "out");
  EXPECT_EQ(report["samples"], 1);
  const std::string reason = reason_for(report, "c/large.png");
  EXPECT_NE(reason.find("declares 64x48"), std::string::npos) << reason;
}

}  // namespace
}  // namespace imgpack
