#include "imgpack/image_probe.hpp"

#include <cstring>

namespace imgpack {

namespace {

uint32_t be16(const uint8_t* p) { return (uint32_t{p[0]} << 8) | p[1]; }
uint32_t be32(const uint8_t* p) { return (be16(p) << 16) | be16(p + 2); }
uint32_t le16(const uint8_t* p) { return (uint32_t{p[1]} << 8) | p[0]; }
uint32_t le32(const uint8_t* p) { return (le16(p + 2) << 16) | le16(p); }

bool starts_with(std::span<const uint8_t> bytes, const char* magic, std::size_t n) {
  return bytes.size() >= n && std::memcmp(bytes.data(), magic, n) == 0;
}

std::optional<ImageInfo> probe_jpeg(std::span<const uint8_t> b) {
  ImageInfo info;
  info.format = ImageFormat::jpeg;
  bool adobe_transform_seen = false;
  std::size_t pos = 2;
  while (pos + 4 <= b.size()) {
    if (b[pos] != 0xFF) return std::nullopt;
    uint8_t marker = b[pos + 1];
    if (marker == 0xFF) {  // fill byte
      ++pos;
      continue;
    }
    if (marker == 0xD8 || (marker >= 0xD0 && marker <= 0xD7) || marker == 0x01) {
      pos += 2;
      continue;
    }
    if (marker == 0xD9 || marker == 0xDA) return std::nullopt;  // EOI or SOS before any SOF
    std::size_t length = be16(&b[pos + 2]);
    if (length < 2) return std::nullopt;
    const uint8_t* body = &b[pos + 4];
    std::size_t body_size = length - 2;
    bool complete = pos + 2 + length <= b.size();
    if (marker == 0xE1 && complete && body_size > 6 && std::memcmp(body, "Exif\0\0", 6) == 0) {
      info.orientation = exif_orientation({body + 6, body_size - 6});
    } else if (marker == 0xEE && complete && body_size >= 12 &&
               std::memcmp(body, "Adobe", 5) == 0) {
      adobe_transform_seen = true;
      info.cmyk = body[11] == 2 || body[11] == 0;  // 2 = YCCK, 0 = CMYK or RGB
    } else if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 &&
               marker != 0xCC) {
      if (pos + 10 > b.size()) return std::nullopt;
      info.height = be16(&b[pos + 5]);
      info.width = be16(&b[pos + 7]);
      info.components = b[pos + 9];
      if (info.width == 0 || info.height == 0) return std::nullopt;
      // Adobe's transform 0 means CMYK for 4 components (RGB for 3).
      info.cmyk = info.components == 4 && (info.cmyk || !adobe_transform_seen);
      return info;
    }
    pos += 2 + length;
  }
  return std::nullopt;
}

std::optional<ImageInfo> probe_png(std::span<const uint8_t> b) {
  // Signature (8), IHDR length (4), "IHDR" (4), width (4), height (4).
  if (b.size() < 24 || std::memcmp(&b[12], "IHDR", 4) != 0) return std::nullopt;
  ImageInfo info;
  info.format = ImageFormat::png;
  info.width = be32(&b[16]);
  info.height = be32(&b[20]);
  if (info.width == 0 || info.height == 0) return std::nullopt;
  return info;
}

}  // namespace

const char* format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::jpeg: return "JPEG";
    case ImageFormat::png: return "PNG";
    case ImageFormat::bmp: return "BMP";
    case ImageFormat::tiff: return "TIFF";
    case ImageFormat::webp: return "WebP";
    case ImageFormat::pnm: return "PNM";
    case ImageFormat::gif: return "GIF";
    case ImageFormat::unknown: break;
  }
  return "unknown";
}

ImageFormat sniff_format(std::span<const uint8_t> b) {
  if (starts_with(b, "\xFF\xD8\xFF", 3)) return ImageFormat::jpeg;
  if (starts_with(b, "\x89PNG\r\n\x1A\n", 8)) return ImageFormat::png;
  if (starts_with(b, "BM", 2)) return ImageFormat::bmp;
  if (starts_with(b, "II*\0", 4) || starts_with(b, "MM\0*", 4)) return ImageFormat::tiff;
  if (b.size() >= 12 && starts_with(b, "RIFF", 4) && std::memcmp(&b[8], "WEBP", 4) == 0) {
    return ImageFormat::webp;
  }
  if (starts_with(b, "GIF8", 4)) return ImageFormat::gif;
  if (b.size() >= 2 && b[0] == 'P' && b[1] >= '1' && b[1] <= '6') return ImageFormat::pnm;
  return ImageFormat::unknown;
}

std::optional<ImageInfo> probe_image(std::span<const uint8_t> bytes) {
  switch (sniff_format(bytes)) {
    case ImageFormat::jpeg: return probe_jpeg(bytes);
    case ImageFormat::png: return probe_png(bytes);
    default: return std::nullopt;
  }
}

int exif_orientation(std::span<const uint8_t> t) {
  if (t.size() < 8) return 1;
  bool little;
  if (std::memcmp(t.data(), "II*\0", 4) == 0) {
    little = true;
  } else if (std::memcmp(t.data(), "MM\0*", 4) == 0) {
    little = false;
  } else {
    return 1;
  }
  auto u16 = [&](std::size_t at) { return little ? le16(&t[at]) : be16(&t[at]); };
  auto u32 = [&](std::size_t at) { return little ? le32(&t[at]) : be32(&t[at]); };
  std::size_t ifd = u32(4);
  if (ifd + 2 > t.size()) return 1;
  std::size_t entries = u16(ifd);
  for (std::size_t i = 0; i < entries; ++i) {
    std::size_t entry = ifd + 2 + i * 12;
    if (entry + 12 > t.size()) return 1;
    if (u16(entry) == 0x0112) {  // Orientation, SHORT, count 1: value in the first two bytes
      uint32_t value = u16(entry + 8);
      return value >= 1 && value <= 8 ? static_cast<int>(value) : 1;
    }
  }
  return 1;
}

}  // namespace imgpack
