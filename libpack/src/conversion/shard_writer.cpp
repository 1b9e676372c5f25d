#include "conversion/shard_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "conversion/output_files.hpp"
#include "files.hpp"
#include "imgpack/checksum.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

// Pixels are gathered into writes of this size: small enough to stay in the
// caches between the copy in and the write out (32 MiB made a conversion to
// 224x224 on two cores 16-25% slower than 1 to 4 MiB), large enough that a
// write costs little per record.
constexpr std::size_t kWriteBytes = 4u << 20;

// Creates a uint8 pixel dataset of `rank` dimensions: contiguous, unfiltered,
// allocated at creation, never filled, so its bytes are one aligned run at
// H5Dget_offset.
h5::Handle create_pixels(h5::File& file, const char* name, const hsize_t* dims, int rank) {
  h5::Handle space(file.check(H5Screate_simple(rank, dims, nullptr), "H5Screate_simple", name));
  h5::Handle dcpl = h5::dataset_creation_plist();
  file.check_status(H5Pset_layout(dcpl.get(), H5D_CONTIGUOUS), "H5Pset_layout", name);
  file.check_status(H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY), "H5Pset_alloc_time", name);
  file.check_status(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER), "H5Pset_fill_time", name);
  return h5::Handle(file.check(H5Dcreate2(file.id(), name, H5T_NATIVE_UINT8, space.get(),
                                          H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                               "H5Dcreate2", name));
}

// /images [n, H, W, C].
h5::Handle create_images(h5::File& file, RecordShape shape, uint64_t n) {
  const hsize_t dims[4] = {n, shape.height, shape.width, shape.channels};
  return create_pixels(file, format::kImages, dims, 4);
}

// /masks [n, H, W], laid out like /images.
h5::Handle create_masks(h5::File& file, RecordShape shape, uint64_t n) {
  const hsize_t dims[3] = {n, shape.height, shape.width};
  return create_pixels(file, format::kMasks, dims, 3);
}

// /images (and /masks) must start on a 4096-byte boundary however small they are.
uint64_t alignment_threshold(RecordShape shape, uint64_t records, bool masks) {
  const uint64_t smallest = masks ? shape.pixels() * records : shape.bytes() * records;
  return std::min<uint64_t>(format::kAlignmentThreshold, smallest);
}

uint64_t pixels_offset(h5::File& file, const h5::Handle& pixels, const char* name) {
  haddr_t offset = H5Dget_offset(pixels.get());
  if (offset == HADDR_UNDEF) {
    throw file_error(file.path(), std::string(name) + " has no storage offset");
  }
  return offset;
}

// Copies `size` bytes between two files, in the kernel where it can.
void copy_range(const fs::path& from, uint64_t from_offset, const fs::path& to, uint64_t to_offset,
                uint64_t size) {
  FileDescriptor in(from, O_RDONLY);
  FileDescriptor out(to, O_WRONLY);
  auto in_off = static_cast<off_t>(from_offset);
  auto out_off = static_cast<off_t>(to_offset);
  uint64_t left = size;
  while (left > 0) {
    ssize_t n = ::copy_file_range(in.get(), &in_off, out.get(), &out_off, left, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP || errno == EINVAL)) {
      break;  // fall back to read/write below
    }
    if (n < 0) throw system_error(to, "copying pixels failed", errno);
    if (n == 0) throw file_error(from, "unexpected end of file while copying pixels");
    left -= static_cast<uint64_t>(n);
  }
  std::vector<uint8_t> buffer(std::min<uint64_t>(left, 8u << 20));
  while (left > 0) {
    const std::size_t chunk = std::min<uint64_t>(left, buffer.size());
    if (read_at(in.get(), from, buffer.data(), chunk, static_cast<uint64_t>(in_off)) < chunk) {
      throw file_error(from, "unexpected end of file while copying pixels");
    }
    write_all_at(out.get(), to, buffer.data(), chunk, static_cast<uint64_t>(out_off),
                 "writing pixels failed");
    in_off += static_cast<off_t>(chunk);
    out_off += static_cast<off_t>(chunk);
    left -= chunk;
  }
}

}  // namespace

