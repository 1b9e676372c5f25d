#include "imgpack/upload_backend.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "cuda_module.hpp"
#include "imgpack/error.hpp"

namespace imgpack {

std::string Device::name() const {
  return kind == Kind::host ? std::string("host") : "cuda:" + std::to_string(index);
}

Device parse_device(const std::string& text) {
  auto index_after = [&](std::string_view prefix) -> std::optional<int> {
    if (!text.starts_with(prefix)) return std::nullopt;
    const std::string number = text.substr(prefix.size());
    if (number.empty() || number.size() >= 6 ||
        number.find_first_not_of("0123456789") != std::string::npos) {
      return std::nullopt;
    }
    return std::stoi(number);
  };
  if (text == "host" || text == "cpu") return Device::host();
  // PyTorch names the host "cpu:0" too (str(torch.device("cpu", 0))).
  if (index_after("cpu:")) return Device::host();
  if (text == "cuda") return Device::cuda(0);
  if (const std::optional<int> index = index_after("cuda:")) return Device::cuda(*index);
  throw UsageError("unknown device '" + text + "' (use cpu (or host), cuda or cuda:N)");
}

namespace {

// Page-aligned anonymous memory, every page touched so that it exists before
// the first batch (and the first epoch is not timed with page faults).
Memory allocate_pages(std::size_t bytes) {
  if (bytes == 0) bytes = 1;
  void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (data == MAP_FAILED) {
    throw Error("cannot allocate " + std::to_string(bytes) +
                " bytes of batch memory: " + std::strerror(errno));
  }
#ifdef MADV_HUGEPAGE
  ::madvise(data, bytes, MADV_HUGEPAGE);  // fewer TLB misses when copying; advisory only
#endif
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  auto* p = static_cast<volatile uint8_t*>(data);
  for (std::size_t i = 0; i < bytes; i += page) p[i] = 0;
  return Memory(data, bytes, [](void* d, std::size_t n) { ::munmap(d, n); });
}

class HostEvent final : public UploadEvent {
 public:
  void* native_handle() const override { return nullptr; }
};

// A stream whose work completes as it is issued: every event has fired by the
// time record() returns, so waiting on one never blocks.
class HostBackend final : public UploadBackend {
 public:
  explicit HostBackend(bool pin_memory) : pin_(pin_memory && cuda_device_count() > 0) {}

  Device device() const override { return Device::host(); }
  bool separate_device_memory() const override { return false; }
  bool pinned_host_memory() const override { return pin_; }

  Memory allocate_host(std::size_t bytes) override {
    if (pin_) {
      Memory pinned = cuda_module::process_module().functions->try_allocate_pinned(bytes);
      if (pinned) return pinned;
    }
    return allocate_pages(bytes);
  }
  Memory allocate_device(std::size_t bytes) override { return allocate_pages(bytes); }
  std::unique_ptr<UploadEvent> create_event() override { return std::make_unique<HostEvent>(); }
  std::unique_ptr<HostRegistration> register_host(const void*, std::size_t) override {
    return std::make_unique<HostRegistration>();
  }

  void stream_wait(UploadEvent&) override {}
  void copy_to_device(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void gather_to_device(void* dst, const void* const* srcs, std::size_t count,
                        std::size_t bytes_each) override {
    for (std::size_t i = 0; i < count; ++i) {
      std::memcpy(static_cast<uint8_t*>(dst) + i * bytes_each, srcs[i], bytes_each);
    }
  }
  void convert(const ConvertJob& job) override {
    convert_records_host(job.src, job.dst, job.count, job.format, job.shape, job.norm);
  }
  void record(UploadEvent&) override {}

  void synchronize(UploadEvent&) override {}
  bool query(UploadEvent&) override { return true; }
  void record_on_stream(UploadEvent&, void*) override {}
  void wait_on_stream(UploadEvent&, void*) override {}
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void* native_stream() const override { return nullptr; }

 private:
  bool pin_;
};

}  // namespace

std::unique_ptr<UploadBackend> make_host_backend(bool pin_memory) {
  return std::make_unique<HostBackend>(pin_memory);
}

std::unique_ptr<UploadBackend> make_upload_backend(const Device& device, bool pin_host_memory) {
  if (!device.is_cuda()) return make_host_backend(pin_host_memory);
  const cuda_module::LoadResult& module = cuda_module::process_module();
  if (module.functions == nullptr) {
    throw Error(device.name() + " requested, but " + module.problem);
  }
  const int count = module.functions->device_count();
  if (device.index < 0 || device.index >= count) {
    throw Error(device.name() + " requested, but " +
                (count == 0 ? std::string("no CUDA device is available (no GPU or no driver)")
                            : "only " + std::to_string(count) + " CUDA device(s) exist"));
  }
  return module.functions->make_backend(device.index);
}

int cuda_device_count() {
  const cuda_module::LoadResult& module = cuda_module::process_module();
  return module.functions != nullptr ? module.functions->device_count() : 0;
}

std::string cuda_module_path() { return cuda_module::process_module().path; }

bool built_with_cuda() {
#if defined(IMGPACK_HAVE_CUDA)
  return true;
#else
  return false;
#endif
}

}  // namespace imgpack
