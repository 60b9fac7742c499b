/*
 * kernels_avx2.c: AVX2 + FMA kernels for x86-64 CPUs without AVX-512 (per-function target
 * attributes; handed out only when CPUID/XGETBV allow). bf16 weights are widened to fp32 in
 * registers (AVX2 has no bf16 dot product); int8 weights go through 16-bit multiply-adds.
 * Slots without an AVX2 version use the scalar kernel (attention_bf16: a model on this table keeps
 * its attention in fp32, see cpu.c).
 */
#include <math.h>
#include <string.h>

#include "backend/cpu/kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define ISA2 "avx2,fma"
#define FN static __attribute__((target(ISA2)))
#define INL static inline __attribute__((target(ISA2), always_inline))
#define MR2 3 /* rows per microkernel: 3 x 4 ymm = 12 accumulators */

INL __m256 v8_exp(__m256 x) {
  x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(88.3762626647949f)),
                    _mm256_set1_ps(-87.3365478515625f));
  __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500E-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507E-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073E-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894E-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459E-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201E-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

INL __m256 v8_gelu(__m256 x) {
  __m256 z = _mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f));
  __m256 sign = _mm256_and_ps(z, _mm256_set1_ps(-0.0f));
  __m256 az = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), z);
  __m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f),
                           _mm256_fmadd_ps(az, _mm256_set1_ps(0.3275911f), _mm256_set1_ps(1.0f)));
  __m256 p = _mm256_set1_ps(1.061405429f);
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.453152027f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
  p = _mm256_mul_ps(p, t);
  __m256 e = v8_exp(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(az, az)));
  __m256 erf = _mm256_or_ps(_mm256_fnmadd_ps(p, e, _mm256_set1_ps(1.0f)), sign);
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(_mm256_set1_ps(1.0f), erf));
}

/* Epilogue of one row over the panel's 32 results (four ymm). Scalar tail for partial panels. */
INL void epilogue_row8(const packed_matrix *w, const gemm_epilogue *e, int m, int p, __m256 *y) {
  int geglu = w->geglu, width = geglu ? 16 : 32, outs = geglu ? w->n / 2 : w->n;
  int o = p * width;
  float v[32];
  if (geglu) {
    _mm256_storeu_ps(v, _mm256_mul_ps(v8_gelu(y[0]), y[2]));
    _mm256_storeu_ps(v + 8, _mm256_mul_ps(v8_gelu(y[1]), y[3]));
  } else {
    for (int i = 0; i < 4; i++) {
      __m256 t = y[i];
      if (w->bias && o + 8 * i + 8 <= outs) t = _mm256_add_ps(t, _mm256_loadu_ps(w->bias + o + 8 * i));
      else if (w->bias)
        for (int c = 0; c < 8; c++) ((float *)&t)[c] += o + 8 * i + c < outs ? w->bias[o + 8 * i + c] : 0.0f;
      if (e->act == EPI_GELU) t = v8_gelu(t);
      else if (e->act == EPI_RELU) t = _mm256_max_ps(t, _mm256_setzero_ps());
      _mm256_storeu_ps(v + 8 * i, t);
    }
  }
  int cnt = outs - o < width ? outs - o : width;
  if (e->out_f32) {
    float *dst = e->out_f32 + (size_t)m * e->ldo + o;
    if (e->residual)
      for (int c = 0; c < cnt; c++) dst[c] += v[c];
    else
      memcpy(dst, v, sizeof(float) * (size_t)cnt);
  } else {
    uint16_t *dst = e->out_bf16 + (size_t)m * e->ldo + o;
    for (int c = 0; c < cnt; c++) dst[c] = f32_to_bf16_rne(v[c]);
  }
}

