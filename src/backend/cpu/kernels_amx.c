/*
 * kernels_amx.c: GEMMs on Intel AMX tiles, and the plain-C model of the tile instructions the tests
 * run them on where the CPU has no AMX (kernels_amx.h). The tiling is kernels_amx_tiles.h,
 * instantiated twice below.
 *
 * Tile instructions are emitted as inline assembly (with "memory" clobbers, so the compiler orders
 * the buffers the tiles read and write around them; the compilers' intrinsics do not say that);
 * any assembler from binutils 2.36 / LLVM 12 on knows them. The epilogues of the AMX kernels use
 * AVX-512 (every AMX CPU has it), compiled with per-function target attributes as in
 * kernels_avx512.c. The OS hands out the tile data state only on request: the first call of
 * cpu_amx_hw() asks for it (arch_prctl ARCH_REQ_XCOMP_PERM, through cpu_amx_enable), and each
 * thread loads the tile configuration (ldtilecfg) before its first tile instruction.
 *
 * The emulation follows the pseudo-code of the Intel SDM: tdpbf16ps adds, for each output element
 * and each k pair in order, the product of the even elements, then of the odd ones, each rounded
 * to fp32 (nearest even); bf16 inputs and fp32 results that are denormal count as zero (the
 * instruction ignores MXCSR and flushes both). bf16 x bf16 products are exact in fp32, so the only
 * roundings are the additions. Whether the hardware rounds after each of the two additions or once
 * per pair is not documented; tests/cpu/test_amx.c reports how many outputs of the two differ and
 * holds both to the same bound. tdpbusd's 32-bit sums are exact (wrapping) in both.
 */
#include "backend/cpu/kernels_amx.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels.h"
#include "core/cpu_features.h"
#include "core/options.h"

/* ---- shared by both instantiations ---- */

/* Rows per chunk so that one chunk's activation rows (row_bytes each) stay near 1 MiB of L2 while
 * every weight panel passes over them; a multiple of 32, at least 32. */
static int amx_chunk_rows(int row_bytes) {
  int r = (1024 * 1024) / (row_bytes > 0 ? row_bytes : 1);
  r = r / 32 * 32;
  if (r < 32) r = 32;
  if (r > 384) r = 384;
  return r;
}

/* The weight panel a GEMM task reads after the current one is prefetched into L2 while the current
 * one's k steps run, a few lines a step (its lines over the steps, rounded up): a model's weights
 * do not stay in cache from one forward to the next, so without it the first row block's tile
 * loads of every panel waited on memory. Panel i starts i * stride bytes after panels; next < 0:
 * none. The next of panel p of a task's [p0, p1): p + 1, else, where another row chunk follows
 * (again), p0. */
typedef struct amx_prefetch {
  const char *at;
  int left, per_step;
} amx_prefetch;

static int amx_next_panel(int p, int p0, int p1, int again) { return p + 1 < p1 ? p + 1 : again ? p0 : -1; }

static amx_prefetch amx_prefetch_panel(const void *panels, size_t stride, size_t bytes, int next, int steps) {
  amx_prefetch pf = {NULL, 0, 0};
  if (next < 0 || steps <= 0) return pf;
  pf.at = (const char *)panels + (size_t)next * stride;
  pf.left = (int)(bytes / 64);
  pf.per_step = (pf.left + steps - 1) / steps;
  return pf;
}

/* The valid nr x nb bytes of a tile at src (row stride ld) into a zeroed 16 x 64 buffer. */
static void amx_copy_part(uint8_t *dst, const uint8_t *src, size_t ld, int nr, int nb) {
  memset(dst, 0, 1024);
  for (int r = 0; r < nr; r++) memcpy(dst + 64 * r, src + ld * r, (size_t)nb);
}

/* Scratch of the calling thread, kept between calls (grown when a call needs more) and freed when
 * the thread exits: a fresh allocation per call is an mmap and munmap of up to a few MiB per GEMM
 * task, whose page faults and TLB shootdowns cost more than the split-precision GEMM itself. Three
 * slots (the fp32 accumulator buffer of a kernel, the split parts, attention's scores) so one call
 * can hold two. */
