/*
 * gemm_sm90.cu: our GEMMs for Hopper (sm_90a: TMA + wgmma), with the next elementwise step in the
 * epilogue: the Wi GEMM with GeGLU, the Wqkv GEMM with RoPE.
 *
 * ModernBERT's MLP is out = act(x Wi_in^T) * (x Wi_gate^T) with Wi = [Wi_in; Wi_gate] ([2I, d]).
 * cuBLASLt has no epilogue that multiplies two output columns, so the forward used to write the
 * whole [M, 2I] product in 16 bits and read it back in a GeGLU pass (2.4 of ModernBERT-large's
 * 27 ms at 32 x 512). Here the weight rows are interleaved at load in blocks of 8
 * (geglu_interleave: rows 16b..16b+7 = Wi_in rows 8b.., rows 16b+8..16b+15 = Wi_gate rows 8b..),
 * so in wgmma's accumulator layout every thread holds an input column and its gate column for
 * the same output column; the epilogue writes act(in) * gate once, from the fp32 accumulators
 * (the old path rounded both halves to 16 bits first), as [M, I] with row stride ldo.
 *
 * The same kernels run the Wqkv GEMM with RoPE in its epilogue (EPI_ROPE): in that layout a
 * thread holds columns j and j + 32 of a 64-column head (n8 blocks i and i + 4), so it rotates the
 * pair from the fp32 sums and writes Q and K once, rotated (a study: off unless LAYA_CUDA_QKV
 * names it; BENCHMARKS.md). The GLU activation is the checkpoint's (glu_act.cuh).
 *
 * The kernels: persistent blocks of three warpgroups; warpgroup 0 issues the TMA loads (128-byte
 * swizzle, a STAGES-deep ring of shared-memory stages guarded by mbarriers), warpgroups 1 and 2
 * run wgmma m64nBNk16, both on one 128 x BN tile (cooperative) or each on its own tiles in turn
 * (pingpong); on clusters of 2 CTAs each CTA loads half of the weight tile and multicasts it to
 * both. K tails and rows / columns past the matrix are zero-filled by TMA; the epilogue stores
 * only rows < M and columns < the output's. The sum over K runs in the same order for every M and
 * every variant, so a row's result does not depend on its batch. Deterministic: no split-K, no
 * atomics.
 *
 * Built for sm_90a only (wgmma); device_ok() says whether the device runs it (compute capability
 * 9.0 and the driver's cuTensorMapEncodeTiled found). The forward picks a variant per pass size
 * (sm90_gemm_pick), or a switch names one (sm90_gemm_variants).
 */
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "pdl.cuh"
#include "glu_act.cuh"
#include "wgmma.cuh"

#ifdef WG_SM90
#define GG_SM90 1
#endif

namespace {

constexpr int GG_BM = 128, GG_BK = 64;

#ifdef GG_SM90
__device__ __forceinline__ void mbar_init(uint64_t *bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t *bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t *bar, int parity) {
  uint32_t ok = 0, a = smem_u32(bar);
  while (!ok)
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(ok)
                 : "r"(a), "r"(parity)
                 : "memory");
}
__device__ __forceinline__ void tma_load_2d(void *dst, const CUtensorMap *map, int c0, int c1, uint64_t *bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(
          smem_u32(dst)),
      "l"((uint64_t)map), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}
/* The same into the CTAs of ctamask (this one's cluster), each at the same shared-memory offset
 * and signalling its own barrier at bar's offset. */
__device__ __forceinline__ void tma_load_2d_mc(void *dst, const CUtensorMap *map, int c0, int c1, uint64_t *bar,
                                               uint16_t ctamask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, "
      "{%3, %4}], [%2], %5;" ::"r"(smem_u32(dst)),
      "l"((uint64_t)map), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "h"(ctamask)
      : "memory");
}
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
/* Arrive on the barrier at bar's offset in CTA rank of the cluster (this one included). */
__device__ __forceinline__ void mbar_arrive_cta(uint64_t *bar, uint32_t rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem_u32(bar)), "r"(rank));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}
/* A consumer is done with a stage: its barrier in every CTA of the cluster (CL CTAs) counts it,
 * since each CTA's stage holds a part of B that a peer's TMA wrote. */
template <int CL> __device__ __forceinline__ void release_stage(uint64_t *bar, int tid) {
  if (CL == 1) {
    if (tid == 0) mbar_arrive(bar);
  } else if (tid < CL) {
    mbar_arrive_cta(bar, (uint32_t)tid); /* thread r signals CTA r: the CL arrivals in parallel */
  }
}

__device__ __forceinline__ void wgmma_n128_bf16(float *d, uint64_t da, uint64_t db) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
               : "l"(da), "l"(db), "r"(1));
}
__device__ __forceinline__ void wgmma_n128_f16(float *d, uint64_t da, uint64_t db) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
               : "l"(da), "l"(db), "r"(1));
}
__device__ __forceinline__ void wgmma_n256_bf16(float *d, uint64_t da, uint64_t db) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
               : "l"(da), "l"(db), "r"(1));
}
__device__ __forceinline__ void wgmma_n256_f16(float *d, uint64_t da, uint64_t db) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
               : "l"(da), "l"(db), "r"(1));
}

template <class T, int BN> __device__ __forceinline__ void wgmma_tile(float *d, uint64_t da, uint64_t db);
template <> __device__ __forceinline__ void wgmma_tile<__nv_bfloat16, 64>(float *d, uint64_t da, uint64_t db) {
  wgmma_ss_n64_bf16(d, da, db, 1);
}
template <> __device__ __forceinline__ void wgmma_tile<__half, 64>(float *d, uint64_t da, uint64_t db) {
  wgmma_ss_n64_f16(d, da, db, 1);
}
template <> __device__ __forceinline__ void wgmma_tile<__nv_bfloat16, 128>(float *d, uint64_t da, uint64_t db) {
  wgmma_n128_bf16(d, da, db);
}
template <> __device__ __forceinline__ void wgmma_tile<__nv_bfloat16, 256>(float *d, uint64_t da, uint64_t db) {
  wgmma_n256_bf16(d, da, db);
}
template <> __device__ __forceinline__ void wgmma_tile<__half, 128>(float *d, uint64_t da, uint64_t db) {
  wgmma_n128_f16(d, da, db);
}
template <> __device__ __forceinline__ void wgmma_tile<__half, 256>(float *d, uint64_t da, uint64_t db) {
  wgmma_n256_f16(d, da, db);
}

