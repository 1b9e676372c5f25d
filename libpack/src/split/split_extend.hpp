// Extending a stored split to samples appended to its dataset.
//
// A dataset grows by appending: its first old_samples samples keep their ids
// and new ones follow. extend_split() gives every new sample a part of a split
// stored before the growth (a fold 0..k-1 or the test set, -1) and never
// changes the part of an old one, so a model trained on fold f before the
// growth never sees its old validation samples in training after it.
//
// Rules:
//  1. Samples [0, old_samples) keep their assignment exactly, except removed
//     ones, which get kRemovedFold (so does a removed new sample); an old
//     sample already at kRemovedFold stays there and counts as removed.
//  2. When the split keeps groups whole (Split::grouped), a new sample whose
//     group (>= 0) has non-removed old members joins their part; where those
//     members sit in different parts (only a split that did not keep groups
//     whole could do that), the part most of them are in (ties: the lowest
//     assignment value, the test set first), with a warning.
//  3. The other new samples, in units (a new group whole when the split is
//     grouped, else one sample; a sample without a group is a unit of its
//     own), are placed to balance the split. The target share of each part is
//     its share among the old non-removed samples (a split of kind "imported"
//     too); the test set is a part when it holds any of them. A stratified
//     split (Split::stratified) balances each class's count per part towards
//     the class's total after the growth times the part's share (label -1,
//     unlabeled, is one more class; with multi-label rows every label column
//     is balanced as well) and the part sizes with them; another balances
//     the part sizes alone the same way.
//     Units are placed greedily, largest first (equal sizes in an order seeded
//     by Split::seed), each into the part where it lowers
//     split_extension_imbalance() most (ties: the part furthest below its
//     target), then moved one at a time while a move lowers it.
//  4. Never worse than re-running the split's own kind over the new samples
//     alone: the non-forced new samples are also split by compute_split()
//     with the split's spec (kind, folds, seed, fractions; a holdout uses
//     labels and groups as the split did), and that placement is refined by
//     the same single-unit moves (each lowers the measure). Of the two
//     results the one with the lower split_extension_imbalance() over all
//     non-removed samples is returned (ties: the greedy one), so the result
//     is never above the new samples split alone. That candidate is skipped for kind
//     "imported" (no spec), for a kind this build does not know (with a
//     warning) and when compute_split() refuses the new samples (too few for
//     the kind, no labels for a stratified kind).
// When no old sample is left to give the shares (none, or all removed), the
// shares are the spec's: test_fraction for the test set, the rest split
// equally among the folds (holdout: val_fraction for fold 0).
//
// A part whose share is zero (all its old samples removed) gets no new
// samples from the greedy; extend_split() warns about it.
//
// Pure functions, deterministic (the result depends only on the arguments,
// the same on every machine), no I/O; safe to call from many threads at once.
// Internal to libpack.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "imgpack/dataset_index.hpp"
#include "imgpack/format.hpp"
#include "imgpack/split.hpp"

namespace imgpack {

// Assignment value of a removed sample: in no role (not test, not any fold).
// The value splits.h5 stores for it (format.hpp).
inline constexpr int16_t kRemovedFold = format::kRemovedFold;
static_assert(kRemovedFold < format::kTestFold, "a removed sample must be in no part");

struct SplitExtension {
  std::vector<int16_t> assign;        // [S]: fold 0..k-1, -1 = test, kRemovedFold
  std::vector<std::string> warnings;  // e.g. a part that gets no new samples
};

// `split` is a stored split whose assign covers the first old_samples samples
// (split.assign.size() == old_samples). labels/groups (and multi-label rows,
// when given) cover all S >= old_samples samples; `removed` is empty (none
// removed) or S flags, nonzero = removed. Returns the assignment of all S
// samples by the rules above. Throws imgpack::Error naming the split for
// inconsistent inputs: labels, groups, multi-label rows or flags of different
// lengths, old_samples > S, folds outside 1..kMaxFolds, an old assignment
// outside kRemovedFold..folds-1.
SplitExtension extend_split(const Split& split, std::span<const int32_t> labels,
                            std::span<const int32_t> groups, MultilabelRows multilabel,
                            std::span<const uint8_t> removed);

// The balance measure of rule 4, for `assign` (S values, as extend_split
// returns) against `split`'s target shares (rule 3): with n_pc the
// non-removed samples of column c in part p (a part: folds 0..k-1 and the test
// set), N_c the column's total and w_p the part's share,
//   sum over columns c and parts p of |n_pc - w_p N_c|.
// The columns are one that every sample counts in (the part sizes) and, for
// a stratified split, the classes (label -1 one of them) and, with
// multi-label rows, every label column. 0 is perfect balance. A sample is
// left out when assign says kRemovedFold or `removed` flags it. Throws
// imgpack::Error naming the split for lengths that disagree (assign, labels,
// multilabel rows and a non-empty `removed` all cover S samples, split.assign
// at most S) or an assignment outside kRemovedFold..folds-1.
double split_extension_imbalance(const Split& split, std::span<const int16_t> assign,
                                 std::span<const int32_t> labels, MultilabelRows multilabel,
                                 std::span<const uint8_t> removed);

}  // namespace imgpack
