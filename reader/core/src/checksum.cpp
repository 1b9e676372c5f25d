#include "imgpack/checksum.hpp"

// Header-only use of xxHash: no library in the reader's link interface.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace imgpack {

uint64_t checksum(const void* data, std::size_t size) { return XXH3_64bits(data, size); }

uint64_t checksum(std::span<const uint8_t> bytes) { return checksum(bytes.data(), bytes.size()); }

uint64_t box_checksum(std::span<const float> boxes, std::span<const int32_t> classes,
                      std::span<const uint8_t> crowd, std::span<const float> keypoints) {
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, boxes.data(), boxes.size_bytes());
  XXH3_64bits_update(&state, classes.data(), classes.size_bytes());
  XXH3_64bits_update(&state, crowd.data(), crowd.size_bytes());
  XXH3_64bits_update(&state, keypoints.data(), keypoints.size_bytes());
  return XXH3_64bits_digest(&state);
}

Hash128 hash128(std::string_view bytes, uint64_t seed) {
  XXH128_hash_t h = XXH3_128bits_withSeed(bytes.data(), bytes.size(), seed);
  return {h.low64, h.high64};
}

}  // namespace imgpack
