// A read-only memory mapping of part of a file (internal to the reader).
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

// An owned file descriptor, closed on destruction.
class FileDescriptor {
 public:
  // Opens read-only; throws imgpack::Error naming the path on failure.
  explicit FileDescriptor(const std::filesystem::path& path);
  ~FileDescriptor();
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  // Size in bytes from fstat().
  uint64_t size(const std::filesystem::path& path) const;

 private:
  int fd_ = -1;
};

}  // namespace imgpack
