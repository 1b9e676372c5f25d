#include "error_note.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <typeinfo>

#include "imgpack/error.hpp"

namespace imgpack {
namespace {

// What the handler rethrows for the exception `thrown`.
template <class Thrown>
void rethrow_noted(const Thrown& thrown) {
  try {
    throw thrown;
  } catch (...) {
    rethrow_with_note("the work so far is kept in j.journal: run it again");
  }
}

TEST(ErrorNote, APlainErrorGainsTheNote) {
  try {
    rethrow_noted(Error("shard-00001.h5: disk full"));
    FAIL() << "nothing was rethrown";
  } catch (const Error& e) {
    EXPECT_EQ(typeid(e), typeid(Error));
    EXPECT_STREQ(e.what(),
                 "shard-00001.h5: disk full (the work so far is kept in j.journal: run it again)");
  }
}

// A UsageError says the request itself is wrong (exit 2): it keeps its type
// and its words, as does any exception that is not an imgpack::Error.
TEST(ErrorNote, OtherExceptionsPassUnchanged) {
  EXPECT_THROW(
      {
        try {
          rethrow_noted(UsageError("--size: not a size"));
        } catch (const UsageError& e) {
          EXPECT_STREQ(e.what(), "--size: not a size");
          throw;
        }
      },
      UsageError);
  EXPECT_THROW(
      {
        try {
          rethrow_noted(std::length_error("too long"));
        } catch (const std::length_error& e) {
          EXPECT_STREQ(e.what(), "too long");
          throw;
        }
      },
      std::length_error);
}

}  // namespace
}  // namespace imgpack
