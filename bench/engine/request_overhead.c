/*
 * request_overhead: what one request costs outside the forward pass (parse + validate + tokenise
 * + decode + write), through the public API, with the model's forward replaced by a stand-in that
 * writes fixed pseudo-random logits. Also counts the allocations of each request (malloc, calloc,
 * realloc, posix_memalign calls, counted by this program's own definitions of them, which every
 * library call reaches). Built from public and engine headers only, so the same file builds
 * against an older library for a before/after comparison (BENCHMARKS.md, "Typed core").
 *
 *   request_overhead bench <fixtures dir> [rounds]   per-API CPU time and allocations per request
 *   request_overhead dump <fixtures dir>             every API's output for the fixtures' requests
 *                                                    (real forward, for byte comparisons)
 *   request_overhead one <fixtures dir> <api> <n>    n calls of one API's first request (for a
 *                                                    debugger counting json_parse calls)
 *
 * <fixtures dir> is tests/fixtures (ckpt/, parity/, surfaces/). Single-threaded.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/json.h"
#include "core/strbuf.h"
#include "laya.h"
#include "model/engine.h"

/* ---- allocation counter ---- */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);
static unsigned long n_alloc;
void *malloc(size_t n) {
  n_alloc++;
  return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
  n_alloc++;
  return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
  n_alloc++;
  return __libc_realloc(p, n);
}
int posix_memalign(void **p, size_t al, size_t n) {
  n_alloc++;
  *p = __libc_memalign(al, n);
  return *p ? 0 : 12;
}
void *aligned_alloc(size_t al, size_t n) {
  n_alloc++;
  return __libc_memalign(al, n);
}
void free(void *p) { __libc_free(p); }

/* ---- the stand-in forward ---- */
static int n_act_of_model = 2;
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
  for (int i = 0; i < pb->n_rows * n_act_of_model; i++) act[i] = (float)(i % 3) - 1.0f;
  return 0;
}

static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- requests ---- */
enum { API_PREDICT, API_BATCH, API_DECIDE, API_DECIDE_BATCH, API_LONG, N_API };
static const char *const kApi[N_API] = {"predict", "predict_batch", "decide", "decide_batch", "predict_long"};

typedef struct req {
  int api;
  const char *ck;
  char *text;
} req;

static req *reqs;
static int n_reqs;

static void add(int api, const char *ck, const char *text) {
  reqs = realloc(reqs, sizeof *reqs * (size_t)(n_reqs + 1));
  reqs[n_reqs++] = (req){api, ck, strdup(text)};
}

static int api_of(const char *s) {
  for (int i = 0; i < N_API; i++)
    if (!strcmp(kApi[i], s)) return i;
  return -1;
}

static void load(const char *fx) {
  static const char *const cks[2] = {"modernbert-tiny", "mmbert-tiny"};
  char path[4096];
  arena a;
  arena_init(&a, 1 << 20);
  laya_error err;
  char *line = NULL;
  size_t cap = 0;
  ssize_t got;
  for (int c = 0; c < 2; c++) {
    snprintf(path, sizeof path, "%s/parity/%s/cases.jsonl", fx, cks[c]);
    FILE *f = fopen(path, "rb");
    while (f && (got = getline(&line, &cap, f)) > 0) {
      json_value *v = json_parse(line, (size_t)got, &a, NULL, &err);
      const json_value *api = v ? json_get(v, "api") : NULL, *agent = v ? json_get(v, "agent") : NULL;
      const json_value *lt = agent ? json_get(agent, "lang_temperatures") : NULL;
      const json_value *rq = v ? json_get(v, "request") : NULL;
      if (!api || !rq || rq->type != JSON_STRING || (lt && lt->type != JSON_NULL) || api_of(api->s) < 0) continue;
      add(api_of(api->s), cks[c], rq->s);
    }
    if (f) fclose(f);
  }
  static const char *const surf[2] = {"decide.jsonl", "predict_long.jsonl"};
  for (int s = 0; s < 2; s++) {
    snprintf(path, sizeof path, "%s/surfaces/%s", fx, surf[s]);
    FILE *f = fopen(path, "rb");
    while (f && (got = getline(&line, &cap, f)) > 0) {
      json_value *v = json_parse(line, (size_t)got, &a, NULL, &err);
      const json_value *call = v ? json_get(v, "call") : NULL, *ck = v ? json_get(v, "checkpoint") : NULL;
      const json_value *rq = v ? json_get(v, "request") : NULL;
      if (!call || !ck || !rq || api_of(call->s) < 0) continue;
      strbuf sb;
      sb_init(&sb);
      json_dump(&sb, rq, NULL);
      add(api_of(call->s), strcmp(ck->s, "mmbert-tiny") ? cks[0] : cks[1], sb_cstr(&sb));
      sb_free(&sb);
    }
    if (f) fclose(f);
  }
  free(line);
  arena_free(&a);
}

