#include "cli_values.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdint>
#include <vector>

#include "imgpack/error.hpp"

namespace imgpack::cli {

namespace {

uint64_t parse_unsigned(const std::string& text, const std::string& what) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), ::isdigit)) {
    throw UsageError(what + " '" + text + "' is not a non-negative integer");
  }
  // 19 digits always fit in 64 bits; more are far past any size or count.
  if (text.size() > 19) throw UsageError(what + " '" + text + "' is too large");
  return std::stoull(text);
}

}  // namespace

std::pair<uint32_t, uint32_t> parse_image_size(const std::string& text, const std::string& option,
                                               uint32_t smallest, uint32_t largest) {
  auto x = text.find_first_of("xX");
  uint64_t w, h;
  if (x == std::string::npos) {
    w = h = parse_unsigned(text, option);
  } else {
    w = parse_unsigned(text.substr(0, x), option + " width");
    h = parse_unsigned(text.substr(x + 1), option + " height");
  }
  if (w < smallest || h < smallest || w > largest || h > largest) {
    throw UsageError(option + " '" + text + "': each side must be between " +
                     std::to_string(smallest) + " and " + std::to_string(largest));
  }
  return {static_cast<uint32_t>(w), static_cast<uint32_t>(h)};
}

uint64_t parse_byte_size(const std::string& text) {
  if (text.empty()) throw UsageError("empty byte size");
  std::string digits = text;
  uint64_t unit = 1;
  char last = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
  if (last == 'B' && text.size() > 1) {
    digits.pop_back();
    last = static_cast<char>(std::toupper(static_cast<unsigned char>(digits.back())));
  }
  if (last == 'K' || last == 'M' || last == 'G' || last == 'T') {
    digits.pop_back();
    unit = last == 'K'   ? 1ULL << 10
           : last == 'M' ? 1ULL << 20
           : last == 'G' ? 1ULL << 30
                         : 1ULL << 40;
  }
  uint64_t value = parse_unsigned(digits, "byte size '" + text + "':");
  if (value > UINT64_MAX / unit) throw UsageError("byte size '" + text + "' is too large");
  return value * unit;
}

std::array<uint8_t, 3> parse_fill(const std::string& text) {
  std::vector<uint64_t> values;
  std::size_t start = 0;
  while (true) {
    auto comma = text.find(',', start);
    values.push_back(parse_unsigned(text.substr(start, comma - start), "--fill"));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (values.size() != 1 && values.size() != 3) {
    throw UsageError("--fill '" + text + "' must be one value or three (R,G,B)");
  }
  for (uint64_t v : values) {
    if (v > 255) throw UsageError("--fill '" + text + "': values must be 0..255");
  }
  if (values.size() == 1) values = {values[0], values[0], values[0]};
  return {static_cast<uint8_t>(values[0]), static_cast<uint8_t>(values[1]),
          static_cast<uint8_t>(values[2])};
}

SkipLimit parse_skip_limit(const std::string& text) {
  const std::string usage = "--max-skipped '" + text +
                            "': give a count (25), a percentage (1%) or a fraction (0.01) of "
                            "the inputs";
  SkipLimit limit;
  const bool percent = !text.empty() && text.back() == '%';
  const std::string number = percent ? text.substr(0, text.size() - 1) : text;
  if (!percent && number.find('.') == std::string::npos) {
    if (number.empty() || !std::all_of(number.begin(), number.end(), ::isdigit)) {
      throw UsageError(usage);
    }
    limit.count = parse_unsigned(number, "--max-skipped");
    return limit;
  }
  const bool plain =
      !number.empty() && number != "." &&
      std::all_of(number.begin(), number.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; }) &&
      std::count(number.begin(), number.end(), '.') <= 1;
  if (!plain) throw UsageError(usage);
  const double value = std::stod(number) / (percent ? 100.0 : 1.0);
  if (value > 1) throw UsageError("--max-skipped '" + text + "': at most 100% of the inputs");
  limit.fraction = value;
  return limit;
}

}  // namespace imgpack::cli
