// Loading a module of this project (a shared library opened with dlopen the
// first time it is needed, so that programs which never need it do not load
// it or what it links): the CUDA upload backend (libimgpack_cuda.so, which
// links the CUDA runtime) and the converter's image codecs
// (libimgpack_codecs.so, which links OpenCV's imgcodecs and through it
// dozens of libraries).
//
// A module exports one C function returning a pointer to its table of
// functions, a standard-layout struct whose first member is `const char*
// abi`. A module is accepted only when that string equals the one the loader
// was built with (a hash of the sources on both sides of the boundary, see
// cmake/module_abi.cmake): a stale or foreign module is refused and the search
// goes on.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace imgpack::loadable_module {

// What one module's search found: its table (nullptr when no candidate could
// be loaded), the file it came from as the dynamic linker opened it, and
// otherwise why each candidate failed ("; "-separated).
struct Found {
  const void* table = nullptr;
  std::string path;
  std::string problem;
};

// Calls a module's entry point, found as `symbol`, through its own type
// (`const Table* (*)()`): a call through any other function type is undefined
// behaviour (UBSan's -fsanitize=function reports it).
template <class Table>
const void* call_entry_point(void* symbol) {
  // POSIX guarantees that a dlsym result converts to a function pointer.
  using EntryPoint = const Table* (*)();
  return reinterpret_cast<EntryPoint>(symbol)();
}

// What to look for: the exported function's name, how to call it
// (call_entry_point<Table>), the ABI its table must name and, for messages,
// what such a module is ("an imgpack CUDA module").
struct Kind {
  const char* entry_point;
  const void* (*call)(void* symbol);
  const char* abi;
  const char* what;
};

// Tries `candidates` in order (a path containing '/' is opened as it is, a
// bare file name through the dynamic linker's search: the program's run path,
// LD_LIBRARY_PATH, the system's directories) and returns the first that loads
// with RTLD_NOW | RTLD_LOCAL, exports kind.entry_point and names kind.abi. A
// loaded module is never closed (what it made may live until the process
// exits). Never throws.
Found load_first(const std::vector<std::string>& candidates, const Kind& kind);

// The directory of the executable or shared object this code is linked into
// (where an installed program's modules sit beside it): a shared object's
// file as the dynamic linker opened it, the main program's /proc/self/exe
// (never its argv[0]); empty if unknown.
std::filesystem::path directory_of_this_object();

// Whether `dir` lies in `root` or is it, both taken with their links
// resolved; false for an empty `root` or a path that cannot be resolved.
bool is_within(const std::filesystem::path& dir, const std::filesystem::path& root);

// The usual search for a module file named `file_name`: $`path_variable`
// alone when it is set and not empty; otherwise beside the executable or
// shared object holding this code, the dynamic linker's search, the build
// tree's copy (only for code that runs from the build tree this was built
// in, IMGPACK_BUILD_TREE) and the install prefix's, in that order.
std::vector<std::string> candidates(const char* path_variable, const char* file_name,
                                    const char* build_path, const char* install_path);

// Why no module was loaded, for an error: "$`path_variable` names no usable
// `name`: `problem`" when the variable is set, else "the `name` `file_name` was
// not found or cannot be loaded (`problem`); it is installed with imgpack in
// its library directory, or set `path_variable` to its path".
std::string not_loaded(const char* name, const char* file_name, const char* path_variable,
                       const std::string& problem);

}  // namespace imgpack::loadable_module
