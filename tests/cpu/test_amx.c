/*
 * test_amx.c: the AMX GEMMs (kernels_amx.h) against a naive double-precision product over the
 * unpacked weights, on every machine through the emulated tiles and, where the CPU has AMX, on the
 * tiles themselves; then the two against each other. Shapes cross every tile boundary (rows 1..16,
 * 17..32, chunk tails; k around the 32 / 64-value tile steps; n around the 16-column tiles and the
 * 32-column panels), row strides wider than k_pad, and the work split the way the backend splits it.
 *
 * Bounds are derived from the arithmetic, per output, from S = sum_k |x_k w_k| (the products the
 * kernel sees): fp32 accumulation of k products (k + 4) 2^-24 S; the split-precision kernels add the
 * products they leave out (x3: 3 * 2^-16 S plus the parts' remainders; x5: the activations' remainder
 * after two parts, 2^-17 S, plus 2^-26 terms; x6: 12 * 2^-24 S); then the
 * epilogue (gelu's slope <= 1.13 and its approximation, bf16 output rounding 2^-8 |y|). A tile
 * read from the wrong place is off by O(|y|) and fails on any machine.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "glu_ref_d.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/cpu_pool.h"
#include "backend/cpu/kernels_amx.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void) { /* uniform in [-1, 1) */
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((rng >> 40) & 0xffffff) / (float)(1 << 23) - 1.0f;
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
/* the GeGLU activation of the next GeGLU cases (weights.h enc_act; |act'| bounded by glu_ref_slope) */
static enc_act case_glu = ENC_ACT_GELU;
static double glu_d(double x) { return glu_ref_d(case_glu, x); }

enum { K_BF16, K_I8, K_X3, K_X5, K_X6, K_N };
static const char *kname[] = {"bf16", "int8", "fp32x3", "fp32x5", "fp32x6"};

static cpu_gemm_fn pick(const cpu_amx_gemms *g, int kind) {
  return kind == K_BF16 ? g->bf16 : kind == K_I8 ? g->i8 : kind == K_X3 ? g->f32x3 : kind == K_X5 ? g->f32x5 : g->f32x6;
}

static int mismatch_bf16, compared_bf16; /* hw vs emu outputs that differ in any bit (reported) */

/* One case: W [n, k] packed, x [M, k]; each kernel set's output against the naive product and the
 * derived bound; with two sets (emu, hw) also against each other. */
