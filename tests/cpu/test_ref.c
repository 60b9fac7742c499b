/*
 * test_ref.c: invariants of the fp32 reference backend (cpu-ref) on small random models built in
 * memory. Parity with PyTorch is proven separately (test_ref_parity.c); this file checks the
 * properties the forward pass must have whatever the weights: batch invariance, where the sliding
 * window and the thetas may and may not matter, dtype independence, thread safety, and the
 * errors it reports for bad batches and configs.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "backend/backend.h"
#include "backend/cpu/ref_ops.h"
#include "batch_buf.h"
#include "random_model.h"

/* ---- batches --------------------------------------------------------------------------------- */

typedef struct test_row {
  int len, qtype, k;
  int markers[8];
  uint64_t seed; /* token ids */
} test_row;

/* Packs rows[order[0..n-1]] back to back. */
static void make_batch(batch_buf *bb, const test_row *rows, const int *order, int n, int vocab) {
  int *L = malloc(sizeof(int) * (size_t)(n ? n : 1)), *K = malloc(sizeof(int) * (size_t)(n ? n : 1));
  for (int i = 0; i < n; i++) L[i] = rows[order[i]].len, K[i] = rows[order[i]].k;
  batch_buf_alloc(bb, n, L, K);
  for (int i = 0; i < n; i++) {
    const test_row *r = &rows[order[i]];
    int32_t *tok = bb->tokens + bb->row_start[i], *mk = bb->markers + bb->marker_start[i];
    bb->qtype[i] = r->qtype;
    uint64_t s = r->seed;
    for (int j = 0; j < r->len; j++) tok[j] = (int32_t)(rm_next(&s) % (uint64_t)vocab);
    for (int j = 0; j < r->k; j++) mk[j] = r->markers[j];
  }
  free(L);
  free(K);
}

typedef struct result {
  int rc;
  float *logits, *act;
  int n_logits, n_act;
} result;

static result run(backend *be, backend_worker *w, const packed_batch *b, int n_act) {
  result r = {0};
  r.n_logits = b->n_rows ? b->marker_start[b->n_rows] : 0;
  r.n_act = b->n_rows * n_act;
  r.logits = calloc((size_t)r.n_logits + 1, sizeof(float));
  r.act = calloc((size_t)r.n_act + 1, sizeof(float));
  laya_error err = {0};
  r.rc = be->forward(be, w, b, r.logits, r.act, &err);
  if (r.rc) fprintf(stderr, "forward failed: %s\n", err.message);
  return r;
}

static result run_rows(backend *be, backend_worker *w, const test_row *rows, const int *order, int n, int vocab,
                       int n_act) {
  batch_buf bb;
  make_batch(&bb, rows, order, n, vocab);
  result r = run(be, w, &bb.b, n_act);
  batch_buf_free(&bb);
  return r;
}

static void free_result(result *r) {
  free(r->logits);
  free(r->act);
}

static int all_finite(const result *r) {
  for (int i = 0; i < r->n_logits; i++)
    if (!isfinite(r->logits[i])) return 0;
  for (int i = 0; i < r->n_act; i++)
    if (!isfinite(r->act[i])) return 0;
  return 1;
}

static int same_bits(const float *a, const float *b, int n) { return memcmp(a, b, sizeof(float) * (size_t)n) == 0; }

static float max_abs_diff(const float *a, const float *b, int n) {
  float m = 0.0f;
  for (int i = 0; i < n; i++) {
    float d = fabsf(a[i] - b[i]);
    if (d > m) m = d;
  }
  return m;
}

static backend *make_backend_threads(const random_model *rm, int threads) {
  laya_error err = {0};
  backend_options o = {PREC_FP32, threads, 0, NULL};
  backend *be = backend_cpu_ref_create(&rm->w, &o, &err);
  if (!be) fprintf(stderr, "create failed: %s\n", err.message);
  return be;
}

static backend *make_backend(const random_model *rm) { return make_backend_threads(rm, 1); }

