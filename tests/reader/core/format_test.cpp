#include "imgpack/format.hpp"

#include <gtest/gtest.h>

namespace imgpack::format {
namespace {

TEST(Format, ShardFileNames) {
  EXPECT_EQ(shard_file_name(0), "shard-00000.h5");
  EXPECT_EQ(shard_file_name(42), "shard-00042.h5");
  EXPECT_EQ(shard_file_name(123456), "shard-123456.h5");
  EXPECT_TRUE(is_shard_file_name("shard-00042.h5"));
  EXPECT_TRUE(is_shard_file_name("shard-123456.h5"));
  EXPECT_FALSE(is_shard_file_name("shard-0042.h5"));
  EXPECT_FALSE(is_shard_file_name("shard-00042.h5.tmp"));
  EXPECT_FALSE(is_shard_file_name("shard-0004x.h5"));
  EXPECT_FALSE(is_shard_file_name("index.h5"));
}

}  // namespace
}  // namespace imgpack::format
