// Loader tests on the host backend. Everything asserted here holds for any
// backend; cuda_loader_test.cpp repeats the device-specific parts on a GPU.
// One file for the Loader's whole contract (selection, order, ranks, last
// batch, output formats, stats, errors): the cases share one fixture dataset.
#include "imgpack/loader.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "imgpack/checksum.hpp"
#include "imgpack/error.hpp"
#include "loader_core.hpp"
#include "slot_memory.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using test::SyntheticOptions;
using test::TempDir;

// What one delivered entry was.
struct Entry {
  uint64_t record;
  int64_t sample;
  int32_t label;
  bool padding;
  bool operator==(const Entry&) const = default;
};

struct Epoch {
  std::vector<Entry> entries;
  std::vector<std::size_t> batch_sizes;
  std::vector<std::size_t> paddings;
};

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.samples = 61;
    options_.variants = 3;
    options_.records_per_shard = 20;
    test::write_synthetic_dataset(dir_.path(), options_);
    // 61 samples: fold = s % 3, with every 10th sample in the test set.
    std::vector<int16_t> assign(61);
    for (std::size_t s = 0; s < assign.size(); ++s) {
      assign[s] = s % 10 == 9 ? int16_t{-1} : static_cast<int16_t>(s % 3);
    }
    test::add_split(dir_.path(), "cv3", 3, assign);
    dataset_ = Dataset::open(dir_.path());
  }

  // Reads one epoch, checking every delivered image against the pixels the
  // synthetic dataset derives from (sample, variant) and its stored checksum.
  Epoch read_epoch(Loader& loader, uint64_t epoch) {
    loader.set_epoch(epoch);
    Epoch out;
    std::size_t expected_index = 0;
    while (std::optional<Batch> batch = loader.next()) {
      EXPECT_EQ(batch->epoch(), epoch);
      EXPECT_EQ(batch->index(), expected_index++);
      EXPECT_FALSE(batch->on_device());
      EXPECT_EQ(batch->bytes(),
                batch->size() * dataset_.record_bytes() * output_element_bytes(batch->format()));
      out.batch_sizes.push_back(batch->size());
      out.paddings.push_back(batch->padding());
      for (std::size_t i = 0; i < batch->size(); ++i) {
        const uint64_t record = batch->records()[i];
        const bool padding = i >= batch->size() - batch->padding();
        out.entries.push_back({record, batch->samples()[i], batch->labels()[i], padding});
        EXPECT_EQ(batch->samples()[i], dataset_.record_sample(record));
        EXPECT_EQ(batch->labels()[i], static_cast<int32_t>(batch->samples()[i] % 4));
        if (batch->format() == OutputFormat::uint8_nhwc) {
          const uint8_t* image = batch->data_as<uint8_t>() + i * dataset_.record_bytes();
          EXPECT_EQ(checksum(image, dataset_.record_bytes()), dataset_.record_checksum(record));
          std::vector<uint8_t> expected = test::synthetic_pixels(
              options_, dataset_.record_sample(record), dataset_.record_variant(record));
          EXPECT_TRUE(std::equal(expected.begin(), expected.end(), image)) << "record " << record;
        }
      }
    }
    EXPECT_FALSE(loader.next().has_value());  // stays exhausted
    return out;
  }

  LoaderOptions base_options() {
    LoaderOptions o;
    o.batch_size = 8;
    o.threads = 2;
    o.prefetch = 3;
    o.order.seed = 42;
    return o;
  }

  SyntheticOptions options_;
  TempDir dir_;
  Dataset dataset_;
};

std::vector<uint64_t> non_padding_records(const Epoch& epoch) {
  std::vector<uint64_t> records;
  for (const Entry& e : epoch.entries) {
    if (!e.padding) records.push_back(e.record);
  }
  return records;
}

TEST_F(LoaderTest, EveryEpochDeliversEverySelectedRecordOnce) {
  LoaderOptions o = base_options();
  o.selection.variants = VariantPolicy::all;
  Loader loader(dataset_, o);
  EXPECT_EQ(loader.images_per_epoch(), 183u);
  EXPECT_EQ(loader.batches_per_epoch(), 23u);  // 22 full + 7
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    Epoch e = read_epoch(loader, epoch);
    std::vector<uint64_t> records = non_padding_records(e);
    std::sort(records.begin(), records.end());
    std::vector<uint64_t> expected(dataset_.num_records());
    for (uint64_t r = 0; r < expected.size(); ++r) expected[r] = r;
    EXPECT_EQ(records, expected) << "epoch " << epoch;
    EXPECT_EQ(e.batch_sizes.back(), 183u % 8);
  }
}

TEST_F(LoaderTest, OrderDoesNotDependOnThreadsOrPrefetch) {
  std::vector<std::vector<Entry>> runs;
  for (auto [threads, prefetch] : {std::pair{1u, 1u}, {2u, 3u}, {8u, 2u}, {8u, 8u}, {2u, 3u}}) {
    LoaderOptions o = base_options();
    o.threads = threads;
    o.prefetch = prefetch;
    o.selection = {.split = "cv3", .fold = 1, .role = Role::train};  // rotates variants
    Loader loader(dataset_, o);
    std::vector<Entry> all;
    for (uint64_t epoch = 0; epoch < 3; ++epoch) {
      Epoch e = read_epoch(loader, epoch);
      all.insert(all.end(), e.entries.begin(), e.entries.end());
    }
    runs.push_back(all);
  }
  for (std::size_t i = 1; i < runs.size(); ++i) EXPECT_EQ(runs[i], runs[0]) << "run " << i;
}

TEST_F(LoaderTest, MatchesTheEpochOrderContract) {
  LoaderOptions o = base_options();
  o.order.mode = OrderMode::shard_window;
  o.order.window_shards = 2;
  Loader loader(dataset_, o);
  for (uint64_t epoch : {0u, 7u}) {
    Epoch e = read_epoch(loader, epoch);
    std::vector<uint64_t> delivered;
    for (const Entry& entry : e.entries) delivered.push_back(entry.record);
    EXPECT_EQ(delivered, loader.order().plan(epoch).records);
  }
}

TEST_F(LoaderTest, EpochsDifferAndRerunsRepeat) {
  LoaderOptions o = base_options();
  Loader a(dataset_, o);
  Loader b(dataset_, o);
  Epoch a0 = read_epoch(a, 0), a1 = read_epoch(a, 1);
  Epoch b1 = read_epoch(b, 1), b0 = read_epoch(b, 0);  // any epoch, in any order
  EXPECT_EQ(a0.entries, b0.entries);
  EXPECT_EQ(a1.entries, b1.entries);
  EXPECT_NE(a0.entries, a1.entries);
}

TEST_F(LoaderTest, RanksAreDisjointAndComplete) {
  for (RankPolicy policy : {RankPolicy::pad, RankPolicy::drop}) {
    const uint32_t world = 4;  // 61 clean records: 16 per rank padded (3 padding), 15 dropped
    std::multiset<uint64_t> seen;
    std::size_t padding = 0;
    for (uint32_t rank = 0; rank < world; ++rank) {
      LoaderOptions o = base_options();
      o.last_batch = LastBatch::partial;
      o.order.rank = rank;
      o.order.world_size = world;
      o.order.rank_policy = policy;
      Loader loader(dataset_, o);
      Epoch e = read_epoch(loader, 3);
      EXPECT_EQ(e.entries.size(), policy == RankPolicy::pad ? 16u : 15u);
      for (const Entry& entry : e.entries) {
        if (entry.padding) {
          ++padding;
        } else {
          seen.insert(entry.record);
        }
      }
    }
    EXPECT_EQ(padding, policy == RankPolicy::pad ? 3u : 0u);
    // Disjoint: no record twice. Complete: all 61 (pad) or all but 1 (drop).
    EXPECT_EQ(std::set<uint64_t>(seen.begin(), seen.end()).size(), seen.size());
    EXPECT_EQ(seen.size(), policy == RankPolicy::pad ? 61u : 60u);
  }
}

