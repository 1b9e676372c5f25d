// imgpack convert --part I/N and imgpack merge from the shell: the Slurm job
// array's commands run in a loop, then the merge; a merge killed with SIGKILL
// at each crash point, or at a random moment, finishes when run again, byte
// for byte as an uninterrupted one; and a seeded campaign of damaged parts,
// each refused with exit 2 and OUT left as it was, then redone with
// convert --resume.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "cli_fixture.hpp"
#include "files.hpp"
#include "h5.hpp"
#include "imgpack/checksum.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/format.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using test::run_command;
using test::shell_quote;

class MergeCli : public test::CliTest {
 protected:
  void SetUp() override { make_sample_data("--classes 3 --groups 3 --per-class 5 --size 40x32"); }

  std::string convert_args(const std::string& out) const {
    return "convert " + q(dir_ / "src") + " " + q(dir_ / out) +
           " --size 16x12 --variants 2 --augment hflip --shard-size 4K --threads 2"
           " --group-regex '/(g[0-9]+)_' --split cv:stratified-group:3 -q";
  }

  // The commands of the Slurm job array of README.md, for tasks 0..N-1 in a
  // loop (the merge job's command is the test's).
  test::CommandResult array_tasks(const std::string& out, int count) const {
    const std::string script = "set -e; N=" + std::to_string(count) +
                               "; for I in $(seq 0 $((N - 1))); do " + imgpack() + " " +
                               convert_args(out) + " --part $I/$N; done";
    return run_command("sh -c " + shell_quote(script));
  }

