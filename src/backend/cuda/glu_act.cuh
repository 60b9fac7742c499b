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
  /* the rarer kinds (the GeGLU pass only: the fused Wi epilogue runs [0, ENC_ACT_FUSED_END)), as
   * the CPU backends compute them (backend/cpu/glu_act_rare.h) */
  if (A == ENC_ACT_GELU_10) return fminf(fmaxf(gelu_erf(v), -10.0f), 10.0f);
  if (A == ENC_ACT_MISH) return v * tanhf(log1pf(expf(v)));
  if (A == ENC_ACT_RELU2) return v > 0.0f ? v * v : 0.0f;
  if (A == ENC_ACT_RELU6) return fminf(fmaxf(v, 0.0f), 6.0f);
  if (A == ENC_ACT_LEAKY_RELU) return v > 0.0f ? v : v * 0.01f;
  if (A == ENC_ACT_HARDSWISH) return v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f;
  if (A == ENC_ACT_TANH) return tanhf(v);
  if (A == ENC_ACT_SIGMOID) return 1.0f / (1.0f + expf(-v));
  if (A == ENC_ACT_LINEAR) return v;
  if (A == ENC_ACT_LAPLACE) return 0.5f * (1.0f + erff((v - 0.707107f) / (float)(0.282095 * 1.41421356237309504880)));
  if (A == ENC_ACT_SQRT_SOFTPLUS) return sqrtf(v > 20.0f ? v : log1pf(expf(v)));
  return gelu_erf(v);
}

#endif
