/*
 * test_tokenizer.c: loading rules, the shared cache, roles, error messages, and the cost of a long
 * unspaced piece.
 *
 *   test_tokenizer SHARED_TOKENIZERS_DIR FIXTURES_DIR
 *
 * Roles are compared with tests/fixtures/tokenizer/roles.json (transformers' view of the same
 * files, written by tools/tokenizer/gen_roles.py); parity of ids is test_parity's job.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "core/json.h"
#include "tokenizer/tokenizer.h"

static const char *shared, *fixtures;

static char *path_of(const char *base, const char *rest) {
  static char buf[8][4096];
  static int k;
  char *p = buf[k++ & 7];
  snprintf(p, 4096, "%s/%s", base, rest);
  return p;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_cache(void) {
  laya_error err = {0};
  tokenizer *a = tokenizer_load(path_of(fixtures, "tokenizers/mmbert-mini"), &err);
  tokenizer *b = tokenizer_load(path_of(fixtures, "tokenizers/mmbert-mini/tokenizer.json"), &err);
  tokenizer *c = tokenizer_load(path_of(fixtures, "tokenizers/modernbert-mini"), &err);
  CHECK(a && b && c);
  CHECK(a == b); /* one parse per file, whether named by its directory or itself */
  CHECK(a != c);
  tokenizer_release(a);
  /* b still holds it: still usable */
  ids_vec ids = {0};
  CHECK(tokenizer_encode(b, "hello", 5, 0, &ids, &err) == 0 && ids.n > 0);
  tokenizer *d = tokenizer_load(path_of(fixtures, "tokenizers/mmbert-mini"), &err);
  CHECK(d == b);
  tokenizer_release(b);
  tokenizer_release(d);
  tokenizer_release(c);
  ids_vec_free(&ids);
}

static void test_roles(void) {
  arena a;
  arena_init(&a, 1 << 16);
  laya_error err = {0};
  FILE *f = fopen(path_of(fixtures, "tokenizer/roles.json"), "rb");
  CHECK(f != NULL);
  if (!f) return;
  static char text[1 << 16];
  size_t n = fread(text, 1, sizeof text, f);
  fclose(f);
  json_value *roles = json_parse(text, n, &a, NULL, &err);
  CHECK(roles && roles->type == JSON_OBJECT);
  for (uint32_t i = 0; roles && i < roles->n; i++) {
    const char *name = roles->members[i].key;
    const json_value *want = &roles->members[i].value;
    char sub[256];
    snprintf(sub, sizeof sub, "tokenizers/%s", name);
    const char *dir = !strcmp(name, "llama3") ? path_of(shared, "llama3") : path_of(fixtures, sub);
    tokenizer *t = tokenizer_load(dir, &err);
    CHECK(t != NULL);
    if (!t) continue;
    const tokenizer_roles *r = tokenizer_get_roles(t);
    CHECK(r->cls_id == json_get(want, "cls_id")->i);
    CHECK(r->sep_id == json_get(want, "sep_id")->i);
    CHECK(r->pad_id == json_get(want, "pad_id")->i);
    CHECK(r->mask_id == json_get(want, "mask_id")->i);
    CHECK(r->unk_id == json_get(want, "unk_id")->i);
    const json_value *mt = json_get(want, "mask_token");
    if (mt->type == JSON_STRING)
      CHECK_STREQ(r->mask_token, mt->s);
    else
      CHECK(r->mask_token == NULL);
    tokenizer_release(t);
  }
  arena_free(&a);
}

/* A tokenizer.json with one component swapped for `component` must be refused, naming it. */
static void refused(const char *json, const char *needle) {
  laya_error err = {0};
  tokenizer *t = tokenizer_load_memory(json, strlen(json), NULL, 0, &err);
  CHECK(t == NULL);
  if (t) tokenizer_release(t);
  if (!strstr(err.message, needle)) {
    fprintf(stderr, "error \"%s\" does not mention \"%s\"\n", err.message, needle);
    CHECK(0);
  }
}

#define TINY_MODEL "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [\"a b\"]}"

