/*
 * kernels_avx512.c: AVX-512 kernels (F/BW/VL/DQ + BF16 + VNNI), compiled with per-function target
 * attributes so the binary still runs on any x86-64; the table is only handed out when CPUID says
 * the CPU and OS support all of them.
 *
 * GEMM microkernel: MR (<= 12; fp32: MRF <= 14, on copied activation tiles) activation rows x one
 * 32-column panel, 2 MR zmm accumulators; the activation element (fp32), pair (bf16) or quad (u8)
 * of each row is broadcast and multiplied into the panel's two vectors with FMA / vdpbf16ps /
 * vpdpbusd. Rows are walked in chunks that
 * stay in L2 while each weight panel streams from L2 once per chunk row-tile. Every output's
 * reduction runs over k in one fixed order, so a row's result does not depend on its batch mates
 * or on how the work was split.
 */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "backend/cpu/kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define ISA512 "avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vnni,fma,avx2"
#define FN static __attribute__((target(ISA512)))
#define INL static inline __attribute__((target(ISA512), always_inline))

#define MR 12

#define KINL INL
#include "backend/cpu/kernels_avx512_math.h"

/* Rows per L2 chunk so that chunk rows x k_pad activation bytes stay near 512 KiB. */
static int chunk_rows(int k_pad, int elem) {
  int r = (512 * 1024) / (k_pad * elem);
  r = r / MR * MR;
  if (r < MR) r = MR;
  if (r > 20 * MR) r = 20 * MR;
  return r;
}

/* ---- fp32 ---- */

/* c[0..1] += av * (b0, b1): one row of a 32-column panel step */
INL void fma2(__m512 av, __m512 b0, __m512 b1, __m512 *c) {
  c[0] = _mm512_fmadd_ps(av, b0, c[0]);
  c[1] = _mm512_fmadd_ps(av, b1, c[1]);
}

INL void mk_f32(const int mr, const float *a, int lda, const float *b, int k, __m512 *c) {
#pragma GCC unroll 12
  for (int r = 0; r < mr; r++) c[2 * r] = c[2 * r + 1] = _mm512_setzero_ps();
  for (int kk = 0; kk < k; kk++) {
    __m512 b0 = _mm512_load_ps(b + (size_t)kk * 32), b1 = _mm512_load_ps(b + (size_t)kk * 32 + 16);
#pragma GCC unroll 12
    for (int r = 0; r < mr; r++) fma2(_mm512_set1_ps(a[(size_t)r * lda + kk]), b0, b1, c + 2 * r);
  }
}

/* A row tile read in place: tile_FMT_N runs microkernel mk_FMT on rows m .. m + N - 1 (ELEM
 * activations and weights, KLEN steps a column) of panel p, then each row's epilogue. */
#define TILE_ANY(FMT, ELEM, KLEN, N)                                                      \
  FN void tile_##FMT##_##N(const gemm_input *x, const packed_matrix *w, int m, int p,     \
                           const gemm_epilogue *e) {                                      \
    __m512 c[2 * MR];                                                                     \
    const ELEM *a = (const ELEM *)x->a + (size_t)m * x->lda;                              \
    const ELEM *b = (const ELEM *)w->data + (size_t)p * w->k_pad * CPU_NR;                \
    mk_##FMT(N, a, x->lda, b, KLEN, c);                                                   \
    for (int r = 0; r < N; r++) epilogue_row(w, e, m + r, p, c[2 * r], c[2 * r + 1]);     \
  }
#define TILE_F32(N) TILE_ANY(f32, float, w->k, N)

/* fp32 on copied activations (what BLIS and oneDNN do): each tile's rows are copied once per
 * call into a per-thread buffer as [k / 16][mr][16] (16-float slices of the rows, slice by slice),
 * so the microkernel broadcasts from mr consecutive cache lines per 16 k instead of mr rows lda
 * apart, which alias in the same L1 sets when lda is a multiple of 1 KiB (ModernBERT's 1024 /
 * 2624 -> 4 KiB / 10 KiB strides) and outrun the prefetchers. The copy is plain 64-byte moves.
 * Same FMA order per output as mk_f32: k from 0 to K-1 on one accumulator. MRF rows x 32 columns:
 * 2 MRF zmm accumulators, the panel's two vectors and one broadcast. */
#define MRF 14
#define PF_B 2048 /* floats ahead (64 k rows of the panel) that the weight stream is prefetched */

/* rows [0, mr) x k of a (row stride lda) -> dst[k / 16][mr][16] (the last slice k % 16 wide) */
INL void pack_tile_f32(const int mr, const float *a, int lda, int k, float *dst) {
  int kk = 0;
  for (; kk + 16 <= k; kk += 16, dst += 16 * mr)
#pragma GCC unroll 14
    for (int r = 0; r < mr; r++) _mm512_storeu_ps(dst + 16 * r, _mm512_loadu_ps(a + (size_t)r * lda + kk));
  if (kk < k) {
    __mmask16 mk = tail_mask(k - kk);
#pragma GCC unroll 14
    for (int r = 0; r < mr; r++) _mm512_storeu_ps(dst + 16 * r, _mm512_maskz_loadu_ps(mk, a + (size_t)r * lda + kk));
  }
}

/* c[2r..2r+1] += a[r] * (b0, b1) for the mr rows of one k: a[r] at ap[16 r] (the copied layout) */
INL void fma_rows(const int mr, const float *ap, __m512 b0, __m512 b1, __m512 *c) {
#pragma GCC unroll 14
  for (int r = 0; r < mr; r++) fma2(_mm512_set1_ps(ap[16 * r]), b0, b1, c + 2 * r);
}

