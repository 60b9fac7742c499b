/* ref_ops.c: plain fp32 building blocks of the reference forward pass (see ref_ops.h). */
#include "backend/cpu/ref_ops.h"

#include <math.h>
#include <string.h>

#include "backend/cpu/glu_act_rare.h"

/* Output columns per panel and tokens per block of the matmul. The panel of w is copied into
 * k-major order so that the innermost loop runs over NB independent accumulators with unit
 * stride, which compilers vectorise without reordering any sum. */
enum { NB = REF_MATMUL_NB, TB = 4 };
/* The k sum runs in blocks of KB, each summed in order and then added to the total, as blocked
 * BLAS kernels do: the rounding error then grows with K / KB + KB instead of K, which keeps us as
 * close to the exact result as PyTorch's own fp32 GEMM on the long (4d = 4096) reductions. */
enum { KB = 64 };

size_t ref_matmul_panel_floats(int K) { return (size_t)K * NB; }

static void store(float *y, const float *acc, const float *b, int nb, int accumulate) {
  for (int j = 0; j < nb; j++) {
    float v = acc[j];
    if (b) v += b[j];
    y[j] = accumulate ? y[j] + v : v;
  }
}

void ref_matmul(float *y, int ldy, const float *x, int ldx, const float *w, const float *b, int T,
                int N, int K, int accumulate, float *panel) {
  for (int n0 = 0; n0 < N; n0 += NB) {
    int nb = N - n0 < NB ? N - n0 : NB;
    for (int k = 0; k < K; k++) {
      for (int j = 0; j < nb; j++) panel[(size_t)k * NB + j] = w[(size_t)(n0 + j) * K + k];
      for (int j = nb; j < NB; j++) panel[(size_t)k * NB + j] = 0.0f;
    }
    const float *bias = b ? b + n0 : NULL;
    int t = 0;
    for (; t + TB <= T; t += TB) {
      float tot[TB][NB], acc[TB][NB];
      memset(tot, 0, sizeof tot);
      const float *x0 = x + (size_t)t * ldx;
      for (int k0 = 0; k0 < K; k0 += KB) {
        int k1 = K - k0 < KB ? K : k0 + KB;
        memset(acc, 0, sizeof acc);
        for (int k = k0; k < k1; k++) {
          const float *p = panel + (size_t)k * NB;
          for (int r = 0; r < TB; r++) {
            float xv = x0[(size_t)r * ldx + k];
            for (int j = 0; j < NB; j++) acc[r][j] += xv * p[j];
          }
        }
        for (int r = 0; r < TB; r++)
          for (int j = 0; j < NB; j++) tot[r][j] += acc[r][j];
      }
      for (int r = 0; r < TB; r++) store(y + (size_t)(t + r) * ldy + n0, tot[r], bias, nb, accumulate);
    }
    for (; t < T; t++) {
      float tot[NB], acc[NB];
      memset(tot, 0, sizeof tot);
      const float *xr = x + (size_t)t * ldx;
      for (int k0 = 0; k0 < K; k0 += KB) {
        int k1 = K - k0 < KB ? K : k0 + KB;
        memset(acc, 0, sizeof acc);
        for (int k = k0; k < k1; k++) {
          const float *p = panel + (size_t)k * NB;
          float xv = xr[k];
          for (int j = 0; j < NB; j++) acc[j] += xv * p[j];
        }
        for (int j = 0; j < NB; j++) tot[j] += acc[j];
      }
      store(y + (size_t)t * ldy + n0, tot, bias, nb, accumulate);
    }
  }
}

void ref_layernorm(float *y, const float *x, const float *w, const float *b, int d, float eps) {
  float sum = 0.0f;
  for (int i = 0; i < d; i++) sum += x[i];
  float mean = sum / (float)d;
  float sq = 0.0f;
  for (int i = 0; i < d; i++) {
    float c = x[i] - mean;
    sq += c * c;
  }
  float rstd = 1.0f / sqrtf(sq / (float)d + eps);
  for (int i = 0; i < d; i++) {
    float v = (x[i] - mean) * rstd * w[i];
    y[i] = b ? v + b[i] : v;
  }
}

float ref_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f)); }

/* In fp32 the way PyTorch's CPU kernels evaluate them (GELU approximate="tanh", SiLU, sigmoid; the
 * rarer kinds in glu_act_rare.h). */
float ref_act(enc_act act, float x) {
  switch (act) {
    case ENC_ACT_GELU_TANH: {
      const float beta = 0.79788456080286535588f, kappa = 0.044715f;
      return 0.5f * x * (1.0f + tanhf(beta * (x + kappa * (x * x * x))));
    }
    case ENC_ACT_QUICK_GELU: return x * (1.0f / (1.0f + expf(-(1.702f * x))));
    case ENC_ACT_SILU: return x / (1.0f + expf(-x));
    case ENC_ACT_RELU: return x > 0.0f ? x : 0.0f;
    case ENC_ACT_GELU: return ref_gelu(x);
    default: break;
  }
  return cpu_act_rare(act, x); /* the rest of ACT2FN (glu_act_rare.h) */
}

