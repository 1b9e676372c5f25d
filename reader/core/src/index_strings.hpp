// The sample paths and group names of an opened index.h5, read on first use
// (internal to imgpack::core).
//
// A training program needs neither to deliver batches: Dataset::open() leaves
// them out, and this reads them when asked (an error naming a sample, the
// Python module's sample_paths). A format 2 index holds them as string tables
// viewed in the mapping the Dataset keeps of index.h5, so they come from the
// very file that was opened, checked against their checksums on first use. A
// format 1 index holds them in HDF5's global heap: the file is opened again on
// first use, and refused if another file has been renamed into its place
// since (a split, an upgrade), since its strings could then belong to another
// sample table.
//
// Thread-safe: the tables are read once, by whichever thread asks first.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "files.hpp"
#include "imgpack/dataset_index.hpp"
#include "index_tables.hpp"

namespace imgpack::detail {

class IndexStrings {
 public:
  // Format 2: the tables as the mapped file holds them, not yet verified.
  IndexStrings(std::filesystem::path path, StringTable sample_paths, StringTable group_names);
  // Format 1: read from `path` on first use, if it is still the file `identity`.
  IndexStrings(std::filesystem::path path, FileIdentity identity, bool checksummed);
  IndexStrings(const IndexStrings&) = delete;
  IndexStrings& operator=(const IndexStrings&) = delete;

  // Sample s's path (s < the number of samples, unchecked). Throws
  // imgpack::Error naming index.h5 when it cannot be read or is damaged.
  std::string sample_path(uint64_t s) const;
  std::vector<std::string> sample_paths() const;
  std::vector<std::string> group_names() const;
  // Reads and checks both tables now (imgpack verify), throwing as above.
  void verify() const;
  // check_sample_paths() below over the table as read, without a string per
  // sample; throws naming index.h5.
  void check_sample_paths(const DatasetIndex& index) const;

 private:
  enum Which { kPaths = 0, kGroups = 1 };
  const StringTable& table(Which which) const;
  StringTable read_format1(Which which) const;

  std::filesystem::path path_;
  bool format1_ = false;
  FileIdentity identity_;
  bool checksummed_ = false;
  mutable std::once_flag once_[2];
  mutable StringTable tables_[2];
};

// Throws imgpack::Error "`where`: ..." unless every sample in use (not
// removed) has a path, and a path of its own: `remove --paths`, a split's
// export and import and an append find samples by path. A removed sample may
// share its path with the one that replaced it (an append of a changed file).
void check_sample_paths(const DatasetIndex& index, const std::vector<std::string>& paths,
                        const std::string& where);

}  // namespace imgpack::detail