static void gemm_case(int kind, int M, int n, int k, int geglu, epi_act act, int use_bias, int residual,
                      int out16, const cpu_amx_gemms **sets, int n_sets) {
  cpu_wfmt fmt = kind == K_BF16 ? WF_BF16 : kind == K_I8 ? WF_I8 : WF_F32;
  int kp = pack_kpad(k), outs = geglu ? n / 2 : n, lda = kp + 4 * (M % 3);
  float *w = malloc(sizeof(float) * (size_t)n * k), *x = malloc(sizeof(float) * (size_t)M * lda);
  float *bias = malloc(sizeof(float) * (size_t)(outs + 1));
  for (size_t i = 0; i < (size_t)n * k; i++) w[i] = frand() / sqrtf((float)k);
  for (size_t i = 0; i < (size_t)M * lda; i++) x[i] = (int)(i % lda) < k ? 2.0f * frand() : 0.0f;
  for (int i = 0; i < outs; i++) bias[i] = frand();
  int np = pack_panels(n, geglu);
  void *data = aligned_alloc(64, (pack_data_bytes(fmt, n, k, geglu) + 63) & ~(size_t)63);
  float *scale = malloc(sizeof(float) * np * CPU_NR), *row = malloc(sizeof(float) * k);
  int32_t *colsum = malloc(sizeof(int32_t) * np * CPU_NR);
  wsrc src = {w, k};
  pack_matrix(fmt, n, k, geglu, get_row, &src, data, scale, colsum, row);
  packed_matrix pm = {n, k, np, kp, geglu, fmt, data, scale, colsum, use_bias && !geglu ? bias : NULL, case_glu, NULL, 0};

  /* activations in the kernel's format (exactly M * lda elements: a read past row M - 1 is out of
   * bounds for the sanitizer build), and the values the kernel effectively sees */
  void *a = x;
  float *rs = malloc(sizeof(float) * M), *xq = malloc(sizeof(float) * (size_t)M * lda);
  if (fmt == WF_F32) {
    memcpy(xq, x, sizeof(float) * (size_t)M * lda);
  } else if (fmt == WF_BF16) {
    uint16_t *h = malloc(2 * (size_t)M * lda);
    for (size_t i = 0; i < (size_t)M * lda; i++) {
      h[i] = f32_to_bf16_rne(x[i]);
      xq[i] = bf16_to_f32(h[i]);
    }
    a = h;
  } else {
    uint8_t *q = malloc((size_t)M * lda);
    for (int m = 0; m < M; m++) {
      rs[m] = cpu_kernels_scalar.quantize_row(x + (size_t)m * lda, k, lda, q + (size_t)m * lda);
      for (int c = 0; c < lda; c++) xq[(size_t)m * lda + c] = ((int)q[(size_t)m * lda + c] - 128) * rs[m];
    }
    a = q;
  }
  gemm_input in = {a, lda, rs, 0, NULL, 0, 0};

  /* the weights as stored (bf16-rounded or on the int8 grid) */
  float *wq = malloc(sizeof(float) * (size_t)n * k);
  for (int r = 0; r < n; r++) {
    float inv, s = int8_grid(w + (size_t)r * k, k, &inv);
    for (int c = 0; c < k; c++) {
      float v = w[(size_t)r * k + c];
      if (fmt == WF_BF16) v = bf16_to_f32(f32_to_bf16_rne(v));
      else if (fmt == WF_I8) v = int8_level(v, inv) * s;
      wq[(size_t)r * k + c] = v;
    }
  }
  /* per-product error of the kernel's arithmetic beyond fp32 accumulation */
  double c_prod = kind == K_X3 ? 3.2 * pow(2, -16) : kind == K_X5 ? 1.1 * pow(2, -17) : kind == K_X6 ? 12 * pow(2, -24) : kind == K_I8 ? 4 * pow(2, -24) : 0;
  double c_acc = (k + 4) * pow(2, -24);
  size_t no = (size_t)M * outs;
  double *naive = malloc(sizeof(double) * no), *bound = malloc(sizeof(double) * no);
  float *init = malloc(sizeof(float) * no);
  for (size_t i = 0; i < no; i++) init[i] = frand();
  for (int m = 0; m < M; m++)
    for (int o = 0; o < outs; o++) {
      const float *xr = xq + (size_t)m * lda;
      double y, d;
      if (geglu) {
        double u = 0, g = 0, su = 0, sg = 0;
        for (int c = 0; c < k; c++) {
          u += (double)xr[c] * wq[(size_t)o * k + c];
          g += (double)xr[c] * wq[(size_t)(o + outs) * k + c];
          su += fabs((double)xr[c] * wq[(size_t)o * k + c]);
          sg += fabs((double)xr[c] * wq[(size_t)(o + outs) * k + c]);
        }
        double du = (c_prod + c_acc) * su, dg = (c_prod + c_acc) * sg;
        y = glu_d(u) * g;
        const double sl = glu_ref_slope(case_glu, u, du);
        d = sl * du * (fabs(g) + dg) + (fabs(glu_d(u)) + sl * du) * dg + 4e-7 * (fabs(u) + 1) * fabs(g) + 2e-7 * fabs(y);
      } else {
        double s = 0;
        y = use_bias ? bias[o] : 0.0;
        for (int c = 0; c < k; c++) {
          y += (double)xr[c] * wq[(size_t)o * k + c];
          s += fabs((double)xr[c] * wq[(size_t)o * k + c]);
        }
        d = (c_prod + c_acc) * s + pow(2, -23) * fabs(y);
        if (act == EPI_GELU) {
          d = 1.13 * d + 4e-7 * (fabs(y) + 1);
          y = gelu_d(y);
        } else if (act == EPI_RELU) {
          y = y > 0 ? y : 0;
        }
      }
      if (residual) {
        y += init[(size_t)m * outs + o];
        d += pow(2, -23) * fabs(y);
      }
      if (out16) d += pow(2, -8) * (fabs(y) + d);
      naive[(size_t)m * outs + o] = y;
      bound[(size_t)m * outs + o] = d + 1e-30;
    }

  float *prev = NULL;
  for (int si = 0; si < n_sets; si++) {
    float *out = malloc(sizeof(float) * no);
    uint16_t *o16 = malloc(2 * no + 2);
    memcpy(out, init, sizeof(float) * no);
    gemm_epilogue e = {act, residual, out16 ? NULL : out, out16 ? o16 : NULL, outs};
    cpu_gemm_fn g = pick(sets[si], kind);
    int mh = M / 2, ph = np / 2;
    g(&in, &pm, 0, mh, 0, ph, &e);
    g(&in, &pm, 0, mh, ph, np, &e);
    g(&in, &pm, mh, M, 0, np, &e);
    if (out16)
      for (size_t i = 0; i < no; i++) out[i] = bf16_to_f32(o16[i]);
    int bad = 0;
    double worst = 0;
    for (size_t i = 0; i < no; i++) {
      double err = fabs((double)out[i] - naive[i]);
      double r = err / bound[i];
      if (!(r <= worst)) worst = r; /* NaN counts */
      if (!(err <= bound[i])) bad++;
    }
    if (bad)
      fprintf(stderr, "%s %s M=%d n=%d k=%d geglu=%d act=%d bias=%d res=%d out16=%d: %d outputs off, worst err/bound %.3g\n",
              sets[si]->name, kname[kind], M, n, k, geglu, act, use_bias, residual, out16, bad, worst);
    CHECK(bad == 0);
    if (prev) {
      /* int8 sums are exact integers on both and the epilogue is the same fp32 arithmetic */
      int diff = 0;
      for (size_t i = 0; i < no; i++) diff += memcmp(&prev[i], &out[i], 4) != 0;
      if (kind == K_I8 && act == EPI_NONE && !out16) {
        if (diff) fprintf(stderr, "int8 M=%d n=%d k=%d: %d outputs differ between emulated and AMX tiles\n", M, n, k, diff);
        CHECK(diff == 0);
      } else if (kind == K_BF16 && act == EPI_NONE && !out16) {
        mismatch_bf16 += diff;
        compared_bf16 += (int)no;
      }
      free(prev);
    }
    prev = out;
    free(o16);
  }
  free(prev);
  free(w), free(x), free(bias), free(data), free(scale), free(row), free(colsum), free(rs), free(xq), free(wq);
  if (a != x) free(a);
  free(naive), free(bound), free(init);
}

