#include "flat_json.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "imgpack/error.hpp"

namespace imgpack::detail {
namespace {

std::string error_of(std::string_view text) {
  try {
    FlatJsonObject::parse(text, "doc");
  } catch (const Error& e) {
    return e.what();
  }
  return "(parsed)";
}

TEST(FlatJson, WritesMembersInOrder) {
  FlatJsonWriter w;
  w.add_unsigned("n", 18446744073709551615u);
  w.add_signed("f", -3);
  w.add_string("s", "a\"b\\c\n\x01/é");
  EXPECT_EQ(w.text(), R"({"n":18446744073709551615,"f":-3,"s":"a\"b\\c\u000a\u0001/é"})");
  EXPECT_EQ(FlatJsonWriter().text(), "{}");
}

TEST(FlatJson, ReadsWhatItWrites) {
  FlatJsonWriter w;
  const std::string odd =
      "tab\tquote\"back\\slash\x1f end "
      "\xe2\x82\xac";  // ends in a euro sign
  w.add_string("text", odd);
  w.add_unsigned("big", std::numeric_limits<uint64_t>::max());
  w.add_signed("small", std::numeric_limits<int64_t>::min());
  const FlatJsonObject o = FlatJsonObject::parse(w.text(), "doc");
  EXPECT_EQ(o.string_member("text"), odd);
  EXPECT_EQ(o.unsigned_member("big"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(o.signed_member("small"), std::numeric_limits<int64_t>::min());
  EXPECT_TRUE(o.has("big"));
  EXPECT_FALSE(o.has("other"));
}

TEST(FlatJson, ReadsWhatPythonsJsonDumpsWrites) {
  // json.dumps({"a": "caf\u00e9 \U0001F600", "b": 7}, indent=1): ASCII with
  // \u escapes, a surrogate pair, white space between the tokens.
  const FlatJsonObject o =
      FlatJsonObject::parse("{\n \"a\": \"caf\\u00e9 \\ud83d\\ude00\\/\",\n \"b\": 7\n}\n", "doc");
  EXPECT_EQ(o.string_member("a"), "caf\xc3\xa9 \xf0\x9f\x98\x80/");
  EXPECT_EQ(o.unsigned_member("b"), 7u);
}

TEST(FlatJson, TypedAccessNamesTheMember) {
  const FlatJsonObject o =
      FlatJsonObject::parse(R"({"s":"x","n":-1,"m":99999999999999999999})", "doc");
  try {
    (void)o.unsigned_member("s");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "doc: member 's' is not an unsigned 64-bit integer (a string)");
  }
  EXPECT_THROW((void)o.unsigned_member("n"), Error);  // negative
  EXPECT_THROW((void)o.signed_member("m"), Error);    // out of range
  EXPECT_THROW((void)o.string_member("n"), Error);
  try {
    (void)o.string_member("missing");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "doc: member 'missing' is missing");
  }
}

TEST(FlatJson, RejectsWhatIsNotAFlatObjectOfStringsAndIntegers) {
  EXPECT_EQ(error_of(""), "doc: expected '{' at byte 0");
  EXPECT_EQ(error_of("[]"), "doc: expected '{' at byte 0");
  EXPECT_EQ(error_of(R"({"a":1.5})"), "doc: only integers are accepted at byte 6");
  EXPECT_EQ(error_of(R"({"a":true})"), "doc: expected a string or an integer at byte 5");
  EXPECT_EQ(error_of(R"({"a":{}})"), "doc: expected a string or an integer at byte 5");
  EXPECT_EQ(error_of(R"({"a":1,"a":2})"), "doc: member 'a' appears twice at byte 12");
  EXPECT_EQ(error_of(R"({"a":1} x)"), "doc: text after the object at byte 8");
  EXPECT_EQ(error_of(R"({"a":1)"), "doc: expected ',' at byte 6");
  EXPECT_EQ(error_of(R"({"a":"x)"), "doc: unterminated string at byte 7");
  EXPECT_EQ(error_of("{\"a\":\"x\ny\"}"), "doc: control character in a string at byte 7");
  EXPECT_EQ(error_of(R"({"a":"\x"})"), "doc: unknown escape at byte 7");
  EXPECT_EQ(error_of(R"({"a":"\u12"})"), "doc: bad \\u escape at byte 8");
  EXPECT_EQ(error_of(R"({"a":"\ude00"})"), "doc: lone low surrogate at byte 12");
  EXPECT_EQ(error_of(R"({"a":"\ud83dx"})"), "doc: high surrogate without its low half at byte 12");
  EXPECT_EQ(error_of(R"({1:2})"), "doc: expected '\"' at byte 1");
  EXPECT_EQ(error_of("{}"), "(parsed)");
  EXPECT_EQ(error_of(" { } "), "(parsed)");
}

}  // namespace
}  // namespace imgpack::detail
