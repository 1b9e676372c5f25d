// imgpack convert with object boxes (--yolo, --coco): every record's boxes go
// through its own geometry, checked against its pixels (a white rectangle on
// black is the object, its box must hold exactly the white pixels, variant
// by variant, augmentation and rotation included); bad annotations skip
// their input with the reason; verify catches box damage; parts merge.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <opencv2/imgproc.hpp>
#include <optional>

#include "h5.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/format.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using test::CommandResult;
using test::run_imgpack;
using test::shell_quote;
using test::TempDir;
using test::write_bytes;

std::string q(const fs::path& p) { return shell_quote(p.string()); }

// An 80 x 60 black picture with white rectangles: the objects.
struct Picture {
  std::string name;
  std::vector<cv::Rect> objects;
  std::vector<int> classes;
};

const std::vector<Picture>& pictures() {
  static const std::vector<Picture> all = {
      {"a.png", {cv::Rect(20, 15, 30, 25)}, {1}},
      {"b.png", {cv::Rect(4, 6, 16, 12), cv::Rect(44, 30, 28, 24)}, {0, 1}},
      {"c.png", {cv::Rect(30, 10, 20, 40)}, {0}},
      {"d.png", {}, {}},
  };
  return all;
}

void write_pictures(const fs::path& dir) {
  for (const Picture& p : pictures()) {
    cv::Mat image(60, 80, CV_8UC3, cv::Scalar(0, 0, 0));
    for (const cv::Rect& r : p.objects) image(r).setTo(cv::Scalar(255, 255, 255));
    test::write_image(dir / p.name, image);
  }
}

std::string yolo_line(int cls, const cv::Rect& r) {
  char line[128];
  std::snprintf(line, sizeof line, "%d %.6f %.6f %.6f %.6f\n", cls, (r.x + r.width / 2.0) / 80,
                (r.y + r.height / 2.0) / 60, r.width / 80.0, r.height / 60.0);
  return line;
}

// One record's boxes as the shard stores them.
struct StoredRecord {
  std::string path;
  uint16_t variant = 0;
  cv::Mat pixels;
  std::vector<float> boxes;
  std::vector<int32_t> classes;
  std::vector<float> keypoints;  // [B, K, 3]; empty where the dataset has none
};

std::vector<StoredRecord> read_stored(const fs::path& dataset) {
  const DatasetIndex index = read_index(dataset);
  std::vector<StoredRecord> out;
  for (const std::string& file : index.shards.file) {
    h5::File shard = h5::File::open_read(dataset / file);
    const std::vector<int64_t> samples = shard.read<int64_t>(format::kSample);
    const std::vector<uint16_t> variants = shard.read<uint16_t>(format::kVariant);
    const std::vector<int64_t> offsets = shard.read<int64_t>(format::kBoxOffsets);
    const std::vector<float> boxes =
        shard.read_shaped<float>(format::kBoxes, {static_cast<uint64_t>(offsets.back()), 4});
    const std::vector<int32_t> classes = shard.read<int32_t>(format::kBoxClass);
    const std::vector<uint8_t> pixels = shard.read_shaped<uint8_t>(
        format::kImages, {samples.size(), index.height, index.width, index.channels});
    const std::size_t k = index.num_keypoints();
    const std::vector<float> keypoints =
        k == 0 ? std::vector<float>{}
               : shard.read_shaped<float>(format::kKeypoints,
                                          {static_cast<uint64_t>(offsets.back()), k, 3});
    for (std::size_t r = 0; r < samples.size(); ++r) {
      StoredRecord record;
      record.path = index.sample_path[static_cast<std::size_t>(samples[r])];
      record.variant = variants[r];
      record.pixels =
          cv::Mat(static_cast<int>(index.height), static_cast<int>(index.width), CV_8UC3,
                  const_cast<uint8_t*>(pixels.data()) + r * index.record_bytes())
              .clone();
      const auto first = static_cast<std::size_t>(offsets[r]);
      const auto last = static_cast<std::size_t>(offsets[r + 1]);
      record.boxes.assign(boxes.begin() + static_cast<std::ptrdiff_t>(first * 4),
                          boxes.begin() + static_cast<std::ptrdiff_t>(last * 4));
      record.classes.assign(classes.begin() + static_cast<std::ptrdiff_t>(first),
                            classes.begin() + static_cast<std::ptrdiff_t>(last));
      if (k > 0) {
        record.keypoints.assign(keypoints.begin() + static_cast<std::ptrdiff_t>(first * k * 3),
                                keypoints.begin() + static_cast<std::ptrdiff_t>(last * k * 3));
      }
      out.push_back(std::move(record));
    }
  }
  return out;
}

// The bounding rectangle of the record's bright pixels, in continuous
// coordinates, and whether each bright pixel lies in one of `boxes`
// (grown by `slack` pixels).
bool bright_pixels_inside(const StoredRecord& record, float slack) {
  cv::Mat gray;
  cv::cvtColor(record.pixels, gray, cv::COLOR_RGB2GRAY);
  for (int y = 0; y < gray.rows; ++y) {
    for (int x = 0; x < gray.cols; ++x) {
      if (gray.at<uint8_t>(y, x) < 160) continue;
      bool inside = false;
      for (std::size_t b = 0; b < record.boxes.size() / 4; ++b) {
        const float* box = record.boxes.data() + b * 4;
        const float cx = static_cast<float>(x) + 0.5F, cy = static_cast<float>(y) + 0.5F;
        inside = inside || (cx >= box[0] - slack && cx <= box[2] + slack && cy >= box[1] - slack &&
                            cy <= box[3] + slack);
      }
      if (!inside) return false;
    }
  }
  return true;
}

class ConvertBoxesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_pictures(src_ / "c");
    for (const Picture& p : pictures()) {
      if (p.objects.empty()) continue;  // d.png: no label file, no objects
      std::string lines;
      for (std::size_t i = 0; i < p.objects.size(); ++i)
        lines += yolo_line(p.classes[i], p.objects[i]);
      write_bytes(src_ / "c" / (p.name.substr(0, 1) + ".txt"), lines);
    }
    write_bytes(src_ / "classes.txt", "cat\ndog\n");
  }

  CommandResult convert(const fs::path& out, const std::string& args,
                        const std::string& size = "40x30") {
    return run_imgpack("convert " + q(src_) + " " + q(out) + " --size " + size + " --quiet " +
                       args);
  }

  TempDir dir_;
  fs::path src_ = dir_.path() / "src";
};

