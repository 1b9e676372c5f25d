// The shape of one record: height x width x channels uint8 (row-major HWC).
//
// Included by CUDA sources: C++17 only, with the accessors marked
// __host__ __device__ under nvcc. A plain value.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define IMGPACK_HOST_DEVICE __host__ __device__
#else
#define IMGPACK_HOST_DEVICE
#endif

namespace imgpack {

struct RecordShape {
  uint32_t height = 0;
  uint32_t width = 0;
  uint32_t channels = 0;

  IMGPACK_HOST_DEVICE std::size_t pixels() const { return std::size_t{height} * width; }
  IMGPACK_HOST_DEVICE std::size_t elements() const { return pixels() * channels; }
  // Bytes of the stored record (one byte per element).
  IMGPACK_HOST_DEVICE std::size_t bytes() const { return elements(); }
};

}  // namespace imgpack
