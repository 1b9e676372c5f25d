// imgpack bench: runs on a small converted dataset, reports the contract's
// JSON keys with sane values, and turns bad requests into exit codes.
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "imgpack/dataset_index.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

using test::run_imgpack;
using test::shell_quote;

bool on_tmpfs(const std::filesystem::path& path) {
  struct statfs fs {};
  return ::statfs(path.c_str(), &fs) == 0 && fs.f_type == TMPFS_MAGIC;
}

// imgpack bench with each rate of the reader alone timed for a fifth of a
// second (--measure-seconds) instead of one: these tests check what bench
// reports, not how steadily this machine reads. The timing tests (the
// sweeps, tests/tools/CMakeLists.txt) keep the default.
test::CommandResult bench(const std::string& arguments) {
  return run_imgpack("bench " + arguments + " --measure-seconds 0.2");
}

class BenchCommandTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    const std::string src = (*dir_ / "src").string();
    dataset_ = (*dir_ / "data").string();
    test::CommandResult r = run_imgpack("sample-data " + shell_quote(src) +
                                        " --classes 3 --groups 2 --per-class 10 --size 48x40 -q");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = run_imgpack("convert " + shell_quote(src) + " " + shell_quote(dataset_) +
                    " --size 32 --shard-size 40K --quiet");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // A split for --split/--fold/--role: fold = sample % 3, no test set.
    DatasetIndex index = read_index(dataset_);
    Split split;
    split.name = "cv3";
    split.kind = "random";
    split.folds = 3;
    split.created = utc_timestamp();
    for (std::size_t s = 0; s < index.num_samples(); ++s) {
      split.assign.push_back(static_cast<int16_t>(s % 3));
    }
    index.splits.push_back(split);
    write_index(dataset_, index);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static inline test::TempDir* dir_ = nullptr;
  static inline std::string dataset_;
};

