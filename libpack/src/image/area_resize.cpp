// Area averaging for a shrink by a non-integer ratio, the arithmetic of
// OpenCV's INTER_AREA kept operation for operation, the work arranged for
// speed.
//
// Each output pixel is the mean of the source area it covers: per axis, a
// list of (source index, weight) contributions per output index, the partly
// covered source pixels at either end weighted by their covered share. The
// result is a sum of products in single precision, each product and each sum
// rounded, the horizontal sums first (one per source row), then the vertical
// one over those, then rounded to the nearest byte, ties to even. cv::resize
// arrives at exactly these values, but recomputes the horizontal sums of a
// source row for every output row it contributes to (a row on the boundary
// of two output rows twice), and accumulates them through memory, one
// read-modify-write per contribution. Here each source row's sums are made
// once, in registers, four rows at a time, and the vertical pass is a plain
// loop over a row. On x86-64 with AVX2 the same code is compiled again for
// it (eight-lane vectors: two pixels of three channels a vector), chosen at
// run time; the arithmetic is the same lane for lane.
//
// Bit-exactness holds only if no multiply and add are fused (an FMA rounds
// once where the reference rounds twice): this file is compiled with
// -ffp-contract=off (libpack/CMakeLists.txt), and area_resize_test.cpp
// compares it byte for byte with cv::resize over a spread of sizes.
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "image/resize.hpp"

namespace imgpack {

namespace {

struct Contribution {
  int source = 0;  // source index (times the channel count along x)
  float weight = 0;
};

// Per output index along one axis: its contributions, contiguous in
// `contributions` from `first[d]` to `first[d + 1]`, in source order.
struct AxisTable {
  std::vector<Contribution> contributions;
  std::vector<int> first;
};

// The contributions of a shrink from `source` to `target` samples at ratio
// `scale` (source per target): output d covers [d * scale, (d + 1) * scale).
AxisTable axis_table(int source, int target, int stride, double scale) {
  AxisTable table;
  table.contributions.reserve(static_cast<std::size_t>(source) * 2);
  table.first.reserve(static_cast<std::size_t>(target) + 1);
  for (int d = 0; d < target; ++d) {
    table.first.push_back(static_cast<int>(table.contributions.size()));
    const double begin = d * scale;
    const double end = begin + scale;
    const double width = std::min(scale, source - begin);
    int whole_end = static_cast<int>(std::floor(end));
    whole_end = std::min(whole_end, source - 1);
    const int whole_begin = std::min(static_cast<int>(std::ceil(begin)), whole_end);
    if (whole_begin - begin > 1e-3) {  // the partly covered pixel before
      table.contributions.push_back(
          {(whole_begin - 1) * stride, static_cast<float>((whole_begin - begin) / width)});
    }
    for (int s = whole_begin; s < whole_end; ++s) {
      table.contributions.push_back({s * stride, static_cast<float>(1.0 / width)});
    }
    if (end - whole_end > 1e-3) {  // the partly covered pixel after
      table.contributions.push_back(
          {whole_end * stride,
           static_cast<float>(std::min(std::min(end - whole_end, 1.0), width) / width)});
    }
  }
  table.first.push_back(static_cast<int>(table.contributions.size()));
  return table;
}

// The horizontal contributions as a fixed number of taps per output pixel:
// output d sums `taps` consecutive source pixels from `first[d]` (an index
// into a row's values, channels included) with weights `weights[d * taps +
// j]`. A pixel's contributions are consecutive source pixels already; one
// with fewer than `taps` is padded with weight 0 on the source pixels after
// them (each adds an exact +0 to its non-negative sum; the values past the
// row are 0), so the loop over a pixel's taps has a fixed length and needs
// one index, and the order of the real ones is kept.
struct RowTaps {
  int taps = 0;
  std::vector<int> first;      // per output pixel, one more (a copy of the last) at the end
  std::vector<float> weights;  // taps per output pixel, the one at the end all 0
};

RowTaps row_taps(const AxisTable& x, int width) {
  RowTaps t;
  for (int d = 0; d < width; ++d) t.taps = std::max(t.taps, x.first[d + 1] - x.first[d]);
  t.first.resize(static_cast<std::size_t>(width) + 1);
  t.weights.assign(static_cast<std::size_t>(width + 1) * t.taps, 0.0F);
  for (int d = 0; d < width; ++d) {
    const int begin = x.first[d];
    const int count = x.first[d + 1] - begin;
    t.first[d] = count == 0 ? 0 : x.contributions[begin].source;
    for (int j = 0; j < count; ++j) {
      t.weights[static_cast<std::size_t>(d) * t.taps + j] = x.contributions[begin + j].weight;
    }
  }
  t.first[width] = width > 0 ? t.first[width - 1] : 0;
  return t;
}

using Lanes4 = float __attribute__((vector_size(16)));
using Lanes8 = float __attribute__((vector_size(32)));

// The horizontal sums of kRows source rows at once (the taps' indices and
// weights are loaded once for all of them): `out[r][d * CN + c]` from
// `values[r]`, each row widened to float, with 4 floats of room past its end.
constexpr int kRows = 4;

// One pixel at a time; three channels as the first lanes of one four-lane
// vector, each lane the same single-precision operations as one channel
// alone (the fourth reads the next value and is discarded), so one load,
// multiply and add per tap. `out` rows have one float of room past the row.
template <int CN>
struct PixelKernel {
  const RowTaps& t;
  int width;  // output pixels

