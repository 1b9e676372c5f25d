#include "inputs/boxes_input.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "imgpack/error.hpp"
#include "inputs/coco_json.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::write_bytes;

// A listing of SRC as a scan makes it: the paths, sorted.
SourceList listing(std::vector<std::string> paths) {
  std::sort(paths.begin(), paths.end());
  SourceList list;
  for (std::string& path : paths) {
    SourceSample sample;
    sample.path = std::move(path);
    list.samples.push_back(std::move(sample));
  }
  return list;
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

void expect_box(const SourceBox& box, float x0, float y0, float x1, float y1, int32_t cls,
                uint8_t crowd = 0) {
  EXPECT_NEAR(box.x0, x0, 1e-6);
  EXPECT_NEAR(box.y0, y0, 1e-6);
  EXPECT_NEAR(box.x1, x1, 1e-6);
  EXPECT_NEAR(box.y1, y1, 1e-6);
  EXPECT_EQ(box.cls, cls);
  EXPECT_EQ(box.crowd, crowd);
}

void expect_floats(const std::vector<float>& actual, const std::vector<float>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], 1e-6) << "value " << i;
  }
}

class CocoBoxes : public ::testing::Test {
 protected:
  BoxOptions options() const {
    BoxOptions o;
    o.coco = coco();
    return o;
  }
  fs::path coco() const { return dir_ / "instances.json"; }
  fs::path src() const { return dir_ / "src"; }
  void write_coco(const std::string& json) const { write_bytes(coco(), json); }
  TempDir dir_;
};

TEST_F(CocoBoxes, CategoriesByIdAreTheClassesAndBoxesAreNormalisedCorners) {
  write_coco(R"({
    "categories": [{"id": 7, "name": "dog"}, {"id": 3, "name": "cat"}],
    "images": [{"id": 1, "file_name": "train/a.jpg", "width": 640, "height": 480}],
    "annotations": [
      {"id": 10, "image_id": 1, "category_id": 7, "bbox": [64, 48, 128, 96], "iscrowd": 0},
      {"id": 11, "image_id": 1, "category_id": 3, "bbox": [0, 0, 320, 240], "iscrowd": 1}
    ]})");
  SourceList list = listing({"train/a.jpg"});
  attach_boxes(list, src(), options());
  EXPECT_TRUE(list.boxes);
  EXPECT_EQ(list.box_class_names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_TRUE(list.keypoint_names.empty());
  EXPECT_TRUE(list.keypoint_flip.empty());
  const SourceSample& a = sample(list, "train/a.jpg");
  EXPECT_EQ(a.box_problem, "");
  EXPECT_EQ(a.box_width, 640u);
  EXPECT_EQ(a.box_height, 480u);
  ASSERT_EQ(a.boxes.size(), 2u);
  expect_box(a.boxes[0], 0.1F, 0.1F, 0.3F, 0.3F, 1);  // file order, dog = class 1
  expect_box(a.boxes[1], 0.0F, 0.0F, 0.5F, 0.5F, 0, 1);
  EXPECT_TRUE(a.keypoints.empty());
}

TEST_F(CocoBoxes, KeypointsAreNormalisedAndFlipFromLeftRightNames) {
  // The person's keypoints come first in the file, but "ball" (id 1) sorts
  // first; its box gets three zero triples. The polygons are ignored.
  write_coco(R"({
    "categories": [
      {"id": 5, "name": "person", "keypoints": ["nose", "left_eye", "right_eye"],
       "skeleton": [[1, 2]]},
      {"id": 1, "name": "ball"}
    ],
    "images": [{"id": 9, "file_name": "p.jpg", "width": 200, "height": 100}],
    "annotations": [
      {"image_id": 9, "category_id": 5, "segmentation": [[1, 2, 3, 4, 5, 6]],
       "bbox": [20, 10, 100, 50], "keypoints": [100, 50, 2, 40, 20, 1, 0, 0, 0]},
      {"image_id": 9, "category_id": 1, "segmentation": {"counts": [1, 2], "size": [100, 200]},
       "bbox": [0, 0, 10, 10]}
    ]})");
  SourceList list = listing({"p.jpg"});
  attach_boxes(list, src(), options());
  EXPECT_EQ(list.box_class_names, (std::vector<std::string>{"ball", "person"}));
  EXPECT_EQ(list.keypoint_names, (std::vector<std::string>{"nose", "left_eye", "right_eye"}));
  EXPECT_EQ(list.keypoint_flip, (std::vector<int32_t>{0, 2, 1}));
  EXPECT_EQ(list.keypoint_skeleton, (std::vector<int32_t>{0, 1}));  // COCO counts from 1
  const SourceSample& p = sample(list, "p.jpg");
  EXPECT_EQ(p.box_problem, "");
  ASSERT_EQ(p.boxes.size(), 2u);
  expect_box(p.boxes[0], 0.1F, 0.1F, 0.6F, 0.6F, 1);
  expect_box(p.boxes[1], 0.0F, 0.0F, 0.05F, 0.1F, 0);
  expect_floats(p.keypoints, {0.5F, 0.5F, 2, 0.2F, 0.2F, 1, 0, 0, 0,  // person
                              0, 0, 0, 0, 0, 0, 0, 0, 0});            // ball
}

TEST_F(CocoBoxes, ImagesMatchByPathOrUniqueFileNameAndUnlistedSamplesHaveProblems) {
  write_coco(R"({
    "categories": [{"id": 1, "name": "car"}],
    "images": [
      {"id": 1, "file_name": "./train/a.jpg", "width": 10, "height": 10},
      {"id": 2, "file_name": "b.jpg", "width": 20, "height": 10},
      {"id": 3, "file_name": "d.jpg", "width": 10, "height": 10},
      {"id": 4, "file_name": "elsewhere/z.jpg", "width": 10, "height": 10}
    ],
    "annotations": [
      {"image_id": 1, "category_id": 1, "bbox": [1, 2, 3, 4]},
      {"image_id": 2, "category_id": 1, "bbox": [2, 1, 4, 2]},
      {"image_id": 3, "category_id": 1, "bbox": [1, 1, 1, 1]},
      {"image_id": 4, "category_id": 1, "bbox": [1, 1, 1, 1]}
    ]})");
  SourceList list = listing({"train/a.jpg", "train/b.jpg", "x/d.jpg", "y/d.jpg", "train/c.jpg"});
  attach_boxes(list, src(), options());
  const SourceSample& a = sample(list, "train/a.jpg");
  ASSERT_EQ(a.boxes.size(), 1u);
  expect_box(a.boxes[0], 0.1F, 0.2F, 0.4F, 0.6F, 0);
  const SourceSample& b = sample(list, "train/b.jpg");  // by its file name
  EXPECT_EQ(b.box_width, 20u);
  ASSERT_EQ(b.boxes.size(), 1u);
  expect_box(b.boxes[0], 0.1F, 0.1F, 0.3F, 0.3F, 0);
  // Two samples are named d.jpg: neither is taken for it.
  for (const std::string path : {"x/d.jpg", "y/d.jpg", "train/c.jpg"}) {
    EXPECT_EQ(sample(list, path).box_problem, path + " is not in " + coco().string());
    EXPECT_TRUE(sample(list, path).boxes.empty());
  }
  // The images no sample matches, missing under SRC, are skipped inputs.
  ASSERT_EQ(list.skipped.size(), 2u);
  EXPECT_EQ(list.skipped[0].path, "d.jpg");
  EXPECT_EQ(list.skipped[0].reason,
            "missing: listed in " + coco().string() + " (images[2]) but not found under " +
                src().string() +
                " (and more than one listed file has its file name, so it names none of them)");
  EXPECT_EQ(list.skipped[1].path, "elsewhere/z.jpg");
  EXPECT_EQ(list.skipped[1].reason, "missing: listed in " + coco().string() +
                                        " (images[3]) but not found under " + src().string());
}

