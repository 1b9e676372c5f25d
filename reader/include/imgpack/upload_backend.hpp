// Where batches go after the reader threads filled them: the upload stage.
//
// An UploadBackend owns one in-order stream of work (copy to the device,
// convert, record an event) and the memory the loader's slots live in. The
// CUDA backend maps this one to one onto a CUDA stream, cudaMemcpyAsync, a
// conversion kernel and CUDA events. The host backend implements the same
// contract on the CPU as a stream whose work completes as it is issued: an
// event fires when it is recorded, waiting on it returns at once. That keeps
// the loader's slot and event logic identical for both, and testable on
// machines without a GPU.
//
// Thread-safety: the stream operations (stream_wait, copy_to_device, convert,
// record) are issued by one thread (the loader's upload stage); allocation,
// synchronize, query, record_on_stream and wait_on_stream may be called from
// any thread. Memory and events must be destroyed before their backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "imgpack/output_format.hpp"

namespace imgpack {

// Where a Loader delivers batches.
struct Device {
  enum class Kind { host, cuda };
  Kind kind = Kind::host;
  int index = 0;  // CUDA device ordinal

  static Device host() { return {}; }
  static Device cuda(int index = 0) { return {Kind::cuda, index}; }
  bool is_cuda() const { return kind == Kind::cuda; }
  // "host", "cuda:0"
  std::string name() const;
};

// "host", "cuda", "cuda:N". Throws imgpack::UsageError.
Device parse_device(const std::string& text);

// The CUDA backend is a module of its own, libimgpack_cuda.so, the only part
// of imgpack that links the CUDA runtime: a program that never asks for a
// CUDA device needs no CUDA installed. It is loaded on the first call below
// that needs it, from $IMGPACK_CUDA_MODULE when that is set, otherwise from
// the directory of the program, the dynamic linker's search path (programs
// that link the installed imgpack::reader have its library directory on
// their run path), the build tree or the install prefix; only a module built
// from the same sources as the reader is accepted.

// Number of usable CUDA devices: 0 when imgpack was built without CUDA, when
// its CUDA module cannot be loaded, when there is no driver
// (cudaErrorInsufficientDriver) or no device. Never throws. Thread-safe.
int cuda_device_count();

// True when this build of imgpack has the CUDA backend (its module may still
// be missing at run time: cuda_module_path() then returns "").
bool built_with_cuda();

// The file the CUDA module was loaded from, or "" when it cannot be loaded
// (make_upload_backend(Device::cuda()) then says why). Never throws. Thread-safe.
std::string cuda_module_path();

// A block of memory handed out by a backend; frees itself. Move-only.
class Memory {
 public:
  using Release = void (*)(void* data, std::size_t size);
  Memory() = default;
  Memory(void* data, std::size_t size, Release release)
      : data_(data), size_(size), release_(release) {}
  ~Memory() { reset(); }
  Memory(Memory&& other) noexcept;
  Memory& operator=(Memory&& other) noexcept;
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;

  void* data() const { return data_; }
  std::size_t size() const { return size_; }
  explicit operator bool() const { return data_ != nullptr; }
  void reset();

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
  Release release_ = nullptr;
};

// An event on the backend's stream. Opaque; made by UploadBackend::create_event().
class UploadEvent {
 public:
  virtual ~UploadEvent() = default;
  // cudaEvent_t for the CUDA backend, nullptr for the host backend.
  virtual void* native_handle() const = 0;
};

// Host memory registered with a backend (pinned, and addressable by its copy
// engine) until this object is destroyed. Opaque; destroy it before its backend.
class HostRegistration {
 public:
  virtual ~HostRegistration() = default;
};

// A conversion of `count` uint8 HWC records at `src` into `dst` (layout by `format`).
struct ConvertJob {
  const uint8_t* src = nullptr;
  void* dst = nullptr;
  std::size_t count = 0;
  OutputFormat format = OutputFormat::float32_nchw;
  RecordShape shape;
  Normalization norm;
};

class UploadBackend {
 public:
  virtual ~UploadBackend() = default;

  virtual Device device() const = 0;
  // True when device memory is separate from host memory (batches must be copied).
  virtual bool separate_device_memory() const = 0;
  // True when allocate_host() returns page-locked (pinned) memory.
  virtual bool pinned_host_memory() const = 0;

  // Page-aligned host memory, pinned where the backend can; touched once so
  // the pages exist. Throws imgpack::Error on failure.
  virtual Memory allocate_host(std::size_t bytes) = 0;
  // Device memory (the host backend returns host memory). Throws imgpack::Error.
  virtual Memory allocate_device(std::size_t bytes) = 0;
  virtual std::unique_ptr<UploadEvent> create_event() = 0;
  // Registers read-only host memory (a file mapping, say) so that copies
  // read it directly, without staging: pins its pages (reading in any that
  // are not resident) until the registration is destroyed. Throws
  // imgpack::Error naming the reason if the backend cannot; the host backend
  // needs no registration and returns an empty one.
  virtual std::unique_ptr<HostRegistration> register_host(const void* data, std::size_t bytes) = 0;

  // Stream work, executed in the order issued, by one thread.
  // Later work on the stream waits until `event` has fired.
  virtual void stream_wait(UploadEvent& event) = 0;
  virtual void copy_to_device(void* device_dst, const void* host_src, std::size_t bytes) = 0;
  // Copies `count` blocks of `bytes_each` bytes from `host_srcs[i]` to
  // device_dst + i * bytes_each, as one operation on the stream. The sources
  // must stay valid and unchanged until the work completes (host memory
  // registered with register_host() for the CUDA backend, so that the copy
  // engine reads it directly). `host_srcs` itself may be reused at once.
  virtual void gather_to_device(void* device_dst, const void* const* host_srcs, std::size_t count,
                                std::size_t bytes_each) = 0;
  virtual void convert(const ConvertJob& job) = 0;
  // `event` fires when all work issued before it has completed.
  virtual void record(UploadEvent& event) = 0;

  // From any thread.
  // Blocks until `event` has fired (at once for an event never recorded).
  virtual void synchronize(UploadEvent& event) = 0;
  virtual bool query(UploadEvent& event) = 0;
  // Records `event` on a stream of the caller's (cudaStream_t; nullptr = the
  // legacy default stream). The host backend fires it at once.
  virtual void record_on_stream(UploadEvent& event, void* stream) = 0;
  // Makes the caller's stream wait for `event` (host backend: returns at once).
  virtual void wait_on_stream(UploadEvent& event, void* stream) = 0;
  // Synchronous copy of device (or host) memory to host memory.
  virtual void copy_to_host(void* host_dst, const void* src, std::size_t bytes) = 0;
  // The backend's stream (cudaStream_t), nullptr for the host backend.
  virtual void* native_stream() const = 0;
};

// A host backend. With `pin_memory`, allocate_host() uses cudaHostAlloc when
// a CUDA device is present and falls back to page-aligned memory otherwise.
std::unique_ptr<UploadBackend> make_host_backend(bool pin_memory = false);

// The backend for `device`. Throws imgpack::Error when a CUDA device is asked
// for and this build has no CUDA, its CUDA module cannot be loaded (the
// message lists where it looked and why each failed) or the device does not
// exist.
std::unique_ptr<UploadBackend> make_upload_backend(const Device& device,
                                                   bool pin_host_memory = false);

}  // namespace imgpack
