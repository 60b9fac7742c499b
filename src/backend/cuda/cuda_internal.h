/*
 * cuda_internal.h: what the CUDA backend's files share (host side). Not a public header.
 *
 * Element types: activations and GEMM weights are 16-bit (bf16 or fp16, chosen per backend);
 * the residual stream, LayerNorm parameters, residual-GEMM biases, the scorer and the act head
 * are fp32. Every launch wrapper enqueues on the given stream and returns nothing: errors are
 * collected by the caller with cudaGetLastError() once per forward (and per capture).
 */
#ifndef LAYA_CUDA_INTERNAL_H
#define LAYA_CUDA_INTERNAL_H

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "backend/backend.h"
}

/* Element types: of weight conversion (F32, F16, BF16) and of GEMM operands (also F8: E4M3). */
enum cu_dtype { CU_F32 = 0, CU_F16 = 1, CU_BF16 = 2, CU_F8 = 3 };

/* Per-batch counts on the device, read by kernels whose grid covers a padded bucket. */
enum { CNT_TOKENS = 0, CNT_ROWS, CNT_MARKERS, CNT_TILES, CNT_KMAX, CNT_TILES_LOCAL, CNT_N };

/* One attention work item: the query positions [q0, q0 + tile_q) of the row starting at token
 * `base` with `len` tokens. tile_q is the query count of the kernel variant the layer type runs
 * (attention_variant_queries): global layers and the head one, local layers another. */
struct attn_tile {
  int base, len, q0, pad;
};

/* Programmatic dependent launch of the forward's own kernels (pdl.cuh; LAYA_CUDA_PDL): one
 * process-wide switch, set when a CUDA model is created (on only where every device is sm_90 or
 * newer). */
void cuda_set_pdl(int on);
/* Called as a pass starts to be enqueued (or captured) on this thread: launches through pdl.cuh
 * use the attribute for passes of at most CUDA_PDL_MAX_TOKENS tokens (above it the early blocks
 * cost more than the launches they hide: BENCHMARKS.md, CUDA backend / PDL). cuda_pdl: this
 * thread's pass uses it. */
#define CUDA_PDL_MAX_TOKENS 8192
/* Unless LAYA_CUDA_QKV names a choice, Wqkv runs on our Hopper GEMM with RoPE in its epilogue
 * (no RoPE pass) for passes of at most this many tokens, and on cuBLASLt + the RoPE pass above:
 * our main loop is slower than cuBLASLt's, which a one-row pass does not feel but a larger one does
 * (BENCHMARKS.md, CUDA backend / Small passes). */
#define CUDA_QKV_FUSED_MAX_TOKENS 256
/* Unless LAYA_CUDA_ATTN_G / _L name one, passes of at most this many tokens run attention with
 * 64-key K/V tiles (same query tiles, so the same tile lists), larger ones with 32-key tiles; on
 * Hopper every pass runs the wgmma kernels (64-key tiles) instead. */
#define CUDA_ATTN_SMALL_MAX_TOKENS 2048
void cuda_pdl_pass(int tokens);
int cuda_pdl(void);

/* Launch wrappers (kernels.cu). `half16` selects fp16 (1) or bf16 (0) for 16-bit buffers. */
void k_convert(cudaStream_t s, const void *src, int src_dt, void *dst, int dst_dt, int64_t n);
void k_embed_ln(cudaStream_t s, int half16, const int32_t *tokens, const void *emb, int emb_dt,
                const float *w, float eps, float *x, void *y, const int *counts, int Mp, int d);
void k_ln(cudaStream_t s, int half16, const float *x, const float *w, const float *b, float eps,
          void *y, int Mp, int d);
/* x = final_norm(x) (+ type_emb[qtype] unless type_emb is NULL), then y = the first head layer's
 * norm1 of it unless n1w is NULL. */
void k_final_ln(cudaStream_t s, int half16, float *x, const float *fw, float eps,
                const float *type_emb, const int32_t *tok_row, const int32_t *qtype,
                const float *n1w, const float *n1b, void *y, int Mp, int d);
/* The embed pass's pooling: pooled[r] (fp32 [Rp, d]) = the mean of x over row r's tokens
 * (row_start[r] to row_start[r + 1]), summed in double in token order (backend_mean_rows); rows
 * from counts[CNT_ROWS] on are zeros. */
void k_mean_rows(cudaStream_t s, const float *x, const int32_t *row_start, const int *counts, float *pooled, int Rp,
                 int d);
