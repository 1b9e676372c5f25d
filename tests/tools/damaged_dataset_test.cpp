// Every subcommand that reads a dataset, run on damaged copies of one (index
// format 2, and format 1 where the damage is to format 1's own layout): a
// truncated shard, flipped pixels, flipped bytes in HDF5 metadata of a shard
// and of index.h5, damaged strings (format 1's global heap, format 2's bytes
// and offsets), an index.h5 of another dataset, a deleted shard, an empty or
// missing index.h5, a missing, foreign or damaged splits.h5. Each command
// either succeeds (when it does not read the damaged part) or exits 1 with a
// message naming the damaged file; none dies from a signal or hangs. verify
// fails on every one of them.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "h5.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using test::CommandResult;
using test::shell_quote;

std::string q(const fs::path& p) { return shell_quote(p.string()); }

// Runs imgpack under a time limit, so a hang fails the test (exit 124).
CommandResult run_limited(const std::string& arguments) {
  return test::run_command("timeout -s KILL 120 " + shell_quote(test::imgpack_cli()) + " " +
                           arguments);
}

void flip_byte(const fs::path& file, uint64_t offset, uint8_t mask = 0x5a) {
  test::flip_bits(file, offset, mask);
}

using test::dataset_offset;
using test::images_offset;
using test::object_header_address;

// Offset of the first global heap collection (strings) in an imgpack file:
// it sits on a 4096-byte boundary.
uint64_t first_heap_collection(const fs::path& file) {
  const std::string bytes = test::read_bytes(file);
  for (std::size_t at = 0; at + 4 <= bytes.size(); at += 4096) {
    if (bytes.compare(at, 4, "GCOL") == 0) return at;
  }
  throw std::runtime_error("no global heap collection in " + file.string());
}

// How much of the dataset a damage affects.
enum class Reach {
  pixels,  // only record bytes: verify alone must notice
  shard,   // one shard's structure: verify, bench and preview must fail
  uuid,    // index.h5 of another dataset: every shard is foreign to it
  index,   // index.h5 itself: every command must fail
  splits,  // splits.h5 (format 2): every command must fail but inspect --force,
           // which shows index.h5 without splits
  paths,   // the sample paths alone: every command that reads them must fail, and
           // inspect and split --list, which print none and read none, must work
};

struct Damage {
  std::string name;
  std::string file;  // the file every error message must name
  Reach reach;
  std::function<void(const fs::path& dataset, const fs::path& other)> apply;
  int format = 2;  // the index format of the dataset it damages
};

// Offset of the first occurrence of `text` in `file`, which must be its only one.
uint64_t unique_offset(const fs::path& file, const std::string& text) {
  const std::string bytes = test::read_bytes(file);
  const std::size_t at = bytes.find(text);
  if (at == std::string::npos || bytes.find(text, at + 1) != std::string::npos) {
    throw std::runtime_error("'" + text + "' is not in " + file.string() + " exactly once");
  }
  return at;
}

// How GoogleTest (and so ctest) shows a Damage: its name, not its bytes.
void PrintTo(const Damage& damage, std::ostream* out) { *out << damage.name; }