typedef struct amx_scratch {
  void *p[3];
  size_t cap[3];
} amx_scratch;
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_key_ok;
static void scratch_free(void *v) {
  amx_scratch *s = v;
  free(s->p[0]);
  free(s->p[1]);
  free(s->p[2]);
  free(s);
}
static void scratch_init(void) { scratch_key_ok = pthread_key_create(&scratch_key, scratch_free) == 0; }
static _Thread_local int scratch_fail;
void cpu_amx_scratch_fail_for_tests(int on) { scratch_fail = on; }
static void *amx_scratch_get(int slot, size_t bytes) {
  pthread_once(&scratch_once, scratch_init);
  if (!scratch_key_ok || scratch_fail) return NULL;
  amx_scratch *s = pthread_getspecific(scratch_key);
  if (!s) {
    s = calloc(1, sizeof *s);
    if (!s || pthread_setspecific(scratch_key, s)) {
      free(s);
      return NULL;
    }
  }
  bytes = (bytes + 63) & ~(size_t)63;
  if (s->cap[slot] < bytes) {
    free(s->p[slot]);
    s->p[slot] = aligned_alloc(64, bytes);
    s->cap[slot] = s->p[slot] ? bytes : 0;
  }
  return s->p[slot];
}

static void split_row_c(const float *src, int n, int npad, uint16_t *hi, uint16_t *mid, uint16_t *lo) {
  for (int i = 0; i < npad; i++) cpu_split3(i < n ? src[i] : 0.0f, hi + i, mid + i, lo ? lo + i : NULL);
}
/* fp32 panel [k][32] -> parts in the bf16 panel order [kpp/2][32][2] */
static void split_panel_c(const float *src, int k, int kpp, uint16_t *hi, uint16_t *mid, uint16_t *lo) {
  for (int kk = 0; kk < kpp; kk++)
    for (int c = 0; c < CPU_NR; c++) {
      size_t o = (size_t)(kk >> 1) * CPU_NR * 2 + (size_t)c * 2 + (kk & 1);
      cpu_split3(kk < k ? src[(size_t)kk * CPU_NR + c] : 0.0f, hi + o, mid + o, lo ? lo + o : NULL);
    }
}

/* the split-precision GEMM's buffers: activation parts [rows_pad][kpp], weight parts [kpp/2][32][2] */
typedef struct amx_split_bufs {
  uint16_t *a[3];
  uint16_t *b[3];
} amx_split_bufs;

/* ---- the emulated tiles ---- */

typedef struct emu_tile {
  uint8_t d[16][64];
} emu_tile;
static _Thread_local emu_tile emu_tmm[8];

static void emu_load(int t, const void *p, size_t stride) {
  for (int r = 0; r < 16; r++) memcpy(emu_tmm[t].d[r], (const uint8_t *)p + stride * r, 64);
}
static void emu_store(int t, void *p, size_t stride) {
  for (int r = 0; r < 16; r++) memcpy((uint8_t *)p + stride * r, emu_tmm[t].d[r], 64);
}
static void emu_zero(int t) { memset(&emu_tmm[t], 0, sizeof(emu_tile)); }

/* denormal -> zero of the same sign (what fpclassify == FP_SUBNORMAL then copysignf gives), by the
 * exponent bits: the emulation runs this per product, and the test suites run whole forwards on it */
static inline float daz(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  if (!(u & 0x7f800000u)) u &= 0x80000000u;
  memcpy(&x, &u, 4);
  return x;
}
static inline float bf16_daz(const uint8_t *p) {
  uint16_t h;
  memcpy(&h, p, 2);
  return daz(bf16_to_f32(h));
}

static void emu_dpbf16(int c, int a, int b) {
  emu_tile *C = &emu_tmm[c], *A = &emu_tmm[a], *B = &emu_tmm[b];
  /* B's 16 k pairs x 16 columns as floats once (each is read by all 16 rows of A) */
  float bv[16][16][2];
  for (int k = 0; k < 16; k++)
    for (int n = 0; n < 16; n++) {
      bv[k][n][0] = bf16_daz(B->d[k] + 4 * n);
      bv[k][n][1] = bf16_daz(B->d[k] + 4 * n + 2);
    }
  for (int m = 0; m < 16; m++) {
    float tmp[16];
    memcpy(tmp, C->d[m], 64);
    for (int k = 0; k < 16; k++) {
      float a0 = bf16_daz(A->d[m] + 4 * k), a1 = bf16_daz(A->d[m] + 4 * k + 2);
      for (int n = 0; n < 16; n++) {
        float p0 = a0 * bv[k][n][0], p1 = a1 * bv[k][n][1]; /* exact (or flushed / overflowed as the hardware) */
        tmp[n] = daz(daz(tmp[n] + daz(p0)) + daz(p1));
      }
    }
    memcpy(C->d[m], tmp, 64);
  }
}

