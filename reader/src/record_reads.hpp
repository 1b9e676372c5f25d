// Reading records from their shard files with many requests in flight: the
// loader's path for records the page cache does not hold (internal to the
// reader).
//
// ShardFiles holds one descriptor per shard for these reads, opened on first
// use, with O_DIRECT when asked: the storage then writes straight into our
// buffers and the page cache is neither filled nor searched, which is what a
// dataset larger than memory wants (every page it caches evicts one it will
// need sooner). O_DIRECT needs 4096-byte aligned offsets, lengths and
// buffers, and records lie at any byte: a record is read as the aligned span
// around it into a bounce buffer, or straight into its slot when the record,
// its offset and its destination happen to be aligned (records of a multiple
// of 4096 bytes). A file system that refuses O_DIRECT (tmpfs) gets a plain
// descriptor instead, readahead advised off, and reads go straight to their
// destination.
//
// RecordReader, one per reader thread, keeps a chunk's records in flight at
// once through a ReadQueue and hands each record's bytes to the caller as
// they arrive.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "files.hpp"
#include "imgpack/dataset.hpp"
#include "read_queue.hpp"

namespace imgpack::detail {

// How a shard's descriptor reads.
// How a shard's descriptor reads; `gone` where the file the dataset opened is
// no longer at its path (a later change of the dataset removed it or put
// another there), so its records are read from the dataset's mapping.
enum class ShardAccess : int8_t { unopened, direct, buffered, gone };

class ShardFiles {
 public:
  // Which bytes of a record are read: its pixels, or its mask.
  enum class Layer { images, masks };

  // `direct`: open with O_DIRECT where the file system allows it.
  ShardFiles(const Dataset& dataset, Layer layer, bool direct);
  ~ShardFiles();
  // Whether O_DIRECT was asked for (a file system may still refuse it).
  bool direct() const { return direct_; }
  ShardFiles(const ShardFiles&) = delete;
  ShardFiles& operator=(const ShardFiles&) = delete;

  // Where record `r` (its pixels or its mask) lies: a descriptor of its shard
  // (opened on first use; thread-safe), the byte offset in that file, and
  // whether the descriptor is O_DIRECT. Throws imgpack::Error naming the shard file if it
  // cannot be opened.
  struct Extent {
    int fd = -1;
    uint64_t offset = 0;
    bool direct = false;
  };
  Extent extent(uint64_t r) const;
  // Whether the records of shard `k` can be read from its file: false where
  // the file the dataset opened is no longer at its path. Its records are
  // then to be copied from the dataset's mapping, which still holds that
  // file (extent() of one throws). Opens the file on first use; throws
  // imgpack::Error naming it where it cannot be opened for another reason.
  // Thread-safe.
  bool readable(std::size_t k) const { return access(k) != ShardAccess::gone; }

  const Dataset& dataset() const { return dataset_; }
  // Bytes of one record's layer: H * W * C, or H * W for masks.
  std::size_t record_bytes() const { return record_bytes_; }

 private:
  struct Opened {
    int fd;  // -1 where the access is `gone`
    ShardAccess access;
  };
  Opened open_shard(std::size_t k) const;
  // How shard `k` reads, its file opened on first use.
  ShardAccess access(std::size_t k) const;

  const Dataset& dataset_;
  const Layer layer_;
  const std::size_t record_bytes_;  // of the layer
  const bool direct_;
  // Per shard: the descriptor (-1 until opened) and how it reads. Threads that
  // race to open one each open it, and all but the first close theirs.
  std::unique_ptr<std::atomic<int>[]> fds_;
  std::unique_ptr<std::atomic<ShardAccess>[]> access_;
  std::vector<uint64_t> layer_offset_;  // per shard: where /images (or /masks) starts in the file
};

class RecordReader {
 public:
  // Reads through `files` with up to `depth` records in flight.
  RecordReader(const ShardFiles& files, unsigned depth);
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  unsigned depth() const { return queue_.depth(); }
  bool asynchronous() const { return queue_.asynchronous(); }

  // Reads records[i] for every i, keeping up to depth() in flight, and calls
  // arrived(i, pixels) as each arrives (in any order) with its record_bytes()
  // bytes. into(i) (may return nullptr) is where the caller wants record i: a
  // read goes straight there when it can, and `pixels` then equals into(i);
  // otherwise `pixels` points into a buffer of this reader, valid until
  // arrived() returns. Throws imgpack::Error naming the shard file and row on
  // a read error or a file truncated after the dataset was opened; reads
  // still in flight finish before it returns or throws.
  template <typename Into, typename Arrived>
  void read(std::span<const uint64_t> records, Into&& into, Arrived&& arrived);

 private:
  // One read in flight, in slot `s` of the bounce buffers.
  struct Pending {
    std::size_t index = 0;  // into records
    uint64_t record = 0;
    uint8_t* buffer = nullptr;  // where the read lands
    std::size_t lead = 0;       // bytes before the record in `buffer`
    std::size_t length = 0;     // bytes asked for
    int fd = -1;
    uint64_t offset = 0;  // of `buffer`'s first byte in the file
    bool direct = false;  // O_DIRECT: aligned offset, length and buffer
  };
  // Queues the read of `record`, index `index` of the caller's records, in
  // bounce slot `s` or straight into `destination` (may be nullptr).
  void start(uint64_t record, std::size_t index, uint8_t* destination, unsigned s);
  // Checks a completed read of pending_[s] (retrying a short buffered one)
  // and returns where the record's bytes are.
  const uint8_t* finish(unsigned s, ssize_t result);
  void drain() noexcept;

  const ShardFiles& files_;
  ReadQueue queue_;
  std::size_t span_bytes_ = 0;  // one bounce buffer
  IoBuffer bounce_;             // depth() buffers of span_bytes_  // depth() buffers of span_bytes_
  std::vector<Pending> pending_;
  std::vector<unsigned> free_;  // bounce slots not in flight
};

template <typename Into, typename Arrived>
void RecordReader::read(std::span<const uint64_t> records, Into&& into, Arrived&& arrived) {
  std::size_t next = 0;
  try {
    while (next < records.size() || queue_.pending() > 0) {
      while (next < records.size() && !free_.empty()) {
        start(records[next], next, into(next), free_.back());
        free_.pop_back();
        ++next;
      }
      const ReadCompletion done = queue_.next();
      const auto s = static_cast<unsigned>(done.tag);
      const uint8_t* pixels = finish(s, done.result);
      free_.push_back(s);
      arrived(pending_[s].index, pixels);
    }
  } catch (...) {
    drain();
    throw;
  }
}

}  // namespace imgpack::detail