static int call_api(laya_model *m, int api, const char *text, char **out, laya_error *err) {
  switch (api) {
    case API_PREDICT: return laya_predict(m, text, out, err);
    case API_BATCH: return laya_predict_batch(m, text, out, err);
    case API_DECIDE: return laya_decide(m, text, out, err);
    case API_DECIDE_BATCH: return laya_decide_batch(m, text, out, err);
    default: return laya_predict_long(m, text, out, err);
  }
}

static laya_model *open_model(const char *fx, const char *ck) {
  char path[4096];
  snprintf(path, sizeof path, "%s/ckpt/%s", fx, ck);
  laya_options o;
  laya_options_init(&o);
  o.quiet = 1;
  o.precision = "fp32";
  laya_error err;
  laya_model *m = laya_open(path, &o, &err);
  if (!m) fprintf(stderr, "%s: %s\n", path, err.message);
  return m;
}

static void print_result(const char *tag, int rc, const laya_error *err, const char *out) {
  if (rc) printf("%s\t%d\t%s\t%s\n", tag, rc, err->kind, err->message);
  else printf("%s\t0\t\t%s\n", tag, out);
}

static laya_router *open_router(const char *fx);

/* Every API over its requests, then the router and prepared jobs over some of them. */
static int dump(const char *fx) {
  laya_model *ms[2] = {open_model(fx, "modernbert-tiny"), open_model(fx, "mmbert-tiny")};
  if (!ms[0] || !ms[1]) return 1;
  for (int i = 0; i < n_reqs; i++) {
    char *out = NULL;
    laya_error err;
    laya_model *m = ms[strcmp(reqs[i].ck, "modernbert-tiny") != 0];
    int rc = call_api(m, reqs[i].api, reqs[i].text, &out, &err);
    char tag[64];
    snprintf(tag, sizeof tag, "%s/%d/%s", reqs[i].ck, i, kApi[reqs[i].api]);
    print_result(tag, rc, &err, out);
    free(out);
    out = NULL;
    if (reqs[i].api == API_BATCH) { /* the same request as a prepared job */
      laya_job *j = NULL;
      rc = laya_job_prepare(m, reqs[i].text, &j, &err);
      if (!rc) rc = laya_jobs_run(m, &j, 1, &err);
      if (!rc) rc = laya_job_result(j, &out, &err);
      snprintf(tag, sizeof tag, "%s/%d/job", reqs[i].ck, i);
      print_result(tag, rc, &err, out);
      free(out);
      out = NULL;
      laya_job_free(j);
    }
  }
  laya_error err;
  laya_router *r = open_router(fx);
  if (!r) return 1;
  strbuf batch;
  sb_init(&batch);
  sb_puts(&batch, "{\"requests\": [");
  int nb = 0;
  for (int i = 0; i < n_reqs; i++) {
    if (reqs[i].api == API_BATCH || reqs[i].api == API_DECIDE_BATCH) continue;
    char *out = NULL;
    int rc = reqs[i].api == API_PREDICT  ? laya_router_predict(r, reqs[i].text, &out, &err)
             : reqs[i].api == API_DECIDE ? laya_router_decide(r, reqs[i].text, &out, &err)
                                         : laya_router_predict_long(r, reqs[i].text, &out, &err);
    char tag[64];
    snprintf(tag, sizeof tag, "router/%d/%s", i, kApi[reqs[i].api]);
    print_result(tag, rc, &err, out);
    if (!rc && reqs[i].api == API_PREDICT && nb < 40) {
      if (nb++) sb_puts(&batch, ", ");
      sb_puts(&batch, reqs[i].text);
    }
    free(out);
  }
  sb_puts(&batch, "], \"sort_by_length\": true}");
  char *out = NULL;
  int rc = laya_router_predict_batch(r, sb_cstr(&batch), &out, &err);
  print_result("router/batch", rc, &err, out);
  free(out);
  sb_free(&batch);
  laya_router_close(r);
  laya_close(ms[0]);
  laya_close(ms[1]);
  return 0;
}