std::vector<Damage> damages() {
  return {
      {"truncated_shard", "shard-00001.h5", Reach::shard,
       [](const fs::path& d, const fs::path&) {
         fs::resize_file(d / "shard-00001.h5", images_offset(d / "shard-00001.h5") + 100);
       }},
      {"flipped_pixels", "shard-00001.h5", Reach::pixels,
       [](const fs::path& d, const fs::path&) {
         flip_byte(d / "shard-00001.h5",
                   images_offset(d / "shard-00001.h5") + uint64_t{2} * 3072 + 1000);
       }},
      {"shard_superblock", "shard-00002.h5", Reach::shard,
       [](const fs::path& d, const fs::path&) { flip_byte(d / "shard-00002.h5", 20); }},
      {"shard_images_header", "shard-00001.h5", Reach::shard,
       [](const fs::path& d, const fs::path&) {
         const fs::path shard = d / "shard-00001.h5";
         flip_byte(shard, object_header_address(shard, "/images") + 12);
       }},
      {"index_superblock", "index.h5", Reach::index,
       [](const fs::path& d, const fs::path&) { flip_byte(d / "index.h5", 20); }},
      {"index_records_header", "index.h5", Reach::index,
       [](const fs::path& d, const fs::path&) {
         flip_byte(d / "index.h5", object_header_address(d / "index.h5", "/records/shard") + 12);
       }},
      // Format 1 keeps its strings in HDF5's global heap, which has no
      // checksum: damage to an object's size or to a string's reference to it
      // crashed HDF5. (Format 2 keeps only its string attributes there.)
      {"index_string_heap_object_size", "index.h5", Reach::index,
       [](const fs::path& d, const fs::path&) {
         flip_byte(d / "index.h5", first_heap_collection(d / "index.h5") + 16 + 8 + 1, 0x01);
       }},
      {"format1_index_string_heap_object_size", "index.h5", Reach::index,
       [](const fs::path& d, const fs::path&) {
         flip_byte(d / "index.h5", first_heap_collection(d / "index.h5") + 16 + 8 + 1, 0x01);
       },
       1},
      {"format1_index_string_reference", "index.h5", Reach::paths,
       [](const fs::path& d, const fs::path&) {
         flip_byte(d / "index.h5", dataset_offset(d / "index.h5", "/samples/path") + 12, 0x01);
       },
       1},
      // A class name changed, its structure intact: HDF5 reads "Circle"
      // happily; only the table's checksum tells.
      {"format1_index_class_name", "index.h5", Reach::index,
       [](const fs::path& d, const fs::path&) {
         flip_byte(d / "index.h5", unique_offset(d / "index.h5", std::string("circle\0", 7)), 0x20);
       },
       1},
      {"index_class_name", "index.h5", Reach::index,
       [](const fs::path& d, const fs::path&) {
         flip_byte(d / "index.h5", unique_offset(d / "index.h5", "circlesquare"), 0x20);
       }},
      // Format 2's sample paths, which only what prints or matches paths reads.
      {"index_path_bytes", "index.h5", Reach::paths,
       [](const fs::path& d, const fs::path&) {
         flip_byte(d / "index.h5", dataset_offset(d / "index.h5", "/samples/path/bytes") + 5, 0x01);
       }},
      {"index_path_offsets", "index.h5", Reach::paths,
       [](const fs::path& d, const fs::path&) {
         flip_byte(d / "index.h5", dataset_offset(d / "index.h5", "/samples/path/offsets") + 9,
                   0x01);
       }},
      // Format 2's splits.h5: every command reads the splits.
      {"splits_missing", "splits.h5", Reach::splits,
       [](const fs::path& d, const fs::path&) { fs::remove(d / "splits.h5"); }},
      {"splits_of_another_dataset", "splits.h5", Reach::splits,
       [](const fs::path& d, const fs::path& other) {
         fs::copy_file(other / "splits.h5", d / "splits.h5", fs::copy_options::overwrite_existing);
       }},
      {"splits_assign", "splits.h5", Reach::splits,
       [](const fs::path& d, const fs::path&) {
         flip_byte(d / "splits.h5", dataset_offset(d / "splits.h5", "/splits/cv/assign") + 2, 0x01);
       }},
      {"splits_superblock", "splits.h5", Reach::splits,
       [](const fs::path& d, const fs::path&) { flip_byte(d / "splits.h5", 20); }},
      {"index_h5_alone_of_another_dataset", "splits.h5", Reach::splits,
       [](const fs::path& d, const fs::path& other) {
         fs::copy_file(other / "index.h5", d / "index.h5", fs::copy_options::overwrite_existing);
       }},
      {"shard_string_heap_object_size", "shard-00001.h5", Reach::shard,
       [](const fs::path& d, const fs::path&) {
         const fs::path shard = d / "shard-00001.h5";
         flip_byte(shard, first_heap_collection(shard) + 16 + 8 + 1, 0x01);
       }},
      {"index_of_another_dataset", "shard-00000.h5", Reach::uuid,
       [](const fs::path& d, const fs::path& other) {
         for (const char* file : {"index.h5", "splits.h5"}) {
           fs::copy_file(other / file, d / file, fs::copy_options::overwrite_existing);
         }
       }},
      {"shard_replaced_by_fifo", "shard-00002.h5", Reach::shard,
       [](const fs::path& d, const fs::path&) {
         fs::remove(d / "shard-00002.h5");
         ASSERT_EQ(::mkfifo((d / "shard-00002.h5").c_str(), 0600), 0);
       }},
      {"deleted_shard", "shard-00002.h5", Reach::shard,
       [](const fs::path& d, const fs::path&) { fs::remove(d / "shard-00002.h5"); }},
      {"empty_index", "index.h5", Reach::index,
       [](const fs::path& d, const fs::path&) { test::write_bytes(d / "index.h5", ""); }},
      {"missing_index", "index.h5", Reach::index,
       [](const fs::path& d, const fs::path&) { fs::remove(d / "index.h5"); }},
  };
}

