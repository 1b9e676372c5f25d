// convert --resume: an interrupted conversion continued with --resume gives
// the same bytes as one that ran through.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "conversion/convert_journal.hpp"
#include "h5.hpp"
#include "imgpack/convert.hpp"
#include "imgpack/dataset_index.hpp"
#include "imgpack/error.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;

struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted") {}
};

class Resume : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 30; ++i) {
      std::string cls = i % 3 == 0 ? "a" : "b";
      test::write_image(dir_ / "src" / cls / ("img" + std::to_string(100 + i) + ".png"),
                        test::make_rgb_image(40 + i, 30, static_cast<uint64_t>(i)));
    }
    // Two inputs that are skipped, so resumed runs must restore skips too.
    test::write_bytes(dir_ / "src" / "a" / "img105.png", "");
    test::write_bytes(dir_ / "src" / "b" / "img117.png", "broken");
    reference_ = convert(options("reference"));
  }

  ConvertOptions options(const std::string& out) const {
    ConvertOptions o;
    o.src = dir_ / "src";
    o.out = dir_ / out;
    o.size = {{32, 24}};
    o.variants = 2;
    o.augment = "hflip,rotate=10";
    o.shard_size = uint64_t{6} * 32 * 24 * 3;  // three images (six records) per shard
    o.threads = 2;
    o.max_skipped.count = 2;  // the two broken inputs above
    return o;
  }

  // Runs a conversion that stops after `inputs` inputs.
  void run_interrupted(const std::string& out, uint64_t inputs) {
    try {
      convert(options(out), [&](const ConvertProgress& p) {
        if (p.done == inputs) throw Interrupted();
      });
      FAIL() << "not interrupted";
    } catch (const Interrupted&) {
    }
    EXPECT_FALSE(fs::exists(dir_ / out / "index.h5"));
  }

  void expect_same_as_reference(const std::string& out) {
    test::expect_same_dataset_bytes(dir_ / out, dir_ / "reference");
    auto report = nlohmann::json::parse(test::read_bytes(dir_ / out / "report.json"));
    auto expected = nlohmann::json::parse(test::read_bytes(dir_ / "reference" / "report.json"));
    EXPECT_EQ(report["skipped"], expected["skipped"]);
  }

  test::TempDir dir_;
  ConvertResult reference_;
};

TEST_F(Resume, AnyInterruptionPointResumesToIdenticalBytes) {
  ASSERT_EQ(reference_.samples, 29u);  // 31 inputs, 2 unreadable
  ASSERT_EQ(reference_.skipped.size(), 2u);
  ASSERT_GE(reference_.shards, 9u);
  for (uint64_t stop : {1u, 3u, 4u, 13u, 29u}) {
    const std::string out = "stop" + std::to_string(stop);
    run_interrupted(out, stop);
    ConvertOptions resumed = options(out);
    resumed.resume = true;
    ConvertResult result = convert(resumed);
    EXPECT_FALSE(result.already_complete);
    EXPECT_LE(result.resumed_inputs, stop);
    EXPECT_TRUE(result.resume_notes.empty()) << result.resume_notes[0];
    expect_same_as_reference(out);
  }
}

TEST_F(Resume, ADamagedShardIsConvertedAgainWithEverythingAfterIt) {
  run_interrupted("out", 20);
  std::optional<JournalState> journal = ConvertJournal::read(dir_ / "out");
  ASSERT_TRUE(journal);
  ASSERT_GE(journal->shards.size(), 3u);
  // Flip one pixel byte in the second shard's /images.
  const fs::path victim = dir_ / "out" / journal->shards[1].file;
  haddr_t offset = 0;
  {
    h5::File shard = h5::File::open_read(victim);
    offset = H5Dget_offset(shard.open_dataset("/images").get());
  }
  std::string bytes = test::read_bytes(victim);
  bytes[offset + 100] = static_cast<char>(bytes[offset + 100] ^ 0x40);
  test::write_bytes(victim, bytes);

  ConvertOptions resumed = options("out");
  resumed.resume = true;
  ConvertResult result = convert(resumed);
  EXPECT_EQ(result.resumed_shards, 1u);
  ASSERT_EQ(result.resume_notes.size(), 1u);
  EXPECT_NE(result.resume_notes[0].find(journal->shards[1].file), std::string::npos);
  expect_same_as_reference("out");
}

TEST_F(Resume, AMissingShardIsConvertedAgain) {
  run_interrupted("out", 20);
  fs::remove(dir_ / "out" / "shard-00000.h5");
  ConvertOptions resumed = options("out");
  resumed.resume = true;
  ConvertResult result = convert(resumed);
  EXPECT_EQ(result.resumed_shards, 0u);
  expect_same_as_reference("out");
}

TEST_F(Resume, PartialOutputIsRefusedWithoutResumeOrOverwrite) {
  run_interrupted("out", 10);
  try {
    convert(options("out"));
    FAIL() << "expected a usage error";
  } catch (const UsageError& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("ConvertOptions::resume"), std::string::npos) << message;
    EXPECT_NE(message.find("ConvertOptions::overwrite"), std::string::npos) << message;
  }
  ConvertOptions overwrite = options("out");
  overwrite.overwrite = true;
  convert(overwrite);
  expect_same_as_reference("out");
}