static void emu_dpbusd(int c, int a, int b) {
  emu_tile *C = &emu_tmm[c], *A = &emu_tmm[a], *B = &emu_tmm[b];
  for (int m = 0; m < 16; m++) {
    uint32_t tmp[16];
    memcpy(tmp, C->d[m], 64);
    for (int k = 0; k < 16; k++)
      for (int n = 0; n < 16; n++) {
        int32_t s = 0;
        for (int i = 0; i < 4; i++) s += (int32_t)A->d[m][4 * k + i] * (int32_t)(int8_t)B->d[k][4 * n + i];
        tmp[n] += (uint32_t)s;
      }
    memcpy(C->d[m], tmp, 64);
  }
}

static float gelu_erf_c(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

/* The scalar epilogue of one row's 32 panel results (as kernels_scalar.c applies it). */
static void epi_row_c(const packed_matrix *w, const gemm_epilogue *e, int m, int p, const float *acc) {
  int outs = w->geglu ? w->n / 2 : w->n, width = w->geglu ? CPU_NR / 2 : CPU_NR;
  for (int c = 0; c < width; c++) {
    int o = p * width + c;
    if (o >= outs) break;
    float y;
    if (w->geglu) {
      y = cpu_glu_act(w->glu_act, acc[c]) * acc[c + CPU_NR / 2];
    } else {
      y = acc[c] + (w->bias ? w->bias[o] : 0.0f);
      if (e->act == EPI_GELU) y = gelu_erf_c(y);
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
/* int8: y = (sum - colsum) * (row scale * column scale), in the AVX-512 kernel's order */
static void epi_row_i32_c(const gemm_input *x, const packed_matrix *w, const gemm_epilogue *e, int m, int p,
                          const int32_t *acc) {
  float y[CPU_NR];
  int col = p * CPU_NR;
  for (int c = 0; c < CPU_NR; c++)
    y[c] = (float)(int32_t)((uint32_t)acc[c] - (uint32_t)w->colsum[col + c]) * (x->row_scale[m] * w->scale[col + c]);
  epi_row_c(w, e, m, p, y);
}

/* Attention (kernels_amx_tiles.h): one query's probabilities over columns [c0, c1] of its scores
 * (wp columns; 0 elsewhere), exp(s - max) rounded to bf16; returns the sum of the rounded values. */
static float softmax_row_c(const float *s, int c0, int c1, int wp, uint16_t *p) {
  float mx = -INFINITY, sum = 0.0f;
  for (int c = c0; c <= c1; c++) mx = fmaxf(mx, s[c]);
  for (int c = 0; c < wp; c++) {
    if (c < c0 || c > c1) {
      p[c] = 0;
      continue;
    }
    p[c] = f32_to_bf16_rne(expf(s[c] - mx));
    sum += bf16_to_f32(p[c]);
  }
  return sum;
}
/* one query's 64 outputs acc * inv into fp32 or bf16 (one of o32 / o16 is NULL) */
static void attn_out_c(const float *acc, float inv, float *o32, uint16_t *o16) {
  for (int c = 0; c < 64; c++) {
    if (o32) o32[c] = acc[c] * inv;
    else o16[c] = f32_to_bf16_rne(acc[c] * inv);
  }
}

#define AMX_NAME(x) x##_emu
#define AMX_ATTR
#define AMX_SETUP() ((void)0)
#define T_ZERO(t) emu_zero(t)
#define T_LOAD(t, p, s) emu_load(t, p, s)
#define T_STORE(t, p, s) emu_store(t, p, s)
#define T_DPBF16(c, a, b) emu_dpbf16(c, a, b)
#define T_DPBUSD(c, a, b) emu_dpbusd(c, a, b)
#define AMX_EPI_F32(w, e, m, p, acc) epi_row_c(w, e, m, p, acc)
#define AMX_EPI_I32(x, w, e, m, p, acc) epi_row_i32_c(x, w, e, m, p, acc)
#define AMX_SPLIT_ROW split_row_c
#define AMX_SPLIT_PANEL split_panel_c
#define AMX_PREFETCH(p) ((void)(p))
#define AMX_SOFTMAX_ROW softmax_row_c
#define AMX_ATTN_OUT attn_out_c
#define AMX_ATTN_FALLBACK(a) cpu_attention_bf16_scalar(a)
#include "backend/cpu/kernels_amx_tiles.h"
#undef AMX_NAME
#undef AMX_ATTR
#undef AMX_SETUP
#undef T_ZERO
#undef T_LOAD
#undef T_STORE
#undef T_DPBF16
#undef T_DPBUSD
#undef AMX_EPI_F32
#undef AMX_EPI_I32
#undef AMX_SPLIT_ROW
#undef AMX_SPLIT_PANEL
#undef AMX_PREFETCH
#undef AMX_SOFTMAX_ROW
#undef AMX_ATTN_OUT
#undef AMX_ATTN_FALLBACK

static const cpu_amx_gemms emu_gemms = {"amx-emu", gemm_bf16_emu, gemm_i8_emu, gemm_f32x3_emu, gemm_f32x6_emu, gemm_f32x5_emu,
                                       attention_bf16_emu, split_rows_emu, split_panel_c};
const cpu_amx_gemms *cpu_amx_emu(void) { return &emu_gemms; }

/* The "amx-emu" table (LAYA_CPU_ISA=amx-emu, tests only; never picked by itself): the scalar table
 * with the amx table's fp32 GEMM choice on emulated tiles, so the backend's use of the split GEMM
 * (weight parts made at create, each call's rows split in a pool step before its tasks: cpu.c)
 * runs through whole forwards on machines without AMX (tests/cpu forward, tests/parity). Plain C
 * per tile element: tiny models only. bf16 and int8 stay the scalar ones. */
static cpu_kernels emu_table;
static pthread_once_t emu_table_once = PTHREAD_ONCE_INIT;
static void emu_table_build(void) {
  emu_table = cpu_kernels_scalar;
  emu_table.name = "amx-emu";
  const char *fp = laya_env_process()->amx_fp32;
  if (fp && !strcmp(fp, "avx512")) return; /* the FMA GEMM's stand-in: the scalar one, nothing split */
  emu_table.gemm_f32 = fp && !strcmp(fp, "x3") ? gemm_f32x3_emu : fp && !strcmp(fp, "x5") ? gemm_f32x5_emu : gemm_f32x6_emu;
  emu_table.gemm_rows[WF_F32] = 32;
  emu_table.split_rows_f32 = split_rows_emu;
  emu_table.split_panel_f32 = split_panel_c;
}
const cpu_kernels *cpu_kernels_amx_emu(void) {
  pthread_once(&emu_table_once, emu_table_build);
  return &emu_table;
}

/* ---- the AMX instantiation ---- */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && defined(__linux__)
#include <immintrin.h>

#define ISA_AMX "avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma,avx2"
#define FN_AMX static __attribute__((target(ISA_AMX)))
#define INL_AMX static inline __attribute__((target(ISA_AMX), always_inline))

/* palette 1; tiles 0..7 of 16 rows x 64 bytes (the layout of kernels_amx_tiles.h) */
typedef struct amx_tilecfg {
  uint8_t palette, start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} amx_tilecfg;

static _Thread_local int amx_configured;

static void amx_setup(void) {
  if (amx_configured) return;
  amx_tilecfg cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; t++) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  __asm__ volatile("ldtilecfg %0" ::"m"(cfg) : "memory");
  amx_configured = 1;
}

#define T_ZERO(t) __asm__ volatile("tilezero %%tmm" #t ::: "memory")
#define T_LOAD(t, p, s) __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(p), "r"((long)(s)) : "memory")
#define T_STORE(t, p, s) __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"(p), "r"((long)(s)) : "memory")
#define T_DPBF16(c, a, b) __asm__ volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::: "memory")
#define T_DPBUSD(c, a, b) __asm__ volatile("tdpbusd %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::: "memory")

/* exp / erf / the GeGLU activations and the epilogue: the AVX-512 table's own (one copy) */
#define KINL INL_AMX
#include "backend/cpu/kernels_avx512_math.h"

INL_AMX void epi_row_hw(const packed_matrix *w, const gemm_epilogue *e, int m, int p, const float *acc) {
  epilogue_row(w, e, m, p, _mm512_load_ps(acc), _mm512_load_ps(acc + 16));
}
INL_AMX void epi_row_i32_hw(const gemm_input *x, const packed_matrix *w, const gemm_epilogue *e, int m, int p,
                            const int32_t *acc) {
  int col = p * CPU_NR;
  __m512 rs = _mm512_set1_ps(x->row_scale[m]);
  __m512 y0 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_load_si512(acc), _mm512_loadu_si512(w->colsum + col))),
                            _mm512_mul_ps(rs, _mm512_loadu_ps(w->scale + col)));
  __m512 y1 = _mm512_mul_ps(
      _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_load_si512(acc + 16), _mm512_loadu_si512(w->colsum + col + 16))),
      _mm512_mul_ps(rs, _mm512_loadu_ps(w->scale + col + 16)));
  epilogue_row(w, e, m, p, y0, y1);
}

