/*
 * kernels.cu: the CUDA backend's element-wise, normalisation and head kernels.
 *
 * Every kernel works on the packed batch: tokens back to back, no padding inside the batch. Grids
 * cover a padded bucket (so that one captured CUDA graph serves every batch of that bucket) and
 * read the real counts from device memory; positions past the real count are written as zeros so
 * that GEMMs over the padded rows stay finite and never feed NaN into anything that is read.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>

#include <atomic>
#include <type_traits>

#include "cuda_internal.h"
#include "pdl.cuh"
#include "fp8_rule.cuh"
#include "glu_act.cuh"
#include "ln_row.cuh"
#include "model/spec.h"

/* ---------------------------------------------------------------------------------------------
 * Element helpers
 */
__device__ __forceinline__ float tof(float v) { return v; }
__device__ __forceinline__ float tof(__half v) { return __half2float(v); }
__device__ __forceinline__ float tof(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T> __device__ __forceinline__ T fromf(float v);
template <> __device__ __forceinline__ float fromf<float>(float v) { return v; }
template <> __device__ __forceinline__ __half fromf<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 fromf<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

static inline unsigned blocks_for(int64_t n, int per_block) {
  return (unsigned)((n + per_block - 1) / per_block);
}

static std::atomic<int> g_pdl{0};
static thread_local int tl_pass_pdl = 0; /* the pass this thread enqueues or captures now */
void cuda_set_pdl(int on) { g_pdl.store(on ? 1 : 0, std::memory_order_relaxed); }
void cuda_pdl_pass(int tokens) {
  tl_pass_pdl = g_pdl.load(std::memory_order_relaxed) && tokens <= CUDA_PDL_MAX_TOKENS;
}
int cuda_pdl(void) { return tl_pass_pdl; }

/* ---------------------------------------------------------------------------------------------
 * Weight conversion (at load): any of f32/f16/bf16 to any of them.
 */
template <class S, class D> __global__ void convert_kernel(const S *src, D *dst, int64_t n) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (; i < n; i += stride) dst[i] = fromf<D>(tof(src[i]));
}

template <class S> static void convert_from(cudaStream_t s, const S *src, void *dst, int dst_dt, int64_t n) {
  unsigned g = blocks_for(n, 256);
  if (g > 65535u * 8u) g = 65535u * 8u;
  if (dst_dt == CU_F32) convert_kernel<<<g, 256, 0, s>>>(src, (float *)dst, n);
  else if (dst_dt == CU_F16) convert_kernel<<<g, 256, 0, s>>>(src, (__half *)dst, n);
  else convert_kernel<<<g, 256, 0, s>>>(src, (__nv_bfloat16 *)dst, n);
}

void k_convert(cudaStream_t s, const void *src, int src_dt, void *dst, int dst_dt, int64_t n) {
  if (src_dt == CU_F32) convert_from(s, (const float *)src, dst, dst_dt, n);
  else if (src_dt == CU_F16) convert_from(s, (const __half *)src, dst, dst_dt, n);
  else convert_from(s, (const __nv_bfloat16 *)src, dst, dst_dt, n);
}

/* ---------------------------------------------------------------------------------------------
 * LayerNorm, one warp per row. Rows up to 1024 wide are held in registers (two-pass mean and
 * variance in fp32, like torch); wider rows are re-read from memory.
 */
#define LN_MAXV 32

/* mean and 1/std of a row held in registers (lane owns columns lane + 32 i). */
__device__ __forceinline__ void ln_stats(const float *v, int d, int lane, float eps, float *mean, float *rstd) {
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < LN_MAXV; i++)
    if (lane + 32 * i < d) s += v[i];
  float mu = warp_sum(s) / (float)d;
  float q = 0.f;
#pragma unroll
  for (int i = 0; i < LN_MAXV; i++)
    if (lane + 32 * i < d) {
      float t = v[i] - mu;
      q += t * t;
    }
  float var = warp_sum(q) / (float)d;
  *mean = mu;
  *rstd = rsqrtf(var + eps);
}

/* Generic (any width) statistics reading the row from memory. */
__device__ __forceinline__ void ln_stats_mem(const float *x, int d, int lane, float eps, float *mean, float *rstd) {
  float s = 0.f;
#pragma unroll 8
  for (int j = lane; j < d; j += 32) s += x[j];
  float mu = warp_sum(s) / (float)d;
  float q = 0.f;
#pragma unroll 8
  for (int j = lane; j < d; j += 32) {
    float t = x[j] - mu;
    q += t * t;
  }
  *mean = mu;
  *rstd = rsqrtf(warp_sum(q) / (float)d + eps);
}