TEST_F(CocoBoxes, AnImageMissingUnderSrcIsASkippedInputNamingItsJsonPlace) {
  write_bytes(src() / "extra/present.jpg", "not listed, but there");
  write_coco(R"({"categories": [{"id": 1, "name": "car"}],
    "images": [
      {"id": 1, "file_name": "train/a.jpg", "width": 10, "height": 10},
      {"id": 2, "file_name": "./train//gone.jpg", "width": 10, "height": 10},
      {"id": 3, "file_name": "b.jpg", "width": 10, "height": 10},
      {"id": 4, "file_name": "../up.jpg", "width": 10, "height": 10},
      {"id": 5, "file_name": "extra/present.jpg", "width": 10, "height": 10},
      {"id": 6, "file_name": "train/gone.jpg", "width": 10, "height": 10},
      {"id": 7, "file_name": "csv/skipped.jpg", "width": 10, "height": 10}
    ],
    "annotations": [
      {"image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2]},
      {"image_id": 2, "category_id": 1, "bbox": [1, 1, 2, 2]},
      {"image_id": 3, "category_id": 1, "bbox": [2, 2, 2, 2]}
    ]})");
  SourceList list = listing({"train/a.jpg", "train/b.jpg"});
  // As scan_csv() leaves it: sorted by path.
  list.skipped = {{"csv/skipped.jpg", "missing: listed on list.csv line 3"},
                  {"zz.jpg", "not a regular file (listed on list.csv line 4)"}};
  attach_boxes(list, src(), options());
  const std::string listed = "missing: listed in " + coco().string() + " (images[";
  const std::string under = "]) but not found under " + src().string();
  // Once per path, at its first place; the scan's own entry is kept as it was;
  // the file that exists under SRC and b.jpg (its file name matches) are not
  // missing.
  ASSERT_EQ(list.skipped.size(), 4u);
  EXPECT_EQ(list.skipped[0].path, "../up.jpg");  // outside SRC: as written
  EXPECT_EQ(list.skipped[0].reason, listed + "3" + under);
  EXPECT_EQ(list.skipped[1].path, "csv/skipped.jpg");
  EXPECT_EQ(list.skipped[1].reason, "missing: listed on list.csv line 3");
  EXPECT_EQ(list.skipped[2].path, "train/gone.jpg");  // normalised
  EXPECT_EQ(list.skipped[2].reason, listed + "1" + under);
  EXPECT_EQ(list.skipped[3].path, "zz.jpg");
  // The listed samples keep their boxes.
  ASSERT_EQ(sample(list, "train/a.jpg").boxes.size(), 1u);
  expect_box(sample(list, "train/a.jpg").boxes[0], 0.1F, 0.1F, 0.3F, 0.3F, 0);
  ASSERT_EQ(sample(list, "train/b.jpg").boxes.size(), 1u);
  expect_box(sample(list, "train/b.jpg").boxes[0], 0.2F, 0.2F, 0.4F, 0.4F, 0);
  EXPECT_EQ(sample(list, "train/b.jpg").box_problem, "");
}

TEST_F(CocoBoxes, MissingImagesFollowInFileOrderWhereTheScanLeftSkippedUnsorted) {
  write_coco(R"({"categories": [{"id": 1, "name": "car"}],
    "images": [{"id": 1, "file_name": "z.jpg", "width": 10, "height": 10},
               {"id": 2, "file_name": "a.jpg", "width": 10, "height": 10}]})");
  SourceList list = listing({"m.jpg"});
  // As a directory walk can leave it: "b/c" before "b.jpg".
  list.skipped = {{"b/c", "cannot list directory: Permission denied"},
                  {"b.jpg", "not a regular file (a FIFO)"}};
  attach_boxes(list, src(), options());
  std::vector<std::string> paths;
  for (const SkippedInput& input : list.skipped) paths.push_back(input.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"b/c", "b.jpg", "z.jpg", "a.jpg"}));
  EXPECT_EQ(list.skipped[3].reason, "missing: listed in " + coco().string() +
                                        " (images[1]) but not found under " + src().string());
}

TEST_F(CocoBoxes, AnUnknownCategoryIsAProblemOfItsImageOnly) {
  write_coco(R"({"categories": [{"id": 1, "name": "car"}],
    "images": [{"id": 1, "file_name": "a.jpg", "width": 10, "height": 10},
               {"id": 2, "file_name": "b.jpg", "width": 10, "height": 10}],
    "annotations": [{"id": 50, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2]},
                    {"id": 51, "image_id": 1, "category_id": 3, "bbox": [1, 1, 2, 2]},
                    {"id": 52, "image_id": 2, "category_id": 1, "bbox": [5, 5, 5, 5]},
                    {"image_id": 2, "category_id": 1, "bbox": [0, 0, 1, 1]}]})");
  SourceList list = listing({"a.jpg", "b.jpg"});
  attach_boxes(list, src(), options());
  const SourceSample& a = sample(list, "a.jpg");
  EXPECT_EQ(a.box_problem, coco().string() +
                               ": annotations[1] (annotation id 51): category_id 3 is not the id "
                               "of any of categories[]");
  EXPECT_TRUE(a.boxes.empty());
  const SourceSample& b = sample(list, "b.jpg");
  EXPECT_EQ(b.box_problem, "");
  ASSERT_EQ(b.boxes.size(), 2u);
  expect_box(b.boxes[0], 0.5F, 0.5F, 1.0F, 1.0F, 0);
  expect_box(b.boxes[1], 0.0F, 0.0F, 0.1F, 0.1F, 0);
  EXPECT_TRUE(list.skipped.empty());
}

TEST_F(CocoBoxes, AnImageWithoutAnnotationsHasNoBoxesAndNoProblem) {
  write_coco(R"({"categories": [{"id": 1, "name": "car"}],
    "images": [{"id": 1, "file_name": "a.jpg", "width": 10, "height": 10}]})");
  SourceList list = listing({"a.jpg"});
  attach_boxes(list, src(), options());
  EXPECT_EQ(list.samples[0].box_problem, "");
  EXPECT_TRUE(list.samples[0].boxes.empty());
  EXPECT_EQ(list.samples[0].box_width, 10u);
  EXPECT_EQ(list.box_class_names, (std::vector<std::string>{"car"}));
}

// Too small for float32 has no area to store: left out, as an empty box is.
// Too large to compute with is a problem named as such.
TEST_F(CocoBoxes, ABoxTooSmallIsLeftOutAndOneTooLargeIsAProblem) {
  write_coco(R"({"categories": [{"id": 1, "name": "car"}],
    "images": [{"id": 1, "file_name": "a.jpg", "width": 10, "height": 10},
               {"id": 2, "file_name": "b.jpg", "width": 10, "height": 10}],
    "annotations": [{"id": 41, "image_id": 1, "category_id": 1, "bbox": [1, 1, 1e-300, 2]},
                    {"id": 42, "image_id": 2, "category_id": 1, "bbox": [1e308, 1, 1e308, 2]}]})");
  SourceList list = listing({"a.jpg", "b.jpg"});
  attach_boxes(list, src(), options());
  EXPECT_EQ(sample(list, "a.jpg").box_problem, "");
  EXPECT_TRUE(sample(list, "a.jpg").boxes.empty());
  EXPECT_EQ(sample(list, "a.jpg").dropped_boxes, 1u);
  EXPECT_EQ(sample(list, "b.jpg").box_problem,
            coco().string() +
                ": annotations[1] (annotation id 42): bbox [1e+308, 1, 1e+308, 2] (x, y, width, "
                "height) is too large to compute with");
}

