/* escalate.c: precision escalation (see escalate.h). */
#include "model/escalate.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/options.h"
#include "model/batch.h"

/* Per precision: rel, the relative bound for rows of unusually large logits (options and act
 * alike), and tau, the bound. The absolute part is CAL_MARGIN times the error measured on
 * the calibration rows at open (the worst row measured 1.3-2.8x it). BENCHMARKS.md, "Precision
 * escalation". */
#define CAL_MARGIN 3.0
static const struct {
  backend_precision p;
  double rel, tau;
} DEFAULTS[] = {
    {PREC_BF16, 0.03, 0.02},
    {PREC_INT8, 0.10, 0.04},
    {PREC_FP8, 0.10, 0.02},
};

static void env_double(double set, double *v) {
  if (set >= 0) *v = set; /* laya_env_options: -1 unset, else validated >= 0 */
}

int escalate_default_params(backend_precision p, double t_min, const laya_env_options *env, escalate_params *out) {
  laya_env_options own;
  laya_env_options_init(&own);
  if (!env) { /* a caller without laya_open's read: its own (a refused value reads as unset) */
    laya_error ignored;
    static const char *const names[] = {"LAYA_ESCALATE_REL", "LAYA_ESCALATE_ABS", "LAYA_ESCALATE_TAU",
                                        "LAYA_ESCALATE_MARGIN"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) laya_env_options_read_one(&own, names[i], &ignored);
    env = &own;
  }
  for (size_t i = 0; i < sizeof DEFAULTS / sizeof DEFAULTS[0]; i++) {
    if (DEFAULTS[i].p != p) continue;
    memset(out, 0, sizeof *out);
    out->rel = out->act_rel = DEFAULTS[i].rel;
    out->margin = CAL_MARGIN;
    out->tau = DEFAULTS[i].tau;
    out->t_min = t_min > 0 ? t_min : 1.0;
    env_double(env->escalate_rel, &out->rel);
    env_double(env->escalate_rel, &out->act_rel);
    env_double(env->escalate_abs, &out->abs);
    env_double(env->escalate_abs, &out->act_abs);
    env_double(env->escalate_tau, &out->tau);
    env_double(env->escalate_margin, &out->margin);
    return 0;
  }
  return -1;
}

/* With every x_j off by at most e, p_i = softmax(x / T)_i moves furthest when x_i and all the others
 * move by e in opposite directions: p' = p e^a / (p e^a + 1 - p), a = 2e / T (up), or with -a (down). */
double escalate_prob_bound(const float *x, int k, double e, double T) {
  if (k < 2) return 0;
  double m = -INFINITY, s = 0;
  for (int j = 0; j < k; j++) {
    if (!isfinite(x[j])) return INFINITY;
    if (x[j] > m) m = x[j];
  }
  for (int j = 0; j < k; j++) s += exp((x[j] - m) / T);
  double ea = exp(2 * e / T), worst = 0;
  for (int j = 0; j < k; j++) {
    double p = exp((x[j] - m) / T) / s;
    double up = p * ea / (p * ea + 1 - p) - p, down = p - p / (p + (1 - p) * ea);
    if (up > worst) worst = up;
    if (down > worst) worst = down;
  }
  return worst;
}

/* min(t, the smallest temperature of table tt) */
static double temp_min(const temp_table *tt, double t) {
  for (int j = 0; j < 3; j++) t = fmin(t, tt->t[j]);
  for (int j = 0; j < tt->n_by; j++) t = fmin(t, tt->by_val[j]);
  return t;
}

double escalate_model_t_min(const temp_table *base, const lang_temps *langs) {
  double t = temp_min(base, INFINITY);
  for (int i = 0; langs && i < langs->n; i++) t = temp_min(&langs->tt[i], t);
  return isfinite(t) && t > 0 ? t : 0.5;
}

static double max_abs(const float *x, int k) {
  double m = 0;
  for (int j = 0; j < k; j++) m = fmax(m, fabs((double)x[j]));
  return m;
}

unsigned escalate_row_reasons(const escalate_params *p, const float *logits, int k, const float *act, int n_act) {
  unsigned why = 0;
  if (k >= 2) {
    double e = fmax(p->rel * max_abs(logits, k), p->abs);
    if (escalate_prob_bound(logits, k, e, p->t_min) > p->tau) why |= ESC_OPTIONS;
    /* the top option can change when the runner-up is within 2e of it (whatever the temperature) */
    int top = 0;
    for (int j = 1; j < k; j++)
      if (logits[j] > logits[top]) top = j;
    for (int j = 0; j < k; j++)
      if (j != top && !(logits[top] - logits[j] > 2 * e)) why |= ESC_TOP;
  }
  if (n_act >= 2) {
    double e = fmax(p->act_rel * max_abs(act, n_act), p->act_abs);
    if (escalate_prob_bound(act, n_act, e, 1.0) > p->tau) why |= ESC_ACT;
  }
  return why;
}

