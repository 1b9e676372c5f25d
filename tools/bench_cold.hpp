// `imgpack bench --cold`: the dataset's pages evicted from the page cache
// before each epoch, and the storage's own bandwidth over the same shard
// files, measured in the same run, as the reference (bench_cold.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench_measure.hpp"
#include "imgpack/dataset.hpp"

namespace imgpack::cli {

// What an eviction left behind.
struct Eviction {
  uint64_t bytes = 0;           // pixel bytes of the dataset's shards
  uint64_t resident_bytes = 0;  // of them still in the page cache afterwards
  double resident_fraction() const {
    return bytes > 0 ? static_cast<double>(resident_bytes) / static_cast<double>(bytes) : 0;
  }
};

// Drops the dataset's shard files from the page cache: this process's
// mappings of them first (pages a process maps stay cached), then the files
// (posix_fadvise DONTNEED; no privileges needed). Pages another process maps
// or dirty pages stay; tmpfs keeps all of them. Returns what was left, as
// mincore() sees it through the dataset's mappings.
Eviction evict_dataset(const Dataset& dataset);

// One read pattern of the storage reference.
struct StorageRate {
  std::string pattern;      // "sequential" or "random"
  std::size_t request = 0;  // bytes per read
  unsigned in_flight = 0;   // reads in flight (one thread each)
  double gb_per_s = 0;
};

// The storage's bandwidth over the dataset's shard files, read with O_DIRECT
// (the page cache bypassed) where the file system allows it, else through
// the page cache with the files evicted first (direct == false says so).
struct StorageReference {
  bool direct = true;
  std::string note;                     // why O_DIRECT was not used, when it was not
  std::vector<StorageRate> sequential;  // large requests in file order
  std::vector<StorageRate> random;      // record-sized requests at random offsets
  double best_sequential() const;
  double best_random() const;
};

// Reads the shard files sequentially in 4 MiB requests with 1, 4 and 16 reads
// in flight, then at random 4 KiB-aligned offsets in requests of one record
// (rounded up to 4 KiB) with 1, 4, 16 and 32 reads in flight, each pattern
// for about `seconds` or the files' size, whichever comes first.
StorageReference measure_storage(const Dataset& dataset, double seconds);

// Reads a.epochs epochs with `threads` threads, evicting the dataset before
// each and timing only the reads: a fresh Loader per epoch, so that nothing
// is read ahead into the next epoch before its eviction. `eviction` gets the
// eviction that left the most behind.
ReaderRun run_reader_cold(const Dataset& dataset, const BenchArgs& a, unsigned threads,
                          Eviction& eviction);

}  // namespace imgpack::cli
