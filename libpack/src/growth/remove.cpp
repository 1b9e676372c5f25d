// remove_samples(): samples marked removed in the next generation, and the
// path lists that name them.
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "files.hpp"
#include "growth/dataset_change.hpp"
#include "imgpack/error.hpp"
#include "imgpack/growth.hpp"
#include "inputs/csv.hpp"
#include "inputs/text_lines.hpp"
#include "sample_lookup.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

// A listed relative path as the dataset names its samples: "./a/b.jpg" and
// "a//b.jpg" are "a/b.jpg" (as `find .` lists them). Anything else as given.
std::string as_sample_path(std::string path) {
  const fs::path given(path);
  if (given.is_absolute()) return path;
  std::string normal = given.lexically_normal().generic_string();
  if (normal.empty() || normal == "." || normal.starts_with("..")) return path;
  return normal;
}

}  // namespace

std::vector<std::string> read_path_list(const fs::path& file, const std::string& column) {
  std::vector<std::string> paths;
  if (!column.empty()) {
    const CsvTable table = read_csv(file);
    const std::size_t c = table.require_column(column, file.string(), "read_path_list's column");
    paths.reserve(table.rows.size());
    for (const CsvRecord& row : table.rows) paths.push_back(as_sample_path(row.fields[c]));
    return paths;
  }
  std::vector<uint8_t> bytes;
  const std::string error = read_file(file, bytes);
  if (!error.empty()) throw UsageError(file.string() + ": " + error);
  require_text({reinterpret_cast<const char*>(bytes.data()), bytes.size()}, file.string());
  for_each_line({reinterpret_cast<const char*>(bytes.data()), bytes.size()},
                [&](uint32_t, std::string_view line) {
                  if (!line.empty() && line.front() != '#') {
                    paths.push_back(as_sample_path(std::string(line)));
                  }
                  return true;
                });
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
      const std::string& path = paths[i];
      const bool spaced =
          !path.empty() && (std::isspace(static_cast<unsigned char>(path.front())) ||
                            std::isspace(static_cast<unsigned char>(path.back())));
      throw UsageError(
          list_name + ": entry " + std::to_string(i + 1) + ", '" + path + "', is not a sample of " +
          dataset.string() + " (paths as the dataset names them, relative to the converted folder" +
          (spaced ? "; this one begins or ends with a space" : "") + "); nothing was removed");
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
    clear_leftovers(dataset, change);
    try {
      commit_change(dataset, index, "remove", 0, result.removed, samples, warnings);
    } catch (...) {
      abandon_change(dataset, result.generation, "nothing was removed");
    }
    result.generation = index.generation;
  }
  result.remaining = samples - index.num_removed();
  return result;
}

}  // namespace imgpack