TEST_F(BenchCommandTest, JsonHasTheContractKeys) {
  test::CommandResult r = bench(shell_quote(dataset_) + " --batch 4 --threads 2 --epochs 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* key :
       {"images_per_s", "gb_per_s", "memcpy_gb_per_s", "starvation", "threads", "batch"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_GT(j["images_per_s"].get<double>(), 0);
  EXPECT_GT(j["gb_per_s"].get<double>(), 0);
  EXPECT_GT(j["memcpy_gb_per_s"].get<double>(), 0);
  EXPECT_GE(j["starvation"].get<double>(), 0);
  EXPECT_LE(j["starvation"].get<double>(), 1);
  EXPECT_EQ(j["threads"].get<int>(), 2);
  EXPECT_EQ(j["batch"].get<int>(), 4);
  EXPECT_EQ(j["images"].get<int>(), 60);  // 30 records, 2 epochs, partial last batch
  EXPECT_EQ(j["bytes"].get<int>(), 60 * 32 * 32 * 3);
  EXPECT_GT(j["shards"].get<int>(), 1);
}

// Where the waits fell: the run's first batch, later epochs' first batches,
// and the rest; the parts add up to no more than the whole.
TEST_F(BenchCommandTest, JsonSplitsTheWaitsAtTheFirstBatchAndEpochStarts) {
  test::CommandResult r =
      bench(shell_quote(dataset_) + " --batch 4 --threads 2 --epochs 3 --step-ms 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  const double first = j["first_batch_wait_seconds"].get<double>();
  const double epochs = j["epoch_start_wait_seconds"].get<double>();
  const double all = j["wait_seconds"].get<double>();
  EXPECT_GE(first, 0);  // the ring is empty when the run starts, unless the readers win
  EXPECT_GE(epochs, 0);
  EXPECT_LE(first + epochs, all + 1e-9);
  const double after = j["starvation_after_first_batch"].get<double>();
  EXPECT_GE(after, 0);
  EXPECT_LE(after, j["starvation"].get<double>() + 1e-9);
}

TEST_F(BenchCommandTest, SelectionStepAndSweep) {
  test::CommandResult r =
      run_imgpack("bench " + shell_quote(dataset_) +
                  " --split cv3 --fold 1 --role val --batch 3 --epochs 1 --step-ms 1"
                  " --order shard-window --sweep-threads --threads 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["images"].get<int>(), 10);  // one fold of 30 samples
  ASSERT_EQ(j["sweep"].size(), 3u);
  for (int t = 0; t < 3; ++t) EXPECT_EQ(j["sweep"][t]["threads"].get<int>(), t + 1);
  const int recommended = j["recommended_threads"].get<int>();
  EXPECT_GE(recommended, 1);
  EXPECT_LE(recommended, 3);
  // With a step: the fewest threads whose reader alone reads 1.25x what the
  // step consumes (3 images per 1 ms).
  const double step = j["step_images_per_s"].get<double>();
  EXPECT_DOUBLE_EQ(step, 3000);
  for (const auto& run : j["sweep"]) {
    EXPECT_GT(run["runs"].get<int>(), 0);
    EXPECT_GE(run["seconds"].get<double>(), 0.9) << run;  // at least about a second timed
    if (run["threads"].get<int>() < recommended) {
      EXPECT_LT(run["images_per_s"].get<double>(), 1.25 * step);
    }
  }
  EXPECT_GE(j["sweep"][recommended - 1]["images_per_s"].get<double>(), 1.25 * step);
  EXPECT_DOUBLE_EQ(j["headroom"].get<double>(),
                   j["sweep"][recommended - 1]["images_per_s"].get<double>() / step);
}

// --measure-seconds S: each rate of the reader alone is timed for at least S
// seconds and at most 6 S; a value outside (0, 600] is a usage error.
TEST_F(BenchCommandTest, MeasureSecondsSetsHowLongEachRateIsTimed) {
  test::CommandResult r =
      run_imgpack("bench " + shell_quote(dataset_) +
                  " --batch 4 --epochs 1 --sweep-threads --threads 2 --measure-seconds 0.1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["measure_seconds"].get<double>(), 0.1);
  ASSERT_EQ(j["sweep"].size(), 2u);
  for (const auto& run : j["sweep"]) {
    EXPECT_GE(run["seconds"].get<double>(), 0.1) << run;
    // At most six times the least (0.6 s), with room for the last run's
    // overshoot on a loaded machine: below the default's least second.
    EXPECT_LT(run["seconds"].get<double>(), 1.0) << run;
  }
  for (const char* bad : {"0", "-1", "601", "soon"}) {
    EXPECT_EQ(run_imgpack("bench " + shell_quote(dataset_) + " --measure-seconds " + bad).exit_code,
              2)
        << bad;
  }
}

// A step the reader outpaces many times over must get the same answer, one
// thread, every time: the sweep times each thread count for about a second
// instead of guessing from a few milliseconds. (Three runs of about 13 s
// each; ten made this the longest test of the suite, twice over with ASan.)
TEST_F(BenchCommandTest, AGenerousStepGetsOneThreadEveryTime) {
  for (int run = 0; run < 3; ++run) {
    test::CommandResult r =
        run_imgpack("bench " + shell_quote(dataset_) +
                    " --batch 4 --epochs 1 --step-ms 50 --sweep-threads --threads 2 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["recommended_threads"].get<int>(), 1) << "run " << run << ": " << r.out;
    EXPECT_GT(j["headroom"].get<double>(), 1.25) << r.out;
    EXPECT_LT(j["starvation"].get<double>(), 0.5) << r.out;  // 50 ms per batch is plenty
  }
}

TEST_F(BenchCommandTest, TheSweepStopsAtTheCoresAvailable) {
  test::CommandResult r = run_imgpack("bench " + shell_quote(dataset_) +
                                      " --batch 8 --epochs 1 --sweep-threads --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  const int cores = j["cores_available"].get<int>();
  EXPECT_GE(cores, 1);
  EXPECT_EQ(j["sweep"].size(), static_cast<std::size_t>(cores));
  EXPECT_EQ(j["recommendation"], "the fewest within 5% of the best");
}

TEST_F(BenchCommandTest, SaysWhatAMissingStepMeans) {
  test::CommandResult r = bench(shell_quote(dataset_) + " --batch 8 --epochs 1 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("pass --step-ms with your training step's time"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("headroom"), std::string::npos) << r.out;
  r = bench(shell_quote(dataset_) + " --batch 8 --epochs 1 --step-ms 20 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("consumes 400 images/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("headroom"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("x what the step consumes"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("--step-ms"), std::string::npos) << r.out;
}

TEST_F(BenchCommandTest, ClassBalancedSampling) {
  test::CommandResult r =
      bench(shell_quote(dataset_) + " --sampling class-balanced --batch 4 --epochs 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["sampling"].get<std::string>(), "class-balanced");
  EXPECT_EQ(j["images"].get<int>(), 60);  // epochs as long as the selection: 30 draws each
  r = bench(shell_quote(dataset_) + " --sampling class-balanced --batch 4 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("class-balanced sampling"), std::string::npos) << r.out;
  // Draws are random: a sequential order makes no sense, and says so before measuring.
  r = bench(shell_quote(dataset_) + " --sampling class-balanced --order sequential");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("needs the random order"), std::string::npos) << r.err;
  EXPECT_EQ(bench(shell_quote(dataset_) + " --sampling balanced").exit_code, 2);
}

TEST_F(BenchCommandTest, HumanOutput) {
  test::CommandResult r =
      bench(shell_quote(dataset_) + " --batch 8 --epochs 1 --output float32 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("images/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("of memcpy"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("starvation"), std::string::npos) << r.out;
}

// --crop: the loader delivers windows, and GB/s counts their bytes: a
// quarter of the records' at half of each side.
TEST_F(BenchCommandTest, CropDeliversWindows) {
  const std::string ds = shell_quote(dataset_) + " --batch 8 --epochs 2 --json -q";
  test::CommandResult r = bench(ds + " --crop 16 --hflip 0.5");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json cropped = nlohmann::json::parse(r.out);
  r = bench(ds);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json whole = nlohmann::json::parse(r.out);
  EXPECT_EQ(cropped["images"], whole["images"]);
  const double bytes_per_image =
      cropped["gb_per_s"].get<double>() * 1e9 / cropped["images_per_s"].get<double>();
  EXPECT_NEAR(bytes_per_image, 16 * 16 * 3, 1);
  // What was measured says so, in JSON and in the text.
  EXPECT_EQ(cropped["crop"], "16");
  EXPECT_EQ(cropped["hflip"], 0.5);
  EXPECT_TRUE(whole["crop"].is_null());
  EXPECT_EQ(whole["hflip"], 0.0);
  r = bench(shell_quote(dataset_) + " --batch 8 --epochs 1 --crop 16 --flip 0.5 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(", crop 16, flip 0.50, batch 8"), std::string::npos) << r.out;
  EXPECT_EQ(bench(shell_quote(dataset_) + " --crop 64").exit_code, 2);
  EXPECT_EQ(bench(shell_quote(dataset_) + " --flip 2").exit_code, 2);
}

// --cold: every epoch starts from an evicted page cache and the storage's own
// reads are the reference. Where the file system takes O_DIRECT (a disk), the
// eviction must leave next to nothing cached.
TEST_F(BenchCommandTest, ColdEvictsBeforeEachEpochAndMeasuresTheStorage) {
  test::CommandResult r =
      bench(shell_quote(dataset_) + " --cold --batch 4 --threads 2 --epochs 2 --json -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cold"], true);
  EXPECT_EQ(j["images"].get<uint64_t>(), 2 * j["records"].get<uint64_t>());
  EXPECT_GT(j["gb_per_s"].get<double>(), 0);
  EXPECT_GT(j["memcpy_gb_per_s"].get<double>(), 0);
  const nlohmann::json& storage = j["storage"];
  ASSERT_EQ(storage["sequential"].size(), 3u);
  ASSERT_EQ(storage["random"].size(), 4u);
  EXPECT_EQ(storage["sequential"][2]["in_flight"].get<unsigned>(), 16u);
  for (const char* pattern : {"sequential", "random"}) {
    for (const nlohmann::json& rate : storage[pattern]) {
      EXPECT_GT(rate["gb_per_s"].get<double>(), 0) << pattern << " " << rate.dump();
      EXPECT_EQ(rate["request_bytes"].get<uint64_t>() % 4096, 0u) << rate.dump();
    }
  }
  EXPECT_GE(storage["random"][0]["request_bytes"].get<uint64_t>(), 32u * 32 * 3);
  EXPECT_GT(j["reader_vs_sequential"].get<double>(), 0);
  EXPECT_GT(j["reader_vs_random"].get<double>(), 0);
  const double resident = j["resident_after_eviction"].get<double>();
  EXPECT_GE(resident, 0);
  EXPECT_LE(resident, 1);
  if (on_tmpfs(dataset_)) {
    EXPECT_GT(resident, 0.95) << "tmpfs cannot drop its pages";
  } else {
    EXPECT_LT(resident, 0.05) << "the eviction left the dataset cached";
  }
  if (!storage["direct"].get<bool>()) {
    EXPECT_NE(storage["note"].get<std::string>().find("O_DIRECT"), std::string::npos);
  }
  EXPECT_EQ(bench(shell_quote(dataset_) + " --cold --sweep-threads").exit_code, 2);
}

// On tmpfs nothing can be evicted (and kernels before 6.6 refuse O_DIRECT
// there, which the references then do without): the text and the JSON say
// the run was not cold.
TEST_F(BenchCommandTest, ColdOnTmpfsSaysItIsNotCold) {
  const std::filesystem::path shm = "/dev/shm";
  if (!std::filesystem::is_directory(shm) || !on_tmpfs(shm)) GTEST_SKIP() << "no tmpfs at /dev/shm";
  const std::filesystem::path copy = shm / ("imgpack-bench-cold-" + std::to_string(::getpid()));
  std::filesystem::remove_all(copy);
  std::filesystem::copy(dataset_, copy, std::filesystem::copy_options::recursive);
  test::CommandResult r = bench(shell_quote(copy.string()) + " --cold --batch 4 --epochs 1 -q");
  test::CommandResult j = bench(shell_quote(copy.string()) + " --cold --batch 4 --epochs 1 --json");
  std::filesystem::remove_all(copy);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("not a cold read"), std::string::npos) << r.out;
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const nlohmann::json result = nlohmann::json::parse(j.out);
  if (!result["storage"]["direct"].get<bool>()) {
    EXPECT_NE(result["storage"]["note"].get<std::string>().find("refuses O_DIRECT"),
              std::string::npos)
        << j.out;
  }
  EXPECT_GT(result["storage"]["random"][0]["gb_per_s"].get<double>(), 0);
  EXPECT_GT(result["resident_after_eviction"].get<double>(), 0.95);
}

// --memory-limit runs the bench in a memory cgroup of that size, which the
// reader sees as the memory its page cache may use, and removes the cgroup
// afterwards. Creating cgroups needs root: elsewhere the error says how else
// to run under a limit.
TEST_F(BenchCommandTest, MemoryLimitRunsInACgroupOfThatSize) {
  const uint64_t limit = uint64_t{512} << 20;
  test::CommandResult r =
      bench(shell_quote(dataset_) + " --cold --memory-limit 512M --batch 4 --epochs 1 --json -q");
  if (r.exit_code != 0) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("systemd-run"), std::string::npos) << r.err;
    GTEST_SKIP() << "no memory cgroup can be made here: " << r.err;
  }
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["memory_limit_bytes"].get<uint64_t>(), limit);
  EXPECT_GT(j["memory_peak_bytes"].get<uint64_t>(), 0u);
  EXPECT_LE(j["memory_peak_bytes"].get<uint64_t>(), limit);
  EXPECT_LE(j["page_cache_memory_bytes"].get<uint64_t>(), limit);
  EXPECT_EQ(j["images"].get<uint64_t>(), j["records"].get<uint64_t>());
  const std::filesystem::path cgroup = j["memory_cgroup"].get<std::string>().substr(10);
  EXPECT_FALSE(std::filesystem::exists(cgroup)) << cgroup << " was left behind";

  // A run stopped before it could remove its cgroup (Ctrl-C) leaves it; the
  // next run removes it, and leaves that of a run still going.
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ASSERT_GT(gone, 0);
  ::waitpid(gone, nullptr, 0);
  const std::filesystem::path stale =
      cgroup.parent_path() / ("imgpack-bench-" + std::to_string(gone));
  const std::filesystem::path running =
      cgroup.parent_path() / ("imgpack-bench-" + std::to_string(::getpid()));
  ASSERT_TRUE(std::filesystem::create_directory(stale));
  ASSERT_TRUE(std::filesystem::create_directory(running));
  r = bench(shell_quote(dataset_) + " --memory-limit 512M --batch 4 --epochs 1 -q");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(stale)) << stale << " was left behind";
  EXPECT_TRUE(std::filesystem::exists(running)) << running << " was removed while its process runs";
  std::filesystem::remove(running);
  EXPECT_EQ(bench(shell_quote(dataset_) + " --memory-limit lots").exit_code, 2);
  // A limit the process or its batches cannot fit in is refused, not met by
  // the kernel killing it without a word: below what the process holds,
  r = bench(shell_quote(dataset_) + " --memory-limit 0 -q");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--memory-limit 0 is below"), std::string::npos) << r.err;
  // and below the ring and the memcpy buffers (4100 batches of the whole
  // epoch here, 30 records of 3 KiB: a batch holds at most an epoch).
  r = bench(shell_quote(dataset_) + " --memory-limit 200M --batch 40000 --prefetch 4096 -q");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("batches of 90.0 KiB"), std::string::npos) << r.err;
}

// A batch larger than the epoch costs what the epoch's records cost: the
// loader's slots hold at most an epoch, and the memcpy reference's buffers
// are sized as they are (--batch 1048576 once took every byte of the machine
// for a dataset of a few MiB).
TEST_F(BenchCommandTest, ABatchLargerThanTheEpochCostsTheEpoch) {
  const test::CommandResult r =
      bench(shell_quote(dataset_) + " --batch 1048576 --prefetch 4 --epochs 1 --json -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const uint64_t epoch_bytes = uint64_t{30} * j.at("record_bytes").get<uint64_t>();
  EXPECT_EQ(j.at("memory_bound_bytes").get<uint64_t>(), 6 * epoch_bytes + (uint64_t{64} << 20));
}

TEST_F(BenchCommandTest, BadRequestsExitTwo) {
  const std::string ds = shell_quote(dataset_) + " ";
  EXPECT_EQ(bench(ds + "--order shuffle").exit_code, 2);
  EXPECT_EQ(bench(ds + "--batch 0").exit_code, 2);
  EXPECT_EQ(bench(ds + "--role train").exit_code, 2);  // no split
  EXPECT_EQ(bench(ds + "--split nope").exit_code, 2);
  EXPECT_EQ(bench(ds + "--split cv3 --fold 3").exit_code, 2);
  EXPECT_EQ(bench(ds + "--device gpu").exit_code, 2);
  EXPECT_EQ(bench(ds + "--step-ms nan").exit_code, 2);
  EXPECT_EQ(bench(ds + "--step-ms inf").exit_code, 2);
  EXPECT_EQ(bench(ds + "--measure-seconds nan").exit_code, 2);
  test::CommandResult r = bench(ds + "--split nope");
  EXPECT_NE(r.err.find("cv3"), std::string::npos) << r.err;  // lists the splits that exist
}

TEST_F(BenchCommandTest, RuntimeFailuresExitOne) {
  // A folder holding no dataset is found out at run time; one that does not
  // exist is an argument to correct (exit 2).
  std::filesystem::create_directories(*dir_ / "empty");
  test::CommandResult r = bench(shell_quote((*dir_ / "empty").string()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("empty"), std::string::npos) << r.err;
  r = bench(shell_quote((*dir_ / "missing").string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing: no such dataset directory"), std::string::npos) << r.err;
  r = bench(shell_quote(dataset_) + " --device cuda:0 --epochs 1");
  if (r.exit_code != 0) {  // no GPU here: a clear message, not a crash
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("cuda:0"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace imgpack
