/*
 * fuzz_tokenizer_load.c: libFuzzer target -- tokenizer.json bytes in, a tokenizer or an error out,
 * never a crash. A tokenizer that loads is then used: a few texts encoded (cut from the input's
 * tail) and the ids decoded, so every component the input managed to configure gets exercised.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  laya_error err = {0};
  tokenizer *t = tokenizer_load_memory((const char *)data, size, NULL, 0, &err);
  if (!t) return 0;
  static const char *texts[] = {"", "Hello world, it's 2024!", "  spaced   out\n\n\ttabs",
                                "日本語のテキスト", "ça marche 😀👩\u200d💻", "<mask> [MASK] <bos>",
                                "a\u0301e\u0300 \xef\xbc\xa1 \xe2\x85\xa0", "'S 'll 'VE 123456789"};
  ids_vec ids = {0};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    ids.n = 0;
    if (tokenizer_encode(t, texts[i], strlen(texts[i]), (int)i * 3, &ids, &err) == 0) {
      char *out = NULL;
      size_t len = 0;
      if (tokenizer_decode(t, ids.ids, ids.n, &out, &len, &err) == 0) free(out);
    }
  }
  int32_t any[] = {0, 1, 2, 3, 100, 255, -1, 1 << 30};
  char *out = NULL;
  size_t len = 0;
  if (tokenizer_decode(t, any, 8, &out, &len, &err) == 0) free(out);
  ids_vec_free(&ids);
  tokenizer_release(t);
  return 0;
}
