/*
 * kernels.h: the CPU kernel table and the packed weight layouts it works on.
 *
 * One table per instruction set (scalar, AVX2+FMA, AVX-512 with BF16/VNNI), picked once at load by
 * CPUID (cpu_kernels_select). The scalar table is the portable fallback and the test oracle: every
 * SIMD kernel must agree with it within the bounds tests/cpu/test_kernels.c asserts. A table may
 * leave a slot pointing at the scalar kernel when its ISA has nothing better.
 *
 * Letters: M rows of activations (tokens), N output features, K input features, T tokens of one
 * packed row, Dh head size (64).
 *
 * Packed weights (the same bytes for every ISA, and the bytes `laya convert` stores): a Linear
 * weight W [N, K] (y = x W^T) is cut into panels of CPU_NR = 32 output columns; N is padded with
 * zero columns to a whole panel, K to a multiple of 4 with zeros. Within a panel:
 *   fp32: [K][32]            w[k][c]
 *   bf16: [K/2][32][2]       pairs of consecutive k per column (vdpbf16ps operand order)
 *   int8: [K/4][32][4]       quads of consecutive k per column (vpdpbusd operand order), with a
 *         per-column fp32 scale (w = q * scale, |q| <= 127) and colsum[c] = 128 * sum_k q[k][c],
 *         the compensation for activations stored as u8 = q_a + 128.
 * GeGLU weights (Wi [2I, K], rows [input; gate]) are packed so that panel p holds input columns
 * 16p..16p+15 in its first half and the matching gate columns in its second half; its GEMM writes
 * I outputs act(input) * gate, act the encoder's hidden_activation (packed_matrix.glu_act).
 */
#ifndef LAYA_CPU_KERNELS_H
#define LAYA_CPU_KERNELS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/cpu/glu_act_rare.h"

#define CPU_NR 32      /* output columns per packed panel */
/* The name of the layout above, recorded in every container of packed weights (cpu_artifact.c):
 * change it whenever the packed bytes change, so older containers are refused and cache keys move. */
#define CPU_PACK_LAYOUT "panel32-v1"
#define CPU_MAX_DH 256 /* largest attention head size */

typedef enum cpu_wfmt { WF_F32 = 0, WF_BF16 = 1, WF_I8 = 2 } cpu_wfmt;

typedef struct packed_matrix {
  int n, k;      /* logical output / input features (n = 2I for GeGLU) */
  int n_panels;  /* panels of CPU_NR packed columns */
  int k_pad;     /* k rounded up to 4 */
  int geglu;     /* panels hold [16 input | 16 gate] columns; outputs n/2 */
  cpu_wfmt fmt;
  const void *data;      /* n_panels * k_pad * CPU_NR elements of fmt */
  const float *scale;    /* int8: [n_panels * CPU_NR] per packed column */
  const int32_t *colsum; /* int8: [n_panels * CPU_NR] 128 * sum_k q */
  const float *bias;     /* [outputs] fp32, logical order, or NULL */
  enc_act glu_act;       /* geglu: the activation of the input half (0: erf GELU) */
  /* fp32 weights on a table whose fp32 GEMM works on bf16 parts (cpu_kernels.split_rows_f32 set):
   * each panel's first split_parts parts of hi, mid and lo (cpu_split3), [n_panels][split_parts]
   * [CPU_SPLIT_K(k_pad) / 2][32][2] (pack_split_panels), made once at create; NULL otherwise (the
   * GEMM then splits data itself). */
  const uint16_t *split;
  /* The parts kept (pack_split_need over all panels): 3, or 2 where every lo part is zero (weights
   * of at most 16 significant bits: Laya's checkpoints store float16, 11), or 1 where mid is zero
   * too (bfloat16 weights, 8); 0 reads as 3. The GEMM leaves out the products of parts that are
   * zero everywhere: adding them changes no accumulator (an fp32 sum that starts at +0 never holds
   * -0), so the results are the same bits, from 2/3 or 1/3 of the memory. */
  int split_parts;
} packed_matrix;

/* One fp32 weight panel [k][32] -> its bf16 parts [kpp/2][32][2] (cpu_kernels.split_panel_f32). */
typedef void (*cpu_split_panel_fn)(const float *src, int k, int kpp, uint16_t *hi, uint16_t *mid, uint16_t *lo);

