// Tests for libpack/src/targets/box_geometry.cpp: boxes and keypoints go
// through the very map their record's pixels went through (a resize, a
// DCT-scaled decode's frame, a variant's warp), clipped, dropped below the
// visible share, mirrored keypoints swapped with their partners.
#include "targets/box_geometry.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace imgpack {
namespace {

ResizeSpec output_spec(int width, int height, ResizeMode mode) {
  ResizeSpec spec;
  spec.width = static_cast<uint32_t>(width);
  spec.height = static_cast<uint32_t>(height);
  spec.mode = mode;
  return spec;
}

SourceSample sample_with(std::vector<SourceBox> boxes, std::vector<float> keypoints = {}) {
  SourceSample sample;
  sample.boxes = std::move(boxes);
  sample.keypoints = std::move(keypoints);
  return sample;
}

// Normalised float coordinates carry their rounding: compared to 1e-4 pixels.
void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << i;
}

void expect_boxes(const RecordBoxes& got, const std::vector<float>& want) {
  expect_near(got.boxes, want);
}

TEST(BoxGeometry, AStretchScalesEachAxis) {
  // 200 x 100 to 100 x 50: half size. Box (20, 20)-(100, 60) in source pixels.
  const cv::Size full(200, 100);
  const cv::Matx23d map =
      source_to_output(resize_map(full, output_spec(100, 50, ResizeMode::stretch)), {});
  RecordBoxes out;
  place_boxes(sample_with({{0.1F, 0.2F, 0.5F, 0.6F, 2, 1}}), full, map, {100, 50}, {}, out);
  expect_boxes(out, {10, 10, 50, 30});
  EXPECT_EQ(out.classes, std::vector<int32_t>{2});
  EXPECT_EQ(out.crowd, std::vector<uint8_t>{1});
}

TEST(BoxGeometry, ACentreCropClipsAndDropsBoxesLeftOutside) {
  // 200 x 100 to 50 x 50 crop: scaled to 100 x 50, columns 25..75 kept.
  const cv::Size full(200, 100);
  const cv::Matx23d map =
      source_to_output(resize_map(full, output_spec(50, 50, ResizeMode::crop)), {});
  RecordBoxes out;
  place_boxes(sample_with({{0, 0, 0.2F, 1, 0, 0},               // (0, 0)-(20, 50) - 25: outside
                           {0.2F, 0, 0.4F, 1, 1, 0},            // (-5, 0)-(15, 50): 75% inside
                           {0.45F, 0.1F, 0.55F, 0.3F, 2, 0}}),  // inside
              full, map, {50, 50}, {}, out);
  expect_boxes(out, {0, 0, 15, 50, 20, 5, 30, 15});
  EXPECT_EQ(out.classes, (std::vector<int32_t>{1, 2}));
  // A stricter rule drops the box with a quarter outside.
  place_boxes(sample_with({{0.2F, 0, 0.4F, 1, 1, 0}}), full, map, {50, 50}, {0.8, {}}, out);
  EXPECT_EQ(out.size(), 0u);
}

// A box annotated past the image's edges is stored clipped to the image
// with the share of it the image holds: what lay outside counts as not
// visible in every record, so a box mostly outside the image is dropped as
// one mostly outside the record is.
TEST(BoxGeometry, WhatLayPastTheImageCountsAsNotVisible) {
  const cv::Size full(200, 100);
  const cv::Matx23d map =
      source_to_output(resize_map(full, output_spec(100, 50, ResizeMode::stretch)), {});
  SourceBox quarter{0.5F, 0, 1, 0.5F, 3, 0};  // clipped from a box 4x its area
  quarter.inside = 0.25F;
  RecordBoxes out;
  place_boxes(sample_with({quarter}), full, map, {100, 50}, {}, out);  // 0.3 by default
  EXPECT_EQ(out.size(), 0u);
  place_boxes(sample_with({quarter}), full, map, {100, 50}, {0.2, {}}, out);
  expect_boxes(out, {50, 0, 100, 25});
  // In a crop the shares multiply: half of the clipped box is in the record.
  const cv::Matx23d crop =
      source_to_output(resize_map(full, output_spec(50, 50, ResizeMode::crop)), {});
  SourceBox left{0.125F, 0, 0.375F, 1, 1, 0};  // (12.5, 0)-(37.5, 50) - 25: half inside
  left.inside = 0.8F;
  place_boxes(sample_with({left}), full, crop, {50, 50}, {0.45, {}}, out);
  EXPECT_EQ(out.size(), 0u) << "0.8 x 0.5 of the box is visible, under 0.45";
  place_boxes(sample_with({left}), full, crop, {50, 50}, {0.35, {}}, out);
  expect_boxes(out, {0, 0, 12.5F, 50});
}

