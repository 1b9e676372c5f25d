// How a pass over a dataset's records is run and reported: the threads and
// read size of verify_dataset() (verify.hpp) and of the record checks that
// Dataset::open(), verify and `convert --resume` share. Plain values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace imgpack {

// How far the checksum pass is (of the records of intact shards).
struct VerifyProgress {
  uint64_t records_done = 0;
  uint64_t records_total = 0;
  uint64_t bytes_done = 0;
  uint64_t bytes_total = 0;
};

struct VerifyOptions {
  // Threads reading and hashing records; 0 = one per hardware thread. At
  // most 256, and no more than there are read units.
  unsigned threads = 0;
  // Bytes each thread reads per request (rounded down to whole records, at
  // least one record).
  std::size_t read_bytes = std::size_t{8} << 20;
  // Called on the calling thread a few times a second while records are
  // checked, and once at the end. May be empty. An exception it throws ends
  // verification and propagates.
  std::function<void(const VerifyProgress&)> progress;
};

}  // namespace imgpack
