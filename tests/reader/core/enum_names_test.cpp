#include "enum_names.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string>

#include "imgpack/error.hpp"

namespace imgpack {
namespace {

enum class Fruit { apple, pear, plum };
constexpr std::array kFruitNames{EnumName{Fruit::apple, "apple"}, EnumName{Fruit::pear, "pear"},
                                 EnumName{Fruit::plum, "plum"}};

TEST(EnumNames, NamesAndParsesEveryValue) {
  for (Fruit fruit : {Fruit::apple, Fruit::pear, Fruit::plum}) {
    EXPECT_EQ(parse_name(kFruitNames, name_of(kFruitNames, fruit), "fruit"), fruit);
  }
  EXPECT_EQ(name_of(kFruitNames, Fruit::pear), "pear");
}

TEST(EnumNames, AnUnknownNameIsAUsageErrorListingTheChoices) {
  try {
    parse_name(kFruitNames, "Pear", "fruit");
    FAIL() << "parsed an unknown name";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "unknown fruit 'Pear' (use apple, pear or plum)");
  }
  EXPECT_THROW(parse_name(kFruitNames, "", "fruit"), UsageError);
}

TEST(EnumNames, ChoicesReadAsAList) {
  constexpr std::array one{EnumName{Fruit::apple, "apple"}};
  constexpr std::array two{EnumName{Fruit::apple, "apple"}, EnumName{Fruit::pear, "pear"}};
  EXPECT_EQ(name_choices(one), "apple");
  EXPECT_EQ(name_choices(two), "apple or pear");
  EXPECT_EQ(name_choices(kFruitNames), "apple, pear or plum");
}

}  // namespace
}  // namespace imgpack
