// Crash safety of `imgpack convert`: killed with SIGKILL at any point, the
// same command with --resume finishes with bytes identical to a run that was
// never interrupted. Write errors (a full disk) leave no index.h5 and no
// temporary files.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "cli_fixture.hpp"
#include "imgpack/dataset_index.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using test::run_command;
using test::shell_quote;

class ResumeCli : public test::CliTest {
 protected:
  void SetUp() override {
    make_sample_data("--classes 4 --groups 3 --per-class 15 --size 96x72");
    auto reference = test::run_imgpack(convert_args("reference"));
    ASSERT_EQ(reference.exit_code, 0) << reference.err;
    ASSERT_GE(read_index(dir_ / "reference").num_shards(), 5u);
  }

  // 60 images at 48x48, two variants, 8 records (4 images) per shard.
  std::string convert_args(const std::string& out, const std::string& extra = "") const {
    return "convert " + q(dir_ / "src") + " " + q(dir_ / out) +
           " --size 48 --variants 2 --augment hflip,rotate=10 --shard-size " +
           std::to_string(8 * 48 * 48 * 3) + " -q " + extra;
  }
};

TEST_F(ResumeCli, KilledAtAnyPointResumesToIdenticalBytes) {
  // Early (first record), mid-shard, just before a shard's rename, while
  // writing index.h5, and after index.h5 but before the journal is removed.
  for (const std::string point :
       {"record:1", "record:13", "shard-commit:2", "index-commit", "index-committed"}) {
    std::string out = "killed-" + point;
    std::replace(out.begin(), out.end(), ':', '-');
    auto killed = run_killed_at(point, convert_args(out));
    ASSERT_EQ(killed.exit_code, kKilledBySigkill) << point << ": " << killed.err;
    const bool complete = point == "index-committed";
    EXPECT_EQ(fs::exists(dir_ / out / "index.h5"), complete) << point;

    auto refused = test::run_imgpack(convert_args(out));
    EXPECT_EQ(refused.exit_code, 2) << point;
    if (!complete) {
      EXPECT_NE(refused.err.find("--resume"), std::string::npos) << refused.err;
    }

    auto resumed = test::run_imgpack(convert_args(out, "--resume"));
    ASSERT_EQ(resumed.exit_code, 0) << point << ": " << resumed.err;
    test::expect_same_dataset_bytes(dir_ / out, dir_ / "reference");
  }
}