static void test_gemm(const cpu_amx_gemms **sets, int n_sets, int quick) {
  static const int Ms[] = {1, 5, 16, 17, 31, 32, 33, 70, 129};
  static const int Ns[] = {1, 16, 17, 32, 33, 100};
  static const int Ks[] = {1, 4, 30, 32, 36, 64, 68, 130, 260};
  for (int kind = 0; kind < K_N; kind++)
    for (int mi = 0; mi < 9; mi++)
      for (int ni = 0; ni < 6; ni++)
        for (int ki = 0; ki < 9; ki++) {
          int v = (mi + ni + ki + kind) % 5;
          if (quick && (mi * 7 + ni * 3 + ki) % 3) continue;
          epi_act act = v == 1 ? EPI_GELU : v == 2 ? EPI_RELU : EPI_NONE;
          gemm_case(kind, Ms[mi], Ns[ni], Ks[ki], 0, act, v != 3, v == 3, v == 4, sets, n_sets);
          if (v) /* also the plain product, which the emulated and AMX tiles must agree on */
            gemm_case(kind, Ms[mi], Ns[ni], Ks[ki], 0, EPI_NONE, 0, 0, 0, sets, n_sets);
        }
  /* GeGLU (panels of 16 input + 16 gate columns), a chunk of rows larger than one task's, and
   * ModernBERT's k (1024 hidden, 2624 intermediate) */
  static const int Is[] = {1, 15, 16, 17, 40};
  for (int kind = 0; kind < K_N; kind++) {
    for (int ii = 0; ii < 5; ii++) {
      gemm_case(kind, Ms[(ii * 2 + kind) % 9], 2 * Is[ii], Ks[(ii * 3 + kind) % 9], 1, EPI_GEGLU, 0, 0, 0, sets, n_sets);
      gemm_case(kind, 65, 2 * Is[ii], 36, 1, EPI_GEGLU, 0, ii == 2, ii == 3, sets, n_sets);
    }
    gemm_case(kind, 200, 40, 1024, 0, EPI_NONE, 1, 0, 0, sets, n_sets);
    gemm_case(kind, 37, 33, 2624, 0, EPI_GELU, 1, 0, 0, sets, n_sets);
    /* k longer than one k block (4096): the accumulators wait in scratch between blocks */
    gemm_case(kind, 33, 40, 4500, kind == K_BF16, kind == K_BF16 ? EPI_GEGLU : EPI_NONE, kind != K_BF16, 1, 0, sets, n_sets);
  }
  /* the other hidden_activation kinds through the same GeGLU epilogues */
  for (int act = 1; act < ENC_ACT_COUNT; act++) {
    case_glu = (enc_act)act;
    for (int kind = 0; kind < 4; kind++) {
      gemm_case(kind, 13, 2 * 17, 36, 1, EPI_GEGLU, 0, 0, 0, sets, n_sets);
      gemm_case(kind, 65, 2 * 40, 130, 1, EPI_GEGLU, 0, act == 2, act == 3, sets, n_sets);
    }
  }
  case_glu = ENC_ACT_GELU;
}

