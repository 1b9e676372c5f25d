#include "masks/mask_decode.hpp"

#include <algorithm>
#include <charconv>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <opencv2/imgcodecs.hpp>  // IMREAD_UNCHANGED; decoding goes through codecs.hpp
#include <string_view>
#include <unordered_map>

#include "files.hpp"
#include "image/codecs.hpp"
#include "image/decode.hpp"
#include "image/image_probe.hpp"
#include "image/png_read.hpp"
#include "imgpack/checksum.hpp"
#include "imgpack/error.hpp"
#include "inputs/csv.hpp"
#include "inputs/text_lines.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

constexpr const char* kColorsHint =
    "; a colour mask needs MaskOptions::colors, a CSV mapping each colour (r,g,b) to its label";

std::string pixel_text(int x, int y) {
  return "(" + std::to_string(x) + ", " + std::to_string(y) + ")";
}

std::string color_text(int r, int g, int b) {
  return std::to_string(r) + "," + std::to_string(g) + "," + std::to_string(b);
}

// ------------------------------------------------------------ samples -> labels

// Rows of decoded samples: `channels` interleaved samples of 8 or 16 bits
// (native byte order) per pixel, colour channels in `rgb` or BGR order.
struct Samples {
  const uint8_t* data = nullptr;
  std::size_t stride = 0;  // bytes per row
  int width = 0;
  int height = 0;
  int channels = 1;  // 1 gray, 2 gray+alpha, 3 colour, 4 colour+alpha
  bool sixteen = false;
  bool rgb = true;  // colour channel order: RGB (libpng) or BGR (OpenCV)

  uint32_t at(int x, int y, int c) const {
    const uint8_t* row = data + stride * static_cast<std::size_t>(y);
    const std::size_t i = static_cast<std::size_t>(x) * channels + c;
    if (!sixteen) return row[i];
    uint16_t value;
    std::memcpy(&value, row + 2 * i, 2);
    return value;
  }
};

// Labels from gray samples: the values, which must fit in 8 bits.
void gray_labels(const Samples& s, cv::Mat& labels) {
  for (int y = 0; y < s.height; ++y) {
    auto* out = labels.ptr<uint8_t>(y);
    if (!s.sixteen && s.channels == 1) {
      std::memcpy(out, s.data + s.stride * static_cast<std::size_t>(y),
                  static_cast<std::size_t>(s.width));
      continue;
    }
    for (int x = 0; x < s.width; ++x) {
      const uint32_t value = s.at(x, y, 0);
      if (value > 255) {
        throw DecodeError("a 16-bit mask with value " + std::to_string(value) + " at pixel " +
                          pixel_text(x, y) + ": mask labels must fit in 8 bits (0..255)");
      }
      out[x] = static_cast<uint8_t>(value);
    }
  }
}

// Labels from colour samples: through `colors` when given, else the gray
// value of pixels whose three channels are equal.
void color_labels(const Samples& s, const MaskColors* colors, cv::Mat& labels) {
  const int r_at = s.rgb ? 0 : 2, b_at = s.rgb ? 2 : 0;
  uint32_t last_color = ~0u;
  int last_label = -1;
  for (int y = 0; y < s.height; ++y) {
    auto* out = labels.ptr<uint8_t>(y);
    for (int x = 0; x < s.width; ++x) {
      const uint32_t r = s.at(x, y, r_at), g = s.at(x, y, 1), b = s.at(x, y, b_at);
      if (r > 255 || g > 255 || b > 255) {
        throw DecodeError("a 16-bit mask with colour " + color_text(int(r), int(g), int(b)) +
                          " at pixel " + pixel_text(x, y) +
                          ": mask samples must fit in 8 bits (0..255)");
      }
      if (colors == nullptr) {
        if (r != g || g != b) {
          throw DecodeError(
              "a colour mask (its channels differ: " + color_text(int(r), int(g), int(b)) +
              " at pixel " + pixel_text(x, y) + ")" + kColorsHint);
        }
        out[x] = static_cast<uint8_t>(r);
        continue;
      }
      const uint32_t color = (r << 16) | (g << 8) | b;
      if (color != last_color) {
        last_color = color;
        last_label = colors->label_of(static_cast<uint8_t>(r), static_cast<uint8_t>(g),
                                      static_cast<uint8_t>(b));
      }
      if (last_label < 0) {
        throw DecodeError("colour " + color_text(int(r), int(g), int(b)) + " at pixel " +
                          pixel_text(x, y) + " is not in MaskOptions::colors");
      }
      out[x] = static_cast<uint8_t>(last_label);
    }
  }
}

