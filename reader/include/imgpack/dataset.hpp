// A validated, memory-mapped, read-only view of an imgpack dataset.
//
// Dataset::open() reads index.h5 (format 1 or 2; with format 2, splits.h5)
// and the metadata of every shard once through HDF5, checks everything the
// format promises (version, checksums, dataset uuid, dtype, shape, contiguous
// allocated storage inside the file, per-record columns agreeing with the
// index), closes every HDF5 handle and maps each shard file read-only. The
// index's numeric tables (labels, groups, records, split assignments) and
// the shards' columns (checksums) are viewed in read-only mappings of
// index.h5, splits.h5 and the shards where they lie contiguous, as imgpack
// writes them: shared with every other process that maps the same dataset
// (one page cache for all the ranks of a job), never the process's anonymous
// memory; tables laid out otherwise are copied. The sample paths and group
// names are read on first use. After open() no HDF5 call is made but by
// those reads (on a format 1 index, which opens index.h5 again): record
// bytes are plain pointers into the mappings. A dataset with segmentation
// masks (has_masks()) has each shard's /masks beside its /images: every
// record has an H x W uint8 label map, read like its pixels.
//
// A Dataset is a cheap handle: copies share the same mappings, which stay
// valid while any copy (or a Loader made from one) lives. All const methods
// are safe to call from many threads at once.
//
// A file that is truncated, foreign, of another dataset or laid out in a way
// that cannot be mapped is an imgpack::Error at open naming the file, never a
// crash later. The one thing open() cannot guard against is a shard being
// truncated or rewritten in place *after* it was mapped: do not modify a
// dataset that is being read (imgpack's own tools never do; they write new
// files and rename them into place, which leaves open mappings intact). The
// same holds for index.h5 and splits.h5, which are mapped too: a program
// that edits them in place (h5py) must not do so under a running reader.
//
// A dataset that grows (an append, a removal, a compaction) commits each
// change as a new generation of index.h5 and splits.h5 renamed into place.
// A Dataset keeps the generation it opened (generation()): its samples,
// removed marks and splits are those of the files it mapped at open(), and
// nothing it reads later is read by path from a newer index; open the
// dataset again to see a later generation. Removed samples keep their ids
// (rows of the sample table, counted by num_samples()) and their records,
// but no selection (select_samples()) includes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "imgpack/dataset_index.hpp"

namespace imgpack {

// A sequence of record ids: a view of a table the Dataset holds, or a run of
// consecutive ids where that table would hold exactly those (a dataset written
// in order needs no table: record r at storage position r, sample s's K
// records s*K .. s*K+K-1). Valid while the Dataset lives; cheap to copy.
class RecordIds {
 public:
  // Holds what it reads, not the RecordIds: valid as long as the Dataset.
  class iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = uint64_t;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = uint64_t;
    iterator() = default;
    iterator(const uint64_t* table, uint64_t first, std::size_t i)
        : table_(table), first_(first), i_(i) {}
    uint64_t operator*() const { return table_ != nullptr ? table_[i_] : first_ + i_; }
    uint64_t operator[](difference_type n) const { return *(*this + n); }
    iterator& operator++() { return ++i_, *this; }
    iterator operator++(int) { return {table_, first_, i_++}; }
    iterator& operator--() { return --i_, *this; }
    iterator operator--(int) { return {table_, first_, i_--}; }
    iterator& operator+=(difference_type n) { return i_ += static_cast<std::size_t>(n), *this; }
    iterator& operator-=(difference_type n) { return i_ -= static_cast<std::size_t>(n), *this; }
    friend iterator operator+(iterator it, difference_type n) { return it += n; }
    friend iterator operator+(difference_type n, iterator it) { return it += n; }
    friend iterator operator-(iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(iterator a, iterator b) {
      return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
    }
    friend bool operator==(iterator a, iterator b) { return a.i_ == b.i_; }
    friend auto operator<=>(iterator a, iterator b) { return a.i_ <=> b.i_; }

   private:
    const uint64_t* table_ = nullptr;
    uint64_t first_ = 0;
    std::size_t i_ = 0;
  };

  RecordIds() = default;
  explicit RecordIds(std::span<const uint64_t> table) : table_(table.data()), size_(table.size()) {}
  RecordIds(uint64_t first, std::size_t count) : first_(first), size_(count) {}

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  uint64_t operator[](std::size_t i) const { return table_ != nullptr ? table_[i] : first_ + i; }
  uint64_t front() const { return (*this)[0]; }
  uint64_t back() const { return (*this)[size_ - 1]; }
  // The ids [offset, offset + count) of these.
  RecordIds subspan(std::size_t offset, std::size_t count) const {
    return table_ != nullptr ? RecordIds(std::span<const uint64_t>(table_ + offset, count))
                             : RecordIds(first_ + offset, count);
  }
  iterator begin() const { return {table_, first_, 0}; }
  iterator end() const { return {table_, first_, size_}; }

