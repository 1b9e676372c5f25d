// Text files as the line readers see them (path lists, class and label
// names, YOLO label files, `convert --files` lists): a UTF-8 byte order mark
// at the start is not text, and a line ends at '\n', a '\r' before it (as
// Windows writes) not part of the line. Internal to imgpack::pack; pure,
// safe from any thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "imgpack/error.hpp"

namespace imgpack {

inline constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

// `text` without a UTF-8 byte order mark at its start.
inline std::string_view without_utf8_bom(std::string_view text) {
  if (text.starts_with(kUtf8Bom)) text.remove_prefix(kUtf8Bom.size());
  return text;
}

// Throws a UsageError naming `name` and the line of the first NUL byte in
// `text`. Text holds none: a path or a name read up to one would open one file
// and store another name, and a file saved as UTF-16 holds one in every
// other byte.
inline void require_text(std::string_view text, const std::string& name) {
  const std::size_t nul = text.find('\0');
  if (nul == std::string_view::npos) return;
  const auto line =
      1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n');
  throw UsageError(name + ":" + std::to_string(line) +
                   ": a NUL byte; the file is not text (saved as UTF-16, or binary?)");
}

// Calls `each(number, line)` for every line of `text` (numbered from 1, the
// mark skipped, without the line end), in order; stops where `each` returns
// false. Text after the last '\n' is a last line; an empty text has none.
template <class Each>
void for_each_line(std::string_view text, Each&& each) {
  text = without_utf8_bom(text);
  uint32_t number = 0;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (!each(++number, line)) return;
    begin = end + 1;
  }
}

}  // namespace imgpack
