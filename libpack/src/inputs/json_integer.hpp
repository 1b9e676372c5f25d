// Whole numbers from JSON read from a file: a conversion's journal, a
// dataset's stored options, a part's record.
//
// nlohmann::json's own get<T>() converts any number without a word: a
// fraction is cut, a negative number wraps around, and a floating-point
// value outside T's range is undefined behaviour. json_integer<T>() accepts
// only a JSON integer (no fraction, no exponent) that T holds, and
// otherwise throws nlohmann::json::type_error (302) saying what it found,
// which a caller's handler of nlohmann::json::exception reports as it
// reports any other malformed JSON. Safe from any thread.
#pragma once

#include <nlohmann/json.hpp>

#include <concepts>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

namespace imgpack {

template <std::integral T>
requires(!std::same_as<T, bool>) T json_integer(const nlohmann::json& value) {
  if (value.is_number_unsigned()) {
    const auto v = value.get<uint64_t>();
    if (std::in_range<T>(v)) return static_cast<T>(v);
  } else if (value.is_number_integer()) {
    const auto v = value.get<int64_t>();
    if (std::in_range<T>(v)) return static_cast<T>(v);
  }
  throw nlohmann::json::type_error::create(
      302,
      "expected an integer from " + std::to_string(std::numeric_limits<T>::min()) + " to " +
          std::to_string(std::numeric_limits<T>::max()) + ", found " +
          (value.is_number() ? value.dump() : std::string(value.type_name())),
      &value);
}

}  // namespace imgpack