struct Command {
  std::string name;
  std::function<std::string(const fs::path& dataset, const fs::path& scratch)> arguments;
  // Must this command fail on a damage of this reach, to an index of this format?
  std::function<bool(Reach, int format)> must_fail;
};

// The index as read_index() reads it: index.h5 and, for format 2, splits.h5.
bool index_read(Reach r) { return r == Reach::index || r == Reach::splits; }

std::vector<Command> commands() {
  auto index_only = [](Reach r, int) { return index_read(r); };
  auto index_or_paths = [](Reach r, int) { return index_read(r) || r == Reach::paths; };
  // A split change reads the paths only where it rewrites them: format 1.
  auto changes_splits = [](Reach r, int format) {
    return index_read(r) || (r == Reach::paths && format == 1);
  };
  // The reader defers the paths: what opens a dataset without printing them works.
  auto opens = [](Reach r, int) { return r != Reach::pixels && r != Reach::paths; };
  auto summary = [](Reach r, int) { return r != Reach::pixels && r != Reach::paths; };
  // preview opens as the reader does (it shows no path) and checks each
  // record it draws against its checksum: drawing every sample, it finds
  // damaged pixels too.
  auto draws_all = [](Reach r, int) { return r != Reach::paths; };
  auto always = [](Reach, int) { return true; };
  return {
      // inspect opens through the reader's checks; --force shows what the
      // index says even when a shard is damaged, but not a damaged index.
      {"inspect", [](const fs::path& d, const fs::path&) { return "inspect " + q(d); }, summary},
      {"inspect --json",
       [](const fs::path& d, const fs::path&) { return "inspect " + q(d) + " --json"; }, summary},
      {"inspect --force",
       [](const fs::path& d, const fs::path&) { return "inspect " + q(d) + " --force"; },
       [](Reach r, int) { return r == Reach::index; }},
      {"verify", [](const fs::path& d, const fs::path&) { return "verify " + q(d); }, always},
      {"verify --json --threads 3",
       [](const fs::path& d, const fs::path&) { return "verify " + q(d) + " --json --threads 3"; },
       always},
      {"split --list",
       [](const fs::path& d, const fs::path&) { return "split " + q(d) + " --list"; }, index_only},
      {"split --export",
       [](const fs::path& d, const fs::path& s) {
         return "split " + q(d) + " --export cv --out " + q(s / "cv.csv");
       },
       index_or_paths},
      {"split --name",
       [](const fs::path& d, const fs::path&) {
         return "split " + q(d) + " --name again --kind random --folds 2";
       },
       changes_splits},
      {"preview",
       [](const fs::path& d, const fs::path& s) {
         return "preview " + q(d) + " --out " + q(s / "p.png") + " --samples 1000";
       },
       draws_all},
      {"bench",
       [](const fs::path& d, const fs::path&) {
         return "bench " + q(d) +
                " --batch 4 --threads 1 --epochs 1 --measure-seconds 0.2 --json --quiet";
       },
       opens},
  };
}

