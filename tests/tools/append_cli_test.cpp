// imgpack convert --append and imgpack remove from the shell: a dataset that
// grows keeps its shards byte for byte, its sample ids and its split
// assignments; changed inputs stop the append unless --replace-changed;
// removed samples leave the splits; each change, killed with SIGKILL at each
// crash point and run again, ends byte for byte as an uninterrupted one.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli_fixture.hpp"
#include "h5.hpp"
#include "imgpack/checksum.hpp"
#include "imgpack/dataset.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/format.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using test::run_command;
using test::shell_quote;

// Every change below runs with this date, so that reruns are byte-identical.
const std::string kDate = "SOURCE_DATE_EPOCH=1790000000 ";

class AppendCli : public test::CliTest {
 protected:
  void SetUp() override {
    make_sample_data("--classes 3 --groups 4 --per-class 12 --size 40x32");
    // The first conversion sees the images of groups g00..g02 of every
    // class; the append brings group g03 and a few more of g00.
    fs::create_directories(dir_ / "first");
    for (const auto& entry : fs::recursive_directory_iterator(dir_ / "src")) {
      if (!entry.is_regular_file()) continue;
      const std::string name = entry.path().filename().string();
      if (name.starts_with("g03_") || name.ends_with("0.jpg") || name.ends_with("0.png")) continue;
      const fs::path rel = fs::relative(entry.path(), dir_ / "src");
      fs::create_directories((dir_ / "first" / rel).parent_path());
      fs::copy_file(entry.path(), dir_ / "first" / rel, fs::copy_options::copy_symlinks);
      fs::last_write_time(dir_ / "first" / rel, fs::last_write_time(entry.path()));
    }
  }

  std::string convert_first(const fs::path& out) const {
    return "convert " + q(dir_ / "first") + " " + q(out) +
           " --size 16x12 --variants 2 --augment hflip --shard-size 4K --threads 2"
           " --group-regex '/(g[0-9]+)_' --split cv:stratified-group:3 --split ho:holdout:0.25"
           " --split rnd:random:4 -q";
  }
  std::string append_args(const fs::path& out) const {
    return "convert " + q(dir_ / "src") + " " + q(out) + " --append --threads 2 -q";
  }

  // The dataset of the first conversion, in `out`.
  void make_first(const fs::path& out) const {
    const test::CommandResult r = test::run_imgpack(convert_first(out));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  static std::map<std::string, std::string> shard_bytes(const fs::path& dir) {
    std::map<std::string, std::string> bytes;
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (format::is_shard_file_name(name)) bytes[name] = test::read_bytes(entry.path());
    }
    return bytes;
  }

  // (sample, variant) -> the stored checksum of that record, over every shard
  // the index lists.
  static std::map<std::pair<int64_t, uint16_t>, uint64_t> stored_checksums(const fs::path& dir) {
    std::map<std::pair<int64_t, uint16_t>, uint64_t> sums;
    for (const std::string& file : read_index(dir).shards.file) {
      const h5::File shard = h5::File::open_read(dir / file);
      const std::vector<int64_t> samples = shard.read<int64_t>(format::kSample);
      const std::vector<uint16_t> variants = shard.read<uint16_t>(format::kVariant);
      const std::vector<uint64_t> checksums = shard.read<uint64_t>(format::kChecksum);
      for (std::size_t row = 0; row < samples.size(); ++row) {
        sums[{samples[row], variants[row]}] = checksums[row];
      }
    }
    return sums;
  }

  // The first conversion, the removal `remove` (its options), then a
  // compaction killed at `point` and run again: byte for byte `reference`
  // (the same, uninterrupted), and one generation, whole, for a reader
  // meanwhile.
  void expect_killed_compaction_ends_as(const fs::path& reference, const std::string& remove,
                                        const std::string& point) const {
    SCOPED_TRACE(point);
    const fs::path out = dir_ / ("out-" + point);
    make_first(out);
    ASSERT_EQ(run_command(kDate + imgpack() + " remove " + q(out) + remove).exit_code, 0);
    const test::CommandResult r =
        run_command(kDate + "IMGPACK_CRASH_AT=" + point + " " + imgpack() + " compact " + q(out));
    EXPECT_NE(r.exit_code, 0) << "the crash point was never reached";
    EXPECT_EQ(test::run_imgpack("verify " + q(out) + " -q").exit_code, 0);
    ASSERT_EQ(run_command(kDate + imgpack() + " compact " + q(out) + " -q").exit_code, 0);
    test::expect_same_dataset_bytes(out, reference);
  }

  // The options of a removal of gone.txt, quiet.
  std::string remove_list_args() const { return " --paths " + q(dir_ / "gone.txt") + " -q"; }

  // Removes from the dataset in `out` (`index` its index) every sample with a
  // record in one of the shards at `places`, listed in gone.txt; returns
  // those samples.
  std::set<int64_t> remove_samples_of_shards(const fs::path& out, const DatasetIndex& index,
                                             const std::set<uint32_t>& places) const {
    std::set<int64_t> samples;
    for (std::size_t r = 0; r < index.num_records(); ++r) {
      if (places.count(index.records.shard[r]) > 0) samples.insert(index.records.sample[r]);
    }
    std::string text;
    for (const int64_t s : samples) text += index.sample_path[static_cast<std::size_t>(s)] + "\n";
    test::write_bytes(dir_ / "gone.txt", text);
    const test::CommandResult r =
        run_command(kDate + imgpack() + " remove " + q(out) + remove_list_args());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return samples;
  }

  // `out` compacted after the removal of `gone` from `first_copy`'s dataset:
  // every record of a kept sample with its checksum as before and no other,
  // the record table in its order less the removed samples' records, and a
  // dataset verify passes.
  static void expect_compacted(const fs::path& first_copy, const std::set<int64_t>& gone,
                               const fs::path& out) {
    std::map<std::pair<int64_t, uint16_t>, uint64_t> expected = stored_checksums(first_copy);
    std::erase_if(expected, [&](const auto& entry) { return gone.count(entry.first.first); });
    EXPECT_EQ(stored_checksums(out), expected);
    const DatasetIndex first = read_index(first_copy);
    const DatasetIndex compacted = read_index(out);
    EXPECT_EQ(compacted.num_records(), expected.size());
    std::vector<std::pair<int64_t, uint16_t>> order_before;
    for (std::size_t rec = 0; rec < first.num_records(); ++rec) {
      if (gone.count(first.records.sample[rec]) == 0)
        order_before.emplace_back(first.records.sample[rec], first.records.variant[rec]);
    }
    std::vector<std::pair<int64_t, uint16_t>> order_after;
    for (std::size_t rec = 0; rec < compacted.num_records(); ++rec)
      order_after.emplace_back(compacted.records.sample[rec], compacted.records.variant[rec]);
    EXPECT_EQ(order_after, order_before);
    const test::CommandResult r = test::run_imgpack("verify " + q(out) + " -q");
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }

  // No file of any generation but the dataset's own.
  static void expect_no_leftovers(const fs::path& dir) {
    const DatasetIndex index = read_index(dir);
    const std::set<std::string> listed(index.shards.file.begin(), index.shards.file.end());
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      EXPECT_FALSE(name.ends_with(format::kTmpSuffix)) << name;
      if (format::is_shard_file_name(name)) {
        EXPECT_TRUE(listed.count(name) > 0) << name;
      }
    }
  }
};

