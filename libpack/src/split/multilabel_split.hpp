// Multi-label splits: iterative stratification (Sechidis, Tsoumakas &
// Vlahavas, "On the Stratification of Multi-Label Data", ECML PKDD 2011, the
// algorithm behind scikit-multilearn's IterativeStratification) with an
// optional grouping, followed by a bounded local search, and the paper's two
// measures of a partition. Samples carry any number of labels, so no single
// class id can be stratified as compute_split() (split.hpp) does.
//
// Internal to libpack. Pure functions of their arguments (the seed included),
// the same on every machine; safe to call from many threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace imgpack {

// The labels of S samples out of `columns` labels, by sample (compressed
// rows): sample i has the labels label[begin[i]] .. label[begin[i + 1] - 1],
// each below `columns`, ascending. What it costs is the labels the samples
// have, not S x columns: thousands of classes over millions of samples fit.
struct LabelRows {
  std::vector<std::size_t> begin{0};  // S + 1 offsets into `label`
  std::vector<int32_t> label;
  std::size_t columns = 0;

  std::size_t rows() const { return begin.size() - 1; }
  // Ends the current sample's row: the labels added since the last call.
  void end_row() { begin.push_back(label.size()); }
  // From an S x columns row-major matrix whose nonzero values mark the labels
  // a sample has. Throws UsageError where its size is not a multiple of columns.
  static LabelRows from_dense(std::span<const uint8_t> values, std::size_t columns);
};

// Assigns every sample to one of fractions.size() parts, part j receiving
// about fractions[j] of the samples, so that every label's samples are spread
// over the parts in the same proportions. Returns the part of every sample.
//
// Units are the samples, or with `groups` (one id per sample; negative = a
// group of its own; empty = no groups) the groups: a group goes whole to one
// part, its label counts are the sums over its samples and its size is its
// number of samples.
//
// The greedy pass is the paper's Algorithm 1 over units: desired counts per
// part and label c[j][l] = D_l * r_j and desired sizes c[j] = |D| * r_j;
// repeatedly the label with the fewest samples still unassigned (ties: a
// seeded random order of the labels) gives each of its unassigned units, in
// order of first sample, to the part with the largest desired count for that label
// (ties: the largest desired size, then seeded random), which decreases by
// the unit's label counts and size. Units without any label go last, largest
// first, to the part with the largest desired size (ties: seeded random).
//
// A local search then lowers the Label Distribution measure (LD,
// multilabel_quality) within a bound on the Examples Distribution (ED). With
// s the largest unit's size and E the least ED any partition reaches (the
// desired sizes rounded), the bound is the greedy's ED, but at least one
// unit's move from E (E + 2s/k) and at most one unit's size above it
// (E + s): a part left empty gets a unit, units move from parts too large
// to parts too small until ED is within the bound (the moves costing the
// least LD first), then passes over the units (in a seeded order) move a
// unit to the part, or else swap it with the unit elsewhere (every one up to
// 256 units, else a few seeded random ones), that lowers LD the most while
// ED stays within the bound, taking too any move that lowers ED without
// raising LD. At most 12 passes, fewer once a pass gains under 0.5%. Without
// groups ED always ends within the bound (single moves reach E); with
// groups, where whole groups allow.
//
// The greedy pass and the search run from 4 seeded starts up to 10,000
// units, fewer above, one above 20,000, and the lowest LD is kept (ties:
// lower ED). Cost: O(S + nnz) to read the labels, then per start O(nnz log nnz) for
// the greedy and O(passes x units x (k + swap partners) x labels per unit)
// for the search, plus O(L) for each part size a pass tries first (two
// per part where units are single samples, a few tens with groups of ten).
//
// Throws UsageError for empty or negative fractions, fractions not summing to
// 1 within 1e-9, label rows that are not as LabelRows describes, or groups of
// another length than the samples.
std::vector<int32_t> iterative_stratification(const LabelRows& labels,
                                              std::span<const int32_t> groups,
                                              std::span<const double> fractions, uint64_t seed);

// The paper's measures of a partition of the samples of `labels` (parts: one
// part id 0..k-1 per sample) against the desired fractions (k of them):
//   Label Distribution LD = (1/L) sum_l (1/k) sum_j
//       | S_j^l / (|S_j| - S_j^l) - D^l / (|D| - D^l) |,
//   a ratio whose denominator is 0 (a part or the whole without a sample
//   lacking the label) counting as 0;
//   Examples Distribution ED = (1/k) sum_j | |S_j| - |D| r_j |.
// Both are 0 for a perfect split; LD is 0 without labels. Throws UsageError
// for parts of another length than the samples, a part id outside 0..k-1 or
// fractions as iterative_stratification().
struct MultilabelQuality {
  double label_distribution = 0;
  double examples_distribution = 0;
};
MultilabelQuality multilabel_quality(const LabelRows& labels, std::span<const int32_t> parts,
                                     std::span<const double> fractions);

}  // namespace imgpack
