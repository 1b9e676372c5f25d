#include "imgpack/error.hpp"

#include <cstring>

namespace imgpack {

Error file_error(const std::filesystem::path& path, const std::string& message) {
  return Error(path.string() + ": " + message);
}

Error system_error(const std::filesystem::path& path, const std::string& message, int errno_value) {
  return Error(path.string() + ": " + message + ": " + std::strerror(errno_value));
}

}  // namespace imgpack
