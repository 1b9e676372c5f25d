// The local search of iterative_stratification() (multilabel_split.hpp;
// internal to imgpack::pack): the units a split is made of (samples, or
// groups, with their label counts) and the moves and swaps of units between
// parts that follow the greedy pass, lowering the Label Distribution measure
// (LD) within a bound on the Examples Distribution (ED). Every part's summed
// LD terms, at its size and at each size a tried move gave it (up to 256),
// are kept and updated by the moved units' labels when units move, and
// computed afresh at every pass, so trying a move costs the moved units'
// labels rather than all L labels, and so does making one. Pure functions of
// their arguments (the seed included); safe to call from many threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace imgpack::detail {

// A change must lower the summed LD terms by more than this to count as a
// gain; LDs closer than this are ties.
inline constexpr double kMinLabelGain = 1e-12;

// A ratio of positives to negatives, 0 without negatives.
inline double label_ratio(int64_t positives, int64_t size) {
  const int64_t negatives = size - positives;
  return negatives == 0 ? 0.0 : static_cast<double>(positives) / static_cast<double>(negatives);
}

// The units of a split (samples, or groups) with their label counts.
struct LabelUnits {
  std::vector<int32_t> of_sample;    // per sample
  std::vector<int64_t> size;         // per unit: its samples
  std::vector<std::size_t> begin;    // per unit + 1: its labels in label/count
  std::vector<int32_t> label;        // ascending within a unit
  std::vector<int64_t> count;        // samples of the unit with the label (> 0)
  std::vector<int64_t> label_total;  // per label: samples with it
  int64_t samples = 0;

  std::size_t units() const { return size.size(); }
};

// The summed LD terms (L k times LD) and ED terms (k times ED) of a partition.
struct LabelTerms {
  double label = 0;
  double size = 0;
};

// Improves `part` (the part 0..fractions.size()-1 of every unit, as the greedy
// pass left it) in place with the local search that multilabel_split.hpp
// describes, its random choices drawn from `seed` and `start` (the index of
// the greedy start). Returns the terms of the partition it leaves.
LabelTerms search_label_parts(const LabelUnits& units, std::span<const double> fractions,
                              std::vector<int32_t>& part, uint64_t seed, uint64_t start);

}  // namespace imgpack::detail
