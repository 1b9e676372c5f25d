// convert --part I/N and merge(): N parts merged hold what one conversion of
// the same inputs holds, and merge refuses parts that do not belong together
// without touching OUT.
#include "imgpack/merge.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <set>
#include <tuple>

#include "files.hpp"
#include "h5.hpp"
#include "imgpack/convert.hpp"
#include "imgpack/dataset.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/error.hpp"
#include "imgpack/verify.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;

// (path, variant, checksum, label, group) of every record.
using RecordKey = std::tuple<std::string, uint16_t, uint64_t, int32_t, int32_t>;

std::multiset<RecordKey> record_keys(const fs::path& dir) {
  const DatasetIndex index = read_index(dir);
  std::multiset<RecordKey> keys;
  for (std::size_t k = 0; k < index.num_shards(); ++k) {
    h5::File shard = h5::File::open_read(dir / index.shards.file[k]);
    const auto samples = shard.read<int64_t>("/sample");
    const auto variants = shard.read<uint16_t>("/variant");
    const auto checksums = shard.read<uint64_t>("/checksum");
    const auto labels = shard.read<int32_t>("/labels");
    for (std::size_t row = 0; row < samples.size(); ++row) {
      const auto s = static_cast<std::size_t>(samples[row]);
      EXPECT_EQ(labels[row], index.sample_label[s]);
      keys.emplace(index.sample_path[s], variants[row], checksums[row], index.sample_label[s],
                   index.sample_group[s]);
    }
  }
  EXPECT_EQ(keys.size(), index.num_records());
  return keys;
}

class Merge : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 21; ++i) {
      const std::string cls = i % 3 == 0 ? "cat" : (i % 3 == 1 ? "dog" : "eel");
      std::string name = "g";  // group g0..g3
      name += std::to_string(i % 4);
      name += '_';
      name += std::to_string(i);
      name += ".png";
      test::write_image(dir_ / "src" / cls / name,
                        test::make_rgb_image(30 + i, 24, static_cast<uint64_t>(i)));
    }
  }

  ConvertOptions options(const std::string& out) const {
    ConvertOptions o;
    o.src = dir_ / "src";
    o.out = dir_ / out;
    o.size = {{16, 12}};
    o.variants = 2;
    o.augment = "hflip,rotate=10";
    o.shard_size = 4096;  // three images (six records of 576 bytes) per shard
    o.threads = 2;
    o.scan.group_regex = "/(g[0-9])_";
    o.splits.push_back(parse_split_option("cv:stratified-group:2", 0));
    return o;
  }

  void convert_parts(const std::string& out, uint32_t count) {
    for (uint32_t i = 0; i < count; ++i) {
      ConvertOptions o = options(out);
      o.part = ConvertPart{i, count};
      convert(o);
    }
    // A part writes nothing outside its folder.
    for (const auto& [name, contents] : test::directory_snapshot(dir_ / out)) {
      EXPECT_TRUE(name == "parts" || name.starts_with("parts/")) << name;
    }
  }

  void expect_refused(const std::string& out, const std::string& words) {
    const auto before = test::directory_snapshot(dir_ / out);
    try {
      merge({dir_ / out});
      ADD_FAILURE() << "merge accepted " << out;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
    EXPECT_EQ(test::directory_snapshot(dir_ / out), before);
  }

  test::TempDir dir_;
};

TEST_F(Merge, PartsMergeIntoWhatOneConversionHolds) {
  convert(options("single"));
  const DatasetIndex single = read_index(dir_ / "single");
  const auto expected = record_keys(dir_ / "single");
  for (uint32_t count : {1u, 3u, 7u}) {
    const std::string out = "parts" + std::to_string(count);
    convert_parts(out, count);
    const MergeResult result = merge({dir_ / out});
    EXPECT_EQ(result.parts, count);
    EXPECT_EQ(result.samples, single.num_samples());
    EXPECT_FALSE(fs::exists(dir_ / out / "parts")) << out;
    const DatasetIndex merged = read_index(dir_ / out);
    EXPECT_EQ(merged.class_names, single.class_names) << out;
    EXPECT_EQ(merged.group_names, single.group_names) << out;
    EXPECT_EQ(merged.variants, single.variants) << out;
    ASSERT_EQ(merged.splits.size(), 1u) << out;
    EXPECT_EQ(merged.splits[0].assign.size(), merged.num_samples()) << out;
    EXPECT_EQ(record_keys(dir_ / out), expected) << out;
  }
}

