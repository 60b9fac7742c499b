/*
 * kernels_scalar.c: the portable kernel set. Plain loops that read the packed layouts element by
 * element; slow, obviously correct, and the oracle tests/cpu/test_kernels.c holds every SIMD
 * kernel against.
 */
#include <math.h>
#include <string.h>

#include "backend/cpu/kernels.h"

size_t cpu_attention_scratch(int t) {
  (void)t;
  /* AVX-512: scores of 4 queries x 512 keys (fp32, and bf16 for P V) and 4 output accumulators of
   * up to 64; AVX2: less (scores of up to 6 queries x 256 keys and their accumulators; bf16: 4
   * queries' scores, accumulators and the queries widened) */
  return 4 * 512 + 2 * 512 + 4 * 64;
}

static float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

/* Epilogue for one activation row m and one panel p: acc holds the 32 fp32 results. */
static void epilogue_panel(const packed_matrix *w, const gemm_epilogue *e, int m, int p,
                           const float *acc) {
  int outs = w->geglu ? w->n / 2 : w->n;
  int width = w->geglu ? CPU_NR / 2 : CPU_NR;
  for (int c = 0; c < width; c++) {
    int o = p * width + c;
    if (o >= outs) break;
    float y;
    if (w->geglu) {
      y = cpu_glu_act(w->glu_act, acc[c]) * acc[c + CPU_NR / 2];
    } else {
      y = acc[c] + (w->bias ? w->bias[o] : 0.0f);
      if (e->act == EPI_GELU) y = gelu_erf(y);
      else if (e->act == EPI_RELU) y = y > 0.0f ? y : 0.0f;
    }
    if (e->out_f32) {
      float *dst = e->out_f32 + (size_t)m * e->ldo + o;
      *dst = e->residual ? *dst + y : y;
    } else {
      e->out_bf16[(size_t)m * e->ldo + o] = f32_to_bf16_rne(y);
    }
  }
}

static void gemm_f32_scalar(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0,
                            int p1, const gemm_epilogue *e) {
  const float *wd = w->data;
  size_t panel = (size_t)w->k_pad * CPU_NR;
  float acc[CPU_NR];
  for (int m = m0; m < m1; m++) {
    const float *a = (const float *)x->a + (size_t)m * x->lda;
    for (int p = p0; p < p1; p++) {
      const float *b = wd + p * panel;
      for (int c = 0; c < CPU_NR; c++) acc[c] = 0.0f;
      for (int k = 0; k < w->k; k++)
        for (int c = 0; c < CPU_NR; c++) acc[c] += a[k] * b[(size_t)k * CPU_NR + c];
      epilogue_panel(w, e, m, p, acc);
    }
  }
}

static void gemm_bf16_scalar(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0,
                             int p1, const gemm_epilogue *e) {
  const uint16_t *wd = w->data;
  size_t panel = (size_t)w->k_pad * CPU_NR;
  float acc[CPU_NR];
  for (int m = m0; m < m1; m++) {
    const uint16_t *a = (const uint16_t *)x->a + (size_t)m * x->lda;
    for (int p = p0; p < p1; p++) {
      const uint16_t *b = wd + p * panel;
      for (int c = 0; c < CPU_NR; c++) acc[c] = 0.0f;
      for (int k = 0; k < w->k; k++) {
        float av = bf16_to_f32(a[k]);
        for (int c = 0; c < CPU_NR; c++)
          acc[c] += av * bf16_to_f32(b[(size_t)(k >> 1) * CPU_NR * 2 + c * 2 + (k & 1)]);
      }
      epilogue_panel(w, e, m, p, acc);
    }
  }
}

static void gemm_i8_scalar(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0,
                           int p1, const gemm_epilogue *e) {
  const int8_t *wd = w->data;
  size_t panel = (size_t)w->k_pad * CPU_NR;
  int32_t iacc[CPU_NR];
  float acc[CPU_NR];
  for (int m = m0; m < m1; m++) {
    const uint8_t *a = (const uint8_t *)x->a + (size_t)m * x->lda;
    for (int p = p0; p < p1; p++) {
      const int8_t *b = wd + p * panel;
      for (int c = 0; c < CPU_NR; c++) iacc[c] = 0;
      for (int k = 0; k < w->k_pad; k++)
        for (int c = 0; c < CPU_NR; c++)
          iacc[c] += (int32_t)a[k] * b[(size_t)(k >> 2) * CPU_NR * 4 + c * 4 + (k & 3)];
      for (int c = 0; c < CPU_NR; c++) {
        int col = p * CPU_NR + c;
        acc[c] = (float)(iacc[c] - w->colsum[col]) * (x->row_scale[m] * w->scale[col]);
      }
      epilogue_panel(w, e, m, p, acc);
    }
  }
}

