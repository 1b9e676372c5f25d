#include "imgpack/dataset.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "imgpack/checksum.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/h5.hpp"
#include "mapped_region.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kUnset = ~uint64_t{0};

struct ShardView {
  fs::path path;
  MappedRegion images;
  uint64_t records = 0;
  uint64_t first_position = 0;  // storage position of row 0
};

std::string layout_name(H5D_layout_t layout) {
  switch (layout) {
    case H5D_COMPACT:
      return "compact";
    case H5D_CONTIGUOUS:
      return "contiguous";
    case H5D_CHUNKED:
      return "chunked";
    case H5D_VIRTUAL:
      return "virtual";
    default:
      return "of unknown layout";
  }
}

std::string dims_text(const std::vector<uint64_t>& dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(dims[i]);
  }
  return text + "]";
}

// Everything about /images that must hold before its bytes can be mapped.
// Returns its offset in the file.
uint64_t check_images(const h5::File& file, const DatasetIndex& index, uint64_t records,
                      uint64_t file_size) {
  const fs::path& path = file.path();
  const std::string name = format::kImages;
  h5::Handle images = file.open_dataset(name);

  h5::Handle type(file.check(H5Dget_type(images.get()), "H5Dget_type", name));
  if (H5Tget_class(type.get()) != H5T_INTEGER || H5Tget_size(type.get()) != 1 ||
      H5Tget_sign(type.get()) != H5T_SGN_NONE) {
    throw file_error(path, name + " is not uint8");
  }
  const std::vector<uint64_t> expected = {records, index.height, index.width, index.channels};
  const std::vector<uint64_t> dims = file.shape(name);
  if (dims != expected) {
    throw file_error(
        path, name + " has shape " + dims_text(dims) + ", index.h5 expects " + dims_text(expected));
  }

  h5::Handle dcpl(file.check(H5Dget_create_plist(images.get()), "H5Dget_create_plist", name));
  H5D_layout_t layout = H5Pget_layout(dcpl.get());
  if (layout != H5D_CONTIGUOUS) {
    throw file_error(path, name + " is " + layout_name(layout) +
                               ", expected contiguous (cannot be memory-mapped)");
  }
  int external = H5Pget_external_count(dcpl.get());
  if (external != 0) throw file_error(path, name + " uses external storage");
  int filters = H5Pget_nfilters(dcpl.get());
  if (filters != 0) throw file_error(path, name + " is filtered");
  if (records == 0) return 0;

  H5D_space_status_t status{};
  file.check_status(H5Dget_space_status(images.get(), &status), "H5Dget_space_status", name);
  if (status != H5D_SPACE_STATUS_ALLOCATED) {
    throw file_error(path, name + " has no (or partly) allocated storage");
  }
  const uint64_t bytes = records * index.record_bytes();
  if (H5Dget_storage_size(images.get()) != bytes) {
    throw file_error(path, name + " stores " + std::to_string(H5Dget_storage_size(images.get())) +
                               " bytes, expected " + std::to_string(bytes));
  }
  haddr_t offset = H5Dget_offset(images.get());
  if (offset == HADDR_UNDEF) throw file_error(path, name + " has no file offset");
  if (offset > file_size || bytes > file_size - offset) {
    throw file_error(path, "truncated: " + name + " ends at byte " +
                               std::to_string(offset + bytes) + " but the file has " +
                               std::to_string(file_size) + " bytes");
  }
  return offset;
}

template <class T>
std::vector<T> read_column(const h5::File& file, const char* name, uint64_t records) {
  std::vector<T> values = file.read<T>(name);
  if (values.size() != records) {
    throw file_error(file.path(), std::string(name) + " has " + std::to_string(values.size()) +
                                      " entries, expected " + std::to_string(records));
  }
  return values;
}

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
  std::vector<uint64_t> sample_offsets;    // [S + 1]
  std::vector<uint64_t> sample_records;    // grouped by sample, ascending variant

  void build_tables();
  void open_shard(std::size_t k);
  void build_sample_table();
};

void Dataset::State::build_tables() {
  const std::size_t n_records = index.num_records();
  uint64_t position = 0;
  shards.resize(index.num_shards());
  for (std::size_t k = 0; k < shards.size(); ++k) {
    shards[k].path = dir / index.shard_file[k];
    shards[k].records = index.shard_records[k];
    shards[k].first_position = position;
    position += index.shard_records[k];
  }
  const fs::path index_path = dir / format::kIndexFile;
  storage_order.assign(n_records, kUnset);
  storage_position.resize(n_records);
  for (uint64_t r = 0; r < n_records; ++r) {
    uint64_t p = shards[index.record_shard[r]].first_position + index.record_row[r];
    if (storage_order[p] != kUnset) {
      throw file_error(index_path, "records " + std::to_string(storage_order[p]) + " and " +
                                       std::to_string(r) + " both point at " +
                                       index.shard_file[index.record_shard[r]] + " row " +
                                       std::to_string(index.record_row[r]));
    }
    storage_order[p] = r;
    storage_position[r] = p;
  }
  record_label.resize(n_records);
  for (uint64_t r = 0; r < n_records; ++r) {
    record_label[r] = index.sample_label[static_cast<std::size_t>(index.record_sample[r])];
  }
  record_checksum.assign(n_records, 0);
}