FN void gemm_f32_avx2(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0, int p1,
                      const gemm_epilogue *e) {
  for (int p = p0; p < p1; p++) {
    const float *b = (const float *)w->data + (size_t)p * w->k_pad * CPU_NR;
    for (int m = m0; m < m1; m += MR2) {
      int mr = m1 - m < MR2 ? m1 - m : MR2;
      __m256 c[MR2][4];
      for (int r = 0; r < MR2; r++)
        for (int i = 0; i < 4; i++) c[r][i] = _mm256_setzero_ps();
      const float *a = (const float *)x->a + (size_t)m * x->lda;
      for (int k = 0; k < w->k; k++) {
        __m256 b0 = _mm256_loadu_ps(b + k * 32), b1 = _mm256_loadu_ps(b + k * 32 + 8);
        __m256 b2 = _mm256_loadu_ps(b + k * 32 + 16), b3 = _mm256_loadu_ps(b + k * 32 + 24);
        for (int r = 0; r < MR2; r++) {
          __m256 av = _mm256_set1_ps(a[(size_t)(r < mr ? r : 0) * x->lda + k]);
          c[r][0] = _mm256_fmadd_ps(av, b0, c[r][0]);
          c[r][1] = _mm256_fmadd_ps(av, b1, c[r][1]);
          c[r][2] = _mm256_fmadd_ps(av, b2, c[r][2]);
          c[r][3] = _mm256_fmadd_ps(av, b3, c[r][3]);
        }
      }
      for (int r = 0; r < mr; r++) epilogue_row8(w, e, m + r, p, c[r]);
    }
  }
}

/* bf16 pairs [k0 k1] per column: even k = low half (shift up 16), odd k = high half (mask). */
FN void gemm_bf16_avx2(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0, int p1,
                       const gemm_epilogue *e) {
  const __m256i hi_mask = _mm256_set1_epi32((int)0xffff0000u);
  for (int p = p0; p < p1; p++) {
    const uint16_t *b = (const uint16_t *)w->data + (size_t)p * w->k_pad * CPU_NR;
    for (int m = m0; m < m1; m += MR2) {
      int mr = m1 - m < MR2 ? m1 - m : MR2;
      __m256 c[MR2][4];
      for (int r = 0; r < MR2; r++)
        for (int i = 0; i < 4; i++) c[r][i] = _mm256_setzero_ps();
      const uint16_t *a = (const uint16_t *)x->a + (size_t)m * x->lda;
      for (int kk = 0; kk < w->k_pad / 2; kk++) {
        __m256 be[4], bo[4];
        for (int i = 0; i < 4; i++) {
          __m256i raw = _mm256_loadu_si256((const __m256i *)(b + (size_t)kk * 64 + 16 * i));
          be[i] = _mm256_castsi256_ps(_mm256_slli_epi32(raw, 16));
          bo[i] = _mm256_castsi256_ps(_mm256_and_si256(raw, hi_mask));
        }
        for (int r = 0; r < MR2; r++) {
          const uint16_t *ar = a + (size_t)(r < mr ? r : 0) * x->lda + 2 * kk;
          __m256 a0 = _mm256_set1_ps(bf16_to_f32(ar[0])), a1 = _mm256_set1_ps(bf16_to_f32(ar[1]));
          for (int i = 0; i < 4; i++) c[r][i] = _mm256_fmadd_ps(a1, bo[i], _mm256_fmadd_ps(a0, be[i], c[r][i]));
        }
      }
      for (int r = 0; r < mr; r++) epilogue_row8(w, e, m + r, p, c[r]);
    }
  }
}

/* int8: each 32-bit lane of the packed panel holds one column's 4 k values; widen to 16 bits and
 * multiply-add pairs, keeping two partial sums per column until the end. */
FN void gemm_i8_avx2(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0, int p1,
                     const gemm_epilogue *e) {
  for (int p = p0; p < p1; p++) {
    const int8_t *b = (const int8_t *)w->data + (size_t)p * w->k_pad * CPU_NR;
    for (int m = m0; m < m1; m++) {
      const uint8_t *a = (const uint8_t *)x->a + (size_t)m * x->lda;
      __m256i c[8];
      for (int i = 0; i < 8; i++) c[i] = _mm256_setzero_si256();
      for (int kk = 0; kk < w->k_pad / 4; kk++) {
        const uint8_t *aq = a + 4 * kk;
        __m256i av = _mm256_set1_epi64x((long long)((uint64_t)aq[0] | (uint64_t)aq[1] << 16 |
                                                    (uint64_t)aq[2] << 32 | (uint64_t)aq[3] << 48));
        for (int i = 0; i < 8; i++) {
          __m256i wv = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b + (size_t)kk * 128 + 16 * i)));
          c[i] = _mm256_add_epi32(c[i], _mm256_madd_epi16(av, wv));
        }
      }
      /* c[i] lanes: col 4i+0 (k0k1), col 4i+0 (k2k3), col 4i+1 ...; fold the pairs */
      int32_t part[64], tot[32];
      for (int i = 0; i < 8; i++) _mm256_storeu_si256((__m256i *)(part + 8 * i), c[i]);
      for (int col = 0; col < 32; col++) tot[col] = part[2 * col] + part[2 * col + 1];
      __m256 y[4];
      for (int i = 0; i < 4; i++) {
        float f[8];
        for (int j = 0; j < 8; j++) {
          int col = p * CPU_NR + 8 * i + j;
          f[j] = (float)(tot[8 * i + j] - w->colsum[col]) * (x->row_scale[m] * w->scale[col]);
        }
        y[i] = _mm256_loadu_ps(f);
      }
      epilogue_row8(w, e, m, p, y);
    }
  }
}

