#include "imgpack/selection.hpp"

#include <algorithm>

#include "imgpack/dataset.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "random.hpp"

namespace imgpack {

namespace {

// Stream ids for CounterRng, so that no two uses of one seed share a stream.
constexpr uint64_t kRotateStream = 0x726f74617465ULL;  // "rotate"

}  // namespace

std::vector<int64_t> select_samples(const DatasetIndex& index, const SelectionOptions& options) {
  const auto n = static_cast<int64_t>(index.num_samples());
  std::vector<int64_t> samples;
  if (options.split.empty()) {
    if (options.role != Role::all) {
      throw UsageError("role " + std::string(role_name(options.role)) +
                       " needs a split (SelectionOptions::split)");
    }
    samples.reserve(static_cast<std::size_t>(n) - index.num_removed());
    for (int64_t s = 0; s < n; ++s) {
      if (!index.is_removed(static_cast<std::size_t>(s))) samples.push_back(s);
    }
    return samples;
  }
  const Split* split = index.find_split(options.split);
  if (split == nullptr) {
    std::string known;
    for (const Split& s : index.splits) known += (known.empty() ? "" : ", ") + s.name;
    throw UsageError("no split named '" + options.split + "' in this dataset (" +
                     (known.empty() ? std::string("it has none") : "it has: " + known) + ")");
  }
  if (options.fold < 0 || options.fold >= split->folds) {
    throw UsageError("fold " + std::to_string(options.fold) + " is out of range: split " +
                     split->name + " has folds 0.." + std::to_string(split->folds - 1));
  }
  if (split->kind == "holdout" && options.fold != 0) {
    throw UsageError("split " + split->name + " is a holdout split: use fold 0");
  }
  const int16_t fold = static_cast<int16_t>(options.fold);
  for (int64_t s = 0; s < n; ++s) {
    // A removed sample's assignment is kRemovedFold, in no role; role `all`
    // (every sample, as without a split) must leave it out as well.
    if (index.is_removed(static_cast<std::size_t>(s))) continue;
    const int16_t a = split->assign[static_cast<std::size_t>(s)];
    bool take = false;
    switch (options.role) {
      case Role::all:
        take = true;
        break;
      case Role::train:
        take = a >= 0 && a != fold;
        break;
      case Role::val:
        take = a == fold;
        break;
      case Role::test:
        take = a == format::kTestFold;
        break;
    }
    if (take) samples.push_back(s);
  }
  return samples;
}

VariantPolicy resolve_variant_policy(VariantPolicy policy, Role role) {
  if (policy != VariantPolicy::automatic) return policy;
  return role == Role::train ? VariantPolicy::rotate : VariantPolicy::clean;
}

std::vector<uint64_t> epoch_records(const Dataset& dataset, std::span<const int64_t> samples,
                                    VariantPolicy policy, uint64_t seed, uint64_t epoch) {
  if (policy == VariantPolicy::automatic) policy = VariantPolicy::clean;
  // Mark the chosen records, then collect them in storage order: O(records),
  // no sort, and the result does not depend on the order of `samples`.
  std::vector<uint8_t> chosen(dataset.num_records(), 0);
  std::size_t count = 0;
  for (int64_t s : samples) {
    if (s < 0 || static_cast<uint64_t>(s) >= dataset.num_samples()) {
      throw UsageError("sample " + std::to_string(s) + " is not in the dataset (it has " +
                       std::to_string(dataset.num_samples()) + " samples)");
    }
    const RecordIds records = dataset.sample_records(static_cast<uint64_t>(s));
    if (records.empty()) continue;
    switch (policy) {
      case VariantPolicy::automatic:
      case VariantPolicy::clean: {
        // The records are sorted by variant: the first is the clean one when it exists.
        chosen[records[0]] = 1;
        ++count;
        break;
      }
      case VariantPolicy::rotate: {
        std::size_t first_augmented = 0;
        while (first_augmented < records.size() &&
               dataset.record_variant(records[first_augmented]) == 0) {
          ++first_augmented;
        }
        const std::size_t m = records.size() - first_augmented;
        if (m == 0) {
          chosen[records[0]] = 1;
        } else {
          CounterRng rng(seed, kRotateStream, static_cast<uint64_t>(s));
          const uint64_t start = rng.below(m);
          chosen[records[first_augmented + (start + epoch) % m]] = 1;
        }
        ++count;
        break;
      }
      case VariantPolicy::all: {
        for (uint64_t r : records) chosen[r] = 1;
        count += records.size();
        break;
      }
    }
  }
  std::vector<uint64_t> out;
  out.reserve(count);
  for (uint64_t r : dataset.storage_order()) {
    if (chosen[r]) out.push_back(r);
  }
  return out;
}

}  // namespace imgpack
