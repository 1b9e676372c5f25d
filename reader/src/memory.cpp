// Memory's out-of-line members. Compiled into the reader and into the CUDA
// module (libimgpack_cuda.so), which hands out Memory too and links nothing
// of the reader.
#include <utility>

#include "imgpack/upload_backend.hpp"

namespace imgpack {

Memory::Memory(Memory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      release_(std::exchange(other.release_, nullptr)) {}

Memory& Memory::operator=(Memory&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    release_ = std::exchange(other.release_, nullptr);
  }
  return *this;
}

void Memory::reset() {
  if (data_ != nullptr && release_ != nullptr) release_(data_, size_);
  data_ = nullptr;
  size_ = 0;
  release_ = nullptr;
}

}  // namespace imgpack