/* A mix of rows: short, longer than the window, one option, many options, all three types. */
static const test_row ROWS[] = {
    {5, 0, 2, {1, 3}, 11},
    {40, 1, 5, {2, 4, 6, 8, 10}, 12},
    {1, 2, 1, {0}, 13},
    {23, 0, 3, {22, 0, 7}, 14},
    {70, 2, 2, {3, 5}, 15},
    {9, 1, 8, {1, 2, 3, 4, 5, 6, 7, 8}, 16},
};
enum { N_ROWS = sizeof ROWS / sizeof ROWS[0] };

/* ---- tests ----------------------------------------------------------------------------------- */

/* A row's logits and act logits are bit-identical alone, packed with others, in any order. */
static void test_batch_invariance(void) {
  encoder_config c = random_small_config();
  random_model rm;
  CHECK(random_model_init(&rm, &c, 2, 2, DT_F32, 1) == 0);
  backend *be = make_backend(&rm);
  CHECK(be != NULL);
  if (!be) return;
  laya_error err = {0};
  backend_worker *w = be->worker_create(be, &err);
  int order[N_ROWS], rev[N_ROWS];
  for (int i = 0; i < N_ROWS; i++) order[i] = i, rev[i] = N_ROWS - 1 - i;
  result all = run_rows(be, w, ROWS, order, N_ROWS, c.vocab, 2);
  result back = run_rows(be, w, ROWS, rev, N_ROWS, c.vocab, 2);
  CHECK(all.rc == 0 && back.rc == 0);
  CHECK(all_finite(&all));
  int m = 0, mb = all.n_logits;
  for (int i = 0; i < N_ROWS; i++) {
    result one = run_rows(be, w, ROWS, &i, 1, c.vocab, 2);
    CHECK(one.rc == 0);
    CHECK(same_bits(one.logits, all.logits + m, ROWS[i].k));
    CHECK(same_bits(one.act, all.act + 2 * i, 2));
    mb -= ROWS[i].k; /* reversed batch: row i's markers sit at the end minus the later rows */
    int mrev = 0;
    for (int j = N_ROWS - 1; j > i; j--) mrev += ROWS[j].k;
    CHECK(same_bits(one.logits, back.logits + mrev, ROWS[i].k));
    CHECK(same_bits(one.act, back.act + 2 * (N_ROWS - 1 - i), 2));
    m += ROWS[i].k;
    free_result(&one);
  }
  (void)mb;
  /* the worker's scratch is reused across sizes without carrying anything over */
  result again = run_rows(be, w, ROWS, order, N_ROWS, c.vocab, 2);
  CHECK(same_bits(again.logits, all.logits, all.n_logits) && same_bits(again.act, all.act, all.n_act));
  free_result(&again);
  /* different rows give different answers (the comparison above is not vacuous) */
  CHECK(all.logits[0] != all.logits[2]);
  CHECK(all.act[0] != all.act[2]);
  free_result(&all);
  free_result(&back);
  be->worker_destroy(be, w);
  be->destroy(be);
  random_model_free(&rm);
}

/* The pool splits work by output columns and (row, head): any thread count gives the same bits. */
static void test_thread_counts(void) {
  encoder_config c = random_small_config();
  random_model rm;
  CHECK(random_model_init(&rm, &c, 2, 2, DT_F32, 8) == 0);
  int order[N_ROWS];
  for (int i = 0; i < N_ROWS; i++) order[i] = i;
  result r[3];
  int threads[3] = {1, 2, 3};
  for (int i = 0; i < 3; i++) {
    backend *be = make_backend_threads(&rm, threads[i]);
    laya_error err = {0};
    backend_worker *w = be->worker_create(be, &err);
    r[i] = run_rows(be, w, ROWS, order, N_ROWS, c.vocab, 2);
    CHECK(r[i].rc == 0);
    be->worker_destroy(be, w);
    be->destroy(be);
  }
  for (int i = 1; i < 3; i++)
    CHECK(same_bits(r[0].logits, r[i].logits, r[0].n_logits) && same_bits(r[0].act, r[i].act, r[0].n_act));
  for (int i = 0; i < 3; i++) free_result(&r[i]);
  random_model_free(&rm);
}