template <class T> __device__ __forceinline__ void store2(T *p, float a, float b);
template <> __device__ __forceinline__ void store2<__nv_bfloat16>(__nv_bfloat16 *p, float a, float b) {
  *reinterpret_cast<__nv_bfloat162 *>(p) = __floats2bfloat162_rn(a, b);
}
template <> __device__ __forceinline__ void store2<__half>(__half *p, float a, float b) {
  *reinterpret_cast<__half2 *>(p) = __floats2half2_rn(a, b);
}
#endif // GG_SM90

/* What the epilogue does with a tile's fp32 accumulators (EPI_* below) and where it writes. */
struct gg_epi {
  void *out;
  int M;            /* rows stored: rows >= M are padding of the TMA box and never written */
  int n_out;        /* GeGLU: I (output columns); RoPE: N (= the weight's rows) */
  int ldo;          /* output row stride, elements */
  const int32_t *tok_pos; /* RoPE: each row's position in its sequence (rows >= counts[CNT_TOKENS]: any) */
  const float2 *rope;     /* RoPE: (cos, sin)[pos][32] */
  const int *counts;      /* RoPE: the batch's counts (CNT_TOKENS) on the device */
  int rope_cols;          /* RoPE: columns [0, rope_cols) are Q and K heads of 64 (rotated); the rest V */
};
/* The epilogue kind, a template argument: EPI_ROPE, or a GLU whose activation is the enc_act kind
 * EPI (model/weights.h; one kernel per kind: a branch on the kind inside the epilogue cost the
 * 512-row pass 6%, BENCHMARKS.md). */
enum { EPI_ROPE = -1 };

#ifdef GG_SM90
/* The epilogue of one 64-row slice of a tile: d[BN / 2] in wgmma's m64nBN f32 layout (thread
 * (warp w, lane l) holds, for n8 block i, rows 16w + l/4 (+8) and columns 8i + 2(l%4) (+1));
 * r0 the thread's first row, n0 the tile's first weight row (output column before GeGLU).
 * A GLU (EPI >= 0): blocks 2p and 2p+1 are output block p's inputs and gates (geglu_interleave).
 * EPI_ROPE: each 64 columns are one head; columns j and j + 32 (blocks i and i + 4) are a
 * rotate-half pair, both held by the same thread, rotated in fp32 before the one rounding. */
template <class T, int BN, int A>
__device__ __forceinline__ void gg_store_glu(const float *d, int r0, int n0, int lane, const gg_epi &ep) {
  T *out = (T *)ep.out;
#pragma unroll
  for (int p = 0; p < BN / 16; p++) {
    const int col = n0 / 2 + 8 * p + 2 * (lane % 4);
    if (col >= ep.n_out) continue;
    const float *in = d + (2 * p) * 4, *gt = d + (2 * p + 1) * 4;
    if (r0 < ep.M)
      store2<T>(out + (size_t)r0 * ep.ldo + col, glu_act<A>(in[0]) * gt[0], glu_act<A>(in[1]) * gt[1]);
    if (r0 + 8 < ep.M)
      store2<T>(out + (size_t)(r0 + 8) * ep.ldo + col, glu_act<A>(in[2]) * gt[2], glu_act<A>(in[3]) * gt[3]);
  }
}

template <class T, int EPI, int BN>
__device__ __forceinline__ void gg_epilogue(const float *d, int r0, int n0, int lane, const gg_epi &ep) {
  T *out = (T *)ep.out;
  if (EPI != EPI_ROPE) {
    gg_store_glu<T, BN, (EPI < 0 ? 0 : EPI)>(d, r0, n0, lane, ep);
  } else {
    const int ntok = ep.counts[CNT_TOKENS];
    const int p0 = r0 < ntok ? ep.tok_pos[r0] : 0, p1 = r0 + 8 < ntok ? ep.tok_pos[r0 + 8] : 0;
    T *o0 = out + (size_t)r0 * ep.ldo, *o1 = out + (size_t)(r0 + 8) * ep.ldo;
    /* (cos, sin) of the thread's 8 pairs per row: the same for every head of the tile */
    float4 c0[4], c1[4];
    if (n0 < ep.rope_cols)
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const int j = 8 * i + 2 * (lane % 4);
        c0[i] = *reinterpret_cast<const float4 *>(ep.rope + (size_t)p0 * 32 + j);
        c1[i] = *reinterpret_cast<const float4 *>(ep.rope + (size_t)p1 * 32 + j);
      }
#pragma unroll
    for (int hb = 0; hb < BN / 64; hb++) {
      const int ch = n0 + 64 * hb; /* the head's first column */
      if (ch >= ep.n_out) break;
      const float *h = d + hb * 32;
      if (ch < ep.rope_cols) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
          const int j = 8 * i + 2 * (lane % 4);
          const float *a = h + 4 * i, *b = h + 4 * (i + 4);
          const float4 u = c0[i], v = c1[i];
          if (r0 < ep.M) {
            store2<T>(o0 + ch + j, a[0] * u.x - b[0] * u.y, a[1] * u.z - b[1] * u.w);
            store2<T>(o0 + ch + 32 + j, b[0] * u.x + a[0] * u.y, b[1] * u.z + a[1] * u.w);
          }
          if (r0 + 8 < ep.M) {
            store2<T>(o1 + ch + j, a[2] * v.x - b[2] * v.y, a[3] * v.z - b[3] * v.w);
            store2<T>(o1 + ch + 32 + j, b[2] * v.x + a[2] * v.y, b[3] * v.z + a[3] * v.w);
          }
        }
      } else {
#pragma unroll
        for (int i = 0; i < 8; i++) {
          const int col = ch + 8 * i + 2 * (lane % 4);
          if (r0 < ep.M) store2<T>(o0 + col, h[4 * i], h[4 * i + 1]);
          if (r0 + 8 < ep.M) store2<T>(o1 + col, h[4 * i + 2], h[4 * i + 3]);
        }
      }
    }
  }
}
#endif // GG_SM90

