// remove_samples(): samples marked removed in the next generation, and the
// path lists that name them.
#include <optional>
#include <string>
#include <vector>

#include "files.hpp"
#include "growth/dataset_change.hpp"
#include "imgpack/error.hpp"
#include "imgpack/growth.hpp"
#include "inputs/csv.hpp"
#include "sample_lookup.hpp"

namespace imgpack {

namespace fs = std::filesystem;

std::vector<std::string> read_path_list(const fs::path& file, const std::string& column) {
  if (!column.empty()) {
    const CsvTable table = read_csv(file);
    const std::size_t c = table.require_column(column, file.string(), "read_path_list's column");
    std::vector<std::string> paths;
    paths.reserve(table.rows.size());
    for (const CsvRecord& row : table.rows) paths.push_back(row.fields[c]);
    return paths;
  }
  std::vector<uint8_t> bytes;
  const std::string error = read_file(file, bytes);
  if (!error.empty()) throw UsageError(file.string() + ": " + error);
  const std::string text(bytes.begin(), bytes.end());
  std::vector<std::string> paths;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(begin, end - begin);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty() && line.front() != '#') paths.push_back(std::move(line));
    begin = end + 1;
  }
  return paths;
}

RemoveResult remove_samples(const fs::path& dataset, std::span<const std::string> paths,
                            const std::string& list_name) {
  DatasetChange change = begin_change(dataset, "remove");
  DatasetIndex& index = change.index;
  const SampleLookup lookup(index);
  RemoveResult result;
  std::vector<std::size_t> remove;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const std::optional<std::size_t> sample = lookup.find(paths[i]);
    if (!sample) {
      throw UsageError(list_name + ": entry " + std::to_string(i + 1) + ", '" + paths[i] +
                       "', is not a sample of " + dataset.string() +
                       " (paths as the dataset names them, relative to the converted folder); "
                       "nothing was removed");
    }
    if (index.is_removed(*sample)) {
      ++result.already_removed;
    } else {
      remove.push_back(*sample);
    }
  }
  const std::size_t samples = index.num_samples();
  result.generation = index.generation;
  if (!remove.empty()) {
    index.sample_removed.resize(samples, 0);
    for (const std::size_t s : remove) {
      if (index.sample_removed[s] == 0) ++result.removed;
      index.sample_removed[s] = 1;
    }
    std::vector<std::string> warnings;
    commit_change(dataset, index, "remove", 0, result.removed, samples, warnings);
    result.generation = index.generation;
  }
  result.remaining = samples - index.num_removed();
  return result;
}

}  // namespace imgpack