FN void layernorm_avx2(const float *x, int n, const float *w, const float *b, float eps, float *y32,
                       uint16_t *y16) {
  int n8 = n & ~7;
  __m256 s = _mm256_setzero_ps();
  for (int i = 0; i < n8; i += 8) s = _mm256_add_ps(s, _mm256_loadu_ps(x + i));
  float st[8], sum = 0.0f;
  _mm256_storeu_ps(st, s);
  for (int i = 0; i < 8; i++) sum += st[i];
  for (int i = n8; i < n; i++) sum += x[i];
  float mean = sum / (float)n;
  __m256 vm = _mm256_set1_ps(mean), v = _mm256_setzero_ps();
  for (int i = 0; i < n8; i += 8) {
    __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), vm);
    v = _mm256_fmadd_ps(d, d, v);
  }
  _mm256_storeu_ps(st, v);
  float var = 0.0f;
  for (int i = 0; i < 8; i++) var += st[i];
  for (int i = n8; i < n; i++) var += (x[i] - mean) * (x[i] - mean);
  float rstd = 1.0f / sqrtf(var / (float)n + eps);
  for (int i = 0; i < n; i++) {
    float y = (x[i] - mean) * rstd * (w ? w[i] : 1.0f) + (b ? b[i] : 0.0f);
    if (y32) y32[i] = y;
    else y16[i] = f32_to_bf16_rne(y);
  }
}

/* NeoX RoPE, 8 pairs at a time, scalar tail (same expression order as the scalar kernel). */
FN void rope_avx2(float *x, int dh, const float *cs, float scale) {
  int half = dh / 2, h = 0;
  __m256 sc = _mm256_set1_ps(scale);
  for (; h + 8 <= half; h += 8) {
    __m256 a = _mm256_loadu_ps(x + h), b = _mm256_loadu_ps(x + half + h);
    __m256 c = _mm256_loadu_ps(cs + h), s = _mm256_loadu_ps(cs + half + h);
    __m256 lo = _mm256_fmsub_ps(a, c, _mm256_mul_ps(b, s));
    __m256 hi = _mm256_fmadd_ps(b, c, _mm256_mul_ps(a, s));
    _mm256_storeu_ps(x + h, _mm256_mul_ps(lo, sc));
    _mm256_storeu_ps(x + half + h, _mm256_mul_ps(hi, sc));
  }
  for (; h < half; h++) rope_pair(x, half, cs, scale, h);
}

/* ---- attention (fp32) ----
 * The AVX-512 kernel's scheme on 16 ymm registers: QB2 queries per block, one online-softmax step
 * per KB2 keys. Scores are computed 16 keys at a time (QB2 x 2 accumulators), the softmax runs on
 * the stored scores, and P V runs per chunk of W ymm (8 W columns) of the head with QB2 x W
 * accumulators, the running outputs kept in scratch between key blocks. */
#define QB2 4
#define KB2 64

