// Tests for libpack/src/augment_spec.cpp: every key of the augmentation spec
// parsed, and every malformed spec refused naming the key and its range.
#include "augment_spec.hpp"

#include <gtest/gtest.h>

#include <string>

#include "imgpack/convert_options.hpp"
#include "imgpack/error.hpp"

namespace imgpack {
namespace {

TEST(AugmentSpecTest, ParsesEveryKey) {
  AugmentSpec s = parse_augment_spec(
      "hflip,vflip=0.25,rotate=15,shift=0.1,zoom=0.8:1.2,shear=8,crop_scale=0.35:1,"
      "aspect=0.75:1.33, brightness=0.2,contrast=0.3,saturation=0.4,hue=0.05,gray=0.1,fill=edge");
  EXPECT_EQ(s.hflip, 0.5);
  EXPECT_EQ(s.vflip, 0.25);
  EXPECT_EQ(s.rotate, 15);
  EXPECT_EQ(s.shift, 0.1);
  EXPECT_EQ(s.zoom_min, 0.8);
  EXPECT_EQ(s.zoom_max, 1.2);
  EXPECT_EQ(s.shear, 8);
  EXPECT_TRUE(s.crop);
  EXPECT_EQ(s.crop_scale_min, 0.35);
  EXPECT_EQ(s.crop_scale_max, 1);
  EXPECT_EQ(s.aspect_min, 0.75);
  EXPECT_EQ(s.aspect_max, 1.33);
  EXPECT_EQ(s.brightness, 0.2);
  EXPECT_EQ(s.contrast, 0.3);
  EXPECT_EQ(s.saturation, 0.4);
  EXPECT_EQ(s.hue, 0.05);
  EXPECT_EQ(s.gray, 0.1);
  EXPECT_EQ(s.fill, FillMode::edge);
  EXPECT_TRUE(s.has_color());
}

TEST(AugmentSpecTest, EmptySpecDoesNothing) {
  AugmentSpec s = parse_augment_spec("");
  EXPECT_EQ(s.hflip, 0);
  EXPECT_EQ(s.rotate, 0);
  EXPECT_FALSE(s.crop);
  EXPECT_FALSE(s.has_color());
  EXPECT_EQ(s.fill, FillMode::reflect);
  EXPECT_EQ(parse_augment_spec("fill=constant").fill, FillMode::constant);
  EXPECT_EQ(parse_augment_spec("fill=reflect").fill, FillMode::reflect);
}

// draws(): whether augmented variants can differ from one another.
TEST(AugmentSpecTest, DrawsSaysWhetherAnythingIsRandom) {
  for (const char* spec :
       {"hflip", "vflip=0.3", "gray=0.1", "rotate=5", "shift=0.1", "zoom=0.9:1.1", "shear=3",
        "crop_scale=0.5:1", "brightness=0.2", "hue=0.05"}) {
    EXPECT_TRUE(parse_augment_spec(spec).draws()) << spec;
  }
  for (const char* spec : {"", "hflip=1", "hflip=1,vflip=1,gray=1", "zoom=1.2:1.2", "fill=edge"}) {
    EXPECT_FALSE(parse_augment_spec(spec).draws()) << spec;
  }
}

// More than one augmented variant of a spec that draws nothing would be
// copies of one another: refused, while one such variant (a stored mirror)
// is fine.
TEST(AugmentSpecTest, VariantsOfASpecThatDrawsNothingAreRefused) {
  ConvertOptions options;
  options.src = "in";
  options.out = "out";
  options.size = std::make_pair(32u, 32u);
  options.augment = "hflip=1";
  options.variants = 2;
  EXPECT_NO_THROW(options.validate());
  options.variants = 3;
  try {
    options.validate();
    ADD_FAILURE() << "3 variants of hflip=1 accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("draws nothing at random, so its 2 augmented variants"),
              std::string::npos)
        << e.what();
  }
}

TEST(AugmentSpecTest, ErrorsNameTheKeyAndTheAllowedRange) {
  struct Case {
    const char* spec;
    std::vector<std::string> expected;
  };
  const Case cases[] = {
      {"rotate=181", {"rotate", "0..180"}},
      {"rotate=-5", {"rotate", "out of range", "0..180"}},
      {"shift=1.5", {"shift", "0..1"}},
      {"hue=0.6", {"hue", "0..0.5"}},
      {"gray=2", {"gray", "0..1"}},
      {"hflip=1.5", {"hflip", "0..1"}},
      {"shear=50", {"shear", "0..45"}},
      {"brightness=1.1", {"brightness", "0..1"}},
      {"zoom=0.05:2", {"zoom", "0.1 <= LO <= HI <= 10"}},
      {"zoom=1.2", {"zoom", "LO:HI"}},
      {"zoom=1.2:0.8", {"zoom", "LO is above HI"}},
      {"crop_scale=0:1", {"crop_scale", "0.01 <= LO <= HI <= 1"}},
      {"aspect=0.5:20", {"aspect", "0.1 <= LO <= HI <= 10"}},
      {"contrast=abc", {"contrast", "not a number", "0..1"}},
      {"rotate=nan", {"rotate", "not a number"}},
      {"rotate=10deg", {"rotate", "not a number"}},
      {"brightness", {"brightness", "needs a value"}},
      {"fill=wrap", {"fill", "reflect", "constant", "edge"}},
      {"blur=3", {"unknown key 'blur'", "hflip", "crop_scale"}},
      {"hflip,hflip", {"hflip", "twice"}},
      {"hflip,,vflip", {"empty item"}},
      {"hflip,", {"empty item"}},
  };
  for (const Case& c : cases) {
    try {
      parse_augment_spec(c.spec);
      ADD_FAILURE() << c.spec << " was accepted";
    } catch (const UsageError& e) {
      for (const std::string& part : c.expected) {
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
            << c.spec << ": '" << e.what() << "' lacks '" << part << "'";
      }
    }
  }
}

TEST(AugmentSpecTest, HelpListsEveryKeyWithItsRange) {
  const std::string help = augment_spec_help();
  for (const char* key : {"hflip[=P]", "vflip[=P]", "rotate=DEG", "shift=FRAC", "zoom=LO:HI",
                          "shear=DEG", "crop_scale=LO:HI", "aspect=LO:HI", "brightness=F",
                          "contrast=F", "saturation=F", "hue=F", "gray=P", "fill=MODE"}) {
    EXPECT_NE(help.find(key), std::string::npos) << key;
  }
  EXPECT_NE(help.find("0..180"), std::string::npos);
  EXPECT_NE(help.find("0..0.5"), std::string::npos);
}

}  // namespace
}  // namespace imgpack
