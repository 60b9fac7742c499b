/* SHA-256 against FIPS 180-4 / NIST vectors, and Laya's verify_digests rules. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../check.h"
#include "core/options.h"
#include "core/sha256.h"
#include "model/checkpoint.h"

static void vec(const char *msg, const char *want) {
  char got[65];
  sha256_hex(msg, strlen(msg), got);
  CHECK_STREQ(got, want);
}

int main(void) {
  vec("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  vec("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  vec("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  vec("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  /* one million 'a', fed in uneven pieces to exercise the block buffer */
  sha256_ctx c;
  sha256_init(&c);
  char block[997];
  memset(block, 'a', sizeof block);
  size_t left = 1000000;
  while (left) {
    size_t n = left < sizeof block ? left : sizeof block;
    sha256_update(&c, block, n);
    left -= n;
  }
  uint8_t d[32];
  sha256_final(&c, d);
  char hex[65];
  for (int i = 0; i < 32; i++) sprintf(hex + 2 * i, "%02x", d[i]);
  CHECK_STREQ(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");

  /* verify_digests on a temporary directory */
  char dir[] = "/tmp/laya_digest_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char path[256];
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  FILE *f = fopen(path, "wb");
  fputs("abc", f);
  fclose(f);
  laya_error err;
  CHECK(verify_digests(dir, "{\"model.safetensors\": \"BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD \"}", NULL, &err) == 0);
  CHECK(verify_digests(dir, "{\"model.safetensors\": \"00\"}", NULL, &err) == LAYA_ERR_VALUE);
  CHECK_STREQ(err.message,
              "laya: SHA-256 mismatch for model.safetensors: expected 00, got "
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad. The artifact does not "
              "match the reviewed digest; refusing to load it.");
  CHECK(verify_digests(dir, "{\"/etc/passwd\": \"00\"}", NULL, &err) == LAYA_ERR_VALUE);
  CHECK_STREQ(err.message, "laya: unsafe absolute path in expected digests: '/etc/passwd'");
  CHECK(verify_digests(dir, "{\"C:\\\\x\": \"00\"}", NULL, &err) == LAYA_ERR_VALUE);
  CHECK_STREQ(err.message, "laya: unsafe absolute path in expected digests: 'C:\\\\x'");
  CHECK(verify_digests(dir, "{\"a/../../b\": \"00\"}", NULL, &err) == LAYA_ERR_VALUE);
  CHECK_STREQ(err.message, "laya: unsafe path in expected digests: 'a/../../b'");
  CHECK(verify_digests(dir, "{\"../x\": \"00\"}", NULL, &err) == LAYA_ERR_VALUE);
  CHECK(verify_digests(dir, "{\"\": \"00\"}", NULL, &err) == LAYA_ERR_VALUE);
  CHECK_STREQ(err.message, "laya: unsafe path in expected digests: ''");
  CHECK(verify_digests(dir, "{\"tokenizer/tokenizer.json\": \"00\"}", NULL, &err) == LAYA_ERR_IO);
  CHECK_STREQ(err.kind, "FileNotFoundError");
  char want[512];
  snprintf(want, sizeof want, "laya: cannot verify 'tokenizer/tokenizer.json': no such file under %s", dir);
  CHECK_STREQ(err.message, want);
  CHECK(verify_digests(dir, "[1]", NULL, &err) == LAYA_ERR_VALUE);
  CHECK_STREQ(err.message, "expected_sha256 must be a mapping of artifact paths to digests");
  /* LAYA_SHA256_DIGESTS (as the options read it) is the map when none is given; unset or blank
   * means no check; a map given wins over it */
  CHECK(verify_digests(dir, NULL, NULL, &err) == 0);
  CHECK(verify_digests(dir, NULL, "  ", &err) == 0);
  CHECK(verify_digests(dir, NULL, "{not json", &err) == LAYA_ERR_VALUE);
  CHECK_STREQ(err.message, "LAYA_SHA256_DIGESTS must be a JSON object of artifact->sha256");
  CHECK(verify_digests(dir, NULL, "{\"model.safetensors\": \"00\"}", &err) == LAYA_ERR_VALUE);
  CHECK(verify_digests(dir, "{}", "{\"model.safetensors\": \"00\"}", &err) == 0);
  CHECK(verify_digests(dir, NULL, "{\"model.safetensors\": \"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\"}", &err) == 0);
  /* the variable read through the options: one read, the same value */
  setenv("LAYA_SHA256_DIGESTS", "{not json", 1);
  laya_env_options eo;
  laya_env_options_init(&eo);
  CHECK(laya_env_options_read_one(&eo, "LAYA_SHA256_DIGESTS", &err) == 0); /* JSON is checked where it is used */
  CHECK(verify_digests(dir, NULL, eo.sha256_digests, &err) == LAYA_ERR_VALUE);
  CHECK_STREQ(err.message, "LAYA_SHA256_DIGESTS must be a JSON object of artifact->sha256");
  laya_env_options_free(&eo);
  /* checkpoint_open (no read to hand on) reads the variable itself: refused before anything is parsed */
  checkpoint ck;
  strbuf warn;
  sb_init(&warn);
  CHECK(checkpoint_open(&ck, dir, NULL, &warn, &err) == LAYA_ERR_VALUE);
  CHECK_STREQ(err.message, "LAYA_SHA256_DIGESTS must be a JSON object of artifact->sha256");
  sb_free(&warn);
  unsetenv("LAYA_SHA256_DIGESTS");
  unlink(path);
  rmdir(dir);
  return check_summary("model/sha256");
}
