// The CUDA upload backend: pinned host slots, device slots, a copy stream and
// a conversion stream, cudaMemcpyAsync, the output conversion kernel and CUDA
// events. Built as the module libimgpack_cuda.so, which the reader loads when
// a CUDA device is first asked for (cuda_module.hpp); the only symbol it
// exports is the entry point at the end of this file.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda_module.hpp"
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

// One thread per pixel of a record, grid-strided: it reads the pixel's C
// bytes (HWC) and writes one value to each of the C planes (NCHW), so a warp
// reads 32 consecutive pixels and writes 32 consecutive values per plane.
// Index is uint32_t when the batch's pixels fit (one 32-bit division per
// pixel), uint64_t otherwise.
template <class Index>
__global__ void convert_kernel(const uint8_t* src, void* dst, Index total_pixels,
                               OutputFormat format, RecordShape shape, Normalization norm) {
  const Index pixels = static_cast<Index>(shape.pixels());
  const std::size_t in_bytes = shape.elements();
  const std::size_t out_bytes = in_bytes * (format == OutputFormat::float32_nchw ? 4 : 2);
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < total_pixels;
       i += stride) {
    const Index n = i / pixels;
    const Index p = i - n * pixels;
    const uint8_t* record = src + n * in_bytes;
    void* out = static_cast<uint8_t*>(dst) + n * out_bytes;
    for (uint32_t c = 0; c < shape.channels; ++c) {
      convert_element(record, out, format, shape, norm, c, p);
    }
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

// cudaHostRegister for the lifetime of the object.
class CudaRegistration final : public HostRegistration {
 public:
  CudaRegistration(int device, const void* data, std::size_t bytes)
      : device_(device), data_(const_cast<void*>(data)) {
    check(cudaSetDevice(device_), "cudaSetDevice");
    // Read-only: file mappings are PROT_READ. Portable: every context may use it.
    check(cudaHostRegister(data_, bytes, cudaHostRegisterReadOnly | cudaHostRegisterPortable),
          "cudaHostRegister");
  }
  ~CudaRegistration() override {
    cudaSetDevice(device_);
    cudaHostUnregister(data_);
  }
  CudaRegistration(const CudaRegistration&) = delete;
  CudaRegistration& operator=(const CudaRegistration&) = delete;

 private:
  int device_;
  void* data_;
};

// Two streams: copies on one, conversion kernels on the other, joined by an
// event per conversion, so that the copy engine uploads batch n+1 while the
// SMs convert batch n. The contract of UploadBackend (one in-order stream)
// holds for what callers can observe: convert() waits for every copy issued
// before it, record() fires after all work issued before it on both, and
// stream_wait() holds back both.
class CudaBackend final : public UploadBackend {
 public:
  explicit CudaBackend(int device) : device_(device) {
    check(cudaSetDevice(device_), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking),
          "cudaStreamCreateWithFlags");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check(cudaEventCreateWithFlags(&copied_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  }
  ~CudaBackend() override {
    cudaSetDevice(device_);
    cudaStreamSynchronize(copy_stream_);
    cudaStreamSynchronize(stream_);
    cudaEventDestroy(copied_);
    cudaStreamDestroy(copy_stream_);
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
  std::unique_ptr<HostRegistration> register_host(const void* data, std::size_t bytes) override {
    return std::make_unique<CudaRegistration>(device_, data, bytes);
  }

  void stream_wait(UploadEvent& event) override {
    use_device();
    check(cudaStreamWaitEvent(copy_stream_, native(event), 0), "cudaStreamWaitEvent");
    check(cudaStreamWaitEvent(stream_, native(event), 0), "cudaStreamWaitEvent");
  }
  void copy_to_device(void* dst, const void* src, std::size_t bytes) override {
    use_device();
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, copy_stream_),
          "cudaMemcpyAsync");
  }
  void gather_to_device(void* dst, const void* const* srcs, std::size_t count,
                        std::size_t bytes_each) override {
    use_device();
    if (count == 0) return;
    // One batched copy: the driver schedules the blocks on the copy engine
    // without a call per record. Reused arrays: only the upload stage calls this.
    gather_dsts_.resize(count);
    gather_sizes_.assign(count, bytes_each);
    for (std::size_t i = 0; i < count; ++i) {
      gather_dsts_[i] = static_cast<uint8_t*>(dst) + i * bytes_each;
    }
    cudaMemcpyAttributes attributes{};
    attributes.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    std::size_t first = 0;
    check(cudaMemcpyBatchAsync(gather_dsts_.data(), srcs, gather_sizes_.data(), count, &attributes,
                               &first, 1, copy_stream_),
          "cudaMemcpyBatchAsync");
  }
  void convert(const ConvertJob& job) override {
    use_device();
    const std::size_t total = job.count * job.shape.pixels();
    if (total == 0) return;
    join_copies();
    constexpr unsigned kThreads = 256;
    const auto blocks =
        static_cast<unsigned>(std::min<std::size_t>((total + kThreads - 1) / kThreads, 1u << 20));
    if (total <= UINT32_MAX) {
      convert_kernel<uint32_t><<<blocks, kThreads, 0, stream_>>>(
          job.src, job.dst, static_cast<uint32_t>(total), job.format, job.shape, job.norm);
    } else {
      convert_kernel<uint64_t><<<blocks, kThreads, 0, stream_>>>(job.src, job.dst, total,
                                                                 job.format, job.shape, job.norm);
    }
    check(cudaGetLastError(), "convert kernel launch");
  }
  void record(UploadEvent& event) override {
    use_device();
    join_copies();
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
  // The stream where every batch's work ends (record() records there).
  void* native_stream() const override { return stream_; }

 private:
  // The current device is per thread; every entry point may run on a new thread.
  void use_device() const { check(cudaSetDevice(device_), "cudaSetDevice"); }

  // Later work on the conversion stream waits for every copy issued so far.
  void join_copies() {
    check(cudaEventRecord(copied_, copy_stream_), "cudaEventRecord");
    check(cudaStreamWaitEvent(stream_, copied_, 0), "cudaStreamWaitEvent");
  }

  int device_;
  std::vector<void*> gather_dsts_;
  std::vector<std::size_t> gather_sizes_;
  cudaStream_t copy_stream_ = nullptr;
  cudaStream_t stream_ = nullptr;  // conversions; every batch's ready event
  cudaEvent_t copied_ = nullptr;   // re-recorded: a wait captures its latest record
};

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

constexpr cuda_module::ModuleFunctions kFunctions = {cuda_module::kCudaModuleAbi, device_count,
                                                     make_backend, try_allocate_pinned};

}  // namespace

}  // namespace imgpack

extern "C" __attribute__((visibility("default"))) const imgpack::cuda_module::ModuleFunctions*
imgpack_cuda_module_functions() {
  return &imgpack::kFunctions;
}
