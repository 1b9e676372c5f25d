// Reading whole shards into the page cache ahead of the reader threads, in
// large sequential requests, for the orders that visit the shards a few at a
// time (shard-window and sequential); internal to the reader.
//
// A shard-window epoch reads the records of a window of shards in random
// order. Read record by record, a window costs one random request per record;
// read shard by shard, it costs a few large sequential ones, which storage
// serves several times faster. So for these orders the loader gates its
// reader threads on this prefetcher: a chunk of a batch is claimed only once
// every shard its records lie in is in memory, and the threads then copy it
// from the mapping at memory speed. The prefetcher loads the shards an epoch
// visits in the order of their first record (populate() in pieces, several
// in flight), as far ahead as a budget of memory allows (a window being read
// and the next one), and beyond the budget only what the readers wait for.
// Shards the page cache already holds are recognised (mincore) and cost no
// read. When the dataset is larger than memory, a shard whose last record of
// the epoch has been delivered is evicted (page-cache::evict), so that the
// kernel never has to choose between it and the next window.
//
// Entries are positions in a rank's EpochBatches. Entries at or after
// pad_from (padding that repeats the epoch's first records) are never gated.
//
// Thread-safety: every method may be called from any thread. Lock order: the
// loader's mutex, then this one; `wake` is called with no lock of this
// object held. A failure to read (an I/O error, a shard truncated after the
// dataset was opened) is kept and rethrown by check(); from then on every
// entry is ready, so that reader threads reach check().
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "epoch_batches.hpp"
#include "imgpack/dataset.hpp"

namespace imgpack::detail {

class ShardPrefetch {
 public:
  struct Options {
    uint64_t budget = 0;           // bytes of shards loaded and not yet finished, ahead of need
    bool evict_finished = false;   // drop a shard once the epoch is done with it
    unsigned threads = 2;          // pieces populated at once
    std::size_t unit_entries = 1;  // the most entries a reader claims at once
  };

  // `wake` tells the loader's reader threads that more entries are ready.
  ShardPrefetch(Dataset dataset, Options options, std::function<void()> wake);
  ~ShardPrefetch();  // stops and joins the threads (at most one piece each)
  ShardPrefetch(const ShardPrefetch&) = delete;
  ShardPrefetch& operator=(const ShardPrefetch&) = delete;

  // A new epoch read from entry `first` on (set_epoch, restore): forgets
  // every plan, and the shards it held.
  void reset(std::shared_ptr<const EpochBatches> current, std::size_t first);
  // The next epoch, read ahead of the current one.
  void append(std::shared_ptr<const EpochBatches> next);
  // The epoch appended became the current one.
  void advance();

  // Whether entries [0, end) of `work` (the current or the appended epoch)
  // may be copied from the mappings now.
  bool ready(const EpochBatches& work, std::size_t end) const;
  // Reader threads claimed entries up to `end` of `work`.
  void claimed(const EpochBatches& work, std::size_t end);
  // The consumer was handed the current epoch's entries up to `end`.
  void delivered(std::size_t end);
  // Rethrows the prefetcher's failure, if it had one.
  void check() const;

  // Bytes populated so far, and visits whose shard was resident already.
  uint64_t populated_bytes() const { return populated_bytes_.load(std::memory_order_relaxed); }
  uint64_t cached_visits() const { return cached_visits_.load(std::memory_order_relaxed); }

 private:
  // One shard of an epoch's plan: where the epoch first and last reads it.
  struct Visit {
    uint32_t shard = 0;
    std::size_t first = 0;
    std::size_t last = 0;
    bool loaded = false;
    bool finished = false;
  };
  struct Plan {
    std::shared_ptr<const EpochBatches> work;
    std::vector<Visit> visits;  // by first entry
    std::size_t next_load = 0;  // visits[0, next_load) are loaded or being loaded
    std::size_t loaded = 0;     // visits[0, loaded) are loaded
    std::size_t claimed = 0;
    std::size_t delivered = 0;
    // Entries before it are ready: the first entry of visits[loaded].
    std::atomic<std::size_t> frontier{0};
  };
  // The shard being loaded: its pieces, handed out to the threads.
  struct Job {
    uint64_t generation = 0;
    Plan* plan = nullptr;
    std::size_t visit = 0;
    std::size_t pieces = 0;
    std::size_t next_piece = 0;
    std::size_t pieces_done = 0;
  };

  // What of a shard is read and evicted: its pixels, and its masks (empty
  // in a dataset without), each with where it lies in the file.
  struct Layer {
    std::span<const uint8_t> bytes;
    uint64_t file_offset = 0;
  };
  std::array<Layer, 2> layers(uint32_t shard) const;
  uint64_t shard_bytes(uint32_t shard) const;

  Plan& add_plan(std::shared_ptr<const EpochBatches> work, std::size_t first);
  const Plan* find(const EpochBatches& work) const;
  // The next visit to load, if the budget or a waiting reader allows it (mu_ held).
  Plan* next_to_load();
  void thread_main();
  // Starts loading (or skips) plan's visit `v` (mu_ held; released meanwhile).
  void start_job(std::unique_lock<std::mutex>& lock, Plan& plan);
  void finish_visit(Plan& plan, std::size_t v);  // mu_ held
  void release(uint32_t shard);                  // mu_ held
  void fail(std::exception_ptr error);           // mu_ held
  void update_frontier(Plan& plan);              // mu_ held
  // Releases the loaded visits of `plan` whose last entry is before `end` (mu_ held).
  void finish_delivered(Plan& plan, std::size_t end);

  const Dataset dataset_;
  const Options options_;
  const std::function<void()> wake_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t generation_ = 0;
  std::deque<Plan> plans_;          // the current epoch, then the one read ahead
  std::vector<int> holds_;          // per shard: loaded visits not yet finished
  std::vector<bool> evicting_;      // per shard: being evicted by a thread
  std::vector<uint32_t> to_evict_;  // finished shards to drop (Options::evict_finished)
  uint64_t held_bytes_ = 0;         // bytes of the shards with holds
  // The one shard being loaded. A piece's thread finds it again by the
  // generation: a job ends only once all its pieces are done, or with a reset.
  std::optional<Job> job_;
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};
  std::atomic<uint64_t> populated_bytes_{0};
  std::atomic<uint64_t> cached_visits_{0};
  std::vector<std::thread> threads_;
};

}  // namespace imgpack::detail