TEST_F(LoaderTest, LastBatchDropPadPartial) {
  // 61 clean records, batch 8: 7 full batches and 5 left over.
  LoaderOptions o = base_options();
  o.last_batch = LastBatch::drop;
  {
    Loader loader(dataset_, o);
    Epoch e = read_epoch(loader, 0);
    EXPECT_EQ(e.batch_sizes, std::vector<std::size_t>(7, 8));
    EXPECT_EQ(e.paddings, std::vector<std::size_t>(7, 0));
    EXPECT_EQ(loader.batches_per_epoch(), 7u);
    EXPECT_EQ(loader.images_per_epoch(), 56u);
  }
  o.last_batch = LastBatch::partial;
  {
    Loader loader(dataset_, o);
    Epoch e = read_epoch(loader, 0);
    ASSERT_EQ(e.batch_sizes.size(), 8u);
    EXPECT_EQ(e.batch_sizes.back(), 5u);
    EXPECT_EQ(e.paddings.back(), 0u);
    EXPECT_EQ(e.entries.size(), 61u);
  }
  o.last_batch = LastBatch::pad;
  {
    Loader loader(dataset_, o);
    Epoch e = read_epoch(loader, 0);
    ASSERT_EQ(e.batch_sizes.size(), 8u);
    EXPECT_EQ(e.batch_sizes.back(), 8u);
    EXPECT_EQ(e.paddings.back(), 3u);
    EXPECT_EQ(loader.images_per_epoch(), 64u);
    // The padding repeats the epoch's first records.
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(e.entries[61 + i].record, e.entries[i].record);
      EXPECT_TRUE(e.entries[61 + i].padding);
    }
    std::vector<uint64_t> records = non_padding_records(e);
    EXPECT_EQ(std::set<uint64_t>(records.begin(), records.end()).size(), 61u);
  }
}

TEST_F(LoaderTest, RankPaddingAndBatchPaddingAddUp) {
  // 61 records over 2 ranks with pad: 31 each (rank 1 has 1 padding entry);
  // batch 8 with pad: 4 batches, the last with 7 real-or-rank-padded entries + 1.
  LoaderOptions o = base_options();
  o.order.rank = 1;
  o.order.world_size = 2;
  o.last_batch = LastBatch::pad;
  Loader loader(dataset_, o);
  Epoch e = read_epoch(loader, 0);
  ASSERT_EQ(e.batch_sizes, std::vector<std::size_t>(4, 8));
  EXPECT_EQ(e.paddings, (std::vector<std::size_t>{0, 0, 0, 2}));
  EXPECT_EQ(non_padding_records(e).size(), 30u);
}

TEST_F(LoaderTest, SelectionIsExact) {
  for (Role role : {Role::train, Role::val, Role::test}) {
    LoaderOptions o = base_options();
    o.selection = {.split = "cv3", .fold = 2, .role = role};
    Loader loader(dataset_, o);
    std::set<int64_t> expected;
    for (int64_t s = 0; s < 61; ++s) {
      const bool test = s % 10 == 9;
      const int64_t fold = s % 3;
      if ((role == Role::test && test) || (role == Role::val && !test && fold == 2) ||
          (role == Role::train && !test && fold != 2)) {
        expected.insert(s);
      }
    }
    for (uint64_t epoch = 0; epoch < 2; ++epoch) {
      Epoch e = read_epoch(loader, epoch);
      std::multiset<int64_t> samples;
      for (const Entry& entry : e.entries) {
        if (entry.padding) continue;
        samples.insert(entry.sample);
        const uint16_t variant = dataset_.record_variant(entry.record);
        if (role == Role::train) {
          EXPECT_NE(variant, 0) << "train must read augmented variants";
        } else {
          EXPECT_EQ(variant, 0) << "val/test must read the clean variant";
        }
      }
      EXPECT_EQ(samples, std::multiset<int64_t>(expected.begin(), expected.end()))
          << role_name(role);
    }
  }
}

// Every 7th sample removed (generation 1): no epoch of role `all` or of any
// role of a split delivers one, the counts leave them out, and a Dataset
// opened before the removal keeps delivering every sample.
TEST_F(LoaderTest, RemovedSamplesAreNeverDelivered) {
  std::vector<int64_t> removed;
  for (int64_t s = 0; s < 61; s += 7) removed.push_back(s);  // 9 samples
  test::remove_samples(dir_.path(), removed);
  const Dataset before = dataset_;
  dataset_ = Dataset::open(dir_.path());
  ASSERT_EQ(dataset_.generation(), 1u);
  auto is_removed = [](int64_t s) { return s % 7 == 0; };

  struct Case {
    SelectionOptions selection;
    std::function<bool(int64_t)> selected;
  };
  const std::vector<Case> cases = {
      {{.split = "", .variants = VariantPolicy::all}, [](int64_t) { return true; }},
      {{.split = "cv3", .fold = 2, .role = Role::all}, [](int64_t) { return true; }},
      {{.split = "cv3", .fold = 2, .role = Role::train},
       [](int64_t s) { return s % 10 != 9 && s % 3 != 2; }},
      {{.split = "cv3", .fold = 2, .role = Role::val},
       [](int64_t s) { return s % 10 != 9 && s % 3 == 2; }},
      {{.split = "cv3", .fold = 0, .role = Role::test}, [](int64_t s) { return s % 10 == 9; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(role_name(c.selection.role)) + " of split '" + c.selection.split +
                 "'");
    std::multiset<int64_t> expected;
    const std::size_t per_sample = c.selection.variants == VariantPolicy::all ? 3 : 1;
    for (int64_t s = 0; s < 61; ++s) {
      for (std::size_t v = 0; v < per_sample && c.selected(s) && !is_removed(s); ++v) {
        expected.insert(s);
      }
    }
    LoaderOptions o = base_options();
    o.selection = c.selection;
    Loader loader(dataset_, o);
    EXPECT_EQ(loader.images_per_epoch(), expected.size());
    for (uint64_t epoch = 0; epoch < 3; ++epoch) {
      Epoch e = read_epoch(loader, epoch);
      std::multiset<int64_t> samples;
      for (const Entry& entry : e.entries) {
        if (!entry.padding) samples.insert(entry.sample);
      }
      EXPECT_EQ(samples, expected) << "epoch " << epoch;
    }
  }

  // The handle opened before: generation 0, every sample, every record.
  LoaderOptions o = base_options();
  o.selection.variants = VariantPolicy::all;
  Loader old_view(before, o);
  EXPECT_EQ(before.generation(), 0u);
  EXPECT_EQ(old_view.images_per_epoch(), 183u);
  dataset_ = before;  // read_epoch checks against dataset_
  std::vector<uint64_t> records = non_padding_records(read_epoch(old_view, 0));
  std::sort(records.begin(), records.end());
  ASSERT_EQ(records.size(), 183u);
  for (uint64_t r = 0; r < records.size(); ++r) EXPECT_EQ(records[r], r);
}

TEST_F(LoaderTest, FloatOutputMatchesAScalarReference) {
  for (OutputFormat format : {OutputFormat::float32_nchw, OutputFormat::float16_nchw}) {
    LoaderOptions o = base_options();
    o.output = format;
    o.mean = {0.485f, 0.456f, 0.406f, 0};
    o.stddev = {0.229f, 0.224f, 0.225f, 1};
    Loader loader(dataset_, o);
    std::optional<Batch> batch = loader.next();
    ASSERT_TRUE(batch);
    const std::size_t h = 6, w = 5, c = 3;
    for (std::size_t i = 0; i < batch->size(); ++i) {
      const uint8_t* src = dataset_.record_data(batch->records()[i]);
      for (std::size_t ch = 0; ch < c; ++ch) {
        for (std::size_t p = 0; p < h * w; ++p) {
          const double want = (src[p * c + ch] / 255.0 - o.mean[ch]) / o.stddev[ch];
          const std::size_t at = (i * c + ch) * h * w + p;
          if (format == OutputFormat::float32_nchw) {
            EXPECT_NEAR(batch->data_as<float>()[at], want, 2e-6 * (1 + std::abs(want)));
          } else {
            // binary16 has an 11-bit significand: relative error <= 2^-11.
            const uint16_t bits = batch->data_as<uint16_t>()[at];
            const int exponent = (bits >> 10) & 0x1f;
            const double mantissa = (bits & 0x3ff) / 1024.0;
            double value =
                exponent == 0 ? std::ldexp(mantissa, -14) : std::ldexp(1 + mantissa, exponent - 15);
            if (bits & 0x8000) value = -value;
            EXPECT_NEAR(value, want, std::abs(want) * 0x1p-11 + 1e-7);
          }
        }
      }
    }
  }
}

TEST_F(LoaderTest, WorkerErrorsSurfaceFromNext) {
  // Damage one record's pixels on disk after open: the shared mapping sees it,
  // and checksum verification in the reader threads reports it.
  fs::path shard = dir_ / "shard-00001.h5";
  const uint64_t offset = test::images_offset(shard);
  LoaderOptions o = base_options();
  o.verify_checksums = true;
  o.order.mode = OrderMode::sequential;
  o.selection.variants = VariantPolicy::all;  // row 2 is read whatever variant it holds
  Loader loader(dataset_, o);
  {
    int fd = ::open(shard.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    for (int i = 0; i < 8; ++i) {  // flip bits in the first bytes of row 2
      const uint8_t byte = dataset_.shard_images(1)[2 * 90 + i];
      const auto changed = static_cast<uint8_t>(byte ^ 0x5a);
      ASSERT_EQ(::pwrite(fd, &changed, 1, static_cast<off_t>(offset + uint64_t{2} * 90 + i)), 1);
    }
    ::close(fd);
  }
  std::string message;
  try {
    while (loader.next()) {
    }
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("shard-00001.h5: row 2"), std::string::npos) << message;
  EXPECT_THROW(loader.next(), Error);  // stays failed until the next epoch is set
}

TEST_F(LoaderTest, DestroyingMidEpochJoinsAndBatchesOutliveTheLoader) {
  std::optional<Batch> kept;
  const auto start = std::chrono::steady_clock::now();
  {
    LoaderOptions o = base_options();
    o.threads = 4;
    o.prefetch = 2;
    Loader loader(dataset_, o);
    kept = loader.next();
    ASSERT_TRUE(kept);
    // The reader threads now wait for a slot: destruction must wake and join them.
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  for (std::size_t i = 0; i < kept->size(); ++i) {
    const uint8_t* image = kept->data_as<uint8_t>() + i * dataset_.record_bytes();
    EXPECT_EQ(checksum(image, dataset_.record_bytes()),
              dataset_.record_checksum(kept->records()[i]));
  }
  kept.reset();  // returns the slot to a core whose loader is gone
}

// This process's threads, and its anonymous resident memory in bytes.
std::size_t thread_count() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator("/proc/self/task")) ++n;
  return n;
}

std::size_t anonymous_resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("RssAnon:")) return std::stoull(line.substr(8)) * 1024;
  }
  return 0;
}

