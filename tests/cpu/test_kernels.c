/*
 * test_kernels.c: every SIMD kernel of the fast CPU backend against the scalar oracle, and the
 * scalar GEMMs against a naive product over the unpacked weights (which checks the packing), on
 * random shapes including sizes that are not multiples of any block (1, 7, 63, 65, 129, ...),
 * for every precision and every instruction set this CPU runs.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "glu_ref_d.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_amx.h"

static uint64_t rng = 0x1234567ull;
static float frand(void) { /* uniform in [-1, 1) */
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((rng >> 40) & 0xffffff) / (float)(1 << 23) - 1.0f;
}

static double max_rel(const float *a, const float *b, size_t n, double floor_) {
  double worst = 0.0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)a[i] - b[i]) / (fabs((double)b[i]) + floor_);
    if (!(e <= worst)) worst = e; /* NaN counts as worst */
  }
  return worst;
}

typedef struct wsrc {
  const float *w;
  int k;
} wsrc;
static void get_row(void *ctx, int r, float *out) {
  wsrc *s = ctx;
  memcpy(out, s->w + (size_t)r * s->k, (size_t)s->k * sizeof(float));
}

static double gelu_d(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }

/* The GeGLU activation of the next gemm_case calls (weights.h enc_act), in double: transformers'
 * formulas (activations.py, glu_ref_d.h) */
static enc_act case_glu = ENC_ACT_GELU;
static double glu_d(enc_act act, double x) { return glu_ref_d(act, x); }

/* One GEMM case: packs W [n, k], runs the scalar kernel and each SIMD table, compares. */
static void gemm_case(cpu_wfmt fmt, int M, int n, int k, int geglu, epi_act act, int use_bias, int residual,
                      int out16, const cpu_kernels **tabs, int n_tabs) {
  int kp = pack_kpad(k), outs = geglu ? n / 2 : n;
  float *w = malloc(sizeof(float) * (size_t)n * k), *x = malloc(sizeof(float) * (size_t)M * kp);
  float *bias = malloc(sizeof(float) * (size_t)(outs + 1));
  for (size_t i = 0; i < (size_t)n * k; i++) w[i] = frand() / sqrtf((float)k);
  for (size_t i = 0; i < (size_t)M * kp; i++) x[i] = (i % kp) < (size_t)k ? 2.0f * frand() : 0.0f;
  for (int i = 0; i < outs; i++) bias[i] = frand();
  int np = pack_panels(n, geglu);
  void *data = aligned_alloc(64, (pack_data_bytes(fmt, n, k, geglu) + 63) & ~(size_t)63);
  float *scale = malloc(sizeof(float) * np * CPU_NR), *row = malloc(sizeof(float) * k);
  int32_t *colsum = malloc(sizeof(int32_t) * np * CPU_NR);
  wsrc src = {w, k};
  pack_matrix(fmt, n, k, geglu, get_row, &src, data, scale, colsum, row);
  packed_matrix pm = {n, k, np, kp, geglu, fmt, data, scale, colsum, use_bias && !geglu ? bias : NULL,
                      geglu ? case_glu : ENC_ACT_GELU, NULL, 0};

  /* activations in the weight's format */
  void *a = NULL;
  float *rs = malloc(sizeof(float) * M);
  float *xq = malloc(sizeof(float) * (size_t)M * kp); /* what the kernel effectively sees */
  if (fmt == WF_F32) {
    a = x;
    memcpy(xq, x, sizeof(float) * (size_t)M * kp);
  } else if (fmt == WF_BF16) {
    uint16_t *h = malloc(2 * (size_t)M * kp);
    for (size_t i = 0; i < (size_t)M * kp; i++) {
      h[i] = f32_to_bf16_rne(x[i]);
      xq[i] = bf16_to_f32(h[i]);
    }
    a = h;
  } else {
    uint8_t *q = malloc((size_t)M * kp);
    for (int m = 0; m < M; m++) {
      rs[m] = cpu_kernels_scalar.quantize_row(x + (size_t)m * kp, k, kp, q + (size_t)m * kp);
      for (int c = 0; c < kp; c++) xq[(size_t)m * kp + c] = ((int)q[(size_t)m * kp + c] - 128) * rs[m];
    }
    a = q;
  }
  gemm_input in = {a, kp, rs, 0, NULL, 0, 0};

  /* naive: y = xq Wq^T with the weights the packer stored */
  float *wq = malloc(sizeof(float) * (size_t)n * k);
  for (int r = 0; r < n; r++) {
    float mx = 0.0f;
    for (int c = 0; c < k; c++) mx = fmaxf(mx, fabsf(w[(size_t)r * k + c]));
    float s = mx > 0 ? mx / 127.0f : 1.0f;
    for (int c = 0; c < k; c++) {
      float v = w[(size_t)r * k + c];
      if (fmt == WF_BF16) v = bf16_to_f32(f32_to_bf16_rne(v));
      else if (fmt == WF_I8) {
        long q = lrintf(v / s);
        v = (float)(q > 127 ? 127 : q < -127 ? -127 : q) * s;
      }
      wq[(size_t)r * k + c] = v;
    }
  }
  float *naive = malloc(sizeof(float) * (size_t)M * outs), *init = malloc(sizeof(float) * (size_t)M * outs);
  for (size_t i = 0; i < (size_t)M * outs; i++) init[i] = frand();
  for (int m = 0; m < M; m++)
    for (int o = 0; o < outs; o++) {
      double y;
      if (geglu) {
        double u = 0, g = 0;
        for (int c = 0; c < k; c++) {
          u += (double)xq[(size_t)m * kp + c] * wq[(size_t)o * k + c];
          g += (double)xq[(size_t)m * kp + c] * wq[(size_t)(o + outs) * k + c];
        }
        y = glu_d(case_glu, u) * g;
      } else {
        y = use_bias ? bias[o] : 0.0;
        for (int c = 0; c < k; c++) y += (double)xq[(size_t)m * kp + c] * wq[(size_t)o * k + c];
        if (act == EPI_GELU) y = gelu_d(y);
        else if (act == EPI_RELU) y = y > 0 ? y : 0;
      }
      if (residual) y += init[(size_t)m * outs + o];
      naive[(size_t)m * outs + o] = (float)y;
    }

  float *ref = NULL;
  for (int t = -1; t < n_tabs; t++) {
    const cpu_kernels *kt = t < 0 ? &cpu_kernels_scalar : tabs[t];
    float *out = malloc(sizeof(float) * (size_t)M * outs);
    uint16_t *o16 = malloc(2 * (size_t)M * outs);
    memcpy(out, init, sizeof(float) * (size_t)M * outs);
    gemm_epilogue e = {act, residual, out16 ? NULL : out, out16 ? o16 : NULL, outs};
    /* split the work the way the backend may: two row ranges, two panel ranges */
    int mh = M / 2, ph = np / 2;
    void (*g)(const gemm_input *, const packed_matrix *, int, int, int, int, const gemm_epilogue *) =
        fmt == WF_F32 ? kt->gemm_f32 : fmt == WF_BF16 ? kt->gemm_bf16 : kt->gemm_i8;
    g(&in, &pm, 0, mh, 0, ph, &e);
    g(&in, &pm, 0, mh, ph, np, &e);
    g(&in, &pm, mh, M, 0, np, &e);
    if (out16)
      for (size_t i = 0; i < (size_t)M * outs; i++) out[i] = bf16_to_f32(o16[i]);
    if (t < 0) {
      /* the oracle against the naive product: accumulation order only (+ bf16 output rounding) */
      double tol = out16 ? 8e-3 : 2e-4;
      double e1 = max_rel(out, naive, (size_t)M * outs, 1.0);
      if (e1 > tol)
        fprintf(stderr, "scalar vs naive fmt=%d M=%d n=%d k=%d geglu=%d act=%d glu=%d: %.3g\n", fmt, M, n, k, geglu, act,
                (int)case_glu, e1);
      CHECK(e1 <= tol);
      ref = out;
    } else {
      double tol = out16 ? 8e-3 : 2e-5 * sqrt((double)k) + 1e-6;
      double e1 = max_rel(out, ref, (size_t)M * outs, 1.0);
      if (e1 > tol)
        fprintf(stderr, "%s vs scalar fmt=%d M=%d n=%d k=%d geglu=%d act=%d glu=%d bias=%d res=%d out16=%d: %.3g\n",
                kt->name, fmt, M, n, k, geglu, act, (int)case_glu, use_bias, residual, out16, e1);
      CHECK(e1 <= tol);
      /* The AVX2 int8 GEMM's int32 sums are exact, and its conversion to fp32, bias and residual
       * add are the scalar kernel's own operations: without an activation (whose SIMD forms
       * differ from the scalar ones) the results are the same bits, whatever its blocking. */
      if (fmt == WF_I8 && !geglu && act == EPI_NONE && !strcmp(kt->name, "avx2")) {
        int same = !memcmp(out, ref, sizeof(float) * (size_t)M * outs);
        if (!same) fprintf(stderr, "avx2 int8 M=%d n=%d k=%d: not the scalar kernel's bits\n", M, n, k);
        CHECK(same);
      }
      free(out);
    }
    free(o16);
  }
  free(ref);
  free(w);
  if (a != x) free(a);
  free(x);
  free(bias);
  free(data);
  free(scale);
  free(row);
  free(colsum);
  free(rs);
  free(xq);
  free(wq);
  free(naive);
  free(init);
}

