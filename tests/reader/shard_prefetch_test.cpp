// Shards read into memory ahead of the reader threads (shard-window and
// sequential orders): the same batches as the mapping, shards read once per
// visit, the cache recognised, finished shards evicted, readers never left
// waiting, and a shard cut short reported as an error instead of a crash.
#include "shard_prefetch.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "epoch_batches.hpp"
#include "imgpack/epoch_order.hpp"
#include "imgpack/error.hpp"
#include "imgpack/loader.hpp"
#include "page_cache.hpp"
#include "synthetic_dataset.hpp"
#include "test_support.hpp"

namespace imgpack::detail {
namespace {

using namespace std::chrono_literals;

// Drops every shard of `dataset` from the page cache (the files were synced).
void evict_all(const Dataset& dataset) {
  for (std::size_t k = 0; k < dataset.num_shards(); ++k) {
    evict(dataset.shard_images(k), dataset.shard_path(k), dataset.shard_images_offset(k));
  }
}

uint64_t resident(const Dataset& dataset, std::size_t k) {
  return resident_bytes(dataset.shard_images(k), dataset.shard_path(k));
}

class ShardPrefetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.samples = 90;
    options_.height = 40;
    options_.width = 40;  // 4.7 KiB records, 15 to a shard: 70 KiB shards
    options_.records_per_shard = 15;
    test::write_synthetic_dataset(dir_.path(), options_);
    ::sync();  // clean pages, so that eviction really drops them
    dataset_ = Dataset::open(dir_.path());
  }

  struct Run {
    std::vector<uint8_t> bytes;
    std::vector<uint64_t> records;
    LoaderStats stats;
  };

  // Two epochs, each read from an evicted page cache unless `warm`.
  Run read(OrderMode mode, ReadPath path, bool warm, DirectIo direct_io = DirectIo::automatic) {
    LoaderOptions o;
    o.direct_io = direct_io;
    o.batch_size = 8;
    o.threads = 2;
    o.prefetch = 3;
    o.order.mode = mode;
    o.order.window_shards = 2;
    o.order.seed = 11;
    o.last_batch = LastBatch::pad;
    o.read_path = path;
    Loader loader(dataset_, o);
    Run run;
    for (uint64_t epoch = 0; epoch < 2; ++epoch) {
      if (!warm) evict_all(dataset_);
      loader.set_epoch(epoch);
      while (std::optional<Batch> batch = loader.next()) {
        const auto* data = static_cast<const uint8_t*>(batch->data());
        run.bytes.insert(run.bytes.end(), data, data + batch->bytes());
        run.records.insert(run.records.end(), batch->records().begin(), batch->records().end());
      }
    }
    run.stats = loader.stats();
    return run;
  }

  test::TempDir dir_;
  test::SyntheticOptions options_;
  Dataset dataset_;
};

TEST_F(ShardPrefetchTest, DeliversWhatTheMappingDeliversReadingEachShardOnce) {
  for (const OrderMode mode : {OrderMode::shard_window, OrderMode::sequential}) {
    const Run mapped = read(mode, ReadPath::mapped, true);
    EXPECT_EQ(mapped.stats.prefetched_bytes, 0u);
    const Run cold = read(mode, ReadPath::automatic, false);
    EXPECT_EQ(cold.records, mapped.records);
    EXPECT_EQ(cold.bytes, mapped.bytes);
    // Whole shards, none record by record. Epoch 0 reads every shard; epoch
    // 1, planned and read ahead while epoch 0 ends, finds some of them in
    // memory still (this test evicts them behind the loader's back, so those
    // are then faulted in through the mapping).
    uint64_t pixels = 0;
    for (std::size_t k = 0; k < dataset_.num_shards(); ++k) {
      pixels += dataset_.shard_images(k).size();
    }
    EXPECT_GE(cold.stats.prefetched_bytes, pixels);
    EXPECT_LE(cold.stats.prefetched_bytes, 2 * pixels);
    EXPECT_EQ(cold.stats.records_read, 0u);
    // From the page cache: nothing to read, every visit recognised, including
    // one that finds its shard still held for the epoch before.
    const Run warm = read(mode, ReadPath::automatic, true);
    EXPECT_EQ(warm.bytes, mapped.bytes);
    EXPECT_EQ(warm.stats.prefetched_bytes, 0u);
    EXPECT_GE(warm.stats.prefetch_cached_shards, 2 * dataset_.num_shards());
  }
}