static int bench(const char *fx, int rounds) {
  laya_model *m = open_model(fx, "modernbert-tiny");
  if (!m) return 1;
  n_act_of_model = m->ck.w.n_act;
  m->be->forward = stub_forward;
  printf("%-14s %8s %10s %12s\n", "api", "requests", "us/request", "allocs/request");
  for (int api = 0; api < N_API; api++) {
    /* warm: once through, and only requests the engine answers */
    int n = 0;
    for (int i = 0; i < n_reqs; i++) {
      if (reqs[i].api != api || strcmp(reqs[i].ck, "modernbert-tiny")) continue;
      char *out = NULL;
      laya_error err;
      if (call_api(m, api, reqs[i].text, &out, &err) == 0) n++;
      else reqs[i].api = -1; /* errors are not the path measured */
      free(out);
    }
    if (!n) continue;
    unsigned long a0 = n_alloc;
    double t0 = cpu_s();
    for (int r = 0; r < rounds; r++)
      for (int i = 0; i < n_reqs; i++) {
        if (reqs[i].api != api || strcmp(reqs[i].ck, "modernbert-tiny")) continue;
        char *out = NULL;
        laya_error err;
        call_api(m, api, reqs[i].text, &out, &err);
        free(out);
      }
    double dt = cpu_s() - t0;
    double calls = (double)n * rounds;
    printf("%-14s %8d %10.1f %12.1f\n", kApi[api], n, dt / calls * 1e6, (double)(n_alloc - a0) / calls);
  }
  laya_close(m);
  return 0;
}

static laya_router *open_router(const char *fx) {
  char cfg[8192];
  snprintf(cfg, sizeof cfg,
           "{\"models\": {\"english\": \"%s/ckpt/modernbert-tiny\", \"multilingual\": \"%s/ckpt/mmbert-tiny\"}, "
           "\"max_loaded\": 2, \"offline\": true}",
           fx, fx);
  laya_error err;
  laya_router *r = laya_router_open(cfg, &err);
  if (!r) fprintf(stderr, "router: %s\n", err.message);
  return r;
}

/* n calls of one API's first answered request; "router_predict", "router_decide" and
 * "router_predict_long" go through a Router (real forward: the counts, not the time, matter). */
static int one(const char *fx, const char *api_name, int n) {
  bool routed = !strncmp(api_name, "router_", 7);
  int api = api_of(routed ? api_name + 7 : api_name);
  laya_model *m = routed ? NULL : open_model(fx, "modernbert-tiny");
  laya_router *r = routed ? open_router(fx) : NULL;
  if ((!m && !r) || api < 0) return 1;
  if (m) {
    n_act_of_model = m->ck.w.n_act;
    m->be->forward = stub_forward;
  }
  for (int i = 0; i < n_reqs; i++) {
    if (reqs[i].api != api || strcmp(reqs[i].ck, "modernbert-tiny")) continue;
    for (int k = 0; k <= n; k++) { /* the first call (k = 0) only finds an answered request */
      char *out = NULL;
      laya_error err;
      int rc = !r                   ? call_api(m, api, reqs[i].text, &out, &err)
               : api == API_PREDICT ? laya_router_predict(r, reqs[i].text, &out, &err)
               : api == API_DECIDE  ? laya_router_decide(r, reqs[i].text, &out, &err)
                                    : laya_router_predict_long(r, reqs[i].text, &out, &err);
      free(out);
      if (rc) break;
      if (k == 0) fprintf(stderr, "request %d of %s, %d calls\n", i, api_name, n);
      if (k == n) goto done;
    }
  }
done:
  if (m) laya_close(m);
  if (r) laya_router_close(r);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: request_overhead bench|dump|one <fixtures dir> [rounds | api n]\n");
    return 2;
  }
  /* dump: the fast CPU backend (fp32), deterministic and far quicker than the reference */
  setenv("LAYA_BACKEND", !strcmp(argv[1], "dump") ? "cpu" : "cpu-ref", 0);
  load(argv[2]);
  if (!strcmp(argv[1], "dump")) return dump(argv[2]);
  if (!strcmp(argv[1], "one") && argc > 4) return one(argv[2], argv[3], atoi(argv[4]));
  return bench(argv[2], argc > 3 ? atoi(argv[3]) : 20);
}
