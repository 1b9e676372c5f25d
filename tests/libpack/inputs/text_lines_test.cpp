#include "inputs/text_lines.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace imgpack {
namespace {

using Lines = std::vector<std::pair<uint32_t, std::string>>;

Lines lines_of(std::string_view text) {
  Lines lines;
  for_each_line(text, [&](uint32_t number, std::string_view line) {
    lines.emplace_back(number, line);
    return true;
  });
  return lines;
}

TEST(TextLines, SplitsAtNewlinesWithoutTheLineEnds) {
  EXPECT_EQ(lines_of("a\nb\n"), (Lines{{1, "a"}, {2, "b"}}));
  EXPECT_EQ(lines_of("a\r\nb\r\n"), (Lines{{1, "a"}, {2, "b"}}));
  EXPECT_EQ(lines_of("a\nlast"), (Lines{{1, "a"}, {2, "last"}}));
  EXPECT_EQ(lines_of("\n\nx\n"), (Lines{{1, ""}, {2, ""}, {3, "x"}}));
  EXPECT_TRUE(lines_of("").empty());
}

// Only the CR of a CRLF line end goes: one inside a line, or two before the
// newline, leave the rest as written.
TEST(TextLines, KeepsOtherCarriageReturns) {
  EXPECT_EQ(lines_of("a\rb\n"), (Lines{{1, "a\rb"}}));
  EXPECT_EQ(lines_of("a\r\r\n"), (Lines{{1, "a\r"}}));
}

TEST(TextLines, RequireTextNamesTheLineOfANulByte) {
  EXPECT_NO_THROW(require_text("a\nb\n", "list.txt"));
  try {
    require_text(std::string_view("a\nb\nc\0d\n", 8), "list.txt");
    ADD_FAILURE() << "a NUL byte passed";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "list.txt:3: a NUL byte; the file is not text (saved as UTF-16, or binary?)");
  }
}

TEST(TextLines, SkipsAByteOrderMarkAtTheStartOnly) {
  const std::string bom(kUtf8Bom);
  EXPECT_EQ(lines_of(bom + "a\n" + bom + "b"), (Lines{{1, "a"}, {2, bom + "b"}}));
  EXPECT_TRUE(lines_of(bom).empty());
  EXPECT_EQ(without_utf8_bom(bom + bom), bom);
}

TEST(TextLines, StopsWhereTheCallerSays) {
  Lines seen;
  for_each_line("a\nb\nc\n", [&](uint32_t number, std::string_view line) {
    seen.emplace_back(number, line);
    return number < 2;
  });
  EXPECT_EQ(seen, (Lines{{1, "a"}, {2, "b"}}));
}

}  // namespace
}  // namespace imgpack
