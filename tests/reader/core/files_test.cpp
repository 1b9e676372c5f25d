#include "files.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "imgpack/error.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

TEST(Files, WriteFileAtomicReplacesAndLeavesNoTemporary) {
  test::TempDir dir;
  write_file_atomic(dir / "a.json", "first");
  write_file_atomic(dir / "a.json", "second");
  EXPECT_EQ(test::read_bytes(dir / "a.json"), "second");
  EXPECT_FALSE(std::filesystem::exists(dir / "a.json.tmp"));
  EXPECT_EQ(file_length(dir / "a.json"), 6u);
}

// A file a user names for an output: a new or regular file is replaced
// whole, a link's target is written and the link stays (a dangling one too),
// and what is neither (a FIFO, as /dev/stdout may be) is written into, never
// replaced by a file.
TEST(Files, WriteOutputFileKeepsLinksDevicesAndPipes) {
  test::TempDir dir;
  write_output_file(dir / "new.csv", "a");
  EXPECT_EQ(test::read_bytes(dir / "new.csv"), "a");
  write_output_file(dir / "new.csv", "bc");
  EXPECT_EQ(test::read_bytes(dir / "new.csv"), "bc");

  std::filesystem::create_directory(dir / "sub");
  std::filesystem::create_symlink("sub/target.csv", dir / "link.csv");
  std::filesystem::create_symlink("link.csv", dir / "link-to-link.csv");
  write_output_file(dir / "link-to-link.csv", "first");
  write_output_file(dir / "link.csv", "second");
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "link.csv"));
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "link-to-link.csv"));
  EXPECT_EQ(test::read_bytes(dir / "sub" / "target.csv"), "second");
  EXPECT_FALSE(std::filesystem::exists(dir / "sub" / "target.csv.tmp"));

  std::filesystem::create_symlink("loop.csv", dir / "loop.csv");
  EXPECT_THROW(write_output_file(dir / "loop.csv", "x"), Error);
  try {
    write_output_file(dir / "sub", "x");
    FAIL() << "a directory was written";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sub: is a directory"), std::string::npos) << e.what();
  }

  const auto fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] {
    const int fd = ::open(fifo.c_str(), O_RDONLY | O_CLOEXEC);
    char buffer[64];
    for (ssize_t n = 0; fd >= 0 && (n = ::read(fd, buffer, sizeof buffer)) > 0;) {
      received.append(buffer, static_cast<std::size_t>(n));
    }
    if (fd >= 0) ::close(fd);
  });
  write_output_file(fifo, "path,fold\n");
  reader.join();
  EXPECT_EQ(received, "path,fold\n");
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced";
  EXPECT_FALSE(std::filesystem::exists(dir / "fifo.tmp"));
}

