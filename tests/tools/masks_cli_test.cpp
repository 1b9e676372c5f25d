// imgpack convert --masks as a segmentation user runs it: every variant's
// mask marks exactly its image's shape, labels are only those of the inputs
// (or the fill), the output does not depend on the thread count and a
// crash resumes to the same bytes, and every kind of bad mask is skipped
// (or fails the run) with its reason.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <set>

#include "image_fixtures.hpp"
#include "imgpack/dataset.hpp"
#include "imgpack/sample_data.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using test::run_command;
using test::run_imgpack;
using test::shell_quote;
using test::TempDir;
using test::write_bytes;

constexpr int kKilledBySigkill = 128 + 9;

std::string q(const fs::path& p) { return shell_quote(p.string()); }

nlohmann::json read_report(const fs::path& dataset) {
  return nlohmann::json::parse(test::read_bytes(dataset / "report.json"));
}

std::string reason_for(const nlohmann::json& report, const std::string& path) {
  for (const auto& s : report["skipped"]) {
    if (s["path"] == path) return s["reason"];
  }
  return "(not skipped)";
}

// sample-data images with masks: 4 classes of shapes, 6 each, about 320x240
// (JPEGs decoded at a reduced DCT scale for 96-pixel records).
class MasksCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto r = run_imgpack("sample-data " + q(dir_ / "src") +
                               " --classes 4 --per-class 6 --size 320x240 --masks --seed 5 -q");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  std::string convert_args(const std::string& out, const std::string& extra = "") const {
    return "convert " + q(dir_ / "src") + " " + q(dir_ / out) + " --masks " +
           q(dir_ / "src/masks") + " --mask-classes " + q(dir_ / "src/masks/classes.txt") +
           " --size 96 --variants 8 --augment " + kAugment + " -q " + extra;
  }

  static constexpr const char* kAugment =
      "hflip,vflip,rotate=30,zoom=0.7:1.3,shear=10,shift=0.1,crop_scale=0.4:1,aspect=0.8:1.25";

  TempDir dir_;
};

// The colour sample-data draws class `name`'s shapes in (RGB).
cv::Vec3b class_colour(const std::string& name, uint32_t classes) {
  for (uint32_t c = 0; c < classes; ++c) {
    if (sample_class_name(c) != name) continue;
    cv::Mat hsv(1, 1, CV_8UC3, cv::Scalar(360.0 * c / classes / 2.0, 0.85 * 255, 0.95 * 255));
    cv::Mat rgb;
    cv::cvtColor(hsv, rgb, cv::COLOR_HSV2RGB);
    return rgb.at<cv::Vec3b>(0, 0);
  }
  ADD_FAILURE() << "no class " << name;
  return {};
}