int escalate_row_needed(const escalate_params *p, const float *logits, int k, const float *act, int n_act) {
  return escalate_row_reasons(p, logits, k, act, n_act) != 0;
}

/* ---- calibration ------------------------------------------------------------------------------ */

enum { CAL_ROWS = 8, CAL_MAX_LEN = 160, CAL_MAX_K = 8 };

static uint64_t cal_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int escalate_calibrate(backend *low, backend *exact, int vocab, int n_act, escalate_params *p, laya_error *err) {
  double margin = p->margin;
  packed_batch_buf bb = {0};
  if (pb_reserve(&bb, CAL_ROWS, CAL_ROWS * CAL_MAX_LEN, CAL_ROWS * CAL_MAX_K, err)) return err ? err->code : LAYA_ERR_NOMEM;
  uint64_t seed = 0x6c617961u; /* fixed: the same rows for every open of the same model */
  for (int r = 0; r < CAL_ROWS; r++) {
    int len = 48 + (int)(cal_next(&seed) % (CAL_MAX_LEN - 48 + 1)), k = 2 + r % (CAL_MAX_K - 1);
    pb_row row = pb_add_row(&bb, r % 3, len, k);
    for (int t = 0; t < len; t++) row.tokens[t] = (int32_t)(cal_next(&seed) % (uint64_t)vocab);
    for (int j = 0; j < k; j++) row.markers[j] = 6 + 3 * j;
  }
  const packed_batch *b = pb_finish(&bb);
  int M = b->marker_start[CAL_ROWS];
  float l0[CAL_ROWS * CAL_MAX_K], l1[CAL_ROWS * CAL_MAX_K];
  float *a0 = calloc((size_t)CAL_ROWS * (size_t)(n_act > 0 ? n_act : 1) * 2, sizeof(float));
  if (!a0) {
    pb_free(&bb);
    return laya_err(err, LAYA_ERR_NOMEM, NULL, "escalate: out of memory");
  }
  float *a1 = a0 + (size_t)CAL_ROWS * (size_t)(n_act > 0 ? n_act : 1);
  int rc = 0;
  backend *be[2] = {low, exact};
  for (int i = 0; i < 2 && !rc; i++) {
    backend_worker *w = be[i]->worker_create(be[i], err);
    rc = !w ? (err && err->code ? err->code : LAYA_ERR_NOMEM)
            : be[i]->forward(be[i], w, b, i ? l1 : l0, i ? a1 : a0, err);
    if (w) be[i]->worker_destroy(be[i], w);
  }
  if (!rc) {
    double e = 0, ea = 0;
    for (int j = 0; j < M; j++) e = fmax(e, fabs((double)l0[j] - l1[j]));
    for (int j = 0; j < CAL_ROWS * n_act; j++) ea = fmax(ea, fabs((double)a0[j] - a1[j]));
    p->cal = e;
    p->act_cal = ea;
    p->abs = fmax(p->abs, margin * e);
    p->act_abs = fmax(p->act_abs, margin * ea);
  }
  free(a0);
  pb_free(&bb);
  return rc;
}

/* ---- the backend ------------------------------------------------------------------------------ */

typedef struct esc_impl {
  backend *low, *exact;
  int n_act;
  escalate_params p;
  atomic_long rows, rerun;
  char name[32]; /* "<low>+escalate": never the low backend's name, whose impl this is not */
} esc_impl;

/* Per calling thread: both backends' workers and the re-run sub-batch, grown to the largest batch
 * seen (no allocation once warm). */
struct backend_worker {
  backend_worker *low, *exact;
  packed_batch_buf sub; /* the rows to re-run as a batch of their own (grow-only) */
  size_t cap;
  float *out;           /* their logits, then their act logits (cap floats, grow-only) */
  int32_t *pick;        /* the rows to re-run, in batch order (grow-only, pick_cap rows) */
  int pick_cap;
};

