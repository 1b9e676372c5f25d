// The reader on damaged datasets, of both index formats: an empty index.h5,
// an index.h5 (and splits.h5) of another dataset, a damaged string heap,
// damaged sample paths that open() defers; and damaged HDF5 metadata, byte by
// byte: every byte of index.h5 (and splits.h5)
// and of a shard outside its pixels is altered in turn (a stride of them by default; set
// IMGPACK_DAMAGE_STRIDE=1 for all), and a child process opens the result
// with Dataset::open, verify_dataset and render_preview. Each must either
// work or throw imgpack::Error naming the damaged file; a signal (SIGSEGV,
// SIGBUS, SIGABRT), a hang or another exception type fails the test.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include "h5.hpp"
#include "imgpack/dataset.hpp"
#include "imgpack/error.hpp"
#include "imgpack/format.hpp"
#include "imgpack/preview.hpp"
#include "imgpack/verify.hpp"
#include "random.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using test::SyntheticOptions;
using test::TempDir;

// What the child found (its exit status).
enum Outcome : int {
  kIntact = 0,            // opened and verified clean: the byte did not matter
  kRefused = 1,           // open threw an Error naming the file, verify reported it
  kChecksumsOnly = 2,     // open worked, verify found bad records (a /checksum value changed)
  kVerifyOnly = 3,        // open worked, verify named the file for HDF5 metadata no read uses
  kUnnamed = 4,           // an Error that does not name the damaged file
  kForeignException = 5,  // something other than imgpack::Error escaped
  kDisagree = 6,          // open and verify disagree about the structure
  kOutcomes = 7,
};

// Verify reported only HDF5 metadata beside the tables (a fractal heap's
// free-space header, say), which no read of the reader's uses, so the reader
// opens the dataset as it was: the one way the two may disagree.
bool only_metadata(const std::vector<std::string>& errors) {
  return !errors.empty() && std::all_of(errors.begin(), errors.end(), [](const std::string& e) {
    return e.find(h5::File::kMetadataDamaged) != std::string::npos;
  });
}

int check_damaged(const fs::path& dir, const std::string& file) {
  auto names_file = [&](const std::string& message) {
    if (message.find(file) != std::string::npos) return true;
    std::fprintf(stderr, "error not naming %s: %s\n", file.c_str(), message.c_str());
    return false;
  };
  try {
    bool open_failed = false;
    try {
      // Everything, the sample paths and group names included, as verify reads it.
      Dataset dataset = Dataset::open(dir, {.index = {}});
    } catch (const Error& e) {
      if (!names_file(e.what())) return kUnnamed;
      open_failed = true;
    }
    VerifyOptions verify_options;
    verify_options.threads = 2;
    const VerifyReport report = verify_dataset(dir, verify_options);
    for (const std::string& error : report.errors) {
      if (!names_file(error)) return kUnnamed;
    }
    const bool metadata_only = !open_failed && only_metadata(report.errors);
    if (!metadata_only && open_failed != !report.errors.empty()) return kDisagree;
    try {
      PreviewOptions preview_options;
      preview_options.samples = 1000;
      render_preview(dir, preview_options);
    } catch (const Error& e) {
      if (!names_file(e.what())) return kUnnamed;
    }
    if (open_failed) return kRefused;
    if (!report.bad_records.empty()) return kChecksumsOnly;
    return metadata_only ? kVerifyOnly : kIntact;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "not an imgpack::Error: %s\n", e.what());
    return kForeignException;
  } catch (...) {
    return kForeignException;
  }
}

// Runs check_damaged in a child process; returns its wait status.
int run_in_child(const fs::path& dir, const std::string& file) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(30);  // a hang becomes SIGALRM
    ::_exit(check_damaged(dir, file));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

uint64_t sweep_stride() {
  if (const char* value = std::getenv("IMGPACK_DAMAGE_STRIDE")) {
    return std::max<uint64_t>(1, std::strtoull(value, nullptr, 10));
  }
  // Primes, so that every byte position within HDF5's 8- and 16-byte
  // fields is hit over the file; about 400 child processes by default.
  return test::kSanitizer ? 401 : 61;
}

