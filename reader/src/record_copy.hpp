// Copying records into a ring slot (internal to the reader).
#pragma once

#include <cstddef>

namespace imgpack::detail {

// Copies `bytes` from `src` to `dst` with non-temporal (streaming) stores
// where the CPU has them (x86-64; plain memcpy elsewhere). For a destination
// the CPU will not read again soon, such as a ring slot larger than the
// caches or a pinned staging slot that only the GPU's copy engine reads,
// this saves the read-for-ownership of every destination cache line (a
// third of a copy's memory traffic) and leaves the caches to the source.
// Ends with a store fence: the bytes are visible to other threads and
// devices before the caller publishes them. Any alignment, any size.
void copy_streaming(void* dst, const void* src, std::size_t bytes);

// copy_streaming without the fence, for a caller that copies a record in
// pieces (the rows of a window) and fences once with streaming_fence()
// before publishing it.
void copy_streaming_unfenced(void* dst, const void* src, std::size_t bytes);

// Orders every streaming store before it ahead of later stores: call it
// after copy_streaming_unfenced() and before publishing what was copied.
void streaming_fence();

}  // namespace imgpack::detail