/* Runs the rows through the model built from config c (same seed => same weights). */
static result run_config(const encoder_config *c, const test_row *rows, int n) {
  random_model rm;
  result r = {0};
  r.rc = -1;
  if (random_model_init(&rm, c, 2, 2, DT_F32, 2) != 0) return r;
  backend *be = make_backend(&rm);
  if (!be) {
    random_model_free(&rm);
    return r;
  }
  laya_error err = {0};
  backend_worker *w = be->worker_create(be, &err);
  int order[16];
  for (int i = 0; i < n; i++) order[i] = i;
  r = run_rows(be, w, rows, order, n, c->vocab, 2);
  be->worker_destroy(be, w);
  be->destroy(be);
  random_model_free(&rm);
  return r;
}

/* The sliding window only matters on local layers and only for tokens further apart than
 * local_window / 2; the local theta only matters when local layers exist. */
static void test_window_and_thetas(void) {
  encoder_config local = random_small_config(); /* layers 0 and 3 global, 1 and 2 local, window 8 */
  encoder_config global = local;
  global.global_every = 1;
  global.local_theta = global.global_theta;
  encoder_config local_same_theta = local;
  local_same_theta.local_theta = local.global_theta;

  /* rows whose tokens are all within 8 of each other: the window hides nothing */
  test_row near[] = {{9, 0, 2, {0, 8}, 21}, {4, 1, 3, {1, 2, 3}, 22}};
  result a = run_config(&local_same_theta, near, 2), b = run_config(&global, near, 2);
  CHECK(a.rc == 0 && b.rc == 0);
  CHECK(same_bits(a.logits, b.logits, a.n_logits) && same_bits(a.act, b.act, a.n_act));
  free_result(&a);
  free_result(&b);

  /* a row of 10 tokens has a pair 9 apart: the window now matters */
  test_row far[] = {{10, 0, 2, {0, 9}, 21}};
  a = run_config(&local_same_theta, far, 1);
  b = run_config(&global, far, 1);
  CHECK(a.rc == 0 && b.rc == 0);
  CHECK(!same_bits(a.logits, b.logits, a.n_logits));
  free_result(&a);
  free_result(&b);

  /* the same with ModernBERT's real window of 128 (|i - j| <= 64): 65 tokens vs 66 tokens */
  encoder_config l128 = local_same_theta, g128 = global;
  l128.local_window = g128.local_window = 128;
  test_row r65[] = {{65, 2, 2, {0, 64}, 23}}, r66[] = {{66, 2, 2, {0, 65}, 23}};
  a = run_config(&l128, r65, 1);
  b = run_config(&g128, r65, 1);
  CHECK(a.rc == 0 && b.rc == 0 && same_bits(a.logits, b.logits, 2) && same_bits(a.act, b.act, 2));
  free_result(&a);
  free_result(&b);
  a = run_config(&l128, r66, 1);
  b = run_config(&g128, r66, 1);
  CHECK(a.rc == 0 && b.rc == 0 && !same_bits(a.logits, b.logits, 2));
  free_result(&a);
  free_result(&b);

  /* with every layer global the local theta is never used ... */
  encoder_config g_other = global;
  g_other.local_theta = 10000.0;
  a = run_config(&global, near, 2);
  b = run_config(&g_other, near, 2);
  CHECK(a.rc == 0 && b.rc == 0 && same_bits(a.logits, b.logits, a.n_logits));
  free_result(&a);
  free_result(&b);
  /* ... and with local layers it is (10000 vs 160000 on layers 1 and 2) */
  a = run_config(&local, near, 2);
  b = run_config(&local_same_theta, near, 2);
  CHECK(a.rc == 0 && b.rc == 0 && !same_bits(a.logits, b.logits, a.n_logits));
  /* the global theta matters too */
  encoder_config other_global = local;
  other_global.global_theta = 10000.0;
  result g = run_config(&other_global, near, 2);
  CHECK(g.rc == 0 && !same_bits(a.logits, g.logits, a.n_logits));
  free_result(&g);
  free_result(&a);
  free_result(&b);
}

