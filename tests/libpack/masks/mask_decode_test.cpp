#include "masks/mask_decode.hpp"

#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "image/decode.hpp"
#include "image_fixtures.hpp"
#include "imgpack/error.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

using test::png_raw;

constexpr uint64_t kMaxPixels = uint64_t{1} << 28;

std::span<const uint8_t> bytes_of(const std::string& text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

cv::Mat decode(const std::string& file, const MaskColors* colors = nullptr) {
  return decode_mask(bytes_of(file), colors, kMaxPixels);
}

// The reason decode_mask() gives for `file`, or "" when it decodes.
std::string refusal(const std::string& file, const MaskColors* colors = nullptr,
                    uint64_t max_pixels = kMaxPixels) {
  try {
    decode_mask(bytes_of(file), colors, max_pixels);
  } catch (const DecodeError& e) {
    return e.what();
  }
  return "";
}

std::vector<uint8_t> values(const cv::Mat& labels) {
  EXPECT_EQ(labels.type(), CV_8UC1);
  return std::vector<uint8_t>(labels.begin<uint8_t>(), labels.end<uint8_t>());
}

// 5 x 3 labels with every kind of neighbour.
const std::vector<uint16_t> kLabels = {0, 0, 3, 3, 5, 0, 3, 3, 5, 5, 7, 7, 7, 5, 0};

std::string encode(const std::string& ext, const cv::Mat& image) {
  std::vector<uint8_t> out;
  EXPECT_TRUE(cv::imencode(ext, image, out));
  return {out.begin(), out.end()};
}

TEST(DecodeMask, PalettePngsGiveTheirIndicesNeverTheColours) {
  // Palette entries whose colours have nothing to do with their index.
  std::string plte;
  for (int i = 0; i < 8; ++i) plte += std::string{char(200 - 20 * i), char(13 * i), char(90)};
  const cv::Mat labels = decode(png_raw(5, 3, 3, 8, kLabels, plte));
  EXPECT_EQ(labels.size(), cv::Size(5, 3));
  EXPECT_EQ(values(labels), std::vector<uint8_t>(kLabels.begin(), kLabels.end()));
  // Packed 4-bit and 2-bit palettes, and transparency that is not applied.
  EXPECT_EQ(values(decode(png_raw(5, 3, 3, 4, kLabels, plte, std::string(8, '\x00')))),
            std::vector<uint8_t>(kLabels.begin(), kLabels.end()));
  const std::vector<uint16_t> small = {0, 1, 2, 3, 2, 1, 0, 1, 2, 3, 3, 0, 0, 0, 1};
  EXPECT_EQ(values(decode(png_raw(5, 3, 3, 2, small, plte.substr(0, 12)))),
            std::vector<uint8_t>(small.begin(), small.end()));
  // OpenCV, by contrast, would have given colours.
  const std::string palette_png = png_raw(5, 3, 3, 8, kLabels, plte);
  const cv::Mat expanded = cv::imdecode(
      std::vector<uint8_t>(palette_png.begin(), palette_png.end()), cv::IMREAD_UNCHANGED);
  EXPECT_EQ(expanded.channels(), 3);
}

TEST(DecodeMask, GrayMasksGiveTheirValuesAtAnyDepthThatFitsEightBits) {
  EXPECT_EQ(values(decode(png_raw(5, 3, 0, 8, kLabels))),
            std::vector<uint8_t>(kLabels.begin(), kLabels.end()));
  // A binary mask stays 0/1 (not scaled to 0/255).
  const std::vector<uint16_t> binary = {0, 1, 1, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1, 0, 1};
  EXPECT_EQ(values(decode(png_raw(5, 3, 0, 1, binary))),
            std::vector<uint8_t>(binary.begin(), binary.end()));
  // 16-bit: accepted when every value fits in 8 bits; else the value and pixel are named.
  EXPECT_EQ(values(decode(png_raw(5, 3, 0, 16, kLabels))),
            std::vector<uint8_t>(kLabels.begin(), kLabels.end()));
  std::vector<uint16_t> wide = kLabels;
  wide[7] = 300;
  const std::string reason = refusal(png_raw(5, 3, 0, 16, wide));
  EXPECT_NE(reason.find("16-bit"), std::string::npos) << reason;
  EXPECT_NE(reason.find("300 at pixel (2, 1)"), std::string::npos) << reason;
  EXPECT_NE(reason.find("fit in 8 bits"), std::string::npos) << reason;
  // Gray + alpha: the gray values.
  std::vector<uint16_t> gray_alpha;
  for (uint16_t v : kLabels) gray_alpha.insert(gray_alpha.end(), {v, 17});
  EXPECT_EQ(values(decode(png_raw(5, 3, 4, 8, gray_alpha))),
            std::vector<uint8_t>(kLabels.begin(), kLabels.end()));
  // Through OpenCV: TIFF (8 and 16-bit), BMP, PGM.
  cv::Mat gray(3, 5, CV_8UC1), gray16(3, 5, CV_16UC1);
  for (int i = 0; i < 15; ++i) {
    gray.data[i] = static_cast<uint8_t>(kLabels[static_cast<std::size_t>(i)]);
    gray16.at<uint16_t>(i / 5, i % 5) = kLabels[static_cast<std::size_t>(i)];
  }
  for (const std::string ext : {".tif", ".bmp", ".pgm"}) {
    EXPECT_EQ(values(decode(encode(ext, gray))), values(gray)) << ext;
  }
  EXPECT_EQ(values(decode(encode(".tif", gray16))), values(gray));
  gray16.at<uint16_t>(2, 4) = 4096;
  EXPECT_NE(refusal(encode(".tif", gray16)).find("4096 at pixel (4, 2)"), std::string::npos);
}

TEST(DecodeMask, ColourMasksNeedAColourTableUnlessTheirChannelsAgree) {
  std::vector<uint16_t> rgb, gray_rgb;
  for (uint16_t v : kLabels) {
    gray_rgb.insert(gray_rgb.end(), {v, v, v});
    rgb.insert(rgb.end(), {uint16_t(v == 0 ? 0 : 255), uint16_t(v * 10), uint16_t(v == 7 ? 9 : 0)});
  }
  EXPECT_EQ(values(decode(png_raw(5, 3, 2, 8, gray_rgb))),
            std::vector<uint8_t>(kLabels.begin(), kLabels.end()));
  const std::string reason = refusal(png_raw(5, 3, 2, 8, rgb));
  EXPECT_NE(reason.find("a colour mask"), std::string::npos) << reason;
  EXPECT_NE(reason.find("255,30,0 at pixel (2, 0)"), std::string::npos) << reason;
  EXPECT_NE(reason.find("MaskOptions::colors"), std::string::npos) << reason;

  MaskColors colors;
  colors.add(0, 0, 0, 0);
  colors.add(255, 30, 0, 1);
  colors.add(255, 50, 0, 2);
  colors.add(255, 70, 9, 3);
  const std::vector<uint8_t> mapped = {0, 0, 1, 1, 2, 0, 1, 1, 2, 2, 3, 3, 3, 2, 0};
  EXPECT_EQ(values(decode(png_raw(5, 3, 2, 8, rgb), &colors)), mapped);
  // RGBA: alpha ignored. Through OpenCV (BGR order): the same colours.
  std::vector<uint16_t> rgba;
  for (std::size_t i = 0; i < rgb.size(); i += 3) {
    rgba.insert(rgba.end(), {rgb[i], rgb[i + 1], rgb[i + 2], 128});
  }
  EXPECT_EQ(values(decode(png_raw(5, 3, 6, 8, rgba), &colors)), mapped);
  cv::Mat bgr(3, 5, CV_8UC3);
  for (int i = 0; i < 15; ++i) {
    const std::size_t at = static_cast<std::size_t>(i) * 3;
    bgr.at<cv::Vec3b>(i / 5, i % 5) =
        cv::Vec3b(static_cast<uint8_t>(rgb[at + 2]), static_cast<uint8_t>(rgb[at + 1]),
                  static_cast<uint8_t>(rgb[at]));
  }
  EXPECT_EQ(values(decode(encode(".bmp", bgr), &colors)), mapped);
  // A colour the table does not list.
  MaskColors partial;
  partial.add(0, 0, 0, 0);
  EXPECT_NE(refusal(png_raw(5, 3, 2, 8, rgb), &partial)
                .find("colour 255,30,0 at pixel (2, 0) is not in MaskOptions::colors"),
            std::string::npos);
}

TEST(DecodeMask, DamagedOrOversizedFilesAreRefusedWithAReason) {
  const std::string png = png_raw(5, 3, 0, 8, kLabels);
  EXPECT_EQ(refusal(""), "empty file");
  EXPECT_NE(refusal(png.substr(0, png.size() / 2)).find("not a readable PNG mask"),
            std::string::npos);
  EXPECT_NE(refusal("not an image at all").find("not a readable"), std::string::npos);
  EXPECT_NE(refusal(png, nullptr, 14).find("more than ConvertOptions::max_pixels"),
            std::string::npos);
  EXPECT_EQ(refusal(png, nullptr, 15), "");
  cv::Mat gray(300, 400, CV_8UC1, cv::Scalar(2));
  EXPECT_NE(refusal(encode(".tif", gray), nullptr, 1000).find("400x300"), std::string::npos);
  cv::Mat floats(3, 5, CV_32FC1, cv::Scalar(1.5));
  EXPECT_NE(refusal(encode(".tif", floats)).find("8-bit integers"), std::string::npos);
}

TEST(MaskColors, ReadsACsvOfColoursLabelsAndNames) {
  test::TempDir dir;
  test::write_bytes(dir / "colors.csv",
                    "r,g,b,label,name\n0,0,0,0,background\n128,0,0,1,aeroplane\n"
                    "0,128,0,2,bicycle\n224,224,192,255,\n");
  const MaskColors colors = MaskColors::read(dir / "colors.csv");
  EXPECT_EQ(colors.label_of(128, 0, 0), 1);
  EXPECT_EQ(colors.label_of(224, 224, 192), 255);
  EXPECT_EQ(colors.label_of(1, 2, 3), -1);
  EXPECT_EQ(colors.names(), (std::vector<std::string>{"background", "aeroplane", "bicycle"}));
  MaskColors other;
  other.add(0, 0, 0, 1);
  EXPECT_NE(colors.fingerprint(), other.fingerprint());

  auto refusal_of = [&](const std::string& text) -> std::string {
    test::write_bytes(dir / "bad.csv", text);
    try {
      MaskColors::read(dir / "bad.csv");
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(
      refusal_of("r,g,b,label\n0,0,0,0\n0,0,0,1\n").find("bad.csv:3: colour 0,0,0 is listed twice"),
      std::string::npos);
  // Named once: "FILE:2: ...", not "FILE:2: FILE:2: ...".
  EXPECT_EQ(refusal_of("r,g,b,label\n0,0,256,0\n"),
            (dir / "bad.csv").string() + ":2: '256' in column b is not an integer from 0 to 255");
  EXPECT_EQ(refusal_of("r,g,b,label\n256,0,0,0\n"),
            (dir / "bad.csv").string() + ":2: '256' in column r is not an integer from 0 to 255");
  EXPECT_NE(refusal_of("r,g,label\n0,0,0\n").find("'b'"), std::string::npos);
  EXPECT_NE(refusal_of("r,g,b,label\n").find("no colours"), std::string::npos);
  EXPECT_NE(refusal_of("r,g,b,label,name\n0,0,0,1,a\n1,1,1,1,b\n").find("named both 'a' and 'b'"),
            std::string::npos);
}

TEST(MaskClassNames, OneNamePerLine) {
  test::TempDir dir;
  test::write_bytes(dir / "classes.txt", "background\r\ncat \ndog\n");
  EXPECT_EQ(read_mask_class_names(dir / "classes.txt"),
            (std::vector<std::string>{"background", "cat", "dog"}));
  // A UTF-8 BOM (Windows editors) is not part of the first name.
  test::write_bytes(dir / "bom.txt",
                    "\xEF\xBB\xBF"
                    "background\r\ncat\r\n");
  EXPECT_EQ(read_mask_class_names(dir / "bom.txt"),
            (std::vector<std::string>{"background", "cat"}));
  test::write_bytes(dir / "empty.txt", "");
  EXPECT_THROW(read_mask_class_names(dir / "empty.txt"), UsageError);
  EXPECT_THROW(read_mask_class_names(dir / "missing.txt"), UsageError);
}

}  // namespace
}  // namespace imgpack
