// Reads an encoded image's header without decoding it: format, stored size,
// EXIF orientation. Used to reject decompression bombs before any pixel memory
// is allocated, to pick the JPEG DCT scale, and to learn sizes cheaply.
//
// Every format imgpack decodes has a probe: JPEG (SOF, EXIF APP1, Adobe APP14),
// PNG (IHDR, eXIf chunk), BMP (all DIB header versions), TIFF and BigTIFF
// (first IFD: ImageWidth, ImageLength, Orientation), WebP (VP8, VP8L, VP8X
// canvas and its EXIF chunk), GIF (logical screen) and PNM/PAM (P1..P7).
//
// Pure functions over a byte buffer; they never read past its end, never
// allocate in proportion to the declared size, and are safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace imgpack {

enum class ImageFormat { unknown, jpeg, png, bmp, tiff, webp, pnm, gif };

// "JPEG", "PNG", ... ("unknown" for ImageFormat::unknown).
const char* format_name(ImageFormat format);

struct ImageInfo {
  ImageFormat format = ImageFormat::unknown;
  uint32_t width = 0;  // as stored, before orientation
  uint32_t height = 0;
  // EXIF orientation 1..8 (1 = upright; 5..8 swap width and height). From the
  // EXIF block of JPEG (APP1), PNG (eXIf) and WebP (EXIF chunk), or the TIFF
  // Orientation tag of the first IFD.
  int orientation = 1;
  // JPEG only: components and whether they are CMYK or YCCK (4 components).
  int components = 0;
  bool cmyk = false;

  bool transposed() const { return orientation >= 5 && orientation <= 8; }
  // Size after applying the orientation.
  uint32_t upright_width() const { return transposed() ? height : width; }
  uint32_t upright_height() const { return transposed() ? width : height; }
  uint64_t pixels() const { return uint64_t{width} * height; }
};

// The format, from magic bytes alone.
ImageFormat sniff_format(std::span<const uint8_t> bytes);

// For a Netpbm file (PNM, PAM): what keeps its pixel data from holding what
// its header declares (too few bytes, a plain value that is no number or
// above the maximum), else "". "" for every other format. OpenCV's reader
// prints its own complaint about such a file on stderr before failing, so
// the decoder asks this first.
std::string pnm_data_problem(std::span<const uint8_t> bytes);

// Header information, or std::nullopt if the format is unknown or the header
// is damaged or truncated before the size is known, or declares a zero size.
std::optional<ImageInfo> probe_image(std::span<const uint8_t> bytes);

// EXIF orientation from a TIFF-structured block ("II*\0", "MM\0*" or the
// BigTIFF variants), read from its first IFD; 1 when absent or unreadable.
int exif_orientation(std::span<const uint8_t> tiff);

}  // namespace imgpack
