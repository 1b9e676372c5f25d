// Telling ThreadSanitizer about the ordering oneTBB guarantees (internal).
//
// oneTBB starts tasks, hands pipeline items from filter to filter and orders
// the calls of a serial filter with atomics and futexes inside libtbb, which
// is not built with ThreadSanitizer. TSan sees none of it and reports a data
// race at every hand-off. A suppression cannot tell those apart from real
// races: every stack of a filter or loop body passes through libtbb and the
// same filter frames. So the code states the edges TBB provides instead, and
// TSan keeps checking everything else, races between two bodies included:
//
//   ForkJoinBody probe([&](std::size_t i) { ... });   // a parallel_for body
//   probe.fork();
//   tbb::parallel_for(first, last, probe);
//   probe.join();
//
// and, in a pipeline, a ForkJoin region with a TaskScope at the top of every
// filter, Handoff on the item (every filter) and on the filter's own state
// (serial filters). Outside a TSan build all of it compiles to nothing.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define IMGPACK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define IMGPACK_TSAN 1
#endif
#endif

#include <utility>

#if defined(IMGPACK_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace imgpack::tsan {

inline void acquire([[maybe_unused]] const void* sync) {
#if defined(IMGPACK_TSAN)
  __tsan_acquire(const_cast<void*>(sync));
#endif
}

inline void release([[maybe_unused]] const void* sync) {
#if defined(IMGPACK_TSAN)
  __tsan_release(const_cast<void*>(sync));
#endif
}

// What every ForkJoin also releases at fork(), for a filter body to acquire
// before it reads anything of itself: TBB calls its own copy of a lambda
// body, and finding the region means reading a capture of that copy, which
// the region's own edge comes too late to order (a worker started by an
// earlier pipeline has no other edge to the copying).
inline char bodies_built = 0;

// At the top of a filter body, before its captures are read.
inline void enter_body() { acquire(&bodies_built); }

// A pipeline's fork and join: what the calling thread did before fork()
// happens before every filter call, and every filter call happens before
// what the caller does after join(). Calls are not ordered among themselves
// (Handoff states the order TBB does give).
class ForkJoin {
 public:
  ForkJoin() = default;
  ~ForkJoin() { join(); }
  ForkJoin(const ForkJoin&) = delete;
  ForkJoin& operator=(const ForkJoin&) = delete;
  // Pass what the workers will read that was built just before (the filter
  // chain): handing its address to TSan makes the compiler finish building
  // it first.
  void fork([[maybe_unused]] const auto&... built) const {
    (release(&built), ...);
    release(&bodies_built);
    release(&start_);
  }
  void join() const { acquire(&end_); }

 private:
  friend class TaskScope;
  char start_ = 0;
  char end_ = 0;
};

// One body of a ForkJoin region, for its whole scope.
class TaskScope {
 public:
  explicit TaskScope(const ForkJoin& region) : region_(region) { acquire(&region_.start_); }
  ~TaskScope() { release(&region_.end_); }
  TaskScope(const TaskScope&) = delete;
  TaskScope& operator=(const TaskScope&) = delete;

 private:
  const ForkJoin& region_;
};

// Ordered use of one object by successive filters or calls: acquire on entry,
// release on exit. On a pipeline item it is TBB's item hand-off (filter i
// finished with the item before filter i+1 gets it, and the last filter
// before the input filter reuses its token); on a serial filter's state it
// is TBB's one-call-at-a-time guarantee.
class Handoff {
 public:
  explicit Handoff(const void* object) : object_(object) { acquire(object_); }
  ~Handoff() { release(object_); }
  Handoff(const Handoff&) = delete;
  Handoff& operator=(const Handoff&) = delete;

 private:
  const void* object_;
};

// A parallel_for body with the same fork and join. parallel_for(first, last,
// body) calls the body in place, by reference, so the body's own address
// names the fork (and the byte after it the join): each call acquires it
// before reading anything of the body, captures included. (A body copied by
// TBB, as the Range overloads do, would need a ForkJoin instead.)
template <class Body>
class ForkJoinBody {
 public:
  explicit ForkJoinBody(Body body) : body_(std::move(body)) {}
  ~ForkJoinBody() { join(); }
  ForkJoinBody(const ForkJoinBody&) = delete;
  ForkJoinBody& operator=(const ForkJoinBody&) = delete;

  void fork() const { release(start()); }
  void join() const { acquire(end()); }

  template <class... Args>
  void operator()(Args&&... args) const {
    acquire(start());
    const Done done{end()};
    body_(std::forward<Args>(args)...);
  }

 private:
  struct Done {
    const void* sync;
    ~Done() { release(sync); }
  };
  const void* start() const { return this; }
  const void* end() const { return reinterpret_cast<const char*>(this) + 1; }

  Body body_;
};

}  // namespace imgpack::tsan