// An annotation with no area inside its image (empty, or wholly outside) is
// left out and counted; the image keeps its other boxes. A negative size is
// a malformed annotation: a problem naming it.
TEST_F(CocoBoxes, AnEmptyOrOutsideBoxIsLeftOutAndANegativeOneIsAProblem) {
  write_coco(R"({"categories": [{"id": 1, "name": "car"}],
    "images": [{"id": 1, "file_name": "a.jpg", "width": 10, "height": 10},
               {"id": 2, "file_name": "b.jpg", "width": 10, "height": 10},
               {"id": 3, "file_name": "c.jpg", "width": 10, "height": 10},
               {"id": 4, "file_name": "d.jpg", "width": 10, "height": 10}],
    "annotations": [{"id": 41, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2]},
                    {"id": 42, "image_id": 1, "category_id": 1, "bbox": [1, 1, 0, 2]},
                    {"id": 43, "image_id": 2, "category_id": 1, "bbox": [12, 1, 2, 2]},
                    {"id": 44, "image_id": 3, "category_id": 1, "bbox": [8, -1, 4, 3]},
                    {"id": 45, "image_id": 4, "category_id": 1, "bbox": [1, 1, -2, 2]}]})");
  SourceList list = listing({"a.jpg", "b.jpg", "c.jpg", "d.jpg"});
  attach_boxes(list, src(), options());
  EXPECT_EQ(sample(list, "d.jpg").box_problem,
            coco().string() +
                ": annotations[4] (annotation id 45): bbox [1, 1, -2, 2] (x, y, width, height) "
                "has a negative size");
  const SourceSample& a = sample(list, "a.jpg");
  EXPECT_EQ(a.box_problem, "");
  ASSERT_EQ(a.boxes.size(), 1u);  // annotation 41; 42 is empty
  EXPECT_EQ(a.dropped_boxes, 1u);
  EXPECT_EQ(a.first_dropped, 1u);  // annotations[1]
  const SourceSample& b = sample(list, "b.jpg");
  EXPECT_EQ(b.box_problem, "");
  EXPECT_TRUE(b.boxes.empty());
  EXPECT_EQ(b.dropped_boxes, 1u);
  const std::vector<std::size_t> order = {0, 1, 2};
  EXPECT_EQ(box_warnings(list, order, src(), options()),
            (std::vector<std::string>{
                "2 objects have no area inside their image (an empty box, or one wholly outside "
                "the image) and were left out; the first: " +
                coco().string() + ": annotations[1] (of a.jpg)"}));
  // Partly outside: clamped to the image, with the share of it inside (2 x 2 of 4 x 3).
  const SourceSample& c = sample(list, "c.jpg");
  EXPECT_EQ(c.box_problem, "");
  ASSERT_EQ(c.boxes.size(), 1u);
  expect_box(c.boxes[0], 0.8F, 0.0F, 1.0F, 0.2F, 0);
  EXPECT_FLOAT_EQ(c.boxes[0].inside, 4.0F / 12.0F);
  EXPECT_EQ(a.boxes.empty() ? 1.0F : a.boxes[0].inside, 1.0F);
  // Below BoxOptions::min_visible (a third inside, 0.5 asked): every variant
  // leaves it out, which the warnings say.
  BoxOptions strict = options();
  strict.min_visible = 0.5;
  const std::vector<std::string> warnings = box_warnings(list, order, src(), strict);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0],
            "1 object lies mostly outside its image (less than BoxOptions::min_visible 0.5 of its "
            "area inside) and is left out of every variant; the first in " +
                (src() / "c.jpg").string());
  // Per image, as report.json lists them: a and b with the annotation left
  // out, c (under the stricter rule) with its object mostly outside; d, a
  // problem of its own, is skipped and not listed.
  const std::vector<std::size_t> all = {0, 1, 2, 3};
  std::vector<SkippedInput> per_image = objects_left_out(list, all, src(), strict);
  ASSERT_EQ(per_image.size(), 3u);
  EXPECT_EQ(per_image[0].path, "a.jpg");
  EXPECT_EQ(per_image[0].reason,
            "1 object with no area inside the image (an empty box, or one wholly outside it) "
            "left out; the first: " +
                coco().string() + ": annotations[1] (of a.jpg)");
  EXPECT_EQ(per_image[1].path, "b.jpg");
  EXPECT_NE(per_image[1].reason.find("annotations[2] (of b.jpg)"), std::string::npos);
  EXPECT_EQ(per_image[2].path, "c.jpg");
  EXPECT_EQ(per_image[2].reason,
            "1 object mostly outside the image (less than 0.5 of the area inside) left out of "
            "every variant");
  // Under the default 0.3, a third of c's box is enough.
  per_image = objects_left_out(list, all, src(), options());
  ASSERT_EQ(per_image.size(), 2u);
  EXPECT_EQ(per_image[1].path, "b.jpg");
}

TEST_F(CocoBoxes, AWrongKeypointCountIsAProblem) {
  write_coco(R"({"categories": [{"id": 1, "name": "person", "keypoints": ["a", "b"]}],
    "images": [{"id": 1, "file_name": "a.jpg", "width": 10, "height": 10}],
    "annotations": [{"id": 5, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2],
                     "keypoints": [1, 1, 2]}]})");
  SourceList list = listing({"a.jpg"});
  attach_boxes(list, src(), options());
  EXPECT_EQ(list.samples[0].box_problem,
            coco().string() +
                ": annotations[0] (annotation id 5): keypoints: expected 2 triples x, y, v (the "
                "categories name 2 keypoints), not 3 values");
  EXPECT_TRUE(list.samples[0].keypoints.empty());
}

// Labelled keypoints on an annotation whose category names none would be
// dropped: a problem of the image, whether other categories name keypoints
// or none does. Unlabelled ones (every visibility 0) carry nothing to lose.
TEST_F(CocoBoxes, LabelledKeypointsOfACategoryWithoutKeypointNamesAreAProblem) {
  for (const std::string names : {"", R"(, {"id": 2, "name": "person", "keypoints": ["a"]})"}) {
    SCOPED_TRACE(names);
    write_coco(R"({"categories": [{"id": 1, "name": "car"})" + names + R"(],
      "images": [{"id": 1, "file_name": "a.jpg", "width": 10, "height": 10},
                 {"id": 2, "file_name": "b.jpg", "width": 10, "height": 10}],
      "annotations": [{"id": 5, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2],
                       "keypoints": [1, 1, 2]},
                      {"id": 6, "image_id": 2, "category_id": 1, "bbox": [1, 1, 2, 2],
                       "keypoints": [0, 0, 0]}]})");
    SourceList list = listing({"a.jpg", "b.jpg"});
    attach_boxes(list, src(), options());
    EXPECT_EQ(sample(list, "a.jpg").box_problem,
              coco().string() +
                  ": annotations[0] (annotation id 5): keypoints are labelled, but its category "
                  "names no keypoints (categories[].keypoints), so they would be lost");
    EXPECT_EQ(sample(list, "b.jpg").box_problem, "");
    EXPECT_EQ(sample(list, "b.jpg").boxes.size(), 1u);
  }
}