/* x (fp32) = LN(emb[token]) ; y (16-bit) = x. Padded tokens give zeros. */
template <class T, class TE>
__global__ void embed_ln_kernel(const int32_t *__restrict__ tokens, const TE *__restrict__ emb,
                                const float *__restrict__ w, float eps, float *__restrict__ x, T *__restrict__ y,
                                const int *__restrict__ counts, int Mp, int d) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
  if (row >= Mp) return;
  float *xr = x + (int64_t)row * d;
  T *yr = y + (int64_t)row * d;
  if (row >= counts[CNT_TOKENS]) {
#pragma unroll 8
    for (int j = lane; j < d; j += 32) {
      xr[j] = 0.f;
      yr[j] = fromf<T>(0.f);
    }
    return;
  }
  const TE *e = emb + (int64_t)tokens[row] * d;
  if (d <= 32 * LN_MAXV) {
    float v[LN_MAXV];
#pragma unroll
    for (int i = 0; i < LN_MAXV; i++) v[i] = (lane + 32 * i < d) ? tof(e[lane + 32 * i]) : 0.f;
    float mu, rs;
    ln_stats(v, d, lane, eps, &mu, &rs);
#pragma unroll
    for (int i = 0; i < LN_MAXV; i++) {
      int j = lane + 32 * i;
      if (j < d) {
        float o = (v[i] - mu) * rs * w[j];
        xr[j] = o;
        yr[j] = fromf<T>(o);
      }
    }
  } else {
#pragma unroll 8
    for (int j = lane; j < d; j += 32) xr[j] = tof(e[j]);
    __syncwarp();
    float mu, rs;
    ln_stats_mem(xr, d, lane, eps, &mu, &rs);
#pragma unroll 8
    for (int j = lane; j < d; j += 32) {
      float o = (xr[j] - mu) * rs * w[j];
      xr[j] = o;
      yr[j] = fromf<T>(o);
    }
  }
}

template <class T>
static void embed_ln_t(cudaStream_t s, const int32_t *tokens, const void *emb, int emb_dt, const float *w, float eps,
                       float *x, T *y, const int *counts, int Mp, int d) {
  unsigned g = blocks_for(Mp, 8);
  if (emb_dt == CU_F32) embed_ln_kernel<<<g, 256, 0, s>>>(tokens, (const float *)emb, w, eps, x, y, counts, Mp, d);
  else if (emb_dt == CU_F16) embed_ln_kernel<<<g, 256, 0, s>>>(tokens, (const __half *)emb, w, eps, x, y, counts, Mp, d);
  else embed_ln_kernel<<<g, 256, 0, s>>>(tokens, (const __nv_bfloat16 *)emb, w, eps, x, y, counts, Mp, d);
}

void k_embed_ln(cudaStream_t s, int half16, const int32_t *tokens, const void *emb, int emb_dt, const float *w,
                float eps, float *x, void *y, const int *counts, int Mp, int d) {
  if (half16) embed_ln_t(s, tokens, emb, emb_dt, w, eps, x, (__half *)y, counts, Mp, d);
  else embed_ln_t(s, tokens, emb, emb_dt, w, eps, x, (__nv_bfloat16 *)y, counts, Mp, d);
}

/* y (16-bit) = LN(x) * w (+ b). */
template <class T>
__global__ void ln_kernel(const float *__restrict__ x, const float *__restrict__ w, const float *__restrict__ b,
                          float eps, T *__restrict__ y, int Mp, int d) {
  pdl_enter();
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
  if (row >= Mp) return;
  const float *xr = x + (int64_t)row * d;
  T *yr = y + (int64_t)row * d;
  if (d <= 32 * LN_MAXV) {
    float v[LN_MAXV];
#pragma unroll
    for (int i = 0; i < LN_MAXV; i++) v[i] = (lane + 32 * i < d) ? xr[lane + 32 * i] : 0.f;
    float mu, rs;
    ln_stats(v, d, lane, eps, &mu, &rs);
#pragma unroll
    for (int i = 0; i < LN_MAXV; i++) {
      int j = lane + 32 * i;
      if (j < d) yr[j] = fromf<T>((v[i] - mu) * rs * w[j] + (b ? b[j] : 0.f));
    }
  } else {
    float mu, rs;
    ln_stats_mem(xr, d, lane, eps, &mu, &rs);
#pragma unroll 8
    for (int j = lane; j < d; j += 32) yr[j] = fromf<T>((xr[j] - mu) * rs * w[j] + (b ? b[j] : 0.f));
  }
}

