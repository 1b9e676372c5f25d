#include "image/png_read.hpp"

#include <bit>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

namespace imgpack {

namespace {

void read_bytes(png_structp png, png_bytep out, png_size_t length) {
  auto* input = static_cast<PngInput*>(png_get_io_ptr(png));
  if (length > input->size - input->position) png_error(png, "truncated");
  std::memcpy(out, input->data + input->position, length);
  input->position += length;
}

[[noreturn]] void on_error(png_structp png, png_const_charp message) {
  auto* input = static_cast<PngInput*>(png_get_error_ptr(png));
  std::snprintf(input->message, sizeof input->message, "%s", message);
  png_longjmp(png, 1);
}

void on_warning(png_structp /*png*/, png_const_charp /*message*/) {}

// OpenCV's limits on a decoded image (CV_IO_MAX_IMAGE_WIDTH, _HEIGHT, _PIXELS).
constexpr uint64_t kMaxSide = uint64_t{1} << 20;
constexpr uint64_t kMaxPixels = uint64_t{1} << 30;

}  // namespace

PngReader::PngReader(PngInput& input)
    : png_(png_create_read_struct(PNG_LIBPNG_VER_STRING, &input, on_error, on_warning)) {
  if (png_ == nullptr) throw std::bad_alloc();
  info_ = png_create_info_struct(png_);
  if (info_ == nullptr) {
    png_destroy_read_struct(&png_, nullptr, nullptr);
    throw std::bad_alloc();
  }
  png_set_read_fn(png_, &input, read_bytes);
}

PngReader::~PngReader() { png_destroy_read_struct(&png_, &info_, nullptr); }

cv::Mat decode_png_as_opencv(std::span<const uint8_t> bytes, std::string& problem) {
  PngInput input;
  input.data = bytes.data();
  input.size = bytes.size();
  // Everything with a destructor lives from before setjmp: a longjmp back
  // here skips no destructor.
  PngReader reader(input);
  cv::Mat image;
  std::vector<png_bytep> rows;
  png_structp png = reader.png();
  png_infop info = reader.info();
  if (setjmp(png_jmpbuf(png))) {
    problem = input.message;
    return {};
  }
  png_read_info(png, info);
  const png_uint_32 width = png_get_image_width(png, info);
  const png_uint_32 height = png_get_image_height(png, info);
  const int color_type = png_get_color_type(png, info);
  const int bit_depth = png_get_bit_depth(png, info);
  if (width == 0 || height == 0 || width > kMaxSide || height > kMaxSide ||
      uint64_t{width} * height > kMaxPixels) {
    std::snprintf(input.message, sizeof input.message,
                  "its size %ux%u is beyond what OpenCV reads (2^20 a side, 2^30 pixels)",
                  static_cast<unsigned>(width), static_cast<unsigned>(height));
    png_longjmp(png, 1);
  }
  // The type OpenCV reads it as: BGRA where there is transparency (an alpha
  // channel or a tRNS chunk, except for gray), BGR for colour, else gray.
  int channels = 1;
  switch (color_type) {
    case PNG_COLOR_TYPE_RGB:
    case PNG_COLOR_TYPE_PALETTE: {
      png_bytep trans = nullptr;
      int num_trans = 0;
      png_color_16p trans_values = nullptr;
      png_get_tRNS(png, info, &trans, &num_trans, &trans_values);
      channels = num_trans > 0 ? 4 : 3;
      break;
    }
    case PNG_COLOR_TYPE_GRAY_ALPHA:
    case PNG_COLOR_TYPE_RGB_ALPHA:
      channels = 4;
      break;
    default:
      channels = 1;
  }
  const bool sixteen = bit_depth == 16;
  // The transformations OpenCV asks for, in its order.
  if constexpr (std::endian::native == std::endian::little) png_set_swap(png);  // 16-bit only
  if (channels < 4) {
    png_set_strip_alpha(png);
  } else {
    png_set_tRNS_to_alpha(png);
  }
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if ((color_type & PNG_COLOR_MASK_COLOR) == 0 && bit_depth < 8) {
    png_set_expand_gray_1_2_4_to_8(png);
  }
  if ((color_type & PNG_COLOR_MASK_COLOR) != 0 && channels > 1) {
    png_set_bgr(png);
  } else if (channels > 1) {
    png_set_gray_to_rgb(png);
  } else {
    png_set_rgb_to_gray(png, 1, 0.299, 0.587);
  }
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  image.create(static_cast<int>(height), static_cast<int>(width),
               CV_MAKETYPE(sixteen ? CV_16U : CV_8U, channels));
  if (png_get_rowbytes(png, info) != image.step[0]) {
    std::snprintf(input.message, sizeof input.message,
                  "an unexpected row layout after libpng's transformations");
    png_longjmp(png, 1);
  }
  rows.resize(height);
  for (png_uint_32 y = 0; y < height; ++y) rows[y] = image.ptr<uint8_t>(static_cast<int>(y));
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);
  return image;
}

}  // namespace imgpack
