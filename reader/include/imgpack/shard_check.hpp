// Checking one shard file: first its structure, then its records' checksums.
//
// Dataset::open(), verify_dataset() and `imgpack convert --resume` all judge
// shards with these two functions, so a shard that one of them accepts is a
// shard that all of them accept. read_shard() reads only HDF5 metadata and
// the per-row columns; check_records() reads the pixels with pread (nothing
// is memory-mapped), so a file that shrinks meanwhile is a reported error,
// never a SIGBUS. Both only read.
//
// Both functions are safe to call from several threads at once; the structs
// are plain values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "imgpack/files.hpp"
#include "imgpack/verify.hpp"

namespace imgpack {

// What a shard must be: shard `shard` of dataset `uuid`, holding `records`
// records of height x width x channels bytes. `expected_by` names where the
// expectation comes from, for error messages ("index.h5 expects [...]").
struct ShardExpectation {
  std::string uuid;
  uint64_t shard = 0;
  uint64_t records = 0;
  uint64_t height = 0;
  uint64_t width = 0;
  uint64_t channels = 0;
  std::string expected_by = "index.h5";
};

// What a structurally intact shard holds: where its pixels are, and its
// per-row columns (each of length `records`).
struct ShardContents {
  uint64_t images_offset = 0;  // byte offset of /images in the file (0 if no records)
  uint64_t images_bytes = 0;   // records * height * width * channels
  std::vector<int32_t> labels;
  std::vector<int64_t> samples;
  std::vector<uint16_t> variants;
  std::vector<uint64_t> checksums;  // stored XXH3-64 of each row's bytes
};

// Checks the shard at `path`, whose open descriptor reported `file_size`
// bytes (pass the size of the descriptor that will be read or mapped, so the
// check is about that very file): no user block; format version, dataset
// uuid and shard index as expected; /images uint8 of shape [records, H, W, C],
// contiguous, unfiltered, not external, allocated and inside the file;
// /labels, /sample, /variant and /checksum of length `records`. Whether the
// columns agree with an index is the caller's business.
// Throws imgpack::Error naming `path` and the first problem found. Keeps no
// HDF5 handle open after it returns.
ShardContents read_shard(const std::filesystem::path& path, const ShardExpectation& expected,
                         uint64_t file_size);

// The records of one shard that check_records() reads and hashes.
struct ShardRecords {
  std::filesystem::path path;
  FileIdentity file;  // the file read_shard() checked; another file at `path` is an error
  uint64_t images_offset = 0;
  std::vector<uint64_t> checksums;  // one per row
};

// A row whose bytes do not hash to its stored checksum.
struct MismatchedRow {
  std::size_t shard = 0;  // index into the span given to check_records()
  uint64_t row = 0;
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
  unsigned threads = 0;  // threads that read and hashed
};

// Reads every row of every shard (each `record_bytes` long), in file order on
// options.threads threads with reads of about options.read_bytes, and
// compares its XXH3-64 with the stored checksum. options.progress, if set, is
// called on the calling thread a few times a second and once at the end.
// Every problem with the shards is in the result; throws only what
// options.progress throws, or imgpack::UsageError if options.read_bytes or
// record_bytes is 0.
RecordCheck check_records(std::span<const ShardRecords> shards, uint64_t record_bytes,
                          const VerifyOptions& options = {});

}  // namespace imgpack
