// Finding and loading the CUDA module (reader/src/cuda_module.cpp), with
// stand-in modules (fake_cuda_module.cpp) that need no CUDA, and with the
// real one when this build has it.
#include "cuda_module.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>  // setenv, unsetenv

#include <algorithm>
#include <string>
#include <vector>

#include "imgpack/error.hpp"

namespace imgpack::cuda_module {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CudaModule, AMissingFileIsNamed) {
  const LoadResult r = load_module({"/nonexistent/libimgpack_cuda.so"});
  EXPECT_EQ(r.functions, nullptr);
  EXPECT_TRUE(contains(r.problem, "/nonexistent/libimgpack_cuda.so: not found")) << r.problem;
}

TEST(CudaModule, ABareNameGoesThroughTheDynamicLinker) {
  const LoadResult r = load_module({"libimgpack_no_such_module.so"});
  EXPECT_EQ(r.functions, nullptr);
  EXPECT_TRUE(contains(r.problem, "libimgpack_no_such_module.so: not found by the dynamic linker"))
      << r.problem;
}

TEST(CudaModule, ALibraryWithoutTheEntryPointIsRefused) {
  const LoadResult r = load_module({"libm.so.6"});
  EXPECT_EQ(r.functions, nullptr);
  EXPECT_TRUE(contains(r.problem, "not an imgpack CUDA module")) << r.problem;
}

TEST(CudaModule, AModuleOfAnotherAbiIsRefused) {
  const LoadResult r = load_module({IMGPACK_FAKE_MODULE_OTHER_ABI});
  EXPECT_EQ(r.functions, nullptr);
  EXPECT_TRUE(contains(r.problem, "built from another version of imgpack")) << r.problem;
  EXPECT_TRUE(contains(r.problem, kCudaModuleAbi)) << r.problem;
}

TEST(CudaModule, TheFirstUsableCandidateIsLoadedAndEveryFailureListed) {
  const LoadResult failed =
      load_module({"/nonexistent/a.so", IMGPACK_FAKE_MODULE_OTHER_ABI, "libm.so.6"});
  EXPECT_EQ(failed.functions, nullptr);
  EXPECT_TRUE(contains(failed.problem, "/nonexistent/a.so")) << failed.problem;
  EXPECT_TRUE(contains(failed.problem, "another version")) << failed.problem;
  EXPECT_TRUE(contains(failed.problem, "libm.so.6")) << failed.problem;

  const LoadResult r =
      load_module({"/nonexistent/a.so", IMGPACK_FAKE_MODULE_OTHER_ABI, IMGPACK_FAKE_MODULE});
  ASSERT_NE(r.functions, nullptr) << r.problem;
  EXPECT_EQ(r.path, IMGPACK_FAKE_MODULE);
  EXPECT_TRUE(r.problem.empty()) << r.problem;
  EXPECT_EQ(r.functions->device_count(), 2);
}

TEST(CudaModule, ErrorsAndMemoryCrossTheModuleBoundary) {
  const LoadResult r = load_module({IMGPACK_FAKE_MODULE});
  ASSERT_NE(r.functions, nullptr) << r.problem;
  try {
    r.functions->make_backend(1);
    ADD_FAILURE() << "the fake module made a backend";
  } catch (const Error& e) {  // an imgpack::Error thrown inside the module
    EXPECT_TRUE(contains(e.what(), "no backend for device 1")) << e.what();
  }
  Memory memory = r.functions->try_allocate_pinned(4096);
  ASSERT_TRUE(memory);
  EXPECT_EQ(memory.size(), 4096u);
  static_cast<char*>(memory.data())[4095] = 1;
  Memory moved = std::move(memory);  // released by the module's function, once
  EXPECT_TRUE(moved);
}

TEST(CudaModule, TheVariableOverridesTheSearch) {
  ASSERT_EQ(::setenv(kPathVariable, "/somewhere/module.so", 1), 0);
  const std::vector<std::string> overridden = module_candidates();
  ASSERT_EQ(::unsetenv(kPathVariable), 0);
  const std::vector<std::string> searched = module_candidates();
#if defined(IMGPACK_HAVE_CUDA)
  EXPECT_EQ(overridden, std::vector<std::string>{"/somewhere/module.so"});
  // The dynamic linker's search (an installed package's run path) before
  // the build tree: an installed program uses the installed module.
  const auto build = std::find(searched.begin(), searched.end(), IMGPACK_REAL_CUDA_MODULE);
  const auto bare = std::find(searched.begin(), searched.end(), std::string(kFileName));
  EXPECT_NE(build, searched.end());
  EXPECT_NE(bare, searched.end());
  EXPECT_LT(bare, build);
#else
  EXPECT_TRUE(overridden.empty());
  EXPECT_TRUE(searched.empty());
  EXPECT_TRUE(contains(load_module(searched).problem, "built without CUDA"));
#endif
}

#if defined(IMGPACK_HAVE_CUDA)
TEST(CudaModule, TheRealModuleLoadsWithoutADevice) {
  const LoadResult r = load_module({IMGPACK_REAL_CUDA_MODULE});
  ASSERT_NE(r.functions, nullptr) << r.problem;
  EXPECT_GE(r.functions->device_count(), 0);  // 0 without a GPU or driver, never an error
  EXPECT_EQ(r.functions->device_count(), cuda_device_count());
}
#endif

}  // namespace
}  // namespace imgpack::cuda_module
