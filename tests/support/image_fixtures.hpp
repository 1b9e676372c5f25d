// Encoded test images that OpenCV's imwrite cannot produce: EXIF orientation
// in JPEG, PNG and WebP, TIFF and BigTIFF with an Orientation tag, CMYK/YCCK
// JPEG, and headers that declare huge sizes (decompression bombs).
//
// Every function returns the file's bytes; nothing touches the disk.
#pragma once

#include <cstdint>
#include <opencv2/core.hpp>
#include <string>

namespace imgpack::test {

// OpenCV's in-memory encoding of an RGB (or RGBA / gray) image; `ext` picks
// the format (".png", ".jpg", ...). RGB channel order in, like write_image().
std::string encode_image(const std::string& ext, const cv::Mat& rgb,
                         const std::vector<int>& params = {});

// A TIFF-structured EXIF block (no "Exif\0\0" prefix) holding Orientation.
std::string exif_block(int orientation, bool big_endian = false);

// The JPEG with an EXIF APP1 segment holding `orientation` inserted after SOI.
std::string jpeg_with_exif(const std::string& jpeg, int orientation);

// The PNG with an eXIf chunk holding `orientation` inserted after IHDR.
std::string png_with_exif(const std::string& png, int orientation);

// A simple-format WebP (VP8 or VP8L) rewritten as extended format (VP8X)
// with an EXIF chunk holding `orientation`.
std::string webp_with_exif(const std::string& webp, int width, int height, int orientation);

// An uncompressed 8-bit RGB TIFF (or BigTIFF) with an Orientation tag.
std::string tiff_rgb(const cv::Mat& rgb, int orientation, bool bigtiff = false,
                     bool big_endian = false);

// A YCCK JPEG (TurboJPEG, 4:4:4) from CV_8UC4 CMYK pixels in Adobe's
// inverted convention (255 = no ink), as Photoshop writes them.
std::string cmyk_jpeg(const cv::Mat& cmyk, int quality);

// The image a CMYK (Adobe-inverted) decode should show: R = C*K/255 etc.
cv::Mat cmyk_to_rgb_reference(const cv::Mat& cmyk);

// The stored image that, displayed with EXIF `orientation`, shows `upright`
// (the inverse of the orientation's transform).
cv::Mat store_for_orientation(const cv::Mat& upright, int orientation);

// A small file whose header declares width x height, with no pixel data to
// speak of: "jpeg", "png", "bmp", "tiff", "bigtiff", "webp" (VP8X), "webp-vp8",
// "webp-vp8l", "gif", "pnm", "pam".
std::string bomb_header(const std::string& kind, uint32_t width, uint32_t height);

// A PNG built by hand (stored deflate blocks), for the layouts OpenCV does not
// write: colour type 0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA, at bit
// depth 8 or 16 (1, 2 or 4 for gray and palette, packed). `samples` holds width*height*channels
// values, row-major; `plte` (RGB triples) and `trns` (alpha per palette entry) for type 3.
std::string png_raw(int width, int height, int color_type, int bit_depth,
                    const std::vector<uint16_t>& samples, const std::string& plte = "",
                    const std::string& trns = "");

// CRC-32 as PNG uses it.
uint32_t png_crc(const std::string& bytes);

}  // namespace imgpack::test
