#include "shard_validation.hpp"

#include <algorithm>
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

SampleTable build_sample_table(const DatasetIndex& index, const fs::path& index_path) {
  SampleTable table;
  std::vector<uint64_t>& sample_offsets = table.offsets;
  std::vector<uint64_t>& sample_records = table.records;
  const std::size_t n_samples = index.num_samples();
  const uint64_t k = index.variants;
  const Column<int64_t>& sample = index.records.sample;
  const Column<uint16_t>& variant = index.records.variant;
  bool regular = index.num_records() == n_samples * k;
  for (uint64_t r = 0; r < index.num_records() && regular; ++r) {
    regular = static_cast<uint64_t>(sample[r]) == r / k && variant[r] == r % k;
  }
  if (regular) return table;
  sample_offsets.assign(n_samples + 1, 0);
  for (int64_t s : sample) ++sample_offsets[static_cast<std::size_t>(s) + 1];
  for (std::size_t s = 0; s < n_samples; ++s) sample_offsets[s + 1] += sample_offsets[s];
  sample_records.resize(index.num_records());
  std::vector<uint64_t> fill(sample_offsets.begin(), sample_offsets.end() - 1);
  for (uint64_t r = 0; r < index.num_records(); ++r) {
    sample_records[fill[static_cast<std::size_t>(sample[r])]++] = r;
  }
  for (std::size_t s = 0; s < n_samples; ++s) {
    std::stable_sort(sample_records.begin() + static_cast<std::ptrdiff_t>(sample_offsets[s]),
                     sample_records.begin() + static_cast<std::ptrdiff_t>(sample_offsets[s + 1]),
                     [&](uint64_t a, uint64_t b) { return variant[a] < variant[b]; });
  }
  // Every sample has its K records, variants 0..K-1 once each (a removed one
  // may have none, after compaction): anything else is a damaged or forged
  // index.
  for (std::size_t s = 0; s < n_samples; ++s) {
    const uint64_t count = sample_offsets[s + 1] - sample_offsets[s];
    if (count == 0 && index.is_removed(s)) continue;
    bool whole = count == k;
    for (uint64_t v = 0; v < count && whole; ++v) {
      whole = variant[sample_records[sample_offsets[s] + v]] == v;
    }
    if (!whole) {
      throw file_error(index_path, "sample " + std::to_string(s) + " has " + std::to_string(count) +
                                       " records, not variants 0.." + std::to_string(k - 1) +
                                       " once each (the dataset's variants = " + std::to_string(k) +
                                       ")");
    }
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
