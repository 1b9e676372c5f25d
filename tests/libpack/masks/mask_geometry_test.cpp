// Tests for libpack/src/masks/mask_geometry.cpp (and Augmenter::render_mask): a
// mask gets exactly its image's geometry, nearest neighbour creates no
// label, and the DCT-scaled, rotated decodes of JPEGs line up with masks
// sampled from full resolution.
#include "masks/mask_geometry.hpp"

#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <set>

#include "augment.hpp"
#include "image/decode.hpp"
#include "image_fixtures.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

ResizeSpec output_spec(int width, int height, ResizeMode mode) {
  ResizeSpec spec;
  spec.width = static_cast<uint32_t>(width);
  spec.height = static_cast<uint32_t>(height);
  spec.mode = mode;
  return spec;
}

// A full-resolution picture and its label map: an off-centre ellipse and a
// tilted rectangle (labels 3 and 5) on background 1; the picture is white
// where the labels are not 1, black elsewhere.
struct Scene {
  cv::Mat rgb;
  cv::Mat mask;
};

Scene make_scene(int width, int height) {
  const auto w = static_cast<float>(width), h = static_cast<float>(height);
  Scene scene{cv::Mat(height, width, CV_8UC3, cv::Scalar(0, 0, 0)),
              cv::Mat(height, width, CV_8UC1, cv::Scalar(1))};
  const cv::RotatedRect ellipse(cv::Point2f(w * 0.35f, h * 0.4f), cv::Size2f(w * 0.3f, h * 0.45f),
                                20);
  const cv::RotatedRect box(cv::Point2f(w * 0.7f, h * 0.65f), cv::Size2f(w * 0.25f, h * 0.2f), -35);
  cv::ellipse(scene.mask, ellipse, cv::Scalar(3), cv::FILLED, cv::LINE_8);
  cv::ellipse(scene.rgb, ellipse, cv::Scalar(255, 255, 255), cv::FILLED, cv::LINE_8);
  cv::Point2f corners[4];
  box.points(corners);
  std::vector<cv::Point> polygon(corners, corners + 4);
  cv::fillConvexPoly(scene.mask, polygon, cv::Scalar(5), cv::LINE_8);
  cv::fillConvexPoly(scene.rgb, polygon, cv::Scalar(255, 255, 255), cv::LINE_8);
  return scene;
}

// Pixels where the image (thresholded) and the mask (label other than 1 and
// `fill`) disagree away from the mask's own edges: those more than `margin`
// pixels from them (whose neighbourhood of that radius in the mask is
// uniform). Returns that count.
int disagreements_off_edges(const cv::Mat& rgb, const cv::Mat& mask, uint8_t fill, int margin = 1) {
  cv::Mat gray;
  cv::cvtColor(rgb, gray, cv::COLOR_RGB2GRAY);
  int count = 0;
  for (int y = 0; y < mask.rows; ++y) {
    for (int x = 0; x < mask.cols; ++x) {
      const uint8_t label = mask.at<uint8_t>(y, x);
      bool uniform = true;
      for (int dy = -margin; dy <= margin && uniform; ++dy) {
        for (int dx = -margin; dx <= margin && uniform; ++dx) {
          const int yy = std::clamp(y + dy, 0, mask.rows - 1);
          const int xx = std::clamp(x + dx, 0, mask.cols - 1);
          uniform = mask.at<uint8_t>(yy, xx) == label;
        }
      }
      if (!uniform || label == fill) continue;
      const bool object = label != 1;
      if (object != (gray.at<uint8_t>(y, x) > 127)) ++count;
    }
  }
  return count;
}

std::set<uint8_t> labels_of(const cv::Mat& mask) {
  return std::set<uint8_t>(mask.begin<uint8_t>(), mask.end<uint8_t>());
}

TEST(MaskGeometry, AnIdentityResizeCopiesTheMask) {
  const Scene scene = make_scene(40, 30);
  for (ResizeMode mode : {ResizeMode::crop, ResizeMode::stretch, ResizeMode::pad}) {
    cv::Mat out(30, 40, CV_8UC1);
    resize_mask_into(scene.mask, {40, 30}, SourceFrame{}, output_spec(40, 30, mode), 255, out.data);
    EXPECT_EQ(cv::countNonZero(out != scene.mask), 0);
  }
}

