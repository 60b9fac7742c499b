/* hash64.c: four independent multiply-rotate lanes over 32-byte blocks (so the loop runs at
 * several GB/s), the tail folded in 8 then 1 byte at a time, the length mixed in, and a final
 * avalanche; every input bit reaches every output bit. */
#include "core/hash64.h"

#include <string.h>

#define K1 0x9e3779b185ebca87ull
#define K2 0xc2b2ae3d27d4eb4full
#define K3 0x165667b19e3779f9ull

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static inline uint64_t rd(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8); /* little-endian hosts only (x86-64, arm64): the value is the file's bytes */
  return v;
}
static inline uint64_t lane(uint64_t acc, uint64_t w) { return rotl(acc + w * K2, 31) * K1; }
static inline uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= K2;
  h ^= h >> 29;
  h *= K3;
  h ^= h >> 32;
  return h;
}

uint64_t hash64(const void *data, size_t n, uint64_t seed) {
  const unsigned char *p = data;
  size_t len = n;
  uint64_t h;
  if (n >= 32) {
    uint64_t a = seed + K1 + K2, b = seed + K2, c = seed, d = seed - K1;
    while (n >= 32) {
      a = lane(a, rd(p));
      b = lane(b, rd(p + 8));
      c = lane(c, rd(p + 16));
      d = lane(d, rd(p + 24));
      p += 32;
      n -= 32;
    }
    h = rotl(a, 1) + rotl(b, 7) + rotl(c, 12) + rotl(d, 18);
    h = (h ^ lane(0, a)) * K1 + K3;
    h = (h ^ lane(0, b)) * K1 + K3;
    h = (h ^ lane(0, c)) * K1 + K3;
    h = (h ^ lane(0, d)) * K1 + K3;
  } else {
    h = seed + K3;
  }
  h += (uint64_t)len;
  for (; n >= 8; n -= 8, p += 8) h = rotl(h ^ lane(0, rd(p)), 27) * K1 + K3;
  for (; n > 0; n--, p++) h = rotl(h ^ (*p * K3), 11) * K1;
  return mix(h);
}
