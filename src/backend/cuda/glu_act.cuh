/*
 * glu_act.cuh: the GLU's activations on CUDA, written once for every kernel that applies one
 * (kernels.cu's GeGLU pass, head and act-head MLPs; gemm_sm90.cu's fused Wi epilogue): the
 * encoder's hidden_activation kinds (model/weights.h enc_act), in fp32. Device code only.
 */
#ifndef LAYA_CUDA_GLU_ACT_CUH
#define LAYA_CUDA_GLU_ACT_CUH

#include <math.h>

#include "model/spec.h"

__device__ __forceinline__ float gelu_erf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

/* A: an enc_act kind, a template argument (one instantiation per kind) */
template <int A> __device__ __forceinline__ float glu_act(float v) {
  if (A == ENC_ACT_GELU_TANH) return 0.5f * v * (1.0f + tanhf(0.79788456080286535588f * (v + 0.044715f * (v * v * v))));
  if (A == ENC_ACT_QUICK_GELU) return v / (1.0f + expf(-1.702f * v));
  if (A == ENC_ACT_SILU) return v / (1.0f + expf(-v));
  if (A == ENC_ACT_RELU) return v > 0.0f ? v : 0.0f;
  return gelu_erf(v);
}

#endif