/* split3 on 16 lanes: the parts' fp32 bit patterns (low 16 bits zero) */
INL_AMX __m512i ax_rb(__m512i u) {
  __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)),
                               _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1)));
  return _mm512_and_si512(r, _mm512_set1_epi32((int)0xffff0000u));
}
INL_AMX void ax_split(__m512 x, __m512i *h, __m512i *m, __m512i *l) {
  *h = ax_rb(_mm512_castps_si512(x));
  __m512 r1 = _mm512_sub_ps(x, _mm512_castsi512_ps(*h));
  *m = ax_rb(_mm512_castps_si512(r1));
  __m512 r2 = _mm512_sub_ps(r1, _mm512_castsi512_ps(*m));
  *l = ax_rb(_mm512_castps_si512(r2));
}
FN_AMX void split_row_hw(const float *src, int n, int npad, uint16_t *hi, uint16_t *mid, uint16_t *lo) {
  for (int i = 0; i < npad; i += 16) {
    __mmask16 mk = tail_mask(n - i);
    __m512i h, m, l;
    ax_split(_mm512_maskz_loadu_ps(mk, src + i), &h, &m, &l);
    _mm256_storeu_si256((__m256i *)(hi + i), _mm512_cvtepi32_epi16(_mm512_srli_epi32(h, 16)));
    _mm256_storeu_si256((__m256i *)(mid + i), _mm512_cvtepi32_epi16(_mm512_srli_epi32(m, 16)));
    if (lo) _mm256_storeu_si256((__m256i *)(lo + i), _mm512_cvtepi32_epi16(_mm512_srli_epi32(l, 16)));
  }
}
/* pairs (k, k+1) of one column in one 32-bit lane: low half from row k, high half from row k+1 */
INL_AMX __m512i ax_pair(__m512i even, __m512i odd) { return _mm512_or_si512(_mm512_srli_epi32(even, 16), odd); }
FN_AMX void split_panel_hw(const float *src, int k, int kpp, uint16_t *hi, uint16_t *mid, uint16_t *lo) {
  for (int kk = 0; kk < kpp; kk += 2) {
    for (int half = 0; half < 2; half++) {
      __m512 x0 = kk < k ? _mm512_loadu_ps(src + (size_t)kk * CPU_NR + 16 * half) : _mm512_setzero_ps();
      __m512 x1 = kk + 1 < k ? _mm512_loadu_ps(src + (size_t)(kk + 1) * CPU_NR + 16 * half) : _mm512_setzero_ps();
      __m512i h0, m0, l0, h1, m1, l1;
      ax_split(x0, &h0, &m0, &l0);
      ax_split(x1, &h1, &m1, &l1);
      size_t o = (size_t)(kk >> 1) * CPU_NR * 2 + 32 * half;
      _mm512_storeu_si512(hi + o, ax_pair(h0, h1));
      _mm512_storeu_si512(mid + o, ax_pair(m0, m1));
      if (lo) _mm512_storeu_si512(lo + o, ax_pair(l0, l1));
    }
  }
}