/* One tile instruction's worth through each set, with values where the order of tdpbf16ps's
 * additions shows: x = (1, 0 | 2^-24, 2^-24 | 0 ...), w = ones. Added one product at a time as the
 * SDM's pseudo-code does, each 2^-24 is half an ulp of 1 and rounds away (to even): 1. Adding a
 * pair's two products exactly first (or the whole sum at once) gives 1 + 2^-23. The emulation must
 * give 1; the hardware may give either, and the line says which. */
static void test_order(const cpu_amx_gemms **sets, int n_sets) {
  int k = 32, n = 16, kp = 32;
  float w[16 * 32], row[32], sc[32];
  int32_t cs[32];
  for (int i = 0; i < n * k; i++) w[i] = 1.0f;
  uint16_t a[32];
  for (int i = 0; i < 32; i++) a[i] = 0;
  a[0] = f32_to_bf16_rne(1.0f);
  a[2] = a[3] = f32_to_bf16_rne(ldexpf(1.0f, -24));
  void *data = aligned_alloc(64, pack_data_bytes(WF_BF16, n, k, 0));
  wsrc src = {w, k};
  pack_matrix(WF_BF16, n, k, 0, get_row, &src, data, sc, cs, row);
  packed_matrix pm = {n, k, 1, kp, 0, WF_BF16, data, NULL, NULL, NULL, ENC_ACT_GELU, NULL, 0};
  gemm_input in = {a, kp, NULL, 0, NULL, 0, 0};
  for (int si = 0; si < n_sets; si++) {
    float out[16];
    gemm_epilogue e = {EPI_NONE, 0, out, NULL, n};
    sets[si]->bf16(&in, &pm, 0, 1, 0, 1, &e);
    printf("%s: tdpbf16ps order probe: 1 + %g ulp (0: products added one at a time, 1: a pair's sum first)\n",
           sets[si]->name, (double)((out[0] - 1.0f) / ldexpf(1.0f, -23)));
    if (!strcmp(sets[si]->name, "amx-emu")) CHECK(out[0] == 1.0f);
    CHECK(out[0] == 1.0f || out[0] == 1.0f + ldexpf(1.0f, -23));
    for (int c = 1; c < n; c++) CHECK(out[c] == out[0]);
  }
  free(data);
}


