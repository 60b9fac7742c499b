/* sha1.c: SHA-1 (FIPS 180-4, section 6.1), see sha1.h. */
#include "core/sha1.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static uint32_t rol(uint32_t x, int n) { return x << n | x >> (32 - n); }

static void block(sha1_ctx *c, const uint8_t *p) {
  uint32_t w[80];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
  for (int i = 16; i < 80; i++) w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  uint32_t a = c->h[0], b = c->h[1], cc = c->h[2], d = c->h[3], e = c->h[4];
  for (int i = 0; i < 80; i++) {
    uint32_t f, k;
    if (i < 20) {
      f = (b & cc) | (~b & d);
      k = 0x5A827999u;
    } else if (i < 40) {
      f = b ^ cc ^ d;
      k = 0x6ED9EBA1u;
    } else if (i < 60) {
      f = (b & cc) | (b & d) | (cc & d);
      k = 0x8F1BBCDCu;
    } else {
      f = b ^ cc ^ d;
      k = 0xCA62C1D6u;
    }
    uint32_t t = rol(a, 5) + f + e + k + w[i];
    e = d;
    d = cc;
    cc = rol(b, 30);
    b = a;
    a = t;
  }
  c->h[0] += a;
  c->h[1] += b;
  c->h[2] += cc;
  c->h[3] += d;
  c->h[4] += e;
}

void sha1_init(sha1_ctx *c) {
  static const uint32_t iv[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
  memcpy(c->h, iv, sizeof iv);
  c->total = 0;
  c->used = 0;
}

void sha1_update(sha1_ctx *c, const void *data, size_t n) {
  const uint8_t *p = data;
  c->total += n;
  if (c->used) {
    size_t k = 64 - c->used < n ? 64 - c->used : n;
    memcpy(c->buf + c->used, p, k);
    c->used += k;
    p += k;
    n -= k;
    if (c->used < 64) return;
    block(c, c->buf);
    c->used = 0;
  }
  for (; n >= 64; p += 64, n -= 64) block(c, p);
  memcpy(c->buf, p, n);
  c->used = n;
}

void sha1_final(sha1_ctx *c, uint8_t out[20]) {
  uint64_t bits = c->total * 8;
  uint8_t pad = 0x80;
  sha1_update(c, &pad, 1);
  uint8_t zero = 0;
  while (c->used != 56) sha1_update(c, &zero, 1);
  uint8_t len[8];
  for (int i = 0; i < 8; i++) len[i] = (uint8_t)(bits >> (56 - 8 * i));
  sha1_update(c, len, 8);
  for (int i = 0; i < 5; i++) {
    out[4 * i] = (uint8_t)(c->h[i] >> 24);
    out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
    out[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
    out[4 * i + 3] = (uint8_t)c->h[i];
  }
}

int sha1_git_blob_file_hex(const char *path, char out[41]) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    errno = EINVAL;
    return -1;
  }
  sha1_ctx c;
  sha1_init(&c);
  char head[40];
  int hl = snprintf(head, sizeof head, "blob %lld", (long long)st.st_size);
  sha1_update(&c, head, (size_t)hl + 1); /* with the NUL */
  unsigned char buf[1 << 16];
  size_t n;
  long long seen = 0;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
    sha1_update(&c, buf, n);
    seen += (long long)n;
  }
  int bad = ferror(f) || seen != (long long)st.st_size;
  fclose(f);
  if (bad) {
    errno = EIO;
    return -1;
  }
  uint8_t d[20];
  sha1_final(&c, d);
  for (int i = 0; i < 20; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
  return 0;
}
