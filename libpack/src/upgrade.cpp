#include "imgpack/upgrade.hpp"

#include <chrono>

#include "files.hpp"
#include "imgpack/dataset.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "index_strings.hpp"

namespace imgpack {

namespace fs = std::filesystem;

UpgradeResult upgrade_dataset(const fs::path& dir) {
  const auto start = std::chrono::steady_clock::now();
  // Without a dataset there is nothing to lock: read_index() says what is wrong.
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) read_index(dir);
  const DirectoryLock lock(dir);
  DatasetIndex index = read_index(dir);
  UpgradeResult result;
  result.from_version = index.format_version;
  result.to_version = format::kIndexVersion;
  result.samples = index.num_samples();
  result.records = index.num_records();
  result.splits = index.splits.size();
  if (index.format_version < format::kIndexVersion) {
    // A format 1 index carries no checksums: the ones format 2 adds would
    // vouch for whatever it holds. It is checked first as a reader checks a
    // dataset at open (every shard's structure and identity, the records'
    // places, rows and labels), so that damage is refused, not certified.
    (void)Dataset::open(dir);
    detail::check_sample_paths(index, index.sample_path, (dir / format::kIndexFile).string());
    index.format_version = format::kIndexVersion;
    write_index(dir, index);
    result.upgraded = true;
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace imgpack
