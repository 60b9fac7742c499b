/*
 * kernels_avx2.c: AVX2 + FMA kernels for x86-64 CPUs without AVX-512 (per-function target
 * attributes; handed out only when CPUID/XGETBV allow). bf16 weights and activations are widened
 * to fp32 (AVX2 has no bf16 dot product): a k block of a panel at a time into an L1 buffer for the
 * fp32 microkernel, or in registers for calls of one or two rows; int8 weights go through 16-bit
 * multiply-adds.
 * Slots without an AVX2 version use the scalar kernel.
 */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "backend/cpu/kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define ISA2 "avx2,fma"
#define FN static __attribute__((target(ISA2)))
#define INL static inline __attribute__((target(ISA2), always_inline))

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

/* The GeGLU activation (kernels.h cpu_glu_act): erf GELU, relu, or x / (1 + exp(-z)); the rarer
 * kinds (glu_act_rare.h) lane by lane in the scalar form. */
INL __m256 v8_glu_act(enc_act act, __m256 x) {
  if (act == ENC_ACT_GELU) return v8_gelu(x);
  if (act >= ENC_ACT_FUSED_END) {
    float t[8];
    _mm256_storeu_ps(t, x);
    for (int i = 0; i < 8; i++) t[i] = cpu_act_rare(act, t[i]);
    return _mm256_loadu_ps(t);
  }
  if (act == ENC_ACT_RELU) return _mm256_max_ps(x, _mm256_setzero_ps());
  __m256 z = act == ENC_ACT_SILU         ? x
             : act == ENC_ACT_QUICK_GELU ? _mm256_mul_ps(x, _mm256_set1_ps(CPU_GLU_QUICK_C0))
                                         : _mm256_mul_ps(x, _mm256_fmadd_ps(_mm256_mul_ps(x, x), _mm256_set1_ps(CPU_GLU_TANH_C2),
                                                                            _mm256_set1_ps(CPU_GLU_TANH_C0)));
  __m256 e = v8_exp(_mm256_sub_ps(_mm256_setzero_ps(), z));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

/* 8 floats -> bf16, bit for bit f32_to_bf16_rne (round to nearest even; a NaN stays a quiet NaN) */
INL __m128i v8_to_bf16(__m256 y) {
  __m256i u = _mm256_castps_si256(y);
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  r = _mm256_blendv_epi8(r, _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40)), nan);
  return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

/* The bias of columns [c, c + 8), zero past `outs` (the lanes of a partial panel, never stored). */
INL __m256 bias8(const float *bias, int c, int outs) {
  if (c + 8 <= outs) return _mm256_loadu_ps(bias + c);
  __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_maskload_ps(bias + c, _mm256_cmpgt_epi32(_mm256_set1_epi32(outs - c), lane));
}

/* Epilogue of one row over the panel's 32 results (four ymm, passed by value). The values stay in
 * registers and go to the output as whole vectors; only a partial panel (the matrix's last
 * columns) goes through a buffer and a scalar tail. Passed as an array, gcc copied the blocked
 * tiles' sums into it in 16-byte halves and reloaded them whole, a failed store forward per vector
 * that perf put at the top of the tile (BENCHMARKS.md, "AVX2 GEMMs, session 21"). */
INL void epilogue_row8(const packed_matrix *w, const gemm_epilogue *e, int m, int p, __m256 y0, __m256 y1,
                       __m256 y2, __m256 y3) {
  const __m256 y[4] = {y0, y1, y2, y3};
  const int geglu = w->geglu, width = geglu ? 16 : 32, outs = geglu ? w->n / 2 : w->n;
  const int o = p * width, cnt = outs - o < width ? outs - o : width, nv = width / 8;
  __m256 t[4];
  if (geglu) {
    t[0] = _mm256_mul_ps(v8_glu_act(w->glu_act, y[0]), y[2]);
    t[1] = _mm256_mul_ps(v8_glu_act(w->glu_act, y[1]), y[3]);
  } else {
    for (int i = 0; i < 4; i++) {
      __m256 u = y[i];
      if (w->bias) u = _mm256_add_ps(u, bias8(w->bias, o + 8 * i, outs));
      if (e->act == EPI_GELU) u = v8_gelu(u);
      else if (e->act == EPI_RELU) u = _mm256_max_ps(u, _mm256_setzero_ps());
      t[i] = u;
    }
  }
  if (cnt == width) {
    if (e->out_f32) {
      float *dst = e->out_f32 + (size_t)m * e->ldo + o;
      for (int i = 0; i < nv; i++)
        _mm256_storeu_ps(dst + 8 * i, e->residual ? _mm256_add_ps(_mm256_loadu_ps(dst + 8 * i), t[i]) : t[i]);
    } else {
      uint16_t *dst = e->out_bf16 + (size_t)m * e->ldo + o;
      for (int i = 0; i < nv; i++) _mm_storeu_si128((__m128i *)(void *)(dst + 8 * i), v8_to_bf16(t[i]));
    }
    return;
  }
  float v[32];
  for (int i = 0; i < nv; i++) _mm256_storeu_ps(v + 8 * i, t[i]);
  if (e->out_f32) {
    float *dst = e->out_f32 + (size_t)m * e->ldo + o;
    for (int c = 0; c < cnt; c++) dst[c] = e->residual ? dst[c] + v[c] : v[c];
  } else {
    uint16_t *dst = e->out_bf16 + (size_t)m * e->ldo + o;
    for (int c = 0; c < cnt; c++) dst[c] = f32_to_bf16_rne(v[c]);
  }
}

/* ---- fp32 / bf16 GEMM ----
 * Microkernel: up to MR2 rows x one half panel (16 columns = 2 ymm per row): 12 accumulators, the
 * half panel's 2 weight vectors and one broadcast fit the 16 ymm registers. The row loops are
 * unrolled on a compile-time row count (the tile functions below), so the accumulators stay in
 * registers. The first half's results wait on the stack for the second half, because a GeGLU
 * panel's halves are the input and gate columns of the same outputs. */
#define MR2 6
#define KC2 128 /* bf16: k pairs per block of activations widened to fp32 on the stack */

INL void zero_acc(const int mr, __m256 *c) {
#pragma GCC unroll 6
  for (int r = 0; r < mr; r++) c[2 * r] = c[2 * r + 1] = _mm256_setzero_ps();
}

/* bf16 widened to fp32 in registers (exact; AVX2 has no bf16 arithmetic). Packed weights, k and v
 * hold pairs: a 32-bit lane is (even element, odd element), so the even one is the lane shifted up
 * 16 bits and the odd one the lane with its low half cleared. bf16x8 widens 8 consecutive values
 * (activations, queries): each zero-extended to a lane, then shifted up as an even element. */
INL __m256 bf16_even(__m256i pairs) { return _mm256_castsi256_ps(_mm256_slli_epi32(pairs, 16)); }
INL __m256 bf16_odd(__m256i pairs) {
  return _mm256_castsi256_ps(_mm256_and_si256(pairs, _mm256_set1_epi32((int)0xffff0000u)));
}
INL __m256 bf16x8(const uint16_t *p) {
  return bf16_even(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p)));
}