/* k of the split-precision parts: k_pad rounded up to the 32 values of one bf16 tile row. */
#define CPU_SPLIT_K(k_pad) (((k_pad) + 31) & ~31)
/* The row stride (values) of split activation parts: CPU_SPLIT_K, plus one 64-byte line where that
 * is an even number of lines, so that the 16 rows of a tile fall in 16 different L1 sets. At
 * 1024 values (32 lines: every row in the same 2 of 64 sets) the tile loads missed L1 (the x6
 * GEMM ran 5-10% slower, BENCHMARKS.md "Split-precision fp32 on AMX, session 10"). */
#define CPU_SPLIT_LD(k_pad) (CPU_SPLIT_K(k_pad) + (CPU_SPLIT_K(k_pad) / 32 % 2 ? 0 : 32))

/* Activations feeding a GEMM, in the format the weights want: fp32 (WF_F32), bf16 (WF_BF16) or
 * u8 = round(x / row_scale) + 128 (WF_I8). Row m starts at a + m * lda elements; lda >= k_pad and
 * the padding columns k..k_pad-1 are zero (bf16/fp32) or 128 (u8). */
typedef struct gemm_input {
  const void *a;
  int lda;
  const float *row_scale; /* int8 only: [M] */
  /* Nonzero: this GEMM call's id (unique per call, cpu.c). The tasks of one call that a thread runs
   * on the same rows may then reuse that thread's copy of those rows (the AVX2 fp32 GEMM copies
   * them per call). 0: no reuse (each call copies). */
  unsigned long gen;
  /* fp32 split-precision GEMMs only: the rows already cut into their three bf16 parts by the
   * table's split_rows_f32, split[i * split_plane + m * split_ld + k] (part i = hi, mid, lo of row
   * m, zero past k and for the padding rows up to 16); NULL: each task splits the rows it reads. */
  const uint16_t *split;
  size_t split_plane;
  int split_ld;
} gemm_input;

typedef enum epi_act { EPI_NONE = 0, EPI_GELU, EPI_RELU, EPI_GEGLU } epi_act;

/* The GeGLU activation on one float, as the scalar kernels apply it (in fp32 the way PyTorch's CPU
 * kernels evaluate each; the SIMD tables write the sigmoid forms as x / (1 + exp(-z)), with
 * z = 2 sqrt(2/pi) (x + 0.044715 x^3) for the tanh GELU). */
static inline float cpu_glu_act(enc_act act, float x) {
  switch (act) {
    case ENC_ACT_GELU_TANH:
      return 0.5f * x * (1.0f + tanhf(0.79788456080286535588f * (x + 0.044715f * (x * x * x))));
    case ENC_ACT_QUICK_GELU: return x * (1.0f / (1.0f + expf(-(1.702f * x))));
    case ENC_ACT_SILU: return x / (1.0f + expf(-x));
    case ENC_ACT_RELU: return x > 0.0f ? x : 0.0f;
    case ENC_ACT_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    default: break;
  }
  return cpu_act_rare(act, x);
}
/* The sigmoid argument z of the sigmoid-form activations: act(x) = x / (1 + exp(-z)), z = x (c0 + c2 x^2) */
#define CPU_GLU_TANH_C0 1.5957691216057308f  /* 2 sqrt(2/pi) */
#define CPU_GLU_TANH_C2 0.07135481627260025f /* 2 sqrt(2/pi) 0.044715 */
#define CPU_GLU_QUICK_C0 1.702f

/* What happens to each fp32 result y[m][n] (after bias): act, then either stored (out_f32 or
 * out_bf16) or added into out_f32 (residual). Exactly one of out_f32 / out_bf16 is set. */
typedef struct gemm_epilogue {
  epi_act act;
  int residual;       /* out_f32[m][n] += y */
  float *out_f32;     /* row m at out_f32 + m * ldo */
  uint16_t *out_bf16; /* row m at out_bf16 + m * ldo */
  int ldo;
} gemm_epilogue;

/* Attention over one packed row for one head of size dh (even). q: [T][dh] already rotated and
 * scaled by 1/sqrt(dh); kt: [dh][T] keys transposed; v: [T][dh]. Queries [i0, i1) see keys j with |i - j| <= window
 * (window < 0: all keys). out row i at out + (i - i0) * ldo, fp32 or bf16 (one is NULL). scratch:
 * at least cpu_attention_scratch(T) floats. Softmax is online over key blocks: no T x T buffer. */
