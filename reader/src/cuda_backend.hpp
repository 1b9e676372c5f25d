// The CUDA upload backend, internal to the reader (built from cuda_backend.cu
// only when CUDA is enabled; upload_backend.cpp supplies stand-ins otherwise).
#pragma once

#include <cstddef>
#include <memory>

#include "imgpack/upload_backend.hpp"

namespace imgpack::cuda_detail {

// Usable devices; 0 on any CUDA error (no driver, no device).
int device_count();

// Throws imgpack::Error if the device cannot be used.
std::unique_ptr<UploadBackend> make_backend(int device);

// Pinned host memory from cudaHostAlloc, or an empty Memory if that fails.
Memory try_allocate_pinned(std::size_t bytes);

}  // namespace imgpack::cuda_detail