void k_rope_k(cudaStream_t s, int half16, void *qkv, const int32_t *tok_pos, const float2 *table,
              const int *counts, int Mp, int H, int hd);
void k_attention(cudaStream_t s, int half16, const void *qkv, void *out, const attn_tile *tiles,
                 const int32_t *tok_row, const int32_t *tok_pos, const int32_t *row_start,
                 const int *counts, const int *n_tiles, int n_tiles_cap, int Mp, int H, int hd, int window,
                 const float2 *rope, int variant);
/* The tensor-core attention variant of global (local = 0) or local (local = 1) layers: the default
 * when name is NULL, else the one named (LAYA_CUDA_ATTN_G / LAYA_CUDA_ATTN_L as the options read
 * them); and its queries per tile. A wgmma variant is prepared when picked (its shared memory
 * allowed on dev, which must be current); one dev cannot run or refuses gives the default. */
int attention_variant(int local, const char *name, int dev);
int attention_variant_queries(int local, int variant);
/* attention_sm90.cu's wgmma kernel (head_dim 64, compute capability 9.0: wgmma_device), as
 * attention.cu's variant table names it: HALF fp16 (else bf16), NWG warpgroups of 64 queries,
 * SKIP a local layer's, PIPE the pipelined loop, PVW P V on wgmma (else mma.sync). Instantiated
 * in attention_sm90.cu for the variants the table holds (a missing one fails to link). */
template <int HALF, int NWG, bool SKIP, bool PIPE, bool PVW>
void k_attention_sm90(cudaStream_t s, dim3 grid, const void *qkv, void *out, const attn_tile *tiles,
                      const int *n_tiles, int H, int window, const float2 *rope, float sl2);
/* Its shared-memory size allowed on the current device, for bf16 and fp16 (once per model, as the
 * Hopper GEMM's prepare: a launch then sets nothing); 0, or -1 when the device refuses it. */
template <int NWG, bool SKIP, bool PIPE, bool PVW> int k_attention_sm90_prepare(void);
void k_geglu(cudaStream_t s, int half16, void *h, int Mp, int I, int act); /* act: enc_act */
/* Scorer LayerNorm of marker m's state: row marker_tok[m] of x, or row m when marker_tok is NULL. */
void k_gather_ln(cudaStream_t s, const float *x, const int32_t *marker_tok, const int *counts,
                 const float *w, const float *b, float *out, int NMp, int d);
/* dst[i] = x[rows[i]] (fp32 rows of width d), i < n. */
void k_gather_rows(cudaStream_t s, const float *x, const int32_t *rows, float *dst, int n, int d);
/* Attention (global, no RoPE) for the n query tokens q_tok[i] only, each against every key of its
 * row; out row i. Used by the last decision-head layer. */
void k_attention_rows(cudaStream_t s, int half16, const void *qkv, void *out, const int32_t *q_tok, int n,
                      const int32_t *tok_row, const int32_t *tok_pos, const int32_t *row_start, int H, int hd);
void k_scorer_out(cudaStream_t s, const float *hid, const float *w2, const float *b2,
                  const int *counts, float *logits, int NMp, int d);
/* cls: row r's CLS state is cls[r] when given, else row row_start[r] of x. */
void k_features(cudaStream_t s, const float *x, const float *cls, const float *logits, const int32_t *row_start,
                const int32_t *marker_start, const int *counts, float *act_in, int Rp, int d,
                int ld_act);
void k_act_out(cudaStream_t s, const float *hid, const float *w2, const float *b2,
               const int *counts, float *act, int Rp, int n_hidden, int n_act);
int attention_has_fast_path(int hd);

/* GEMMs through cuBLASLt (gemm.cu). D[M, N] (row-major, ldd) = A[M, K] (row-major, lda) x
 * W[N, K]^T (+ bias, activation) (+ D when accumulate). */
enum gemm_epi { EPI_NONE = 0, EPI_BIAS, EPI_RELU_BIAS };
struct gemm_cache;
/* tune: LAYA_CUDA_GEMM_TUNE=1 (time the candidates at each shape's first eager call) */
struct gemm_cache *gemm_cache_create(int tune, int splitk);
void gemm_cache_destroy(struct gemm_cache *c);
/* dt_ab: type of A and W; dt_d: type of D (and C). Returns 0 or a cublasStatus_t. */
int gemm_run(struct gemm_cache *c, cublasLtHandle_t lt, cudaStream_t s, void *ws, size_t ws_size,
             int M, int N, int K, const void *A, int lda, const void *W, int dt_ab, void *D,
             int ldd, int dt_d, int accumulate, int epi, const void *bias);