typedef struct attn_args {
  const float *q, *kt, *v;
  int t, dh, i0, i1, window;
  float *out_f32;
  uint16_t *out_bf16;
  int ldo;
  float *scratch;
  /* attention_bf16 reads these instead of q / kt / v (see cpu_attention_bf16_scalar) */
  const uint16_t *qb, *kb, *vb;
} attn_args;

/* bf16 attention (models whose weights are bf16 or int8): q, k and v rounded to bf16 and laid out
 * in vdpbf16ps operand order, pairs of bf16 forming one 32-bit lane:
 *   qb: [T][dh]            row i of q, already rotated and scaled
 *   kb: [dh/2][T][2]       lane (p, j) = (k[j][2p], k[j][2p + 1])
 *   vb: [ceil(T/2)][dh][2] lane (jp, c) = (v[2jp][c], v[2jp + 1][c]); the v[T] of an odd T is 0
 * Scores, softmax and output accumulators are fp32; the SIMD kernels round the probabilities to
 * bf16 for P V (the scalar oracle does not), which costs ~2^-9 relative per weight. */
/* Keys [*lo, *hi] that query i of a packed row may see: all of them, or |i - j| <= window. */
static inline void attn_key_range(const attn_args *a, int i, int *lo, int *hi) {
  *lo = 0;
  *hi = a->t - 1;
  if (a->window >= 0) {
    if (i - a->window > 0) *lo = i - a->window;
    if (i + a->window < a->t - 1) *hi = i + a->window;
  }
}
/* The key ranges of queries q0 .. q0 + nq - 1 (nq >= 1) and their union [*ulo, *uhi]. */
static inline void attn_block_ranges(const attn_args *a, int q0, int nq, int *lo, int *hi, int *ulo, int *uhi) {
  *ulo = a->t;
  *uhi = -1;
  for (int qi = 0; qi < nq; qi++) {
    attn_key_range(a, q0 + qi, &lo[qi], &hi[qi]);
    if (lo[qi] < *ulo) *ulo = lo[qi];
    if (hi[qi] > *uhi) *uhi = hi[qi];
  }
}

static inline size_t attn_bf16_kb_index(int t, int p, int j) { return ((size_t)p * t + j) * 2; }
static inline size_t attn_bf16_vb_index(int dh, int j, int c) { return ((size_t)(j / 2) * dh + c) * 2 + (j & 1); }

typedef struct cpu_kernels {
  const char *name; /* "scalar", "avx2", "avx512", "avx512-fma", "amx" (kernels_amx.h) */
  int bf16_dot;     /* has bf16 dot products (vdpbf16ps): bf16 / int8 models run attention_bf16 */
  /* Row multiple the GEMM of each weight format (cpu_wfmt index) works in best, for the backend's
   * split of a GEMM into tasks: 0 = the default (the widest register-blocked microkernel's rows);
   * the AMX table's tile GEMMs want whole 32-row blocks (two tiles), so no task has a row tail. */
  int gemm_rows[3];
  /* y = x W^T over activation rows [m0, m1) and weight panels [p0, p1). */
  void (*gemm_f32)(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0, int p1,
                   const gemm_epilogue *e);
  void (*gemm_bf16)(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0, int p1,
                    const gemm_epilogue *e);
  void (*gemm_i8)(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0, int p1,
                  const gemm_epilogue *e);
  /* LayerNorm of one row of n floats: y = (x - mean) / sqrt(var + eps) * w (+ b); w, b may be NULL
   * (weight 1, bias 0). Writes fp32 or bf16 (one of y32 / y16 is NULL). */
  void (*layernorm)(const float *x, int n, const float *w, const float *b, float eps, float *y32,
                    uint16_t *y16);
  /* u8 quantisation of one row of n floats (pads to n_pad with 128); returns the scale. */
  float (*quantize_row)(const float *x, int n, int n_pad, uint8_t *q);
  /* fp32 -> bf16 (round to nearest even) of n floats. */
  void (*to_bf16)(const float *x, int n, uint16_t *y);
  /* NeoX RoPE of one head vector of dh floats in place: x' = x cos + rotate_half(x) sin; cs:
   * [dh/2] cos then [dh/2] sin for the position. Result times `scale`. */
  void (*rope)(float *x, int dh, const float *cs, float scale);
  void (*attention)(const attn_args *a);
  void (*attention_bf16)(const attn_args *a); /* qb / kb / vb instead of q / kt / v */
  /* Tables whose gemm_f32 multiplies bf16 parts (the AMX split-precision GEMMs), else NULL: rows
   * [r0, r1) of the fp32 activations x (row stride lda, k values) cut into their hi / mid / lo parts
   * at parts + i * plane + r * ld (ld >= k, zeros from k to ld; rows r >= m all zero). The backend
   * runs it over row blocks as one pool step before the GEMM's tasks, which then read the parts
   * (gemm_input.split) instead of each splitting its rows again; the weights' parts are made at
   * create (packed_matrix.split). */
  void (*split_rows_f32)(const float *x, int lda, int k, int r0, int r1, int m, uint16_t *parts, int ld, size_t plane);
  /* The same tables: one fp32 weight panel [k][32] cut into its parts in the bf16 panel order
   * [kpp/2][32][2] (lo may be NULL), bit for bit cpu_split3; what split_all runs at create
   * (pack_split_need, pack_split_panels). */
  cpu_split_panel_fn split_panel_f32;
} cpu_kernels;

