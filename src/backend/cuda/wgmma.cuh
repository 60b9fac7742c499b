/*
 * wgmma.cuh: what gemm_sm90.cu and attention_sm90.cu share of Hopper's warpgroup matrix
 * instructions (sm_90a): whether a device runs them (host side), and, in sm_90a device code only
 * (WG_SM90; the kernels that use them compile to empty bodies elsewhere), shared-memory
 * addresses, the descriptor of a 128-byte-swizzled tile, the m64n64k16 product from shared memory,
 * fence / commit / wait, and the register fence that keeps the compiler from moving accumulators
 * across a wait.
 */
#ifndef LAYA_CUDA_WGMMA_CUH
#define LAYA_CUDA_WGMMA_CUH

#include <cuda_runtime.h>
#include <stdint.h>

/* Whether device dev runs the sm_90a code: compute capability 9.0 exactly (wgmma is neither on
 * earlier GPUs nor on later ones). */
static inline int wgmma_device(int dev) {
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return major == 9 && minor == 0;
}

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define WG_SM90 1

namespace {

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* wgmma shared-memory descriptor: a tile of 128-byte rows, 128-byte swizzle, 8-row groups 1024
 * bytes apart (the layout a TMA box of 64 16-bit columns writes). K-major it is an A or B operand
 * of rows along M or N; read N-major (the instruction's transposed B) the same numbers describe a
 * B operand one 64-column atom wide whose rows run along K. */
__device__ __forceinline__ uint64_t sdesc(const void *p) {
  uint64_t a = smem_u32(p);
  return ((a & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
__device__ __forceinline__ void wg_wait1() { asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory"); }
/* shared memory written through the generic proxy (st.shared, cp.async) before wgmma (the async
 * proxy) reads it: each writing thread, then a barrier */
__device__ __forceinline__ void wg_fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
/* d (64 x 64 fp32, wgmma's layout) = A B^T + (acc ? d : 0), both 16-bit operands in shared memory
 * (descriptors da, db): the m64n64k16 product of the attention's scores and of the GEMM's
 * 64-column tiles (which always accumulate, acc 1). */
__device__ __forceinline__ void wgmma_ss_n64_bf16(float *d, uint64_t da, uint64_t db, int acc) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "l"(da), "l"(db), "r"(acc));
}
__device__ __forceinline__ void wgmma_ss_n64_f16(float *d, uint64_t da, uint64_t db, int acc) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "l"(da), "l"(db), "r"(acc));
}
template <int N> __device__ __forceinline__ void acc_fence(float *d) {
#pragma unroll
  for (int i = 0; i < N; i++) asm volatile("" : "+f"(d[i])::"memory");
}

} // namespace

#endif // sm_90a
#endif