static void layernorm_scalar(const float *x, int n, const float *w, const float *b, float eps,
                             float *y32, uint16_t *y16) {
  double s = 0.0;
  for (int i = 0; i < n; i++) s += x[i];
  float mean = (float)(s / n);
  double v = 0.0;
  for (int i = 0; i < n; i++) v += (double)(x[i] - mean) * (x[i] - mean);
  float rstd = (float)(1.0 / sqrt(v / n + eps));
  for (int i = 0; i < n; i++) {
    float y = (x[i] - mean) * rstd * (w ? w[i] : 1.0f) + (b ? b[i] : 0.0f);
    if (y32) y32[i] = y;
    else y16[i] = f32_to_bf16_rne(y);
  }
}

static float quantize_row_scalar(const float *x, int n, int n_pad, uint8_t *q) {
  float inv, s = int8_grid(x, n, &inv);
  for (int i = 0; i < n; i++) q[i] = (uint8_t)((int)int8_level(x[i], inv) + 128);
  for (int i = n; i < n_pad; i++) q[i] = 128;
  return s;
}

static void to_bf16_scalar(const float *x, int n, uint16_t *y) {
  for (int i = 0; i < n; i++) y[i] = f32_to_bf16_rne(x[i]);
}

void cpu_rope_scalar(float *x, int dh, const float *cs, float scale) {
  for (int j = 0; j < dh / 2; j++) rope_pair(x, dh / 2, cs, scale, j);
}

/* q_i . k_j and v[j][d] from the fp32 layouts (q, kt, v) or the bf16 ones (qb, kb, vb). */
static float attn_score(const attn_args *a, int bf16, int i, int j) {
  int t = a->t, dh = a->dh;
  float s = 0.0f;
  if (!bf16) {
    for (int d = 0; d < dh; d++) s += a->q[(size_t)i * dh + d] * a->kt[(size_t)d * t + j];
    return s;
  }
  const uint16_t *q = a->qb + (size_t)i * dh;
  for (int p = 0; p < dh / 2; p++) {
    const uint16_t *k = a->kb + attn_bf16_kb_index(t, p, j);
    s += bf16_to_f32(q[2 * p]) * bf16_to_f32(k[0]) + bf16_to_f32(q[2 * p + 1]) * bf16_to_f32(k[1]);
  }
  return s;
}
static float attn_value(const attn_args *a, int bf16, int j, int d) {
  return bf16 ? bf16_to_f32(a->vb[attn_bf16_vb_index(a->dh, j, d)]) : a->v[(size_t)j * a->dh + d];
}

/* One query at a time, one key at a time: online softmax in fp32 (no probability rounding). */
static void attention_rows(const attn_args *a, int bf16) {
  int dh = a->dh;
  for (int i = a->i0; i < a->i1; i++) {
    int lo, hi;
    attn_key_range(a, i, &lo, &hi);
    float mx = -INFINITY, l = 0.0f, acc[CPU_MAX_DH] = {0};
    for (int j = lo; j <= hi; j++) {
      float s = attn_score(a, bf16, i, j);
      float mnew = s > mx ? s : mx;
      float corr = expf(mx - mnew), p = expf(s - mnew);
      l = l * corr + p;
      for (int d = 0; d < dh; d++) acc[d] = acc[d] * corr + p * attn_value(a, bf16, j, d);
      mx = mnew;
    }
    float inv = 1.0f / l;
    for (int d = 0; d < dh; d++) {
      float y = acc[d] * inv;
      if (a->out_f32) a->out_f32[(size_t)(i - a->i0) * a->ldo + d] = y;
      else a->out_bf16[(size_t)(i - a->i0) * a->ldo + d] = f32_to_bf16_rne(y);
    }
  }
}

void cpu_attention_scalar(const attn_args *a) { attention_rows(a, 0); }
void cpu_attention_bf16_scalar(const attn_args *a) { attention_rows(a, 1); }

const cpu_kernels cpu_kernels_scalar = {
    .name = "scalar",
    .gemm_f32 = gemm_f32_scalar,
    .gemm_bf16 = gemm_bf16_scalar,
    .gemm_i8 = gemm_i8_scalar,
    .layernorm = layernorm_scalar,
    .quantize_row = quantize_row_scalar,
    .to_bf16 = to_bf16_scalar,
    .rope = cpu_rope_scalar,
    .attention = cpu_attention_scalar,
    .attention_bf16 = cpu_attention_bf16_scalar,
};
