// The UTF-8 byte order mark that Windows editors write at the start of a text
// file, which no list, name or table imgpack reads counts as text (internal to
// imgpack::pack).
#pragma once

#include <string_view>

namespace imgpack {

inline constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

// `text` without a UTF-8 byte order mark at its start.
inline std::string_view without_utf8_bom(std::string_view text) {
  if (text.starts_with(kUtf8Bom)) text.remove_prefix(kUtf8Bom.size());
  return text;
}

}  // namespace imgpack