// A batch kept past its loader holds its own slot: the loader's threads (the
// shard prefetcher's too, which sequential reads of a cached dataset start)
// end with it, and the rest of its ring is freed. Training loops that make a
// loader per evaluation and keep a view of its labels must not gain threads
// and a ring per loader.
TEST(LoaderLifetime, AKeptBatchHoldsItsSlotNotTheLoadersThreadsOrRing) {
  TempDir dir;
  SyntheticOptions large;
  large.samples = 64;
  large.height = 128;
  large.width = 128;
  large.records_per_shard = 16;
  test::write_synthetic_dataset(dir.path(), large);
  const Dataset dataset = Dataset::open(dir.path());
  LoaderOptions o;
  o.batch_size = 16;
  o.threads = 2;
  o.prefetch = 8;
  o.order.mode = OrderMode::sequential;
  const std::size_t threads_before = thread_count();
  std::optional<Batch> kept;
  std::size_t ring = 0;
  std::size_t resident_with_loader = 0;
  {
    Loader loader(dataset, o);
    loader.set_epoch(0);
    kept = loader.next();
    ASSERT_TRUE(kept);
    ring = loader.ring_host_bytes();
    ASSERT_GT(thread_count(), threads_before + 2) << "no prefetcher: the test proves less";
    resident_with_loader = anonymous_resident_bytes();
  }
  EXPECT_EQ(thread_count(), threads_before);
  const std::size_t slot = ring / o.prefetch;
  const std::size_t resident_after = anonymous_resident_bytes();
  EXPECT_GT(resident_with_loader, resident_after + (o.prefetch - 1) * slot / 2)
      << "ring " << ring << " bytes, " << o.prefetch << " slots";
  for (std::size_t i = 0; i < kept->size(); ++i) {
    const uint8_t* image = kept->data_as<uint8_t>() + i * dataset.record_bytes();
    EXPECT_EQ(checksum(image, dataset.record_bytes()), dataset.record_checksum(kept->records()[i]));
  }
  kept.reset();
}

TEST_F(LoaderTest, DestroyingWithoutReadingAndAfterAnEpoch) {
  { Loader loader(dataset_, base_options()); }
  {
    Loader loader(dataset_, base_options());
    loader.set_epoch(0);
  }
  {
    Loader loader(dataset_, base_options());
    read_epoch(loader, 0);
  }
}

TEST_F(LoaderTest, SetEpochMidEpochRestartsCleanly) {
  LoaderOptions o = base_options();
  Loader fresh(dataset_, o);
  Epoch expected = read_epoch(fresh, 5);

  Loader loader(dataset_, o);
  loader.set_epoch(4);
  std::optional<Batch> held = loader.next();  // a batch of epoch 4 stays alive across the switch
  ASSERT_TRUE(loader.next());
  EXPECT_EQ(read_epoch(loader, 5).entries, expected.entries);
  EXPECT_EQ(held->epoch(), 4u);
  EXPECT_EQ(checksum(held->data(), dataset_.record_bytes()),
            dataset_.record_checksum(held->records()[0]));
}