/* ---- the split-precision GEMMs on parts split once (the backend's way, cpu.c gemm) ----
 * Weights split by pack_split_panels (create), the rows by the set's split_rows in row-block tasks
 * on a pool, then the GEMM's (row tile, panel group) tasks on the same pool after that step. The
 * fp32 activations and panels the parts came from are then overwritten with NaN, and the split
 * buffer starts as NaN too: a task that read unsplit values, split them again, or read parts the
 * split step did not write (k padding, rows of another task) gives NaN or other bits. The results
 * must be bit for bit those of the kernel splitting for itself (same parts, same products, same
 * order) and within the derived bound of a double-precision product. */
typedef struct split_run {
  const cpu_amx_gemms *g;
  cpu_gemm_fn fn;
  gemm_input in;
  const packed_matrix *w;
  gemm_epilogue e;
  const float *x;
  int lda, M, rows, mtile, n_m, pgroup;
  uint16_t *parts;
  size_t plane;
} split_run;

static void split_block_task(void *ctx, int task, int thread) {
  (void)thread;
  const split_run *r = ctx;
  int r0 = task * 32, r1 = r0 + 32 < r->rows ? r0 + 32 : r->rows;
  r->g->split_rows(r->x, r->lda, r->w->k_pad, r0, r1, r->M, r->parts, CPU_SPLIT_LD(r->w->k_pad), r->plane);
}
static void split_gemm_task(void *ctx, int task, int thread) {
  (void)thread;
  const split_run *r = ctx;
  int mi = task % r->n_m, pi = task / r->n_m;
  int m0 = mi * r->mtile, m1 = m0 + r->mtile < r->M ? m0 + r->mtile : r->M;
  int p0 = pi * r->pgroup, p1 = p0 + r->pgroup < r->w->n_panels ? p0 + r->pgroup : r->w->n_panels;
  r->fn(&r->in, r->w, m0, m1, p0, p1, &r->e);
}

/* wbits: 0, or the weights rounded to 11 / 8 significant bits (float16's / bfloat16's), whose lo
 * (and mid) parts are zero everywhere: pack_split_panels must say so (split_parts 2 / 1) and the
 * GEMM on the given parts, which then leaves those products out, must still give the own split's
 * bits (which runs them all). */
