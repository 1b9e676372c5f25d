// How often each label occurs in a dataset's segmentation masks: what
// `imgpack inspect` shows, and what a training program needs for class
// weights of its loss (rare labels weighted up) or to spot a label no mask
// holds.
//
// count_mask_labels() reads the clean mask (variant 0) of every sample
// (removed samples aside),
// through the dataset's mappings (so at memory speed when the page cache
// holds them), or an evenly spaced subset of the samples when their masks
// are more than `max_bytes`. A pure function of the dataset and the
// options; safe to call from several threads at once. MaskLabelCounts is a
// plain value.
#pragma once

#include <array>
#include <cstdint>

#include "imgpack/dataset.hpp"

namespace imgpack {

struct MaskLabelCounts {
  std::array<uint64_t, 256> pixels{};  // pixels holding each label
  std::array<uint64_t, 256> masks{};   // masks holding each label at least once
  uint64_t masks_counted = 0;          // clean masks counted
  uint64_t masks_total = 0;            // samples with a clean record, removed ones aside

  uint64_t pixels_counted() const;
  // The share of counted pixels holding `label` (0 when nothing was counted).
  double fraction(uint8_t label) const;
};

// Counts the labels of the dataset's clean masks, all of them when they
// hold at most `max_bytes`, else every k-th sample's so that at most that
// many bytes are read. Throws imgpack::UsageError for a dataset without
// masks; imgpack::Error naming the shard and row for a shard truncated or
// rewritten in place since the dataset was opened (the read of its mapping
// faults: an error, not SIGBUS).
MaskLabelCounts count_mask_labels(const Dataset& dataset, uint64_t max_bytes = uint64_t{1} << 30);

}  // namespace imgpack
