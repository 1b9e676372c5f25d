#include "imgpack/output_format.hpp"

namespace imgpack {

Normalization Normalization::from_mean_std(const float* mean, const float* stddev,
                                           uint32_t channels) {
  Normalization norm;
  for (uint32_t c = 0; c < channels && c < 4; ++c) {
    norm.offset[c] = static_cast<float>(255.0 * static_cast<double>(mean[c]));
    norm.scale[c] = static_cast<float>(1.0 / (255.0 * static_cast<double>(stddev[c])));
  }
  return norm;
}

Normalization Normalization::unit_range(uint32_t channels) {
  const float mean[4] = {0, 0, 0, 0};
  const float stddev[4] = {1, 1, 1, 1};
  return from_mean_std(mean, stddev, channels);
}

void convert_record_host(const uint8_t* src, void* dst, OutputFormat format,
                         const RecordShape& shape, const Normalization& norm) {
  const std::size_t pixels = shape.pixels();
  if (format == OutputFormat::uint8_nhwc) {
    std::memcpy(dst, src, shape.elements());
    return;
  }
  // Separate loops per format so the compiler sees a branch-free inner loop.
  if (format == OutputFormat::float32_nchw) {
    for (uint32_t c = 0; c < shape.channels; ++c) {
      for (std::size_t p = 0; p < pixels; ++p) {
        convert_element(src, dst, OutputFormat::float32_nchw, shape, norm, c, p);
      }
    }
  } else {
    for (uint32_t c = 0; c < shape.channels; ++c) {
      for (std::size_t p = 0; p < pixels; ++p) {
        convert_element(src, dst, OutputFormat::float16_nchw, shape, norm, c, p);
      }
    }
  }
}

void convert_records_host(const uint8_t* src, void* dst, std::size_t count, OutputFormat format,
                          const RecordShape& shape, const Normalization& norm) {
  const std::size_t in_bytes = shape.elements();
  const std::size_t out_bytes = in_bytes * output_element_bytes(format);
  for (std::size_t i = 0; i < count; ++i) {
    convert_record_host(src + i * in_bytes, static_cast<uint8_t*>(dst) + i * out_bytes, format,
                        shape, norm);
  }
}

}  // namespace imgpack
