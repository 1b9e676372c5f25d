// fork() and the loader (internal to the reader).
//
// A Loader's threads do not survive fork(): in the child only the thread that
// called fork() runs, and a lock one of the others held at that moment stays
// held. A loader made before a fork therefore refuses work in the child, and
// what the child drops of it is abandoned, never destroyed: destroying it
// would join threads that are not there.
#pragma once

#include <cstdint>
#include <memory>

namespace imgpack::detail {

// The number of fork()s between the first call in any ancestor process and
// now: a value taken before a fork differs from one taken after it, in the
// child only. Async-signal-safe to update; cheap to read.
uint64_t fork_generation();

// Keeps `object` alive until the process ends, without ever destroying it.
void abandon(std::shared_ptr<void> object);

}  // namespace imgpack::detail