static void split_case(const cpu_amx_gemms *g, cpu_pool *pool, int kind, int M, int n, int k, int geglu, int mtile,
                       int pgroup, int wbits) {
  int kp = pack_kpad(k), kpp = CPU_SPLIT_K(kp), lda = kp + 4 * (M % 3), np = pack_panels(n, geglu);
  int outs = geglu ? n / 2 : n;
  float *w = malloc(sizeof(float) * (size_t)n * k), *x = malloc(sizeof(float) * (size_t)M * lda), row[4600];
  for (size_t i = 0; i < (size_t)n * k; i++) {
    w[i] = frand() / sqrtf((float)k);
    if (wbits && w[i] != 0) {
      int ex;
      float mant = frexpf(w[i], &ex);
      w[i] = ldexpf(rintf(ldexpf(mant, wbits)), ex - wbits);
    }
  }
  for (size_t i = 0; i < (size_t)M * lda; i++) x[i] = (int)(i % lda) < k ? 2.0f * frand() : 0.0f;
  size_t db = pack_data_bytes(WF_F32, n, k, geglu);
  float *data = aligned_alloc(64, (db + 63) & ~(size_t)63);
  wsrc src = {w, k};
  pack_matrix(WF_F32, n, k, geglu, get_row, &src, data, NULL, NULL, row);
  packed_matrix pm = {n, k, np, kp, geglu, WF_F32, data, NULL, NULL, NULL, ENC_ACT_GELU, NULL, 0};
  CHECK(pack_split_bytes(n, k, geglu, 3) == (size_t)np * 3 * kpp * CPU_NR * 2);
  /* panels in two pieces, as split_all's tasks may cut them: the parts they need, then the parts */
  int sp0 = pack_split_need(&pm, 0, np / 2, NULL), sp1 = pack_split_need(&pm, np / 2, np, g->split_panel);
  int wparts = sp0 > sp1 ? sp0 : sp1, want = wbits == 8 ? 1 : wbits == 11 ? 2 : 3;
  pm.split_parts = wparts;
  uint16_t *wsplit = malloc(pack_split_bytes(n, k, geglu, wparts));
  /* the first half in plain C, the second with the set's panel split (cpu.c's): the own split
   * below (the kernel's, SIMD on hardware) must match both */
  pack_split_panels(&pm, 0, np / 2, wsplit, NULL);
  pack_split_panels(&pm, np / 2, np, wsplit, g->split_panel);
  /* random fp32 weights: some lo part is nonzero in any matrix of more than a few values */
  if (wparts != want && (wbits || (size_t)n * k > 64))
    fprintf(stderr, "split parts of %d-bit weights n=%d k=%d: %d, want %d\n", wbits ? wbits : 24, n, k, wparts, want);
  CHECK(wparts == want || (!wbits && (size_t)n * k <= 64));
  /* the kernel splitting for itself: today's path, the bits to match */
  size_t no = (size_t)M * outs;
  float *own = malloc(sizeof(float) * no), *given = malloc(sizeof(float) * no);
  epi_act act = geglu ? EPI_GEGLU : EPI_NONE;
  gemm_input in = {x, lda, NULL, 0, NULL, 0, 0};
  gemm_epilogue e = {act, 0, own, NULL, outs};
  cpu_gemm_fn fn = pick(g, kind);
  fn(&in, &pm, 0, M, 0, np, &e);
  /* the double-precision product and bound (as gemm_case) */
  double c = (kind == K_X3 ? 3.2 * pow(2, -16) : kind == K_X5 ? 1.1 * pow(2, -17) : 12 * pow(2, -24)) + (k + 4) * pow(2, -24);
  int bad = 0;
  for (int m = 0; m < M; m++)
    for (int o = 0; o < outs; o++) {
      double y = 0, sabs = 0, u = 0, su = 0;
      for (int cc = 0; cc < k; cc++) {
        double p = (double)x[(size_t)m * lda + cc] * w[(size_t)(geglu ? o + outs : o) * k + cc];
        y += p;
        sabs += fabs(p);
        if (geglu) {
          double q = (double)x[(size_t)m * lda + cc] * w[(size_t)o * k + cc];
          u += q;
          su += fabs(q);
        }
      }
      double ref = y, bound = c * sabs + pow(2, -23) * fabs(y) + 1e-30;
      if (geglu) { /* gelu(u) * g */
        ref = gelu_d(u) * y;
        double du = c * su;
        bound = 1.13 * du * (fabs(y) + bound) + (fabs(gelu_d(u)) + 1.13 * du) * bound + 4e-7 * (fabs(u) + 1) * fabs(y) +
                2e-7 * fabs(ref) + 1e-30;
      }
      if (!(fabs(own[(size_t)m * outs + o] - ref) <= bound)) bad++;
    }
  pm.split = wsplit;
  int rows = (M + 15) & ~15;
  int ld = CPU_SPLIT_LD(kp); /* cpu.c's stride: kpp, or kpp + 32 where kpp / 32 is even */
  CHECK(ld >= kpp && ld % 32 == 0 && ld / 32 % 2 == 1);
  size_t plane = (size_t)rows * ld;
  uint16_t *parts = malloc(3 * plane * sizeof(uint16_t));
  memset(parts, 0xff, 3 * plane * sizeof(uint16_t)); /* bf16 NaN */
  split_run r = {g, fn, {x, lda, NULL, 0, parts, plane, ld}, &pm, {act, 0, given, NULL, outs}, x, lda, M, rows,
                 mtile, (M + mtile - 1) / mtile, pgroup, parts, plane};
  for (size_t i = 0; i < no; i++) given[i] = NAN;
  cpu_pool_run(pool, (rows + 31) / 32, split_block_task, &r);
  /* the rows are split: poison what the parts came from before the GEMM's step */
  for (size_t i = 0; i < (size_t)M * lda; i++) x[i] = NAN;
  for (size_t i = 0; i < db / 4; i++) data[i] = NAN;
  cpu_pool_run(pool, r.n_m * ((np + pgroup - 1) / pgroup), split_gemm_task, &r);
  int diff = 0;
  for (size_t i = 0; i < no; i++) diff += memcmp(&own[i], &given[i], 4) != 0;

  if (bad || diff)
    fprintf(stderr, "%s %s split once: M=%d n=%d k=%d geglu=%d tasks %dx%d weight parts %d: %d outputs off the bound, %d differ from the kernel's own split\n",
            g->name, kname[kind], M, n, k, geglu, mtile, pgroup, wparts, bad, diff);
  CHECK(bad == 0);
  CHECK(diff == 0);
  free(w), free(x), free(data), free(wsplit), free(own), free(given), free(parts);
}

