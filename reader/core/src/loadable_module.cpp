#include "loadable_module.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <system_error>

namespace imgpack::loadable_module {

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

// One candidate: its table and the file it came from, or why it is not usable.
const void* try_load(const std::string& candidate, const Kind& kind, std::string& path,
                     std::string& problem) {
  const bool is_path = candidate.find('/') != std::string::npos;
  std::error_code ec;
  if (is_path && !std::filesystem::exists(candidate, ec)) {
    problem = candidate + ": not found";
    return nullptr;
  }
  // RTLD_LOCAL: the module's symbols stay its own.
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
  void* symbol = ::dlsym(handle, kind.entry_point);
  if (symbol == nullptr) {
    problem = candidate + ": not " + kind.what + " (no " + kind.entry_point + ")";
    ::dlclose(handle);
    return nullptr;
  }
  // The table is standard-layout with `const char* abi` first, so a pointer
  // to it is a pointer to that member.
  const void* table = kind.call(symbol);
  const char* abi = table != nullptr ? *static_cast<const char* const*>(table) : nullptr;
  if (abi == nullptr || std::strcmp(abi, kind.abi) != 0) {
    problem = candidate + ": built from another version of imgpack (module " +
              (abi != nullptr ? abi : "?") + ", expected " + kind.abi + ")";
    ::dlclose(handle);
    return nullptr;
  }
  path = loaded_file(handle, candidate);
  return table;
}

}  // namespace

Found load_first(const std::vector<std::string>& candidates, const Kind& kind) {
  Found found;
  for (const std::string& candidate : candidates) {
    std::string path, problem;
    if (const void* table = try_load(candidate, kind, path, problem)) {
      found.table = table;
      found.path = path;
      found.problem.clear();
      return found;
    }
    found.problem += (found.problem.empty() ? "" : "; ") + problem;
  }
  return found;
}

std::filesystem::path directory_of_this_object() {
  Dl_info info{};
  void* extra = nullptr;
  if (::dladdr1(reinterpret_cast<void*>(&directory_of_this_object), &info, &extra,
                RTLD_DL_LINKMAP) != 0) {
    // A shared object's own file as the dynamic linker opened it. The main
    // program's is empty there (and dli_fname its argv[0], which whoever
    // started it chose), so the main program is found by /proc/self/exe.
    const auto* map = static_cast<const link_map*>(extra);
    if (map != nullptr && map->l_name != nullptr && map->l_name[0] != '\0') {
      std::error_code ec;
      const std::filesystem::path file = std::filesystem::absolute(map->l_name, ec);
      if (!ec) return file.parent_path();
    }
  }
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

bool is_within(const std::filesystem::path& dir, const std::filesystem::path& root) {
  std::error_code ec;
  const std::filesystem::path d = std::filesystem::weakly_canonical(dir, ec);
  if (ec || root.empty()) return false;
  const std::filesystem::path r = std::filesystem::weakly_canonical(root, ec);
  if (ec) return false;
  return std::mismatch(r.begin(), r.end(), d.begin(), d.end()).first == r.end();
}

std::vector<std::string> candidates(const char* path_variable, const char* file_name,
                                    const char* build_path, const char* install_path) {
  if (const char* override_path = std::getenv(path_variable);
      override_path != nullptr && override_path[0] != '\0') {
    return {override_path};
  }
  std::vector<std::string> list;
  const std::filesystem::path here = directory_of_this_object();
  if (!here.empty()) list.push_back((here / file_name).string());
  list.emplace_back(file_name);
  // The build tree's copy only for code running from the build tree (its
  // tests): an installed or moved program that lacks its own module must say
  // so, not load another build's.
  if (is_within(here, IMGPACK_BUILD_TREE)) list.emplace_back(build_path);
  list.emplace_back(install_path);
  return list;
}

std::string not_loaded(const char* name, const char* file_name, const char* path_variable,
                       const std::string& problem) {
  const char* override_path = std::getenv(path_variable);
  if (override_path != nullptr && override_path[0] != '\0') {
    return std::string(path_variable) + " names no usable " + name + ": " + problem;
  }
  return std::string("the ") + name + " " + file_name + " was not found or cannot be loaded (" +
         problem + "); it is installed with imgpack in its library directory, or set " +
         path_variable + " to its path";
}

}  // namespace imgpack::loadable_module
