/*
 * test_cpu_accuracy.c: how far the fast CPU backend's low precisions move Laya's answers from fp32
 * on a parity fixture's real question rows, held to the accuracy measured for the shipped
 * precision choices (BENCHMARKS.md, CPU backend / Accuracy), so a change that makes bf16 or int8
 * less accurate fails here.
 *
 *   test_cpu_accuracy CKPT_DIR ROWS_JSONL STRIDE PREC:MAX_DP:MIN_SAME_PCT ...
 *
 * The reference is the fast backend in fp32, itself checked against cpu-ref on the first rows.
 * Every STRIDE-th row of ROWS_JSONL runs (1: all). For each PREC (bf16, int8): the largest change of
 * any option probability (softmax over a row's options) and of the act probability must be
 * <= MAX_DP, and at least MIN_SAME_PCT % of the rows must keep their top option.
 *
 * PREC "bf16+esc" / "int8+esc": the same precision with precision escalation (model/escalate.h,
 * bound at temperature 1 as dp here): besides the bounds, every re-run row's logits and act logits
 * must equal the fp32 run's bit for bit, every other row's the plain low-precision run's, the
 * backend's re-run count must match the rows escalate_row_needed picks, and a row not re-run must
 * stay within escalation's target (dp and act dp <= tau, same top option). Its negative control: the
 * same precision without escalation must break the bound given for the escalated one.
 *
 * Negative control: an fp32 model emulating int8 rounding of every weight and GEMM input
 * (LAYA_CPU_STUDY, cpu.c) must break the tightest bound given, so the comparison can tell a worse
 * precision apart.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "acc_eval.h"
#include "backend/backend.h"
#include "ckpt_weights.h"
#include "model/escalate.h"

enum { REF_ROWS = 8 };

typedef struct run {
  float *logits, *act;
} run;

/* ref: cpu-ref; ep: with precision escalation (*ep gets its parameters, *rerun its re-run count). */
static int run_backend_esc(const model_weights *w, const acc_rows *r, backend_precision p, int ref,
                           escalate_params *ep, long *rerun, int n_rows, run *out) {
  laya_error err;
  backend_options o = {p, 0, 0};
  backend *be = ref ? backend_cpu_ref_create(w, &o, &err) : backend_cpu_create(w, &o, &err);
  if (be && ep) {
    be = backend_escalate_open(be, w, &o, 1.0, &err);
    if (!backend_escalate_params(be)) {
      fprintf(stderr, "backend: no escalation for %s\n", backend_precision_name(p));
      if (be) be->destroy(be);
      return -1;
    }
    *ep = *backend_escalate_params(be);
  }
  if (!be) {
    fprintf(stderr, "backend: %s\n", err.message);
    return -1;
  }
  out->logits = calloc((size_t)r->n_markers, sizeof(float));
  out->act = calloc((size_t)r->n * w->n_act, sizeof(float));
  int rc = !out->logits || !out->act ? -1 : acc_run_rows(be, r, 0, n_rows, out->logits, out->act, w->n_act);
  if (rerun) backend_escalate_stats(be, NULL, rerun);
  be->destroy(be);
  return rc;
}

static int run_backend(const model_weights *w, const acc_rows *r, backend_precision p, int ref, int n_rows, run *out) {
  return run_backend_esc(w, r, p, ref, NULL, NULL, n_rows, out);
}

/* The escalated run x against the plain low-precision run `low` and fp32 `f32`, row by row. */
static void check_escalation(const acc_rows *r, const escalate_params *ep, int n_act, const run *x, const run *low,
                             const run *f32, long rerun) {
  long picked = 0;
  for (int i = 0; i < r->n; i++) {
    int m0 = r->marker_start[i], k = r->marker_start[i + 1] - m0;
    const float *ll = low->logits + m0, *la = low->act + (size_t)i * n_act;
    int need = escalate_row_needed(ep, ll, k, la, n_act);
    picked += need;
    const run *want = need ? f32 : low;
    CHECK(memcmp(x->logits + m0, want->logits + m0, sizeof(float) * (size_t)k) == 0);
    CHECK(memcmp(x->act + (size_t)i * n_act, want->act + (size_t)i * n_act, sizeof(float) * (size_t)n_act) == 0);
    if (need) continue;
    /* one row: acc_compare reads only its marker offsets, so a {0, k} view and the row's slices */
    int32_t ms[2] = {0, k};
    acc_rows one = {.n = 1, .marker_start = ms};
    acc_cmp c = {0};
    acc_compare(&c, &one, 0, 1, ll, f32->logits + m0, la, f32->act + (size_t)i * n_act, n_act);
    if (c.dp > ep->tau || c.act_dp > ep->tau || c.same != 1)
      printf("  row %d not re-run but moved: dp %.4f, act %.4f, same %d (tau %.3f)\n", i, c.dp, c.act_dp, c.same,
             ep->tau);
    CHECK(c.dp <= ep->tau && c.act_dp <= ep->tau && c.same == 1);
  }
  printf("  bound: max(%.3g * max|l|, %.3g) (calibration error %.3g), act max(%.3g * max|a|, %.3g), tau %.3g\n",
         ep->rel, ep->abs, ep->cal, ep->act_rel, ep->act_abs, ep->tau);
  printf("  re-run in fp32: %ld of %d rows (%.1f%%), escalate_row_needed picks %ld\n", rerun, r->n,
         100.0 * rerun / r->n, picked);
  CHECK(rerun == picked);
}

