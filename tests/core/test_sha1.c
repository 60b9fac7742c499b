/* SHA-1 (core/sha1.c) on the FIPS 180 / RFC 3174 test vectors, fed whole and in odd pieces, and the
 * git blob id of a file (what the Hub sends as a small file's ETag; `git hash-object` values). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "core/sha1.h"

static void hex(const unsigned char d[20], char out[41]) {
  for (int i = 0; i < 20; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void digest(const char *data, size_t n, size_t piece, char out[41]) {
  sha1_ctx c;
  sha1_init(&c);
  for (size_t o = 0; o < n; o += piece) sha1_update(&c, data + o, n - o < piece ? n - o : piece);
  unsigned char d[20];
  sha1_final(&c, d);
  hex(d, out);
}

int main(void) {
  struct { const char *in; const char *want; } v[] = {
      {"", "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
      {"abc", "a9993e364706816aba3e25717850c26c9cd0d89d"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "84983e441c3bd26ebaae4aa1f95129e5e54670f1"},
      {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
       "mnopqrstnopqrstu", "a49b2446a02c645bf419f995b67091253a04a259"}};
  char got[41];
  for (size_t i = 0; i < sizeof v / sizeof *v; i++)
    for (size_t piece = 1; piece <= 65; piece += 16) {
      digest(v[i].in, strlen(v[i].in), piece, got);
      CHECK_STREQ(got, v[i].want);
    }
  char *million = malloc(1000000);
  memset(million, 'a', 1000000);
  digest(million, 1000000, 4093, got);
  CHECK_STREQ(got, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
  free(million);

  char path[] = "/tmp/laya_sha1_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  CHECK(sha1_git_blob_file_hex(path, got) == 0); /* git hash-object of an empty file */
  CHECK_STREQ(got, "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
  CHECK(write(fd, "hello\n", 6) == 6);
  close(fd);
  CHECK(sha1_git_blob_file_hex(path, got) == 0);
  CHECK_STREQ(got, "ce013625030ba8dba906f756967f9e9ca394464a");
  unlink(path);
  CHECK(sha1_git_blob_file_hex(path, got) == -1);
  CHECK(sha1_git_blob_file_hex("/dev/null", got) == -1); /* not a regular file */
  return check_summary("core/sha1");
}