INL void mkp_f32(const int mr, const float *ap, const float *b, int k, __m512 *c) {
#pragma GCC unroll 14
  for (int r = 0; r < mr; r++) c[2 * r] = c[2 * r + 1] = _mm512_setzero_ps();
  for (int k0 = 0; k0 < k; k0 += 16, ap += 16 * mr) {
    int nj = k - k0 < 16 ? k - k0 : 16;
    const float *bk = b + (size_t)k0 * 32;
    for (int j = 0; j < nj; j++, bk += 32) {
      _mm_prefetch((const char *)(bk + PF_B), _MM_HINT_T0);
      _mm_prefetch((const char *)(bk + PF_B + 16), _MM_HINT_T0);
      fma_rows(mr, ap + j, _mm512_load_ps(bk), _mm512_load_ps(bk + 16), c);
    }
  }
}

/* A tile over copied rows: tilep_FMT_N runs microkernel mkp_FMT on N rows (CAP at most) of panel
 * p, whose elements are ELEM, KLEN of them a column; then each row's epilogue. */
#define TILEP_ANY(FMT, ELEM, KLEN, CAP, N)                                                \
  FN void tilep_##FMT##_##N(const float *ap, const packed_matrix *w, int m, int p,        \
                            const gemm_epilogue *e) {                                     \
    __m512 c[2 * CAP];                                                                    \
    const ELEM *b = (const ELEM *)w->data + (size_t)p * w->k_pad * CPU_NR;                \
    mkp_##FMT(N, ap, b, KLEN, c);                                                         \
    for (int r = 0; r < N; r++) epilogue_row(w, e, m + r, p, c[2 * r], c[2 * r + 1]);     \
  }
#define TILEP_F32(N)                                                                    \
  TILEP_ANY(f32, float, w->k, MRF, N)                                                     \
  FN void packt_f32_##N(const void *a, int lda, int k, float *dst) { pack_tile_f32(N, (const float *)a, lda, k, dst); }
#define ALL_TILESF(T) T(1) T(2) T(3) T(4) T(5) T(6) T(7) T(8) T(9) T(10) T(11) T(12) T(13) T(14)
ALL_TILESF(TILEP_F32)
typedef void (*tilep_fn)(const float *, const packed_matrix *, int, int, const gemm_epilogue *);
typedef void (*packt_fn)(const void *, int, int, float *);
static const tilep_fn tilep_f32[MRF + 1] = {NULL, tilep_f32_1, tilep_f32_2, tilep_f32_3, tilep_f32_4,
                                            tilep_f32_5, tilep_f32_6, tilep_f32_7, tilep_f32_8, tilep_f32_9,
                                            tilep_f32_10, tilep_f32_11, tilep_f32_12, tilep_f32_13, tilep_f32_14};
static const packt_fn packt_f32[MRF + 1] = {NULL, packt_f32_1, packt_f32_2, packt_f32_3, packt_f32_4,
                                            packt_f32_5, packt_f32_6, packt_f32_7, packt_f32_8, packt_f32_9,
                                            packt_f32_10, packt_f32_11, packt_f32_12, packt_f32_13, packt_f32_14};

/* Rows in chunks whose copy (chunk x k16 floats) stays near 512 KiB of L2 beside the weight panel;
 * per chunk: copy its tiles, then every panel over every tile. mr rows at most a tile; k values a
 * row are copied (k16 = k rounded up to 16 floats a copied row). Shared by the fp32 GEMM and the
 * bf16 one on FMA (below). Returns 0 (nothing done) when the buffer cannot be had. */
static int gemm_packed(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0, int p1,
                       const gemm_epilogue *e, const int mr, int k, size_t elem, const packt_fn *packt,
                       const tilep_fn *tilep) {
  int k16 = (k + 15) & ~15, chunk = (512 * 1024) / (k16 * 4) / mr * mr;
  if (chunk < mr) chunk = mr;
  if (chunk > 16 * mr) chunk = 16 * mr;
  { /* chunks of equal size (128 rows at most 126 a chunk: 2 x 64, not 126 + a 2-row chunk) */
    int n_c = (m1 - m0 + chunk - 1) / chunk;
    chunk = (m1 - m0 + n_c - 1) / n_c;
  }
  float *buf = cpu_thread_scratch((size_t)chunk * k16);
  if (!buf) return 0;
  for (int mc = m0; mc < m1; mc += chunk) {
    int mce = mc + chunk < m1 ? mc + chunk : m1;
    /* the chunk's rows in ceil(rows / mr) tiles of nearly equal height (64 rows: 4 x 13 + 12, not
     * 4 x 14 + an 8-row tile that runs at a fraction of the FMA rate) */
    int n_t = (mce - mc + mr - 1) / mr, tm[16 + 1]; /* chunk <= 16 mr: at most 16 tiles */
    tm[0] = mc;
    for (int t = 0; t < n_t; t++) tm[t + 1] = tm[t] + (mce - tm[t] + (n_t - t) - 1) / (n_t - t);
    for (int t = 0; t < n_t; t++)
      packt[tm[t + 1] - tm[t]]((const char *)x->a + (size_t)tm[t] * x->lda * elem, x->lda, k,
                               buf + (size_t)(tm[t] - mc) * k16);
    for (int p = p0; p < p1; p++)
      for (int t = 0; t < n_t; t++) tilep[tm[t + 1] - tm[t]](buf + (size_t)(tm[t] - mc) * k16, w, tm[t], p, e);
  }
  return 1;
}

static int gemm_f32_packed(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0, int p1,
                           const gemm_epilogue *e) {
  return gemm_packed(x, w, m0, m1, p0, p1, e, MRF, w->k, 4, packt_f32, tilep_f32);
}