static backend_worker *esc_worker_create(backend *b, laya_error *err) {
  esc_impl *im = b->impl;
  backend_worker *w = calloc(1, sizeof *w);
  if (!w) {
    laya_err(err, LAYA_ERR_NOMEM, NULL, "escalate: out of memory");
    return NULL;
  }
  w->low = im->low->worker_create(im->low, err);
  w->exact = w->low ? im->exact->worker_create(im->exact, err) : NULL;
  if (!w->exact) {
    if (w->low) im->low->worker_destroy(im->low, w->low);
    free(w);
    return NULL;
  }
  return w;
}

static void esc_worker_destroy(backend *b, backend_worker *w) {
  esc_impl *im = b->impl;
  if (!w) return;
  im->low->worker_destroy(im->low, w->low);
  im->exact->worker_destroy(im->exact, w->exact);
  pb_free(&w->sub);
  free(w->out);
  free(w->pick);
  free(w);
}

/* Grow-only buffers of a worker: the picked rows, and the re-run rows' outputs (M + R n_act floats). */
static int pick_grow(backend_worker *w, int rows, laya_error *err) {
  if (rows <= w->pick_cap) return 0;
  int32_t *np = realloc(w->pick, sizeof(int32_t) * (size_t)rows);
  if (!np) return laya_err(err, LAYA_ERR_NOMEM, NULL, "escalate: out of memory for %d rows", rows);
  w->pick = np;
  w->pick_cap = rows;
  return 0;
}

static int out_grow(backend_worker *w, int rows, int markers, int n_act, laya_error *err) {
  size_t need = (size_t)markers + (size_t)rows * (size_t)(n_act > 0 ? n_act : 1);
  if (need <= w->cap) return 0;
  float *nb = calloc(need, sizeof(float)); /* zeroed: resident from here on */
  if (!nb) return laya_err(err, LAYA_ERR_NOMEM, NULL, "escalate: out of memory for %d rows", rows);
  free(w->out);
  w->out = nb;
  w->cap = need;
  return 0;
}

/* Both backends' scratch for `max`, and the re-run sub-batch for every row of it. */
static int esc_worker_reserve(backend *b, backend_worker *w, const batch_shape *max, laya_error *err) {
  esc_impl *im = b->impl;
  int rc = 0;
  if (im->low->worker_reserve) rc = im->low->worker_reserve(im->low, w->low, max, err);
  if (!rc && im->exact->worker_reserve) rc = im->exact->worker_reserve(im->exact, w->exact, max, err);
  if (!rc) rc = pick_grow(w, max->n_rows, err);
  if (!rc) rc = pb_reserve(&w->sub, max->n_rows, max->n_tokens, max->n_markers, err);
  if (!rc) rc = out_grow(w, max->n_rows, max->n_markers, im->n_act, err);
  return rc;
}

static size_t esc_worker_bytes(const backend *b, const backend_worker *w) {
  const esc_impl *im = b->impl;
  size_t n = pb_bytes(&w->sub) + sizeof(float) * w->cap + sizeof(int32_t) * (size_t)w->pick_cap;
  if (im->low->worker_bytes) n += im->low->worker_bytes(im->low, w->low);
  if (im->exact->worker_bytes) n += im->exact->worker_bytes(im->exact, w->exact);
  return n;
}

static int esc_forward(backend *b, backend_worker *w, const packed_batch *bt, float *logits, float *act,
                       laya_error *err) {
  esc_impl *im = b->impl;
  int rc = im->low->forward(im->low, w->low, bt, logits, act, err);
  if (rc || bt->n_rows <= 0) return rc;
  const int n_act = im->n_act;
  /* the batch was checked by the low backend: row and marker offsets are sound */
  if ((rc = pick_grow(w, bt->n_rows, err))) return rc;
  int R = 0, M = 0;
  for (int r = 0; r < bt->n_rows; r++) {
    int m0 = bt->marker_start[r], k = bt->marker_start[r + 1] - m0;
    if (!escalate_row_needed(&im->p, logits + m0, k, act + (size_t)r * n_act, n_act)) continue;
    w->pick[R++] = r;
    M += k;
  }
  atomic_fetch_add(&im->rows, bt->n_rows);
  if (R == 0) return 0;
  atomic_fetch_add(&im->rerun, R);
  if ((rc = pb_select(&w->sub, bt, w->pick, R, err)) || (rc = out_grow(w, R, M, n_act, err))) return rc;
  const packed_batch *sb = &w->sub.b;
  float *sub_logits = w->out, *sub_act = w->out + M;
  rc = im->exact->forward(im->exact, w->exact, sb, sub_logits, sub_act, err);
  if (rc) return rc;
  for (int i = 0; i < R; i++) {
    int r = w->pick[i];
    memcpy(logits + bt->marker_start[r], sub_logits + sb->marker_start[i],
           sizeof(float) * (size_t)(sb->marker_start[i + 1] - sb->marker_start[i]));
    if (n_act > 0) memcpy(act + (size_t)r * n_act, sub_act + (size_t)i * n_act, sizeof(float) * (size_t)n_act);
  }
  return 0;
}