/* Attention sees exactly the keys within the window: perturbing a key/value further away leaves
 * the query's output bit-identical, perturbing one at the edge changes it. */
static void test_attention_window(void) {
  enum { LEN = 40, H = 2, HD = 8, D = H * HD, W = 5 };
  static float qkv[LEN * 3 * D], out0[LEN * D], out1[LEN * D], scores[LEN * (HD + 1)];
  CHECK(ref_attention_scratch_floats(LEN, HD) <= sizeof scores / sizeof scores[0]);
  uint64_t s = 5;
  for (int i = 0; i < LEN * 3 * D; i++) qkv[i] = (float)((int)(rm_next(&s) % 201) - 100) / 50.0f;
  ref_attention(out0, D, qkv, 3 * D, LEN, H, HD, W, scores);
  int i = 20;
  for (int j = 0; j < LEN; j++) {
    float saved_k = qkv[j * 3 * D + D], saved_v = qkv[j * 3 * D + 2 * D];
    qkv[j * 3 * D + D] += 1.0f;     /* head 0 key */
    qkv[j * 3 * D + 2 * D] += 1.0f; /* head 0 value */
    ref_attention(out1, D, qkv, 3 * D, LEN, H, HD, W, scores);
    int changed = !same_bits(out0 + i * D, out1 + i * D, HD);
    CHECK(changed == (abs(i - j) <= W));
    CHECK(same_bits(out0 + i * D + HD, out1 + i * D + HD, HD)); /* head 1 untouched */
    qkv[j * 3 * D + D] = saved_k;
    qkv[j * 3 * D + 2 * D] = saved_v;
  }
  /* full attention (window -1): every key matters */
  ref_attention(out0, D, qkv, 3 * D, LEN, H, HD, -1, scores);
  qkv[39 * 3 * D + 2 * D] += 1.0f;
  ref_attention(out1, D, qkv, 3 * D, LEN, H, HD, -1, scores);
  CHECK(!same_bits(out0, out1, HD));
  /* one key: the output is that key's value exactly */
  ref_attention(out0, D, qkv, 3 * D, 1, H, HD, -1, scores);
  CHECK(same_bits(out0, qkv + 2 * D, D));
}

/* ref_matmul against a double-precision dot product on shapes that are not multiples of the
 * blocking, with bias and with accumulation. */
static void test_matmul(void) {
  enum { T = 7, N = 13, K = 37 };
  static float x[T * K], w[N * K], b[N], y[T * 20], panel[K * 64];
  uint64_t s = 9;
  for (int i = 0; i < T * K; i++) x[i] = (float)((int)(rm_next(&s) % 2001) - 1000) / 300.0f;
  for (int i = 0; i < N * K; i++) w[i] = (float)((int)(rm_next(&s) % 2001) - 1000) / 700.0f;
  for (int i = 0; i < N; i++) b[i] = (float)i - 6.0f;
  CHECK(ref_matmul_panel_floats(K) <= sizeof panel / sizeof panel[0]);
  for (int i = 0; i < T * 20; i++) y[i] = 1.0f;
  ref_matmul(y, 20, x, K, w, b, T, N, K, 1, panel);
  double worst = 0;
  for (int t = 0; t < T; t++) {
    for (int n = 0; n < N; n++) {
      double ref = 1.0 + b[n];
      for (int k = 0; k < K; k++) ref += (double)x[t * K + k] * w[n * K + k];
      double e = fabs(ref - y[t * 20 + n]);
      if (e > worst) worst = e;
    }
    for (int n = N; n < 20; n++) CHECK(y[t * 20 + n] == 1.0f); /* nothing outside the N columns */
  }
  CHECK(worst < 1e-4);
  /* a long reduction (several k blocks and a partial one) stays within float noise of exact */
  {
    enum { T2 = 5, N2 = 9, K2 = 1000 };
    static float x2[T2 * K2], w2[N2 * K2], y2[T2 * N2], panel2[K2 * 64];
    for (int i = 0; i < T2 * K2; i++) x2[i] = (float)((int)(rm_next(&s) % 2001) - 1000) / 1000.0f;
    for (int i = 0; i < N2 * K2; i++) w2[i] = (float)((int)(rm_next(&s) % 2001) - 1000) / 1000.0f;
    CHECK(ref_matmul_panel_floats(K2) <= sizeof panel2 / sizeof panel2[0]);
    ref_matmul(y2, N2, x2, K2, w2, NULL, T2, N2, K2, 0, panel2);
    double worst2 = 0;
    for (int t = 0; t < T2; t++)
      for (int n = 0; n < N2; n++) {
        double ref = 0;
        for (int k = 0; k < K2; k++) ref += (double)x2[t * K2 + k] * w2[n * K2 + k];
        if (fabs(ref - y2[t * N2 + n]) > worst2) worst2 = fabs(ref - y2[t * N2 + n]);
      }
    CHECK(worst2 < 2e-5);
  }
  /* a token's result does not depend on how many tokens share the call */
  static float y1[20];
  ref_matmul(y1, 20, x + 5 * K, K, w, NULL, 1, N, K, 0, panel);
  ref_matmul(y, 20, x, K, w, NULL, T, N, K, 0, panel);
  CHECK(same_bits(y1, y + 5 * 20, N));
}

