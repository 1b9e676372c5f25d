#include "imgpack/checksum.hpp"

// Header-only use of xxHash: no library in the reader's link interface.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace imgpack {

uint64_t checksum(const void* data, std::size_t size) { return XXH3_64bits(data, size); }

uint64_t checksum(std::span<const uint8_t> bytes) { return checksum(bytes.data(), bytes.size()); }

Hash128 hash128(std::string_view bytes, uint64_t seed) {
  XXH128_hash_t h = XXH3_128bits_withSeed(bytes.data(), bytes.size(), seed);
  return {h.low64, h.high64};
}

}  // namespace imgpack