// Alters every `stride`-th byte of `file` in `dir` outside the `skipped`
// ranges [begin, end), one at a time (restoring it after), and checks each result.
void sweep(const fs::path& dir, const std::string& file,
           const std::vector<std::pair<uint64_t, uint64_t>>& skipped) {
  const fs::path path = dir / file;
  const std::string original = test::read_bytes(path);
  const uint64_t stride = sweep_stride();
  int counts[kOutcomes] = {};
  uint64_t tried = 0;
  for (uint64_t pos = 0; pos < original.size(); pos += stride) {
    if (std::any_of(skipped.begin(), skipped.end(),
                    [&](const auto& range) { return pos >= range.first && pos < range.second; })) {
      continue;
    }
    std::string damaged = original;
    // Vary the change: single bits and whole bytes.
    const uint8_t mask = pos % 3 == 0 ? 0xff : static_cast<uint8_t>(1u << (pos % 8));
    damaged[pos] = static_cast<char>(damaged[pos] ^ mask);
    test::write_bytes(path, damaged);
    const int status = run_in_child(dir, file);
    ++tried;
    if (WIFSIGNALED(status)) {
      ADD_FAILURE() << file << " byte " << pos << " ^ " << int{mask} << ": killed by signal "
                    << WTERMSIG(status) << " (" << strsignal(WTERMSIG(status)) << ")";
      continue;
    }
    const int outcome = WEXITSTATUS(status);
    ASSERT_LT(outcome, kOutcomes) << file << " byte " << pos;
    ++counts[outcome];
    EXPECT_LE(outcome, kVerifyOnly)
        << file << " byte " << pos << " ^ " << int{mask} << ": outcome " << outcome;
  }
  test::write_bytes(path, original);
  std::printf(
      "%s: %llu positions (stride %llu): %d intact, %d refused, %d checksum-only, %d by verify "
      "only (HDF5 metadata no read uses)\n",
      file.c_str(), static_cast<unsigned long long>(tried), static_cast<unsigned long long>(stride),
      counts[kIntact], counts[kRefused], counts[kChecksumsOnly], counts[kVerifyOnly]);
  // Most of a file is metadata HDF5 checksums or values we check: a sweep
  // that refused nothing would mean the damage did not reach the reader.
  EXPECT_GT(counts[kRefused], 0);
}

// Expects Dataset::open(dir) to throw an imgpack::Error naming `file` and saying `problem`.
void expect_open_fails(const fs::path& dir, const std::string& file, const std::string& problem) {
  try {
    Dataset::open(dir);
    ADD_FAILURE() << "opened";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(problem), std::string::npos) << e.what();
  }
}

TEST(DamagedDataset, EmptyIndexIsRefusedNamingIt) {
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  test::write_bytes(dir / "index.h5", "");
  expect_open_fails(dir.path(), "index.h5", "cannot open as HDF5");
}

// The tests below run on both index formats: 2, which this imgpack writes,
// and 1, which it still reads.
class EveryFormat : public ::testing::TestWithParam<int64_t> {
 protected:
  SyntheticOptions options() const {
    SyntheticOptions options;
    options.format_version = GetParam();
    return options;
  }
};
INSTANTIATE_TEST_SUITE_P(Damaged, EveryFormat, ::testing::Values(1, 2),
                         [](const auto& param) { return "format" + std::to_string(param.param); });

TEST_P(EveryFormat, IndexOfAnotherDatasetIsRefused) {
  TempDir dir;
  test::write_synthetic_dataset(dir / "a", options());
  test::write_foreign_twin(dir / "b", options());
  fs::copy_file(dir / "b/index.h5", dir / "a/index.h5", fs::copy_options::overwrite_existing);
  if (GetParam() >= 2) {
    // splits.h5 names the index it belongs to.
    expect_open_fails(dir / "a", "splits.h5", "belongs to dataset");
    fs::copy_file(dir / "b/splits.h5", dir / "a/splits.h5", fs::copy_options::overwrite_existing);
  }
  expect_open_fails(dir / "a", "shard-00000.h5", "belongs to dataset");
}