static void test_small_ops(void) {
  /* LayerNorm: zero mean, unit variance (up to eps), then the affine map */
  float x[6] = {1, 2, 3, 4, 5, 100}, wn[6] = {1, 1, 1, 1, 1, 1}, bn[6] = {0, 0, 0, 0, 0, 0}, y[6];
  ref_layernorm(y, x, wn, bn, 6, 1e-5f);
  double mean = 0, var = 0;
  for (int i = 0; i < 6; i++) mean += y[i];
  mean /= 6;
  for (int i = 0; i < 6; i++) var += (y[i] - mean) * (y[i] - mean);
  var /= 6;
  CHECK(fabs(mean) < 1e-6 && fabs(var - 1.0) < 1e-4);
  float w2[6] = {2, 2, 2, 2, 2, 2}, y2[6];
  ref_layernorm(y2, x, w2, NULL, 6, 1e-5f);
  for (int i = 0; i < 6; i++) CHECK(fabsf(y2[i] - 2 * y[i]) < 1e-6f);

  /* GELU (erf): known values */
  CHECK(ref_gelu(0.0f) == 0.0f);
  CHECK(fabsf(ref_gelu(1.0f) - 0.8413447f) < 1e-6f);
  CHECK(fabsf(ref_gelu(-1.0f) + 0.1586553f) < 1e-6f);

  /* RoPE: position 0 is the identity; each (j, j + half) pair keeps its norm; the score between
   * a rotated query and key depends only on their distance */
  enum { HD = 16, LEN = 50 };
  static float ct[LEN * HD / 2], st[LEN * HD / 2];
  ref_rope_tables(ct, st, LEN, HD, 10000.0);
  float q[HD], k[HD], q0[HD];
  for (int i = 0; i < HD; i++) q[i] = q0[i] = (float)(i + 1) / 7.0f, k[i] = (float)(HD - i) / 5.0f;
  ref_rope(q, ct, st, HD);
  CHECK(same_bits(q, q0, HD));
  float scores[3];
  int pairs[3][2] = {{3, 10}, {20, 27}, {40, 47}};
  for (int p = 0; p < 3; p++) {
    float qa[HD], ka[HD];
    memcpy(qa, q0, sizeof qa);
    memcpy(ka, k, sizeof ka);
    ref_rope(qa, ct + pairs[p][0] * HD / 2, st + pairs[p][0] * HD / 2, HD);
    ref_rope(ka, ct + pairs[p][1] * HD / 2, st + pairs[p][1] * HD / 2, HD);
    scores[p] = 0;
    for (int i = 0; i < HD; i++) scores[p] += qa[i] * ka[i];
    for (int j = 0; j < HD / 2; j++) {
      double n0 = (double)q0[j] * q0[j] + (double)q0[j + HD / 2] * q0[j + HD / 2];
      double n1 = (double)qa[j] * qa[j] + (double)qa[j + HD / 2] * qa[j + HD / 2];
      CHECK(fabs(n0 - n1) < 1e-4 * n0);
    }
  }
  CHECK(fabsf(scores[0] - scores[1]) < 1e-3f && fabsf(scores[0] - scores[2]) < 1e-3f);

  /* confidence features */
  float f[4];
  float one[1] = {3.0f};
  ref_confidence_features(one, 1, f);
  CHECK(f[0] == 1.0f && f[1] == 1.0f && f[2] == 0.0f && f[3] == 2.0f / 255.0f);
  float two[2] = {0.5f, 0.5f};
  ref_confidence_features(two, 2, f);
  CHECK(f[0] == 0.5f && f[1] == 0.0f && fabsf(f[2] - 1.0f) < 1e-6f && f[3] == 2.0f / 255.0f);
  float five[5] = {1, 1, 1, 1, 1};
  ref_confidence_features(five, 5, f);
  CHECK(fabsf(f[0] - 0.2f) < 1e-6f && f[1] == 0.0f && fabsf(f[2] - 1.0f) < 1e-5f && f[3] == 5.0f / 255.0f);
  float peaked[3] = {100.0f, 0.0f, 1.0f};
  ref_confidence_features(peaked, 3, f);
  CHECK(f[0] == 1.0f && f[1] == 1.0f && f[2] >= 0.0f && f[2] < 1e-6f);
  float mixed[3] = {2.0f, 1.0f, 0.0f}; /* p = 0.665, 0.245, 0.090 */
  ref_confidence_features(mixed, 3, f);
  CHECK(fabsf(f[0] - 0.66524096f) < 1e-6f && fabsf(f[1] - (0.66524096f - 0.24472847f)) < 1e-6f);
  double ent = -(0.66524096 * log(0.66524096) + 0.24472847 * log(0.24472847) + 0.09003057 * log(0.09003057)) / log(3.0);
  CHECK(fabs(f[2] - ent) < 1e-6);
}