/* ---- bf16 on FMA ----
 * Intel's AVX-512 BF16 cores (Cooper Lake to Emerald Rapids) issue vdpbf16ps zmm once per two
 * cycles: half the multiply-adds a cycle of their two FMA ports (BENCHMARKS.md, "Intel without
 * AMX"), so there the bf16 GEMM widens both operands to fp32 (exact: a bf16 value is an
 * fp32 with 16 zero low bits) and runs the fp32 microkernel's loop. The activation tile is widened
 * into the copied layout of gemm_f32_packed; the weight panel [k_pad / 2][32][2] is widened in
 * registers, a 32-bit lane holding one column's (k even, k odd) pair: the even value is the lane
 * shifted up 16 bits, the odd one the lane with its low half cleared. Each output is one FMA chain
 * over k = 0 .. k_pad - 1 from zero in k order (the AVX2 table's bf16 GEMM's chain, so the two
 * give the same bits; tests/cpu/test_kernels.c checks both against fmaf). MRW rows: 2 MRW
 * accumulators, two widened weight vectors, the mask and a broadcast fit the 32 zmm registers. */
#define MRW 13

/* rows [0, mr) x k of bf16 a (row stride lda) widened -> dst[k / 16][mr][16] (the last slice k % 16 wide) */
INL void pack_tile_bf16w(const int mr, const uint16_t *a, int lda, int k, float *dst) {
  for (int kk = 0; kk < k; kk += 16, dst += 16 * mr) {
    __mmask16 mk = tail_mask(k - kk);
#pragma GCC unroll 13
    for (int r = 0; r < mr; r++) {
      __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk, a + (size_t)r * lda + kk));
      _mm512_storeu_ps(dst + 16 * r, _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)));
    }
  }
}

INL void mkp_bf16w(const int mr, const float *ap, const uint16_t *b, int k, __m512 *c) {
  const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
#pragma GCC unroll 13
  for (int r = 0; r < mr; r++) c[2 * r] = c[2 * r + 1] = _mm512_setzero_ps();
  for (int k0 = 0; k0 < k; k0 += 16, ap += 16 * mr) {
    int nj = k - k0 < 16 ? k - k0 : 16; /* even: k is k_pad */
    const uint16_t *bk = b + (size_t)k0 * 32;
    for (int j = 0; j < nj; j += 2, bk += 64) {
      _mm_prefetch((const char *)(bk + PF_B), _MM_HINT_T0);
      _mm_prefetch((const char *)(bk + PF_B + 32), _MM_HINT_T0);
      __m512i p0 = _mm512_load_si512(bk), p1 = _mm512_load_si512(bk + 32);
      fma_rows(mr, ap + j, _mm512_castsi512_ps(_mm512_slli_epi32(p0, 16)), _mm512_castsi512_ps(_mm512_slli_epi32(p1, 16)), c);
      fma_rows(mr, ap + j + 1, _mm512_castsi512_ps(_mm512_and_si512(p0, hi)), _mm512_castsi512_ps(_mm512_and_si512(p1, hi)), c);
    }
  }
}

#define TILEP_BF16W(N)                                                                  \
  TILEP_ANY(bf16w, uint16_t, w->k_pad, MRW, N)                                            \
  FN void packt_bf16w_##N(const void *a, int lda, int k, float *dst) {                    \
    pack_tile_bf16w(N, (const uint16_t *)a, lda, k, dst);                                 \
  }
#define ALL_TILESW(T) T(1) T(2) T(3) T(4) T(5) T(6) T(7) T(8) T(9) T(10) T(11) T(12) T(13)
ALL_TILESW(TILEP_BF16W)
static const tilep_fn tilep_bf16w[MRW + 1] = {NULL,           tilep_bf16w_1,  tilep_bf16w_2,  tilep_bf16w_3,
                                              tilep_bf16w_4,  tilep_bf16w_5,  tilep_bf16w_6,  tilep_bf16w_7,
                                              tilep_bf16w_8,  tilep_bf16w_9,  tilep_bf16w_10, tilep_bf16w_11,
                                              tilep_bf16w_12, tilep_bf16w_13};
static const packt_fn packt_bf16w[MRW + 1] = {NULL,           packt_bf16w_1,  packt_bf16w_2,  packt_bf16w_3,
                                                  packt_bf16w_4,  packt_bf16w_5,  packt_bf16w_6,  packt_bf16w_7,
                                                  packt_bf16w_8,  packt_bf16w_9,  packt_bf16w_10, packt_bf16w_11,
                                                  packt_bf16w_12, packt_bf16w_13};

/* ---- bf16 ---- */

INL void mk_bf16(const int mr, const uint16_t *a, int lda, const uint16_t *b, int kp2, __m512 *c) {
#pragma GCC unroll 12
  for (int r = 0; r < mr; r++) c[2 * r] = c[2 * r + 1] = _mm512_setzero_ps();
  for (int kk = 0; kk < kp2; kk++) {
    __m512bh b0 = (__m512bh)_mm512_load_si512(b + (size_t)kk * 64);
    __m512bh b1 = (__m512bh)_mm512_load_si512(b + (size_t)kk * 64 + 32);
#pragma GCC unroll 12
    for (int r = 0; r < mr; r++) {
      int32_t pair;
      memcpy(&pair, a + (size_t)r * lda + 2 * kk, 4);
      __m512bh av = (__m512bh)_mm512_set1_epi32(pair);
      c[2 * r] = _mm512_dpbf16_ps(c[2 * r], av, b0);
      c[2 * r + 1] = _mm512_dpbf16_ps(c[2 * r + 1], av, b1);
    }
  }
}

#define TILE_BF16(N) TILE_ANY(bf16, uint16_t, w->k_pad / 2, N)

/* ---- int8 (u8 activations x s8 weights) ---- */

/* acc += u8(a) . s8(b) per 32-bit lane. GCC 12 compiles the _mm512_dpbusd_epi32 intrinsic in this
 * microkernel with a register copy and a stack store of every accumulator per instruction, which
 * halved the int8 GEMM's speed; the instruction itself runs as fast as vdpbf16ps on Zen 4 (and
 * does twice the work), so GCC gets it as inline assembly. */
INL __m512i dpbusd(__m512i acc, __m512i a, __m512i b) {
#if defined(__clang__)
  return _mm512_dpbusd_epi32(acc, a, b);
#else
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
#endif
}