// Each value of a triple is checked, not only their count: a visibility
// other than 0, 1 or 2 (which every reader refuses), a string, a coordinate
// too large for float32. The image's problem names the value's place.
TEST_F(CocoBoxes, AKeypointValueOutsideTheFormatIsAProblemNamingIt) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[1, 1, 2, 3, 3, 3]",
       "keypoints[5] = 3 is a visibility other than 0 (not labelled), 1 (hidden) or 2 (visible)"},
      {"[1, 1, 0.5, 3, 3, 2]",
       "keypoints[2] = 0.5 is a visibility other than 0 (not labelled), 1 (hidden) or 2 (visible)"},
      {"[1, 1, -1, 3, 3, 2]",
       "keypoints[2] = -1 is a visibility other than 0 (not labelled), 1 (hidden) or 2 (visible)"},
      {R"(["12", 1, 2, 3, 3, 2])", R"(keypoints[0] = "12" is not a number)"},
      {"[1, 1e300, 2, 3, 3, 2]", "keypoints[1] = 1e+300 is too large a coordinate"},
  };
  for (const auto& [keypoints, expected] : cases) {
    write_coco(R"({"categories": [{"id": 1, "name": "person", "keypoints": ["a", "b"]}],
      "images": [{"id": 1, "file_name": "a.jpg", "width": 10, "height": 10}],
      "annotations": [{"id": 5, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2],
                       "keypoints": )" +
               keypoints + "}]}");
    SourceList list = listing({"a.jpg"});
    attach_boxes(list, src(), options());
    EXPECT_EQ(list.samples[0].box_problem,
              coco().string() + ": annotations[0] (annotation id 5): " + expected)
        << keypoints;
    EXPECT_TRUE(list.samples[0].keypoints.empty()) << keypoints;
    EXPECT_TRUE(list.samples[0].boxes.empty()) << keypoints;
  }
  // 0, 1 and 2 as integers or as 0.0, 1.0, 2.0 pass.
  write_coco(R"({"categories": [{"id": 1, "name": "person", "keypoints": ["a", "b"]}],
    "images": [{"id": 1, "file_name": "a.jpg", "width": 10, "height": 10}],
    "annotations": [{"id": 5, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2],
                     "keypoints": [5, 5, 2.0, 0, 0, 0]}]})");
  SourceList list = listing({"a.jpg"});
  attach_boxes(list, src(), options());
  EXPECT_EQ(list.samples[0].box_problem, "");
  EXPECT_EQ(list.samples[0].keypoints, (std::vector<float>{0.5F, 0.5F, 2.0F, 0, 0, 0}));
}

// Names readers find classes and keypoints by: none empty, none twice; and
// iscrowd is 0 or 1 (false or true), nothing else taken for one of them.
TEST_F(CocoBoxes, EmptyOrRepeatedNamesAndOtherCrowdValuesAreUsageErrors) {
  const std::string image =
      R"("images": [{"id": 1, "file_name": "a.jpg", "width": 10, "height": 10}])";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": " "}])",
       "categories[1].name: an empty name"},
      {R"("categories": [{"id": 7, "name": "cat"}, {"id": 2, "name": "cat"}])",
       "categories[0].name: 'cat' is also categories[1]'s name (each category needs a name of "
       "its own)"},
      {R"("categories": [{"id": 1, "name": "p", "keypoints": ["a", "b", "a"]}])",
       "categories[0].keypoints: names 'a' twice"},
      {R"("categories": [{"id": 1, "name": "p", "keypoints": ["a", ""]}])",
       R"(categories[0].keypoints: expected names, not "")"},

      {R"("categories": [{"id": 1, "name": "p"}], "annotations": [{"id": 3, "image_id": 1,
          "category_id": 1, "bbox": [1, 1, 2, 2], "iscrowd": 2}])",
       "annotations[0].iscrowd: expected 0 or 1, not 2"},
  };
  for (const auto& [categories, expected] : cases) {
    write_coco("{" + image + ", " + categories + "}");
    SourceList list = listing({"a.jpg"});
    const std::string error = usage_error([&] { attach_boxes(list, src(), options()); });
    EXPECT_EQ(error, coco().string() + ": " + expected) << categories;
  }
  write_coco(R"({"categories": [{"id": 1, "name": "p"}],
    "images": [{"id": 1, "file_name": "a.jpg", "width": 10, "height": 10},
               {"id": 2, "file_name": " ", "width": 10, "height": 10}]})");
  SourceList list = listing({"a.jpg"});
  EXPECT_EQ(usage_error([&] { attach_boxes(list, src(), options()); }),
            coco().string() + ": images[1].file_name: an empty name");
}

TEST_F(CocoBoxes, MalformedJsonIsAUsageErrorNamingTheFileAndLine) {
  write_coco("{\"images\": [\n  {\"id\": 1,,}\n]}");
  SourceList list = listing({"a.jpg"});
  const std::string error = usage_error([&] { attach_boxes(list, src(), options()); });
  EXPECT_TRUE(error.starts_with(coco().string() + ": not valid JSON: ")) << error;
  EXPECT_NE(error.find("line 2"), std::string::npos) << error;
  EXPECT_EQ(error.find("json.exception"), std::string::npos) << error;  // the library's tag
  // A number past double's range: the library names no place, the byte does.
  write_coco("{\"images\": [1e999]}");
  EXPECT_EQ(usage_error([&] { attach_boxes(list, src(), options()); }),
            coco().string() + ": not valid JSON: at byte 17: number overflow parsing '1e999'");
  write_coco("[]");
  EXPECT_EQ(usage_error([&] { attach_boxes(list, src(), options()); }),
            coco().string() + ": not a JSON object (COCO)");
  BoxOptions missing;
  missing.coco = dir_ / "none.json";
  EXPECT_EQ(usage_error([&] { attach_boxes(list, src(), missing); }),
            missing.coco.string() +
                ": cannot open the COCO file (BoxOptions::coco): No such file or directory");
}

// Keypoints named by a category are held for every box (zeros where an
// annotation has none): a small file whose boxes' keypoints would take more
// than the machine's memory allows is refused before any are made.
TEST_F(CocoBoxes, KeypointsPastTheMachinesMemoryAreRefusedFirst) {
  SourceList list = listing({"a.jpg"});
  const uint64_t memory = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                          static_cast<uint64_t>(::sysconf(_SC_PAGE_SIZE));
  constexpr uint64_t kKeypoints = 200000;
  const uint64_t boxes = memory / 2 / (kKeypoints * 12 * 3) + 1;
  if (boxes > 100000) GTEST_SKIP() << "this machine's memory takes a file too large for a test";
  std::string names;
  for (uint64_t k = 0; k < kKeypoints; ++k)
    names += (k == 0 ? "\"k" : ",\"k") + std::to_string(k) + "\"";
  std::string annotations;
  for (uint64_t b = 0; b < boxes; ++b) {
    annotations += (b == 0 ? "" : ",") +
                   std::string(R"({"image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2]})");
  }
  write_coco(R"({"categories": [{"id": 1, "name": "car", "keypoints": [)" + names +
             R"(]}], "images": [{"id": 1, "file_name": "a.jpg", "width": 10, "height": 10}], )" +
             R"("annotations": [)" + annotations + "]}");
  const std::string error = usage_error([&] { attach_boxes(list, src(), options()); });
  EXPECT_NE(error.find(coco().string() + ": its categories name 200000 keypoints and it has " +
                       std::to_string(boxes) +
                       " annotations: their keypoints, 12 bytes a "
                       "keypoint and box held up to three times, would take "),
            std::string::npos)
      << error;
}