/* c[2r..2r+1] += a[r][k] * b[k][0..15] over k in [0, nk); b rows 32 floats apart. */
INL void mk_f32_avx2(const int mr, const float *a, size_t lda, const float *b, int nk, __m256 *c) {
  for (int k = 0; k < nk; k++) {
    __m256 b0 = _mm256_loadu_ps(b + (size_t)k * 32), b1 = _mm256_loadu_ps(b + (size_t)k * 32 + 8);
#pragma GCC unroll 6
    for (int r = 0; r < mr; r++) {
      __m256 av = _mm256_broadcast_ss(a + (size_t)r * lda + k);
      c[2 * r] = _mm256_fmadd_ps(av, b0, c[2 * r]);
      c[2 * r + 1] = _mm256_fmadd_ps(av, b1, c[2 * r + 1]);
    }
  }
}

/* bf16 weights widened in registers: a 32-bit lane holds one column's (k even, k odd) pair
 * (bf16_even / bf16_odd). The activations of the tile are widened once per KC2 pairs into aw
 * [mr][2 KC2]. */
INL void mk_bf16_avx2(const int mr, const uint16_t *a, size_t lda, const uint16_t *b, int np2, __m256 *c) {
  float aw[MR2 * 2 * KC2];
  for (int k0 = 0; k0 < np2; k0 += KC2) {
    int nk = np2 - k0 < KC2 ? np2 - k0 : KC2;
    for (int r = 0; r < mr; r++) {
      const uint16_t *ar = a + (size_t)r * lda + 2 * k0;
      float *dst = aw + r * 2 * KC2;
      int i = 0;
      for (; i + 8 <= 2 * nk; i += 8) _mm256_storeu_ps(dst + i, bf16x8(ar + i));
      for (; i < 2 * nk; i++) dst[i] = bf16_to_f32(ar[i]);
    }
    for (int kk = 0; kk < nk; kk++) {
      const __m256i *bp = (const __m256i *)(b + (size_t)(k0 + kk) * 64);
      __m256 w0 = bf16_even(_mm256_loadu_si256(bp)), w1 = bf16_even(_mm256_loadu_si256(bp + 1));
#pragma GCC unroll 6
      for (int r = 0; r < mr; r++) {
        __m256 av = _mm256_broadcast_ss(aw + r * 2 * KC2 + 2 * kk);
        c[2 * r] = _mm256_fmadd_ps(av, w0, c[2 * r]);
        c[2 * r + 1] = _mm256_fmadd_ps(av, w1, c[2 * r + 1]);
      }
      w0 = bf16_odd(_mm256_loadu_si256(bp)), w1 = bf16_odd(_mm256_loadu_si256(bp + 1));
#pragma GCC unroll 6
      for (int r = 0; r < mr; r++) {
        __m256 av = _mm256_broadcast_ss(aw + r * 2 * KC2 + 2 * kk + 1);
        c[2 * r] = _mm256_fmadd_ps(av, w0, c[2 * r]);
        c[2 * r + 1] = _mm256_fmadd_ps(av, w1, c[2 * r + 1]);
      }
    }
  }
}

/* Both halves of panel p for rows m .. m + mr - 1, then the epilogue of each row. */
#define TILE_AVX2(FMT, ELEM, KLEN, HALF)                                                          \
  INL void tile2_##FMT(const int mr, const gemm_input *x, const packed_matrix *w, int m, int p,   \
                       const gemm_epilogue *e) {                                                  \
    const ELEM *a = (const ELEM *)x->a + (size_t)m * x->lda;                                      \
    const ELEM *b = (const ELEM *)w->data + (size_t)p * w->k_pad * CPU_NR;                        \
    __m256 c[2 * MR2], y[4 * MR2];                                                                \
    zero_acc(mr, c);                                                                              \
    mk_##FMT##_avx2(mr, a, (size_t)x->lda, b, KLEN, c);                                           \
    _Pragma("GCC unroll 6") for (int r = 0; r < mr; r++) y[4 * r] = c[2 * r], y[4 * r + 1] = c[2 * r + 1]; \
    zero_acc(mr, c);                                                                              \
    mk_##FMT##_avx2(mr, a, (size_t)x->lda, b + (HALF), KLEN, c);                                  \
    _Pragma("GCC unroll 6") for (int r = 0; r < mr; r++) {                                        \
      y[4 * r + 2] = c[2 * r], y[4 * r + 3] = c[2 * r + 1];                                       \
      epilogue_row8(w, e, m + r, p, y[4 * r], y[4 * r + 1], y[4 * r + 2], y[4 * r + 3]);          \
    }                                                                                             \
  }
TILE_AVX2(f32, float, w->k, 16)
TILE_AVX2(bf16, uint16_t, w->k_pad / 2, 32)

/* Tiles of MR2 rows (and one shorter tile at the end) over panels [p0, p1). */
#define GEMM_AVX2(FMT, NAME)                                                                      \
  FN void NAME(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0,               \
                            int p1, const gemm_epilogue *e) {                                     \
    for (int p = p0; p < p1; p++)                                                                 \
      for (int m = m0; m < m1; m += MR2) {                                                        \
        switch (m1 - m < MR2 ? m1 - m : MR2) {                                                    \
          case 1: tile2_##FMT(1, x, w, m, p, e); break;                                           \
          case 2: tile2_##FMT(2, x, w, m, p, e); break;                                           \
          case 3: tile2_##FMT(3, x, w, m, p, e); break;                                           \
          case 4: tile2_##FMT(4, x, w, m, p, e); break;                                           \
          case 5: tile2_##FMT(5, x, w, m, p, e); break;                                           \
          default: tile2_##FMT(6, x, w, m, p, e); break;                                          \
        }                                                                                         \
      }                                                                                           \
  }
GEMM_AVX2(f32, gemm_f32_avx2_rows)
GEMM_AVX2(bf16, gemm_bf16_avx2_rows)

/* ---- fp32 GEMM on copied activations, k-blocked (BLIS's loop order on the packed panels) ----
 * The weight panel is read KCB k rows at a time: that block (KCB x 32 floats, 16 KiB) stays in L1
 * while every row tile of the chunk runs over it, so the weights come from L1 and each block is
 * fetched from memory once per chunk. The activation rows of the chunk are copied once per call
 * into a per-thread buffer (cpu_thread_scratch), block by block and tile by tile as 8-float slices
 * [kc / 8][h][8] (the last slice kc % 8 wide): the microkernel broadcasts from h consecutive
 * 32-byte pieces instead of h rows lda apart (lda = 1024 / 2624 floats: rows 4 / 10 KiB apart fall
 * in the same sets of an 8-way 32 KiB L1, Zen 2/3 and Haswell..Skylake). Partial sums wait in a
 * [rows][32] buffer between k blocks. Each output is still one FMA chain over k = 0..K-1 from
 * zero, so the results are the same bits as mk_f32_avx2's (and independent of the chunk, the tile
 * and the k block a row falls in). */