static void test_gemm(const cpu_kernels **tabs, int n_tabs) {
  static const int Ms[] = {1, 7, 12, 13, 63, 65, 129};
  static const int Ns[] = {1, 17, 32, 33, 100};
  static const int Ks[] = {1, 3, 7, 64, 130};
  for (int f = 0; f < 3; f++)
    for (int mi = 0; mi < 7; mi++)
      for (int ni = 0; ni < 5; ni++)
        for (int ki = 0; ki < 5; ki++) {
          int variant = (mi + ni + ki) % 5;
          epi_act act = variant == 1 ? EPI_GELU : variant == 2 ? EPI_RELU : EPI_NONE;
          gemm_case((cpu_wfmt)f, Ms[mi], Ns[ni], Ks[ki], 0, act, variant != 3, variant == 3, variant == 4, tabs, n_tabs);
        }
  /* k across the AVX2 bf16 kernel's 128-pair activation blocks (k_pad 260 / 604), every row count of
   * its 6-row tiles */
  for (int f = 0; f < 3; f++)
    for (int mi = 1; mi <= 7; mi++) gemm_case((cpu_wfmt)f, mi, 33, mi % 2 ? 257 : 601, 0, EPI_NONE, 1, mi == 3, mi == 5, tabs, n_tabs);
  /* rows over several of the fp32 GEMMs' activation-copy chunks (k_pad 2052: at most 56 rows per
   * chunk on AVX-512), k not a multiple of its 16-float copy step */
  gemm_case(WF_F32, 131, 65, 2050, 0, EPI_GELU, 1, 0, 0, tabs, n_tabs);
  gemm_case(WF_F32, 61, 33, 2050, 0, EPI_NONE, 0, 1, 0, tabs, n_tabs);
  gemm_case(WF_F32, 59, 100, 2050, 0, EPI_RELU, 1, 0, 1, tabs, n_tabs);
  gemm_case(WF_F32, 100, 2 * 17, 2050, 1, EPI_GEGLU, 0, 0, 0, tabs, n_tabs);
  /* rows over several of the AVX2 fp32 GEMM's 192-row chunks, k over its 128-row weight blocks
   * with a last block of 44 (a 4-float slice at its end) */
  gemm_case(WF_F32, 397, 40, 300, 0, EPI_NONE, 1, 1, 0, tabs, n_tabs);
  gemm_case(WF_F32, 203, 2 * 17, 300, 1, EPI_GEGLU, 0, 0, 1, tabs, n_tabs);
  /* the AVX2 int8 GEMM's 192-row chunks (397 = 3 chunks of 133: 22 x 6 + 1 x 1 rows per tile) and
   * 256-k weight blocks (k_pad 600: 256 + 256 + 88, then 516: a last block of 4), several panels
   * with a partial one, and the GeGLU epilogue over several chunks and blocks */
  gemm_case(WF_I8, 397, 100, 600, 0, EPI_NONE, 1, 1, 0, tabs, n_tabs);
  gemm_case(WF_I8, 203, 70, 513, 0, EPI_NONE, 0, 0, 1, tabs, n_tabs);
  gemm_case(WF_I8, 200, 2 * 40, 599, 1, EPI_GEGLU, 0, 0, 0, tabs, n_tabs);
  gemm_case(WF_I8, 131, 65, 1030, 0, EPI_GELU, 1, 0, 0, tabs, n_tabs);
  /* GeGLU: n = 2I with I around the 16-column half panel, with every hidden_activation kind */
  static const int Is[] = {1, 15, 16, 17, 40};
  for (int act = 0; act < ENC_ACT_COUNT; act++) {
    case_glu = (enc_act)act;
    for (int f = 0; f < 3; f++)
      for (int ii = 0; ii < 5; ii++)
        for (int ki = 0; ki < 5; ki += 2) {
          gemm_case((cpu_wfmt)f, Ms[(ii + ki) % 7], 2 * Is[ii], Ks[ki], 1, EPI_GEGLU, 0, 0, 0, tabs, n_tabs);
          gemm_case((cpu_wfmt)f, 65, 2 * Is[ii], Ks[ki], 1, EPI_GEGLU, 0, 0, 1, tabs, n_tabs);
        }
    gemm_case(WF_F32, 100, 2 * 17, 2050, 1, EPI_GEGLU, 0, 0, 0, tabs, n_tabs);
  }
  case_glu = ENC_ACT_GELU;
}