/* The common case, d a multiple of 128 up to 1024 (ln_row.cuh: the row load and statistics). */
template <class T, int NV>
__global__ void ln4_kernel(const float *x, const float *w, const float *b, float eps, T *y, int Mp, int d) {
  pdl_enter();
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
  if (row >= Mp) return;
  /* the weight and bias first: their loads overlap the row's and the reductions (at one 128-token
   * row a LayerNorm is a chain of dependent latencies, not bandwidth) */
  const float4 *w4 = reinterpret_cast<const float4 *>(w), *b4 = reinterpret_cast<const float4 *>(b);
  float4 wv[NV], bv[NV];
#pragma unroll
  for (int i = 0; i < NV; i++) {
    wv[i] = w4[lane + 32 * i];
    bv[i] = b ? b4[lane + 32 * i] : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  float4 v[NV];
  float mu, rs;
  ln4_load_stats<NV>(x, row, d, lane, eps, v, &mu, &rs);
#pragma unroll
  for (int i = 0; i < NV; i++) {
    int c4 = lane + 32 * i;
    const float4 ww = wv[i];
    const float4 bb = bv[i];
    T o[4] = {fromf<T>((v[i].x - mu) * rs * ww.x + bb.x), fromf<T>((v[i].y - mu) * rs * ww.y + bb.y),
              fromf<T>((v[i].z - mu) * rs * ww.z + bb.z), fromf<T>((v[i].w - mu) * rs * ww.w + bb.w)};
    *reinterpret_cast<uint2 *>(y + (int64_t)row * d + 4 * c4) = *reinterpret_cast<uint2 *>(o);
  }
}

/* The widths the ln4 kernels are compiled for (d = 128 NV): launch(std::integral_constant<int, NV>)
 * and true, or false for another width. */
template <class F> static bool ln4_dispatch(int d, F &&launch) {
  switch (d % 128 == 0 ? d / 128 : 0) {
    case 1: launch(std::integral_constant<int, 1>()); return true;
    case 2: launch(std::integral_constant<int, 2>()); return true;
    case 4: launch(std::integral_constant<int, 4>()); return true;
    case 6: launch(std::integral_constant<int, 6>()); return true;
    case 8: launch(std::integral_constant<int, 8>()); return true;
    default: return false;
  }
}

template <class T>
static bool ln4_launch(cudaStream_t s, const float *x, const float *w, const float *b, float eps, T *y, int Mp, int d) {
  const unsigned g = blocks_for(Mp, 8);
  return ln4_dispatch(d, [&](auto nv) { launch_dep((ln4_kernel<T, decltype(nv)::value>), g, 256, 0, s, x, w, b, eps,
                                                   y, Mp, d); });
}

/* fp8 mode: the LayerNorm written straight as E4M3 with its row's scale (fp8_rule.cuh), instead of a 16-bit y that the next GEMM's quantisation reads back. */
template <int NV>
__global__ void ln4_fp8_kernel(const float *x, const float *w, float eps, uint8_t *q, float *scale, int Mp, int d) {
  pdl_enter();
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
  if (row >= Mp) return;
  float4 v[NV];
  float mu, rs, mx = 0.f;
  ln4_load_stats<NV>(x, row, d, lane, eps, v, &mu, &rs);
  const float4 *w4 = reinterpret_cast<const float4 *>(w);
#pragma unroll
  for (int i = 0; i < NV; i++) {
    const float4 ww = w4[lane + 32 * i];
    v[i] = make_float4((v[i].x - mu) * rs * ww.x, (v[i].y - mu) * rs * ww.y, (v[i].z - mu) * rs * ww.z,
                       (v[i].w - mu) * rs * ww.w);
    mx = fmaxf(mx, fmaxf(fmaxf(fabsf(v[i].x), fabsf(v[i].y)), fmaxf(fabsf(v[i].z), fabsf(v[i].w))));
  }
  mx = warp_max(mx);
  const float sc = fp8_row_scale(mx), inv = 1.0f / sc;
  if (lane == 0) scale[row] = sc;
#pragma unroll
  for (int i = 0; i < NV; i++)
    *reinterpret_cast<uint32_t *>(q + (int64_t)row * d + 4 * (lane + 32 * i)) =
        fp8_pack4(v[i].x, v[i].y, v[i].z, v[i].w, inv);
}

int k_ln_fp8(cudaStream_t s, const float *x, const float *w, float eps, void *q, float *scale, int Mp, int d) {
  const unsigned g = blocks_for(Mp, 8);
  uint8_t *q8 = (uint8_t *)q;
  return ln4_dispatch(d, [&](auto nv) { launch_dep((ln4_fp8_kernel<decltype(nv)::value>), g, 256, 0, s, x, w, eps, q8,
                                                   scale, Mp, d); })
             ? 0
             : -1;
}

void k_ln(cudaStream_t s, int half16, const float *x, const float *w, const float *b, float eps, void *y, int Mp,
          int d) {
  if (half16 ? ln4_launch(s, x, w, b, eps, (__half *)y, Mp, d) : ln4_launch(s, x, w, b, eps, (__nv_bfloat16 *)y, Mp, d))
    return;
  unsigned g = blocks_for(Mp, 8);
  if (half16) launch_dep((ln_kernel<__half>), g, 256, 0, s, x, w, b, eps, (__half *)y, Mp, d);
  else launch_dep((ln_kernel<__nv_bfloat16>), g, 256, 0, s, x, w, b, eps, (__nv_bfloat16 *)y, Mp, d);
}

/* The encoder's end: x = final_norm(x) + type_emb[qtype[row]] (fp32, in place; type_emb NULL: the
 * norm alone, the embed pass), then the first head layer's norm1: y = LN(x) * n1w + n1b (skipped
 * when n1w is NULL: no head layers, or the embed pass). */
template <class T>
__global__ void final_ln_kernel(float *__restrict__ x, const float *__restrict__ fw, float eps,
                                const float *__restrict__ type_emb, const int32_t *__restrict__ tok_row,
                                const int32_t *__restrict__ qtype, const float *__restrict__ n1w,
                                const float *__restrict__ n1b, T *__restrict__ y, int Mp, int d) {
  pdl_enter();
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
  if (row >= Mp) return;
  float *xr = x + (int64_t)row * d;
  if (d <= 32 * LN_MAXV) {
    /* every operand of both norms is loaded before the reductions that would delay it (one
     * dependent round trip each otherwise, from DRAM: the head's weights are not in L2) */
    float v[LN_MAXV], g[LN_MAXV], t[LN_MAXV];
#pragma unroll
    for (int i = 0; i < LN_MAXV; i++) {
      const int j = lane + 32 * i;
      v[i] = j < d ? xr[j] : 0.f;
      g[i] = j < d ? fw[j] : 0.f;
    }
    const float *te = type_emb ? type_emb + (int64_t)qtype[tok_row[row]] * d : NULL;
#pragma unroll
    for (int i = 0; i < LN_MAXV; i++) t[i] = te && lane + 32 * i < d ? te[lane + 32 * i] : 0.f;
    float mu, rs;
    ln_stats(v, d, lane, eps, &mu, &rs);
#pragma unroll
    for (int i = 0; i < LN_MAXV; i++) {
      int j = lane + 32 * i;
      if (j < d) {
        v[i] = (v[i] - mu) * rs * g[i] + t[i];
        xr[j] = v[i];
      }
    }
    if (!n1w) return;
#pragma unroll
    for (int i = 0; i < LN_MAXV; i++) {
      const int j = lane + 32 * i;
      g[i] = j < d ? n1w[j] : 0.f;
      t[i] = j < d ? n1b[j] : 0.f;
    }
    ln_stats(v, d, lane, MODEL_HEAD_LN_EPS, &mu, &rs);
    T *yr = y + (int64_t)row * d;
#pragma unroll
    for (int i = 0; i < LN_MAXV; i++) {
      int j = lane + 32 * i;
      if (j < d) yr[j] = fromf<T>((v[i] - mu) * rs * g[i] + t[i]);
    }
  } else {
    const float *te = type_emb ? type_emb + (int64_t)qtype[tok_row[row]] * d : NULL;
    float mu, rs;
    ln_stats_mem(xr, d, lane, eps, &mu, &rs);
#pragma unroll 8
    for (int j = lane; j < d; j += 32) xr[j] = (xr[j] - mu) * rs * fw[j] + (te ? te[j] : 0.f);
    __syncwarp();
    if (!n1w) return;
    ln_stats_mem(xr, d, lane, MODEL_HEAD_LN_EPS, &mu, &rs);
    T *yr = y + (int64_t)row * d;
#pragma unroll 8
    for (int j = lane; j < d; j += 32) yr[j] = fromf<T>((xr[j] - mu) * rs * n1w[j] + n1b[j]);
  }
}

void k_final_ln(cudaStream_t s, int half16, float *x, const float *fw, float eps, const float *type_emb,
                const int32_t *tok_row, const int32_t *qtype, const float *n1w, const float *n1b, void *y, int Mp,
                int d) {
  unsigned g = blocks_for(Mp, 8);
  if (half16) launch_dep((final_ln_kernel<__half>), g, 256, 0, s, x, fw, eps, type_emb, tok_row, qtype, n1w, n1b,
                         (__half *)y, Mp, d);
  else launch_dep((final_ln_kernel<__nv_bfloat16>), g, 256, 0, s, x, fw, eps, type_emb, tok_row, qtype, n1w, n1b,
                  (__nv_bfloat16 *)y, Mp, d);
}

/* ---------------------------------------------------------------------------------------------
 * RoPE on K, in place in the packed QKV buffer (Q is rotated inside the attention kernel, where
 * it is read once). Rotate-half pairs (j, j + hd/2), fp32 maths, table[pos][j] = (cos, sin).
 */
template <class T>
__global__ void rope_k_kernel(T *qkv, const int32_t *tok_pos, const float2 *table, const int *counts, int Mp, int H,
                              int hd) {
  pdl_enter();
  int half = hd / 2;
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  int64_t total = (int64_t)Mp * H * half;
  if (i >= total) return;
  int j = (int)(i % half);
  int64_t th = i / half;
  int h = (int)(th % H);
  int t = (int)(th / H);
  if (t >= counts[CNT_TOKENS]) return;
  T *k = qkv + (int64_t)t * 3 * H * hd + (int64_t)H * hd + (int64_t)h * hd;
  float2 cs = table[(int64_t)tok_pos[t] * half + j];
  float a = tof(k[j]), b = tof(k[j + half]);
  k[j] = fromf<T>(a * cs.x - b * cs.y);
  k[j + half] = fromf<T>(b * cs.x + a * cs.y);
}

/* Eight pairs per thread with 16-byte loads (hd / 2 a multiple of 8); one block per token
 * (blockIdx.x), threads over (head, group of 8 pairs): no 64-bit index division. */
template <class T>
__global__ void rope_k8_kernel(T *qkv, const int32_t *tok_pos, const float2 *table, const int *counts, int Mp, int H,
                               int hd) {
  pdl_enter();
  const int half = hd / 2, groups = half / 8;
  const int t = blockIdx.x;
  if (t >= counts[CNT_TOKENS]) return;
  const int hg = blockIdx.y * blockDim.x + threadIdx.x;
  if (hg >= H * groups) return;
  const int h = hg / groups, g = hg - h * groups;
  T *k = qkv + (int64_t)t * 3 * H * hd + (int64_t)H * hd + (int64_t)h * hd + g * 8;
  const float4 *cs4 = reinterpret_cast<const float4 *>(table + (int64_t)tok_pos[t] * half + g * 8);
  uint4 ua = *reinterpret_cast<const uint4 *>(k), ub = *reinterpret_cast<const uint4 *>(k + half);
  float4 cq[4];
#pragma unroll
  for (int e = 0; e < 4; e++) cq[e] = cs4[e];
  const float2 *cs = reinterpret_cast<const float2 *>(cq);
  T *a = reinterpret_cast<T *>(&ua), *b = reinterpret_cast<T *>(&ub);
#pragma unroll
  for (int e = 0; e < 8; e++) {
    float2 c = cs[e];
    float x0 = tof(a[e]), x1 = tof(b[e]);
    a[e] = fromf<T>(x0 * c.x - x1 * c.y);
    b[e] = fromf<T>(x1 * c.x + x0 * c.y);
  }
  *reinterpret_cast<uint4 *>(k) = ua;
  *reinterpret_cast<uint4 *>(k + half) = ub;
}

void k_rope_k(cudaStream_t s, int half16, void *qkv, const int32_t *tok_pos, const float2 *table, const int *counts,
              int Mp, int H, int hd) {
  if ((hd / 2) % 8 == 0) {
    const int per_tok = H * (hd / 16), nt = per_tok < 128 ? 32 * ((per_tok + 31) / 32) : 128;
    dim3 g((unsigned)Mp, (unsigned)((per_tok + nt - 1) / nt));
    if (half16) launch_dep((rope_k8_kernel<__half>), g, nt, 0, s, (__half *)qkv, tok_pos, table, counts, Mp, H, hd);
    else launch_dep((rope_k8_kernel<__nv_bfloat16>), g, nt, 0, s, (__nv_bfloat16 *)qkv, tok_pos, table, counts, Mp, H,
                    hd);
    return;
  }
  int64_t total = (int64_t)Mp * H * (hd / 2);
  unsigned g = blocks_for(total, 256);
  if (half16) launch_dep((rope_k_kernel<__half>), g, 256, 0, s, (__half *)qkv, tok_pos, table, counts, Mp, H, hd);
  else launch_dep((rope_k_kernel<__nv_bfloat16>), g, 256, 0, s, (__nv_bfloat16 *)qkv, tok_pos, table, counts, Mp, H,
                  hd);
}

/* ---------------------------------------------------------------------------------------------
 * GeGLU in place: h[:, j] = act(h[:, j]) * h[:, I + j] for j < I, act the encoder's
 * hidden_activation (weights.h enc_act, a template argument: one kernel per kind); the next GEMM
 * reads the first I columns with a row stride of 2I.
 */

template <class T, int A> __global__ void geglu_kernel(T *h, int Mp, int I) {
  pdl_enter();
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  int64_t total = (int64_t)Mp * I;
  if (i >= total) return;
  int64_t r = i / I;
  int j = (int)(i % I);
  T *row = h + r * 2 * I;
  row[j] = fromf<T>(glu_act<A>(tof(row[j])) * tof(row[I + j]));
}

template <class T, int A> __global__ void geglu_kernel8(T *h, int Mp, int I) {
  pdl_enter();
  /* vectorised: I a multiple of 8, 16-byte loads and stores; 32-bit index arithmetic (the
   * launcher keeps Mp * I / 8 below 2^31) */
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned I8 = (unsigned)I / 8u;
  if (i >= (unsigned)Mp * I8) return;
  unsigned r = i / I8;
  int j = (int)(i - r * I8) * 8;
  T *row = h + (int64_t)r * 2 * I;
  uint4 ua = *reinterpret_cast<const uint4 *>(row + j), ug = *reinterpret_cast<const uint4 *>(row + I + j);
  T *a = reinterpret_cast<T *>(&ua), *g = reinterpret_cast<T *>(&ug);
#pragma unroll
  for (int e = 0; e < 8; e++) a[e] = fromf<T>(glu_act<A>(tof(a[e])) * tof(g[e]));
  *reinterpret_cast<uint4 *>(row + j) = ua;
}

template <int A> static void geglu_launch(cudaStream_t s, int half16, void *h, int Mp, int I) {
  if (I % 8 == 0 && (int64_t)Mp * (I / 8) < ((int64_t)1 << 31)) {
    unsigned g = blocks_for((int64_t)Mp * (I / 8), 256);
    if (half16) launch_dep((geglu_kernel8<__half, A>), g, 256, 0, s, (__half *)h, Mp, I);
    else launch_dep((geglu_kernel8<__nv_bfloat16, A>), g, 256, 0, s, (__nv_bfloat16 *)h, Mp, I);
  } else {
    unsigned g = blocks_for((int64_t)Mp * I, 256);
    if (half16) launch_dep((geglu_kernel<__half, A>), g, 256, 0, s, (__half *)h, Mp, I);
    else launch_dep((geglu_kernel<__nv_bfloat16, A>), g, 256, 0, s, (__nv_bfloat16 *)h, Mp, I);
  }
}

/* fp8 mode: the GLU product of a bf16 row written as E4M3 [Mp, I] with its row's scale; one block
 * per row, each thread keeping up to CH chunks of 8 values in registers between the row's maximum
 * and the write. */
template <int A, int CH>
__global__ void __launch_bounds__(128) geglu_fp8_kernel(const __nv_bfloat16 *h, int I, uint8_t *q, float *scale) {
  pdl_enter();
  const int r = blockIdx.x;
  const __nv_bfloat16 *row = h + (int64_t)r * 2 * I;
  float o[CH][8];
  float mx = 0.f;
#pragma unroll
  for (int c = 0; c < CH; c++) {
    const int j = (threadIdx.x + 128 * c) * 8;
    if (j >= I) break;
    const uint4 ua = *reinterpret_cast<const uint4 *>(row + j), ug = *reinterpret_cast<const uint4 *>(row + I + j);
    const __nv_bfloat16 *a = reinterpret_cast<const __nv_bfloat16 *>(&ua), *g = reinterpret_cast<const __nv_bfloat16 *>(&ug);
#pragma unroll
    for (int e = 0; e < 8; e++) {
      o[c][e] = glu_act<A>(tof(a[e])) * tof(g[e]);
      mx = fmaxf(mx, fabsf(o[c][e]));
    }
  }
  __shared__ float part[4];
  mx = warp_max(mx);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = mx;
  __syncthreads();
  mx = fmaxf(fmaxf(part[0], part[1]), fmaxf(part[2], part[3]));
  const float sc = fp8_row_scale(mx), inv = 1.0f / sc;
  if (threadIdx.x == 0) scale[r] = sc;
#pragma unroll
  for (int c = 0; c < CH; c++) {
    const int j = (threadIdx.x + 128 * c) * 8;
    if (j >= I) break;
    const float *v = o[c];
    *reinterpret_cast<uint2 *>(q + (int64_t)r * I + j) =
        make_uint2(fp8_pack4(v[0], v[1], v[2], v[3], inv), fp8_pack4(v[4], v[5], v[6], v[7], inv));
  }
}

template <int A> static int geglu_fp8_launch(cudaStream_t s, const void *h, int Mp, int I, void *q, float *scale) {
  if (I % 8 != 0 || I > 128 * 8 * 4 || Mp <= 0) return -1;
  launch_dep((geglu_fp8_kernel<A, 4>), Mp, 128, 0, s, (const __nv_bfloat16 *)h, I, (uint8_t *)q, scale);
  return 0;
}

int k_geglu_fp8(cudaStream_t s, const void *h, int Mp, int I, int act, void *q, float *scale) {
  switch (act) {
    case ENC_ACT_GELU_TANH: return geglu_fp8_launch<ENC_ACT_GELU_TANH>(s, h, Mp, I, q, scale);
    case ENC_ACT_QUICK_GELU: return geglu_fp8_launch<ENC_ACT_QUICK_GELU>(s, h, Mp, I, q, scale);
    case ENC_ACT_SILU: return geglu_fp8_launch<ENC_ACT_SILU>(s, h, Mp, I, q, scale);
    case ENC_ACT_RELU: return geglu_fp8_launch<ENC_ACT_RELU>(s, h, Mp, I, q, scale);
    case ENC_ACT_GELU_10: return geglu_fp8_launch<ENC_ACT_GELU_10>(s, h, Mp, I, q, scale);
    case ENC_ACT_MISH: return geglu_fp8_launch<ENC_ACT_MISH>(s, h, Mp, I, q, scale);
    case ENC_ACT_RELU2: return geglu_fp8_launch<ENC_ACT_RELU2>(s, h, Mp, I, q, scale);
    case ENC_ACT_RELU6: return geglu_fp8_launch<ENC_ACT_RELU6>(s, h, Mp, I, q, scale);
    case ENC_ACT_LEAKY_RELU: return geglu_fp8_launch<ENC_ACT_LEAKY_RELU>(s, h, Mp, I, q, scale);
    case ENC_ACT_HARDSWISH: return geglu_fp8_launch<ENC_ACT_HARDSWISH>(s, h, Mp, I, q, scale);
    case ENC_ACT_TANH: return geglu_fp8_launch<ENC_ACT_TANH>(s, h, Mp, I, q, scale);
    case ENC_ACT_SIGMOID: return geglu_fp8_launch<ENC_ACT_SIGMOID>(s, h, Mp, I, q, scale);
    case ENC_ACT_LINEAR: return geglu_fp8_launch<ENC_ACT_LINEAR>(s, h, Mp, I, q, scale);
    case ENC_ACT_LAPLACE: return geglu_fp8_launch<ENC_ACT_LAPLACE>(s, h, Mp, I, q, scale);
    case ENC_ACT_SQRT_SOFTPLUS: return geglu_fp8_launch<ENC_ACT_SQRT_SOFTPLUS>(s, h, Mp, I, q, scale);
    default: return geglu_fp8_launch<ENC_ACT_GELU>(s, h, Mp, I, q, scale);
  }
}

void k_geglu(cudaStream_t s, int half16, void *h, int Mp, int I, int act) {
  switch (act) {
    case ENC_ACT_GELU_TANH: geglu_launch<ENC_ACT_GELU_TANH>(s, half16, h, Mp, I); break;
    case ENC_ACT_QUICK_GELU: geglu_launch<ENC_ACT_QUICK_GELU>(s, half16, h, Mp, I); break;
    case ENC_ACT_SILU: geglu_launch<ENC_ACT_SILU>(s, half16, h, Mp, I); break;
    case ENC_ACT_RELU: geglu_launch<ENC_ACT_RELU>(s, half16, h, Mp, I); break;
    case ENC_ACT_GELU_10: geglu_launch<ENC_ACT_GELU_10>(s, half16, h, Mp, I); break;
    case ENC_ACT_MISH: geglu_launch<ENC_ACT_MISH>(s, half16, h, Mp, I); break;
    case ENC_ACT_RELU2: geglu_launch<ENC_ACT_RELU2>(s, half16, h, Mp, I); break;
    case ENC_ACT_RELU6: geglu_launch<ENC_ACT_RELU6>(s, half16, h, Mp, I); break;
    case ENC_ACT_LEAKY_RELU: geglu_launch<ENC_ACT_LEAKY_RELU>(s, half16, h, Mp, I); break;
    case ENC_ACT_HARDSWISH: geglu_launch<ENC_ACT_HARDSWISH>(s, half16, h, Mp, I); break;
    case ENC_ACT_TANH: geglu_launch<ENC_ACT_TANH>(s, half16, h, Mp, I); break;
    case ENC_ACT_SIGMOID: geglu_launch<ENC_ACT_SIGMOID>(s, half16, h, Mp, I); break;
    case ENC_ACT_LINEAR: geglu_launch<ENC_ACT_LINEAR>(s, half16, h, Mp, I); break;
    case ENC_ACT_LAPLACE: geglu_launch<ENC_ACT_LAPLACE>(s, half16, h, Mp, I); break;
    case ENC_ACT_SQRT_SOFTPLUS: geglu_launch<ENC_ACT_SQRT_SOFTPLUS>(s, half16, h, Mp, I); break;
    default: geglu_launch<ENC_ACT_GELU>(s, half16, h, Mp, I); break;
  }
}

/* ---------------------------------------------------------------------------------------------
 * Decision tail, all fp32: marker gather + scorer LayerNorm, scorer output, confidence features
 * and the act head's input, act head output.
 */
__global__ void gather_ln_kernel(const float *__restrict__ x, const int32_t *__restrict__ marker_tok,
                                 const int *__restrict__ counts, const float *__restrict__ w,
                                 const float *__restrict__ b, float *__restrict__ out, int NMp, int d) {
  pdl_enter();
  int m = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
  if (m >= NMp) return;
  float *o = out + (int64_t)m * d;
  if (m >= counts[CNT_MARKERS]) {
#pragma unroll 8
    for (int j = lane; j < d; j += 32) o[j] = 0.f;
    return;
  }
  const float *xr = x + (int64_t)(marker_tok ? marker_tok[m] : m) * d;
  float mu, rs;
  if (d <= 32 * LN_MAXV) { /* all loads first (see final_ln_kernel) */
    float v[LN_MAXV], g[LN_MAXV], t[LN_MAXV];
#pragma unroll
    for (int i = 0; i < LN_MAXV; i++) {
      const int j = lane + 32 * i;
      g[i] = j < d ? w[j] : 0.f;
      t[i] = j < d ? b[j] : 0.f;
      v[i] = j < d ? xr[j] : 0.f;
    }
    ln_stats(v, d, lane, MODEL_HEAD_LN_EPS, &mu, &rs);
#pragma unroll
    for (int i = 0; i < LN_MAXV; i++)
      if (lane + 32 * i < d) o[lane + 32 * i] = (v[i] - mu) * rs * g[i] + t[i];
    return;
  }
  ln_stats_mem(xr, d, lane, MODEL_HEAD_LN_EPS, &mu, &rs);
#pragma unroll 8
  for (int j = lane; j < d; j += 32) o[j] = (xr[j] - mu) * rs * w[j] + b[j];
}

void k_gather_ln(cudaStream_t s, const float *x, const int32_t *marker_tok, const int *counts, const float *w,
                 const float *b, float *out, int NMp, int d) {
  launch_dep((gather_ln_kernel), blocks_for(NMp, 8), 256, 0, s, x, marker_tok, counts, w, b, out, NMp, d);
}

/* One warp per row, 16-byte copies when d is a multiple of 4. */
__global__ void gather_rows_kernel(const float *__restrict__ x, const int32_t *__restrict__ rows,
                                   float *__restrict__ dst, int n, int d) {
  pdl_enter();
  int i = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
  if (i >= n) return;
  const float *src = x + (int64_t)rows[i] * d;
  float *o = dst + (int64_t)i * d;
  if (d % 4 == 0) {
    for (int j = lane; j < d / 4; j += 32)
      reinterpret_cast<float4 *>(o)[j] = reinterpret_cast<const float4 *>(src)[j];
  } else {
#pragma unroll 8
    for (int j = lane; j < d; j += 32) o[j] = src[j];
  }
}

void k_gather_rows(cudaStream_t s, const float *x, const int32_t *rows, float *dst, int n, int d) {
  launch_dep((gather_rows_kernel), blocks_for(n, 8), 256, 0, s, x, rows, dst, n, d);
}

/* logits[m] = w2 . gelu(hid[m]) + b2 */
__global__ void scorer_out_kernel(const float *__restrict__ hid, const float *__restrict__ w2,
                                  const float *__restrict__ b2, const int *__restrict__ counts,
                                  float *__restrict__ logits, int NMp, int d) {
  pdl_enter();
  int m = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
  if (m >= NMp) return;
  if (m >= counts[CNT_MARKERS]) {
    if (lane == 0) logits[m] = 0.f;
    return;
  }
  const float *h = hid + (int64_t)m * d;
  float s = 0.f;
  if (d <= 32 * LN_MAXV) { /* all loads first (see final_ln_kernel) */
    float hv[LN_MAXV], wv[LN_MAXV];
#pragma unroll
    for (int i = 0; i < LN_MAXV; i++) {
      const int j = lane + 32 * i;
      hv[i] = j < d ? h[j] : 0.f;
      wv[i] = j < d ? w2[j] : 0.f;
    }
#pragma unroll
    for (int i = 0; i < LN_MAXV; i++) s += gelu_erf(hv[i]) * wv[i];
  } else {
#pragma unroll 8
    for (int j = lane; j < d; j += 32) s += gelu_erf(h[j]) * w2[j];
  }
  s = warp_sum(s);
  if (lane == 0) logits[m] = s + b2[0];
}

void k_scorer_out(cudaStream_t s, const float *hid, const float *w2, const float *b2, const int *counts,
                  float *logits, int NMp, int d) {
  launch_dep((scorer_out_kernel), blocks_for(NMp, 8), 256, 0, s, hid, w2, b2, counts, logits, NMp, d);
}

/* One warp per row: the four confidence features over the row's logits (softmax over the batch's
 * marker width, padded slots at -1e4 as in Laya, so a row with k markers sees exactly its own k
 * unless k == 0), then act_in[r] = [h[CLS], top1, top1 - top2, entropy, k / 255, 0...]. */
__global__ void features_kernel(const float *__restrict__ x, const float *__restrict__ clsx,
                                const float *__restrict__ logits, const int32_t *__restrict__ row_start,
                                const int32_t *__restrict__ marker_start, const int *__restrict__ counts,
                                float *__restrict__ act_in, int Rp, int d,
                                int ld_act) {
  pdl_enter();
  int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
  if (r >= Rp) return;
  float *o = act_in + (int64_t)r * ld_act;
  if (r >= counts[CNT_ROWS]) {
#pragma unroll 8
    for (int j = lane; j < ld_act; j += 32) o[j] = 0.f;
    return;
  }
  const float *cls = clsx ? clsx + (int64_t)r * d : x + (int64_t)row_start[r] * d;
#pragma unroll 8
  for (int j = lane; j < d; j += 32) o[j] = cls[j];
#pragma unroll 8
  for (int j = d + 4 + lane; j < ld_act; j += 32) o[j] = 0.f;
  int m0 = marker_start[r], k = marker_start[r + 1] - m0, kmax = counts[CNT_KMAX];
  int width = kmax > k ? kmax : k;
  /* max over the real logits and the padding (-1e4) */
  float mx = -INFINITY;
  for (int i = lane; i < k; i += 32) mx = fmaxf(mx, logits[m0 + i]);
  mx = warp_max(mx);
  if (width > k) mx = fmaxf(mx, -1e4f);
  float se = 0.f;
  for (int i = lane; i < k; i += 32) se += expf(logits[m0 + i] - mx);
  se = warp_sum(se) + (float)(width - k) * expf(-1e4f - mx);
  float ent = 0.f, t1 = 0.f, t2 = 0.f;
  for (int i = lane; i < width; i += 32) {
    float p = expf((i < k ? logits[m0 + i] : -1e4f) - mx) / se;
    ent += p * logf(fmaxf(p, 1e-9f));
    if (p > t1) {
      t2 = t1;
      t1 = p;
    } else if (p > t2) {
      t2 = p;
    }
  }
  ent = warp_sum(ent);
  /* merge the lanes' top-2 */
  for (int off = 16; off > 0; off >>= 1) {
    float o1 = __shfl_xor_sync(0xffffffffu, t1, off), o2 = __shfl_xor_sync(0xffffffffu, t2, off);
    float n1 = fmaxf(t1, o1);
    float n2 = fmaxf(fminf(t1, o1), fmaxf(t2, o2));
    t1 = n1;
    t2 = n2;
  }
  if (width < 2) t2 = 0.f;
  float kk = (float)(k < 2 ? 2 : k);
  if (lane == 0) {
    o[d] = t1;
    o[d + 1] = t1 - t2;
    o[d + 2] = -ent / logf(kk);
    o[d + 3] = kk / 255.0f;
  }
}

void k_features(cudaStream_t s, const float *x, const float *cls, const float *logits, const int32_t *row_start,
                const int32_t *marker_start, const int *counts, float *act_in, int Rp, int d, int ld_act) {
  launch_dep((features_kernel), blocks_for(Rp, 8), 256, 0, s, x, cls, logits, row_start, marker_start, counts, act_in,
             Rp, d,
                                                    ld_act);
}

/* act[r, a] = w2[a] . gelu(hid[r]) + b2[a]; one warp per (row, output). */
__global__ void act_out_kernel(const float *__restrict__ hid, const float *__restrict__ w2,
                               const float *__restrict__ b2, const int *__restrict__ counts, float *__restrict__ act,
                               int Rp, int n_hidden, int n_act) {
  pdl_enter();
  int idx = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
  if (idx >= Rp * n_act) return;
  int r = idx / n_act, a = idx % n_act;
  if (r >= counts[CNT_ROWS]) {
    if (lane == 0) act[idx] = 0.f;
    return;
  }
  const float *h = hid + (int64_t)r * n_hidden;
  const float *w = w2 + (int64_t)a * n_hidden;
  float s = 0.f;
#pragma unroll 8
  for (int j = lane; j < n_hidden; j += 32) s += gelu_erf(h[j]) * w[j];
  s = warp_sum(s);
  if (lane == 0) act[idx] = s + b2[a];
}

void k_act_out(cudaStream_t s, const float *hid, const float *w2, const float *b2, const int *counts, float *act,
               int Rp, int n_hidden, int n_act) {
  launch_dep((act_out_kernel), blocks_for((int64_t)Rp * n_act, 8), 256, 0, s, hid, w2, b2, counts, act, Rp, n_hidden,
             n_act);
}

/* ---------------------------------------------------------------------------------------------
 * The embed pass's pooling (backend.embed; backend_mean_rows on the CPU): pooled[r][i] = the mean
 * of x[t][i] over row r's tokens, summed in double in token order and divided in double, one
 * thread per (row, column); rows past the real count write zeros.
 */
__global__ void mean_rows_kernel(const float *__restrict__ x, const int32_t *__restrict__ row_start,
                                 const int *__restrict__ counts, float *__restrict__ pooled, int Rp,
                                 int d) {
  pdl_enter();
  int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (int64_t)Rp * d) return;
  const int r = (int)(idx / d), i = (int)(idx % d);
  if (r >= counts[CNT_ROWS]) {
    pooled[idx] = 0.f;
    return;
  }
  const int t0 = row_start[r], t1 = row_start[r + 1];
  double acc = 0.0;
  for (int t = t0; t < t1; t++) acc += (double)x[(int64_t)t * d + i];
  pooled[idx] = (float)(acc / (double)(t1 - t0 > 0 ? t1 - t0 : 1));
}

void k_mean_rows(cudaStream_t s, const float *x, const int32_t *row_start, const int *counts, float *pooled, int Rp,
                 int d) {
  launch_dep((mean_rows_kernel), blocks_for((int64_t)Rp * d, 256), 256, 0, s, x, row_start, counts, pooled, Rp, d);
}
