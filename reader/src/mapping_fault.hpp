// Reading file mappings without dying when the file shrinks (internal to the
// reader).
//
// Touching a page of a file mapping past the file's end (a shard truncated
// after it was mapped) raises SIGBUS, whose default action ends the process.
// read_mapped() runs a piece of code with such faults turned into a return
// value on the thread that runs it: the reader threads' copies from the
// mapping go through it, so a shard that shrinks under a running Loader is an
// imgpack::Error naming it, not a dead training run.
//
// How: the first call installs a SIGBUS handler for the process. A fault on a
// thread inside read_mapped() jumps back to it (siglongjmp); any other SIGBUS
// (another thread, a fault outside, a signal sent with kill) goes to the
// handler that was installed before, or gets the default action. A program
// that installs its own SIGBUS handler after its first Loader replaces this
// one, and its handler then decides.
#pragma once

#include <csetjmp>
#include <filesystem>
#include <string_view>

#include "imgpack/error.hpp"

namespace imgpack::detail {

// Where a read_mapped() call jumps back to when its code faults.
struct MappingFaultLanding {
  sigjmp_buf jump;
  const void* volatile address = nullptr;  // the faulting address (si_addr)
};

// Installs the handler (once per process) and makes `landing` this thread's
// (null: none). For read_mapped() alone.
void set_mapping_fault_landing(MappingFaultLanding* landing);

// Runs `read()` on this thread and returns null, or, if it faulted reading a
// mapping (SIGBUS), the address it faulted at: `read` is then abandoned at
// that point. `read` must only read mappings and write memory its caller
// owns: it must not lock, allocate or own anything that a jump out of it
// would leave locked or leak (the frames between here and the fault are left
// without running destructors, so they must have none to run). An exception
// `read` throws passes through.
template <class Read>
const void* read_mapped(Read&& read) {
  MappingFaultLanding landing;
  // Saves the signal mask, so that the jump also unblocks SIGBUS.
  if (sigsetjmp(landing.jump, 1) != 0) {
    set_mapping_fault_landing(nullptr);
    return landing.address;
  }
  set_mapping_fault_landing(&landing);
  try {
    read();
  } catch (...) {
    set_mapping_fault_landing(nullptr);
    throw;
  }
  set_mapping_fault_landing(nullptr);
  return nullptr;
}

// The error for a read_mapped() that faulted: the file at `path` was
// truncated or rewritten in place while `during` ("the dataset was open"),
// found reading `what` ("row 3", "the masks of row 3") from its mapping.
Error mapping_fault_error(const std::filesystem::path& path, std::string_view what,
                          std::string_view during = "the dataset was open");

}  // namespace imgpack::detail
