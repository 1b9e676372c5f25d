// Output conversion: uint8 HWC records -> normalized float32 or float16 NCHW.
//
// out[n][c][y][x] = (in[n][y][x][c] / 255 - mean[c]) / stddev[c], computed as
// (in - 255 * mean[c]) * (1 / (255 * stddev[c])) in single precision with no
// fused multiply-add, so that the CUDA kernel and the host path, which both
// call convert_element(), produce the same bits. float16 output is the IEEE
// binary16 bit pattern, rounded to nearest even by float_to_half_bits().
//
// This header is included by CUDA sources: it needs only C++17 and marks the
// per-element functions __host__ __device__ under nvcc. Everything here is a
// pure function, safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "imgpack/record_shape.hpp"

namespace imgpack {

enum class OutputFormat {
  uint8_nhwc,    // the stored bytes, unconverted
  float32_nchw,  // normalized float
  float16_nchw,  // normalized IEEE half (as uint16_t bit patterns)
};

// "uint8", "float32", "float16". Throws imgpack::UsageError.
OutputFormat parse_output_format(std::string_view text);
std::string_view output_format_name(OutputFormat format);

// Bytes per output element.
inline std::size_t output_element_bytes(OutputFormat format) {
  return format == OutputFormat::uint8_nhwc ? 1 : format == OutputFormat::float32_nchw ? 4 : 2;
}

// Per-channel affine map, precomputed from mean and stddev given in [0, 1] units
// (torchvision's convention, e.g. mean {0.485, 0.456, 0.406}).
struct Normalization {
  float offset[4] = {0, 0, 0, 0};  // 255 * mean[c]
  float scale[4] = {1, 1, 1, 1};   // 1 / (255 * stddev[c])

  // From `channels` (<= 4) means and standard deviations. Throws nothing;
  // stddev values <= 0 are the caller's error (Loader validates them).
  static Normalization from_mean_std(const float* mean, const float* stddev, uint32_t channels);
  // Identity normalization: out = in / 255.
  static Normalization unit_range(uint32_t channels);
};

// IEEE binary16 bits of `value`, rounded to nearest, ties to even; overflow
// gives infinity, NaN stays NaN.
IMGPACK_HOST_DEVICE inline uint16_t float_to_half_bits(float value) {
  uint32_t bits;
#if defined(__CUDA_ARCH__)
  bits = __float_as_uint(value);
#else
  std::memcpy(&bits, &value, sizeof bits);
#endif
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t exponent = (bits >> 23) & 0xffu;
  uint32_t mantissa = bits & 0x7fffffu;
  if (exponent == 0xffu) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (mantissa != 0 ? 0x200u : 0u));
  }
  const int32_t e = static_cast<int32_t>(exponent) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow
  if (e <= 0) {
    // Subnormal half (or zero): shift the full significand into place.
    if (e < -10) return static_cast<uint16_t>(sign);
    mantissa |= 0x800000u;
    const uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into the exponent
  return static_cast<uint16_t>(sign | half);
}

// One normalized value. Explicitly rounded operations on the device so that
// nvcc cannot contract them into an FMA the host does not do.
IMGPACK_HOST_DEVICE inline float normalize_value(uint8_t value, float offset, float scale) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(__fsub_rn(static_cast<float>(value), offset), scale);
#else
  return (static_cast<float>(value) - offset) * scale;
#endif
}

// Converts element (channel c, pixel p) of one record: reads src[p * C + c]
// (HWC) and writes dst[c * H * W + p] (CHW) as float or half bits. `dst` is
// the record's output (float* or uint16_t* by `format`); `format` must not be
// uint8_nhwc.
IMGPACK_HOST_DEVICE inline void convert_element(const uint8_t* src, void* dst, OutputFormat format,
                                                const RecordShape& shape, const Normalization& norm,
                                                uint32_t c, std::size_t p) {
  const float v = normalize_value(src[p * shape.channels + c], norm.offset[c], norm.scale[c]);
  const std::size_t out = std::size_t{c} * shape.pixels() + p;
  if (format == OutputFormat::float32_nchw) {
    static_cast<float*>(dst)[out] = v;
  } else {
    static_cast<uint16_t*>(dst)[out] = float_to_half_bits(v);
  }
}

// Host path: converts `count` consecutive records from `src` (uint8 HWC) into
// `dst` (the output layout of `format`), calling convert_element() for every
// element. For uint8_nhwc it copies.
void convert_records_host(const uint8_t* src, void* dst, std::size_t count, OutputFormat format,
                          const RecordShape& shape, const Normalization& norm);

// The same for one record whose output goes to `dst` (used by reader threads,
// which convert straight from the mapped record into the batch).
void convert_record_host(const uint8_t* src, void* dst, OutputFormat format,
                         const RecordShape& shape, const Normalization& norm);

}  // namespace imgpack