// Masks travel with their shards: the merged dataset has the masks, fill
// and label names of one conversion, every mask where its record is.
TEST_F(Merge, PartsWithMasksMergeIntoWhatOneConversionHolds) {
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "src")) {
    if (!entry.is_regular_file()) continue;
    const cv::Mat image = cv::imread(entry.path().string());
    cv::Mat mask(image.size(), CV_8UC1, cv::Scalar(0));
    cv::circle(mask, {image.cols / 2, image.rows / 2}, image.rows / 3, cv::Scalar(7), cv::FILLED);
    fs::path target = dir_ / "masks" / fs::relative(entry.path(), dir_ / "src");
    fs::create_directories(target.parent_path());
    ASSERT_TRUE(cv::imwrite(target.string(), mask));
  }
  test::write_bytes(dir_ / "names.txt", "background\nblob\n");
  auto with_masks = [&](ConvertOptions o) {
    o.masks.dir = dir_ / "masks";
    o.masks.fill = 9;
    o.masks.classes = dir_ / "names.txt";
    return o;
  };
  convert(with_masks(options("single")));
  for (uint32_t i = 0; i < 3; ++i) {
    ConvertOptions o = with_masks(options("parts"));
    o.part = ConvertPart{i, 3};
    convert(o);
  }
  merge({dir_ / "parts"});
  const DatasetIndex merged = read_index(dir_ / "parts");
  EXPECT_TRUE(merged.masks);
  EXPECT_EQ(merged.mask_fill, 9);
  EXPECT_EQ(merged.mask_class_names, (std::vector<std::string>{"background", "blob"}));
  EXPECT_EQ(record_keys(dir_ / "parts"), record_keys(dir_ / "single"));
  // Each record's mask, by (path, variant), is the single conversion's.
  auto mask_checksums = [](const fs::path& dir) {
    const Dataset dataset = Dataset::open(dir, {.verify_checksums = true, .index = {}});
    std::map<std::pair<std::string, uint16_t>, uint64_t> out;
    for (uint64_t r = 0; r < dataset.num_records(); ++r) {
      const auto s = static_cast<std::size_t>(dataset.record_sample(r));
      out[{dataset.index().sample_path[s], dataset.record_variant(r)}] =
          dataset.record_mask_checksum(r);
    }
    return out;
  };
  const auto single = mask_checksums(dir_ / "single");
  EXPECT_EQ(single.size(), 42u);
  EXPECT_EQ(mask_checksums(dir_ / "parts"), single);
}

// A part's report.json is informational: fields of the wrong kind (a
// number where text belongs, a number no count holds) are left out of the
// merged report, never a failure after the shards have moved.
TEST_F(Merge, AReportWithFieldsOfTheWrongKindDoesNotStopTheMerge) {
  convert_parts("reports", 2);
  const fs::path report = dir_ / "reports" / "parts" / "0-of-2" / format::kReportFile;
  nlohmann::json part = nlohmann::json::parse(test::read_bytes(report));
  part["source"] = 5;
  part["ignored_files"] = 8.9e116;
  part["max_skipped"] = nlohmann::json::array();
  part["timings"] = "fast";
  test::write_bytes(report, part.dump());
  const MergeResult result = merge({dir_ / "reports"});
  EXPECT_EQ(result.parts, 2u);
  const nlohmann::json merged =
      nlohmann::json::parse(test::read_bytes(dir_ / "reports" / format::kReportFile));
  EXPECT_EQ(merged["source"], "");
  EXPECT_EQ(merged["ignored_files"], 0);
  EXPECT_EQ(merged["max_skipped"], "");
  EXPECT_EQ(merged["parts"][0]["total_s"], 0.0);
}

