#include "shard_check.hpp"

#include <cmath>
#include <limits>
#include <span>
#include <string>

#include "h5.hpp"
#include "imgpack/checksum.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "mapped_column.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

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

// The root attributes that say whose shard this is. Returns its shard index.
uint64_t check_identity(const h5::File& file, const ShardExpectation& expected) {
  const fs::path& path = file.path();
  h5::Handle fcpl(file.check(H5Fget_create_plist(file.id()), "H5Fget_create_plist", "/"));
  hsize_t userblock = 0;
  file.check_status(H5Pget_userblock(fcpl.get(), &userblock), "H5Pget_userblock", "/");
  if (userblock != 0) throw file_error(path, "has a user block; not written by imgpack");
  if (!file.has_attr("/", format::kAttrFormat)) {
    throw file_error(path, "not an imgpack shard (no imgpack_format attribute)");
  }
  const int64_t version = file.read_int_attr("/", format::kAttrFormat);
  if (version != format::kShardVersion) {
    throw file_error(path, "format version " + std::to_string(version) +
                               ", this imgpack reads shards of version " +
                               std::to_string(format::kShardVersion));
  }
  const std::string uuid = file.read_string_attr("/", format::kAttrUuid);
  if (uuid != expected.uuid) {
    throw file_error(path, "belongs to dataset " + uuid + ", but " + expected.expected_by +
                               " is dataset " + expected.uuid + " (a shard from another dataset?)");
  }
  if (!expected.part.empty()) {
    const std::string part = file.has_attr("/", format::kAttrPart)
                                 ? file.read_string_attr("/", format::kAttrPart)
                                 : std::string();
    if (part != expected.part) {
      throw file_error(path, (part.empty() ? std::string("names no part of a conversion")
                                           : "was written by part " + part) +
                                 ", but " + expected.expected_by + " is part " + expected.part +
                                 " (a shard copied from elsewhere, or written by an older "
                                 "imgpack: convert the part again)");
    }
  }
  const int64_t shard_index = file.read_int_attr("/", format::kAttrShardIndex);
  const bool other = expected.or_shard && shard_index == static_cast<int64_t>(*expected.or_shard);
  if (shard_index != static_cast<int64_t>(expected.shard) && !other) {
    throw file_error(path, "is shard " + std::to_string(shard_index) + ", " + expected.expected_by +
                               " lists it as " + std::to_string(expected.shard));
  }
  return static_cast<uint64_t>(shard_index);
}

