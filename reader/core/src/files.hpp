// Small POSIX file helpers: descriptors, whole reads and writes that retry
// interrupted and short calls, and crash-safe output (internal to imgpack).
//
// Crash safety in imgpack means: write NAME.tmp, close it, fsync it, rename it
// to NAME, fsync the directory. A reader then sees either the old file or the
// complete new one, never a torn one. All functions throw imgpack::Error
// naming the path on failure, unless they say otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "imgpack/error.hpp"

namespace imgpack {

// Which file a descriptor refers to (st_dev, st_ino): tells the file that was
// checked from another one renamed into its place since.
struct FileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  bool operator==(const FileIdentity&) const = default;
};

// Owns a POSIX file descriptor and closes it on destruction. Move-only.
class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd_(fd) {}
  // open(2) with O_CLOEXEC added; throws imgpack::Error naming `path` on failure.
  FileDescriptor(const std::filesystem::path& path, int flags, unsigned mode = 0644);
  ~FileDescriptor() { reset(); }
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.release()) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = other.release();
    }
    return *this;
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset();

  // From fstat(); both throw imgpack::Error naming `path` on failure. size()
  // also refuses anything but a regular file (a FIFO, a device).
  uint64_t size(const std::filesystem::path& path) const;
  FileIdentity identity(const std::filesystem::path& path) const { return identity_of(fd_, path); }
  // The identity of the file open as `fd`; throws naming `path` if fstat fails.
  static FileIdentity identity_of(int fd, const std::filesystem::path& path);

 private:
  int fd_ = -1;
};

// Opens an existing file read-only to check or map it. O_NONBLOCK: a FIFO put
// where a shard should be must not block open(); size() then refuses it.
// Throws imgpack::Error naming `path` on failure.
FileDescriptor open_for_reading(const std::filesystem::path& path);

// An exclusive advisory lock (flock) on a directory, for a read-modify-write
// of a file in it: `imgpack split` holds one on the dataset directory while
// it reads, changes and replaces index.h5, so concurrent runs take turns
// instead of one silently dropping the other's split. Released on
// destruction, or when the process dies. On a file system without flock
// (some NFS set-ups) it locks nothing. Move-only; not for sharing between
// threads.
class DirectoryLock {
 public:
  // Waits until the lock is held. Throws imgpack::Error naming `dir` if it
  // cannot be opened.
  explicit DirectoryLock(const std::filesystem::path& dir);
  // The lock if no one else holds it now, else std::nullopt (never waits).
  static std::optional<DirectoryLock> try_acquire(const std::filesystem::path& dir);
  // A shared lock if no one holds the exclusive one now, else std::nullopt
  // (never waits): any number of holders at once, and none of the exclusive
  // lock meanwhile. The parts of a conversion hold it on OUT while they
  // convert, so that no conversion in one piece, merge or split runs there
  // beside them.
  static std::optional<DirectoryLock> try_acquire_shared(const std::filesystem::path& dir);
  // The shared lock, waiting while another holds the exclusive one.
  static DirectoryLock acquire_shared(const std::filesystem::path& dir);

 private:
  explicit DirectoryLock(FileDescriptor fd) : fd_(std::move(fd)) {}
  FileDescriptor fd_;
};

// O_DIRECT's alignment of offsets, lengths and buffers (the logical block
// size of most devices is 512 or 4096; 4096 serves both).
inline constexpr std::size_t kDirectAlign = 4096;
inline uint64_t align_down(uint64_t n) { return n / kDirectAlign * kDirectAlign; }
inline uint64_t align_up(uint64_t n) { return align_down(n + kDirectAlign - 1); }

// Opens `path` read-only with O_DIRECT, or returns nothing where its file
// system refuses O_DIRECT (EINVAL: tmpfs, some FUSE file systems). Throws
// imgpack::Error naming `path` on any other failure.
std::optional<FileDescriptor> open_direct(const std::filesystem::path& path);

// Memory for O_DIRECT reads: aligned to 4096 bytes and, from 1 MiB up, to
// 2 MiB and backed by transparent huge pages where the kernel has them
// (madvise(MADV_HUGEPAGE); its size is then rounded up to 2 MiB). A direct
// read takes one segment per physical page of its buffer: into 4 KiB pages a
// 4 MiB read needs 1024 and is split into several requests (virtio-blk takes
// 254 per request, NVMe drives often fewer), into 2 MiB pages it needs three.
// Throws std::bad_alloc.
struct FreeIoBuffer {
  void operator()(uint8_t* p) const;
};
using IoBuffer = std::unique_ptr<uint8_t[], FreeIoBuffer>;
IoBuffer allocate_io_buffer(std::size_t bytes);

// Reads up to `length` bytes at `offset` of `fd` into `out`, retrying
// interrupted and short reads, and returns how many it read: `length`, or
// fewer only where the file ends. Throws "PATH: read failed at byte N: REASON".
std::size_t read_at(int fd, const std::filesystem::path& path, void* out, std::size_t length,
                    uint64_t offset);

// Reads exactly `length` bytes at `offset`; the file ending first is an
// error too ("PATH: truncated at byte N").
void read_exact_at(int fd, const std::filesystem::path& path, void* out, std::size_t length,
                   uint64_t offset);

// Writes all of `bytes` to `fd` at its file position (or at `offset` with
// write_all_at), retrying interrupted and short writes. Throws
// "PATH: WHAT: REASON" on failure.
void write_all(int fd, const std::filesystem::path& path, std::string_view bytes,
               const std::string& what = "write failed");
void write_all_at(int fd, const std::filesystem::path& path, const void* data, std::size_t size,
                  uint64_t offset, const std::string& what = "write failed");

// The process or the machine ran short (open files, memory): no fault of
// the file named, so never a reason to skip it or to call it damaged.
class ResourceShortage : public Error {
 public:
  using Error::Error;
};

