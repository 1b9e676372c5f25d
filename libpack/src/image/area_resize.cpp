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
// once, in registers, and the vertical pass is a plain loop over a row.
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

// The horizontal contributions padded to the same count per output pixel
// (the most any has): the padding has weight 0 and adds an exact +0 to the
// pixel's non-negative sum, so the loop over a pixel's contributions has a
// fixed length, with no branch to mispredict, and the order of the real ones
// is kept.
struct PaddedTable {
  int per_pixel = 0;
  std::vector<Contribution> contributions;  // per_pixel per output pixel
};

PaddedTable padded(const AxisTable& x, int width) {
  PaddedTable table;
  for (int d = 0; d < width; ++d) {
    table.per_pixel = std::max(table.per_pixel, x.first[d + 1] - x.first[d]);
  }
  table.contributions.reserve(static_cast<std::size_t>(width) * table.per_pixel);
  for (int d = 0; d < width; ++d) {
    const auto begin = x.contributions.begin() + x.first[d];
    const auto end = x.contributions.begin() + x.first[d + 1];
    table.contributions.insert(table.contributions.end(), begin, end);
    const Contribution pad{begin == end ? 0 : (end - 1)->source, 0.0F};
    table.contributions.insert(table.contributions.end(),
                               static_cast<std::size_t>(table.per_pixel - (end - begin)), pad);
  }
  return table;
}

// The horizontal sums of one source row: `out[d * CN + c]`. The row is
// widened to float first (`values`, a loop the compiler vectorises), as each
// value feeds one or two sums.
template <int CN>
void horizontal(const uint8_t* row, int length, const PaddedTable& x, int width, float* values,
                float* out) {
  for (int i = 0; i < length; ++i) values[i] = static_cast<float>(row[i]);
  const Contribution* c = x.contributions.data();
  for (int d = 0; d < width; ++d, c += x.per_pixel) {
    float sum[CN] = {};
    for (int j = 0; j < x.per_pixel; ++j) {
      for (int k = 0; k < CN; ++k) sum[k] = sum[k] + values[c[j].source + k] * c[j].weight;
    }
    for (int k = 0; k < CN; ++k) out[d * CN + k] = sum[k];
  }
}

// Three channels: a pixel's three sums in the first lanes of one four-lane
// vector, each lane the same single-precision operations as above (the
// fourth reads the next value and is discarded), so one load, multiply and
// add per contribution instead of three. `values` and `out` have one float
// of room past the row.
template <>
void horizontal<3>(const uint8_t* row, int length, const PaddedTable& x, int width, float* values,
                   float* out) {
  using Lanes = float __attribute__((vector_size(16)));
  for (int i = 0; i < length; ++i) values[i] = static_cast<float>(row[i]);
  values[length] = 0;
  const Contribution* c = x.contributions.data();
  for (int d = 0; d < width; ++d, c += x.per_pixel) {
    Lanes sum = {0, 0, 0, 0};
    for (int j = 0; j < x.per_pixel; ++j) {
      Lanes v;
      std::memcpy(&v, values + c[j].source, sizeof v);
      sum = sum + v * c[j].weight;
    }
    // Lane 3 lands on the next pixel's first sum, which its turn rewrites.
    std::memcpy(out + static_cast<std::ptrdiff_t>(d) * 3, &sum, sizeof sum);
  }
}

// Rounds the non-negative `sums` to the nearest integer, ties to even, and
// saturates them to bytes. Clamping to 255 first changes no result (rounding
// is monotonic); adding and taking away 2^23 rounds as the default rounding
// mode does, exactly for values below 2^22. Both loops vectorise.
void to_bytes(float* sums, int count, uint8_t* out) {
  constexpr float kShift = 8388608.0F;  // 2^23: its float neighbours are 1 apart
  for (int i = 0; i < count; ++i) {
    const float clamped = sums[i] < 255.0F ? sums[i] : 255.0F;
    sums[i] = (clamped + kShift) - kShift;
  }
  for (int i = 0; i < count; ++i) out[i] = static_cast<uint8_t>(static_cast<int>(sums[i]));
}

template <int CN>
void shrink(const cv::Mat& src, cv::Mat& dst, double scale_x, double scale_y) {
  const PaddedTable x = padded(axis_table(src.cols, dst.cols, CN, scale_x), dst.cols);
  const AxisTable y = axis_table(src.rows, dst.rows, 1, scale_y);
  const int width = dst.cols * CN;
  const int length = src.cols * CN;
  std::vector<float> buffers(static_cast<std::size_t>(width) * 2 +
                             static_cast<std::size_t>(length) + 2);
  float* row_sums = buffers.data();           // the horizontal sums of source row `cached`
  float* column_sums = row_sums + width + 1;  // the vertical sums of the output row
  float* values = column_sums + width;        // source row `cached`, as floats
  int cached = -1;
  for (int d = 0; d < dst.rows; ++d) {
    for (int i = y.first[d]; i < y.first[d + 1]; ++i) {
      const Contribution& c = y.contributions[static_cast<std::size_t>(i)];
      // A row on the boundary of two output rows ends one and starts the next.
      if (c.source != cached) {
        horizontal<CN>(src.ptr<uint8_t>(c.source), length, x, dst.cols, values, row_sums);
        cached = c.source;
      }
      if (i == y.first[d]) {
        for (int k = 0; k < width; ++k) column_sums[k] = c.weight * row_sums[k];
      } else {
        for (int k = 0; k < width; ++k) column_sums[k] = column_sums[k] + c.weight * row_sums[k];
      }
    }
    to_bytes(column_sums, width, dst.ptr<uint8_t>(d));
  }
}

}  // namespace

void resize_area(const cv::Mat& src, cv::Mat& dst) {
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
  if (src.channels() == 1) {
    shrink<1>(src, dst, scale_x, scale_y);
  } else {
    shrink<3>(src, dst, scale_x, scale_y);
  }
}

}  // namespace imgpack
