/*
 * serve_finish: the server's step from a prepared job's outputs to the HTTP body, both ways this
 * build has, on the same jobs in the same run (BENCHMARKS.md, "Typed core: request overhead"):
 *   text:  laya_job_result -> json_parse -> serve_finish_result (routing parsed and set,
 *          x_jev_confidence added) -> compact json_dump   (what laya-serve did before)
 *   typed: engine_job_results -> serve_write_body (rj_served_tournament per result, the one
 *          body writer serve_job_finish and serve_job_run_alone call)   (what it does now)
 * Each job's two bodies must be byte-identical (checked, non-strict and strict). The forward is a
 * stand-in with fixed pseudo-random logits. Usage: serve_finish <fixtures dir> [rounds]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "laya.h"
#include "model/engine.h"
#include "model/typed.h"
#include "serve/serve.h"

static int stub_forward(struct backend *b, backend_worker *w, const packed_batch *pb, float *logits, float *act,
                        laya_error *err) {
  (void)b;
  (void)w;
  (void)err;
  uint32_t x = 2463534242u;
  for (int i = 0; i < pb->marker_start[pb->n_rows]; i++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    logits[i] = (float)(x % 2000) / 250.0f - 4.0f;
  }
  for (int i = 0; i < pb->n_rows * 2; i++) act[i] = (float)(i % 3) - 1.0f;
  return 0;
}

static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static const char *kRouting =
    "{\"model\": \"english\", \"repo\": \"tests/fixtures/ckpt/modernbert-tiny\", \"reason\": \"English Latin "
    "text\", \"detection\": {\"script\": \"latin\", \"script_profile\": {\"latin\": 1.0}, \"language\": \"en\", "
    "\"is_english\": true, \"language_undecided\": false, \"diacritic_rate\": 0.0, \"non_latin_fraction\": 0.0, "
    "\"mixed_segment\": null}, \"workflow\": null}";

/* The body of one job, the old way. */
static int body_text(laya_job *j, bool strict, strbuf *body) {
  char *out = NULL;
  laya_error e;
  if (laya_job_result(j, &out, &e)) return 1;
  arena a;
  arena_init(&a, 1 << 14);
  json_value *v = json_parse(out, strlen(out), &a, NULL, &e);
  laya_free(out);
  for (uint32_t i = 0; v && i < v->n; i++) {
    if (i) sb_putc(body, ',');
    serve_finish_result(&v->items[i], kRouting, strict, &a, body);
  }
  arena_free(&a);
  return v ? 0 : 1;
}

