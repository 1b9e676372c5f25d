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
  expect_round_trip({DctScales::halvings, DctScales::eighths}, parse_dct_scales, dct_scales_name);
  expect_round_trip({LabelSource::dirs, LabelSource::none, LabelSource::csv}, parse_label_source,
                    label_source_name);
  expect_round_trip({WriteOrder::shuffle, WriteOrder::sorted}, parse_write_order, write_order_name);
  expect_round_trip({OnError::skip, OnError::fail}, parse_on_error, on_error_name);
}

TEST(ConvertOptionNames, UnknownNamesAreUsageErrorsNotDefaults) {
  EXPECT_THROW(parse_resize_mode("Crop"), UsageError);
  EXPECT_THROW(parse_color_mode("grey"), UsageError);
  EXPECT_THROW(parse_dct_scales("halves"), UsageError);
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

// An append converts with the options a dataset stored: from_json() must give
// back every option to_json() wrote.
TEST(ConvertOptions, FromJsonGivesBackWhatToJsonWrote) {
  ConvertOptions options;
  options.size = std::make_pair(64u, 48u);
  options.resize = ResizeMode::pad;
  options.fill = {1, 2, 3};
  options.color = ColorMode::gray;
  options.scan.labels = LabelSource::csv;
  options.scan.group_regex = "/(g[0-9]+)_";
  options.scan.csv =
      CsvInput{"list.csv", "file", "label", "site", "mask", {"age", "score"}, "tags"};
  options.masks.suffix = "_m";
  options.masks.fill = 7;
  options.masks.colors = "colors.csv";
  options.boxes.yolo = true;
  options.boxes.yolo_names = "names.txt";
  options.boxes.yolo_keypoints = "nose,left_eye";
  options.boxes.min_visible = 0.5;
  options.boxes.keypoint_flip_map = "left_eye:right_eye";
  options.variants = 3;
  options.augment = "hflip,rotate=10";
  options.seed = 42;
  options.order = WriteOrder::sorted;
  options.shard_size = 1 << 20;
  options.max_pixels = 1 << 20;
  options.dct_scaling = false;
  const std::string json = options.to_json();
  const ConvertOptions back = ConvertOptions::from_json(json);
  EXPECT_EQ(back.to_json(), json);
  EXPECT_EQ(back.scan.csv->mask, "mask");
  EXPECT_EQ(back.masks.fill, 7);

  ConvertOptions plain;  // no size: the inputs' own
  EXPECT_FALSE(ConvertOptions::from_json(plain.to_json()).size);
  EXPECT_EQ(ConvertOptions::from_json(plain.to_json()).to_json(), plain.to_json());
}

// A dataset's stored options with numbers the writer never writes (a
// fraction, a sign, a value beyond the field) are an Error naming the key,
// never a value cut or wrapped into range.
TEST(ConvertOptions, FromJsonRefusesNumbersTheFieldCannotHold) {
  ConvertOptions options;
  options.size = std::make_pair(64u, 48u);
  const nlohmann::ordered_json good = nlohmann::ordered_json::parse(options.to_json());
  const auto refusal = [&](const char* key, const nlohmann::ordered_json& value) {
    nlohmann::ordered_json j = good;
    j[key] = value;
    try {
      ConvertOptions::from_json(j.dump());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(refusal("width", 8.9e116).find("key 'width'"), std::string::npos);
  EXPECT_NE(refusal("width", -64).find("key 'width'"), std::string::npos);
  EXPECT_NE(refusal("variants", 2.5).find("key 'variants'"), std::string::npos);
  EXPECT_NE(refusal("seed", -1).find("key 'seed'"), std::string::npos);
  EXPECT_NE(refusal("shard_size", 1e300).find("key 'shard_size'"), std::string::npos);
  EXPECT_NE(refusal("fill", nlohmann::ordered_json::array({0, 0, 300})).find("key 'fill'"),
            std::string::npos);
  EXPECT_NE(refusal("fill", nlohmann::ordered_json::array({0, 0})).find("key 'fill'"),
            std::string::npos);
  EXPECT_EQ(refusal("variants", 2), "(accepted)");
}

// Options stored before dct_scales existed name no set: those datasets were
// decoded with eighths, and an append to one must decode so too. Their JSON
// comes back unchanged (the dataset's uuid is derived from it).
TEST(ConvertOptions, OptionsThatNameNoDctScalesMeanEighthsAndKeepTheirText) {
  ConvertOptions fresh;
  EXPECT_EQ(fresh.dct_scales, DctScales::halvings);
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(fresh.to_json());
  EXPECT_EQ(j["dct_scales"], "halvings");
  EXPECT_EQ(ConvertOptions::from_json(fresh.to_json()).dct_scales, DctScales::halvings);

  j.erase("dct_scales");
  const std::string older = j.dump();
  const ConvertOptions back = ConvertOptions::from_json(older);
  EXPECT_EQ(back.dct_scales, DctScales::eighths);
  EXPECT_EQ(back.to_json(), older);

  j["dct_scales"] = "sixteenths";
  try {
    ConvertOptions::from_json(j.dump());
    FAIL() << "accepted an unknown DCT scale set";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dct_scales"), std::string::npos) << e.what();
  }
}

TEST(ConvertOptions, FromJsonRefusesWhatIsNotStoredOptionsNamingTheKey) {
  EXPECT_THROW(ConvertOptions::from_json("not json"), Error);
  try {
    ConvertOptions::from_json(R"({"width": null, "height": null, "resize": 3})");
    FAIL() << "accepted a number for resize";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("resize"), std::string::npos) << e.what();
  }
  // A key the options need, missing (options written by another program):
  // said once, in our words, not nlohmann's "[json.exception...]".
  const auto error_of = [](const std::string& text) {
    try {
      ConvertOptions::from_json(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(error_of(R"({"seed": 1})"), "conversion options: key 'width' is missing");
  const std::string wrong_type = error_of(R"({"width": null, "height": null, "resize": 3})");
  EXPECT_EQ(wrong_type.find("json.exception"), std::string::npos) << wrong_type;
  EXPECT_NE(wrong_type.find("key 'resize': type must be string"), std::string::npos) << wrong_type;
}

}  // namespace
}  // namespace imgpack
