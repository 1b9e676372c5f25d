// Tests for libpack/src/inputs/json_integer.hpp: integers that fit are taken,
// everything else (a fraction, an exponent, a sign or a size the type cannot
// hold, another JSON kind) is a json::type_error saying what was found.
#include "inputs/json_integer.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace imgpack {
namespace {

using nlohmann::json;

// The message of the type_error json_integer<T> throws for `text`.
template <class T>
std::string refusal(const std::string& text) {
  try {
    json_integer<T>(json::parse(text));
  } catch (const json::type_error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(JsonInteger, TakesTheIntegersTheTypeHolds) {
  EXPECT_EQ(json_integer<uint64_t>(json::parse("18446744073709551615")), UINT64_MAX);
  EXPECT_EQ(json_integer<int64_t>(json::parse("-9223372036854775808")), INT64_MIN);
  EXPECT_EQ(json_integer<uint8_t>(json::parse("255")), 255);
  EXPECT_EQ(json_integer<int32_t>(json::parse("-7")), -7);
  EXPECT_EQ(json_integer<uint32_t>(json::parse("0")), 0u);
}

TEST(JsonInteger, RefusesWhatTheTypeCannotHoldSayingWhat) {
  EXPECT_NE(refusal<uint64_t>("8.8e116").find("expected an integer from 0 to 18446744073709551615, "
                                              "found 8.8e+116"),
            std::string::npos)
      << refusal<uint64_t>("8.8e116");
  EXPECT_NE(refusal<uint32_t>("2.5").find("found 2.5"), std::string::npos);
  EXPECT_NE(refusal<uint32_t>("3.0").find("found 3.0"), std::string::npos);
  EXPECT_NE(refusal<uint64_t>("-1").find("found -1"), std::string::npos);
  EXPECT_NE(refusal<uint8_t>("256").find("from 0 to 255, found 256"), std::string::npos);
  EXPECT_NE(refusal<int32_t>("2147483648").find("found 2147483648"), std::string::npos);
  EXPECT_NE(refusal<int64_t>("18446744073709551615").find("found 18446744073709551615"),
            std::string::npos);
  EXPECT_NE(refusal<uint32_t>("\"12\"").find("found string"), std::string::npos);
  EXPECT_NE(refusal<uint32_t>("[1, 2]").find("found array"), std::string::npos);
  EXPECT_NE(refusal<uint32_t>("null").find("found null"), std::string::npos);
}

}  // namespace
}  // namespace imgpack
