#include "fork_guard.hpp"

#include <pthread.h>

#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

namespace imgpack::detail {

namespace {

std::atomic<uint64_t> forks{0};

void count_fork_in_child() { forks.fetch_add(1, std::memory_order_relaxed); }

}  // namespace

uint64_t fork_generation() {
  static const int registered = ::pthread_atfork(nullptr, nullptr, count_fork_in_child);
  (void)registered;
  return forks.load(std::memory_order_relaxed);
}

void abandon(std::shared_ptr<void> object) {
  // Never destroyed: the process ends without running what the objects would.
  static auto* const kept = new std::vector<std::shared_ptr<void>>();
  static std::mutex mu;
  const std::lock_guard lock(mu);
  kept->push_back(std::move(object));
}

}  // namespace imgpack::detail