TEST(MaskGeometry, PaddingIsTheFillAndTheInsideIsTheImagesFrame) {
  const Scene scene = make_scene(200, 100);
  cv::Mat out(64, 64, CV_8UC1), image(64, 64, CV_8UC3);
  const ResizeSpec spec = output_spec(64, 64, ResizeMode::pad);
  resize_into(scene.rgb, spec, image.data);
  resize_mask_into(scene.mask, scene.rgb.size(), SourceFrame{}, spec, 200, out.data);
  // 200x100 padded into 64x64: 64x32 inside, 16 rows of fill above and below.
  EXPECT_EQ(cv::countNonZero(out.rowRange(0, 16) != 200), 0);
  EXPECT_EQ(cv::countNonZero(out.rowRange(48, 64) != 200), 0);
  EXPECT_EQ(cv::countNonZero(out.rowRange(16, 48) == 200), 0);
  EXPECT_EQ(disagreements_off_edges(image, out, 200), 0);
  EXPECT_EQ(labels_of(out), (std::set<uint8_t>{1, 3, 5, 200}));
}

TEST(MaskGeometry, EveryResizeModeLinesUpWithTheImageAndCreatesNoLabel) {
  for (const cv::Size source : {cv::Size(301, 203), cv::Size(97, 211), cv::Size(1000, 60)}) {
    const Scene scene = make_scene(source.width, source.height);
    for (ResizeMode mode : {ResizeMode::crop, ResizeMode::stretch, ResizeMode::pad}) {
      for (const cv::Size out_size : {cv::Size(64, 48), cv::Size(150, 160)}) {
        SCOPED_TRACE(std::to_string(source.width) + "x" + std::to_string(source.height) + " -> " +
                     std::to_string(out_size.width) + "x" + std::to_string(out_size.height) + " " +
                     std::string(resize_mode_name(mode)));
        const ResizeSpec spec = output_spec(out_size.width, out_size.height, mode);
        cv::Mat image(out_size, CV_8UC3), mask(out_size, CV_8UC1);
        resize_into(scene.rgb, spec, image.data);
        resize_mask_into(scene.mask, source, SourceFrame{}, spec, 255, mask.data);
        EXPECT_EQ(disagreements_off_edges(image, mask, 255), 0);
        const std::set<uint8_t> labels = labels_of(mask);
        for (uint8_t label : labels) {
          EXPECT_TRUE(label == 1 || label == 3 || label == 5 || label == 255) << int(label);
        }
      }
    }
  }
}

TEST(MaskGeometry, ADctScaledDecodeFramesItsImageInTheFullResolution) {
  // 803x603 stored, decoded at 1/4: ceil gives 201x151 pixels, a quarter of
  // a pixel past the image on each side. Upright axes the orientation
  // reversed start that much early.
  DecodedImage image;
  image.scale_num = 1;
  image.scale_denom = 4;
  image.info.width = 803;
  image.info.height = 603;
  for (int orientation = 1; orientation <= 8; ++orientation) {
    image.orientation_applied = orientation;
    image.info.orientation = orientation;
    const bool transposed = orientation >= 5;
    image.pixels = cv::Mat(transposed ? 201 : 151, transposed ? 151 : 201, CV_8UC3);
    const cv::Size full(transposed ? 603 : 803, transposed ? 803 : 603);
    const SourceFrame frame = decoded_frame(image, full);
    EXPECT_DOUBLE_EQ(frame.scale_x, 0.25);
    EXPECT_DOUBLE_EQ(frame.scale_y, 0.25);
    const bool x_reversed =
        orientation == 2 || orientation == 3 || orientation == 6 || orientation == 7;
    const bool y_reversed =
        orientation == 3 || orientation == 4 || orientation == 7 || orientation == 8;
    EXPECT_DOUBLE_EQ(frame.offset_x, x_reversed ? 0.25 : 0) << orientation;
    EXPECT_DOUBLE_EQ(frame.offset_y, y_reversed ? 0.25 : 0) << orientation;
  }
  image.scale_denom = 1;
  EXPECT_DOUBLE_EQ(decoded_frame(image, {803, 603}).offset_x, 0);
  const SourceFrame halved = SourceFrame{}.resized({200, 100}, {100, 50});
  EXPECT_DOUBLE_EQ(halved.scale_x, 0.5);
  EXPECT_DOUBLE_EQ(halved.scale_y, 0.5);
}

