/*
 * ln_row.cuh: the LayerNorm's row load and statistics, written once for both LayerNorms of the
 * common width (d a multiple of 128 up to 1024, one warp per row): the 16-bit one (kernels.cu
 * ln4_kernel, k_ln) and the one writing E4M3 (ln4_fp8_kernel, k_ln_fp8). Two-pass mean and
 * variance in fp32 (like torch), from the values the warp holds. Device code only.
 */
#ifndef LAYA_CUDA_LN_ROW_CUH
#define LAYA_CUDA_LN_ROW_CUH

#include <stdint.h>

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/* The row's mean and 1 / std, from the values a warp holds (lane l owns float4 columns l + 32 i). */
template <int NV> __device__ __forceinline__ void ln4_stats(const float4 *v, int d, float eps, float *mu, float *rs) {
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < NV; i++) s += (v[i].x + v[i].y) + (v[i].z + v[i].w);
  const float m = warp_sum(s) / (float)d;
  float q = 0.f;
#pragma unroll
  for (int i = 0; i < NV; i++) {
    float a = v[i].x - m, bb = v[i].y - m, c = v[i].z - m, e = v[i].w - m;
    q += a * a + bb * bb + c * c + e * e;
  }
  *mu = m;
  *rs = rsqrtf(warp_sum(q) / (float)d + eps);
}

/* Row `row` of x [rows, d] (d = 128 NV) into v, lane l holding float4 columns l + 32 i, and its
 * mean and 1 / std. */
template <int NV>
__device__ __forceinline__ void ln4_load_stats(const float *x, int row, int d, int lane, float eps, float4 *v,
                                               float *mu, float *rs) {
  const float4 *xr = reinterpret_cast<const float4 *>(x + (int64_t)row * d);
#pragma unroll
  for (int i = 0; i < NV; i++) v[i] = xr[lane + 32 * i];
  ln4_stats<NV>(v, d, eps, mu, rs);
}

#endif
