#include "conversion/convert_journal.hpp"

#include <gtest/gtest.h>

#include "imgpack/error.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

JournalShard shard(uint32_t index, uint64_t next,
                   std::vector<std::pair<uint64_t, std::string>> skipped = {}) {
  JournalShard s;
  s.shard = index;
  s.file = "shard-0000" + std::to_string(index) + ".h5";
  s.records = 10;
  s.next_position = next;
  s.skipped = std::move(skipped);
  return s;
}

TEST(ConvertJournal, RoundTripsShardsAndSkippedInputs) {
  test::TempDir dir;
  {
    ConvertJournal journal = ConvertJournal::create(dir.path(), "uuid-1", 30);
    journal.append(shard(0, 11, {{4, "empty file"}}));
    journal.append(shard(1, 21));
  }
  std::optional<JournalState> state = ConvertJournal::read(dir.path());
  ASSERT_TRUE(state);
  EXPECT_EQ(state->dataset_uuid, "uuid-1");
  EXPECT_EQ(state->inputs, 30u);
  ASSERT_EQ(state->shards.size(), 2u);
  EXPECT_EQ(state->shards[0].next_position, 11u);
  ASSERT_EQ(state->shards[0].skipped.size(), 1u);
  EXPECT_EQ(state->shards[0].skipped[0].first, 4u);
  EXPECT_EQ(state->shards[0].skipped[0].second, "empty file");
  EXPECT_EQ(state->shards[1].file, "shard-00001.h5");
}

TEST(ConvertJournal, ATornLastLineIsIgnored) {
  test::TempDir dir;
  {
    ConvertJournal journal = ConvertJournal::create(dir.path(), "u", 30);
    journal.append(shard(0, 11));
  }
  std::string text = test::read_bytes(dir / kJournalFile);
  test::write_bytes(dir / kJournalFile, text + R"({"shard":1,"file":"shard-00001.h5","rec)");
  std::optional<JournalState> state = ConvertJournal::read(dir.path());
  ASSERT_TRUE(state);
  EXPECT_EQ(state->shards.size(), 1u);
}

TEST(ConvertJournal, DamageBeforeTheLastLineIsAnError) {
  test::TempDir dir;
  test::write_bytes(dir / kJournalFile,
                    "{\"imgpack_journal\":1,\"dataset_uuid\":\"u\",\"inputs\":3}\n"
                    "garbage\n{\"shard\":0}\n");
  EXPECT_THROW(ConvertJournal::read(dir.path()), Error);
  test::write_bytes(dir / kJournalFile, "{\"something\":\"else\"}\n");
  EXPECT_THROW(ConvertJournal::read(dir.path()), Error);
}

// Numbers a journal never holds (a fraction, a sign, a size beyond the
// field, found by text_inputs_fuzzer) are damage like any other: an Error
// naming the file and line, or, on a torn last line, that line ignored.
TEST(ConvertJournal, NumbersNoJournalHoldsAreDamage) {
  test::TempDir dir;
  const std::string header = "{\"imgpack_journal\":1,\"dataset_uuid\":\"u\",\"inputs\":3}\n";
  const auto line = [](const std::string& records) {
    return "{\"shard\":0,\"file\":\"shard-00000.h5\",\"records\":" + records +
           ",\"next_position\":3,\"skipped\":[]}";
  };
  for (const std::string bad : {"8.9e116", "-1", "2.5", "1e3"}) {
    SCOPED_TRACE(bad);
    test::write_bytes(dir / kJournalFile, header + line(bad) + "\n");
    try {
      ConvertJournal::read(dir.path());
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(kJournalFile), std::string::npos) << e.what();
    }
    test::write_bytes(dir / kJournalFile, header + line(bad));  // torn: no newline
    const std::optional<JournalState> torn = ConvertJournal::read(dir.path());
    ASSERT_TRUE(torn);
    EXPECT_TRUE(torn->shards.empty());
  }
  test::write_bytes(dir / kJournalFile,
                    "{\"imgpack_journal\":1e300,\"dataset_uuid\":\"u\",\"inputs\":3}\n");
  EXPECT_THROW(ConvertJournal::read(dir.path()), Error);
  test::write_bytes(dir / kJournalFile,
                    "{\"imgpack_journal\":1,\"dataset_uuid\":\"u\",\"inputs\":8.9e116}\n");
  EXPECT_THROW(ConvertJournal::read(dir.path()), Error);
}

TEST(ConvertJournal, RewriteKeepsAPrefixAndAppendsAfterIt) {
  test::TempDir dir;
  {
    ConvertJournal journal = ConvertJournal::create(dir.path(), "u", 30);
    journal.append(shard(0, 11));
    journal.append(shard(1, 21));
  }
  JournalState state = *ConvertJournal::read(dir.path());
  state.shards.resize(1);
  {
    ConvertJournal journal = ConvertJournal::rewrite(dir.path(), state);
    journal.append(shard(1, 22));
  }
  state = *ConvertJournal::read(dir.path());
  ASSERT_EQ(state.shards.size(), 2u);
  EXPECT_EQ(state.shards[1].next_position, 22u);
  ConvertJournal journal = ConvertJournal::rewrite(dir.path(), state);
  journal.remove();
  EXPECT_FALSE(ConvertJournal::read(dir.path()));
}

TEST(ConvertJournal, RecordsTheFingerprintOfEachShardsInputs) {
  test::TempDir dir;
  {
    ConvertJournal journal = ConvertJournal::create(dir.path(), "u", 30);
    JournalShard with = shard(0, 11);
    with.inputs = 0xfedcba9876543210ULL;
    journal.append(with);
    journal.append(shard(1, 21));
  }
  const JournalState state = *ConvertJournal::read(dir.path());
  ASSERT_EQ(state.shards.size(), 2u);
  EXPECT_EQ(state.shards[0].inputs, std::optional<uint64_t>(0xfedcba9876543210ULL));
  EXPECT_FALSE(state.shards[1].inputs);  // as in journals written before the fingerprints
}

// What a crash while creating the journal leaves: nothing committed.
TEST(ConvertJournal, ATornHeaderReadsAsNothingCommitted) {
  test::TempDir dir;
  for (const char* torn : {"", "{\"imgpack_journal\":1,\"dataset_uu"}) {
    test::write_bytes(dir / kJournalFile, torn);
    const std::optional<JournalState> state = ConvertJournal::read(dir.path());
    ASSERT_TRUE(state) << torn;
    EXPECT_TRUE(state->torn_header) << torn;
    EXPECT_TRUE(state->shards.empty());
  }
  test::write_bytes(dir / kJournalFile,
                    "{\"imgpack_journal\":1,\"dataset_uuid\":\"u\",\"inputs\":3}\n");
  EXPECT_FALSE(ConvertJournal::read(dir.path())->torn_header);
}

TEST(ConvertJournal, MissingJournalIsNotAnError) {
  test::TempDir dir;
  EXPECT_FALSE(ConvertJournal::read(dir.path()));
}

}  // namespace
}  // namespace imgpack
