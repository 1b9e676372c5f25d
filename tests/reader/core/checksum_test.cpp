#include "imgpack/checksum.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace imgpack {
namespace {

TEST(Checksum, IsXxh3Of64BitsWithSeedZero) {
  // Reference values of XXH3_64bits, from the xxHash test vectors.
  EXPECT_EQ(checksum(nullptr, 0), 0x2D06800538D394C2ULL);
  std::vector<uint8_t> bytes = {'a', 'b', 'c'};
  EXPECT_EQ(checksum(bytes), 0x78AF5F94892F3950ULL);
}

TEST(Checksum, ChangesWithAnyByte) {
  std::vector<uint8_t> bytes(4096, 7);
  uint64_t before = checksum(bytes);
  bytes[1234] ^= 1;
  EXPECT_NE(checksum(bytes), before);
}

TEST(Hash128, DependsOnSeedAndInput) {
  Hash128 a = hash128("imgpack", 1), b = hash128("imgpack", 2), c = hash128("imgpacK", 1);
  EXPECT_NE(a.low, b.low);
  EXPECT_NE(a.low, c.low);
  Hash128 again = hash128("imgpack", 1);
  EXPECT_EQ(a.low, again.low);
  EXPECT_EQ(a.high, again.high);
}

}  // namespace
}  // namespace imgpack
