// Text from a file or a name, made safe for one line of a message or a table
// (internal to imgpack).
#pragma once

#include <string>
#include <string_view>

namespace imgpack {

// `text` with its control characters escaped ("\n", "\r", "\t", "\x1b"), so
// that what it holds cannot break a line or move the terminal's cursor.
// Every other byte, UTF-8 included, is kept.
inline std::string with_controls_escaped(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      out.append("\\x").append(1, kHex[u >> 4]).append(1, kHex[u & 0xf]);
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace imgpack