/* Floats of attention scratch per call. */
size_t cpu_attention_scratch(int t);

extern const cpu_kernels cpu_kernels_scalar;
/* Scalar kernels the SIMD tables fall back to for shapes they do not cover. */
void cpu_rope_scalar(float *x, int dh, const float *cs, float scale);
void cpu_attention_scalar(const attn_args *a);
void cpu_attention_bf16_scalar(const attn_args *a);
/* NULL when the compiler cannot build that ISA. */
const cpu_kernels *cpu_kernels_avx2(void);
const cpu_kernels *cpu_kernels_avx512(void);
/* The AVX-512 table with its bf16 GEMM on FMA (widened operands) and bf16_dot 0: for CPUs whose
 * vdpbf16ps does fewer multiply-adds a cycle than their FMAs (kernels_select.c). */
const cpu_kernels *cpu_kernels_avx512_fma(void);

/* ISA support of this CPU and OS (from core/cpu_features). */
typedef struct cpu_isa {
  int avx2_fma, avx512, avx512_bf16, avx512_vnni;
} cpu_isa;
cpu_isa cpu_isa_detect(void);

/* The best table this CPU runs, or the one LAYA_CPU_ISA (scalar|avx2|avx512|amx) forces (if usable).
 * Never NULL. */
const cpu_kernels *cpu_kernels_select(void);
/* The same with the LAYA_CPU_ISA value given (NULL: none), as laya_open read it. */
const cpu_kernels *cpu_kernels_select_for(const char *force);
/* A table by name if this CPU can run it, else NULL. */
const cpu_kernels *cpu_kernels_by_name(const char *name);

/* ---- helpers shared by the kernel files ---- */

/* A 64-byte aligned buffer of at least `floats` floats owned by the calling thread (freed when it
 * exits), valid until that thread's next call; NULL when memory is short (callers fall back to
 * kernels that need none). The AVX-512 and AVX2 fp32 GEMMs copy activation tiles into it, the AVX2
 * int8 GEMM its widened rows and weight blocks (kernels_scratch.c). */
float *cpu_thread_scratch(size_t floats);
/* Tests: while on, cpu_thread_scratch fails in the calling thread. */
void cpu_scratch_fail_for_tests(int on);

static inline uint16_t f32_to_bf16_rne(float f) {
  union { float f; uint32_t u; } v = {f};
  if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x40); /* quiet NaN */
  v.u += 0x7fffu + ((v.u >> 16) & 1u);
  return (uint16_t)(v.u >> 16);
}
static inline float bf16_to_f32(uint16_t h) {
  union { uint32_t u; float f; } v = {(uint32_t)h << 16};
  return v.f;
}

