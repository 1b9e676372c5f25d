#include "image_fixtures.hpp"

#include <turbojpeg.h>

#include <algorithm>
#include <array>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <stdexcept>
#include <vector>

namespace imgpack::test {

namespace {

class ByteWriter {
 public:
  explicit ByteWriter(bool big_endian) : big_(big_endian) {}
  void u8(uint64_t v) { out_ += static_cast<char>(v & 0xFF); }
  void u16(uint64_t v) { put(v, 2); }
  void u32(uint64_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  void raw(const std::string& bytes) { out_ += bytes; }
  std::string& bytes() { return out_; }

 private:
  void put(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) {
      int shift = big_ ? 8 * (n - 1 - i) : 8 * i;
      out_ += static_cast<char>((v >> shift) & 0xFF);
    }
  }
  bool big_;
  std::string out_;
};

struct IfdEntry {
  uint16_t tag;
  uint16_t type;  // 3 SHORT, 4 LONG
  std::vector<uint64_t> values;
};

// header | payload | out-of-line values | IFD. Entries must be sorted by tag.
std::string build_tiff(const std::vector<IfdEntry>& entries, const std::string& payload,
                       bool bigtiff, bool big_endian) {
  ByteWriter w(big_endian);
  const std::size_t header = bigtiff ? 16 : 8;
  const std::size_t inline_bytes = bigtiff ? 8 : 4;
  // Out-of-line values go right after the payload.
  ByteWriter extra(big_endian);
  std::vector<std::string> field(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    ByteWriter value(big_endian);
    for (uint64_t v : entries[i].values) {
      if (entries[i].type == 3)
        value.u16(v);
      else
        value.u32(v);
    }
    std::string bytes = value.bytes();
    if (bytes.size() <= inline_bytes) {
      bytes.resize(inline_bytes, '\0');
      field[i] = bytes;
    } else {
      ByteWriter offset(big_endian);
      std::size_t at = header + payload.size() + extra.bytes().size();
      if (bigtiff)
        offset.u64(at);
      else
        offset.u32(at);
      field[i] = offset.bytes();
      extra.raw(bytes);
      if (extra.bytes().size() % 2) extra.u8(0);
    }
  }
  const std::size_t ifd = header + payload.size() + extra.bytes().size();
  w.raw(big_endian ? "MM" : "II");
  if (bigtiff) {
    w.u16(43);
    w.u16(8);
    w.u16(0);
    w.u64(ifd);
  } else {
    w.u16(42);
    w.u32(ifd);
  }
  w.raw(payload);
  w.raw(extra.bytes());
  if (bigtiff)
    w.u64(entries.size());
  else
    w.u16(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    w.u16(entries[i].tag);
    w.u16(entries[i].type);
    if (bigtiff)
      w.u64(entries[i].values.size());
    else
      w.u32(entries[i].values.size());
    w.raw(field[i]);
  }
  if (bigtiff)
    w.u64(0);
  else
    w.u32(0);
  return w.bytes();
}

std::string png_chunk(const std::string& type, const std::string& data) {
  ByteWriter w(true);
  w.u32(data.size());
  w.raw(type);
  w.raw(data);
  w.u32(png_crc(type + data));
  return w.bytes();
}

std::string riff_chunk(const std::string& fourcc, const std::string& data) {
  ByteWriter w(false);
  w.raw(fourcc);
  w.u32(data.size());
  w.raw(data);
  if (data.size() % 2) w.u8(0);
  return w.bytes();
}

std::string riff_webp(const std::string& chunks) {
  ByteWriter w(false);
  w.raw("RIFF");
  w.u32(4 + chunks.size());
  w.raw("WEBP");
  w.raw(chunks);
  return w.bytes();
}

}  // namespace

std::string encode_image(const std::string& ext, const cv::Mat& rgb,
                         const std::vector<int>& params) {
  cv::Mat bgr;
  if (rgb.channels() == 3)
    cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  else if (rgb.channels() == 4)
    cv::cvtColor(rgb, bgr, cv::COLOR_RGBA2BGRA);
  else
    bgr = rgb;
  std::vector<uint8_t> out;
  if (!cv::imencode(ext, bgr, out, params)) throw std::runtime_error("cannot encode " + ext);
  return std::string(out.begin(), out.end());
}

uint32_t png_crc(const std::string& bytes) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (char ch : bytes) c = table[(c ^ static_cast<uint8_t>(ch)) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::string png_raw(int width, int height, int color_type, int bit_depth,
                    const std::vector<uint16_t>& samples, const std::string& plte,
                    const std::string& trns) {
  const int channels = color_type == 2 ? 3 : color_type == 4 ? 2 : color_type == 6 ? 4 : 1;
  if (samples.size() != static_cast<std::size_t>(width) * height * channels) {
    throw std::runtime_error("png_raw: wrong sample count");
  }
  ByteWriter raw(true);
  std::size_t i = 0;
  for (int y = 0; y < height; ++y) {
    raw.u8(0);  // filter: none
    if (bit_depth < 8) {
      // Packed, first sample in the high bits, rows padded to whole bytes.
      const int per_byte = 8 / bit_depth;
      for (int x = 0; x < width * channels; x += per_byte) {
        int byte = 0;
        for (int k = 0; k < per_byte; ++k) {
          const int value = x + k < width * channels ? samples[i++] : 0;
          byte |= value << (8 - bit_depth * (k + 1));
        }
        raw.u8(static_cast<uint8_t>(byte));
      }
      continue;
    }
    for (int x = 0; x < width * channels; ++x) {
      if (bit_depth == 16)
        raw.u16(samples[i++]);
      else
        raw.u8(samples[i++]);
    }
  }
  // zlib stream of stored blocks, then Adler-32.
  const std::string& data = raw.bytes();
  ByteWriter z(true);
  z.u8(0x78);
  z.u8(0x01);
  std::size_t pos = 0;
  do {
    const std::size_t n = std::min<std::size_t>(data.size() - pos, 65535);
    z.u8(pos + n == data.size() ? 1 : 0);
    z.u8(n & 0xFF);
    z.u8(n >> 8);
    z.u8(~n & 0xFF);
    z.u8((~n >> 8) & 0xFF);
    z.raw(data.substr(pos, n));
    pos += n;
  } while (pos < data.size());
  uint32_t a = 1, b = 0;
  for (char c : data) {
    a = (a + static_cast<uint8_t>(c)) % 65521;
    b = (b + a) % 65521;
  }
  z.u32((b << 16) | a);
  ByteWriter ihdr(true);
  ihdr.u32(width);
  ihdr.u32(height);
  ihdr.u8(bit_depth);
  ihdr.u8(color_type);
  ihdr.u8(0);
  ihdr.u8(0);
  ihdr.u8(0);
  std::string png = std::string("\x89PNG\r\n\x1A\n", 8) + png_chunk("IHDR", ihdr.bytes());
  if (!plte.empty()) png += png_chunk("PLTE", plte);
  if (!trns.empty()) png += png_chunk("tRNS", trns);
  return png + png_chunk("IDAT", z.bytes()) + png_chunk("IEND", "");
}

std::string exif_block(int orientation, bool big_endian) {
  // A few unrelated tags around Orientation, as cameras write them.
  return build_tiff(
      {{0x010F, 4, {7}}, {0x0112, 3, {static_cast<uint64_t>(orientation)}}, {0x011A, 4, {72, 1}}},
      "", false, big_endian);
}

std::string jpeg_with_exif(const std::string& jpeg, int orientation) {
  std::string body = std::string("Exif\0\0", 6) + exif_block(orientation, true);
  ByteWriter w(true);
  w.raw(jpeg.substr(0, 2));  // SOI
  w.u8(0xFF);
  w.u8(0xE1);
  w.u16(body.size() + 2);
  w.raw(body);
  w.raw(jpeg.substr(2));
  return w.bytes();
}

std::string png_with_exif(const std::string& png, int orientation) {
  const std::size_t after_ihdr = 8 + 8 + 13 + 4;
  return png.substr(0, after_ihdr) + png_chunk("eXIf", exif_block(orientation)) +
         png.substr(after_ihdr);
}

std::string webp_with_exif(const std::string& webp, int width, int height, int orientation) {
  if (webp.size() < 20 || webp.compare(0, 4, "RIFF") != 0) {
    throw std::runtime_error("webp_with_exif: not a RIFF WebP");
  }
  const std::string image_chunks = webp.substr(12);
  const bool lossless = webp.compare(12, 4, "VP8L") == 0;
  ByteWriter vp8x(false);
  vp8x.u8(0x08 | (lossless ? 0x10 : 0));  // EXIF (+ alpha, which VP8L may carry)
  vp8x.u8(0);
  vp8x.u8(0);
  vp8x.u8(0);
  for (int v : {width - 1, height - 1}) {
    vp8x.u8(v & 0xFF);
    vp8x.u8((v >> 8) & 0xFF);
    vp8x.u8((v >> 16) & 0xFF);
  }
  return riff_webp(riff_chunk("VP8X", vp8x.bytes()) + image_chunks +
                   riff_chunk("EXIF", exif_block(orientation)));
}

std::string tiff_rgb(const cv::Mat& rgb, int orientation, bool bigtiff, bool big_endian) {
  CV_Assert(rgb.type() == CV_8UC3 && rgb.isContinuous());
  const std::string pixels(reinterpret_cast<const char*>(rgb.data), rgb.total() * 3);
  const uint64_t data_offset = bigtiff ? 16 : 8;
  const auto w = static_cast<uint64_t>(rgb.cols), h = static_cast<uint64_t>(rgb.rows);
  return build_tiff({{256, 4, {w}},
                     {257, 4, {h}},
                     {258, 3, {8, 8, 8}},
                     {259, 3, {1}},
                     {262, 3, {2}},
                     {273, 4, {data_offset}},
                     {274, 3, {static_cast<uint64_t>(orientation)}},
                     {277, 3, {3}},
                     {278, 4, {h}},
                     {279, 4, {pixels.size()}},
                     {284, 3, {1}}},
                    pixels, bigtiff, big_endian);
}

std::string cmyk_jpeg(const cv::Mat& cmyk, int quality) {
  CV_Assert(cmyk.type() == CV_8UC4);
  tjhandle tj = tjInitCompress();
  if (tj == nullptr) throw std::runtime_error("tjInitCompress failed");
  unsigned char* out = nullptr;
  unsigned long size = 0;
  int rc = tjCompress2(tj, cmyk.data, cmyk.cols, static_cast<int>(cmyk.step), cmyk.rows, TJPF_CMYK,
                       &out, &size, TJSAMP_444, quality, 0);
  std::string bytes;
  if (rc == 0) bytes.assign(reinterpret_cast<const char*>(out), size);
  std::string error = rc == 0 ? "" : tjGetErrorStr2(tj);
  tjFree(out);
  tjDestroy(tj);
  if (rc != 0) throw std::runtime_error("tjCompress2 (CMYK): " + error);
  return bytes;
}

cv::Mat cmyk_to_rgb_reference(const cv::Mat& cmyk) {
  cv::Mat rgb(cmyk.rows, cmyk.cols, CV_8UC3);
  for (int y = 0; y < cmyk.rows; ++y) {
    for (int x = 0; x < cmyk.cols; ++x) {
      const cv::Vec4b& p = cmyk.at<cv::Vec4b>(y, x);
      for (int c = 0; c < 3; ++c) {
        rgb.at<cv::Vec3b>(y, x)[c] = static_cast<uint8_t>((p[c] * p[3] + 127) / 255);
      }
    }
  }
  return rgb;
}

cv::Mat store_for_orientation(const cv::Mat& upright, int orientation) {
  // Orientation o says how to turn the stored image to display it; storing
  // applies the inverse. 2, 3, 4, 5 and 7 are their own inverses.
  cv::Mat out;
  switch (orientation) {
    case 2:
      cv::flip(upright, out, 1);
      break;
    case 3:
      cv::flip(upright, out, -1);
      break;
    case 4:
      cv::flip(upright, out, 0);
      break;
    case 5:
      cv::transpose(upright, out);
      break;
    case 6:
      cv::rotate(upright, out, cv::ROTATE_90_COUNTERCLOCKWISE);
      break;
    case 7:
      cv::transpose(upright, out);
      cv::flip(out, out, -1);
      break;
    case 8:
      cv::rotate(upright, out, cv::ROTATE_90_CLOCKWISE);
      break;
    default:
      out = upright.clone();
      break;
  }
  return out;
}

std::string bomb_header(const std::string& kind, uint32_t width, uint32_t height) {
  if (kind == "jpeg") {
    ByteWriter w(true);
    w.u16(0xFFD8);
    w.u16(0xFFC0);  // SOF0, 3 components
    w.u16(17);
    w.u8(8);
    w.u16(height);
    w.u16(width);
    w.u8(3);
    for (int c = 1; c <= 3; ++c) {
      w.u8(c);
      w.u8(c == 1 ? 0x22 : 0x11);
      w.u8(c == 1 ? 0 : 1);
    }
    w.u16(0xFFD9);
    return w.bytes();
  }
  if (kind == "png") {
    ByteWriter ihdr(true);
    ihdr.u32(width);
    ihdr.u32(height);
    ihdr.raw(std::string("\x08\x02\x00\x00\x00", 5));
    return std::string("\x89PNG\r\n\x1A\n", 8) + png_chunk("IHDR", ihdr.bytes()) +
           png_chunk("IDAT", std::string("\x78\x9c\x03\x00\x00\x00\x00\x01", 8)) +
           png_chunk("IEND", "");
  }
  if (kind == "bmp") {
    ByteWriter w(false);
    w.raw("BM");
    w.u32(54 + 16);
    w.u32(0);
    w.u32(54);
    w.u32(40);
    w.u32(width);
    w.u32(height);
    w.u16(1);
    w.u16(24);
    for (int i = 0; i < 6; ++i) w.u32(0);
    w.raw(std::string(16, '\0'));
    return w.bytes();
  }
  if (kind == "tiff" || kind == "bigtiff") {
    const bool big = kind == "bigtiff";
    const std::string pixels(64, '\0');
    return build_tiff({{256, 4, {width}},
                       {257, 4, {height}},
                       {258, 3, {8, 8, 8}},
                       {259, 3, {1}},
                       {262, 3, {2}},
                       {273, 4, {big ? 16u : 8u}},
                       {277, 3, {3}},
                       {278, 4, {height}},
                       {279, 4, {pixels.size()}}},
                      pixels, big, false);
  }
  if (kind == "webp") {
    ByteWriter vp8x(false);
    vp8x.u32(0);
    for (uint32_t v : {width - 1, height - 1}) {
      vp8x.u8(v & 0xFF);
      vp8x.u8((v >> 8) & 0xFF);
      vp8x.u8((v >> 16) & 0xFF);
    }
    return riff_webp(riff_chunk("VP8X", vp8x.bytes()) +
                     riff_chunk("VP8L", std::string("\x2f\0\0\0\0\0", 6)));
  }
  if (kind == "webp-vp8") {
    ByteWriter d(false);
    d.raw(std::string("\x10\x02\x00\x9d\x01\x2a", 6));
    d.u16(width & 0x3fff);
    d.u16(height & 0x3fff);
    d.raw(std::string(8, '\0'));
    return riff_webp(riff_chunk("VP8 ", d.bytes()));
  }
  if (kind == "webp-vp8l") {
    ByteWriter d(false);
    d.u8(0x2f);
    d.u32(((width - 1) & 0x3fff) | (((height - 1) & 0x3fff) << 14));
    d.raw(std::string(11, '\0'));
    return riff_webp(riff_chunk("VP8L", d.bytes()));
  }
  if (kind == "gif") {
    ByteWriter w(false);
    w.raw("GIF89a");
    w.u16(width);
    w.u16(height);
    w.raw(std::string("\x00\x00\x00\x3b", 4));
    return w.bytes();
  }
  if (kind == "pnm") {
    return "P6\n# a comment\n" + std::to_string(width) + " " + std::to_string(height) + "\n255\n" +
           std::string(12, '\0');
  }
  if (kind == "pam") {
    return "P7\nWIDTH " + std::to_string(width) + "\nHEIGHT " + std::to_string(height) +
           "\nDEPTH 3\nMAXVAL 255\nTUPLTYPE RGB\nENDHDR\n" + std::string(12, '\0');
  }
  throw std::runtime_error("bomb_header: unknown kind " + kind);
}

}  // namespace imgpack::test
