// Checks the shards of a dataset against its index (internal to the reader).
//
// Dataset::open() and verify_dataset() both call these, so a dataset that
// opens is exactly a dataset whose structure verify finds intact. Every
// function throws imgpack::Error naming the file and the first problem; none
// keeps an HDF5 handle open after it returns.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "imgpack/dataset.hpp"
#include "imgpack/dataset_index.hpp"
#include "shard_check.hpp"

namespace imgpack::detail {

// Where each record lies in storage order (shard by shard, row by row). An
// index written in that order, as imgpack writes it, needs no table.
struct StorageTable {
  uint64_t record_count = 0;
  bool in_order = false;                 // record r lies at position r
  std::vector<uint64_t> order;           // position -> record (empty when in_order)
  std::vector<uint64_t> position;        // record -> position (empty when in_order)
  std::vector<uint64_t> first_position;  // shard -> position of its row 0

  uint64_t record_at(uint64_t p) const { return in_order ? p : order[p]; }
  uint64_t position_of(uint64_t r) const { return in_order ? r : position[r]; }
  // Every record in storage order.
  RecordIds records() const {
    return in_order ? RecordIds(0, record_count) : RecordIds(std::span<const uint64_t>(order));
  }
  // The records of shard k, by row.
  RecordIds shard_records(std::size_t k, uint64_t count) const {
    return records().subspan(first_position[k], count);
  }
};

// Builds the table from a validated index (DatasetIndex::validate() has
// checked ids and per-shard counts). Throws naming `index_path` if two
// records point at the same shard row.
StorageTable build_storage_table(const DatasetIndex& index,
                                 const std::filesystem::path& index_path);

// The records of each sample, by ascending variant. Empty tables when every
// sample s has the K records s*K .. s*K+K-1, variant by variant (as imgpack
// writes them).
struct SampleTable {
  std::vector<uint64_t> offsets;  // [S + 1]
  std::vector<uint64_t> records;  // grouped by sample, ascending variant
};

// Builds the table from a validated index. Throws naming `index_path` unless
// every sample has its K records, variants 0..K-1 once each (a removed sample
// may have none, after compaction).
SampleTable build_sample_table(const DatasetIndex& index, const std::filesystem::path& index_path);

// Validates shard `k` of `index`, the file at `path` whose open descriptor
// reported `file_size` bytes: read_shard() with what the index expects of it,
// then /labels, /sample and /variant agreeing with the index row by row.
// With `mapping` (of the whole file), the columns are viewed in it (read_shard()).
// `row_records[row]` is the record the index places at each row of the shard.
ShardContents validate_shard(const std::filesystem::path& path, const DatasetIndex& index,
                             std::size_t k, RecordIds row_records, uint64_t file_size,
                             const std::shared_ptr<const MappedRegion>& mapping = nullptr);

// Throws "PATH: missing (listed in index.h5)" if the shard file does not exist.
void require_shard_exists(const std::filesystem::path& path);

}  // namespace imgpack::detail
