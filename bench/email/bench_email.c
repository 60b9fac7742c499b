/* bench_email: laya_clean_email_text on the corpus emails of tests/fixtures/email/cases.jsonl
 * (the clean_email_body calls whose id is <lang>-<n>), bodies parsed before timing.
 *   bench_email CASES.jsonl [REPEATS]      (compare: bench_email.py, Python laya on the same) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/arena.h"
#include "core/json.h"
#include "laya.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_email CASES.jsonl [REPEATS]\n");
    return 2;
  }
  int reps = argc > 2 ? atoi(argv[2]) : 20;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return perror(argv[1]), 1;
  arena a;
  arena_init(&a, 1 << 20);
  const char **body = NULL;
  size_t *len = NULL, n = 0;
  char *line = NULL;
  size_t cap = 0;
  ssize_t k;
  while ((k = getline(&line, &cap, f)) > 0) {
    laya_error err;
    json_value *v = json_parse(line, (size_t)k, &a, NULL, &err);
    const json_value *id = json_get(v, "id"), *fn = json_get(v, "fn"), *kw = json_get(v, "kwargs");
    const json_value *b = json_get(kw, "body");
    if (!id || !fn || strcmp(fn->s, "clean_email_body") || !b || b->type != JSON_STRING) continue;
    if (id->n != 6 || id->s[2] != '-') continue; /* the corpus emails: "en-000" */
    body = realloc(body, (n + 1) * sizeof *body);
    len = realloc(len, (n + 1) * sizeof *len);
    body[n] = b->s;
    len[n++] = b->n;
  }
  free(line);
  fclose(f);
  char *out;
  size_t out_n;
  laya_error err;
  double t0 = now();
  laya_clean_email_text("x", 1, 3000, &out, &out_n, &err); /* compiles the rules */
  laya_free(out);
  double t1 = now();
  for (int r = 0; r < reps; r++)
    for (size_t i = 0; i < n; i++) {
      if (laya_clean_email_text(body[i], len[i], 3000, &out, &out_n, &err)) return fprintf(stderr, "%s\n", err.message), 1;
      laya_free(out);
    }
  double t2 = now();
  printf("laya.c laya_clean_email_text: %zu emails x %d: %.1f us per email (first call, compiling the rules: %.1f ms)\n",
         n, reps, (t2 - t1) * 1e6 / ((double)n * reps), (t1 - t0) * 1e3);
  free(body);
  free(len);
  arena_free(&a);
  return 0;
}