/* softmax_row_c / attn_out_c on 16 lanes */
FN_AMX float softmax_row_hw(const float *s, int c0, int c1, int wp, uint16_t *p) {
  __m512 mx = _mm512_set1_ps(-INFINITY);
  for (int c = c0 & ~15; c <= c1; c += 16) {
    __mmask16 mk = range_mask(c0 - c, c1 + 1 - c);
    mx = _mm512_mask_max_ps(mx, mk, mx, _mm512_maskz_loadu_ps(mk, s + c));
  }
  __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(mx)), sum = _mm512_setzero_ps();
  for (int c = 0; c < wp; c += 16) {
    __mmask16 mk = range_mask(c0 - c, c1 + 1 - c);
    __m512 e = mk ? _mm512_maskz_mov_ps(mk, v_exp(_mm512_sub_ps(_mm512_loadu_ps(s + c), m))) : _mm512_setzero_ps();
    __m256i h = (__m256i)_mm512_cvtneps_pbh(e);
    _mm256_storeu_si256((__m256i *)(p + c), h);
    sum = _mm512_add_ps(sum, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
  }
  return _mm512_reduce_add_ps(sum);
}
FN_AMX void attn_out_hw(const float *acc, float inv, float *o32, uint16_t *o16) {
  __m512 v = _mm512_set1_ps(inv);
  for (int c = 0; c < 64; c += 16) {
    __m512 y = _mm512_mul_ps(_mm512_loadu_ps(acc + c), v);
    if (o32) _mm512_storeu_ps(o32 + c, y);
    else _mm256_storeu_si256((__m256i *)(o16 + c), (__m256i)_mm512_cvtneps_pbh(y));
  }
}
static void attn_fallback_hw(const attn_args *a) {
  const cpu_kernels *k = cpu_kernels_avx512();
  if (k) k->attention_bf16(a);
  else cpu_attention_bf16_scalar(a);
}