TEST_F(Merge, RefusesAMissingPartAndLeavesOutAsItWas) {
  convert_parts("out", 3);
  fs::remove_all(dir_ / "out" / "parts" / "1-of-3");
  expect_refused("out", "part 1-of-3 is missing");
}

TEST_F(Merge, RefusesAPartMadeWithOtherOptions) {
  convert_parts("out", 3);
  ConvertOptions other = options("out");
  other.seed = 7;
  other.part = ConvertPart{2, 3};
  other.overwrite = true;
  convert(other);
  expect_refused("out", "part 2-of-3 (");
  expect_refused("out", "was made with other options");
}

TEST_F(Merge, RefusesADuplicatedPart) {
  convert_parts("out", 3);
  const fs::path parts = dir_ / "out" / "parts";
  fs::remove_all(parts / "1-of-3");
  fs::copy(parts / "0-of-3", parts / "1-of-3");
  expect_refused("out", "holds part 0-of-3, not part 1-of-3");
}

TEST_F(Merge, RefusesAnIncompletePart) {
  convert_parts("out", 3);
  fs::remove(dir_ / "out" / "parts" / "0-of-3" / "index.h5");
  expect_refused("out", "part 0-of-3 is incomplete");
}

// A part a change reached before changes refused parts (its index a later
// generation: samples removed, shards compacted) is refused, not merged with
// the change lost or half kept.
TEST_F(Merge, RefusesAPartChangedAfterItsConversion) {
  convert_parts("out", 2);
  const fs::path part = dir_ / "out" / "parts" / "1-of-2";
  DatasetIndex index = read_index(part);
  index.generation = 1;
  IndexChange converted;
  converted.change = "convert";
  converted.added = index.num_samples();
  IndexChange removed;
  removed.generation = 1;
  removed.change = "remove";
  removed.removed = 1;
  index.history = {converted, removed};
  index.sample_removed.resize(index.num_samples(), 0);
  index.sample_removed[0] = 1;
  write_index(part, index);
  expect_refused("out", "part 1-of-2 was changed after its conversion (generation 1)");
}

// Shards move by rename: a part folder linked from another file system is
// refused before anything moves (it failed after the first part's shards).
TEST_F(Merge, RefusesAPartOnAnotherFileSystem) {
  struct stat here {};
  struct stat shm {};
  if (::stat(dir_.path().c_str(), &here) != 0 || ::stat("/dev/shm", &shm) != 0 ||
      here.st_dev == shm.st_dev || ::access("/dev/shm", W_OK) != 0) {
    GTEST_SKIP() << "no writable /dev/shm on another file system than " << dir_.path();
  }
  convert_parts("out", 2);
  const fs::path part = dir_ / "out" / "parts" / "1-of-2";
  const fs::path elsewhere = fs::path("/dev/shm") / ("imgpack-" + dir_.path().filename().string());
  fs::copy(part, elsewhere, fs::copy_options::recursive);
  fs::remove_all(part);
  fs::create_directory_symlink(elsewhere, part);
  expect_refused("out", "parts/1-of-2: on another file system than");
  fs::remove(part);
  fs::copy(elsewhere, part, fs::copy_options::recursive);
  fs::remove_all(elsewhere);
  merge({dir_ / "out"});
  EXPECT_EQ(read_index(dir_ / "out").num_samples(), 21u);
}

TEST_F(Merge, RefusesAPartBeingConverted) {
  convert_parts("out", 2);
  const auto lock = DirectoryLock::try_acquire(dir_ / "out" / "parts" / "1-of-2");
  ASSERT_TRUE(lock.has_value());
  expect_refused("out", "part 1-of-2 is being converted now");
}

