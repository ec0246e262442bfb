#include "stream_copy.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define TENSORHUB_STREAM_STORES 1
#else
#define TENSORHUB_STREAM_STORES 0
#endif

namespace tensorhub::transport::cma {

void stream_copy(void* to, const void* from, std::size_t n) {
  auto* d = static_cast<unsigned char*>(to);
  const auto* s = static_cast<const unsigned char*>(from);
#if TENSORHUB_STREAM_STORES
  constexpr std::size_t kLine = 64;
  // Up to the destination's next cache-line boundary with ordinary stores, whole lines streamed,
  // the rest ordinary again.
  const std::size_t head = std::min<std::size_t>(n, (kLine - reinterpret_cast<std::uintptr_t>(d) % kLine) % kLine);
  std::memcpy(d, s, head);
  d += head;
  s += head;
  n -= head;
  for (; n >= kLine; n -= kLine, d += kLine, s += kLine) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), e);
  }
#endif
  std::memcpy(d, s, n);
}

void stream_fence() {
#if TENSORHUB_STREAM_STORES
  _mm_sfence();
#endif
}

}  // namespace tensorhub::transport::cma