class DamagedDatasetTest : public ::testing::TestWithParam<Damage> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    const fs::path src = *dir_ / "src";
    CommandResult r = run_limited("sample-data " + q(src) +
                                  " --classes 3 --groups 2 --per-class 6 --size 48x40 -q");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // 18 records of 32x32x3 (3 KiB), 5 per 16 KiB shard: 4 shards.
    for (const char* seed : {"1", "2"}) {
      const fs::path out = *dir_ / (std::string("data-") + seed);
      r = run_limited("convert " + q(src) + " " + q(out) +
                      " --size 32 --shard-size 16K --quiet --seed " + seed);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      r = run_limited("split " + q(out) + " --name cv --kind random --folds 3");
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    ASSERT_TRUE(fs::exists(*dir_ / "data-1/shard-00003.h5"));
    // The same dataset as an imgpack of index format 1 wrote it.
    fs::copy(pristine(2), pristine(1), fs::copy_options::recursive);
    test::rewrite_as_format1(pristine(1));
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static fs::path pristine(int format = 2) {
    return *dir_ / (format == 2 ? "data-1" : "data-1-format1");
  }
  static fs::path other() { return *dir_ / "data-2"; }

  static inline test::TempDir* dir_ = nullptr;
};

TEST_F(DamagedDatasetTest, PristineDatasetPassesEveryCommand) {
  for (int format : {1, 2}) {
    SCOPED_TRACE("format " + std::to_string(format));
    test::TempDir scratch;
    fs::copy(pristine(format), scratch / "data", fs::copy_options::recursive);
    for (const Command& command : commands()) {
      CommandResult r = run_limited(command.arguments(scratch / "data", scratch.path()));
      EXPECT_EQ(r.exit_code, 0) << command.name << ": " << r.err;
    }
  }
}

// Every command on a copy of `pristine` with `damage` applied (`other`: a
// dataset of another uuid).
// Under a sanitizer, a damaged index.h5 (refused by the index read that every
// command starts with) is given to one command per way in: the reader's open
// (inspect), the converter's index read (split --list) and verify. The fuzzer
// covers that read under AddressSanitizer with far more damages. Any other
// damage goes to the commands that read the dataset differently: the JSON
// form of inspect reads as its text form does, verify's text run as its
// threaded JSON run (which stays), and split --export and --name read only
// the index, as split --list, except the paths they write (a damage to the
// paths table goes to them). The Release run gives every damage to every
// command.
bool sampled_out_under_sanitizer(const Command& command, const Damage& damage) {
  if (!test::kSanitizer) return false;
  if (index_read(damage.reach)) {
    return command.name != "inspect" && command.name != "split --list" && command.name != "verify";
  }
  if (command.name == "inspect --json" || command.name == "verify") return true;
  return damage.reach != Reach::paths &&
         (command.name == "split --export" || command.name == "split --name");
}

void expect_every_command_fails_cleanly(const fs::path& pristine, const fs::path& other,
                                        const Damage& damage) {
  for (const Command& command : commands()) {
    if (sampled_out_under_sanitizer(command, damage)) continue;
    SCOPED_TRACE(command.name);
    test::TempDir scratch;
    const fs::path data = scratch / "data";
    fs::copy(pristine, data, fs::copy_options::recursive);
    damage.apply(data, other);
    CommandResult r = run_limited(command.arguments(data, scratch.path()));
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1)
        << "exit " << r.exit_code << " (>= 128 is a signal, 124 a hang)\n"
        << r.err;
    if (command.must_fail(damage.reach, damage.format)) {
      EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    } else if (damage.reach == Reach::paths) {
      EXPECT_EQ(r.exit_code, 0) << r.err;
    } else if (command.name == "inspect --force" && damage.reach != Reach::pixels) {
      // Best effort: the summary, and the damage named on stderr.
      EXPECT_EQ(r.exit_code, 0) << r.err;
      EXPECT_NE(r.out.find("records"), std::string::npos) << r.out;
      EXPECT_NE(r.err.find(damage.file), std::string::npos) << r.err;
    }
    if (r.exit_code != 0) {
      EXPECT_NE(r.err.find(damage.file), std::string::npos)
          << "stderr does not name " << damage.file << ":\n"
          << r.err;
    }
    // The way on is said in the CLI's words, never a library function's.
    EXPECT_EQ(r.err.find("()"), std::string::npos) << r.err;
  }
}