TEST_F(LoaderTest, ReadersGoOnIntoTheNextEpochAndSetEpochKeepsWhatTheyRead) {
  LoaderOptions o = base_options();
  o.prefetch = 4;
  Loader fresh(dataset_, o);
  std::vector<Epoch> expected;
  for (uint64_t epoch : {0u, 1u, 2u, 6u}) expected.push_back(read_epoch(fresh, epoch));

  // A consumer slower than the readers: by the end of each epoch the freed
  // slots hold the next one's first batches.
  Loader loader(dataset_, o);
  std::vector<Entry> entries;
  for (uint64_t epoch : {0u, 1u, 2u}) {
    loader.set_epoch(epoch);
    entries.clear();
    while (std::optional<Batch> batch = loader.next()) {
      for (std::size_t i = 0; i < batch->size(); ++i) {
        const uint64_t record = batch->records()[i];
        ASSERT_EQ(checksum(batch->data_as<uint8_t>() + i * dataset_.record_bytes(),
                           dataset_.record_bytes()),
                  dataset_.record_checksum(record));
        entries.push_back({record, batch->samples()[i], batch->labels()[i],
                           i >= batch->size() - batch->padding()});
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
    EXPECT_EQ(entries, expected[epoch].entries) << "epoch " << epoch;
  }
  const uint64_t kept = loader.stats().read_ahead_batches;
  EXPECT_GT(kept, 0u);
  EXPECT_LE(kept, 2 * o.prefetch);  // two boundaries, at most a ring each
  // Another epoch than the next: what was read ahead (epoch 3) is dropped.
  EXPECT_EQ(read_epoch(loader, 6).entries, expected[3].entries);
  EXPECT_EQ(loader.stats().read_ahead_batches, kept);
}

// A consumer keeping batches alive (labels kept for metrics) holds their
// slots: the ring grows so that it may keep 2 x prefetch of them besides the
// one in use and still get the next, and next() throws, saying so, only
// beyond that.
TEST_F(LoaderTest, KeepingTwicePrefetchBatchesGrowsTheRingAndOneMoreIsAnErrorNotAHang) {
  LoaderOptions o = base_options();
  o.prefetch = 2;
  Loader loader(dataset_, o);
  const std::size_t slot_bytes = loader.ring_host_bytes() / o.prefetch;
  std::vector<Batch> kept;
  for (std::size_t i = 0; i < 2 * o.prefetch + 2; ++i) {
    std::optional<Batch> batch = loader.next();
    ASSERT_TRUE(batch);
    EXPECT_EQ(batch->index(), i);
    kept.push_back(std::move(*batch));
  }
  EXPECT_EQ(loader.stats().added_slots, o.prefetch + 2);
  EXPECT_EQ(loader.ring_host_bytes(), (2 * o.prefetch + 2) * slot_bytes);
  try {
    loader.next();
    ADD_FAILURE() << "a seventh batch with six alive and prefetch 2";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("all 6 prefetch slots are held by live Batch objects (prefetch 2 and 4 "
                        "added for batches kept alive): a consumer may keep at most 2 x "
                        "prefetch = 4 batches alive besides the one it is using"),
              std::string::npos)
        << what;
  }
  kept.erase(kept.begin());
  std::optional<Batch> next = loader.next();  // progress again once a slot is free
  ASSERT_TRUE(next);
  EXPECT_EQ(next->index(), 6u);
  kept.clear();
  next.reset();
  // The ring keeps its slots: the next epoch grows it no further.
  loader.set_epoch(1);
  while (loader.next()) {
  }
  EXPECT_EQ(loader.stats().added_slots, o.prefetch + 2);
  loader.reset_stats();
  EXPECT_EQ(loader.stats().added_slots, o.prefetch + 2);
}

// Batches kept alive change nothing of what is delivered: a consumer keeping
// the last 2 x prefetch batches while it asks for the next reads, over two
// epochs (the second read ahead into the grown ring), the very batches of one
// that releases each at once.
TEST_F(LoaderTest, KeptBatchesDeliverTheSameBytesAsReleasedOnes) {
  for (std::size_t prefetch : {1u, 3u}) {
    LoaderOptions o = base_options();
    o.prefetch = prefetch;
    o.threads = 3;
    Loader released(dataset_, o);
    const Epoch expected[] = {read_epoch(released, 0), read_epoch(released, 1)};
    EXPECT_EQ(released.stats().added_slots, 0u);

    Loader keeping(dataset_, o);
    for (uint64_t epoch : {0u, 1u}) {
      keeping.set_epoch(epoch);
      std::deque<Batch> kept;  // the last 2 x prefetch
      std::vector<uint64_t> records;
      std::vector<uint64_t> pixel_sums;
      while (std::optional<Batch> batch = keeping.next()) {
        for (std::size_t i = 0; i < batch->size(); ++i) {
          records.push_back(batch->records()[i]);
          const uint8_t* image = batch->data_as<uint8_t>() + i * dataset_.record_bytes();
          EXPECT_EQ(checksum(image, dataset_.record_bytes()),
                    dataset_.record_checksum(batch->records()[i]));
        }
        kept.push_back(std::move(*batch));
        if (kept.size() > 2 * prefetch) kept.pop_front();
        // The kept batches still show what they were delivered with.
        const Batch& oldest = kept.front();
        EXPECT_EQ(checksum(oldest.data(), dataset_.record_bytes()),
                  dataset_.record_checksum(oldest.records()[0]));
      }
      std::vector<uint64_t> want;
      for (const Entry& e : expected[epoch].entries) want.push_back(e.record);
      EXPECT_EQ(records, want) << "prefetch " << prefetch << ", epoch " << epoch;
    }
    EXPECT_EQ(keeping.stats().added_slots, prefetch + 1);
  }
}

// An added slot is refused, naming the size, when the ring would need more
// host memory than the process may use, as the first slots are.
TEST(LoaderRing, AddedSlotsAreCheckedAgainstMemoryLikeTheFirstOnes) {
  using detail::require_ring_fits;
  using detail::RingGrowth;
  EXPECT_NO_THROW(require_ring_fits(4, 256, 1000, 1'024'000, RingGrowth::initial));
  EXPECT_NO_THROW(require_ring_fits(4, 256, 1000, 1'024'000, RingGrowth::added));
  EXPECT_NO_THROW(require_ring_fits(4, 256, 0, 1, RingGrowth::added));  // direct upload
  try {
    require_ring_fits(5, 256, 1000, 1'024'000, RingGrowth::added);
    ADD_FAILURE() << "a fifth slot beyond memory was allowed";
  } catch (const UsageError& e) {
    ADD_FAILURE() << "an added slot is an Error of next(), not of the options: " << e.what();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("5 slots of 256 images (1000 bytes each): 1.28e+06 bytes of host memory, "
                        "more than the 1024000 this process may use"),
              std::string::npos)
        << what;
  }
  EXPECT_THROW(require_ring_fits(5, 256, 1000, 1'024'000, RingGrowth::initial), UsageError);
}

TEST_F(LoaderTest, WaitForNextInSlicesDeliversWhatNextDoes) {
  LoaderOptions o = base_options();
  Loader plain(dataset_, o);
  Epoch expected = read_epoch(plain, 2);

  Loader loader(dataset_, o);
  loader.set_epoch(2);
  std::vector<uint64_t> records;
  for (;;) {
    // Polling with a zero timeout: returns false until the batch is ready.
    while (!loader.wait_for_next(std::chrono::nanoseconds(0))) std::this_thread::yield();
    ASSERT_TRUE(loader.wait_for_next(std::chrono::nanoseconds(0)));  // stays ready
    std::optional<Batch> batch = loader.next();
    if (!batch) break;
    records.insert(records.end(), batch->records().begin(), batch->records().end());
  }
  std::vector<uint64_t> expected_records;
  for (const Entry& e : expected.entries) expected_records.push_back(e.record);
  EXPECT_EQ(records, expected_records);
  EXPECT_TRUE(loader.wait_for_next(std::chrono::hours(1)));  // exhausted: next() returns at once
  EXPECT_FALSE(loader.next().has_value());
  EXPECT_EQ(loader.stats().batches, expected.batch_sizes.size());
}

// "For ever" waits for the batch: nanoseconds::max() overflowed the deadline
// (now + timeout) and returned false at once, so `while
// (!wait_for_next(max)) poll();` spun.
TEST_F(LoaderTest, WaitForNextWithoutEndWaitsForTheBatch) {
  for (const std::chrono::nanoseconds forever :
       {std::chrono::nanoseconds::max(), std::chrono::nanoseconds::max() - std::chrono::hours(1),
        std::chrono::nanoseconds(std::chrono::hours(24 * 365 * 200))}) {
    Loader loader(dataset_, base_options());
    loader.set_epoch(1);
    EXPECT_TRUE(loader.wait_for_next(forever));
    const LoaderStats before = loader.stats();
    std::optional<Batch> batch = loader.next();
    ASSERT_TRUE(batch);
    EXPECT_EQ(batch->epoch(), 1u);
    EXPECT_EQ(loader.stats().batches, before.batches + 1);
  }
}