  explicit PixelKernel(const RowTaps& taps, int output_width) : t(taps), width(output_width) {}

  [[gnu::always_inline]] void operator()(const float* const* values, float* const* out) const {
    for (int d = 0; d < width; ++d) {
      const float* w = &t.weights[static_cast<std::size_t>(d) * t.taps];
      const int first = t.first[d];
      if constexpr (CN == 3) {
        Lanes4 sum[kRows] = {};
        for (int j = 0; j < t.taps; ++j) {
          for (int r = 0; r < kRows; ++r) {
            Lanes4 v;
            std::memcpy(&v, values[r] + (first + 3 * j), sizeof v);
            sum[r] = sum[r] + v * w[j];
          }
        }
        // Lane 3 lands on the next pixel's first sum, which its turn rewrites.
        for (int r = 0; r < kRows; ++r) {
          std::memcpy(out[r] + static_cast<std::ptrdiff_t>(d) * 3, &sum[r], sizeof sum[r]);
        }
      } else {
        float sum[kRows] = {};
        for (int j = 0; j < t.taps; ++j) {
          for (int r = 0; r < kRows; ++r) sum[r] = sum[r] + values[r][first + j] * w[j];
        }
        for (int r = 0; r < kRows; ++r) out[r][d] = sum[r];
      }
    }
  }
};

// Three channels, two pixels at a time in one eight-lane vector (lanes 0-2
// and 4-6; lanes 3 and 7 are discarded as above), the weights laid out per
// pair and tap as four copies of each pixel's: half the multiplies and adds
// of PixelKernel, for a target with eight-lane vectors.
struct PairKernel {
  const RowTaps& t;
  int width;
  std::vector<float> weights;  // per pair and tap: 4 x the first's weight, 4 x the second's

  PairKernel(const RowTaps& taps, int output_width) : t(taps), width(output_width) {
    const int pairs = (width + 1) / 2;
    weights.resize(static_cast<std::size_t>(pairs) * t.taps * 8);
    for (int q = 0; q < pairs; ++q) {
      for (int j = 0; j < t.taps; ++j) {
        float* w = &weights[(static_cast<std::size_t>(q) * t.taps + j) * 8];
        std::fill(w, w + 4, t.weights[static_cast<std::size_t>(2 * q) * t.taps + j]);
        std::fill(w + 4, w + 8, t.weights[static_cast<std::size_t>(2 * q + 1) * t.taps + j]);
      }
    }
  }