  static nlohmann::json inspect(const fs::path& dir) {
    auto r = test::run_imgpack("inspect " + shell_quote(dir.string()) + " --json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }

  void expect_like_single(const fs::path& dir) {
    auto verify = test::run_imgpack("verify " + q(dir) + " -q");
    EXPECT_EQ(verify.exit_code, 0) << verify.err;
    const nlohmann::json merged = inspect(dir);
    if (single_.is_null()) single_ = inspect(dir_ / "single");
    for (const char* key : {"records", "samples", "classes", "groups", "variants"}) {
      EXPECT_EQ(merged[key], single_[key]) << key;
    }
    EXPECT_EQ(merged["splits"].size(), 1u);
    EXPECT_FALSE(fs::exists(dir / "parts"));
    EXPECT_FALSE(fs::exists(dir / "merge.journal"));
  }

  nlohmann::json single_;  // inspect --json of the conversion in one piece
};

// One test, so the inputs, the one-piece conversion and the parts are made once.
TEST_F(MergeCli, ArrayTasksThenMergeAndKilledMergesFinishWhenRunAgain) {
  ASSERT_EQ(test::run_imgpack(convert_args("single")).exit_code, 0);
  auto tasks = array_tasks("parts", 3);
  ASSERT_EQ(tasks.exit_code, 0) << tasks.err;
  for (const std::string point :
       {"", "merge-patch:1", "merge-shard:2", "splits-committed", "merge-index-committed"}) {
    SCOPED_TRACE(point);
    const fs::path out = dir_ / ("out" + point);
    fs::copy(dir_ / "parts", out, fs::copy_options::recursive);
    if (!point.empty()) {
      auto killed = run_killed_at(point, "merge " + q(out) + " -q");
      ASSERT_EQ(killed.exit_code, kKilledBySigkill) << killed.err;
      EXPECT_EQ(fs::exists(out / "index.h5"), point == "merge-index-committed");
    }
    auto merged = test::run_imgpack("merge " + q(out) + " --json");
    ASSERT_EQ(merged.exit_code, 0) << merged.err;
    const nlohmann::json summary = nlohmann::json::parse(merged.out);
    EXPECT_EQ(summary["resumed"], !point.empty());
    EXPECT_EQ(summary["parts"], 3);  // from report.json where only the parts' removal was left
    expect_like_single(out);
  }
}

// The array's tasks run again (all of a job is rerun when its launcher
// reported a failure) after the merge finished, or after it stopped with the
// shards moved: a part finds its shards in OUT and converts nothing (it
// converted everything again into OUT/parts/ beside the dataset), and the
// merge then has nothing to do or finishes.
TEST_F(MergeCli, TasksRunAgainAfterTheMergeConvertNothing) {
  ASSERT_EQ(test::run_imgpack(convert_args("single")).exit_code, 0);
  for (const std::string point : {"", "merge-shard:2"}) {
    SCOPED_TRACE(point);
    const fs::path out = dir_ / ("rerun" + point);
    auto tasks = array_tasks(out.filename().string(), 3);
    ASSERT_EQ(tasks.exit_code, 0) << tasks.err;
    if (point.empty()) {
      ASSERT_EQ(test::run_imgpack("merge " + q(out) + " -q").exit_code, 0);
    } else {
      auto killed = run_killed_at(point, "merge " + q(out) + " -q");
      ASSERT_EQ(killed.exit_code, kKilledBySigkill) << killed.err;
    }
    const auto before = test::directory_snapshot(out);
    for (int part = 0; part < 3; ++part) {
      auto again = run_command(imgpack() + " " + convert_args(out.filename().string()) +
                               " --part " + std::to_string(part) + "/3 --resume");
      ASSERT_EQ(again.exit_code, 0) << again.err;
      EXPECT_NE(again.err.find(point.empty() ? "merged into " + out.string() + " already"
                                             : "being merged into " + out.string() +
                                                   " (merge.journal): nothing to convert; "
                                                   "imgpack merge OUT finishes it"),
                std::string::npos)
          << again.err;
      // That note alone: no "already complete (0 records)", no summary of
      // 0 records converted.
      EXPECT_EQ(again.err.find("0 records"), std::string::npos) << again.err;
    }
    EXPECT_EQ(test::directory_snapshot(out), before) << "a task wrote into the merged OUT";
    auto merged = test::run_imgpack("merge " + q(out) + " --json");
    ASSERT_EQ(merged.exit_code, 0) << merged.err;
    const nlohmann::json summary = nlohmann::json::parse(merged.out);
    EXPECT_EQ(summary["already_merged"].get<bool>(), point.empty());
    EXPECT_EQ(summary["resumed"].get<bool>(), !point.empty());
    expect_like_single(out);
  }
  // The inputs grown since (a weekly append, say), the tasks run again: the
  // OUT holds another conversion's dataset, which no part of this one could
  // be merged into, so each is refused (exit 2) before converting anything.
  const fs::path out = dir_ / "rerun";
  ASSERT_EQ(run_command(imgpack() + " sample-data " + q(dir_ / "more") +
                        " --classes 3 --groups 3 --per-class 1 --size 40x32 --seed 9 -q")
                .exit_code,
            0);
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "more")) {
    if (!entry.is_regular_file()) continue;
    const fs::path into = dir_ / "src" / fs::relative(entry.path(), dir_ / "more");
    fs::create_directories(into.parent_path());
    fs::copy_file(entry.path(),
                  into.parent_path() / (into.stem().string() + "_new" + into.extension().string()));
  }
  const auto before = test::directory_snapshot(out);
  for (const std::string& resume : {std::string(" --resume"), std::string()}) {
    auto again = run_command(imgpack() + " " + convert_args("rerun") + " --part 0/3" + resume);
    EXPECT_EQ(again.exit_code, 2) << again.err;
    EXPECT_NE(again.err.find(out.string() + " holds a dataset of another conversion"),
              std::string::npos)
        << again.err;
  }
  EXPECT_EQ(test::directory_snapshot(out), before);

  // With --overwrite the tasks replace it (what --overwrite means): the
  // first removes the old dataset, the parts are converted and merged over
  // the grown inputs.
  auto tasks =
      run_command("sh -c " + shell_quote("set -e; for I in 0 1 2; do " + imgpack() + " " +
                                         convert_args("rerun") + " --part $I/3 --overwrite; done"));
  ASSERT_EQ(tasks.exit_code, 0) << tasks.err;
  EXPECT_FALSE(fs::exists(out / "index.h5"));
  ASSERT_EQ(test::run_imgpack("merge " + q(out) + " -q").exit_code, 0);
  EXPECT_EQ(inspect(out)["samples"], single_["samples"].get<int>() + 3);
  EXPECT_EQ(test::run_imgpack("verify " + q(out) + " -q").exit_code, 0);

  // Unmerged parts of a conversion into 3 parts go too when 2 replace them.
  tasks =
      run_command("sh -c " + shell_quote("set -e; for I in 0 1; do " + imgpack() + " " +
                                         convert_args("rerun") + " --part $I/2 --overwrite; done"));
  ASSERT_EQ(tasks.exit_code, 0) << tasks.err;
  EXPECT_FALSE(fs::exists(out / "parts" / "0-of-3"));
  ASSERT_EQ(test::run_imgpack("merge " + q(out) + " -q").exit_code, 0);
  EXPECT_EQ(inspect(out)["samples"], single_["samples"].get<int>() + 3);

