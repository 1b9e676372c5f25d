// The calling thread's current CUDA device, kept across calls into the
// reader (internal to python/src/).
//
// The reader's CUDA backend makes its device current on the thread that
// calls it (Loader construction, Batch::wait_on_stream, recycle_after). A
// Python program also has its own current device (torch.cuda.set_device):
// around every such call the binding restores it, so that a loader on
// cuda:1 never moves a program's later allocations from cuda:0. A no-op in
// builds without CUDA and for host delivery.
#pragma once

#include <cstddef>

#include "imgpack/upload_backend.hpp"

namespace imgpack::python {

class CurrentDeviceGuard {
 public:
  explicit CurrentDeviceGuard(const Device& device);
#if defined(IMGPACK_PYTHON_CUDA)
  ~CurrentDeviceGuard();
#else
  ~CurrentDeviceGuard() = default;  // nothing to restore without CUDA
#endif
  CurrentDeviceGuard(const CurrentDeviceGuard&) = delete;
  CurrentDeviceGuard& operator=(const CurrentDeviceGuard&) = delete;

 private:
  [[maybe_unused]] int previous_ = -1;  // -1: nothing to restore (always, without CUDA)
};

// Makes the work queued so far on every stream of `streams` (cudaStream_t)
// precede later work on the last one, which then stands for all of them.
// Throws imgpack::Error if a CUDA call fails.
void join_streams_into_last(const Device& device, const void* const* streams, std::size_t count);

}  // namespace imgpack::python
