/*
 * attn_util.cuh: the small device helpers both attention kernels use (attention.cu: mma.sync,
 * any GPU; attention_sm90.cu: wgmma, Hopper): 16-bit conversions, mma.sync and ldmatrix, async
 * copies, exp2, and RoPE on rotate-half pairs held in registers.
 */
#ifndef LAYA_CUDA_ATTN_UTIL_CUH
#define LAYA_CUDA_ATTN_UTIL_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace {

__device__ __forceinline__ float tof(__half v) { return __half2float(v); }
__device__ __forceinline__ float tof(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

template <class T> struct pack2;
template <> struct pack2<__half> {
  static __device__ __forceinline__ uint32_t make(float a, float b) {
    __half2 h = __floats2half2_rn(a, b);
    return *reinterpret_cast<uint32_t *>(&h);
  }
  static __device__ __forceinline__ float2 unpack(uint32_t u) {
    __half2 h = *reinterpret_cast<__half2 *>(&u);
    return __half22float2(h);
  }
};
template <> struct pack2<__nv_bfloat16> {
  static __device__ __forceinline__ uint32_t make(float a, float b) {
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<uint32_t *>(&h);
  }
  static __device__ __forceinline__ float2 unpack(uint32_t u) {
    __nv_bfloat162 h = *reinterpret_cast<__nv_bfloat162 *>(&u);
    return __bfloat1622float2(h);
  }
};

template <class T> __device__ __forceinline__ void mma16816(float *c, const uint32_t *a, uint32_t b0, uint32_t b1);
template <> __device__ __forceinline__ void mma16816<__nv_bfloat16>(float *c, const uint32_t *a, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <> __device__ __forceinline__ void mma16816<__half>(float *c, const uint32_t *a, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void ldsm_x4(uint32_t *r, const void *p) {
  unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t *r, const void *p) {
  unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
/* 16-byte async copy; src_bytes 0 fills the destination with zeros (rows outside the row). */
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, int src_bytes) {
  unsigned a = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(a), "l"(gmem), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait0() { asm volatile("cp.async.wait_group 0;\n" ::); }
__device__ __forceinline__ void cp_async_wait1() { asm volatile("cp.async.wait_group 1;\n" ::); }

__device__ __forceinline__ float fast_exp2(float x) { /* ex2.approx: 2 ulp, -inf -> 0 */
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

/* RoPE on 8 rotate-half pairs held as two 16-byte vectors: a = x[j..j+8), b = x[j+hd/2..+8), cs the
 * (cos, sin) of those 8 pairs; fp32 maths, one rounding, as rope_k. */
template <class T> __device__ __forceinline__ void rope8(uint4 &a, uint4 &b, const float2 *cs) {
  uint32_t *pa = reinterpret_cast<uint32_t *>(&a), *pb = reinterpret_cast<uint32_t *>(&b);
  float4 c4[4];
#pragma unroll
  for (int i = 0; i < 4; i++) c4[i] = reinterpret_cast<const float4 *>(cs)[i];
#pragma unroll
  for (int i = 0; i < 4; i++) {
    float2 x0 = pack2<T>::unpack(pa[i]), x1 = pack2<T>::unpack(pb[i]);
    const float4 c = c4[i]; /* (cos, sin) of pairs 2i and 2i + 1 */
    pa[i] = pack2<T>::make(x0.x * c.x - x1.x * c.y, x0.y * c.z - x1.y * c.w);
    pb[i] = pack2<T>::make(x1.x * c.x + x0.x * c.y, x1.y * c.z + x0.y * c.w);
  }
}

/* Head h of the packed QKV rows ([tokens][3 H hd]: the Q heads, then the K heads, then the V
 * heads): its Q, K and V at token 0, and the row stride in elements. */
template <class T> struct qkv_head {
  const T *q, *k, *v;
  int64_t rs;
};
template <class T> __device__ __forceinline__ qkv_head<T> qkv_head_of(const T *qkv, int H, int hd, int h) {
  const int64_t w = (int64_t)H * hd;
  return qkv_head<T>{qkv + (int64_t)h * hd, qkv + w + (int64_t)h * hd, qkv + 2 * w + (int64_t)h * hd, 3 * w};
}

/* Keys [lo, hi) that queries [q0, q0 + bm) of a row of len tokens may see: all of the row for a
 * global layer (window < 0), else those within window of one of the queries. */
__device__ __forceinline__ void attn_key_range(int q0, int bm, int len, int window, int *lo, int *hi) {
  *lo = 0;
  *hi = len;
  if (window >= 0) {
    *lo = q0 - window > 0 ? q0 - window : 0;
    const int e = q0 + bm + window;
    *hi = e < len ? e : len;
  }
}

} // namespace

#endif
