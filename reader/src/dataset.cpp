#include "imgpack/dataset.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "files.hpp"
#include "imgpack/checksum.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "index_file.hpp"
#include "mapped_region.hpp"
#include "mapping_fault.hpp"
#include "shard_validation.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

struct ShardView {
  fs::path path;
  FileIdentity identity;                     // of the file opened and mapped
  std::shared_ptr<const MappedRegion> file;  // the whole shard file, read-only
  uint64_t images_offset = 0;
  const uint8_t* images = nullptr;  // /images in `file`
  uint64_t images_bytes = 0;
  const uint8_t* masks = nullptr;  // /masks in `file`, with masks only
  uint64_t masks_bytes = 0;
  uint64_t masks_offset = 0;
  Column<uint64_t> mask_checksums;  // /mask_checksum, by row, with masks only
  uint64_t records = 0;
  Column<uint64_t> checksums;  // /checksum, by row (in `file` where it lies contiguous)
  // With boxes: the shard's box tables, whole, and each row's first box [records + 1].
  std::vector<float> boxes;
  std::vector<int32_t> box_class;
  std::vector<uint8_t> box_crowd;
  std::vector<float> keypoints;
  std::vector<int64_t> box_offsets;
};

// Reads row `row` of `bytes` bytes of a layer (/images or /masks) that
// starts at byte `layer_offset` of the file.
void read_row(int fd, const fs::path& path, uint64_t row, uint8_t* out, std::size_t bytes,
              uint64_t layer_offset) {
  const uint64_t offset = layer_offset + row * bytes;
  std::size_t done = 0;
  while (done < bytes) {
    const ssize_t got = ::pread(fd, out + done, bytes - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw system_error(path, "cannot read row " + std::to_string(row), errno);
    if (got == 0) {
      throw file_error(path, "ends inside row " + std::to_string(row) +
                                 ": the file was truncated after it was opened");
    }
    done += static_cast<std::size_t>(got);
  }
}

// A shard_fds entry: the file the dataset opened is no longer at its path.
constexpr int kShardGone = -2;

Error shard_replaced(const fs::path& path) {
  return file_error(path,
                    "is not the file the dataset opened: replaced since (a conversion over "
                    "the dataset?); open the dataset again to read what is there now");
}

}  // namespace

struct Dataset::State {
  fs::path dir;        // as given: path()
  fs::path files_dir;  // absolute: where its files are opened
  DatasetIndex index;  // numeric tables viewed in the mappings of index.h5 and splits.h5
  std::shared_ptr<const detail::IndexStrings> strings;  // paths and names left out of `index`
  std::size_t record_bytes = 0;
  std::vector<ShardView> shards;
  std::size_t mask_bytes = 0;
  std::vector<const uint8_t*> shard_base;  // == shards[k].images, for the hot path
  std::vector<const uint8_t*> mask_base;   // == shards[k].masks
  detail::StorageTable storage;            // no table when the records are in storage order
  // The records of each sample, by ascending variant. Empty when every sample
  // s has the K records s*K .. s*K+K-1, variant by variant (as imgpack writes them).
  std::vector<uint64_t> sample_offsets;  // [S + 1]
  std::vector<uint64_t> sample_records;  // grouped by sample, ascending variant
  // -1 until shard_fd() opens one; kShardGone where the file is no longer there.
  mutable std::unique_ptr<std::atomic<int>[]> shard_fds;

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State();
  int shard_fd(std::size_t k) const;

  void build_tables();
  void open_shard(std::size_t k);
  void build_sample_table();
};

void Dataset::State::build_tables() {
  storage = detail::build_storage_table(index, dir / format::kIndexFile);
  shards.resize(index.num_shards());
  shard_fds = std::make_unique<std::atomic<int>[]>(shards.size());
  for (std::size_t k = 0; k < shards.size(); ++k) {
    shards[k].path = files_dir / index.shards.file[k];
    shards[k].records = index.shards.records[k];
    shard_fds[k] = -1;
  }
}