/* The FP8 mode's GEMM (fp8.cu explains the scheme): A8 [M, K] and W8 [N, K] E4M3, row-major;
 * D = (a_scale[m] * w_scale[n] * sum_k A8 W8) (+ D when accumulate), D bf16 or fp32. */
int gemm_run_fp8(struct gemm_cache *c, cublasLtHandle_t lt, cudaStream_t s, void *ws, size_t ws_size, int M, int N,
                 int K, const void *A8, int lda, const float *a_scale, const void *W8, const float *w_scale, void *D,
                 int ldd, int dt_d, int accumulate);

/* 0 when cuBLASLt on the current device plans an E4M3 GEMM with per-row scales (else a
 * cublasStatus_t). */
int gemm_fp8_supported(void);

/* FP8 quantisation (fp8.cu). k_quant_fp8: rows of a 16-bit matrix (row stride ld, K a multiple of
 * 8) to E4M3 dst [rows, K] with one fp32 scale per row. fp8_quantize_weight_into: a 16-bit weight
 * [N, K] to N*K E4M3 bytes followed by its N scales at dst (N*K + 4*N device bytes, not
 * overlapping w); fp8_quantize_weight: the same in place (tmp: N*K + 4*N device bytes). Both
 * return 0 or -1. */
void k_quant_fp8(cudaStream_t s, int half16, const void *src, int ld, int rows, int K, void *dst, float *scale);
/* The same quantisation fused into its producer (kernels.cu), writing E4M3 [Mp, d] / [Mp, I] and
 * the row scales in place of the 16-bit output: the LayerNorm without bias (k_ln's, d a multiple of
 * 128 up to 1024) and the GLU product of a bf16 [Mp, 2I] (I a multiple of 8 up to 4096). Return -1,
 * launching nothing, for a size they do not cover. */
int k_ln_fp8(cudaStream_t s, const float *x, const float *w, float eps, void *q, float *scale, int Mp, int d);
int k_geglu_fp8(cudaStream_t s, const void *h, int Mp, int I, int act, void *q, float *scale);
int fp8_quantize_weight_into(cudaStream_t s, int half16, const void *w, int N, int K, void *dst);
int fp8_quantize_weight(cudaStream_t s, int half16, void *w, int N, int K, void *tmp);

/* Our Hopper GEMMs (gemm_sm90.cu, sm_90a: TMA + wgmma), y = A W^T with the elementwise step that
 * follows in their epilogue: the Wi GEMM with GeGLU (k_geglu_gemm: out[M, I] = act(A Wi_in^T) *
 * (A Wi_gate^T), act an enc_act kind; the weight interleaved once by k_geglu_interleave, [2I, K] rows, src != dst) and
 * the Wqkv GEMM with RoPE (k_qkv_rope_gemm: out[M, N], columns [0, rope_cols) heads of 64 rotated
 * by each row's position, the rest (V) as is). sm90_gemm_variants: the mask of kernel variants a
 * switch (LAYA_CUDA_GEGLU, LAYA_CUDA_QKV, as the options read them; NULL: all) allows on device
 * dev, 0 when it is "0" or the device cannot run them (then the forward runs cuBLASLt and the
 * separate pass); sm90_gemm_pick: the variant of a mask for an M-row pass over NW weight rows.
 * Maps are TMA descriptors (GG_MAP_BYTES each, any alignment) per variant: for a weight once at
 * load, for the activations per forward. */
enum { GG_MAP_BYTES = 128, GG_MAX_VARIANTS = 5 };
unsigned sm90_gemm_variants(int dev, const char *name);
int sm90_gemm_pick(unsigned mask, int M, int NW);
int sm90_gemm_n_variants(void);
const char *sm90_gemm_variant_name(int v);
int sm90_gemm_map_weight(int v, int half16, const void *w, int rows, int K, void *map);
int sm90_gemm_map_act(int v, int half16, const void *a, int M, int K, int lda, void *map);
void k_geglu_interleave(cudaStream_t s, int half16, const void *src, void *dst, int I, int K);
void k_geglu_gemm(cudaStream_t s, int v, int half16, const void *map_a, const void *map_w, void *out, int M, int I,
                  int ldo, int K, int act);
void k_qkv_rope_gemm(cudaStream_t s, int v, int half16, const void *map_a, const void *map_w, void *out, int M, int N,
                     int ldo, int K, const int32_t *tok_pos, const float2 *rope, const int *counts, int rope_cols);

#endif