// A moved-from Batch is empty, as loader.hpp says: it showed the slot's
// contents still, which the ring refills with another batch once the Batch
// moved into is gone.
TEST_F(LoaderTest, AMovedFromBatchShowsNothing) {
  LoaderOptions o = base_options();
  o.prefetch = 1;
  Loader loader(dataset_, o);
  std::optional<Batch> first = loader.next();
  ASSERT_TRUE(first);
  const uint64_t record = first->records()[0];
  Batch moved = std::move(*first);
  EXPECT_EQ(moved.records()[0], record);
  EXPECT_FALSE(*first);  // NOLINT(bugprone-use-after-move): what is checked
  EXPECT_EQ(first->size(), 0u);
  EXPECT_TRUE(first->records().empty());
  EXPECT_TRUE(first->labels().empty());
  EXPECT_EQ(first->data(), nullptr);
  Batch assigned;
  assigned = std::move(moved);
  EXPECT_EQ(assigned.records()[0], record);
  EXPECT_FALSE(moved);  // NOLINT(bugprone-use-after-move): what is checked
  EXPECT_EQ(moved.size(), 0u);
  // Assigned over a held batch: shows the new one, and the old one's slot
  // goes back to the ring.
  std::optional<Batch> second = loader.next();
  ASSERT_TRUE(second);
  assigned = std::move(*second);
  EXPECT_EQ(assigned.index(), 1u);
  EXPECT_FALSE(*second);  // NOLINT(bugprone-use-after-move): what is checked
  std::optional<Batch> third = loader.next();
  ASSERT_TRUE(third);
  EXPECT_EQ(third->index(), 2u);
}

TEST_F(LoaderTest, WaitForNextStartsEpochZeroGrowsTheRingAndReportsHeldSlots) {
  LoaderOptions o = base_options();
  o.prefetch = 2;
  Loader loader(dataset_, o);
  ASSERT_TRUE(loader.wait_for_next(std::chrono::hours(1)));  // no epoch set: epoch 0
  std::vector<Batch> kept;
  for (std::size_t i = 0; i < 6; ++i) {
    // With every slot held the wait adds one and waits for its batch.
    ASSERT_TRUE(loader.wait_for_next(std::chrono::hours(1)));
    std::optional<Batch> batch = loader.next();
    ASSERT_TRUE(batch);
    EXPECT_EQ(batch->epoch(), 0u);
    kept.push_back(std::move(*batch));
  }
  // 2 x prefetch + 2 held: next() would throw at once, so the wait does not block.
  EXPECT_TRUE(loader.wait_for_next(std::chrono::hours(1)));
  EXPECT_THROW(loader.next(), Error);
  kept.erase(kept.begin());
  ASSERT_TRUE(loader.wait_for_next(std::chrono::hours(1)));
  std::optional<Batch> c = loader.next();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->index(), 6u);
  LoaderStats s = loader.stats();
  EXPECT_LE(s.wait_seconds, s.consumer_seconds);
  EXPECT_EQ(s.added_slots, 4u);
}

TEST_F(LoaderTest, BatchesCanBeReleasedOnOtherThreads) {
  LoaderOptions o = base_options();
  o.threads = 3;
  o.prefetch = 4;
  Loader loader(dataset_, o);
  std::size_t images = 0;
  std::vector<std::thread> releasers;
  while (std::optional<Batch> batch = loader.next()) {
    images += batch->size();
    releasers.emplace_back([b = std::move(*batch)]() mutable { b.release(); });
    if (releasers.size() == 3) {
      for (std::thread& t : releasers) t.join();
      releasers.clear();
    }
  }
  for (std::thread& t : releasers) t.join();
  EXPECT_EQ(images, 61u);
}

TEST_F(LoaderTest, StatsCountWhatWasDelivered) {
  LoaderOptions o = base_options();
  o.last_batch = LastBatch::pad;
  Loader loader(dataset_, o);
  read_epoch(loader, 0);
  LoaderStats s = loader.stats();
  EXPECT_EQ(s.batches, 8u);
  EXPECT_EQ(s.images, 64u);
  EXPECT_EQ(s.padding, 3u);
  EXPECT_EQ(s.bytes, 64u * dataset_.record_bytes());
  EXPECT_GT(s.consumer_seconds, 0);
  EXPECT_LE(s.wait_seconds, s.consumer_seconds);
  EXPECT_GE(s.starvation(), 0);
  EXPECT_LE(s.starvation(), 1);
  EXPECT_GT(s.reader_busy_seconds, 0);
  loader.reset_stats();
  EXPECT_EQ(loader.stats().images, 0u);
  EXPECT_EQ(loader.ring_host_bytes(), std::size_t{3} * 8 * dataset_.record_bytes());
  EXPECT_EQ(loader.ring_device_bytes(), 0u);
}

// ReadPath::read (pread) delivers the bytes and order ReadPath::mapped does,
// for any thread count and on every copy path: whole records, windows with
// flips, float output. The stats say which path took the records.
// The read path delivers what the mapping does, byte for byte and in the
// same order: for 1 and 3 threads, one or several reads in flight, through
// the page cache and past it (O_DIRECT, which reads the aligned span around
// each record: these records are 90 bytes, many to a block), whole or
// windowed and converted, with a short last batch.
TEST_F(LoaderTest, ReadPathsDeliverTheSameBatches) {
  struct Run {
    std::vector<uint8_t> bytes;
    std::vector<uint64_t> records;
    uint64_t records_read = 0;
    uint64_t delivered = 0;
  };
  struct ReadOptions {
    unsigned threads = 2;
    unsigned in_flight = 16;
    DirectIo direct = DirectIo::automatic;
  };
  auto run = [&](ReadPath path, ReadOptions read, bool windowed_float) {
    LoaderOptions o = base_options();
    o.threads = read.threads;
    o.read_path = path;
    o.reads_in_flight = read.in_flight;
    o.direct_io = read.direct;
    o.last_batch = LastBatch::partial;  // a short last batch: chunks past its end
    o.selection.variants = VariantPolicy::all;
    if (windowed_float) {
      o.crop.height = dataset_.height() - 1;
      o.crop.width = dataset_.width() - 2;
      o.crop.hflip = 0.5;
      o.output = OutputFormat::float32_nchw;
    }
    Loader loader(dataset_, o);
    Run r;
    for (uint64_t epoch = 0; epoch < 2; ++epoch) {
      if (!windowed_float) {
        read_epoch(loader, epoch);  // checks every record's pixels
        continue;
      }
      loader.set_epoch(epoch);
      while (std::optional<Batch> batch = loader.next()) {
        const auto* data = static_cast<const uint8_t*>(batch->data());
        r.bytes.insert(r.bytes.end(), data, data + batch->bytes());
        r.records.insert(r.records.end(), batch->records().begin(), batch->records().end());
      }
    }
    const LoaderStats stats = loader.stats();
    r.records_read = stats.records_read;
    r.delivered = stats.images - stats.padding;
    return r;
  };
  for (const bool windowed_float : {false, true}) {
    const Run mapped = run(ReadPath::mapped, {}, windowed_float);
    EXPECT_EQ(mapped.records_read, 0u);
    for (const DirectIo direct : {DirectIo::off, DirectIo::on}) {
      for (const ReadOptions read :
           {ReadOptions{1, 1, direct}, ReadOptions{1, 5, direct}, ReadOptions{3, 16, direct}}) {
        const Run got = run(ReadPath::read, read, windowed_float);
        const std::string what = std::to_string(read.threads) + " threads, " +
                                 std::to_string(read.in_flight) + " in flight, direct " +
                                 (direct == DirectIo::on ? "on" : "off");
        EXPECT_EQ(got.bytes, mapped.bytes) << what;
        EXPECT_EQ(got.records, mapped.records) << what;
        // Every delivered record was read; readers may have gone on into epoch 2.
        EXPECT_GE(got.records_read, got.delivered) << what;
        EXPECT_EQ(got.delivered, 2 * dataset_.num_records()) << what;
      }
    }
  }
}

