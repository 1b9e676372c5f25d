#include "imgpack/convert_options.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "imgpack/error.hpp"

namespace imgpack {
namespace {

template <class Enum, class Parse, class Name>
void expect_round_trip(std::initializer_list<Enum> values, Parse parse, Name name) {
  for (Enum value : values) {
    const std::string text(name(value));
    EXPECT_NE(text, "?");
    EXPECT_EQ(parse(text), value) << text;
  }
}

TEST(ConvertOptionNames, EveryValueRoundTrips) {
  expect_round_trip({ResizeMode::crop, ResizeMode::stretch, ResizeMode::pad}, parse_resize_mode,
                    resize_mode_name);
  expect_round_trip({ColorMode::rgb, ColorMode::gray}, parse_color_mode, color_mode_name);
  expect_round_trip({LabelSource::dirs, LabelSource::none, LabelSource::csv}, parse_label_source,
                    label_source_name);
  expect_round_trip({WriteOrder::shuffle, WriteOrder::sorted}, parse_write_order, write_order_name);
  expect_round_trip({OnError::skip, OnError::fail}, parse_on_error, on_error_name);
}

TEST(ConvertOptionNames, UnknownNamesAreUsageErrorsNotDefaults) {
  EXPECT_THROW(parse_resize_mode("Crop"), UsageError);
  EXPECT_THROW(parse_color_mode("grey"), UsageError);
  EXPECT_THROW(parse_label_source("folders"), UsageError);
  EXPECT_THROW(parse_write_order("random"), UsageError);
  EXPECT_THROW(parse_on_error("ignore"), UsageError);
}

TEST(ConvertOptions, JsonNamesTheEnumsAsTheCliDoes) {
  ConvertOptions options;
  options.resize = ResizeMode::pad;
  options.color = ColorMode::gray;
  options.order = WriteOrder::sorted;
  options.scan.labels = LabelSource::none;
  const nlohmann::json j = nlohmann::json::parse(options.to_json());
  EXPECT_EQ(j["resize"], "pad");
  EXPECT_EQ(j["color"], "gray");
  EXPECT_EQ(j["order"], "sorted");
  EXPECT_EQ(j["labels"], "none");
}

}  // namespace
}  // namespace imgpack
