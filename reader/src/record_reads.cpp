#include "record_reads.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <string>

#include "imgpack/error.hpp"

namespace imgpack::detail {

namespace {

bool aligned(uint64_t n) { return n % kDirectAlign == 0; }

std::string row_of(const Dataset& dataset, uint64_t r) {
  return "row " + std::to_string(dataset.index().records.row[r]);
}

}  // namespace

ShardFiles::ShardFiles(const Dataset& dataset, Layer layer, bool direct)
    : dataset_(dataset),
      layer_(layer),
      record_bytes_(layer == Layer::images ? dataset.record_bytes() : dataset.mask_bytes()),
      direct_(direct),
      fds_(std::make_unique<std::atomic<int>[]>(dataset.num_shards())),
      access_(std::make_unique<std::atomic<ShardAccess>[]>(dataset.num_shards())) {
  layer_offset_.reserve(dataset.num_shards());
  for (std::size_t k = 0; k < dataset.num_shards(); ++k) {
    fds_[k] = -1;
    access_[k] = ShardAccess::unopened;
    layer_offset_.push_back(layer == Layer::images ? dataset.shard_images_offset(k)
                                                   : dataset.shard_masks_offset(k));
  }
}

ShardFiles::~ShardFiles() {
  for (std::size_t k = 0; k < dataset_.num_shards(); ++k) {
    const int fd = fds_[k].load();
    if (fd >= 0) ::close(fd);
  }
}

ShardFiles::Opened ShardFiles::open_shard(std::size_t k) const {
  const std::filesystem::path path = dataset_.shard_path(k);
  const Opened gone{-1, ShardAccess::gone};
  if (direct_) {
    FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT));
    if (fd) {
      if (!dataset_.is_opened_shard(k, fd.get())) return gone;
      return {fd.release(), ShardAccess::direct};
    }
    if (errno == ENOENT) return gone;
    // EINVAL: the file system has no O_DIRECT; read through the cache.
    if (errno != EINVAL) throw system_error(path, "cannot open for reading", errno);
  }
  FileDescriptor opened(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!opened) {
    if (errno == ENOENT) return gone;
    throw system_error(path, "cannot open for reading", errno);
  }
  if (!dataset_.is_opened_shard(k, opened.get())) return gone;
  const int fd = opened.release();
  // Records are read whole, in an order the kernel cannot guess: its
  // readahead would read past each record for nothing. Advice only.
  (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
  return {fd, ShardAccess::buffered};
}

ShardAccess ShardFiles::access(std::size_t k) const {
  ShardAccess access = access_[k].load(std::memory_order_acquire);
  if (access != ShardAccess::unopened) return access;
  const Opened opened = open_shard(k);
  if (opened.access == ShardAccess::gone) {
    // Unless another thread has found the file since (and read it).
    (void)access_[k].compare_exchange_strong(access, ShardAccess::gone, std::memory_order_acq_rel);
    return access_[k].load(std::memory_order_acquire);
  }
  int expected = -1;
  if (fds_[k].compare_exchange_strong(expected, opened.fd, std::memory_order_acq_rel)) {
    access_[k].store(opened.access, std::memory_order_release);
    return opened.access;
  }
  ::close(opened.fd);
  // Another thread published its descriptor first; wait for its access.
  while ((access = access_[k].load(std::memory_order_acquire)) == ShardAccess::unopened) {
  }
  return access;
}

ShardFiles::Extent ShardFiles::extent(uint64_t r) const {
  const uint32_t k = dataset_.record_shard(r);
  const uint64_t offset =
      layer_offset_[k] +
      (layer_ == Layer::images
           ? static_cast<uint64_t>(dataset_.record_data(r) - dataset_.shard_images(k).data())
           : static_cast<uint64_t>(dataset_.mask_data(r) - dataset_.shard_masks(k).data()));
  const ShardAccess access = this->access(k);
  const int fd = fds_[k].load(std::memory_order_acquire);
  if (access == ShardAccess::gone || fd < 0) {
    throw file_error(dataset_.shard_path(k),
                     "is no longer the file the dataset opened; its records are read from the "
                     "dataset's mapping (ShardFiles::readable)");
  }
  return {fd, offset, access == ShardAccess::direct};
}

RecordReader::RecordReader(const ShardFiles& files, unsigned depth)
    : files_(files), queue_(std::max(depth, 1u)) {
  // The aligned span around a record: up to one block more on each side,
  // less the block it cannot straddle twice.
  span_bytes_ = align_up(files.record_bytes()) + kDirectAlign;
  const unsigned n = queue_.depth();
  bounce_ = allocate_io_buffer(span_bytes_ * n);
  pending_.resize(n);
  for (unsigned s = n; s-- > 0;) free_.push_back(s);
}

void RecordReader::start(uint64_t r, std::size_t index, uint8_t* destination, unsigned s) {
  const ShardFiles::Extent extent = files_.extent(r);
  const std::size_t bytes = files_.record_bytes();
  Pending& p = pending_[s];
  p.index = index;
  p.record = r;
  p.fd = extent.fd;
  p.direct = extent.direct;
  if (!extent.direct) {
    p.buffer = destination != nullptr ? destination : bounce_.get() + span_bytes_ * s;
    p.lead = 0;
    p.offset = extent.offset;
    p.length = bytes;
  } else if (destination != nullptr && aligned(extent.offset) && aligned(bytes) &&
             aligned(reinterpret_cast<uintptr_t>(destination))) {
    p.buffer = destination;
    p.lead = 0;
    p.offset = extent.offset;
    p.length = bytes;
  } else {
    p.buffer = bounce_.get() + span_bytes_ * s;
    p.offset = align_down(extent.offset);
    p.lead = static_cast<std::size_t>(extent.offset - p.offset);
    p.length = static_cast<std::size_t>(align_up(extent.offset + bytes) - p.offset);
  }
  queue_.submit(p.fd, p.buffer, p.length, p.offset, s);
}

const uint8_t* RecordReader::finish(unsigned s, ssize_t result) {
  const Pending& p = pending_[s];
  const Dataset& dataset = files_.dataset();
  const std::filesystem::path shard = dataset.shard_path(dataset.record_shard(p.record));
  const std::size_t wanted = p.lead + files_.record_bytes();
  if (result < 0) {
    throw system_error(shard, "cannot read " + row_of(dataset, p.record),
                       static_cast<int>(-result));
  }
  auto done = static_cast<std::size_t>(result);
  // An aligned span may end past the end of the file: short but complete.
  // A read may also come back short before the end; the rest is read here
  // (O_DIRECT: only from an aligned point, else it was the file's end).
  while (done < wanted) {
    if (p.direct && !aligned(done)) break;
    ssize_t got;
    do {
      got = ::pread(p.fd, p.buffer + done, p.length - done, static_cast<off_t>(p.offset + done));
    } while (got < 0 && errno == EINTR);
    if (got < 0) throw system_error(shard, "cannot read " + row_of(dataset, p.record), errno);
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  if (done < wanted) {
    throw file_error(shard, "ends inside " + row_of(dataset, p.record) +
                                ": the file was truncated after it was opened");
  }
  return p.buffer + p.lead;
}

void RecordReader::drain() noexcept {
  while (queue_.pending() > 0) {
    try {
      free_.push_back(static_cast<unsigned>(queue_.next().tag));
    } catch (const Error&) {
      return;  // the ring broke; the queue's destructor closes it
    }
  }
}

}  // namespace imgpack::detail