TEST_F(ResumeCli, KilledFromOutsideMidRunResumesToIdenticalBytes) {
  // A real kill -9 from another process, once some shards exist.
  const fs::path out = dir_ / "outside";
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::string args = convert_args("outside") + " --threads 1";
    ::execl("/bin/sh", "sh", "-c", (imgpack() + " " + args).c_str(), nullptr);
    ::_exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(out / "shard-00001.h5") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // The shell's child is the converter; kill the whole process group member by name.
  run_command("pkill -KILL -f " + shell_quote(out.string()));
  int status = 0;
  ::waitpid(pid, &status, 0);
  auto resumed = test::run_imgpack(convert_args("outside", "--resume"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  test::expect_same_dataset_bytes(dir_ / "outside", dir_ / "reference");
}

// The case: killed at a shard commit, then source JPEGs edited in
// place keeping their size (here a quantization value changed, which changes
// the pixels; half of them with their modification time put back, as
// exiftool -P does). The resumed run redoes the shards of edited inputs and
// gives the bytes of a fresh conversion of the edited inputs.
TEST_F(ResumeCli, InputsEditedInPlaceAfterAKillAreConvertedAgain) {
  auto killed = run_killed_at("shard-commit:4", convert_args("killed", "--order sorted"));
  ASSERT_EQ(killed.exit_code, kKilledBySigkill) << killed.err;
  int edited = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "src")) {
    if (entry.path().extension() != ".jpg") continue;
    struct stat before {};
    ASSERT_EQ(::stat(entry.path().c_str(), &before), 0);
    std::string bytes = test::read_bytes(entry.path());
    const std::size_t dqt = bytes.find("\xFF\xDB");
    ASSERT_NE(dqt, std::string::npos) << entry.path();
    char& dc = bytes[dqt + 5];  // the first table's DC quantizer
    dc = static_cast<char>(dc == '\x01' ? 2 : dc - 1);
    test::write_bytes(entry.path(), bytes);
    if (++edited % 2 == 0) {
      const struct timespec times[2] = {before.st_atim, before.st_mtim};
      ASSERT_EQ(::utimensat(AT_FDCWD, entry.path().c_str(), times, 0), 0);
    }
  }
  ASSERT_GT(edited, 10);
  auto resumed = test::run_imgpack(convert_args("killed", "--order sorted --resume"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("inputs that changed"), std::string::npos) << resumed.err;
  auto fresh = test::run_imgpack(convert_args("fresh", "--order sorted"));
  ASSERT_EQ(fresh.exit_code, 0) << fresh.err;
  test::expect_same_dataset_bytes(dir_ / "killed", dir_ / "fresh");
}

// A kept shard's /labels column is checked against the inputs' labels, as
// its sample and variant columns are against the numbering: the records'
// checksums do not cover it, and the resumed index takes the labels from
// the inputs, so a flipped label kept would give a dataset no reader opens.
// The shard is converted again instead, and the bytes are the reference's.
TEST_F(ResumeCli, AKeptShardWithADamagedLabelIsConvertedAgain) {
  auto killed = run_killed_at("shard-commit:3", convert_args("killed"));
  ASSERT_EQ(killed.exit_code, kKilledBySigkill) << killed.err;
  const fs::path shard = dir_ / "killed" / "shard-00001.h5";
  ASSERT_TRUE(fs::exists(shard));
  test::flip_bits(shard, test::dataset_offset(shard, "labels") + uint64_t{3} * 4, 0x40);
  auto resumed = test::run_imgpack(convert_args("killed", "--resume"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find(shard.string() + ": row 3 has label "), std::string::npos)
      << resumed.err;
  EXPECT_NE(resumed.err.find("converted again"), std::string::npos) << resumed.err;
  test::expect_same_dataset_bytes(dir_ / "killed", dir_ / "reference");
}

// An OUT the user may not write fails on the journal itself, naming it; the
// message does not then send the user to shards journaled there, since none
// are.
TEST_F(ResumeCli, AnOutThatCannotBeWrittenIsNamedWithoutAJournalToResumeFrom) {
  const fs::path out = dir_ / "read-only";
  fs::create_directories(out);
  ASSERT_EQ(::chmod(out.c_str(), 0555), 0);
  // Root writes anywhere unless it drops CAP_DAC_OVERRIDE, if setpriv can.
  const std::string drop = "setpriv --bounding-set=-dac_override,-dac_read_search ";
  std::string prefix;
  if (::access(out.c_str(), W_OK) == 0) {
    if (test::run_command(drop + "touch " + q(out / "probe") + " 2>/dev/null").exit_code == 0) {
      ::chmod(out.c_str(), 0755);
      GTEST_SKIP() << "a mode-555 folder stays writable here and setpriv cannot drop "
                      "CAP_DAC_OVERRIDE: such a folder cannot be made";
    }
    prefix = drop;
  }
  const test::CommandResult r = test::run_command(prefix + test::shell_quote(test::imgpack_cli()) +
                                                  " " + convert_args("read-only"));
  ::chmod(out.c_str(), 0755);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find((out / "convert.journal").string() + ": cannot open: Permission denied"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("journaled in"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(out));
}

TEST_F(ResumeCli, AFullDiskFailsCleanlyNamingTheFile) {
  // Writes past 30 KiB of a file fail, as on a full disk; a shard here is
  // 54 KiB of pixels.
  auto full = run_with_file_limit(uint64_t{30} << 10, convert_args("full"));
  EXPECT_EQ(full.exit_code, 1) << full.err;
  EXPECT_NE(full.err.find("shard-"), std::string::npos) << full.err;
  EXPECT_NE(full.err.find("journaled in " + (dir_ / "full" / "convert.journal").string() +
                          ": the same conversion with --resume continues from them"),
            std::string::npos)
      << full.err;
  EXPECT_FALSE(fs::exists(dir_ / "full" / "index.h5"));
  for (const auto& entry : fs::directory_iterator(dir_ / "full")) {
    EXPECT_FALSE(entry.path().string().ends_with(".tmp")) << entry.path();
  }
  // Once there is room again, --resume finishes the job.
  auto resumed = test::run_imgpack(convert_args("full", "--resume"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  test::expect_same_dataset_bytes(dir_ / "full", dir_ / "reference");
}

}  // namespace
}  // namespace imgpack
