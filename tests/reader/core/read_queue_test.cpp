// ReadQueue: reads in flight through io_uring, or one by one where it is
// missing; the same results either way.
#include "read_queue.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "imgpack/error.hpp"
#include "test_support.hpp"

namespace imgpack::detail {
namespace {

class ReadQueueTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    bytes_.resize(std::size_t{64} * 1024);
    std::iota(bytes_.begin(), bytes_.end(), uint8_t{7});
    path_ = dir_ / "file";
    test::write_bytes(path_, std::string(bytes_.begin(), bytes_.end()));
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
  }

  test::TempDir dir_;
  std::filesystem::path path_;
  std::vector<uint8_t> bytes_;
  int fd_ = -1;
};

// Every read of many in flight lands where it was asked to, reported once
// with its tag and its length; a read past the end is short, one at the end
// returns 0.
TEST_P(ReadQueueTest, CompletesEveryReadWithItsTag) {
  ReadQueue queue(8, GetParam());
  if (GetParam() && !queue.asynchronous()) GTEST_SKIP() << "no io_uring on this kernel";
  EXPECT_FALSE(!GetParam() && queue.asynchronous());
  constexpr std::size_t kPiece = 3000;                    // not a multiple of any block
  const std::size_t pieces = bytes_.size() / kPiece + 2;  // the last two: short, then empty
  std::vector<std::vector<uint8_t>> buffers(pieces, std::vector<uint8_t>(kPiece, 0));
  std::map<uint64_t, ssize_t> results;
  std::size_t next = 0;
  while (next < pieces || queue.pending() > 0) {
    while (next < pieces && queue.pending() < queue.depth()) {
      queue.submit(fd_, buffers[next].data(), kPiece, next * kPiece, next);
      ++next;
    }
    const ReadCompletion done = queue.next();
    EXPECT_TRUE(results.emplace(done.tag, done.result).second) << "tag " << done.tag << " twice";
  }
  ASSERT_EQ(results.size(), pieces);
  for (std::size_t i = 0; i < pieces; ++i) {
    const std::size_t begin = std::min(i * kPiece, bytes_.size());
    const std::size_t expected = std::min(bytes_.size() - begin, kPiece);
    ASSERT_EQ(results[i], static_cast<ssize_t>(expected)) << "read " << i;
    EXPECT_TRUE(std::equal(buffers[i].begin(), buffers[i].begin() + static_cast<long>(expected),
                           bytes_.begin() + static_cast<long>(begin)))
        << "read " << i;
  }
}

// Errors come back as -errno in the completion, not as exceptions.
TEST_P(ReadQueueTest, ReportsAFailedReadAsMinusErrno) {
  ReadQueue queue(2, GetParam());
  std::vector<uint8_t> buffer(16);
  const int closed = ::dup(fd_);
  ::close(closed);
  queue.submit(closed, buffer.data(), buffer.size(), 0, 42);
  const ReadCompletion done = queue.next();
  EXPECT_EQ(done.tag, 42u);
  EXPECT_EQ(done.result, -EBADF);
  EXPECT_EQ(queue.pending(), 0u);
  EXPECT_THROW((void)queue.next(), Error);  // nothing pending
}

// More reads than the depth are refused rather than overrunning the rings.
TEST_P(ReadQueueTest, RefusesMoreReadsThanItsDepth) {
  ReadQueue queue(2, GetParam());
  std::vector<uint8_t> buffer(std::size_t{3} * 16);
  queue.submit(fd_, buffer.data(), 16, 0, 0);
  queue.submit(fd_, buffer.data() + 16, 16, 16, 1);
  EXPECT_THROW(queue.submit(fd_, buffer.data() + 32, 16, 32, 2), Error);
  // Destroying the queue with reads in flight waits for them.
}

INSTANTIATE_TEST_SUITE_P(Modes, ReadQueueTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& mode) {
                           return mode.param ? "IoUring" : "Synchronous";
                         });

}  // namespace
}  // namespace imgpack::detail
