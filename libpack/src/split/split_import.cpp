// import_split(): a split made elsewhere, read from a CSV file.
#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/split.hpp"
#include "inputs/csv.hpp"

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

}  // namespace

Split import_split(const DatasetIndex& index, const std::filesystem::path& csv,
                   const SplitImport& columns, const std::string& name,
                   const std::string& created) {
  check_split_name(name);
  const std::string file = csv.string();
  const CsvTable table = read_csv(csv);
  const std::size_t path_column = table.require_column(columns.path, file, "SplitImport::path");
  const std::size_t fold_column = table.require_column(columns.fold, file, "SplitImport::fold");

  std::unordered_map<std::string, std::size_t> sample_of;
  sample_of.reserve(index.num_samples());
  for (std::size_t i = 0; i < index.num_samples(); ++i) sample_of.emplace(index.sample_path[i], i);

  const auto at_line = [&](const CsvRecord& row) {
    return file + ":" + std::to_string(row.line) + ": ";
  };
  std::vector<int16_t> assign(index.num_samples(), 0);
  std::vector<uint64_t> line_of(index.num_samples(), 0);  // 0: not in the file
  int32_t folds = 0;
  for (const CsvRecord& row : table.rows) {
    const std::string& path = row.fields[path_column];
    const auto sample = sample_of.find(path);
    if (sample == sample_of.end()) {
      throw UsageError(at_line(row) + "'" + path +
                       "' is not a sample of the dataset (paths are relative to the "
                       "converted folder, as DatasetIndex::sample_path holds them)");
    }
    if (line_of[sample->second] != 0) {
      throw UsageError(at_line(row) + "'" + path + "' is given twice (first on line " +
                       std::to_string(line_of[sample->second]) + ")");
    }
    const std::optional<int32_t> fold = parse_fold(row.fields[fold_column]);
    if (!fold) {
      throw UsageError(at_line(row) + "fold '" + row.fields[fold_column] +
                       "' is not an integer from -1 (test) to " + std::to_string(kMaxFolds - 1));
    }
    line_of[sample->second] = row.line;
    if (index.is_removed(sample->second)) continue;  // in no part, whatever the file says
    assign[sample->second] = static_cast<int16_t>(*fold);
    folds = std::max(folds, *fold + 1);
  }
  // Removed samples need no row: they are in no part.
  for (std::size_t i = 0; i < assign.size(); ++i) {
    if (index.is_removed(i)) {
      assign[i] = format::kRemovedFold;
      if (line_of[i] == 0) line_of[i] = UINT64_MAX;
    }
  }

  std::size_t missing = 0;
  std::size_t first_missing = 0;
  for (std::size_t i = line_of.size(); i-- > 0;) {
    if (line_of[i] == 0) {
      ++missing;
      first_missing = i;
    }
  }
  if (missing > 0) {
    throw UsageError(file + ": " + std::to_string(missing) + " of the dataset's " +
                     std::to_string(index.num_samples()) + " samples have no row, the first: '" +
                     index.sample_path[first_missing] +
                     "'; every sample needs a fold (-1 for the test set)");
  }
  std::vector<bool> used(static_cast<std::size_t>(folds), false);
  for (int16_t fold : assign) {
    if (fold >= 0) used[static_cast<std::size_t>(fold)] = true;
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

  Split split;
  split.name = name;
  split.kind = kImportedSplitKind;
  split.folds = folds;
  std::size_t test = 0;
  for (int16_t fold : assign) test += fold == -1 ? 1 : 0;
  const std::size_t kept = assign.size() - index.num_removed();
  split.test_fraction = kept == 0 ? 0 : static_cast<double>(test) / static_cast<double>(kept);
  split.created = created;
  split.assign = std::move(assign);
  return split;
}

}  // namespace imgpack