#define KCB 128 /* k rows per weight block (KCB x 32 floats = 16 KiB) */
#define MCH 192 /* most rows per chunk: copied rows KCB x MCH = 96 KiB per k block */

/* Share t of n_t of the `bytes` at nxt into L2: the next weight block, a few lines before each of
 * the current block's tiles, so that its first tile does not wait on each line (L2, not L1: Zen
 * 2/3's 32 KiB L1 would lose lines of the block in use). */
static inline void prefetch_share(const char *nxt, int bytes, int t, int n_t) {
  const int lines = bytes / 64;
  for (int l = t * lines / n_t; l < (t + 1) * lines / n_t; l++) _mm_prefetch(nxt + 64 * l, _MM_HINT_T1);
}

/* rows [0, h) x k [k0, k0 + kc) of a (row stride lda) -> dst [kc / 8][h][8], then [h][kc % 8] */
INL void packa_f32_avx2(const int h, const float *a, size_t lda, int k0, int kc, float *dst) {
  int j = 0;
  for (; j + 8 <= kc; j += 8, dst += 8 * h)
#pragma GCC unroll 6
    for (int r = 0; r < h; r++) _mm256_storeu_ps(dst + 8 * r, _mm256_loadu_ps(a + (size_t)r * lda + k0 + j));
  int t = kc - j;
  for (int r = 0; r < h; r++)
    for (int i = 0; i < t; i++) dst[t * r + i] = a[(size_t)r * lda + k0 + j + i];
}

/* c (h x 16 columns of a half panel, in cs rows 32 floats apart) += ap (h x kc, packed) * b (kc
 * rows 32 floats apart); first: start from zero instead of cs. */
INL void mkb_f32_avx2(const int h, const float *ap, const float *b, int kc, int first, float *cs) {
  __m256 c[2 * MR2];
  if (first) {
    zero_acc(h, c);
  } else {
#pragma GCC unroll 6
    for (int r = 0; r < h; r++) c[2 * r] = _mm256_loadu_ps(cs + 32 * r), c[2 * r + 1] = _mm256_loadu_ps(cs + 32 * r + 8);
  }
  int j = 0;
  for (; j + 8 <= kc; j += 8, ap += 8 * h, b += 8 * 32) {
    /* unrolled by 4, not 8: gcc 12 then keeps all 12 accumulators in registers (by 8 it spills
     * one and shuffles others; clang is clean either way) */
#pragma GCC unroll 4
    for (int i = 0; i < 8; i++) {
      __m256 b0 = _mm256_loadu_ps(b + 32 * i), b1 = _mm256_loadu_ps(b + 32 * i + 8);
#pragma GCC unroll 6
      for (int r = 0; r < h; r++) {
        __m256 av = _mm256_broadcast_ss(ap + 8 * r + i);
        c[2 * r] = _mm256_fmadd_ps(av, b0, c[2 * r]);
        c[2 * r + 1] = _mm256_fmadd_ps(av, b1, c[2 * r + 1]);
      }
    }
  }
  int t = kc - j;
  for (int i = 0; i < t; i++) {
    __m256 b0 = _mm256_loadu_ps(b + 32 * i), b1 = _mm256_loadu_ps(b + 32 * i + 8);
#pragma GCC unroll 6
    for (int r = 0; r < h; r++) {
      __m256 av = _mm256_broadcast_ss(ap + t * r + i);
      c[2 * r] = _mm256_fmadd_ps(av, b0, c[2 * r]);
      c[2 * r + 1] = _mm256_fmadd_ps(av, b1, c[2 * r + 1]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < h; r++) _mm256_storeu_ps(cs + 32 * r, c[2 * r]), _mm256_storeu_ps(cs + 32 * r + 8, c[2 * r + 1]);
}

/* One tile of h rows over one k block of panel p (both halves); after the last block, the
 * epilogue of its rows. */
#define TILEB_F32(H)                                                                            \
  FN void tileb_f32_##H(const float *ap, const float *b, int kc, int first, int last, float *cs, \
                        const packed_matrix *w, const gemm_epilogue *e, int m, int p) {         \
    mkb_f32_avx2(H, ap, b, kc, first, cs);                                                      \
    mkb_f32_avx2(H, ap, b + 16, kc, first, cs + 16);                                            \
    if (last)                                                                                   \
      for (int r = 0; r < H; r++) {                                                             \
        const float *y = cs + 32 * r;                                                           \
        epilogue_row8(w, e, m + r, p, _mm256_loadu_ps(y), _mm256_loadu_ps(y + 8),                \
                      _mm256_loadu_ps(y + 16), _mm256_loadu_ps(y + 24));                        \
      }                                                                                         \
  }                                                                                             \
  FN void packb_f32_##H(const float *a, size_t lda, int k0, int kc, float *dst) {               \
    packa_f32_avx2(H, a, lda, k0, kc, dst);                                                     \
  }
TILEB_F32(1) TILEB_F32(2) TILEB_F32(3) TILEB_F32(4) TILEB_F32(5) TILEB_F32(6)
typedef void (*tileb_fn)(const float *, const float *, int, int, int, float *, const packed_matrix *,
                         const gemm_epilogue *, int, int);
typedef void (*packb_fn)(const float *, size_t, int, int, float *);
static const tileb_fn tileb_f32[MR2 + 1] = {NULL, tileb_f32_1, tileb_f32_2, tileb_f32_3,
                                            tileb_f32_4, tileb_f32_5, tileb_f32_6};
static const packb_fn packb_f32[MR2 + 1] = {NULL, packb_f32_1, packb_f32_2, packb_f32_3,
                                            packb_f32_4, packb_f32_5, packb_f32_6};

/* The rows this thread copied last (one chunk), valid while the buffer and the call's id
 * (gemm_input.gen) are the same: the backend splits a GEMM of few rows (M = 128: one chunk) into
 * several panel groups, and each task would copy the same rows again (at K = 2624, 1.3 MiB per
 * task, ~7% of a 4-panel task's time). */
static _Thread_local struct {
  unsigned long gen;
  const void *a;
  const float *buf;
  int lda, m0, m1, k;
  cpu_wfmt fmt; /* the int8 GEMM keeps its widened rows in the same buffer (gemm_i8_blocked_avx2) */
} copied;