// A part holds a shared lock on OUT while it converts, and a conversion in
// one piece (or a merge) the exclusive one: neither starts beside the other,
// where a part used to convert into OUT/parts while the whole conversion
// wrote OUT, and a merge started while a part converted.
TEST_F(Merge, APartAndAConversionInOnePieceExcludeEachOther) {
  fs::create_directories(dir_ / "out");
  {
    const DirectoryLock whole(dir_ / "out");  // what a conversion in one piece holds
    ConvertOptions part = options("out");
    part.part = ConvertPart{0, 2};
    try {
      convert(part);
      ADD_FAILURE() << "a part converted beside a conversion in one piece";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("a conversion in one piece, a merge or a split is "
                                           "writing to it now"),
                std::string::npos)
          << e.what();
    }
    EXPECT_FALSE(fs::exists(dir_ / "out" / "parts"));
  }
  convert_parts("out", 2);
  {
    // What a part converting now holds (a second part takes it too).
    const std::optional<DirectoryLock> converting = DirectoryLock::try_acquire_shared(dir_ / "out");
    ASSERT_TRUE(converting.has_value());
    ConvertOptions again = options("out");
    again.part = ConvertPart{1, 2};
    again.overwrite = true;
    EXPECT_GT(convert(again).samples, 0u) << "parts convert side by side";
    ConvertOptions whole = options("out");
    whole.overwrite = true;
    const auto before = test::directory_snapshot(dir_ / "out");
    EXPECT_THROW(convert(whole), UsageError);
    EXPECT_EQ(test::directory_snapshot(dir_ / "out"), before) << "the parts were touched";
    expect_refused("out", "another merge, conversion (or a part of one) or split is using it now");
  }
  merge({dir_ / "out"});
  EXPECT_EQ(read_index(dir_ / "out").num_samples(), 21u);
}

// Parts number their samples and shards alike: unlabeled, with as many
// samples in each, a shard copied from another part agrees with the part's
// index in uuid, shard number, rows, samples, variants and labels, and its
// checksums are its own. It names the part that wrote it: merge refuses it,
// and a resume of the part converts it again.
TEST_F(Merge, RefusesAShardCopiedFromAnotherPart) {
  auto part = [&](uint32_t i) {
    ConvertOptions o = options("out");
    o.scan.labels = LabelSource::none;
    o.splits.clear();
    o.part = ConvertPart{i, 4};
    return o;
  };
  for (uint32_t i = 0; i < 4; ++i) convert(part(i));
  const fs::path parts = dir_ / "out" / "parts";
  ASSERT_EQ(read_index(parts / "0-of-4").num_samples(), read_index(parts / "3-of-4").num_samples())
      << "the inputs no longer fall into two parts of one size";
  fs::copy_file(parts / "3-of-4" / "shard-00000.h5", parts / "0-of-4" / "shard-00000.h5",
                fs::copy_options::overwrite_existing);
  expect_refused("out",
                 "shard-00000.h5: was written by part 3-of-4, but the part's index.h5 is "
                 "part 0-of-4");
  ConvertOptions resumed = part(0);
  resumed.resume = true;
  const ConvertResult redone = convert(resumed);
  ASSERT_FALSE(redone.resume_notes.empty());
  EXPECT_NE(redone.resume_notes.front().find("was written by part 3-of-4, but this is part 0-of-4"),
            std::string::npos)
      << redone.resume_notes.front();
  EXPECT_EQ(redone.resume_notes.front().find("more problems"), std::string::npos)
      << redone.resume_notes.front();
  merge({dir_ / "out"});
  EXPECT_EQ(read_index(dir_ / "out").num_samples(), 21u);
  EXPECT_TRUE(verify_dataset(dir_ / "out", {}).ok());
}

// merge renumbers the shards it adopts in place and renames them into OUT:
// through a hard link (a backup of the parts made with cp -al) it changed
// the backup too, and a symbolic link went into OUT as a link. Both are
// refused before anything changes.
TEST_F(Merge, RefusesShardsThatAreLinks) {
  convert_parts("out", 2);
  const fs::path shard = dir_ / "out" / "parts" / "1-of-2" / "shard-00000.h5";
  const fs::path backup = dir_ / "backup.h5";
  fs::create_hard_link(shard, backup);
  const std::string before = test::read_bytes(backup);
  expect_refused("out", "shard-00000.h5 (part 1-of-2) has 2 hard links");
  EXPECT_EQ(test::read_bytes(backup), before);
  fs::remove(shard);
  fs::copy_file(backup, dir_ / "elsewhere.h5");
  fs::create_symlink(dir_ / "elsewhere.h5", shard);
  expect_refused("out", "shard-00000.h5 (part 1-of-2) is a symbolic link");
  fs::remove(shard);
  fs::rename(backup, shard);
  merge({dir_ / "out"});
  EXPECT_EQ(read_index(dir_ / "out").num_samples(), 21u);
}