ShardWriter::ShardWriter(fs::path final_path, RecordShape shape, uint64_t capacity,
                         std::string dataset_uuid, uint32_t shard_index, const RecordExtras& extras,
                         RegionWriter::Mode pixel_writes)
    : final_path_(std::move(final_path)),
      shape_(shape),
      capacity_(capacity),
      uuid_(std::move(dataset_uuid)),
      shard_index_(shard_index),
      masks_(extras.masks),
      extras_(extras) {
  if (extras_.boxes) box_offsets_.push_back(0);
  if (capacity_ == 0 || shape_.bytes() == 0) throw Error("ShardWriter: empty shard requested");
  tmp_path_ = final_path_;
  tmp_path_ += format::kTmpSuffix;
  try {
    create_file(pixel_writes);
  } catch (...) {
    discard();  // a file created before the failure (a full disk) goes too
    throw;
  }
  labels_.reserve(capacity_);
  samples_.reserve(capacity_);
  variants_.reserve(capacity_);
  checksums_.reserve(capacity_);
  if (masks_) mask_checksums_.reserve(capacity_);
}

void ShardWriter::create_file(RegionWriter::Mode pixel_writes) {
  file_ = h5::File::create(tmp_path_, alignment_threshold(shape_, capacity_, masks_));
  images_ = create_images(file_, shape_, capacity_);
  if (masks_) masks_dataset_ = create_masks(file_, shape_, capacity_);
  images_offset_ = pixels_offset(file_, images_, format::kImages);
  if (masks_) masks_offset_ = pixels_offset(file_, masks_dataset_, format::kMasks);
  writeback_fd_ = FileDescriptor(tmp_path_, O_RDONLY);
  const uint64_t image_bytes = capacity_ * shape_.bytes();
  pixels_.emplace(tmp_path_, images_offset_, image_bytes,
                  std::min<uint64_t>(kWriteBytes, image_bytes), pixel_writes);
  if (masks_) {
    const uint64_t mask_bytes = capacity_ * shape_.pixels();
    mask_pixels_.emplace(tmp_path_, masks_offset_, mask_bytes,
                         std::min<uint64_t>(kWriteBytes, mask_bytes), pixel_writes);
  }
}

ShardWriter::~ShardWriter() { discard(); }

void ShardWriter::discard() noexcept {
  pixels_.reset();  // waits for a write in flight
  mask_pixels_.reset();
  if (syncing_.valid()) syncing_.wait();  // it uses writeback_fd_
  if (!committed_) {
    images_.reset();
    masks_dataset_.reset();
    file_ = h5::File();
    std::error_code ec;
    fs::remove(tmp_path_, ec);
    if (!sealed_path_.empty()) fs::remove(sealed_path_, ec);
  }
}

void ShardWriter::append(const uint8_t* pixels, uint64_t checksum, int32_t label, int64_t sample,
                         uint16_t variant, const RecordParts& parts) {
  if (full()) throw file_error(tmp_path_, "shard is full");
  if (masks_ && parts.mask == nullptr) throw file_error(tmp_path_, "a record without its mask");
  if (extras_.boxes) append_boxes(parts.boxes);
  pixels_->append(pixels, shape_.bytes());
  if (!pixels_->direct()) sync_in_background(shape_.bytes());
  if (masks_) {
    mask_pixels_->append(parts.mask, shape_.pixels());
    if (!mask_pixels_->direct()) sync_in_background(shape_.pixels());
    mask_checksums_.push_back(parts.mask_checksum);
  }
  labels_.push_back(label);
  samples_.push_back(sample);
  variants_.push_back(variant);
  checksums_.push_back(checksum);
}

void ShardWriter::append_boxes(const RecordBoxes* record) {
  if (record == nullptr) throw file_error(tmp_path_, "a record without its boxes");
  const std::size_t b = record->size();
  if (record->boxes.size() != 4 * b || record->crowd.size() != b ||
      record->keypoints.size() != b * extras_.keypoints * 3) {
    throw file_error(tmp_path_, "a record's box rows disagree in length");
  }
  boxes_.boxes.insert(boxes_.boxes.end(), record->boxes.begin(), record->boxes.end());
  boxes_.classes.insert(boxes_.classes.end(), record->classes.begin(), record->classes.end());
  boxes_.crowd.insert(boxes_.crowd.end(), record->crowd.begin(), record->crowd.end());
  boxes_.keypoints.insert(boxes_.keypoints.end(), record->keypoints.begin(),
                          record->keypoints.end());
  box_offsets_.push_back(static_cast<int64_t>(boxes_.size()));
  box_checksums_.push_back(
      box_checksum(record->boxes, record->classes, record->crowd, record->keypoints));
}