static void run_free(run *x) {
  free(x->logits);
  free(x->act);
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: test_cpu_accuracy CKPT_DIR ROWS_JSONL STRIDE PREC:MAX_DP:MIN_SAME_PCT ...\n");
    return 2;
  }
  const char *dir = argv[1], *rows_path = argv[2];
  int stride = atoi(argv[3]);
  if (stride < 1) stride = 1;
  laya_error err;
  ckpt_weights cw;
  if (ckpt_weights_open(&cw, dir, &err)) {
    fprintf(stderr, "%s: %s\n", dir, err.message);
    return 1;
  }
  acc_rows all, r;
  memset(&all, 0, sizeof all);
  memset(&r, 0, sizeof r);
  CHECK(acc_rows_load(&all, rows_path, 1 << 30) == 0);
  CHECK(all.n > 0);
  for (int i = 0; i < all.n; i += stride)
    acc_rows_add(&r, all.tokens + all.row_start[i], all.row_start[i + 1] - all.row_start[i],
                 all.markers + all.marker_start[i], all.marker_start[i + 1] - all.marker_start[i], all.qtype[i]);
  acc_rows_free(&all);
  if (r.n == 0) return check_summary("cpu/accuracy");
  const model_weights *w = &cw.w;
  int n_act = w->n_act, k_ref = r.n < REF_ROWS ? r.n : REF_ROWS;

  /* the reference: fast fp32, which must match cpu-ref to rounding noise */
  run ref = {0}, f32 = {0};
  CHECK(run_backend(w, &r, PREC_FP32, 1, k_ref, &ref) == 0);
  CHECK(run_backend(w, &r, PREC_FP32, 0, r.n, &f32) == 0);
  acc_cmp c0 = {0};
  acc_compare(&c0, &r, 0, k_ref, f32.logits, ref.logits, f32.act, ref.act, n_act);
  printf("fp32 vs cpu-ref (%d rows): max dp %.3g, act %.3g, logit %.3g\n", k_ref, c0.dp, c0.act_dp, c0.dlogit);
  CHECK(c0.dp <= 1e-4 && c0.act_dp <= 1e-4 && c0.same == c0.n);
  run_free(&ref);

  double tightest = INFINITY;
  run plain[4]; /* by backend_precision: plain runs, reused as escalation's control */
  memset(plain, 0, sizeof plain);
  for (int ai = 4; ai < argc; ai++) {
    char prec[16];
    double max_dp = 0, min_pct = 0;
    if (sscanf(argv[ai], "%15[^:]:%lf:%lf", prec, &max_dp, &min_pct) != 3) {
      fprintf(stderr, "bad bound %s (want PREC:MAX_DP:MIN_SAME_PCT)\n", argv[ai]);
      return 2;
    }
    backend_precision p = !strncmp(prec, "bf16", 4) ? PREC_BF16 : !strncmp(prec, "int8", 4) ? PREC_INT8 : PREC_FP32;
    int esc = !strcmp(prec + 4, "+esc");
    escalate_params ep;
    memset(&ep, 0, sizeof ep);
    run x = {0};
    long rerun = 0;
    CHECK(run_backend_esc(w, &r, p, 0, esc ? &ep : NULL, &rerun, r.n, &x) == 0);
    acc_cmp c = {0};
    acc_compare(&c, &r, 0, r.n, x.logits, f32.logits, x.act, f32.act, n_act);
    double pct = 100.0 * c.same / c.n;
    printf("%s (%d rows): max dp %.4f (bound %.4f), act %.4f, logit %.3f, same argmax %d/%d = %.1f%% (bound %.1f%%)\n",
           prec, c.n, c.dp, max_dp, c.act_dp, c.dlogit, c.same, c.n, pct, min_pct);
    CHECK(c.dp <= max_dp);
    CHECK(c.act_dp <= max_dp);
    CHECK(pct >= min_pct);
    if (!esc && max_dp < tightest) tightest = max_dp;
    if (esc) {
      /* escalation's own checks, and its negative control: without it the bound breaks */
      /* the plain run of an earlier PREC bound when there was one (batch-invariant: the same logits) */
      run low = plain[p];
      plain[p].logits = plain[p].act = NULL;
      if (!low.logits) CHECK(run_backend(w, &r, p, 0, r.n, &low) == 0);
      check_escalation(&r, &ep, n_act, &x, &low, &f32, rerun);
      acc_cmp cl = {0};
      acc_compare(&cl, &r, 0, r.n, low.logits, f32.logits, low.act, f32.act, n_act);
      double lpct = 100.0 * cl.same / cl.n;
      printf("  control (%.4s without escalation): max dp %.4f, act %.4f, same argmax %.1f%%: must break a bound\n",
             prec, cl.dp, cl.act_dp, lpct);
      CHECK(cl.dp > max_dp || cl.act_dp > max_dp || lpct < min_pct);
      run_free(&low);
    }
    if (!esc && !plain[p].logits) plain[p] = x; /* kept for the escalated bound's control */
    else run_free(&x);
  }

  /* negative control: int8 rounding everywhere must be caught by the tightest bound */
  setenv("LAYA_CPU_STUDY", "w8,a8,a:qkv,a:o,a:i,a:om,h:qkv,h:o,h:1,h:2", 1);
  run bad = {0};
  CHECK(run_backend(w, &r, PREC_FP32, 0, r.n, &bad) == 0);
  unsetenv("LAYA_CPU_STUDY");
  acc_cmp cb = {0};
  acc_compare(&cb, &r, 0, r.n, bad.logits, f32.logits, bad.act, f32.act, n_act);
  printf("control (int8 rounding emulated everywhere): max dp %.4f, must exceed %.4f\n", cb.dp, tightest);
  CHECK(cb.dp > tightest);
  run_free(&bad);

  for (int i = 0; i < 4; i++) run_free(&plain[i]);
  run_free(&f32);
  acc_rows_free(&r);
  ckpt_weights_close(&cw);
  return check_summary("cpu/accuracy");
}