/* The AVX-512 fp32 GEMM copies activation rows in chunks (of ~512 KiB) and tiles of nearly equal
 * height that depend on how many rows a call gets; a row's outputs must not: every row of an M-row call
 * equals, bit for bit, the same row computed alone and inside a call that starts elsewhere (the
 * backend's batch invariance rests on it). Shapes span several chunks (k_pad 2052: at most 56 rows
 * per chunk on AVX-512) with k not a multiple of its 16-float copy step, and the AVX2 fp32 GEMM's
 * 192-row chunks and 128-row k blocks. Every table is checked. */
static void gemm_row_invariance(const cpu_kernels **tabs, int n_tabs, const int M, const int n, const int k,
                                const int *starts, int n_starts) {
  const int kp = pack_kpad(k);
  float *w = malloc(sizeof(float) * (size_t)n * k), *x = malloc(sizeof(float) * (size_t)M * kp);
  for (size_t i = 0; i < (size_t)n * k; i++) w[i] = frand() / sqrtf((float)k);
  for (size_t i = 0; i < (size_t)M * kp; i++) x[i] = (i % kp) < (size_t)k ? 2.0f * frand() : 0.0f;
  int np = pack_panels(n, 0);
  float *data = aligned_alloc(64, (pack_data_bytes(WF_F32, n, k, 0) + 63) & ~(size_t)63), *row = malloc(sizeof(float) * k);
  wsrc src = {w, k};
  pack_matrix(WF_F32, n, k, 0, get_row, &src, data, NULL, NULL, row);
  packed_matrix pm = {n, k, np, kp, 0, WF_F32, data, NULL, NULL, NULL, ENC_ACT_GELU, NULL, 0};
  gemm_input in = {x, kp, NULL, 0, NULL, 0, 0};
  float *all = malloc(sizeof(float) * (size_t)M * n), *part = malloc(sizeof(float) * (size_t)M * n);
  for (int t = -1; t < n_tabs; t++) {
    const cpu_kernels *kt = t < 0 ? &cpu_kernels_scalar : tabs[t];
    gemm_epilogue e = {EPI_NONE, 0, all, NULL, n};
    kt->gemm_f32(&in, &pm, 0, M, 0, np, &e);
    e.out_f32 = part;
    for (int si = 0; si < n_starts; si++) {
      int m = starts[si];
      memset(part, 0, sizeof(float) * (size_t)M * n);
      kt->gemm_f32(&in, &pm, m, m + 1, 0, np, &e); /* alone */
      int same = !memcmp(part + (size_t)m * n, all + (size_t)m * n, sizeof(float) * n);
      kt->gemm_f32(&in, &pm, m, M, 0, np, &e); /* rows m.. in one call */
      same &= !memcmp(part + (size_t)m * n, all + (size_t)m * n, sizeof(float) * (size_t)(M - m) * n);
      if (!same) fprintf(stderr, "%s fp32 GEMM: row %d differs with its batch mates\n", kt->name, m);
      CHECK(same);
    }
  }
  free(w), free(x), free(data), free(row), free(all), free(part);
}
static void test_gemm_row_invariance(const cpu_kernels **tabs, int n_tabs) {
  static const int starts[] = {0, 1, 5, 13, 14, 29, 30, 55, 56, 57, 60, 61, 130};
  gemm_row_invariance(tabs, n_tabs, 131, 65, 2050, starts, 13);
  /* the AVX2 fp32 GEMM's 192-row chunks and 128-row k blocks (k 300: 128 + 128 + 44) */
  static const int starts2[] = {0, 1, 6, 133, 191, 192, 193, 265, 396};
  gemm_row_invariance(tabs, n_tabs, 397, 40, 300, starts2, 9);
}