void Dataset::State::open_shard(std::size_t k) {
  ShardView& shard = shards[k];
  const fs::path& path = shard.path;
  detail::require_shard_exists(path);
  // The descriptor that will be mapped is opened first, so the size checked
  // below is the size of the file that gets mapped.
  const FileDescriptor fd = open_for_reading(path);
  const uint64_t size = fd.size(path);
  shard.identity = fd.identity(path);
  // The whole file: the pixels and, viewed in place, the columns.
  shard.file = std::make_shared<const MappedRegion>(fd.get(), path, 0, size);
  const RecordIds row_records = storage.shard_records(k, shard.records);
  ShardContents contents = detail::validate_shard(path, index, k, row_records, size, shard.file);
  shard.checksums = std::move(contents.checksums);
  shard.images = shard.file->data() + contents.images_offset;
  shard.images_bytes = contents.images_bytes;
  shard.images_offset = contents.images_offset;
  if (index.boxes) {
    shard.boxes = std::move(contents.boxes);
    shard.box_class = std::move(contents.box_class);
    shard.box_crowd = std::move(contents.box_crowd);
    shard.keypoints = std::move(contents.keypoints);
    shard.box_offsets = std::move(contents.box_offsets);
  }
  if (!index.masks) return;
  shard.mask_checksums = std::move(contents.mask_checksums);
  shard.masks = shard.file->data() + contents.masks_offset;
  shard.masks_bytes = contents.masks_bytes;
  shard.masks_offset = contents.masks_offset;
}

