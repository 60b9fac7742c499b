/*
 * test_cpu_accuracy.c: how far the fast CPU backend's low precisions move Laya's answers from fp32
 * on a parity fixture's real question rows, with bounds that hold on every kernel table (AVX-512,
 * AVX2, scalar) because they come from the arithmetic, not from one machine's numbers.
 *
 *   test_cpu_accuracy CKPT_DIR ROWS_JSONL STRIDE PREC ...      (PREC: bf16, int8, bf16+esc, int8+esc)
 *
 * The reference is the fast backend in fp32, itself checked against cpu-ref on the first rows
 * (1e-4). Every STRIDE-th row of ROWS_JSONL runs (1: all).
 *
 * Plain bf16 / int8: the bound is the precision's own rounding, emulated. A bf16 (int8) model's
 * arithmetic is: weights and every GEMM input rounded to bf16 (int8 per-column / per-token grid,
 * the decision head's matrices kept bf16), products and sums in fp32 (a bf16 x bf16 or int8 x int8
 * product is exact in fp32 / int32), and, on tables with bf16 dot products, attention's q, k, v
 * and probabilities in bf16. LAYA_CPU_STUDY (cpu.c) applies exactly those roundings inside an fp32
 * model of the same table: the "emulation", whose logit error against fp32 is what that rounding
 * costs on this model, on this table, measured in the same run. The low-precision run differs from
 * its emulation only by the fp32 summation order, which changes which intermediate values land on
 * which side of a bf16 / int8 rounding boundary: another draw of the same rounding errors, not
 * larger ones. So, options and act logits alike:
 *   max |dlogit| <= MAX_FACTOR * the emulation's max |dlogit|
 *   rms  dlogit  <= RMS_FACTOR * the emulation's rms dlogit
 * The factors cover the spread between two draws (the maximum of a few hundred values from one
 * draw to the next; the rms of all of them is far steadier) and nothing machine-specific: a table
 * whose kernels round more than they claim, or a change that rounds more, breaks them. From the
 * max bound E follows what users see: every option probability moves by at most
 * escalate_prob_bound(fp32 logits, E) (printed), and a row can change its top option only when its
 * fp32 top two are within 2E (checked).
 *
 * PREC "bf16+esc" / "int8+esc": the same precision with precision escalation (model/escalate.h,
 * bound at temperature 1): every option and act probability within escalation's target tau of
 * fp32 and every top option kept (what escalation guarantees when its logit bound holds; its rows
 * not re-run are checked one by one), every re-run row's logits and act logits equal to the fp32
 * run's bit for bit, every other row's to the plain low-precision run's, and the backend's re-run
 * count equal to the rows escalate_row_needed picks. Its negative control: the same precision
 * without escalation must break tau or move a top option.
 *
 * Negative control: an fp32 model emulating int8 rounding of every weight and GEMM input must
 * break the tightest plain bound given, so the comparison can tell a worse precision apart.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "acc_eval.h"
#include "backend/backend.h"
#include "backend/cpu/cpu_model.h"
#include "ckpt_weights.h"
#include "model/escalate.h"

enum { REF_ROWS = 8 };

/* Two draws of the same rounding errors (see the top): their maxima over a few hundred logits
 * differ by well under 2x, their rms by under 1.5x. */
#define MAX_FACTOR 2.0
#define RMS_FACTOR 1.5

typedef struct run {
  float *logits, *act;
} run;