cv::Mat labels_from(const Samples& s, const MaskColors* colors) {
  cv::Mat labels(s.height, s.width, CV_8UC1);
  if (s.channels <= 2) {
    gray_labels(s, labels);
  } else {
    color_labels(s, colors, labels);
  }
  return labels;
}

// ------------------------------------------------------------ PNG (libpng)

cv::Mat decode_png_mask(std::span<const uint8_t> bytes, const MaskColors* colors,
                        uint64_t max_pixels) {
  PngInput input;
  input.data = bytes.data();
  input.size = bytes.size();
  // Everything with a destructor lives from before setjmp: a longjmp back
  // here skips no destructor.
  PngReader reader(input);
  std::vector<uint8_t> pixels;
  std::vector<png_bytep> rows;
  png_structp png = reader.png();
  png_infop info = reader.info();
  Samples samples;
  if (setjmp(png_jmpbuf(png))) {
    throw DecodeError(std::string("not a readable PNG mask: ") + input.message);
  }
  png_read_info(png, info);
  const png_uint_32 width = png_get_image_width(png, info);
  const png_uint_32 height = png_get_image_height(png, info);
  const int color_type = png_get_color_type(png, info);
  const int bit_depth = png_get_bit_depth(png, info);
  if (uint64_t{width} * height > max_pixels) {
    std::snprintf(input.message, sizeof input.message,
                  "declares %ux%u pixels, more than ConvertOptions::max_pixels allows",
                  static_cast<unsigned>(width), static_cast<unsigned>(height));
    png_longjmp(png, 1);
  }
  // Labels as stored: 1, 2 and 4-bit samples (palette indices or gray) one
  // per byte, unscaled; no palette expansion, no transparency, no gamma.
  if (bit_depth < 8) png_set_packing(png);
  if (bit_depth == 16) png_set_swap(png);  // native (little-endian) uint16
  if (color_type & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const std::size_t row_bytes = png_get_rowbytes(png, info);
  pixels.resize(row_bytes * height);
  rows.resize(height);
  for (png_uint_32 y = 0; y < height; ++y) rows[y] = pixels.data() + row_bytes * y;
  png_read_image(png, rows.data());

  samples.data = pixels.data();
  samples.stride = row_bytes;
  samples.width = static_cast<int>(width);
  samples.height = static_cast<int>(height);
  samples.channels = png_get_channels(png, info);
  samples.sixteen = bit_depth == 16;
  samples.rgb = true;
  return labels_from(samples, colors);
}

// ------------------------------------------------------------ other formats (OpenCV)

cv::Mat decode_opencv_mask(std::span<const uint8_t> bytes, const MaskColors* colors,
                           uint64_t max_pixels) {
  const std::optional<ImageInfo> info = probe_image(bytes);
  if (info && info->pixels() > max_pixels) {
    throw DecodeError("declares " + std::to_string(info->width) + "x" +
                      std::to_string(info->height) +
                      " pixels, more than ConvertOptions::max_pixels allows");
  }
  cv::Mat image;
  try {
    image = codecs::decode(bytes, cv::IMREAD_UNCHANGED);
  } catch (const codecs::CodecError& e) {
    throw DecodeError(std::string("not a readable mask: ") + e.what());
  }
  if (image.empty()) throw DecodeError("not a readable image (corrupt, truncated or no image)");
  if (image.depth() != CV_8U && image.depth() != CV_16U) {
    throw DecodeError("a mask of " + std::to_string(image.elemSize1() * 8) +
                      "-bit non-integer or signed samples: mask labels are 8-bit integers");
  }
  if (!image.isContinuous()) image = image.clone();
  Samples samples;
  samples.data = image.data;
  samples.stride = image.step[0];
  samples.width = image.cols;
  samples.height = image.rows;
  samples.channels = image.channels();
  samples.sixteen = image.depth() == CV_16U;
  samples.rgb = false;
  return labels_from(samples, colors);
}

int parse_byte(const std::string& text, const std::string& where, const char* column) {
  int value = -1;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || value < 0 || value > 255) {
    throw UsageError(where + "'" + text + "' in column " + column +
                     " is not an integer from 0 to 255");
  }
  return value;
}

}  // namespace