TEST_P(EveryFormat, DamagedStringHeapIsRefusedNotACrash) {
  // The uuid's heap object grows by 256 bytes: HDF5 alone would copy them
  // into a buffer sized for the uuid. (A format 2 index keeps only its string
  // attributes there; the shards keep their uuid there in both formats.)
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), options());
  for (const char* file : {"index.h5", "shard-00001.h5"}) {
    std::string bytes = test::read_bytes(dir / file);
    std::size_t gcol = 0;
    while (bytes.compare(gcol, 4, "GCOL") != 0) gcol += 4096;
    bytes[gcol + 16 + 8 + 1] ^= 1;
    test::write_bytes(dir / file, bytes);
    expect_open_fails(dir.path(), file, "global heap collection");
    EXPECT_EQ(run_in_child(dir.path(), file), kRefused << 8);  // exited normally with kRefused
    test::write_synthetic_dataset(dir.path(), options());      // repair for the next file
  }
}

// Damage to what Dataset::open() defers (a format 2 index's sample paths) is
// not seen at open: the first read of a path refuses it, naming the table,
// and verify reports it.
TEST(DamagedDataset, DamagedDeferredPathsAreRefusedOnFirstUse) {
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), SyntheticOptions{});
  std::string bytes = test::read_bytes(dir / "index.h5");
  const std::string path = read_index(dir.path()).sample_path[3];
  const std::size_t at = bytes.find(path);
  ASSERT_NE(at, std::string::npos);
  bytes[at] ^= 0x01;
  test::write_bytes(dir / "index.h5", bytes);
  const Dataset dataset = Dataset::open(dir.path());
  EXPECT_EQ(dataset.num_samples(), 40u);
  for (int attempt = 0; attempt < 2; ++attempt) {  // and again: no half-read state kept
    try {
      (void)dataset.sample_path(3);
      ADD_FAILURE() << "read a damaged path";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("index.h5"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("/samples/path/bytes"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(Dataset::open(dir.path(), {.index = {}}), Error);
  const VerifyReport report = verify_dataset(dir.path());
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_NE(report.errors[0].find("/samples/path/bytes"), std::string::npos) << report.errors[0];
}

SyntheticOptions small_dataset(int64_t version = format::kIndexVersion) {
  SyntheticOptions options;
  options.samples = 20;
  options.records_per_shard = 10;
  options.format_version = version;
  return options;
}

TEST_P(EveryFormat, EveryByteOfTheIndex) {
  TempDir dir;
  test::write_synthetic_dataset(dir.path(), small_dataset(GetParam()));
  std::vector<int16_t> assign(20);
  for (std::size_t s = 0; s < assign.size(); ++s) assign[s] = static_cast<int16_t>(s % 2);
  test::add_split(dir.path(), "cv", 2, assign);
  sweep(dir.path(), "index.h5", {});
  if (GetParam() >= 2) sweep(dir.path(), "splits.h5", {});
}

TEST(DamagedMetadata, EveryByteOfAShardOutsideItsPixels) {
  TempDir dir;
  SyntheticOptions options = small_dataset();
  test::write_synthetic_dataset(dir.path(), options);
  const uint64_t offset = test::images_offset(dir / "shard-00001.h5");
  const uint64_t bytes = uint64_t{10} * options.height * options.width * options.channels;
  sweep(dir.path(), "shard-00001.h5", {{offset, offset + bytes}});
}

// A shard with masks: its mask layout and /mask_checksum are checked like
// the rest, the damage refused or found by the checksums.
TEST(DamagedMetadata, EveryByteOfAShardWithMasksOutsideItsPixelsAndMasks) {
  TempDir dir;
  SyntheticOptions options = small_dataset();
  options.masks = true;
  test::write_synthetic_dataset(dir.path(), options);
  const fs::path shard = dir / "shard-00001.h5";
  const uint64_t images = test::images_offset(shard), masks = test::masks_offset(shard);
  const uint64_t pixels = uint64_t{10} * options.height * options.width;
  sweep(dir.path(), "shard-00001.h5",
        {{images, images + pixels * options.channels}, {masks, masks + pixels}});
}

// What a child found for one flipped bit of index.h5.
enum FlipOutcome : uint8_t {
  kFlipHarmless = 0,    // opened, verified clean, and decoded to the very same index
  kFlipRefused = 1,     // the reader refused it and verify reported it, both naming index.h5
  kFlipVerifyOnly = 2,  // the very same index opened; verify named the file for HDF5 metadata
  kFlipChanged = 3,     // opened with other contents: damage nothing noticed
  kFlipUnnamed = 4,     // refused without naming index.h5
  kFlipDisagree = 5,    // the reader and verify disagree
  kFlipForeign = 6,     // something other than imgpack::Error escaped
  kFlipLeak = 7,        // an HDF5 object was left open
  kFlipCrash = 8,       // the child died (a signal, or a hang: SIGALRM)
  kFlipOutcomes = 9,
};

FlipOutcome check_flipped_index(const fs::path& dir, const std::string& file,
                                const DatasetIndex& original) {
  try {
    bool refused = false;
    try {
      const Dataset dataset = Dataset::open(dir, {.index = {}});  // paths and names included
      const std::vector<std::string> changed = test::index_differences(dataset.index(), original);
      if (!changed.empty()) {
        std::fprintf(stderr, "opened with %zu changed fields, the first: %s\n", changed.size(),
                     changed[0].c_str());
        return kFlipChanged;
      }
    } catch (const Error& e) {
      if (std::string(e.what()).find(file) == std::string::npos) {
        std::fprintf(stderr, "refused without naming %s: %s\n", file.c_str(), e.what());
        return kFlipUnnamed;
      }
      refused = true;
    }
    VerifyOptions verify_options;
    verify_options.threads = 1;
    const VerifyReport report = verify_dataset(dir, verify_options);
    const bool reported = !report.errors.empty() || !report.bad_records.empty();
    const bool metadata_only =
        !refused && report.bad_records.empty() && only_metadata(report.errors);
    if (!metadata_only && refused != reported) return kFlipDisagree;
    for (const std::string& error : report.errors) {
      if (error.find(file) == std::string::npos) {
        std::fprintf(stderr, "verify without naming %s: %s\n", file.c_str(), error.c_str());
        return kFlipUnnamed;
      }
    }
    if (H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) != 0) return kFlipLeak;
    if (metadata_only) return kFlipVerifyOnly;
    return refused ? kFlipRefused : kFlipHarmless;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "not an imgpack::Error: %s\n", e.what());
    return kFlipForeign;
  } catch (...) {
    return kFlipForeign;
  }
}

struct Flip {
  uint64_t byte = 0;
  int bit = 0;
};

// Checks flips[first..] in one child process, which writes each damaged
// index.h5 (a new file renamed into place, so no HDF5 state can be keyed to
// the old one) and reports one outcome byte per flip on a pipe. The child
// stops after a leak; a crash or a hang ends it. Returns the outcomes
// received, then kFlipCrash for the flip that killed the child, if one did.
std::vector<FlipOutcome> check_flips_in_child(const fs::path& dir, const std::string& file,
                                              const std::string& pristine,
                                              const DatasetIndex& original,
                                              const std::vector<Flip>& flips, std::size_t first) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    for (std::size_t i = first; i < flips.size(); ++i) {
      std::string damaged = pristine;
      damaged[flips[i].byte] = static_cast<char>(damaged[flips[i].byte] ^ (1 << flips[i].bit));
      test::write_bytes(dir / (file + ".new"), damaged);
      fs::rename(dir / (file + ".new"), dir / file);
      ::alarm(30);  // a hang becomes SIGALRM
      const FlipOutcome outcome = check_flipped_index(dir, file, original);
      if (::write(fds[1], &outcome, 1) != 1 || outcome == kFlipLeak) ::_exit(1);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::vector<FlipOutcome> outcomes;
  FlipOutcome outcome{};
  while (::read(fds[0], &outcome, 1) == 1) outcomes.push_back(outcome);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const std::size_t done = first + outcomes.size();
  if (done < flips.size() && (outcomes.empty() || outcomes.back() != kFlipLeak)) {
    outcomes.push_back(kFlipCrash);
    if (WIFSIGNALED(status)) {
      std::fprintf(stderr, "byte %llu bit %d: killed by signal %d (%s)\n",
                   static_cast<unsigned long long>(flips[done].byte), flips[done].bit,
                   WTERMSIG(status), strsignal(WTERMSIG(status)));
    }
  }
  return outcomes;
}

// Flips one bit of DIR/FILE at a time and expects each to be refused or
// harmless (below).
void expect_flips_refused_or_harmless(const fs::path& dir, const std::string& file,
                                      const DatasetIndex& original, std::size_t sample) {
  const std::string pristine = test::read_bytes(dir / file);
  std::vector<Flip> flips;
  if (std::getenv("IMGPACK_FLIP_ALL") != nullptr) {
    for (uint64_t at = 0; at < pristine.size(); ++at) {
      for (int bit = 0; bit < 8; ++bit) flips.push_back({at, bit});
    }
  } else {
    std::vector<uint64_t> offsets(pristine.size());
    for (uint64_t at = 0; at < offsets.size(); ++at) offsets[at] = at;
    CounterRng rng(14, 0x666c6970);
    rng.shuffle(std::span(offsets));
    // An eighth under a sanitizer (test::sweep_step): the reads a flip reaches
    // are the dataset open path, which the fuzzer drives under ASan too.
    offsets.resize(std::min<std::size_t>(offsets.size(), sample / test::sweep_step(8)));
    for (uint64_t at : offsets) flips.push_back({at, static_cast<int>(rng.below(8))});
  }

  int counts[kFlipOutcomes] = {};
  std::size_t next = 0;
  while (next < flips.size()) {
    for (FlipOutcome outcome : check_flips_in_child(dir, file, pristine, original, flips, next)) {
      ASSERT_LT(outcome, kFlipOutcomes);
      ++counts[outcome];
      EXPECT_LE(outcome, kFlipVerifyOnly) << file << " byte " << flips[next].byte << " bit "
                                          << flips[next].bit << ": outcome " << int{outcome};
      ++next;
    }
  }
  test::write_bytes(dir / file, pristine);
  std::printf(
      "%s (%zu bytes): %zu flips: %d harmless, %d refused, %d by verify only (HDF5 metadata "
      "no read uses), %d changed unnoticed\n",
      file.c_str(), pristine.size(), flips.size(), counts[kFlipHarmless], counts[kFlipRefused],
      counts[kFlipVerifyOnly], counts[kFlipChanged]);
  EXPECT_GT(counts[kFlipRefused], 0);
}

// Index contents are checksummed: one bit of index.h5 (and of a format 2
// dataset's splits.h5) flipped at a time, at a seeded sample of 2,000
// offsets (500 of splits.h5; IMGPACK_FLIP_ALL=1: every bit of every byte). Every flip is either
// refused by the reader and reported by verify, both naming the file, or
// provably harmless: the reader decodes exactly the original index, field by
// field. HDF5 checksums its own metadata, not dataset elements or the
// strings in its global heap, which is where flips used to pass unnoticed (a
// sample path, a class name, a fold, convert_options). Children check the
// flips in batches (a fork per flip costs more than the check); a crash
// costs only its own flip.
TEST_P(EveryFormat, EveryFlipIsRefusedOrHarmless) {
  TempDir dir;
  SyntheticOptions options = small_dataset(GetParam());
  options.classes = 3;
  options.groups = 4;
  test::write_synthetic_dataset(dir.path(), options);
  std::vector<int16_t> assign(options.samples);
  for (std::size_t s = 0; s < assign.size(); ++s)
    assign[s] = static_cast<int16_t>(static_cast<int>(s % 3) - 1);
  test::add_split(dir.path(), "cv", 2, assign);
  const DatasetIndex original = read_index(dir.path());
  expect_flips_refused_or_harmless(dir.path(), "index.h5", original, 2000);
  // Far smaller: its root and one split.
  if (GetParam() >= 2) expect_flips_refused_or_harmless(dir.path(), "splits.h5", original, 500);
}

// The mask attributes are covered by the root's checksum, the label names
// by their table's. (Format 2 alone: every imgpack that writes masks writes it.)
TEST(DamagedIndex, EveryFlipOfAnIndexWithMasksIsRefusedOrHarmless) {
  TempDir dir;
  SyntheticOptions options = small_dataset(2);
  options.classes = 3;
  options.groups = 4;
  options.masks = true;
  options.mask_fill = 250;
  options.mask_class_names = {"background", "road", "car"};
  test::write_synthetic_dataset(dir.path(), options);
  const DatasetIndex original = read_index(dir.path());
  expect_flips_refused_or_harmless(dir.path(), "index.h5", original, 1000);
}

}  // namespace
}  // namespace imgpack
