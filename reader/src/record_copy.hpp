// Copying records into a ring slot (internal to the reader).
#pragma once

#include <cstddef>

namespace imgpack::detail {

// Copies `bytes` from `src` to `dst` with non-temporal (streaming) stores
// where the CPU has them (x86-64; plain memcpy elsewhere). For a destination
// the CPU will not read again, such as a pinned staging slot that only the
// GPU's copy engine reads, this saves the read-for-ownership of every
// destination cache line (a quarter of the memory traffic of a
// page-cache -> pinned -> device pipeline) and leaves the caches to the
// source. Ends with a store fence: the bytes are visible to other threads and
// devices before the caller publishes them. Any alignment, any size.
void copy_streaming(void* dst, const void* src, std::size_t bytes);

}  // namespace imgpack::detail
