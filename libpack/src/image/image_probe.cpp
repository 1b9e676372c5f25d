#include "image/image_probe.hpp"

#include <cstring>
#include <string_view>

namespace imgpack {

namespace {

uint32_t be16(const uint8_t* p) { return (uint32_t{p[0]} << 8) | p[1]; }
uint32_t be32(const uint8_t* p) { return (be16(p) << 16) | be16(p + 2); }
uint64_t be64(const uint8_t* p) { return (uint64_t{be32(p)} << 32) | be32(p + 4); }
uint32_t le16(const uint8_t* p) { return (uint32_t{p[1]} << 8) | p[0]; }
uint32_t le24(const uint8_t* p) { return (uint32_t{p[2]} << 16) | le16(p); }
uint32_t le32(const uint8_t* p) { return (le16(p + 2) << 16) | le16(p); }
uint64_t le64(const uint8_t* p) { return (uint64_t{le32(p + 4)} << 32) | le32(p); }

bool starts_with(std::span<const uint8_t> bytes, const char* magic, std::size_t n) {
  return bytes.size() >= n && std::memcmp(bytes.data(), magic, n) == 0;
}

// Both sides must be positive and fit the 32-bit fields of ImageInfo.
std::optional<ImageInfo> sized(ImageInfo info, uint64_t width, uint64_t height) {
  if (width == 0 || height == 0 || width > UINT32_MAX || height > UINT32_MAX) {
    return std::nullopt;
  }
  info.width = static_cast<uint32_t>(width);
  info.height = static_cast<uint32_t>(height);
  return info;
}

// The fields imgpack needs from the first IFD of a TIFF structure (a TIFF
// file or an EXIF block).
struct TiffFields {
  uint64_t width = 0;
  uint64_t height = 0;
  int orientation = 1;
};

std::optional<TiffFields> read_first_ifd(std::span<const uint8_t> t) {
  if (t.size() < 8) return std::nullopt;
  bool little;
  if (t[0] == 'I' && t[1] == 'I') {
    little = true;
  } else if (t[0] == 'M' && t[1] == 'M') {
    little = false;
  } else {
    return std::nullopt;
  }
  auto u16 = [&](std::size_t at) -> uint64_t { return little ? le16(&t[at]) : be16(&t[at]); };
  auto u32 = [&](std::size_t at) -> uint64_t { return little ? le32(&t[at]) : be32(&t[at]); };
  auto u64 = [&](std::size_t at) -> uint64_t { return little ? le64(&t[at]) : be64(&t[at]); };

  const uint64_t version = u16(2);
  bool big;
  uint64_t ifd;
  if (version == 42) {
    big = false;
    ifd = u32(4);
  } else if (version == 43) {  // BigTIFF: offset size 8, reserved 0, 64-bit IFD offset
    if (t.size() < 16 || u16(4) != 8 || u16(6) != 0) return std::nullopt;
    big = true;
    ifd = u64(8);
  } else {
    return std::nullopt;
  }
  const std::size_t count_size = big ? 8 : 2;
  const std::size_t entry_size = big ? 20 : 12;
  const std::size_t value_at = big ? 12 : 8;
  if (ifd < 8 || ifd > t.size() || t.size() - ifd < count_size) return std::nullopt;
  const uint64_t entries = big ? u64(ifd) : u16(ifd);
  TiffFields fields;
  for (uint64_t i = 0; i < entries; ++i) {
    const uint64_t entry = ifd + count_size + i * entry_size;
    if (entry > t.size() || t.size() - entry < entry_size) break;  // truncated: keep what we have
    const uint64_t tag = u16(entry);
    const uint64_t type = u16(entry + 2);
    const uint64_t count = big ? u64(entry + 4) : u32(entry + 4);
    if (count != 1) continue;
    uint64_t value;
    if (type == 3) {  // SHORT
      value = u16(entry + value_at);
    } else if (type == 4) {  // LONG
      value = u32(entry + value_at);
    } else if (type == 16 && big) {  // LONG8
      value = u64(entry + value_at);
    } else {
      continue;
    }
    if (tag == 256) {  // ImageWidth
      fields.width = value;
    } else if (tag == 257) {  // ImageLength
      fields.height = value;
    } else if (tag == 274 && value >= 1 && value <= 8) {  // Orientation
      fields.orientation = static_cast<int>(value);
    }
  }
  return fields;
}

int orientation_of_exif_payload(std::span<const uint8_t> payload) {
  // Some writers keep the JPEG APP1 prefix in PNG and WebP EXIF payloads.
  if (payload.size() >= 6 && std::memcmp(payload.data(), "Exif\0\0", 6) == 0) {
    payload = payload.subspan(6);
  }
  return exif_orientation(payload);
}

std::optional<ImageInfo> probe_jpeg(std::span<const uint8_t> b) {
  ImageInfo info;
  info.format = ImageFormat::jpeg;
  bool exif_seen = false;
  std::size_t pos = 2;
  while (pos + 4 <= b.size()) {
    if (b[pos] != 0xFF) {  // stray bytes between segments: skip to the next marker, as libjpeg does
      ++pos;
      continue;
    }
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
    // May point one past the end (a header that ends after the length); only
    // read when `complete`. b[pos + 4] would be out of range there.
    const uint8_t* body = b.data() + pos + 4;
    std::size_t body_size = length - 2;
    bool complete = pos + 2 + length <= b.size();
    if (marker == 0xE1 && complete && !exif_seen && body_size > 6 &&
        std::memcmp(body, "Exif\0\0", 6) == 0) {
      exif_seen = true;  // the first EXIF block counts, as in libexif and OpenCV
      info.orientation = exif_orientation({body + 6, body_size - 6});
    } else if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 &&
               marker != 0xCC) {
      if (pos + 10 > b.size()) return std::nullopt;
      info.components = b[pos + 9];
      // Four components are CMYK or YCCK whatever the Adobe marker says
      // (libjpeg treats an unknown transform as YCCK).
      info.cmyk = info.components == 4;
      return sized(info, be16(&b[pos + 7]), be16(&b[pos + 5]));
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
  // eXIf may come before or (against the first edition of the spec) after
  // IDAT; hopping over chunk headers is cheap, so look through the whole file.
  std::size_t pos = 8;
  while (pos + 8 <= b.size()) {
    const uint64_t length = be32(&b[pos]);
    const uint8_t* type = &b[pos + 4];
    if (std::memcmp(type, "IEND", 4) == 0) break;
    if (std::memcmp(type, "eXIf", 4) == 0 && length <= b.size() - pos - 8) {
      info.orientation = orientation_of_exif_payload(b.subspan(pos + 8, length));
      break;
    }
    if (length > b.size()) break;
    pos += 12 + length;  // length, type, data, CRC
  }
  return sized(info, be32(&b[16]), be32(&b[20]));
}

std::optional<ImageInfo> probe_bmp(std::span<const uint8_t> b) {
  if (b.size() < 26) return std::nullopt;
  ImageInfo info;
  info.format = ImageFormat::bmp;
  const uint32_t header_size = le32(&b[14]);
  if (header_size == 12) {  // BITMAPCOREHEADER: 16-bit unsigned sizes
    return sized(info, le16(&b[18]), le16(&b[20]));
  }
  if (header_size < 16) return std::nullopt;
  // BITMAPINFOHEADER and later (and OS/2 2.x): signed 32-bit sizes; a negative
  // height means rows are stored top-down.
  const auto width = static_cast<int32_t>(le32(&b[18]));
  const auto height = static_cast<int32_t>(le32(&b[22]));
  if (width <= 0 || height == INT32_MIN) return std::nullopt;
  return sized(info, static_cast<uint64_t>(width),
               static_cast<uint64_t>(height < 0 ? -int64_t{height} : int64_t{height}));
}

std::optional<ImageInfo> probe_tiff(std::span<const uint8_t> b) {
  std::optional<TiffFields> fields = read_first_ifd(b);
  if (!fields) return std::nullopt;
  ImageInfo info;
  info.format = ImageFormat::tiff;
  info.orientation = fields->orientation;
  return sized(info, fields->width, fields->height);
}

std::optional<ImageInfo> probe_webp(std::span<const uint8_t> b) {
  // "RIFF" size "WEBP", then chunks: fourcc (4), size (4, little-endian), data (padded to even).
  if (b.size() < 30) return std::nullopt;
  ImageInfo info;
  info.format = ImageFormat::webp;
  const uint8_t* chunk = &b[12];
  const uint8_t* data = chunk + 8;
  const uint64_t first_size = le32(chunk + 4);
  if (std::memcmp(chunk, "VP8 ", 4) == 0) {
    // Frame tag (3 bytes), start code 9d 01 2a, 14-bit width and height.
    if (first_size < 10 || data[3] != 0x9d || data[4] != 0x01 || data[5] != 0x2a) {
      return std::nullopt;
    }
    return sized(info, le16(data + 6) & 0x3fff, le16(data + 8) & 0x3fff);
  }
  if (std::memcmp(chunk, "VP8L", 4) == 0) {
    // Signature 0x2f, then 14 bits width-1 and 14 bits height-1.
    if (first_size < 5 || data[0] != 0x2f) return std::nullopt;
    const uint32_t bits = le32(data + 1);
    return sized(info, (bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1);
  }
  if (std::memcmp(chunk, "VP8X", 4) == 0) {
    // Flags (1), reserved (3), canvas width-1 (24 bits), canvas height-1 (24 bits).
    if (first_size < 10) return std::nullopt;
    const bool has_exif = (data[0] & 0x08) != 0;
    std::optional<ImageInfo> result =
        sized(info, uint64_t{le24(data + 4)} + 1, uint64_t{le24(data + 7)} + 1);
    if (!result || !has_exif) return result;
    std::size_t pos = 12;
    while (pos + 8 <= b.size()) {
      const uint64_t size = le32(&b[pos + 4]);
      if (size > b.size() - pos - 8) break;
      if (std::memcmp(&b[pos], "EXIF", 4) == 0) {
        result->orientation = orientation_of_exif_payload(b.subspan(pos + 8, size));
        break;
      }
      pos += 8 + size + (size & 1);
    }
    return result;
  }
  return std::nullopt;
}

std::optional<ImageInfo> probe_gif(std::span<const uint8_t> b) {
  // "GIF87a" or "GIF89a", then the logical screen width and height.
  if (b.size() < 10 ||
      (std::memcmp(b.data(), "GIF87a", 6) != 0 && std::memcmp(b.data(), "GIF89a", 6) != 0)) {
    return std::nullopt;
  }
  ImageInfo info;
  info.format = ImageFormat::gif;
  return sized(info, le16(&b[6]), le16(&b[8]));
}

// Netpbm: P1..P6 are followed by whitespace-separated decimal width and
// height ('#' starts a comment running to the end of the line); P7 (PAM) by
// "WIDTH n" and "HEIGHT n" header lines up to "ENDHDR".
class PnmHeader {
 public:
  explicit PnmHeader(std::span<const uint8_t> b) : b_(b) {}

  std::optional<ImageInfo> probe() {
    ImageInfo info;
    info.format = ImageFormat::pnm;
    pos_ = 2;
    if (b_[1] != '7') {
      std::optional<uint64_t> width = number();
      std::optional<uint64_t> height = number();
      if (!width || !height) return std::nullopt;
      return sized(info, *width, *height);
    }
    uint64_t width = 0, height = 0;
    for (std::string_view key = token(); !key.empty(); key = token()) {
      if (key == "ENDHDR") return sized(info, width, height);
      if (key == "WIDTH" || key == "HEIGHT") {
        std::optional<uint64_t> value = number();
        if (!value) return std::nullopt;
        (key == "WIDTH" ? width : height) = *value;
      }
    }
    return std::nullopt;
  }

  // What is wrong with the pixel data after the header (see
  // pnm_data_problem()); "" where it holds what the header declares.
  std::string data_problem() {
    const char kind = static_cast<char>(b_[1]);
    pos_ = 2;
    uint64_t width = 0, height = 0, depth = 1, maxval = 1;
    if (kind == '7') {
      for (std::string_view key = token();; key = token()) {
        if (key.empty()) return "its header has no ENDHDR";
        if (key == "ENDHDR") break;
        uint64_t* field = key == "WIDTH"    ? &width
                          : key == "HEIGHT" ? &height
                          : key == "DEPTH"  ? &depth
                          : key == "MAXVAL" ? &maxval
                                            : nullptr;
        if (field == nullptr) continue;  // TUPLTYPE and the like
        const std::optional<uint64_t> value = number();
        if (!value) return "its header's " + std::string(key) + " is not a number";
        *field = *value;
      }
    } else {
      const std::optional<uint64_t> w = number(), h = number();
      if (!w || !h) return "its header's size is not two numbers";
      width = *w;
      height = *h;
      depth = kind == '3' || kind == '6' ? 3 : 1;
      if (kind != '1' && kind != '4') {
        const std::optional<uint64_t> m = number();
        if (!m) return "its header's maximum value is not a number";
        maxval = *m;
      }
    }
    if (maxval < 1 || maxval > 65535) {
      return "its maximum value " + std::to_string(maxval) + " is outside 1..65535";
    }
    if (depth < 1 || depth > 4) return "its depth " + std::to_string(depth) + " is outside 1..4";
    if (width > UINT32_MAX || height > UINT32_MAX || width * height > (uint64_t{1} << 40)) {
      return "its header declares " + std::to_string(width) + "x" + std::to_string(height);
    }
    const uint64_t values = width * height * depth;
    if (kind == '1' || kind == '2' || kind == '3') return ascii_problem(kind, values, maxval);
    // Binary: one whitespace byte after the header, then the samples.
    if (pos_ < b_.size()) ++pos_;
    const uint64_t bytes = kind == '4' ? (width + 7) / 8 * height : values * (maxval > 255 ? 2 : 1);
    const uint64_t held = b_.size() - std::min<uint64_t>(pos_, b_.size());
    if (held < bytes) {
      return "truncated: " + std::to_string(held) + " bytes of pixel data where its header " +
             "declares " + std::to_string(bytes);
    }
    return "";
  }

 private:
  // Plain (ASCII) samples: `values` decimal numbers up to `maxval` (P1: the
  // digits 0 and 1, which need no space between them).
  std::string ascii_problem(char kind, uint64_t values, uint64_t maxval) {
    for (uint64_t read = 0; read < values; ++read) {
      skip_space_and_comments();
      if (pos_ >= b_.size()) {
        return "truncated: " + std::to_string(read) + " of the " + std::to_string(values) +
               " values its header declares";
      }
      if (kind == '1') {
        if (b_[pos_] != '0' && b_[pos_] != '1') return "a value that is not 0 or 1";
        ++pos_;
        continue;
      }
      const std::size_t start = pos_;
      const std::optional<uint64_t> value = number();
      if (!value) {
        pos_ = start;
        std::string shown(token().substr(0, 20));
        for (char& c : shown) c = (c >= 32 && c < 127) ? c : '?';
        return "its value number " + std::to_string(read + 1) + ", '" + shown +
               "', is not a number";
      }
      if (*value > maxval) {
        return "value " + std::to_string(*value) + " is above its maximum value " +
               std::to_string(maxval);
      }
    }
    return "";
  }

  static bool is_space(uint8_t c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

  void skip_space_and_comments() {
    while (pos_ < b_.size()) {
      if (is_space(b_[pos_])) {
        ++pos_;
      } else if (b_[pos_] == '#') {
        while (pos_ < b_.size() && b_[pos_] != '\n' && b_[pos_] != '\r') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string_view token() {
    skip_space_and_comments();
    std::size_t start = pos_;
    while (pos_ < b_.size() && !is_space(b_[pos_])) ++pos_;
    return {reinterpret_cast<const char*>(b_.data()) + start, pos_ - start};
  }

  std::optional<uint64_t> number() {
    skip_space_and_comments();
    uint64_t value = 0;
    std::size_t digits = 0;
    while (pos_ < b_.size() && b_[pos_] >= '0' && b_[pos_] <= '9') {
      if (++digits > 10) return std::nullopt;  // beyond any 32-bit size
      value = value * 10 + (b_[pos_++] - '0');
    }
    if (digits == 0 || (pos_ < b_.size() && !is_space(b_[pos_]) && b_[pos_] != '#')) {
      return std::nullopt;
    }
    return value;
  }

  std::span<const uint8_t> b_;
  std::size_t pos_ = 0;
};

}  // namespace

std::string pnm_data_problem(std::span<const uint8_t> bytes) {
  if (sniff_format(bytes) != ImageFormat::pnm) return "";
  return PnmHeader(bytes).data_problem();
}

const char* format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::jpeg:
      return "JPEG";
    case ImageFormat::png:
      return "PNG";
    case ImageFormat::bmp:
      return "BMP";
    case ImageFormat::tiff:
      return "TIFF";
    case ImageFormat::webp:
      return "WebP";
    case ImageFormat::pnm:
      return "PNM";
    case ImageFormat::gif:
      return "GIF";
    case ImageFormat::unknown:
      break;
  }
  return "unknown";
}

ImageFormat sniff_format(std::span<const uint8_t> b) {
  if (starts_with(b, "\xFF\xD8\xFF", 3)) return ImageFormat::jpeg;
  if (starts_with(b, "\x89PNG\r\n\x1A\n", 8)) return ImageFormat::png;
  if (starts_with(b, "BM", 2)) return ImageFormat::bmp;
  if (starts_with(b, "II*\0", 4) || starts_with(b, "MM\0*", 4) || starts_with(b, "II+\0", 4) ||
      starts_with(b, "MM\0+", 4)) {
    return ImageFormat::tiff;
  }
  if (b.size() >= 12 && starts_with(b, "RIFF", 4) && std::memcmp(&b[8], "WEBP", 4) == 0) {
    return ImageFormat::webp;
  }
  if (starts_with(b, "GIF8", 4)) return ImageFormat::gif;
  if (b.size() >= 3 && b[0] == 'P' && b[1] >= '1' && b[1] <= '7' &&
      (b[2] == ' ' || (b[2] >= '\t' && b[2] <= '\r') || b[2] == '#')) {
    return ImageFormat::pnm;
  }
  return ImageFormat::unknown;
}

std::optional<ImageInfo> probe_image(std::span<const uint8_t> bytes) {
  switch (sniff_format(bytes)) {
    case ImageFormat::jpeg:
      return probe_jpeg(bytes);
    case ImageFormat::png:
      return probe_png(bytes);
    case ImageFormat::bmp:
      return probe_bmp(bytes);
    case ImageFormat::tiff:
      return probe_tiff(bytes);
    case ImageFormat::webp:
      return probe_webp(bytes);
    case ImageFormat::gif:
      return probe_gif(bytes);
    case ImageFormat::pnm:
      return PnmHeader(bytes).probe();
    case ImageFormat::unknown:
      break;
  }
  return std::nullopt;
}

int exif_orientation(std::span<const uint8_t> tiff) {
  std::optional<TiffFields> fields = read_first_ifd(tiff);
  return fields ? fields->orientation : 1;
}

}  // namespace imgpack
