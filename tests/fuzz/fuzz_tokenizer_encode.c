/*
 * fuzz_tokenizer_encode.c: libFuzzer target -- arbitrary bytes encoded by real tokenizers (the
 * ModernBERT-style and mmBERT-style fixtures, and Llama 3 / Gemma 3 when LAYA_FUZZ_SHARED points
 * at ../shared), with truncation, then decoded; arbitrary ids decoded. Also checks the hand
 * scanners for the GPT-2 and Llama-3 regexes against Oniguruma on the same bytes (abort on any
 * difference: a finding).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/internal.h"
#include "tokenizer/tokenizer.h"

static tokenizer *toks[4];
static int n_toks;
static tk_pattern gpt2, llama3;

static void load_one(const char *dir) {
  laya_error err = {0};
  tokenizer *t = tokenizer_load(dir, &err);
  if (t) toks[n_toks++] = t;
  else fprintf(stderr, "fuzz: cannot load %s: %s\n", dir, err.message);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  load_one(LAYA_FIXTURES "/tokenizers/modernbert-mini");
  load_one(LAYA_FIXTURES "/tokenizers/mmbert-mini");
  if (n_toks != 2) abort(); /* the fixture tokenizers must load, or every run would test nothing */
  const char *shared = getenv("LAYA_FUZZ_SHARED");
  if (shared) {
    char p[4096];
    snprintf(p, sizeof p, "%s/tokenizers/llama3", shared);
    load_one(p);
    snprintf(p, sizeof p, "%s/tokenizers/gemma3", shared);
    load_one(p);
  }
  static arena a;
  arena_init(&a, 4096);
  laya_error err = {0};
  static const char g[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
  static const char l[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  if (pattern_compile(&gpt2, g, strlen(g), true, &a, &err) || pattern_compile(&llama3, l, strlen(l), true, &a, &err)) abort();
  return 0;
}

static void same_spans(const tk_pattern *p, const char *s, size_t n) {
  span_vec a = {0}, b = {0};
  laya_error err = {0};
  if (pattern_find(p, s, n, &a, &err) == 0 && pattern_find_regex(p, s, n, &b, &err) == 0) {
    if (a.n != b.n || (a.n && memcmp(a.v, b.v, a.n * sizeof *a.v) != 0)) {
      fprintf(stderr, "scanner and Oniguruma disagree on /%s/\n", p->lit);
      abort();
    }
  }
  free(a.v);
  free(b.v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  ids_vec ids = {0};
  laya_error err = {0};
  bool valid = utf8_validate(s, size) == size;
  if (valid) {
    same_spans(&gpt2, s, size);
    same_spans(&llama3, s, size);
  }
  for (int k = 0; k < n_toks; k++) {
    ids.n = 0;
    int rc = tokenizer_encode(toks[k], s, size, size & 1 ? (int)(size % 64) : 0, &ids, &err);
    if ((rc == 0) != valid) {
      fprintf(stderr, "encode accepted invalid UTF-8 or refused valid UTF-8\n");
      abort();
    }
    if (rc == 0) {
      char *out = NULL;
      size_t len = 0;
      if (tokenizer_decode(toks[k], ids.ids, ids.n, &out, &len, &err) == 0) free(out);
    }
    /* the bytes as ids */
    size_t n = size / 4;
    int32_t *raw = malloc((n + 1) * sizeof *raw);
    for (size_t i = 0; i < n; i++) {
      uint32_t v;
      memcpy(&v, data + 4 * i, 4);
      raw[i] = (int32_t)(v % 300000u);
    }
    char *out = NULL;
    size_t len = 0;
    if (tokenizer_decode(toks[k], raw, n, &out, &len, &err) == 0) free(out);
    free(raw);
  }
  ids_vec_free(&ids);
  return 0;
}
