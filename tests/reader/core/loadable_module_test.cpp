// Where a module of this project is looked for (reader/core/src/
// loadable_module.cpp): beside the code that asks, by the dynamic linker's
// search, the build tree's copy only for code running from the build tree.
#include "loadable_module.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace imgpack::loadable_module {
namespace {

namespace fs = std::filesystem;

TEST(LoadableModule, IsWithinComparesWholeNamesWithLinksResolved) {
  test::TempDir dir;
  fs::create_directories(dir / "build" / "tests");
  fs::create_directories(dir / "build-other");
  fs::create_directory_symlink(dir / "build", dir / "link");
  EXPECT_TRUE(is_within(dir / "build", dir / "build"));
  EXPECT_TRUE(is_within(dir / "build" / "tests", dir / "build"));
  EXPECT_TRUE(is_within(dir / "link" / "tests", dir / "build"));
  EXPECT_TRUE(is_within(dir / "build" / "tests" / "..", dir / "link"));
  EXPECT_FALSE(is_within(dir / "build-other", dir / "build"));
  EXPECT_FALSE(is_within(dir.path(), dir / "build"));
  EXPECT_FALSE(is_within(dir / "build", ""));
}

TEST(LoadableModule, ThisProgramIsFoundByItsFileNotItsName) {
  // The test program runs from the build tree: its own directory, and so the
  // build tree's copy after the dynamic linker's search.
  const fs::path here = directory_of_this_object();
  EXPECT_EQ(here, fs::read_symlink("/proc/self/exe").parent_path());
  EXPECT_TRUE(is_within(here, IMGPACK_BUILD_TREE_FOR_TESTS));
  const std::vector<std::string> list =
      candidates("IMGPACK_NO_SUCH_VARIABLE", "libx.so", "/build/libx.so", "/install/libx.so");
  EXPECT_EQ(list, (std::vector<std::string>{(here / "libx.so").string(), "libx.so",
                                            "/build/libx.so", "/install/libx.so"}));
}

}  // namespace
}  // namespace imgpack::loadable_module