template <int BM, int BN, int STAGES> constexpr size_t gg_smem_bytes() {
  return (size_t)STAGES * (BM + BN) * GG_BK * 2 + (2 * STAGES + 2) * 8 + 1024;
}

/* The producer warpgroup's one thread: fill the ring for every tile of this block (CTA), in tile
 * order. Tiles are numbered per cluster of CL CTAs along M: cluster tile t is (n tile t % ntn,
 * m tiles (t / ntn) * CL + rank); each CTA loads its own A rows and 1/CL of the weight tile's rows,
 * which the multicast writes into every CTA of the cluster, so the cluster reads each weight tile
 * from L2 once instead of CL times (the kernels are L2-bandwidth-bound at large M otherwise). */
template <class T, int BM, int BN, int STAGES, int CL>
__device__ __forceinline__ void gg_produce(const CUtensorMap *tmA, const CUtensorMap *tmB, T *sA, T *sB, uint64_t *full,
                                           uint64_t *empty, int ntn, int ntiles, int kt) {
#ifdef GG_SM90
  const int rank = CL == 1 ? 0 : (int)cluster_rank();
  const int cid = blockIdx.x / CL, ncl = gridDim.x / CL;
  /* pdl.cuh: A is the kernel before's output, so no load is issued before the wait (requesting
   * the first ring's weight tiles ahead of it measured no gain, BENCHMARKS.md). */
  pdl_wait();
  pdl_trigger();
  int it = 0;
  for (int t = cid; t < ntiles; t += ncl) {
    const int n0 = (t % ntn) * BN, m0 = ((t / ntn) * CL + rank) * BM;
    for (int k = 0; k < kt; k++, it++) {
      const int s = it % STAGES;
      if (it >= STAGES) mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
      mbar_expect_tx(&full[s], (uint32_t)((BM + BN) * GG_BK * 2));
      tma_load_2d(sA + (size_t)s * BM * GG_BK, tmA, k * GG_BK, m0, &full[s]);
      if (CL == 1)
        tma_load_2d(sB + (size_t)s * BN * GG_BK, tmB, k * GG_BK, n0, &full[s]);
      else
        tma_load_2d_mc(sB + (size_t)s * BN * GG_BK + (size_t)rank * (BN / CL) * GG_BK, tmB, k * GG_BK,
                       n0 + rank * (BN / CL), &full[s], (uint16_t)((1u << CL) - 1));
    }
  }
#endif
}

/* Cooperative: persistent blocks of three warpgroups, BM (128) x BN output tiles; warpgroup 0
 * issues the TMA loads (128-byte swizzle, a STAGES-deep ring of shared-memory stages guarded by
 * mbarriers), warpgroups 1 and 2 each run wgmma m64nBNk16 on 64 of the tile's rows, then both run
 * the epilogue (the tensor cores idle meanwhile; the pingpong kernel below hides it). A persistent
 * grid of min(tiles, SMs) blocks; consecutive tiles share their A rows (reused from L2) while the
 * weight (11 MB for ModernBERT-large's Wi) stays resident in L2. NW: the weight's rows. */
template <class T, int EPI, int BN, int STAGES, int CL>
__global__ void __launch_bounds__(384, 1)
    gg_coop_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                   const gg_epi ep, int NW, int K) {
#ifdef GG_SM90
  constexpr int BM = GG_BM;
  extern __shared__ unsigned char gg_smem_raw[];
  unsigned char *base = (unsigned char *)(((uintptr_t)gg_smem_raw + 1023) & ~(uintptr_t)1023);
  T *sA = (T *)base;
  T *sB = sA + (size_t)STAGES * BM * GG_BK;
  uint64_t *full = (uint64_t *)(sB + (size_t)STAGES * BN * GG_BK);
  uint64_t *empty = full + STAGES;
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  const int kt = (K + GG_BK - 1) / GG_BK;
  const int ntn = (NW + BN - 1) / BN, ntiles = ntn * ((ep.M + BM * CL - 1) / (BM * CL));
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; s++) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 2 * CL);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  }
  if (CL == 1) __syncthreads();
  else cluster_sync();
  /* pdl.cuh: the producer thread waits on the kernel before and then lets the next one be
   * scheduled (gg_produce); no other thread touches global memory before data loaded after that */
  /* persistent: cluster c takes tiles c, c + clusters, ...; the ring's use count `it` runs on
   * across tiles, so the producer fills the next tile's stages while the consumers store. */
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (tid == 0) gg_produce<T, BM, BN, STAGES, CL>(&tmA, &tmB, sA, sB, full, empty, ntn, ntiles, kt);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    constexpr int NACC = BN / 2;
    float d[NACC];
    const int c = wg - 1; /* consumer: rows [64c, 64c + 64) of the tile */
    const int warp = tid / 32, lane = tid % 32;
    const int rank = CL == 1 ? 0 : (int)cluster_rank();
    int it = 0;
    for (int t = blockIdx.x / CL; t < ntiles; t += gridDim.x / CL) {
      const int n0 = (t % ntn) * BN, m0 = ((t / ntn) * CL + rank) * BM;
#pragma unroll
      for (int i = 0; i < NACC; i++) d[i] = 0.f;
      for (int k = 0; k < kt; k++, it++) {
        const int s = it % STAGES;
        mbar_wait(&full[s], (it / STAGES) & 1);
        const T *a = sA + (size_t)s * BM * GG_BK + (size_t)c * 64 * GG_BK;
        const T *b = sB + (size_t)s * BN * GG_BK;
        acc_fence<NACC>(d);
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < GG_BK / 16; kk++) wgmma_tile<T, BN>(d, sdesc(a + kk * 16), sdesc(b + kk * 16));
        wg_commit();
        /* the previous step's products are done: its stage can be refilled */
        wg_wait1();
        acc_fence<NACC>(d);
        if (k > 0) release_stage<CL>(&empty[(it - 1) % STAGES], tid);
      }
      wg_wait0();
      acc_fence<NACC>(d);
      release_stage<CL>(&empty[(it - 1) % STAGES], tid);
      gg_epilogue<T, EPI, BN>(d, m0 + c * 64 + warp * 16 + lane / 4, n0, lane, ep);
    }
  }
  /* a peer may still arrive on this CTA's barriers: no CTA of the cluster leaves before all are done */
  if (CL > 1) cluster_sync();