// The shard's descriptor for Dataset::read_record, opened on first use (a
// dataset of many shards read from the page cache needs none) and kept until
// the last handle goes; kShardGone where the file the dataset opened is no
// longer at its path (removed, or another file put there). Thread-safe:
// threads that race each open one, and all but the first close theirs.
int Dataset::State::shard_fd(std::size_t k) const {
  std::atomic<int>& fd = shard_fds[k];
  const int known = fd.load(std::memory_order_acquire);
  if (known >= 0 || known == kShardGone) return known;
  const fs::path& path = shards[k].path;
  FileDescriptor opened(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  int found = opened.get();
  if (!opened) {
    if (errno != ENOENT) throw system_error(path, "cannot open for reading", errno);
    found = kShardGone;
  } else if (opened.identity(path) != shards[k].identity) {
    found = kShardGone;
  } else {
    // Records are read whole, in an order the kernel cannot guess: its
    // readahead would read past each record (up to the device's
    // read_ahead_kb) for nothing. Advice only; a file system that ignores it
    // still works.
    (void)::posix_fadvise(opened.get(), 0, 0, POSIX_FADV_RANDOM);
  }
  int expected = -1;
  if (fd.compare_exchange_strong(expected, found, std::memory_order_acq_rel)) {
    if (found >= 0) (void)opened.release();  // kept in shard_fds
    return found;
  }
  return expected;
}

namespace {

// Copies `bytes` bytes of row `row` of the shard at `path` from its mapping
// (read_row() for a shard whose file is gone from its path).
void copy_from_mapping(const fs::path& path, uint32_t row, const uint8_t* from, uint8_t* out,
                       std::size_t bytes) {
  if (detail::read_mapped([&] { std::memcpy(out, from, bytes); }) != nullptr) {
    throw detail::mapping_fault_error(path, "row " + std::to_string(row));
  }
}

}  // namespace

Dataset::State::~State() {
  if (!shard_fds) return;
  for (std::size_t k = 0; k < shards.size(); ++k) {
    const int fd = shard_fds[k].load();
    if (fd >= 0) ::close(fd);
  }
}

void Dataset::State::build_sample_table() {
  detail::SampleTable table = detail::build_sample_table(index, dir / format::kIndexFile);
  sample_offsets = std::move(table.offsets);
  sample_records = std::move(table.records);
}

Dataset Dataset::open(const fs::path& dir, const DatasetOpenOptions& options) {
  auto state = std::make_shared<State>();
  state->dir = dir;
  // Every file opened later (a shard read through the read path, the paths
  // left out of index(), a shard reopened) by a path that a change of the
  // working directory leaves as it is.
  std::error_code ec;
  const fs::path where = dir.is_absolute() ? dir : fs::absolute(dir, ec);
  if (ec) throw system_error(dir, "cannot make the path absolute", ec.value());
  state->files_dir = where;
  IndexReadOptions what = options.index;
  what.records = true;  // the mapping and every check need them
  detail::DeferredIndex read = detail::read_index_deferred(where, what, true);
  state->index = std::move(read.index);
  state->strings = std::move(read.strings);
  state->record_bytes = state->index.record_bytes();
  state->mask_bytes = state->index.mask_bytes();
  state->build_tables();
  for (std::size_t k = 0; k < state->shards.size(); ++k) state->open_shard(k);
  state->shard_base.resize(state->shards.size());
  state->mask_base.resize(state->shards.size());
  for (std::size_t k = 0; k < state->shards.size(); ++k) {
    state->shard_base[k] = state->shards[k].images;
    state->mask_base[k] = state->shards[k].masks;
  }
  state->build_sample_table();
  Dataset dataset(std::move(state));
  if (options.verify_checksums) dataset.verify_checksums();
  return dataset;
}

const fs::path& Dataset::path() const { return state_->dir; }
const DatasetIndex& Dataset::index() const { return state_->index; }

std::string Dataset::sample_path(uint64_t s) const {
  const State& st = *state_;
  if (st.index.has_sample_paths) return st.index.sample_path[static_cast<std::size_t>(s)];
  return st.strings->sample_path(s);
}

std::vector<std::string> Dataset::sample_paths() const {
  const State& st = *state_;
  if (st.index.has_sample_paths) return st.index.sample_path;
  return st.strings->sample_paths();
}

std::vector<std::string> Dataset::group_names() const {
  const State& st = *state_;
  if (st.index.has_group_names) return st.index.group_names;
  return st.strings->group_names();
}
std::size_t Dataset::record_bytes() const { return state_->record_bytes; }
std::size_t Dataset::num_records() const { return state_->index.num_records(); }
std::size_t Dataset::num_samples() const { return state_->index.num_samples(); }
std::size_t Dataset::num_shards() const { return state_->shards.size(); }

const uint8_t* Dataset::record_data(uint64_t r) const {
  const State& s = *state_;
  return s.shard_base[s.index.records.shard[r]] + uint64_t{s.index.records.row[r]} * s.record_bytes;
}

const uint8_t* Dataset::mask_data(uint64_t r) const {
  const State& s = *state_;
  return s.mask_base[s.index.records.shard[r]] + uint64_t{s.index.records.row[r]} * s.mask_bytes;
}

void Dataset::read_record(uint64_t r, uint8_t* out) const {
  const State& s = *state_;
  const uint32_t k = s.index.records.shard[r];
  const int fd = s.shard_fd(k);
  if (fd == kShardGone) {
    copy_from_mapping(s.shards[k].path, s.index.records.row[r], record_data(r), out,
                      s.record_bytes);
    return;
  }
  read_row(fd, s.shards[k].path, s.index.records.row[r], out, s.record_bytes,
           s.shards[k].images_offset);
}

void Dataset::read_mask(uint64_t r, uint8_t* out) const {
  const State& s = *state_;
  const uint32_t k = s.index.records.shard[r];
  const int fd = s.shard_fd(k);
  if (fd == kShardGone) {
    copy_from_mapping(s.shards[k].path, s.index.records.row[r], mask_data(r), out, s.mask_bytes);
    return;
  }
  read_row(fd, s.shards[k].path, s.index.records.row[r], out, s.mask_bytes,
           s.shards[k].masks_offset);
}

bool Dataset::record_cached(uint64_t r) const {
  static const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  // The middle page: the first and last ones share their bytes with the
  // neighbouring records, which a read of those brings into the cache.
  const uint8_t* middle = record_data(r) + state_->record_bytes / 2;
  const std::uintptr_t lead = reinterpret_cast<std::uintptr_t>(middle) % page;
  unsigned char resident = 0;
  // mincore takes a non-const pointer and writes nothing through it.
  return ::mincore(const_cast<uint8_t*>(middle - lead), 1, &resident) == 0 && (resident & 1) != 0;
}

uint32_t Dataset::record_shard(uint64_t r) const { return state_->index.records.shard[r]; }
int32_t Dataset::record_label(uint64_t r) const {
  const DatasetIndex& index = state_->index;
  return index.sample_label[static_cast<std::size_t>(index.records.sample[r])];
}
int64_t Dataset::record_sample(uint64_t r) const { return state_->index.records.sample[r]; }
uint16_t Dataset::record_variant(uint64_t r) const { return state_->index.records.variant[r]; }
uint64_t Dataset::record_checksum(uint64_t r) const {
  const State& s = *state_;
  return s.shards[s.index.records.shard[r]].checksums[s.index.records.row[r]];
}
uint64_t Dataset::record_mask_checksum(uint64_t r) const {
  const State& s = *state_;
  const ShardView& shard = s.shards[s.index.records.shard[r]];
  return shard.mask_checksums.empty() ? 0 : shard.mask_checksums[s.index.records.row[r]];
}

Dataset::BoxRows Dataset::record_boxes(uint64_t r) const {
  const State& s = *state_;
  const ShardView& shard = s.shards[s.index.records.shard[r]];
  const uint32_t row = s.index.records.row[r];
  const auto first = static_cast<std::size_t>(shard.box_offsets[row]);
  const auto count = static_cast<std::size_t>(shard.box_offsets[row + 1]) - first;
  const std::size_t k3 = s.index.num_keypoints() * 3;
  return {std::span<const float>(shard.boxes).subspan(first * 4, count * 4),
          std::span<const int32_t>(shard.box_class).subspan(first, count),
          std::span<const uint8_t>(shard.box_crowd).subspan(first, count),
          std::span<const float>(shard.keypoints).subspan(first * k3, count * k3)};
}

RecordIds Dataset::storage_order() const { return state_->storage.records(); }
uint64_t Dataset::storage_position(uint64_t r) const { return state_->storage.position_of(r); }

RecordIds Dataset::sample_records(uint64_t s) const {
  const State& st = *state_;
  if (st.sample_offsets.empty()) {
    const uint64_t k = st.index.variants;
    return {s * k, static_cast<std::size_t>(k)};
  }
  return RecordIds(
      std::span<const uint64_t>(st.sample_records)
          .subspan(st.sample_offsets[s], st.sample_offsets[s + 1] - st.sample_offsets[s]));
}

fs::path Dataset::shard_path(std::size_t k) const { return state_->shards[k].path; }

void Dataset::require_opened_shard(std::size_t k, int fd) const {
  if (!is_opened_shard(k, fd)) throw shard_replaced(state_->shards[k].path);
}

bool Dataset::is_opened_shard(std::size_t k, int fd) const {
  const ShardView& shard = state_->shards[k];
  return FileDescriptor::identity_of(fd, shard.path) == shard.identity;
}

uint64_t Dataset::shard_images_offset(std::size_t k) const {
  return state_->shards[k].images_offset;
}

std::span<const uint8_t> Dataset::shard_images(std::size_t k) const {
  const ShardView& shard = state_->shards[k];
  return {shard.images, static_cast<std::size_t>(shard.images_bytes)};
}

std::span<const uint8_t> Dataset::shard_masks(std::size_t k) const {
  const ShardView& shard = state_->shards[k];
  return {shard.masks, static_cast<std::size_t>(shard.masks_bytes)};
}

uint64_t Dataset::shard_masks_offset(std::size_t k) const { return state_->shards[k].masks_offset; }

void Dataset::verify_checksums() const {
  const State& s = *state_;
  uint64_t bad = 0;
  bool image_ok = true;
  volatile uint64_t current = 0;  // read after a jump out of the loop
  const void* fault = detail::read_mapped([&] {
    for (uint64_t r : s.storage.records()) {
      current = r;
      image_ok = checksum(record_data(r), s.record_bytes) == record_checksum(r);
      if (!image_ok ||
          (has_masks() && checksum(mask_data(r), s.mask_bytes) != record_mask_checksum(r))) {
        bad = r + 1;
        return;
      }
    }
  });
  if (fault != nullptr) {
    throw detail::mapping_fault_error(s.shards[s.index.records.shard[current]].path,
                                      "row " + std::to_string(s.index.records.row[current]),
                                      "its checksums were checked");
  }
  if (bad == 0) return;
  const uint64_t r = bad - 1;
  throw file_error(s.shards[s.index.records.shard[r]].path,
                   std::string(image_ok ? "the mask of " : "") + "row " +
                       std::to_string(s.index.records.row[r]) + " (sample " +
                       std::to_string(s.index.records.sample[r]) +
                       ") does not match its stored checksum");
}

}  // namespace imgpack
