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

#include "imgpack/dataset_index.hpp"
#include "shard_check.hpp"

namespace imgpack::detail {

// Where each record lies in storage order (shard by shard, row by row).
struct StorageTable {
  std::vector<uint64_t> order;           // position -> record
  std::vector<uint64_t> position;        // record -> position
  std::vector<uint64_t> first_position;  // shard -> position of its row 0
};

// Builds the table from a validated index (DatasetIndex::validate() has
// checked ids and per-shard counts). Throws naming `index_path` if two
// records point at the same shard row.
StorageTable build_storage_table(const DatasetIndex& index,
                                 const std::filesystem::path& index_path);

// Validates shard `k` of `index`, the file at `path` whose open descriptor
// reported `file_size` bytes: read_shard() with what the index expects of it,
// then /labels, /sample and /variant agreeing with the index row by row.
// `row_records[row]` is the record the index places at each row of the shard.
ShardContents validate_shard(const std::filesystem::path& path, const DatasetIndex& index,
                             std::size_t k, std::span<const uint64_t> row_records,
                             uint64_t file_size);

// Throws "PATH: missing (listed in index.h5)" if the shard file does not exist.
void require_shard_exists(const std::filesystem::path& path);

}  // namespace imgpack::detail
