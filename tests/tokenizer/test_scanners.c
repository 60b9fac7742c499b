/*
 * test_scanners.c: the hand scanners for the GPT-2 and Llama-3 split regexes must cut every
 * corpus string exactly where Oniguruma (the reference's regex engine, same 6.9.8 version) cuts
 * it with the original pattern. Also a few strings chosen for the scanners' corner cases.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/json.h"
#include "tokenizer/internal.h"

static const char G[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
static const char L[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static size_t compared, differ;

static void compare(const tk_pattern *p, const char *s, size_t n) {
  span_vec a = {0}, b = {0};
  laya_error err = {0};
  CHECK(pattern_find(p, s, n, &a, &err) == 0);
  CHECK(pattern_find_regex(p, s, n, &b, &err) == 0);
  compared++;
  if (a.n != b.n || (a.n && memcmp(a.v, b.v, a.n * sizeof *a.v) != 0)) {
    if (differ++ < 10) {
      strbuf sb;
      sb_init(&sb);
      json_dump_string(&sb, s, n, true);
      fprintf(stderr, "scanner differs from Oniguruma for /%.20s.../ on %.200s (%zu vs %zu spans)\n", p->lit,
              sb_cstr(&sb), a.n, b.n);
      sb_free(&sb);
    }
  }
  free(a.v);
  free(b.v);
}

int main(int argc, char **argv) {
  arena a;
  arena_init(&a, 1 << 20);
  laya_error err = {0};
  tk_pattern g, l;
  CHECK(pattern_compile(&g, G, strlen(G), true, &a, &err) == 0 && g.kind == PAT_GPT2);
  CHECK(pattern_compile(&l, L, strlen(L), true, &a, &err) == 0 && l.kind == PAT_LLAMA3);
  static const char *edge[] = {"", " ", "  ", "a  b", "a \tb", "\t\ta", "'s", "'S", "'ſ", "'ll'LL'Ll",
                               "x'", "''s", " 'sx", "123456789", " 12", "\r\n\r\nx", " \n  \n  x",
                               "  \xe3\x80\x80" "x", "\xc2\xa0\xc2\xa0" "a", "a\xe2\x80\xa8 b", "?!\n\n", " ?! x",
                               "\xe2\x85\xa0\xe2\x85\xa1\xe2\x85\xa2\xe2\x85\xa3", "\xcc\x81\xcc\x81" "a", "end   "};
  for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
    compare(&g, edge[i], strlen(edge[i]));
    compare(&l, edge[i], strlen(edge[i]));
  }
  if (argc > 1) {
    FILE *f = fopen(argv[1], "rb");
    CHECK(f != NULL);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while (f && (n = getline(&line, &cap, f)) > 0) {
      arena_reset(&a);
      json_value *v = json_parse(line, (size_t)n, &a, NULL, &err);
      if (!v || v->type != JSON_STRING || v->surrogate) continue;
      compare(&g, v->s, v->n);
      compare(&l, v->s, v->n);
    }
    free(line);
    if (f) fclose(f);
  }
  CHECK(compared > 40000 || argc < 2);
  CHECK(differ == 0);
  printf("scanners: %zu texts compared with Oniguruma, %zu differ\n", compared, differ);
  pattern_free(&g);
  pattern_free(&l);
  arena_free(&a);
  return check_summary("tokenizer/scanners");
}
