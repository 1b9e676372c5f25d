#include "conversion/read_ahead.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace imgpack {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Waits up to 10 s for the walk to reach `position`.
bool walks_to(const ReadAhead& ahead, uint64_t position) {
  for (int i = 0; i < 1000 && ahead.walked() < position; ++i) std::this_thread::sleep_for(10ms);
  return ahead.walked() == position;
}

// The walk asks for each position once, in order, from `first`, never more
// than `window` past what the consumer has taken, in bursts of at least half
// a window (or the rest), and passes over positions without a path and files
// that cannot be opened.
TEST(ReadAhead, WalksInOrderAtMostAWindowAheadOfTheConsumer) {
  test::TempDir dir;
  for (int i = 0; i < 20; ++i) test::write_bytes(dir / ("f" + std::to_string(i)), "bytes");
  std::mutex mutex;
  std::vector<uint64_t> asked;
  {
    ReadAhead ahead(
        [&](uint64_t i) {
          std::lock_guard<std::mutex> lock(mutex);
          asked.push_back(i);
          if (i % 5 == 3) return fs::path();   // not worth it
          if (i == 7) return dir / "missing";  // cannot be opened
          return dir / ("f" + std::to_string(i));
        },
        2, 20, 4);
    ASSERT_TRUE(walks_to(ahead, 6));
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(ahead.walked(), 6u) << "past the window with nothing taken";
    ahead.taken(2);  // one position free: not yet half the window
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(ahead.walked(), 6u) << "woken for less than half the window";
    ahead.taken(3);
    ASSERT_TRUE(walks_to(ahead, 8));
    ahead.taken(5);
    ASSERT_TRUE(walks_to(ahead, 10));
    ahead.taken(14);
    ASSERT_TRUE(walks_to(ahead, 19));
    ahead.taken(15);  // the last position: the rest, however short
    ASSERT_TRUE(walks_to(ahead, 20));
  }
  std::vector<uint64_t> expected;
  for (uint64_t i = 2; i < 20; ++i) expected.push_back(i);
  EXPECT_EQ(asked, expected);
}

// Destroyed with the walk under way or waiting, it stops and joins.
TEST(ReadAhead, StopsWhenDestroyedMidWalk) {
  test::TempDir dir;
  test::write_bytes(dir / "f", "bytes");
  {
    ReadAhead waiting([&](uint64_t) { return dir / "f"; }, 0, 1000, 3);
    ASSERT_TRUE(walks_to(waiting, 3));
  }
  {
    ReadAhead busy(
        [&](uint64_t) {
          std::this_thread::sleep_for(1ms);
          return dir / "f";
        },
        0, 1000000, 1000000);
  }
  ReadAhead nothing([&](uint64_t) { return dir / "f"; }, 5, 5, 8);
  EXPECT_EQ(nothing.walked(), 5u);
}

}  // namespace
}  // namespace imgpack