MaskColors MaskColors::read(const fs::path& csv) {
  const std::string name = csv.string();
  const CsvTable table = read_csv(csv);
  const char* option = "MaskOptions::colors";
  const std::size_t r = table.require_column("r", name, option);
  const std::size_t g = table.require_column("g", name, option);
  const std::size_t b = table.require_column("b", name, option);
  const std::size_t label = table.require_column("label", name, option);
  const std::optional<std::size_t> name_column = table.column("name");
  if (table.rows.empty()) throw UsageError(name + ": has a header but no colours");
  MaskColors colors;
  for (const CsvRecord& row : table.rows) {
    const std::string where = name + ":" + std::to_string(row.line) + ": ";
    const int id = parse_byte(row.fields[label], where, "label");
    const int red = parse_byte(row.fields[r], where, "r");
    const int green = parse_byte(row.fields[g], where, "g");
    const int blue = parse_byte(row.fields[b], where, "b");
    try {
      colors.add(static_cast<uint8_t>(red), static_cast<uint8_t>(green), static_cast<uint8_t>(blue),
                 static_cast<uint8_t>(id));
    } catch (const UsageError& e) {
      throw UsageError(where + e.what());
    }
    if (name_column && !row.fields[*name_column].empty()) {
      if (colors.names_.size() <= static_cast<std::size_t>(id)) {
        colors.names_.resize(static_cast<std::size_t>(id) + 1);
      }
      std::string& named = colors.names_[static_cast<std::size_t>(id)];
      if (!named.empty() && named != row.fields[*name_column]) {
        throw UsageError(where + "label " + std::to_string(id) + " is named both '" + named +
                         "' and '" + row.fields[*name_column] + "'");
      }
      named = row.fields[*name_column];
    }
  }
  return colors;
}

void MaskColors::add(uint8_t r, uint8_t g, uint8_t b, uint8_t label) {
  const uint32_t color = (uint32_t{r} << 16) | (uint32_t{g} << 8) | b;
  const auto at = std::lower_bound(colors_.begin(), colors_.end(), color);
  if (at != colors_.end() && *at == color) {
    throw UsageError("colour " + color_text(r, g, b) + " is listed twice");
  }
  labels_.insert(labels_.begin() + (at - colors_.begin()), label);
  colors_.insert(at, color);
}

int MaskColors::label_of(uint8_t r, uint8_t g, uint8_t b) const {
  const uint32_t color = (uint32_t{r} << 16) | (uint32_t{g} << 8) | b;
  const auto at = std::lower_bound(colors_.begin(), colors_.end(), color);
  if (at == colors_.end() || *at != color) return -1;
  return labels_[static_cast<std::size_t>(at - colors_.begin())];
}

uint64_t MaskColors::fingerprint() const {
  std::string key;
  for (std::size_t i = 0; i < colors_.size(); ++i) {
    key += std::to_string(colors_[i]) + ":" + std::to_string(labels_[i]) + "\n";
  }
  return checksum(key.data(), key.size());
}

std::vector<std::string> read_mask_class_names(const fs::path& path) {
  std::vector<uint8_t> bytes;
  const std::string problem = read_file(path, bytes);
  if (!problem.empty())
    throw UsageError(path.string() + ": " + problem + " (MaskOptions::classes)");
  std::vector<std::string> names;
  require_text({reinterpret_cast<const char*>(bytes.data()), bytes.size()}, path.string());
  for_each_line({reinterpret_cast<const char*>(bytes.data()), bytes.size()},
                [&](uint32_t, std::string_view line) {
                  while (line.ends_with(' ') || line.ends_with('\t') || line.ends_with('\r')) {
                    line.remove_suffix(1);
                  }
                  names.emplace_back(line);
                  return true;
                });
  if (names.empty()) throw UsageError(path.string() + ": names no labels (MaskOptions::classes)");
  // A name finds its label (inspect, a reader's mask_classes): two labels of
  // one name would make that ambiguous. A blank line leaves its label unnamed.
  std::unordered_map<std::string_view, std::size_t> line_of;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty()) continue;
    const auto [at, inserted] = line_of.emplace(names[i], i);
    if (!inserted) {
      throw UsageError(path.string() + ": names '" + names[i] + "' on lines " +
                       std::to_string(at->second + 1) + " and " + std::to_string(i + 1) +
                       " (labels " + std::to_string(at->second) + " and " + std::to_string(i) +
                       "); a name may name one label only (MaskOptions::classes)");
    }
  }
  if (names.size() > 256) {
    throw UsageError(path.string() + ": names " + std::to_string(names.size()) +
                     " labels; mask labels are 0..255 (MaskOptions::classes)");
  }
  return names;
}

cv::Mat decode_mask(std::span<const uint8_t> bytes, const MaskColors* colors, uint64_t max_pixels) {
  if (bytes.empty()) throw DecodeError("empty file");
  if (colors != nullptr && colors->empty()) colors = nullptr;
  if (sniff_format(bytes) == ImageFormat::png) return decode_png_mask(bytes, colors, max_pixels);
  return decode_opencv_mask(bytes, colors, max_pixels);
}

}  // namespace imgpack