/* The same weight values stored as F32, F16 or BF16 give bit-identical outputs. */
static void test_dtypes(void) {
  encoder_config c = random_small_config();
  int order[N_ROWS];
  for (int i = 0; i < N_ROWS; i++) order[i] = i;
  result r[3];
  tensor_dtype dts[3] = {DT_F32, DT_F16, DT_BF16};
  for (int i = 0; i < 3; i++) {
    random_model rm;
    CHECK(random_model_init(&rm, &c, 1, 3, dts[i], 3) == 0);
    backend *be = make_backend(&rm);
    laya_error err = {0};
    backend_worker *w = be->worker_create(be, &err);
    r[i] = run_rows(be, w, ROWS, order, N_ROWS, c.vocab, 3);
    CHECK(r[i].rc == 0);
    be->worker_destroy(be, w);
    be->destroy(be);
    random_model_free(&rm);
  }
  for (int i = 1; i < 3; i++) {
    CHECK(same_bits(r[0].logits, r[i].logits, r[0].n_logits));
    CHECK(same_bits(r[0].act, r[i].act, r[0].n_act));
  }
  for (int i = 0; i < 3; i++) free_result(&r[i]);

  /* tensor_to_f32 on the values the generator never makes: half subnormals, infinities, NaN */
  uint16_t h[6] = {0x0001, 0x03ff, 0x8000, 0x7c00, 0xfc00, 0x7e00};
  float f[6];
  tensor t = {"h", DT_F16, 1, {6}, 6, h};
  tensor_to_f32(&t, 0, 6, f);
  CHECK(f[0] == ldexpf(1.0f, -24));
  CHECK(f[1] == ldexpf(1023.0f, -24));
  CHECK(f[2] == 0.0f && signbit(f[2]));
  CHECK(isinf(f[3]) && f[3] > 0 && isinf(f[4]) && f[4] < 0 && isnan(f[5]));
  uint16_t bf[2] = {0x3f80, 0xc0a0}; /* 1.0, -5.0 */
  tensor tb = {"b", DT_BF16, 1, {2}, 2, bf};
  tensor_to_f32(&tb, 1, 1, f);
  CHECK(f[0] == -5.0f);
}

