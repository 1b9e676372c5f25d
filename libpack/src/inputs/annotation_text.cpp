#include "inputs/annotation_text.hpp"

#include <array>
#include <charconv>
#include <cstdint>
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