TEST_F(ConvertBoxesTest, YoloBoxesFollowEveryVariantsGeometry) {
  const fs::path out = dir_.path() / "out";
  CommandResult r = convert(out,
                            "--yolo --variants 4 --augment "
                            "'hflip,vflip,rotate=30,zoom=0.8:1.2,shift=0.1,fill=constant' "
                            "--box-min-visible 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("fill=reflect"), std::string::npos) << r.err;
  // The default fill mirrors objects into what the warp uncovers, without
  // boxes: said on stderr.
  CommandResult mirrored =
      convert(dir_.path() / "mirrored", "--yolo --variants 2 --augment rotate=30");
  ASSERT_EQ(mirrored.exit_code, 0) << mirrored.err;
  EXPECT_NE(mirrored.err.find("warning: --augment 'rotate=30' fills"), std::string::npos)
      << mirrored.err;
  // An append makes the same variants of its new images, and says so too.
  const fs::path more = dir_.path() / "more";
  fs::create_directories(more / "c");
  fs::copy(src_ / "c" / "a.png", more / "c" / "new.png");
  fs::copy(src_ / "c" / "a.txt", more / "c" / "new.txt");
  fs::copy(src_ / "classes.txt", more / "classes.txt");
  CommandResult appended =
      run_imgpack("convert " + q(more) + " " + q(dir_.path() / "mirrored") + " --append --quiet");
  ASSERT_EQ(appended.exit_code, 0) << appended.err;
  EXPECT_NE(appended.err.find("warning: --augment 'rotate=30' fills"), std::string::npos)
      << appended.err;
  const DatasetIndex index = read_index(out);
  EXPECT_TRUE(index.boxes);
  EXPECT_EQ(index.box_class_names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(index.box_min_visible, 0.0);
  const std::vector<StoredRecord> records = read_stored(out);
  ASSERT_EQ(records.size(), 16u);
  std::size_t boxes = 0;
  for (const StoredRecord& record : records) {
    SCOPED_TRACE(record.path + " variant " + std::to_string(record.variant));
    const auto& picture =
        *std::find_if(pictures().begin(), pictures().end(),
                      [&](const Picture& p) { return "c/" + p.name == record.path; });
    if (record.variant == 0) {
      // The plain resize halves every coordinate.
      ASSERT_EQ(record.boxes.size(), picture.objects.size() * 4);
      for (std::size_t b = 0; b < picture.objects.size(); ++b) {
        const cv::Rect& o = picture.objects[b];
        EXPECT_NEAR(record.boxes[b * 4 + 0], o.x / 2.0, 1e-4);
        EXPECT_NEAR(record.boxes[b * 4 + 1], o.y / 2.0, 1e-4);
        EXPECT_NEAR(record.boxes[b * 4 + 2], (o.x + o.width) / 2.0, 1e-4);
        EXPECT_NEAR(record.boxes[b * 4 + 3], (o.y + o.height) / 2.0, 1e-4);
        EXPECT_EQ(record.classes[b], picture.classes[b]);
      }
    }
    // Every variant: the white pixels lie in the boxes (a pixel of slack
    // for the bilinear edge), and each box is not much larger than its
    // white area's bounding rectangle (rotation makes it larger by design:
    // the rotated rectangle's corners are its corners).
    EXPECT_TRUE(bright_pixels_inside(record, 1.0F));
    for (std::size_t b = 0; b < record.boxes.size() / 4; ++b) {
      const float* box = record.boxes.data() + b * 4;
      EXPECT_GE(box[0], 0);
      EXPECT_LE(box[2], 40);
      EXPECT_GE(box[1], 0);
      EXPECT_LE(box[3], 30);
      cv::Mat gray;
      cv::cvtColor(record.pixels, gray, cv::COLOR_RGB2GRAY);
      const cv::Rect inner(static_cast<int>(std::ceil(box[0])), static_cast<int>(std::ceil(box[1])),
                           std::max(0, static_cast<int>(box[2] - std::ceil(box[0]))),
                           std::max(0, static_cast<int>(box[3] - std::ceil(box[1]))));
      if (inner.area() == 0) continue;
      // Some white inside every kept box.
      EXPECT_GT(cv::countNonZero(gray(inner) > 160), 0);
      ++boxes;
    }
  }
  EXPECT_GT(boxes, 12u);
  std::size_t boxes_in_all = 0;
  for (const StoredRecord& record : records) boxes_in_all += record.classes.size();

  r = run_imgpack("verify " + q(out) + " --quiet");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = run_imgpack("inspect " + q(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // a: 1 dog, b: 1 cat and 1 dog, c: 1 cat, d: none; 4 variants each.
  EXPECT_NE(r.out.find("boxes       2 classes, kept where 0 of a box stays inside; "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("1 of 4 images without any"), std::string::npos) << r.out;
  r = run_imgpack("inspect " + q(out) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["boxes"]["classes"][0]["name"], "cat");
  EXPECT_EQ(j["boxes"]["images_without"], 1);
  uint64_t counted = 0;
  for (const auto& c : j["boxes"]["classes"]) counted += c["count"].get<uint64_t>();
  EXPECT_EQ(counted, j["boxes"]["boxes"].get<uint64_t>());
  EXPECT_EQ(j["boxes"]["boxes"].get<uint64_t>(), boxes_in_all);
}

TEST_F(ConvertBoxesTest, ACentreCropDropsBoxesMostlyCutAway) {
  const fs::path out = dir_.path() / "out";
  // 80 x 60 to 30 x 30 crop: scaled to 40 x 30, columns 5..35 kept. b.png's
  // first box (4..20 -> 2..10 -> -3..5) keeps 5/8 of its width; the default
  // 0.3 keeps it, 0.7 drops it.
  ASSERT_EQ(convert(out, "--yolo", "30").exit_code, 0);
  ASSERT_EQ(convert(dir_.path() / "strict", "--yolo --box-min-visible 0.7", "30").exit_code, 0);
  for (const auto& [dataset, kept] : {std::pair{out, 2u}, std::pair{dir_.path() / "strict", 1u}}) {
    for (const StoredRecord& record : read_stored(dataset)) {
      if (record.path != "c/b.png") continue;
      ASSERT_EQ(record.boxes.size(), kept * 4) << dataset;
      if (kept == 2) {
        EXPECT_EQ(record.boxes[0], 0.0F);
        EXPECT_NEAR(record.boxes[2], 5.0, 1e-4);
      }
    }
  }
}

TEST_F(ConvertBoxesTest, BadLabelFilesSkipTheirImageWithTheReason) {
  write_bytes(src_ / "c/c.txt", "0 0.5 0.5 0.2\n");      // a value short
  write_bytes(src_ / "c/a.txt", "7 0.5 0.5 0.2 0.2\n");  // class 7 of 2
  const fs::path out = dir_.path() / "out";
  CommandResult r = convert(out, "--yolo --max-skipped 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(test::read_bytes(out / "report.json"));
  ASSERT_EQ(report["skipped"].size(), 2u) << report.dump();
  for (const auto& skipped : report["skipped"]) {
    const std::string reason = skipped["reason"];
    const std::string label = skipped["path"] == "c/a.png" ? "a.txt" : "c.txt";
    EXPECT_NE(reason.find(label), std::string::npos) << reason;
    EXPECT_NE(reason.find(":1"), std::string::npos) << reason;  // the line
  }
  EXPECT_EQ(read_index(out).num_samples(), 2u);
}

// The options that say what to do with boxes need boxes: given alone they
// would change nothing, and are refused as --yolo-names is without --yolo.
TEST_F(ConvertBoxesTest, BoxOptionsWithoutBoxesAreRefused) {
  const fs::path out = dir_.path() / "out";
  for (const std::string& args :
       std::vector<std::string>{"--box-min-visible 0.9", "--keypoint-flip-map a:b",
                                "--yolo-names " + q(src_ / "classes.txt")}) {
    const CommandResult r = convert(out, args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_NE(r.err.find("--yolo"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out)) << args;
  }
  const CommandResult r = convert(out, "--yolo --keypoint-flip-map ,,");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--keypoint-flip-map ',,': names no pair"), std::string::npos) << r.err;
}

TEST_F(ConvertBoxesTest, CocoBoxesCrowdAndKeypoints) {
  // Categories out of id order; a keypointed person; image d.png listed
  // with the wrong size; an image the file does not list is skipped.
  nlohmann::json coco;
  coco["categories"] = {{{"id", 7}, {"name", "person"}, {"keypoints", {"left_eye", "right_eye"}}},
                        {{"id", 3}, {"name", "ball"}}};
  coco["images"] = {{{"id", 1}, {"file_name", "c/a.png"}, {"width", 80}, {"height", 60}},
                    {{"id", 2}, {"file_name", "b.png"}, {"width", 80}, {"height", 60}},
                    {{"id", 4}, {"file_name", "c/d.png"}, {"width", 60}, {"height", 80}}};
  coco["annotations"] = {
      {{"id", 10},
       {"image_id", 1},
       {"category_id", 7},
       {"bbox", {20, 15, 30, 25}},
       {"iscrowd", 0},
       {"keypoints", {30, 20, 2, 40, 20, 1}}},
      {{"id", 11}, {"image_id", 2}, {"category_id", 3}, {"bbox", {4, 6, 16, 12}}, {"iscrowd", 1}},
      // Wholly outside its 80 x 60 image: left out, and said for the image.
      {{"id", 12}, {"image_id", 1}, {"category_id", 3}, {"bbox", {90, 10, 5, 5}}},
  };
  write_bytes(dir_.path() / "coco.json", coco.dump());
  const fs::path out = dir_.path() / "out";
  CommandResult r = convert(out, "--coco " + q(dir_.path() / "coco.json") +
                                     " --resize stretch --max-skipped 2 --variants 2 --augment "
                                     "hflip=1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const DatasetIndex index = read_index(out);
  EXPECT_EQ(index.box_class_names, (std::vector<std::string>{"ball", "person"}));
  EXPECT_EQ(index.keypoint_names, (std::vector<std::string>{"left_eye", "right_eye"}));
  EXPECT_EQ(index.keypoint_flip, (std::vector<int32_t>{1, 0}));
  const nlohmann::json report = nlohmann::json::parse(test::read_bytes(out / "report.json"));
  ASSERT_EQ(report["skipped"].size(), 2u) << report.dump();
  for (const auto& skipped : report["skipped"]) {
    const std::string reason = skipped["reason"];
    if (skipped["path"] == "c/c.png") {
      EXPECT_NE(reason.find("coco.json"), std::string::npos) << reason;
    } else {
      EXPECT_EQ(skipped["path"], "c/d.png");
      EXPECT_NE(reason.find("60x80"), std::string::npos) << reason;
    }
  }
  ASSERT_EQ(report["objects_left_out"].size(), 1u) << report.dump();
  EXPECT_EQ(report["objects_left_out"][0]["path"], "c/a.png");
  EXPECT_EQ(report["objects_left_out"][0]["reason"],
            "1 object with no area inside the image (an empty box, or one wholly outside it) "
            "left out; the first: " +
                (dir_.path() / "coco.json").string() + ": annotations[2] (of c/a.png)");
  // The keypoints through the mirror of variant 1: x -> 40 - x, pairs swapped.
  h5::File shard = h5::File::open_read(out / index.shards.file[0]);
  const std::vector<int64_t> samples = shard.read<int64_t>(format::kSample);
  const std::vector<uint16_t> variants = shard.read<uint16_t>(format::kVariant);
  const std::vector<int64_t> offsets = shard.read<int64_t>(format::kBoxOffsets);
  const uint64_t boxes = static_cast<uint64_t>(offsets.back());
  const std::vector<float> keypoints = shard.read_shaped<float>(format::kKeypoints, {boxes, 2, 3});
  const std::vector<uint8_t> crowd = shard.read<uint8_t>(format::kBoxCrowd);
  std::size_t checked = 0;
  for (std::size_t row = 0; row < samples.size(); ++row) {
    const std::string& path = index.sample_path[static_cast<std::size_t>(samples[row])];
    const auto first = static_cast<std::size_t>(offsets[row]);
    ASSERT_EQ(offsets[row + 1] - offsets[row], 1) << path;
    if (path == "c/b.png") {
      EXPECT_EQ(crowd[first], 1);
      continue;
    }
    const float* k = keypoints.data() + first * 6;
    const std::vector<float> want = variants[row] == 0 ? std::vector<float>{15, 10, 2, 20, 10, 1}
                                                       : std::vector<float>{20, 10, 1, 25, 10, 2};
    for (std::size_t i = 0; i < 6; ++i) EXPECT_NEAR(k[i], want[i], 1e-4) << i;
    ++checked;
  }
  EXPECT_EQ(checked, 2u);
}

// An append lists only the new inputs, but the dataset's classes and
// keypoints hold: YOLO ids without a names file stay the dataset's (a new
// image may use some of them or have no objects), and COCO images named by
// a bare file name match the samples the dataset holds, not missing ones.
TEST_F(ConvertBoxesTest, AnAppendKeepsTheDatasetsClassesAndFindsItsCocoImages) {
  fs::remove(src_ / "classes.txt");
  const fs::path pose = dir_.path() / "pose";
  fs::create_directories(pose / "c");
  const cv::Rect person(20, 15, 30, 25);
  cv::Mat image(60, 80, CV_8UC3, cv::Scalar(0, 0, 0));
  image(person).setTo(cv::Scalar(255, 255, 255));
  for (const char* name : {"a", "b", "c", "e"}) {
    test::write_image(pose / "c" / (std::string(name) + ".png"), image);
  }
  const std::string line = yolo_line(2, person);
  write_bytes(pose / "c" / "a.txt", line.substr(0, line.size() - 1) + " 0.4 0.3 2\n");
  write_bytes(pose / "c" / "b.txt", "0" + line.substr(1, line.size() - 2) + " 0.5 0.3 1\n");
  const fs::path out = dir_.path() / "out";
  CommandResult r = run_imgpack("convert " + q(pose) + " " + q(out) + " --yolo --size 40x30 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_index(out).box_class_names, (std::vector<std::string>{"0", "1", "2"}));
  // c.png: class 0 only; e.png: no objects at all.
  write_bytes(pose / "c" / "c.txt", "0" + line.substr(1, line.size() - 2) + " 0.5 0.3 2\n");
  test::write_image(pose / "c" / "d.png", image);
  r = run_imgpack("convert " + q(pose) + " " + q(out) + " --append -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_index(out).num_samples(), 5u);
  EXPECT_EQ(read_index(out).keypoint_names, (std::vector<std::string>{"0"}));

  // COCO by bare file name, the images in a folder below SRC.
  const fs::path coco_src = dir_.path() / "coco-src";
  fs::create_directories(coco_src / "sub");
  for (const char* name : {"a.png", "b.png"}) fs::copy(src_ / "c" / name, coco_src / "sub" / name);
  nlohmann::json coco;
  coco["categories"] = {{{"id", 1}, {"name", "thing"}}};
  coco["images"] = nlohmann::json::array();
  coco["annotations"] = nlohmann::json::array();
  for (int i = 0; i < 3; ++i) {
    const Picture& p = pictures()[static_cast<std::size_t>(i)];
    coco["images"].push_back({{"id", i + 1}, {"file_name", p.name}, {"width", 80}, {"height", 60}});
    const cv::Rect& r0 = p.objects[0];
    coco["annotations"].push_back({{"id", 10 + i},
                                   {"image_id", i + 1},
                                   {"category_id", 1},
                                   {"bbox", {r0.x, r0.y, r0.width, r0.height}}});
  }
  nlohmann::json first = coco;
  first["images"].erase(2);
  first["annotations"].erase(2);
  write_bytes(dir_.path() / "first.json", first.dump());
  write_bytes(dir_.path() / "all.json", coco.dump());
  const fs::path coco_out = dir_.path() / "coco-out";
  r = run_imgpack("convert " + q(coco_src) + " " + q(coco_out) + " --coco " +
                  q(dir_.path() / "first.json") + " --labels none --size 40x30 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fs::copy(src_ / "c" / "c.png", coco_src / "sub" / "c.png");
  const std::string append = "convert " + q(coco_src) + " " + q(coco_out) + " --append --coco " +
                             q(dir_.path() / "all.json") + " -q";
  r = run_imgpack(append);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::size_t found = 0;
  for (const StoredRecord& record : read_stored(coco_out)) {
    if (record.path != "sub/c.png") continue;
    ASSERT_EQ(record.boxes.size(), 4u);
    EXPECT_NEAR(record.boxes[0], 15, 1e-3);  // 30 of 80 pixels, to 40
    ++found;
  }
  EXPECT_EQ(found, 1u);
  // A new file sharing a held sample's file name makes the name name neither.
  fs::create_directories(coco_src / "other");
  fs::copy(src_ / "c" / "a.png", coco_src / "other" / "a.png");
  r = run_imgpack(append);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("so it names none of them"), std::string::npos) << r.err;
}

// inspect counts the boxes of the images a dataset still holds: removed
// ones are left out, as of every other count.
TEST_F(ConvertBoxesTest, InspectLeavesRemovedImagesOutOfTheBoxCounts) {
  const fs::path out = dir_.path() / "out";
  ASSERT_EQ(convert(out, "--yolo").exit_code, 0);
  auto counts = [&] {
    CommandResult r = run_imgpack("inspect " + q(out) + " --json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["boxes"];
  };
  EXPECT_EQ(counts()["boxes"], 4);  // a: 1, b: 2, c: 1, d: none
  write_bytes(dir_.path() / "gone.txt", "c/b.png\n");
  CommandResult r = run_imgpack("remove " + q(out) + " --paths " + q(dir_.path() / "gone.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json after = counts();
  EXPECT_EQ(after["boxes"], 2);
  EXPECT_EQ(after["images_without"], 1);
  EXPECT_EQ(after["classes"][0]["count"], 1);  // cat: c's; b's is gone
  EXPECT_EQ(after["classes"][1]["count"], 1);  // dog: a's
}

TEST_F(ConvertBoxesTest, VerifyFindsADamagedBoxAndPartsMergeToTheSameBoxes) {
  // A box without area in a.png (part 0) and in c.png (part 1): left out,
  // and the merged report lists both images as the whole conversion's does.
  for (const char* label : {"a.txt", "c.txt"}) {
    write_bytes(src_ / "c" / label, test::read_bytes(src_ / "c" / label) + "0 0.5 0.5 0 0.2\n");
  }
  const fs::path out = dir_.path() / "out";
  ASSERT_EQ(convert(out, "--yolo --order sorted").exit_code, 0);
  const fs::path parts = dir_.path() / "parts";
  for (int part = 0; part < 2; ++part) {
    ASSERT_EQ(
        convert(parts, "--yolo --order sorted --part " + std::to_string(part) + "/2").exit_code, 0);
  }
  CommandResult r = run_imgpack("merge " + q(parts) + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto by_path = [](const std::vector<StoredRecord>& records) {
    std::map<std::string, std::vector<float>> boxes;
    for (const StoredRecord& record : records) boxes[record.path] = record.boxes;
    return boxes;
  };
  EXPECT_EQ(by_path(read_stored(parts)), by_path(read_stored(out)));
  const nlohmann::json whole = nlohmann::json::parse(test::read_bytes(out / "report.json"));
  const nlohmann::json merged = nlohmann::json::parse(test::read_bytes(parts / "report.json"));
  ASSERT_EQ(whole["objects_left_out"].size(), 2u) << whole.dump();
  EXPECT_EQ(whole["objects_left_out"][0]["path"], "c/a.png");
  EXPECT_NE(whole["objects_left_out"][1]["reason"].get<std::string>().find("c.txt:2"),
            std::string::npos)
      << whole.dump();
  EXPECT_EQ(merged["objects_left_out"], whole["objects_left_out"]);

  // One flipped bit in a box coordinate.
  const fs::path shard = out / read_index(out).shards.file[0];
  const uint64_t offset = test::dataset_offset(shard, format::kBoxes);
  std::string bytes = test::read_bytes(shard);
  bytes[offset + 1] = static_cast<char>(bytes[offset + 1] ^ 0x10);
  write_bytes(shard, bytes);
  r = run_imgpack("verify " + q(out));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("do not match their checksum"), std::string::npos)
      << r.out << r.err;
}

// A COCO skeleton through the ways a dataset is made besides one
// conversion: parts merge to the whole conversion's skeleton and keypoints;
// parts made with different skeletons do not merge; an append whose
// annotations give another skeleton is refused before anything changes,
// and one whose annotations give none keeps the dataset's.
TEST_F(ConvertBoxesTest, ASkeletonHoldsThroughPartsMergeAndAppend) {
  auto coco_file = [&](const fs::path& file, const nlohmann::json& skeleton,
                       const std::vector<std::string>& names) {
    nlohmann::json person = {
        {"id", 1}, {"name", "person"}, {"keypoints", {"left_eye", "right_eye", "nose"}}};
    if (!skeleton.is_null()) person["skeleton"] = skeleton;
    nlohmann::json coco;
    coco["categories"] = nlohmann::json::array({person});
    coco["images"] = nlohmann::json::array();
    coco["annotations"] = nlohmann::json::array();
    for (std::size_t i = 0; i < names.size(); ++i) {
      const int id = static_cast<int>(i) + 1;
      coco["images"].push_back(
          {{"id", id}, {"file_name", "c/" + names[i]}, {"width", 80}, {"height", 60}});
      if (names[i] == "d.png") continue;  // an image without objects
      coco["annotations"].push_back({{"id", 100 + id},
                                     {"image_id", id},
                                     {"category_id", 1},
                                     {"bbox", {20, 10, 40, 30}},
                                     {"keypoints", {30, 20, 2, 50, 20, 2, 40, 30 + id, 1}}});
    }
    write_bytes(file, coco.dump());
    return " --coco " + q(file);
  };
  const std::vector<std::string> held = {"a.png", "b.png", "c.png", "d.png"};
  const nlohmann::json skeleton = {{1, 3}, {2, 3}};
  const std::string options = " --order sorted --variants 2 --augment hflip=1";
  const std::string same = coco_file(dir_.path() / "same.json", skeleton, held) + options;
  const std::string other = coco_file(dir_.path() / "other.json", {{1, 2}}, held) + options;
  const std::vector<int32_t> stored = {0, 2, 1, 2};  // from 0

  const fs::path whole = dir_.path() / "whole";
  ASSERT_EQ(convert(whole, same).exit_code, 0);
  EXPECT_EQ(read_index(whole).keypoint_skeleton, stored);
  const fs::path parts = dir_.path() / "parts";
  for (int part = 0; part < 2; ++part) {
    ASSERT_EQ(convert(parts, same + " --part " + std::to_string(part) + "/2").exit_code, 0);
  }
  CommandResult r = run_imgpack("merge " + q(parts) + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_index(parts).keypoint_skeleton, stored);
  auto keypoints_by_record = [](const fs::path& dataset) {
    std::map<std::pair<std::string, uint16_t>, std::vector<float>> keypoints;
    for (const StoredRecord& record : read_stored(dataset)) {
      keypoints[{record.path, record.variant}] = record.keypoints;
    }
    return keypoints;
  };
  const auto want = keypoints_by_record(whole);
  ASSERT_EQ(want.size(), 8u);
  EXPECT_EQ(keypoints_by_record(parts), want);

  // Part 1 from annotations with another skeleton: its own fingerprint.
  const fs::path mixed = dir_.path() / "mixed";
  ASSERT_EQ(convert(mixed, same + " --part 0/2").exit_code, 0);
  ASSERT_EQ(convert(mixed, other + " --part 1/2").exit_code, 0);
  const auto before_merge = test::directory_snapshot(mixed);
  r = run_imgpack("merge " + q(mixed) + " --quiet");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("was made with other options"), std::string::npos) << r.err;
  EXPECT_EQ(test::directory_snapshot(mixed), before_merge);

  // An append of e.png whose annotations join other keypoints: refused,
  // naming the source, the dataset as it was.
  fs::copy(src_ / "c" / "a.png", src_ / "c" / "e.png");
  std::vector<std::string> grown = held;
  grown.emplace_back("e.png");
  const std::string append = "convert " + q(src_) + " " + q(whole) + " --append -q";
  const auto before_append = test::directory_snapshot(whole);
  r = run_imgpack(append + coco_file(dir_.path() / "grown-other.json", {{1, 2}}, grown));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(src_.string() + ": the keypoints' skeleton is not the dataset's"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(test::directory_snapshot(whole), before_append);

  // Annotations without a skeleton: the dataset keeps its own, and e.png's
  // keypoints are stored as a.png's are (the same picture, one more in y).
  r = run_imgpack(append + coco_file(dir_.path() / "grown-none.json", nullptr, grown));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_index(whole).keypoint_skeleton, stored);
  const auto grown_keypoints = keypoints_by_record(whole);
  ASSERT_EQ(grown_keypoints.size(), 10u);
  const std::vector<float>& a = grown_keypoints.at({"c/a.png", 0});
  const std::vector<float>& added = grown_keypoints.at({"c/e.png", 0});
  ASSERT_EQ(added.size(), 9u);
  ASSERT_EQ(a.size(), 9u);
  for (std::size_t i = 0; i < 9; ++i) {
    EXPECT_NEAR(added[i] - a[i], i == 7 ? 2.0F : 0.0F, 1e-4) << i;  // nose y: 40 px -> 30 rows
  }
}

// Killed while writing, then resumed: the same bytes as a run never killed;
// a label file edited before the resume (new content, new boxes) has its
// shards converted again, so the result is that of a fresh run over the
// edited labels.
TEST_F(ConvertBoxesTest, AKilledConversionResumesToTheSameBoxes) {
  const std::string args = "--yolo --variants 4 --augment hflip,rotate=20 --shard-size 16K";
  ASSERT_EQ(convert(dir_.path() / "whole", args).exit_code, 0);
  ASSERT_GE(read_index(dir_.path() / "whole").num_shards(), 3u);
  const std::string crashed = q(dir_.path() / "crashed");
  CommandResult r =
      test::run_command("IMGPACK_CRASH_AT=record:9 " + q(test::imgpack_cli()) + " convert " +
                        q(src_) + " " + crashed + " --size 40x30 --quiet " + args);
  ASSERT_EQ(r.exit_code, 128 + 9) << r.err;
  r = convert(dir_.path() / "crashed", args + " --resume --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(nlohmann::json::parse(r.out)["resumed_shards"].get<int>(), 0);
  test::expect_same_dataset_bytes(dir_.path() / "crashed", dir_.path() / "whole");

  r = test::run_command("IMGPACK_CRASH_AT=record:9 " + q(test::imgpack_cli()) + " convert " +
                        q(src_) + " " + q(dir_.path() / "edited") + " --size 40x30 --quiet " +
                        args);
  ASSERT_EQ(r.exit_code, 128 + 9) << r.err;
  for (const Picture& p : pictures()) {
    if (p.objects.empty()) continue;
    // Every object one pixel wider: new boxes, same images.
    std::string lines;
    for (std::size_t i = 0; i < p.objects.size(); ++i) {
      cv::Rect wider = p.objects[i];
      ++wider.width;
      lines += yolo_line(p.classes[i], wider);
    }
    write_bytes(src_ / "c" / (p.name.substr(0, 1) + ".txt"), lines);
  }
  ASSERT_EQ(convert(dir_.path() / "edited", args + " --resume").exit_code, 0);
  ASSERT_EQ(convert(dir_.path() / "fresh", args).exit_code, 0);
  test::expect_same_dataset_bytes(dir_.path() / "edited", dir_.path() / "fresh");
  auto first_box = [](const fs::path& dataset) {
    for (const StoredRecord& record : read_stored(dataset)) {
      if (record.path == "c/a.png" && record.variant == 0) return record.boxes;
    }
    return std::vector<float>{};
  };
  EXPECT_NEAR(first_box(dir_.path() / "edited")[2] - first_box(dir_.path() / "whole")[2], 0.5,
              1e-4);
}

// sample-data --boxes draws each shape with its exact box; converted with
// its masks too, every variant's box is within a pixel of its mask's extent
// (the mask is the same hard-edged shape, nearest-neighbour through the same
// warp), zoomed, shifted and mirrored.
TEST(SampleDataBoxesTest, BoxesMatchTheirMasksInEveryVariant) {
  TempDir dir;
  const fs::path src = dir.path() / "src";
  CommandResult r = run_imgpack("sample-data " + q(src) +
                                " --classes 3 --per-class 4 --size 96x72 --masks --boxes --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::read_bytes(src / "classes.txt"), "circle\nsquare\ntriangle\n");
  const fs::path out = dir.path() / "out";
  r = run_imgpack("convert " + q(src) + " " + q(out) + " --masks " + q(src / "masks") +
                  " --yolo --yolo-keypoints left,right --size 64x48 --resize stretch "
                  "--variants 3 --augment 'hflip,zoom=0.8:1.2,shift=0.1,fill=constant' --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const DatasetIndex index = read_index(out);
  EXPECT_EQ(index.keypoint_names, (std::vector<std::string>{"left", "right"}));
  EXPECT_EQ(index.keypoint_flip, (std::vector<int32_t>{1, 0}));
  std::size_t compared = 0;
  for (const std::string& file : index.shards.file) {
    h5::File shard = h5::File::open_read(out / file);
    const uint64_t n = shard.length(format::kSample);
    const std::vector<uint8_t> masks =
        shard.read_shaped<uint8_t>(format::kMasks, {n, index.height, index.width});
    const std::vector<int64_t> offsets = shard.read<int64_t>(format::kBoxOffsets);
    const std::vector<float> boxes =
        shard.read_shaped<float>(format::kBoxes, {static_cast<uint64_t>(offsets.back()), 4});
    for (uint64_t row = 0; row < n; ++row) {
      const cv::Mat mask(48, 64, CV_8UC1,
                         const_cast<uint8_t*>(masks.data()) + row * index.mask_bytes());
      const cv::Mat shape = (mask != 0) & (mask != 255);
      if (offsets[row + 1] == offsets[row]) {
        // Dropped: less than 0.3 of it stayed inside, so little of it shows.
        EXPECT_LT(cv::countNonZero(shape), 64 * 48 / 4) << file << " row " << row;
        continue;
      }
      ASSERT_EQ(offsets[row + 1] - offsets[row], 1);
      // The mask is sampled (nearest neighbour at each output pixel's
      // centre): a mask pixel shows the shape where its centre does, so the
      // exact box holds every mask pixel's centre (half a pixel in from its
      // edges); and when the record shrinks the source, the shape's edge rows
      // and columns may fall between the samples, up to a source pixel short
      // of its true edge on each side, so the box is at most that much larger.
      const cv::Rect extent = cv::boundingRect(shape);
      const float* box = boxes.data() + offsets[row] * 4;
      const std::string where = file + " row " + std::to_string(row);
      EXPECT_LE(box[0], extent.x + 0.51) << where;
      EXPECT_LE(box[1], extent.y + 0.51) << where;
      EXPECT_GE(box[2], extent.x + extent.width - 0.51) << where;
      EXPECT_GE(box[3], extent.y + extent.height - 0.51) << where;
      EXPECT_NEAR(box[0], extent.x, 1.5) << where;
      EXPECT_NEAR(box[1], extent.y, 1.5) << where;
      EXPECT_NEAR(box[2], extent.x + extent.width, 1.5) << where;
      EXPECT_NEAR(box[3], extent.y + extent.height, 1.5) << where;
      ++compared;
    }
  }
  EXPECT_GT(compared, 30u);
  r = run_imgpack("preview " + q(out) + " --out " + q(dir.path() / "sheet.png"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// Boxes and keypoints against the geometry the pixels show. Each 160 x 120
// image carries three discs of pure red, green and blue whose centres are a
// person's keypoints (left_eye, right_eye, nose). A record's pixels show
// where the discs went, and their three centres fix the affine map that the
// record's pixels went through: measured from the pixels, not taken from
// the converter. Through that map each annotated box's corners give the
// record's analytic box: their bounding box, clipped to the frame, kept when
// at least the default 0.3 of it stays inside.
struct MarkedImage {
  std::string name;
  std::array<cv::Point2d, 3> discs;            // continuous centres: red, green, blue
  std::array<std::array<double, 4>, 3> boxes;  // COCO bbox: person, ball, cup
};

constexpr double kDiscRadius = 6;
constexpr std::array<int, 3> kVisibility = {2, 1, 2};  // as annotated, disc by disc

std::vector<MarkedImage> marked_images() {
  std::vector<MarkedImage> all;
  for (int i = 0; i < 6; ++i) {
    const double dx = (i % 3 - 1) * 8.0, dy = (i / 3 == 0 ? -5.0 : 5.0);
    MarkedImage m;
    m.name = "m" + std::to_string(i) + ".png";
    m.discs = {cv::Point2d(60 + dx, 50 + dy), cv::Point2d(100 + dx, 50 + dy),
               cv::Point2d(80 + dx, 76 + dy)};
    m.boxes = {{{45 + dx, 35 + dy, 70, 55},   // the person, around its keypoints
                {135, 8.0 + 14 * i, 25, 20},  // a ball at the right edge
                {0, 0, 18 + 4.0 * i, 14}}};   // a cup in the top left corner
    all.push_back(m);
  }
  return all;
}

// Writes the images under `src` and their COCO file, returns the file.
fs::path write_marked_images(const fs::path& src) {
  nlohmann::json coco;
  coco["categories"] = {{{"id", 1},
                         {"name", "person"},
                         {"keypoints", {"left_eye", "right_eye", "nose"}},
                         {"skeleton", {{1, 2}, {1, 3}, {2, 3}}}},
                        {{"id", 2}, {"name", "ball"}},
                        {{"id", 3}, {"name", "cup"}}};
  coco["images"] = nlohmann::json::array();
  coco["annotations"] = nlohmann::json::array();
  int id = 0;
  for (const MarkedImage& m : marked_images()) {
    cv::Mat image(120, 160, CV_8UC3, cv::Scalar(0, 0, 0));
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < image.rows; ++y) {
        for (int x = 0; x < image.cols; ++x) {
          if (std::hypot(x + 0.5 - m.discs[c].x, y + 0.5 - m.discs[c].y) <= kDiscRadius) {
            image.at<cv::Vec3b>(y, x)[c] = 255;
          }
        }
      }
    }
    test::write_image(src / m.name, image);
    const int image_id = ++id;
    coco["images"].push_back(
        {{"id", image_id}, {"file_name", m.name}, {"width", 160}, {"height", 120}});
    nlohmann::json keypoints = nlohmann::json::array();
    for (int c = 0; c < 3; ++c) {
      keypoints.insert(keypoints.end(), {m.discs[c].x, m.discs[c].y, kVisibility[c]});
    }
    for (int b = 0; b < 3; ++b) {
      nlohmann::json annotation = {{"id", 100 + id * 3 + b},
                                   {"image_id", image_id},
                                   {"category_id", b + 1},
                                   {"bbox", m.boxes[b]},
                                   {"iscrowd", 0}};
      if (b == 0) annotation["keypoints"] = keypoints;
      coco["annotations"].push_back(annotation);
    }
  }
  fs::path file = src.parent_path() / "marked.json";
  write_bytes(file, coco.dump());
  return file;
}

// Where the record shows channel c's disc: the intensity-weighted mean of
// its pixels' centres; nothing where it is not wholly in the frame (some of
// it on the frame's outer rows or columns) or not there at all.
std::optional<cv::Point2d> find_disc(const cv::Mat& rgb, int c) {
  double mass = 0, sx = 0, sy = 0;
  for (int y = 0; y < rgb.rows; ++y) {
    for (int x = 0; x < rgb.cols; ++x) {
      const double v = rgb.at<cv::Vec3b>(y, x)[c];
      if (v == 0) continue;
      if (x == 0 || y == 0 || x == rgb.cols - 1 || y == rgb.rows - 1) return std::nullopt;
      mass += v;
      sx += v * (x + 0.5);
      sy += v * (y + 0.5);
    }
  }
  if (mass == 0) return std::nullopt;
  return cv::Point2d(sx / mass, sy / mass);
}

// A COCO bbox through `map` into a frame of `frame` pixels: the transformed
// corners' bounding box clipped to it, and the share of it inside.
struct AnalyticBox {
  std::array<double, 4> clipped{};
  double share = 0;
};

AnalyticBox analytic_box(const cv::Matx23d& map, const std::array<double, 4>& bbox,
                         cv::Size frame) {
  const double x0 = bbox[0], y0 = bbox[1], x1 = bbox[0] + bbox[2], y1 = bbox[1] + bbox[3];
  const double inf = std::numeric_limits<double>::infinity();
  double a0 = inf, a1 = -inf, b0 = inf, b1 = -inf;
  for (const cv::Point2d& corner :
       {cv::Point2d(x0, y0), cv::Point2d(x1, y0), cv::Point2d(x0, y1), cv::Point2d(x1, y1)}) {
    const cv::Vec2d p = map * cv::Vec3d(corner.x, corner.y, 1);
    a0 = std::min(a0, p[0]);
    a1 = std::max(a1, p[0]);
    b0 = std::min(b0, p[1]);
    b1 = std::max(b1, p[1]);
  }
  AnalyticBox out;
  out.clipped = {
      std::clamp(a0, 0.0, double(frame.width)), std::clamp(b0, 0.0, double(frame.height)),
      std::clamp(a1, 0.0, double(frame.width)), std::clamp(b1, 0.0, double(frame.height))};
  out.share = (out.clipped[2] - out.clipped[0]) * (out.clipped[3] - out.clipped[1]) /
              ((a1 - a0) * (b1 - b0));
  return out;
}

struct AccuracyCounts {
  std::size_t records = 0;   // records read
  std::size_t measured = 0;  // whose three discs were wholly in the frame
  std::size_t mirrored = 0;  // of those, mirrored
  std::size_t boxes = 0;     // boxes compared with their analytic box
  std::size_t dropped = 0;   // boxes the rule dropped, found dropped
  std::size_t keypoints = 0;
  double box_error = 0;       // the largest distance of a box side from the analytic one
  double keypoint_error = 0;  // and of a keypoint from its disc's centre
};

// Every record of `dataset` (frame `frame`) against the analytic boxes and
// keypoints of the map its discs show; what was compared counted in `n`.
void check_against_pixels(const fs::path& dataset, cv::Size frame, AccuracyCounts& n) {
  const std::vector<MarkedImage> images = marked_images();
  const std::array<int, 3> partner = {1, 0, 2};
  for (const StoredRecord& record : read_stored(dataset)) {
    ++n.records;
    const std::string where = record.path + " variant " + std::to_string(record.variant);
    const MarkedImage& image = *std::find_if(
        images.begin(), images.end(), [&](const MarkedImage& m) { return m.name == record.path; });
    std::array<cv::Point2f, 3> from, to;
    bool whole = true;
    for (int c = 0; c < 3; ++c) {
      const std::optional<cv::Point2d> disc = find_disc(record.pixels, c);
      whole = whole && disc.has_value();
      from[c] = image.discs[c];
      if (disc) to[c] = *disc;
    }
    if (!whole) continue;
    ++n.measured;
    const cv::Matx23d map(cv::getAffineTransform(from.data(), to.data()));
    const bool mirror = map(0, 0) * map(1, 1) - map(0, 1) * map(1, 0) < 0;
    n.mirrored += mirror ? 1 : 0;
    ASSERT_EQ(record.keypoints.size(), record.classes.size() * 9) << where;
    for (int b = 0; b < 3; ++b) {
      const AnalyticBox want = analytic_box(map, image.boxes[b], frame);
      const auto row = static_cast<std::size_t>(
          std::find(record.classes.begin(), record.classes.end(), b) - record.classes.begin());
      const bool stored = row < record.classes.size();
      // Where the share is within the measurement's reach of the rule,
      // either answer is right.
      if (std::abs(want.share - 0.3) < 0.03) continue;
      if (want.share < 0.3) {
        EXPECT_FALSE(stored) << where << ": box " << b << " keeps " << want.share;
        ++n.dropped;
        continue;
      }
      ASSERT_TRUE(stored) << where << ": box " << b << " keeps " << want.share;
      for (int i = 0; i < 4; ++i) {
        EXPECT_NEAR(record.boxes[row * 4 + i], want.clipped[i], 1.0) << where << " box " << b;
        n.box_error =
            std::max<double>(n.box_error, std::abs(record.boxes[row * 4 + i] - want.clipped[i]));
      }
      ++n.boxes;
      for (int j = 0; j < 3; ++j) {
        const float* k = record.keypoints.data() + row * 9 + static_cast<std::size_t>(j) * 3;
        if (b != 0) {
          EXPECT_EQ(k[2], 0) << where << " box " << b;  // no keypoints annotated
          continue;
        }
        // Under a mirror, slot j (a left eye, say) shows where its partner went.
        const int disc = mirror ? partner[j] : j;
        EXPECT_NEAR(k[0], to[disc].x, 0.5) << where << " keypoint " << j;
        EXPECT_NEAR(k[1], to[disc].y, 0.5) << where << " keypoint " << j;
        EXPECT_EQ(k[2], kVisibility[disc]) << where << " keypoint " << j;
        n.keypoint_error =
            std::max<double>(n.keypoint_error, std::hypot(k[0] - to[disc].x, k[1] - to[disc].y));
        ++n.keypoints;
      }
    }
  }
}

TEST(ConvertBoxAccuracy, EveryVariantsBoxesAndKeypointsMatchTheMapItsPixelsShow) {
  TempDir dir;
  const fs::path src = dir.path() / "src";
  const fs::path coco = write_marked_images(src);
  struct Case {
    std::string args;
    cv::Size frame;
  };
  const std::string augment =
      " --variants 8 --augment 'hflip,vflip,rotate=30,zoom=0.8:1.2,"
      "shift=0.1,fill=constant'";
  const std::vector<Case> cases = {
      {"--size 160x120" + augment, {160, 120}},
      {"--size 96x96 --resize crop" + augment, {96, 96}},
      {"--size 128x128 --resize pad" + augment, {128, 128}},
      {"--size 120x90 --resize stretch --variants 8 --augment "
       "'hflip,rotate=90,shear=20,crop_scale=0.6:1,fill=constant'",
       {120, 90}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    const fs::path out = dir.path() / ("out" + std::to_string(&c - cases.data()));
    const CommandResult r = run_imgpack("convert " + q(src) + " " + q(out) +
                                        " --labels none --coco " + q(coco) + " --quiet " + c.args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // The category's skeleton, numbered from 0, with its keypoints.
    EXPECT_EQ(read_index(out).keypoint_skeleton, (std::vector<int32_t>{0, 1, 0, 2, 1, 2}));
    AccuracyCounts n;
    check_against_pixels(out, c.frame, n);
    // Seeded draws: every record's discs stay in the frame, about half the
    // records mirror, and the rule both keeps and drops boxes at the edges.
    EXPECT_EQ(n.measured, n.records);
    EXPECT_EQ(n.records, 48u);
    EXPECT_GE(n.mirrored, 12u);
    EXPECT_GE(n.boxes, 80u);
    EXPECT_GE(n.dropped, 5u);
    EXPECT_EQ(n.keypoints, n.measured * 3);
    if (&c == cases.data()) {
      const CommandResult inspect = run_imgpack("inspect " + q(out) + " --json");
      ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
      EXPECT_EQ(nlohmann::json::parse(inspect.out)["boxes"]["keypoint_skeleton"],
                nlohmann::json::parse("[[0, 1], [0, 2], [1, 2]]"));
      const CommandResult text = run_imgpack("inspect " + q(out));
      EXPECT_NE(text.out.find("keypoints   3 per box (left_eye, right_eye, nose), a skeleton of 3 "
                              "lines"),
                std::string::npos)
          << text.out;
    }
    std::printf(
        "%s: %zu records, %zu mirrored, %zu boxes (largest error %.3f px), %zu dropped, "
        "%zu keypoints (largest error %.3f px)\n",
        c.args.c_str(), n.records, n.mirrored, n.boxes, n.box_error, n.dropped, n.keypoints,
        n.keypoint_error);
  }
}

}  // namespace
}  // namespace imgpack