/* Reordering the markers of a row reorders its logits bit for bit; the act logits see the same
 * set of options and agree up to float summation order. The question type matters. */
static void test_markers_and_types(void) {
  encoder_config c = random_small_config();
  random_model rm;
  CHECK(random_model_init(&rm, &c, 2, 2, DT_F32, 4) == 0);
  backend *be = make_backend(&rm);
  laya_error err = {0};
  backend_worker *w = be->worker_create(be, &err);
  test_row rows[4] = {{30, 0, 4, {3, 9, 15, 21}, 31}, {30, 0, 4, {21, 15, 9, 3}, 31},
                      {30, 1, 4, {3, 9, 15, 21}, 31}, {30, 2, 4, {3, 9, 15, 21}, 31}};
  int order[4] = {0, 1, 2, 3};
  result r = run_rows(be, w, rows, order, 4, c.vocab, 2);
  CHECK(r.rc == 0);
  for (int i = 0; i < 4; i++) CHECK(r.logits[i] == r.logits[4 + 3 - i]);
  CHECK(max_abs_diff(r.act, r.act + 2, 2) <= 1e-5f * (1.0f + fabsf(r.act[0])));
  CHECK(!same_bits(r.logits, r.logits + 8, 4));  /* choice vs score */
  CHECK(!same_bits(r.logits + 8, r.logits + 12, 4)); /* score vs noul */
  free_result(&r);
  be->worker_destroy(be, w);
  be->destroy(be);
  random_model_free(&rm);
}

/* A model without decision-head layers runs (head_layers = 0 is a valid config). */
static void test_no_head(void) {
  encoder_config c = random_small_config();
  random_model rm;
  CHECK(random_model_init(&rm, &c, 0, 2, DT_F32, 5) == 0);
  backend *be = make_backend(&rm);
  CHECK(be != NULL);
  laya_error err = {0};
  backend_worker *w = be->worker_create(be, &err);
  int order[2] = {0, 1};
  result r = run_rows(be, w, ROWS, order, 2, c.vocab, 2);
  CHECK(r.rc == 0 && all_finite(&r));
  free_result(&r);
  be->worker_destroy(be, w);
  be->destroy(be);
  random_model_free(&rm);
}

typedef struct thread_job {
  backend *be;
  int vocab;
  result r;
} thread_job;

static void *thread_main(void *arg) {
  thread_job *j = arg;
  laya_error err = {0};
  backend_worker *w = j->be->worker_create(j->be, &err);
  int order[N_ROWS];
  for (int i = 0; i < N_ROWS; i++) order[i] = i;
  for (int it = 0; it < 3; it++) {
    if (it) free_result(&j->r);
    j->r = run_rows(j->be, w, ROWS, order, N_ROWS, j->vocab, 2);
  }
  j->be->worker_destroy(j->be, w);
  return NULL;
}

