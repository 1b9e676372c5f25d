// The parts of an index that record how a dataset grew (internal to
// imgpack::core): the generation, the history, removed samples and the
// source file stamps (format.hpp). Each is absent from an index that does not
// use it, so such an index reads, writes and checksums as before.
#pragma once

#include "h5.hpp"
#include "imgpack/dataset_index.hpp"
#include "index_tables.hpp"

namespace imgpack::detail {

// Root attributes `generation`, `removed` and `file_stamps`, before the
// root's checksum is compared (they are part of it). Sizes index.history to
// generation + 1 rows, and marks which tables read_growth_tables() must find.
struct GrowthAttributes {
  uint64_t removed = 0;
  bool file_stamps = false;
};
GrowthAttributes read_growth_attributes(const h5::File& file, DatasetIndex& index);

// The tables the attributes announce, each checked against its checksum and
// its length; throws imgpack::Error naming the file otherwise.
void read_growth_tables(const TableReader& tables, const GrowthAttributes& attributes,
                        DatasetIndex& index);

void write_growth_attributes(h5::File& file, const DatasetIndex& index);
void write_growth_tables(TableWriter& tables, const DatasetIndex& index);

// DatasetIndex::validate()'s checks of these parts; throws naming `where`.
void validate_growth(const DatasetIndex& index, const std::string& where);

}  // namespace imgpack::detail