void ShardWriter::sync_in_background(uint64_t bytes) {
  unsynced_bytes_ += bytes;
  if (unsynced_bytes_ < kBackgroundSyncBytes) return;
  if (syncing_.valid()) {
    if (syncing_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
    finish_background_sync();
  }
  syncing_ = std::async(std::launch::async,
                        [fd = writeback_fd_.get()] { return ::fdatasync(fd) == 0 ? 0 : errno; });
  unsynced_bytes_ = 0;
}

void ShardWriter::finish_background_sync() {
  if (!syncing_.valid()) return;
  // A failure is this shard's: the fsync of the commit, on another
  // descriptor, might not be told of it again.
  if (const int error = syncing_.get(); error != 0) {
    throw system_error(tmp_path_, "fdatasync failed", error);
  }
}

void ShardWriter::write_columns_and_attrs(h5::File& file) {
  file.write(format::kLabels, labels_);
  file.write(format::kSample, samples_);
  file.write(format::kVariant, variants_);
  file.write(format::kChecksum, checksums_);
  if (masks_) file.write(format::kMaskChecksum, mask_checksums_);
  if (extras_.boxes) {
    const auto b = static_cast<uint64_t>(boxes_.size());
    file.write_shaped(format::kBoxes, std::span<const float>(boxes_.boxes), {b, 4});
    file.write(format::kBoxClass, boxes_.classes);
    file.write(format::kBoxCrowd, boxes_.crowd);
    if (extras_.keypoints > 0) {
      file.write_shaped(format::kKeypoints, std::span<const float>(boxes_.keypoints),
                        {b, extras_.keypoints, 3});
    }
    file.write(format::kBoxOffsets, box_offsets_);
    file.write(format::kBoxChecksum, box_checksums_);
  }
  file.write_attr("/", format::kAttrFormat, int64_t{format::kShardVersion});
  file.write_attr("/", format::kAttrUuid, uuid_);
  file.write_attr("/", format::kAttrShardIndex, int64_t{shard_index_});
  if (!extras_.part.empty()) file.write_attr("/", format::kAttrPart, extras_.part);
}

void ShardWriter::seal() {
  if (sealed_) return;
  if (size() == 0) throw file_error(tmp_path_, "cannot commit an empty shard");
  pixels_->finish();
  if (masks_) mask_pixels_->finish();
  pixels_.reset();
  mask_pixels_.reset();
  finish_background_sync();
  writeback_fd_.reset();
  if (size() < capacity_) {
    seal_compacted();
  } else {
    write_columns_and_attrs(file_);
    images_.reset();
    masks_dataset_.reset();
    file_.close();
    sealed_path_ = tmp_path_;
  }
  sealed_ = true;
}

void ShardWriter::publish() {
  if (committed_) return;
  if (!sealed_) throw file_error(tmp_path_, "published before it was sealed");
  crash_point("shard-commit", shard_index_);
  commit_file(sealed_path_, final_path_);
  committed_ = true;
  if (sealed_path_ != tmp_path_) {
    std::error_code ec;
    fs::remove(tmp_path_, ec);
  }
}

void ShardWriter::seal_compacted() {
  // /images cannot shrink (contiguous layout), so write an exactly sized file
  // and move the pixels across without passing them through user space.
  const uint64_t old_offset = pixels_offset(file_, images_, format::kImages);
  const uint64_t old_masks_offset =
      masks_ ? pixels_offset(file_, masks_dataset_, format::kMasks) : 0;
  images_.reset();
  masks_dataset_.reset();
  file_.close();

  fs::path compact_path = final_path_;
  compact_path += kCompactSuffix;
  compact_path += format::kTmpSuffix;
  try {
    uint64_t new_offset = 0;
    uint64_t new_masks_offset = 0;
    {
      h5::File file = h5::File::create(compact_path, alignment_threshold(shape_, size(), masks_));
      h5::Handle images = create_images(file, shape_, size());
      new_offset = pixels_offset(file, images, format::kImages);
      h5::Handle masks;
      if (masks_) {
        masks = create_masks(file, shape_, size());
        new_masks_offset = pixels_offset(file, masks, format::kMasks);
      }
      write_columns_and_attrs(file);
      images.reset();
      masks.reset();
      file.close();
    }
    copy_range(tmp_path_, old_offset, compact_path, new_offset, size() * shape_.bytes());
    if (masks_) {
      copy_range(tmp_path_, old_masks_offset, compact_path, new_masks_offset,
                 size() * shape_.pixels());
    }
  } catch (...) {
    std::error_code ec;
    fs::remove(compact_path, ec);
    throw;
  }
  sealed_path_ = compact_path;
}

namespace {

uint64_t whole_runs_per_shard(uint64_t shard_bytes, uint64_t record_bytes, uint32_t run) {
  const uint64_t runs = shard_bytes / (uint64_t{record_bytes} * std::max(run, 1u));
  return std::max<uint64_t>(1, runs) * std::max(run, 1u);
}

}  // namespace

uint64_t first_unused_shard_number(const std::vector<std::string>& files) {
  uint64_t past = 0;
  for (const std::string& file : files) {
    if (format::is_shard_file_name(file))
      past = std::max(past, format::shard_file_number(file) + 1);
  }
  return past;
}

DatasetWriter::DatasetWriter(fs::path out_dir, RecordShape shape, uint64_t shard_bytes,
                             std::string dataset_uuid, uint64_t max_records, uint32_t run_length,
                             const RecordExtras& extras)
    : out_dir_(std::move(out_dir)),
      shape_(shape),
      uuid_(std::move(dataset_uuid)),
      extras_(extras),
      records_per_shard_(whole_runs_per_shard(
          shard_bytes, shape.bytes() + (extras.masks ? shape.pixels() : 0), run_length)),
      remaining_(max_records) {}

void DatasetWriter::add(const uint8_t* pixels, uint64_t checksum, int32_t label, int64_t sample,
                        uint16_t variant, const RecordParts& parts) {
  if (!current_) {
    auto index = static_cast<uint32_t>(shards_.size());
    std::string name = format::shard_file_name(index + file_number_offset_);
    uint64_t capacity = std::clamp<uint64_t>(remaining_, 1, records_per_shard_);
    current_ =
        std::make_unique<ShardWriter>(out_dir_ / name, shape_, capacity, uuid_, index, extras_);
    shards_.file.push_back(name);
    shards_.records.push_back(0);
  }
  records_.push_back(static_cast<uint32_t>(shards_.size() - 1),
                     static_cast<uint32_t>(current_->size()), sample, variant);
  current_->append(pixels, checksum, label, sample, variant, parts);
  ++shards_.records.back();
  crash_point("record", records_.size());
  if (remaining_ > 0) --remaining_;
  if (current_->full()) {
    commit_current();
  } else if (publishing_) {
    collect_published(false);
  }
}

void DatasetWriter::commit_current() {
  collect_published(true);
  current_->seal();
  publishing_ = std::move(current_);
  publishing_index_ = shards_.size() - 1;
  if (on_seal_) on_seal_(publishing_index_);
  published_ = std::async(std::launch::async, [shard = publishing_.get()] { shard->publish(); });
}

void DatasetWriter::collect_published(bool wait) {
  if (!publishing_) return;
  if (!wait && published_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
  published_.get();  // rethrows what publish() threw
  publishing_.reset();
  if (on_commit_) on_commit_(publishing_index_);
}

void DatasetWriter::settle() noexcept {
  try {
    collect_published(true);
  } catch (...) {  // NOLINT(bugprone-empty-catch): documented, the caller has an error already
  }
}

DatasetWriter::~DatasetWriter() {
  if (published_.valid()) published_.wait();
}

void DatasetWriter::adopt(const std::string& file, std::span<const int64_t> samples,
                          std::span<const uint16_t> variants) {
  if (current_ || publishing_) throw Error("DatasetWriter::adopt after add");
  const auto shard = static_cast<uint32_t>(shards_.size());
  for (std::size_t row = 0; row < samples.size(); ++row) {
    records_.push_back(shard, static_cast<uint32_t>(row), samples[row], variants[row]);
  }
  shards_.file.push_back(file);
  shards_.records.push_back(samples.size());
}

void DatasetWriter::continue_after(const RecordTable& records, const ShardTable& shards) {
  if (current_ || publishing_ || !shards_.file.empty()) {
    throw Error("DatasetWriter::continue_after after add");
  }
  records_ = records;
  shards_ = shards;
  const uint64_t past_every_file = first_unused_shard_number(shards.file);
  file_number_offset_ = past_every_file - std::min<uint64_t>(past_every_file, shards.size());
}

void DatasetWriter::finish(DatasetIndex& index) {
  if (current_) commit_current();
  collect_published(true);
  index.records = std::move(records_);
  index.shards = std::move(shards_);
}

}  // namespace imgpack