/* Scores of QB2 queries against 16 keys j0 .. j0 + n - 1 (n <= 16) into pb [QB2][KB2]. */
INL void scores16_avx2(const attn_args *a, const float *q, int nq, int j0, int n, float *pb) {
  const int t = a->t, dh = a->dh;
  __m256 s[QB2][2];
  for (int qi = 0; qi < QB2; qi++) s[qi][0] = s[qi][1] = _mm256_setzero_ps();
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane);
  __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(n - 8), lane);
  for (int d = 0; d < dh; d++) {
    const float *krow = a->kt + (size_t)d * t + j0;
    __m256 k0, k1;
    if (n == 16) {
      k0 = _mm256_loadu_ps(krow);
      k1 = _mm256_loadu_ps(krow + 8);
    } else {
      k0 = _mm256_maskload_ps(krow, m0);
      k1 = _mm256_maskload_ps(krow + 8, m1);
    }
    for (int qi = 0; qi < QB2; qi++) {
      __m256 qv = _mm256_broadcast_ss(q + (size_t)(qi < nq ? qi : 0) * dh + d);
      s[qi][0] = _mm256_fmadd_ps(qv, k0, s[qi][0]);
      s[qi][1] = _mm256_fmadd_ps(qv, k1, s[qi][1]);
    }
  }
  for (int qi = 0; qi < QB2; qi++) {
    _mm256_storeu_ps(pb + qi * KB2, s[qi][0]);
    _mm256_storeu_ps(pb + qi * KB2 + 8, s[qi][1]);
  }
}

