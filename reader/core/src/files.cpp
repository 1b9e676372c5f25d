#include "files.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "imgpack/error.hpp"
#include "imgpack/format.hpp"

namespace imgpack {

FileDescriptor::FileDescriptor(const std::filesystem::path& path, int flags, unsigned mode)
    : fd_(::open(path.c_str(), flags | O_CLOEXEC, mode)) {
  if (fd_ < 0) {
    const int error = errno;
    if (is_resource_shortage(error)) throw_resource_shortage(path, "cannot open", error);
    throw system_error(path, "cannot open", error);
  }
}

void FileDescriptor::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

uint64_t FileDescriptor::size(const std::filesystem::path& path) const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw system_error(path, "cannot stat", errno);
  if (!S_ISREG(st.st_mode)) throw file_error(path, "not a regular file");
  return static_cast<uint64_t>(st.st_size);
}

FileIdentity FileDescriptor::identity_of(int fd, const std::filesystem::path& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw system_error(path, "cannot stat", errno);
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

FileDescriptor open_for_reading(const std::filesystem::path& path) {
  return FileDescriptor(path, O_RDONLY | O_NONBLOCK);
}

namespace {

// flock() with `operation`, retried on EINTR. False if another holder has it
// (LOCK_NB); true if held or if the file system cannot lock at all.
bool lock_directory(const FileDescriptor& fd, const std::filesystem::path& dir, int operation) {
  while (::flock(fd.get(), operation) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) return false;
    if (errno == ENOLCK || errno == EOPNOTSUPP || errno == EBADF) return true;  // cannot lock here
    throw system_error(dir, "cannot lock", errno);
  }
  return true;
}

}  // namespace

DirectoryLock::DirectoryLock(const std::filesystem::path& dir) : fd_(dir, O_RDONLY | O_DIRECTORY) {
  lock_directory(fd_, dir, LOCK_EX);
}

std::optional<DirectoryLock> DirectoryLock::try_acquire(const std::filesystem::path& dir) {
  FileDescriptor fd(dir, O_RDONLY | O_DIRECTORY);
  if (!lock_directory(fd, dir, LOCK_EX | LOCK_NB)) return std::nullopt;
  return DirectoryLock(std::move(fd));
}

std::optional<DirectoryLock> DirectoryLock::try_acquire_shared(const std::filesystem::path& dir) {
  FileDescriptor fd(dir, O_RDONLY | O_DIRECTORY);
  if (!lock_directory(fd, dir, LOCK_SH | LOCK_NB)) return std::nullopt;
  return DirectoryLock(std::move(fd));
}

DirectoryLock DirectoryLock::acquire_shared(const std::filesystem::path& dir) {
  FileDescriptor fd(dir, O_RDONLY | O_DIRECTORY);
  lock_directory(fd, dir, LOCK_SH);
  return DirectoryLock(std::move(fd));
}

std::optional<FileDescriptor> open_direct(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  if (fd >= 0) return FileDescriptor(fd);
  if (errno == EINVAL) return std::nullopt;
  throw system_error(path, "cannot open for reading", errno);
}

void FreeIoBuffer::operator()(uint8_t* p) const { std::free(p); }

IoBuffer allocate_io_buffer(std::size_t bytes) {
  constexpr std::size_t kBlock = 4096;
  constexpr std::size_t kHugePage = std::size_t{2} << 20;
  const bool huge = bytes >= kHugePage / 2;
  const std::size_t align = huge ? kHugePage : kBlock;
  const std::size_t size = (std::max<std::size_t>(bytes, 1) + align - 1) / align * align;
  void* memory = std::aligned_alloc(align, size);
  if (memory == nullptr) throw std::bad_alloc();
  // Advice only: without huge pages the buffer works, in smaller requests.
  if (huge) (void)::madvise(memory, size, MADV_HUGEPAGE);
  return IoBuffer(static_cast<uint8_t*>(memory));
}

std::size_t read_at(int fd, const std::filesystem::path& path, void* out, std::size_t length,
                    uint64_t offset) {
  auto* p = static_cast<uint8_t*>(out);
  std::size_t done = 0;
  while (done < length) {
    const ssize_t n = ::pread(fd, p + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw system_error(path, "read failed at byte " + std::to_string(offset + done), errno);
    }
    if (n == 0) break;  // end of file
    done += static_cast<std::size_t>(n);
  }
  return done;
}

void read_exact_at(int fd, const std::filesystem::path& path, void* out, std::size_t length,
                   uint64_t offset) {
  const std::size_t done = read_at(fd, path, out, length, offset);
  if (done < length) throw file_error(path, "truncated at byte " + std::to_string(offset + done));
}

