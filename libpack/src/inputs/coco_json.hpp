// Reading a COCO file into a JSON DOM, less the `segmentation` values that
// nothing of a conversion reads (internal to imgpack::pack).
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace imgpack {

// The top-level object of the COCO file `file`, as nlohmann::json::parse()
// gives it but without any member named `segmentation` (at any depth). Throws
// UsageError naming the file where it cannot be read, is not valid JSON (with
// the parser's message) or is not a JSON object.
nlohmann::json read_coco_file(const std::filesystem::path& file);

// `value` as JSON text for an error message, as json::dump() writes it but
// three levels deep and about 60 characters at most, "..." for the rest.
// json::dump() recurses once a level (a value nested 100,000 deep overflows
// the stack) and prints all of it.
std::string json_excerpt(const nlohmann::json& value);

}  // namespace imgpack
