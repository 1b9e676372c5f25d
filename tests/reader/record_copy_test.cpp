#include "record_copy.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace imgpack::detail {
namespace {

TEST(CopyStreaming, CopiesEveryByteAtAnyAlignmentAndSize) {
  std::vector<uint8_t> source(4096 + 512);
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = static_cast<uint8_t>(i * 131 + 7);
  for (std::size_t size : {0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 200, 4095, 4096}) {
    for (std::size_t dst_offset = 0; dst_offset < 17; ++dst_offset) {
      for (std::size_t src_offset : {0, 1, 8, 15}) {
        std::vector<uint8_t> target(size + 64, 0xEE);
        copy_streaming(target.data() + dst_offset % 32, source.data() + src_offset, size);
        for (std::size_t i = 0; i < target.size(); ++i) {
          const std::size_t at = dst_offset % 32;
          const uint8_t want = i >= at && i < at + size ? source[src_offset + i - at] : 0xEE;
          ASSERT_EQ(target[i], want)
              << "size " << size << " dst +" << at << " src +" << src_offset << " byte " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace imgpack::detail
