#include "inputs/annotation_text.hpp"

#include <array>
#include <charconv>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "files.hpp"
#include "imgpack/error.hpp"

namespace imgpack {

namespace fs = std::filesystem;

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

std::optional<std::pair<std::size_t, std::size_t>> first_repeat(
    const std::vector<std::string>& names) {
  std::unordered_map<std::string_view, std::size_t> first;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto [at, inserted] = first.emplace(names[i], i);
    if (!inserted) return std::make_pair(at->second, i);
  }
  return std::nullopt;
}

std::string number_text(double value) {
  std::array<char, 32> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return {buffer.data(), result.ptr};
}

std::string read_text_file(const fs::path& path, const std::string& what) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw UsageError(path.string() + ": a directory, not " + what);
  std::vector<uint8_t> bytes;
  std::string problem = read_file(path, bytes);
  if (!problem.empty()) {
    // "cannot open: REASON" -> "cannot open WHAT: REASON"
    const std::size_t colon = problem.find(':');
    if (colon != std::string::npos) problem.insert(colon, " " + what);
    throw UsageError(path.string() + ": " + problem);
  }
  return {bytes.begin(), bytes.end()};
}

}  // namespace imgpack