static void test_split_once(const cpu_amx_gemms **sets, int n_sets, int quick) {
  cpu_pool *pool = cpu_pool_create(7); /* more threads than this machine's cores: tasks interleave */
  CHECK(pool != NULL);
  if (!pool) return;
  /* ragged M (a row tile's tail, under 16, over 16), k off the 32-value tile step, panel tails,
   * GeGLU, k over one k block; task tiles of one and several 32-row blocks, panel groups of 1-3 */
  static const int cases[][6] = {
      /* kind-independent: M, n, k, geglu, mtile, pgroup */
      {1, 33, 30, 0, 32, 1},   {17, 100, 36, 0, 32, 2},   {33, 64, 130, 0, 32, 1}, {70, 2 * 40, 260, 1, 64, 1},
      {129, 100, 68, 0, 96, 3}, {200, 40, 1030, 0, 192, 1}, {45, 33, 4500, 0, 32, 1}, {31, 2 * 17, 1, 1, 32, 1},
  };
  for (int si = 0; si < n_sets; si++)
    for (int kind = K_X3; kind <= K_X6; kind++)
      for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        if (quick && kind != K_X6 && ci % 2) continue;
        const int *cs = cases[ci];
        split_case(sets[si], pool, kind, cs[0], cs[1], cs[2], cs[3], cs[4], cs[5], 0);
        /* float16 and bfloat16 weights: every kind, every other case (all of them for x6) */
        if (kind == K_X6 || ci % 2 == 0) {
          split_case(sets[si], pool, kind, cs[0], cs[1], cs[2], cs[3], cs[4], cs[5], 11);
          split_case(sets[si], pool, kind, cs[0], cs[1], cs[2], cs[3], cs[4], cs[5], 8);
        }
      }
  cpu_pool_destroy(pool);
}

int main(int argc, char **argv) {
  int quick = argc > 1 && !strcmp(argv[1], "--quick");
  const cpu_amx_gemms *sets[2];
  int n = 0;
  sets[n++] = cpu_amx_emu();
  const cpu_amx_gemms *hw = cpu_amx_hw();
  if (hw) sets[n++] = hw;
  printf("AMX GEMMs under test: %s%s\n", sets[0]->name, hw ? " amx (this CPU has AMX)" : " (no AMX on this CPU)");
  const cpu_kernels *t = cpu_kernels_by_name("amx");
  CHECK(!!t == !!hw || !cpu_kernels_by_name("avx512"));
  if (t) CHECK(t->gemm_bf16 == hw->bf16 && t->gemm_i8 == hw->i8);
  test_order(sets, n);
  test_gemm(sets, n, quick);
  test_split_once(sets, n, quick);
  /* without scratch (as out of memory): the same results through the kernels' fallback paths */
  cpu_amx_scratch_fail_for_tests(1);
  for (int kind = 0; kind < K_N; kind++) {
    gemm_case(kind, 70, 33, 600, 0, EPI_GELU, 1, 0, 0, sets, n);
    gemm_case(kind, 33, 40, 4500, 1, EPI_GEGLU, 0, 0, 1, sets, n); /* k over one k block */
  }
  cpu_amx_scratch_fail_for_tests(0);
  if (hw) printf("bf16 plain products: %d of %d outputs differ in some bit between emulated and AMX tiles\n", mismatch_bf16, compared_bf16);
  return check_summary("cpu/amx");
}
