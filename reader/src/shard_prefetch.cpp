#include "shard_prefetch.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <span>
#include <utility>

#include "page_cache.hpp"

namespace imgpack::detail {

namespace {

// What one thread populates at a time: long enough for the kernel's
// readahead to issue large requests, short enough that several threads keep
// several in flight and that a reset or a stop waits for little.
constexpr std::size_t kPieceBytes = std::size_t{16} << 20;

// A shard whose pixels are at least this much resident is not read again.
constexpr double kResidentEnough = 0.98;

constexpr std::size_t kAllReady = std::numeric_limits<std::size_t>::max();

std::size_t pieces_of(std::size_t bytes) { return (bytes + kPieceBytes - 1) / kPieceBytes; }

}  // namespace

std::array<ShardPrefetch::Layer, 2> ShardPrefetch::layers(uint32_t shard) const {
  return {Layer{dataset_.shard_images(shard), dataset_.shard_images_offset(shard)},
          Layer{dataset_.shard_masks(shard), dataset_.shard_masks_offset(shard)}};
}

uint64_t ShardPrefetch::shard_bytes(uint32_t shard) const {
  uint64_t bytes = 0;
  for (const Layer& layer : layers(shard)) bytes += layer.bytes.size();
  return bytes;
}

ShardPrefetch::ShardPrefetch(Dataset dataset, Options options, std::function<void()> wake)
    : dataset_(std::move(dataset)),
      options_(options),
      wake_(std::move(wake)),
      holds_(dataset_.num_shards(), 0),
      evicting_(dataset_.num_shards(), false) {
  const unsigned threads = std::max(options_.threads, 1u);
  threads_.reserve(threads);
  try {
    for (unsigned t = 0; t < threads; ++t) threads_.emplace_back([this] { thread_main(); });
  } catch (...) {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
    throw;
  }
}

ShardPrefetch::~ShardPrefetch() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

ShardPrefetch::Plan& ShardPrefetch::add_plan(std::shared_ptr<const EpochBatches> work,
                                             std::size_t first) {
  Plan& plan = plans_.emplace_back();
  const std::size_t end = work->pad_from;
  std::vector<std::size_t> first_entry(dataset_.num_shards(), kAllReady);
  std::vector<std::size_t> last_entry(dataset_.num_shards(), 0);
  for (std::size_t e = first; e < end; ++e) {
    const uint32_t k = dataset_.record_shard(work->entries[e]);
    first_entry[k] = std::min(first_entry[k], e);
    last_entry[k] = e;
  }
  for (uint32_t k = 0; k < first_entry.size(); ++k) {
    if (first_entry[k] != kAllReady) plan.visits.push_back({k, first_entry[k], last_entry[k]});
  }
  std::sort(plan.visits.begin(), plan.visits.end(),
            [](const Visit& a, const Visit& b) { return a.first < b.first; });
  plan.claimed = plan.delivered = first;
  plan.work = std::move(work);
  update_frontier(plan);
  return plan;
}

void ShardPrefetch::reset(std::shared_ptr<const EpochBatches> current, std::size_t first) {
  {
    std::lock_guard lock(mu_);
    ++generation_;
    plans_.clear();
    job_.reset();
    std::fill(holds_.begin(), holds_.end(), 0);
    held_bytes_ = 0;
    error_ = nullptr;
    failed_ = false;
    add_plan(std::move(current), first);
  }
  cv_.notify_all();
}

void ShardPrefetch::append(std::shared_ptr<const EpochBatches> next) {
  {
    std::lock_guard lock(mu_);
    if (plans_.empty() || plans_.size() > 1) return;  // nothing current, or appended already
    add_plan(std::move(next), 0);
  }
  cv_.notify_all();
}

void ShardPrefetch::advance() {
  {
    std::lock_guard lock(mu_);
    if (plans_.empty()) return;
    // Everything of the current epoch was delivered, so every one of its
    // visits is loaded and finished; a job in progress is the next epoch's,
    // which stays where it is in the deque.
    Plan& done = plans_.front();
    finish_delivered(done, kAllReady);
    plans_.pop_front();
  }
  cv_.notify_all();
}

const ShardPrefetch::Plan* ShardPrefetch::find(const EpochBatches& work) const {
  for (const Plan& plan : plans_) {
    if (plan.work.get() == &work) return &plan;
  }
  return nullptr;
}

bool ShardPrefetch::ready(const EpochBatches& work, std::size_t end) const {
  if (failed_.load(std::memory_order_acquire)) return true;
  std::lock_guard lock(mu_);
  const Plan* plan = find(work);
  if (plan == nullptr) return true;  // not planned here: nothing to wait for
  return std::min(end, work.pad_from) <= plan->frontier;
}

void ShardPrefetch::claimed(const EpochBatches& work, std::size_t end) {
  bool wanted = false;
  {
    std::lock_guard lock(mu_);
    auto* plan = const_cast<Plan*>(find(work));
    if (plan == nullptr) return;
    plan->claimed = std::max(plan->claimed, end);
    wanted = plan->claimed + options_.unit_entries >= plan->frontier;
  }
  if (wanted) cv_.notify_all();
}

void ShardPrefetch::delivered(std::size_t end) {
  {
    std::lock_guard lock(mu_);
    if (plans_.empty()) return;
    Plan& plan = plans_.front();
    plan.delivered = std::max(plan.delivered, end);
    finish_delivered(plan, plan.delivered);
  }
  cv_.notify_all();
}

void ShardPrefetch::check() const {
  if (!failed_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(mu_);
  if (error_) std::rethrow_exception(error_);
}

void ShardPrefetch::finish_delivered(Plan& plan, std::size_t end) {
  for (Visit& v : plan.visits) {
    if (v.loaded && !v.finished && v.last < end) {
      v.finished = true;
      release(v.shard);
    }
  }
}

void ShardPrefetch::release(uint32_t shard) {
  if (--holds_[shard] > 0) return;
  held_bytes_ -= shard_bytes(shard);
  if (options_.evict_finished) to_evict_.push_back(shard);
}

void ShardPrefetch::update_frontier(Plan& plan) {
  const std::size_t frontier =
      plan.loaded < plan.visits.size() ? plan.visits[plan.loaded].first : kAllReady;
  plan.frontier.store(frontier, std::memory_order_release);
}

void ShardPrefetch::finish_visit(Plan& plan, std::size_t v) {
  Visit& visit = plan.visits[v];
  visit.loaded = true;
  if (holds_[visit.shard]++ == 0) held_bytes_ += shard_bytes(visit.shard);
  plan.loaded = v + 1;
  update_frontier(plan);
}

void ShardPrefetch::fail(std::exception_ptr error) {
  if (!error_) error_ = std::move(error);
  failed_.store(true, std::memory_order_release);
  job_.reset();
}

ShardPrefetch::Plan* ShardPrefetch::next_to_load() {
  if (failed_.load(std::memory_order_relaxed) || job_) return nullptr;
  for (Plan& plan : plans_) {
    if (plan.next_load >= plan.visits.size()) continue;  // all loaded: the next plan
    const Visit& visit = plan.visits[plan.next_load];
    if (evicting_[visit.shard]) return nullptr;  // after its eviction
    const uint64_t bytes = holds_[visit.shard] > 0 ? 0 : shard_bytes(visit.shard);
    const bool waited_for = plan.claimed + options_.unit_entries >= plan.frontier;
    if (held_bytes_ == 0 || held_bytes_ + bytes <= options_.budget || waited_for) return &plan;
    return nullptr;
  }
  return nullptr;
}

void ShardPrefetch::start_job(std::unique_lock<std::mutex>& lock, Plan& plan) {
  const std::size_t v = plan.next_load++;
  const uint32_t shard = plan.visits[v].shard;
  if (holds_[shard] > 0) {  // still in memory for a visit of the epoch before
    cached_visits_.fetch_add(1, std::memory_order_relaxed);
    finish_visit(plan, v);
    return;
  }
  const uint64_t generation = generation_;
  job_ = Job{generation, &plan, v};
  const uint64_t bytes = shard_bytes(shard);
  lock.unlock();
  std::exception_ptr error;
  uint64_t resident = 0;
  std::size_t pieces = 0;
  try {
    for (const Layer& layer : layers(shard)) {
      resident += resident_bytes(layer.bytes, dataset_.shard_path(shard));
      pieces += pieces_of(layer.bytes.size());
    }
  } catch (...) {
    error = std::current_exception();
  }
  lock.lock();
  if (generation != generation_) return;
  if (error) {
    fail(error);
  } else if (static_cast<double>(resident) >= kResidentEnough * static_cast<double>(bytes)) {
    job_.reset();
    cached_visits_.fetch_add(1, std::memory_order_relaxed);
    finish_visit(plan, v);
  } else {
    job_->pieces = pieces;
  }
}

void ShardPrefetch::thread_main() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] {
      return stop_ || !to_evict_.empty() || (job_ && job_->next_piece < job_->pieces) ||
             next_to_load() != nullptr;
    });
    if (stop_) return;
    if (!to_evict_.empty()) {
      const uint32_t shard = to_evict_.back();
      to_evict_.pop_back();
      if (holds_[shard] > 0) continue;  // wanted again already
      evicting_[shard] = true;
      lock.unlock();
      try {
        for (const Layer& layer : layers(shard)) {
          evict(layer.bytes, dataset_.shard_path(shard), layer.file_offset);
        }
      } catch (const std::exception&) {  // advice that failed costs memory, not correctness
      }
      lock.lock();
      evicting_[shard] = false;
      cv_.notify_all();
      continue;
    }
    const uint64_t generation = generation_;
    if (!job_) {
      Plan* plan = next_to_load();
      start_job(lock, *plan);
      if (generation == generation_ && !job_) {
        lock.unlock();
        wake_();
        lock.lock();
      }
      cv_.notify_all();
      continue;
    }
    Job& job = *job_;
    const std::size_t piece = job.next_piece++;
    const uint32_t shard = job.plan->visits[job.visit].shard;
    // Piece `piece` of the images' pieces, then the masks'.
    std::span<const uint8_t> bytes;
    std::size_t skip = piece;
    for (const Layer& layer : layers(shard)) {
      const std::size_t n = pieces_of(layer.bytes.size());
      if (skip < n) {
        const std::size_t begin = skip * kPieceBytes;
        bytes = layer.bytes.subspan(begin, std::min(kPieceBytes, layer.bytes.size() - begin));
        break;
      }
      skip -= n;
    }
    lock.unlock();
    std::exception_ptr error;
    try {
      populate(bytes, dataset_.shard_path(shard));
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (generation != generation_ || !job_) continue;
    if (error) {
      fail(error);
      lock.unlock();
      wake_();  // readers must reach check()
      lock.lock();
      continue;
    }
    populated_bytes_.fetch_add(bytes.size(), std::memory_order_relaxed);
    if (++job_->pieces_done < job_->pieces) continue;
    Plan& plan = *job_->plan;
    const std::size_t v = job_->visit;
    job_.reset();
    finish_visit(plan, v);
    lock.unlock();
    wake_();
    lock.lock();
    cv_.notify_all();
  }
}

}  // namespace imgpack::detail