TEST_F(Merge, RefusesPartsOfDifferentCounts) {
  convert_parts("out", 2);
  ConvertOptions o = options("out");
  o.part = ConvertPart{0, 3};
  convert(o);
  expect_refused("out", "merge parts of one conversion only");
}

TEST_F(Merge, PartsAreNumberedFromZero) {
  ConvertOptions o = options("out");
  o.part = ConvertPart{3, 3};
  EXPECT_THROW(convert(o), UsageError);
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

// Two shards of a part swapped (their labels alike): merge renumbers what it
// adopts, so it must tell them apart before, by their shard index and rows.
TEST_F(Merge, RefusesSwappedShardsOfAPartBeforeRenumberingThem) {
  for (uint32_t i = 0; i < 2; ++i) {
    ConvertOptions o = options("out");
    o.scan.labels = LabelSource::none;
    o.splits.clear();
    o.splits.clear();
    o.part = ConvertPart{i, 2};
    convert(o);
  }
  const fs::path part = dir_ / "out" / "parts" / "0-of-2";
  fs::rename(part / "shard-00000.h5", part / "x");
  fs::rename(part / "shard-00001.h5", part / "shard-00000.h5");
  fs::rename(part / "x", part / "shard-00001.h5");
  expect_refused("out", "part 0-of-2 (" + part.string() +
                            ") is damaged: " + (part / "shard-00000.h5").string() +
                            ": is shard 1, the part's index.h5 lists it as 0");
  expect_refused("out", "ConvertOptions::part 0/2 and ConvertOptions::resume");
}

// A part whose pixels were damaged after it was converted: refused, then
// converted again by --resume, which verifies a finished part whole.
TEST_F(Merge, ADamagedPartIsRefusedAndConvertedAgainByResume) {
  convert_parts("out", 2);
  const fs::path shard = dir_ / "out" / "parts" / "1-of-2" / "shard-00001.h5";
  std::string bytes = test::read_bytes(shard);
  const uint64_t at = test::images_offset(shard) + 7;
  bytes[at] = static_cast<char>(bytes[at] ^ 0x10);
  test::write_bytes(shard, bytes);
  expect_refused("out", shard.string() + ": row 0 (");
  expect_refused("out", "does not match its stored checksum");

  ConvertOptions o = options("out");
  o.part = ConvertPart{1, 2};
  o.resume = true;
  const ConvertResult redone = convert(o);
  EXPECT_FALSE(redone.already_complete);
  ASSERT_EQ(redone.resume_notes.size(), 1u);
  EXPECT_NE(redone.resume_notes[0].find("converted again"), std::string::npos)
      << redone.resume_notes[0];
  // Intact now: a second --resume has nothing to do.
  EXPECT_TRUE(convert(o).already_complete);
  EXPECT_EQ(merge({dir_ / "out"}).parts, 2u);
  convert(options("single"));
  EXPECT_EQ(record_keys(dir_ / "out"), record_keys(dir_ / "single"));
}

TEST_F(Merge, AnInterruptedPartResumesInItsFolder) {
  ConvertOptions o = options("out");
  o.part = ConvertPart{0, 2};
  try {
    convert(o, [](const ConvertProgress& p) {
      if (p.done == 4) throw std::runtime_error("interrupted");
    });
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(test::directory_snapshot(dir_ / "out").count("parts/0-of-2/convert.journal"), 1u);
  o.resume = true;
  convert(o);
  o.resume = false;
  o.part = ConvertPart{1, 2};
  convert(o);
  EXPECT_EQ(merge({dir_ / "out"}).parts, 2u);
  convert(options("single"));
  EXPECT_EQ(record_keys(dir_ / "out"), record_keys(dir_ / "single"));
}

}  // namespace
}  // namespace imgpack