#endif
}

/* Pingpong: the same producer, but each consumer warpgroup owns whole BM x BN tiles (BM / 64
 * wgmma row slices) and the two take the block's tiles in turn (consumer c: the block's tiles
 * c, c + 2, ...). The producer fills the ring in tile order, so while one consumer runs its
 * epilogue the other's products of the next tile already run. Each stage is read by one consumer
 * per CTA (the empty barriers count one arrival per CTA). The products and their order per output
 * are those of the cooperative kernel (m64nNk16 over k in steps of 16), so every variant gives
 * the same bits. */
template <class T, int EPI, int BM, int BN, int STAGES, int CL>
__global__ void __launch_bounds__(384, 1)
    gg_pp_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                 const gg_epi ep, int NW, int K) {
#ifdef GG_SM90
  extern __shared__ unsigned char gg_smem_raw[];
  unsigned char *base = (unsigned char *)(((uintptr_t)gg_smem_raw + 1023) & ~(uintptr_t)1023);
  T *sA = (T *)base;
  T *sB = sA + (size_t)STAGES * BM * GG_BK;
  uint64_t *full = (uint64_t *)(sB + (size_t)STAGES * BN * GG_BK);
  uint64_t *empty = full + STAGES, *ord = empty + STAGES;
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  const int kt = (K + GG_BK - 1) / GG_BK;
  const int ntn = (NW + BN - 1) / BN, ntiles = ntn * ((ep.M + BM * CL - 1) / (BM * CL));
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; s++) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], CL);
    }
    mbar_init(&ord[0], 1);
    mbar_init(&ord[1], 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  }
  if (CL == 1) __syncthreads();
  else cluster_sync();
  /* pdl.cuh: the producer thread waits on the kernel before and then lets the next one be
   * scheduled (gg_produce); no other thread touches global memory before data loaded after that */
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (tid == 0) gg_produce<T, BM, BN, STAGES, CL>(&tmA, &tmB, sA, sB, full, empty, ntn, ntiles, kt);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    constexpr int MS = BM / 64, NACC = BN / 2;
    float d[MS * NACC];
    const int c = wg - 1;
    const int warp = tid / 32, lane = tid % 32;
    const int rank = CL == 1 ? 0 : (int)cluster_rank();
    int j = 0; /* the block's tile count so far: tile j's stages are uses j * kt .. j * kt + kt - 1 */
    for (int t = blockIdx.x / CL; t < ntiles; t += gridDim.x / CL, j++) {
      if ((j & 1) != c) continue;
      const int n0 = (t % ntn) * BN, m0 = ((t / ntn) * CL + rank) * BM;
#pragma unroll
      for (int i = 0; i < MS * NACC; i++) d[i] = 0.f;
      /* Mainloops in tile order: wait until the other consumer has waited for every stage of its
       * tile j - 1. Without it a consumer could wait on a stage two fills ahead, and a parity wait
       * cannot tell fill u from fill u - 2 (ord[c] completes once per mainloop of consumer c). */
      if (j >= 1) mbar_wait(&ord[1 - c], ((j - 1) / 2) & 1);
      int it = j * kt;
      for (int k = 0; k < kt; k++, it++) {
        const int s = it % STAGES;
        mbar_wait(&full[s], (it / STAGES) & 1);
        const T *a = sA + (size_t)s * BM * GG_BK;
        const T *b = sB + (size_t)s * BN * GG_BK;
        acc_fence<MS * NACC>(d);
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < GG_BK / 16; kk++)
#pragma unroll
          for (int ms = 0; ms < MS; ms++)
            wgmma_tile<T, BN>(d + ms * NACC, sdesc(a + (size_t)ms * 64 * GG_BK + kk * 16), sdesc(b + kk * 16));
        wg_commit();
        wg_wait1();
        acc_fence<MS * NACC>(d);
        if (k > 0) release_stage<CL>(&empty[(it - 1) % STAGES], tid);
      }
      if (tid == 0) mbar_arrive(&ord[c]);
      wg_wait0();
      acc_fence<MS * NACC>(d);
      release_stage<CL>(&empty[(it - 1) % STAGES], tid);
#pragma unroll
      for (int ms = 0; ms < MS; ms++)
        gg_epilogue<T, EPI, BN>(d + ms * NACC, m0 + ms * 64 + warp * 16 + lane / 4, n0, lane, ep);
    }
  }
  if (CL > 1) cluster_sync();
#endif
}

/* Wi rows [2I, K] -> interleaved in blocks of 8 (see the file comment). */
template <class T> __global__ void interleave_kernel(const T *src, T *dst, int I, int K) {
  const int r = blockIdx.x; /* destination row */
  const int b = r / 16, j = r % 16;
  const int srow = j < 8 ? 8 * b + j : I + 8 * b + (j - 8);
  for (int k = threadIdx.x; k < K; k += blockDim.x) dst[(size_t)r * K + k] = src[(size_t)srow * K + k];
}

