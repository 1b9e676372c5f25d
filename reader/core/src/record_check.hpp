// Checking the pixels of shard files against their stored checksums.
//
// check_records() reads the pixels with pread (nothing is read through a
// mapping), so a file that shrinks meanwhile is a reported error, never a
// SIGBUS. It only reads, and is safe to call from several threads at once;
// the structs are plain values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "files.hpp"
#include "imgpack/verify_options.hpp"

namespace imgpack {

// The records of one shard that check_records() reads and hashes.
struct ShardRecords {
  std::filesystem::path path;
  FileIdentity file;  // the file read_shard() checked; another file at `path` is an error
  uint64_t images_offset = 0;
  std::vector<uint64_t> checksums;  // one per row
  // A shard with masks: each row's mask of `mask_bytes` bytes at
  // masks_offset + row * mask_bytes, and its checksum. 0 / empty without.
  uint64_t mask_bytes = 0;
  uint64_t masks_offset = 0;
  std::vector<uint64_t> mask_checksums;  // one per row when mask_bytes > 0
};

// A row whose bytes do not hash to its stored checksum.
struct MismatchedRow {
  std::size_t shard = 0;  // index into the span given to check_records()
  uint64_t row = 0;
  bool mask = false;  // the row's mask, not its image
};

// A shard whose records could not all be read (replaced, shrunk, I/O error).
// Rows that no thread had read by then are not checked.
struct UnreadableShard {
  std::size_t shard = 0;  // index into the span given to check_records()
  std::string message;    // names the file
};

struct RecordCheck {
  std::vector<MismatchedRow> mismatched;    // sorted by shard, then row
  std::vector<UnreadableShard> unreadable;  // sorted by shard
  uint64_t records_checked = 0;
  uint64_t bytes_checked = 0;
  uint64_t bytes_direct = 0;  // of which read past the page cache (O_DIRECT)
  unsigned threads = 0;       // threads that read and hashed
};

// Reads every row of every shard (each `record_bytes` long, and its mask where
// the shard has masks), in file order on options.threads threads with reads
// of about options.read_bytes, and compares each XXH3-64 with the stored
// checksum. A shard the page cache holds less than half of is read with
// O_DIRECT (where its file system allows it): at the storage's speed, and
// without filling the page cache; the others through the page cache.
// options.progress, if set, is called on the calling thread a few times a
// second and once at the end. Every problem with the shards is in the result;
// throws only what options.progress throws, or imgpack::UsageError if
// options.read_bytes or record_bytes is 0.
RecordCheck check_records(std::span<const ShardRecords> shards, uint64_t record_bytes,
                          const VerifyOptions& options = {});

}  // namespace imgpack
