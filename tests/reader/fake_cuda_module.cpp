// A stand-in for libimgpack_cuda.so that needs no CUDA, built like the real
// module (hidden visibility, nothing of the reader linked), so that
// cuda_module_test.cpp exercises loading, the ABI check and errors crossing
// the module boundary on any machine. FAKE_MODULE_ABI is the ABI it claims.
#include <cstdlib>
#include <string>

#include "cuda_module.hpp"
#include "imgpack/error.hpp"

namespace {

int device_count() { return 2; }

std::unique_ptr<imgpack::UploadBackend> make_backend(int device) {
  throw imgpack::Error("fake module: no backend for device " + std::to_string(device));
}

imgpack::Memory try_allocate_pinned(std::size_t bytes) {
  return imgpack::Memory(std::malloc(bytes), bytes,
                         [](void* data, std::size_t) { std::free(data); });
}

constexpr imgpack::cuda_module::ModuleFunctions kFunctions = {FAKE_MODULE_ABI, device_count,
                                                              make_backend, try_allocate_pinned};

}  // namespace

extern "C" __attribute__((visibility("default"))) const imgpack::cuda_module::ModuleFunctions*
imgpack_cuda_module_functions() {
  return &kFunctions;
}