void ref_rope_tables(float *cos_t, float *sin_t, int len, int head_dim, double theta) {
  int half = head_dim / 2;
  for (int j = 0; j < half; j++) {
    /* transformers: 1.0 / (base ** (arange(0, dim, 2, dtype=float) / dim)), all in fp32. */
    float expo = (float)(2 * j) / (float)head_dim;
    float inv_freq = 1.0f / powf((float)theta, expo);
    for (int p = 0; p < len; p++) {
      float ang = (float)p * inv_freq;
      cos_t[(size_t)p * half + j] = cosf(ang);
      sin_t[(size_t)p * half + j] = sinf(ang);
    }
  }
}

void ref_rope(float *v, const float *cos_row, const float *sin_row, int head_dim) {
  int half = head_dim / 2;
  for (int j = 0; j < half; j++) {
    float x1 = v[j], x2 = v[j + half], c = cos_row[j], s = sin_row[j];
    /* v * cos + rotate_half(v) * sin, rotate_half(v) = cat(-v[half:], v[:half]) */
    v[j] = x1 * c + (-x2) * s;
    v[j + half] = x2 * c + x1 * s;
  }
}

/* y += a * x, element by element (no reduction, so any vector width gives the same bits). The
 * fixed-size inner loop is what GCC's -O2 cost model agrees to vectorise. */
static inline void axpy(float *restrict y, float a, const float *restrict x, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int u = 0; u < 8; u++) y[i + u] += a * x[i + u];
  for (; i < n; i++) y[i] += a * x[i];
}

size_t ref_attention_scratch_floats(int len, int head_dim) { return (size_t)len * (size_t)(head_dim + 1); }

void ref_attention(float *out, int ldo, const float *qkv, int ldqkv, int len, int n_heads,
                   int head_dim, int window, float *scratch) {
  ref_attention_heads(out, ldo, qkv, ldqkv, len, n_heads, head_dim, 0, n_heads, window, scratch);
}

void ref_attention_heads(float *out, int ldo, const float *qkv, int ldqkv, int len, int n_heads,
                         int head_dim, int h0, int h1, int window, float *scratch) {
  int d = n_heads * head_dim;
  float scale = (float)(1.0 / sqrt((double)head_dim));
  /* restrict: the scratch, the keys and the output never overlap (lets the loops vectorise) */
  float *restrict scores = scratch, *restrict kt = scratch + len; /* kt: [head_dim][len] */
  for (int h = h0; h < h1; h++) {
    /* With the keys transposed the score loop runs over keys with unit stride (vectorisable);
     * each score is still the dot product summed over e = 0 .. head_dim-1 in order. */
    for (int j = 0; j < len; j++) {
      const float *k = qkv + (size_t)j * ldqkv + d + h * head_dim;
      for (int e = 0; e < head_dim; e++) kt[(size_t)e * len + j] = k[e];
    }
    for (int i = 0; i < len; i++) {
      int lo = 0, hi = len - 1;
      if (window >= 0) {
        if (i - window > lo) lo = i - window;
        if (i + window < hi) hi = i + window;
      }
      int n = hi - lo + 1;
      const float *q = qkv + (size_t)i * ldqkv + h * head_dim;
      for (int j = 0; j < n; j++) scores[j] = 0.0f;
      for (int e = 0; e < head_dim; e++) axpy(scores, q[e], kt + (size_t)e * len + lo, n);
      float mx = -INFINITY;
      for (int j = 0; j < n; j++) {
        scores[j] *= scale;
        if (scores[j] > mx) mx = scores[j];
      }
      float sum = 0.0f;
      for (int j = 0; j < n; j++) {
        float e = expf(scores[j] - mx);
        scores[j] = e;
        sum += e;
      }
      float *restrict o = out + (size_t)i * ldo + h * head_dim;
      for (int e = 0; e < head_dim; e++) o[e] = 0.0f;
      for (int j = 0; j < n; j++) axpy(o, scores[j], qkv + (size_t)(lo + j) * ldqkv + 2 * d + h * head_dim, head_dim);
      float inv = 1.0f / sum;
      for (int e = 0; e < head_dim; e++) o[e] *= inv;
    }
  }
}

/* The four confidence features of one row from its raw logits (DecisionModel.forward):
 * [top1, top1 - top2, entropy / log(k), k / 255] with k clamped to >= 2 and top2 = 0 for k = 1. */
void ref_confidence_features(const float *logits, int k, float *feats) {
  float mx = logits[0];
  for (int i = 1; i < k; i++)
    if (logits[i] > mx) mx = logits[i];
  float sum = 0.0f;
  for (int i = 0; i < k; i++) sum += expf(logits[i] - mx);
  float top1 = 0.0f, top2 = 0.0f, ent = 0.0f;
  for (int i = 0; i < k; i++) {
    float p = expf(logits[i] - mx) / sum;
    ent += p * logf(p > 1e-9f ? p : 1e-9f);
    if (p > top1) {
      top2 = top1;
      top1 = p;
    } else if (p > top2) {
      top2 = p;
    }
  }
  float kk = (float)(k < 2 ? 2 : k);
  feats[0] = top1;
  feats[1] = top1 - top2;
  feats[2] = -ent / logf(kk);
  feats[3] = kk / 255.0f;
}