// Nothing of the user's beside an output is touched: a file named
// OUTPUT.tmp keeps its bytes, a link there is not followed, and no temporary
// file stays. A file of the program's own (write_file_atomic) replaces what a
// crash left under its temporary name, a link there included, without
// writing through it.
TEST(Files, TemporaryNamesNeverWriteThroughWhatIsThere) {
  test::TempDir dir;
  test::write_bytes(dir / "out.csv.tmp", "the user's notes");
  test::write_bytes(dir / "victim", "precious");
  std::filesystem::create_symlink("victim", dir / "out.png.tmp");
  write_output_file(dir / "out.csv", "path,fold\n");
  write_output_file(dir / "out.png", "png");
  EXPECT_EQ(test::read_bytes(dir / "out.csv"), "path,fold\n");
  EXPECT_EQ(test::read_bytes(dir / "out.png"), "png");
  EXPECT_FALSE(std::filesystem::is_symlink(dir / "out.png"));
  EXPECT_EQ(test::read_bytes(dir / "out.csv.tmp"), "the user's notes");
  EXPECT_EQ(test::read_bytes(dir / "victim"), "precious");
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "out.png.tmp"));
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"out.csv", "out.csv.tmp", "out.png", "out.png.tmp",
                                             "victim"}));

  // A name with no room for the suffix within the 255 bytes a name may have.
  const std::string longest(255, 'n');
  write_output_file(dir / longest, "long");
  EXPECT_EQ(test::read_bytes(dir / longest), "long");
  std::filesystem::remove(dir / longest);

  // A descriptor named by number (as /dev/stdout is, redirected by the
  // shell with >>) is written through, at its offset: the file it leads to
  // keeps what it held and its inode.
  test::write_bytes(dir / "log.csv", "# header\n");
  const int appending = ::open((dir / "log.csv").c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  ASSERT_GE(appending, 0);
  struct stat before {};
  ASSERT_EQ(::stat((dir / "log.csv").c_str(), &before), 0);
  write_output_file("/proc/self/fd/" + std::to_string(appending), "path,fold\n");
  ::close(appending);
  EXPECT_EQ(test::read_bytes(dir / "log.csv"), "# header\npath,fold\n");
  struct stat after {};
  ASSERT_EQ(::stat((dir / "log.csv").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);

  std::filesystem::create_symlink("victim", dir / "own.json.tmp");
  write_file_atomic(dir / "own.json", "{}");
  EXPECT_EQ(test::read_bytes(dir / "own.json"), "{}");
  EXPECT_EQ(test::read_bytes(dir / "victim"), "precious");
  EXPECT_FALSE(std::filesystem::exists(dir / "own.json.tmp"));
}

TEST(Files, ErrorsNameThePath) {
  test::TempDir dir;
  try {
    write_file_atomic(dir / "missing" / "a.json", "x");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing/a.json"), std::string::npos) << e.what();
  }
  EXPECT_THROW(file_length(dir / "nothing"), Error);
}

// A message holds all of what it was given, even a path or a line with a NUL
// byte in it (a binary file given as a list), which what() would end at.
TEST(Files, ErrorMessagesKeepWhatFollowsANulByte) {
  const std::string line("a\0b.jpg", 7);
  const UsageError e("list.txt: entry 1, '" + line + "', is not a sample");
  EXPECT_STREQ(e.what(), "list.txt: entry 1, 'a\\0b.jpg', is not a sample");
  EXPECT_STREQ(Error("plain").what(), "plain");
  EXPECT_STREQ(file_error("f" + line, "cannot open").what(), "fa\\0b.jpg: cannot open");
}

// The shard writer hands each write to start_writeback through a read-only
// descriptor of the file it writes; a hint that changes nothing, and never
// fails, whatever it is given.
TEST(Files, StartingWritebackLeavesTheFileAsItIsAndNeverFails) {
  test::TempDir dir;
  const std::string bytes(1 << 20, 'x');
  test::write_bytes(dir / "f", bytes);
  {
    FileDescriptor fd(dir / "f", O_RDONLY);
    start_writeback(fd.get(), 0, bytes.size());
    start_writeback(fd.get(), 4096, 8192);
    start_writeback(fd.get(), 1u << 30, 4096);  // past its end
  }
  start_writeback(-1, 0, 4096);
  EXPECT_EQ(test::read_bytes(dir / "f"), bytes);
}

// read_file() reads what a file holds whatever its kind: a regular file as
// its size says (all, or a prefix), and a pipe (as `--paths <(grep ...)`
// gives) or a /proc file, whose size says nothing, to its end.
TEST(Files, ReadFileReadsRegularFilesPipesAndProcFiles) {
  test::TempDir dir;
  const std::string text = "circle/a.jpg\nsquare/b.jpg\n";
  test::write_bytes(dir / "list.txt", text);
  std::vector<uint8_t> bytes;
  ASSERT_EQ(read_file(dir / "list.txt", bytes), "");
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), text);
  ASSERT_EQ(read_file(dir / "list.txt", bytes, 6), "");
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), "circle");
  test::write_bytes(dir / "empty", "");
  ASSERT_EQ(read_file(dir / "empty", bytes), "");
  EXPECT_TRUE(bytes.empty());

  // A pipe holding more than the first read step, read through /proc/self/fd.
  std::string piped;
  for (int i = 0; piped.size() < (200U << 10); ++i)
    piped += "class/" + std::to_string(i) + ".jpg\n";
  int ends[2];
  ASSERT_EQ(::pipe(ends), 0);
  std::thread writer([&] {
    std::size_t done = 0;
    while (done < piped.size()) {
      const ssize_t n = ::write(ends[1], piped.data() + done, piped.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::close(ends[1]);
  });
  const std::string problem = read_file("/proc/self/fd/" + std::to_string(ends[0]), bytes);
  writer.join();
  ::close(ends[0]);
  ASSERT_EQ(problem, "");
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), piped);

  struct stat st {};
  ASSERT_EQ(::stat("/proc/self/status", &st), 0);
  ASSERT_EQ(st.st_size, 0) << "a /proc file whose size is 0";
  ASSERT_EQ(read_file("/proc/self/status", bytes), "");
  EXPECT_NE(std::string(bytes.begin(), bytes.end()).find("Name:"), std::string::npos);

  EXPECT_NE(read_file(dir / "missing", bytes).find("cannot open: "), std::string::npos);
  EXPECT_NE(read_file(dir.path(), bytes).find("cannot read: "), std::string::npos);
}