typedef CUresult (*encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                              const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

encode_fn g_encode;
int g_sms = 132; /* multiprocessors of the device (device_ok): the persistent grid */
int g_encode_state; /* 0 not looked up, 1 found, -1 missing */

typedef void (*gg_kernel_fn)(CUtensorMap, CUtensorMap, gg_epi, int, int);
template <int PP, class T, int EPI, int BM, int BN, int STAGES, int CL> struct gg_kernel;
template <class T, int EPI, int BM, int BN, int STAGES, int CL> struct gg_kernel<0, T, EPI, BM, BN, STAGES, CL> {
  static gg_kernel_fn fn() { return gg_coop_kernel<T, EPI, BN, STAGES, CL>; }
};
template <class T, int EPI, int BM, int BN, int STAGES, int CL> struct gg_kernel<1, T, EPI, BM, BN, STAGES, CL> {
  static gg_kernel_fn fn() { return gg_pp_kernel<T, EPI, BM, BN, STAGES, CL>; }
};
template <int PP, class T, int BM, int BN, int STAGES, int CL> gg_kernel_fn kernel_of_t(int epi) {
  switch (epi) {
    case EPI_ROPE: return gg_kernel<PP, T, EPI_ROPE, BM, BN, STAGES, CL>::fn();
    case ENC_ACT_GELU_TANH: return gg_kernel<PP, T, ENC_ACT_GELU_TANH, BM, BN, STAGES, CL>::fn();
    case ENC_ACT_QUICK_GELU: return gg_kernel<PP, T, ENC_ACT_QUICK_GELU, BM, BN, STAGES, CL>::fn();
    case ENC_ACT_SILU: return gg_kernel<PP, T, ENC_ACT_SILU, BM, BN, STAGES, CL>::fn();
    case ENC_ACT_RELU: return gg_kernel<PP, T, ENC_ACT_RELU, BM, BN, STAGES, CL>::fn();
    default: return gg_kernel<PP, T, ENC_ACT_GELU, BM, BN, STAGES, CL>::fn();
  }
}
template <int PP, int BM, int BN, int STAGES, int CL> gg_kernel_fn kernel_of(int half16, int epi) {
  return half16 ? kernel_of_t<PP, __half, BM, BN, STAGES, CL>(epi) : kernel_of_t<PP, __nv_bfloat16, BM, BN, STAGES, CL>(epi);
}

/* Clusters of a variant that the device holds at once (cudaOccupancyMaxActiveClusters: the GPCs'
 * SM counts need not be multiples of the cluster size), set by its prepare; a persistent grid of
 * more would run its last clusters in a second wave. */
int g_slots[8];

struct gg_variant {
  const char *name;
  int pp, bm, bn, cl; /* pingpong or cooperative; tile rows x weight rows; CTAs per cluster */
  size_t smem;
  void (*launch)(cudaStream_t, const CUtensorMap *, const CUtensorMap *, int, int, const gg_epi &, int, int);
  int (*prepare)(void);
};

/* A persistent grid: min(cluster tiles, clusters that fit) clusters of CL CTAs. */
template <int PP, int BM, int BN, int STAGES, int CL, int V>
void launch_v(cudaStream_t s, const CUtensorMap *a, const CUtensorMap *b, int half16, int epi, const gg_epi &ep,
              int NW, int K) {
  const long tiles = (long)((NW + BN - 1) / BN) * ((ep.M + BM * CL - 1) / (BM * CL));
  const long slots = g_slots[V] > 0 ? g_slots[V] : g_sms / CL;
  CUtensorMap ma = *a, mb = *b;
  gg_epi e = ep;
  void *args[] = {&ma, &mb, &e, &NW, &K};
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((unsigned)((tiles < slots ? tiles : slots) * CL));
  cfg.blockDim = dim3(384);
  cfg.dynamicSmemBytes = gg_smem_bytes<BM, BN, STAGES>();
  cfg.stream = s;
  cudaLaunchAttribute at[2];
  int na = 0;
  if (CL > 1) {
    at[na].id = cudaLaunchAttributeClusterDimension;
    at[na].val.clusterDim.x = CL;
    at[na].val.clusterDim.y = 1;
    at[na].val.clusterDim.z = 1;
    na++;
  }
  if (cuda_pdl()) {
    at[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[na].val.programmaticStreamSerializationAllowed = 1;
    na++;
  }
  cfg.attrs = at;
  cfg.numAttrs = (unsigned)na;
  cudaLaunchKernelExC(&cfg, (const void *)kernel_of<PP, BM, BN, STAGES, CL>(half16, epi), args);
}
template <int PP, int BM, int BN, int STAGES, int CL, int V> int prepare_v(void) {
  const int smem = (int)gg_smem_bytes<BM, BN, STAGES>();
  for (int h = 0; h < 2; h++)
    for (int epi = EPI_ROPE; epi < ENC_ACT_COUNT; epi++)
      if (cudaFuncSetAttribute((const void *)kernel_of<PP, BM, BN, STAGES, CL>(h, epi),
                               cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess)
        return -1;
  if (CL == 1) return 0; /* one block per SM: the grid never exceeds the SMs */
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((unsigned)(g_sms / CL * CL));
  cfg.blockDim = dim3(384);
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = CL;
  at[0].val.clusterDim.y = 1;
  at[0].val.clusterDim.z = 1;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, (const void *)kernel_of<PP, BM, BN, STAGES, CL>(0, 0), &cfg) == cudaSuccess &&
      n > 0)
    g_slots[V] = n < g_sms / CL ? n : g_sms / CL;
  else
    cudaGetLastError();
  return 0;
}

#define GG_VARIANT(v, name, pp, bm, bn, st, cl)                                                          \
  {                                                                                                     \
    name, pp, bm, bn, cl, gg_smem_bytes<bm, bn, st>(), launch_v<pp, bm, bn, st, cl, v>, prepare_v<pp, bm, bn, st, cl, v> \
  }
/* The cooperative tiles first (the pick's ties go to the earlier), then the pingpong ones;
 * sm90_gemm_pick chooses among them by the pass's tile count. */
const gg_variant g_variants[] = {
    GG_VARIANT(0, "n256s4", 0, GG_BM, 256, 4, 1), GG_VARIANT(1, "n128s6", 0, GG_BM, 128, 6, 1),
    GG_VARIANT(2, "n64s8", 0, GG_BM, 64, 8, 1),   GG_VARIANT(3, "p128x128s6", 1, 128, 128, 6, 1),
    GG_VARIANT(4, "c2n256s4", 0, GG_BM, 256, 4, 2),
};
#undef GG_VARIANT
const int g_n_variants = (int)(sizeof g_variants / sizeof g_variants[0]);

} // namespace

static_assert(sizeof(CUtensorMap) == GG_MAP_BYTES, "GG_MAP_BYTES");
static_assert(sizeof g_variants / sizeof g_variants[0] == GG_MAX_VARIANTS, "GG_MAX_VARIANTS");

/* Whether device dev runs the kernel: compute capability 9.0 (the sm_90a code) and the driver's
 * cuTensorMapEncodeTiled found. */
