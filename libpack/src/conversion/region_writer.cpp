#include "conversion/region_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "imgpack/error.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

// Opens `path` for O_DIRECT writes, or returns nothing where its file system
// refuses them.
std::optional<FileDescriptor> open_direct_for_writing(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_DIRECT);
  if (fd >= 0) return FileDescriptor(fd);
  if (errno == EINVAL) return std::nullopt;
  throw system_error(path, "cannot open for writing", errno);
}

// Writes `size` bytes at `offset` through `direct` (O_DIRECT); where the file
// system refuses (EINVAL: an alignment it does not take), writes what is
// left through `buffered` instead and returns false.
bool write_direct(int direct, int buffered, const fs::path& path, const uint8_t* data,
                  std::size_t size, uint64_t offset) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(direct, data + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EINVAL) {
      write_all_at(buffered, path, data + done, size - done, offset + done,
                   "writing pixels failed");
      return false;
    }
    if (n < 0) throw system_error(path, "writing pixels failed", errno);
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

RegionWriter::RegionWriter(const fs::path& path, uint64_t offset, uint64_t length,
                           std::size_t buffer_bytes, Mode mode)
    : path_(path),
      offset_(offset),
      length_(length),
      // Whole blocks, so that a full buffer is whole blocks too.
      buffer_bytes_(align_up(std::max<std::size_t>(buffer_bytes, 1))),
      buffered_(path, O_WRONLY | O_CLOEXEC) {
  if (mode == Mode::direct_where_possible && offset % kDirectAlign == 0) {
    direct_ = open_direct_for_writing(path);
  }
  try {
    buffers_[0] = allocate_io_buffer(buffer_bytes_);
    if (direct_) buffers_[1] = allocate_io_buffer(buffer_bytes_);
  } catch (const std::bad_alloc&) {
    throw file_error(path, "out of memory for the write buffers (" +
                               std::to_string(buffer_bytes_ >> 10) + " KiB each)");
  }
}

RegionWriter::~RegionWriter() {
  if (flying_.valid()) flying_.wait();  // it reads a buffer and the descriptors
}

void RegionWriter::append(const uint8_t* data, std::size_t size) {
  if (size > length_ - appended()) {
    throw file_error(path_, "a write past the end of its " + std::to_string(length_) +
                                "-byte pixel region at byte " + std::to_string(offset_));
  }
  while (size > 0) {
    const std::size_t n = std::min(size, buffer_bytes_ - fill_);
    std::memcpy(buffers_[current_].get() + fill_, data, n);
    fill_ += n;
    data += n;
    size -= n;
    if (fill_ == buffer_bytes_) flush(false);
  }
}

void RegionWriter::finish() {
  flush(true);
  wait();
}

void RegionWriter::flush(bool last) {
  uint8_t* buffer = buffers_[current_].get();
  const uint64_t at = offset_ + written_;
  if (!direct_) {
    write_buffered(buffer, fill_, at);
    written_ += fill_;
    fill_ = 0;
    return;
  }
  wait();          // the other buffer is free again, and the writes stay in order
  if (!direct_) {  // refused by that write: this one goes the same way
    flush(last);
    return;
  }
  // The file's blocks from the region's start (aligned) are whole up to here.
  const std::size_t whole = align_down(fill_);
  if (last) {
    if (whole > 0 && !write_direct(direct_->get(), buffered_.get(), path_, buffer, whole, at)) {
      direct_.reset();
    }
    write_buffered(buffer + whole, fill_ - whole, at + whole);
    written_ += fill_;
    fill_ = 0;
    return;
  }
  flying_ = std::async(std::launch::async, [direct = direct_->get(), buffered = buffered_.get(),
                                            path = path_, buffer, whole, at] {
    return write_direct(direct, buffered, path, buffer, whole, at);
  });
  // What does not fill a block starts the other buffer (nothing, unless a
  // buffer is ever flushed part full).
  current_ ^= 1;
  std::memcpy(buffers_[current_].get(), buffer + whole, fill_ - whole);
  written_ += whole;
  fill_ -= whole;
}

void RegionWriter::wait() {
  if (!flying_.valid()) return;
  if (!flying_.get()) direct_.reset();  // rethrows the write's failure
}

void RegionWriter::write_buffered(const uint8_t* data, std::size_t size, uint64_t offset) {
  if (size == 0) return;
  write_all_at(buffered_.get(), path_, data, size, offset, "writing pixels failed");
  start_writeback(buffered_.get(), offset, size);
}

}  // namespace imgpack
