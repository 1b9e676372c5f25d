#include "index_tables.hpp"

#include <string_view>

#include "imgpack/error.hpp"

namespace imgpack::detail {

std::string string_bytes_name(const std::string& table) {
  return table + "/" + format::kStringBytes;
}

std::string string_offsets_name(const std::string& table) {
  return table + "/" + format::kStringOffsets;
}

std::vector<std::string> StringTable::to_strings() const {
  std::vector<std::string> out;
  out.reserve(size());
  for (std::size_t i = 0; i < size(); ++i) out.emplace_back(at(i));
  return out;
}

void StringTable::verify(const std::filesystem::path& path) const {
  auto damaged = [&](const std::string& object, const std::string& problem) {
    return file_error(path, object + problem + ": the index is damaged");
  };
  if (checksummed) {
    if (index_checksum::of_numbers(offsets.span()) != offsets_xxh3) {
      throw damaged(string_offsets_name(name), " does not match its checksum (xxh3)");
    }
    if (index_checksum::of_numbers(bytes.span()) != bytes_xxh3) {
      throw damaged(string_bytes_name(name), " does not match its checksum (xxh3)");
    }
  }
  if (offsets.empty())
    throw damaged(string_offsets_name(name), " is empty (it needs n + 1 entries)");
  if (offsets[0] != 0) throw damaged(string_offsets_name(name), " does not start at 0");
  for (std::size_t i = 1; i < offsets.size(); ++i) {
    if (offsets[i] < offsets[i - 1]) {
      throw damaged(string_offsets_name(name), " decreases at entry " + std::to_string(i));
    }
  }
  if (offsets.back() != bytes.size()) {
    throw damaged(string_offsets_name(name), " ends at byte " + std::to_string(offsets.back()) +
                                                 " of " + std::to_string(bytes.size()));
  }
}

TableReader::TableReader(const h5::File& file, int64_t format_version, bool checksummed,
                         std::shared_ptr<const FileMapping> mapping)
    : file_(file),
      version_(format_version),
      checksummed_(checksummed),
      mapping_(std::move(mapping)) {}

std::vector<std::string> TableReader::strings(const std::string& name) const {
  if (version_ < 2) {
    std::vector<std::string> values = file_.read_strings(name);
    check(name, format::kAttrChecksum, index_checksum::of_strings(values));
    return values;
  }
  const StringTable table = string_table(name);
  table.verify(file_.path());
  return table.to_strings();
}

StringTable TableReader::string_table(const std::string& name) const {
  StringTable table;
  table.name = name;
  const std::string bytes = string_bytes_name(name);
  const std::string offsets = string_offsets_name(name);
  table.offsets = numbers_unchecked<uint64_t>(offsets);
  table.bytes = numbers_unchecked<uint8_t>(bytes);
  uint64_t stored = 0;
  table.checksummed = stored_checksum(offsets, format::kAttrChecksum, table.offsets_xxh3);
  if (stored_checksum(bytes, format::kAttrChecksum, stored)) table.bytes_xxh3 = stored;
  return table;
}

uint64_t TableReader::string_count(const std::string& name) const {
  // Counted before the strings are read (a count of groups, say): checked
  // against the storage, where a damaged dimension would declare billions.
  if (version_ < 2) return file_.stored_length(name, 1);
  const uint64_t offsets = file_.stored_length(string_offsets_name(name), sizeof(uint64_t));
  if (offsets == 0) {
    throw file_error(file_.path(), string_offsets_name(name) +
                                       " is empty (it needs n + 1 entries): the index is damaged");
  }
  return offsets - 1;
}

bool TableReader::stored_checksum(const std::string& object, const char* attr,
                                  uint64_t& value) const {
  if (!file_.has_attr(object, attr)) {
    if (!checksummed_) return false;
    throw file_error(file_.path(), object + " has no " + attr +
                                       " checksum, which every table of this index has: the "
                                       "file is damaged");
  }
  value = file_.read_uint64_attr(object, attr);
  return true;
}

void TableReader::check(const std::string& object, const char* attr, uint64_t actual) const {
  uint64_t stored = 0;
  if (!stored_checksum(object, attr, stored)) return;
  if (stored != actual) {
    throw file_error(file_.path(), object +
                                       (std::string_view(attr) == format::kAttrChecksum
                                            ? " does not match its checksum"
                                            : ": its attributes do not match their checksum") +
                                       " (" + attr + "): the index is damaged");
  }
}

TableWriter::TableWriter(h5::File& file, int64_t format_version)
    : file_(file), version_(format_version) {}

void TableWriter::strings(const std::string& name, const std::vector<std::string>& values) {
  if (version_ < 2) {
    file_.write_strings(name, values);
    file_.write_uint64_attr(name, format::kAttrChecksum, index_checksum::of_strings(values));
    return;
  }
  std::size_t total = 0;
  for (const std::string& value : values) total += value.size();
  std::vector<uint8_t> bytes;
  bytes.reserve(total);
  std::vector<uint64_t> offsets;
  offsets.reserve(values.size() + 1);
  offsets.push_back(0);
  for (const std::string& value : values) {
    bytes.insert(bytes.end(), value.begin(), value.end());
    offsets.push_back(bytes.size());
  }
  file_.create_group(name);
  numbers(string_bytes_name(name), bytes);
  numbers(string_offsets_name(name), offsets);
}

}  // namespace imgpack::detail