static int device_ok(int dev) {
  if (!wgmma_device(dev)) return 0;
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess && sms > 0) g_sms = sms;
  if (g_encode_state == 0) {
    void *fn = NULL;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess && fn) {
      g_encode = (encode_fn)fn;
      g_encode_state = 1;
    } else {
      cudaGetLastError();
      g_encode_state = -1;
    }
  }
  return g_encode_state == 1;
}

/* A variant switch (LAYA_CUDA_GEGLU, LAYA_CUDA_QKV): unset, "1" or "auto": every variant, one
 * chosen per pass (sm90_gemm_pick); a variant's name: that one only; "0": none (the cuBLASLt
 * GEMM and the separate pass). The result is a mask of variant indices, 0 when off or when the
 * device cannot run the kernels. */
unsigned sm90_gemm_variants(int dev, const char *e) {
  if (e && e[0] == '0' && !e[1]) return 0;
  if (!device_ok(dev)) return 0;
  unsigned mask = 0;
  for (int v = 0; v < g_n_variants; v++)
    if (!e || !e[0] || !strcmp(e, "1") || !strcmp(e, "auto") || !strcmp(e, g_variants[v].name)) mask |= 1u << v;
  for (int v = 0; v < g_n_variants; v++)
    if ((mask >> v & 1) && g_variants[v].prepare()) {
      cudaGetLastError();
      return 0;
    }
  return mask;
}

/* The variant of mask for an M-row pass over NW weight rows, by a cost in which a 128 x BN tile's
 * k loop costs BN, plus 32 for the pipeline fill and an epilogue the tensor cores wait for. A cooperative grid runs
 * ceil(tiles / SMs) waves, each paying its epilogue; a pingpong block runs its tiles back to back
 * and pays one epilogue (the others overlap the next tile's products). At large M the wide and
 * pingpong tiles win; at one request's M the narrow cooperative ones keep every SM busy. Every
 * variant sums each output over K in the same order through the same m64nNk16 products, so which
 * one runs does not change a row's result (test_cuda_geglu checks the variants bit for bit). */
int sm90_gemm_pick(unsigned mask, int M, int NW) {
  int best = -1;
  long best_cost = 0;
  for (int v = 0; v < g_n_variants; v++) {
    if (!(mask >> v & 1)) continue;
    const gg_variant &g = g_variants[v];
    const long tiles = (((long)NW + g.bn - 1) / g.bn) * ((M + g.bm * g.cl - 1) / (g.bm * g.cl));
    const long slots = g_slots[v] > 0 ? g_slots[v] : g_sms / g.cl;
    const long per_block = (tiles + slots - 1) / slots, tile_cost = (long)g.bn * g.bm / 128;
    const long cost = g.pp ? per_block * tile_cost + 32 : per_block * (tile_cost + 32);
    if (best < 0 || cost < best_cost) best = v, best_cost = cost;
  }
  return best;
}

int sm90_gemm_n_variants(void) { return g_n_variants; }

const char *sm90_gemm_variant_name(int v) { return v >= 0 && v < g_n_variants ? g_variants[v].name : "off"; }

void k_geglu_interleave(cudaStream_t s, int half16, const void *src, void *dst, int I, int K) {
  if (half16) interleave_kernel<<<2 * I, 256, 0, s>>>((const __half *)src, (__half *)dst, I, K);
  else interleave_kernel<<<2 * I, 256, 0, s>>>((const __nv_bfloat16 *)src, (__nv_bfloat16 *)dst, I, K);
}

static int encode_2d(void *out, int half16, const void *ptr, int rows, int cols, int ld, int box_rows) {
  cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
  cuuint64_t strides[1] = {(cuuint64_t)ld * 2};
  cuuint32_t box[2] = {(cuuint32_t)GG_BK, (cuuint32_t)box_rows};
  cuuint32_t estr[2] = {1, 1};
  CUtensorMap map; /* 64-byte aligned here; the caller's storage need not be */
  CUresult r = g_encode(&map, half16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2,
                        const_cast<void *>(ptr), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) return (int)r;
  memcpy(out, &map, sizeof map);
  return 0;
}

int sm90_gemm_map_weight(int v, int half16, const void *w, int rows, int K, void *map) {
  if (v < 0 || v >= g_n_variants || g_encode_state != 1) return -1;
  return encode_2d(map, half16, w, rows, K, K, g_variants[v].bn / g_variants[v].cl);
}

int sm90_gemm_map_act(int v, int half16, const void *a, int M, int K, int lda, void *map) {
  if (v < 0 || v >= g_n_variants || g_encode_state != 1) return -1;
  return encode_2d(map, half16, a, M, K, lda, g_variants[v].bm);
}

void k_geglu_gemm(cudaStream_t s, int v, int half16, const void *map_a, const void *map_w, void *out, int M, int I,
                  int ldo, int K, int act) {
  CUtensorMap a, w;
  memcpy(&a, map_a, sizeof a);
  memcpy(&w, map_w, sizeof w);
  gg_epi ep = {out, M, I, ldo, NULL, NULL, NULL, 0};
  g_variants[v].launch(s, &a, &w, half16, act >= 0 && act < ENC_ACT_COUNT ? act : ENC_ACT_GELU, ep, 2 * I, K);
}

void k_qkv_rope_gemm(cudaStream_t s, int v, int half16, const void *map_a, const void *map_w, void *out, int M, int N,
                     int ldo, int K, const int32_t *tok_pos, const float2 *rope, const int *counts, int rope_cols) {
  CUtensorMap a, w;
  memcpy(&a, map_a, sizeof a);
  memcpy(&w, map_w, sizeof w);
  gg_epi ep = {out, M, N, ldo, tok_pos, rope, counts, rope_cols};
  g_variants[v].launch(s, &a, &w, half16, EPI_ROPE, ep, N, K);
}

/* ---------------------------------------------------------------------------------------------
 * Self-check (tests/cuda/test_cuda_geglu.c): every variant against a plain fp32 kernel on the
 * same 16-bit inputs.
 */
