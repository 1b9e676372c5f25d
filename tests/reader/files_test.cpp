#include "imgpack/files.hpp"

#include <gtest/gtest.h>

#include "imgpack/error.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

TEST(Files, WriteFileAtomicReplacesAndLeavesNoTemporary) {
  test::TempDir dir;
  write_file_atomic(dir / "a.json", "first");
  write_file_atomic(dir / "a.json", "second");
  EXPECT_EQ(test::read_bytes(dir / "a.json"), "second");
  EXPECT_FALSE(std::filesystem::exists(dir / "a.json.tmp"));
  EXPECT_EQ(file_length(dir / "a.json"), 6u);
}

TEST(Files, ErrorsNameThePath) {
  test::TempDir dir;
  try {
    write_file_atomic(dir / "missing" / "a.json", "x");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing/a.json"), std::string::npos) << e.what();
  }
  EXPECT_THROW(file_length(dir / "nothing"), Error);
}

}  // namespace
}  // namespace imgpack