void write_all(int fd, const std::filesystem::path& path, std::string_view bytes,
               const std::string& what) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw system_error(path, what, errno);
    done += static_cast<std::size_t>(n);
  }
}

void write_all_at(int fd, const std::filesystem::path& path, const void* data, std::size_t size,
                  uint64_t offset, const std::string& what) {
  const auto* p = static_cast<const uint8_t*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(fd, p + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw system_error(path, what, errno);
    done += static_cast<std::size_t>(n);
  }
}

std::string thread_start_note(const std::exception& e) {
  const auto* system = dynamic_cast<const std::system_error*>(&e);
  const bool thread =
      (system != nullptr && system->code() == std::errc::resource_unavailable_try_again) ||
      std::string_view(e.what()).starts_with("pthread_create");  // oneTBB's words
  if (!thread) return "";
  return " (starting a thread: the limit of processes and threads, ulimit -u, or memory ran "
         "short, not a fault of any file; use fewer threads or raise the limit, then run again)";
}

bool is_resource_shortage(int error) {
  return error == EMFILE || error == ENFILE || error == ENOMEM;
}

void throw_resource_shortage(const std::filesystem::path& path, const std::string& what,
                             int error) {
  throw ResourceShortage(
      path.string() + ": " + what + ": " + std::strerror(error) +
      (error == ENOMEM ? " (the machine ran short of memory, not a fault of the file: free memory "
                         "or use fewer threads, then run again)"
                       : " (a limit of this process or of the system, not a fault of the file: "
                         "raise the open-file limit, ulimit -n, or use fewer threads, then run "
                         "again)"));
}

std::string read_file(const std::filesystem::path& path, std::vector<uint8_t>& out,
                      std::size_t prefix) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    const int error = errno;
    if (is_resource_shortage(error)) throw_resource_shortage(path, "cannot open", error);
    return std::string("cannot open: ") + std::strerror(error);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return std::string("cannot stat: ") + std::strerror(errno);
  const auto size = static_cast<uint64_t>(st.st_size);
  const uint64_t limit = prefix > 0 ? prefix : kMaxInputBytes;
  const auto too_large = [](uint64_t bytes) {
    return "file is " + std::to_string(bytes >> 20) +
           " MiB, more than the 2048 MiB imgpack reads of one input (image, list or annotations)";
  };
  if (prefix == 0 && size > kMaxInputBytes) return too_large(size);
  // A size to trust, or reading on until the end, in growing steps.
  const bool sized = S_ISREG(st.st_mode) && size > 0;
  out.resize(sized ? std::min(size, limit) : std::min<uint64_t>(limit, 64 << 10));
  std::size_t done = 0;
  while (true) {
    if (done == out.size()) {
      if (sized || done == limit) break;
      out.resize(std::min<uint64_t>(limit, uint64_t{done} * 2));
    }
    const ssize_t n = ::read(fd.get(), out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      if (is_resource_shortage(error)) throw_resource_shortage(path, "cannot read", error);
      return std::string("cannot read: ") + std::strerror(error);
    }
    if (n == 0) break;  // the end (for a sized file: it shrank while reading)
    done += static_cast<std::size_t>(n);
  }
  if (!sized && prefix == 0 && done == limit) {
    // Full to the limit: only a file past it, or one at it exactly, stops here.
    char more = 0;
    ssize_t n = 0;
    do {
      n = ::read(fd.get(), &more, 1);
    } while (n < 0 && errno == EINTR);
    if (n > 0) {
      return "reads on past 2048 MiB (a device or stream without end?), more than imgpack "
             "reads of one input (image, list or annotations)";
    }
  }
  out.resize(done);
  return "";
}

void fsync_path(const std::filesystem::path& path) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw system_error(path, "cannot open to fsync", errno);
  // Directories on some file systems refuse fsync with EINVAL; nothing more can be done there.
  if (::fsync(fd.get()) != 0 && errno != EINVAL) throw system_error(path, "fsync failed", errno);
}

void start_writeback(int fd, uint64_t offset, uint64_t length) {
#if defined(__linux__)
  (void)::sync_file_range(fd, static_cast<off64_t>(offset), static_cast<off64_t>(length),
                          SYNC_FILE_RANGE_WRITE);
#else
  (void)fd;
  (void)offset;
  (void)length;
#endif
}