TEST_F(CocoBoxes, WrongFieldsAreUsageErrorsNamingTheJsonPlace) {
  SourceList list = listing({"a.jpg"});
  auto error_for = [&](const std::string& images, const std::string& annotations,
                       const std::string& categories = R"([{"id": 1, "name": "car"}])") {
    write_coco(R"({"categories": )" + categories + R"(, "images": )" + images +
               R"(, "annotations": )" + annotations + "}");
    return usage_error([&] { attach_boxes(list, src(), options()); });
  };
  const std::string image = R"([{"id": 1, "file_name": "a.jpg", "width": 10, "height": 10}])";
  const std::string file = coco().string();
  EXPECT_EQ(error_for(R"([{"id": 1, "file_name": "a.jpg", "width": "10", "height": 10}])", "[]"),
            file + ": images[0].width: expected an integer, not \"10\"");
  EXPECT_EQ(error_for(R"([{"id": 1, "width": 10, "height": 10}])", "[]"),
            file + ": images[0].file_name: missing");
  EXPECT_EQ(error_for(R"([{"id": 1, "file_name": "a.jpg", "width": 10, "height": 10},
                          {"id": 1, "file_name": "b.jpg", "width": 10, "height": 10}])",
                      "[]"),
            file + ": images[1].id: image id 1 is also images[0]'s");
  EXPECT_EQ(error_for(image, R"([{"id": 7, "image_id": 1, "category_id": 1, "bbox": [1, 1, 1, 1]},
                                 {"id": 8, "image_id": 1, "category_id": 1, "bbox": [2, 2, 1, 1]},
                                 {"id": 7, "image_id": 1, "category_id": 1, "bbox": [1, 1, 1, 1]}])"),
            file + ": annotations[2].id: annotation id 7 is also annotations[0]'s");
  // 7.0 is 7; a string id some tools write is compared as a string.
  EXPECT_EQ(error_for(image, R"([{"id": 7.0, "image_id": 1, "category_id": 1, "bbox": [1, 1, 1, 1]},
                                 {"id": 7, "image_id": 1, "category_id": 1, "bbox": [1, 1, 1, 1]}])"),
            file + ": annotations[1].id: annotation id 7 is also annotations[0]'s");
  EXPECT_EQ(error_for(image, R"([{"id": "7", "image_id": 1, "category_id": 1, "bbox": [1, 1, 1, 1]},
                                 {"id": 7, "image_id": 1, "category_id": 1, "bbox": [2, 2, 1, 1]},
                                 {"id": "7", "image_id": 1, "category_id": 1, "bbox": [1, 1, 1, 1]}])"),
            file + ": annotations[2].id: annotation id \"7\" is also annotations[0]'s");
  EXPECT_EQ(
      error_for(image, R"([{"id": 7.5, "image_id": 1, "category_id": 1, "bbox": [1, 1, 1, 1]}])"),
      file + ": annotations[0].id: expected an integer, not 7.5");
  EXPECT_EQ(error_for(image, R"([{"image_id": 2, "category_id": 1, "bbox": [1, 1, 1, 1]}])"),
            file + ": annotations[0].image_id: 2 is not the id of any of images[]");
  EXPECT_EQ(error_for(image, R"([{"image_id": 1, "category_id": "3", "bbox": [1, 1, 1, 1]}])"),
            file + ": annotations[0].category_id: expected an integer, not \"3\"");
  EXPECT_EQ(error_for(image, R"([{"image_id": 1, "category_id": 1, "bbox": [1, 1, 1]}])"),
            file + ": annotations[0].bbox: expected [x, y, width, height] in pixels, not [1,1,1]");
  EXPECT_EQ(error_for(image, "[]", R"([{"id": 1, "name": "a"}, {"id": 1, "name": "b"}])"),
            file + ": categories[1].id: category id 1 is also categories[0]'s");
  EXPECT_EQ(error_for(image, "{}"), file + ": 'annotations' is object, not an array");
  // A value nested 100,000 deep is refused while it is parsed (the DOM of
  // deep values took 40 bytes a byte of input, and printing it recursed once
  // a level and overflowed the stack), named by its place; a long one is cut.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(error_for(image, R"([{"image_id": 1, "category_id": 1, "bbox": )" + deep + "}]"),
            file + ": annotations[0].bbox: nested more than 64 deep, which no COCO file is");
  const std::string nested = std::string(5, '[') + std::string(5, ']');
  EXPECT_EQ(
      error_for(image, R"([{"image_id": 1, "category_id": 1, "bbox": )" + nested + "}]"),
      file + ": annotations[0].bbox: expected [x, y, width, height] in pixels, not [[[[...]]]]");
  // A member read twice in one object: which one counts would be a guess.
  EXPECT_EQ(error_for(image, R"([{"image_id": 1, "category_id": 1, "image_id": 2}])"),
            file + ": annotations[0]: the member \"image_id\" appears twice");
  EXPECT_EQ(error_for(image, R"([{"image_id": 1, "category_id": ")" + std::string(500, 'x') +
                                 R"(", "bbox": [1, 1, 1, 1]}])"),
            file + ": annotations[0].category_id: expected an integer, not \"" +
                std::string(59, 'x') + "...");
}

// A skeleton joins pairs of the category's keypoints, numbered from 1 as
// COCO numbers them; one that joins anything else is refused naming its
// place, and the categories with keypoints share one skeleton.
TEST_F(CocoBoxes, ASkeletonJoinsKeypointsTheCategoryNames) {
  auto error_of = [&](const std::string& skeleton, const std::string& more = "") {
    write_coco(R"({"categories": [{"id": 1, "name": "person", "keypoints": ["a", "b", "c"],
                                   "skeleton": )" +
               skeleton + "}" + more + R"(], "images": [], "annotations": []})");
    SourceList list = listing({"a.jpg"});
    return usage_error([&] { attach_boxes(list, src(), options()); });
  };
  const std::string at = coco().string() + ": categories[0].";
  EXPECT_EQ(error_of("[[1, 4]]"),
            at + "skeleton[0]: 4 is not a keypoint number (1 to 3, COCO numbers the category's "
                 "keypoints from 1)");
  EXPECT_EQ(error_of("[[1, 2], [0, 1]]"),
            at + "skeleton[1]: 0 is not a keypoint number (1 to 3, COCO numbers the category's "
                 "keypoints from 1)");
  EXPECT_EQ(error_of("[[2, 2]]"), at + "skeleton[0]: joins a keypoint to itself");
  EXPECT_EQ(error_of("[[1, 2, 3]]"),
            at + "skeleton[0]: expected a pair [a, b] of keypoint numbers, not [1,2,3]");
  EXPECT_EQ(error_of("[[1, 1.5]]"),
            at + "skeleton[0]: 1.5 is not a keypoint number (1 to 3, COCO numbers the "
                 "category's keypoints from 1)");
  EXPECT_EQ(error_of("{}"), at + "skeleton: expected an array of [a, b] keypoint pairs");
  EXPECT_EQ(error_of("[[1, 2]]", R"(, {"id": 2, "name": "cat", "keypoints": ["a", "b", "c"],
                                      "skeleton": [[2, 3]]})"),
            coco().string() +
                ": categories[1].skeleton: differs from categories[0]'s; the categories with "
                "keypoints share one skeleton");
  write_coco(R"({"categories": [{"id": 1, "name": "ball", "skeleton": [[1, 2]]}],
                 "images": [], "annotations": []})");
  SourceList list = listing({"a.jpg"});
  EXPECT_EQ(usage_error([&] { attach_boxes(list, src(), options()); }),
            at + "skeleton: joins keypoints, but the category names none (keypoints)");
  // One category's skeleton serves the others that give none.
  EXPECT_EQ(
      error_of("[[1, 2], [2, 3]]", R"(, {"id": 2, "name": "cat", "keypoints": ["a", "b", "c"]})"),
      "(no error)");
}

TEST_F(CocoBoxes, CategoriesNamingOtherKeypointsAreAUsageError) {
  write_coco(R"({"categories": [{"id": 1, "name": "person", "keypoints": ["a", "b"]},
                               {"id": 2, "name": "cat", "keypoints": ["a", "c"]}],
                 "images": [], "annotations": []})");
  SourceList list = listing({"a.jpg"});
  EXPECT_EQ(usage_error([&] { attach_boxes(list, src(), options()); }),
            coco().string() +
                ": categories[1].keypoints: names [a, c] differ from categories[0]'s [a, b]; "
                "every category with keypoints must name the same ones");
}

TEST_F(CocoBoxes, AFlipMapNamingUnknownKeypointsIsAUsageError) {
  write_coco(R"({"categories": [{"id": 1, "name": "p", "keypoints": ["a", "b"]}], "images": []})");
  SourceList list = listing({"a.jpg"});
  BoxOptions o = options();
  o.keypoint_flip_map = "a:z";
  EXPECT_NE(usage_error([&] { attach_boxes(list, src(), o); }).find("'z' is neither"),
            std::string::npos);
  o.keypoint_flip_map = "a:b";
  attach_boxes(list, src(), o);
  EXPECT_EQ(list.keypoint_flip, (std::vector<int32_t>{1, 0}));
}

