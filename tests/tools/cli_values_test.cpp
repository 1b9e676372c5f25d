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

}  // namespace
}  // namespace imgpack::cli