/* ref: cpu-ref; ep: with precision escalation (*ep gets its parameters, *rerun its re-run count). */
static int run_backend_esc(const model_weights *w, const acc_rows *r, backend_precision p, int ref,
                           escalate_params *ep, long *rerun, int n_rows, run *out, int *attn_bf16) {
  laya_error err;
  backend_options o = {p, 0, 0, NULL};
  backend *be = ref ? backend_cpu_ref_create(w, &o, &err) : backend_cpu_create(w, &o, &err);
  if (be && attn_bf16) *attn_bf16 = backend_cpu_model(be) ? backend_cpu_model(be)->attn_bf16 : 0;
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
  return run_backend_esc(w, r, p, ref, NULL, NULL, n_rows, out, NULL);
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

/* Max and rms of the option-logit and act-logit differences of x against ref over all rows. */
typedef struct err_stats {
  double max, rms, act_max, act_rms;
} err_stats;

static err_stats err_of(const acc_rows *r, int n_act, const run *x, const run *ref) {
  err_stats e = {0, 0, 0, 0};
  double s = 0, sa = 0;
  size_t na = (size_t)r->n * n_act;
  for (int j = 0; j < r->n_markers; j++) {
    double d = fabs((double)x->logits[j] - ref->logits[j]);
    e.max = isnan(d) ? INFINITY : fmax(e.max, d);
    s += d * d;
  }
  for (size_t j = 0; j < na; j++) {
    double d = fabs((double)x->act[j] - ref->act[j]);
    e.act_max = isnan(d) ? INFINITY : fmax(e.act_max, d);
    sa += d * d;
  }
  e.rms = r->n_markers ? sqrt(s / r->n_markers) : 0;
  e.act_rms = na ? sqrt(sa / (double)na) : 0;
  return e;
}

static void run_free(run *x) {
  free(x->logits);
  free(x->act);
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: test_cpu_accuracy CKPT_DIR ROWS_JSONL STRIDE PREC ...\n");
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
  unsetenv("LAYA_CPU_INT8_BF16"); /* the emulation follows the shipped choice (INT8_KEEP_BF16) */
  unsetenv("LAYA_CPU_FP32_LAYERS");
  unsetenv("LAYA_CPU_ATTN_F32");
  for (int ai = 4; ai < argc; ai++) {
    const char *prec = argv[ai];
    backend_precision p = !strncmp(prec, "bf16", 4) ? PREC_BF16 : !strncmp(prec, "int8", 4) ? PREC_INT8 : PREC_FP32;
    int esc = !strcmp(prec + 4, "+esc");
    if (p == PREC_FP32 || (prec[4] && !esc)) {
      fprintf(stderr, "bad precision %s (want bf16, int8, bf16+esc or int8+esc)\n", prec);
      return 2;
    }
    escalate_params ep;
    memset(&ep, 0, sizeof ep);
    run x = {0};
    long rerun = 0;
    int attn_bf16 = 0;
    CHECK(run_backend_esc(w, &r, p, 0, esc ? &ep : NULL, &rerun, r.n, &x, &attn_bf16) == 0);
    acc_cmp c = {0};
    acc_compare(&c, &r, 0, r.n, x.logits, f32.logits, x.act, f32.act, n_act);
    double pct = 100.0 * c.same / c.n;
    printf("%s (%d rows, %s attention): max dp %.4f, act %.4f, logit %.3f, same argmax %d/%d = %.1f%%\n", prec, c.n,
           attn_bf16 ? "bf16" : "fp32", c.dp, c.act_dp, c.dlogit, c.same, c.n, pct);
    if (!esc) {
      /* the emulation of this precision's rounding on this table, and the bounds it gives */
      char study[160];
      snprintf(study, sizeof study, "%s%s",
               p == PREC_BF16 ? "wround,a:qkv,a:o,a:i,a:om,h:qkv,h:o,h:1,h:2"
                              : "w8,a8,a:qkv,a:o,a:i,a:om,h:qkv,h:o,h:1,h:2,head16",
               attn_bf16 ? ",attn" : "");
      setenv("LAYA_CPU_STUDY", study, 1);
      run em = {0};
      CHECK(run_backend(w, &r, PREC_FP32, 0, r.n, &em) == 0);
      unsetenv("LAYA_CPU_STUDY");
      err_stats xe = err_of(&r, n_act, &x, &f32), ee = err_of(&r, n_act, &em, &f32);
      printf("  logit error: max %.4g (emulation %.4g, ratio %.2f), rms %.4g (emulation %.4g, ratio %.2f)\n", xe.max,
             ee.max, xe.max / ee.max, xe.rms, ee.rms, xe.rms / ee.rms);
      printf("  act logit error: max %.4g (emulation %.4g, ratio %.2f), rms %.4g (emulation %.4g, ratio %.2f)\n",
             xe.act_max, ee.act_max, xe.act_max / ee.act_max, xe.act_rms, ee.act_rms, xe.act_rms / ee.act_rms);
      CHECK(ee.max > 0 && ee.rms > 0); /* the emulation rounds: it must move the logits */
      double E = MAX_FACTOR * ee.max, Ea = MAX_FACTOR * ee.act_max;
      CHECK(xe.max <= E);
      CHECK(xe.rms <= RMS_FACTOR * ee.rms);
      CHECK(xe.act_max <= Ea);
      CHECK(xe.act_rms <= RMS_FACTOR * ee.act_rms);
      /* what the bound means for answers: dp bound, and top options change only in near ties */
      double dp_bound = 0;
      int near = 0, flipped_far = 0;
      for (int i = 0; i < r.n; i++) {
        int m0 = r.marker_start[i], k = r.marker_start[i + 1] - m0;
        const float *l = f32.logits + m0, *lx = x.logits + m0;
        dp_bound = fmax(dp_bound, escalate_prob_bound(l, k, E, 1.0));
        int t = 0, tx = 0;
        for (int j = 1; j < k; j++) {
          if (l[j] > l[t]) t = j;
          if (lx[j] > lx[tx]) tx = j;
        }
        double gap = INFINITY;
        for (int j = 0; j < k; j++)
          if (j != t) gap = fmin(gap, (double)l[t] - l[j]);
        near += gap <= 2 * E;
        if (tx != t && !(gap <= 2 * E)) flipped_far++;
      }
      printf("  bound E = %.1f x emulation = %.4g: dp <= %.4f; %d rows are within 2E of a tie, %d top options moved, "
             "%d of them outside such a tie\n", MAX_FACTOR, E, dp_bound, near, c.n - c.same, flipped_far);
      CHECK(c.dp <= dp_bound);
      CHECK(flipped_far == 0);
      if (E < tightest) tightest = E;
      run_free(&em);
    } else {
      /* escalation's own checks, and its negative control: without it the target breaks */
      printf("  escalation target: dp <= tau %.3f, every top option kept\n", ep.tau);
      CHECK(c.dp <= ep.tau);
      CHECK(c.act_dp <= ep.tau);
      CHECK(c.same == c.n);
      /* the plain run of an earlier PREC when there was one (batch-invariant: the same logits) */
      run low = plain[p];
      plain[p].logits = plain[p].act = NULL;
      if (!low.logits) CHECK(run_backend(w, &r, p, 0, r.n, &low) == 0);
      check_escalation(&r, &ep, n_act, &x, &low, &f32, rerun);
      acc_cmp cl = {0};
      acc_compare(&cl, &r, 0, r.n, low.logits, f32.logits, low.act, f32.act, n_act);
      printf("  control (%.4s without escalation): max dp %.4f, act %.4f, same argmax %d/%d: must break the target\n",
             prec, cl.dp, cl.act_dp, cl.same, cl.n);
      CHECK(cl.dp > ep.tau || cl.act_dp > ep.tau || cl.same < cl.n);
      run_free(&low);
    }
    if (!esc && !plain[p].logits) plain[p] = x; /* kept for the escalated bound's control */
    else run_free(&x);
  }

  /* negative control: int8 rounding everywhere must break the tightest logit bound */
  if (isfinite(tightest)) {
    setenv("LAYA_CPU_STUDY", "w8,a8,a:qkv,a:o,a:i,a:om,h:qkv,h:o,h:1,h:2", 1);
    run bad = {0};
    CHECK(run_backend(w, &r, PREC_FP32, 0, r.n, &bad) == 0);
    unsetenv("LAYA_CPU_STUDY");
    err_stats be = err_of(&r, n_act, &bad, &f32);
    printf("control (int8 rounding emulated everywhere): max logit error %.4g, must exceed %.4g\n", be.max, tightest);
    CHECK(be.max > tightest);
    run_free(&bad);
  }

  for (int i = 0; i < 4; i++) run_free(&plain[i]);
  run_free(&f32);
  acc_rows_free(&r);
  ckpt_weights_close(&cw);
  return check_summary("cpu/accuracy");
}
