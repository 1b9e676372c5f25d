// Small POSIX file helpers for crash-safe output.
//
// Crash safety in imgpack means: write NAME.tmp, close it, fsync it, rename it
// to NAME, fsync the directory. A reader then sees either the old file or the
// complete new one, never a torn one. All functions throw imgpack::Error
// naming the path on failure.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>

namespace imgpack {

// fsync() the file or directory at `path`.
void fsync_path(const std::filesystem::path& path);

// fsync `from`, rename it to `to` (replacing), fsync the directory of `to`.
void commit_file(const std::filesystem::path& from, const std::filesystem::path& to);

// Writes `contents` to `path` crash-safely (via path + ".tmp").
void write_file_atomic(const std::filesystem::path& path, std::string_view contents);

// Size in bytes of a regular file.
uint64_t file_length(const std::filesystem::path& path);

}  // namespace imgpack
