// The memory cgroup this process runs in, and the memory its page cache may
// use: at most physical memory, at most any limit up the cgroup's hierarchy.
#include "memory_cgroup.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "test_support.hpp"

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

// /proc/self/cgroup names the cgroups of the hierarchies the kernel has, also
// where they are not mounted (a chroot, a container): such a cgroup is none
// to read a limit from, in either version.
TEST(MemoryCgroup, ACgroupCountsOnlyWhereItsDirectoryIsMounted) {
  test::TempDir root;
  const std::string v1 = "12:cpu,cpuacct:/job\n4:memory:/job\n0::/job.slice\n";
  const std::string v2 = "0::/job.slice\n";
  auto find = [&](const std::string& lines) {
    std::istringstream text(lines);
    return memory_cgroup_in(text, root.path());
  };
  EXPECT_FALSE(find(v1).has_value());
  EXPECT_FALSE(find(v2).has_value());

  // The unified hierarchy mounted: v1's memory line names an unmounted one.
  std::filesystem::create_directories(root / "job.slice");
  test::write_bytes(root / "job.slice" / "cgroup.procs", "");
  std::optional<MemoryCgroup> found = find(v1);
  ASSERT_TRUE(found.has_value());
  EXPECT_TRUE(found->v2);
  EXPECT_EQ(found->dir, root / "job.slice");

  // v1's memory hierarchy mounted: it comes first.
  std::filesystem::create_directories(root / "memory" / "job");
  test::write_bytes(root / "memory" / "job" / "cgroup.procs", "");
  found = find(v1);
  ASSERT_TRUE(found.has_value());
  EXPECT_FALSE(found->v2);
  EXPECT_EQ(found->dir, root / "memory" / "job");
  EXPECT_STREQ(found->limit_file(), "memory.limit_in_bytes");
}

}  // namespace
}  // namespace imgpack::detail