void commit_file(const std::filesystem::path& from, const std::filesystem::path& to) {
  fsync_path(from);
  if (::rename(from.c_str(), to.c_str()) != 0) {
    throw system_error(to, "cannot rename " + from.filename().string() + " into place", errno);
  }
  std::filesystem::path dir = to.parent_path();
  fsync_path(dir.empty() ? std::filesystem::path(".") : dir);
}

void write_file(const std::filesystem::path& path, std::string_view contents) {
  FileDescriptor fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) throw system_error(path, "cannot create", errno);
  write_all(fd.get(), path, contents);
  if (::close(fd.release()) != 0) throw system_error(path, "close failed", errno);
}

namespace {

// Writes `contents` to `tmp` (just made, open as `fd`) and puts it in place
// of `path`; `tmp` is removed wherever that fails.
void commit_contents(FileDescriptor fd, const std::filesystem::path& tmp,
                     const std::filesystem::path& path, std::string_view contents,
                     Durability durability, std::string_view written_point = {}) {
  try {
    write_all(fd.get(), tmp, contents);
  } catch (const Error&) {
    ::unlink(tmp.c_str());
    throw;
  }
  if (!written_point.empty()) crash_point(written_point);
  if (durability == Durability::synced && ::fsync(fd.get()) != 0) {
    int saved = errno;
    ::unlink(tmp.c_str());
    throw system_error(tmp, "fsync failed", saved);
  }
  if (::close(fd.release()) != 0) {
    int saved = errno;
    ::unlink(tmp.c_str());
    throw system_error(tmp, "close failed", saved);
  }
  if (durability == Durability::synced) {
    try {
      commit_file(tmp, path);
    } catch (const Error&) {
      ::unlink(tmp.c_str());  // gone already where the rename succeeded
      throw;
    }
  } else if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int saved = errno;
    ::unlink(tmp.c_str());
    throw system_error(path, "cannot rename " + tmp.filename().string() + " into place", saved);
  }
}

// The longest file name most file systems take (NAME_MAX).
constexpr std::size_t kLongestName = 255;

// Made new, never followed: a link or a file planted under the name fails
// the open rather than being written through.
constexpr int kNewFileFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;

// The temporary files write_output_file() is writing, for
// remove_temporary_outputs(): each slot a name of its own (malloc'ed), or
// null. Lock-free, so a signal handler may take them.
constexpr std::size_t kOutputSlots = 16;
std::array<std::atomic<char*>, kOutputSlots> g_outputs_in_flight{};
static_assert(std::atomic<char*>::is_always_lock_free);

// Lists `path` in g_outputs_in_flight while it lives (where a slot is free).
class OutputInFlight {
 public:
  explicit OutputInFlight(const std::filesystem::path& path) : name_(::strdup(path.c_str())) {
    if (name_ == nullptr) return;
    for (std::atomic<char*>& slot : g_outputs_in_flight) {
      char* empty = nullptr;
      if (slot.compare_exchange_strong(empty, name_)) {
        slot_ = &slot;
        return;
      }
    }
  }
  ~OutputInFlight() {
    // A handler that took the name may still be using it: then it stays.
    if (slot_ != nullptr && slot_->exchange(nullptr) == nullptr) return;
    std::free(name_);  // NOLINT(cppcoreguidelines-no-malloc): strdup's
  }
  OutputInFlight(const OutputInFlight&) = delete;
  OutputInFlight& operator=(const OutputInFlight&) = delete;

 private:
  char* name_;
  std::atomic<char*>* slot_ = nullptr;
};

}  // namespace

void write_file_atomic(const std::filesystem::path& path, std::string_view contents,
                       Durability durability) {
  std::filesystem::path tmp = path;
  tmp += format::kTmpSuffix;
  // One a crash left is removed (a link itself, not what it leads to).
  if (::unlink(tmp.c_str()) != 0 && errno != ENOENT) {
    throw system_error(tmp, "cannot remove the temporary file left there", errno);
  }
  FileDescriptor fd(::open(tmp.c_str(), kNewFileFlags, 0644));
  if (!fd) throw system_error(tmp, "cannot create", errno);
  commit_contents(std::move(fd), tmp, path, contents, durability);
}

void remove_temporary_outputs() noexcept {
  for (std::atomic<char*>& slot : g_outputs_in_flight) {
    if (char* name = slot.exchange(nullptr)) ::unlink(name);
  }
}

void require_dataset_directory(const std::filesystem::path& dir) {
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return;
  throw file_error(dir, std::filesystem::exists(dir, ec)
                            ? "not a directory (a dataset is the folder holding " +
                                  std::string(format::kIndexFile) + ")"
                            : std::string("no such dataset directory"));
}

