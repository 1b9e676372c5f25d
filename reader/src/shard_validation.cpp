#include "shard_validation.hpp"

#include <string>

#include "imgpack/error.hpp"

namespace imgpack::detail {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kUnset = ~uint64_t{0};

}  // namespace

StorageTable build_storage_table(const DatasetIndex& index, const fs::path& index_path) {
  StorageTable table;
  const std::size_t n_records = index.num_records();
  table.record_count = n_records;
  table.first_position.resize(index.num_shards());
  uint64_t position = 0;
  for (std::size_t k = 0; k < index.num_shards(); ++k) {
    table.first_position[k] = position;
    position += index.shards.records[k];
  }
  // Written in storage order (every record r at position r) needs no table:
  // such positions are distinct by construction.
  table.in_order = true;
  for (uint64_t r = 0; r < n_records && table.in_order; ++r) {
    table.in_order = table.first_position[index.records.shard[r]] + index.records.row[r] == r;
  }
  if (table.in_order) return table;
  table.order.assign(n_records, kUnset);
  table.position.resize(n_records);
  for (uint64_t r = 0; r < n_records; ++r) {
    const uint64_t p = table.first_position[index.records.shard[r]] + index.records.row[r];
    if (table.order[p] != kUnset) {
      throw file_error(index_path, "records " + std::to_string(table.order[p]) + " and " +
                                       std::to_string(r) + " both point at " +
                                       index.shards.file[index.records.shard[r]] + " row " +
                                       std::to_string(index.records.row[r]));
    }
    table.order[p] = r;
    table.position[r] = p;
  }
  return table;
}

void require_shard_exists(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw file_error(path, "missing (listed in index.h5)");
}

ShardContents validate_shard(const fs::path& path, const DatasetIndex& index, std::size_t k,
                             RecordIds row_records, uint64_t file_size,
                             const std::shared_ptr<const MappedRegion>& mapping) {
  ShardExpectation expected{index.uuid,   k,           row_records.size(),
                            index.height, index.width, index.channels,
                            "index.h5",   index.masks, std::nullopt};
  expected.boxes = index.boxes;
  expected.box_classes = index.box_class_names.size();
  expected.keypoints = index.num_keypoints();
  ShardContents contents = read_shard(path, expected, file_size, mapping);
  const Column<int32_t>& labels = contents.labels;
  const Column<int64_t>& samples = contents.samples;
  const Column<uint16_t>& variants = contents.variants;
  for (uint64_t row = 0; row < row_records.size(); ++row) {
    const uint64_t r = row_records[row];
    const int64_t sample = index.records.sample[r];
    if (samples[row] != sample || variants[row] != index.records.variant[r]) {
      throw file_error(path, "row " + std::to_string(row) + " holds sample " +
                                 std::to_string(samples[row]) + " variant " +
                                 std::to_string(variants[row]) + ", index.h5 says sample " +
                                 std::to_string(sample) + " variant " +
                                 std::to_string(index.records.variant[r]));
    }
    const int32_t label = index.sample_label[static_cast<std::size_t>(sample)];
    if (labels[row] != label) {
      throw file_error(path, "row " + std::to_string(row) + " has label " +
                                 std::to_string(labels[row]) + ", index.h5 gives sample " +
                                 std::to_string(sample) + " label " + std::to_string(label));
    }
  }
  return contents;
}

}  // namespace imgpack::detail