TEST(BoxGeometry, ADctScaledDecodeLandsWhereTheFullDecodeWould) {
  // A JPEG decoded at half scale: its pixels lie in the full frame at scale 1/2.
  const cv::Size full(200, 100);
  const ResizeSpec spec = output_spec(64, 48, ResizeMode::pad);
  const cv::Matx23d from_full = source_to_output(resize_map(full, spec), {});
  SourceFrame half;
  half.scale_x = half.scale_y = 0.5;
  const cv::Matx23d from_half = source_to_output(resize_map({100, 50}, spec), half);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(from_full.val[i], from_half.val[i], 1e-9) << i;
  // Letterboxed: 200 x 100 fills 64 x 32, 8 rows above.
  RecordBoxes out;
  place_boxes(sample_with({{0, 0, 1, 1, 0, 0}}), full, from_half, {64, 48}, {}, out);
  expect_boxes(out, {0, 8, 64, 40});
}

TEST(BoxGeometry, ARotationKeepsTheTransformedCornersBoundingBox) {
  // A quarter turn about the origin, then shifted into a 100 x 100 frame:
  // (x, y) -> (y, 100 - x).
  const cv::Matx23d map(0, 1, 0, -1, 0, 100);
  RecordBoxes out;
  place_boxes(sample_with({{0.1F, 0.2F, 0.3F, 0.6F, 0, 0}}), {100, 100}, map, {100, 100}, {}, out);
  expect_boxes(out, {20, 70, 60, 90});
}

TEST(BoxGeometry, KeypointsMoveExactlyAndSwapUnderAMirror) {
  // A left-right mirror of a 100 x 50 image: x -> 100 - x.
  const cv::Matx23d mirror(-1, 0, 100, 0, 1, 0);
  const std::vector<int32_t> flip = {1, 0, 2};  // left_eye, right_eye, nose
  // Keypoints: left (20, 10) visible, right (40, 10) hidden, nose not labelled.
  SourceSample sample =
      sample_with({{0.1F, 0.1F, 0.5F, 0.5F, 0, 0}}, {0.2F, 0.2F, 2, 0.4F, 0.2F, 1, 0.3F, 0.3F, 0});
  RecordBoxes out;
  place_boxes(sample, {100, 50}, mirror, {100, 50}, {0.3, flip}, out);
  expect_boxes(out, {50, 5, 90, 25});
  // Slot 0 (left eye) takes what the right eye became, and the reverse.
  expect_near(out.keypoints, {60, 10, 1, 80, 10, 2, 0, 0, 0});
  // Without a mirror the order stays; a keypoint outside the frame is dropped.
  const cv::Matx23d shift(1, 0, -30, 0, 1, 0);
  place_boxes(sample, {100, 50}, shift, {100, 50}, {0.3, flip}, out);
  expect_near(out.keypoints, {0, 0, 0, 10, 10, 1, 0, 0, 0});
}

TEST(BoxGeometry, TheAnnotationHashSeesEveryField) {
  const SourceSample a = sample_with({{0.1F, 0.2F, 0.3F, 0.4F, 1, 0}}, {});
  SourceSample b = a;
  EXPECT_EQ(annotation_hash(a), annotation_hash(b));
  b.boxes[0].crowd = 1;
  EXPECT_NE(annotation_hash(a), annotation_hash(b));
  b = a;
  b.boxes[0].y1 = 0.41F;
  EXPECT_NE(annotation_hash(a), annotation_hash(b));
  b = a;
  b.box_width = 640;
  EXPECT_NE(annotation_hash(a), annotation_hash(b));
  b = a;
  b.boxes[0].inside = 0.5F;
  EXPECT_NE(annotation_hash(a), annotation_hash(b));
}

}  // namespace
}  // namespace imgpack
