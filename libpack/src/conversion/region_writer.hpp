// Writing one pixel dataset's storage, front to back, past the page cache.
//
// A shard's /images (and /masks) is one contiguous run of bytes at a known
// offset of its file (format.hpp: contiguous, unfiltered, allocated early,
// 4096-aligned). A conversion writes that run once, front to back, and
// fsyncs it before the shard counts: keeping the written pages in the page
// cache only costs a copy per byte (about a tenth of a conversion's CPU time
// on two cores) and pushes the inputs, which are read again on a resume, out
// of the cache.
//
// RegionWriter gathers appended bytes in one of two aligned buffers; when
// one holds `buffer_bytes`, its whole 4096-byte blocks are written with
// O_DIRECT on a thread of their own while the other buffer fills (the part
// block left over moves to the other buffer's start). finish() writes the
// rest, the last part block through the page cache. Where the file system
// refuses O_DIRECT (tmpfs, some FUSE and network file systems: the open or
// the first write fails with EINVAL), where the region does not start on a
// block boundary, or with Mode::buffered, each buffer is written through the
// page cache instead, on the caller's thread, and start_writeback() hands it
// to the storage at once. The bytes in the file are the same either way.
//
// Writes go through descriptors of the writer's own; the file's other
// content (HDF5's metadata) must not share the region. Not thread-safe: one
// thread calls append() and finish(). Errors throw imgpack::Error naming the
// file, from the call that writes or waits for the failed write (append()
// or finish()); the file's content is then undefined.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <future>
#include <optional>

#include "files.hpp"

namespace imgpack {

class RegionWriter {
 public:
  enum class Mode {
    direct_where_possible,  // O_DIRECT where the file system and the region allow it
    buffered,               // through the page cache always
  };

  // Writes bytes [offset, offset + length) of the existing file at `path`.
  // `buffer_bytes` (at least 1) is how much gathers before a write. Throws
  // naming `path` if the file cannot be opened for writing or the buffers
  // cannot be had.
  RegionWriter(const std::filesystem::path& path, uint64_t offset, uint64_t length,
               std::size_t buffer_bytes, Mode mode = Mode::direct_where_possible);
  ~RegionWriter();  // waits for a write in flight; writes nothing more
  RegionWriter(const RegionWriter&) = delete;
  RegionWriter& operator=(const RegionWriter&) = delete;

  // Appends `size` bytes after those appended before. Throws if they would
  // pass the region's end, or a write fails.
  void append(const uint8_t* data, std::size_t size);

  // Writes what is left and waits for every write; appended() must equal
  // the region's length. The bytes are written, not yet durable: an fsync
  // of the file makes them so. Throws as append().
  void finish();

  // Whether the writes so far went past the page cache.
  bool direct() const { return direct_.has_value(); }
  uint64_t appended() const { return written_ + fill_; }

 private:
  // Writes the current buffer's whole blocks (all of it when `last`), on a
  // thread of its own where direct; the rest moves to the other buffer.
  void flush(bool last);
  // Waits for the write in flight and rethrows its failure.
  void wait();
  // Writes `size` bytes at `offset` of the region's file through the page
  // cache, and starts their write-back.
  void write_buffered(const uint8_t* data, std::size_t size, uint64_t offset);

  std::filesystem::path path_;
  uint64_t offset_;  // the region's start in the file
  uint64_t length_;
  std::size_t buffer_bytes_;
  FileDescriptor buffered_;
  std::optional<FileDescriptor> direct_;  // absent once O_DIRECT is refused
  IoBuffer buffers_[2];
  int current_ = 0;
  std::size_t fill_ = 0;      // bytes in buffers_[current_]
  uint64_t written_ = 0;      // region bytes before buffers_[current_]'s first
  std::future<bool> flying_;  // the direct write in flight: false where O_DIRECT was refused
};

}  // namespace imgpack