/* Returns 0 (nothing done) when the per-thread buffer cannot be had. */
static int gemm_f32_blocked_avx2(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0,
                                 int p1, const gemm_epilogue *e) {
  const int k = w->k, nkb = (k + KCB - 1) / KCB;
  int n_c = (m1 - m0 + MCH - 1) / MCH, chunk = (m1 - m0 + n_c - 1) / n_c;
  /* copied rows (chunk x k) and the partial sums ([chunk][32]) */
  float *buf = cpu_thread_scratch((size_t)chunk * k + (size_t)chunk * 32 + 16);
  if (!buf) return 0;
  float *cs = buf + (((size_t)chunk * k + 15) & ~(size_t)15);
  const float *a = (const float *)x->a;
  for (int mc = m0; mc < m1; mc += chunk) {
    int mce = mc + chunk < m1 ? mc + chunk : m1, rows = mce - mc;
    /* ceil(rows / 6) tiles of nearly equal height (128 rows: 18 x 6 + 4 x 5, not 21 x 6 + a 2-row
     * tile that runs at a third of the FMA rate) */
    int n_t = (rows + MR2 - 1) / MR2, tm[MCH / MR2 + 2];
    tm[0] = 0;
    for (int t = 0; t < n_t; t++) tm[t + 1] = tm[t] + (rows - tm[t] + (n_t - t) - 1) / (n_t - t);
    /* k block kb of tile t at buf + k0 * rows + tm[t] * kc */
    int have = n_c == 1 && x->gen && copied.gen == x->gen && copied.a == x->a && copied.buf == buf &&
               copied.lda == x->lda && copied.m0 == mc && copied.m1 == mce && copied.k == k && copied.fmt == WF_F32;
    if (!have) {
      for (int kb = 0; kb < nkb; kb++) {
        int k0 = kb * KCB, kc = k - k0 < KCB ? k - k0 : KCB;
        for (int t = 0; t < n_t; t++)
          packb_f32[tm[t + 1] - tm[t]](a + (size_t)(mc + tm[t]) * x->lda, (size_t)x->lda, k0, kc,
                                       buf + (size_t)k0 * rows + (size_t)tm[t] * kc);
      }
      copied.gen = n_c == 1 ? x->gen : 0;
      copied.a = x->a, copied.buf = buf, copied.lda = x->lda, copied.m0 = mc, copied.m1 = mce, copied.k = k;
      copied.fmt = WF_F32;
    }
    for (int p = p0; p < p1; p++) {
      const float *b = (const float *)w->data + (size_t)p * w->k_pad * CPU_NR;
      for (int kb = 0; kb < nkb; kb++) {
        int k0 = kb * KCB, kc = k - k0 < KCB ? k - k0 : KCB;
        const float *apk = buf + (size_t)k0 * rows, *bk = b + (size_t)k0 * CPU_NR;
        /* the next weight block: this panel's or the next one's (they follow in memory) */
        const char *nxt = (const char *)(bk + (size_t)kc * CPU_NR);
        for (int t = 0; t < n_t; t++) {
          prefetch_share(nxt, KCB * CPU_NR * 4, t, n_t);
          tileb_f32[tm[t + 1] - tm[t]](apk + (size_t)tm[t] * kc, bk, kc, kb == 0, kb == nkb - 1,
                                       cs + (size_t)tm[t] * 32, w, e, mc + tm[t], p);
        }
      }
    }
  }
  return 1;
}

FN void gemm_f32_avx2(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0, int p1,
                      const gemm_epilogue *e) {
  if (m1 <= m0 || p1 <= p0) return;
  if (w->k > 0 && gemm_f32_blocked_avx2(x, w, m0, m1, p0, p1, e)) return;
  gemm_f32_avx2_rows(x, w, m0, m1, p0, p1, e);
}

/* ---- bf16 GEMM on widened copies, k-blocked (the fp32 one's loops) ----
 * AVX2 has no bf16 arithmetic, so the row-tile kernel above widens every weight vector in the
 * inner loop, once per row tile (and each tile streams the whole panel from memory or L2). Here the
 * fp32 blocked GEMM's scheme runs on widened copies: the activation rows of a chunk are widened
 * once per call into the per-thread buffer as its 8-float slices, and each KCB-row block of a
 * weight panel is widened once per chunk into an L1-resident [KCB][32] fp32 block that every row
 * tile of the chunk then multiplies with the fp32 microkernel (tileb_f32). Widening is exact and a
 * packed pair's lane is (k even, k odd), so the block's fp32 rows are k = k0, k0 + 1, ... in order,
 * and each output is the same FMA chain over k = 0 .. k_pad - 1 from zero as mk_bf16_avx2's (the
 * padding k too: the bits are the row-tile kernel's, which stays for calls of one or two rows and
 * as the fallback when the buffer cannot be had). */

/* rows [0, h) x k [k0, k0 + kc) of bf16 a (row stride lda) widened -> dst [kc / 8][h][8], then
 * [h][kc % 8] (packa_f32_avx2's layout) */
INL void packa_bf16_avx2(const int h, const uint16_t *a, size_t lda, int k0, int kc, float *dst) {
  int j = 0;
  for (; j + 8 <= kc; j += 8, dst += 8 * h)
#pragma GCC unroll 6
    for (int r = 0; r < h; r++) _mm256_storeu_ps(dst + 8 * r, bf16x8(a + (size_t)r * lda + k0 + j));
  int t = kc - j;
  for (int r = 0; r < h; r++)
    for (int i = 0; i < t; i++) dst[t * r + i] = bf16_to_f32(a[(size_t)r * lda + k0 + j + i]);
}
#define PACKB_BF16(H)                                                                           \
  FN void packb_bf16_##H(const uint16_t *a, size_t lda, int k0, int kc, float *dst) {           \
    packa_bf16_avx2(H, a, lda, k0, kc, dst);                                                    \
  }
PACKB_BF16(1) PACKB_BF16(2) PACKB_BF16(3) PACKB_BF16(4) PACKB_BF16(5) PACKB_BF16(6)
typedef void (*packb_bf16_fn)(const uint16_t *, size_t, int, int, float *);
static const packb_bf16_fn packb_bf16[MR2 + 1] = {NULL, packb_bf16_1, packb_bf16_2, packb_bf16_3,
                                                  packb_bf16_4, packb_bf16_5, packb_bf16_6};

/* k rows [k0, k0 + kc) (both even) of bf16 panel b [k_pad / 2][32][2] widened -> wb [kc][32] */
INL void widen_panel_bf16(const uint16_t *b, int k0, int kc, float *wb) {
  const __m256i *bp = (const __m256i *)(const void *)(b + (size_t)k0 * CPU_NR);
  for (int j = 0; j < kc / 2; j++, bp += 4, wb += 2 * CPU_NR) {
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
      __m256i v = _mm256_loadu_si256(bp + i);
      _mm256_store_ps(wb + 8 * i, bf16_even(v));
      _mm256_store_ps(wb + CPU_NR + 8 * i, bf16_odd(v));
    }
  }
}

