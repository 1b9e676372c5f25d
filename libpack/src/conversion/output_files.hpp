// The names imgpack gives what it writes into a dataset's folder (OUT): what
// a conversion with ConvertOptions::overwrite may remove there, and nothing
// else. Internal to imgpack::pack.
#pragma once

#include <string_view>

namespace imgpack {

// A conversion in parts lays OUT out as OUT/parts/I-of-N/, a dataset each,
// and merge() journals its work in OUT/merge.journal.
inline constexpr const char* kPartsFolder = "parts";
inline constexpr const char* kMergeJournalFile = "merge.journal";

// A shard being compacted is written as SHARD.compact.tmp.
inline constexpr const char* kCompactSuffix = ".compact";

// Whether `name` is a file imgpack writes into OUT: index.h5, splits.h5,
// report.json, a shard, the conversion's or a merge's journal, or the
// temporary file of one of them (NAME.tmp, or a shard's NAME.compact.tmp).
bool is_dataset_file_name(std::string_view name);

}  // namespace imgpack