/* One backend, four threads, each with its own worker: every thread gets the single-thread result. */
static void test_threads(void) {
  encoder_config c = random_small_config();
  random_model rm;
  CHECK(random_model_init(&rm, &c, 2, 2, DT_BF16, 6) == 0);
  backend *be = make_backend_threads(&rm, 2); /* callers share the backend's pool */
  thread_job solo = {be, c.vocab, {0}};
  thread_main(&solo);
  thread_job jobs[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    jobs[i] = (thread_job){be, c.vocab, {0}};
    pthread_create(&th[i], NULL, thread_main, &jobs[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    CHECK(jobs[i].r.rc == 0);
    CHECK(same_bits(jobs[i].r.logits, solo.r.logits, solo.r.n_logits));
    CHECK(same_bits(jobs[i].r.act, solo.r.act, solo.r.n_act));
    free_result(&jobs[i].r);
  }
  free_result(&solo.r);
  be->destroy(be);
  random_model_free(&rm);
}

static void expect_error(backend *be, backend_worker *w, const test_row *rows, int n, int vocab, const char *needle) {
  batch_buf bb;
  int order[8];
  for (int i = 0; i < n; i++) order[i] = i;
  make_batch(&bb, rows, order, n, vocab);
  float logits[64], act[64];
  laya_error err = {0};
  int rc = be->forward(be, w, &bb.b, logits, act, &err);
  CHECK(rc == LAYA_ERR_VALUE && err.code == LAYA_ERR_VALUE);
  if (!strstr(err.message, needle)) {
    fprintf(stderr, "expected '%s' in: %s\n", needle, err.message);
    CHECK(0);
  }
  batch_buf_free(&bb);
}

static void test_errors(void) {
  encoder_config c = random_small_config();
  random_model rm;
  CHECK(random_model_init(&rm, &c, 1, 2, DT_F32, 7) == 0);
  backend *be = make_backend(&rm);
  laya_error err = {0};
  backend_worker *w = be->worker_create(be, &err);
  test_row bad_marker[] = {{5, 0, 2, {1, 3}, 1}, {4, 0, 2, {1, 4}, 2}};
  expect_error(be, w, bad_marker, 2, c.vocab, "row 1 marker 1 at position 4 is outside the row (length 4)");
  test_row neg_marker[] = {{5, 0, 1, {-1}, 1}};
  expect_error(be, w, neg_marker, 1, c.vocab, "outside the row");
  test_row no_marker[] = {{5, 0, 0, {0}, 1}};
  expect_error(be, w, no_marker, 1, c.vocab, "row 0 has no option markers");
  test_row empty[] = {{5, 0, 1, {0}, 1}, {0, 0, 1, {0}, 1}};
  expect_error(be, w, empty, 2, c.vocab, "row 1 is empty");
  test_row bad_type[] = {{5, 3, 1, {0}, 1}};
  expect_error(be, w, bad_type, 1, c.vocab, "question type 3");
  /* token ids beyond the vocabulary: generate with a larger vocab than the model has */
  test_row toks[] = {{50, 0, 1, {0}, 1}};
  expect_error(be, w, toks, 1, c.vocab * 100, "outside the vocabulary (512)");
  be->worker_destroy(be, w);
  be->destroy(be);

  /* config and weight problems are reported at create */
  backend_options o = {PREC_FP32, 1, 0, NULL};
  rm.w.enc.n_heads = 3;
  laya_err_clear(&err);
  CHECK(backend_cpu_ref_create(&rm.w, &o, &err) == NULL && err.code == LAYA_ERR_CONFIG);
  CHECK(strstr(err.message, "num_attention_heads") != NULL);
  rm.w.enc.n_heads = 4;
  const tensor *saved = rm.w.layers[1].wo;
  rm.w.layers[1].wo = NULL;
  laya_err_clear(&err);
  CHECK(backend_cpu_ref_create(&rm.w, &o, &err) == NULL && err.code == LAYA_ERR_NOT_FOUND);
  CHECK(strstr(err.message, "attn.Wo.weight") != NULL);
  rm.w.layers[1].wo = rm.w.layers[1].wqkv; /* wrong shape */
  laya_err_clear(&err);
  CHECK(backend_cpu_ref_create(&rm.w, &o, &err) == NULL && err.code == LAYA_ERR_FORMAT);
  CHECK(strstr(err.message, "expected 16384") != NULL);
  rm.w.layers[1].wo = saved;
  backend *ok = backend_cpu_ref_create(&rm.w, &o, &err);
  CHECK(ok != NULL);
  if (ok) ok->destroy(ok);
  random_model_free(&rm);
}

int main(void) {
  test_matmul();
  test_small_ops();
  test_attention_window();
  test_batch_invariance();
  test_thread_counts();
  test_window_and_thetas();
  test_dtypes();
  test_markers_and_types();
  test_no_head();
  test_threads();
  test_errors();
  return check_summary("cpu/ref");
}
