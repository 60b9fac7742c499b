/*
 * Robustness of the request path: thousands of deterministic mutations of the recorded parity
 * requests (byte flips, truncations, splices of one request into another, numbers swapped for
 * extremes) go through request binding, question validation, the sequence builder and decode.
 * The forward is replaced by a cheap stand-in (logits derived from the token ids), so this runs
 * in seconds under ASan. Every call must either succeed with a JSON result or fail with a message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "laya.h"
#include "model/engine.h"

static int fake_forward(void *ctx, const packed_batch *b, float *logits, float *act, laya_error *err) {
  (void)ctx;
  (void)err;
  for (int r = 0; r < b->n_rows; r++) {
    for (int k = b->marker_start[r]; k < b->marker_start[r + 1]; k++) {
      int pos = b->row_start[r] + b->markers[k] + 1;
      int32_t t = pos < b->row_start[r + 1] ? b->tokens[pos] : 0;
      logits[k] = (float)((t * 2654435761u) % 1000) / 250.0f - 2.0f;
    }
    act[2 * r] = 0.1f * (float)r;
    act[2 * r + 1] = -0.1f;
  }
  return 0;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  setenv("LAYA_BACKEND", "cpu-ref", 1);
  laya_options o;
  laya_options_init(&o);
  o.quiet = 1;
  laya_error err;
  laya_model *m = laya_open(argv[1], &o, &err);
  CHECK(m != NULL);
  FILE *f = fopen(argv[2], "rb");
  CHECK(f != NULL);
  if (!m || !f) return check_summary("model/engine_robust");
  /* the requests of the fixture cases */
  char **reqs = NULL;
  int n = 0, cap = 0;
  char *line = NULL;
  size_t lcap = 0;
  ssize_t got;
  arena a;
  arena_init(&a, 1 << 20);
  while ((got = getline(&line, &lcap, f)) > 0) {
    json_value *v = json_parse(line, (size_t)got, &a, NULL, &err);
    const json_value *r = v ? json_get(v, "request") : NULL, *api = v ? json_get(v, "api") : NULL;
    if (!r || r->type != JSON_STRING || !api) continue;
    if (n == cap) reqs = realloc(reqs, sizeof *reqs * (size_t)(cap = cap ? cap * 2 : 256));
    size_t l = strlen(r->s);
    reqs[n] = malloc(l + 2);
    reqs[n][0] = strcmp(api->s, "predict_batch") == 0 ? 'b' : 'p';
    memcpy(reqs[n] + 1, r->s, l + 1);
    n++;
  }
  free(line);
  fclose(f);
  CHECK(n > 100);
  static const char *const extremes[] = {"-1", "0", "1e308", "-0.0", "NaN", "null", "[]", "{}", "\"\"",
                                         "99999999999999999999999", "true", "\"[MASK]\"", "\"<mask>\""};
  int ok = 0, errors = 0, bad = 0;
  for (int it = 0; it < 3000; it++) {
    const char *base = reqs[next() % (uint32_t)n];
    bool batch = base[0] == 'b';
    size_t l = strlen(base + 1);
    char *t = malloc(l + 64 + 1024);
    memcpy(t, base + 1, l + 1);
    switch (it % 4) {
      case 0: /* flip a byte */
        t[next() % l] = (char)(next() & 0xFF);
        break;
      case 1: /* truncate */
        t[next() % l] = 0;
        break;
      case 2: { /* replace a number or literal with an extreme */
        size_t p = next() % l;
        while (p < l && !(t[p] >= '0' && t[p] <= '9')) p++;
        if (p < l) {
          size_t e = p;
          while (e < l && ((t[e] >= '0' && t[e] <= '9') || t[e] == '.')) e++;
          const char *x = extremes[next() % (sizeof extremes / sizeof *extremes)];
          char *u = malloc(l + 64);
          memcpy(u, t, p);
          strcpy(u + p, x);
          strcat(u, t + e);
          free(t);
          t = u;
        }
        break;
      }
      default: { /* splice the tail of another request */
        const char *o2 = reqs[next() % (uint32_t)n] + 1;
        size_t l2 = strlen(o2), cut = next() % l, from = next() % l2;
        size_t tail = l2 - from < 1000 ? l2 - from : 1000;
        memcpy(t + cut, o2 + from, tail);
        t[cut + tail] = 0;
        break;
      }
    }
    arena ra;
    arena_init(&ra, 1 << 14);
    json_value *req = json_parse(t, strlen(t), &ra, NULL, &err);
    if (!req) {
      errors++;
    } else {
      engine_call c;
      const json_value *st = NULL, *qs = NULL;
      strbuf out;
      sb_init(&out);
      int rc = engine_parse_request(req, batch, &c, &st, &qs, &err);
      if (!rc) {
        json_value one = {.type = JSON_ARRAY, .n = 1, .items = (json_value *)st};
        c.forward_override = fake_forward;
        rc = engine_predict_batch(m, batch ? st : &one, qs, &c, &out, &err);
      }
      if (rc) {
        errors++;
        if (!err.message[0]) bad++;
      } else {
        arena oa;
        arena_init(&oa, 1 << 14);
        if (json_parse(out.data, out.len, &oa, NULL, &err))
          ok++;
        else
          bad++;
        arena_free(&oa);
      }
      sb_free(&out);
    }
    arena_free(&ra);
    free(t);
  }
  printf("engine_robust: %d answered, %d refused with a message, %d bad\n", ok, errors, bad);
  CHECK(bad == 0);
  CHECK(ok > 100 && errors > 100);
  for (int i = 0; i < n; i++) free(reqs[i]);
  free(reqs);
  arena_free(&a);
  laya_close(m);
  return check_summary("model/engine_robust");
}