/* Returns 0 (nothing done) when the per-thread buffer cannot be had. */
FN int gemm_bf16_blocked_avx2(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0,
                              int p1, const gemm_epilogue *e) {
  const int k = w->k_pad, nkb = (k + KCB - 1) / KCB;
  int n_c = (m1 - m0 + MCH - 1) / MCH, chunk = (m1 - m0 + n_c - 1) / n_c;
  /* the widened weight block ([KCB][32], first: 64-byte aligned), the widened rows (chunk x k) and
   * the partial sums ([chunk][32]) */
  float *wb = cpu_thread_scratch((size_t)KCB * CPU_NR + (size_t)chunk * k + (size_t)chunk * 32 + 16);
  if (!wb) return 0;
  float *buf = wb + (size_t)KCB * CPU_NR;
  float *cs = buf + (((size_t)chunk * k + 15) & ~(size_t)15);
  const uint16_t *a = (const uint16_t *)x->a;
  for (int mc = m0; mc < m1; mc += chunk) {
    int mce = mc + chunk < m1 ? mc + chunk : m1, rows = mce - mc;
    int n_t = (rows + MR2 - 1) / MR2, tm[MCH / MR2 + 2];
    tm[0] = 0;
    for (int t = 0; t < n_t; t++) tm[t + 1] = tm[t] + (rows - tm[t] + (n_t - t) - 1) / (n_t - t);
    /* the fp32 GEMM's reuse of one call's copy (copied: the id is per call, so never another
     * format's) */
    int have = n_c == 1 && x->gen && copied.gen == x->gen && copied.a == x->a && copied.buf == buf &&
               copied.lda == x->lda && copied.m0 == mc && copied.m1 == mce && copied.k == k;
    if (!have) {
      for (int kb = 0; kb < nkb; kb++) {
        int k0 = kb * KCB, kc = k - k0 < KCB ? k - k0 : KCB;
        for (int t = 0; t < n_t; t++)
          packb_bf16[tm[t + 1] - tm[t]](a + (size_t)(mc + tm[t]) * x->lda, (size_t)x->lda, k0, kc,
                                        buf + (size_t)k0 * rows + (size_t)tm[t] * kc);
      }
      copied.gen = n_c == 1 ? x->gen : 0;
      copied.a = x->a, copied.buf = buf, copied.lda = x->lda, copied.m0 = mc, copied.m1 = mce, copied.k = k;
    }
    for (int p = p0; p < p1; p++) {
      const uint16_t *b = (const uint16_t *)w->data + (size_t)p * w->k_pad * CPU_NR;
      for (int kb = 0; kb < nkb; kb++) {
        int k0 = kb * KCB, kc = k - k0 < KCB ? k - k0 : KCB;
        widen_panel_bf16(b, k0, kc, wb);
        const float *apk = buf + (size_t)k0 * rows;
        /* the next block's weights (this panel's or the next one's), so that widening them does
         * not wait on memory */
        const char *nxt = (const char *)(b + (size_t)(k0 + kc) * CPU_NR);
        for (int t = 0; t < n_t; t++) {
          prefetch_share(nxt, KCB * CPU_NR * 2, t, n_t);
          tileb_f32[tm[t + 1] - tm[t]](apk + (size_t)tm[t] * kc, wb, kc, kb == 0, kb == nkb - 1,
                                       cs + (size_t)tm[t] * 32, w, e, mc + tm[t], p);
        }
      }
    }
  }
  return 1;
}

FN void gemm_bf16_avx2(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0, int p1,
                       const gemm_epilogue *e) {
  if (m1 <= m0 || p1 <= p0) return;
  /* one or two rows: widening each weight vector in registers for them beats storing and reloading
   * it (1 x 3072 x 1024: 0.30 against 0.40 ms, weights in cache; 3 rows: 0.52 against 0.42) */
  if (m1 - m0 > 2 && w->k_pad > 0 && gemm_bf16_blocked_avx2(x, w, m0, m1, p0, p1, e)) return;
  gemm_bf16_avx2_rows(x, w, m0, m1, p0, p1, e);
}

/* int8, one row at a time (the fallback of gemm_i8_avx2 when the per-thread buffer cannot be had):
 * each 32-bit lane of the packed panel holds one column's 4 k values; widen to 16 bits and
 * multiply-add pairs, keeping two partial sums per column until the end. */
static __attribute__((target(ISA2))) void gemm_i8_avx2_rows(const gemm_input *x, const packed_matrix *w, int m0, int m1,
                                                            int p0, int p1, const gemm_epilogue *e) {
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
      epilogue_row8(w, e, m, p, y[0], y[1], y[2], y[3]);
    }
  }
}

/* ---- int8 GEMM on widened copies, k-blocked (the fp32 blocked GEMM's loop order) ----
 * On AVX2 the multiply is vpmaddwd (16-bit pairs -> 32-bit sums; 2 per cycle on Zen 3, as many as
 * vpmaddubsw, bench/cpu/peak.c), so every int8 value has to be widened to 16 bits first. Widening
 * each weight vector in the inner loop (gemm_i8_avx2_rows) costs as much as the multiply-add it
 * feeds, so here both sides are widened once into the per-thread buffer and the inner loop is one
 * vpbroadcastd, vpmaddwd and vpaddd per product vector, all from L1:
 *   weights: each k block (KCB8 x 32 values) of the panel -> [kc / 2][32][2] s16, the two k of a
 *            32-bit lane being one column's (k even, k odd) pair (16 KiB: stays in L1 while every
 *            row tile of the chunk runs over it);
 *   rows:    u8 zero-extended to s16, [rows][KCB8] per k block (the row stride a compile-time
 *            constant), copied once per call like the fp32 rows (gemm_input.gen).
 * A tile of h <= 6 rows x 16 columns keeps 12 accumulators (one column per 32-bit lane, no fold at
 * the end), 2 weight vectors and the broadcast pair in the 16 ymm registers; partial sums wait in a
 * [rows][32] int32 buffer between k blocks. Integer sums are exact in any order (|sum| <=
 * k_pad * 255 * 127 < 2^31 for k_pad < 66000), so each output's int32 is the one the row kernel and
 * the scalar oracle get, and the fp32 epilogue below is theirs: the same bits. */
#define KCB8 256 /* k per block: 256 x 32 widened weights = 16 KiB */
#define MCH8 192 /* most rows per chunk */

/* rows [0, h) x k [k0, k0 + kc) of u8 a (row stride lda) -> dst [h][KCB8] s16 (kc a multiple of 4) */
INL void packa_i8_avx2(const int h, const uint8_t *a, size_t lda, int k0, int kc, int16_t *dst) {
  for (int r = 0; r < h; r++) {
    const uint8_t *src = a + (size_t)r * lda + k0;
    int16_t *d = dst + (size_t)r * KCB8;
    int j = 0;
    for (; j + 16 <= kc; j += 16)
      _mm256_storeu_si256((__m256i *)(void *)(d + j), _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(src + j))));
    for (; j < kc; j++) d[j] = src[j];
  }
}

/* k [k0, k0 + kc) of a packed int8 panel b ([k_pad / 4][32][4]) -> dst [kc / 2][32][2] s16: per 8
 * columns, the 32 bytes of one k quad reordered in each 128-bit lane to (k0 k1 of 4 columns | k2
 * k3 of 4 columns), the 64-bit halves gathered (k0 k1 of 8 columns | k2 k3 of 8 columns), each
 * half sign-extended. */