/* gemm_input.gen: the backend runs one GEMM call as tasks over panel groups with one id, and a
 * kernel may reuse its copy of the rows across those tasks (the AVX2 fp32 GEMM does). Split that
 * way, every table must give the bits of one plain call; and a new id must see new contents in the
 * same buffer (a copy kept past its call would give the old product). */
static void test_gemm_call_id(const cpu_kernels **tabs, int n_tabs) {
  const int M = 128, n = 100, k = 300, kp = pack_kpad(k), np = pack_panels(n, 0);
  float *w = malloc(sizeof(float) * (size_t)n * k), *x = malloc(sizeof(float) * (size_t)M * kp);
  for (size_t i = 0; i < (size_t)n * k; i++) w[i] = frand() / sqrtf((float)k);
  float *data = aligned_alloc(64, (pack_data_bytes(WF_F32, n, k, 0) + 63) & ~(size_t)63), *row = malloc(sizeof(float) * k);
  wsrc src = {w, k};
  pack_matrix(WF_F32, n, k, 0, get_row, &src, data, NULL, NULL, row);
  packed_matrix pm = {n, k, np, kp, 0, WF_F32, data, NULL, NULL, NULL, ENC_ACT_GELU, NULL, 0};
  float *all = malloc(sizeof(float) * (size_t)M * n), *part = malloc(sizeof(float) * (size_t)M * n);
  float *first = malloc(sizeof(float) * (size_t)M * n);
  unsigned long id = 1000;
  for (int t = -1; t < n_tabs; t++) {
    const cpu_kernels *kt = t < 0 ? &cpu_kernels_scalar : tabs[t];
    gemm_input in = {x, kp, NULL, 0, NULL, 0, 0};
    gemm_epilogue e = {EPI_NONE, 0, all, NULL, n};
    for (size_t i = 0; i < (size_t)M * kp; i++) x[i] = (i % kp) < (size_t)k ? frand() : 0.0f;
    in.gen = 0, e.out_f32 = first;
    kt->gemm_f32(&in, &pm, 0, M, 0, np, &e); /* one plain call */
    in.gen = ++id, e.out_f32 = part;
    for (int p = 0; p < np; p++) kt->gemm_f32(&in, &pm, 0, M, p, p + 1, &e); /* one task per panel */
    int same = !memcmp(part, first, sizeof(float) * (size_t)M * n);
    /* new contents in the same buffer, the next call's id, right after the tasks of the last one */
    for (size_t i = 0; i < (size_t)M * kp; i++) x[i] = (i % kp) < (size_t)k ? 2.0f * frand() : 0.0f;
    in.gen = ++id;
    for (int p = 0; p < np; p++) kt->gemm_f32(&in, &pm, 0, M, p, p + 1, &e);
    in.gen = 0, e.out_f32 = all;
    kt->gemm_f32(&in, &pm, 0, M, 0, np, &e);
    same &= !memcmp(part, all, sizeof(float) * (size_t)M * n);
    if (!same) fprintf(stderr, "%s fp32 GEMM: panel tasks of one call id differ from one plain call\n", kt->name);
    CHECK(same);
    CHECK(memcmp(first, all, sizeof(float) * (size_t)M * n) != 0);
  }
  free(w), free(x), free(data), free(row), free(all), free(part), free(first);
}

/* The same for the int8 GEMM (the AVX2 one keeps its widened rows per call id too): panel tasks
 * of one id give the bits of one plain call, and new row contents under a new id are seen. */
static void test_gemm_call_id_i8(const cpu_kernels **tabs, int n_tabs) {
  const int M = 128, n = 100, k = 300, kp = pack_kpad(k), np = pack_panels(n, 0);
  float *w = malloc(sizeof(float) * (size_t)n * k), *x = malloc(sizeof(float) * (size_t)kp), *row = malloc(sizeof(float) * k);
  for (size_t i = 0; i < (size_t)n * k; i++) w[i] = frand() / sqrtf((float)k);
  void *data = aligned_alloc(64, (pack_data_bytes(WF_I8, n, k, 0) + 63) & ~(size_t)63);
  float *scale = malloc(sizeof(float) * np * CPU_NR), *rs = malloc(sizeof(float) * M);
  int32_t *colsum = malloc(sizeof(int32_t) * np * CPU_NR);
  wsrc src = {w, k};
  pack_matrix(WF_I8, n, k, 0, get_row, &src, data, scale, colsum, row);
  packed_matrix pm = {n, k, np, kp, 0, WF_I8, data, scale, colsum, NULL, ENC_ACT_GELU, NULL, 0};
  uint8_t *q = malloc((size_t)M * kp);
  float *all = malloc(sizeof(float) * (size_t)M * n), *part = malloc(sizeof(float) * (size_t)M * n);
  float *first = malloc(sizeof(float) * (size_t)M * n);
  unsigned long id = 5000;
  for (int t = -1; t < n_tabs; t++) {
    const cpu_kernels *kt = t < 0 ? &cpu_kernels_scalar : tabs[t];
    gemm_input in = {q, kp, rs, 0, NULL, 0, 0};
    gemm_epilogue e = {EPI_NONE, 0, first, NULL, n};
    for (int r = 0; r < 2; r++) {
      for (int m = 0; m < M; m++) {
        for (int i = 0; i < k; i++) x[i] = (r + 1) * frand();
        rs[m] = cpu_kernels_scalar.quantize_row(x, k, kp, q + (size_t)m * kp);
      }
      in.gen = ++id, e.out_f32 = part;
      for (int p = 0; p < np; p++) kt->gemm_i8(&in, &pm, 0, M, p, p + 1, &e); /* one task per panel */
      in.gen = 0, e.out_f32 = r ? all : first;
      kt->gemm_i8(&in, &pm, 0, M, 0, np, &e); /* one plain call */
      int same = !memcmp(part, r ? all : first, sizeof(float) * (size_t)M * n);
      if (!same) fprintf(stderr, "%s int8 GEMM: panel tasks of one call id differ from one plain call\n", kt->name);
      CHECK(same);
    }
    CHECK(memcmp(first, all, sizeof(float) * (size_t)M * n) != 0);
  }
  free(w), free(x), free(row), free(data), free(scale), free(rs), free(colsum), free(q), free(all), free(part), free(first);
}

