// Deterministic, counter-based randomness.
//
// Every random choice in imgpack (write order, augmentation parameters, epoch
// order) derives from an explicit seed plus stable indices, never from thread
// scheduling. CounterRng is keyed by up to three 64-bit words; two generators
// with the same key produce the same stream on every machine. Not thread-safe;
// make one per use, they are cheap (two words of state).
#pragma once

#include <cstdint>
#include <span>
#include <utility>

namespace imgpack {

// SplitMix64's finaliser: a bijective 64-bit mixer.
constexpr uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

__extension__ typedef unsigned __int128 uint128_t;

class CounterRng {
 public:
  explicit CounterRng(uint64_t seed, uint64_t a = 0, uint64_t b = 0)
      : key_(mix64((mix64(mix64(seed ^ 0x9e3779b97f4a7c15ULL) ^ a) + 0x632be59bd9b4e019ULL) ^ b)) {}

  // Next 64 uniformly distributed bits.
  uint64_t next() { return mix64(key_ + 0x9e3779b97f4a7c15ULL * ++counter_); }

  // Uniform integer in [0, n), n > 0, without modulo bias (Lemire's method).
  uint64_t below(uint64_t n) {
    uint128_t m = static_cast<uint128_t>(next()) * n;
    auto low = static_cast<uint64_t>(m);
    if (low < n) {
      uint64_t threshold = -n % n;
      while (low < threshold) {
        m = static_cast<uint128_t>(next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  // Uniform double in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

  // Fisher-Yates shuffle.
  template <class T>
  void shuffle(std::span<T> values) {
    for (std::size_t i = values.size(); i > 1; --i) {
      std::size_t j = below(i);
      std::swap(values[i - 1], values[j]);
    }
  }

 private:
  uint64_t key_;
  uint64_t counter_ = 0;
};

}  // namespace imgpack
