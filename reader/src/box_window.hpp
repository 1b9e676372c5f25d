// A record's boxes through the online crop and flip, and a batch's boxes as
// one block (internal to the reader).
//
// The window a batch delivers of a record (RecordWindow) moves its boxes the
// way it moves its pixels: shifted by the window's corner, clipped to the
// window, mirrored with it. A box keeps its place when at least
// DatasetIndex::box_min_visible of its stored area stays inside the window;
// a keypoint outside the window (edges included: [0, W] x [0, H]) becomes (0, 0, 0), and under one
// mirror (not two) each keypoint swaps with its flip partner. Coordinates are continuous pixels: a
// W-pixel window spans [0, W).
//
// A batch's boxes are written once, by the reader threads, straight into the
// block a Batch shows: the block is laid out from the records' stored box
// counts (the shards' offsets tables) before any of the batch is filled, so
// each entry knows where its rows go without waiting for the others. A window
// can only drop rows, never add them; the gaps dropped rows leave are closed
// once the batch is filled (no copy at all without a crop or flip).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "imgpack/dataset.hpp"
#include "imgpack/loader.hpp"
#include "imgpack/record_shape.hpp"
#include "record_window.hpp"

namespace imgpack::detail {

// How a loader keeps boxes: the dataset's rule and keypoint pairs.
struct BoxWindowRules {
  double min_visible = 0.3;
  std::span<const int32_t> keypoint_flip;  // [K]
};

// Where one record's rows go (format.hpp's columns): room for at least as
// many rows as the record stores.
struct BoxRowsTarget {
  float* boxes = nullptr;      // [rows x 4]
  int32_t* classes = nullptr;  // [rows]
  uint8_t* crowd = nullptr;    // [rows]
  float* keypoints = nullptr;  // [rows x K x 3], K = rules' keypoint_flip.size()
};

// `rows` (a record of shape `stored`) as the window of shape `delivered`
// shows them, written to the first rows of `out` (room for rows.size());
// returns how many rows it kept. Pure; thread-safe for distinct `out`.
std::size_t window_boxes(const Dataset::BoxRows& rows, RecordShape stored, RecordShape delivered,
                         const RecordWindow& window, const BoxWindowRules& rules,
                         const BoxRowsTarget& out);

// Asks the CPU to bring `rows` into its caches ahead of window_boxes(), so
// that the cache misses of several records' rows overlap.
void prefetch_boxes(const Dataset::BoxRows& rows);

// How many boxes each record of a dataset stores, read once from its shards'
// offsets tables (4 bytes a record), so that laying out a batch reads one
// small table instead of a chain of lookups per record. Immutable once
// made; thread-safe.
class BoxCounts {
 public:
  BoxCounts() = default;
  // Throws imgpack::Error for a record of 2^32 boxes or more.
  explicit BoxCounts(const Dataset& dataset);
  // Requires record < dataset.num_records() (unchecked).
  std::size_t operator[](uint64_t record) const { return counts_[record]; }

 private:
  std::vector<uint32_t> counts_;
};

// The boxes of one batch as one block (a slot's, reused batch after batch):
// entry i's rows at block().offsets[i] .. [i + 1]. Used in three steps:
// lay_out() by one thread before the batch is filled; place() by the reader
// threads, each entry by one thread, any number of threads at once on
// distinct entries; close_gaps() by one thread once every entry is placed.
// The steps must be ordered by the caller (the ring's lock does).
class BatchBoxes {
 public:
  BatchBoxes() = default;
  // A block for batches of up to `entries` images with `keypoints_per_box`
  // keypoints per box (K). Its pointers are never null, even for a batch
  // without a box (DLPack and numpy views need an address).
  BatchBoxes(std::size_t entries, std::size_t keypoints_per_box);

  // Makes room for the boxes of `records` (one per entry, in order), each
  // with its `counts` stored rows: entry i's rows start after the stored
  // rows of the entries before it. Grows the block when the batch holds more
  // boxes than any before (never shrinks it); allocates nothing otherwise.
  // Requires records.size() <= entries. Cheap (a pass over `counts`): the
  // batch's other entries wait for it.
  void lay_out(const BoxCounts& counts, std::span<const uint64_t> records);

  // Asks the CPU to bring where the rows of entries [begin, end) go into its
  // caches, for writing.
  void prefetch_for_writing(std::size_t begin, std::size_t end);

  // Writes the rows of entry `i` (`rows`, of the count it was laid out
  // with) as `window` shows them (window_boxes()).
  void place(std::size_t i, const Dataset::BoxRows& rows, RecordShape stored, RecordShape delivered,
             const RecordWindow& window, const BoxWindowRules& rules);

  // Moves the rows the first `entries` entries kept next to each other and
  // sets the offsets to match; moves nothing where every entry kept all its
  // stored rows (without a crop or flip none is dropped).
  void close_gaps(std::size_t entries);

  // What a Batch of the first `entries` entries shows (after close_gaps()).
  BoxBlock block(std::size_t entries) const;

  // Rows the block has room for (tests).
  std::size_t capacity() const { return capacity_; }

 private:
  BoxRowsTarget target(std::size_t first_row);
  void reserve(std::size_t rows);

  std::size_t keypoints_per_box_ = 0;  // K
  std::size_t capacity_ = 0;           // rows
  std::unique_ptr<float[]> boxes_;     // [capacity x 4]
  std::unique_ptr<int32_t[]> classes_;
  std::unique_ptr<uint8_t[]> crowd_;
  std::unique_ptr<float[]> keypoints_;  // [capacity x K x 3], at least one value
  std::vector<int64_t> offsets_;        // [entries + 1]: where each entry's rows start
  std::vector<std::size_t> kept_;       // [entries]: the rows each entry kept
};

}  // namespace imgpack::detail