namespace {

// The descriptor a path names by number (/dev/stdout, /dev/stderr,
// /dev/fd/N, /proc/self/fd/N), else -1.
int named_descriptor(const std::filesystem::path& path) {
  const std::string& name = path.native();
  if (name == "/dev/stdout") return STDOUT_FILENO;
  if (name == "/dev/stderr") return STDERR_FILENO;
  for (const std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (!name.starts_with(prefix) || name.size() == prefix.size()) continue;
    int fd = 0;
    for (const char c : std::string_view(name).substr(prefix.size())) {
      if (c < '0' || c > '9' || fd > 100000) return -1;
      fd = fd * 10 + (c - '0');
    }
    return fd;
  }
  return -1;
}

}  // namespace

void write_output_file(const std::filesystem::path& path, std::string_view contents) {
  // Written to the descriptor itself, where the shell opened it: the file
  // it leads to is not replaced, nor, opened for appending, written over.
  if (const int fd = named_descriptor(path); fd >= 0) {
    if (::fcntl(fd, F_GETFD) == -1) throw system_error(path, "cannot write", errno);
    write_all(fd, path, contents);
    return;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) throw file_error(path, "is a directory");
    // Renaming over a device or a FIFO would replace it with a file.
    FileDescriptor fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) throw system_error(path, "cannot open", errno);
    write_all(fd.get(), path, contents);
    if (::close(fd.release()) != 0) throw system_error(path, "close failed", errno);
    return;
  }
  // The file a link leads to (or will: a dangling link's target is made),
  // written beside itself: renaming over the link would replace it.
  std::filesystem::path target = path;
  for (int links = 0; ::lstat(target.c_str(), &st) == 0 && S_ISLNK(st.st_mode); ++links) {
    if (links == 40) throw system_error(path, "cannot follow the link", ELOOP);
    std::error_code error;
    const std::filesystem::path next = std::filesystem::read_symlink(target, error);
    if (error) throw system_error(target, "cannot read the link", error.value());
    target = next.is_absolute() ? next : target.parent_path() / next;
  }
  // Written aside under a name of this process's own, made new: a file the
  // user has under TARGET.tmp is never touched, nor a link there followed.
  // Listed before it exists, so that an interrupt removes it whenever it comes.
  std::filesystem::path tmp;
  std::optional<OutputInFlight> in_flight;
  FileDescriptor fd;
  for (int attempt = 0; !fd; ++attempt) {
    // Appended piecewise: GCC 12 at -O3 reports a false -Wrestrict on "." + std::to_string().
    std::string suffix(1, '.');
    suffix += std::to_string(::getpid());
    if (attempt > 0) suffix.append(1, '-').append(std::to_string(attempt));
    suffix += format::kTmpSuffix;
    tmp = target;
    // A name near the file system's limit (255 bytes) has no room for the
    // suffix: the temporary file then takes a short name of its own.
    if (target.filename().native().size() + suffix.size() > kLongestName) {
      tmp.replace_filename("imgpack-output");
    }
    tmp += suffix;
    in_flight.reset();
    in_flight.emplace(tmp);
    const int opened = ::open(tmp.c_str(), kNewFileFlags, 0644);
    if (opened >= 0) {
      fd = FileDescriptor(opened);
    } else if (errno != EEXIST || attempt == 100) {
      throw system_error(tmp, "cannot create", errno);
    }
  }
  commit_contents(std::move(fd), tmp, target, contents, Durability::synced, "output-written");
}

uint64_t file_length(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw system_error(path, "cannot stat", errno);
  return static_cast<uint64_t>(st.st_size);
}

void crash_point(std::string_view name, uint64_t count) {
  static const std::string target = [] {
    const char* value = std::getenv("IMGPACK_CRASH_AT");
    return std::string(value != nullptr ? value : "");
  }();
  if (target.empty() || !target.starts_with(name)) return;
  std::string_view rest = std::string_view(target).substr(name.size());
  // Compared piecewise: GCC 12 at -O3 reports a false -Wrestrict on `":" + std::to_string(count)`.
  if (rest.empty() || (rest.starts_with(':') && rest.substr(1) == std::to_string(count))) {
    static const int signal = [] {
      const char* value = std::getenv("IMGPACK_CRASH_SIGNAL");
      const std::string_view chosen = value != nullptr ? value : "";
      if (chosen == "INT") return SIGINT;
      if (chosen == "TERM") return SIGTERM;
      if (chosen == "HUP") return SIGHUP;
      return SIGKILL;
    }();
    std::raise(signal);
    std::raise(SIGKILL);  // a signal handled, ignored or blocked: stop all the same
  }
}

}  // namespace imgpack
