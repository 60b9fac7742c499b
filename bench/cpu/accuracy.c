/*
 * accuracy.c: how far the fast CPU backend's bf16 and int8 answers move from fp32.
 *
 *   accuracy [--rows N] [--ref-rows K] [--seed S] [--only bf16|int8] [--no-esc] CKPT_DIR [CKPT_DIR ...]
 *
 * For each checkpoint, N question rows (random token ids of 40..300 tokens with 2..8 option
 * markers, every question type; or the real rows of tests/fixtures/parity/<name>/rows.jsonl when
 * that file exists) run through:
 *   - "cpu-ref", the plain fp32 reference, on the first K rows (it is slow at full size),
 *   - the fast backend in fp32, bf16 and int8 on all rows, and bf16 / int8 with precision escalation
 *     ("+esc", model/escalate.h: rows the low precision could move re-run in fp32; its bound here
 *     uses temperature 1, as dp below does), with the fraction of rows re-run.
 * Per precision it prints the largest change of any option probability (softmax over a row's
 * options, as Laya decodes them) and of the act probability, and how many rows keep their argmax,
 * against the fp32 reference: cpu-ref where it ran, the fast fp32 path (itself checked against
 * cpu-ref on those K rows, first line) elsewhere. "err / scale" is the worst row's max |d logit| over
 * its max |logit| (options; act logits): what escalation's relative error bound must cover.
 * Markdown table rows on stdout.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "model/escalate.h"
#include "acc_eval.h"
#include "ckpt_weights.h"
#include "fullsize_model.h"
#include "core/json.h"
#include "core/fsutil.h"

static uint64_t rng_state;
static uint64_t next_u64(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Laya-shaped rows: [CLS] question [SEP] ([MASK] option)* [SEP] state [SEP], ids drawn at random. */
static void random_rows(acc_rows *r, int n, int vocab) {
  int32_t ids[512], mk[16];
  for (int i = 0; i < n; i++) {
    int len = 40 + (int)(next_u64() % 261), k = 2 + (int)(next_u64() % 7), qt = (int)(next_u64() % 3);
    for (int t = 0; t < len; t++) ids[t] = (int32_t)(next_u64() % (uint64_t)vocab);
    for (int j = 0; j < k; j++) mk[j] = 6 + 3 * j;
    acc_rows_add(r, ids, len, mk, k, qt);
  }
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A run of the fast backend: a precision, and LAYA_CPU_STUDY plus other environment settings
 * while the model is made (cpu.c reads them at create). Written PREC[:STUDY][|NAME=VALUE]...,
 * e.g. "fp32:wround,a:i" or "bf16|LAYA_CPU_FP32_LAYERS=head". */
typedef struct variant {
  const char *label;
  backend_precision prec;
  int esc;             /* precision escalation: re-run the rows that could move in fp32 (model/escalate.h) */
  char study[256];     /* "": none */
  char env[4][128];    /* NAME=VALUE */
  int n_env;
  double bound, agree;
} variant;

static void variant_env(const variant *v, int set) {
  if (v->study[0]) {
    if (set) setenv("LAYA_CPU_STUDY", v->study, 1);
    else unsetenv("LAYA_CPU_STUDY");
  }
  for (int i = 0; i < v->n_env; i++) {
    char name[128];
    snprintf(name, sizeof name, "%s", v->env[i]);
    char *eq = strchr(name, '=');
    *eq = 0;
    if (set) setenv(name, eq + 1, 1);
    else unsetenv(name);
  }
}

/* ACC_DUMP=FILE: one line per row and run (study of escalation's error bound): checkpoint, run, row,
 * options, max |l|, max l - min l, top-2 gap, max |dl|, max |act|, max |d act|, max dl - min dl. */
static void dump_rows(const char *ckpt, const char *run, const acc_rows *r, const float *l, const float *lr,
                      const float *a, const float *ar, int n_act, int n) {
  const char *path = getenv("ACC_DUMP");
  FILE *f = path && *path ? fopen(path, "a") : NULL;
  if (!f) return;
  for (int i = 0; i < n; i++) {
    int m0 = r->marker_start[i], k = r->marker_start[i + 1] - m0;
    double mx = -INFINITY, mn = INFINITY, s = 0, e = 0, t1 = -INFINITY, t2 = -INFINITY, as = 0, ae = 0;
    double dmax = -INFINITY, dmin = INFINITY;
    for (int j = 0; j < k; j++) {
      double x = l[m0 + j];
      mx = fmax(mx, x), mn = fmin(mn, x), s = fmax(s, fabs(x)), e = fmax(e, fabs(x - lr[m0 + j]));
      dmax = fmax(dmax, x - lr[m0 + j]), dmin = fmin(dmin, x - lr[m0 + j]);
      if (x > t1) t2 = t1, t1 = x;
      else if (x > t2) t2 = x;
    }
    for (int j = 0; j < n_act; j++) {
      as = fmax(as, fabs(a[(size_t)i * n_act + j]));
      ae = fmax(ae, fabs(a[(size_t)i * n_act + j] - ar[(size_t)i * n_act + j]));
    }
    fprintf(f, "%s %s %d %d %g %g %g %g %g %g %g\n", ckpt, run, i, k, s, mx - mn, t1 - t2, e, as, ae, dmax - dmin);
  }
  fclose(f);
}

/* "fp32" / "bf16" / "int8", optionally "+esc"; returns the length parsed, -1 if none. */
static int parse_prec(const char *s, backend_precision *p, int *esc) {
  if (!strncmp(s, "fp32", 4)) *p = PREC_FP32;
  else if (!strncmp(s, "bf16", 4)) *p = PREC_BF16;
  else if (!strncmp(s, "int8", 4)) *p = PREC_INT8;
  else return -1;
  *esc = !strncmp(s + 4, "+esc", 4) && *p != PREC_FP32;
  return *esc ? 8 : 4;
}

/* The fast backend for a run; with escalation, bf16 / int8 wrapped with an fp32 backend for the
 * rows to re-run. Escalation's bound here uses temperature 1: dp is measured on softmax(l). */
static backend *make_backend(const model_weights *W, backend_precision prec, int esc, laya_error *err) {
  backend_options o = {prec, 0, 0, NULL};
  backend *low = backend_cpu_create(W, &o, err);
  if (!low || !esc) return low;
  backend *b = backend_escalate_open(low, W, &o, 1.0, err);
  const escalate_params *ep = backend_escalate_params(b);
  if (ep)
    fprintf(stderr, "escalation %s: calibration error %.3g (act %.3g) -> bound max(%.3g * max|l|, %.3g), act max(%.3g * max|a|, %.3g), tau %.3g\n",
            backend_precision_name(prec), ep->cal, ep->act_cal, ep->rel, ep->abs, ep->act_rel, ep->act_abs, ep->tau);
  return b;
}

int main(int argc, char **argv) {
  int n_rows = -1, ref_rows = 8;
  const char *only = NULL; /* --only bf16|int8|none: skip the other low precisions */
  int no_esc = 0;          /* --no-esc: skip the escalated runs */
  variant extra[32];
  int n_extra = 0;
  rng_state = 12345;
  int first = 1;
  for (; first < argc && argv[first][0] == '-'; first++) {
    if (!strcmp(argv[first], "--rows") && first + 1 < argc) n_rows = atoi(argv[++first]);
    else if (!strcmp(argv[first], "--ref-rows") && first + 1 < argc) ref_rows = atoi(argv[++first]);
    else if (!strcmp(argv[first], "--seed") && first + 1 < argc) rng_state = strtoull(argv[++first], NULL, 10);
    else if (!strcmp(argv[first], "--only") && first + 1 < argc) only = argv[++first];
    else if (!strcmp(argv[first], "--no-esc")) no_esc = 1;
    else if (!strcmp(argv[first], "--variant") && first + 1 < argc && n_extra < 32) {
      const char *v = argv[++first];
      variant *x = &extra[n_extra];
      memset(x, 0, sizeof *x);
      char buf[1024];
      snprintf(buf, sizeof buf, "%s", v);
      char *sv = NULL, *part = strtok_r(buf, "|", &sv);
      int pl = part ? parse_prec(part, &x->prec, &x->esc) : -1;
      if (pl < 0 || (part[pl] && part[pl] != ':')) {
        fprintf(stderr, "--variant wants PREC[+esc][:STUDY][|NAME=VALUE]..., e.g. fp32:wround,a:qkv\n");
        return 2;
      }
      if (part[pl] == ':') snprintf(x->study, sizeof x->study, "%s", part + pl + 1);
      while ((part = strtok_r(NULL, "|", &sv)) && x->n_env < 4) {
        if (!strchr(part, '=')) {
          fprintf(stderr, "--variant: %s is not NAME=VALUE\n", part);
          return 2;
        }
        snprintf(x->env[x->n_env++], sizeof x->env[0], "%s", part);
      }
      x->label = v;
      x->bound = x->prec == PREC_INT8 ? 0.04 : x->prec == PREC_BF16 ? 0.02 : 0.001;
      x->agree = x->prec == PREC_INT8 ? 0.98 : x->prec == PREC_BF16 ? 0.99 : 1.0;
      n_extra++;
    } else {
      fprintf(stderr, "unknown option %s\n", argv[first]);
      return 2;
    }
  }
  if (first >= argc) {
    fprintf(stderr,
            "usage: accuracy [--rows N] [--ref-rows K] [--seed S] [--only bf16|int8|none] [--no-esc] [--variant PREC[+esc][:STUDY]]... "
            "CKPT_DIR|random:large|random:mmbert ...\n");
    return 2;
  }
  printf("| checkpoint | rows (source) | precision | vs | max abs dp (options) | max abs dp (act) | max abs d logit | "
         "same argmax | err / scale (options, act) | re-run in fp32 |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|\n");
  int fail = 0;
  for (int ci = first; ci < argc; ci++) {
    const char *dir = argv[ci];
    laya_error err;
    ckpt_weights cw;
    random_model rm;
    const model_weights *W;
    const char *name, *source;
    acc_rows r;
    memset(&r, 0, sizeof r);
    int is_random = !strncmp(dir, "random:", 7);
    if (is_random) {
      /* bench/cuda/fullsize_acc.c's models and rows */
      name = dir;
      if (fullsize_model_init(&rm, dir + 7)) {
        fprintf(stderr, "%s: unknown model (random:large|random:mmbert)\n", dir);
        return 2;
      }
      W = &rm.w;
      fullsize_batch fb;
      fullsize_batch_make(&fb, n_rows > 0 ? n_rows : FULLSIZE_ROWS, W->enc.vocab);
      for (int i = 0; i < fb.b.n_rows; i++) {
        int t0 = fb.row_start[i], m0 = fb.marker_start[i];
        acc_rows_add(&r, fb.tokens + t0, fb.row_start[i + 1] - t0, fb.markers + m0, fb.marker_start[i + 1] - m0,
                 fb.qtype[i]);
      }
      fullsize_batch_free(&fb);
      source = "fullsize_acc rows";
    } else {
      if (ckpt_weights_open(&cw, dir, &err)) {
        fprintf(stderr, "%s: %s\n", dir, err.message);
        return 2;
      }
      W = &cw.w;
      name = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
      char rows_path[4096];
      snprintf(rows_path, sizeof rows_path, "%s/../../parity/%s/rows.jsonl", dir, name);
      int want = n_rows > 0 ? n_rows : 100;
      source = "random ids";
      if (fs_is_file(rows_path) && acc_rows_load(&r, rows_path, want) == 0 && r.n > 0) source = "parity rows";
      else random_rows(&r, want, W->enc.vocab);
    }
    int n_act = W->n_act;
    int K = ref_rows < r.n ? ref_rows : r.n;
    variant vs[5 + 32];
    int nv = 0;
    /* fp32, then bf16 and int8 without and with escalation */
    static const char *pn[] = {"fp32", "bf16", "bf16+esc", "int8", "int8+esc"};
    for (int pi = 0; pi < 5; pi++) {
      if (only && pi > 0 && strncmp(only, pn[pi], 4)) continue;
      if (no_esc && strchr(pn[pi], '+')) continue;
      variant *x = &vs[nv++];
      memset(x, 0, sizeof *x);
      x->label = pn[pi];
      parse_prec(pn[pi], &x->prec, &x->esc);
      x->bound = pi == 0 ? 0.001 : pi <= 2 ? 0.02 : 0.04;
      x->agree = pi == 0 ? 1.0 : pi <= 2 ? 0.99 : 0.98;
    }
    for (int i = 0; i < n_extra; i++) vs[nv++] = extra[i];
    float *lref = calloc((size_t)r.n_markers, sizeof(float)), *aref = calloc((size_t)r.n * n_act, sizeof(float));
    float *l[5 + 32], *a[5 + 32];
    double t0 = now();
    backend_options o = {PREC_FP32, 0, 0, NULL};
    backend *ref = backend_cpu_ref_create(W, &o, &err);
    if (!ref || acc_run_rows(ref, &r, 0, K, lref, aref, n_act)) return 2;
    ref->destroy(ref);
    fprintf(stderr, "%s: cpu-ref on %d rows %.1fs\n", name, K, now() - t0);
    for (int vi = 0; vi < nv; vi++) {
      l[vi] = calloc((size_t)r.n_markers, sizeof(float));
      a[vi] = calloc((size_t)r.n * n_act, sizeof(float));
      variant_env(&vs[vi], 1);
      t0 = now();
      backend *be = make_backend(W, vs[vi].prec, vs[vi].esc, &err);
      variant_env(&vs[vi], 0);
      if (!be || acc_run_rows(be, &r, 0, r.n, l[vi], a[vi], n_act)) {
        fprintf(stderr, "%s: %s: %s\n", name, vs[vi].label, be ? "forward failed" : err.message);
        return 2;
      }
      long n_seen = 0, n_rerun = 0;
      backend_escalate_stats(be, &n_seen, &n_rerun);
      int esc = backend_is_escalate(be);
      /* why rows were re-run: the same decision over the plain low-precision run's logits (the
       * backends are batch-invariant, so they are the logits the wrapper saw) */
      int why[3] = {0, 0, 0};
      for (int pv = 0; esc && pv < vi; pv++) {
        if (vs[pv].prec != vs[vi].prec || vs[pv].esc || vs[pv].study[0] || vs[pv].n_env) continue;
        const escalate_params *ep = backend_escalate_params(be);
        for (int i = 0; i < r.n; i++) {
          int m0 = r.marker_start[i];
          unsigned w = escalate_row_reasons(ep, l[pv] + m0, r.marker_start[i + 1] - m0, a[pv] + (size_t)i * n_act, n_act);
          why[0] += !!(w & ESC_OPTIONS), why[1] += !!(w & ESC_TOP), why[2] += !!(w & ESC_ACT);
        }
        break;
      }
      be->destroy(be);
      fprintf(stderr, "%s: %s on %d rows %.1fs\n", name, vs[vi].label, r.n, now() - t0);
      /* vs[0] is plain fp32: the reference where cpu-ref did not run */
      dump_rows(name, vs[vi].label, &r, l[vi], vi == 0 ? lref : l[0], a[vi], vi == 0 ? aref : a[0], n_act, vi == 0 ? K : r.n);
      acc_cmp c = {0};
      acc_compare(&c, &r, 0, K, l[vi], lref, a[vi], aref, n_act); /* against cpu-ref */
      if (vi > 0) acc_compare(&c, &r, K, r.n, l[vi], l[0], a[vi], a[0], n_act); /* against fast fp32 */
      int ok = c.dp <= vs[vi].bound && c.act_dp <= vs[vi].bound && c.same >= vs[vi].agree * c.n;
      if (vi < nv - n_extra) fail |= !ok; /* the variants are studies */
      char rerun[96] = "";
      if (esc)
        snprintf(rerun, sizeof rerun, "%ld/%ld (%.1f%%; p %d, top %d, act %d)", n_rerun, n_seen,
                 n_seen ? 100.0 * n_rerun / n_seen : 0.0, why[0], why[1], why[2]);
      printf("| %s | %d (%s) | %s | %s | %.4g | %.4g | %.4g | %d/%d (%.1f%%)%s | %.3g, %.3g | %s |\n", name, c.n, source,
             vs[vi].label, vi == 0 ? "cpu-ref" : K < r.n ? "cpu-ref (first rows) / fast fp32" : "cpu-ref", c.dp,
             c.act_dp, c.dlogit, c.same, c.n, 100.0 * c.same / c.n, ok ? "" : " **over bound**", c.ratio, c.act_ratio,
             rerun);
      fflush(stdout);
    }
    for (int vi = 0; vi < nv; vi++) free(l[vi]), free(a[vi]);
    free(lref), free(aref);
    acc_rows_free(&r);
    if (is_random) random_model_free(&rm);
    else ckpt_weights_close(&cw);
  }
  return fail;
}