// A dataset opened by a relative path keeps reading after the working
// directory changes (a training script's chdir, Hydra's output folder): the
// read path opens each shard when it first reads from it, and the paths
// left out of the index are read on first use, both by absolute paths.
TEST_F(LoaderTest, ARelativePathKeepsWorkingAfterTheWorkingDirectoryChanges) {
  const fs::path before = fs::current_path();
  fs::current_path(dir_.path().parent_path());
  const fs::path relative = dir_.path().filename();
  Dataset dataset = Dataset::open(relative);
  EXPECT_EQ(dataset.path(), relative);
  LoaderOptions o = base_options();
  o.read_path = ReadPath::read;
  o.direct_io = DirectIo::off;
  Loader loader(dataset, o);
  fs::current_path("/");
  uint64_t images = 0;
  while (std::optional<Batch> batch = loader.next()) {
    for (std::size_t i = 0; i < batch->size(); ++i) {
      const uint8_t* image = batch->data_as<uint8_t>() + i * dataset.record_bytes();
      EXPECT_EQ(checksum(image, dataset.record_bytes()),
                dataset.record_checksum(batch->records()[i]));
    }
    images += batch->size();
  }
  const std::string first_path = dataset.sample_path(0);
  fs::current_path(before);
  EXPECT_EQ(images, loader.images_per_epoch());
  EXPECT_FALSE(first_path.empty());
}

// Options of a random-order epoch through the read path (ReadPath::read).
LoaderOptions read_path_options(std::size_t batch_size, DirectIo direct) {
  LoaderOptions o;
  o.batch_size = batch_size;
  o.threads = 2;
  o.order.mode = OrderMode::random;
  o.last_batch = LastBatch::partial;
  o.read_path = ReadPath::read;
  o.direct_io = direct;
  return o;
}

// Calls check(record, pixels) for every record of `loader`'s epoch 0;
// returns how many it delivered.
template <class Check>
std::size_t for_each_delivered(Loader& loader, const Dataset& dataset, Check&& check) {
  loader.set_epoch(0);
  std::size_t seen = 0;
  while (std::optional<Batch> batch = loader.next()) {
    for (std::size_t i = 0; i < batch->size(); ++i) {
      check(batch->records()[i],
            static_cast<const uint8_t*>(batch->data()) + i * dataset.record_bytes());
      ++seen;
    }
  }
  return seen;
}

// Records of a multiple of 4096 bytes at aligned offsets are read with
// O_DIRECT straight into the slot; on tmpfs, which refuses O_DIRECT, every
// read goes through the page cache instead. Both deliver the stored pixels.
TEST(LoaderReadPath, DirectReadsOfAlignedRecordsAndFileSystemsWithoutODirect) {
  std::vector<fs::path> places{fs::temp_directory_path()};
  if (fs::is_directory("/dev/shm")) places.emplace_back("/dev/shm");
  for (const fs::path& place : places) {
    const fs::path dir = place / ("imgpack-direct-" + std::to_string(::getpid()));
    SyntheticOptions options;
    options.samples = 23;
    options.height = 32;
    options.width = 32;
    options.channels = 1;  // 1024 bytes
    options.records_per_shard = 9;
    for (const uint32_t height : {32u, 128u}) {  // 1024 bytes, then 4096
      options.height = height;
      fs::remove_all(dir);
      test::write_synthetic_dataset(dir, options);
      const Dataset dataset = Dataset::open(dir);
      LoaderOptions o = read_path_options(5, DirectIo::on);
      o.reads_in_flight = 4;
      Loader loader(dataset, o);
      const std::size_t seen =
          for_each_delivered(loader, dataset, [&](uint64_t record, const uint8_t* pixels) {
            ASSERT_EQ(checksum(pixels, dataset.record_bytes()), dataset.record_checksum(record))
                << place << ", record " << record << " of " << dataset.record_bytes() << " bytes";
          });
      EXPECT_EQ(seen, dataset.num_records()) << place;
      // Reader threads may have gone on into epoch 1.
      EXPECT_GE(loader.stats().records_read, dataset.num_records()) << place;
    }
    fs::remove_all(dir);
  }
}

// The read paths open shards by name when they first read them, which may be
// long after the Dataset mapped them. A file put in a shard's place since
// (here another dataset's shard, as a conversion over the dataset leaves) or
// a shard removed since (the replaced shards a compaction kept, which the
// dataset's next change removes) is read from the mapping, which still holds
// the file the Dataset opened: every read path keeps the Dataset's view,
// never that file's pixels under this index's labels.
TEST(LoaderReadPath, AShardReplacedOrRemovedAfterOpenIsReadFromTheMapping) {
  for (const bool removed : {false, true}) {
    SCOPED_TRACE(removed ? "removed" : "replaced");
    TempDir dir;
    SyntheticOptions options;
    options.samples = 20;
    options.records_per_shard = 8;
    options.masks = true;
    test::write_synthetic_dataset(dir / "a", options);
    options.seed = 2;
    test::write_synthetic_dataset(dir / "b", options);
    const Dataset dataset = Dataset::open(dir / "a");
    ASSERT_GT(dataset.num_shards(), 1u);
    if (removed) {
      fs::remove(dir / "a/shard-00000.h5");
    } else {
      fs::rename(dir / "b/shard-00000.h5", dir / "a/shard-00000.h5");
    }
    std::vector<uint8_t> pixels(dataset.record_bytes()), mask(dataset.mask_bytes());
    for (uint64_t r = 0; r < dataset.num_records(); ++r) {
      dataset.read_record(r, pixels.data());
      ASSERT_EQ(checksum(pixels.data(), pixels.size()), dataset.record_checksum(r)) << r;
      dataset.read_mask(r, mask.data());
      ASSERT_EQ(checksum(mask.data(), mask.size()), dataset.record_mask_checksum(r)) << r;
    }
    for (const DirectIo direct : {DirectIo::off, DirectIo::on}) {
      LoaderOptions o = read_path_options(4, direct);
      o.verify_checksums = true;
      Loader loader(dataset, o);
      const std::size_t seen =
          for_each_delivered(loader, dataset, [&](uint64_t record, const uint8_t* delivered) {
            ASSERT_TRUE(std::equal(delivered, delivered + dataset.record_bytes(),
                                   dataset.record_data(record)))
                << "record " << record;
          });
      EXPECT_EQ(seen, dataset.num_records());
      // The other shards are still read from their files.
      EXPECT_GT(loader.stats().records_read, 0u);
    }
  }
}

