// The splits of a dataset (internal to imgpack::core): the /splits group of
// a format 1 index.h5, or of splits.h5 beside a format 2 one.
//
// Both files lay the splits out alike: /splits/NAME/assign (int16 [S], with
// its `xxh3`) and NAME's attributes (kind, folds, seed, test_fraction,
// val_fraction, created, stratified, grouped, attributes_xxh3). splits.h5
// adds root attributes naming the index it belongs to (imgpack_format,
// dataset_uuid, samples, attributes_xxh3), so that a splits.h5 of another
// dataset, or of another conversion into the same directory, is refused.
// Changing a split of a format 2 dataset replaces splits.h5 alone
// (splits.h5.tmp, fsync, rename): index.h5 is never rewritten for it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "h5.hpp"
#include "imgpack/dataset_index.hpp"
#include "index_tables.hpp"

namespace imgpack::detail {

// What is wrong with `split` over a dataset of `samples` samples: an
// assignment of another length, no folds or more than an int16 names, or a
// sample assigned outside -2 (removed) .. folds - 1; "" where nothing is.
std::string split_problem(const Split& split, uint64_t samples);

// Every split under /splits of the file `tables` reads (none without the group).
std::vector<Split> read_split_groups(const TableReader& tables);

// Writes `splits` under /splits, in name order.
void write_split_groups(h5::File& file, TableWriter& tables, const std::vector<Split>& splits);

// DIR/splits.h5 of the format 2 index of dataset `uuid` with `samples`
// samples at `generation` (root attribute `generation`, absent = 0). A
// splits.h5 of a later generation with at least as many samples is the next
// generation being committed (splits.h5 is renamed first): its splits are
// read over the index's samples alone, which an extension left as they were
// (samples that change removes are in no role of them already).
// Throws imgpack::Error naming the file when it is missing, belongs to
// another index or generation, or is damaged. With `map`, the assignments
// are viewed in a mapping of the file (copied where cut to the index).
std::vector<Split> read_splits_file(const std::filesystem::path& dataset_dir,
                                    const std::string& uuid, uint64_t samples, uint64_t generation,
                                    bool map);

// read_splits_file() for `index` (format 2), as read_index() reads it: its
// errors, but UsageError, say the way on (the index and the shards do not
// depend on splits.h5; restore it or reset_splits_file()).
std::vector<Split> read_splits_of(const std::filesystem::path& dataset_dir,
                                  const DatasetIndex& index, bool map);

// read_index() without DIR/splits.h5 (index.splits empty): what the index
// says where its splits file is missing or damaged (inspect --force).
DatasetIndex read_index_without_splits(const std::filesystem::path& dataset_dir,
                                       const IndexReadOptions& options);

// Writes DIR/splits.h5 anew without any split, for a format 2 index.h5 that
// reads whole while its splits.h5 is missing or damaged (read_index() refuses
// the dataset then): what the splits held is lost, to be made again. Returns
// the problem splits.h5 had. Throws UsageError for a splits.h5 that reads as
// it should or a format 1 index, imgpack::Error naming index.h5 where that is
// damaged. Takes no lock: the caller holds the dataset's.
std::string reset_splits_file(const std::filesystem::path& dataset_dir);

// Replaces DIR/splits.h5 crash-safely with the splits of `index` (format 2).
void write_splits_file(const std::filesystem::path& dataset_dir, const DatasetIndex& index);

// A mapping of the whole file `file` has open, and its identity.
std::shared_ptr<const FileMapping> map_file(const h5::File& file);

}  // namespace imgpack::detail
