// The CUDA upload backend: pinned host slots, device slots, one non-blocking
// stream, cudaMemcpyAsync, the output conversion kernel and CUDA events.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "cuda_backend.hpp"
#include "imgpack/error.hpp"
#include "imgpack/output_format.hpp"

namespace imgpack {

namespace {

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear a non-sticky error so later calls are not blamed for it
    throw Error(std::string("CUDA: ") + call + " failed: " + cudaGetErrorString(status));
  }
}

// One thread per output element (NCHW order, so writes coalesce), grid-strided.
__global__ void convert_kernel(const uint8_t* src, void* dst, std::size_t count,
                               OutputFormat format, RecordShape shape, Normalization norm) {
  const std::size_t per_record = shape.elements();
  const std::size_t pixels = shape.pixels();
  const std::size_t out_bytes = per_record * (format == OutputFormat::float32_nchw ? 4 : 2);
  const std::size_t total = count * per_record;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += stride) {
    const std::size_t n = i / per_record;
    const std::size_t within = i - n * per_record;
    const auto c = static_cast<uint32_t>(within / pixels);
    const std::size_t p = within - std::size_t{c} * pixels;
    convert_element(src + n * per_record, static_cast<uint8_t*>(dst) + n * out_bytes, format, shape,
                    norm, c, p);
  }
}

void free_pinned(void* data, std::size_t) { cudaFreeHost(data); }

void free_device(void* data, std::size_t) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, data) == cudaSuccess) cudaSetDevice(attributes.device);
  cudaFree(data);
}

class CudaEvent final : public UploadEvent {
 public:
  explicit CudaEvent(int device) : device_(device) {
    check(cudaSetDevice(device_), "cudaSetDevice");
    check(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  }
  ~CudaEvent() override {
    cudaSetDevice(device_);
    cudaEventDestroy(event_);
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  void* native_handle() const override { return event_; }
  cudaEvent_t get() const { return event_; }

 private:
  int device_;
  cudaEvent_t event_ = nullptr;
};

cudaEvent_t native(UploadEvent& event) { return static_cast<CudaEvent&>(event).get(); }

class CudaBackend final : public UploadBackend {
 public:
  explicit CudaBackend(int device) : device_(device) {
    check(cudaSetDevice(device_), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  }
  ~CudaBackend() override {
    cudaSetDevice(device_);
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  Device device() const override { return Device::cuda(device_); }
  bool separate_device_memory() const override { return true; }
  bool pinned_host_memory() const override { return true; }

  Memory allocate_host(std::size_t bytes) override {
    use_device();
    void* data = nullptr;
    check(cudaHostAlloc(&data, std::max<std::size_t>(bytes, 1), cudaHostAllocDefault),
          "cudaHostAlloc");
    return Memory(data, bytes, free_pinned);
  }
  Memory allocate_device(std::size_t bytes) override {
    use_device();
    void* data = nullptr;
    check(cudaMalloc(&data, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
    return Memory(data, bytes, free_device);
  }
  std::unique_ptr<UploadEvent> create_event() override {
    return std::make_unique<CudaEvent>(device_);
  }

  void stream_wait(UploadEvent& event) override {
    use_device();
    check(cudaStreamWaitEvent(stream_, native(event), 0), "cudaStreamWaitEvent");
  }
  void copy_to_device(void* dst, const void* src, std::size_t bytes) override {
    use_device();
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync");
  }
  void convert(const ConvertJob& job) override {
    use_device();
    const std::size_t total = job.count * job.shape.elements();
    if (total == 0) return;
    constexpr unsigned kThreads = 256;
    const auto blocks =
        static_cast<unsigned>(std::min<std::size_t>((total + kThreads - 1) / kThreads, 1u << 16));
    convert_kernel<<<blocks, kThreads, 0, stream_>>>(job.src, job.dst, job.count, job.format,
                                                     job.shape, job.norm);
    check(cudaGetLastError(), "convert kernel launch");
  }
  void record(UploadEvent& event) override {
    use_device();
    check(cudaEventRecord(native(event), stream_), "cudaEventRecord");
  }

  void synchronize(UploadEvent& event) override {
    use_device();
    check(cudaEventSynchronize(native(event)), "cudaEventSynchronize");
  }
  bool query(UploadEvent& event) override {
    use_device();
    cudaError_t status = cudaEventQuery(native(event));
    if (status == cudaErrorNotReady) return false;
    check(status, "cudaEventQuery");
    return true;
  }
  void record_on_stream(UploadEvent& event, void* stream) override {
    use_device();
    check(cudaEventRecord(native(event), static_cast<cudaStream_t>(stream)), "cudaEventRecord");
  }
  void wait_on_stream(UploadEvent& event, void* stream) override {
    use_device();
    check(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), native(event), 0),
          "cudaStreamWaitEvent");
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    use_device();
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy");
  }
  void* native_stream() const override { return stream_; }

 private:
  // The current device is per thread; every entry point may run on a new thread.
  void use_device() const { check(cudaSetDevice(device_), "cudaSetDevice"); }

  int device_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

namespace cuda_detail {

int device_count() {
  int count = 0;
  // cudaErrorInsufficientDriver (no driver) and cudaErrorNoDevice both mean "none".
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

std::unique_ptr<UploadBackend> make_backend(int device) {
  return std::make_unique<CudaBackend>(device);
}

Memory try_allocate_pinned(std::size_t bytes) {
  void* data = nullptr;
  if (cudaHostAlloc(&data, std::max<std::size_t>(bytes, 1), cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError();
    return {};
  }
  return Memory(data, bytes, free_pinned);
}

}  // namespace cuda_detail

}  // namespace imgpack
