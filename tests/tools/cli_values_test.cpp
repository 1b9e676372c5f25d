#include "cli_values.hpp"

#include <gtest/gtest.h>

#include "imgpack/error.hpp"

namespace imgpack::cli {
namespace {

TEST(ParseHelpers, SizesBytesAndFills) {
  EXPECT_EQ(parse_image_size("224"), (std::pair<uint32_t, uint32_t>{224, 224}));
  EXPECT_EQ(parse_image_size("320x240"), (std::pair<uint32_t, uint32_t>{320, 240}));
  EXPECT_THROW(parse_image_size("0"), UsageError);
  EXPECT_THROW(parse_image_size("12x"), UsageError);
  EXPECT_THROW(parse_image_size("-4"), UsageError);
  try {
    parse_image_size("0", "--crop");
    ADD_FAILURE() << "size 0 accepted";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--crop '0': each side must be between 1 and 65535");
  }
  EXPECT_EQ(parse_byte_size("4096"), 4096u);
  EXPECT_EQ(parse_byte_size("64K"), 65536u);
  EXPECT_EQ(parse_byte_size("1G"), 1ull << 30);
  EXPECT_EQ(parse_byte_size("2MB"), 2ull << 20);
  EXPECT_THROW(parse_byte_size("1Q"), UsageError);
  EXPECT_THROW(parse_byte_size(""), UsageError);
  EXPECT_EQ(parse_fill("7"), (std::array<uint8_t, 3>{7, 7, 7}));
  EXPECT_EQ(parse_fill("1,2,3"), (std::array<uint8_t, 3>{1, 2, 3}));
  EXPECT_THROW(parse_fill("256"), UsageError);
  EXPECT_THROW(parse_fill("1,2"), UsageError);
}

TEST(ParseHelpers, MaxSkippedIsACountAPercentageOrAFraction) {
  EXPECT_EQ(parse_skip_limit("25").count, std::optional<uint64_t>(25));
  EXPECT_EQ(parse_skip_limit("0").count, std::optional<uint64_t>(0));
  EXPECT_FALSE(parse_skip_limit("1%").count);
  EXPECT_DOUBLE_EQ(parse_skip_limit("1%").fraction, 0.01);
  EXPECT_DOUBLE_EQ(parse_skip_limit("0.5%").fraction, 0.005);
  EXPECT_DOUBLE_EQ(parse_skip_limit("100%").fraction, 1.0);
  EXPECT_DOUBLE_EQ(parse_skip_limit("0.25").fraction, 0.25);
  EXPECT_DOUBLE_EQ(parse_skip_limit("1.0").fraction, 1.0);
  for (const char* bad : {"", "%", ".", "-1", "1e3", "101%", "1.5", "a%", "1..2", "2 "}) {
    EXPECT_THROW(parse_skip_limit(bad), UsageError) << bad;
  }
  EXPECT_EQ(parse_skip_limit("1%").allowed(99), 0u);
  EXPECT_EQ(parse_skip_limit("1%").allowed(100), 1u);
  EXPECT_EQ(parse_skip_limit("29%").allowed(100), 29u);
  EXPECT_EQ(parse_skip_limit("7").allowed(3), 7u);
  EXPECT_EQ(parse_skip_limit("1%").text(), "1%");
  EXPECT_EQ(parse_skip_limit("7").text(), "7");
}

}  // namespace
}  // namespace imgpack::cli