TEST(BoxOptionsChoice, NothingWithoutBoxesAndNotBothCocoAndYolo) {
  SourceList list = listing({"a.jpg"});
  attach_boxes(list, "/nonexistent", BoxOptions{});
  EXPECT_FALSE(list.boxes);
  BoxOptions both;
  both.coco = "/nonexistent/coco.json";
  both.yolo = true;
  EXPECT_EQ(usage_error([&] { attach_boxes(list, "/nonexistent", both); }),
            "BoxOptions::coco and BoxOptions::yolo both give the boxes; give one");
}

class YoloBoxes : public ::testing::Test {
 protected:
  BoxOptions options() const {
    BoxOptions o;
    o.yolo = true;
    return o;
  }
  fs::path src() const { return dir_ / "src"; }
  std::string label(const std::string& path) const { return (src() / path).string(); }
  void write_label(const std::string& path, const std::string& text) const {
    write_bytes(src() / path, text);
  }
  TempDir dir_;
};

TEST_F(YoloBoxes, ClassesTxtNamesTheClassesAndCentresBecomeCorners) {
  write_bytes(src() / "classes.txt", "cat\r\ndog\r\n\r\n\n");
  const std::string text = "1 0.5 0.5 0.2 0.4\n\n0 0.25 0.75 0.5 0.5\n";
  write_label("a/x.txt", text);
  SourceList list = listing({"a/x.jpg", "a/y.png"});  // y has no label file: no objects
  attach_boxes(list, src(), options());
  EXPECT_TRUE(list.boxes);
  EXPECT_EQ(list.box_class_names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_TRUE(list.keypoint_names.empty());
  const SourceSample& x = sample(list, "a/x.jpg");
  EXPECT_EQ(x.box_problem, "");
  EXPECT_EQ(x.box_width, 0u);
  ASSERT_EQ(x.boxes.size(), 2u);
  expect_box(x.boxes[0], 0.4F, 0.3F, 0.6F, 0.7F, 1);
  expect_box(x.boxes[1], 0.0F, 0.5F, 0.5F, 1.0F, 0);
  EXPECT_TRUE(x.keypoints.empty());
  const SourceSample& y = sample(list, "a/y.png");
  EXPECT_EQ(y.box_problem, "");
  EXPECT_TRUE(y.boxes.empty());
  EXPECT_EQ(test::read_bytes(src() / "a/x.txt"), text);  // read, not changed
}

// A label file that is not a regular file (a FIFO, whose read would wait for
// a writer for ever) is a problem of its image alone.
// Two images of one name (a.jpg and a.png) beside one label file: which
// one it labels is a guess, so it is a problem of both, naming them; an
// image of another name keeps its own.
TEST_F(YoloBoxes, ALabelFileBesideTwoImagesOfOneNameIsAProblemOfBoth) {
  write_label("a.txt", "0 0.5 0.5 0.2 0.2\n");
  write_label("b.txt", "0 0.5 0.5 0.2 0.2\n");
  SourceList list = listing({"a.jpg", "a.png", "b.jpg"});
  attach_boxes(list, src(), options());
  const std::string problem = label("a.txt") +
                              ": the label file of both a.jpg and a.png (two images of one name); "
                              "YOLO pairs a label file with one image";
  EXPECT_EQ(sample(list, "a.jpg").box_problem, problem);
  EXPECT_EQ(sample(list, "a.png").box_problem,
            label("a.txt") +
                ": the label file of both a.png and a.jpg (two images of one name); YOLO pairs a "
                "label file with one image");
  EXPECT_EQ(sample(list, "b.jpg").box_problem, "");
  EXPECT_EQ(sample(list, "b.jpg").boxes.size(), 1u);
}

TEST_F(YoloBoxes, ALabelFileThatIsNoRegularFileIsAProblemOfItsImage) {
  write_bytes(src() / "classes.txt", "cat\n");
  write_label("a/x.txt", "0 0.5 0.5 0.2 0.4\n");
  ASSERT_EQ(::mkfifo((src() / "a/y.txt").c_str(), 0600), 0);
  SourceList list = listing({"a/x.jpg", "a/y.png"});
  attach_boxes(list, src(), options());
  EXPECT_EQ(sample(list, "a/x.jpg").box_problem, "");
  EXPECT_EQ(sample(list, "a/y.png").box_problem, label("a/y.txt") + ": not a regular file");
  // A link to nothing is a label file lost, not an image without objects.
  fs::remove(src() / "a/y.txt");
  fs::create_symlink(src() / "gone.txt", src() / "a/y.txt");
  list = listing({"a/x.jpg", "a/y.png"});
  attach_boxes(list, src(), options());
  EXPECT_EQ(sample(list, "a/y.png").box_problem,
            label("a/y.txt") + ": a link to nothing (cannot stat: No such file or directory)");
  // The same for the class names found in SRC: an error, before any file is read.
  fs::remove(src() / "classes.txt");
  ASSERT_EQ(::mkfifo((src() / "classes.txt").c_str(), 0600), 0);
  EXPECT_EQ(usage_error([&] { attach_boxes(list, src(), options()); }),
            label("classes.txt") + ": not a regular file (BoxOptions::yolo_names names another)");
}

// No label file beside any image (the labels in a folder of their own) is
// warned about: every image would be stored without objects.
TEST_F(YoloBoxes, NoLabelFileAtAllIsWarnedAbout) {
  SourceList list = listing({"a.jpg", "b.jpg"});
  attach_boxes(list, src(), options());
  EXPECT_EQ(list.label_files, 0u);
  const std::vector<std::size_t> order = {0, 1};
  const std::vector<std::string> warnings = box_warnings(list, order, src(), options());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(label("a.txt") + " for "), std::string::npos) << warnings[0];
  write_label("b.txt", "");  // an empty file: an image without objects, as meant
  attach_boxes(list, src(), options());
  EXPECT_EQ(list.label_files, 1u);
  EXPECT_TRUE(box_warnings(list, order, src(), options()).empty());
}

TEST_F(YoloBoxes, TheNamesFileComesBeforeClassesTxt) {
  write_bytes(src() / "classes.txt", "cat\n");
  write_bytes(dir_ / "names.txt", "person\n traffic light \nstop sign");
  write_label("x.txt", "2 0.5 0.5 0.5 0.5\n");
  SourceList list = listing({"x.jpg"});
  BoxOptions o = options();
  o.yolo_names = dir_ / "names.txt";
  attach_boxes(list, src(), o);
  EXPECT_EQ(list.box_class_names,
            (std::vector<std::string>{"person", "traffic light", "stop sign"}));
  ASSERT_EQ(list.samples[0].boxes.size(), 1u);
  EXPECT_EQ(list.samples[0].boxes[0].cls, 2);
}

