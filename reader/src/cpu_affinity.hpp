// The cores this process may run on (internal to the reader and its tools).
#pragma once

namespace imgpack::detail {

// The cores in this process's CPU affinity (what its threads can use; more
// threads than that only take turns), at least 1.
unsigned cores_available();

}  // namespace imgpack::detail
