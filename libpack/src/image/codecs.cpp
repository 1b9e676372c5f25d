#include "codecs.hpp"

#include <new>

#include "loadable_module.hpp"

namespace imgpack::codecs {

namespace {

// The process's module, searched for once, on first use; throws while none
// can be loaded.
const ModuleFunctions& module() {
  struct Search {
    const ModuleFunctions* functions = nullptr;
    std::string problem;
  };
  static const Search search = [] {
    const loadable_module::Found found = loadable_module::load_first(
        loadable_module::candidates(kPathVariable, kFileName, IMGPACK_CODECS_MODULE_BUILD_PATH,
                                    IMGPACK_CODECS_MODULE_INSTALL_PATH),
        {kEntryPoint, loadable_module::call_entry_point<ModuleFunctions>, kCodecsModuleAbi,
         "imgpack's image codecs module"});
    Search s;
    s.functions = static_cast<const ModuleFunctions*>(found.table);
    if (s.functions == nullptr) {
      s.problem = loadable_module::not_loaded("image codecs module", kFileName, kPathVariable,
                                              found.problem);
    }
    return s;
  }();
  if (search.functions == nullptr) throw Error(search.problem);
  return *search.functions;
}

}  // namespace

cv::Mat decode(std::span<const uint8_t> bytes, int flags) {
  const ModuleFunctions& functions = module();
  cv::Mat image;
  std::string error;
  if (!functions.decode(bytes.data(), bytes.size(), flags, &image, &error)) {
    if (error == kOutOfMemory) throw std::bad_alloc();
    throw CodecError(error);
  }
  return image;
}

bool encode(const char* extension, const cv::Mat& image, std::vector<uint8_t>& encoded,
            const std::vector<int>& params) {
  const ModuleFunctions& functions = module();
  bool encoded_ok = false;
  std::string error;
  if (!functions.encode(extension, &image, params.data(), params.size(), &encoded, &encoded_ok,
                        &error)) {
    throw CodecError(error);
  }
  return encoded_ok;
}

}  // namespace imgpack::codecs
