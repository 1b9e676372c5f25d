#include "mapped_region.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "imgpack/error.hpp"

namespace imgpack {

MappedRegion::MappedRegion(int fd, const std::filesystem::path& path, uint64_t offset,
                           uint64_t length) {
  if (length == 0) return;
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = offset - offset % page;
  const uint64_t lead = offset - start;
  base_length_ = static_cast<std::size_t>(lead + length);
  void* base = ::mmap(nullptr, base_length_, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(start));
  if (base == MAP_FAILED) {
    base_length_ = 0;
    throw system_error(path, "cannot map", errno);
  }
  base_ = base;
  data_ = static_cast<const uint8_t*>(base) + lead;
  length_ = static_cast<std::size_t>(length);
}

MappedRegion::~MappedRegion() { unmap(); }

MappedRegion::MappedRegion(MappedRegion&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      base_length_(std::exchange(other.base_length_, 0)),
      data_(std::exchange(other.data_, nullptr)),
      length_(std::exchange(other.length_, 0)) {}

MappedRegion& MappedRegion::operator=(MappedRegion&& other) noexcept {
  if (this != &other) {
    unmap();
    base_ = std::exchange(other.base_, nullptr);
    base_length_ = std::exchange(other.base_length_, 0);
    data_ = std::exchange(other.data_, nullptr);
    length_ = std::exchange(other.length_, 0);
  }
  return *this;
}

void MappedRegion::unmap() {
  if (base_ != nullptr) ::munmap(base_, base_length_);
  base_ = nullptr;
  base_length_ = 0;
  data_ = nullptr;
  length_ = 0;
}

}  // namespace imgpack
