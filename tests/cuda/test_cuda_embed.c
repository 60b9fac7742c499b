/*
 * test_cuda_embed.c: the CUDA backend's embed pass (backend.embed, model/embed.h) against the fp32
 * CPU backend, and the shortlist fixtures recorded from the real laya 0.4.15 replayed on CUDA.
 *
 *   test_cuda_embed FIXTURES CKPT [CONFIG...]
 *
 * CONFIG is device:precision[+esc] (default: cuda:bf16 cuda:fp16 cuda:fp8+esc, fp8 only on a GPU
 * that has it). cpu:bf16 runs the same checks on the CPU's bf16 backend (what the bounds were first
 * sized on, here without a GPU; the CPU bf16 path must pass them too).
 *
 * Texts: every text of shortlist/CKPT/embed.jsonl and every label and description of the cases'
 * choices, the first 4,096 distinct ones (short rows: a few to about 60 tokens). Per config:
 *  - the model's own backend embeds (it has an embed pass, and no CPU fallback backend is made);
 *  - each vector against the fp32 CPU backend's: cosine >= 1 - cos_gap, relative L2 error <= rel
 *    and max |diff| <= max_abs (bounds per precision, below); the figures are printed;
 *  - the bounds catch a wrong pass: every text's vector with the question-type embedding added (a
 *    forward's final norm instead of the embed pass's), its neighbour's vector (rows out of order)
 *    and the vector scaled by 7/8 (a mean over a wrong count) each fail them for >= 99% of the
 *    texts (the printout gives each mutation's first percentile: the room the bounds leave);
 *  - the same batches three times (eager, graph capture, graph replay on CUDA) give the same bits;
 *    a row's vector alone and in a batch of 32 stay within the bounds (the bits may differ on CUDA:
 *    cuBLASLt picks its kernels per pass size);
 *  - every predict_shortlist case: Laya's error kind and message, else its "shortlist" metadata:
 *    k, n, passthrough exact; scores within sim_tol of Laya's; every label's cosine of every ranked
 *    question (laya_shortlist_choice, k = n - 1) within sim_tol of Laya's, its largest error eps;
 *    the label kept at rank j Laya's, or one whose Laya cosine is within 2 eps of Laya's label
 *    there (every score off by at most eps moves the j-th best by at most eps: a near tie,
 *    counted; anything else fails). The answers' probabilities are the decision pass's
 *    (cuda/parity's bounds), not compared here;
 *  - (bf16) a pass that runs out of device memory (backend_cuda_set_max_scratch(0)) runs on the CPU
 *    fallback, with the fp32 backend's bits, and the next one on the GPU again.
 *
 * Bounds: the 16-bit encoder (bf16 7 mantissa bits, fp16 10) rounds every GEMM input and
 * attention's operands, while the residual stream, the norms and the pooling stay fp32. The CPU's
 * bf16 backend (the same rounding of GEMM inputs) measures 1 - cos 5.7e-5, relative
 * 1.1e-2, max |diff| 0.024 (modernbert-tiny; mmbert-tiny 1.5e-5, 5.5e-3, 0.013). bf16's bounds
 * (1e-3, 0.05, 0.15) leave ~17x / 4.5x / 6x room for CUDA's other rounding (bf16 attention
 * probabilities, 16-bit GeGLU output) and stay far inside the mutations (1 - cos >= 0.13 at their
 * first percentile, relative 0.125 for 7/8). fp16 has 3 more bits (8x less error): relative and
 * max |diff| 1/6 of bf16's, 1 - cos 1/50. A label cosine moves by at most both vectors' angles:
 * sim_tol = 2 sqrt(2 cos_gap).
 *
 * Exits 77 ("no CUDA device: skipped") without a GPU unless every config is on the CPU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "core/fsutil.h"
#include "core/json.h"
#include "core/strbuf.h"
#include "laya.h"
#include "model/embed.h"
#include "model/engine.h"

#define MAX_TEXTS 4096

typedef struct bounds {
  double cos_gap; /* 1 - cosine, at most */
  double rel;     /* |got - want| / |want| (L2), at most */
  double max_abs; /* |component difference|, at most */
  double sim_tol; /* a label cosine against Laya's, at most: 2 sqrt(2 cos_gap), both vectors' angle */
} bounds;

