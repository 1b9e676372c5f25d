// Which records an epoch reads: a split/fold/role picks source samples, a
// variant policy picks, per epoch, which stored variants of them are read.
//
// Splits are per source sample (DatasetIndex::splits). For a split with k
// folds, role `val` of fold f is assign == f, role `train` is assign >= 0 &&
// assign != f, role `test` is assign == -1, role `all` is every sample
// (no split needed). A holdout split is used through fold 0 only. A removed
// sample (DatasetIndex::is_removed(); its assignment is kRemovedFold, -2) is
// in no role, `all` included.
//
// Everything here is a pure function of its arguments and safe to call from
// any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "imgpack/dataset_index.hpp"

namespace imgpack {

class Dataset;

enum class Role { all, train, val, test };

enum class VariantPolicy {
  // train: rotate; val, test, all: clean.
  automatic,
  // Variant 0 (the clean, resized-only image) of every sample.
  clean,
  // One augmented variant (1..K-1) of every sample per epoch, rotating across
  // epochs so that each of a sample's m augmented variants is read once every
  // m epochs (from a per-sample starting point derived from the seed). A
  // sample without augmented variants reads variant 0.
  rotate,
  // Every stored variant as a sample of its own (K records per sample per epoch).
  all,
};

struct SelectionOptions {
  std::string split;  // empty: no split (role must be `all`)
  int32_t fold = 0;
  Role role = Role::all;
  VariantPolicy variants = VariantPolicy::automatic;
};

// The source samples (ascending) that `options` selects, never a removed
// one. Throws
// imgpack::UsageError for an unknown split (listing the ones that exist), a
// fold out of range, a role other than `all` without a split, or a fold other
// than 0 of a holdout split.
std::vector<int64_t> select_samples(const DatasetIndex& index, const SelectionOptions& options);

// The policy `automatic` stands for with `role`.
VariantPolicy resolve_variant_policy(VariantPolicy policy, Role role);

// The records that epoch `epoch` reads for the selected `samples`, in storage
// order (the order of Dataset::storage_order()). `seed` only affects the
// per-sample starting point of `rotate`. Samples without records contribute nothing;
// a sample id outside the dataset (negative, or num_samples() or more) is an
// imgpack::UsageError naming it.
std::vector<uint64_t> epoch_records(const Dataset& dataset, std::span<const int64_t> samples,
                                    VariantPolicy policy, uint64_t seed, uint64_t epoch);

// "train" -> Role::train, ... Throws imgpack::UsageError.
Role parse_role(std::string_view text);
std::string_view role_name(Role role);
// "auto", "clean", "rotate", "all". Throws imgpack::UsageError.
VariantPolicy parse_variant_policy(std::string_view text);
std::string_view variant_policy_name(VariantPolicy policy);

}  // namespace imgpack