INL void packb_i8_avx2(const int8_t *b, int k0, int kc, int16_t *dst) {
  const __m256i sh = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0, 1, 4, 5, 8, 9, 12, 13,
                                      2, 3, 6, 7, 10, 11, 14, 15);
  const int8_t *src = b + (size_t)k0 * CPU_NR;
  for (int q = 0; q < kc / 4; q++)
    for (int g = 0; g < 4; g++) {
      __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(src + (size_t)q * 128 + 32 * g));
      v = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(v, sh), 0xd8); /* qwords 0 2 1 3 */
      _mm256_storeu_si256((__m256i *)(void *)(dst + (size_t)(2 * q) * 64 + 16 * g), _mm256_cvtepi8_epi16(_mm256_castsi256_si128(v)));
      _mm256_storeu_si256((__m256i *)(void *)(dst + (size_t)(2 * q + 1) * 64 + 16 * g),
                          _mm256_cvtepi8_epi16(_mm256_extracti128_si256(v, 1)));
    }
}

/* cs (h rows x 16 columns, rows 32 int32 apart) += ap (h rows of KCB8 s16) * bw (kc / 2 pairs of
 * [32][2] s16, already offset to the half panel); first: start from zero. */
INL void mkb_i8_avx2(const int h, const int16_t *ap, const int16_t *bw, int kc, int first, int32_t *cs) {
  __m256i c[2 * MR2];
  if (first) {
#pragma GCC unroll 6
    for (int r = 0; r < h; r++) c[2 * r] = c[2 * r + 1] = _mm256_setzero_si256();
  } else {
#pragma GCC unroll 6
    for (int r = 0; r < h; r++) {
      c[2 * r] = _mm256_loadu_si256((const __m256i *)(const void *)(cs + 32 * r));
      c[2 * r + 1] = _mm256_loadu_si256((const __m256i *)(const void *)(cs + 32 * r + 8));
    }
  }
#pragma GCC unroll 2
  for (int j = 0; j < kc; j += 2, bw += 64) {
    __m256i b0 = _mm256_loadu_si256((const __m256i *)(const void *)bw);
    __m256i b1 = _mm256_loadu_si256((const __m256i *)(const void *)(bw + 16));
#pragma GCC unroll 6
    for (int r = 0; r < h; r++) {
      int32_t pair;
      memcpy(&pair, ap + (size_t)r * KCB8 + j, sizeof pair);
      __m256i av = _mm256_set1_epi32(pair);
      c[2 * r] = _mm256_add_epi32(c[2 * r], _mm256_madd_epi16(av, b0));
      c[2 * r + 1] = _mm256_add_epi32(c[2 * r + 1], _mm256_madd_epi16(av, b1));
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < h; r++) {
    _mm256_storeu_si256((__m256i *)(void *)(cs + 32 * r), c[2 * r]);
    _mm256_storeu_si256((__m256i *)(void *)(cs + 32 * r + 8), c[2 * r + 1]);
  }
}

/* The int32 sums of one row (32 columns of panel p) -> fp32, (float)(sum - colsum) * (row scale *
 * column scale) lane by lane: the row kernel's and the scalar oracle's expression (vcvtdq2ps rounds
 * to nearest as the C conversion does), then the epilogue. */
INL void epilogue_i8_row(const gemm_input *x, const packed_matrix *w, const gemm_epilogue *e, int m, int p,
                         const int32_t *tot) {
  __m256 y[4], rs = _mm256_set1_ps(x->row_scale[m]);
  const int col = p * CPU_NR;
  for (int i = 0; i < 4; i++) {
    __m256i d = _mm256_sub_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(tot + 8 * i)),
                                 _mm256_loadu_si256((const __m256i *)(const void *)(w->colsum + col + 8 * i)));
    y[i] = _mm256_mul_ps(_mm256_cvtepi32_ps(d), _mm256_mul_ps(rs, _mm256_loadu_ps(w->scale + col + 8 * i)));
  }
  epilogue_row8(w, e, m, p, y[0], y[1], y[2], y[3]);
}

#define TILEB_I8(H)                                                                                    \
  FN void tileb_i8_##H(const int16_t *ap, const int16_t *bw, int kc, int first, int last, int32_t *cs,  \
                       const gemm_input *x, const packed_matrix *w, const gemm_epilogue *e, int m, int p) { \
    mkb_i8_avx2(H, ap, bw, kc, first, cs);                                                             \
    mkb_i8_avx2(H, ap, bw + 32, kc, first, cs + 16);                                                   \
    if (last)                                                                                          \
      for (int r = 0; r < H; r++) epilogue_i8_row(x, w, e, m + r, p, cs + 32 * r);                     \
  }                                                                                                    \
  FN void packa_i8_##H(const uint8_t *a, size_t lda, int k0, int kc, int16_t *dst) {                   \
    packa_i8_avx2(H, a, lda, k0, kc, dst);                                                             \
  }
TILEB_I8(1) TILEB_I8(2) TILEB_I8(3) TILEB_I8(4) TILEB_I8(5) TILEB_I8(6)
typedef void (*tileb_i8_fn)(const int16_t *, const int16_t *, int, int, int, int32_t *, const gemm_input *,
                            const packed_matrix *, const gemm_epilogue *, int, int);
typedef void (*packa_i8_fn)(const uint8_t *, size_t, int, int, int16_t *);
static const tileb_i8_fn tileb_i8[MR2 + 1] = {NULL, tileb_i8_1, tileb_i8_2, tileb_i8_3, tileb_i8_4, tileb_i8_5, tileb_i8_6};
static const packa_i8_fn packa_i8[MR2 + 1] = {NULL, packa_i8_1, packa_i8_2, packa_i8_3, packa_i8_4, packa_i8_5, packa_i8_6};
FN void packb_i8(const int8_t *b, int k0, int kc, int16_t *dst) { packb_i8_avx2(b, k0, kc, dst); }