  // A file of the user's in OUT, whatever its name: nothing is removed.
  test::write_bytes(out / "notes.tmp", "mine");
  const auto guarded = test::directory_snapshot(out);
  auto refused = run_command(imgpack() + " " + convert_args("rerun") + " --part 0/2 --overwrite");
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("holds notes.tmp, which imgpack did not write"), std::string::npos)
      << refused.err;
  EXPECT_EQ(test::directory_snapshot(out), guarded);
}

// A conversion in one piece into an OUT holding a conversion in parts, or a
// merge of one under way: refused (exit 2, OUT as it was) saying what is
// there and what to do; with --overwrite the parts are replaced, as a
// dataset would be. A file of the user's inside a part folder is never removed.
TEST_F(MergeCli, AConversionInOnePieceOverPartsIsRefusedOrReplacesThem) {
  ASSERT_EQ(test::run_imgpack(convert_args("single")).exit_code, 0);
  ASSERT_EQ(array_tasks("out", 2).exit_code, 0);
  const fs::path out = dir_ / "out";
  const std::string one_piece = imgpack() + " " + convert_args("out");
  auto before = test::directory_snapshot(out);
  for (const std::string& resume : {std::string(), std::string(" --resume")}) {
    auto refused = run_command(one_piece + resume);
    EXPECT_EQ(refused.exit_code, 2) << refused.err;
    EXPECT_NE(
        refused.err.find(out.string() + ": holds a conversion in parts (parts/0-of-2, 1-of-2)" +
                         (resume.empty() ? "" : ", which --resume cannot continue in one piece") +
                         "; imgpack merge OUT joins them, or --overwrite replaces them"),
        std::string::npos)
        << refused.err;
    EXPECT_EQ(test::directory_snapshot(out), before);
  }
  test::write_bytes(out / "parts" / "1-of-2" / "notes.txt", "mine");
  before = test::directory_snapshot(out);
  auto refused = run_command(one_piece + " --overwrite");
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("holds parts/1-of-2/notes.txt, which imgpack did not write"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(test::directory_snapshot(out), before);
  fs::remove(out / "parts" / "1-of-2" / "notes.txt");

  // A part being converted now (its folder locked): refused before anything
  // is removed, a dataset in OUT too (as a merge stopped after its index
  // leaves one beside the parts).
  for (const auto& entry : fs::directory_iterator(dir_ / "single")) {
    fs::copy_file(entry.path(), out / entry.path().filename());
  }
  before = test::directory_snapshot(out);
  {
    const DirectoryLock converting(out / "parts" / "1-of-2");
    refused = run_command(one_piece + " --overwrite");
    EXPECT_EQ(refused.exit_code, 2) << refused.err;
    EXPECT_NE(refused.err.find("1-of-2: a part is being converted there now"), std::string::npos)
        << refused.err;
    EXPECT_EQ(test::directory_snapshot(out), before);
  }
  for (const auto& entry : fs::directory_iterator(dir_ / "single")) {
    fs::remove(out / entry.path().filename());
  }

  auto killed = run_killed_at("merge-shard:1", "merge " + q(out) + " -q");
  ASSERT_EQ(killed.exit_code, kKilledBySigkill) << killed.err;
  ASSERT_TRUE(fs::exists(out / "merge.journal"));
  before = test::directory_snapshot(out);
  refused = run_command(one_piece);
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find(out.string() + ": holds a merge under way (merge.journal); imgpack "
                                            "merge OUT finishes it, or --overwrite replaces it"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(test::directory_snapshot(out), before);

  auto replaced = run_command(one_piece + " --overwrite");
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  expect_like_single(out);
}

// A merge journal whose parts are gone (removed by hand): a usage error
// saying so, where the listing of the missing folder escaped as a raw
// filesystem error (exit 1).
TEST_F(MergeCli, AJournalWithoutItsPartsIsAUsageError) {
  const fs::path out = dir_ / "journal-only";
  fs::create_directories(out);
  test::write_bytes(out / "merge.journal", "{}");
  auto r = test::run_imgpack("merge " + q(out));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("merge.journal: a merge under way, but " + (out / "parts").string() +
                       " is gone, so it cannot be finished"),
            std::string::npos)
      << r.err;
}

// A part whose report.json is lost is refused by merge as damaged (exit 2,
// naming the part); converted again with --resume, which notices it, the
// part merges into the undamaged merge's dataset.
TEST_F(MergeCli, APartWithoutItsReportIsRefusedAndRedoneWithResume) {
  ASSERT_EQ(test::run_imgpack(convert_args("single")).exit_code, 0);
  auto tasks = array_tasks("out", 3);
  ASSERT_EQ(tasks.exit_code, 0) << tasks.err;
  const fs::path out = dir_ / "out";
  fs::remove(out / "parts" / "1-of-3" / "report.json");
  const auto before = test::directory_snapshot(out);
  auto merged = test::run_imgpack("merge " + q(out));
  EXPECT_EQ(merged.exit_code, 2) << merged.err;
  EXPECT_NE(
      merged.err.find("part 1-of-3 (" + (out / "parts" / "1-of-3").string() + ") is damaged: "),
      std::string::npos)
      << merged.err;
  EXPECT_NE(merged.err.find("--part 1/3 and --resume"), std::string::npos) << merged.err;
  EXPECT_EQ(test::directory_snapshot(out), before);
  auto redone = run_command(imgpack() + " " + convert_args("out") + " --part 1/3 --resume");
  ASSERT_EQ(redone.exit_code, 0) << redone.err;
  EXPECT_NE(redone.err.find("report.json: cannot open"), std::string::npos) << redone.err;
  EXPECT_NE(redone.err.find("converted again"), std::string::npos) << redone.err;
  merged = test::run_imgpack("merge " + q(out) + " -q");
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  expect_like_single(out);
}

// A merge that cannot write its index (a file size limit, as a full disk
// would) after it has moved the shards: exit 1, saying that the merge is
// journaled and to run it again, which ends as an uninterrupted merge.
TEST_F(MergeCli, AMergeThatCannotWriteItsIndexSaysToRunItAgain) {
  auto tasks = array_tasks("parts", 3);
  ASSERT_EQ(tasks.exit_code, 0) << tasks.err;
  const fs::path out = dir_ / "out";
  const fs::path reference = dir_ / "reference";
  fs::copy(dir_ / "parts", out, fs::copy_options::recursive);
  fs::copy(dir_ / "parts", reference, fs::copy_options::recursive);
  ASSERT_EQ(test::run_imgpack("merge " + q(reference) + " -q").exit_code, 0);
  const uint64_t index_bytes = fs::file_size(reference / format::kIndexFile);
  std::vector<std::string> before_index = read_index(reference).shards.file;
  before_index.emplace_back(format::kSplitsFile);
  for (const std::string& file : before_index) {
    ASSERT_LT(fs::file_size(reference / file) + 1024, index_bytes)
        << file << ": a limit under index.h5 would stop this file, written before it, first";
  }
  auto r = run_with_file_limit(index_bytes - 1, "merge " + q(out));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find((out / "index.h5.tmp").string() + ": "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(the merge is journaled in " + (out / "merge.journal").string() +
                       ": run it again once that is fixed)"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(out / format::kIndexFile));
  r = test::run_imgpack("merge " + q(out) + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  test::expect_same_dataset_bytes(out, reference);
}

// Sets a part shard's shard_index attribute back to its number in the part
// (its file name's), as a merge killed between writing a shard's renumbered
// /sample column and its attribute can leave it: HDF5 writes the two back in
// no set order.
void unnumber_attribute(const fs::path& shard) {
  h5::Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
  hbool_t clear = 1;  // a killed merge leaves the file marked open for writing
  ASSERT_GE(H5Pset(fapl.get(), "clear_status_flags", &clear), 0);
  h5::Handle file(H5Fopen(shard.c_str(), H5F_ACC_RDWR, fapl.get()));
  ASSERT_TRUE(file) << shard;
  h5::Handle attr(H5Aopen(file.get(), format::kAttrShardIndex, H5P_DEFAULT));
  ASSERT_TRUE(attr) << shard;
  const int64_t part_shard = std::stoll(shard.stem().string().substr(6));  // shard-NNNNN
  ASSERT_GE(H5Awrite(attr.get(), H5T_NATIVE_INT64, &part_shard), 0);
  ASSERT_GE(file.close(), 0);
}

TEST_F(MergeCli, AMergeKilledBetweenAShardsColumnAndItsAttributeFinishesWhenRunAgain) {
  auto tasks = array_tasks("parts", 3);
  ASSERT_EQ(tasks.exit_code, 0) << tasks.err;
  ASSERT_EQ(test::run_imgpack(convert_args("single")).exit_code, 0);
  const fs::path out = dir_ / "out";
  fs::copy(dir_ / "parts", out, fs::copy_options::recursive);
  // The last shard: its part's sample ids are not the merged ones (those of
  // the first part are).
  int shards = 0;
  for (const auto& entry : fs::recursive_directory_iterator(out / "parts")) {
    shards += entry.path().stem().string().starts_with("shard-") ? 1 : 0;
  }
  auto killed =
      run_killed_at("merge-patch:" + std::to_string(shards - 1), "merge " + q(out) + " -q");
  ASSERT_EQ(killed.exit_code, kKilledBySigkill) << killed.err;
  for (const auto& entry : fs::recursive_directory_iterator(out / "parts")) {
    if (entry.path().extension() == ".h5" && entry.path().stem().string().starts_with("shard-")) {
      unnumber_attribute(entry.path());
    }
  }
  auto merged = test::run_imgpack("merge " + q(out) + " --json");
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  expect_like_single(out);
}

TEST_F(MergeCli, PartOutOfRangeIsAUsageError) {
  auto r = test::run_imgpack(convert_args("out") + " --part 3/3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--part 3/3"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
  auto merged = test::run_imgpack("merge " + q(dir_ / "src"));
  EXPECT_EQ(merged.exit_code, 2);
  EXPECT_NE(merged.err.find("no parts to merge"), std::string::npos) << merged.err;
}

// A file no conversion wrote, in a part's folder (notes kept beside it): the
// merge finishes, names the file, and leaves it and the folder holding it.
TEST_F(MergeCli, AFileNoConversionWroteIsLeftInPlaceAndNamed) {
  ASSERT_EQ(array_tasks("out", 2).exit_code, 0);
  const fs::path out = dir_ / "out";
  const fs::path notes = out / "parts" / "1-of-2" / "notes.txt";
  test::write_bytes(notes, "mine");
  auto merged = test::run_imgpack("merge " + q(out) + " --json");
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_EQ(nlohmann::json::parse(merged.out)["left_behind"],
            nlohmann::json::array({notes.string()}));
  EXPECT_NE(merged.err.find("warning: " + notes.string() +
                            ": not written by imgpack, so merge left it where it is"),
            std::string::npos)
      << merged.err;
  EXPECT_EQ(test::read_bytes(notes), "mine");
  EXPECT_FALSE(fs::exists(out / "parts" / "0-of-2"));
  EXPECT_FALSE(fs::exists(out / "parts" / "1-of-2" / "index.h5"));
  EXPECT_FALSE(fs::exists(out / "merge.journal"));
  auto verify = test::run_imgpack("verify " + q(out) + " -q");
  EXPECT_EQ(verify.exit_code, 0) << verify.err;
}

// Without labels, a shard copied from another part agrees with this part's
// index in all but the part that wrote it (parts number their samples and
// shards alike): verify of the part names it, and merge refuses it.
TEST_F(MergeCli, VerifyOfAPartNamesAShardCopiedFromAnotherPart) {
  // Enough images for full shards (7 records) in both parts.
  auto made = test::run_imgpack("sample-data " + q(dir_ / "many") +
                                " --classes 2 --per-class 40 --size 40x32 -q");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  for (int part = 0; part < 2; ++part) {
    auto r = test::run_imgpack("convert " + q(dir_ / "many") + " " + q(dir_ / "out") +
                               " --size 16x12 --labels none --shard-size 4K -q --part " +
                               std::to_string(part) + "/2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const fs::path part0 = dir_ / "out" / "parts" / "0-of-2";
  auto intact = test::run_imgpack("verify " + q(part0) + " -q");
  ASSERT_EQ(intact.exit_code, 0) << intact.err;
  // A shard of part 1 with as many records as the one it replaces.
  const fs::path part1 = dir_ / "out" / "parts" / "1-of-2";
  std::string name;
  for (std::size_t k = 0; name.empty() && fs::exists(part0 / format::shard_file_name(k)); ++k) {
    const std::string candidate = format::shard_file_name(k);
    if (fs::exists(part1 / candidate) &&
        h5::File::open_read(part0 / candidate).length("/labels") ==
            h5::File::open_read(part1 / candidate).length("/labels")) {
      name = candidate;
    }
  }
  ASSERT_FALSE(name.empty());
  fs::copy_file(part1 / name, part0 / name, fs::copy_options::overwrite_existing);
  auto verified = test::run_imgpack("verify " + q(part0) + " -q");
  EXPECT_EQ(verified.exit_code, 1) << verified.err;
  EXPECT_NE(verified.err.find((part0 / name).string() +
                              ": was written by part 1-of-2, but this is part 0-of-2"),
            std::string::npos)
      << verified.err;
  auto merged = test::run_imgpack("merge " + q(dir_ / "out"));
  EXPECT_EQ(merged.exit_code, 2) << merged.err;
  EXPECT_NE(merged.err.find(name), std::string::npos) << merged.err;
}

// Every file under `dir` with the XXH3 of its contents, to tell that a
// refused merge changed nothing.
void flip_bit(const fs::path& file, uint64_t offset, int bit) {
  test::flip_bits(file, offset, static_cast<uint8_t>(1U << bit));
}

// Parts of a conversion with masks and variants, converted once; each case
// works on a copy.
class MergeCampaign : public test::CliTest {
 protected:
  static constexpr int kParts = 3;

  // Made once for the suite, in the first test's SetUp: a failure there fails
  // every test (a failing SetUpTestSuite would show in ctest as skipped).
  void SetUp() override {
    static const std::string problem = prepare();
    ASSERT_EQ(problem, "");
  }
  static void TearDownTestSuite() {
    delete suite_;
    suite_ = nullptr;
  }

  static std::string prepare() {
    suite_ = new test::TempDir;
    auto r = test::run_imgpack("sample-data " + q(*suite_ / "src") +
                               " --classes 3 --groups 3 --per-class 8 --size 40x32 --masks -q");
    if (r.exit_code != 0) return r.err;
    const std::string script = "set -e; for I in 0 1 2; do " + imgpack() + " " +
                               convert_args("parts") + " --part $I/" + std::to_string(kParts) +
                               "; done; " + imgpack() + " " + convert_args("foreign") +
                               " --seed 9 --part 0/" + std::to_string(kParts);
    auto parts = run_command("sh -c " + shell_quote(script));
    if (parts.exit_code != 0) return parts.err;
    // The reference: the parts merged undamaged.
    fs::copy(*suite_ / "parts", *suite_ / "reference", fs::copy_options::recursive);
    auto merged = test::run_imgpack("merge " + q(*suite_ / "reference") + " -q");
    return merged.exit_code == 0 ? "" : merged.err;
  }

  static std::string convert_args(const std::string& out) {
    return "convert " + q(*suite_ / "src") + " " + q(*suite_ / out) + " --masks " +
           q(*suite_ / "src" / "masks") +
           " --size 16x12 --variants 2 --augment hflip,rotate=10 --shard-size 4K --threads 2"
           " --group-regex '/(g[0-9]+)_' --split cv:stratified-group:3 -q";
  }
  // A fresh copy of the parts in OUT.
  static fs::path fresh(const std::string& name) {
    fs::path out = *suite_ / name;
    fs::remove_all(out);
    fs::copy(*suite_ / "parts", out, fs::copy_options::recursive);
    return out;
  }
  static std::vector<fs::path> shards_of(const fs::path& part) {
    std::vector<fs::path> shards;
    for (const auto& entry : fs::directory_iterator(part)) {
      if (entry.path().filename().string().starts_with("shard-")) shards.push_back(entry.path());
    }
    std::sort(shards.begin(), shards.end());
    return shards;
  }

  // The suite's (not CliTest's per-test folder): the parts are converted once.
  static test::TempDir* suite_;
};

test::TempDir* MergeCampaign::suite_ = nullptr;

// Each kind of damage to one shard of one part, at seeded places: merge exits
// 2 naming the part and the shard, and changes nothing in OUT; the part
// converted again with --resume merges into the very dataset an undamaged
// merge makes.
TEST_F(MergeCampaign, EveryKindOfDamagedPartIsRefusedAndRedoneWithResume) {
  std::mt19937_64 random(20261127);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(random() % n); };
  const std::vector<std::string> kinds = {"pixels",    "masks",   "labels",  "columns",
                                          "metadata",  "swapped", "foreign", "other part",
                                          "truncated", "missing"};
  // A second round of other places, refused only, in the Release run; a
  // sanitizer run takes the first (each kind refused and redone).
  const int rounds = test::kSanitizer ? 1 : 2;
  for (int round = 0; round < rounds; ++round) {
    for (const std::string& kind : kinds) {
      const int part = static_cast<int>(pick(kParts));
      const std::string part_name = std::to_string(part) + "-of-" + std::to_string(kParts);
      const fs::path out = fresh("out");
      const std::vector<fs::path> shards = shards_of(out / "parts" / part_name);
      ASSERT_GE(shards.size(), 2u);
      // "other part": the shard of the same number in the next part, which
      // parts number their samples and shards alike; it may have fewer.
      const fs::path next_part =
          out / "parts" / (std::to_string((part + 1) % kParts) + "-of-" + std::to_string(kParts));
      std::size_t chosen = pick(shards.size());
      while (kind == "other part" && chosen > 0 &&
             !fs::exists(next_part / shards[chosen].filename())) {
        --chosen;
      }
      const fs::path& shard = shards[chosen];
      const uint64_t size = fs::file_size(shard);
      const uint64_t records = h5::File::open_read(shard).length("/labels");
      std::string detail;
      if (kind == "pixels" || kind == "masks") {
        const uint64_t begin =
            kind == "pixels" ? test::images_offset(shard) : test::masks_offset(shard);
        const uint64_t bytes = records * 12 * 16 * (kind == "pixels" ? 3 : 1);
        const uint64_t at = begin + pick(bytes);
        flip_bit(shard, at, static_cast<int>(pick(8)));
        detail = "byte " + std::to_string(at);
      } else if (kind == "labels" || kind == "columns") {
        const std::vector<std::pair<std::string, std::size_t>> columns =
            kind == "labels" ? std::vector<std::pair<std::string, std::size_t>>{{"/labels", 4}}
                             : std::vector<std::pair<std::string, std::size_t>>{
                                   {"/sample", 8}, {"/variant", 2}, {"/checksum", 8}};
        const auto& [column, width] = columns[pick(columns.size())];
        const uint64_t at = test::dataset_offset(shard, column) + pick(records * width);
        flip_bit(shard, at, static_cast<int>(pick(8)));
        detail = column + " byte " + std::to_string(at);
      } else if (kind == "metadata") {
        const std::vector<std::string> objects = {"/images", "/masks", "/labels", "/sample",
                                                  "/checksum"};
        const std::string& object = objects[pick(objects.size())];
        const uint64_t at = test::object_header_address(shard, object) + 4 + pick(40);
        flip_bit(shard, at, static_cast<int>(pick(8)));
        detail = object + " header byte " + std::to_string(at);
      } else if (kind == "swapped") {
        const fs::path other =
            shards[(std::find(shards.begin(), shards.end(), shard) - shards.begin() + 1) %
                   shards.size()];
        fs::rename(shard, out / "x");
        fs::rename(other, shard);
        fs::rename(out / "x", other);
      } else if (kind == "foreign") {
        fs::copy_file(
            *suite_ / "foreign" / "parts" / ("0-of-" + std::to_string(kParts)) / shard.filename(),
            shard, fs::copy_options::overwrite_existing);
      } else if (kind == "other part") {
        fs::copy_file(next_part / shard.filename(), shard, fs::copy_options::overwrite_existing);
      } else if (kind == "truncated") {
        fs::resize_file(shard, pick(size));
      } else {
        fs::remove(shard);
      }
      SCOPED_TRACE(kind + " " + shard.string() + " " + detail);
      // verify finds it in the part, naming the shard.
      auto verified = test::run_imgpack("verify " + q(out / "parts" / part_name) + " -q");
      EXPECT_EQ(verified.exit_code, 1) << verified.err;
      EXPECT_NE(verified.err.find(shard.filename().string()), std::string::npos) << verified.err;
      const auto before = test::directory_snapshot(out);
      auto merged = test::run_imgpack("merge " + q(out));
      EXPECT_EQ(merged.exit_code, 2) << merged.err;
      EXPECT_NE(merged.err.find("part " + part_name), std::string::npos) << merged.err;
      EXPECT_NE(merged.err.find(shard.filename().string()), std::string::npos) << merged.err;
      EXPECT_NE(merged.err.find("--part " + std::to_string(part) + "/3 and --resume"),
                std::string::npos)
          << merged.err;
      EXPECT_EQ(test::directory_snapshot(out), before);
      if (round > 0) continue;

      // Redone as the message says, then merged: the undamaged merge's bytes.
      auto redone = run_command(imgpack() + " " + convert_args("out") + " --part " +
                                std::to_string(part) + "/3 --resume");
      ASSERT_EQ(redone.exit_code, 0) << redone.err;
      EXPECT_NE(redone.err.find("converted again"), std::string::npos) << redone.err;
      merged = test::run_imgpack("merge " + q(out) + " -q");
      ASSERT_EQ(merged.exit_code, 0) << merged.err;
      test::expect_same_dataset_bytes(out, *suite_ / "reference");
    }
  }
}

// A part whose index.h5 is damaged (a label of its sample table flipped) is a
// damaged part like one with a damaged shard: exit 2 naming the part and the
// file, OUT unchanged, and the part converted again with --resume merges
// into the undamaged merge's bytes.
TEST_F(MergeCampaign, APartWithADamagedIndexIsRefusedAndRedoneWithResume) {
  const fs::path out = fresh("index-damage");
  const fs::path index = out / "parts" / "1-of-3" / "index.h5";
  flip_bit(index, test::dataset_offset(index, "/samples/label") + 4, 2);
  const auto before = test::directory_snapshot(out);
  auto merged = test::run_imgpack("merge " + q(out));
  EXPECT_EQ(merged.exit_code, 2) << merged.err;
  EXPECT_NE(merged.err.find("part 1-of-3 (" + (out / "parts" / "1-of-3").string() +
                            ") is damaged: " + index.string()),
            std::string::npos)
      << merged.err;
  EXPECT_NE(merged.err.find("--part 1/3 and --resume"), std::string::npos) << merged.err;
  EXPECT_EQ(test::directory_snapshot(out), before);

  auto redone =
      run_command(imgpack() + " " + convert_args("index-damage") + " --part 1/3 --resume");
  ASSERT_EQ(redone.exit_code, 0) << redone.err;
  EXPECT_NE(redone.err.find("converted again"), std::string::npos) << redone.err;
  merged = test::run_imgpack("merge " + q(out) + " -q");
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  test::expect_same_dataset_bytes(out, *suite_ / "reference");
}

// A merge killed with SIGKILL at seeded random moments (not only at its crash
// points) finishes when run again, into the very bytes of an uninterrupted merge.
TEST_F(MergeCampaign, AMergeKilledAtRandomMomentsFinishesByteIdentical) {
  // Delays spread over the time a whole merge takes here.
  const fs::path timed = fresh("timed");
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(test::run_imgpack("merge " + q(timed) + " -q").exit_code, 0);
  const auto merge_us = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::steady_clock::now() - start)
                            .count();
  std::mt19937_64 random(7);
  int killed_runs = 0;
  // Three of the eight moments under a sanitizer: a merge is killed at each
  // of its crash points in ArrayTasksThenMergeAndKilledMergesFinishWhenRunAgain.
  const int runs = test::kSanitizer ? 3 : 8;
  for (int run = 0; run < runs; ++run) {
    const fs::path out = fresh("killed");
    const unsigned delay_us = static_cast<unsigned>(random() % static_cast<uint64_t>(merge_us));
    SCOPED_TRACE("killed after " + std::to_string(delay_us) + " us");
    const std::string script = imgpack() + " merge " + q(out) + " -q & pid=$!; sleep " +
                               std::to_string(delay_us / 1e6) +
                               "; kill -9 $pid 2>/dev/null; wait $pid; echo $?";
    const test::CommandResult killed = run_command("sh -c " + shell_quote(script));
    ASSERT_EQ(killed.exit_code, 0);
    if (killed.out != "0\n") {
      ASSERT_EQ(killed.out, std::to_string(kKilledBySigkill) + "\n") << killed.err;
      ++killed_runs;
      auto merged = test::run_imgpack("merge " + q(out) + " -q");
      ASSERT_EQ(merged.exit_code, 0) << merged.err;
    }
    test::expect_same_dataset_bytes(out, *suite_ / "reference");
    EXPECT_FALSE(fs::exists(out / "parts"));
  }
  EXPECT_GT(killed_runs, 0);
}

// A merge stopped midway is checked again when run again: a shard it had
// already moved into OUT is checked as the merged dataset's, and damage to it
// is refused like damage to a part.
TEST_F(MergeCampaign, ARerunChecksTheShardsAlreadyMovedToo) {
  const fs::path out = fresh("stopped");
  auto killed = run_killed_at("merge-shard:3", "merge " + q(out));
  ASSERT_EQ(killed.exit_code, kKilledBySigkill) << killed.err;
  ASSERT_TRUE(fs::exists(out / "merge.journal"));
  ASSERT_TRUE(fs::exists(out / "shard-00001.h5"));
  flip_bit(out / "shard-00001.h5", test::images_offset(out / "shard-00001.h5") + 100, 3);
  const auto before = test::directory_snapshot(out);
  auto merged = test::run_imgpack("merge " + q(out));
  EXPECT_EQ(merged.exit_code, 2) << merged.err;
  EXPECT_NE(merged.err.find((out / "shard-00001.h5").string() + ": row "), std::string::npos)
      << merged.err;
  EXPECT_NE(merged.err.find("the interrupted merge"), std::string::npos) << merged.err;
  EXPECT_EQ(test::directory_snapshot(out), before);
}

}  // namespace
}  // namespace imgpack