/* Embeddings (backend.embed) come from the fp32 backend: a shortlist ranked at the low precision
 * could keep other labels than Laya's, which no re-run of the answer would undo. */
static int esc_embed(backend *b, backend_worker *w, const packed_batch *bt, float *pooled, laya_error *err) {
  esc_impl *im = b->impl;
  if (!im->exact->embed) return laya_err(err, LAYA_ERR_UNSUPPORTED, NULL, "escalate: the fp32 backend cannot embed");
  return im->exact->embed(im->exact, w->exact, bt, pooled, err);
}

static void esc_destroy(backend *b) {
  if (!b) return;
  esc_impl *im = b->impl;
  if (im) {
    im->low->destroy(im->low);
    im->exact->destroy(im->exact);
    free(im);
  }
  free(b);
}

backend *backend_escalate_create(backend *low, backend *exact, int n_act, const escalate_params *p,
                                 laya_error *err) {
  backend *b = low && exact ? calloc(1, sizeof *b) : NULL;
  esc_impl *im = b ? calloc(1, sizeof *im) : NULL;
  if (!im) {
    if (low && exact) laya_err(err, LAYA_ERR_NOMEM, NULL, "escalate: out of memory");
    else if (!err || !err->code) laya_err(err, LAYA_ERR_INTERNAL, NULL, "escalate: a backend is missing");
    free(b);
    if (low) low->destroy(low);
    if (exact) exact->destroy(exact);
    return NULL;
  }
  im->low = low;
  im->exact = exact;
  im->n_act = n_act;
  im->p = *p;
  atomic_init(&im->rows, 0);
  atomic_init(&im->rerun, 0);
  snprintf(im->name, sizeof im->name, "%s+escalate", low->name);
  b->name = im->name;
  b->kind = BACKEND_ESCALATE;
  b->impl = im;
  b->worker_create = esc_worker_create;
  b->worker_destroy = esc_worker_destroy;
  b->worker_reserve = esc_worker_reserve;
  b->worker_bytes = esc_worker_bytes;
  b->forward = esc_forward;
  b->destroy = esc_destroy;
  b->embed = esc_embed;
  return b;
}

int backend_is_escalate(const backend *b) { return b && b->forward == esc_forward; }

void backend_escalate_stats(const backend *b, long *rows, long *rerun) {
  esc_impl *im = backend_is_escalate(b) ? b->impl : NULL;
  if (rows) *rows = im ? atomic_load(&im->rows) : 0;
  if (rerun) *rerun = im ? atomic_load(&im->rerun) : 0;
}

void backend_escalate_parts(const backend *b, const backend **low, const backend **exact) {
  const esc_impl *im = backend_is_escalate(b) ? b->impl : NULL;
  if (low) *low = im ? im->low : NULL;
  if (exact) *exact = im ? im->exact : NULL;
}

const escalate_params *backend_escalate_params(const backend *b) {
  return backend_is_escalate(b) ? &((const esc_impl *)b->impl)->p : NULL;
}

backend *backend_escalate_open(backend *low, const model_weights *w, const backend_options *o, double t_min,
                               laya_error *err) {
  escalate_params ep;
  if (!low || escalate_default_params(o->precision, t_min, o->env, &ep)) return low;
  /* fp8 runs on the GPU, and re-runs there in bf16; the CPU's low precisions re-run in fp32 */
  backend_options fo = *o;
  fo.precision = o->precision == PREC_FP8 ? PREC_BF16 : PREC_FP32;
  /* fp8's bf16 pass reads the fp8 backend's embeddings, norms, head and tail (the same bytes in
   * both precisions) and holds only its bf16 encoder GEMM weights (backend_cuda_create_shared) */
  backend *exact = o->precision == PREC_FP8 ? backend_cuda_create_shared(low, w, &fo, err) : backend_cpu_create(w, &fo, err);
  if (!exact) {
    low->destroy(low);
    return NULL;
  }
  if (escalate_calibrate(low, exact, w->enc.vocab, w->n_act, &ep, err)) {
    low->destroy(low);
    exact->destroy(exact);
    return NULL;
  }
  return backend_escalate_create(low, exact, w->n_act, &ep, err);
}