namespace {
template <class T, int ACT> __global__ void geglu_ref_kernel(const T *A, const T *W, float *out, int M, int I, int K) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
  if (j >= I || m >= M) return;
  float a = 0.f, g = 0.f;
  for (int k = 0; k < K; k++) {
    const float x = (float)A[(size_t)m * K + k];
    a += x * (float)W[(size_t)j * K + k];
    g += x * (float)W[(size_t)(I + j) * K + k];
  }
  out[(size_t)m * I + j] = glu_act<ACT>(a) * g;
}
template <class T> void fill(T *p, size_t n, uint32_t seed, float scale) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = (T)(((float)(seed >> 8) / 16777216.0f - 0.5f) * scale);
  }
}
template <class T> int selftest_t(int half16, int M, int I, int K, int act, double *max_rel, int *same_bits) {
  const size_t na = (size_t)M * K, nw = (size_t)2 * I * K, no = (size_t)M * I;
  T *hA = (T *)malloc(na * sizeof(T)), *hW = (T *)malloc(nw * sizeof(T)), *hO = (T *)malloc(no * sizeof(T));
  T *hO0 = (T *)malloc(no * sizeof(T)); /* the first variant's output */
  float *hR = (float *)malloc(no * sizeof(float));
  T *dA = NULL, *dW = NULL, *dW2 = NULL, *dO = NULL;
  float *dR = NULL;
  int rc = -1;
  *same_bits = 1;
  if (!hA || !hW || !hO || !hO0 || !hR) goto done;
  fill(hA, na, 1u + (uint32_t)M, 4.0f);
  fill(hW, nw, 7u + (uint32_t)K, 4.0f / sqrtf((float)K));
  if (cudaMalloc(&dA, na * sizeof(T)) || cudaMalloc(&dW, nw * sizeof(T)) || cudaMalloc(&dW2, nw * sizeof(T)) ||
      cudaMalloc(&dO, no * sizeof(T)) || cudaMalloc(&dR, no * sizeof(float)))
    goto done;
  cudaMemcpy(dA, hA, na * sizeof(T), cudaMemcpyHostToDevice);
  cudaMemcpy(dW, hW, nw * sizeof(T), cudaMemcpyHostToDevice);
  {
    const dim3 g((unsigned)((I + 127) / 128), (unsigned)M);
    switch (act) {
      case ENC_ACT_GELU_TANH: geglu_ref_kernel<T, ENC_ACT_GELU_TANH><<<g, 128>>>(dA, dW, dR, M, I, K); break;
      case ENC_ACT_QUICK_GELU: geglu_ref_kernel<T, ENC_ACT_QUICK_GELU><<<g, 128>>>(dA, dW, dR, M, I, K); break;
      case ENC_ACT_SILU: geglu_ref_kernel<T, ENC_ACT_SILU><<<g, 128>>>(dA, dW, dR, M, I, K); break;
      case ENC_ACT_RELU: geglu_ref_kernel<T, ENC_ACT_RELU><<<g, 128>>>(dA, dW, dR, M, I, K); break;
      default: geglu_ref_kernel<T, ENC_ACT_GELU><<<g, 128>>>(dA, dW, dR, M, I, K); break;
    }
  }
  cudaMemcpy(hR, dR, no * sizeof(float), cudaMemcpyDeviceToHost);
  k_geglu_interleave(0, half16, dW, dW2, I, K);
  *max_rel = 0;
  for (int v = 0; v < g_n_variants; v++) {
    unsigned char ma[GG_MAP_BYTES], mw[GG_MAP_BYTES];
    if (g_variants[v].prepare() || sm90_gemm_map_act(v, half16, dA, M, K, K, ma) ||
        sm90_gemm_map_weight(v, half16, dW2, 2 * I, K, mw))
      goto done;
    cudaMemset(dO, 0xff, no * sizeof(T)); /* NaN everywhere: an element not written fails */
    k_geglu_gemm(0, v, half16, ma, mw, dO, M, I, I, K, act);
    if (cudaDeviceSynchronize() != cudaSuccess) goto done;
    cudaMemcpy(hO, dO, no * sizeof(T), cudaMemcpyDeviceToHost);
    double scale = 1e-6, err = 0;
    for (size_t i = 0; i < no; i++) scale = fmax(scale, fabs((double)hR[i]));
    for (size_t i = 0; i < no; i++) {
      const double e = fabs((double)(float)hO[i] - (double)hR[i]);
      if (!(e <= err)) err = e; /* NaN propagates */
    }
    const double rel = err / scale;
    if (!(rel <= *max_rel)) *max_rel = rel;
    if (v == 0) memcpy(hO0, hO, no * sizeof(T));
    else if (memcmp(hO0, hO, no * sizeof(T)) != 0) *same_bits = 0;
  }
  rc = cudaGetLastError() == cudaSuccess ? 0 : -1;
done:
  cudaFree(dA);
  cudaFree(dW);
  cudaFree(dW2);
  cudaFree(dO);
  cudaFree(dR);
  free(hA);
  free(hW);
  free(hO);
  free(hO0);
  free(hR);
  return rc;
}
/* The Wqkv GEMM with RoPE: out = A W^T, then columns [0, 2 H 64) rotated per head by the row's
 * position (rows >= ntok: position 0), in fp32, against the same maths in a plain kernel. */
