// Record checksums: XXH3-64 of a record's H*W*C image bytes (seed 0), as the
// format stores in each shard's /checksum. Pure functions, safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace imgpack {

uint64_t checksum(std::span<const uint8_t> bytes);
uint64_t checksum(const void* data, std::size_t size);

// The checksum of one record's boxes (format.hpp, /box_checksum): XXH3-64
// (seed 0) of the bytes of its rows in the order /boxes, /box_class,
// /box_crowd, /keypoints, each little-endian as stored. B = classes.size();
// `boxes` holds 4 B values, `crowd` B, `keypoints` B x K x 3 (empty for K = 0).
uint64_t box_checksum(std::span<const float> boxes, std::span<const int32_t> classes,
                      std::span<const uint8_t> crowd, std::span<const float> keypoints);

// XXH3-128 of a string, for identifiers derived from content (dataset uuids).
struct Hash128 {
  uint64_t low = 0;
  uint64_t high = 0;
};
Hash128 hash128(std::string_view bytes, uint64_t seed = 0);

}  // namespace imgpack
