/*
 * fp8_rule.cuh: the fp8 mode's quantisation rule, written once for every kernel that quantises
 * (fp8.cu's quantise pass and weights, kernels.cu's LayerNorm and GLU): a row's largest |value|
 * maps to E4M3's largest finite value, 448 (a row of zeros gets scale 1), and values are rounded to
 * the nearest E4M3 with saturation. Device code only.
 */
#ifndef LAYA_CUDA_FP8_RULE_CUH
#define LAYA_CUDA_FP8_RULE_CUH

#include <cuda_fp8.h>
#include <stdint.h>

__device__ __forceinline__ float fp8_row_scale(float absmax) { return absmax > 0.0f ? absmax / 448.0f : 1.0f; }

/* a, b, c, d times inv (1 / the row's scale) as four E4M3 bytes, a in the lowest */
__device__ __forceinline__ uint32_t fp8_pack4(float a, float b, float c, float d, float inv) {
  const uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(a * inv, b * inv), __NV_SATFINITE, __NV_E4M3);
  const uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(c * inv, d * inv), __NV_SATFINITE, __NV_E4M3);
  return lo | (hi << 16);
}

#endif
