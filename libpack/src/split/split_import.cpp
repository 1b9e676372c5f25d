// import_split(): a split made elsewhere, read from a CSV file;
// import_split_extended(): one of an earlier generation, extended.
#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/split.hpp"
#include "inputs/csv.hpp"
#include "sample_lookup.hpp"
#include "split/split_extend.hpp"

namespace imgpack {

namespace {

// The fold in `text`: an integer in -1..kMaxFolds-1, or nullopt.
std::optional<int32_t> parse_fold(const std::string& text) {
  int32_t fold = 0;
  const char* end = text.data() + text.size();
  const auto [at, error] = std::from_chars(text.data(), end, fold);
  if (error != std::errc() || at != end || fold < -1 || fold >= kMaxFolds) return std::nullopt;
  return fold;
}

// The folds of `csv`'s rows: assign[i] for every sample the file lists (0
// for the others), line_of[i] its line (0: not listed; removed samples
// without a row get UINT64_MAX and kRemovedFold).
struct ImportedFolds {
  std::vector<int16_t> assign;
  std::vector<uint64_t> line_of;
  int32_t folds = 0;
};

ImportedFolds read_folds(const DatasetIndex& index, const std::filesystem::path& csv,
                         const SplitImport& columns) {
  const std::string file = csv.string();
  const CsvTable table = read_csv(csv);
  const std::size_t path_column = table.require_column(columns.path, file, "SplitImport::path");
  const std::size_t fold_column = table.require_column(columns.fold, file, "SplitImport::fold");

  const SampleLookup samples(index);

  const auto at_line = [&](const CsvRecord& row) {
    return file + ":" + std::to_string(row.line) + ": ";
  };
  ImportedFolds imported;
  std::vector<int16_t>& assign = imported.assign;
  std::vector<uint64_t>& line_of = imported.line_of;
  assign.assign(index.num_samples(), 0);
  line_of.assign(index.num_samples(), 0);
  for (const CsvRecord& row : table.rows) {
    const std::string& path = row.fields[path_column];
    const std::optional<std::size_t> sample = samples.find(path);
    if (!sample) {
      throw UsageError(at_line(row) + "'" + path +
                       "' is not a sample of the dataset (paths are relative to the "
                       "converted folder, as DatasetIndex::sample_path holds them)");
    }
    if (line_of[*sample] != 0) {
      throw UsageError(at_line(row) + "'" + path + "' is given twice (first on line " +
                       std::to_string(line_of[*sample]) + ")");
    }
    const std::optional<int32_t> fold = parse_fold(row.fields[fold_column]);
    if (!fold) {
      throw UsageError(at_line(row) + "fold '" + row.fields[fold_column] +
                       "' is not an integer from -1 (test) to " + std::to_string(kMaxFolds - 1));
    }
    line_of[*sample] = row.line;
    if (index.is_removed(*sample)) continue;  // in no part, whatever the file says
    assign[*sample] = static_cast<int16_t>(*fold);
    imported.folds = std::max(imported.folds, *fold + 1);
  }
  // Removed samples need no row: they are in no part.
  for (std::size_t i = 0; i < assign.size(); ++i) {
    if (index.is_removed(i)) {
      assign[i] = format::kRemovedFold;
      if (line_of[i] == 0) line_of[i] = UINT64_MAX;
    }
  }
  return imported;
}

// Throws unless every sample of [0, end) has a row, every fold 0..k-1 holds
// one and k >= 2.
void check_folds(const DatasetIndex& index, const std::string& file, const ImportedFolds& imported,
                 std::size_t end, const std::string& needs) {
  std::size_t missing = 0;
  std::size_t first_missing = 0;
  for (std::size_t i = end; i-- > 0;) {
    if (imported.line_of[i] == 0) {
      ++missing;
      first_missing = i;
    }
  }
  if (missing > 0) {
    throw UsageError(file + ": " + std::to_string(missing) + " of the dataset's " +
                     std::to_string(end) + " samples have no row, the first: '" +
                     index.sample_path[first_missing] + "'; " + needs);
  }
  const int32_t folds = imported.folds;
  std::vector<bool> used(static_cast<std::size_t>(folds), false);
  for (std::size_t i = 0; i < end; ++i) {
    if (imported.assign[i] >= 0) used[static_cast<std::size_t>(imported.assign[i])] = true;
  }
  for (int32_t f = 0; f < folds; ++f) {
    if (!used[static_cast<std::size_t>(f)]) {
      throw UsageError(file + ": fold " + std::to_string(f) + " holds no sample, but fold " +
                       std::to_string(folds - 1) + " does (folds are numbered 0..k-1)");
    }
  }
  if (folds < 2) {
    throw UsageError(file + ": " +
                     (folds == 0 ? "every sample is in the test set (-1)"
                                 : "every sample outside the test set is in fold 0") +
                     "; a split needs at least two folds");
  }
}

// True when no group of the non-removed samples of [0, end) is in two parts.
bool keeps_groups_whole(const DatasetIndex& index, std::span<const int16_t> assign) {
  std::unordered_map<int32_t, int16_t> part_of;
  for (std::size_t i = 0; i < assign.size(); ++i) {
    const int32_t group = index.sample_group[i];
    if (group < 0 || assign[i] == format::kRemovedFold) continue;
    const auto [it, inserted] = part_of.emplace(group, assign[i]);
    if (!inserted && it->second != assign[i]) return false;
  }
  return true;
}

// The Split record of an imported assignment. It is recorded as grouped
// where the samples have groups and it keeps each whole and as stratified where the
// samples have labels: what an append then keeps when it extends it (a new
// member of an old group joins its fold, new samples balance the classes).
Split imported_split(const DatasetIndex& index, const std::string& name, const std::string& created,
                     int32_t folds, std::vector<int16_t> assign) {
  Split split;
  split.name = name;
  split.kind = kImportedSplitKind;
  split.folds = folds;
  const std::span<const int32_t> labels = index.sample_label.span();
  split.stratified = std::any_of(labels.begin(), labels.end(), [](int32_t l) { return l >= 0; });
  const std::span<const int32_t> groups = index.sample_group.span();
  split.grouped = std::any_of(groups.begin(), groups.end(), [](int32_t g) { return g >= 0; }) &&
                  keeps_groups_whole(index, assign);
  std::size_t test = 0;
  std::size_t kept = 0;
  for (int16_t fold : assign) {
    test += fold == -1 ? 1 : 0;
    kept += fold == format::kRemovedFold ? 0 : 1;
  }
  split.test_fraction = kept == 0 ? 0 : static_cast<double>(test) / static_cast<double>(kept);
  split.created = created;
  split.assign = std::move(assign);
  return split;
}

}  // namespace

Split import_split(const DatasetIndex& index, const std::filesystem::path& csv,
                   const SplitImport& columns, const std::string& name,
                   const std::string& created) {
  check_split_name(name);
  ImportedFolds imported = read_folds(index, csv, columns);
  check_folds(index, csv.string(), imported, index.num_samples(),
              "every sample needs a fold (-1 for the test set)");
  return imported_split(index, name, created, imported.folds, std::move(imported.assign));
}

ExtendedImport import_split_extended(const DatasetIndex& index, const std::filesystem::path& csv,
                                     const SplitImport& columns, const std::string& name,
                                     const std::string& created) {
  check_split_name(name);
  const std::string file = csv.string();
  ImportedFolds imported = read_folds(index, csv, columns);
  std::size_t end = 0;  // one past the last sample with a row
  for (std::size_t i = imported.line_of.size(); i-- > 0;) {
    if (imported.line_of[i] != 0 && imported.line_of[i] != UINT64_MAX) {
      end = i + 1;
      break;
    }
  }
  if (end == 0) throw UsageError(file + ": has no rows");
  check_folds(index, file, imported, end,
              "a split of an earlier generation lists every sample the dataset held then (-1 "
              "for the test set); the samples after its last one are the ones it extends to");

  ExtendedImport result;
  result.listed = end;
  result.placed = index.num_samples() - end;
  std::vector<int16_t> earlier(imported.assign.begin(),
                               imported.assign.begin() + static_cast<std::ptrdiff_t>(end));
  if (result.placed == 0) {
    result.split = imported_split(index, name, created, imported.folds, std::move(earlier));
    return result;
  }
  // The new samples are placed as an append places them.
  const Split like = imported_split(index, name, created, imported.folds, std::move(earlier));
  const MultilabelRows multilabel{index.sample_multilabel.span(), index.multilabel_names.size()};
  SplitExtension extended = extend_split(like, index.sample_label.span(), index.sample_group.span(),
                                         multilabel, index.sample_removed.span());
  result.warnings = std::move(extended.warnings);
  result.split = imported_split(index, name, created, imported.folds, std::move(extended.assign));
  return result;
}

}  // namespace imgpack