TEST_F(AppendCli, AppendKeepsShardsIdsAndFoldsAndExtendsTheSplits) {
  const fs::path out = dir_ / "out";
  make_first(out);
  const DatasetIndex before = read_index(out);
  const std::map<std::string, std::string> old_shards = shard_bytes(out);

  test::CommandResult r = run_command(kDate + imgpack() + " " + append_args(out) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json summary = nlohmann::json::parse(r.out);
  const DatasetIndex after = read_index(out);
  const std::size_t old_samples = before.num_samples();
  EXPECT_EQ(summary["generation"], 1);
  EXPECT_EQ(summary["held"], old_samples);
  EXPECT_GT(summary["added"].get<uint64_t>(), 0u);
  EXPECT_EQ(after.num_samples(), old_samples + summary["added"].get<std::size_t>());
  EXPECT_EQ(after.num_records(), after.num_samples() * 2);

  // Every earlier shard byte for byte, every earlier sample under its id.
  for (const auto& [name, bytes] : old_shards) {
    EXPECT_EQ(test::read_bytes(out / name), bytes) << name;
  }
  EXPECT_GT(after.num_shards(), before.num_shards());
  for (std::size_t s = 0; s < old_samples; ++s) {
    ASSERT_EQ(after.sample_path[s], before.sample_path[s]) << s;
    EXPECT_EQ(after.class_names[static_cast<std::size_t>(after.sample_label[s])],
              before.class_names[static_cast<std::size_t>(before.sample_label[s])]);
  }
  for (std::size_t r2 = 0; r2 < before.num_records(); ++r2) {
    EXPECT_EQ(after.records.shard[r2], before.records.shard[r2]);
    EXPECT_EQ(after.records.sample[r2], before.records.sample[r2]);
  }

  // Each split keeps every earlier assignment; a grouped split puts the new
  // samples of an old group into that group's part, and keeps new groups whole.
  ASSERT_EQ(after.splits.size(), before.splits.size());
  for (std::size_t i = 0; i < after.splits.size(); ++i) {
    const Split& old_split = before.splits[i];
    const Split& split = after.splits[i];
    SCOPED_TRACE(split.name);
    ASSERT_EQ(split.assign.size(), after.num_samples());
    for (std::size_t s = 0; s < old_samples; ++s) EXPECT_EQ(split.assign[s], old_split.assign[s]);
    std::map<int32_t, std::set<int16_t>> parts_of_group;
    for (std::size_t s = 0; s < after.num_samples(); ++s) {
      EXPECT_GE(split.assign[s], format::kTestFold);
      EXPECT_LT(split.assign[s], split.folds);
      parts_of_group[after.sample_group[s]].insert(split.assign[s]);
    }
    if (split.grouped) {
      for (const auto& [group, parts] : parts_of_group) {
        EXPECT_EQ(parts.size(), 1u) << group;
      }
    }
  }
  EXPECT_EQ(after.generation, 1u);
  ASSERT_EQ(after.history.size(), 2u);
  EXPECT_EQ(after.history[0].change, "convert");
  EXPECT_EQ(after.history[0].added, old_samples);
  EXPECT_EQ(after.history[1].change, "append");
  EXPECT_EQ(after.history[1].date, "2026-09-21T14:13:20Z");

  r = test::run_imgpack("verify " + q(out) + " -q");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_no_leftovers(out);

  // Nothing new: no new generation, nothing written.
  const std::string index_bytes = test::read_bytes(out / format::kIndexFile);
  r = test::run_imgpack(append_args(out) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["added"], 0);
  EXPECT_EQ(test::read_bytes(out / format::kIndexFile), index_bytes);

  // The dataset's options are the append's: giving one is a usage error.
  r = test::run_imgpack(append_args(out) + " --size 32");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--size"), std::string::npos) << r.err;
  r = test::run_imgpack(append_args(out) + " --dct-scales eighths");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--dct-scales"), std::string::npos) << r.err;
}

// --dct-scales reaches the stored options: halvings by default, named; eighths
// as the datasets converted before the choice stored it (no key), which an
// append then keeps (Convert.AnAppendDecodesAtTheScalesTheDatasetWasConvertedWith
// compares the records).
TEST_F(AppendCli, TheDctScalesAreStoredAsDatasetsBeforeThemDid) {
  const fs::path halvings = dir_ / "halvings";
  const fs::path eighths = dir_ / "eighths";
  make_first(halvings);
  test::CommandResult r = test::run_imgpack(convert_first(eighths) + " --dct-scales eighths");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json stored = nlohmann::json::parse(read_index(halvings).convert_options);
  EXPECT_EQ(stored["dct_scales"], "halvings");
  EXPECT_FALSE(nlohmann::json::parse(read_index(eighths).convert_options).contains("dct_scales"));
  r = test::run_imgpack(append_args(eighths));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(nlohmann::json::parse(read_index(eighths).convert_options).contains("dct_scales"));
  r = test::run_imgpack(convert_first(dir_ / "bad") + " --dct-scales sixths");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--dct-scales"), std::string::npos) << r.err;
}

// A split exported before an append (kept with an experiment, say) comes
// back with `split --extend NAME --import FILE`: its folds as exported, the
// samples added since placed as the append placed them in the stored split:
// whole groups into their old fold.
TEST_F(AppendCli, SplitExtendTakesAnExportOfAnEarlierGeneration) {
  const fs::path out = dir_ / "out";
  make_first(out);
  const fs::path earlier = dir_ / "cv-gen0.csv";
  test::CommandResult r =
      test::run_imgpack("split " + q(out) + " --export cv --out " + q(earlier) + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::size_t old_samples = read_index(out).num_samples();
  ASSERT_EQ(run_command(kDate + imgpack() + " " + append_args(out)).exit_code, 0);

  // Without --import there is nothing to extend: the append extended it.
  r = test::run_imgpack("split " + q(out) + " --extend cv");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("covers all"), std::string::npos) << r.err;

  r = test::run_imgpack("split " + q(out) + " --extend cv --import " + q(earlier));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("pass --force"), std::string::npos) << r.err;
  r = test::run_imgpack("split " + q(out) + " --extend again --import " + q(earlier) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["listed"].get<std::size_t>(), old_samples);
  const DatasetIndex index = read_index(out);
  EXPECT_EQ(j["placed"].get<std::size_t>(), index.num_samples() - old_samples);
  const Split& cv = *index.find_split("cv");
  const Split& again = *index.find_split("again");
  EXPECT_EQ(again.kind, "imported");
  std::map<int32_t, int16_t> fold_of_group;
  for (std::size_t s = 0; s < old_samples; ++s) {
    EXPECT_EQ(again.assign[s], cv.assign[s]) << s;
    fold_of_group[index.sample_group[s]] = cv.assign[s];
  }
  std::size_t new_in_old_groups = 0;
  for (std::size_t s = old_samples; s < index.num_samples(); ++s) {
    ASSERT_GE(again.assign[s], 0) << s;
    const auto it = fold_of_group.find(index.sample_group[s]);
    if (it == fold_of_group.end()) continue;
    EXPECT_EQ(again.assign[s], it->second) << index.sample_path[s];
    ++new_in_old_groups;
  }
  EXPECT_GT(new_in_old_groups, 0u);

  // A sample the export lists, removed since, keeps no fold, and the count
  // of those that kept theirs leaves it out.
  test::write_bytes(dir_ / "gone.txt", index.sample_path[0] + "\n");
  ASSERT_EQ(
      test::run_imgpack("remove " + q(out) + " --paths " + q(dir_ / "gone.txt") + " -q").exit_code,
      0);
  r = test::run_imgpack("split " + q(out) + " --extend third --import " + q(earlier));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(std::to_string(old_samples - 1) +
                       " samples kept their folds (1 more removed since)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(read_index(out).find_split("third")->assign[0], -2);

  // An export that lacks samples the dataset held when it was made is no
  // earlier generation.
  std::string text = test::read_bytes(earlier);
  const std::size_t second_row = text.find('\n', text.find('\n') + 1) + 1;
  text.erase(second_row, text.find('\n', second_row) + 1 - second_row);
  test::write_bytes(dir_ / "partial.csv", text);
  r = test::run_imgpack("split " + q(out) + " --extend partial --import " +
                        q(dir_ / "partial.csv"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("have no row"), std::string::npos) << r.err;
  EXPECT_EQ(read_index(out).find_split("partial"), nullptr);
}

TEST_F(AppendCli, ChangedInputsStopTheAppendUnlessReplaced) {
  const fs::path out = dir_ / "out";
  make_first(out);
  const std::string index_bytes = test::read_bytes(out / format::kIndexFile);
  const DatasetIndex before = read_index(out);
  // An input the dataset holds, edited since (another size and time).
  const std::string edited = before.sample_path[3];
  {
    std::string bytes = test::read_bytes(dir_ / "src" / edited);
    bytes += std::string(16, '\0');  // trailing bytes: still a valid image
    test::write_bytes(dir_ / "src" / edited, bytes);
  }
  test::CommandResult r = test::run_imgpack(append_args(out));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(edited), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--replace-changed"), std::string::npos) << r.err;
  EXPECT_EQ(test::read_bytes(out / format::kIndexFile), index_bytes);
  expect_no_leftovers(out);

  r = test::run_imgpack(append_args(out) + " --replace-changed --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["replaced"], 1);
  const DatasetIndex after = read_index(out);
  EXPECT_TRUE(after.is_removed(3));
  EXPECT_EQ(after.num_removed(), 1u);
  std::size_t copies = 0;
  for (std::size_t s = 0; s < after.num_samples(); ++s) {
    if (after.sample_path[s] == edited) {
      ++copies;
      for (const Split& split : after.splits) {
        EXPECT_EQ(split.assign[s] == format::kRemovedFold, s == 3) << split.name;
      }
    }
  }
  EXPECT_EQ(copies, 2u);  // the removed sample and its replacement

  // The path now names the replacement: edited again, it is seen as
  // changed; a removal list naming it removes the replacement; an export
  // made now imports back whole.
  std::size_t replacement = 0;
  for (std::size_t s = 4; s < after.num_samples(); ++s) {
    if (after.sample_path[s] == edited) replacement = s;
  }
  ASSERT_GT(replacement, 3u);
  {
    std::string bytes = test::read_bytes(dir_ / "src" / edited);
    bytes += std::string(8, '\0');
    test::write_bytes(dir_ / "src" / edited, bytes);
  }
  r = test::run_imgpack(append_args(out));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("1 input changed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(edited), std::string::npos) << r.err;
  r = test::run_imgpack("split " + q(out) + " --export cv --out " + q(dir_ / "cv.csv") + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_imgpack("split " + q(out) + " --import " + q(dir_ / "cv.csv") + " --name back -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  {
    const DatasetIndex imported = read_index(out);
    EXPECT_EQ(imported.find_split("back")->assign, imported.find_split("cv")->assign);
  }
  test::write_bytes(dir_ / "gone.txt", edited + "\n");
  r = test::run_imgpack("remove " + q(out) + " --paths " + q(dir_ / "gone.txt") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["removed"], 1);
  EXPECT_TRUE(read_index(out).is_removed(replacement));
}

// A removed input still in SRC stays out of later appends while it is as it
// was (the weekly ingest does not bring back what review rejected); edited
// since, it is a changed input: refused, or with --replace-changed taken
// anew as a new sample.
TEST_F(AppendCli, RemovedInputsStayOutUntilTheyChange) {
  const fs::path out = dir_ / "out";
  make_first(out);
  test::CommandResult r = test::run_imgpack(append_args(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const DatasetIndex grown = read_index(out);
  const std::string rejected = grown.sample_path[2];
  test::write_bytes(dir_ / "gone.txt", rejected + "\n");
  r = test::run_imgpack("remove " + q(out) + " --paths " + q(dir_ / "gone.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string index_bytes = test::read_bytes(out / format::kIndexFile);

  r = test::run_imgpack("convert " + q(dir_ / "src") + " " + q(out) + " --append --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json summary = nlohmann::json::parse(r.out);
  EXPECT_EQ(summary["added"], 0);
  EXPECT_EQ(summary["held_removed"], 1);
  EXPECT_EQ(summary["held"], grown.num_samples());
  EXPECT_EQ(test::read_bytes(out / format::kIndexFile), index_bytes);
  r = test::run_imgpack("convert " + q(dir_ / "src") + " " + q(out) + " --append");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("1 of them removed from it"), std::string::npos) << r.err;

  {
    std::string bytes = test::read_bytes(dir_ / "src" / rejected);
    bytes += std::string(16, '\0');
    test::write_bytes(dir_ / "src" / rejected, bytes);
  }
  r = test::run_imgpack(append_args(out));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(rejected), std::string::npos) << r.err;
  EXPECT_EQ(test::read_bytes(out / format::kIndexFile), index_bytes);
  r = test::run_imgpack(append_args(out) + " --replace-changed --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["added"], 1);
  const DatasetIndex after = read_index(out);
  ASSERT_EQ(after.num_samples(), grown.num_samples() + 1);
  EXPECT_EQ(after.sample_path.back(), rejected);
  EXPECT_TRUE(after.is_removed(2));
  EXPECT_FALSE(after.is_removed(after.num_samples() - 1));
  EXPECT_EQ(test::run_imgpack("verify " + q(out) + " -q").exit_code, 0);
}

// An append that skips more new inputs than --max-skipped allows changes
// nothing and says how to go on with an append (no report.json to read, no
// --resume to run); the limit counts the new inputs, the scan's skips (a
// listed file that is not there) with the decoder's. A new input the group
// regex does not match takes --group-missing ok, as in a conversion.
TEST_F(AppendCli, AnAppendThatCannotTakeItsInputsSaysHowToGoOn) {
  const fs::path out = dir_ / "out";
  make_first(out);
  const auto before = test::directory_snapshot(out);
  test::write_bytes(dir_ / "src" / "circle" / "g01_bad.jpg", "not a jpeg");
  test::CommandResult r = test::run_imgpack(append_args(out) + " --max-skipped 0");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("nothing was appended to " + out.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("circle/g01_bad.jpg"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("append again with a larger --max-skipped"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("report.json"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("--resume"), std::string::npos) << r.err;
  EXPECT_EQ(test::directory_snapshot(out), before);
  fs::remove(dir_ / "src" / "circle" / "g01_bad.jpg");

  test::write_bytes(dir_ / "list.txt", "circle/g01_gone.jpg\n");
  r = test::run_imgpack(append_args(out) + " --files " + q(dir_ / "list.txt"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("1 of the 1 new inputs skipped so far"), std::string::npos) << r.err;
  EXPECT_EQ(test::directory_snapshot(out), before);

  const fs::path first = read_index(out).sample_path[0];
  const std::string ungrouped = (first.parent_path() / "ungrouped.jpg").string();
  fs::copy_file(dir_ / "src" / first, dir_ / "src" / ungrouped);
  r = test::run_imgpack(append_args(out));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(ungrouped + " (use --group-missing ok"), std::string::npos) << r.err;
  EXPECT_EQ(test::directory_snapshot(out), before);
  r = test::run_imgpack(append_args(out) + " --group-missing ok");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const DatasetIndex after = read_index(out);
  for (std::size_t s = 0; s < after.num_samples(); ++s) {
    EXPECT_EQ(after.sample_group[s] < 0, after.sample_path[s] == ungrouped) << s;
  }
}

// An append reads SRC and writes the dataset: a dataset inside SRC, or SRC
// itself, would be written into the inputs and read back as images.
TEST_F(AppendCli, AnAppendRefusesADatasetInsideSrc) {
  const fs::path out = dir_ / "src" / "packed";
  make_first(out);
  const auto before = test::directory_snapshot(dir_ / "src");
  test::CommandResult r = test::run_imgpack(append_args(out));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(out.string() + ": the output directory must not be SRC or inside it"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(test::directory_snapshot(dir_ / "src"), before);

  r = test::run_imgpack("convert " + q(out) + " " + q(out) + " --append -q");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("must not be SRC or inside it"), std::string::npos) << r.err;
  EXPECT_EQ(test::directory_snapshot(dir_ / "src"), before);
}

// A part of a conversion in parts takes no change: merge adopts a part's
// shards and renumbers its samples, and would drop a removal or keep a
// compacted part's samples without their records.
TEST_F(AppendCli, ChangesRefuseAPartOfAConversionInParts) {
  const fs::path out = dir_ / "parted";
  for (const char* part : {"0/2", "1/2"}) {
    const test::CommandResult r = test::run_imgpack("convert " + q(dir_ / "first") + " " + q(out) +
                                                    " --size 16x12 --part " + part + " -q");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const fs::path part = out / "parts" / "0-of-2";
  const DatasetIndex index = read_index(part);
  test::write_bytes(dir_ / "gone.txt", index.sample_path[0] + "\n");
  const auto before = test::directory_snapshot(part);
  for (const std::string& change :
       {"remove " + q(part) + " --paths " + q(dir_ / "gone.txt"), "compact " + q(part),
        "convert " + q(dir_ / "src") + " " + q(part) + " --append"}) {
    const test::CommandResult r = test::run_imgpack(change);
    EXPECT_EQ(r.exit_code, 2) << change << ": " << r.err;
    EXPECT_NE(r.err.find("a part of a conversion in parts"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("imgpack merge"), std::string::npos) << r.err;
  }
  EXPECT_EQ(test::directory_snapshot(part), before);
  const test::CommandResult r = test::run_imgpack("merge " + q(out) + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_index(out).num_removed(), 0u);
}

// The weekly ingest without a walk: --files names the new inputs, and the
// dataset ends byte for byte as the append that walked SRC, index, splits and
// shards; listed inputs the dataset holds are passed over.
TEST_F(AppendCli, AppendFromAListOfFilesEqualsTheAppendThatWalks) {
  const fs::path walked = dir_ / "walked";
  const fs::path listed = dir_ / "listed";
  make_first(walked);
  make_first(listed);
  // As `find .` lists them, and as a Windows editor saves the list: a UTF-8
  // BOM first, CRLF line ends on every other line.
  std::string list = "\xEF\xBB\xBF";
  std::size_t new_files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "src")) {
    if (!entry.is_regular_file()) continue;
    const fs::path rel = fs::relative(entry.path(), dir_ / "src");
    const bool held = fs::exists(dir_ / "first" / rel);
    if (!held) ++new_files;
    // Every new file, and every third one the dataset holds.
    if (!held || new_files % 3 == 0) {
      list += "./" + rel.generic_string() + (new_files % 2 == 0 ? "\r\n" : "\n");
    }
  }
  ASSERT_GT(new_files, 0u);
  test::write_bytes(dir_ / "new.txt", list);

  test::CommandResult r = run_command(kDate + imgpack() + " " + append_args(walked) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_command(kDate + imgpack() + " " + append_args(listed) + " --files " +
                  q(dir_ / "new.txt") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json summary = nlohmann::json::parse(r.out);
  EXPECT_EQ(summary["added"], new_files);
  EXPECT_GT(summary["held"].get<uint64_t>(), 0u);
  EXPECT_EQ(summary["skipped"], 0) << r.out;
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(walked)) {
    const std::string name = entry.path().filename().string();
    ASSERT_TRUE(fs::exists(listed / name)) << name;
    ++files;
    if (name == format::kReportFile) continue;  // the first conversion's, with its timings
    EXPECT_EQ(test::read_bytes(listed / name), test::read_bytes(entry.path())) << name;
  }
  EXPECT_EQ(files, static_cast<std::size_t>(
                       std::distance(fs::directory_iterator(listed), fs::directory_iterator())));
  expect_no_leftovers(listed);

  // Nothing new listed: nothing to do, and no error.
  test::write_bytes(dir_ / "none.txt", "");
  r = test::run_imgpack(append_args(listed) + " --files " + q(dir_ / "none.txt"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::read_bytes(listed / format::kIndexFile),
            test::read_bytes(walked / format::kIndexFile));
}

TEST_F(AppendCli, BadFileListsAreRefusedBeforeAnythingChanges) {
  const fs::path out = dir_ / "out";
  make_first(out);
  const std::string index_bytes = test::read_bytes(out / format::kIndexFile);
  test::write_bytes(dir_ / "twice.txt", "a/x.jpg\na/x.jpg\n");
  test::CommandResult r = test::run_imgpack(append_args(out) + " --files " + q(dir_ / "twice.txt"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find((dir_ / "twice.txt").string() + ":2: a/x.jpg is listed twice"),
            std::string::npos)
      << r.err;
  r = test::run_imgpack(append_args(out) + " --files " + q(dir_ / "missing.txt"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find((dir_ / "missing.txt").string() + ": cannot open"), std::string::npos)
      << r.err;
  r = test::run_imgpack("convert " + q(dir_ / "src") + " " + q(dir_ / "other") +
                        " --size 16 --files " + q(dir_ / "twice.txt") + " -q");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--files needs --append"), std::string::npos) << r.err;
  EXPECT_EQ(test::read_bytes(out / format::kIndexFile), index_bytes);
  expect_no_leftovers(out);

  // A line that names nothing is a skipped input whatever its extension (a
  // space at the end, a misspelt name): past --max-skipped, nothing changes.
  // Folders and files that are not images are passed over, and counted.
  const DatasetIndex index = read_index(out);
  const std::string held = index.sample_path[0];
  const std::string folder = held.substr(0, held.find('/'));
  test::write_bytes(dir_ / "typos.txt", held + " \n" + folder + "/notes\n");
  r = test::run_imgpack(append_args(out) + " --files " + q(dir_ / "typos.txt"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(held + " : cannot stat: No such file or directory"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("nothing was appended"), std::string::npos) << r.err;
  EXPECT_EQ(test::read_bytes(out / format::kIndexFile), index_bytes);
  test::write_bytes(dir_ / "src" / folder / "notes.txt", "not an image\n");
  test::write_bytes(dir_ / "others.txt", folder + "\n" + folder + "/notes.txt\n" + held + "\n");
  r = test::run_imgpack(append_args(out) + " --files " + q(dir_ / "others.txt") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["ignored"], 2) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["held"], 1) << r.out;
  EXPECT_EQ(test::read_bytes(out / format::kIndexFile), index_bytes);
  fs::remove(dir_ / "src" / folder / "notes.txt");

  // A dataset converted from a CSV list takes its new rows as a CSV list.
  test::write_bytes(dir_ / "rows.csv", "path\n" + index.sample_path[0] + "\n");
  r = test::run_imgpack("convert " + q(dir_ / "first") + " " + q(dir_ / "from-csv") + " --csv " +
                        q(dir_ / "rows.csv") + " --labels none --size 16 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_imgpack("convert " + q(dir_ / "src") + " " + q(dir_ / "from-csv") +
                        " --append --files " + q(dir_ / "twice.txt"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("converted from a CSV list"), std::string::npos) << r.err;
}

// Lists may come through a pipe (`--paths <(grep ...)`, `--files /dev/stdin`),
// whose size says nothing: every line is read.
TEST_F(AppendCli, PathListsMayComeThroughAPipe) {
  const fs::path out = dir_ / "out";
  make_first(out);
  const DatasetIndex before = read_index(out);
  test::CommandResult r =
      run_command("printf '%s\\n%s\\n' " + test::shell_quote(before.sample_path[1]) + " " +
                  test::shell_quote(before.sample_path[4]) + " | " + kDate + imgpack() +
                  " remove " + q(out) + " --paths /dev/stdin --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["removed"], 2);
  const DatasetIndex after = read_index(out);
  EXPECT_TRUE(after.is_removed(1));
  EXPECT_TRUE(after.is_removed(4));
  EXPECT_EQ(after.num_removed(), 2u);

  // The inputs that the first conversion did not see, listed by find.
  r = run_command("cd " + q(dir_ / "src") + " && find . -name 'g03_*' | " + imgpack() +
                  " convert " + q(dir_ / "src") + " " + q(out) +
                  " --append --files /dev/stdin --threads 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(nlohmann::json::parse(r.out)["added"].get<int>(), 0) << r.out;
}

TEST_F(AppendCli, RemoveMarksSamplesAndTheirFoldsAndRefusesUnknownPaths) {
  const fs::path out = dir_ / "out";
  make_first(out);
  const DatasetIndex before = read_index(out);
  test::write_bytes(dir_ / "gone.txt",
                    "# bad images\n" + before.sample_path[0] + "\n" + before.sample_path[5] + "\n");
  // A date the history cannot write (past the year 9999, past long long) is
  // refused before anything changes.
  for (const char* date : {"253402300800", "99999999999999999999"}) {
    const test::CommandResult refused =
        run_command(std::string("SOURCE_DATE_EPOCH=") + date + " " + imgpack() + " remove " +
                    q(out) + " --paths " + q(dir_ / "gone.txt"));
    EXPECT_EQ(refused.exit_code, 2) << refused.err;
    EXPECT_NE(refused.err.find("past the end of the year 9999"), std::string::npos) << refused.err;
  }
  EXPECT_EQ(read_index(out).generation, 0u);
  test::CommandResult r = run_command(kDate + imgpack() + " remove " + q(out) + " --paths " +
                                      q(dir_ / "gone.txt") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json summary = nlohmann::json::parse(r.out);
  EXPECT_EQ(summary["removed"], 2);
  EXPECT_EQ(summary["generation"], 1);
  const DatasetIndex after = read_index(out);
  EXPECT_EQ(after.num_removed(), 2u);
  EXPECT_TRUE(after.is_removed(0));
  EXPECT_TRUE(after.is_removed(5));
  for (const Split& split : after.splits) {
    for (std::size_t s = 0; s < after.num_samples(); ++s) {
      const Split& old_split = *before.find_split(split.name);
      EXPECT_EQ(split.assign[s], after.is_removed(s) ? format::kRemovedFold : old_split.assign[s]);
    }
  }
  EXPECT_EQ(test::run_imgpack("verify " + q(out) + " -q").exit_code, 0);

  // A split made now, and an export imported back, leave the removed samples
  // out of every part too.
  r = test::run_imgpack("split " + q(out) + " --name fresh --kind stratified --folds 3 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_imgpack("split " + q(out) + " --export cv --out " + q(dir_ / "cv.csv") + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_imgpack("split " + q(out) + " --import " + q(dir_ / "cv.csv") + " --name back -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  {
    const DatasetIndex split_index = read_index(out);
    const Split& cv = *split_index.find_split("cv");
    const Split& back = *split_index.find_split("back");
    const Split& fresh = *split_index.find_split("fresh");
    for (std::size_t s = 0; s < split_index.num_samples(); ++s) {
      EXPECT_EQ(back.assign[s], cv.assign[s]) << s;
      EXPECT_EQ(fresh.assign[s] == format::kRemovedFold, split_index.is_removed(s)) << s;
    }
    EXPECT_EQ(test::read_bytes(dir_ / "cv.csv").find(before.sample_path[0] + ","),
              std::string::npos);
  }

  // The same list again: nothing newly removed, no new generation.
  r = test::run_imgpack("remove " + q(out) + " --paths " + q(dir_ / "gone.txt") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["already_removed"], 2);
  EXPECT_EQ(read_index(out).generation, 1u);

  // A path the dataset does not hold: exit 2 naming it, nothing changed.
  const std::string index_bytes = test::read_bytes(out / format::kIndexFile);
  test::write_bytes(dir_ / "typo.txt", before.sample_path[7] + "\nno/such.jpg\n");
  r = test::run_imgpack("remove " + q(out) + " --paths " + q(dir_ / "typo.txt"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no/such.jpg"), std::string::npos) << r.err;
  EXPECT_EQ(test::read_bytes(out / format::kIndexFile), index_bytes);
  // A space at either end is part of the path, and the message says it is there.
  test::write_bytes(dir_ / "spaced.txt", before.sample_path[7] + " \n");
  r = test::run_imgpack("remove " + q(out) + " --paths " + q(dir_ / "spaced.txt"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("begins or ends with a space"), std::string::npos) << r.err;
  EXPECT_EQ(test::read_bytes(out / format::kIndexFile), index_bytes);

  // A list as Windows editors and `find .` write it: a UTF-8 BOM, CRLF line
  // ends, "./" before each path. And a CSV column of such paths.
  test::write_bytes(dir_ / "windows.txt", "\xEF\xBB\xBF./" + before.sample_path[7] + "\r\n");
  r = test::run_imgpack("remove " + q(out) + " --paths " + q(dir_ / "windows.txt") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["removed"], 1);
  test::write_bytes(dir_ / "gone.csv", "file,why\n./" + before.sample_path[8] + ",blurred\n");
  r = test::run_imgpack("remove " + q(out) + " --csv " + q(dir_ / "gone.csv") +
                        " --csv-path file --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["removed"], 1);
  const DatasetIndex last = read_index(out);
  EXPECT_TRUE(last.is_removed(7));
  EXPECT_TRUE(last.is_removed(8));
}

// kill -9 at every crash point of an append and of a remove, then the same
// command again: byte for byte the dataset of an uninterrupted run.
TEST_F(AppendCli, KilledChangesFinishByteForByteWhenRunAgain) {
  const fs::path reference = dir_ / "reference";
  make_first(reference);
  ASSERT_EQ(run_command(kDate + imgpack() + " " + append_args(reference)).exit_code, 0);
  const DatasetIndex first = read_index(reference);
  test::write_bytes(dir_ / "gone.txt", first.sample_path[1] + "\n" + first.sample_path.back());
  const std::string remove_args =
      "remove " + q(reference) + " --paths " + q(dir_ / "gone.txt") + " -q";
  ASSERT_EQ(run_command(kDate + imgpack() + " " + remove_args).exit_code, 0);

  for (const std::string point :
       {"record:60", "shard-commit:9", "splits-commit", "splits-committed", "index-commit"}) {
    SCOPED_TRACE(point);
    const fs::path out = dir_ / ("out-" + point);
    make_first(out);
    const std::string append = append_args(out);
    const std::string remove = "remove " + q(out) + " --paths " + q(dir_ / "gone.txt") + " -q";
    // Killed during the append, then the append again; likewise the remove.
    test::CommandResult r =
        run_command(kDate + "IMGPACK_CRASH_AT=" + point + " " + imgpack() + " " + append);
    EXPECT_NE(r.exit_code, 0) << "the crash point was never reached";
    // What a reader opens meanwhile is one generation, whole.
    EXPECT_EQ(test::run_imgpack("verify " + q(out) + " -q").exit_code, 0);
    ASSERT_EQ(run_command(kDate + imgpack() + " " + append).exit_code, 0);
    const DatasetIndex appended = read_index(out);
    r = run_command(kDate + "IMGPACK_CRASH_AT=" + point + " " + imgpack() + " " + remove);
    EXPECT_EQ(test::run_imgpack("verify " + q(out) + " -q").exit_code, 0);
    if (r.exit_code != 0) {
      // Killed before index.h5 was renamed (after splits.h5 was, at
      // splits-committed and index-commit), the dataset is the appended
      // generation, whole: the samples the removal put in no part are in
      // their folds again. (A point the removal never reaches lets it finish.)
      const DatasetIndex meanwhile = read_index(out);
      EXPECT_EQ(meanwhile.generation, appended.generation);
      EXPECT_EQ(meanwhile.num_removed(), appended.num_removed());
      ASSERT_EQ(meanwhile.splits.size(), appended.splits.size());
      for (std::size_t i = 0; i < meanwhile.splits.size(); ++i) {
        EXPECT_EQ(meanwhile.splits[i].assign.to_vector(), appended.splits[i].assign.to_vector())
            << meanwhile.splits[i].name;
      }
    }
    ASSERT_EQ(run_command(kDate + imgpack() + " " + remove).exit_code, 0);
    test::expect_same_dataset_bytes(out, reference);
    expect_no_leftovers(out);
  }
}

// compact: the shards holding removed samples' records are written anew
// without them, under new names; every kept record keeps its bytes; killed at
// each crash point and run again, byte for byte an uninterrupted compaction.
TEST_F(AppendCli, CompactDropsRemovedRecordsAndFinishesWhenRunAgain) {
  const fs::path reference = dir_ / "reference";
  make_first(reference);
  fs::copy(reference, dir_ / "first-copy", fs::copy_options::recursive);
  const DatasetIndex first = read_index(reference);
  std::string gone;
  for (std::size_t s = 0; s < first.num_samples(); s += 4) gone += first.sample_path[s] + "\n";
  test::write_bytes(dir_ / "gone.txt", gone);
  const std::string remove = " --paths " + q(dir_ / "gone.txt") + " -q";
  ASSERT_EQ(run_command(kDate + imgpack() + " remove " + q(reference) + remove).exit_code, 0);
  // inspect says where the removed samples' records are, before and after.
  test::CommandResult r = test::run_imgpack("inspect " + q(reference));
  EXPECT_NE(r.out.find(" records of them stay in the shards until imgpack compact"),
            std::string::npos)
      << r.out;
  r = run_command(kDate + imgpack() + " compact " + q(reference) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json summary = nlohmann::json::parse(r.out);
  EXPECT_GT(summary["shards_rewritten"].get<int>(), 0);
  const DatasetIndex compacted = read_index(reference);
  // The files it replaced stay beside the new ones, counted as they are.
  uint64_t unlisted_files = 0;
  uint64_t unlisted_bytes = 0;
  const std::set<std::string> listed(compacted.shards.file.begin(), compacted.shards.file.end());
  for (const fs::directory_entry& entry : fs::directory_iterator(reference)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("shard-") && listed.count(name) == 0) {
      ++unlisted_files;
      unlisted_bytes += entry.file_size();
    }
  }
  EXPECT_EQ(summary["replaced_files"].get<uint64_t>(), unlisted_files);
  EXPECT_EQ(summary["replaced_bytes"].get<uint64_t>(), unlisted_bytes);
  EXPECT_EQ(unlisted_files, summary["shards_rewritten"].get<uint64_t>() +
                                summary["shards_dropped"].get<uint64_t>());
  EXPECT_EQ(summary["leftovers_removed"].get<uint64_t>(), 0u);
  const test::CommandResult inspected = test::run_imgpack("inspect " + q(reference));
  EXPECT_NE(inspected.out.find("their records dropped by imgpack compact"), std::string::npos)
      << inspected.out;
  EXPECT_NE(
      inspected.out.find(" (" + std::to_string(compacted.num_samples() - compacted.num_removed()) +
                         " images x 2 variants)"),
      std::string::npos)
      << inspected.out;
  EXPECT_NE(inspected.out.find("unlisted    " + std::to_string(unlisted_files) + " shard files"),
            std::string::npos)
      << inspected.out;
  EXPECT_EQ(compacted.generation, 2u);
  EXPECT_EQ(compacted.num_shards() + summary["shards_dropped"].get<std::size_t>(),
            first.num_shards());
  EXPECT_EQ(compacted.num_records(),
            first.num_records() - summary["records_dropped"].get<std::size_t>());
  EXPECT_EQ(compacted.num_records(), (first.num_samples() - compacted.num_removed()) * 2);
  // Every kept record: the same stored checksum as before (verify checks the
  // pixels against it), and no record of a removed sample left.
  const std::map<std::pair<int64_t, uint16_t>, uint64_t> before =
      stored_checksums(dir_ / "first-copy");
  const std::map<std::pair<int64_t, uint16_t>, uint64_t> after = stored_checksums(reference);
  EXPECT_EQ(after.size(), compacted.num_records());
  for (const auto& [record, sum] : after) {
    EXPECT_FALSE(compacted.is_removed(static_cast<std::size_t>(record.first)));
    ASSERT_TRUE(before.count(record) > 0);
    EXPECT_EQ(before.at(record), sum);
  }
  r = test::run_imgpack("verify " + q(reference) + " -q");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Commands that change nothing leave them: an append with nothing new, one
  // refused (an input changed), a removal of what is removed already.
  const auto unlisted_now = [&] {
    return nlohmann::json::parse(
               test::run_imgpack("inspect " + q(reference) + " --json").out)["unlisted_shard_files"]
        .get<uint64_t>();
  };
  r = test::run_imgpack("convert " + q(dir_ / "first") + " " + q(reference) + " --append -q");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const fs::path changed = dir_ / "changed";
  fs::copy(dir_ / "first", changed, fs::copy_options::recursive);
  for (const auto& entry : fs::recursive_directory_iterator(changed)) {
    if (entry.is_regular_file()) {
      fs::last_write_time(entry.path(), fs::last_write_time(entry.path()) + std::chrono::hours(1));
      break;
    }
  }
  r = test::run_imgpack("convert " + q(changed) + " " + q(reference) + " --append -q");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  // One stopped while converting (more inputs undecodable than it allows).
  const fs::path broken = dir_ / "broken";
  ASSERT_EQ(run_command("cp -a " + q(dir_ / "first") + " " + q(broken)).exit_code, 0);
  const fs::path class_dir = fs::directory_iterator(broken)->path();
  for (int i = 0; i < 3; ++i) {
    test::write_bytes(class_dir / ("g09_zz-broken-" + std::to_string(i) + ".jpg"), "not a JPEG");
  }
  r = test::run_imgpack("convert " + q(broken) + " " + q(reference) +
                        " --append --max-skipped 0 -q");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("nothing was appended"), std::string::npos) << r.err;
  r = run_command(kDate + imgpack() + " remove " + q(reference) + remove);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(unlisted_now(), unlisted_files);
  EXPECT_EQ(read_index(reference).generation, 2u);

  // Nothing left to drop: no new generation, and the replaced files go.
  r = test::run_imgpack("compact " + q(reference) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json again = nlohmann::json::parse(r.out);
  EXPECT_EQ(again["generation"], 2);
  EXPECT_EQ(again["replaced_files"].get<uint64_t>(), 0u);
  EXPECT_EQ(again["leftovers_removed"].get<uint64_t>(), unlisted_files);
  EXPECT_EQ(again["leftover_bytes_removed"].get<uint64_t>(), unlisted_bytes);
  r = test::run_imgpack("inspect " + q(reference) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["unlisted_shard_files"].get<uint64_t>(), 0u);

  for (const std::string point :
       {"shard-commit:2", "splits-commit", "splits-committed", "index-commit"}) {
    expect_killed_compaction_ends_as(reference, remove, point);
  }
}

// compact where a shard in the middle of the table holds only removed
// samples' records: it goes, and the table's last shard is written anew in
// its place (a shard's place is its shard_index), so the space comes back
// while every other shard stays where it was. Killed while writing, then run
// again: byte for byte the uninterrupted compaction.
TEST_F(AppendCli, CompactMovesTheLastShardIntoThePlaceOfOneThatHeldOnlyRemovedImages) {
  const fs::path reference = dir_ / "reference";
  make_first(reference);
  fs::copy(reference, dir_ / "first-copy", fs::copy_options::recursive);
  const DatasetIndex first = read_index(reference);
  ASSERT_GE(first.num_shards(), 4u);
  // Every sample with a record in shard 1 (and so every record of shard 1).
  const std::set<int64_t> gone_samples = remove_samples_of_shards(reference, first, {1});
  ASSERT_FALSE(HasFailure()) << "the removal failed";
  const std::string remove = remove_list_args();
  const Dataset before = Dataset::open(reference);
  test::CommandResult r = run_command(kDate + imgpack() + " compact " + q(reference) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // A reader opened before reads its generation's records, as they were.
  std::vector<uint8_t> pixels(before.record_bytes());
  for (uint64_t rec = 0; rec < before.num_records(); ++rec) {
    before.read_record(rec, pixels.data());
    ASSERT_EQ(checksum(pixels.data(), pixels.size()), before.record_checksum(rec)) << rec;
  }
  const nlohmann::json summary = nlohmann::json::parse(r.out);
  EXPECT_EQ(summary["shards_dropped"], 1) << r.out;
  EXPECT_EQ(summary["shards_moved"], 1) << r.out;

  const DatasetIndex compacted = read_index(reference);
  ASSERT_EQ(compacted.num_shards(), first.num_shards() - 1);
  // The last shard, whole, in place 1 under a new name; the shards after
  // place 1 and before the end as they were (place 0 and 2 lost records of
  // samples that straddled shard 1, so they may be new files).
  EXPECT_EQ(compacted.shards.records[1], first.shards.records.back());
  EXPECT_NE(compacted.shards.file[1], first.shards.file[1]);
  EXPECT_NE(compacted.shards.file[1], first.shards.file.back());
  for (std::size_t k = 3; k + 1 < first.num_shards(); ++k) {
    EXPECT_EQ(compacted.shards.file[k], first.shards.file[k]) << k;
  }
  expect_compacted(dir_ / "first-copy", gone_samples, reference);

  // Killed as each shard written anew is committed.
  const std::set<std::string> old_files(first.shards.file.begin(), first.shards.file.end());
  std::vector<std::string> points;
  for (std::size_t k = 0; k < compacted.num_shards(); ++k) {
    if (old_files.count(compacted.shards.file[k]) == 0)
      points.push_back("shard-commit:" + std::to_string(k));
  }
  EXPECT_GE(points.size(), 1u);
  for (const std::string& point : points)
    expect_killed_compaction_ends_as(reference, remove, point);
}

// A compaction writes its shards under numbers past the last file's, so the
// files no longer go by place: the append after it writes its shards past
// every file too, and every shard the compacted dataset lists stays as it was.
TEST_F(AppendCli, AnAppendAfterACompactionWritesOverNoShard) {
  const fs::path out = dir_ / "out";
  make_first(out);
  const DatasetIndex first = read_index(out);
  ASSERT_GE(first.num_shards(), 4u);
  // One sample of place 0 removed: place 0 is rewritten under a new number.
  test::write_bytes(dir_ / "gone.txt", first.sample_path[0] + "\n");
  ASSERT_EQ(run_command(kDate + imgpack() + " remove " + q(out) + remove_list_args()).exit_code, 0);
  ASSERT_EQ(run_command(kDate + imgpack() + " compact " + q(out) + " -q").exit_code, 0);
  const DatasetIndex compacted = read_index(out);
  ASSERT_NE(compacted.shards.file[0], first.shards.file[0]);
  ASSERT_EQ(compacted.shards.file[0], format::shard_file_name(first.num_shards()));
  const std::map<std::string, std::string> compacted_bytes = shard_bytes(out);

  const test::CommandResult r = run_command(kDate + imgpack() + " " + append_args(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const DatasetIndex appended = read_index(out);
  ASSERT_GT(appended.num_shards(), compacted.num_shards());
  const std::map<std::string, std::string> appended_bytes = shard_bytes(out);
  for (std::size_t k = 0; k < compacted.num_shards(); ++k) {
    const std::string& file = compacted.shards.file[k];
    EXPECT_EQ(appended.shards.file[k], file) << k;
    ASSERT_EQ(appended_bytes.count(file), 1u) << file;
    EXPECT_TRUE(appended_bytes.at(file) == compacted_bytes.at(file)) << file << " changed";
  }
  std::set<std::string> files(appended.shards.file.begin(), appended.shards.file.end());
  EXPECT_EQ(files.size(), appended.num_shards()) << "two places share a file";
  for (std::size_t k = compacted.num_shards(); k < appended.num_shards(); ++k) {
    EXPECT_EQ(appended.shards.file[k],
              format::shard_file_name(k - compacted.num_shards() + first.num_shards() + 1))
        << k;
  }
  const test::CommandResult verified = test::run_imgpack("verify " + q(out) + " -q");
  EXPECT_EQ(verified.exit_code, 0) << verified.err;
  expect_no_leftovers(out);
}

// Several shards that held only removed samples' records, one of them the
// last: each hole in the table takes the last shard that keeps records, the
// empty ones at the end go.
TEST_F(AppendCli, CompactFillsEveryHoleAndDropsTheEmptyEnd) {
  const fs::path out = dir_ / "out";
  make_first(out);
  fs::copy(out, dir_ / "first-copy", fs::copy_options::recursive);
  const DatasetIndex first = read_index(out);
  const auto n = static_cast<uint32_t>(first.num_shards());
  ASSERT_GE(n, 7u);
  const std::set<int64_t> gone = remove_samples_of_shards(out, first, {1, 3, n - 1});
  ASSERT_FALSE(HasFailure()) << "the removal failed";
  const test::CommandResult r = run_command(kDate + imgpack() + " compact " + q(out) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json summary = nlohmann::json::parse(r.out);
  // Shard n - 1 kept nothing; samples straddling a boundary may empty n - 2
  // too, so count what the removal left in each shard.
  const DatasetIndex compacted = read_index(out);
  std::vector<uint64_t> kept(n, 0);
  for (std::size_t rec = 0; rec < first.num_records(); ++rec) {
    if (gone.count(first.records.sample[rec]) == 0) ++kept[first.records.shard[rec]];
  }
  const auto empty = static_cast<uint64_t>(std::count(kept.begin(), kept.end(), 0));
  EXPECT_GE(empty, 3u);
  EXPECT_EQ(compacted.num_shards(), n - empty);
  EXPECT_EQ(summary["shards_dropped"], empty) << r.out;
  EXPECT_EQ(summary["shards_moved"], 2) << r.out;  // into places 1 and 3
  for (std::size_t k = 0; k < compacted.num_shards(); ++k) {
    EXPECT_GT(compacted.shards.records[k], 0u) << k;
  }
  expect_compacted(dir_ / "first-copy", gone, out);
}

// compact that meets a damaged record it would keep, in the last shard, after
// it has written the shards before: it stops (exit 1) naming the shard, and
// leaves the dataset as it was, the files it wrote gone with them.
TEST_F(AppendCli, CompactStoppedByDamageLeavesTheDatasetAsItWas) {
  const fs::path out = dir_ / "out";
  make_first(out);
  const DatasetIndex first = read_index(out);
  // The sample of every shard's last record goes, so every shard is rewritten.
  std::set<int64_t> gone;
  for (std::size_t rec = 0; rec < first.num_records(); ++rec) {
    if (rec + 1 == first.num_records() || first.records.shard[rec + 1] != first.records.shard[rec])
      gone.insert(first.records.sample[rec]);
  }
  std::string text;
  for (const int64_t sample : gone)
    text += first.sample_path[static_cast<std::size_t>(sample)] + "\n";
  test::write_bytes(dir_ / "gone.txt", text);
  ASSERT_EQ(run_command(kDate + imgpack() + " remove " + q(out) + remove_list_args()).exit_code, 0);
  // Damage a record that the compaction keeps, in the last shard that keeps one.
  std::size_t last = 0;
  uint32_t kept_row = 0;
  for (std::size_t rec = 0; rec < first.num_records(); ++rec) {
    if (gone.count(first.records.sample[rec]) == 0) {
      last = first.records.shard[rec];
      kept_row = first.records.row[rec];
    }
  }
  ASSERT_GE(last, 2u);
  const fs::path shard = out / first.shards.file[last];
  test::flip_bits(shard, test::images_offset(shard) + uint64_t{kept_row} * first.record_bytes() + 5,
                  0x40);
  const auto before = test::directory_snapshot(out);

  const test::CommandResult r = run_command(kDate + imgpack() + " compact " + q(out));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(shard.string() + ": row " + std::to_string(kept_row) +
                       " does not match its checksum"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("stays at generation 1"), std::string::npos) << r.err;
  EXPECT_EQ(test::directory_snapshot(out), before) << "compact left files or changed some";
}

// compact opens every shard as a reader does before it writes anything: a
// label flipped in a shard it rewrites (which the records' checksums do not
// cover), a shard it would keep deleted, or two of them swapped, stop it
// (exit 1) naming the shard, and the dataset stays as it was; with the
// damage undone, the same compaction goes through.
TEST_F(AppendCli, CompactRefusesDamageInAnyShardBeforeWritingAnything) {
  const fs::path out = dir_ / "out";
  make_first(out);
  const DatasetIndex first = read_index(out);
  ASSERT_GE(first.num_shards(), 5u);
  remove_samples_of_shards(out, first, {0});
  ASSERT_FALSE(HasFailure()) << "the removal failed";
  const fs::path pristine = dir_ / "pristine";
  fs::copy(out, pristine, fs::copy_options::recursive);
  const std::size_t last = first.num_shards() - 1;
  const fs::path moved = out / first.shards.file[last];  // rewritten into place 0
  const fs::path kept = out / first.shards.file[last - 1];
  const fs::path other = out / first.shards.file[last - 2];

  struct Damage {
    std::string what;
    std::function<void()> apply;
    std::string message;
  };
  const std::vector<Damage> damages = {
      {"a label flipped in the shard it rewrites",
       [&] { test::flip_bits(moved, test::dataset_offset(moved, "labels") + 4, 0x40); },
       moved.string() + ": row 1 has label"},
      {"a shard it keeps deleted", [&] { fs::remove(kept); },
       kept.string() + ": missing (listed in index.h5)"},
      {"two shards it keeps swapped",
       [&] {
         fs::rename(kept, dir_ / "swap");
         fs::rename(other, kept);
         fs::rename(dir_ / "swap", other);
       },
       other.string() + ": "},
  };
  for (const Damage& damage : damages) {
    SCOPED_TRACE(damage.what);
    fs::remove_all(out);
    fs::copy(pristine, out, fs::copy_options::recursive);
    damage.apply();
    const auto before = test::directory_snapshot(out);
    const test::CommandResult r = run_command(kDate + imgpack() + " compact " + q(out));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find(damage.message), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("(nothing was compacted: " + out.string() + " stays at generation 1)"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(test::directory_snapshot(out), before) << "compact changed the damaged dataset";
  }
  const test::CommandResult r = run_command(kDate + imgpack() + " compact " + q(pristine) + " -q");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// Changes that cannot write their files (a file size limit, as a full disk
// would): append and compact leave the dataset byte for byte as it was, a
// removal its index.h5, each saying so (exit 1); the same commands run again
// end where uninterrupted ones do.
TEST_F(AppendCli, ChangesThatCannotWriteLeaveTheDatasetAsItWas) {
  const fs::path out = dir_ / "out";
  const fs::path reference = dir_ / "reference";
  make_first(out);
  fs::copy(out, reference, fs::copy_options::recursive);
  const DatasetIndex first = read_index(out);
  std::string gone;
  for (std::size_t s = 0; s < first.num_samples(); s += 3) gone += first.sample_path[s] + "\n";
  test::write_bytes(dir_ / "gone.txt", gone);
  const uint64_t shard_bytes = fs::file_size(out / first.shards.file[0]);
  const uint64_t index_bytes = fs::file_size(out / format::kIndexFile);
  ASSERT_GT(index_bytes, fs::file_size(out / format::kSplitsFile) + 1024)
      << "the limit under index.h5 would stop splits.h5 first";

  auto before = test::directory_snapshot(out);
  test::CommandResult r = run_with_file_limit(shard_bytes / 2, append_args(out));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("(nothing was appended: " + out.string() + " stays at generation 0)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(test::directory_snapshot(out), before);

  // The removal's new index.h5 is larger than the old one: it cannot be written.
  const std::string index_before = test::read_bytes(out / format::kIndexFile);
  r = run_with_file_limit(index_bytes, "remove " + q(out) + remove_list_args());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("(nothing was removed: " + out.string() + " stays at generation 0)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(test::read_bytes(out / format::kIndexFile), index_before);
  for (const auto& [name, contents] : test::directory_snapshot(out)) {
    EXPECT_FALSE(name.ends_with(format::kTmpSuffix)) << name;
  }
  for (const fs::path& dir : {out, reference}) {
    r = run_command(kDate + imgpack() + " remove " + q(dir) + remove_list_args());
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  before = test::directory_snapshot(out);
  r = run_with_file_limit(shard_bytes / 2, "compact " + q(out));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("(nothing was compacted: " + out.string() + " stays at generation 1)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(test::directory_snapshot(out), before);
  for (const fs::path& dir : {out, reference}) {
    r = run_command(kDate + imgpack() + " compact " + q(dir) + " -q");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  test::expect_same_dataset_bytes(out, reference);
}

}  // namespace
}  // namespace imgpack