INL void mk_i8(const int mr, const uint8_t *a, int lda, const int8_t *b, int kp4, __m512i *c) {
#pragma GCC unroll 12
  for (int r = 0; r < mr; r++) c[2 * r] = c[2 * r + 1] = _mm512_setzero_si512();
  for (int kk = 0; kk < kp4; kk++) {
    __m512i b0 = _mm512_load_si512(b + (size_t)kk * 128);
    __m512i b1 = _mm512_load_si512(b + (size_t)kk * 128 + 64);
#pragma GCC unroll 12
    for (int r = 0; r < mr; r++) {
      int32_t quad;
      memcpy(&quad, a + (size_t)r * lda + 4 * kk, 4);
      __m512i av = _mm512_set1_epi32(quad);
      c[2 * r] = dpbusd(c[2 * r], av, b0);
      c[2 * r + 1] = dpbusd(c[2 * r + 1], av, b1);
    }
  }
}

#define TILE_I8(N)                                                                           \
  FN void tile_i8_##N(const gemm_input *x, const packed_matrix *w, int m, int p,               \
                      const gemm_epilogue *e) {                                                \
    __m512i c[2 * MR];                                                                         \
    const uint8_t *a = (const uint8_t *)x->a + (size_t)m * x->lda;                             \
    const int8_t *b = (const int8_t *)w->data + (size_t)p * w->k_pad * CPU_NR;                 \
    mk_i8(N, a, x->lda, b, w->k_pad / 4, c);                                                   \
    int col = p * CPU_NR;                                                                      \
    __m512i cs0 = _mm512_loadu_si512(w->colsum + col), cs1 = _mm512_loadu_si512(w->colsum + col + 16); \
    __m512 s0 = _mm512_loadu_ps(w->scale + col), s1 = _mm512_loadu_ps(w->scale + col + 16);    \
    for (int r = 0; r < N; r++) {                                                              \
      __m512 rs = _mm512_set1_ps(x->row_scale[m + r]);                                         \
      __m512 y0 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(c[2 * r], cs0)),           \
                                _mm512_mul_ps(rs, s0));                                        \
      __m512 y1 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(c[2 * r + 1], cs1)),       \
                                _mm512_mul_ps(rs, s1));                                        \
      epilogue_row(w, e, m + r, p, y0, y1);                                                    \
    }                                                                                          \
  }

#define ALL_TILES(T) T(1) T(2) T(3) T(4) T(5) T(6) T(7) T(8) T(9) T(10) T(11) T(12)
ALL_TILES(TILE_F32)
ALL_TILES(TILE_BF16)
ALL_TILES(TILE_I8)

typedef void (*tile_fn)(const gemm_input *, const packed_matrix *, int, int, const gemm_epilogue *);
#define TILE_TABLE(pfx)                                                                        \
  static const tile_fn pfx##_tiles[MR + 1] = {NULL,      pfx##_1,  pfx##_2,  pfx##_3, pfx##_4, \
                                              pfx##_5,   pfx##_6,  pfx##_7,  pfx##_8, pfx##_9, \
                                              pfx##_10,  pfx##_11, pfx##_12};
TILE_TABLE(tile_f32)
TILE_TABLE(tile_bf16)
TILE_TABLE(tile_i8)

static void gemm_driver(const tile_fn *tiles, int elem, const gemm_input *x, const packed_matrix *w,
                        int m0, int m1, int p0, int p1, const gemm_epilogue *e) {
  int chunk = chunk_rows(w->k_pad, elem);
  for (int mc = m0; mc < m1; mc += chunk) {
    int mce = mc + chunk < m1 ? mc + chunk : m1;
    for (int p = p0; p < p1; p++)
      for (int m = mc; m < mce; m += MR) {
        int mr = mce - m < MR ? mce - m : MR;
        tiles[mr](x, w, m, p, e);
      }
  }
}

static void gemm_f32_avx512(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0,
                            int p1, const gemm_epilogue *e) {
  if (m1 <= m0 || p1 <= p0 || gemm_f32_packed(x, w, m0, m1, p0, p1, e)) return;
  gemm_driver(tile_f32_tiles, 4, x, w, m0, m1, p0, p1, e);
}
static void gemm_bf16_avx512(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0,
                             int p1, const gemm_epilogue *e) {
  gemm_driver(tile_bf16_tiles, 2, x, w, m0, m1, p0, p1, e);
}
/* Where no copy buffer can be had: the same chains, the activations widened as they are read. */
INL void mk_bf16w(const int mr, const uint16_t *a, int lda, const uint16_t *b, int kp2, __m512 *c) {
  const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
#pragma GCC unroll 12
  for (int r = 0; r < mr; r++) c[2 * r] = c[2 * r + 1] = _mm512_setzero_ps();
  for (int kk = 0; kk < kp2; kk++) {
    __m512i p0 = _mm512_load_si512(b + (size_t)kk * 64), p1 = _mm512_load_si512(b + (size_t)kk * 64 + 32);
    for (int h = 0; h < 2; h++) {
      __m512 b0 = _mm512_castsi512_ps(h ? _mm512_and_si512(p0, hi) : _mm512_slli_epi32(p0, 16));
      __m512 b1 = _mm512_castsi512_ps(h ? _mm512_and_si512(p1, hi) : _mm512_slli_epi32(p1, 16));
#pragma GCC unroll 12
      for (int r = 0; r < mr; r++)
        fma2(_mm512_castsi512_ps(_mm512_set1_epi32((int)((uint32_t)a[(size_t)r * lda + 2 * kk + h] << 16))), b0,
             b1, c + 2 * r);
    }
  }
}

#define TILE_BF16W(N) TILE_ANY(bf16w, uint16_t, w->k_pad / 2, N)
ALL_TILES(TILE_BF16W)
TILE_TABLE(tile_bf16w)

