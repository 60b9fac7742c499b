/*
 * ref_ops.h: the plain fp32 building blocks of the reference forward pass (backend "cpu-ref").
 *
 * Every function here is scalar C with float accumulators, written to be obviously correct. They
 * are the oracle the vectorised kernels are tested against, so their results must not depend on
 * blocking or on which other tokens share a call: each output element is computed by one fixed
 * sequence of float operations that involves only the inputs it mathematically depends on.
 */
#ifndef LAYA_BACKEND_CPU_REF_OPS_H
#define LAYA_BACKEND_CPU_REF_OPS_H

#include <stddef.h>

#include "model/weights.h"

/* Floats of scratch ref_matmul needs for a reduction length K. */
size_t ref_matmul_panel_floats(int K);

/*
 * y[t][n] = sum_{k=0..K-1} x[t][k] * w[n][k]  (+ b[n] when b != NULL), for t < T, n < N.
 * x has row stride ldx, y row stride ldy, w is [N][K] row-major (a PyTorch Linear weight).
 * The sum runs in increasing k with a float accumulator; the bias is added to the rounded sum.
 * accumulate != 0 adds the result to y (a residual connection: y + (x W^T + b)).
 * panel: ref_matmul_panel_floats(K) floats of scratch.
 */
void ref_matmul(float *y, int ldy, const float *x, int ldx, const float *w, const float *b, int T,
                int N, int K, int accumulate, float *panel);

/* LayerNorm over one vector of d: y = (x - mean) / sqrt(var + eps) * w (+ b when b != NULL).
 * Biased variance, as PyTorch. y may alias x. */
void ref_layernorm(float *y, const float *x, const float *w, const float *b, int d, float eps);

/* Exact (erf) GELU, PyTorch's nn.GELU() default. */
float ref_gelu(float x);
/* The encoder's GeGLU activation (weights.h enc_act). */
float ref_act(enc_act act, float x);

/* RoPE tables for positions 0..len-1: cos_t/sin_t are [len][head_dim / 2], computed in fp32 the
 * way transformers does: inv_freq[j] = 1 / theta^((2j) / head_dim), angle = pos * inv_freq[j]. */
void ref_rope_tables(float *cos_t, float *sin_t, int len, int head_dim, double theta);

/* Rotate one head vector in place, NeoX style (rotate_half): pairs (j, j + head_dim/2). */
void ref_rope(float *v, const float *cos_row, const float *sin_row, int head_dim);

/*
 * Multi-head softmax attention over one row of len tokens.
 * qkv: [len][3 * n_heads * head_dim] with row stride ldqkv, columns [Q heads | K heads | V heads].
 * out: [len][n_heads * head_dim], row stride ldo.
 * Query i sees key j iff window < 0 or |i - j| <= window. Scores are scaled by 1/sqrt(head_dim).
 * scratch: ref_attention_scratch_floats(len, head_dim) floats.
 */
size_t ref_attention_scratch_floats(int len, int head_dim);
void ref_attention(float *out, int ldo, const float *qkv, int ldqkv, int len, int n_heads,
                   int head_dim, int window, float *scratch);
/* The same for heads [h0, h1) only (the other heads' outputs are not touched). */
void ref_attention_heads(float *out, int ldo, const float *qkv, int ldqkv, int len, int n_heads,
                         int head_dim, int h0, int h1, int window, float *scratch);

/* Output columns per ref_matmul panel: splitting N at multiples of this between calls (e.g.
 * across threads) gives the same bits as one call. */
enum { REF_MATMUL_NB = 8 };

/* Laya's four confidence features of one row from its k raw logits, in order:
 * [top1, top1 - top2, entropy / log(k), k / 255] of softmax(logits), k clamped to >= 2 (a
 * one-option row counts as 2) and top2 = 0 when k == 1. */
void ref_confidence_features(const float *logits, int k, float *feats);

#endif
