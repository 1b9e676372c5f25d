#include "shard_validation.hpp"

#include <limits>
#include <string>

#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/h5.hpp"

namespace imgpack::detail {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kUnset = ~uint64_t{0};

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
  const uint64_t record_bytes = index.record_bytes();
  if (records > std::numeric_limits<uint64_t>::max() / record_bytes) {
    throw file_error(path, name + " is larger than any file can be");
  }
  const uint64_t bytes = records * record_bytes;
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
  // Check the length before reading: a damaged file can declare any size.
  const uint64_t length = file.length(name);
  if (length != records) {
    throw file_error(file.path(), std::string(name) + " has " + std::to_string(length) +
                                      " entries, expected " + std::to_string(records));
  }
  return file.read<T>(name);
}

}  // namespace

StorageTable build_storage_table(const DatasetIndex& index, const fs::path& index_path) {
  StorageTable table;
  const std::size_t n_records = index.num_records();
  table.first_position.resize(index.num_shards());
  uint64_t position = 0;
  for (std::size_t k = 0; k < index.num_shards(); ++k) {
    table.first_position[k] = position;
    position += index.shard_records[k];
  }
  table.order.assign(n_records, kUnset);
  table.position.resize(n_records);
  for (uint64_t r = 0; r < n_records; ++r) {
    const uint64_t p = table.first_position[index.record_shard[r]] + index.record_row[r];
    if (table.order[p] != kUnset) {
      throw file_error(index_path, "records " + std::to_string(table.order[p]) + " and " +
                                       std::to_string(r) + " both point at " +
                                       index.shard_file[index.record_shard[r]] + " row " +
                                       std::to_string(index.record_row[r]));
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

ShardLayout validate_shard(const fs::path& path, const DatasetIndex& index, std::size_t k,
                           std::span<const uint64_t> row_records, uint64_t file_size) {
  const uint64_t records = row_records.size();
  ShardLayout layout;
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
                               ", this imgpack reads version " + std::to_string(format::kVersion));
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
  layout.images_offset = check_images(file, index, records, file_size);
  layout.images_bytes = records * index.record_bytes();

  auto labels = read_column<int32_t>(file, format::kLabels, records);
  auto samples = read_column<int64_t>(file, format::kSample, records);
  auto variants = read_column<uint16_t>(file, format::kVariant, records);
  layout.checksums = read_column<uint64_t>(file, format::kChecksum, records);
  for (uint64_t row = 0; row < records; ++row) {
    const uint64_t r = row_records[row];
    const int64_t sample = index.record_sample[r];
    if (samples[row] != sample || variants[row] != index.record_variant[r]) {
      throw file_error(
          path, "row " + std::to_string(row) + " holds sample " + std::to_string(samples[row]) +
                    " variant " + std::to_string(variants[row]) + ", index.h5 says sample " +
                    std::to_string(sample) + " variant " + std::to_string(index.record_variant[r]));
    }
    const int32_t label = index.sample_label[static_cast<std::size_t>(sample)];
    if (labels[row] != label) {
      throw file_error(path, "row " + std::to_string(row) + " has label " +
                                 std::to_string(labels[row]) + ", index.h5 gives sample " +
                                 std::to_string(sample) + " label " + std::to_string(label));
    }
  }
  return layout;
}

}  // namespace imgpack::detail