/* fp32 bits rounded to the nearest bf16 (ties to even), low 16 bits cleared. Inputs are finite. */
static inline uint32_t cpu_rb_bits(uint32_t u) { return (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u; }
/* x = hi + mid + lo + r, each part the nearest bf16 to what the previous ones leave (the
 * differences are exact: a part holds x's leading bits); lo may be NULL. The split of the
 * split-precision GEMMs (kernels_amx.h), their SIMD versions bit for bit the same. */
static inline void cpu_split3(float x, uint16_t *h, uint16_t *m, uint16_t *l) {
  union { float f; uint32_t u; } v = {x}, p;
  p.u = cpu_rb_bits(v.u);
  v.f = x - p.f;
  *h = (uint16_t)(p.u >> 16);
  p.u = cpu_rb_bits(v.u);
  float r2 = v.f - p.f;
  *m = (uint16_t)(p.u >> 16);
  if (l) {
    v.f = r2;
    *l = (uint16_t)(cpu_rb_bits(v.u) >> 16);
  }
}

/* The int8 grid of a packed weight column (pack.c) and of a token's GEMM input (quantize_row): one
 * symmetric scale max|x| / 127 over the n values (1 when all are 0). int8_grid returns the scale and
 * sets *inv = 1 / scale; a value's level is x * inv rounded to nearest (ties to even) and clamped to
 * +-127 (NaN: -127, as the SIMD conversion gives). x * inv, not x / scale: the two can round
 * differently, and every user (pack.c, quantize_row, LAYA_CPU_STUDY's emulation) must agree. */
static inline float int8_grid(const float *x, int n, float *inv) {
  float mx = 0.0f;
  for (int i = 0; i < n; i++) mx = fmaxf(mx, fabsf(x[i]));
  float s = mx > 0.0f ? mx / 127.0f : 1.0f;
  *inv = 1.0f / s;
  return s;
}
static inline float int8_level(float x, float inv) { return fminf(fmaxf(nearbyintf(x * inv), -127.0f), 127.0f); }

/* NeoX RoPE of the pair (x[j], x[half + j]), as the scalar kernel and the SIMD kernels' tails do it. */
static inline void rope_pair(float *x, int half, const float *cs, float scale, int j) {
  float a = x[j], b = x[j + half], c = cs[j], s = cs[half + j];
  x[j] = (a * c - b * s) * scale;
  x[j + half] = (b * c + a * s) * scale;
}

/* Packing (pack.c). W rows come from a callback so checkpoint dtypes and GeGLU order stay out of
 * the packer: get_row(ctx, r, out) writes logical row r (0 <= r < n) of W as k floats. Returns the
 * bytes needed for data (+ scale + colsum) when dst is NULL. */
typedef void (*pack_row_fn)(void *ctx, int r, float *out);
size_t pack_data_bytes(cpu_wfmt fmt, int n, int k, int geglu);
/* Fills data, and for int8 scale and colsum (each n_panels * CPU_NR). row_tmp: k floats. */
void pack_matrix(cpu_wfmt fmt, int n, int k, int geglu, pack_row_fn get_row, void *ctx, void *data,
                 float *scale, int32_t *colsum, float *row_tmp);
/* pack_matrix for panels [p0, p1) only (the rest of data, scale and colsum is not touched): the
 * same bytes as the whole call, so a matrix can be packed by several threads at once. */
void pack_matrix_panels(cpu_wfmt fmt, int n, int k, int geglu, int p0, int p1, pack_row_fn get_row, void *ctx,
                        void *data, float *scale, int32_t *colsum, float *row_tmp);
int pack_panels(int n, int geglu);
int pack_kpad(int k);
/* The split-precision parts of an fp32 matrix (packed_matrix.split): bytes for all of its panels
 * with `parts` parts each, how many parts panels [p0, p1) need (pack.c), and those panels' parts
 * from w->data (the bytes do not depend on how the panels are shared out among threads). fn: a
 * table's split_panel_f32 (SIMD), or NULL for plain C; the parts are the same bits either way. */
size_t pack_split_bytes(int n, int k, int geglu, int parts);
int pack_split_need(const packed_matrix *w, int p0, int p1, cpu_split_panel_fn fn);
void pack_split_panels(const packed_matrix *w, int p0, int p1, uint16_t *split, cpu_split_panel_fn fn);
/* Packed column c of panel p -> logical row of W, or -1 for padding. */
int pack_col_row(int n, int geglu, int p, int c);

#endif
