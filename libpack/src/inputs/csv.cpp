#include "inputs/csv.hpp"

#include <cstdint>
#include <set>
#include <vector>

#include "files.hpp"
#include "imgpack/error.hpp"
#include "inputs/text_lines.hpp"

namespace imgpack {

namespace {

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::string trimmed(std::string_view s) {
  std::size_t begin = 0, end = s.size();
  while (begin < end && is_blank(s[begin])) ++begin;
  while (end > begin && is_blank(s[end - 1])) --end;
  return std::string(s.substr(begin, end - begin));
}

class CsvParser {
 public:
  CsvParser(std::string_view text, const std::string& name) : text_(text), name_(name) {
    if (text_.starts_with(kUtf8Bom)) pos_ = kUtf8Bom.size();
  }

  // The next record, or std::nullopt at the end of the text. Blank lines are skipped.
  std::optional<CsvRecord> next() {
    while (pos_ < text_.size() && at_line_end()) consume_line_end();
    if (pos_ >= text_.size()) return std::nullopt;
    CsvRecord record;
    record.line = line_;
    while (true) {
      record.fields.push_back(field());
      if (pos_ >= text_.size()) break;
      if (text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      consume_line_end();  // field() stops only at a comma, a line end or the end
      break;
    }
    return record;
  }

  [[noreturn]] void fail(uint64_t line, const std::string& message) const {
    throw UsageError(name_ + ":" + std::to_string(line) + ": " + message);
  }

 private:
  bool at_line_end() const { return text_[pos_] == '\n' || text_[pos_] == '\r'; }

  void consume_line_end() {
    if (text_[pos_] == '\r' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n') ++pos_;
    ++pos_;
    ++line_;
  }

  std::string field() {
    // Leading blanks before an opening quote are tolerated ("a, "b"").
    std::size_t start = pos_;
    while (pos_ < text_.size() && is_blank(text_[pos_])) ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '"') return quoted();
    pos_ = start;
    while (pos_ < text_.size() && text_[pos_] != ',' && !at_line_end()) ++pos_;
    return trimmed(text_.substr(start, pos_ - start));
  }

  std::string quoted() {
    const uint64_t opened = line_;
    ++pos_;  // opening quote
    std::string value;
    while (true) {
      if (pos_ >= text_.size()) fail(opened, "quoted field is never closed");
      char c = text_[pos_++];
      if (c == '"') {
        if (pos_ < text_.size() && text_[pos_] == '"') {
          value += '"';
          ++pos_;
          continue;
        }
        break;
      }
      if (c == '\n' || (c == '\r' && !(pos_ < text_.size() && text_[pos_] == '\n'))) ++line_;
      value += c;
    }
    while (pos_ < text_.size() && is_blank(text_[pos_])) ++pos_;
    if (pos_ < text_.size() && text_[pos_] != ',' && !at_line_end()) {
      fail(line_, std::string("unexpected '") + text_[pos_] +
                      "' after a closing quote (a quote inside a quoted field is written \"\")");
    }
    return value;
  }

  std::string_view text_;
  const std::string& name_;
  std::size_t pos_ = 0;
  uint64_t line_ = 1;
};

}  // namespace

std::optional<std::size_t> CsvTable::column(std::string_view name) const {
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return i;
  }
  return std::nullopt;
}

std::size_t CsvTable::require_column(const std::string& name, const std::string& file,
                                     const char* option) const {
  if (std::optional<std::size_t> at = column(name)) return *at;
  std::string have;
  for (const std::string& h : header) have += (have.empty() ? "" : ", ") + h;
  throw UsageError(file + ":1: no column '" + name + "' (" + option + "); the header has: " + have);
}

CsvTable parse_csv(std::string_view text, const std::string& name) {
  require_text(text, name);
  CsvParser parser(text, name);
  CsvTable table;
  std::optional<CsvRecord> header = parser.next();
  if (!header) throw UsageError(name + ": empty; a header row naming the columns is required");
  table.header = std::move(header->fields);
  std::set<std::string> seen;
  for (const std::string& column : table.header) {
    if (!seen.insert(column).second) {
      parser.fail(header->line, "the header names column '" + column + "' twice");
    }
  }
  while (std::optional<CsvRecord> record = parser.next()) {
    if (record->fields.size() != table.header.size()) {
      parser.fail(record->line, std::to_string(record->fields.size()) + " field" +
                                    (record->fields.size() == 1 ? "" : "s") +
                                    ", but the header has " + std::to_string(table.header.size()));
    }
    table.rows.push_back(std::move(*record));
  }
  return table;
}

CsvTable read_csv(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw UsageError(path.string() + ": is a directory, not a CSV file");
  }
  std::vector<uint8_t> bytes;
  const std::string problem = read_file(path, bytes);
  if (!problem.empty()) throw UsageError(path.string() + ": the CSV file: " + problem);
  return parse_csv({reinterpret_cast<const char*>(bytes.data()), bytes.size()}, path.string());
}

}  // namespace imgpack
