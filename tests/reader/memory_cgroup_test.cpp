// The memory cgroup this process runs in, and the memory its page cache may
// use: at most physical memory, at most any limit up the cgroup's hierarchy.
#include "memory_cgroup.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace imgpack::detail {
namespace {

TEST(MemoryCgroup, MemoryForThePageCacheIsAtMostPhysicalMemoryAndTheLimit) {
  const uint64_t physical = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                            static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t memory = memory_for_page_cache();
  EXPECT_GT(memory, 0u);
  EXPECT_LE(memory, physical);
  const std::optional<MemoryCgroup> cgroup = memory_cgroup();
  if (!cgroup) GTEST_SKIP() << "no memory cgroup is visible here";
  EXPECT_TRUE(std::filesystem::exists(cgroup->dir / "cgroup.procs")) << cgroup->dir;
  std::ifstream limit(cgroup->dir / cgroup->limit_file());
  std::string text;
  if (limit >> text && text != "max") {
    EXPECT_LE(memory, std::stoull(text)) << text;
  }
}

}  // namespace
}  // namespace imgpack::detail