 private:
  const uint64_t* table_ = nullptr;  // null: the run first_, first_ + 1, ...
  uint64_t first_ = 0;
  std::size_t size_ = 0;
};

struct DatasetOpenOptions {
  // Also read every record once and compare it with its stored XXH3-64
  // checksum (slow: reads the whole dataset). Off by default; `imgpack verify`
  // does this for a whole dataset, Loader can do it per record as it reads.
  bool verify_checksums = false;
  // What of index.h5 to read into index(); the records always. By default
  // the sample paths and group names are left out, which a training program
  // does not need: index().sample_path and group_names are then empty, and
  // sample_path(), sample_paths() and group_names() read them on first use.
  IndexReadOptions index{.sample_paths = false, .group_names = false};
};

class Dataset {
 public:
  // Opens and validates DIR. Throws imgpack::Error naming the offending file
  // (index.h5 or a shard) and the problem: missing index.h5 ("not a complete
  // imgpack dataset"), a missing or truncated shard, a file that is not an
  // imgpack shard, a shard of another dataset (uuid), a wrong dtype or shape,
  // chunked/compact/virtual/external/unallocated /images, or columns that
  // disagree with the index. Set HDF5_USE_FILE_LOCKING=FALSE on file systems
  // without flock (NFS); the error says so when that is the cause.
  static Dataset open(const std::filesystem::path& dir, const DatasetOpenOptions& options = {});

  Dataset() = default;  // an empty handle; only assignment and destruction are valid

  // DIR as given to open(). Files opened later (shards the read path opens on
  // first use, the paths left out of index()) are opened by the absolute path
  // DIR named then: a change of the working directory does not move them.
  const std::filesystem::path& path() const;
  // The index (samples, records, shards, splits) as read at open(), without
  // the sample paths and group names unless DatasetOpenOptions::index asked
  // for them.
  const DatasetIndex& index() const;
  // The generation of the index open() read: 0 for a dataset as its
  // conversion wrote it, one more for each later append, removal or
  // compaction (DatasetIndex::generation). It never changes for this handle
  // and its copies, whatever is committed to the directory since; a
  // LoaderState names it, and Loader::restore() refuses a state of another.
  uint64_t generation() const { return index().generation; }

  // The source path of sample `s` (< num_samples()) relative to the converted
  // directory; every sample's path; every group's name, by group id. Read from
  // index.h5 on first use (then kept: a format 2 index's strings stay in its
  // mapping, a format 1 index's are copied out), from the very file open()
  // read, never from a later generation: a format 1 index.h5 replaced since
  // (a split, an upgrade) is an imgpack::Error saying to open the dataset
  // again, as is a damaged table. Thread-safe.
  std::string sample_path(uint64_t s) const;
  std::vector<std::string> sample_paths() const;
  std::vector<std::string> group_names() const;

  uint32_t height() const { return index().height; }
  uint32_t width() const { return index().width; }
  uint32_t channels() const { return index().channels; }
  // H * W * C: the bytes of one record.
  std::size_t record_bytes() const;
  std::size_t num_records() const;
  // Rows of the sample table, removed samples included (sample ids are
  // rows); index().num_removed() of them are removed.
  std::size_t num_samples() const;
  std::size_t num_shards() const;

  // The pixels of record `r` (row-major H x W x C uint8), a pointer into the
  // shard's read-only mapping: valid while this Dataset or a copy lives.
  // `r` must be < num_records() (unchecked: this is the hot path).
  const uint8_t* record_data(uint64_t r) const;
  std::span<const uint8_t> record(uint64_t r) const { return {record_data(r), record_bytes()}; }

  // Segmentation masks (index().masks): whether the dataset has them, the
  // bytes of one record's mask (H * W; 0 without masks) and the label of
  // mask areas outside the source image.
  bool has_masks() const { return index().masks; }
  std::size_t mask_bytes() const { return index().mask_bytes(); }
  uint8_t mask_fill() const { return index().mask_fill; }
  // The mask of record `r` (row-major H x W uint8 labels), a pointer into
  // the shard's read-only mapping, valid while this Dataset or a copy lives.
  // Requires has_masks() and r < num_records() (unchecked: the hot path).
  const uint8_t* mask_data(uint64_t r) const;
  std::span<const uint8_t> mask(uint64_t r) const { return {mask_data(r), mask_bytes()}; }

