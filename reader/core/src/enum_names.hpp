// One table per enum of the names its values are written and parsed as, so
// that printing and parsing cannot disagree and an unknown name is always a
// usage error, never a silent default (internal to imgpack).
//
//   constexpr EnumNames kRoleNames{"role", {EnumName{Role::all, "all"},
//                                           EnumName{Role::train, "train"}}};
//   kRoleNames.name(Role::train)   -> "train"
//   kRoleNames.parse("val")        -> throws UsageError
//                                     "unknown role 'val' (use all or train)"
// A public pair parse_role() / role_name() is one line each over the table.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "imgpack/error.hpp"

namespace imgpack {

template <class Enum>
struct EnumName {
  Enum value;
  std::string_view name;
};
// Spelled out for compilers without class template argument deduction for
// aggregates (clang before 17).
template <class Enum>
EnumName(Enum, std::string_view) -> EnumName<Enum>;

// "a, b or c"
template <class Enum, std::size_t N>
std::string name_choices(const std::array<EnumName<Enum>, N>& names) {
  std::string text;
  for (std::size_t i = 0; i < N; ++i) {
    if (i > 0) text += i + 1 == N ? " or " : ", ";
    text += names[i].name;
  }
  return text;
}

// The name of `value`; every value of the enum must be in the table (tested
// per enum), so the fallback "?" is never seen.
template <class Enum, std::size_t N>
constexpr std::string_view name_of(const std::array<EnumName<Enum>, N>& names, Enum value) {
  for (const EnumName<Enum>& entry : names) {
    if (entry.value == value) return entry.name;
  }
  return "?";
}

// The value named `text`; anything else is a UsageError naming `what` and the choices.
template <class Enum, std::size_t N>
Enum parse_name(const std::array<EnumName<Enum>, N>& names, std::string_view text,
                std::string_view what) {
  for (const EnumName<Enum>& entry : names) {
    if (entry.name == text) return entry.value;
  }
  throw UsageError("unknown " + std::string(what) + " '" + std::string(text) + "' (use " +
                   name_choices(names) + ")");
}

// An enum's names with what the enum is called in messages ("role").
template <class Enum, std::size_t N>
struct EnumNames {
  std::string_view what;
  std::array<EnumName<Enum>, N> names;

  constexpr std::string_view name(Enum value) const { return name_of(names, value); }
  Enum parse(std::string_view text) const { return parse_name(names, text, what); }
  std::string choices() const { return name_choices(names); }
};
template <class Enum, std::size_t N>
EnumNames(std::string_view, const EnumName<Enum> (&)[N]) -> EnumNames<Enum, N>;

}  // namespace imgpack
