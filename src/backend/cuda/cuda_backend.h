/*
 * cuda_backend.h: CUDA-only extras beyond backend.h (for tests and benchmarks built with CUDA).
 */
#ifndef LAYA_CUDA_BACKEND_H
#define LAYA_CUDA_BACKEND_H

#include <stddef.h>

#include "backend/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device bytes held by the backend's weights and by one worker's scratch (activations, cuBLASLt
 * workspace). Returns -1 when b is not a CUDA backend. */
int backend_cuda_memory(const backend *b, backend_worker *w, size_t *weights, size_t *scratch);

/* 1 when b (made by backend_cuda_create_shared) reads tensors of base's instead of holding them
 * (base NULL: of any backend's), with *borrowed the bytes it reads so; 0 (and *borrowed 0) when it
 * holds its own; -1 when b is not a CUDA backend. backend_cuda_memory's weights are the bytes b
 * holds itself. */
int backend_cuda_weights_shared(const backend *b, const backend *base, size_t *borrowed);

/* Test hook: replace the LAYA_CUDA_MAX_SCRATCH cap the backend was created with (bytes; -1: none),
 * so that a test can make a worker's next scratch growth fail and then let it recover. Returns -1
 * when b is not a CUDA backend. */
int backend_cuda_set_max_scratch(backend *b, long long bytes);

/* With LAYA_CUDA_PROFILE=1 when the backend is created (the options it was created with), forwards run eagerly
 * with events between stages; this writes the mean milliseconds per stage since the last call
 * into buf and resets them. Returns -1 when profiling is off. */
int backend_cuda_profile(backend_worker *w, char *buf, size_t n);

/* The fused Wi + GeGLU GEMM (gemm_sm90.cu) on device 0, every kernel variant, against a plain fp32
 * kernel on random 16-bit A [M, K] and Wi [2I, K] (whatever LAYA_CUDA_GEGLU says), activation act (a
 * model/weights.h enc_act kind): *max_rel = the
 * largest |error| over the largest |reference|; *same_bits = 1 when every variant wrote the same bits
 * (the forward picks the variant by pass size, so a row's result must not depend on it). Returns 0,
 * 1 when the device cannot run the kernel, -1 on a CUDA error. */
int backend_cuda_geglu_selftest(int half16, int M, int I, int K, int act, double *max_rel, int *same_bits);

/* The Wqkv GEMM with RoPE in its epilogue (gemm_sm90.cu), every variant, against a plain fp32 GEMM
 * and rotation of random 16-bit A [M, K] and W [3 H 64, K] (Q and K heads of 64 rotated by each
 * row's position, the last 3 rows padding at position 0); results as above. */
int backend_cuda_qkv_rope_selftest(int half16, int M, int H, int K, double *max_rel, int *same_bits);

/* The fp8 GEMM (fp8.cu, gemm.cu) on device 0: random bf16 A [M, K] and W [N, K] quantised per row
 * on the device, multiplied in E4M3 into bf16 (accumulate 0) or added into an fp32 D (1).
 * *rel_q: max |error| / max |reference| against the fp32 product of the dequantised operands;
 * *rel_16: the same against the product of the bf16 operands. Returns 0, 1 when the device has no
 * FP8 tensor cores, 2 when cuBLASLt has no per-row fp8 scales, -1 on a CUDA or cuBLASLt error. */
int backend_cuda_fp8_selftest(int M, int N, int K, int accumulate, double *rel_q, double *rel_16);

#ifdef __cplusplus
}
#endif

#endif