static void test_rows(const cpu_kernels **tabs, int n_tabs) {
  static const int Ns[] = {1, 2, 7, 16, 17, 63, 65, 129, 1024};
  for (int ni = 0; ni < 9; ni++) {
    int n = Ns[ni], np = pack_kpad(n) + 4;
    float *x = malloc(sizeof(float) * n), *w = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n);
    for (int i = 0; i < n; i++) {
      x[i] = 3.0f * frand() + 0.5f;
      w[i] = 1.0f + 0.25f * frand();
      b[i] = frand();
    }
    float *y0 = malloc(sizeof(float) * n), *y1 = malloc(sizeof(float) * n);
    uint16_t *h0 = malloc(2 * n), *h1 = malloc(2 * n);
    uint8_t *q0 = malloc(np), *q1 = malloc(np);
    for (int t = 0; t < n_tabs; t++) {
      for (int v = 0; v < 3; v++) {
        const float *wv = v == 0 ? NULL : w, *bv = v == 2 ? b : NULL;
        cpu_kernels_scalar.layernorm(x, n, wv, bv, 1e-5f, y0, NULL);
        tabs[t]->layernorm(x, n, wv, bv, 1e-5f, y1, NULL);
        CHECK(max_rel(y1, y0, n, 1.0) < 2e-5);
        cpu_kernels_scalar.layernorm(x, n, wv, bv, 1e-5f, NULL, h0);
        tabs[t]->layernorm(x, n, wv, bv, 1e-5f, NULL, h1);
        int off = 0;
        for (int i = 0; i < n; i++) off += abs((int)h0[i] - (int)h1[i]) > 1;
        CHECK(off == 0);
      }
      float s0 = cpu_kernels_scalar.quantize_row(x, n, np, q0), s1 = tabs[t]->quantize_row(x, n, np, q1);
      CHECK(s0 == s1);
      CHECK(memcmp(q0, q1, np) == 0);
      cpu_kernels_scalar.to_bf16(x, n, h0);
      tabs[t]->to_bf16(x, n, h1);
      CHECK(memcmp(h0, h1, 2 * (size_t)n) == 0);
    }
    free(x), free(w), free(b), free(y0), free(y1), free(h0), free(h1), free(q0), free(q1);
  }
  /* quantize_row on the values where a SIMD form could part from the scalar one: ties of the
   * rounding (max 127: scale 1), NaN (level -127, left out of the max), infinity (scale inf: the levels of
   * x * 0), an all-zero row (scale 1), -0, each at the vector part and the tail */
  for (int c = 0; c < 4; c++) {
    float x[37];
    uint8_t q0[40], q1[40];
    for (int i = 0; i < 37; i++) x[i] = (float)(i % 9) - 4.5f + (i % 3 == 0 ? 1.0f : 0.0f);
    x[3] = 127.0f, x[20] = -0.0f;
    if (c == 1) x[5] = x[34] = NAN;
    if (c == 2) x[9] = INFINITY, x[35] = -INFINITY;
    if (c == 3) memset(x, 0, sizeof x);
    for (int t = 0; t < n_tabs; t++) {
      float s0 = cpu_kernels_scalar.quantize_row(x, 37, 40, q0), s1 = tabs[t]->quantize_row(x, 37, 40, q1);
      CHECK(s0 == s1);
      CHECK(memcmp(q0, q1, 40) == 0);
    }
  }
  static const int Dh[] = {2, 16, 24, 32, 48, 64, 128};
  for (int di = 0; di < 7; di++) {
    int dh = Dh[di];
    float x[256], y[256], cs[256];
    for (int i = 0; i < dh; i++) {
      x[i] = frand();
      cs[i] = frand();
    }
    for (int t = 0; t < n_tabs; t++) {
      memcpy(y, x, sizeof(float) * dh);
      float z[256];
      memcpy(z, x, sizeof(float) * dh);
      cpu_kernels_scalar.rope(z, dh, cs, 0.125f);
      tabs[t]->rope(y, dh, cs, 0.125f);
      CHECK(max_rel(y, z, dh, 1e-3) < 1e-5);
    }
  }
  /* the scalar quantiser itself: a row's maximum maps to +-127 and dequantises within scale/2 */
  float xs[33];
  uint8_t qs[36];
  for (int i = 0; i < 33; i++) xs[i] = frand();
  xs[5] = -1.5f;
  float s = cpu_kernels_scalar.quantize_row(xs, 33, 36, qs);
  CHECK(qs[5] == 1 && qs[33] == 128 && qs[35] == 128);
  int bad = 0;
  for (int i = 0; i < 33; i++) bad += fabsf(((int)qs[i] - 128) * s - xs[i]) > 0.5f * s + 1e-7f;
  CHECK(bad == 0);
}

