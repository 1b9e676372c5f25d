// The CUDA upload backend lives in a module of its own, libimgpack_cuda.so,
// which links the CUDA runtime; the reader loads it with dlopen the first time
// a CUDA device is asked for. A training program that never asks links no
// CUDA and needs none installed.
//
// This header is the whole interface between the two: the module exports one
// C function, kEntryPoint, returning its ModuleFunctions. The reader accepts a
// module only when its `abi` equals kCudaModuleAbi, a hash of the module's
// sources and of the headers of what crosses the boundary (UploadBackend,
// Memory, ConvertJob, Error) made at build time (cmake/module_abi.cmake): a
// module built from other sources, an older installed one say, is refused
// and the search goes on.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda_module_abi.hpp"  // generated: IMGPACK_CUDA_MODULE_ABI
#include "imgpack/upload_backend.hpp"

namespace imgpack::cuda_module {

inline constexpr const char* kCudaModuleAbi = IMGPACK_CUDA_MODULE_ABI;
inline constexpr const char* kEntryPoint = "imgpack_cuda_module_functions";
inline constexpr const char* kFileName = "libimgpack_cuda.so";
// The environment variable naming the module to load instead of searching.
inline constexpr const char* kPathVariable = "IMGPACK_CUDA_MODULE";

// What the module provides. Every function may be called from any thread.
struct ModuleFunctions {
  const char* abi;
  // Usable devices; 0 on any CUDA error (no driver, no device). Never throws.
  int (*device_count)();
  // Throws imgpack::Error if the device cannot be used.
  std::unique_ptr<UploadBackend> (*make_backend)(int device);
  // Pinned host memory (cudaHostAlloc), or an empty Memory if that fails.
  Memory (*try_allocate_pinned)(std::size_t bytes);
};

// loadable_module reads `abi` through a pointer to the table.
static_assert(std::is_standard_layout_v<ModuleFunctions>);

using EntryPoint = const ModuleFunctions* (*)();

// The outcome of a search: the module's functions (nullptr when none could be
// loaded), the file they came from (as the dynamic linker found it), and
// otherwise why each candidate failed.
struct LoadResult {
  const ModuleFunctions* functions = nullptr;
  std::string path;
  std::string problem;
};

// Tries `candidates` in order (a path containing '/' is opened as it is, a
// bare file name through the dynamic linker's search: the program's run
// path, LD_LIBRARY_PATH, the system's directories) and returns the first
// that loads, exports kEntryPoint and has the expected ABI. A loaded module
// stays loaded until the process exits (its memory and backends outlive any
// handle). Never throws.
LoadResult load_module(const std::vector<std::string>& candidates);

// Where this reader looks for its module, in order: $IMGPACK_CUDA_MODULE
// alone when it is set; otherwise beside the executable or shared object
// holding the reader, the dynamic linker's search (the installed package
// puts its library directory on the run path of programs that link
// imgpack::reader), the build tree that built the reader, and the install
// prefix it was configured with. Empty when built without CUDA.
std::vector<std::string> module_candidates();

// The process's module, searched for once, on first use. Thread-safe.
const LoadResult& process_module();

}  // namespace imgpack::cuda_module
