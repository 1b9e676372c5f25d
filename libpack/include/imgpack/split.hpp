// Cross-validation splits of a dataset's source samples.
//
// compute_split() assigns every source sample to a validation fold 0..k-1 or
// to the test set (-1), as index.h5's /splits/NAME/assign stores it: role
// `val` of fold f is assign == f, `train` is assign >= 0 && assign != f,
// `test` is assign == -1; a holdout split has two folds, 0 = validation and
// 1 = train, so fold 0 works for every kind. Splits are per source sample, so
// every augmented variant of an image lands with its original.
//
// Kinds:
//   random            shuffled k-fold (scikit-learn KFold(shuffle=True)); fold
//                     sizes differ by at most one sample.
//   stratified        k-fold keeping class proportions (StratifiedKFold): fold
//                     sizes and every class's count per fold differ by at most one.
//   group             k-fold keeping every group whole (GroupKFold): fold sizes
//                     as equal as the groups allow, then class balance. The
//                     fold-size spread (largest minus smallest fold) is never
//                     above GroupKFold's on the same groups.
//   stratified-group  groups whole and class proportions close
//                     (StratifiedGroupKFold), sizes close. Never worse than
//                     StratifiedGroupKFold(shuffle=False) on the same labels and
//                     groups: its own criterion (the mean over classes of the
//                     standard deviation over folds of the class's share in the
//                     fold, as numpy computes it) is at most scikit-learn's, and
//                     so is the fold-size spread. (scikit-learn's greedy is
//                     replayed exactly and the search starts from its result;
//                     ungrouped samples, which scikit-learn would lump into one
//                     group, are replayed as groups of their own; inputs where
//                     the replay would cost more than about a second, hundreds
//                     of folds over thousands of classes and tens of thousands
//                     of groups, go without it.)
//   holdout           one validation part of val_fraction of the samples;
//                     stratified when the samples have labels and groups kept
//                     whole when they have groups, unless told otherwise.
// A test fraction is carved first, the same way as the kind splits (stratified
// and/or group-aware), and belongs to no fold; the promises above then hold
// for the samples left.
//
// Unlabeled samples (label -1) are balanced like one more class; ungrouped
// samples (group -1) are groups of their own.
//
// Multi-label data (MultilabelRows given: DatasetIndex::sample_multilabel):
// the stratified kinds (stratified, stratified-group, holdout with labels)
// balance every label's share across the parts instead, the multi-label
// classes and, where samples have one, the class, by iterative stratification
// (Sechidis, Tsoumakas & Vlahavas 2011, the algorithm of scikit-multilearn's
// IterativeStratification) followed by a local search that lowers the paper's
// Label Distribution measure; groups stay whole in stratified-group (and
// holdout with groups). The per-class promises above are then replaced by that
// balance; random and group ignore the multi-label classes.
//
// Determinism: the assignment is a pure function of the labels, the groups and
// the spec (seed included), the same on every machine. Renumbering classes or
// groups leaves it unchanged: any one-to-one change of ids for random,
// stratified, group and holdout, an order-preserving one for stratified-group
// (whose promise is against scikit-learn, which orders groups and classes by
// id). Cost is near linear in the number of samples (plus, for
// stratified-group, scikit-learn's greedy: groups x folds x classes). All
// functions here are pure: no I/O, safe to call from many threads at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "imgpack/dataset_index.hpp"

namespace imgpack {

enum class SplitKind { random, stratified, group, stratified_group, holdout };

// "random", "stratified", "group", "stratified-group", "holdout".
const char* split_kind_name(SplitKind kind);
// The inverse; throws UsageError listing the kinds for anything else.
SplitKind parse_split_kind(std::string_view name);

// Most folds a split may have (assign is int16).
inline constexpr int32_t kMaxFolds = 32767;

struct SplitSpec {
  SplitKind kind = SplitKind::stratified;
  int32_t folds = 5;         // k-fold kinds: 2..kMaxFolds; holdout stores 2
  double val_fraction = 0;   // holdout only, of all samples: (0, 1)
  double test_fraction = 0;  // of all samples: [0, 1); val + test < 1
  uint64_t seed = 0;
  bool use_labels = true;  // holdout: stratify when the samples have labels
  bool use_groups = true;  // holdout: keep groups whole when the samples have groups

