#include "imgpack/verify.hpp"

#include <algorithm>
#include <chrono>
#include <string_view>
#include <system_error>
#include <utility>

#include "files.hpp"
#include "h5.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "index_file.hpp"
#include "record_check.hpp"
#include "shard_check.hpp"
#include "shard_validation.hpp"
#include "splits_file.hpp"

namespace imgpack {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// A problem tied to a shard (or, with kNoShard, to index.h5), kept in shard order.
constexpr uint64_t kNoShard = ~uint64_t{0};
struct Problem {
  uint64_t shard = kNoShard;
  std::string message;
};

}  // namespace

VerifyReport verify_dataset(const fs::path& dir, const VerifyOptions& options) {
  const Clock::time_point start = Clock::now();
  require_dataset_directory(dir);
  if (options.read_bytes == 0) throw UsageError("verify: read size must be at least 1 byte");

  VerifyReport report;
  auto finish = [&] {
    report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return std::move(report);
  };

  // The index with its tables mapped and its strings checked in bulk, but
  // not turned into a string per sample: a bad record's path is read alone.
  DatasetIndex index;
  std::shared_ptr<const detail::IndexStrings> strings;
  detail::StorageTable table;
  try {
    // splits.h5 on its own below: the shards do not depend on it.
    detail::DeferredIndex read = detail::read_index_deferred(
        dir, {.sample_paths = false, .group_names = false}, false, false);
    index = std::move(read.index);
    strings = std::move(read.strings);
    strings->verify();
    strings->check_sample_paths(index);
    report.records = index.num_records();
    report.shards = index.num_shards();
    report.masks = index.masks;
    table = detail::build_storage_table(index, dir / format::kIndexFile);
    (void)detail::build_sample_table(index, dir / format::kIndexFile);
  } catch (const ResourceShortage&) {
    throw;
  } catch (const Error& e) {
    report.errors.emplace_back(e.what());
    return finish();
  }
  bool splits_read = true;
  if (index.format_version >= 2) {
    try {
      (void)detail::read_splits_of(dir, index, false);
    } catch (const ResourceShortage&) {
      throw;  // the machine's, not the dataset's: no verdict
    } catch (const Error& e) {
      report.errors.emplace_back(e.what());
      splits_read = false;
    }
  }
  // HDF5 metadata the reads above do not use, as h5py reads it; the shards
  // are checked all the same.
  for (const char* file : {format::kIndexFile, format::kSplitsFile}) {
    if (!splits_read && std::string_view(file) == format::kSplitsFile) continue;
    try {
      std::error_code ec;
      if (fs::exists(dir / file, ec)) h5::File::open_read(dir / file).check_metadata();
    } catch (const ResourceShortage&) {
      throw;  // the machine's, not the dataset's: no verdict
    } catch (const Error& e) {
      report.errors.emplace_back(e.what());
    }
  }

  // Structure, shard by shard (HDF5 serialises everything: no gain from threads).
  std::vector<Problem> problems;
  std::vector<ShardRecords> intact;
  std::vector<uint32_t> intact_shard;  // shard index of each entry of `intact`
  for (std::size_t k = 0; k < index.num_shards(); ++k) {
    const fs::path path = dir / index.shards.file[k];
    try {
      detail::require_shard_exists(path);
      const FileDescriptor fd = open_for_reading(path);
      const RecordIds row_records = table.shard_records(k, index.shards.records[k]);
      ShardContents contents = detail::validate_shard(path, index, k, row_records, fd.size(path));
      intact.push_back({path, fd.identity(path), contents.images_offset,
                        std::move(contents.checksums.values()), index.mask_bytes(),
                        contents.masks_offset, std::move(contents.mask_checksums.values())});
      intact_shard.push_back(static_cast<uint32_t>(k));
    } catch (const ResourceShortage&) {
      throw;  // the machine's, not the dataset's: no verdict
    } catch (const Error& e) {
      problems.push_back({k, e.what()});
      continue;
    }
    try {
      h5::File::open_read(path).check_metadata();  // its records are checked all the same
    } catch (const ResourceShortage&) {
      throw;  // the machine's, not the dataset's: no verdict
    } catch (const Error& e) {
      problems.push_back({k, e.what()});
    }
  }

  // Checksums.
  const Clock::time_point checksum_start = Clock::now();
  report.structure_seconds = std::chrono::duration<double>(checksum_start - start).count();
  RecordCheck check = check_records(intact, index.record_bytes(), options);
  report.checksum_seconds = std::chrono::duration<double>(Clock::now() - checksum_start).count();
  report.threads = check.threads;
  report.records_checked = check.records_checked;
  report.bytes_checked = check.bytes_checked;

  for (UnreadableShard& u : check.unreadable) {
    problems.push_back({intact_shard[u.shard], std::move(u.message)});
  }
  std::stable_sort(problems.begin(), problems.end(),
                   [](const Problem& a, const Problem& b) { return a.shard < b.shard; });
  for (Problem& p : problems) {
    report.errors.push_back(std::move(p.message));
    if (p.shard != kNoShard) report.bad_shards.push_back(static_cast<uint32_t>(p.shard));
  }

  for (const MismatchedRow& m : check.mismatched) {
    const uint32_t shard = intact_shard[m.shard];
    BadRecord record;
    record.shard = shard;
    record.shard_file = index.shards.file[shard];
    record.row = m.row;
    record.mask = m.mask;
    record.record = table.record_at(table.first_position[shard] + m.row);
    record.sample = index.records.sample[record.record];
    record.variant = index.records.variant[record.record];
    record.sample_path = strings->sample_path(static_cast<uint64_t>(record.sample));
    report.bad_records.push_back(std::move(record));
    report.bad_shards.push_back(shard);
  }
  std::sort(report.bad_shards.begin(), report.bad_shards.end());
  report.bad_shards.erase(std::unique(report.bad_shards.begin(), report.bad_shards.end()),
                          report.bad_shards.end());
  return finish();
}

}  // namespace imgpack