TEST_P(DamagedDatasetTest, EveryCommandFailsCleanlyNamingTheFile) {
  expect_every_command_fails_cleanly(pristine(GetParam().format), other(), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Damages, DamagedDatasetTest, ::testing::ValuesIn(damages()),
                         [](const ::testing::TestParamInfo<Damage>& param_info) {
                           return param_info.param.name;
                         });

// Damage to the masks of a dataset with segmentation masks.
std::vector<Damage> mask_damages() {
  return {
      {"flipped_mask", "shard-00001.h5", Reach::pixels,
       [](const fs::path& d, const fs::path&) {
         flip_byte(d / "shard-00001.h5", dataset_offset(d / "shard-00001.h5", "/masks") + 1500);
       }},
      {"truncated_in_masks", "shard-00001.h5", Reach::shard,
       [](const fs::path& d, const fs::path&) {
         fs::resize_file(d / "shard-00001.h5",
                         dataset_offset(d / "shard-00001.h5", "/masks") + 100);
       }},
      {"shard_masks_header", "shard-00001.h5", Reach::shard,
       [](const fs::path& d, const fs::path&) {
         const fs::path shard = d / "shard-00001.h5";
         flip_byte(shard, object_header_address(shard, "/masks") + 12);
       }},
      // A label name changed in its string table's bytes: only the table's
      // checksum tells.
      {"index_mask_class_name", "index.h5", Reach::index,
       [](const fs::path& d, const fs::path&) {
         const std::string bytes = test::read_bytes(d / "index.h5");
         const std::size_t at = bytes.find("background");
         ASSERT_NE(at, std::string::npos);
         flip_byte(d / "index.h5", at, 0x20);
       }},
      {"index_of_another_dataset", "shard-00000.h5", Reach::uuid,
       [](const fs::path& d, const fs::path& other) {
         for (const char* file : {"index.h5", "splits.h5"}) {
           fs::copy_file(other / file, d / file, fs::copy_options::overwrite_existing);
         }
       }},
  };
}

class DamagedMasksTest : public ::testing::TestWithParam<Damage> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    const fs::path src = *dir_ / "src";
    CommandResult r = run_limited("sample-data " + q(src) +
                                  " --classes 3 --groups 2 --per-class 6 --size 48x40 --masks -q");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // 18 records of 32x32x3 with their 32x32 masks (4 KiB), 4 per 16 KiB shard: 5 shards.
    for (const char* seed : {"1", "2"}) {
      const fs::path out = *dir_ / (std::string("data-") + seed);
      r = run_limited("convert " + q(src) + " " + q(out) + " --masks " + q(src / "masks") +
                      " --mask-classes " + q(src / "masks/classes.txt") +
                      " --size 32 --shard-size 16K --quiet --seed " + seed);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      r = run_limited("split " + q(out) + " --name cv --kind random --folds 3");
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    ASSERT_TRUE(fs::exists(*dir_ / "data-1/shard-00004.h5"));
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  static inline test::TempDir* dir_ = nullptr;
};

TEST_F(DamagedMasksTest, PristineDatasetPassesEveryCommand) {
  test::TempDir scratch;
  fs::copy(*dir_ / "data-1", scratch / "data", fs::copy_options::recursive);
  for (const Command& command : commands()) {
    CommandResult r = run_limited(command.arguments(scratch / "data", scratch.path()));
    EXPECT_EQ(r.exit_code, 0) << command.name << ": " << r.err;
  }
}

TEST_P(DamagedMasksTest, EveryCommandFailsCleanlyNamingTheFile) {
  expect_every_command_fails_cleanly(*dir_ / "data-1", *dir_ / "data-2", GetParam());
}

// verify names the record whose mask (not image) is damaged.
TEST_F(DamagedMasksTest, VerifyNamesTheDamagedMask) {
  test::TempDir scratch;
  const fs::path data = scratch / "data";
  fs::copy(*dir_ / "data-1", data, fs::copy_options::recursive);
  flip_byte(data / "shard-00001.h5",
            dataset_offset(data / "shard-00001.h5", "/masks") + uint64_t{2} * 1024 + 7);
  CommandResult r = run_limited("verify " + q(data) + " --json");
  EXPECT_EQ(r.exit_code, 1);
  const nlohmann::json report = nlohmann::json::parse(r.out);
  ASSERT_EQ(report["bad_records"].size(), 1u);
  EXPECT_EQ(report["bad_records"][0]["row"], 2);
  EXPECT_EQ(report["bad_records"][0]["mask"], true);
  EXPECT_NE(r.err.find("shard-00001.h5: the mask of row 2"), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(MaskDamages, DamagedMasksTest, ::testing::ValuesIn(mask_damages()),
                         [](const ::testing::TestParamInfo<Damage>& param_info) {
                           return param_info.param.name;
                         });

// inspect refuses a damaged dataset as every other subcommand does (exit 1,
// the file named): the damages it used to summarise with exit 0. --force
// shows the summary anyway, with the damage named.
TEST_F(DamagedDatasetTest, InspectRefusesDamagedDatasetsUnlessForced) {
  struct Case {
    std::string name, file;
    std::function<void(const fs::path&)> apply;
  };
  const std::vector<Case> cases = {
      {"truncated shard", "shard-00001.h5",
       [](const fs::path& d) {
         fs::resize_file(d / "shard-00001.h5", images_offset(d / "shard-00001.h5") + 100);
       }},
      {"flipped shard metadata", "shard-00002.h5",
       [](const fs::path& d) {
         flip_byte(d / "shard-00002.h5",
                   object_header_address(d / "shard-00002.h5", "/images") + 12);
       }},
      {"swapped shards", "shard-00001.h5",
       [](const fs::path& d) {
         fs::rename(d / "shard-00001.h5", d / "tmp");
         fs::rename(d / "shard-00002.h5", d / "shard-00001.h5");
         fs::rename(d / "tmp", d / "shard-00002.h5");
       }},
      {"foreign shard", "shard-00003.h5",
       [](const fs::path& d) {
         fs::copy_file(other() / "shard-00003.h5", d / "shard-00003.h5",
                       fs::copy_options::overwrite_existing);
       }},
      {"index of another dataset", "shard-00000.h5",
       [](const fs::path& d) {
         for (const char* file : {"index.h5", "splits.h5"}) {
           fs::copy_file(other() / file, d / file, fs::copy_options::overwrite_existing);
         }
       }},
      {"deleted shard", "shard-00002.h5",
       [](const fs::path& d) { fs::remove(d / "shard-00002.h5"); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    test::TempDir scratch;
    const fs::path data = scratch / "data";
    fs::copy(pristine(), data, fs::copy_options::recursive);
    c.apply(data);
    CommandResult r = run_limited("inspect " + q(data));
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.err.find(c.file), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
    r = run_limited("inspect " + q(data) + " --force");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("DAMAGED"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find(c.file), std::string::npos) << r.err;
    r = run_limited("inspect " + q(data) + " --force --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_NE(j["damage"].get<std::string>().find(c.file), std::string::npos) << j.dump();
    EXPECT_EQ(j["records"], 18);
  }
}

// verify names the shard, row and sample of flipped pixels, and only those.
TEST_F(DamagedDatasetTest, VerifyNamesTheDamagedRecord) {
  test::TempDir scratch;
  const fs::path data = scratch / "data";
  fs::copy(pristine(), data, fs::copy_options::recursive);
  const fs::path shard = data / "shard-00001.h5";
  int64_t sample = -1;
  {
    h5::File f = h5::File::open_read(shard);
    sample = f.read<int64_t>("/sample").at(2);
  }
  flip_byte(shard, images_offset(shard) + uint64_t{2} * 3072 + 1000);
  CommandResult r = run_limited("verify " + q(data) + " --json");
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["records_checked"], 18);
  EXPECT_TRUE(j["errors"].empty()) << j.dump();
  ASSERT_EQ(j["bad_records"].size(), 1u) << j.dump();
  EXPECT_EQ(j["bad_records"][0]["shard"], 1);
  EXPECT_EQ(j["bad_records"][0]["row"], 2);
  EXPECT_EQ(j["bad_records"][0]["sample"], sample);
  EXPECT_EQ(j["bad_records"][0]["file"], "shard-00001.h5");
  EXPECT_NE(r.err.find("shard-00001.h5: row 2"), std::string::npos) << r.err;

  // Two bad records, printed one at a time, still make the one JSON value
  // print_json() would print, character for character.
  flip_byte(shard, images_offset(shard) + uint64_t{4} * 3072 + 7);
  r = run_limited("verify " + q(data) + " --json");
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const auto two = nlohmann::ordered_json::parse(r.out);
  ASSERT_EQ(two["bad_records"].size(), 2u) << r.out;
  EXPECT_EQ(two["bad_records"][1]["row"], 4);
  EXPECT_EQ(r.out, two.dump(2) + "\n");

  // The human form says the same on stderr, and DAMAGED on stdout.
  r = run_limited("verify " + q(data));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("shard-00001.h5: row 2 "), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("DAMAGED"), std::string::npos) << r.out;
}

// verify reports every bad shard, not only the first.
TEST_F(DamagedDatasetTest, VerifyReportsEveryDamagedShard) {
  test::TempDir scratch;
  const fs::path data = scratch / "data";
  fs::copy(pristine(), data, fs::copy_options::recursive);
  fs::remove(data / "shard-00000.h5");
  fs::resize_file(data / "shard-00002.h5", images_offset(data / "shard-00002.h5") + 100);
  flip_byte(data / "shard-00003.h5", images_offset(data / "shard-00003.h5") + 5);
  CommandResult r = run_limited("verify " + q(data) + " --json");
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["errors"].size(), 2u) << j.dump(2);
  EXPECT_NE(j["errors"][0].get<std::string>().find("shard-00000.h5: missing"), std::string::npos);
  EXPECT_NE(j["errors"][1].get<std::string>().find("shard-00002.h5"), std::string::npos);
  ASSERT_EQ(j["bad_records"].size(), 1u);
  EXPECT_EQ(j["bad_records"][0]["file"], "shard-00003.h5");
  EXPECT_EQ(j["bad_records"][0]["row"], 0);
  EXPECT_EQ(j["records_checked"], 18 - 5 - 5);  // shards 1 and 3 were intact enough to read
  EXPECT_EQ(j["bad_shards"], nlohmann::json::array({0, 2, 3}));
  for (const char* file : {"shard-00000.h5", "shard-00002.h5", "shard-00003.h5"}) {
    EXPECT_NE(r.err.find(file), std::string::npos) << file << "\n" << r.err;
  }
}

TEST(VerifyCommandTest, CleanDatasetAndUsage) {
  test::TempDir dir;
  CommandResult r = run_limited("sample-data " + q(dir / "src") +
                                " --classes 2 --groups 2 --per-class 3 --size 40x30 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_limited("convert " + q(dir / "src") + " " + q(dir / "data") + " --size 16 --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_limited("verify " + q(dir / "data") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["records_checked"], 6);
  EXPECT_EQ(j["bad_records"], nlohmann::json::array());
  EXPECT_EQ(j["errors"], nlohmann::json::array());
  EXPECT_EQ(j["bytes"], 6 * 16 * 16 * 3);
  EXPECT_GT(j["gb_per_s"].get<double>(), 0);
  r = run_limited("verify " + q(dir / "data"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(": ok: 6 records"), std::string::npos) << r.out;

  EXPECT_EQ(run_limited("verify").exit_code, 2);
  EXPECT_EQ(run_limited("verify " + q(dir / "nothing")).exit_code, 2);
  EXPECT_EQ(run_limited("verify " + q(dir / "data") + " --threads x").exit_code, 2);
  EXPECT_EQ(run_limited("verify " + q(dir / "data") + " --bogus").exit_code, 2);
}

}  // namespace
}  // namespace imgpack