static bounds bounds_for(const char *prec) {
  bounds b = {1e-3, 0.05, 0.15, 0}; /* bf16, and fp8's escalation (its embed pass is bf16's) */
  if (!strcmp(prec, "fp16")) b = (bounds){2e-5, 0.008, 0.02, 0};
  b.sim_tol = 2 * sqrt(2 * b.cos_gap);
  return b;
}

static const json_value *parse(const char *s, size_t n, arena *a) {
  laya_error e;
  json_value *v = json_parse(s, n, a, NULL, &e);
  if (!v) fprintf(stderr, "parse: %s\n", e.message);
  return v;
}

static int lines_of(char *text, arena *a, const json_value **out, int max) {
  int n = 0;
  for (char *p = text; *p && n < max;) {
    char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    if (len) out[n++] = parse(p, len, a);
    if (!nl) break;
    p = nl + 1;
  }
  return n;
}

/* ---- the texts ------------------------------------------------------------------------------- */

typedef struct texts {
  const char *p[MAX_TEXTS];
  size_t len[MAX_TEXTS];
  long n;
} texts;

static void add_text(texts *t, const char *s, size_t n) {
  if (t->n >= MAX_TEXTS) return;
  for (long i = 0; i < t->n; i++)
    if (t->len[i] == n && !memcmp(t->p[i], s, n)) return;
  t->p[t->n] = s;
  t->len[t->n++] = n;
}

static long find_text(const texts *t, const char *s, size_t n) {
  for (long i = 0; i < t->n; i++)
    if (t->len[i] == n && !memcmp(t->p[i], s, n)) return i;
  return -1;
}

static void add_criteria_texts(texts *t, const json_value *crit) {
  if (!crit) return;
  if (crit->type == JSON_OBJECT) {
    for (uint32_t i = 0; i < crit->n; i++) {
      add_text(t, crit->members[i].key, crit->members[i].key_len);
      if (crit->members[i].value.type == JSON_STRING) add_text(t, crit->members[i].value.s, crit->members[i].value.n);
    }
  } else if (crit->type == JSON_ARRAY) {
    for (uint32_t i = 0; i < crit->n; i++)
      if (crit->items[i].type == JSON_STRING) add_text(t, crit->items[i].s, crit->items[i].n);
  }
}

/* ---- vector comparison ----------------------------------------------------------------------- */

typedef struct vstats {
  double min_cos, max_rel, max_abs;
  long n, bad;
} vstats;

static double cosine(const float *a, const float *b, int d) {
  double ab = 0, aa = 0, bb = 0;
  for (int i = 0; i < d; i++) {
    ab += (double)a[i] * b[i];
    aa += (double)a[i] * a[i];
    bb += (double)b[i] * b[i];
  }
  if (aa == 0 && bb == 0) return 1.0; /* both the zero vector (a text with no ids) */
  if (aa == 0 || bb == 0) return 0.0;
  return ab / sqrt(aa * bb);
}

static double max_abs_diff(const float *a, const float *b, int d) {
  double m = 0;
  for (int i = 0; i < d; i++) {
    double e = fabs((double)a[i] - b[i]);
    if (!(e <= m)) m = e; /* NaN propagates */
  }
  return m;
}

static double rel_l2(const float *got, const float *want, int d) {
  double e = 0, w = 0;
  for (int i = 0; i < d; i++) {
    e += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
    w += (double)want[i] * want[i];
  }
  return w > 0 ? sqrt(e / w) : (e > 0 ? INFINITY : 0.0);
}

static bool within(const float *got, const float *want, int d, const bounds *b, double *cos_out, double *rel_out,
                   double *abs_out) {
  double c = cosine(got, want, d), r = rel_l2(got, want, d), m = max_abs_diff(got, want, d);
  if (cos_out) *cos_out = c;
  if (rel_out) *rel_out = r;
  if (abs_out) *abs_out = m;
  return c >= 1.0 - b->cos_gap && r <= b->rel && m <= b->max_abs;
}

