// The CLI's rewording of library messages (tools/cli_wording.cpp): the
// libraries name their options, the CLI shows its flags. Each case makes a
// real library error, so a library message that names an option the table
// does not know ("Struct::field" left over) fails here.
#include "cli_wording.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "augment.hpp"
#include "imgpack/convert_options.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/error.hpp"
#include "imgpack/sample_data.hpp"
#include "imgpack/selection.hpp"
#include "imgpack/split.hpp"
#include "inputs/boxes_input.hpp"
#include "test_support.hpp"

namespace imgpack::cli {
namespace {

TEST(CliWording, ReplacesOptionsWithFlags) {
  EXPECT_EQ(cli_wording("SplitSpec::folds 9 is more than the 4 groups left after "
                        "SplitSpec::test_fraction"),
            "--folds 9 is more than the 4 groups left after --test");
  EXPECT_EQ(cli_wording("a (use ScanOptions::group_missing_ok to give them no group)"),
            "a (use --group-missing ok to give them no group)");
  EXPECT_EQ(cli_wording("ScanOptions::group_regex 'x' has no capture group"),
            "--group-regex 'x' has no capture group");
  EXPECT_EQ(cli_wording("t.csv: no column 'score' (CsvInput::targets)"),
            "t.csv: no column 'score' (--csv-targets)");
  EXPECT_EQ(cli_wording("t.csv: no column 'tags' (CsvInput::multilabel)"),
            "t.csv: no column 'tags' (--csv-multilabel)");
}

TEST(CliWording, LeavesOtherTextAlone) {
  EXPECT_EQ(cli_wording(""), "");
  EXPECT_EQ(cli_wording("shard-00001.h5: /images is chunked, expected contiguous"),
            "shard-00001.h5: /images is chunked, expected contiguous");
  EXPECT_EQ(cli_wording("std::vector and Foo::bar are not options"),
            "std::vector and Foo::bar are not options");
}

// A message echoing a huge value is cut around that value's middle; names
// are still reworded at both ends, and a name inside a word is not a name.
TEST(CliWording, ErrorTextCutsAHugeMessage) {
  EXPECT_EQ(error_text("SplitSpec::folds 3"), "--folds 3");
  const std::string middle(50 << 20, 'a');
  const std::string text = error_text("list.txt:2: SplitSpec::folds '" + middle + "' ends " +
                                      "SplitSpec::test_fraction");
  EXPECT_LT(text.size(), 4200u);
  EXPECT_TRUE(text.starts_with("list.txt:2: --folds 'aaa")) << text.substr(0, 40);
  EXPECT_TRUE(text.ends_with("aaa' ends --test")) << text.substr(text.size() - 40);
  EXPECT_NE(text.find("aaa[... " + std::to_string(middle.size() + 2 - std::size_t{768}) +
                      " bytes left out ...]aaa"),
            std::string::npos);
  EXPECT_EQ(cli_wording("xSplitSpec::folds"), "xSplitSpec::folds");

  // Many words, none long: the message is cut around its middle.
  std::string words;
  for (int i = 0; i < 2000; ++i) words += "word" + std::to_string(i) + " ";
  const std::string cut = error_text("SplitSpec::folds " + words + "SplitSpec::test_fraction");
  EXPECT_LT(cut.size(), 4200u);
  EXPECT_TRUE(cut.starts_with("--folds word0 word1 ")) << cut.substr(0, 40);
  EXPECT_TRUE(cut.ends_with("word1999 --test")) << cut.substr(cut.size() - 40);
  EXPECT_NE(cut.find(" bytes left out ...] "), std::string::npos);
}

// A message naming a path near PATH_MAX twice keeps the reason between the
// two: each long word is cut around its own middle.
TEST(CliWording, ErrorTextKeepsTheReasonBetweenTwoLongPaths) {
  std::string path = "out";
  while (path.size() < 4000) path += "/" + std::string(250, 'o');
  const std::string journal = path + "/convert.journal";
  const std::string text = error_text(journal + ": cannot open: File name too long (the shards " +
                                      "written so far are journaled in " + journal + ")");
  EXPECT_LT(text.size(), 2000u);
  EXPECT_TRUE(text.starts_with("out/ooo")) << text.substr(0, 40);
  EXPECT_NE(text.find("oooo/convert.journal: cannot open: File name too long (the shards "
                      "written so far are journaled in out/ooo"),
            std::string::npos)
      << text;
  EXPECT_TRUE(text.ends_with("oooo/convert.journal)")) << text.substr(text.size() - 40);
  EXPECT_NE(text.find("bytes left out ...]"), std::string::npos);
}

struct Case {
  std::string name;
  std::function<void()> fails;
  std::string expected;  // in the reworded message
};

std::string reworded(const Case& c) {
  try {
    c.fails();
  } catch (const Error& e) {
    return cli_wording(e.what());
  }
  ADD_FAILURE() << c.name << ": no error";
  return {};
}

TEST(CliWording, EveryOptionInLibraryErrorsBecomesAFlag) {
  ConvertOptions base;
  base.src = "in";
  base.out = "out";
  test::TempDir dir;
  const std::vector<Case> cases = {
      {"size",
       [&] {
         auto o = base;
         o.size = {{0, 10}};
         o.validate();
       },
       "--size must be"},
      {"variants",
       [&] {
         auto o = base;
         o.variants = 2000;
         o.validate();
       },
       "--variants must"},
      {"variants without augment",
       [&] {
         auto o = base;
         o.variants = 3;
         o.validate();
       },
       "--variants 3 needs an augmentation spec in --augment"},
      {"augment without variants",
       [&] {
         auto o = base;
         o.augment = "hflip";
         o.validate();
       },
       "--augment needs --variants of 2 or more"},
      {"augment key", [&] { parse_augment_spec("wobble=1"); },
       "--augment: unknown key 'wobble' in 'wobble=1'"},
      {"augment help", [&] { parse_augment_spec("wobble=1"); }, "see imgpack convert --help"},
      {"augment range", [&] { parse_augment_spec("rotate=500"); }, "--augment: 'rotate=500'"},
      {"coco and yolo",
       [&] {
         auto o = base;
         o.boxes.coco = "instances.json";
         o.boxes.yolo = true;
         o.validate();
       },
       "--coco and --yolo both give the boxes"},
      {"box min visible",
       [&] {
         auto o = base;
         o.boxes.yolo = true;
         o.boxes.min_visible = 2;
         o.validate();
       },
       "--box-min-visible must be between 0 and 1"},
      {"keypoint flip map",
       [&] {
         keypoint_flip_table({"left_eye", "right_eye"}, "left_eye:nose");
       },
       "--keypoint-flip-map 'left_eye:nose'"},
      {"shard size",
       [&] {
         auto o = base;
         o.shard_size = 10;
         o.validate();
       },
       "--shard-size must be at least 4K"},
      {"max pixels",
       [&] {
         auto o = base;
         o.max_pixels = 0;
         o.validate();
       },
       "--max-pixels must be positive"},
      {"threads",
       [&] {
         auto o = base;
         o.threads = 5000;
         o.validate();
       },
       "--threads must be"},
      {"split twice",
       [&] {
         auto o = base;
         o.splits = {parse_split_option("a:random:3", 0), parse_split_option("a:random:4", 0)};
         o.validate();
       },
       "--split names 'a' twice"},
      {"split option", [&] { parse_split_option("a:random", 0); },
       "--split 'a:random' must be NAME:KIND:K"},
      {"split folds", [&] { parse_split_option("a:random:x", 0); },
       "--split 'a:random:x': 'x' is not a number of folds"},
      {"test fraction",
       [&] {
         SplitSpec s;
         s.test_fraction = 1.5;
         s.validate();
       },
       "--test 1.5 is outside [0, 1)"},
      {"val fraction",
       [&] {
         SplitSpec s;
         s.kind = SplitKind::holdout;
         s.validate();
       },
       "--val 0 is outside (0, 1)"},
      {"val and test",
       [&] {
         SplitSpec s;
         s.kind = SplitKind::holdout;
         s.val_fraction = 0.6;
         s.test_fraction = 0.5;
         s.validate();
       },
       "--val 0.6 and --test 0.5 leave nothing"},
      {"val for kfold",
       [&] {
         SplitSpec s;
         s.val_fraction = 0.2;
         s.validate();
       },
       "--val applies only to --kind holdout"},
      {"holdout switches",
       [&] {
         SplitSpec s;
         s.use_labels = false;
         s.validate();
       },
       "--kind stratified decides itself whether labels and groups are used; --no-stratify "
       "and --no-groups apply only to holdout"},
      {"folds range",
       [&] {
         SplitSpec s;
         s.folds = 1;
         s.validate();
       },
       "--folds 1 is outside"},
      {"group kind without groups",
       [&] {
         SplitSpec s;
         s.kind = SplitKind::group;
         const std::vector<int32_t> labels(10, 0), groups(10, -1);
         compute_split(labels, groups, s);
       },
       "--kind group needs groups and these samples have none (convert with --group-regex"},
      {"more folds than samples",
       [&] {
         SplitSpec s;
         s.kind = SplitKind::random;
         s.folds = 5;
         s.test_fraction = 0.5;
         const std::vector<int32_t> labels(6, -1), groups(6, -1);
         compute_split(labels, groups, s);
       },
       "left after --test"},
      {"existing split",
       [&] {
         DatasetIndex index;
         Split split;
         split.name = "cv";
         store_split(index, split, false);
         store_split(index, split, false);
       },
       "a split named 'cv' exists; pass --force to replace it"},
      {"role without split",
       [&] {
         SelectionOptions o;
         o.role = Role::train;
         select_samples(DatasetIndex{}, o);
       },
       "role train needs a split (--split)"},
      {"sample classes",
       [&] {
         SampleDataOptions o;
         o.classes = 0;
         write_sample_data(dir.path() / "a", o);
       },
       "--classes must be 1..1000"},
      {"sample groups",
       [&] {
         SampleDataOptions o;
         o.groups = 0;
         write_sample_data(dir.path() / "a", o);
       },
       "--groups must be"},
      {"sample per class",
       [&] {
         SampleDataOptions o;
         o.per_class = 0;
         write_sample_data(dir.path() / "a", o);
       },
       "--per-class must be"},
      {"sample size",
       [&] {
         SampleDataOptions o;
         o.width = 8;
         write_sample_data(dir.path() / "a", o);
       },
       "--size must be between 16 and 8192"},
  };
  for (const Case& c : cases) {
    const std::string message = reworded(c);
    EXPECT_NE(message.find(c.expected), std::string::npos) << c.name << ": " << message;
    EXPECT_EQ(message.find("::"), std::string::npos) << c.name << ": " << message;
  }
}

}  // namespace
}  // namespace imgpack::cli
