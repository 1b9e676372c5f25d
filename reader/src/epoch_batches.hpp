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
// That is what makes resumption exact and elastic: after k steps the ranks
// have consumed positions [0, k*G) whatever W was, so W' ranks with batch
// G / W' continue the epoch from their own batch k (see LoaderState).
//
// Every function here is pure and safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "imgpack/epoch_order.hpp"
#include "imgpack/loader.hpp"

namespace imgpack::detail {

// Batches and images per epoch of a rank holding `rank_records` records.
std::size_t batches_per_epoch(std::size_t rank_records, std::size_t batch_size, LastBatch last);
std::size_t images_per_epoch(std::size_t rank_records, std::size_t batch_size, LastBatch last);

// Everything one epoch delivers, fixed when the epoch starts.
struct EpochBatches {
  uint64_t epoch = 0;
  std::size_t batch_size = 0;
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

// Positions of an epoch of `epoch_positions` consumed once every rank has
// been delivered `delivered` of its `batches` batches: delivered * global_batch,
// or the whole epoch once the last batch is out (the policies' dropped tail
// included).
uint64_t consumed_positions(std::size_t delivered, std::size_t batches, uint64_t global_batch,
                            uint64_t epoch_positions);

// The batch to continue from after `consumed` positions (consumed_positions()
// of any world size with the same global batch): `batches` when the epoch is
// done. Throws imgpack::Error for a count no step ends at (not a multiple of
// the global batch, past the epoch).
std::size_t resume_batch(uint64_t consumed, std::size_t batches, uint64_t global_batch,
                         uint64_t epoch_positions);

// Throws imgpack::UsageError saying why when `order` cut into batches as
// `options` says gives no batch per epoch (every rank has as many batches):
// an empty selection, more ranks than records with RankPolicy::drop, or a
// batch larger than a rank's records with LastBatch::drop.
void require_batches(const EpochOrder& order, const LoaderOptions& options);

}  // namespace imgpack::detail
