#include "imgpack/output_format.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "random.hpp"

namespace imgpack {
namespace {

// binary16 bits -> double, exactly.
double half_value(uint16_t bits) {
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  double value;
  if (exponent == 0x1f) {
    value = mantissa ? std::numeric_limits<double>::quiet_NaN()
                     : std::numeric_limits<double>::infinity();
  } else if (exponent == 0) {
    value = std::ldexp(mantissa, -24);
  } else {
    value = std::ldexp(1024 + mantissa, exponent - 25);
  }
  return (bits & 0x8000) ? -value : value;
}

// Reference rounding by search: the nearest of all binary16 values, ties to
// the even bit pattern; beyond the largest finite value, 65536 stands for infinity.
uint16_t reference_half(float f) {
  if (std::isnan(f)) return 0x7e00;
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double x = std::fabs(static_cast<double>(f));
  static const std::vector<double> values = [] {
    std::vector<double> v;
    for (uint16_t bits = 0; bits <= 0x7c00; ++bits)
      v.push_back(bits == 0x7c00 ? 65536.0 : half_value(bits));
    return v;
  }();
  if (x >= 65536.0) return sign | 0x7c00;
  auto upper = std::lower_bound(values.begin(), values.end(), x);
  auto hi = static_cast<uint16_t>(upper - values.begin());
  if (values[hi] == x || hi == 0) return sign | hi;
  const auto lo = static_cast<uint16_t>(hi - 1);
  const double below = x - values[lo], above = values[hi] - x;
  if (below < above) return sign | lo;
  if (above < below) return sign | hi;
  return sign | ((lo & 1) ? hi : lo);
}

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

TEST(FloatToHalf, SpecialValues) {
  EXPECT_EQ(float_to_half_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);  // tie rounds to even: infinity
  EXPECT_EQ(float_to_half_bits(1e10f), 0x7c00);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_half_bits(-std::numeric_limits<float>::infinity()), 0xfc00);
  const uint16_t nan = float_to_half_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x3ff, 0);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: zero
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(float_to_half_bits(1e-30f), 0x0000);
}

TEST(FloatToHalf, EveryHalfRoundTripsAndEveryMidpointTiesToEven) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    if (((h >> 10) & 0x1f) == 0x1f) continue;  // inf and NaN above
    const auto f = static_cast<float>(half_value(h));
    ASSERT_EQ(float_to_half_bits(f), h) << std::hex << bits;
    // The midpoint to the next half up (exact in float) rounds to the even one.
    if ((h & 0x7fff) < 0x7bff) {
      const auto next = static_cast<uint16_t>(h + 1);
      const auto mid = static_cast<float>((half_value(h) + half_value(next)) / 2);
      ASSERT_EQ(float_to_half_bits(mid), (h & 1) ? next : h) << std::hex << bits;
    }
  }
}

TEST(FloatToHalf, MatchesAReferenceOnRandomFloats) {
  CounterRng rng(2024);
  for (int i = 0; i < 200000; ++i) {
    // Random bit patterns restricted to exponents around the half range.
    const uint32_t sign = static_cast<uint32_t>(rng.below(2)) << 31;
    const uint32_t exponent = static_cast<uint32_t>(127 - 30 + rng.below(50)) << 23;
    const uint32_t mantissa = static_cast<uint32_t>(rng.next()) & 0x7fffffu;
    const float f = from_bits(sign | exponent | mantissa);
    ASSERT_EQ(float_to_half_bits(f), reference_half(f)) << f;
  }
}

class ConvertRecordsTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(ConvertRecordsTest, HostConversionEqualsAScalarReference) {
  const uint32_t channels = GetParam();
  const RecordShape g{7, 9, channels};
  const std::size_t count = 3;
  std::vector<uint8_t> src(count * g.elements());
  CounterRng rng(5);
  for (uint8_t& v : src) v = static_cast<uint8_t>(rng.below(256));
  src[0] = 0;
  src[1] = 255;
  const float mean[3] = {0.485f, 0.456f, 0.406f};
  const float stdev[3] = {0.229f, 0.224f, 0.225f};
  const Normalization norm = Normalization::from_mean_std(mean, stdev, channels);

  std::vector<float> f32(count * g.elements());
  std::vector<uint16_t> f16(count * g.elements());
  std::vector<uint8_t> u8(count * g.elements());
  convert_records_host(src.data(), f32.data(), count, OutputFormat::float32_nchw, g, norm);
  convert_records_host(src.data(), f16.data(), count, OutputFormat::float16_nchw, g, norm);
  convert_records_host(src.data(), u8.data(), count, OutputFormat::uint8_nhwc, g, norm);
  EXPECT_EQ(u8, src);

  for (std::size_t n = 0; n < count; ++n) {
    for (uint32_t c = 0; c < channels; ++c) {
      for (uint32_t y = 0; y < g.height; ++y) {
        for (uint32_t x = 0; x < g.width; ++x) {
          const uint8_t v = src[((n * g.height + y) * g.width + x) * channels + c];
          const double want = (v / 255.0 - mean[c]) / stdev[c];
          const std::size_t at = ((n * channels + c) * g.height + y) * g.width + x;
          ASSERT_NEAR(f32[at], want, 1e-6 * (1 + std::abs(want))) << n << " " << c << " " << y;
          // The half output is the float output rounded to nearest even.
          ASSERT_EQ(f16[at], reference_half(f32[at]));
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(GrayAndRgb, ConvertRecordsTest, ::testing::Values(1u, 3u));

TEST(Normalization, UnitRangeMapsToZeroOne) {
  const Normalization norm = Normalization::unit_range(3);
  const RecordShape g{1, 1, 3};
  const uint8_t src[3] = {0, 51, 255};
  float out[3];
  convert_records_host(src, out, 1, OutputFormat::float32_nchw, g, norm);
  EXPECT_FLOAT_EQ(out[0], 0.0f);
  EXPECT_FLOAT_EQ(out[1], 0.2f);
  EXPECT_FLOAT_EQ(out[2], 1.0f);
}

}  // namespace
}  // namespace imgpack
