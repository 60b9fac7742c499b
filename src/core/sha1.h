/* sha1.h: FIPS 180-4 SHA-1, streaming. Used only to check a downloaded file against the git blob
 * id the Hub gives as the ETag of a non-LFS file (not for anything where collisions matter more
 * than a corrupt or substituted transfer). */
#ifndef LAYA_CORE_SHA1_H
#define LAYA_CORE_SHA1_H

#include <stddef.h>
#include <stdint.h>

typedef struct sha1_ctx {
  uint32_t h[5];
  uint64_t total; /* bytes hashed */
  uint8_t buf[64];
  size_t used;
} sha1_ctx;

void sha1_init(sha1_ctx *c);
void sha1_update(sha1_ctx *c, const void *data, size_t n);
void sha1_final(sha1_ctx *c, uint8_t out[20]);
/* The git blob id of a file ("blob <size>\0" + contents, SHA-1) as lower-case hex (41 bytes with
 * the NUL); returns 0, or -1 with errno set. */
int sha1_git_blob_file_hex(const char *path, char out[41]);

#endif