static void gemm_bf16_fma_avx512(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0,
                                 int p1, const gemm_epilogue *e) {
  if (m1 <= m0 || p1 <= p0 || gemm_packed(x, w, m0, m1, p0, p1, e, MRW, w->k_pad, 2, packt_bf16w, tilep_bf16w)) return;
  gemm_driver(tile_bf16w_tiles, 2, x, w, m0, m1, p0, p1, e);
}
static void gemm_i8_avx512(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0,
                           int p1, const gemm_epilogue *e) {
  gemm_driver(tile_i8_tiles, 1, x, w, m0, m1, p0, p1, e);
}

/* ---- row kernels ---- */

FN void layernorm_avx512(const float *x, int n, const float *w, const float *b, float eps,
                         float *y32, uint16_t *y16) {
  __m512 s = _mm512_setzero_ps();
  for (int i = 0; i < n; i += 16) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(tail_mask(n - i), x + i));
  float mean = _mm512_reduce_add_ps(s) / (float)n;
  __m512 vm = _mm512_set1_ps(mean), v = _mm512_setzero_ps();
  for (int i = 0; i < n; i += 16) {
    __mmask16 mk = tail_mask(n - i);
    __m512 d = _mm512_maskz_sub_ps(mk, _mm512_maskz_loadu_ps(mk, x + i), vm);
    v = _mm512_fmadd_ps(d, d, v);
  }
  float rstd = 1.0f / sqrtf(_mm512_reduce_add_ps(v) / (float)n + eps);
  __m512 vr = _mm512_set1_ps(rstd);
  for (int i = 0; i < n; i += 16) {
    __mmask16 mk = tail_mask(n - i);
    __m512 y = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, x + i), vm), vr);
    if (w) y = _mm512_mul_ps(y, _mm512_maskz_loadu_ps(mk, w + i));
    if (b) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(mk, b + i));
    if (y32) _mm512_mask_storeu_ps(y32 + i, mk, y);
    else store_bf16(y16 + i, y, mk);
  }
}

/* The max skips NaNs as the scalar kernel's fmaxf does: vmaxps returns its second operand when one
 * is NaN, and that is the running max. */
FN float quantize_row_avx512(const float *x, int n, int n_pad, uint8_t *q) {
  __m512 mx = _mm512_setzero_ps();
  for (int i = 0; i < n; i += 16) mx = _mm512_max_ps(_mm512_abs_ps(_mm512_maskz_loadu_ps(tail_mask(n - i), x + i)), mx);
  float m = _mm512_reduce_max_ps(mx);
  float s = m > 0.0f ? m / 127.0f : 1.0f;
  __m512 inv = _mm512_set1_ps(1.0f / s);
  for (int i = 0; i < n; i += 16) {
    __mmask16 mk = tail_mask(n - i);
    __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(mk, x + i), inv));
    v = _mm512_min_epi32(_mm512_max_epi32(v, _mm512_set1_epi32(-127)), _mm512_set1_epi32(127));
    v = _mm512_add_epi32(v, _mm512_set1_epi32(128));
    _mm512_mask_cvtepi32_storeu_epi8(q + i, mk, v);
  }
  for (int i = n; i < n_pad; i++) q[i] = 128;
  return s;
}

FN void to_bf16_avx512(const float *x, int n, uint16_t *y) {
  for (int i = 0; i < n; i += 16) {
    __mmask16 mk = tail_mask(n - i);
    store_bf16(y + i, _mm512_maskz_loadu_ps(mk, x + i), mk);
  }
}

FN void rope_avx512(float *x, int dh, const float *cs, float scale) {
  int half = dh / 2;
  __m512 sc = _mm512_set1_ps(scale);
  for (int h = 0; h < half; h += 16) {
    __mmask16 mk = tail_mask(half - h);
    __m512 a = _mm512_maskz_loadu_ps(mk, x + h), b = _mm512_maskz_loadu_ps(mk, x + half + h);
    __m512 c = _mm512_maskz_loadu_ps(mk, cs + h), s = _mm512_maskz_loadu_ps(mk, cs + half + h);
    __m512 lo = _mm512_fmsub_ps(a, c, _mm512_mul_ps(b, s));
    __m512 hi = _mm512_fmadd_ps(b, c, _mm512_mul_ps(a, s));
    _mm512_mask_storeu_ps(x + h, mk, _mm512_mul_ps(lo, sc));
    _mm512_mask_storeu_ps(x + half + h, mk, _mm512_mul_ps(hi, sc));
  }
}

/* ---- attention ---- */

#define QB 4   /* queries per block */
#define KB 64  /* keys per score sub-block: QB x 4 accumulators */
#define KS 512 /* keys per online-softmax step: their scores wait in scratch, so the max, sum and
                  accumulator rescale of a query are paid once per KS keys, not once per KB */

/* Online-softmax state of one block of QB queries (nq real ones; the other slots see no key). Both
 * attention kernels share it: per query its key range, running max and sum, and fp32 output
 * accumulators [QB][64] kept in scratch between steps. Scratch (cpu_attention_scratch): scores
 * [QB][KS] fp32, probabilities [QB][KS] bf16 (bf16 kernel), then the accumulators. */
typedef struct attn_state {
  int nq, lo[QB], hi[QB], ulo, uhi;
  float m[QB], l[QB];
  float *acc;
} attn_state;

#define ATTN_P16(a) ((uint16_t *)((a)->scratch + QB * KS))
#define ATTN_ACC(a) ((a)->scratch + QB * KS + QB * KS / 2)

INL void attn_state_init(attn_state *st, const attn_args *a, int q0, int nq) {
  st->nq = nq;
  attn_block_ranges(a, q0, nq, st->lo, st->hi, &st->ulo, &st->uhi);
  st->acc = ATTN_ACC(a);
  #pragma GCC unroll 4
  for (int qi = 0; qi < QB; qi++) {
    st->m[qi] = -INFINITY;
    st->l[qi] = 0.0f;
    #pragma GCC unroll 4
    for (int d = 0; d < 4; d++) _mm512_storeu_ps(st->acc + qi * 64 + 16 * d, _mm512_setzero_ps());
  }
}