TEST(MaskGeometry, JpegsDecodedAtAReducedScaleAndRotatedLineUpWithFullResolutionMasks) {
  const Scene upright = make_scene(803, 605);
  for (int orientation : {1, 3, 6, 8}) {
    SCOPED_TRACE("orientation " + std::to_string(orientation));
    const cv::Mat stored = test::store_for_orientation(upright.rgb, orientation);
    const std::string jpeg = test::jpeg_with_exif(
        test::encode_image(".jpg", stored, {cv::IMWRITE_JPEG_QUALITY, 95}), orientation);
    const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(jpeg.data()),
                                         jpeg.size());
    for (ResizeMode mode : {ResizeMode::crop, ResizeMode::pad}) {
      const ResizeSpec spec = output_spec(96, 80, mode);
      DecodeOptions decode;
      const cv::Size need = spec.required_source_size(803, 605);
      decode.min_width = static_cast<uint32_t>(need.width);
      decode.min_height = static_cast<uint32_t>(need.height);
      const DecodedImage image = decode_image(bytes, decode);
      ASSERT_LT(image.scale_num * 2, image.scale_denom + 1) << "not DCT-scaled";
      cv::Mat out(80, 96, CV_8UC3), mask(80, 96, CV_8UC1);
      resize_into(image.pixels, spec, out.data);
      resize_mask_into(upright.mask, image.pixels.size(), decoded_frame(image, {803, 605}), spec,
                       255, mask.data);
      EXPECT_EQ(disagreements_off_edges(out, mask, 255), 0);
    }
  }
}

TEST(MaskGeometry, WarpBordersReflectExtendOrFill) {
  // A 1 x 4 mask shifted right by two pixels.
  const cv::Mat mask = (cv::Mat_<uint8_t>(1, 4) << 10, 20, 30, 40);
  const cv::Matx23d shift(1, 0, 2, 0, 1, 0);
  cv::Mat out(1, 4, CV_8UC1);
  warp_mask(mask, shift, mask.size(), SourceFrame{}, {0, 0, 4, 1}, cv::BORDER_REFLECT_101, 99, out);
  EXPECT_EQ(std::vector<uint8_t>(out.begin<uint8_t>(), out.end<uint8_t>()),
            (std::vector<uint8_t>{30, 20, 10, 20}));
  warp_mask(mask, shift, mask.size(), SourceFrame{}, {0, 0, 4, 1}, cv::BORDER_REPLICATE, 99, out);
  EXPECT_EQ(std::vector<uint8_t>(out.begin<uint8_t>(), out.end<uint8_t>()),
            (std::vector<uint8_t>{10, 10, 10, 20}));
  warp_mask(mask, shift, mask.size(), SourceFrame{}, {0, 0, 4, 1}, cv::BORDER_CONSTANT, 99, out);
  EXPECT_EQ(std::vector<uint8_t>(out.begin<uint8_t>(), out.end<uint8_t>()),
            (std::vector<uint8_t>{99, 99, 10, 20}));
  // Far outside, reflection still lands inside (no walking step by step).
  const cv::Matx23d far(1, 0, -1e7, 0, 1, 0);
  warp_mask(mask, far, mask.size(), SourceFrame{}, {0, 0, 4, 1}, cv::BORDER_REFLECT_101, 99, out);
  EXPECT_EQ(labels_of(out).count(99), 0u);
}