// True for an errno that says the process or the machine ran short (open
// files, memory), not that the file is at fault: a conversion stops on it
// rather than skipping the input, so that what a dataset holds never
// depends on what else ran at the time.
bool is_resource_shortage(int error);

// Throws ResourceShortage "PATH: WHAT: REASON (...)" for such a shortage,
// saying what to raise.
[[noreturn]] void throw_resource_shortage(const std::filesystem::path& path,
                                          const std::string& what, int error);

// For an exception a thread that could not start threw (std::thread's
// std::system_error EAGAIN; oneTBB's "pthread_create has failed"): " (starting
// a thread: ...)", saying it is a limit of the process or the machine, not
// a fault of any file, and what to do; else "".
std::string thread_start_note(const std::exception& e);

// Inputs larger than this are refused unread by read_file(): no image needs
// it, and reading it whole would hold that much memory per thread.
inline constexpr uint64_t kMaxInputBytes = uint64_t{2} << 30;

// Reads the file at `path` into `out`, reusing its capacity: all of it
// (refusing files over kMaxInputBytes), or only its first `prefix` bytes
// when prefix > 0; a file that shrinks meanwhile yields what was there. A
// regular file is read as long as its size says; anything else (a pipe, as
// `--paths <(grep ...)` gives, a device) and a regular file whose size says
// 0 (/proc) until its end. For inputs that are skipped rather than fatal, it
// returns "" or the reason it failed, without the path ("cannot open: No
// such file or directory"); it throws (throw_resource_shortage()) only when
// the process runs short of open files or memory, which is no fault of the
// file.
std::string read_file(const std::filesystem::path& path, std::vector<uint8_t>& out,
                      std::size_t prefix = 0);

// fsync() the file or directory at `path`.
void fsync_path(const std::filesystem::path& path);

// Asks the kernel to start writing bytes [offset, offset + length) of the file
// open as `fd` to its storage now rather than when its dirty pages age or a
// later fsync waits for them all (Linux: sync_file_range with
// SYNC_FILE_RANGE_WRITE; elsewhere nothing). A hint: it neither waits for the
// write nor makes it durable, and a failure is left to that fsync to report.
void start_writeback(int fd, uint64_t offset, uint64_t length);

// fsync `from`, rename it to `to` (replacing), fsync the directory of `to`.
void commit_file(const std::filesystem::path& from, const std::filesystem::path& to);

// Whether write_file_atomic makes the new file durable before it returns:
// synced: the file and its directory fsync'ed, so it survives a power loss.
// unsynced: renamed into place only, whole or absent after the process
// crashes, written back by the kernel in its own time.
enum class Durability { synced, unsynced };

// Writes `contents` to `path` whole or not at all: written to path + ".tmp",
// then renamed over `path`, so a full disk or a crash never leaves a cut file
// under its name. The temporary file is removed where writing it fails. One
// a crash left is replaced (a link there is removed, never followed): for
// files of the program's own folders, whose ".tmp" names it owns.
void write_file_atomic(const std::filesystem::path& path, std::string_view contents,
                       Durability durability = Durability::synced);

// Throws file_error naming `dir` unless it is a directory: "no such dataset
// directory", or "not a directory" where something else is there.
void require_dataset_directory(const std::filesystem::path& dir);

// Writes `contents` to a file a user named for it (an exported split, a
// preview image). A regular file, or none, is written crash-safely as
// write_file_atomic does, but aside under a name of this process's own
// (PATH.PID.tmp, or imgpack-output.PID.tmp beside it where PATH's name is too
// long for that; made new, never followed), so that no file or link the user
// has beside it is touched; where `path` is a symbolic link, the file it
// leads to is, and the link stays. Anything else that is there is written
// into as it is, never replaced: a device (/dev/null, /dev/full), a FIFO, or
// /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N, whatever they lead
// to (written through the descriptor itself, where its offset is). Throws as write_file_atomic and
// write_file do, "PATH: is a directory" for a directory. Thread-safe.
void write_output_file(const std::filesystem::path& path, std::string_view contents);

// Removes the temporary files write_output_file() is writing at this moment
// (up to 16 at once are listed): for a handler of a signal that ends the
// process. Async-signal-safe.
void remove_temporary_outputs() noexcept;

// Writes `contents` to `path`, created or truncated, in place: not
// crash-safe, for files a failed run may leave behind unfinished (generated
// inputs). Throws "PATH: cannot create|write failed|close failed: REASON";
// an error the kernel reports only at close is reported too.
void write_file(const std::filesystem::path& path, std::string_view contents);

// Size in bytes of a regular file.
uint64_t file_length(const std::filesystem::path& path);

// Fault injection for crash-safety tests. If the environment variable
// IMGPACK_CRASH_AT is "NAME" or "NAME:COUNT" and matches this call, the process
// kills itself with SIGKILL, stopping exactly as a power loss or `kill -9`
// would. Otherwise it costs one comparison (the variable is read once).
// Points used by the writer: "record:N" (after the N-th record of a
// conversion is staged), "shard-commit:K" (shard K written, not yet renamed),
// "splits-commit" (splits.h5.tmp written, not yet renamed), "splits-committed"
// (splits.h5 in place, index.h5 not yet written), "index-commit" (index.h5.tmp
// written, not yet renamed), "index-committed" (index.h5 in place, journal not
// yet removed); write_output_file: "output-written" (the temporary file
// written, not yet renamed). With IMGPACK_CRASH_SIGNAL set to INT, TERM or
// HUP that signal is raised instead (what Ctrl-C, kill or a closed terminal
// sends), and SIGKILL after it should the process live on.
void crash_point(std::string_view name, uint64_t count = 0);

}  // namespace imgpack