static void test_refusals(void) {
  refused("{\"normalizer\": {\"type\": \"BertNormalizer\"}, " TINY_MODEL "}", "BertNormalizer");
  refused("{\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}, {\"type\": \"Precompiled\"}]}, " TINY_MODEL "}",
          "Precompiled");
  refused("{\"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"}, " TINY_MODEL "}", "BertPreTokenizer");
  refused("{\"pre_tokenizer\": {\"type\": \"UnicodeScripts\"}, " TINY_MODEL "}", "UnicodeScripts");
  refused("{\"decoder\": {\"type\": \"WordPiece\"}, " TINY_MODEL "}", "WordPiece");
  refused("{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", 0.0]]}}", "Unigram");
  refused("{\"model\": {\"type\": \"WordLevel\", \"vocab\": {\"a\": 0}}}", "WordLevel");
  refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a b\"]}}", "\"b\" is not in the vocabulary");
  refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a b\"]}}", "merged token \"ab\"");
  refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a  a\"]}}", "exactly one space");
  refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"\\ud800\": 0}, \"merges\": []}}", "lone surrogate");
  refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -1}, \"merges\": []}}", "integers");
  refused("{\"model\": {\"type\": \"BPE\", \"dropout\": 0.1, \"vocab\": {\"a\": 0}, \"merges\": []}}", "dropout");
  refused("{\"version\": \"2.0\", " TINY_MODEL "}", "version");
  refused("{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\"}, \"behavior\": \"Isolated\", \"invert\": false}, " TINY_MODEL "}",
          "invalid regex");
  refused("{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \"x\"}, \"behavior\": \"Sideways\", \"invert\": false}, " TINY_MODEL "}",
          "behavior");
  refused("{" TINY_MODEL ", \"added_tokens\": [{\"id\": 3, \"content\": \"x\"}]}", "single_word");
  refused("{" TINY_MODEL ", }", "byte 82: expected a string key");
  refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}}", "merges");
  laya_error err = {0};
  CHECK(tokenizer_load("/nonexistent/tokenizer", &err) == NULL && err.code == LAYA_ERR_IO);
}

static void test_encode_errors(void) {
  laya_error err = {0};
  tokenizer *t = tokenizer_load(path_of(fixtures, "tokenizers/modernbert-mini"), &err);
  CHECK(t != NULL);
  if (!t) return;
  ids_vec ids = {0};
  /* a lone surrogate as the JSON reader keeps it (WTF-8), at byte 2 */
  CHECK(tokenizer_encode(t, "ab\xed\xa0\x80", 5, 0, &ids, &err) != 0);
  CHECK(strstr(err.message, "byte 2") && strstr(err.message, "surrogate"));
  CHECK(tokenizer_encode(t, "abc\xff", 4, 0, &ids, &err) != 0 && strstr(err.message, "byte 3"));
  CHECK(ids.n == 0);
  /* appending: out->n is not reset, truncation counts only the new ids */
  CHECK(tokenizer_encode(t, "hello world", 11, 0, &ids, &err) == 0);
  size_t one = ids.n;
  CHECK(tokenizer_encode(t, "hello world", 11, 1, &ids, &err) == 0 && ids.n == one + 1 && ids.ids[one] == ids.ids[0]);
  char *text = NULL;
  size_t len = 99;
  CHECK(tokenizer_decode(t, NULL, 0, &text, &len, &err) == 0 && len == 0 && text && !text[0]);
  free(text);
  /* token lookups agree with each other */
  size_t tl;
  const char *tok = tokenizer_id_to_token(t, ids.ids[0], &tl);
  CHECK(tok && tokenizer_token_to_id(t, tok, tl) == ids.ids[0]);
  CHECK(tokenizer_id_to_token(t, -1, &tl) == NULL && tokenizer_id_to_token(t, 1 << 30, &tl) == NULL);
  ids_vec_free(&ids);
  tokenizer_release(t);
}

/* Gemma hands a whole unspaced CJK text to BPE as one piece: it must stay near-linear. */
static void test_long_piece(void) {
  laya_error err = {0};
  tokenizer *t = tokenizer_load(path_of(shared, "gemma3"), &err);
  CHECK(t != NULL);
  if (!t) return;
  size_t chars = 200000;
  char *s = malloc(chars * 3 + 1);
  uint32_t x = 12345;
  for (size_t i = 0; i < chars; i++) {
    x = x * 1103515245u + 12345u;
    uint32_t cp = 0x4E00 + (x >> 8) % 0x5000;
    s[3 * i] = (char)(0xE0 | (cp >> 12));
    s[3 * i + 1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    s[3 * i + 2] = (char)(0x80 | (cp & 0x3F));
  }
  ids_vec ids = {0};
  double t0 = now();
  CHECK(tokenizer_encode(t, s, chars * 3, 0, &ids, &err) == 0);
  double dt = now() - t0;
  printf("200,000 CJK characters as one piece: %zu ids in %.3f s\n", ids.n, dt);
  CHECK(ids.n > 1000);
  CHECK(dt < 10.0); /* quadratic merging would take minutes */
  free(s);
  ids_vec_free(&ids);
  tokenizer_release(t);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s SHARED_TOKENIZERS_DIR FIXTURES_DIR\n", argv[0]);
    return 2;
  }
  shared = argv[1];
  static char fix[4096];
  snprintf(fix, sizeof fix, "%s/..", argv[2]); /* argv[2] is tests/fixtures/tokenizers */
  fixtures = fix;
  test_cache();
  test_roles();
  test_refusals();
  test_encode_errors();
  test_long_piece();
  return check_summary("tokenizer/unit");
}