// Everything about a pixel dataset (/images or /masks) of shape `wanted`
// that must hold before its bytes can be mapped. Returns its offset in the file.
uint64_t check_pixels(const h5::File& file, const std::string& name,
                      const std::vector<uint64_t>& wanted, const ShardExpectation& expected,
                      uint64_t file_size) {
  const fs::path& path = file.path();
  const uint64_t records = wanted.front();
  h5::Handle images = file.open_dataset(name);

  h5::Handle type(file.check(H5Dget_type(images.get()), "H5Dget_type", name));
  if (H5Tget_class(type.get()) != H5T_INTEGER || H5Tget_size(type.get()) != 1 ||
      H5Tget_sign(type.get()) != H5T_SGN_NONE) {
    throw file_error(path, name + " is not uint8");
  }
  const std::vector<uint64_t> dims = file.shape(name);
  if (dims != wanted) {
    throw file_error(path, name + " has shape " + dims_text(dims) + ", " + expected.expected_by +
                               " expects " + dims_text(wanted));
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
  uint64_t record_bytes = 1;
  for (std::size_t d = 1; d < wanted.size(); ++d) record_bytes *= wanted[d];
  if (record_bytes == 0) throw file_error(path, name + " holds records of no bytes");
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
Column<T> read_column(const h5::File& file, const char* name, uint64_t records,
                      const std::shared_ptr<const MappedRegion>& mapping) {
  // Check the length before reading: a damaged file can declare any size.
  const uint64_t length = file.length(name);
  if (length != records) {
    throw file_error(file.path(), std::string(name) + " has " + std::to_string(length) +
                                      " entries, expected " + std::to_string(records));
  }
  return detail::mapped_or_read<T>(file, name, mapping);
}

// /images: [records, H, W, C].
uint64_t check_images(const h5::File& file, const ShardExpectation& expected, uint64_t file_size) {
  return check_pixels(file, format::kImages,
                      {expected.records, expected.height, expected.width, expected.channels},
                      expected, file_size);
}

// /masks and /mask_checksum, there exactly when the dataset has masks.
void check_masks(const h5::File& file, const ShardExpectation& expected, uint64_t file_size,
                 const std::shared_ptr<const MappedRegion>& mapping, ShardContents& contents) {
  if (!expected.masks) {
    if (file.exists(format::kMasks) || file.exists(format::kMaskChecksum)) {
      throw file_error(file.path(), std::string("has ") + format::kMasks + ", but " +
                                        expected.expected_by + " has no masks");
    }
    return;
  }
  if (!file.exists(format::kMasks)) {
    throw file_error(file.path(), std::string("has no ") + format::kMasks + ", but " +
                                      expected.expected_by + " has masks");
  }
  contents.masks_offset =
      check_pixels(file, format::kMasks, {expected.records, expected.height, expected.width},
                   expected, file_size);
  contents.masks_bytes = expected.records * expected.height * expected.width;
  contents.mask_checksums =
      read_column<uint64_t>(file, format::kMaskChecksum, expected.records, mapping);
}

bool has_box_tables(const h5::File& file) {
  for (const char* name : {format::kBoxes, format::kBoxClass, format::kBoxCrowd, format::kKeypoints,
                           format::kBoxOffsets, format::kBoxChecksum}) {
    if (file.exists(name)) return true;
  }
  return false;
}

// The box tables (format.hpp), there exactly when the dataset has boxes,
// read whole and checked row by row and against their checksums.
void check_boxes(const h5::File& file, const ShardExpectation& expected, ShardContents& contents) {
  const fs::path& path = file.path();
  if (!expected.boxes) {
    if (has_box_tables(file)) {
      throw file_error(path, std::string("has ") + format::kBoxes + ", but " +
                                 expected.expected_by + " has no boxes");
    }
    return;
  }
  if (!file.exists(format::kBoxOffsets)) {
    throw file_error(path, std::string("has no ") + format::kBoxOffsets + ", but " +
                               expected.expected_by + " has boxes");
  }
  const uint64_t n = expected.records;
  if (file.length(format::kBoxOffsets) != n + 1) {
    throw file_error(path, std::string(format::kBoxOffsets) + " has " +
                               std::to_string(file.length(format::kBoxOffsets)) +
                               " entries, expected " + std::to_string(n + 1));
  }
  contents.box_offsets = file.read<int64_t>(format::kBoxOffsets);
  const std::vector<int64_t>& offsets = contents.box_offsets;
  if (offsets.front() != 0)
    throw file_error(path, std::string(format::kBoxOffsets) + " starts at " +
                               std::to_string(offsets.front()) + ", not 0");
  for (uint64_t r = 0; r < n; ++r) {
    if (offsets[r + 1] < offsets[r]) {
      throw file_error(
          path, std::string(format::kBoxOffsets) + " decreases at record " + std::to_string(r));
    }
  }
  const auto b = static_cast<uint64_t>(offsets.back());
  const uint64_t k = expected.keypoints;
  try {
    contents.boxes = file.read_shaped<float>(format::kBoxes, {b, 4});
    contents.box_class = file.read_shaped<int32_t>(format::kBoxClass, {b});
    contents.box_crowd = file.read_shaped<uint8_t>(format::kBoxCrowd, {b});
    if (k > 0) contents.keypoints = file.read_shaped<float>(format::kKeypoints, {b, k, 3});
  } catch (const Error& e) {
    // The table's own message, without the path it repeats.
    std::string problem = e.what();
    const std::string prefix = path.string() + ": ";
    if (problem.starts_with(prefix)) problem.erase(0, prefix.size());
    throw file_error(path, "box tables, for the " + std::to_string(b) + " boxes " +
                               format::kBoxOffsets + " counts: " + problem);
  }
  if (k == 0 && file.exists(format::kKeypoints)) {
    throw file_error(path, std::string("has ") + format::kKeypoints + ", but " +
                               expected.expected_by + " has no keypoints");
  }
  const std::vector<uint64_t> checksums =
      read_column<uint64_t>(file, format::kBoxChecksum, n, nullptr).to_vector();
  for (uint64_t i = 0; i < b; ++i) {
    const int32_t cls = contents.box_class[i];
    if (cls < 0 || static_cast<uint64_t>(cls) >= expected.box_classes) {
      throw file_error(path, "box " + std::to_string(i) + " has class " + std::to_string(cls) +
                                 " outside the " + std::to_string(expected.box_classes) +
                                 " box classes");
    }
    if (contents.box_crowd[i] > 1) {
      throw file_error(path, "box " + std::to_string(i) + " has crowd flag " +
                                 std::to_string(contents.box_crowd[i]) + ", expected 0 or 1");
    }
    for (uint64_t c = 0; c < 4; ++c) {
      if (!std::isfinite(contents.boxes[i * 4 + c])) {
        throw file_error(path,
                         "box " + std::to_string(i) + " has a coordinate that is not a number");
      }
    }
    for (uint64_t j = 0; j < k; ++j) {
      const float* point = contents.keypoints.data() + (i * k + j) * 3;
      if (!std::isfinite(point[0]) || !std::isfinite(point[1]) ||
          !(point[2] == 0 || point[2] == 1 || point[2] == 2)) {
        throw file_error(path, "box " + std::to_string(i) + " has keypoint " + std::to_string(j) +
                                   " with a coordinate that is not a number or a visibility "
                                   "other than 0, 1 or 2");
      }
    }
  }
  for (uint64_t r = 0; r < n; ++r) {
    const auto first = static_cast<std::size_t>(offsets[r]);
    const auto count = static_cast<std::size_t>(offsets[r + 1] - offsets[r]);
    const uint64_t sum = box_checksum(
        std::span<const float>(contents.boxes).subspan(first * 4, count * 4),
        std::span<const int32_t>(contents.box_class).subspan(first, count),
        std::span<const uint8_t>(contents.box_crowd).subspan(first, count),
        std::span<const float>(contents.keypoints).subspan(first * k * 3, count * k * 3));
    if (sum != checksums[r]) {
      throw file_error(path, "the boxes of row " + std::to_string(r) +
                                 " do not match their checksum (" + format::kBoxChecksum + ")");
    }
  }
}

}  // namespace

ShardContents read_shard(const fs::path& path, const ShardExpectation& expected, uint64_t file_size,
                         const std::shared_ptr<const MappedRegion>& mapping) {
  h5::File file = h5::File::open_read(path);
  ShardContents contents;
  contents.shard = check_identity(file, expected);
  contents.images_offset = check_images(file, expected, file_size);
  contents.images_bytes = expected.records * expected.height * expected.width * expected.channels;
  contents.labels = read_column<int32_t>(file, format::kLabels, expected.records, mapping);
  contents.samples = read_column<int64_t>(file, format::kSample, expected.records, mapping);
  contents.variants = read_column<uint16_t>(file, format::kVariant, expected.records, mapping);
  contents.checksums = read_column<uint64_t>(file, format::kChecksum, expected.records, mapping);
  check_masks(file, expected, file_size, mapping, contents);
  check_boxes(file, expected, contents);
  return contents;
}

}  // namespace imgpack