// A process out of open files is no fault of the file: read_file() throws
// (a conversion stops, resumable) instead of returning a reason to skip it.
TEST(Files, ReadFileThrowsWhenTheProcessRunsOutOfOpenFiles) {
  if (test::kSanitizer) {
    // The runtime opens files of its own (its log, /proc/self/maps) while
    // every descriptor is taken, and dies of it; the plain build runs this.
    GTEST_SKIP() << "a sanitizer runtime needs descriptors of its own";
  }
  test::TempDir dir;
  test::write_bytes(dir / "a.jpg", "bytes");
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  rlimit low = old;
  low.rlim_cur = std::min<rlim_t>(old.rlim_cur, 256);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> taken;
  for (int fd = ::dup(0); fd >= 0; fd = ::dup(0)) taken.push_back(fd);
  const int error = errno;
  std::vector<uint8_t> bytes;
  std::string message;
  try {
    read_file(dir / "a.jpg", bytes);
  } catch (const ResourceShortage& e) {
    message = e.what();
  }
  // Every open of a file says so alike: a reader, verify, never "damaged".
  bool shortage = false;
  try {
    const FileDescriptor fd(dir / "a.jpg", O_RDONLY);
  } catch (const ResourceShortage&) {
    shortage = true;
  }
  for (int fd : taken) ::close(fd);
  EXPECT_TRUE(shortage);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  ASSERT_EQ(error, EMFILE);
  EXPECT_NE(message.find((dir / "a.jpg").string() + ": cannot open: "), std::string::npos)
      << message;
  EXPECT_NE(message.find("ulimit -n"), std::string::npos) << message;
  EXPECT_EQ(read_file(dir / "a.jpg", bytes), "");  // with files to spare, it reads
}

TEST(Files, OpenForReadingGivesSizeAndIdentityOfThatFile) {
  test::TempDir dir;
  write_file_atomic(dir / "a", "12345");
  const FileDescriptor a = open_for_reading(dir / "a");
  EXPECT_EQ(a.size(dir / "a"), 5u);
  const FileIdentity before = a.identity(dir / "a");
  EXPECT_EQ(open_for_reading(dir / "a").identity(dir / "a"), before);

  // Replaced by rename: the open descriptor keeps the old file, the path names a new one.
  write_file_atomic(dir / "a", "1234567");
  EXPECT_EQ(a.size(dir / "a"), 5u);
  const FileDescriptor replaced = open_for_reading(dir / "a");
  EXPECT_EQ(replaced.size(dir / "a"), 7u);
  EXPECT_NE(replaced.identity(dir / "a"), before);
}

TEST(Files, OpenForReadingRefusesWhatIsNotARegularFile) {
  test::TempDir dir;
  EXPECT_THROW(open_for_reading(dir / "nothing"), Error);
  // A FIFO where a file should be: open() must not block, size() refuses it.
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  const FileDescriptor fifo = open_for_reading(dir / "fifo");
  try {
    (void)fifo.size(dir / "fifo");
    FAIL() << "a FIFO was given a size";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "fifo").string() + ": not a regular file");
  }
}

TEST(Files, DirectoryLockIsExclusiveUntilReleased) {
  test::TempDir dir;
  std::optional<DirectoryLock> first = DirectoryLock::try_acquire(dir.path());
  ASSERT_TRUE(first);
  EXPECT_FALSE(DirectoryLock::try_acquire(dir.path()));
  std::optional<DirectoryLock> moved = std::move(first);
  first.reset();  // NOLINT(bugprone-use-after-move): a moved-from lock releases nothing
  EXPECT_FALSE(DirectoryLock::try_acquire(dir.path()));
  moved.reset();
  EXPECT_TRUE(DirectoryLock::try_acquire(dir.path()));
  { const DirectoryLock waited(dir.path()); }  // free: taken at once
  EXPECT_THROW(DirectoryLock(dir / "missing"), Error);
}

TEST(Files, SharedDirectoryLocksExcludeTheExclusiveOne) {
  test::TempDir dir;
  std::optional<DirectoryLock> one = DirectoryLock::try_acquire_shared(dir.path());
  std::optional<DirectoryLock> two = DirectoryLock::try_acquire_shared(dir.path());
  ASSERT_TRUE(one);
  ASSERT_TRUE(two) << "shared locks are held together";
  EXPECT_FALSE(DirectoryLock::try_acquire(dir.path()));
  one.reset();
  EXPECT_FALSE(DirectoryLock::try_acquire(dir.path())) << "one shared holder left";
  two.reset();
  std::optional<DirectoryLock> exclusive = DirectoryLock::try_acquire(dir.path());
  ASSERT_TRUE(exclusive);
  EXPECT_FALSE(DirectoryLock::try_acquire_shared(dir.path()));
  exclusive.reset();
  EXPECT_TRUE(DirectoryLock::try_acquire_shared(dir.path()));
}

}  // namespace
// A thread that could not start (std::thread's EAGAIN, oneTBB's words) is
// said to be a limit of the process or machine, with what to do; any other
// error gets no such note.
TEST(Files, AThreadThatCouldNotStartIsNamedAsALimit) {
  const std::system_error no_thread(
      std::make_error_code(std::errc::resource_unavailable_try_again));
  EXPECT_NE(thread_start_note(no_thread).find("ulimit -u"), std::string::npos);
  EXPECT_NE(thread_start_note(std::runtime_error("pthread_create has failed: Resource "
                                                 "temporarily unavailable"))
                .find("not a fault of any file"),
            std::string::npos);
  EXPECT_EQ(thread_start_note(std::runtime_error("something else")), "");
  EXPECT_EQ(thread_start_note(std::system_error(std::make_error_code(std::errc::io_error))), "");
}

}  // namespace imgpack