// A JPEG decoded at 1/8 whose EXIF orientation reversed both axes: its first
// pixel starts 7/8 of a pixel before the upright frame, so a rotation's
// positions in it reach mask columns and rows below 0, which count as the
// first (as the slow path's clamp gives), never as memory before the mask.
TEST(MaskGeometry, RotatedWarpsOfAReversedDctScaledImageStayInsideTheMask) {
  const int width = 33, height = 41;  // upright frame; decoded: 5 x 6 pixels
  cv::Mat mask(height, width, CV_8UC1);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      mask.at<uint8_t>(y, x) = static_cast<uint8_t>((3 * x + 5 * y) % 251);
  DecodedImage image;
  image.scale_num = 1;
  image.scale_denom = 8;
  image.orientation_applied = 3;
  image.pixels = cv::Mat(6, 5, CV_8UC3);
  const SourceFrame frame = decoded_frame(image, {width, height});
  ASSERT_DOUBLE_EQ(frame.offset_x, 0.875);
  ASSERT_DOUBLE_EQ(frame.offset_y, 0.875);
  // Enlarged 4x and rotated by 30 degrees about the image's centre.
  cv::Matx23d map = cv::getRotationMatrix2D(cv::Point2f(2, 2.5F), 30, 4);
  map(0, 2) += 8;
  map(1, 2) += 9.5;
  cv::Matx23d inverse;
  cv::invertAffineTransform(map, inverse);
  cv::Mat out(24, 20, CV_8UC1);
  warp_mask(mask, map, image.pixels.size(), frame, {0, 0, 20, 24}, cv::BORDER_CONSTANT, 255, out);
  int inside = 0;
  for (int y = 0; y < out.rows; ++y) {
    for (int x = 0; x < out.cols; ++x) {
      const double px = inverse(0, 0) * x + inverse(0, 1) * y + inverse(0, 2);
      const double py = inverse(1, 0) * x + inverse(1, 1) * y + inverse(1, 2);
      if (px < 0 || px > 4 || py < 0 || py > 5) continue;  // the border rule's pixels
      const auto index = [](double p, double offset, int n) {
        return std::clamp(static_cast<int>(std::floor((p + 0.5 - offset) * 8 + 1e-7)), 0, n - 1);
      };
      EXPECT_EQ(out.at<uint8_t>(y, x), mask.at<uint8_t>(index(py, frame.offset_y, height),
                                                        index(px, frame.offset_x, width)))
          << "output pixel " << x << ", " << y;
      ++inside;
    }
  }
  EXPECT_GT(inside, 200);
}

TEST(MaskGeometry, AugmentedVariantsWarpTheMaskWithTheImagesAffine) {
  const Scene scene = make_scene(420, 300);
  AugmentSpec spec = parse_augment_spec(
      "hflip,vflip,rotate=40,shift=0.15,zoom=0.4:1.6,shear=15,crop_scale=0.3:1,aspect=0.7:1.4");
  for (FillMode fill : {FillMode::reflect, FillMode::constant, FillMode::edge}) {
    spec.fill = fill;
    const Augmenter augmenter(spec, output_spec(72, 64, ResizeMode::crop), 11);
    for (uint32_t v = 1; v <= 24; ++v) {
      const AugmentParams params = augmenter.sample(99, v, scene.rgb.size());
      // From full resolution, and from a reduced copy as render_augmented does.
      cv::Mat scratch;
      const std::vector<AugmentParams> one = {params};
      const cv::Mat& from = augmenter.reduce_source(scene.rgb, one, scratch);
      const SourceFrame frame = SourceFrame{}.resized(scene.rgb.size(), from.size());
      cv::Mat image(64, 72, CV_8UC3), mask(64, 72, CV_8UC1);
      augmenter.render(from, params, image.data);
      augmenter.render_mask(scene.mask, params, from.size(), frame, 255, mask.data);
      EXPECT_EQ(disagreements_off_edges(image, mask, 255), 0) << "variant " << v;
      for (uint8_t label : labels_of(mask)) {
        EXPECT_TRUE(label == 1 || label == 3 || label == 5 ||
                    (label == 255 && fill == FillMode::constant))
            << int(label) << " in variant " << v;
      }
    }
  }
}

}  // namespace
}  // namespace imgpack
