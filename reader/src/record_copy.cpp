#include "record_copy.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace imgpack::detail {

void copy_streaming_unfenced(void* dst, const void* src, std::size_t bytes) {
#if defined(__x86_64__)
  auto* out = static_cast<uint8_t*>(dst);
  const auto* in = static_cast<const uint8_t*>(src);
  // Streaming stores need a 16-byte aligned destination: copy up to it.
  const std::size_t head =
      std::min<std::size_t>(bytes, (16 - reinterpret_cast<uintptr_t>(out) % 16) % 16);
  std::memcpy(out, in, head);
  out += head;
  in += head;
  bytes -= head;
  // 64 bytes (one cache line) per step, four loads in flight.
  for (; bytes >= 64; bytes -= 64, in += 64, out += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(out), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + 48), d);
  }
  for (; bytes >= 16; bytes -= 16, in += 16, out += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(out),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(in)));
  }
  std::memcpy(out, in, bytes);
#else
  std::memcpy(dst, src, bytes);
#endif
}

void streaming_fence() {
#if defined(__x86_64__)
  // Streaming stores are weakly ordered: fence them before the slot is published.
  _mm_sfence();
#endif
}

void copy_streaming(void* dst, const void* src, std::size_t bytes) {
  copy_streaming_unfenced(dst, src, bytes);
  streaming_fence();
}

}  // namespace imgpack::detail
