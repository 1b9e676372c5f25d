// Reading index.h5 for the reader and verify (internal to imgpack::core).
#pragma once

#include <filesystem>
#include <memory>

#include "imgpack/dataset_index.hpp"
#include "index_strings.hpp"

namespace imgpack::detail {

// An index read without its sample paths or group names, which stay readable
// on first use from the very file that was read (IndexStrings).
struct DeferredIndex {
  DatasetIndex index;
  std::shared_ptr<const IndexStrings> strings;  // null where nothing was left out
};

// read_index(), keeping what `options` leaves out of the strings readable.
// With `map` (Dataset::open()), the numeric tables are viewed in read-only
// mappings of index.h5 and splits.h5 where they lie contiguous in them:
// shared by every process that maps the same files, never anonymous memory;
// and a format 2 index's strings stay in the mapping. Without it (verify,
// which maps nothing), everything read is copied. Throws as read_index().
// Without `splits`, splits.h5 is not read (index.splits stays empty).
DeferredIndex read_index_deferred(const std::filesystem::path& dataset_dir,
                                  const IndexReadOptions& options, bool map, bool splits = true);

}  // namespace imgpack::detail
