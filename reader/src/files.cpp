#include "imgpack/files.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "imgpack/error.hpp"
#include "imgpack/format.hpp"

namespace imgpack {

FileDescriptor::FileDescriptor(const std::filesystem::path& path, int flags, unsigned mode)
    : fd_(::open(path.c_str(), flags | O_CLOEXEC, mode)) {
  if (fd_ < 0) throw system_error(path, "cannot open", errno);
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

FileIdentity FileDescriptor::identity(const std::filesystem::path& path) const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw system_error(path, "cannot stat", errno);
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

void fsync_path(const std::filesystem::path& path) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw system_error(path, "cannot open to fsync", errno);
  // Directories on some file systems refuse fsync with EINVAL; nothing more can be done there.
  if (::fsync(fd.get()) != 0 && errno != EINVAL) throw system_error(path, "fsync failed", errno);
}

void commit_file(const std::filesystem::path& from, const std::filesystem::path& to) {
  fsync_path(from);
  if (::rename(from.c_str(), to.c_str()) != 0) {
    throw system_error(to, "cannot rename " + from.filename().string() + " into place", errno);
  }
  std::filesystem::path dir = to.parent_path();
  fsync_path(dir.empty() ? std::filesystem::path(".") : dir);
}

void write_file_atomic(const std::filesystem::path& path, std::string_view contents) {
  std::filesystem::path tmp = path;
  tmp += format::kTmpSuffix;
  {
    FileDescriptor fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd) throw system_error(tmp, "cannot create", errno);
    std::size_t done = 0;
    while (done < contents.size()) {
      ssize_t n = ::write(fd.get(), contents.data() + done, contents.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int saved = errno;
        ::unlink(tmp.c_str());
        throw system_error(tmp, "write failed", saved);
      }
      done += static_cast<std::size_t>(n);
    }
    if (::fsync(fd.get()) != 0) {
      int saved = errno;
      ::unlink(tmp.c_str());
      throw system_error(tmp, "fsync failed", saved);
    }
    if (::close(fd.release()) != 0) {
      int saved = errno;
      ::unlink(tmp.c_str());
      throw system_error(tmp, "close failed", saved);
    }
  }
  commit_file(tmp, path);
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
    std::raise(SIGKILL);
  }
}

}  // namespace imgpack