#define AMX_NAME(x) x##_hw
#define AMX_ATTR __attribute__((target(ISA_AMX)))
#define AMX_SETUP() amx_setup()
#define AMX_EPI_F32(w, e, m, p, acc) epi_row_hw(w, e, m, p, acc)
#define AMX_EPI_I32(x, w, e, m, p, acc) epi_row_i32_hw(x, w, e, m, p, acc)
#define AMX_SPLIT_ROW split_row_hw
#define AMX_SPLIT_PANEL split_panel_hw
#define AMX_PREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T1)
#define AMX_SOFTMAX_ROW softmax_row_hw
#define AMX_ATTN_OUT attn_out_hw
#define AMX_ATTN_FALLBACK(a) attn_fallback_hw(a)
#include "backend/cpu/kernels_amx_tiles.h"

static const cpu_amx_gemms hw_gemms = {"amx", gemm_bf16_hw, gemm_i8_hw, gemm_f32x3_hw, gemm_f32x6_hw, gemm_f32x5_hw,
                                      attention_bf16_hw, split_rows_hw, split_panel_hw};

static int hw_ok;
static pthread_once_t hw_once = PTHREAD_ONCE_INIT;
static void hw_probe(void) {
  const cpu_features *f = cpu_features_get();
  hw_ok = f->amx_tile && f->amx_bf16 && f->amx_int8 && f->avx512f && f->avx512bw && f->avx512vl &&
          f->avx512dq && f->avx512_bf16 && cpu_amx_enable();
}
const cpu_amx_gemms *cpu_amx_hw(void) {
  pthread_once(&hw_once, hw_probe);
  return hw_ok ? &hw_gemms : NULL;
}
#else
const cpu_amx_gemms *cpu_amx_hw(void) { return NULL; }
#endif

/* ---- the "amx" table ---- */

static cpu_kernels amx_table;
static const cpu_kernels *amx_table_ptr;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static void table_build(void) {
  const cpu_amx_gemms *g = cpu_amx_hw();
  const cpu_kernels *base = cpu_kernels_avx512();
  const cpu_features *f = cpu_features_get();
  if (!g || !base || !f->avx512_vnni) return;
  amx_table = *base;
  amx_table.name = "amx";
  amx_table.gemm_bf16 = g->bf16;
  amx_table.gemm_i8 = g->i8;
  amx_table.gemm_rows[WF_BF16] = amx_table.gemm_rows[WF_I8] = 32;
  amx_table.attention_bf16 = g->attention_bf16;
  /* fp32: the split-precision x6 GEMM by default (it passes tests/parity's 1e-4 rule and ran
   * faster than the AVX-512 FMA GEMM, BENCHMARKS.md "session 8"); LAYA_AMX_FP32=avx512 keeps the
   * AVX-512 one, x3 / x5 are studies that fail parity. */
  const char *fp = laya_env_process()->amx_fp32;
  if (fp && !strcmp(fp, "avx512")) amx_table.gemm_f32 = base->gemm_f32;
  else if (fp && !strcmp(fp, "x3")) amx_table.gemm_f32 = g->f32x3;
  else if (fp && !strcmp(fp, "x5")) amx_table.gemm_f32 = g->f32x5;
  else amx_table.gemm_f32 = g->f32x6;
  if (amx_table.gemm_f32 != base->gemm_f32) {
    amx_table.gemm_rows[WF_F32] = 32;
    /* the split GEMMs read parts split once: the weights' at create, the rows' per call (kernels.h);
     * with LAYA_AMX_FP32=avx512 nothing is split, and no fp32 matrix carries parts */
    amx_table.split_rows_f32 = g->split_rows;
    amx_table.split_panel_f32 = g->split_panel;
  }
  amx_table_ptr = &amx_table;
}
const cpu_kernels *cpu_kernels_amx(void) {
  pthread_once(&table_once, table_build);
  return amx_table_ptr;
}
