// One table per enum of the names its values are written and parsed as, so
// that printing and parsing cannot disagree and an unknown name is always a
// usage error, never a silent default (internal to imgpack).
//
//   constexpr EnumNames kRoleNames{"role", {EnumName{Role::all, "all"},
//                                           EnumName{Role::train, "train"}}};
//   kRoleNames.name(Role::train)   -> "train"
//   kRoleNames.parse("val")        -> throws UsageError
//                                     "unknown role 'val' (use all or train)"
// A public pair parse_role() / role_name() over its own table is one
// IMGPACK_ENUM_NAMES line (below).
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

// The table of `names` (each {Enum::value, "name"}), as the macro below builds it.
template <class Enum, std::size_t N>
constexpr EnumNames<Enum, N> enum_names(std::string_view what, const EnumName<Enum> (&names)[N]) {
  return {what, std::to_array(names)};
}

}  // namespace imgpack

// Defines the public pair `Enum parse_STEM(std::string_view)` (throws
// UsageError for an unknown name) and `std::string_view STEM_name(Enum)` over
// one table of the enum's names; `what` is what messages call the enum. At
// namespace scope in namespace imgpack, once per enum:
//   IMGPACK_ENUM_NAMES(Role, role, "role", {Role::train, "train"}, {Role::val, "val"})
// defines parse_role() and role_name(). (A macro because the pair's names are
// public and differ per enum; the table has internal linkage.)
#define IMGPACK_ENUM_NAMES(Enum, STEM, what, ...)                               \
  namespace {                                                                   \
  constexpr auto STEM##_names = enum_names<Enum>(what, {__VA_ARGS__});          \
  }                                                                             \
  Enum parse_##STEM(std::string_view text) { return STEM##_names.parse(text); } \
  std::string_view STEM##_name(Enum value) { return STEM##_names.name(value); }
