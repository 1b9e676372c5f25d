#include "index_strings.hpp"

#include <string_view>
#include <unordered_map>

#include "h5.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"

namespace imgpack::detail {

namespace fs = std::filesystem;

IndexStrings::IndexStrings(fs::path path, StringTable sample_paths, StringTable group_names)
    : path_(std::move(path)) {
  tables_[kPaths] = std::move(sample_paths);
  tables_[kGroups] = std::move(group_names);
}

IndexStrings::IndexStrings(fs::path path, FileIdentity identity, bool checksummed)
    : path_(std::move(path)), format1_(true), identity_(identity), checksummed_(checksummed) {}

const StringTable& IndexStrings::table(Which which) const {
  std::call_once(once_[which], [&] {
    if (format1_) {
      tables_[which] = read_format1(which);
    } else {
      tables_[which].verify(path_);
    }
  });
  return tables_[which];
}

StringTable IndexStrings::read_format1(Which which) const {
  const h5::File file = h5::File::open_read(path_);
  if (file.identity() != identity_) {
    throw file_error(path_,
                     "was replaced after the dataset was opened (a split or an upgrade); open "
                     "the dataset again to read its sample paths and group names");
  }
  const TableReader tables(file, 1, checksummed_);
  const char* name = which == kPaths ? format::kSamplesPath : format::kGroupsName;
  const std::vector<std::string> strings = tables.strings(name);
  StringTable table;
  table.name = name;
  std::vector<uint8_t> bytes;
  std::vector<uint64_t> offsets{0};
  offsets.reserve(strings.size() + 1);
  for (const std::string& s : strings) {
    bytes.insert(bytes.end(), s.begin(), s.end());
    offsets.push_back(bytes.size());
  }
  table.bytes = std::move(bytes);
  table.offsets = std::move(offsets);
  return table;
}

std::string IndexStrings::sample_path(uint64_t s) const {
  return std::string(table(kPaths).at(static_cast<std::size_t>(s)));
}

std::vector<std::string> IndexStrings::sample_paths() const { return table(kPaths).to_strings(); }

std::vector<std::string> IndexStrings::group_names() const { return table(kGroups).to_strings(); }

}  // namespace imgpack::detail

namespace imgpack::detail {

void IndexStrings::verify() const {
  (void)table(kPaths);
  (void)table(kGroups);
}

}  // namespace imgpack::detail

namespace imgpack::detail {

namespace {

// Every sample in use has a path of its own (check_sample_paths()): `path_of(s)`
// gives sample s's of `count`.
template <class PathOf>
void check_paths(const DatasetIndex& index, std::size_t count, PathOf path_of,
                 const std::string& where) {
  std::unordered_map<std::string_view, uint64_t> first;
  first.reserve(count);
  for (uint64_t s = 0; s < count; ++s) {
    if (index.is_removed(s)) continue;
    const std::string_view path = path_of(s);
    if (path.empty()) throw Error(where + ": sample " + std::to_string(s) + " has no path");
    const auto [at, inserted] = first.emplace(path, s);
    if (!inserted) {
      throw Error(where + ": samples " + std::to_string(at->second) + " and " + std::to_string(s) +
                  " both have the path '" + std::string(path) +
                  "' (a path names one sample in use)");
    }
  }
}

}  // namespace

void check_sample_paths(const DatasetIndex& index, const std::vector<std::string>& paths,
                        const std::string& where) {
  check_paths(
      index, paths.size(), [&](uint64_t s) { return std::string_view(paths[s]); }, where);
}

void IndexStrings::check_sample_paths(const DatasetIndex& index) const {
  const StringTable& paths = table(kPaths);
  check_paths(
      index, paths.size(), [&](uint64_t s) { return paths.at(s); }, path_.string());
}

}  // namespace imgpack::detail
