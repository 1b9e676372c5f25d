// A read-only memory mapping of part of a file (internal to imgpack: the
// reader's shards, and index.h5's tables viewed in place).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace imgpack {

// Maps bytes [offset, offset + length) of an open file read-only and shared.
// The mapping starts at the page boundary at or below `offset`; data() points
// at `offset`. Move-only; unmaps on destruction. The descriptor may be closed
// once the mapping exists.
class MappedRegion {
 public:
  MappedRegion() = default;
  // Throws imgpack::Error naming `path` if mmap fails.
  MappedRegion(int fd, const std::filesystem::path& path, uint64_t offset, uint64_t length);
  ~MappedRegion();
  MappedRegion(MappedRegion&& other) noexcept;
  MappedRegion& operator=(MappedRegion&& other) noexcept;
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;

  const uint8_t* data() const { return data_; }
  std::size_t size() const { return length_; }

 private:
  void unmap();
  void* base_ = nullptr;
  std::size_t base_length_ = 0;
  const uint8_t* data_ = nullptr;
  std::size_t length_ = 0;
};

}  // namespace imgpack