// A shard-window epoch read past the page cache (O_DIRECT: a dataset larger
// than memory) reads the window's records, not whole shards: the same bytes
// in the same order.
TEST_F(ShardPrefetchTest, ShardWindowPastThePageCacheReadsRecordsInstead) {
  const Run mapped = read(OrderMode::shard_window, ReadPath::mapped, true);
  const Run direct = read(OrderMode::shard_window, ReadPath::automatic, false, DirectIo::on);
  EXPECT_EQ(direct.records, mapped.records);
  EXPECT_EQ(direct.bytes, mapped.bytes);
  EXPECT_EQ(direct.stats.prefetched_bytes, 0u);
  // Every record delivered was read (and some read ahead into a third epoch).
  EXPECT_GE(direct.stats.records_read, direct.stats.images);
}

// The prefetcher driven by hand, as the loader drives it: readers wait for
// the frontier, a budget of one byte still lets them through one shard at a
// time, and each finished shard is evicted.
TEST_F(ShardPrefetchTest, LoadsPastTheBudgetWhenReadersWaitAndEvictsFinishedShards) {
  evict_all(dataset_);
  std::mutex mu;
  std::condition_variable woken;
  ShardPrefetch::Options options;
  options.budget = 1;
  options.evict_finished = true;
  options.threads = 2;
  options.unit_entries = 4;
  ShardPrefetch prefetch(dataset_, options, [&] {
    { std::lock_guard lock(mu); }
    woken.notify_all();
  });
  OrderOptions order;
  order.mode = OrderMode::shard_window;
  order.window_shards = 1;
  std::vector<int64_t> samples(dataset_.num_samples());
  std::iota(samples.begin(), samples.end(), 0);
  const EpochOrder epochs(dataset_, samples, VariantPolicy::all, order);
  auto work = std::make_shared<const EpochBatches>(
      make_epoch_batches(epochs.plan(0), 4, LastBatch::partial));
  prefetch.reset(work, 0);
  for (std::size_t begin = 0; begin < work->entries.size(); begin += 4) {
    const std::size_t end = std::min(begin + 4, work->entries.size());
    std::unique_lock lock(mu);
    ASSERT_TRUE(woken.wait_for(lock, 10s, [&] { return prefetch.ready(*work, end); }))
        << "readers left waiting at entry " << begin;
    lock.unlock();
    prefetch.claimed(*work, end);
    for (std::size_t e = begin; e < end; ++e) {
      const uint32_t shard = dataset_.record_shard(work->entries[e]);
      EXPECT_EQ(resident(dataset_, shard), dataset_.shard_images(shard).size())
          << "entry " << e << " is ready but its shard is not in memory";
    }
    prefetch.delivered(end);
  }
  prefetch.check();
  // Every shard was finished and evicted (eviction runs on the prefetch
  // threads: wait for it a little).
  for (std::size_t k = 0; k < dataset_.num_shards(); ++k) {
    for (int tries = 0; tries < 200 && resident(dataset_, k) > 0; ++tries) {
      std::this_thread::sleep_for(10ms);
    }
    EXPECT_EQ(resident(dataset_, k), 0u) << "shard " << k << " was not evicted";
  }
  // Each shard read once: one at a time, and never again once finished.
  uint64_t pixels = 0;
  for (std::size_t k = 0; k < dataset_.num_shards(); ++k) pixels += dataset_.shard_images(k).size();
  EXPECT_EQ(prefetch.populated_bytes(), pixels);
}

// Destroying a loader (and its prefetcher) in the middle of a cold epoch
// returns promptly.
TEST_F(ShardPrefetchTest, DestroyingMidEpochIsPrompt) {
  evict_all(dataset_);
  LoaderOptions o;
  o.batch_size = 4;
  o.order.mode = OrderMode::shard_window;
  auto loader = std::make_unique<Loader>(dataset_, o);
  loader->set_epoch(0);
  ASSERT_TRUE(loader->next().has_value());
  const auto start = std::chrono::steady_clock::now();
  loader.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

// A shard truncated after the dataset was opened: reading it into memory
// fails, and next() says so naming the shard, instead of a SIGBUS on the
// mapping.
TEST_F(ShardPrefetchTest, AShardTruncatedAfterOpenIsAnErrorNamingIt) {
  evict_all(dataset_);
  LoaderOptions o;
  o.batch_size = 4;
  o.order.mode = OrderMode::sequential;
  Loader loader(dataset_, o);
  const std::filesystem::path shard = dataset_.shard_path(0);
  ASSERT_EQ(::truncate(shard.c_str(), static_cast<off_t>(dataset_.shard_images_offset(0))), 0);
  loader.set_epoch(0);
  try {
    while (loader.next()) {
    }
    FAIL() << "no error for a truncated shard";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(shard.string()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace imgpack::detail
