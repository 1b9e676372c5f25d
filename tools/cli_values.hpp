// Values typed on the imgpack command line: sizes, byte counts, colours.
// Pure functions; each throws imgpack::UsageError naming the flag and the value.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>

#include "imgpack/convert_options.hpp"

namespace imgpack::cli {

// "224" -> 224x224, "320x240" -> width 320, height 240 (each side
// smallest..largest); a UsageError names `option`, the flag the text was
// given with, and the range.
std::pair<uint32_t, uint32_t> parse_image_size(const std::string& text,
                                               const std::string& option = "--size",
                                               uint32_t smallest = 1, uint32_t largest = 65535);
// "1G", "512M", "64K", "4096", "2MB" -> bytes (powers of 1024).
uint64_t parse_byte_size(const std::string& text);
// "0", "128", "255,255,255" -> RGB.
std::array<uint8_t, 3> parse_fill(const std::string& text);
// --max-skipped: "25" -> at most 25 inputs; "1%", "0.5%" -> a percentage of
// the inputs; "0.01" (with a decimal point) -> a fraction of them.
SkipLimit parse_skip_limit(const std::string& text);

}  // namespace imgpack::cli