  // Object boxes (index().boxes): whether the dataset has them, and the
  // keypoints per box (K, 0 without keypoints).
  bool has_boxes() const { return index().boxes; }
  std::size_t num_keypoints() const { return index().num_keypoints(); }
  // The boxes of record `r` (format.hpp): size() boxes of x0, y0, x1, y1 in
  // the record's pixels, their class ids (index().box_class_names) and crowd
  // flags, and size() x K x 3 keypoint values (x, y, visibility). Views of
  // tables the Dataset keeps in memory (read and checked against their
  // checksums when the shard was opened), valid while it or a copy lives.
  // Requires has_boxes() and r < num_records() (unchecked). Thread-safe.
  struct BoxRows {
    std::span<const float> boxes;
    std::span<const int32_t> classes;
    std::span<const uint8_t> crowd;
    std::span<const float> keypoints;
    std::size_t size() const { return classes.size(); }
  };
  BoxRows record_boxes(uint64_t r) const;

  // Reads the pixels of record `r` into out[0, record_bytes()) with pread(2)
  // from its shard file instead of through the mapping. For records not in
  // the page cache: one read asks the storage for exactly the record (the
  // file's readahead is advised off), and threads calling it keep that many
  // reads in flight, where faults on the mapping ask for a few pages at a
  // time plus the kernel's readaround. The shard's file is opened on first
  // use and stays open while the Dataset lives. Where the file this Dataset
  // opened is no longer at its path (a later change of the dataset removed
  // it, or put another in its place), the record is copied from the mapping,
  // which still holds that file: the Dataset keeps its view. Thread-safe.
  // Throws imgpack::Error naming the shard file on an open or read error or
  // a short read.
  void read_record(uint64_t r, uint8_t* out) const;
  // Reads the mask of record `r` into out[0, mask_bytes()) the same way.
  // Requires has_masks(). Thread-safe; throws like read_record().
  void read_mask(uint64_t r, uint8_t* out) const;
  // Whether the page cache holds the page in the middle of record `r`
  // (mincore(2) on one page): a cheap test of whether record_data(r) reads
  // from memory or from storage. Pages are cached by the reads that needed
  // them and the readahead around those, so a record whose middle page is
  // cached is most likely cached whole. Thread-safe; false where mincore
  // fails.
  bool record_cached(uint64_t r) const;

  // Per-record metadata (r < num_records(), unchecked).
  uint32_t record_shard(uint64_t r) const;
  int32_t record_label(uint64_t r) const;   // label of the record's source sample, -1 = none
  int64_t record_sample(uint64_t r) const;  // its source sample (sample_path(), labels)
  uint16_t record_variant(uint64_t r) const;
  uint64_t record_checksum(uint64_t r) const;       // XXH3-64 stored in the shard
  uint64_t record_mask_checksum(uint64_t r) const;  // of its mask (0 without masks)

  // Every record, in the order they lie in the files (shard by shard, row by row).
  RecordIds storage_order() const;
  // Position of record `r` in storage_order().
  uint64_t storage_position(uint64_t r) const;
  // The records of source sample `s`, by ascending variant (empty if the
  // sample has no record).
  RecordIds sample_records(uint64_t s) const;

  // Path of shard `k` and the bytes of its mapped /images.
  std::filesystem::path shard_path(std::size_t k) const;
  // For programs that open shard `k` by its path to read it themselves (as
  // read_record() does): throws imgpack::Error naming the path unless `fd`
  // is open on the very file this Dataset opened and mapped as shard `k`. A
  // file put in its place since (a conversion over the dataset, a copy) would
  // otherwise deliver another dataset's bytes under this index's labels.
  // Thread-safe.
  void require_opened_shard(std::size_t k, int fd) const;
  // Whether `fd` is open on that very file: require_opened_shard() without
  // the throw. Thread-safe.
  bool is_opened_shard(std::size_t k, int fd) const;
  std::span<const uint8_t> shard_images(std::size_t k) const;
  // Where shard `k`'s /images starts in its file (a multiple of 4096): record
  // data lies at this offset plus its distance from shard_images(k).data(),
  // for programs that read the files themselves.
  uint64_t shard_images_offset(std::size_t k) const;
  // The bytes of shard k's mapped /masks (empty without masks), and where
  // they start in the file.
  std::span<const uint8_t> shard_masks(std::size_t k) const;
  uint64_t shard_masks_offset(std::size_t k) const;

  // Compares every record (and its mask) with its stored checksum; throws
  // imgpack::Error naming the shard, row and sample of the first mismatch.
  void verify_checksums() const;

  explicit operator bool() const { return state_ != nullptr; }

  struct State;

 private:
  explicit Dataset(std::shared_ptr<const State> state) : state_(std::move(state)) {}
  std::shared_ptr<const State> state_;
};

}  // namespace imgpack
