#include "inputs/annotation_text.hpp"

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

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
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    throw UsageError(path.string() + ": cannot open " + what + ": " + std::strerror(errno));
  }
  std::string text(static_cast<std::size_t>(std::max<std::streamoff>(in.tellg(), 0)), '\0');
  in.seekg(0);
  if (!in.read(text.data(), static_cast<std::streamsize>(text.size()))) {
    throw UsageError(path.string() + ": cannot read " + what);
  }
  return text;
}

}  // namespace imgpack
