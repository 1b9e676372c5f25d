// Conversions in parts (ConvertOptions::part): which inputs a part converts,
// and what a part records so that merge() can tell parts of one conversion
// (internal to imgpack::pack).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "imgpack/convert_options.hpp"
#include "imgpack/dataset_index.hpp"
#include "inputs/scan.hpp"

namespace imgpack {

// The folder name of a part: "2-of-7".
std::string part_name(const ConvertPart& part);

// The part a folder name names ("2-of-7" -> {2, 7}, as part_name() writes
// it); nullopt for any other name.
std::optional<ConvertPart> parse_part_name(const std::string& name);

// The part of `count` that the input at relative path `path` belongs to:
// XXH3-64 of the path, modulo `count`.
uint32_t part_of_path(std::string_view path, uint32_t count);

// What a part stores under "part" in its index's convert_options, for merge().
struct PartRecord {
  ConvertPart part;
  // XXH3-64 (hex) of the options that determine the output bytes (the part
  // count among them) and of the whole listing: every path with its label
  // and group, and the class and group names. Equal for all parts of one
  // conversion, different otherwise.
  std::string fingerprint;
  uint64_t listing_inputs = 0;  // inputs of the whole listing, scan-time skips included
  uint64_t part_inputs = 0;     // those of this part
};

// `options_json` (ConvertOptions::to_json) with `record` added under "part":
// the convert_options a part's index stores.
std::string with_part_record(const std::string& options_json, const PartRecord& record);

// `convert_options` without its part record: what a merged dataset stores.
// Throws nlohmann::json::exception where it is not JSON.
std::string without_part_record(const std::string& convert_options);

// Whether an index's `convert_options` carry a part record: the dataset is a
// part of a conversion in parts. False for text that is not JSON.
bool is_conversion_part(const std::string& convert_options);

// The part record of a part's `convert_options`. Throws
// nlohmann::json::exception where it is missing or malformed.
PartRecord read_part_record(const std::string& convert_options);

// The first shard of the complete dataset in `dir` (whose index is `index`)
// whose `part` attribute does not name `part` ("1-of-3"), as a problem
// naming the file; "" where every one does.
std::string foreign_part_shard(const std::filesystem::path& dir, const DatasetIndex& index,
                               const std::string& part);

// The fingerprint of PartRecord for `options_json` (ConvertOptions::to_json)
// over `list` (the whole listing, before any skip is assigned to a part).
std::string listing_fingerprint(const std::string& options_json, const SourceList& list);

}  // namespace imgpack