  // The number of folds stored with the split (2 for holdout).
  int32_t stored_folds() const { return kind == SplitKind::holdout ? 2 : folds; }
  // Throws UsageError naming the first option out of range.
  void validate() const;
};

struct SplitResult {
  std::vector<int16_t> assign;        // per sample: fold 0..k-1, or -1 = test
  std::vector<std::string> warnings;  // e.g. classes with fewer members than folds
  bool stratified = false;            // class proportions were balanced across the parts
  bool grouped = false;               // every group sits in one part
};

// Multi-label classes per sample: S rows of `classes` entries, row-major,
// nonzero where the sample has the class (as DatasetIndex::sample_multilabel).
// Empty (classes 0) for single-label data.
struct MultilabelRows {
  std::span<const uint8_t> values;
  std::size_t classes = 0;
};

// Splits samples with the given labels (-1 = unlabeled) and groups (-1 = none),
// both of the same length (and `multilabel`, when given, of as many rows). Throws UsageError when
// the request cannot be met: invalid spec, no samples, a group kind without groups or with fewer
// groups than folds, a stratified kind without labels or with more folds than members of every
// class, a fraction that leaves a part empty. `class_names`, when given, only makes warnings name
// classes instead of ids.
SplitResult compute_split(std::span<const int32_t> labels, std::span<const int32_t> groups,
                          const SplitSpec& spec, std::span<const std::string> class_names = {},
                          MultilabelRows multilabel = {});

// Split names are HDF5 group names inside /splits: 1..128 characters of
// letters, digits, '_', '-' and '.', not starting with '.'. Throws UsageError.
void check_split_name(const std::string& name);

// Computes the split of `index`'s samples (their multi-label classes too,
// where the index has them) and returns it as a Split record
// named `name` with the spec's attributes and `created` (ISO 8601, or empty).
// Warnings are appended to *warnings when given. Removed samples
// (DatasetIndex::sample_removed) are in no part: the split is computed over
// the others and gives them format::kRemovedFold. Throws as compute_split.
Split make_split(const DatasetIndex& index, const std::string& name, const SplitSpec& spec,
                 const std::string& created, std::vector<std::string>* warnings = nullptr);

// The Split record named `name` holding `result`, the assignment that
// compute_split() made with `spec`, with the spec's attributes and `created`.
Split named_split(const std::string& name, const SplitSpec& spec, SplitResult result,
                  const std::string& created);

// Adds `split` to index.splits (kept in name order), replacing one of the same
// name only when `replace`; otherwise throws UsageError naming it.
void store_split(DatasetIndex& index, Split split, bool replace);

// A split made elsewhere (another tool, a competition's folds), read from a
// CSV file with a header and one row per source sample: the column `path`
// names the sample as index.h5 does (relative to the converted folder), the
// column `fold` gives its fold, 0..k-1, or -1 for the test set. That is what
// `imgpack split --export` writes, so an export imports back unchanged. k is
// one more than the largest fold; every fold 0..k-1 must hold a sample and k
// must be at least 2. The Split is named `name`, of kind "imported" (neither
// stratified nor grouped by construction: split_quality() says how it is),
// with seed 0 and `created` (ISO 8601, or empty). Removed samples need no
// row (an export leaves them out) and are in no part (format::kRemovedFold).
// Throws UsageError naming the file and line for a path that is not a sample
// of `index`, a sample given twice or a fold that is not an integer in
// -1..kMaxFolds-1; naming the file for a missing column, samples without a
// row (their count and the first), an empty fold or fewer than two folds.
inline constexpr const char* kImportedSplitKind = "imported";
struct SplitImport {
  std::string path = "path";  // the column naming each sample
  std::string fold = "fold";  // the column giving its fold
};
Split import_split(const DatasetIndex& index, const std::filesystem::path& csv,
                   const SplitImport& columns, const std::string& name, const std::string& created);

// A split of an earlier generation of `index` (an export made before samples
// were appended), read as import_split() reads one, and extended over the
// samples added since as an append extends a stored split: every sample the
// file lists keeps its fold (a removed one is in no part), and the samples
// after the last one it lists are placed to balance the parts' sizes, their
// classes where the samples have labels, and with groups kept whole where
// the file keeps them whole (a new sample of such a group joins its part).
// The result is of kind "imported", as import_split() makes it. Throws
// UsageError as import_split() does, except that only the samples up to the
// last listed one need a row.
struct ExtendedImport {
  Split split;
  uint64_t listed = 0;  // samples up to the last listed one, removed ones included
  uint64_t placed = 0;  // samples after it, placed by the extension
  std::vector<std::string> warnings;
};
ExtendedImport import_split_extended(const DatasetIndex& index, const std::filesystem::path& csv,
                                     const SplitImport& columns, const std::string& name,
                                     const std::string& created);

// A split requested as "NAME:KIND:K" (convert --split): K folds, or for
// holdout the validation fraction ("val:holdout:0.2"). Throws UsageError.
struct NamedSplitSpec {
  std::string name;
  SplitSpec spec;
};
NamedSplitSpec parse_split_option(const std::string& text, uint64_t seed);

// Quality of a stored assignment, computed from the assignment alone.
struct FoldStats {
  int32_t fold = 0;  // -1 for the test set
  int64_t size = 0;  // samples in the part (its validation samples for a fold)
  // Absolute deviation of the part's class proportions (among its labeled
  // samples) from the whole dataset's, over the classes present in the dataset:
  double max_class_dev = 0;
  double mean_class_dev = 0;
  // Classes present outside the test set but absent from this part.
  std::vector<int32_t> missing_classes;
};

struct SplitQuality {
  int64_t test_size = 0;
  // Groups whose samples sit in more than one part (test or any fold); 0 for
  // group-aware kinds.
  int64_t group_leakage = 0;
  std::vector<FoldStats> folds;  // folds 0..k-1
  FoldStats test;                // fold -1; size 0 when there is no test set
};

// `num_classes` bounds the labels (0..num_classes-1, or -1). Throws Error for
// arrays of different length or ids out of range.
SplitQuality split_quality(std::span<const int16_t> assign, int32_t folds,
                           std::span<const int32_t> labels, std::span<const int32_t> groups,
                           std::size_t num_classes);

// The quality of a split stored in `index`.
SplitQuality split_quality(const DatasetIndex& index, const Split& split);

}  // namespace imgpack
