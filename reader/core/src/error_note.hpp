// Adding what a failure left behind to its message (internal to imgpack).
#pragma once

#include <string>
#include <typeinfo>

#include "imgpack/error.hpp"

namespace imgpack {

// Rethrows the exception being handled (call it only inside a catch block).
// A plain imgpack::Error comes out as an Error whose message ends with
// " (NOTE)": what the failure left behind and how to go on from there. Any
// other exception, a UsageError included, keeps its type and its message.
[[noreturn]] inline void rethrow_with_note(const std::string& note) {
  try {
    throw;
  } catch (const Error& e) {
    if (typeid(e) != typeid(Error)) throw;
    throw Error(std::string(e.what()) + " (" + note + ")");
  }
}

}  // namespace imgpack
