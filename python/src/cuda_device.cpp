#include "cuda_device.hpp"

#include <string>

#include "imgpack/error.hpp"

#if defined(IMGPACK_PYTHON_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace imgpack::python {

#if defined(IMGPACK_PYTHON_CUDA)

namespace {

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw Error(std::string(call) + " failed: " + cudaGetErrorString(status));
  }
}

}  // namespace

CurrentDeviceGuard::CurrentDeviceGuard(const Device& device) {
  int current = 0;
  if (device.is_cuda() && cudaGetDevice(&current) == cudaSuccess) previous_ = current;
}

CurrentDeviceGuard::~CurrentDeviceGuard() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

void join_streams_into_last(const Device& device, const void* const* streams, std::size_t count) {
  if (count < 2) return;
  const CurrentDeviceGuard keep(device);
  check(cudaSetDevice(device.index), "cudaSetDevice");
  auto* last = static_cast<cudaStream_t>(const_cast<void*>(streams[count - 1]));
  for (std::size_t i = 0; i + 1 < count; ++i) {
    cudaEvent_t done = nullptr;
    check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    const cudaError_t recorded =
        cudaEventRecord(done, static_cast<cudaStream_t>(const_cast<void*>(streams[i])));
    const cudaError_t waited =
        recorded == cudaSuccess ? cudaStreamWaitEvent(last, done, 0) : cudaErrorInvalidValue;
    cudaEventDestroy(done);  // released once it has fired
    check(recorded, "cudaEventRecord");
    check(waited, "cudaStreamWaitEvent");
  }
}

#else

CurrentDeviceGuard::CurrentDeviceGuard(const Device& /*device*/) {}

void join_streams_into_last(const Device& /*device*/, const void* const* /*streams*/,
                            std::size_t count) {
  if (count >= 2) throw Error("CUDA streams given to a build of imgpack without CUDA");
}

#endif

}  // namespace imgpack::python