/* Naive two-pass softmax attention in double over fp32 q [T][dh], kt [dh][T], v [T][dh]. */
static void attn_naive(const float *q, const float *kt, const float *v, int t, int dh, int window, int i0,
                       int i1, float *out) {
  double *sc = malloc(sizeof(double) * t);
  for (int i = i0; i < i1; i++) {
    double mx = -1e300, sum = 0;
    for (int j = 0; j < t; j++) {
      sc[j] = -1e300;
      if (window >= 0 && abs(i - j) > window) continue;
      double s = 0;
      for (int d = 0; d < dh; d++) s += (double)q[i * dh + d] * kt[(size_t)d * t + j];
      sc[j] = s;
      if (s > mx) mx = s;
    }
    for (int j = 0; j < t; j++) sum += sc[j] > -1e299 ? exp(sc[j] - mx) : 0;
    for (int d = 0; d < dh; d++) {
      double y = 0;
      for (int j = 0; j < t; j++)
        if (sc[j] > -1e299) y += exp(sc[j] - mx) / sum * v[(size_t)j * dh + d];
      out[(i - i0) * dh + d] = (float)y;
    }
  }
  free(sc);
}

static double max_abs(const float *a, const float *b, size_t n) {
  double worst = 0.0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)a[i] - b[i]);
    if (!(e <= worst)) worst = e;
  }
  return worst;
}

/* Attention: the naive reference vs the scalar kernel vs each SIMD kernel, fp32 and bf16 (the bf16
 * kernels get q, k, v rounded to bf16 in their layouts, and the reference the same rounded values). */
static void attn_case(int t, int dh, int window, int i0, int i1, const cpu_kernels **tabs, int n_tabs) {
  float *q = malloc(sizeof(float) * t * dh), *kt = malloc(sizeof(float) * t * dh), *v = malloc(sizeof(float) * t * dh);
  for (int i = 0; i < t * dh; i++) {
    q[i] = 0.5f * frand();
    kt[i] = 2.0f * frand();
    v[i] = frand();
  }
  int nq = i1 - i0;
  float *naive = malloc(sizeof(float) * nq * dh), *out = malloc(sizeof(float) * nq * dh);
  uint16_t *o16 = malloc(2 * (size_t)nq * dh);
  attn_naive(q, kt, v, t, dh, window, i0, i1, naive);
  float *scratch = malloc(sizeof(float) * (cpu_attention_scratch(t) + 64));
  for (int tb = -1; tb < n_tabs; tb++) {
    const cpu_kernels *k = tb < 0 ? &cpu_kernels_scalar : tabs[tb];
    for (int as16 = 0; as16 < 2; as16++) {
      attn_args a = {q, kt, v, t, dh, i0, i1, window, as16 ? NULL : out, as16 ? o16 : NULL, dh, scratch, NULL, NULL, NULL};
      k->attention(&a);
      if (as16)
        for (int i = 0; i < nq * dh; i++) out[i] = bf16_to_f32(o16[i]);
      double e = max_rel(out, naive, (size_t)nq * dh, 0.1);
      double tol = as16 ? 8e-3 : 2e-5;
      if (e > tol) fprintf(stderr, "attention %s t=%d dh=%d window=%d [%d,%d) bf16=%d: %.3g\n", k->name, t, dh, window, i0, i1, as16, e);
      CHECK(e <= tol);
    }
  }
  /* bf16: round q, k, v and lay them out as kernels.h documents (an odd T gets a zero v[T]) */
  int tp = (t + 1) / 2 * 2;
  uint16_t *qb = malloc(2 * (size_t)t * dh), *kb = malloc(2 * (size_t)t * dh), *vb = malloc(2 * (size_t)tp * dh);
  for (int j = 0; j < t; j++)
    for (int d = 0; d < dh; d++) {
      qb[(size_t)j * dh + d] = f32_to_bf16_rne(q[(size_t)j * dh + d]);
      q[(size_t)j * dh + d] = bf16_to_f32(qb[(size_t)j * dh + d]);
      uint16_t kh = f32_to_bf16_rne(kt[(size_t)d * t + j]);
      kt[(size_t)d * t + j] = bf16_to_f32(kh);
      kb[((size_t)(d / 2) * t + j) * 2 + d % 2] = kh;
      uint16_t vh = f32_to_bf16_rne(v[(size_t)j * dh + d]);
      v[(size_t)j * dh + d] = bf16_to_f32(vh);
      vb[((size_t)(j / 2) * dh + d) * 2 + j % 2] = vh;
    }
  if (t % 2)
    for (int d = 0; d < dh; d++) vb[((size_t)(t / 2) * dh + d) * 2 + 1] = 0;
  attn_naive(q, kt, v, t, dh, window, i0, i1, naive);
  for (int tb = -1; tb < n_tabs; tb++) {
    const cpu_kernels *k = tb < 0 ? &cpu_kernels_scalar : tabs[tb];
    for (int as16 = 0; as16 < 2; as16++) {
      attn_args a = {NULL, NULL, NULL, t, dh, i0, i1, window, as16 ? NULL : out, as16 ? o16 : NULL, dh, scratch, qb, kb, vb};
      k->attention_bf16(&a);
      if (as16)
        for (int i = 0; i < nq * dh; i++) out[i] = bf16_to_f32(o16[i]);
      /* the scalar oracle is exact up to fp32 rounding; SIMD kernels round each probability to bf16
       * (relative 2^-8 at most), which moves an output by at most 2^-8 max|v| (|v| <= 1) */
      double e = max_abs(out, naive, (size_t)nq * dh);
      double tol = (tb < 0 ? 1e-5 : 4e-3) + (as16 ? 4e-3 : 0);
      if (e > tol) fprintf(stderr, "attention_bf16 %s t=%d dh=%d window=%d [%d,%d) bf16=%d: %.3g\n", k->name, t, dh, window, i0, i1, as16, e);
      CHECK(e <= tol);
    }
  }
  free(qb), free(kb), free(vb);
  free(q), free(kt), free(v), free(naive), free(out), free(o16), free(scratch);
}