/* Returns 0 (nothing done) when the per-thread buffer cannot be had. */
static int gemm_i8_blocked_avx2(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0, int p1,
                                const gemm_epilogue *e) {
  const int k = w->k_pad, nkb = (k + KCB8 - 1) / KCB8;
  int n_c = (m1 - m0 + MCH8 - 1) / MCH8, chunk = (m1 - m0 + n_c - 1) / n_c;
  /* bytes: widened rows (chunk x nkb x KCB8 s16), one widened weight block, the partial sums */
  size_t rows_b = (size_t)chunk * nkb * KCB8 * 2, wb_b = (size_t)KCB8 * CPU_NR * 2, cs_b = (size_t)chunk * 32 * 4;
  float *buf = cpu_thread_scratch((rows_b + wb_b + cs_b) / sizeof(float) + 16);
  if (!buf) return 0;
  int16_t *arows = (int16_t *)(void *)buf, *bw = (int16_t *)(void *)((char *)buf + rows_b);
  int32_t *cs = (int32_t *)(void *)((char *)buf + rows_b + wb_b);
  const uint8_t *a = (const uint8_t *)x->a;
  for (int mc = m0; mc < m1; mc += chunk) {
    int mce = mc + chunk < m1 ? mc + chunk : m1, rows = mce - mc;
    int n_t = (rows + MR2 - 1) / MR2, tm[MCH8 / MR2 + 2];
    tm[0] = 0;
    for (int t = 0; t < n_t; t++) tm[t + 1] = tm[t] + (rows - tm[t] + (n_t - t) - 1) / (n_t - t);
    /* k block kb of tile t at arows + (kb * rows + tm[t]) * KCB8 */
    int have = n_c == 1 && x->gen && copied.gen == x->gen && copied.a == x->a && copied.buf == buf &&
               copied.lda == x->lda && copied.m0 == mc && copied.m1 == mce && copied.k == k && copied.fmt == WF_I8;
    if (!have) {
      for (int kb = 0; kb < nkb; kb++) {
        int k0 = kb * KCB8, kc = k - k0 < KCB8 ? k - k0 : KCB8;
        for (int t = 0; t < n_t; t++)
          packa_i8[tm[t + 1] - tm[t]](a + (size_t)(mc + tm[t]) * x->lda, (size_t)x->lda, k0, kc,
                                      arows + ((size_t)kb * rows + tm[t]) * KCB8);
      }
      copied.gen = n_c == 1 ? x->gen : 0;
      copied.a = x->a, copied.buf = buf, copied.lda = x->lda, copied.m0 = mc, copied.m1 = mce, copied.k = k;
      copied.fmt = WF_I8;
    }
    for (int p = p0; p < p1; p++) {
      const int8_t *b = (const int8_t *)w->data + (size_t)p * w->k_pad * CPU_NR;
      for (int kb = 0; kb < nkb; kb++) {
        int k0 = kb * KCB8, kc = k - k0 < KCB8 ? k - k0 : KCB8;
        packb_i8(b, k0, kc, bw);
        const int16_t *apk = arows + (size_t)kb * rows * KCB8;
        for (int t = 0; t < n_t; t++)
          tileb_i8[tm[t + 1] - tm[t]](apk + (size_t)tm[t] * KCB8, bw, kc, kb == 0, kb == nkb - 1, cs + (size_t)tm[t] * 32,
                                      x, w, e, mc + tm[t], p);
      }
    }
  }
  return 1;
}

FN void gemm_i8_avx2(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0, int p1,
                     const gemm_epilogue *e) {
  if (m1 <= m0 || p1 <= p0) return;
  if (w->k_pad > 0 && gemm_i8_blocked_avx2(x, w, m0, m1, p0, p1, e)) return;
  gemm_i8_avx2_rows(x, w, m0, m1, p0, p1, e);
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

/* u8 quantisation of one row (kernels.h int8_grid / int8_level), 8 values at a time: the same
 * levels as the scalar kernel. The max skips NaNs as fmaxf does (vmaxps returns its second operand
 * when one is NaN); vcvtps2dq rounds to nearest even as nearbyintf does, and turns NaN (and the
 * out-of-range) into INT_MIN, which the clamp makes -127, the scalar kernel's level for NaN. */
FN float quantize_row_avx2(const float *x, int n, int n_pad, uint8_t *q) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 vmx = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= n; i += 8) vmx = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + i), absmask), vmx);
  float st[8], mx = 0.0f;
  _mm256_storeu_ps(st, vmx);
  for (int j = 0; j < 8; j++) mx = fmaxf(mx, st[j]);
  for (; i < n; i++) mx = fmaxf(mx, fabsf(x[i]));
  float s = mx > 0.0f ? mx / 127.0f : 1.0f, inv = 1.0f / s;
  const __m256 vinv = _mm256_set1_ps(inv);
  const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127), off = _mm256_set1_epi32(128);
  /* the low byte of each 32-bit lane to the first 4 bytes of its 128-bit half */
  const __m256i gather = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12, -1,
                                          -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  for (i = 0; i + 8 <= n; i += 8) {
    __m256i v = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i), vinv));
    v = _mm256_add_epi32(_mm256_min_epi32(_mm256_max_epi32(v, lo), hi), off);
    v = _mm256_shuffle_epi8(v, gather);
    __m128i b = _mm_unpacklo_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64((__m128i *)(void *)(q + i), b);
  }
  for (; i < n; i++) q[i] = (uint8_t)((int)int8_level(x[i], inv) + 128);
  for (i = n; i < n_pad; i++) q[i] = 128;
  return s;
}

/* fp32 -> bf16, 8 at a time (v8_to_bf16), scalar tail */
FN void to_bf16_avx2(const float *x, int n, uint16_t *y) {
  int i = 0;
  for (; i + 8 <= n; i += 8) _mm_storeu_si128((__m128i *)(void *)(y + i), v8_to_bf16(_mm256_loadu_ps(x + i)));
  for (; i < n; i++) y[i] = f32_to_bf16_rne(x[i]);
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

/* ---- attention ----
 * The AVX-512 kernel's scheme on 16 ymm registers: qb queries per block (6 for fp32, 4 for bf16),
 * one online-softmax step per KB2 keys. Scores are computed 16 keys at a time (qb x 2
 * accumulators), the softmax runs on the stored scores, and P V runs per chunk of W ymm (8 W
 * columns) of the head with qb x W
 * accumulators, the running outputs kept in scratch between key blocks.
 * bf16 (attention_bf16, the kernels.h layouts): AVX2 has no bf16 dot product, so k and v pairs
 * are widened in registers as the bf16 GEMM does (bf16_even / bf16_odd), the block's queries
 * once into scratch (bf16x8), and every product and the probabilities stay fp32. */
#define QB2 6 /* most queries per block: 6 for fp32 (12 accumulators), 4 for bf16 (its odd-k vectors) */
#define KB2 256 /* keys per softmax step: a query's max, sum and rescale once per step (64-key
                     steps measured slower: BENCHMARKS.md, "Attention in longer softmax steps") */

/* Scores of qb queries (q: fp32 rows of dh) against 16 keys j0 .. j0 + n - 1 (n <= 16) into pb
 * [qb][KB2]; keys from kt (fp32) or, with bf16, from the kb pairs. */
INL void scores16_avx2(const attn_args *a, const int bf16, const int qb, const float *q, int nq, int j0, int n,
                        float *pb) {
  const int t = a->t, dh = a->dh;
  __m256 s[QB2][2];
  #pragma GCC unroll 6
  for (int qi = 0; qi < qb; qi++) s[qi][0] = s[qi][1] = _mm256_setzero_ps();
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane);
  __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(n - 8), lane);
  for (int d = 0; d < dh; d += 1 + bf16) {
    __m256 k0, k1, k0o = _mm256_setzero_ps(), k1o = _mm256_setzero_ps();
    if (bf16) { /* 16 keys' (k[d], k[d + 1]) pairs */
      const int *krow = (const int *)(const void *)(a->kb + attn_bf16_kb_index(t, d / 2, j0));
      __m256i r0 = n == 16 ? _mm256_loadu_si256((const __m256i *)krow) : _mm256_maskload_epi32(krow, m0);
      __m256i r1 = n == 16 ? _mm256_loadu_si256((const __m256i *)(krow + 8)) : _mm256_maskload_epi32(krow + 8, m1);
      k0 = bf16_even(r0), k1 = bf16_even(r1), k0o = bf16_odd(r0), k1o = bf16_odd(r1);
    } else {
      const float *krow = a->kt + (size_t)d * t + j0;
      k0 = n == 16 ? _mm256_loadu_ps(krow) : _mm256_maskload_ps(krow, m0);
      k1 = n == 16 ? _mm256_loadu_ps(krow + 8) : _mm256_maskload_ps(krow + 8, m1);
    }
    #pragma GCC unroll 6
    for (int qi = 0; qi < qb; qi++) {
      const float *qr = q + (size_t)(qi < nq ? qi : 0) * dh + d;
      __m256 qv = _mm256_broadcast_ss(qr);
      s[qi][0] = _mm256_fmadd_ps(qv, k0, s[qi][0]);
      s[qi][1] = _mm256_fmadd_ps(qv, k1, s[qi][1]);
      if (bf16) {
        qv = _mm256_broadcast_ss(qr + 1);
        s[qi][0] = _mm256_fmadd_ps(qv, k0o, s[qi][0]);
        s[qi][1] = _mm256_fmadd_ps(qv, k1o, s[qi][1]);
      }
    }
  }
  #pragma GCC unroll 6
  for (int qi = 0; qi < qb; qi++) {
    _mm256_storeu_ps(pb + qi * KB2, s[qi][0]);
    _mm256_storeu_ps(pb + qi * KB2 + 8, s[qi][1]);
  }
}

