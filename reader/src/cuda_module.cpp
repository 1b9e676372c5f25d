#include "cuda_module.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace imgpack::cuda_module {

namespace {

// The file the dynamic linker opened for `handle` (a bare name resolved).
std::string loaded_file(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    return map->l_name;
  }
  return fallback;
}

// One candidate: the module's functions and the file they came from, or why
// it is not usable.
const ModuleFunctions* try_load(const std::string& candidate, std::string& path,
                                std::string& problem) {
  const bool is_path = candidate.find('/') != std::string::npos;
  std::error_code ec;
  if (is_path && !std::filesystem::exists(candidate, ec)) {
    problem = candidate + ": not found";
    return nullptr;
  }
  // RTLD_LOCAL: the module's symbols stay its own. Never closed: backends,
  // memory and events it made may live until the process exits.
  void* handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = ::dlerror();
    const std::string why = error != nullptr ? error : "cannot be loaded";
    // dlerror() names the module itself only when the module is what failed,
    // not a library it needs (libcudart.so.13, say).
    problem = !is_path                     ? candidate + ": not found by the dynamic linker"
              : why.starts_with(candidate) ? why
                                           : candidate + ": " + why;
    return nullptr;
  }
  ::dlerror();
  void* symbol = ::dlsym(handle, kEntryPoint);
  if (symbol == nullptr) {
    problem = candidate + ": not an imgpack CUDA module (no " + kEntryPoint + ")";
    ::dlclose(handle);
    return nullptr;
  }
  // POSIX guarantees that a dlsym result converts to a function pointer.
  const ModuleFunctions* functions = reinterpret_cast<EntryPoint>(symbol)();
  if (functions == nullptr || functions->abi == nullptr ||
      std::strcmp(functions->abi, kCudaModuleAbi) != 0) {
    problem = candidate + ": built from another version of imgpack (module " +
              (functions != nullptr && functions->abi != nullptr ? functions->abi : "?") +
              ", reader " + kCudaModuleAbi + ")";
    ::dlclose(handle);
    return nullptr;
  }
  path = loaded_file(handle, candidate);
  return functions;
}

#if defined(IMGPACK_HAVE_CUDA)
// The directory of the executable or shared object this code was linked into.
std::filesystem::path directory_of_this_object() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&directory_of_this_object), &info) != 0 &&
      info.dli_fname != nullptr && info.dli_fname[0] == '/') {
    return std::filesystem::path(info.dli_fname).parent_path();
  }
  std::error_code ec;  // the main program's name may be relative or empty
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}
#endif

}  // namespace

LoadResult load_module(const std::vector<std::string>& candidates) {
  LoadResult result;
  for (const std::string& candidate : candidates) {
    std::string path, problem;
    if (const ModuleFunctions* functions = try_load(candidate, path, problem)) {
      result.functions = functions;
      result.path = path;
      result.problem.clear();
      return result;
    }
    result.problem += (result.problem.empty() ? "" : "; ") + problem;
  }
  if (candidates.empty()) result.problem = "this imgpack was built without CUDA";
  return result;
}

std::vector<std::string> module_candidates() {
#if defined(IMGPACK_HAVE_CUDA)
  if (const char* override_path = std::getenv(kPathVariable);
      override_path != nullptr && override_path[0] != '\0') {
    return {override_path};
  }
  std::vector<std::string> candidates;
  const std::filesystem::path here = directory_of_this_object();
  if (!here.empty()) candidates.push_back((here / kFileName).string());
  candidates.emplace_back(kFileName);
  candidates.emplace_back(IMGPACK_CUDA_MODULE_BUILD_PATH);
  candidates.emplace_back(IMGPACK_CUDA_MODULE_INSTALL_PATH);
  return candidates;
#else
  return {};
#endif
}

const LoadResult& process_module() {
  static const LoadResult module = [] {
    const std::vector<std::string> candidates = module_candidates();
    LoadResult result = load_module(candidates);
    if (result.functions != nullptr || candidates.empty()) return result;
    const char* override_path = std::getenv(kPathVariable);
    if (override_path != nullptr && override_path[0] != '\0') {
      result.problem =
          std::string(kPathVariable) + " names no usable CUDA module: " + result.problem;
    } else {
      result.problem = std::string("the CUDA module ") + kFileName +
                       " was not found or cannot be loaded (" + result.problem +
                       "); it is installed with imgpack in its library directory, or set " +
                       kPathVariable + " to its path";
    }
    return result;
  }();
  return module;
}

}  // namespace imgpack::cuda_module
