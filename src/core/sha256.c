#include "core/sha256.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/options.h"

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void compress(uint32_t h[8], const uint8_t *p) {
  uint32_t w[64];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
           p[4 * i + 3];
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int i = 0; i < 64; i++) {
    uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
    uint32_t ch = (e & f) ^ (~e & g);
    uint32_t t1 = hh + S1 + ch + K[i] + w[i];
    uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
    uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = S0 + maj;
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += hh;
}

/* ---- SHA extensions (x86-64: Intel Goldmont / Ice Lake and later, AMD Zen and later) ----------
 * The same compression with sha256rnds2 (two rounds), sha256msg1/msg2 (message schedule), about
 * 10x the portable loop. The state is held as ABEF / CDGH, the layout the instructions use. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define LAYA_SHA_NI 1

__attribute__((target("sha,sse4.1,ssse3"))) static void compress_ni(uint32_t h[8], const uint8_t *p, size_t blocks) {
  const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bll, 0x0405060700010203ll);
  __m128i t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xB1); /* CDAB */
  __m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1B); /* EFGH */
  __m128i s0 = _mm_alignr_epi8(t, s1, 8);                                          /* ABEF */
  s1 = _mm_blend_epi16(s1, t, 0xF0);                                               /* CDGH */
  for (; blocks; blocks--, p += 64) {
    __m128i abef = s0, cdgh = s1, w[16];
    for (int g = 0; g < 16; g++) {
      if (g < 4)
        w[g] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)), bswap);
      else
        w[g] = _mm_sha256msg2_epu32(
            _mm_add_epi32(_mm_sha256msg1_epu32(w[g - 4], w[g - 3]), _mm_alignr_epi8(w[g - 1], w[g - 2], 4)), w[g - 1]);
      __m128i m = _mm_add_epi32(w[g], _mm_loadu_si128((const __m128i *)&K[4 * g]));
      s1 = _mm_sha256rnds2_epu32(s1, s0, m);
      s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(m, 0x0E));
    }
    s0 = _mm_add_epi32(s0, abef);
    s1 = _mm_add_epi32(s1, cdgh);
  }
  t = _mm_shuffle_epi32(s0, 0x1B);   /* FEBA */
  s1 = _mm_shuffle_epi32(s1, 0xB1);  /* DCHG */
  s0 = _mm_blend_epi16(t, s1, 0xF0); /* DCBA */
  s1 = _mm_alignr_epi8(s1, t, 8);    /* HGFE */
  _mm_storeu_si128((__m128i *)&h[0], s0);
  _mm_storeu_si128((__m128i *)&h[4], s1);
}

/* 1 when the CPU has SHA, SSE4.1 and SSSE3 and LAYA_SHA256_PORTABLE is not set (tests compare both). */
static int have_ni(void) {
  static int have = -1;
  if (have < 0) {
    unsigned a, b, c, d;
    int ok = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 19)) && (c & (1u << 9));
    ok = ok && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29));
    have = ok && !(laya_env_process()->sha256_portable > 0);
  }
  return have;
}
#endif

static void compress_blocks(uint32_t h[8], const uint8_t *p, size_t blocks) {
#ifdef LAYA_SHA_NI
  if (have_ni()) {
    compress_ni(h, p, blocks);
    return;
  }
#endif
  for (; blocks; blocks--, p += 64) compress(h, p);
}

void sha256_init(sha256_ctx *c) {
  static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(c->h, iv, sizeof iv);
  c->total = 0;
  c->used = 0;
}

void sha256_update(sha256_ctx *c, const void *data, size_t n) {
  const uint8_t *p = data;
  c->total += n;
  if (c->used) {
    size_t take = 64 - c->used < n ? 64 - c->used : n;
    memcpy(c->buf + c->used, p, take);
    c->used += take;
    p += take;
    n -= take;
    if (c->used < 64) return;
    compress_blocks(c->h, c->buf, 1);
    c->used = 0;
  }
  compress_blocks(c->h, p, n / 64);
  p += n / 64 * 64;
  n %= 64;
  memcpy(c->buf, p, n);
  c->used = n;
}

void sha256_final(sha256_ctx *c, uint8_t out[32]) {
  uint64_t bits = c->total * 8;
  uint8_t pad = 0x80;
  sha256_update(c, &pad, 1);
  uint8_t zero = 0;
  while (c->used != 56) sha256_update(c, &zero, 1);
  uint8_t len[8];
  for (int i = 0; i < 8; i++) len[i] = (uint8_t)(bits >> (56 - 8 * i));
  sha256_update(c, len, 8);
  for (int i = 0; i < 8; i++) {
    out[4 * i] = (uint8_t)(c->h[i] >> 24);
    out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
    out[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
    out[4 * i + 3] = (uint8_t)c->h[i];
  }
}

static void to_hex(const uint8_t d[32], char out[65]) {
  static const char hx[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    out[2 * i] = hx[d[i] >> 4];
    out[2 * i + 1] = hx[d[i] & 15];
  }
  out[64] = 0;
}

void sha256_hex(const void *data, size_t n, char out[65]) {
  sha256_ctx c;
  uint8_t d[32];
  sha256_init(&c);
  sha256_update(&c, data, n);
  sha256_final(&c, d);
  to_hex(d, out);
}

int sha256_file_hex(const char *path, char out[65]) {
  /* regular files only, opened without blocking: a FIFO or /dev/zero never ends */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    errno = EINVAL;
    return -1;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    close(fd);
    return -1;
  }
  sha256_ctx c;
  sha256_init(&c);
  enum { CHUNK = 1 << 20 };
  uint8_t *buf = malloc(CHUNK);
  if (!buf) {
    fclose(f);
    errno = ENOMEM;
    return -1;
  }
  size_t got;
  while ((got = fread(buf, 1, CHUNK, f)) > 0) sha256_update(&c, buf, got);
  int bad = ferror(f);
  free(buf);
  fclose(f);
  if (bad) {
    errno = EIO;
    return -1;
  }
  uint8_t d[32];
  sha256_final(&c, d);
  to_hex(d, out);
  return 0;
}