  // With width odd, the last pair's second pixel is the padding pixel at
  // the end of RowTaps (weights 0), stored in the room past the row.
  [[gnu::always_inline]] void operator()(const float* const* values, float* const* out) const {
    const float* w = weights.data();
    for (int d = 0; d < width; d += 2) {
      Lanes8 sum[kRows] = {};
      const int a = t.first[d];
      const int b = t.first[d + 1];
      for (int j = 0; j < t.taps; ++j, w += 8) {
        Lanes8 weight;
        std::memcpy(&weight, w, sizeof weight);
        for (int r = 0; r < kRows; ++r) {
          Lanes4 lo;
          Lanes4 hi;
          std::memcpy(&lo, values[r] + (a + 3 * j), sizeof lo);
          std::memcpy(&hi, values[r] + (b + 3 * j), sizeof hi);
          const Lanes8 v = __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
          sum[r] = sum[r] + v * weight;
        }
      }
      for (int r = 0; r < kRows; ++r) {
        const Lanes4 lo = __builtin_shufflevector(sum[r], sum[r], 0, 1, 2, 3);
        const Lanes4 hi = __builtin_shufflevector(sum[r], sum[r], 4, 5, 6, 7);
        std::memcpy(out[r] + static_cast<std::ptrdiff_t>(d) * 3, &lo, sizeof lo);
        std::memcpy(out[r] + static_cast<std::ptrdiff_t>(d) * 3 + 3, &hi, sizeof hi);
      }
    }
  }
};

// Rounds the non-negative `sums` to the nearest integer, ties to even, and
// saturates them to bytes. Clamping to 255 first changes no result (rounding
// is monotonic); adding and taking away 2^23 rounds as the default rounding
// mode does, exactly for values below 2^22. Both loops vectorise.
[[gnu::always_inline]] inline void to_bytes(float* sums, int count, uint8_t* out) {
  constexpr float kShift = 8388608.0F;  // 2^23: its float neighbours are 1 apart
  for (int i = 0; i < count; ++i) {
    const float clamped = sums[i] < 255.0F ? sums[i] : 255.0F;
    sums[i] = (clamped + kShift) - kShift;
  }
  for (int i = 0; i < count; ++i) out[i] = static_cast<uint8_t>(static_cast<int>(sums[i]));
}

// The shrink: source rows are summed horizontally kRows at a time as the
// output rows reach them, into a ring of row sums large enough for every row
// an output row needs; each output row is then the vertical sum over its rows.
template <int CN, class Kernel>
[[gnu::always_inline]] inline void shrink(const cv::Mat& src, cv::Mat& dst, const RowTaps& x,
                                          const AxisTable& y) {
  const Kernel kernel(x, dst.cols);
  const int width = dst.cols * CN;
  const int length = src.cols * CN;
  int most_rows = 0;
  for (int d = 0; d < dst.rows; ++d) most_rows = std::max(most_rows, y.first[d + 1] - y.first[d]);
  // An output row's rows, and those summed with its last: never one still needed.
  const int ring = most_rows + kRows;
  const auto sums_stride = static_cast<std::size_t>(width) + 8;
  const auto values_stride = static_cast<std::size_t>(length) + std::size_t{3} * x.taps + 8;
  std::vector<float> sums(static_cast<std::size_t>(ring) * sums_stride);
  std::vector<float> values(kRows * values_stride, 0.0F);
  std::vector<float> column(static_cast<std::size_t>(width));
  const auto row_sums = [&](int row) {
    return &sums[static_cast<std::size_t>(row % ring) * sums_stride];
  };
  int next = 0;  // the first source row not summed yet
  for (int d = 0; d < dst.rows; ++d) {
    const Contribution* c = &y.contributions[static_cast<std::size_t>(y.first[d])];
    const int count = y.first[d + 1] - y.first[d];
    while (next <= c[count - 1].source) {
      const int batch = std::min(kRows, src.rows - next);
      const float* in[kRows];
      float* out[kRows];
      for (int r = 0; r < kRows; ++r) {
        const int row = next + std::min(r, batch - 1);  // the last row again past the end
        float* v = &values[r * values_stride];
        const uint8_t* p = src.ptr<uint8_t>(row);
        for (int i = 0; i < length; ++i) v[i] = static_cast<float>(p[i]);
        in[r] = v;
        out[r] = row_sums(row);
      }
      kernel(in, out);
      next += batch;
    }
    const float* first = row_sums(c[0].source);
    for (int k = 0; k < width; ++k) column[k] = c[0].weight * first[k];
    for (int i = 1; i < count; ++i) {
      const float* sum = row_sums(c[i].source);
      const float weight = c[i].weight;
      for (int k = 0; k < width; ++k) column[k] = column[k] + weight * sum[k];
    }
    to_bytes(column.data(), width, dst.ptr<uint8_t>(d));
  }
}

void shrink_portable(const cv::Mat& src, cv::Mat& dst, const RowTaps& x, const AxisTable& y) {
  if (src.channels() == 1) {
    shrink<1, PixelKernel<1>>(src, dst, x, y);
  } else {
    shrink<3, PixelKernel<3>>(src, dst, x, y);
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// The same code for AVX2 (wider vectors for the widening and the vertical
// sums; PairKernel for three channels). No FMA: the target adds none, and
// this file is compiled with -ffp-contract=off.
[[gnu::target("avx2")]] void shrink_avx2(const cv::Mat& src, cv::Mat& dst, const RowTaps& x,
                                         const AxisTable& y) {
  if (src.channels() == 1) {
    shrink<1, PixelKernel<1>>(src, dst, x, y);
  } else {
    shrink<3, PairKernel>(src, dst, x, y);
  }
}

bool has_avx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2") != 0;
  return avx2;
}
#endif

}  // namespace

void resize_area(const cv::Mat& src, cv::Mat& dst, AreaKernels kernels) {
  bool ours = !src.empty() && !dst.empty() && dst.type() == src.type() &&
              (src.type() == CV_8UC1 || src.type() == CV_8UC3);
  // As cv::resize computes the ratios; it has other arithmetic for an integer
  // ratio and for growing.
  const double scale_x = ours ? 1.0 / (static_cast<double>(dst.cols) / src.cols) : 0;
  const double scale_y = ours ? 1.0 / (static_cast<double>(dst.rows) / src.rows) : 0;
  const bool integer_ratio = std::abs(scale_x - std::round(scale_x)) < DBL_EPSILON &&
                             std::abs(scale_y - std::round(scale_y)) < DBL_EPSILON;
  ours = ours && scale_x >= 1 && scale_y >= 1 && !integer_ratio;
  if (!ours) {
    cv::resize(src, dst, dst.size(), 0, 0, cv::INTER_AREA);
    return;
  }
  const RowTaps x = row_taps(axis_table(src.cols, dst.cols, src.channels(), scale_x), dst.cols);
  const AxisTable y = axis_table(src.rows, dst.rows, 1, scale_y);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (kernels == AreaKernels::best && has_avx2()) {
    shrink_avx2(src, dst, x, y);
    return;
  }
#endif
  shrink_portable(src, dst, x, y);
}

void resize_area(const cv::Mat& src, cv::Mat& dst) { resize_area(src, dst, AreaKernels::best); }

}  // namespace imgpack
