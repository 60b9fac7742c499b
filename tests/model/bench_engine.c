/*
 * bench_engine: CPU time of the request path outside the forward pass (binding, validation,
 * tokenisation, row building, decoding, JSON), per request, over the parity fixtures' successful
 * requests. The forward is a stand-in so only the engine is measured; bench_engine_py.py measures
 * Python Laya's same path (its model forward stubbed) on the same requests.
 * Usage: bench_engine <ckpt dir> <cases.jsonl> [rounds]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "laya.h"
#include "model/engine.h"

static int stub_forward(void *ctx, const packed_batch *b, float *logits, float *act, laya_error *err) {
  (void)ctx;
  (void)err;
  memset(logits, 0, sizeof(float) * (size_t)b->marker_start[b->n_rows]);
  memset(act, 0, sizeof(float) * (size_t)b->n_rows * 2);
  return 0;
}

static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  int rounds = argc > 3 ? atoi(argv[3]) : 5;
  setenv("LAYA_BACKEND", "cpu-ref", 1);
  laya_options o;
  laya_options_init(&o);
  o.quiet = 1;
  laya_error err;
  laya_model *m = laya_open(argv[1], &o, &err);
  if (!m) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  FILE *f = fopen(argv[2], "rb");
  if (!f) return 1;
  char *line = NULL;
  size_t cap = 0;
  ssize_t got;
  char **reqs = NULL;
  int n = 0;
  arena a;
  arena_init(&a, 1 << 20);
  while ((got = getline(&line, &cap, f)) > 0) {
    json_value *v = json_parse(line, (size_t)got, &a, NULL, &err);
    const json_value *api = v ? json_get(v, "api") : NULL, *agent = v ? json_get(v, "agent") : NULL;
    const json_value *lt = agent ? json_get(agent, "lang_temperatures") : NULL;
    if (!v || !json_get(v, "result") || !api || strcmp(api->s, "predict") != 0 || (lt && lt->type != JSON_NULL))
      continue;
    reqs = realloc(reqs, sizeof *reqs * (size_t)(n + 1));
    reqs[n++] = strdup(json_get(v, "request")->s);
  }
  free(line);
  fclose(f);
  double t0 = cpu_s();
  long calls = 0;
  for (int r = 0; r < rounds; r++)
    for (int i = 0; i < n; i++) {
      arena ra;
      arena_init(&ra, 1 << 14);
      json_value *req = json_parse(reqs[i], strlen(reqs[i]), &ra, NULL, &err);
      engine_call c;
      const json_value *st, *qs;
      strbuf out;
      sb_init(&out);
      if (req && !engine_parse_request(req, false, &c, &st, &qs, &err)) {
        json_value one = {.type = JSON_ARRAY, .n = 1, .items = (json_value *)st};
        c.forward_override = stub_forward;
        if (engine_predict_batch(m, &one, qs, &c, &out, &err)) fprintf(stderr, "%s\n", err.message);
      }
      calls++;
      sb_free(&out);
      arena_free(&ra);
    }
  double dt = cpu_s() - t0;
  printf("laya.c engine path: %d requests x %d rounds, %.1f us CPU per request\n", n, rounds, dt / (double)calls * 1e6);
  for (int i = 0; i < n; i++) free(reqs[i]);
  free(reqs);
  arena_free(&a);
  laya_close(m);
  return 0;
}
