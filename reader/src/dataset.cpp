#include "imgpack/dataset.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "files.hpp"
#include "imgpack/checksum.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "mapped_region.hpp"
#include "shard_validation.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

struct ShardView {
  fs::path path;
  MappedRegion images;
  uint64_t records = 0;
};

}  // namespace

struct Dataset::State {
  fs::path dir;
  DatasetIndex index;
  std::size_t record_bytes = 0;
  std::vector<ShardView> shards;
  std::vector<const uint8_t*> shard_base;  // == shards[k].images.data(), for the hot path
  std::vector<int32_t> record_label;
  std::vector<uint64_t> record_checksum;
  std::vector<uint64_t> storage_order;     // position -> record
  std::vector<uint64_t> storage_position;  // record -> position
  std::vector<uint64_t> first_position;    // shard -> storage position of its row 0
  std::vector<uint64_t> sample_offsets;    // [S + 1]
  std::vector<uint64_t> sample_records;    // grouped by sample, ascending variant

  void build_tables();
  void open_shard(std::size_t k);
  void build_sample_table();
};

void Dataset::State::build_tables() {
  const std::size_t n_records = index.num_records();
  detail::StorageTable table = detail::build_storage_table(index, dir / format::kIndexFile);
  storage_order = std::move(table.order);
  storage_position = std::move(table.position);
  shards.resize(index.num_shards());
  for (std::size_t k = 0; k < shards.size(); ++k) {
    shards[k].path = dir / index.shards.file[k];
    shards[k].records = index.shards.records[k];
  }
  first_position = std::move(table.first_position);
  record_label.resize(n_records);
  for (uint64_t r = 0; r < n_records; ++r) {
    record_label[r] = index.sample_label[static_cast<std::size_t>(index.records.sample[r])];
  }
  record_checksum.assign(n_records, 0);
}

void Dataset::State::open_shard(std::size_t k) {
  ShardView& shard = shards[k];
  const fs::path& path = shard.path;
  detail::require_shard_exists(path);
  // The descriptor that will be mapped is opened first, so the size checked
  // below is the size of the file that gets mapped.
  const FileDescriptor fd = open_for_reading(path);
  const std::span<const uint64_t> row_records =
      std::span<const uint64_t>(storage_order).subspan(first_position[k], shard.records);
  const ShardContents contents = detail::validate_shard(path, index, k, row_records, fd.size(path));
  for (uint64_t row = 0; row < shard.records; ++row) {
    record_checksum[row_records[row]] = contents.checksums[row];
  }
  shard.images = MappedRegion(fd.get(), path, contents.images_offset, contents.images_bytes);
}

void Dataset::State::build_sample_table() {
  const std::size_t n_samples = index.num_samples();
  sample_offsets.assign(n_samples + 1, 0);
  for (int64_t s : index.records.sample) ++sample_offsets[static_cast<std::size_t>(s) + 1];
  for (std::size_t s = 0; s < n_samples; ++s) sample_offsets[s + 1] += sample_offsets[s];
  sample_records.resize(index.num_records());
  std::vector<uint64_t> fill(sample_offsets.begin(), sample_offsets.end() - 1);
  for (uint64_t r = 0; r < index.num_records(); ++r) {
    sample_records[fill[static_cast<std::size_t>(index.records.sample[r])]++] = r;
  }
  for (std::size_t s = 0; s < n_samples; ++s) {
    std::stable_sort(sample_records.begin() + static_cast<std::ptrdiff_t>(sample_offsets[s]),
                     sample_records.begin() + static_cast<std::ptrdiff_t>(sample_offsets[s + 1]),
                     [&](uint64_t a, uint64_t b) {
                       return index.records.variant[a] < index.records.variant[b];
                     });
  }
}

Dataset Dataset::open(const fs::path& dir, const DatasetOpenOptions& options) {
  auto state = std::make_shared<State>();
  state->dir = dir;
  IndexReadOptions what = options.index;
  what.records = true;  // the mapping and every check need them
  state->index = read_index(dir, what);
  state->record_bytes = state->index.record_bytes();
  state->build_tables();
  for (std::size_t k = 0; k < state->shards.size(); ++k) state->open_shard(k);
  state->shard_base.resize(state->shards.size());
  for (std::size_t k = 0; k < state->shards.size(); ++k) {
    state->shard_base[k] = state->shards[k].images.data();
  }
  state->build_sample_table();
  Dataset dataset(std::move(state));
  if (options.verify_checksums) dataset.verify_checksums();
  return dataset;
}

const fs::path& Dataset::path() const { return state_->dir; }
const DatasetIndex& Dataset::index() const { return state_->index; }
std::size_t Dataset::record_bytes() const { return state_->record_bytes; }
std::size_t Dataset::num_records() const { return state_->index.num_records(); }
std::size_t Dataset::num_samples() const { return state_->index.num_samples(); }
std::size_t Dataset::num_shards() const { return state_->shards.size(); }

const uint8_t* Dataset::record_data(uint64_t r) const {
  const State& s = *state_;
  return s.shard_base[s.index.records.shard[r]] + uint64_t{s.index.records.row[r]} * s.record_bytes;
}

uint32_t Dataset::record_shard(uint64_t r) const { return state_->index.records.shard[r]; }
int32_t Dataset::record_label(uint64_t r) const { return state_->record_label[r]; }
int64_t Dataset::record_sample(uint64_t r) const { return state_->index.records.sample[r]; }
uint16_t Dataset::record_variant(uint64_t r) const { return state_->index.records.variant[r]; }
uint64_t Dataset::record_checksum(uint64_t r) const { return state_->record_checksum[r]; }

std::span<const uint64_t> Dataset::storage_order() const { return state_->storage_order; }
uint64_t Dataset::storage_position(uint64_t r) const { return state_->storage_position[r]; }

std::span<const uint64_t> Dataset::sample_records(uint64_t s) const {
  const State& st = *state_;
  return std::span<const uint64_t>(st.sample_records)
      .subspan(st.sample_offsets[s], st.sample_offsets[s + 1] - st.sample_offsets[s]);
}

fs::path Dataset::shard_path(std::size_t k) const { return state_->shards[k].path; }

std::span<const uint8_t> Dataset::shard_images(std::size_t k) const {
  const MappedRegion& images = state_->shards[k].images;
  return {images.data(), images.size()};
}

void Dataset::verify_checksums() const {
  const State& s = *state_;
  for (uint64_t r : s.storage_order) {
    if (checksum(record_data(r), s.record_bytes) != s.record_checksum[r]) {
      throw file_error(s.shards[s.index.records.shard[r]].path,
                       "row " + std::to_string(s.index.records.row[r]) + " (sample " +
                           std::to_string(s.index.records.sample[r]) +
                           ") does not match its stored checksum");
    }
  }
}

}  // namespace imgpack