static vstats compare_all(const float *got, const float *want, long n, int d, const bounds *b) {
  vstats s = {1.0, 0.0, 0.0, n, 0};
  for (long i = 0; i < n; i++) {
    double c, r, m;
    if (!within(got + i * d, want + i * d, d, b, &c, &r, &m)) s.bad++;
    if (!(c >= s.min_cos)) s.min_cos = c;
    if (!(r <= s.max_rel)) s.max_rel = r;
    if (!(m <= s.max_abs)) s.max_abs = m;
  }
  return s;
}

static int embed(laya_model *m, const texts *t, long n, int batch, float *out) {
  embed_opts o = {EMBED_DEFAULT_MAX_LENGTH, batch, false};
  laya_error e;
  int rc = embed_texts(m, t->p, t->len, n, &o, out, &e);
  if (rc) fprintf(stderr, "embed_texts: %s\n", e.message);
  return rc;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The bounds fail each mutation of the reference for at least 99% of the texts (zero vectors and
 * exact duplicates aside); printed: the first percentile of each mutation's 1 - cosine and
 * relative error, how far a bound could grow and still catch it. */
static void check_mutations(laya_model *cpu, const float *ref, long n, int d, const bounds *b) {
  static const char *const names[3] = {"+type_emb", "neighbour's vector", "x7/8"};
  float *mut = malloc(sizeof(float) * (size_t)d);
  float *te = malloc(sizeof(float) * (size_t)d);
  double *gap[3], *rel[3];
  for (int k = 0; k < 3; k++) {
    gap[k] = malloc(sizeof(double) * (size_t)n);
    rel[k] = malloc(sizeof(double) * (size_t)n);
  }
  CHECK(cpu->ck.w.type_emb != NULL && cpu->ck.w.type_emb->numel >= d);
  if (cpu->ck.w.type_emb) tensor_to_f32(cpu->ck.w.type_emb, 0, d, te); /* qtype 0: what a forward adds to every token */
  else memset(te, 0, sizeof(float) * (size_t)d);
  long caught[3] = {0, 0, 0}, tried = 0;
  for (long i = 0; i < n; i++) {
    const float *v = ref + i * d, *nb = ref + ((i + 1) % n) * d;
    double norm = 0;
    for (int j = 0; j < d; j++) norm += (double)v[j] * v[j];
    if (norm == 0 || !memcmp(v, nb, sizeof(float) * (size_t)d)) continue;
    for (int k = 0; k < 3; k++) {
      const float *x = mut;
      if (k == 0)
        for (int j = 0; j < d; j++) mut[j] = v[j] + te[j];
      else if (k == 1)
        x = nb;
      else
        for (int j = 0; j < d; j++) mut[j] = v[j] * (7.0f / 8.0f);
      double c, r;
      caught[k] += !within(x, v, d, b, &c, &r, NULL);
      gap[k][tried] = 1.0 - c;
      rel[k][tried] = r;
    }
    tried++;
  }
  printf("  the bounds reject (of %ld):", tried);
  for (int k = 0; k < 3; k++) {
    qsort(gap[k], (size_t)tried, sizeof(double), cmp_double);
    qsort(rel[k], (size_t)tried, sizeof(double), cmp_double);
    printf(" %s %ld (1%%: 1 - cos %.1e, rel %.3f)%s", names[k], caught[k], tried ? gap[k][tried / 100] : 0,
           tried ? rel[k][tried / 100] : 0, k < 2 ? "," : "\n");
    CHECK(tried > 0 && caught[k] * 100 >= tried * 99);
    free(gap[k]);
    free(rel[k]);
  }
  free(mut);
  free(te);
}

/* ---- shortlist replay ------------------------------------------------------------------------ */

/* The index of label `s` among the choice's labels (criteria order), or -1. */
static int label_index(const json_value *crit, const char *s) {
  for (uint32_t i = 0; i < crit->n; i++) {
    const char *lab = crit->type == JSON_OBJECT ? crit->members[i].key
                      : crit->items[i].type == JSON_STRING ? crit->items[i].s : NULL;
    if (lab && !strcmp(lab, s)) return (int)i;
  }
  return -1;
}

typedef struct sl_stats {
  int cases, ok, errors, questions, labels_exact, near_ties, sims, sims_bad, ranked;
  double sim_max;
} sl_stats;

/* One question's "shortlist" entry against Laya's; sims: Laya's cosine of every label (criteria
 * order), or NULL for a passed-through question; eps: the largest |cosine - Laya's| of its labels
 * on this model (check_sims). When every score moves by at most eps, the j-th best score moves by
 * at most eps, so the label kept at rank j has a Laya cosine within 2 eps of Laya's label there:
 * a difference beyond that is no near tie. */
static bool compare_meta(const char *id, const char *qid, const json_value *got, const json_value *want,
                         const json_value *crit, const json_value *sims, double eps, const bounds *b, sl_stats *st) {
  bool ok = got && got->type == JSON_OBJECT;
  const json_value *gl = ok ? json_get(got, "labels") : NULL, *wl = json_get(want, "labels");
  const json_value *gs = ok ? json_get(got, "scores") : NULL, *ws = json_get(want, "scores");
  ok = ok && gl && wl && gl->n == wl->n;
  static const char *const exact[] = {"k", "n", "passthrough"};
  for (int i = 0; ok && i < 3; i++) {
    const json_value *x = json_get(got, exact[i]), *y = json_get(want, exact[i]);
    ok = x && y && x->type == y->type && (x->type == JSON_BOOL ? x->b == y->b : x->i == y->i);
  }
  if (!ok) {
    fprintf(stderr, "%s/%s: shortlist metadata differs in shape, k, n or passthrough\n", id, qid);
    return false;
  }
  st->questions++;
  for (uint32_t j = 0; j < wl->n; j++) {
    if (!strcmp(gl->items[j].s, wl->items[j].s)) {
      st->labels_exact++;
    } else {
      int a = crit ? label_index(crit, gl->items[j].s) : -1, c = crit ? label_index(crit, wl->items[j].s) : -1;
      double gap = a >= 0 && c >= 0 && sims ? fabs(sims->items[a].d - sims->items[c].d) : INFINITY;
      if (gap <= 2 * eps + 1e-12) {
        st->near_ties++;
      } else {
        fprintf(stderr, "%s/%s: label %u is '%s', Laya's '%s' (Laya cosines %.6f apart, scores off by %.2e)\n", id,
                qid, j, gl->items[j].s, wl->items[j].s, gap, eps);
        ok = false;
      }
    }
  }
  if (ws && ws->type == JSON_ARRAY) {
    ok = ok && gs && gs->type == JSON_ARRAY && gs->n == ws->n;
    for (uint32_t j = 0; ok && j < ws->n; j++) {
      double e = fabs(gs->items[j].d - ws->items[j].d);
      if (e > st->sim_max) st->sim_max = e;
      if (e > b->sim_tol) {
        fprintf(stderr, "%s/%s: score %u is %.6f, Laya's %.6f\n", id, qid, j, gs->items[j].d, ws->items[j].d);
        ok = false;
      }
    }
  } else {
    ok = ok && gs && gs->type == ws->type;
  }
  return ok;
}

/* Every label's cosine of a ranked question (laya_shortlist_choice with k = n - 1); returns the
 * largest |cosine - Laya's|. */
static double check_sims(laya_model *m, const char *id, const json_value *req, const char *qid, const json_value *sims,
                       const bounds *b, sl_stats *st, arena *a) {
  const json_value *q = json_get(json_get(req, "questions"), qid);
  const json_value *crit = json_get(q, "criteria");
  json_dump_opts o = {NULL, NULL, false, -1};
  strbuf r;
  sb_init(&r);
  sb_puts(&r, "{\"state\": ");
  json_dump(&r, json_get(req, "state"), &o);
  sb_puts(&r, ", \"criteria\": ");
  json_dump(&r, crit, &o);
  if (json_get(q, "instructions")) {
    sb_puts(&r, ", \"instructions\": ");
    json_dump(&r, json_get(q, "instructions"), &o);
  }
  sb_printf(&r, ", \"k\": %u, \"return_scores\": true}", crit->n - 1);
  char *res = NULL;
  laya_error e;
  int rc = laya_shortlist_choice(m, sb_cstr(&r), &res, &e);
  sb_free(&r);
  CHECK(rc == 0);
  if (rc) {
    fprintf(stderr, "%s: shortlist_choice: %s\n", id, e.message);
    return INFINITY;
  }
  const json_value *got = parse(res, strlen(res), a);
  laya_free(res);
  const json_value *labels = &got->items[0], *scores = &got->items[1];
  CHECK(labels->n == crit->n - 1 && scores->n == crit->n - 1);
  int bad = 0;
  double eps = 0;
  for (uint32_t j = 0; j < labels->n && j < scores->n; j++) {
    int at = label_index(crit, labels->items[j].s);
    double err = at >= 0 ? fabs(scores->items[j].d - sims->items[at].d) : INFINITY;
    st->sims++;
    if (!(err <= eps)) eps = err;
    if (err > b->sim_tol) bad++;
  }
  if (!(eps <= st->sim_max)) st->sim_max = eps;
  st->ranked++;
  if (bad) fprintf(stderr, "%s/%s: %d label cosines off by more than %g\n", id, qid, bad, b->sim_tol);
  st->sims_bad += bad;
  return eps;
}

static void replay_shortlist(laya_model *m, const json_value **cs, int n, const bounds *b, arena *a) {
  sl_stats st = {0};
  st.sim_max = 0;
  for (int i = 0; i < n; i++) {
    const char *id = json_get(cs[i], "id")->s;
    const json_value *reqs = json_get(cs[i], "request"), *err = json_get(cs[i], "error");
    const json_value *req = parse(reqs->s, reqs->n, a);
    char *res = NULL;
    laya_error e;
    int rc = laya_predict_shortlist(m, reqs->s, &res, &e);
    st.cases++;
    if (err) {
      bool same = rc != 0 && !strcmp(e.kind, json_get(err, "kind")->s) && !strcmp(e.message, json_get(err, "message")->s);
      if (!same) fprintf(stderr, "%s: want the error %s\n", id, json_get(err, "message")->s);
      st.errors++;
      st.ok += same;
      laya_free(res);
      continue;
    }
    if (rc) {
      fprintf(stderr, "%s: %s\n", id, e.message);
      continue;
    }
    const json_value *got = parse(res, strlen(res), a);
    laya_free(res);
    const json_value *gm = json_get(got, "shortlist"), *wm = json_get(json_get(cs[i], "result"), "shortlist");
    const json_value *sims = json_get(cs[i], "sims");
    bool ok = gm && wm && gm->n == wm->n;
    for (uint32_t q = 0; ok && q < wm->n; q++) {
      const char *qid = wm->members[q].key;
      const json_value *crit = json_get(json_get(json_get(req, "questions"), qid), "criteria");
      const json_value *qs = sims ? json_get(sims, qid) : NULL;
      const double eps = qs ? check_sims(m, id, req, qid, qs, b, &st, a) : 0.0; /* passed through: exact */
      ok = compare_meta(id, qid, json_get(gm, qid), &wm->members[q].value, crit, qs, eps, b, &st);
    }
    if (!ok) fprintf(stderr, "%s: the shortlist differs from Laya's\n", id);
    st.ok += ok;
  }
  printf("  shortlist: %d/%d cases as Laya's (%d errors), %d questions: %d kept labels exact, %d within the near-tie "
         "rule; %d ranked questions, %d label cosines, %d off, max |diff| %.2e (bound %.3g)\n",
         st.ok, st.cases, st.errors, st.questions, st.labels_exact, st.near_ties, st.ranked, st.sims, st.sims_bad,
         st.sim_max, b->sim_tol);
  CHECK(st.cases >= 50 && st.ok == st.cases);
  CHECK(st.ranked >= 50 && st.sims >= 1000 && st.sims_bad == 0);
}

/* ---- one config ------------------------------------------------------------------------------- */

static void run_config(const char *ckdir, const char *config, const texts *t, const float *ref, laya_model *cpu,
                       const json_value **cs, int n_cases, arena *a) {
  char dev[32], prec[32];
  const char *colon = strchr(config, ':');
  snprintf(dev, sizeof dev, "%.*s", colon ? (int)(colon - config) : 0, config);
  snprintf(prec, sizeof prec, "%s", colon ? colon + 1 : "bf16");
  char *plus = strchr(prec, '+');
  const bool esc = plus && !strcmp(plus, "+esc");
  if (plus) *plus = 0;
  const bounds b = bounds_for(prec);
  laya_options o;
  laya_options_init(&o);
  o.device = dev;
  o.precision = prec;
  o.quiet = 1;
  o.escalate = esc ? 1 : -1;
  laya_error e;
  laya_model *m = laya_open(ckdir, &o, &e);
  if (!m && !strcmp(prec, "fp8") && e.code == LAYA_ERR_UNSUPPORTED) {
    printf("%s: %s (skipped)\n", config, e.message);
    return;
  }
  CHECK(m != NULL);
  if (!m) {
    fprintf(stderr, "%s: %s\n", config, e.message);
    return;
  }
  printf("%s (backend %s):\n", config, m->be->name);
  CHECK(m->be->embed != NULL);
  CHECK(strcmp(dev, "cuda") || m->be->kind == BACKEND_CUDA || m->be->kind == BACKEND_ESCALATE);
  const int d = embed_dim(m);
  const long n = t->n;
  float *got = malloc(sizeof(float) * (size_t)n * d), *again = malloc(sizeof(float) * (size_t)n * d);
  CHECK(embed(m, t, n, EMBED_DEFAULT_BATCH_SIZE, got) == 0);
  CHECK(m->fallback == NULL); /* the model's own backend embedded: no CPU backend was made */
  vstats s = compare_all(got, ref, n, d, &b);
  printf("  %ld vectors against the fp32 CPU backend: min cosine 1 - %.2e (bound 1 - %.1e), max relative error "
         "%.2e (bound %.3g), max |diff| %.2e (bound %.3g), %ld outside\n",
         s.n, 1.0 - s.min_cos, b.cos_gap, s.max_rel, b.rel, s.max_abs, b.max_abs, s.bad);
  CHECK(s.bad == 0);
  check_mutations(cpu, ref, n, d, &b);

  /* the same batches again, twice (eager, capture, replay on CUDA): the same bits */
  bool same = true;
  for (int k = 0; k < 2; k++) {
    CHECK(embed(m, t, n, EMBED_DEFAULT_BATCH_SIZE, again) == 0);
    same = same && !memcmp(got, again, sizeof(float) * (size_t)n * d);
  }
  printf("  the same batches three times: %s\n", same ? "the same bits" : "DIFFERENT bits");
  CHECK(same);
  /* one row a pass against 32 a pass */
  const long n1 = n < 96 ? n : 96;
  CHECK(embed(m, t, n1, 1, again) == 0);
  vstats s1 = compare_all(again, got, n1, d, &b);
  long bits = 0;
  for (long i = 0; i < n1; i++) bits += !memcmp(again + i * d, got + i * d, sizeof(float) * (size_t)d);
  printf("  %ld rows alone against in batches of 32: %ld the same bits, max |diff| %.2e\n", n1, bits, s1.max_abs);
  CHECK(s1.bad == 0);
  if (!strcmp(dev, "cpu")) CHECK(bits == n1); /* the CPU backends are batch-invariant */
  replay_shortlist(m, cs, n_cases, &b, a);
  CHECK(m->fallback == NULL);
  if (m->be->kind == BACKEND_CUDA && !strcmp(prec, "bf16")) {
    /* a pass that runs out of device memory runs again on the CPU (fp32: the reference's bits) */
    const long n2 = n < 512 ? n : 512;
    CHECK(backend_cuda_set_max_scratch(m->be, 0) == 0);
    CHECK(embed(m, t, n2, (int)n2, again) == 0);
    CHECK(m->fallback != NULL && laya_cpu_fallback_count(m) >= 1);
    const bool cpu_bits = !memcmp(again, ref, sizeof(float) * (size_t)n2 * d);
    CHECK(backend_cuda_set_max_scratch(m->be, -1) == 0);
    CHECK(embed(m, t, n2, (int)n2, again) == 0);
    vstats s2 = compare_all(again, ref, n2, d, &b);
    printf("  device out of memory: the pass ran on the CPU (%s the fp32 bits), %ld fallback(s); then on the GPU again: "
           "%ld outside\n", cpu_bits ? "with" : "NOT with", laya_cpu_fallback_count(m), s2.bad);
    CHECK(cpu_bits && s2.bad == 0 && laya_cpu_fallback_count(m) == 1);
  }
  free(got);
  free(again);
  laya_close(m);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s FIXTURES CKPT [device:precision[+esc]...]\n", argv[0]);
    return 2;
  }
  static const char *const defaults[] = {"cuda:bf16", "cuda:fp16", "cuda:fp8+esc"};
  const char *const *configs = argc > 3 ? (const char *const *)argv + 3 : defaults;
  const int n_configs = argc > 3 ? argc - 3 : 3;
  bool gpu = false;
  for (int i = 0; i < n_configs; i++) gpu |= strncmp(configs[i], "cpu:", 4) != 0;
  if (gpu && !backend_cuda_available(NULL)) {
    printf("no CUDA device: skipped\n");
    return 77;
  }
  setenv("LAYA_QUIET_WARNINGS", "1", 1);
  char ck[1024], path[1200];
  snprintf(ck, sizeof ck, "%s/ckpt/%s", argv[1], argv[2]);
  arena a;
  arena_init(&a, 1 << 20);
  laya_error e;
  size_t len;
  snprintf(path, sizeof path, "%s/shortlist/%s/embed.jsonl", argv[1], argv[2]);
  char *etext = fs_read_file(path, &len, &e);
  snprintf(path, sizeof path, "%s/shortlist/%s/cases.jsonl", argv[1], argv[2]);
  char *ctext = fs_read_file(path, &len, &e);
  CHECK(etext && ctext);
  if (!etext || !ctext) {
    fprintf(stderr, "%s\n", e.message);
    return check_summary("test_cuda_embed");
  }
  static const json_value *el[16], *cs[512];
  const int ne = lines_of(etext, &a, el, 16), nc = lines_of(ctext, &a, cs, 512);
  static texts t;
  for (int i = 0; i < ne; i++) {
    const json_value *tx = json_get(el[i], "texts");
    for (uint32_t j = 0; tx && j < tx->n; j++) add_text(&t, tx->items[j].s, tx->items[j].n);
  }
  for (int i = 0; i < nc; i++) {
    const json_value *req = parse(json_get(cs[i], "request")->s, json_get(cs[i], "request")->n, &a);
    const json_value *qs = req ? json_get(req, "questions") : NULL;
    for (uint32_t q = 0; qs && qs->type == JSON_OBJECT && q < qs->n; q++)
      if (qs->members[q].value.type == JSON_OBJECT) add_criteria_texts(&t, json_get(&qs->members[q].value, "criteria"));
  }
  printf("%s: %ld texts, %d shortlist cases\n", argv[2], t.n, nc);
  CHECK(t.n >= 500 && nc >= 50);

  laya_options o;
  laya_options_init(&o);
  o.device = "cpu";
  o.precision = "fp32";
  o.quiet = 1;
  laya_model *cpu = laya_open(ck, &o, &e);
  CHECK(cpu != NULL);
  if (!cpu) {
    fprintf(stderr, "%s\n", e.message);
    return check_summary("test_cuda_embed");
  }
  const int d = embed_dim(cpu);
  float *ref = malloc(sizeof(float) * (size_t)t.n * d);
  CHECK(embed(cpu, &t, t.n, EMBED_DEFAULT_BATCH_SIZE, ref) == 0);
  /* the reference is Laya's: embed.jsonl's first request (its texts, max_length 512) within 1e-4 */
  const json_value *want = json_get(el[0], "vectors"), *wt = json_get(el[0], "texts");
  long off = 0;
  for (uint32_t i = 0; want && wt && i < want->n && i < wt->n; i++) {
    const long at = find_text(&t, wt->items[i].s, wt->items[i].n);
    CHECK(at >= 0 && (int)want->items[i].n == d);
    for (int j = 0; at >= 0 && j < d && j < (int)want->items[i].n; j++)
      off += fabs(ref[at * d + j] - want->items[i].items[j].d) > 1e-4;
  }
  CHECK(want && want->n > 10 && off == 0);

  for (int i = 0; i < n_configs; i++) run_config(ck, configs[i], &t, ref, cpu, cs, nc, &a);
  free(ref);
  laya_close(cpu);
  free(etext);
  free(ctext);
  arena_free(&a);
  return check_summary("test_cuda_embed");
}