TEST_F(Resume, OtherOptionsCannotResume) {
  run_interrupted("out", 10);
  ConvertOptions other = options("out");
  other.resume = true;
  other.seed = 99;
  try {
    convert(other);
    FAIL() << "expected a usage error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("other inputs or options"), std::string::npos) << e.what();
  }
}

// What a crash while creating the journal leaves (an empty file, or its
// header line without the newline) holds no committed shard: --resume starts
// over instead of refusing.
TEST_F(Resume, AnEmptyJournalStartsOver) {
  for (const std::string& torn : {std::string(), std::string(R"({"imgpack_journal":1,"data)")}) {
    SCOPED_TRACE(torn);
    fs::remove_all(dir_ / "out");
    run_interrupted("out", 4);  // leaves shards that the journal no longer names
    test::write_bytes(dir_ / "out" / kJournalFile, torn);
    ConvertOptions resumed = options("out");
    resumed.resume = true;
    ConvertResult result = convert(resumed);
    EXPECT_EQ(result.resumed_shards, 0u);
    ASSERT_EQ(result.resume_notes.size(), 1u);
    EXPECT_NE(result.resume_notes[0].find("starting over"), std::string::npos)
        << result.resume_notes[0];
    expect_same_as_reference("out");
  }
}

TEST_F(Resume, ResumingACompleteDatasetChangesNothing) {
  ConvertOptions again = options("reference");
  again.resume = true;
  auto before = fs::last_write_time(dir_ / "reference" / "index.h5");
  ConvertResult result = convert(again);
  EXPECT_TRUE(result.already_complete);
  EXPECT_EQ(result.records, reference_.records);
  EXPECT_EQ(fs::last_write_time(dir_ / "reference" / "index.h5"), before);
}

// --resume trusts no input whose file changed: inputs edited in place after
// an interruption, keeping their size (a lossless EXIF rotation does), and
// even with their modification time put back (touch -r, exiftool -P), have
// their shards converted again with everything after them; the result is the
// conversion of the edited inputs, byte for byte.
class ResumeInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    // Binary PPMs: the file size is fixed by the image size, so pixels can
    // change in place while the size stays.
    for (int i = 0; i < 12; ++i) {
      test::write_image(src() / "c" / ("img" + std::to_string(10 + i) + ".ppm"),
                        test::make_rgb_image(40, 32, static_cast<uint64_t>(i)));
    }
  }
  fs::path src() const { return dir_ / "src"; }
  ConvertOptions options(const std::string& out) const {
    ConvertOptions o;
    o.src = src();
    o.out = dir_ / out;
    o.size = {{32, 32}};
    o.order = WriteOrder::sorted;
    o.shard_size = uint64_t{3} * 32 * 32 * 3;  // three inputs per shard
    o.threads = 2;
    return o;
  }
  void run_interrupted(const std::string& out, uint64_t inputs) {
    try {
      convert(options(out), [&](const ConvertProgress& p) {
        if (p.done == inputs) throw Interrupted();
      });
      FAIL() << "not interrupted";
    } catch (const Interrupted&) {
    }
  }
  // Inverts the pixels of `name` in place: same size, other content.
  void edit_in_place(const std::string& name, bool keep_mtime) {
    const fs::path path = src() / "c" / name;
    struct stat before {};
    ASSERT_EQ(::stat(path.c_str(), &before), 0);
    std::string bytes = test::read_bytes(path);
    for (std::size_t i = bytes.size() - std::size_t{40} * 32 * 3; i < bytes.size(); ++i) {
      bytes[i] = static_cast<char>(~bytes[i]);
    }
    test::write_bytes(path, bytes);
    if (keep_mtime) {
      const struct timespec times[2] = {before.st_atim, before.st_mtim};
      ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
    }
    struct stat after {};
    ASSERT_EQ(::stat(path.c_str(), &after), 0);
    ASSERT_EQ(after.st_size, before.st_size);
  }
  test::TempDir dir_;
};

TEST_F(ResumeInputs, InputsEditedInPlaceKeepingTheirSizeAreConvertedAgain) {
  for (const bool keep_mtime : {false, true}) {
    SCOPED_TRACE(keep_mtime ? "mtime put back" : "mtime changed");
    const std::string out = keep_mtime ? "kept-mtime" : "new-mtime";
    run_interrupted(out, 9);  // shards 0..2 committed
    // img14 is the fifth input in sorted order: shard 1.
    edit_in_place("img14.ppm", keep_mtime);
    ConvertOptions resumed = options(out);
    resumed.resume = true;
    const ConvertResult result = convert(resumed);
    EXPECT_EQ(result.resumed_shards, 1u);
    ASSERT_EQ(result.resume_notes.size(), 1u);
    EXPECT_NE(result.resume_notes[0].find("shard-00001.h5"), std::string::npos)
        << result.resume_notes[0];
    EXPECT_NE(result.resume_notes[0].find("changed"), std::string::npos) << result.resume_notes[0];

    ConvertOptions fresh = options("fresh-" + out);
    convert(fresh);
    test::expect_same_dataset_bytes(dir_ / out, dir_ / ("fresh-" + out));
  }
}

// Without edits every complete shard is kept.
TEST_F(ResumeInputs, UnchangedInputsKeepEveryShard) {
  run_interrupted("out", 9);
  ConvertOptions resumed = options("out");
  resumed.resume = true;
  const ConvertResult result = convert(resumed);
  EXPECT_EQ(result.resumed_shards, 3u);
  EXPECT_TRUE(result.resume_notes.empty());
}

}  // namespace
}  // namespace imgpack