static void test_attention(const cpu_kernels **tabs, int n_tabs) {
  static const int Ts[] = {1, 2, 7, 15, 16, 17, 63, 64, 65, 66, 129, 200};
  static const int Ws[] = {-1, 0, 8, 64};
  static const int Dh[] = {16, 24, 32, 64};
  for (int ti = 0; ti < 12; ti++)
    for (int wi = 0; wi < 4; wi++) {
      int t = Ts[ti];
      attn_case(t, Dh[(ti + wi) % 4], Ws[wi], 0, t, tabs, n_tabs);
      if (t > 3) attn_case(t, 64, Ws[wi], 1, t - 2, tabs, n_tabs); /* a query sub-range */
    }
  /* rows longer than the AVX-512 kernels' 512-key softmax step: several steps, a window whose
   * range crosses a step boundary, an odd length (the bf16 pad key) */
  attn_case(1100, 64, -1, 0, 1100, tabs, n_tabs);
  attn_case(1101, 64, 300, 0, 1101, tabs, n_tabs);
  attn_case(1031, 32, -1, 509, 530, tabs, n_tabs);
}

/* The bf16 GEMMs of the AVX2 and avx512-fma tables widen bf16 weights and activations to fp32
 * (exact) and multiply them in fp32: each output is one FMA chain over k = 0 .. k_pad - 1 from +0, in k
 * order, whichever kernel runs it (the k-blocked one on widened copies, or the row-tile fallback;
 * AVX-512: the copied tiles of up to 13 rows, or the 12-row tiles without a copy). So its results must be
 * the bits of fmaf over that chain, then + bias (or relu(input) * gate for a relu GeGLU), rounded to
 * bf16 or added to the residual. Shapes: rows not a multiple of its 6-row tiles and over several of
 * its 192-row chunks, k over its 128-row weight blocks with tails; split into two row ranges, or
 * into one task per panel of one call id (the tasks may share the copied rows). */
static void bf16_chain_case(const cpu_kernels *kt, int M, int n, int k, int geglu, int use_bias, int residual,
                            int out16, int tasks) {
  static unsigned long id = 5000;
  const int kp = pack_kpad(k), np = pack_panels(n, geglu), outs = geglu ? n / 2 : n;
  float *w = malloc(sizeof(float) * (size_t)n * k), *row = malloc(sizeof(float) * k);
  float *bias = malloc(sizeof(float) * (size_t)outs), *xa = malloc(sizeof(float) * (size_t)M * kp);
  uint16_t *h = malloc(2 * (size_t)M * kp);
  for (size_t i = 0; i < (size_t)n * k; i++) w[i] = frand() / sqrtf((float)k);
  for (int i = 0; i < outs; i++) bias[i] = frand();
  for (size_t i = 0; i < (size_t)M * kp; i++) {
    h[i] = (i % kp) < (size_t)k ? f32_to_bf16_rne(2.0f * frand()) : 0;
    xa[i] = bf16_to_f32(h[i]);
  }
  void *data = aligned_alloc(64, (pack_data_bytes(WF_BF16, n, k, geglu) + 63) & ~(size_t)63);
  wsrc src = {w, k};
  pack_matrix(WF_BF16, n, k, geglu, get_row, &src, data, NULL, NULL, row);
  packed_matrix pm = {n, k, np, kp, geglu, WF_BF16, data, NULL, NULL, use_bias && !geglu ? bias : NULL,
                      ENC_ACT_RELU, NULL, 0};
  float *init = malloc(sizeof(float) * (size_t)M * outs), *out = malloc(sizeof(float) * (size_t)M * outs);
  uint16_t *o16 = malloc(2 * (size_t)M * outs);
  for (size_t i = 0; i < (size_t)M * outs; i++) init[i] = frand();
  memcpy(out, init, sizeof(float) * (size_t)M * outs);
  gemm_input in = {h, kp, NULL, tasks ? ++id : 0, NULL, 0, 0};
  gemm_epilogue e = {geglu ? EPI_GEGLU : EPI_NONE, residual, out16 ? NULL : out, out16 ? o16 : NULL, outs};
  if (tasks) {
    for (int p = 0; p < np; p++) kt->gemm_bf16(&in, &pm, 0, M, p, p + 1, &e);
  } else {
    kt->gemm_bf16(&in, &pm, 0, M / 2, 0, np, &e);
    kt->gemm_bf16(&in, &pm, M / 2, M, 0, np, &e);
  }
  int bad = 0;
  for (int m = 0; m < M && !bad; m++)
    for (int o = 0; o < outs && !bad; o++) {
      float acc[2] = {0.0f, 0.0f};
      for (int s = 0; s < 1 + geglu; s++) {
        const float *wr = w + (size_t)(o + s * outs) * k;
        for (int c = 0; c < kp; c++)
          acc[s] = fmaf(xa[(size_t)m * kp + c], c < k ? bf16_to_f32(f32_to_bf16_rne(wr[c])) : 0.0f, acc[s]);
      }
      float y = geglu ? (acc[0] > 0.0f ? acc[0] : 0.0f) * acc[1] : pm.bias ? acc[0] + bias[o] : acc[0];
      size_t i = (size_t)m * outs + o;
      if (out16) bad = o16[i] != f32_to_bf16_rne(y);
      else bad = memcmp(&out[i], residual ? &(float){init[i] + y} : &y, sizeof(float)) != 0;
      if (bad)
        fprintf(stderr, "%s bf16 GEMM M=%d n=%d k=%d geglu=%d tasks=%d: [%d][%d] is not the k-order FMA chain\n",
                kt->name, M, n, k, geglu, tasks, m, o);
    }
  CHECK(!bad);
  free(w), free(row), free(bias), free(xa), free(h), free(data), free(init), free(out), free(o16);
}
/* fp32 -> bf16 of every table on the values where rounding is delicate: ties either way, the
 * largest finite float (rounds to inf), infinities, zeros, subnormals, quiet and signalling NaNs
 * whose payload would carry into the exponent; the GEMM epilogues' bf16 stores share the code.
 * The AVX2 table must give the scalar kernel's bits for every value. */
