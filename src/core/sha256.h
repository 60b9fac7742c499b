/* sha256.h: FIPS 180-4 SHA-256, streaming, for checkpoint digest checks. */
#ifndef LAYA_CORE_SHA256_H
#define LAYA_CORE_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct sha256_ctx {
  uint32_t h[8];
  uint64_t total; /* bytes hashed */
  uint8_t buf[64];
  size_t used;
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t n);
void sha256_final(sha256_ctx *c, uint8_t out[32]);
/* Lower-case hex of the digest of data (65 bytes with the NUL). */
void sha256_hex(const void *data, size_t n, char out[65]);
/* Digest of a whole file as lower-case hex; returns 0, or -1 with errno set. */
int sha256_file_hex(const char *path, char out[65]);

#endif