TEST_F(YoloBoxes, WithoutNamesTheIdsNameTheClasses) {
  write_label("a.txt", "3 0.5 0.5 0.5 0.5\n");
  write_label("b.txt", "0 0.5 0.5 0.5 0.5\n");
  SourceList list = listing({"a.jpg", "b.jpg"});
  attach_boxes(list, src(), options());
  EXPECT_EQ(list.box_class_names, (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(sample(list, "a.jpg").boxes.at(0).cls, 3);
}

TEST_F(YoloBoxes, ABlankLineInsideTheNamesIsAUsageError) {
  write_bytes(dir_ / "names.txt", "a\n\nb\n");
  SourceList list = listing({"x.jpg"});
  BoxOptions o = options();
  o.yolo_names = dir_ / "names.txt";
  EXPECT_TRUE(usage_error([&] {
                attach_boxes(list, src(), o);
              }).starts_with((dir_ / "names.txt").string() + ":2: blank line"));
  o.yolo_names = dir_ / "missing.txt";
  EXPECT_TRUE(usage_error([&] {
                attach_boxes(list, src(), o);
              }).starts_with((dir_ / "missing.txt").string() + ": cannot open"));
}

// A class or keypoint named twice could not be told apart by its name.
TEST_F(YoloBoxes, ANameGivenTwiceIsAUsageError) {
  write_bytes(dir_ / "names.txt", "cat\ndog\ncat\n");
  SourceList list = listing({"x.jpg"});
  BoxOptions o = options();
  o.yolo_names = dir_ / "names.txt";
  EXPECT_EQ(usage_error([&] { attach_boxes(list, src(), o); }),
            (dir_ / "names.txt").string() +
                ":3: class 'cat' is also named on line 1 (each class needs a name of its own)");
  o.yolo_names.clear();
  o.yolo_keypoints = "nose,eye, nose";
  EXPECT_EQ(usage_error([&] { attach_boxes(list, src(), o); }),
            "BoxOptions::yolo_keypoints 'nose,eye, nose': keypoint 'nose' is named twice");
}

TEST_F(YoloBoxes, AMalformedLineIsAProblemNamingFileAndLine) {
  write_label("bad.txt", "0 0.5 0.5 0.2 0.2\n0 0.5 0.5 0.2\n");
  write_label("word.txt", "\n0 0.5 abc 0.2 0.2\n");
  write_label("good.txt", "0 0.5 0.5 0.2 0.2\n");
  write_label("mac.txt", "0 0.5 0.5 0.2 0.2\r0 0.5 0.5 0.2 0.2\r");
  SourceList list = listing({"bad.jpg", "word.jpg", "good.jpg", "mac.jpg"});
  attach_boxes(list, src(), options());
  EXPECT_EQ(sample(list, "bad.jpg").box_problem,
            label("bad.txt") +
                ":2: 4 numbers; a YOLO line is 'class cx cy w h', then 'x y v' per keypoint");
  EXPECT_TRUE(sample(list, "bad.jpg").boxes.empty());
  EXPECT_EQ(sample(list, "word.jpg").box_problem, label("word.txt") + ":2: 'abc' is not a number");
  // Lines ending in CR alone: the CR is shown, not printed (it would
  // return the terminal's cursor over the message).
  EXPECT_EQ(sample(list, "mac.jpg").box_problem,
            label("mac.txt") +
                ":1: '0.2\\r0' is not a number (lines that end in a carriage return alone: save "
                "the file with LF line ends)");
  EXPECT_EQ(sample(list, "good.jpg").box_problem, "");
  EXPECT_EQ(sample(list, "good.jpg").boxes.size(), 1u);
}

TEST_F(YoloBoxes, AClassIdBeyondTheNamesOrNotAnIntegerIsAProblem) {
  write_bytes(src() / "classes.txt", "cat\ndog\n");
  write_label("beyond.txt", "1 0.5 0.5 0.2 0.2\n2 0.5 0.5 0.2 0.2\n");
  write_label("fraction.txt", "0.5 0.5 0.5 0.2 0.2\n");
  write_label("negative.txt", "-1 0.5 0.5 0.2 0.2\n");
  SourceList list = listing({"beyond.jpg", "fraction.jpg", "negative.jpg"});
  attach_boxes(list, src(), options());
  EXPECT_EQ(sample(list, "beyond.jpg").box_problem,
            label("beyond.txt") + ":2: class id 2, but the class names are 2 (ids 0..1)");
  EXPECT_EQ(sample(list, "fraction.jpg").box_problem,
            label("fraction.txt") + ":1: class id 0.5 is not an integer");
  EXPECT_EQ(sample(list, "negative.jpg").box_problem,
            label("negative.txt") + ":1: class id -1 is negative");
}

TEST_F(YoloBoxes, ValuesMayLeaveTheUnitRangeByTheToleranceOnly) {
  write_label("edge.txt", "0 1.0005 0.5 0.2 0.4\n0 0.1 0.5 0.4 0.2\n");
  write_label("out.txt", "0 0.5 1.01 0.2 0.2\n");
  SourceList list = listing({"edge.jpg", "out.jpg"});
  attach_boxes(list, src(), options());
  const SourceSample& edge = sample(list, "edge.jpg");
  EXPECT_EQ(edge.box_problem, "");
  ASSERT_EQ(edge.boxes.size(), 2u);
  expect_box(edge.boxes[0], 0.9F, 0.3F, 1.0F, 0.7F, 0);  // cx clamped to 1
  expect_box(edge.boxes[1], 0.0F, 0.4F, 0.3F, 0.6F, 0);  // x0 = -0.1 clamped
  // The share of each box in the image, for the visibility rule of its records.
  EXPECT_FLOAT_EQ(edge.boxes[0].inside, 0.5F);
  EXPECT_FLOAT_EQ(edge.boxes[1].inside, 0.75F);
  EXPECT_EQ(sample(list, "out.jpg").box_problem,
            label("out.txt") +
                ":1: cy = 1.01 is outside [0, 1] (YOLO values are fractions of the image)");
}

// A box narrower than float32 can tell its corners apart, or empty, would
// be stored with no area: left out and counted, the other lines kept.
TEST_F(YoloBoxes, ABoxWithoutAreaIsLeftOut) {
  write_label("tiny.txt", "0 0.25 0.4 0.2 0.5\n0 0.25 0.4 1e-300 0.5\n0 0.5 0.5 0 0.1\n");
  SourceList list = listing({"tiny.jpg"});
  attach_boxes(list, src(), options());
  const SourceSample& tiny = sample(list, "tiny.jpg");
  EXPECT_EQ(tiny.box_problem, "");
  EXPECT_EQ(tiny.boxes.size(), 1u);
  EXPECT_EQ(tiny.dropped_boxes, 2u);
  EXPECT_EQ(tiny.first_dropped, 2u);  // line 2
  const std::vector<std::size_t> order = {0};
  const std::vector<std::string> warnings = box_warnings(list, order, src(), options());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(label("tiny.txt") + ":2"), std::string::npos) << warnings[0];
}

TEST_F(YoloBoxes, PoseLinesGiveTheKeypointCountOfTheFirstSuchLine) {
  write_label("a.txt", "0 0.5 0.5 0.2 0.2 0.1 0.2 2 0.3 0.4 0\n");
  write_label("b.txt", "0 0.5 0.5 0.2 0.2\n");                      // no keypoints
  write_label("c.txt", "0 0.5 0.5 0.2 0.2 0.1 0.2 2\n");            // one keypoint
  write_label("d.txt", "0 0.5 0.5 0.2 0.2 0.1 0.2 2 0.5\n");        // not 3 per keypoint
  write_label("e.txt", "0 0.5 0.5 0.2 0.2 0.1 0.2 3 0.3 0.4 0\n");  // v = 3
  write_label("f.txt", "1 0.5 0.5 0.2 0.2 0.1 0.2 1 0.3 0.4 2\n");
  SourceList list = listing({"a.jpg", "b.jpg", "c.jpg", "d.jpg", "e.jpg", "f.jpg"});
  BoxOptions o = options();
  o.keypoint_flip_map = "0:1";
  attach_boxes(list, src(), o);
  EXPECT_EQ(list.keypoint_names, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(list.keypoint_flip, (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(list.box_class_names, (std::vector<std::string>{"0", "1"}));
  const SourceSample& a = sample(list, "a.jpg");
  EXPECT_EQ(a.box_problem, "");
  expect_floats(a.keypoints, {0.1F, 0.2F, 2, 0.3F, 0.4F, 0});
  expect_floats(sample(list, "f.jpg").keypoints, {0.1F, 0.2F, 1, 0.3F, 0.4F, 2});
  EXPECT_EQ(sample(list, "b.jpg").box_problem,
            label("b.txt") + ":1: 5 numbers, but " + label("a.txt") +
                ":1 has 11 (5, then 3 per keypoint; every line of a dataset has as many)");
  EXPECT_NE(sample(list, "c.jpg").box_problem.find(label("c.txt") + ":1: 8 numbers, but "),
            std::string::npos);
  EXPECT_EQ(sample(list, "d.jpg").box_problem,
            label("d.txt") +
                ":1: 9 numbers; a YOLO line is 'class cx cy w h', then 'x y v' per keypoint");
  EXPECT_EQ(
      sample(list, "e.jpg").box_problem,
      label("e.txt") + ":1: keypoint 0 v = 3 is not 0, 1 or 2 (not labelled, hidden, visible)");
  EXPECT_TRUE(sample(list, "b.jpg").boxes.empty());
}

TEST_F(YoloBoxes, KeypointNamesFixTheCountAndTheFlip) {
  write_label("a.txt", "0 0.5 0.5 0.2 0.2 0.1 0.2 2 0.3 0.4 2\n");
  write_label("b.txt", "0 0.5 0.5 0.2 0.2\n0 0.5 0.5 0.2 0.2 0.1 0.2 2 0.3 0.4 2\n");
  SourceList list = listing({"a.jpg", "b.jpg"});
  BoxOptions o = options();
  o.yolo_keypoints = "LeftHand, RightHand";
  attach_boxes(list, src(), o);
  EXPECT_EQ(list.keypoint_names, (std::vector<std::string>{"LeftHand", "RightHand"}));
  EXPECT_EQ(list.keypoint_flip, (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(sample(list, "a.jpg").keypoints.size(), 6u);
  EXPECT_EQ(sample(list, "b.jpg").box_problem,
            label("b.txt") +
                ":1: 5 numbers, but the keypoint names make 11 (5, then 3 per "
                "keypoint)");
}

// An append keeps the dataset's flip pairs of the same keypoints when no
// map is given (a dataset whose build paired them otherwise stays as it is),
// and the classes and keypoints it holds.
TEST_F(YoloBoxes, AnAppendKeepsTheHeldFlipPairsAndKeypoints) {
  write_label("a.txt", "1 0.5 0.5 0.2 0.2 0.1 0.2 2 0.3 0.4 2\n");
  SourceList list = listing({"a.jpg"});
  const std::vector<std::string> held_paths = {"old.jpg"};
  const HeldTargets held{held_paths, {"cat", "dog"}, {"l_eye", "r_eye"}, {0, 1}};
  attach_boxes(list, src(), options(), &held);
  EXPECT_EQ(list.box_class_names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(list.keypoint_names, (std::vector<std::string>{"l_eye", "r_eye"}));
  EXPECT_EQ(list.keypoint_flip, (std::vector<int32_t>{0, 1}));  // held, not the name rule's
  BoxOptions mapped = options();
  mapped.keypoint_flip_map = "l_eye:r_eye";
  attach_boxes(list, src(), mapped, &held);
  EXPECT_EQ(list.keypoint_flip, (std::vector<int32_t>{1, 0}));  // a map given decides
}

TEST(KeypointFlipTable, PairsNamesThatDifferByLeftAndRight) {
  const std::vector<std::string> names = {"nose",      "left_eye", "right_eye", "LeftHand",
                                          "RightHand", "l_foot",   "r_foot",    "left_only",
                                          "Left_Ear",  "right_ear"};
  EXPECT_EQ(keypoint_flip_table(names, ""), (std::vector<int32_t>{0, 2, 1, 4, 3, 6, 5, 7, 9, 8}));
  // "l" and "r" pair as words of their own only: not inside "lip" / "rip".
  EXPECT_EQ(keypoint_flip_table(
                {"eye.L", "eye.R", "l ankle", "r ankle", "lip", "rip", "L-hip", "R-hip"}, ""),
            (std::vector<int32_t>{1, 0, 3, 2, 4, 5, 7, 6}));
  EXPECT_TRUE(keypoint_flip_table({}, "").empty());
}

TEST(KeypointFlipTable, AnExplicitMapOfNamesOrIndicesReplacesTheNameRule) {
  EXPECT_EQ(keypoint_flip_table({"a", "b", "c", "d"}, "a:c, 1 : 3"),
            (std::vector<int32_t>{2, 3, 0, 1}));
  EXPECT_EQ(keypoint_flip_table({"left_eye", "right_eye", "x"}, "0:2"),
            (std::vector<int32_t>{2, 1, 0}));
  // "none" swaps nothing, even names that differ by left/right.
  EXPECT_EQ(keypoint_flip_table({"left_eye", "right_eye", "x"}, " none "),
            (std::vector<int32_t>{0, 1, 2}));
}

TEST(KeypointFlipTable, MapErrorsQuoteTheMap) {
  const std::vector<std::string> names = {"a", "b", "c"};
  EXPECT_EQ(usage_error([&] { keypoint_flip_table(names, "a:z"); }),
            "BoxOptions::keypoint_flip_map 'a:z': 'z' is neither a keypoint name nor an index "
            "below 3 (keypoints: a, b, c)");
  EXPECT_NE(usage_error([&] { keypoint_flip_table(names, "0:3"); }).find("'3' is neither"),
            std::string::npos);
  EXPECT_EQ(usage_error([&] { keypoint_flip_table(names, "a:b,b:c"); }),
            "BoxOptions::keypoint_flip_map 'a:b,b:c': keypoint 'b' is paired twice");
  EXPECT_EQ(usage_error([&] { keypoint_flip_table(names, "a:a"); }),
            "BoxOptions::keypoint_flip_map 'a:a': pairs keypoint 'a' with itself");
  EXPECT_EQ(usage_error([&] { keypoint_flip_table(names, "a-b"); }),
            "BoxOptions::keypoint_flip_map 'a-b': 'a-b' is not a pair 'a:b' of keypoint names "
            "or indices");
  // Only separators: not the name rule, not "none", but a map of nothing.
  EXPECT_EQ(usage_error([&] { keypoint_flip_table(names, ",,,"); }),
            "BoxOptions::keypoint_flip_map ',,,': names no pair 'a:b'; 'none' keeps every "
            "keypoint in its place under a mirror, and no map pairs the names that differ only "
            "by left/right");
}

// A COCO file is parsed keeping only what a conversion reads, and a parse
// that runs out of memory is an error, not the end of the process (nlohmann's
// destructor allocates, which aborted the process while unwinding). In a
// child whose address space is capped 100 MB above what it has: a file whose
// unread member would take several hundred MB parses, one whose annotations
// do is refused with the file named.
TEST(CocoJson, UnreadMembersAreNotKeptAndRunningOutOfMemoryIsAnError) {
  if (test::kAddressSanitizer) GTEST_SKIP() << "an address-space cap cannot hold ASan's shadow";
  test::TempDir dir;
  const std::string image = R"({"id": 1, "file_name": "a.png", "width": 4, "height": 4})";
  const std::string annotation = R"({"image_id":1,"category_id":1,"bbox":[1,2,3,4]})";
  std::string many;
  std::string junk;
  for (int i = 0; i < 400000; ++i) {
    many += (i == 0 ? "" : ",") + annotation;
    junk += i == 0 ? "[0,1]" : ",[0,1]";
  }
  const fs::path junk_file = dir / "junk.json";
  const fs::path many_file = dir / "many.json";
  test::write_bytes(junk_file, R"({"info": {"junk": [)" + junk + R"(]}, "images": [)" + image +
                                   R"(], "annotations": [)" + annotation + "]}");
  test::write_bytes(many_file, R"({"images": [)" + image + R"(], "annotations": [)" + many + "]}");
  const int status = test::run_under_address_space_cap(uint64_t{100} << 20, [&] {
    try {
      const CocoDocument document = read_coco_file(junk_file);
      if (document.root().contains("info") || document.root().at("annotations").size() != 1) {
        return 11;
      }
    } catch (...) {
      return 12;  // the unread member was kept
    }
    try {
      const CocoDocument document = read_coco_file(many_file);
      return 13;  // the cap does not hold: the test would prove nothing
    } catch (const UsageError&) {
      return 14;
    } catch (const Error& e) {
      const std::string what = e.what();
      if (what.find("many.json: out of memory parsing its ") == std::string::npos) return 15;
    } catch (...) {
      return 16;
    }
    return 0;
  });
  EXPECT_EQ(status, 0);
}

}  // namespace
}  // namespace imgpack
