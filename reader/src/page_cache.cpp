#include "page_cache.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "files.hpp"
#include "imgpack/error.hpp"
#include "mapping_fault.hpp"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14; older C libraries lack the name
#endif

namespace imgpack::detail {

namespace {

std::size_t page_size() {
  static const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

// The whole pages that hold `bytes`: madvise and mincore take a page-aligned
// address. Mappings are read-only; madvise takes a non-const pointer and the
// advice used here writes nothing.
struct Pages {
  uint8_t* base = nullptr;
  std::size_t length = 0;
};

Pages pages_of(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return {};
  const std::size_t lead = reinterpret_cast<std::uintptr_t>(bytes.data()) % page_size();
  return {const_cast<uint8_t*>(bytes.data()) - lead, bytes.size() + lead};
}

}  // namespace

uint64_t resident_bytes(std::span<const uint8_t> bytes, const std::filesystem::path& path) {
  const Pages pages = pages_of(bytes);
  if (pages.length == 0) return 0;
  std::vector<unsigned char> resident((pages.length + page_size() - 1) / page_size());
  if (::mincore(pages.base, pages.length, resident.data()) != 0) {
    throw system_error(path, "mincore failed on its mapping", errno);
  }
  const auto count =
      std::count_if(resident.begin(), resident.end(), [](unsigned char r) { return (r & 1) != 0; });
  return std::min<uint64_t>(static_cast<uint64_t>(count) * page_size(), bytes.size());
}

void populate(std::span<const uint8_t> bytes, const std::filesystem::path& path) {
  const Pages pages = pages_of(bytes);
  if (pages.length == 0) return;
  if (::madvise(pages.base, pages.length, MADV_POPULATE_READ) == 0) return;
  const int error = errno;
  if (error != EINVAL) {
    // EFAULT: a page past the end of the file (truncated after it was
    // mapped); EIO and friends: the storage.
    throw system_error(path, "cannot read its pixels into memory", error);
  }
  // A kernel without MADV_POPULATE_READ: a read per page faults each in.
  const void* fault = detail::read_mapped([&] {
    volatile uint8_t sink = 0;
    for (std::size_t at = 0; at < pages.length; at += page_size()) sink = sink + pages.base[at];
  });
  if (fault != nullptr) {
    throw detail::mapping_fault_error(path, "its pixels into memory");
  }
}

void evict(std::span<const uint8_t> bytes, const std::filesystem::path& path,
           uint64_t file_offset) {
  const Pages pages = pages_of(bytes);
  if (pages.length == 0) return;
  // This process's page-table entries first: the page cache keeps any page a
  // process maps. The mapping is read-only and shared, so MADV_DONTNEED only
  // unmaps; the next access faults the page in again.
  if (::madvise(pages.base, pages.length, MADV_DONTNEED) != 0) {
    throw system_error(path, "madvise(MADV_DONTNEED) failed on its mapping", errno);
  }
  // Whole pages: DONTNEED keeps a page only partly inside the range, and
  // the pages at either end hold a record's first or last bytes.
  const uint64_t first = file_offset / page_size() * page_size();
  const uint64_t end = (file_offset + bytes.size() + page_size() - 1) / page_size() * page_size();
  const FileDescriptor fd = open_for_reading(path);
  const int error = ::posix_fadvise(fd.get(), static_cast<off_t>(first),
                                    static_cast<off_t>(end - first), POSIX_FADV_DONTNEED);
  if (error != 0) throw system_error(path, "posix_fadvise(DONTNEED) failed", error);
}

}  // namespace imgpack::detail