INL void attn_block_avx2(const attn_args *a, int q0, int nq, const int W) {
  const int t = a->t, dh = a->dh;
  int lo[QB2] = {0}, hi[QB2] = {0};
  int ulo = t, uhi = -1;
  for (int qi = 0; qi < nq; qi++) {
    int i = q0 + qi;
    lo[qi] = 0;
    hi[qi] = t - 1;
    if (a->window >= 0) {
      lo[qi] = i - a->window > 0 ? i - a->window : 0;
      hi[qi] = i + a->window < t - 1 ? i + a->window : t - 1;
    }
    if (lo[qi] < ulo) ulo = lo[qi];
    if (hi[qi] > uhi) uhi = hi[qi];
  }
  float *pbuf = a->scratch;           /* [QB2][KB2] scores, then probabilities */
  float *accb = a->scratch + QB2 * KB2; /* [QB2][dh] output accumulators */
  float mrun[QB2], lrun[QB2];
  for (int qi = 0; qi < QB2; qi++) {
    mrun[qi] = -INFINITY;
    lrun[qi] = 0.0f;
    for (int d = 0; d < dh; d += 8) _mm256_storeu_ps(accb + qi * dh + d, _mm256_setzero_ps());
  }
  const float *q = a->q + (size_t)q0 * dh;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int j0 = ulo; j0 <= uhi; j0 += KB2) {
    int nk = uhi + 1 - j0 < KB2 ? uhi + 1 - j0 : KB2;
    for (int c0 = 0; c0 < nk; c0 += 16) scores16_avx2(a, q, nq, j0 + c0, nk - c0 < 16 ? nk - c0 : 16, pbuf + c0);
    for (int qi = 0; qi < QB2; qi++) {
      float *pb = pbuf + qi * KB2;
      /* keys of this block that query qi may see (none for the unused query slots) */
      int a0 = qi < nq ? lo[qi] - j0 : 0, a1 = qi < nq ? hi[qi] + 1 - j0 : 0;
      if (a0 < 0) a0 = 0;
      if (a1 > nk) a1 = nk;
      if (a1 <= a0) {
        for (int c = 0; c < nk; c += 8) _mm256_storeu_ps(pb + c, _mm256_setzero_ps());
        continue;
      }
      __m256i va0 = _mm256_set1_epi32(a0 - 1), va1 = _mm256_set1_epi32(a1);
      __m256 bm = _mm256_set1_ps(-INFINITY);
      for (int c = 0; c < nk; c += 8) {
        __m256i idx = _mm256_add_epi32(lane, _mm256_set1_epi32(c));
        __m256 ok = _mm256_castsi256_ps(_mm256_and_si256(_mm256_cmpgt_epi32(idx, va0), _mm256_cmpgt_epi32(va1, idx)));
        bm = _mm256_max_ps(bm, _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), _mm256_loadu_ps(pb + c), ok));
      }
      float st[8], bmax = -INFINITY;
      _mm256_storeu_ps(st, bm);
      for (int i = 0; i < 8; i++) bmax = st[i] > bmax ? st[i] : bmax;
      float mnew = bmax > mrun[qi] ? bmax : mrun[qi];
      float corr = expf(mrun[qi] - mnew);
      __m256 vmn = _mm256_set1_ps(mnew), sum = _mm256_setzero_ps();
      for (int c = 0; c < nk; c += 8) {
        __m256i idx = _mm256_add_epi32(lane, _mm256_set1_epi32(c));
        __m256 ok = _mm256_castsi256_ps(_mm256_and_si256(_mm256_cmpgt_epi32(idx, va0), _mm256_cmpgt_epi32(va1, idx)));
        __m256 pv = _mm256_and_ps(ok, v8_exp(_mm256_sub_ps(_mm256_loadu_ps(pb + c), vmn)));
        sum = _mm256_add_ps(sum, pv);
        _mm256_storeu_ps(pb + c, pv);
      }
      _mm256_storeu_ps(st, sum);
      float bsum = 0.0f;
      for (int i = 0; i < 8; i++) bsum += st[i];
      lrun[qi] = lrun[qi] * corr + bsum;
      mrun[qi] = mnew;
      if (corr != 1.0f) {
        __m256 vc = _mm256_set1_ps(corr);
        for (int d = 0; d < dh; d += 8)
          _mm256_storeu_ps(accb + qi * dh + d, _mm256_mul_ps(_mm256_loadu_ps(accb + qi * dh + d), vc));
      }
    }
    for (int dc = 0; dc < dh; dc += 8 * W) {
      __m256 acc[QB2][2];
      for (int qi = 0; qi < QB2; qi++)
        for (int w = 0; w < W; w++) acc[qi][w] = _mm256_loadu_ps(accb + qi * dh + dc + 8 * w);
      for (int j = 0; j < nk; j++) {
        const float *vr = a->v + (size_t)(j0 + j) * dh + dc;
        __m256 vv[2];
        for (int w = 0; w < W; w++) vv[w] = _mm256_loadu_ps(vr + 8 * w);
        for (int qi = 0; qi < QB2; qi++) {
          __m256 pv = _mm256_broadcast_ss(pbuf + qi * KB2 + j);
          for (int w = 0; w < W; w++) acc[qi][w] = _mm256_fmadd_ps(pv, vv[w], acc[qi][w]);
        }
      }
      for (int qi = 0; qi < QB2; qi++)
        for (int w = 0; w < W; w++) _mm256_storeu_ps(accb + qi * dh + dc + 8 * w, acc[qi][w]);
    }
  }
  for (int qi = 0; qi < nq; qi++) {
    __m256 inv = _mm256_set1_ps(1.0f / lrun[qi]);
    size_t row = (size_t)(q0 + qi - a->i0) * a->ldo;
    for (int d = 0; d < dh; d += 8) {
      __m256 y = _mm256_mul_ps(_mm256_loadu_ps(accb + qi * dh + d), inv);
      if (a->out_f32) {
        _mm256_storeu_ps(a->out_f32 + row + d, y);
      } else {
        float v[8];
        _mm256_storeu_ps(v, y);
        for (int c = 0; c < 8; c++) a->out_bf16[row + d + c] = f32_to_bf16_rne(v[c]);
      }
    }
  }
}

FN void attention_avx2(const attn_args *a) {
  if (a->dh % 8 != 0 || a->dh > 64) { /* the accumulators in scratch hold QB2 x 64 */
    cpu_attention_scalar(a);
    return;
  }
  for (int i = a->i0; i < a->i1; i += QB2) {
    int nq = a->i1 - i < QB2 ? a->i1 - i : QB2;
    if (a->dh % 16 == 0) attn_block_avx2(a, i, nq, 2);
    else attn_block_avx2(a, i, nq, 1);
  }
}

static cpu_kernels table;

const cpu_kernels *cpu_kernels_avx2(void) {
  if (!table.name) {
    cpu_kernels t = cpu_kernels_scalar;
    t.name = "avx2";
    t.gemm_f32 = gemm_f32_avx2;
    t.gemm_bf16 = gemm_bf16_avx2;
    t.gemm_i8 = gemm_i8_avx2;
    t.layernorm = layernorm_avx2;
    t.rope = rope_avx2;
    t.attention = attention_avx2;
    table = t; /* idempotent: every caller writes the same bytes */
  }
  return &table;
}

#else
const cpu_kernels *cpu_kernels_avx2(void) { return NULL; }
#endif
