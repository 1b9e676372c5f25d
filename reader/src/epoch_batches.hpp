// How one rank's records of an epoch are cut into batches: pure arithmetic
// beside EpochOrder (internal to the reader).
//
// A rank with m records and batch size b has, per LastBatch policy:
//   drop     floor(m / b) batches, floor(m / b) * b images (the rest is not read)
//   partial  ceil(m / b) batches, m images (the last batch short)
//   pad      ceil(m / b) batches, ceil(m / b) * b images (the last batch filled
//            by repeating the epoch's first records)
//
// Over W ranks with batch size b each, step k (batch k on every rank) covers
// positions [k*G, (k+1)*G) of the epoch's global order, G = b*W the global
// batch: rank r's entries are positions r, r + W, r + 2W, ... (EpochOrder).
// After k steps the ranks have consumed positions [0, c), c = k*G, whatever
// W was. That is what makes resumption exact and elastic: W' ranks with any
// batch size b' continue the epoch by dealing the positions [c, N) as an
// epoch is dealt, rank r taking c + r, c + r + W', ... (make_resumed_batches).
// Where c is a step of the new global batch G' = b'*W' (always, when G' = G)
// that is exactly the uninterrupted epoch of W' ranks from its batch c / G'
// on; elsewhere it is the rest of the epoch re-dealt, each remaining
// position once over the new ranks.
//
// Every function here is pure and safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "imgpack/epoch_order.hpp"
#include "imgpack/loader.hpp"

namespace imgpack::detail {

// Batches and images per epoch of a rank holding `rank_records` records.
std::size_t batches_per_epoch(std::size_t rank_records, std::size_t batch_size, LastBatch last);
std::size_t images_per_epoch(std::size_t rank_records, std::size_t batch_size, LastBatch last);

// Everything one epoch delivers, fixed when the epoch starts: the whole
// epoch, or its rest after a resume.
struct EpochBatches {
  uint64_t epoch = 0;
  std::size_t batch_size = 0;
  // Where batch 0 starts: the first global position of its step (0, or the
  // positions consumed before a resume), and its Batch::index().
  uint64_t first_position = 0;
  std::size_t first_index = 0;
  // The record at every position of every batch, last-batch padding included:
  // images_per_epoch() entries.
  std::vector<uint64_t> entries;
  std::size_t batches = 0;
  // Entries at or after this index repeat records of the epoch (rank padding
  // and last-batch padding).
  std::size_t pad_from = 0;

  // First entry of batch `b`, and the entries it holds.
  std::size_t begin(std::size_t b) const { return b * batch_size; }
  std::size_t size(std::size_t b) const;
  // How many of batch `b`'s entries are padding.
  std::size_t padding(std::size_t b) const;
};

// Cuts one rank's plan of an epoch into batches.
EpochBatches make_epoch_batches(EpochPlan plan, std::size_t batch_size, LastBatch last);

// The rest of an epoch after `first` of its positions were consumed, for
// rank `rank` of `world` with `batch_size`, as the epoch itself is dealt and
// cut (EpochOrder, make_epoch_batches()) but over the positions [first, N) of
// `global`, the epoch's global order (N = global.size() > 0): the rank's
// entries are positions first + rank, first + rank + world, ...; with
// RankPolicy::pad every rank takes ceil((N - first) / world) of them, those
// past the end wrapping to the start of the order (padding), with drop
// floor((N - first) / world). LastBatch::pad fills the last batch with the
// first records the rank reads in an uninterrupted epoch. Batch 0's index is
// first / (batch_size * world). make_resumed_batches(..., 0, ...) is the
// whole epoch; with `first` a multiple of batch_size * world, it is the
// whole epoch's batches from first / (batch_size * world) on, entry for entry.
struct RankLayout {
  uint32_t rank = 0;
  uint32_t world = 1;
  RankPolicy policy = RankPolicy::pad;
};
EpochBatches make_resumed_batches(uint64_t epoch, std::span<const uint64_t> global, uint64_t first,
                                  RankLayout layout, std::size_t batch_size, LastBatch last);

// Positions of the epoch consumed once `delivered` of the batches of `work`
// (with `global_batch` = batch_size x world size) have been delivered:
// work.first_position + delivered * global_batch, or the whole epoch
// (`epoch_positions`) once its last batch is out (the policies' dropped tail
// included).
uint64_t consumed_positions(const EpochBatches& work, std::size_t delivered, uint64_t global_batch,
                            uint64_t epoch_positions);

// Throws imgpack::UsageError saying why when `order` cut into batches as
// `options` says gives no batch per epoch (every rank has as many batches):
// an empty selection, more ranks than records with RankPolicy::drop, or a
// batch larger than a rank's records with LastBatch::drop.
void require_batches(const EpochOrder& order, const LoaderOptions& options);

}  // namespace imgpack::detail