// A Loader's threads stay in the parent of a fork(): in the child, next()
// throws saying so (instead of waiting for batches no thread makes), and
// dropping a batch and the loader joins and locks nothing. The parent's
// loader goes on unharmed.
TEST_F(LoaderTest, ALoaderMadeBeforeForkRefusesWorkInTheChild) {
  if (test::kThreadSanitizer) GTEST_SKIP() << "TSan does not follow a multi-threaded fork";
  LoaderOptions o = base_options();
  o.threads = 2;
  auto loader = std::make_unique<Loader>(dataset_, o);
  std::optional<Batch> held = loader->next();
  ASSERT_TRUE(held);
  const pid_t pid = ::fork();
  ASSERT_NE(pid, -1);
  if (pid == 0) {
    ::alarm(30);  // a hang kills the child, never the test
    int code = 1;
    try {
      loader->next();
    } catch (const Error& e) {
      code =
          std::string(e.what()).find("made before the process forked") != std::string::npos ? 0 : 2;
    }
    held.reset();
    loader.reset();
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  held.reset();
  std::size_t images = 0;
  while (std::optional<Batch> batch = loader->next()) images += batch->size();
  EXPECT_GT(images, 0u);
}

// ReadPath::automatic reads with pread what the page cache does not hold and
// copies from the mapping what it does.
TEST_F(LoaderTest, AutomaticReadPathFollowsThePageCache) {
  LoaderOptions o = base_options();
  o.selection.variants = VariantPolicy::all;
  {
    // Everything cached: the fixture wrote it, and reading it once keeps it.
    Loader loader(dataset_, o);
    read_epoch(loader, 0);
    read_epoch(loader, 1);
    ASSERT_TRUE(dataset_.record_cached(0));
    EXPECT_EQ(loader.stats().records_read, 0u) << "cached records were read with pread";
  }
  // Evicted: this process's mappings first (pages a process maps stay cached).
  for (std::size_t k = 0; k < dataset_.num_shards(); ++k) {
    const std::span<const uint8_t> images = dataset_.shard_images(k);
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const std::uintptr_t lead = reinterpret_cast<std::uintptr_t>(images.data()) % page;
    ASSERT_EQ(
        ::madvise(const_cast<uint8_t*>(images.data()) - lead, images.size() + lead, MADV_DONTNEED),
        0);
    const int fd = ::open(dataset_.shard_path(k).c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    ::close(fd);
  }
  if (dataset_.record_cached(0)) GTEST_SKIP() << "this file system keeps its pages (tmpfs?)";
  Loader loader(dataset_, o);
  read_epoch(loader, 0);
  EXPECT_GT(loader.stats().records_read, 0u);
}

TEST_F(LoaderTest, ReadPathReadWithDirectUploadIsAUsageError) {
  LoaderOptions o = base_options();
  o.direct_upload = DirectUpload::on;
  o.read_path = ReadPath::read;
  try {
    Loader loader(dataset_, o);
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("ReadPath::read"), std::string::npos) << e.what();
  }
}

TEST_F(LoaderTest, SlowConsumerIsNotStarved) {
  // With a consumer far slower than the readers, next() should almost never wait.
  LoaderOptions o = base_options();
  o.prefetch = 4;
  Loader loader(dataset_, o);
  loader.set_epoch(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the ring fill
  while (std::optional<Batch> batch = loader.next()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  LoaderStats s = loader.stats();
  EXPECT_LT(s.starvation(), 0.5) << "waited " << s.wait_seconds << " s of " << s.consumer_seconds;
}

TEST_F(LoaderTest, RejectsBadOptions) {
  LoaderOptions o = base_options();
  o.batch_size = 0;
  EXPECT_THROW(Loader(dataset_, o), UsageError);
  o = base_options();
  o.threads = 1025;  // 0 is the automatic choice (UploadChoice tests)
  EXPECT_THROW(Loader(dataset_, o), UsageError);
  o = base_options();
  o.prefetch = 0;
  EXPECT_THROW(Loader(dataset_, o), UsageError);
  o = base_options();
  o.output = OutputFormat::float32_nchw;
  o.stddev = {1, 0, 1, 1};
  EXPECT_THROW(Loader(dataset_, o), UsageError);
  o = base_options();
  o.selection.split = "nope";
  EXPECT_THROW(Loader(dataset_, o), UsageError);
  o = base_options();
  o.selection.role = Role::val;  // no split
  EXPECT_THROW(Loader(dataset_, o), UsageError);
  o = base_options();
  o.direct_upload = DirectUpload::on;  // host delivery: nothing to upload to
  EXPECT_THROW(Loader(dataset_, o), UsageError);
  o.direct_upload = DirectUpload::automatic;  // the default: host delivery ignores it
  EXPECT_NO_THROW(Loader(dataset_, o));
}

TEST_F(LoaderTest, EpochsWithoutABatchAreUsageErrorsSayingWhy) {
  auto message = [&](const Dataset& dataset, const LoaderOptions& o) -> std::string {
    try {
      Loader loader(dataset, o);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  // An empty selection: no test set in this split.
  test::add_split(dir_.path(), "notest", 2, std::vector<int16_t>(61, 0));
  Dataset dataset = Dataset::open(dir_.path());
  LoaderOptions o = base_options();
  o.selection = {.split = "notest", .fold = 0, .role = Role::test};
  EXPECT_EQ(message(dataset, o),
            "the selection (split notest, fold 0, role test) holds no records: every epoch would "
            "be empty");
  // A batch larger than the epoch with LastBatch::drop (61 records).
  o = base_options();
  o.batch_size = 62;
  o.last_batch = LastBatch::drop;
  EXPECT_EQ(message(dataset_, o),
            "batch_size 62 is larger than the 61 records each rank reads per epoch (61 over 1 "
            "rank) and last_batch is drop: every epoch would be empty (use a smaller batch_size, "
            "or last_batch partial or pad)");
  o.order.world_size = 2;  // 31 per rank (padded)
  o.batch_size = 32;
  EXPECT_NE(message(dataset_, o)
                .find("larger than the 31 records each rank reads per epoch (61 "
                      "over 2 ranks)"),
            std::string::npos)
      << message(dataset_, o);
  o.batch_size = 31;
  EXPECT_EQ(message(dataset_, o), "(accepted)");
  o.last_batch = LastBatch::partial;
  o.batch_size = 1000;
  EXPECT_EQ(message(dataset_, o), "(accepted)");  // one short batch
  // More ranks than records with RankPolicy::drop.
  o = base_options();
  o.selection = {.split = "cv3", .fold = 0, .role = Role::test};  // 6 samples
  o.order.world_size = 7;
  o.order.rank_policy = RankPolicy::drop;
  EXPECT_EQ(message(dataset_, o),
            "world_size 7 is larger than the 6 records of an epoch and rank_policy is drop: no "
            "rank reads a record: every epoch would be empty (use rank_policy pad or fewer ranks)");
  o.order.rank_policy = RankPolicy::pad;
  EXPECT_EQ(message(dataset_, o), "(accepted)");
}

TEST_F(LoaderTest, ClassBalancedEpochsDoNotDependOnThreads) {
  std::vector<std::vector<Entry>> runs;
  for (auto [threads, prefetch] : {std::pair{1u, 1u}, {3u, 2u}, {8u, 5u}, {1u, 1u}}) {
    LoaderOptions o = base_options();
    o.threads = threads;
    o.prefetch = prefetch;
    o.order.sampling = Sampling::class_balanced;
    o.order.epoch_length = 100;
    Loader loader(dataset_, o);
    EXPECT_EQ(loader.images_per_epoch(), 100u);
    std::vector<Entry> all;
    for (uint64_t epoch = 0; epoch < 2; ++epoch) {
      Epoch e = read_epoch(loader, epoch);
      EXPECT_EQ(e.entries.size(), 100u);
      all.insert(all.end(), e.entries.begin(), e.entries.end());
    }
    runs.push_back(all);
  }
  for (std::size_t i = 1; i < runs.size(); ++i) EXPECT_EQ(runs[i], runs[0]) << "run " << i;
  // With replacement: some record comes twice in an epoch of 100 draws from 61.
  std::set<uint64_t> distinct;
  for (std::size_t i = 0; i < 100; ++i) distinct.insert(runs[0][i].record);
  EXPECT_LT(distinct.size(), 100u);
}

// Reads epochs 1 to 3 of `loader`, whose shards in `dir` were damaged under
// it: next() must throw an imgpack::Error (not a UsageError) naming a shard.
void expect_epochs_fail_naming_a_shard(Loader& loader, const fs::path& dir) {
  try {
    for (uint64_t epoch = 1; epoch < 4; ++epoch) {
      loader.set_epoch(epoch);
      while (loader.next()) {
      }
    }
    ADD_FAILURE() << "read three epochs of damaged shards";
  } catch (const UsageError& e) {
    ADD_FAILURE() << e.what();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find((dir / "shard-0").string()), std::string::npos) << what;
  }
}

// A shard truncated while a Loader reads it: the records the reader threads
// would copy from its mapping are gone, which the kernel answers with SIGBUS.
// Every read path and order ends in an imgpack::Error from next() naming the
// shard, not in a process killed by the signal.
TEST_F(LoaderTest, AShardTruncatedWhileItIsReadIsAnErrorNamingItNotACrash) {
  for (ReadPath path : {ReadPath::mapped, ReadPath::automatic}) {
    for (OrderMode mode : {OrderMode::random, OrderMode::sequential, OrderMode::shard_window}) {
      for (bool verify : {false, true}) {
        SCOPED_TRACE(std::string(read_path_name(path)) + " " + std::string(order_mode_name(mode)) +
                     (verify ? " verifying" : ""));
        TempDir dir;
        test::write_synthetic_dataset(dir.path(), options_);
        const Dataset dataset = Dataset::open(dir.path());
        LoaderOptions o = base_options();
        o.read_path = path;
        o.order.mode = mode;
        o.verify_checksums = verify;
        o.prefetch = 2;
        Loader loader(dataset, o);
        loader.set_epoch(0);
        ASSERT_TRUE(loader.next().has_value());
        for (std::size_t k = 0; k < dataset.num_shards(); ++k) {
          ASSERT_EQ(::truncate(dataset.shard_path(k).c_str(), 0), 0);
        }
        expect_epochs_fail_naming_a_shard(loader, dir.path());
      }
    }
  }
}

// A shard cut short after its pixels: the records' pixels are all there to
// read, but a column written after them and read through the mapping (the
// checksums, the masks) has lost its last page. Whichever path reads the
// pixels (pread leaves the mapping alone), a loader that needs that column
// ends in an imgpack::Error naming the shard rather than in SIGBUS.
TEST(LoaderCutShort, AColumnCutAfterThePixelsIsAnErrorOnEveryReadPathNotACrash) {
  struct Case {
    const char* column;
    bool masks;
    bool verify;
  };
  const Case cases[] = {{format::kChecksum, false, true},
                        {format::kMaskChecksum, true, true},
                        {format::kMasks, true, false}};
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  for (const Case& c : cases) {
    for (ReadPath path : {ReadPath::mapped, ReadPath::automatic, ReadPath::read}) {
      SCOPED_TRACE(std::string(c.column) + " " + std::string(read_path_name(path)));
      TempDir dir;
      SyntheticOptions synthetic;
      // Columns of 512 entries of 8 bytes: each ends at least a page past
      // its start, so the cut below leaves every byte before the column.
      synthetic.samples = 1024;
      synthetic.records_per_shard = 512;
      synthetic.masks = c.masks;
      test::write_synthetic_dataset(dir.path(), synthetic);
      const Dataset dataset = Dataset::open(dir.path());
      LoaderOptions o;
      o.batch_size = 64;
      o.threads = 2;
      o.prefetch = 2;
      o.read_path = path;
      o.verify_checksums = c.verify;
      Loader loader(dataset, o);
      loader.set_epoch(0);
      ASSERT_TRUE(loader.next().has_value());
      for (std::size_t k = 0; k < dataset.num_shards(); ++k) {
        const fs::path shard = dataset.shard_path(k);
        const uint64_t start = test::dataset_offset(shard, c.column);
        const uint64_t pixels_end = dataset.shard_images_offset(k) + dataset.shard_images(k).size();
        ASSERT_GE(start, pixels_end);
        // The page holding the column's 512th entry and everything after it.
        const uint64_t cut = (start + uint64_t{511} * 8) / page * page;
        ASSERT_GE(cut, start);
        ASSERT_EQ(::truncate(shard.c_str(), static_cast<off_t>(cut)), 0);
      }
      expect_epochs_fail_naming_a_shard(loader, dir.path());
    }
  }
}

// A batch_size beyond what an epoch holds costs no memory: a slot holds the
// largest batch an epoch delivers. A ring larger than the memory the process
// may use is refused when the loader is made, naming the size, instead of
// being killed by the kernel once it is filled.
TEST_F(LoaderTest, SlotsHoldWhatAnEpochDeliversAndARingBeyondMemoryIsRefused) {
  LoaderOptions o = base_options();
  o.batch_size = 1'000'000;
  Loader loader(dataset_, o);
  EXPECT_EQ(loader.ring_host_bytes(), o.prefetch * 61 * dataset_.record_bytes());
  Epoch epoch = read_epoch(loader, 0);
  EXPECT_EQ(epoch.batch_sizes, std::vector<std::size_t>{61});

  o.last_batch = LastBatch::pad;  // one batch of batch_size, padded
  o.batch_size = std::size_t{1} << 40;
  try {
    Loader refused(dataset_, o);
    ADD_FAILURE() << "a ring of " << o.prefetch << " x 2^40 images was allocated";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("needs 2.97e+14 bytes of host memory"), std::string::npos) << what;
    EXPECT_NE(what.find("lower batch_size or prefetch"), std::string::npos) << what;
  }
}

TEST(LoaderNames, Parse) {
  EXPECT_EQ(parse_last_batch("pad"), LastBatch::pad);
  EXPECT_THROW(parse_last_batch("keep"), UsageError);
  EXPECT_EQ(parse_rank_policy("drop"), RankPolicy::drop);
  EXPECT_EQ(parse_output_format("float16"), OutputFormat::float16_nchw);
  EXPECT_THROW(parse_output_format("int8"), UsageError);
  EXPECT_EQ(parse_device("cuda:1").index, 1);
  EXPECT_TRUE(parse_device("cuda").is_cuda());
  EXPECT_FALSE(parse_device("host").is_cuda());
  EXPECT_FALSE(parse_device("cpu").is_cuda());
  EXPECT_FALSE(parse_device("cpu:0").is_cuda());  // str(torch.device("cpu", 0))
  EXPECT_THROW(parse_device("cpu:"), UsageError);
  EXPECT_THROW(parse_device("cpux"), UsageError);
  EXPECT_THROW(parse_device("gpu"), UsageError);
  EXPECT_THROW(parse_device("cuda:x"), UsageError);
}

TEST(LoaderNames, EveryValueRoundTrips) {
  for (LastBatch last : {LastBatch::drop, LastBatch::pad, LastBatch::partial}) {
    EXPECT_EQ(parse_last_batch(last_batch_name(last)), last);
  }
  for (OutputFormat format :
       {OutputFormat::uint8_nhwc, OutputFormat::float32_nchw, OutputFormat::float16_nchw}) {
    EXPECT_EQ(parse_output_format(output_format_name(format)), format);
  }
  for (RankPolicy policy : {RankPolicy::pad, RankPolicy::drop}) {
    EXPECT_EQ(parse_rank_policy(rank_policy_name(policy)), policy);
  }
  for (VariantPolicy policy : {VariantPolicy::automatic, VariantPolicy::clean,
                               VariantPolicy::rotate, VariantPolicy::all}) {
    EXPECT_EQ(parse_variant_policy(variant_policy_name(policy)), policy);
  }
  for (Role role : {Role::all, Role::train, Role::val, Role::test}) {
    EXPECT_EQ(parse_role(role_name(role)), role);
  }
  for (OrderMode mode : {OrderMode::sequential, OrderMode::random, OrderMode::shard_window}) {
    EXPECT_EQ(parse_order_mode(order_mode_name(mode)), mode);
  }
  for (Sampling sampling : {Sampling::uniform, Sampling::class_balanced, Sampling::weighted}) {
    EXPECT_EQ(parse_sampling(sampling_name(sampling)), sampling);
  }
}

}  // namespace
}  // namespace imgpack
