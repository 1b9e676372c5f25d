// Group-aware splits for compute_split() (split.hpp): group and
// stratified-group k-folds, grouped holdouts and test sets. The groups become
// items with class histograms (item_partition.hpp), partitioned from
// scikit-learn's own result (split_sklearn.hpp) where there is a promise
// against it to keep. Internal to libpack; pure functions, safe to call from
// many threads at once.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "imgpack/split.hpp"

namespace imgpack::detail {

// Class or group ids renumbered 0, 1, ... by first appearance.
struct Ids {
  std::vector<int32_t> of;        // per sample
  std::vector<int32_t> original;  // per new id: the id it replaced (-1 for negatives)
  int32_t count() const { return static_cast<int32_t>(original.size()); }
};

// Renumbers ids by first appearance, so that nothing downstream depends on
// how classes or groups were numbered beyond their order (which scikit-learn's
// splitters see, and so the replay of theirs). Negative ids are one shared id,
// or with `negatives_alone` each its own.
Ids canonical_ids(std::span<const int32_t> ids, bool negatives_alone);

// The part of every sample (fold, or -1 for the test set) with groups kept
// whole: classes are balanced when `stratify`. The spec is valid and the
// groups can meet it as far as compute_split() checks; throws UsageError for
// what only the group sizes reveal (too few groups left after --test).
std::vector<int16_t> split_groups(const SplitSpec& spec, bool stratify, const Ids& classes,
                                  const Ids& groups);

}  // namespace imgpack::detail
