#include "inputs/boxes_input.hpp"  // keypoint_flip_table()

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "imgpack/error.hpp"
#include "inputs/annotation_text.hpp"

namespace imgpack {

namespace {

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::optional<int32_t> parse_index(std::string_view text, std::size_t count) {
  int32_t value = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value < 0 ||
      static_cast<std::size_t>(value) >= count) {
    return std::nullopt;
  }
  return value;
}

std::vector<int32_t> flip_from_map(const std::vector<std::string>& names,
                                   const std::string& flip_map) {
  const std::string quoted = "BoxOptions::keypoint_flip_map '" + flip_map + "'";
  std::unordered_map<std::string_view, int32_t> index_of_name;
  for (std::size_t k = 0; k < names.size(); ++k) {
    index_of_name.emplace(names[k], static_cast<int32_t>(k));
  }
  auto resolve = [&](std::string_view token) {
    const auto it = index_of_name.find(token);
    if (it != index_of_name.end()) return it->second;
    if (const std::optional<int32_t> index = parse_index(token, names.size())) return *index;
    throw UsageError(quoted + ": '" + std::string(token) +
                     "' is neither a keypoint name nor an index below " +
                     std::to_string(names.size()) + " (keypoints: " + join(names) + ")");
  };
  std::vector<int32_t> table(names.size());
  std::iota(table.begin(), table.end(), 0);
  std::string_view rest = flip_map;
  bool paired = false;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view entry = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (entry.empty()) continue;
    const std::size_t colon = entry.find(':');
    if (colon == std::string_view::npos || entry.find(':', colon + 1) != std::string_view::npos) {
      throw UsageError(quoted + ": '" + std::string(entry) +
                       "' is not a pair 'a:b' of keypoint names or indices");
    }
    const int32_t a = resolve(trim(entry.substr(0, colon)));
    const int32_t b = resolve(trim(entry.substr(colon + 1)));
    if (a == b) {
      throw UsageError(quoted + ": pairs keypoint '" + names[static_cast<std::size_t>(a)] +
                       "' with itself");
    }
    for (const int32_t k : {a, b}) {
      if (table[static_cast<std::size_t>(k)] != k) {
        throw UsageError(quoted + ": keypoint '" + names[static_cast<std::size_t>(k)] +
                         "' is paired twice");
      }
    }
    table[static_cast<std::size_t>(a)] = b;
    table[static_cast<std::size_t>(b)] = a;
    paired = true;
  }
  if (!paired) {
    throw UsageError(quoted +
                     ": names no pair 'a:b'; 'none' keeps every keypoint in its place under a "
                     "mirror, and no map pairs the names that differ only by left/right");
  }
  return table;
}

// Whether `text` holds the side word `word` at `at`: "left" anywhere, "l"
// only as a word of its own (between start, end, '_', '-', ' ' or '.').
bool side_at(const std::string& text, std::size_t at, std::string_view word) {
  if (text.compare(at, word.size(), word) != 0) return false;
  if (word.size() > 1) return true;
  auto delimiter = [&](std::size_t i) {
    return i >= text.size() || text[i] == '_' || text[i] == '-' || text[i] == ' ' || text[i] == '.';
  };
  return (at == 0 || delimiter(at - 1)) && delimiter(at + word.size());
}

// Pairs the names that are the same but for "left" (or a word "l") where the
// other has "right" ("r"), case-insensitive: left_eye / right_eye, l_eye /
// r_eye, eye.L / eye.R; a name with two such partners keeps none.
std::vector<int32_t> flip_from_names(const std::vector<std::string>& names) {
  std::vector<std::string> lower;
  lower.reserve(names.size());
  std::unordered_map<std::string_view, int32_t> index_of;  // -1: two names the same
  for (const std::string& name : names) lower.push_back(lowercase(name));
  for (std::size_t k = 0; k < lower.size(); ++k) {
    const auto [it, inserted] = index_of.emplace(lower[k], static_cast<int32_t>(k));
    if (!inserted) it->second = -1;
  }
  std::vector<int32_t> table(names.size());
  std::iota(table.begin(), table.end(), 0);
  for (std::size_t k = 0; k < lower.size(); ++k) {
    int32_t partner = -1;
    int partners = 0;
    for (const auto& [left, right] :
         {std::pair<std::string_view, std::string_view>{"left", "right"},
          std::pair<std::string_view, std::string_view>{"l", "r"}}) {
      for (std::size_t at = lower[k].find(left); at != std::string::npos;
           at = lower[k].find(left, at + 1)) {
        if (!side_at(lower[k], at, left)) continue;
        std::string candidate = lower[k];
        candidate.replace(at, left.size(), right);
        const auto it = index_of.find(candidate);
        if (it != index_of.end() && it->second >= 0 && it->second != partner) {
          partner = it->second;
          ++partners;
        }
      }
    }
    const auto p = static_cast<std::size_t>(partner);
    if (partners == 1 && index_of.at(lower[k]) >= 0 && table[k] == static_cast<int32_t>(k) &&
        table[p] == partner) {
      table[k] = partner;
      table[p] = static_cast<int32_t>(k);
    }
  }
  return table;
}

}  // namespace

std::vector<int32_t> keypoint_flip_table(const std::vector<std::string>& names,
                                         const std::string& flip_map) {
  if (trim(flip_map) == "none") {
    std::vector<int32_t> table(names.size());
    std::iota(table.begin(), table.end(), 0);
    return table;
  }
  return trim(flip_map).empty() ? flip_from_names(names) : flip_from_map(names, flip_map);
}

}  // namespace imgpack