/* Softmax step of query slot qi over its scores sc[0, nk) of the step starting at key j0: the
 * probabilities exp(s - m) of the keys the query may see (0 elsewhere) go to p32 or, rounded, to
 * p16 (one of them NULL; ceil(nk / 16) whole vectors), the running sum and max move on and the
 * query's accumulators are rescaled. Only the vectors holding keys the query sees are read. */
INL void attn_softmax_step(attn_state *st, int qi, int j0, int nk, const float *sc, int nd, float *p32,
                           uint16_t *p16) {
  const int nvec = (nk + 15) / 16;
  int a0 = qi < st->nq ? st->lo[qi] - j0 : 0, a1 = qi < st->nq ? st->hi[qi] + 1 - j0 : 0;
  if (a0 < 0) a0 = 0;
  if (a1 > nk) a1 = nk;
  if (a1 <= a0) {
    if (p16) memset(p16, 0, (size_t)nvec * 16 * sizeof(uint16_t));
    else memset(p32, 0, (size_t)nvec * 16 * sizeof(float));
    return;
  }
  const int c0 = a0 / 16, c1 = (a1 - 1) / 16;
  __m512 bm = _mm512_mask_max_ps(_mm512_set1_ps(-INFINITY), range_mask(a0 - 16 * c0, a1 - 16 * c0), _mm512_set1_ps(-INFINITY),
                                 _mm512_loadu_ps(sc + 16 * c0));
  for (int c = c0 + 1; c < c1; c++) bm = _mm512_max_ps(bm, _mm512_loadu_ps(sc + 16 * c));
  if (c1 > c0) bm = _mm512_mask_max_ps(bm, range_mask(a0 - 16 * c1, a1 - 16 * c1), bm, _mm512_loadu_ps(sc + 16 * c1));
  float bmax = _mm512_reduce_max_ps(bm);
  float mnew = bmax > st->m[qi] ? bmax : st->m[qi];
  float corr = expf(st->m[qi] - mnew);
  __m512 vmn = _mm512_set1_ps(mnew), sum = _mm512_setzero_ps(), zero = _mm512_setzero_ps();
  for (int c = 0; c < c0; c++) {
    if (p16) _mm256_storeu_si256((__m256i *)(p16 + 16 * c), _mm256_setzero_si256());
    else _mm512_storeu_ps(p32 + 16 * c, zero);
  }
  for (int c = c0; c <= c1; c++) {
    __mmask16 vm = c == c0 || c == c1 ? range_mask(a0 - 16 * c, a1 - 16 * c) : 0xffff;
    __m512 pv = _mm512_maskz_mov_ps(vm, v_exp(_mm512_sub_ps(_mm512_loadu_ps(sc + 16 * c), vmn)));
    sum = _mm512_add_ps(sum, pv);
    if (p16) store_bf16(p16 + 16 * c, pv, 0xffff);
    else _mm512_storeu_ps(p32 + 16 * c, pv);
  }
  for (int c = c1 + 1; c < nvec; c++) {
    if (p16) _mm256_storeu_si256((__m256i *)(p16 + 16 * c), _mm256_setzero_si256());
    else _mm512_storeu_ps(p32 + 16 * c, zero);
  }
  st->l[qi] = st->l[qi] * corr + _mm512_reduce_add_ps(sum);
  st->m[qi] = mnew;
  if (corr != 1.0f) {
    __m512 vc = _mm512_set1_ps(corr);
    float *acc = st->acc + qi * 64;
    #pragma GCC unroll 4
    for (int d = 0; d < nd; d++) _mm512_storeu_ps(acc + 16 * d, _mm512_mul_ps(_mm512_loadu_ps(acc + 16 * d), vc));
  }
}

/* Output rows of the block's real queries: accumulators / sum, fp32 or bf16. */
INL void attn_store(const attn_args *a, const attn_state *st, int q0, const int nd) {
  #pragma GCC unroll 4
  for (int qi = 0; qi < st->nq; qi++) {
    __m512 inv = _mm512_set1_ps(1.0f / st->l[qi]);
    size_t row = (size_t)(q0 + qi - a->i0) * a->ldo;
    #pragma GCC unroll 4
    for (int d = 0; d < nd; d++) {
      __m512 y = _mm512_mul_ps(_mm512_loadu_ps(st->acc + qi * 64 + 16 * d), inv);
      if (a->out_f32) _mm512_storeu_ps(a->out_f32 + row + 16 * d, y);
      else store_bf16(a->out_bf16 + row + 16 * d, y, 0xffff);
    }
  }
}

/* The masks of a sub-block of nb <= KB keys: one per 16-key vector, nv = ceil(nb / 16) of them. */
INL int subblock_masks(int nb, __mmask16 *km) {
  #pragma GCC unroll 4
  for (int c = 0; c < 4; c++) km[c] = nb - 16 * c > 0 ? tail_mask(nb - 16 * c) : 0;
  return (nb + 15) / 16;
}

/* Scores of QB queries (rows of q, nq real) against nv * 16 keys starting at kt (row stride t)
 * into sc[qi * KS + 0 .. 16 nv). */
INL void scores_f32(const float *q, int nq, int dh, const float *kt, int t, const __mmask16 *km, float *sc,
                    const int nv) {
  __m512 s[QB][4];
  #pragma GCC unroll 4
  for (int qi = 0; qi < QB; qi++)
    #pragma GCC unroll 4
    for (int c = 0; c < nv; c++) s[qi][c] = _mm512_setzero_ps();
  for (int d = 0; d < dh; d++) {
    const float *krow = kt + (size_t)d * t;
    __m512 k[4];
    #pragma GCC unroll 4
    for (int c = 0; c < nv; c++) k[c] = _mm512_maskz_loadu_ps(km[c], krow + 16 * c);
    #pragma GCC unroll 4
    for (int qi = 0; qi < QB; qi++) {
      __m512 qv = _mm512_set1_ps(q[(size_t)(qi < nq ? qi : 0) * dh + d]);
      #pragma GCC unroll 4
      for (int c = 0; c < nv; c++) s[qi][c] = _mm512_fmadd_ps(qv, k[c], s[qi][c]);
    }
  }
  #pragma GCC unroll 4
  for (int qi = 0; qi < QB; qi++)
    #pragma GCC unroll 4
    for (int c = 0; c < nv; c++) _mm512_storeu_ps(sc + qi * KS + 16 * c, s[qi][c]);
}