static void test_to_bf16_special(const cpu_kernels **tabs, int n_tabs) {
  static const uint32_t bits[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u,
                                  0x7f800001u, 0x7fbfffffu, 0xff80ffffu, 0x7fffffffu, 0x7f7fffffu, 0xff7fffffu,
                                  0x3f808000u, 0x3f818000u, 0x3f808001u, 0x3f817fffu, 0x00000001u, 0x807fffffu,
                                  0x00008000u, 0x00018000u, 0x3f800000u, 0xbf8fffffu, 0x4b7fffffu};
  const int n = (int)(sizeof bits / sizeof bits[0]);
  float x[2 * 23];
  uint16_t h0[2 * 23], h1[2 * 23];
  for (int i = 0; i < 2 * n; i++) memcpy(&x[i], &bits[(i * 7) % n], 4);
  cpu_kernels_scalar.to_bf16(x, 2 * n, h0);
  /* The AVX-512 tables convert with vcvtneps2bf16, which treats subnormal inputs as zero: there a
   * subnormal may also give a zero of its sign, and a NaN any NaN of its sign (quiet either way);
   * every other value must round exactly as the scalar kernel does. */
  for (int t = 0; t < n_tabs; t++)
    for (int off = 0; off < 8; off++) {
      memset(h1, 0, sizeof h1);
      tabs[t]->to_bf16(x + off, 2 * n - off, h1 + off);
      int same = 1;
      const int hw = strcmp(tabs[t]->name, "avx2") && strcmp(tabs[t]->name, "scalar"); /* vcvtneps2bf16 */
      for (int i = off; i < 2 * n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        const uint32_t mag = u & 0x7fffffffu;
        const int nan_ok = hw && mag > 0x7f800000u && (h1[i] & 0x7fffu) > 0x7f80u && (h1[i] >> 15) == (u >> 31);
        const int ftz_ok = hw && mag != 0 && mag < 0x00800000u && h1[i] == (uint16_t)((u >> 31) << 15);
        if (h0[i] != h1[i] && !nan_ok && !ftz_ok) {
          fprintf(stderr, "%s to_bf16(0x%08x) = 0x%04x, the scalar rounding 0x%04x\n", tabs[t]->name, (unsigned)u,
                  (unsigned)h1[i], (unsigned)h0[i]);
          same = 0;
        }
      }
      CHECK(same);
    }
}

static void test_gemm_bf16_chain(const cpu_kernels **tabs, int n_tabs) {
  for (int t = 0; t < n_tabs; t++) {
    if (strcmp(tabs[t]->name, "avx2") && strcmp(tabs[t]->name, "avx512-fma")) continue;
    static const int Ms[] = {1, 5, 7, 13, 128, 131, 397};
    static const int Ks[] = {1, 3, 64, 130, 257, 300, 601};
    /* short = 1: no copy buffer (cpu_thread_scratch fails), the kernels that need none */
    for (int short_mem = 0; short_mem < 2; short_mem++) {
      cpu_scratch_fail_for_tests(short_mem);
      for (int mi = 0; mi < 7; mi++)
        for (int ki = 0; ki < 7; ki++) {
          int v = (mi + ki) % 4;
          bf16_chain_case(tabs[t], Ms[mi], mi % 2 ? 100 : 40, Ks[ki], 0, v != 1, v == 2, v == 3, (mi + ki) % 3 == 0);
          if (ki % 2) bf16_chain_case(tabs[t], Ms[mi], 2 * 17, Ks[ki], 1, 0, v == 2, v == 3, mi % 2);
        }
    }
    cpu_scratch_fail_for_tests(0);
  }
}

int main(void) {
  const cpu_kernels *tabs[4];
  int n = 0;
  const cpu_kernels *k;
  if ((k = cpu_kernels_by_name("avx2"))) tabs[n++] = k;
  /* both AVX-512 tables wherever either runs ("avx512" picks one of them by vendor) */
  if ((k = cpu_kernels_by_name("avx512-dot"))) tabs[n++] = k;
  if ((k = cpu_kernels_by_name("avx512-fma"))) tabs[n++] = k;
  if ((k = cpu_kernels_by_name("amx"))) tabs[n++] = k; /* AMX CPUs; tests/cpu/test_amx.c covers the tiling everywhere */
  printf("kernel tables under test: scalar");
  for (int i = 0; i < n; i++) printf(" %s", tabs[i]->name);
  printf("\n");
  CHECK(cpu_kernels_select() != NULL);
  test_gemm(tabs, n);
  test_gemm_row_invariance(tabs, n);
  test_gemm_call_id(tabs, n);
  test_gemm_call_id_i8(tabs, n);
  test_gemm_bf16_chain(tabs, n);
  test_to_bf16_special(tabs, n);
  test_rows(tabs, n);
  /* the AMX bf16 attention's tiling on every machine: the emulated tiles (kernels_amx.h) in a copy
   * of the scalar table (its other kernels are the oracle's own) */
  static cpu_kernels emu;
  emu = cpu_kernels_scalar;
  emu.name = "amx-emu";
  emu.attention_bf16 = cpu_amx_emu()->attention_bf16;
  const cpu_kernels *atabs[5];
  for (int i = 0; i < n; i++) atabs[i] = tabs[i];
  atabs[n] = &emu;
  test_attention(atabs, n + 1);
  return check_summary("cpu/kernels");
}
