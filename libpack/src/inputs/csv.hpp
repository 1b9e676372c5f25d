// Reading CSV files as spreadsheets and pandas write them.
//
// Fields are separated by commas and records by LF or CRLF (a lone CR counts
// as a line end too). A field that starts with '"' is quoted: it may hold
// commas, line breaks and doubled quotes ("" -> "), and must be followed by a
// comma or the end of the record. Unquoted fields lose surrounding spaces and
// tabs; quoted fields are kept exactly. A UTF-8 byte order mark at the start
// is skipped, blank lines are ignored, and the first record is the header,
// which is required and may not name a column twice. Every record must have
// as many fields as the header.
//
// Errors are UsageErrors naming the file and line: "list.csv:7: 2 fields,
// but the header has 3". Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace imgpack {

struct CsvRecord {
  std::vector<std::string> fields;
  uint64_t line = 0;  // 1-based line on which the record starts
};

struct CsvTable {
  std::vector<std::string> header;  // column names
  std::vector<CsvRecord> rows;      // every record after the header

  // Index of the named column, or std::nullopt.
  std::optional<std::size_t> column(std::string_view name) const;

  // Index of the named column; a UsageError naming `file`, the column, the
  // option that asked for it and the header's columns when there is none.
  std::size_t require_column(const std::string& name, const std::string& file,
                             const char* option) const;
};

// Parses `text`; `name` is the file name used in error messages.
CsvTable parse_csv(std::string_view text, const std::string& name);

// Reads and parses a file; a file that cannot be read is a UsageError too.
CsvTable read_csv(const std::filesystem::path& path);

}  // namespace imgpack