/* The body of one job, typed. */
static int body_typed(laya_job *j, bool strict, strbuf *body) {
  arena a;
  arena_init(&a, 1 << 14);
  state_result *r;
  long n;
  laya_error e;
  int rc = engine_job_results(j, &a, &r, &n, &e);
  char **routing = rc ? NULL : arena_alloc(&a, sizeof *routing * (size_t)(n ? n : 1));
  for (long i = 0; routing && i < n; i++) routing[i] = (char *)kRouting;
  /* the text way writes the results comma-joined: compared without the batch wrapper */
  if (routing) serve_write_body(body, r, (size_t)n, routing, strict, false, NULL, NULL);
  arena_free(&a);
  return rc || !routing;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  int rounds = argc > 2 ? atoi(argv[2]) : 20;
  setenv("LAYA_BACKEND", "cpu-ref", 1);
  char path[4096];
  snprintf(path, sizeof path, "%s/ckpt/modernbert-tiny", argv[1]);
  laya_options o;
  laya_options_init(&o);
  o.quiet = 1;
  laya_error err;
  laya_model *m = laya_open(path, &o, &err);
  if (!m) return 1;
  m->be->forward = stub_forward;
  snprintf(path, sizeof path, "%s/parity/modernbert-tiny/cases.jsonl", argv[1]);
  FILE *f = fopen(path, "rb");
  if (!f) return 1;
  laya_job **jobs = NULL;
  int n = 0, differ = 0, shared = 0;
  char *line = NULL;
  size_t cap = 0;
  ssize_t got;
  while ((got = getline(&line, &cap, f)) > 0) {
    arena a;
    arena_init(&a, 1 << 16);
    json_value *c = json_parse(line, (size_t)got, &a, NULL, &err);
    const json_value *api = c ? json_get(c, "api") : NULL, *rq = c ? json_get(c, "request") : NULL;
    const json_value *agent = c ? json_get(c, "agent") : NULL;
    const json_value *lt = agent ? json_get(agent, "lang_temperatures") : NULL;
    laya_job *j = NULL;
    if (api && rq && json_get(c, "result") && (!lt || lt->type == JSON_NULL)) {
      strbuf req;
      sb_init(&req);
      if (!strcmp(api->s, "predict")) { /* a batch of the one state, as the server prepares it */
        json_value *v = json_parse(rq->s, rq->n, &a, NULL, &err);
        sb_puts(&req, "{\"states\": [");
        json_dump(&req, json_get(v, "state"), NULL);
        sb_puts(&req, "]");
        for (uint32_t k = 0; k < v->n; k++)
          if (strcmp(v->members[k].key, "state")) {
            sb_printf(&req, ", \"%s\": ", v->members[k].key);
            json_dump(&req, &v->members[k].value, NULL);
          }
        sb_putc(&req, '}');
      } else {
        sb_puts(&req, rq->s);
      }
      if (laya_job_prepare(m, sb_cstr(&req), &j, &err) || laya_jobs_run(m, &j, 1, &err)) {
        laya_job_free(j);
        j = NULL;
      }
      sb_free(&req);
    }
    arena_free(&a);
    if (!j) continue;
    jobs = realloc(jobs, sizeof *jobs * (size_t)(n + 1));
    jobs[n++] = j;
  }
  free(line);
  fclose(f);
  for (int s = 0; s < 2; s++)
    for (int i = 0; i < n; i++) {
      strbuf x, y;
      sb_init(&x);
      sb_init(&y);
      body_text(jobs[i], s, &x);
      body_typed(jobs[i], s, &y);
      if (x.len != y.len || (x.len && memcmp(x.data, y.data, x.len))) {
        /* the text way parses the result, which keeps one of two labels rendering to the same
         * key (and computes x_jev_confidence without the other); the typed body keeps both, as
         * Laya's server does. Any other difference is a failure. */
        arena a;
        arena_init(&a, 1 << 14);
        json_value *v = json_parse(y.data, y.len, &a, NULL, &err);
        strbuf re;
        sb_init(&re);
        json_dump_opts co = {",", ":", false, -1};
        if (v) json_dump(&re, v, &co);
        bool shared_keys = v && re.len < y.len;
        sb_free(&re);
        arena_free(&a);
        if (shared_keys) {
          shared++;
        } else {
          differ++;
          fprintf(stderr, "job %d (strict %d) differs:\n  text:  %.300s\n  typed: %.300s\n", i, s, x.data, y.data);
        }
      }
      sb_free(&x);
      sb_free(&y);
    }
  double t[2];
  for (int way = 0; way < 2; way++) {
    double t0 = cpu_s();
    for (int r = 0; r < rounds; r++)
      for (int i = 0; i < n; i++) {
        strbuf b;
        sb_init(&b);
        if (way == 0) body_text(jobs[i], false, &b);
        else body_typed(jobs[i], false, &b);
        sb_free(&b);
      }
    t[way] = (cpu_s() - t0) / ((double)n * rounds) * 1e6;
  }
  printf("serve finish step over %d jobs x %d rounds: text %.1f us/job, typed %.1f us/job (%.2fx); "
         "%d of %d bodies identical, %d differ only by labels sharing a key, %d differ otherwise\n",
         n, rounds, t[0], t[1], t[0] / t[1], 2 * n - shared - differ, 2 * n, shared, differ);
  for (int i = 0; i < n; i++) laya_job_free(jobs[i]);
  free(jobs);
  laya_close(m);
  return differ ? 1 : 0;
}
