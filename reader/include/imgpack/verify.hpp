// Checking a whole dataset: structure and every record's checksum.
//
// verify_dataset() runs the same per-shard validation as Dataset::open() but
// does not stop at the first problem: a missing, truncated, foreign or
// inconsistent shard is reported and the other shards are still checked.
// Then it reads every record of the intact shards (with pread, on `threads`
// threads, in file order) and compares its XXH3-64 with the stored checksum,
// and so for every record's mask in a dataset with masks. Nothing is memory-mapped, so a file that
// shrinks while it is being read is an error in the report, never a SIGBUS. The dataset is only
// read.
//
// The function is safe to call from several threads at once on any datasets;
// a VerifyReport is a plain value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "imgpack/verify_options.hpp"

namespace imgpack {

// A record whose bytes do not match its stored checksum: its image's, or in
// a dataset with masks, its mask's (`mask`; a record whose image and mask
// both mismatch is listed twice).
struct BadRecord {
  uint32_t shard = 0;      // shard index (index.h5 /records/shard)
  std::string shard_file;  // its file name, e.g. "shard-00002.h5"
  uint64_t row = 0;        // row in the shard
  uint64_t record = 0;     // record id (row of index.h5 /records)
  int64_t sample = 0;      // source sample (row of /samples)
  uint16_t variant = 0;
  std::string sample_path;  // the sample's source path, relative to the input root
  bool mask = false;        // the mask's bytes mismatch, not the image's
};

struct VerifyReport {
  // Counts from index.h5 (0 if it could not be read).
  uint64_t records = 0;
  std::size_t shards = 0;
  bool masks = false;  // the dataset has masks, checked with their records
  // Records (and their pixel bytes) whose checksum was computed: those of
  // every shard whose structure is intact.
  uint64_t records_checked = 0;
  uint64_t bytes_checked = 0;
  // Sorted by shard, then row.
  std::vector<BadRecord> bad_records;
  // Structural problems, one line each, naming the file: "DIR/shard-00003.h5:
  // missing (listed in index.h5)". The records of a shard named here were not
  // checksummed.
  std::vector<std::string> errors;
  // Shard indices with a structural problem or a bad record, ascending.
  std::vector<uint32_t> bad_shards;
  double seconds = 0;            // wall time of the whole verification
  double structure_seconds = 0;  // of which reading index.h5 and validating the shards
  double checksum_seconds = 0;   // of which reading and hashing the records
  unsigned threads = 0;          // threads that hashed records

  bool ok() const { return errors.empty() && bad_records.empty(); }
};

// Verifies the dataset in `dir`. Every problem found in the dataset is in the
// report; throws imgpack::Error only if `dir` is not a directory, and
// imgpack::UsageError if options.read_bytes is 0. Records are read with
// pread, in large requests: through the page cache from a shard it mostly
// holds, past it (O_DIRECT, where the file system allows it) from a colder
// one, at the storage's speed and without filling the page cache.
VerifyReport verify_dataset(const std::filesystem::path& dir, const VerifyOptions& options = {});

}  // namespace imgpack
