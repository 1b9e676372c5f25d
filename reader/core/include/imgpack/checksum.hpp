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

// XXH3-128 of a string, for identifiers derived from content (dataset uuids).
struct Hash128 {
  uint64_t low = 0;
  uint64_t high = 0;
};
Hash128 hash128(std::string_view bytes, uint64_t seed = 0);

}  // namespace imgpack