/* Queries [q0, q0 + nq) (nq <= QB) against the key range each may see: online softmax over steps
 * of up to KS keys of the union range; nd = dh / 16 vectors per head row. Per step three phases,
 * which keep the live registers under 32: the scores in KB-key sub-blocks (QB x 4 accumulators;
 * only the 16-key vectors a sub-block has: a window's last one is short), each query's softmax on
 * the stored scores, then P V into accumulators held in registers for the whole step. */
INL void attn_block(const attn_args *a, int q0, int nq, const int nd) {
  const int t = a->t, dh = a->dh;
  float *pbuf = a->scratch; /* [QB][KS] scores, then probabilities */
  attn_state st;
  attn_state_init(&st, a, q0, nq);
  const float *q = a->q + (size_t)q0 * dh;
  for (int j0 = st.ulo; j0 <= st.uhi; j0 += KS) {
    int nk = st.uhi + 1 - j0 < KS ? st.uhi + 1 - j0 : KS;
    for (int b = 0; b < nk; b += KB) {
      __mmask16 km[4];
      int nv = subblock_masks(nk - b < KB ? nk - b : KB, km);
      switch (nv) {
        case 1: scores_f32(q, nq, dh, a->kt + j0 + b, t, km, pbuf + b, 1); break;
        case 2: scores_f32(q, nq, dh, a->kt + j0 + b, t, km, pbuf + b, 2); break;
        case 3: scores_f32(q, nq, dh, a->kt + j0 + b, t, km, pbuf + b, 3); break;
        default: scores_f32(q, nq, dh, a->kt + j0 + b, t, km, pbuf + b, 4); break;
      }
    }
    #pragma GCC unroll 4
    for (int qi = 0; qi < QB; qi++) attn_softmax_step(&st, qi, j0, nk, pbuf + qi * KS, nd, pbuf + qi * KS, NULL);
    __m512 acc[QB][4];
    #pragma GCC unroll 4
    for (int qi = 0; qi < QB; qi++)
      #pragma GCC unroll 4
      for (int d = 0; d < nd; d++) acc[qi][d] = _mm512_loadu_ps(st.acc + qi * 64 + 16 * d);
    for (int j = 0; j < nk; j++) {
      const float *vr = a->v + (size_t)(j0 + j) * dh;
      __m512 vv[4];
      #pragma GCC unroll 4
      for (int d = 0; d < nd; d++) vv[d] = _mm512_loadu_ps(vr + 16 * d);
      #pragma GCC unroll 4
      for (int qi = 0; qi < QB; qi++) {
        __m512 pv = _mm512_set1_ps(pbuf[qi * KS + j]);
        #pragma GCC unroll 4
        for (int d = 0; d < nd; d++) acc[qi][d] = _mm512_fmadd_ps(pv, vv[d], acc[qi][d]);
      }
    }
    #pragma GCC unroll 4
    for (int qi = 0; qi < QB; qi++)
      #pragma GCC unroll 4
      for (int d = 0; d < nd; d++) _mm512_storeu_ps(st.acc + qi * 64 + 16 * d, acc[qi][d]);
  }
  attn_store(a, &st, q0, nd);
}

FN void attention_avx512(const attn_args *a) {
  if (a->dh % 16 != 0 || a->dh > 64) {
    cpu_attention_scalar(a);
    return;
  }
  assert(cpu_attention_scratch(a->t) >= (size_t)(QB * KS + QB * KS / 2 + QB * 64));
  for (int i = a->i0; i < a->i1; i += QB) {
    int nq = a->i1 - i < QB ? a->i1 - i : QB;
    switch (a->dh / 16) {
      case 1: attn_block(a, i, nq, 1); break;
      case 2: attn_block(a, i, nq, 2); break;
      case 3: attn_block(a, i, nq, 3); break;
      default: attn_block(a, i, nq, 4); break;
    }
  }
}

/* ---- bf16 attention ---- */

/* The same blocking as attn_block with vdpbf16ps for both products: scores take the query's bf16
 * pair (q[2p], q[2p+1]) broadcast against 16 keys' pairs (kb), P V the pair of probabilities of keys
 * (2jp, 2jp+1), rounded to bf16, against 16 columns of the key pair's v rows (vb). Steps start
 * at an even key so they cover whole vb pairs; keys a query may not see get probability 0 (and
 * the zero v[T] of an odd T pads the last pair). */
/* Scores of QB queries (rows of q, nq real) against nv * 16 keys into sc[qi * KS + 0 .. 16 nv);
 * kb points at the sub-block's first key of the kb layout (row stride t). */
INL void scores_bf16(const uint16_t *q, int nq, int dh, const int32_t *kb, int t, const __mmask16 *km,
                     float *sc, const int nv) {
  __m512 s[QB][4];
  #pragma GCC unroll 4
  for (int qi = 0; qi < QB; qi++)
    #pragma GCC unroll 4
    for (int c = 0; c < nv; c++) s[qi][c] = _mm512_setzero_ps();
  for (int p = 0; p < dh / 2; p++) {
    const int32_t *krow = kb + (size_t)p * t;
    __m512bh k[4];
    #pragma GCC unroll 4
    for (int c = 0; c < nv; c++) k[c] = (__m512bh)_mm512_maskz_loadu_epi32(km[c], krow + 16 * c);
    #pragma GCC unroll 4
    for (int qi = 0; qi < QB; qi++) {
      int32_t pair;
      memcpy(&pair, q + (size_t)(qi < nq ? qi : 0) * dh + 2 * p, 4);
      __m512bh qv = (__m512bh)_mm512_set1_epi32(pair);
      #pragma GCC unroll 4
      for (int c = 0; c < nv; c++) s[qi][c] = _mm512_dpbf16_ps(s[qi][c], qv, k[c]);
    }
  }
  #pragma GCC unroll 4
  for (int qi = 0; qi < QB; qi++)
    #pragma GCC unroll 4
    for (int c = 0; c < nv; c++) _mm512_storeu_ps(sc + qi * KS + 16 * c, s[qi][c]);
}

