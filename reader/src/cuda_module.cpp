#include "cuda_module.hpp"

#include "loadable_module.hpp"

namespace imgpack::cuda_module {

LoadResult load_module(const std::vector<std::string>& candidates) {
  LoadResult result;
  if (candidates.empty()) {
    result.problem = "this imgpack was built without CUDA";
    return result;
  }
  const loadable_module::Found found = loadable_module::load_first(
      candidates, {kEntryPoint, loadable_module::call_entry_point<ModuleFunctions>, kCudaModuleAbi,
                   "an imgpack CUDA module"});
  result.functions = static_cast<const ModuleFunctions*>(found.table);
  result.path = found.path;
  result.problem = found.problem;
  return result;
}

std::vector<std::string> module_candidates() {
#if defined(IMGPACK_HAVE_CUDA)
  return loadable_module::candidates(kPathVariable, kFileName, IMGPACK_CUDA_MODULE_BUILD_PATH,
                                     IMGPACK_CUDA_MODULE_INSTALL_PATH);
#else
  return {};
#endif
}

const LoadResult& process_module() {
  static const LoadResult module = [] {
    const std::vector<std::string> candidates = module_candidates();
    LoadResult result = load_module(candidates);
    if (result.functions != nullptr || candidates.empty()) return result;
    result.problem =
        loadable_module::not_loaded("CUDA module", kFileName, kPathVariable, result.problem);
    return result;
  }();
  return module;
}

}  // namespace imgpack::cuda_module