__global__ void rope_ref_kernel(const float *G, const int32_t *pos, const float2 *tab, float *out, int M, int N,
                                int rope_cols, int ntok) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
  if (n >= N || m >= M) return;
  const float *g = G + (size_t)m * N;
  if (n >= rope_cols) {
    out[(size_t)m * N + n] = g[n];
    return;
  }
  const int h0 = n / 64 * 64, j = n % 64, jj = j % 32, p = m < ntok ? pos[m] : 0;
  const float2 cs = tab[(size_t)p * 32 + jj];
  const float a = g[h0 + jj], b = g[h0 + 32 + jj];
  out[(size_t)m * N + n] = j < 32 ? a * cs.x - b * cs.y : b * cs.x + a * cs.y;
}
template <class T> __global__ void gemm_ref_kernel(const T *A, const T *W, float *out, int M, int N, int K) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
  if (n >= N || m >= M) return;
  float acc = 0.f;
  for (int k = 0; k < K; k++) acc += (float)A[(size_t)m * K + k] * (float)W[(size_t)n * K + k];
  out[(size_t)m * N + n] = acc;
}
template <class T> int selftest_rope_t(int half16, int M, int H, int K, double *max_rel, int *same_bits) {
  const int N = 3 * H * 64, rope_cols = 2 * H * 64, P = 600, ntok = M > 3 ? M - 3 : M;
  const size_t na = (size_t)M * K, nw = (size_t)N * K, no = (size_t)M * N;
  T *hA = (T *)malloc(na * sizeof(T)), *hW = (T *)malloc(nw * sizeof(T)), *hO = (T *)malloc(no * sizeof(T));
  T *hO0 = (T *)malloc(no * sizeof(T));
  float *hR = (float *)malloc(no * sizeof(float));
  float2 *hT = (float2 *)malloc((size_t)P * 32 * sizeof(float2));
  int32_t *hP = (int32_t *)malloc((size_t)M * sizeof(int32_t));
  int hC[CNT_N] = {0};
  T *dA = NULL, *dW = NULL, *dO = NULL;
  float *dG = NULL, *dR = NULL;
  float2 *dT = NULL;
  int32_t *dP = NULL;
  int *dC = NULL;
  int rc = -1;
  *same_bits = 1;
  if (!hA || !hW || !hO || !hO0 || !hR || !hT || !hP) goto done;
  fill(hA, na, 3u + (uint32_t)M, 4.0f);
  fill(hW, nw, 11u + (uint32_t)K, 4.0f / sqrtf((float)K));
  for (int p = 0; p < P; p++)
    for (int j = 0; j < 32; j++) {
      const float ang = (float)p * (float)(1.0 / pow(10000.0, (double)(2 * j) / 64.0));
      hT[(size_t)p * 32 + j] = make_float2((float)cos((double)ang), (float)sin((double)ang));
    }
  for (int m = 0; m < M; m++) hP[m] = (int32_t)((m * 7 + m / 5) % P);
  hC[CNT_TOKENS] = ntok;
  if (cudaMalloc(&dA, na * sizeof(T)) || cudaMalloc(&dW, nw * sizeof(T)) || cudaMalloc(&dO, no * sizeof(T)) ||
      cudaMalloc(&dG, no * sizeof(float)) || cudaMalloc(&dR, no * sizeof(float)) ||
      cudaMalloc(&dT, (size_t)P * 32 * sizeof(float2)) || cudaMalloc(&dP, (size_t)M * sizeof(int32_t)) ||
      cudaMalloc(&dC, sizeof hC))
    goto done;
  cudaMemcpy(dA, hA, na * sizeof(T), cudaMemcpyHostToDevice);
  cudaMemcpy(dW, hW, nw * sizeof(T), cudaMemcpyHostToDevice);
  cudaMemcpy(dT, hT, (size_t)P * 32 * sizeof(float2), cudaMemcpyHostToDevice);
  cudaMemcpy(dP, hP, (size_t)M * sizeof(int32_t), cudaMemcpyHostToDevice);
  cudaMemcpy(dC, hC, sizeof hC, cudaMemcpyHostToDevice);
  gemm_ref_kernel<T><<<dim3((unsigned)((N + 127) / 128), (unsigned)M), 128>>>(dA, dW, dG, M, N, K);
  rope_ref_kernel<<<dim3((unsigned)((N + 127) / 128), (unsigned)M), 128>>>(dG, dP, dT, dR, M, N, rope_cols, ntok);
  cudaMemcpy(hR, dR, no * sizeof(float), cudaMemcpyDeviceToHost);
  *max_rel = 0;
  for (int v = 0; v < g_n_variants; v++) {
    unsigned char ma[GG_MAP_BYTES], mw[GG_MAP_BYTES];
    if (g_variants[v].prepare() || sm90_gemm_map_act(v, half16, dA, M, K, K, ma) ||
        sm90_gemm_map_weight(v, half16, dW, N, K, mw))
      goto done;
    cudaMemset(dO, 0xff, no * sizeof(T));
    k_qkv_rope_gemm(0, v, half16, ma, mw, dO, M, N, N, K, dP, dT, dC, rope_cols);
    if (cudaDeviceSynchronize() != cudaSuccess) goto done;
    cudaMemcpy(hO, dO, no * sizeof(T), cudaMemcpyDeviceToHost);
    double scale = 1e-6, err = 0;
    for (size_t i = 0; i < no; i++) scale = fmax(scale, fabs((double)hR[i]));
    for (size_t i = 0; i < no; i++) {
      const double e = fabs((double)(float)hO[i] - (double)hR[i]);
      if (!(e <= err)) err = e;
    }
    const double rel = err / scale;
    if (!(rel <= *max_rel)) *max_rel = rel;
    if (v == 0) memcpy(hO0, hO, no * sizeof(T));
    else if (memcmp(hO0, hO, no * sizeof(T)) != 0) *same_bits = 0;
  }
  rc = cudaGetLastError() == cudaSuccess ? 0 : -1;
done:
  cudaFree(dA);
  cudaFree(dW);
  cudaFree(dO);
  cudaFree(dG);
  cudaFree(dR);
  cudaFree(dT);
  cudaFree(dP);
  cudaFree(dC);
  free(hA);
  free(hW);
  free(hO);
  free(hO0);
  free(hR);
  free(hT);
  free(hP);
  return rc;
}
} // namespace

extern "C" int backend_cuda_qkv_rope_selftest(int half16, int M, int H, int K, double *max_rel, int *same_bits) {
  if (!device_ok(0)) return 1;
  return half16 ? selftest_rope_t<__half>(1, M, H, K, max_rel, same_bits)
                : selftest_rope_t<__nv_bfloat16>(0, M, H, K, max_rel, same_bits);
}

extern "C" int backend_cuda_geglu_selftest(int half16, int M, int I, int K, int act, double *max_rel, int *same_bits) {
  if (!device_ok(0)) return 1;
  return half16 ? selftest_t<__half>(1, M, I, K, act, max_rel, same_bits)
                : selftest_t<__nv_bfloat16>(0, M, I, K, act, max_rel, same_bits);
}