/* acc[qb][dh] += P V over the block's nk keys from j0 (even with bf16), columns [dc, dc + 8 W). */
INL void pv_avx2(const attn_args *a, const int bf16, const int qb, const float *pbuf, int j0, int nk, int dc,
                 const int W, float *accb) {
  const int dh = a->dh;
  __m256 acc[QB2][2];
  #pragma GCC unroll 6
  for (int qi = 0; qi < qb; qi++)
    #pragma GCC unroll 4
    for (int w = 0; w < W; w++) acc[qi][w] = _mm256_loadu_ps(accb + qi * dh + dc + 8 * w);
  /* bf16: keys in pairs; an odd nk's extra key has probability 0 (the softmax zeroes whole vectors
   * past the visible keys) and, past the row, the zero v[T] */
  for (int j = 0; j < nk; j += 1 + bf16) {
    __m256 vv[2], vo[2];
    #pragma GCC unroll 4
    for (int w = 0; w < W; w++) {
      if (bf16) {
        __m256i r = _mm256_loadu_si256((const __m256i *)(a->vb + attn_bf16_vb_index(dh, j0 + j, dc + 8 * w)));
        vv[w] = bf16_even(r), vo[w] = bf16_odd(r);
      } else {
        vv[w] = _mm256_loadu_ps(a->v + (size_t)(j0 + j) * dh + dc + 8 * w);
      }
    }
    #pragma GCC unroll 6
    for (int qi = 0; qi < qb; qi++) {
      __m256 pv = _mm256_broadcast_ss(pbuf + qi * KB2 + j);
      #pragma GCC unroll 4
      for (int w = 0; w < W; w++) acc[qi][w] = _mm256_fmadd_ps(pv, vv[w], acc[qi][w]);
      if (bf16) {
        pv = _mm256_broadcast_ss(pbuf + qi * KB2 + j + 1);
        #pragma GCC unroll 4
        for (int w = 0; w < W; w++) acc[qi][w] = _mm256_fmadd_ps(pv, vo[w], acc[qi][w]);
      }
    }
  }
  #pragma GCC unroll 6
  for (int qi = 0; qi < qb; qi++)
    #pragma GCC unroll 4
    for (int w = 0; w < W; w++) _mm256_storeu_ps(accb + qi * dh + dc + 8 * w, acc[qi][w]);
}

INL void attn_block_avx2(const attn_args *a, int q0, int nq, const int W, const int bf16, const int qb) {
  const int dh = a->dh;
  int lo[QB2] = {0}, hi[QB2] = {0}, ulo, uhi;
  attn_block_ranges(a, q0, nq, lo, hi, &ulo, &uhi);
  if (bf16) ulo &= ~1; /* key blocks cover whole vb pairs */
  float *pbuf = a->scratch; /* [qb][KB2] scores, then probabilities */
  float *accb = a->scratch + qb * KB2; /* [qb][dh] output accumulators */
  float mrun[QB2], lrun[QB2];
  for (int qi = 0; qi < qb; qi++) {
    mrun[qi] = -INFINITY;
    lrun[qi] = 0.0f;
    for (int d = 0; d < dh; d += 8) _mm256_storeu_ps(accb + qi * dh + d, _mm256_setzero_ps());
  }
  const float *q;
  if (bf16) { /* the block's queries widened to fp32 [nq][dh] */
    float *qw = accb + qb * dh;
    for (int i = 0; i < nq * dh; i += 8) _mm256_storeu_ps(qw + i, bf16x8(a->qb + (size_t)q0 * dh + i));
    q = qw;
  } else {
    q = a->q + (size_t)q0 * dh;
  }
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int j0 = ulo; j0 <= uhi; j0 += KB2) {
    int nk = uhi + 1 - j0 < KB2 ? uhi + 1 - j0 : KB2;
    for (int c0 = 0; c0 < nk; c0 += 16) scores16_avx2(a, bf16, qb, q, nq, j0 + c0, nk - c0 < 16 ? nk - c0 : 16, pbuf + c0);
    for (int qi = 0; qi < qb; qi++) {
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
    for (int dc = 0; dc < dh; dc += 8 * W) pv_avx2(a, bf16, qb, pbuf, j0, nk, dc, W, accb);
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

/* dh a multiple of 8 up to 64 (the accumulators in scratch hold qb x 64); others: scalar. */
INL void attention_blocks_avx2(const attn_args *a, const int bf16) {
  /* scratch (cpu_attention_scratch): fp32 6 x KB2 scores + 6 x 64 accumulators; bf16 4 x (KB2 + 64 + 64) */
  const int qb = bf16 ? 4 : QB2;
  assert(cpu_attention_scratch(a->t) >= (size_t)(bf16 ? 4 * (KB2 + 64 + 64) : QB2 * (KB2 + 64)));
  for (int i = a->i0; i < a->i1; i += qb) {
    int nq = a->i1 - i < qb ? a->i1 - i : qb;
    if (a->dh % 16 == 0) attn_block_avx2(a, i, nq, 2, bf16, qb);
    else attn_block_avx2(a, i, nq, 1, bf16, qb);
  }
}
FN void attention_avx2(const attn_args *a) {
  if (a->dh % 8 != 0 || a->dh > 64) cpu_attention_scalar(a);
  else attention_blocks_avx2(a, 0);
}
FN void attention_bf16_avx2(const attn_args *a) {
  if (a->dh % 8 != 0 || a->dh > 64) cpu_attention_bf16_scalar(a);
  else attention_blocks_avx2(a, 1);
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
    t.quantize_row = quantize_row_avx2;
    t.to_bf16 = to_bf16_avx2;
    t.rope = rope_avx2;
    t.attention = attention_avx2;
    t.attention_bf16 = attention_bf16_avx2;
    table = t; /* idempotent: every caller writes the same bytes */
  }
  return &table;
}

#else
const cpu_kernels *cpu_kernels_avx2(void) { return NULL; }
#endif