TEST_F(MasksCli, EveryVariantsMaskMarksItsImagesShapeWithTheInputsLabelsOnly) {
  const auto r = run_imgpack(convert_args("out", "--threads 2"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Dataset dataset = Dataset::open(dir_ / "out");
  ASSERT_TRUE(dataset.has_masks());
  ASSERT_EQ(dataset.num_records(), 24u * 8u);
  const DatasetIndex& index = dataset.index();
  EXPECT_EQ(index.mask_class_names,
            (std::vector<std::string>{"background", "circle", "square", "star", "triangle"}));
  uint64_t measured = 0;
  for (uint64_t record = 0; record < dataset.num_records(); ++record) {
    const int32_t label = dataset.record_label(record);
    const cv::Vec3b colour = class_colour(index.class_names[static_cast<std::size_t>(label)], 4);
    const cv::Mat image(96, 96, CV_8UC3, const_cast<uint8_t*>(dataset.record_data(record)));
    const cv::Mat mask(96, 96, CV_8UC1, const_cast<uint8_t*>(dataset.mask_data(record)));
    // Only the labels of the inputs: 0 and the class's shape (nearest
    // neighbour makes none in between; reflection fills, so no 255 either).
    for (uint8_t value : std::set<uint8_t>(mask.begin<uint8_t>(), mask.end<uint8_t>())) {
      EXPECT_TRUE(value == 0 || value == label + 1) << "record " << record << ": " << int(value);
    }
    // Shape pixels by colour against the mask's non-zero pixels, away from
    // resampling edges: pixels whose 3x3 neighbourhood in the mask is one
    // label and lies inside the record.
    uint64_t both = 0, either = 0;
    for (int y = 1; y < 95; ++y) {
      for (int x = 1; x < 95; ++x) {
        const uint8_t m = mask.at<uint8_t>(y, x);
        bool edge = false;
        for (int dy = -1; dy <= 1; ++dy) {
          for (int dx = -1; dx <= 1; ++dx) edge = edge || mask.at<uint8_t>(y + dy, x + dx) != m;
        }
        if (edge) continue;
        const cv::Vec3b& p = image.at<cv::Vec3b>(y, x);
        int distance = 0;
        for (int c = 0; c < 3; ++c) distance = std::max(distance, std::abs(p[c] - colour[c]));
        const bool shape = distance < 45, labelled = m != 0;
        both += shape && labelled;
        either += shape || labelled;
      }
    }
    if (either == 0) continue;  // the shape is out of this variant's view
    ++measured;
    EXPECT_GE(static_cast<double>(both) / static_cast<double>(either), 0.95)
        << "record " << record << " (sample " << dataset.record_sample(record) << ", variant "
        << dataset.record_variant(record) << "): " << both << " of " << either;
  }
  EXPECT_GE(measured, 24u * 6u);

  // inspect counts the labels; verify checks every mask.
  const auto inspect = run_imgpack("inspect " + q(dir_ / "out") + " --json");
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  const nlohmann::json masks = nlohmann::json::parse(inspect.out)["masks"];
  EXPECT_EQ(masks["masks_counted"], 24);
  ASSERT_EQ(masks["labels"].size(), 5u);
  uint64_t pixels = 0;
  for (const auto& l : masks["labels"]) {
    EXPECT_GT(l["pixels"].get<uint64_t>(), 0u);
    pixels += l["pixels"].get<uint64_t>();
  }
  EXPECT_EQ(pixels, 24u * 96u * 96u);
  EXPECT_EQ(masks["labels"][0]["masks"], 24);
  EXPECT_EQ(masks["labels"][1]["name"], "circle");
  EXPECT_EQ(masks["labels"][1]["masks"], 6);
  const auto verify = run_imgpack("verify " + q(dir_ / "out") + " --json");
  EXPECT_EQ(verify.exit_code, 0) << verify.err;
  EXPECT_TRUE(nlohmann::json::parse(verify.out)["masks"].get<bool>());
  const auto preview = run_imgpack("preview " + q(dir_ / "out") + " -o " + q(dir_ / "sheet.png") +
                                   " --samples 2 --json");
  ASSERT_EQ(preview.exit_code, 0) << preview.err;
  EXPECT_TRUE(nlohmann::json::parse(preview.out)["masks"].get<bool>());
}

// Mask options that could not apply are refused before anything is written:
// --mask-fill without masks, and a class list naming two labels alike.
TEST_F(MasksCli, OptionsThatCannotApplyAreRefused) {
  auto r = run_imgpack("convert " + q(dir_ / "src") + " " + q(dir_ / "nomasks") +
                       " --size 32 --mask-fill 7 -q");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--mask-fill needs masks"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "nomasks"));
  test::write_bytes(dir_ / "classes.txt", "background\ncircle\n");
  r = run_imgpack("convert " + q(dir_ / "src") + " " + q(dir_ / "nomasks") + " --size 32 -q " +
                  "--mask-classes " + q(dir_ / "classes.txt"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--mask-classes is about masks, but there are none (--masks or --csv-mask "
                       "names them)"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "nomasks"));
  test::write_bytes(dir_ / "twice.txt", "background\ncircle\n\nsquare\ncircle\n");
  r = run_imgpack("convert " + q(dir_ / "src") + " " + q(dir_ / "twice") + " --masks " +
                  q(dir_ / "src/masks") + " --mask-classes " + q(dir_ / "twice.txt") +
                  " --size 32 -q");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("twice.txt: names 'circle' on lines 2 and 5 (labels 1 and 4)"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "twice/index.h5"));
}

TEST_F(MasksCli, SameBytesForAnyThreadCountAndAfterACrash) {
  ASSERT_EQ(run_imgpack(convert_args("one", "--threads 1 --shard-size 200K")).exit_code, 0);
  ASSERT_EQ(run_imgpack(convert_args("two", "--threads 2 --shard-size 200K")).exit_code, 0);
  test::expect_same_dataset_bytes(dir_ / "two", dir_ / "one");
  ASSERT_GE(read_index(dir_ / "one").num_shards(), 3u);

  const auto killed = run_command("IMGPACK_CRASH_AT=record:70 " + shell_quote(test::imgpack_cli()) +
                                  " " + convert_args("crashed", "--threads 2 --shard-size 200K"));
  ASSERT_EQ(killed.exit_code, kKilledBySigkill) << killed.err;
  EXPECT_FALSE(fs::exists(dir_ / "crashed/index.h5"));
  const auto resumed =
      run_imgpack(convert_args("crashed", "--threads 2 --shard-size 200K --resume --json"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_GT(nlohmann::json::parse(resumed.out)["resumed_shards"].get<int>(), 0);
  test::expect_same_dataset_bytes(dir_ / "crashed", dir_ / "one");

  // A mask edited in place since is noticed: its shard is converted again.
  const auto again = run_command("IMGPACK_CRASH_AT=record:150 " + shell_quote(test::imgpack_cli()) +
                                 " " + convert_args("edited", "--threads 2 --shard-size 200K"));
  ASSERT_EQ(again.exit_code, kKilledBySigkill) << again.err;
  const DatasetIndex reference = read_index(dir_ / "one");
  const fs::path edited_mask =
      dir_ / "src/masks" / fs::path(reference.sample_path[0]).replace_extension(".png");
  ASSERT_TRUE(fs::exists(edited_mask));
  const std::string bytes = test::read_bytes(edited_mask);
  write_bytes(edited_mask, bytes);  // same bytes, new times
  const auto after_edit =
      run_imgpack(convert_args("edited", "--threads 2 --shard-size 200K --resume --json"));
  ASSERT_EQ(after_edit.exit_code, 0) << after_edit.err;
  EXPECT_EQ(nlohmann::json::parse(after_edit.out)["resumed_shards"], 0);
  test::expect_same_dataset_bytes(dir_ / "edited", dir_ / "one");
}

// Hand-made masks of every kind, one 16x12 image each.
class BadMasks : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const std::string name : {"palette", "deep", "too_deep", "small", "missing", "colour"}) {
      test::write_image(dir_ / "src/c" / (name + ".png"), test::make_rgb_image(16, 12, 1));
    }
    std::vector<uint16_t> labels(std::size_t{16} * 12);
    for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = (i % 16) < 8 ? 0 : (i < 96 ? 3 : 5);
    labels_ = labels;
    std::string plte;
    for (int i = 0; i < 6; ++i) plte += std::string{char(250 - 40 * i), char(7 * i), char(100)};
    write_bytes(dir_ / "masks/c/palette.png", test::png_raw(16, 12, 3, 8, labels, plte));
    write_bytes(dir_ / "masks/c/deep.png", test::png_raw(16, 12, 0, 16, labels));
    std::vector<uint16_t> wide = labels;
    wide[20] = 1000;
    write_bytes(dir_ / "masks/c/too_deep.png", test::png_raw(16, 12, 0, 16, wide));
    write_bytes(dir_ / "masks/c/small.png",
                test::png_raw(12, 16, 0, 8, std::vector<uint16_t>(std::size_t{12} * 16, 1)));
    std::vector<uint16_t> rgb;
    for (uint16_t l : labels)
      rgb.insert(rgb.end(), {uint16_t(l == 0 ? 0 : 200), uint16_t(l * 20), 0});
    write_bytes(dir_ / "masks/c/colour.png", test::png_raw(16, 12, 2, 8, rgb));
    colour_mask_ = test::read_bytes(dir_ / "masks/c/colour.png");
  }

  std::string convert_args(const std::string& out, const std::string& extra = "") const {
    return "convert " + q(dir_ / "src") + " " + q(dir_ / out) + " --masks " + q(dir_ / "masks") +
           " --resize stretch --size 16x12 --max-skipped 100% " + extra;
  }

  std::vector<uint8_t> mask_of(const fs::path& dataset, const std::string& path) const {
    const Dataset d = Dataset::open(dataset);
    for (uint64_t r = 0; r < d.num_records(); ++r) {
      if (d.sample_path(static_cast<uint64_t>(d.record_sample(r))) == path) {
        const std::span<const uint8_t> m = d.mask(r);
        return {m.begin(), m.end()};
      }
    }
    ADD_FAILURE() << path << " was not converted";
    return {};
  }

  TempDir dir_;
  std::vector<uint16_t> labels_;
  std::string colour_mask_;
};

TEST_F(BadMasks, EachIsConvertedOrSkippedWithItsReason) {
  const auto r = run_imgpack(convert_args("out"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<uint8_t> expected(labels_.begin(), labels_.end());
  // A palette PNG's indices are its labels, never its colours; a 16-bit
  // mask whose values fit in 8 bits is read as they are.
  EXPECT_EQ(mask_of(dir_ / "out", "c/palette.png"), expected);
  EXPECT_EQ(mask_of(dir_ / "out", "c/deep.png"), expected);

  const nlohmann::json report = read_report(dir_ / "out");
  EXPECT_EQ(report["samples"], 2);
  const std::string too_deep = reason_for(report, "c/too_deep.png");
  EXPECT_NE(too_deep.find("16-bit mask with value 1000"), std::string::npos) << too_deep;
  EXPECT_NE(too_deep.find("fit in 8 bits"), std::string::npos) << too_deep;
  const std::string small = reason_for(report, "c/small.png");
  EXPECT_NE(small.find("is 12x16, its image 16x12 (after the image's EXIF orientation)"),
            std::string::npos)
      << small;
  EXPECT_NE(reason_for(report, "c/missing.png").find("no mask: expected"), std::string::npos);
  // The CLI's report.json names the flag, as its messages do.
  const std::string colour = reason_for(report, "c/colour.png");
  EXPECT_NE(colour.find("a colour mask"), std::string::npos) << colour;
  EXPECT_NE(colour.find("--mask-colors FILE"), std::string::npos) << colour;
  EXPECT_EQ(colour.find("MaskOptions::"), std::string::npos) << colour;

  // --on-error fail stops at the first, naming the mask, and leaves no dataset.
  const auto fail =
      run_imgpack(convert_args("failed", "--on-error fail --threads 1 --order sorted"));
  EXPECT_EQ(fail.exit_code, 1);
  EXPECT_NE(fail.err.find("colour.png: mask " + (dir_ / "masks/c/colour.png").string()),
            std::string::npos)
      << fail.err;
  EXPECT_NE(fail.err.find("--mask-colors FILE"), std::string::npos) << fail.err;
  EXPECT_FALSE(fs::exists(dir_ / "failed/index.h5"));

  // With a colour table the coloured mask converts, label by colour.
  write_bytes(dir_ / "colors.csv",
              "r,g,b,label,name\n0,0,0,0,sky\n200,60,0,1,road\n"
              "200,100,0,2,car\n");
  const auto coloured =
      run_imgpack(convert_args("coloured", "--mask-colors " + q(dir_ / "colors.csv")));
  ASSERT_EQ(coloured.exit_code, 0) << coloured.err;
  std::vector<uint8_t> mapped;
  for (uint16_t l : labels_) mapped.push_back(l == 0 ? 0 : l == 3 ? 1 : 2);
  EXPECT_EQ(mask_of(dir_ / "coloured", "c/colour.png"), mapped);
  EXPECT_EQ(read_index(dir_ / "coloured").mask_class_names,
            (std::vector<std::string>{"sky", "road", "car"}));
  // The masks were only read.
  EXPECT_EQ(test::read_bytes(dir_ / "masks/c/colour.png"), colour_mask_);
}

// A gray label map saved as JPEG converts, but JPEG's compression changes
// labels along the edges and invents others between them: the conversion
// says so (stderr and report.json), naming the first such mask.
TEST_F(BadMasks, JpegMasksConvertWithAWarning) {
  for (const char* name : {"palette", "deep", "too_deep", "small", "missing", "colour"}) {
    fs::remove(dir_ / "src/c" / (std::string(name) + ".png"));
  }
  test::write_image(dir_ / "src/c/lossy.png", test::make_rgb_image(16, 12, 2));
  cv::Mat labels(12, 16, CV_8UC1, cv::Scalar(0));
  labels(cv::Rect(4, 3, 8, 6)).setTo(1);
  labels(cv::Rect(6, 5, 3, 3)).setTo(2);
  ASSERT_TRUE(
      cv::imwrite((dir_ / "masks/c/lossy.jpg").string(), labels, {cv::IMWRITE_JPEG_QUALITY, 90}));
  const auto r = run_imgpack(convert_args("out", "-q"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string warning = "imgpack: warning: 1 of the 1 masks are JPEG files (the first: " +
                              (dir_ / "masks/c/lossy.jpg").string() +
                              "): JPEG's lossy compression changes the labels";
  EXPECT_NE(r.err.find(warning), std::string::npos) << r.err;
  const nlohmann::json report = read_report(dir_ / "out");
  ASSERT_EQ(report["warnings"].size(), 1u) << report.dump();
  EXPECT_NE(report["warnings"][0].get<std::string>().find("Save label maps as PNG"),
            std::string::npos);
  // An append of a new image whose mask is a JPEG says so too.
  test::write_image(dir_ / "src/c/lossy2.png", test::make_rgb_image(16, 12, 3));
  ASSERT_TRUE(
      cv::imwrite((dir_ / "masks/c/lossy2.jpg").string(), labels, {cv::IMWRITE_JPEG_QUALITY, 90}));
  const auto appended = run_imgpack("convert " + q(dir_ / "src") + " " + q(dir_ / "out") +
                                    " --append --masks " + q(dir_ / "masks") + " --json");
  ASSERT_EQ(appended.exit_code, 0) << appended.err;
  const nlohmann::json summary = nlohmann::json::parse(appended.out);
  ASSERT_EQ(summary["warnings"].size(), 1u) << appended.out;
  EXPECT_NE(
      summary["warnings"][0].get<std::string>().find(
          "1 of the 1 masks are JPEG files (the first: " + (dir_ / "masks/c/lossy2.jpg").string()),
      std::string::npos)
      << appended.out;
  fs::remove(dir_ / "src/c/lossy2.png");
  // The same labels as a PNG: no warning.
  fs::remove(dir_ / "masks/c/lossy.jpg");
  cv::imwrite((dir_ / "masks/c/lossy.png").string(), labels);
  const auto clean = run_imgpack("convert " + q(dir_ / "src") + " " + q(dir_ / "clean") +
                                 " --masks " + q(dir_ / "masks") + " --size 16x12 -q");
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  EXPECT_EQ(clean.err.find("warning"), std::string::npos) << clean.err;
  EXPECT_FALSE(read_report(dir_ / "clean").contains("warnings"));
}

TEST_F(BadMasks, LetterboxAndOutOfImageAreasGetTheMaskFill) {
  const auto r = run_imgpack("convert " + q(dir_ / "src") + " " + q(dir_ / "padded") + " --masks " +
                             q(dir_ / "masks") +
                             " --resize pad --size 16x16 --mask-fill 7 --max-skipped 100% -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<uint8_t> mask = mask_of(dir_ / "padded", "c/palette.png");
  ASSERT_EQ(mask.size(), 256u);
  // 16x12 into 16x16: two rows of fill above and below, the labels between.
  for (int x = 0; x < 16; ++x) {
    EXPECT_EQ(mask[static_cast<std::size_t>(x)], 7);
    EXPECT_EQ(mask[static_cast<std::size_t>(15 * 16 + x)], 7);
    EXPECT_EQ(mask[static_cast<std::size_t>(2 * 16 + x)], labels_[static_cast<std::size_t>(x)]);
  }
  EXPECT_EQ(Dataset::open(dir_ / "padded").mask_fill(), 7);
}

TEST(MasksCliInputs, CsvMaskColumnsAndTheImagesUprightSize) {
  TempDir dir;
  // A phone photo stored sideways (EXIF 6) and its mask drawn upright.
  cv::Mat upright(30, 40, CV_8UC3, cv::Scalar(0, 0, 0));
  cv::rectangle(upright, cv::Rect(5, 5, 12, 20), cv::Scalar(255, 255, 255), cv::FILLED);
  const cv::Mat stored = test::store_for_orientation(upright, 6);
  write_bytes(
      dir / "src/photo.jpg",
      test::jpeg_with_exif(test::encode_image(".jpg", stored, {cv::IMWRITE_JPEG_QUALITY, 98}), 6));
  std::vector<uint16_t> labels(std::size_t{40} * 30, 0);
  for (int y = 5; y < 25; ++y) {
    for (int x = 5; x < 17; ++x)
      labels[std::size_t{40} * static_cast<std::size_t>(y) + static_cast<std::size_t>(x)] = 1;
  }
  write_bytes(dir / "labels/photo_seg.png", test::png_raw(40, 30, 0, 8, labels));
  // The same mask stored sideways, as the JPEG's pixels are: the wrong size.
  write_bytes(dir / "src/sideways.jpg",
              test::jpeg_with_exif(test::encode_image(".jpg", stored), 6));
  write_bytes(dir / "labels/sideways_seg.png",
              test::png_raw(30, 40, 0, 8, std::vector<uint16_t>(std::size_t{30} * 40, 1)));
  write_bytes(dir / "list.csv",
              "image,mask\nphoto.jpg,photo_seg.png\nsideways.jpg,sideways_seg.png\n");
  const auto r =
      run_imgpack("convert " + q(dir / "src") + " " + q(dir / "out") + " --csv " +
                  q(dir / "list.csv") + " --csv-path image --csv-mask mask --masks " +
                  q(dir / "labels") + " --size 40x30 --resize stretch --max-skipped 1 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Dataset dataset = Dataset::open(dir / "out");
  ASSERT_EQ(dataset.num_records(), 1u);
  const std::span<const uint8_t> mask = dataset.mask(0);
  EXPECT_TRUE(std::equal(mask.begin(), mask.end(), labels.begin()));
  const cv::Mat image(30, 40, CV_8UC3, const_cast<uint8_t*>(dataset.record_data(0)));
  EXPECT_GT(image.at<cv::Vec3b>(15, 10)[0], 200);  // upright: the rectangle is where its mask is
  EXPECT_LT(image.at<cv::Vec3b>(15, 30)[0], 50);
  EXPECT_NE(reason_for(read_report(dir / "out"), "sideways.jpg").find("is 30x40, its image 40x30"),
            std::string::npos);
}

}  // namespace
}  // namespace imgpack
