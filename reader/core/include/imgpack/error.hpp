// The one exception type imgpack throws.
//
// Every failure that a caller can act on is reported as an imgpack::Error whose
// what() names the thing that failed (a file, a record, an HDF5 call) and why,
// in one line fit for a user: "shard-00003.h5: /images is chunked, expected contiguous".
// Library code never prints and never exits; the CLI turns these into messages
// and exit codes.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace imgpack {

class Error : public std::runtime_error {
 public:
  // A NUL byte in `what` (from a path or a line of a file) becomes the two
  // characters \0: what() returns a C string, which would end there.
  explicit Error(const std::string& what) : std::runtime_error(without_nul(what)) {}
  explicit Error(const char* what) : std::runtime_error(what) {}

 private:
  static std::string without_nul(const std::string& text) {
    if (text.find('\0') == std::string::npos) return text;
    std::string shown;
    for (const char c : text) {
      if (c == '\0') {
        shown += "\\0";
      } else {
        shown += c;
      }
    }
    return shown;
  }
};

// The request itself is wrong (bad option value, missing input directory,
// output in the way): the CLI exits 2 instead of 1.
class UsageError : public Error {
 public:
  using Error::Error;
};

// "PATH: MESSAGE", quoting nothing: paths in messages are shown as the user gave them.
Error file_error(const std::filesystem::path& path, const std::string& message);

// "PATH: MESSAGE: strerror(errno_value)".
Error system_error(const std::filesystem::path& path, const std::string& message, int errno_value);

}  // namespace imgpack