INL void attn_block_bf16(const attn_args *a, int q0, int nq, const int nd) {
  const int t = a->t, dh = a->dh;
  float *pbuf = a->scratch;     /* [QB][KS] scores */
  uint16_t *p16 = ATTN_P16(a); /* [QB][KS] probabilities in bf16 */
  attn_state st;
  attn_state_init(&st, a, q0, nq);
  const uint16_t *q = a->qb + (size_t)q0 * dh;
  const int32_t *kb = (const int32_t *)(const void *)a->kb;
  for (int j0 = st.ulo & ~1; j0 <= st.uhi; j0 += KS) {
    int nk = st.uhi + 1 - j0 < KS ? st.uhi + 1 - j0 : KS;
    for (int b = 0; b < nk; b += KB) {
      __mmask16 km[4];
      int nv = subblock_masks(nk - b < KB ? nk - b : KB, km);
      switch (nv) {
        case 1: scores_bf16(q, nq, dh, kb + j0 + b, t, km, pbuf + b, 1); break;
        case 2: scores_bf16(q, nq, dh, kb + j0 + b, t, km, pbuf + b, 2); break;
        case 3: scores_bf16(q, nq, dh, kb + j0 + b, t, km, pbuf + b, 3); break;
        default: scores_bf16(q, nq, dh, kb + j0 + b, t, km, pbuf + b, 4); break;
      }
    }
    #pragma GCC unroll 4
    for (int qi = 0; qi < QB; qi++) attn_softmax_step(&st, qi, j0, nk, pbuf + qi * KS, nd, NULL, p16 + qi * KS);
    __m512 acc[QB][4];
    #pragma GCC unroll 4
    for (int qi = 0; qi < QB; qi++)
      #pragma GCC unroll 4
      for (int d = 0; d < nd; d++) acc[qi][d] = _mm512_loadu_ps(st.acc + qi * 64 + 16 * d);
    /* an odd nk (the last step) ends on a pair whose second key no query sees: its probability is
     * a stored 0 (nk odd is no multiple of 16, so its vector was written) */
    int npairs = (nk + 1) / 2;
    for (int jp = 0; jp < npairs; jp++) {
      const uint16_t *vr = a->vb + ((size_t)(j0 / 2 + jp) * dh) * 2;
      __m512bh vv[4];
      #pragma GCC unroll 4
      for (int d = 0; d < nd; d++) vv[d] = (__m512bh)_mm512_loadu_si512(vr + 32 * d);
      #pragma GCC unroll 4
      for (int qi = 0; qi < QB; qi++) {
        int32_t pair;
        memcpy(&pair, p16 + qi * KS + 2 * jp, 4);
        __m512bh pv = (__m512bh)_mm512_set1_epi32(pair);
        #pragma GCC unroll 4
        for (int d = 0; d < nd; d++) acc[qi][d] = _mm512_dpbf16_ps(acc[qi][d], pv, vv[d]);
      }
    }
    #pragma GCC unroll 4
    for (int qi = 0; qi < QB; qi++)
      #pragma GCC unroll 4
      for (int d = 0; d < nd; d++) _mm512_storeu_ps(st.acc + qi * 64 + 16 * d, acc[qi][d]);
  }
  attn_store(a, &st, q0, nd);
}

FN void attention_bf16_avx512(const attn_args *a) {
  if (a->dh % 16 != 0 || a->dh > 64) {
    cpu_attention_bf16_scalar(a);
    return;
  }
  assert(cpu_attention_scratch(a->t) >= (size_t)(QB * KS + QB * KS / 2 + QB * 64));
  for (int i = a->i0; i < a->i1; i += QB) {
    int nq = a->i1 - i < QB ? a->i1 - i : QB;
    switch (a->dh / 16) {
      case 1: attn_block_bf16(a, i, nq, 1); break;
      case 2: attn_block_bf16(a, i, nq, 2); break;
      case 3: attn_block_bf16(a, i, nq, 3); break;
      default: attn_block_bf16(a, i, nq, 4); break;
    }
  }
}

/* what both AVX-512 tables share: all but the bf16 GEMM and the bf16 dot products */
#define AVX512_COMMON                                                                      \
  .gemm_f32 = gemm_f32_avx512, .gemm_i8 = gemm_i8_avx512, .layernorm = layernorm_avx512,   \
  .quantize_row = quantize_row_avx512, .to_bf16 = to_bf16_avx512, .rope = rope_avx512,     \
  .attention = attention_avx512, .attention_bf16 = attention_bf16_avx512

static const cpu_kernels table = {.name = "avx512", .bf16_dot = 1, .gemm_bf16 = gemm_bf16_avx512, AVX512_COMMON};

/* The same table with the bf16 GEMM on FMA and no bf16 dot products (so bf16 / int8 models run
 * the fp32 attention): what Intel CPUs without AMX run (kernels_select.c). */
static const cpu_kernels table_fma = {.name = "avx512-fma", .bf16_dot = 0, .gemm_bf16 = gemm_bf16_fma_avx512,
                                      AVX512_COMMON};

const cpu_kernels *cpu_kernels_avx512(void) { return &table; }
const cpu_kernels *cpu_kernels_avx512_fma(void) { return &table_fma; }

#else
const cpu_kernels *cpu_kernels_avx512(void) { return NULL; }
const cpu_kernels *cpu_kernels_avx512_fma(void) { return NULL; }
#endif