void Dataset::State::open_shard(std::size_t k) {
  ShardView& shard = shards[k];
  const fs::path& path = shard.path;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw file_error(path, "missing (listed in index.h5)");
  // The descriptor that will be mapped is opened first, so the size checked
  // below is the size of the file that gets mapped.
  FileDescriptor fd(path);
  const uint64_t file_size = fd.size(path);
  uint64_t offset = 0;
  {
    h5::File file = h5::File::open_read(path);
    h5::Handle fcpl(file.check(H5Fget_create_plist(file.id()), "H5Fget_create_plist", "/"));
    hsize_t userblock = 0;
    file.check_status(H5Pget_userblock(fcpl.get(), &userblock), "H5Pget_userblock", "/");
    if (userblock != 0) throw file_error(path, "has a user block; not written by imgpack");
    if (!file.has_attr("/", format::kAttrFormat)) {
      throw file_error(path, "not an imgpack shard (no imgpack_format attribute)");
    }
    int64_t version = file.read_int_attr("/", format::kAttrFormat);
    if (version != format::kVersion) {
      throw file_error(path, "format version " + std::to_string(version) +
                                 ", this imgpack reads version " +
                                 std::to_string(format::kVersion));
    }
    std::string uuid = file.read_string_attr("/", format::kAttrUuid);
    if (uuid != index.uuid) {
      throw file_error(path, "belongs to dataset " + uuid + ", but index.h5 is dataset " +
                                 index.uuid + " (a shard from another dataset?)");
    }
    int64_t shard_index = file.read_int_attr("/", format::kAttrShardIndex);
    if (shard_index != static_cast<int64_t>(k)) {
      throw file_error(path, "is shard " + std::to_string(shard_index) + ", index.h5 lists it as " +
                                 std::to_string(k));
    }
    offset = check_images(file, index, shard.records, file_size);

    auto labels = read_column<int32_t>(file, format::kLabels, shard.records);
    auto samples = read_column<int64_t>(file, format::kSample, shard.records);
    auto variants = read_column<uint16_t>(file, format::kVariant, shard.records);
    auto checksums = read_column<uint64_t>(file, format::kChecksum, shard.records);
    for (uint64_t row = 0; row < shard.records; ++row) {
      const uint64_t r = storage_order[shard.first_position + row];
      const int64_t sample = index.record_sample[r];
      if (samples[row] != sample || variants[row] != index.record_variant[r]) {
        throw file_error(path, "row " + std::to_string(row) + " holds sample " +
                                   std::to_string(samples[row]) + " variant " +
                                   std::to_string(variants[row]) + ", index.h5 says sample " +
                                   std::to_string(sample) + " variant " +
                                   std::to_string(index.record_variant[r]));
      }
      if (labels[row] != record_label[r]) {
        throw file_error(path, "row " + std::to_string(row) + " has label " +
                                   std::to_string(labels[row]) + ", index.h5 gives sample " +
                                   std::to_string(sample) + " label " +
                                   std::to_string(record_label[r]));
      }
      record_checksum[r] = checksums[row];
    }
  }
  shard.images = MappedRegion(fd.get(), path, offset, shard.records * record_bytes);
}

void Dataset::State::build_sample_table() {
  const std::size_t n_samples = index.num_samples();
  sample_offsets.assign(n_samples + 1, 0);
  for (int64_t s : index.record_sample) ++sample_offsets[static_cast<std::size_t>(s) + 1];
  for (std::size_t s = 0; s < n_samples; ++s) sample_offsets[s + 1] += sample_offsets[s];
  sample_records.resize(index.num_records());
  std::vector<uint64_t> fill(sample_offsets.begin(), sample_offsets.end() - 1);
  for (uint64_t r = 0; r < index.num_records(); ++r) {
    sample_records[fill[static_cast<std::size_t>(index.record_sample[r])]++] = r;
  }
  for (std::size_t s = 0; s < n_samples; ++s) {
    std::stable_sort(
        sample_records.begin() + static_cast<std::ptrdiff_t>(sample_offsets[s]),
        sample_records.begin() + static_cast<std::ptrdiff_t>(sample_offsets[s + 1]),
        [&](uint64_t a, uint64_t b) { return index.record_variant[a] < index.record_variant[b]; });
  }
}

Dataset Dataset::open(const fs::path& dir, const DatasetOpenOptions& options) {
  auto state = std::make_shared<State>();
  state->dir = dir;
  state->index = read_index(dir);
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
  return s.shard_base[s.index.record_shard[r]] + uint64_t{s.index.record_row[r]} * s.record_bytes;
}

uint32_t Dataset::record_shard(uint64_t r) const { return state_->index.record_shard[r]; }
int32_t Dataset::record_label(uint64_t r) const { return state_->record_label[r]; }
int64_t Dataset::record_sample(uint64_t r) const { return state_->index.record_sample[r]; }
uint16_t Dataset::record_variant(uint64_t r) const { return state_->index.record_variant[r]; }
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
      throw file_error(s.shards[s.index.record_shard[r]].path,
                       "row " + std::to_string(s.index.record_row[r]) + " (sample " +
                           std::to_string(s.index.record_sample[r]) +
                           ") does not match its stored checksum");
    }
  }
}

}  // namespace imgpack
