/*
 * attention_sm90.cu: flash attention on Hopper's warpgroup matrix instructions (sm_90a wgmma),
 * head_dim 64, over the packed QKV buffer: the same work tiles, masks and online softmax as the
 * mma.sync kernel of attention.cu (read that file's comment first), a different instruction.
 *
 * Why: the mma.sync kernel issues every 16 x 8 x 16 product and its fragment loads from the
 * same warps that run the online softmax. wgmma issues a warpgroup's 64 x N x 16 product as one
 * asynchronous instruction with both operands in shared memory (S = Q K^T) or the left one in
 * registers (O += P V: P never leaves registers), which frees those issue slots; the pipelined
 * variant also overlaps the next tile's scores with this tile's softmax. It is the default on
 * Hopper (cuda_backend.cu; its speed against the mma.sync kernel: BENCHMARKS.md, CUDA backend /
 * Attention on wgmma).
 *
 * Layout: a block of NWG warpgroups takes 64 * NWG queries of one head (warpgroup g: queries
 * [q0 + 64 g, q0 + 64 g + 64)). Every 16-bit row of 64 elements is one 128-byte line of shared
 * memory, 128-byte swizzled (16-byte chunk c of row r at r * 128 + ((c ^ (r % 8)) * 16), the layout a
 * TMA box writes and wgmma's descriptors name): Q staged once (rotated by RoPE on the way, as
 * attention.cu does), K and V tiles of 64 keys double- (PIPE: triple-) buffered by cp.async with
 * zero fill past the row (so keys of a neighbouring row are never read, and no NaN of a padded
 * token can reach a product). S accumulates in fp32; the softmax runs on wgmma's accumulator layout (thread
 * (warp w, lane l) of a warpgroup holds rows 16 w + l / 4 (+ 8), columns 8 i + 2 (l % 4) (+ 1) of
 * each n8 block i, as mma.sync's m16n8 tiles), the probabilities are rounded to 16 bits and packed in
 * place into the A fragments of the P V product, whose B operand (V, keys x head dims with the
 * head dims contiguous) is read transposed (the instruction's MN-major B). A warpgroup whose 64
 * queries see none of a tile's keys (local layers, SKIP) skips it.
 *
 * Each output's sum over keys runs in 64-key steps in key order, as the mma.sync kernel's with
 * 64-key tiles, for every pass size, so a row's result does not depend on its batch. Built for
 * sm_90a only (wgmma_device() says whether the device runs it); elsewhere the kernels are empty.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>

#include <type_traits>

#include "attn_util.cuh"
#include "cuda_internal.h"
#include "pdl.cuh"
#include "wgmma.cuh"

#ifdef WG_SM90
#define FA_SM90 1
#endif

namespace {

#ifdef FA_SM90
constexpr int FA_HD = 64; /* head dims: one 128-byte line per token */
constexpr int FA_BN = 64;    /* keys per K/V tile */
/* 16-byte chunk ch of line r of a swizzled tile */
__device__ __forceinline__ int fa_swz(int r, int ch) { return r * 128 + ((ch ^ (r & 7)) << 4); }
__device__ __forceinline__ void wgmma_rs_n64_bf16_tb(float *d, const uint32_t *a, uint64_t db) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, 1, 1, 1, 1;\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

__device__ __forceinline__ void wgmma_rs_n64_f16_tb(float *d, const uint32_t *a, uint64_t db) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, 1, 1, 1, 1;\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

/* S (64 x FA_BN) = Q K^T over one k16 step (acc 0: overwrite), and O (64 x 64) += P V over 16 keys. */
template <class T> struct fa_mma;
template <> struct fa_mma<__nv_bfloat16> {
  static __device__ __forceinline__ void qk(float *d, uint64_t a, uint64_t b, int acc) { wgmma_ss_n64_bf16(d, a, b, acc); }
  static __device__ __forceinline__ void pv(float *d, const uint32_t *a, uint64_t b) { wgmma_rs_n64_bf16_tb(d, a, b); }
};
template <> struct fa_mma<__half> {
  static __device__ __forceinline__ void qk(float *d, uint64_t a, uint64_t b, int acc) { wgmma_ss_n64_f16(d, a, b, acc); }
  static __device__ __forceinline__ void pv(float *d, const uint32_t *a, uint64_t b) { wgmma_rs_n64_f16_tb(d, a, b); }
};

/* Scores of keys a query of this warpgroup must not see (past the row, or outside the window)
 * to -inf; qrow0: the row of s[4i], s[4i + 1] (s[4i + 2], s[4i + 3] are 8 rows further). */
__device__ __forceinline__ void fa_mask(float *s, int kb, int hi, int window, int qrow0, int lane) {
#pragma unroll
  for (int i = 0; i < FA_BN / 8; i++)
#pragma unroll
    for (int e = 0; e < 4; e++) {
      const int kp = kb + 8 * i + 2 * (lane % 4) + (e & 1);
      const int dlt = qrow0 + (e >> 1) * 8 - kp;
      if (kp >= hi || (window >= 0 && (dlt > window || -dlt > window))) s[4 * i + e] = -INFINITY;
    }
}

/* Online softmax step of rows r (e = 0, 1) and r + 8 (e = 2, 3): s becomes the probabilities
 * (fp32), O is rescaled, and the probabilities are packed into the A fragments of O += P V (the
 * fragment of keys [16 kc, 16 kc + 16) is n8 blocks 2 kc and 2 kc + 1 of S). */
template <class T>
__device__ __forceinline__ void fa_softmax(float *s, float *o, float *m_r, float *l_r, float scale_log2,
                                           uint32_t (*pa)[4]) {
#pragma unroll
  for (int ri = 0; ri < 2; ri++) {
    float mx = -INFINITY;
#pragma unroll
    for (int i = 0; i < FA_BN / 8; i++) mx = fmaxf(mx, fmaxf(s[4 * i + 2 * ri], s[4 * i + 2 * ri + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m_r[ri], mx);
    const float m_use = m_new == -INFINITY ? 0.f : m_new;
    const float alpha = fast_exp2((m_r[ri] - m_use) * scale_log2);
    const float neg = -m_use * scale_log2;
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < FA_BN / 8; i++) {
      const float p0 = fast_exp2(fmaf(s[4 * i + 2 * ri], scale_log2, neg));
      const float p1 = fast_exp2(fmaf(s[4 * i + 2 * ri + 1], scale_log2, neg));
      s[4 * i + 2 * ri] = p0;
      s[4 * i + 2 * ri + 1] = p1;
      sum += p0 + p1;
    }
    l_r[ri] = l_r[ri] * alpha + sum;
    m_r[ri] = m_new;
#pragma unroll
    for (int i = 0; i < 8; i++) {
      o[4 * i + 2 * ri] *= alpha;
      o[4 * i + 2 * ri + 1] *= alpha;
    }
  }
#pragma unroll
  for (int kc = 0; kc < FA_BN / 16; kc++) {
    pa[kc][0] = pack2<T>::make(s[8 * kc + 0], s[8 * kc + 1]);
    pa[kc][1] = pack2<T>::make(s[8 * kc + 2], s[8 * kc + 3]);
    pa[kc][2] = pack2<T>::make(s[8 * kc + 4], s[8 * kc + 5]);
    pa[kc][3] = pack2<T>::make(s[8 * kc + 6], s[8 * kc + 7]);
  }
}

/* S = Q K^T of one tile (dk: its K), issued and committed, not waited for. */
template <class T> __device__ __forceinline__ void fa_issue_qk(float *s, uint64_t dq, uint64_t dk) {
  wg_fence();
#pragma unroll
  for (int kk = 0; kk < FA_HD / 16; kk++) fa_mma<T>::qk(s, dq + 2 * kk, dk + 2 * kk, kk); /* +32 bytes a step */
  wg_commit();
}
/* O += P V of one tile on mma.sync m16n8k16 instead (PVW = false): each warp its 16 rows, V's
 * fragments by ldmatrix.trans from the swizzled tile v (a comparison for the wgmma form). */
template <class T>
__device__ __forceinline__ void fa_pv_sync(float *o, uint32_t (*pa)[4], const unsigned char *v, int lane) {
#pragma unroll
  for (int kc = 0; kc < FA_BN / 16; kc++)
#pragma unroll
    for (int np = 0; np < FA_HD / 16; np++) {
      const int row = kc * 16 + (lane % 8) + ((lane / 8) % 2) * 8, chunk = 2 * np + lane / 16;
      uint32_t b[4];
      ldsm_x4_t(b, v + fa_swz(row, chunk));
      mma16816<T>(o + 4 * (2 * np), pa[kc], b[0], b[1]);
      mma16816<T>(o + 4 * (2 * np + 1), pa[kc], b[2], b[3]);
    }
}
/* O += P V of one tile (dv: its V, 16 keys = 2048 bytes a step), issued and committed. */
template <class T> __device__ __forceinline__ void fa_issue_pv(float *o, uint32_t (*pa)[4], uint64_t dv) {
  wg_fence();
#pragma unroll
  for (int kc = 0; kc < FA_BN / 16; kc++) fa_mma<T>::pv(o, pa[kc], dv + (uint64_t)(kc * 128));
  wg_commit();
}
#endif // FA_SM90

/* Q lines, then STG stages of 64-key K and V tiles, then the slack that aligns the start to 1024
 * bytes. */
template <int NWG, int STG> constexpr int fa_smem_bytes() { return 64 * NWG * 128 + 2 * STG * 64 * 128 + 1024; }

/* PIPE (global layers): three K/V stages, and S of tile j + 1 issued before the softmax of tile j
 * (two S register sets), the FlashAttention 3 order. ptxas serialises these products (C7515: O is
 * rescaled between the next scores' issue and their wait); the form that avoids it fits one block
 * per SM and measured slower (BENCHMARKS.md, CUDA backend / Session 17), so the overlap is not real
 * but the three stages are. Otherwise two stages, one tile at a time. */
template <class T, int NWG, bool SKIP, bool PIPE, bool PVW>
__global__ void __launch_bounds__(NWG * 128, NWG == 1 ? 3 : 2)
    fa_wg_kernel(const T *__restrict__ qkv, T *__restrict__ out, const attn_tile *__restrict__ tiles,
                 const int *__restrict__ n_tiles, int H, int window, const float2 *__restrict__ rope,
                 float scale_log2) {
#ifdef FA_SM90
  static_assert(!(PIPE && SKIP) && (PVW || !PIPE), "the pipelined loop: no tile skipping, P V on wgmma");
  pdl_enter();
  constexpr int NT = NWG * 128, BM = 64 * NWG, NS = FA_BN / 2; /* S accumulators per thread */
  constexpr int STG = PIPE ? 3 : 2;
  extern __shared__ unsigned char fa_smem_raw[];
  unsigned char *sQ = (unsigned char *)(((uintptr_t)fa_smem_raw + 1023) & ~(uintptr_t)1023);
  unsigned char *sK = sQ + BM * 128; /* [STG][FA_BN lines] */
  unsigned char *sV = sK + STG * FA_BN * 128;

  if ((int)blockIdx.x >= *n_tiles) return;
  const attn_tile ti = tiles[blockIdx.x];
  const int base = ti.base, len = ti.len, q0 = ti.q0;
  const int h = blockIdx.y;
  const int tid = threadIdx.x, wg = tid / 128, warp = (tid / 32) % 4, lane = tid & 31;
  const qkv_head<T> hq = qkv_head_of(qkv, H, FA_HD, h);
  const int64_t rs = hq.rs;
  const T *Qg = hq.q, *Kg = hq.k, *Vg = hq.v;

  int lo, hi;
  attn_key_range(q0, BM, len, window, &lo, &hi);
  const int n_kb = (hi - lo + FA_BN - 1) / FA_BN;

  /* tile it (keys lo + it FA_BN ...) into stage it % STG; rows past hi zero-filled */
  auto load_kv = [&](int it) {
    const int kb = lo + it * FA_BN, buf = it % STG;
    for (int c = tid; c < FA_BN * 8; c += NT) {
      const int r = c / 8, ch = c % 8, kp = kb + r;
      const bool ok = kp < hi;
      const int64_t off = (int64_t)(base + (ok ? kp : 0)) * rs + ch * 8;
      const int so = buf * FA_BN * 128 + fa_swz(r, ch);
      cp_async16(sK + so, Kg + off, ok ? 16 : 0);
      cp_async16(sV + so, Vg + off, ok ? 16 : 0);
    }
    cp_async_commit();
  };
  if (n_kb > 0) load_kv(0);
  if (PIPE && n_kb > 1) load_kv(1);

  /* Q, rotated when rope != NULL: chunks ch and ch + 4 of a line are a rotate-half pair */
  for (int c = tid; c < BM * 4; c += NT) {
    const int r = c / 4, ch = c % 4, qp = q0 + r;
    uint4 a = make_uint4(0, 0, 0, 0), b = make_uint4(0, 0, 0, 0);
    if (qp < len) {
      const T *src = Qg + (int64_t)(base + qp) * rs + ch * 8;
      a = *reinterpret_cast<const uint4 *>(src);
      b = *reinterpret_cast<const uint4 *>(src + FA_HD / 2);
      if (rope) rope8<T>(a, b, rope + (int64_t)qp * (FA_HD / 2) + ch * 8);
    }
    *reinterpret_cast<uint4 *>(sQ + fa_swz(r, ch)) = a;
    *reinterpret_cast<uint4 *>(sQ + fa_swz(r, ch + 4)) = b;
  }

  float o[32];
#pragma unroll
  for (int i = 0; i < 32; i++) o[i] = 0.f;
  float s[NS];
#pragma unroll
  for (int i = 0; i < NS; i++) s[i] = 0.f;
  uint32_t pa[FA_BN / 16][4];
  float m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.f, 0.f};
  const int wq_lo = q0 + 64 * wg, wq_hi = wq_lo + 63; /* this warpgroup's queries */
  const int qrow0 = wq_lo + 16 * warp + lane / 4;      /* row of s[4i], s[4i + 1]; +8 for s[4i + 2], s[4i + 3] */
  const bool active = wq_lo < len;                     /* a tail tile's warpgroup past the row has nothing to do */
  const uint64_t dq = sdesc(sQ + wg * 64 * 128);
  auto dk_of = [&](int it) { return sdesc(sK + (it % STG) * FA_BN * 128); };
  auto dv_of = [&](int it) { return sdesc(sV + (it % STG) * FA_BN * 128); };
  /* the tile's keys are all visible to every query of this warpgroup */
  auto full_of = [&](int kb) {
    return (kb + FA_BN <= hi) && (window < 0 || (kb >= wq_hi - window && kb + FA_BN - 1 <= wq_lo + window));
  };

  if constexpr (!PIPE) {
    for (int it = 0; it < n_kb; it++) {
      const int kb = lo + it * FA_BN;
      /* tile it landed (this thread's copies), made visible to wgmma, and every warpgroup is done
       * with the other stage (its products waited for) before it is refilled */
      cp_async_wait0();
      wg_fence_async_smem();
      __syncthreads();
      if (it + 1 < n_kb) load_kv(it + 1);
      if (!active) continue;
      if (SKIP && (kb > wq_hi + window || kb + FA_BN - 1 < wq_lo - window)) continue;
      fa_issue_qk<T>(s, dq, dk_of(it));
      wg_wait0();
      acc_fence<NS>(s);
      if (!full_of(kb)) fa_mask(s, kb, hi, window, qrow0, lane);
      fa_softmax<T>(s, o, m_r, l_r, scale_log2, pa);
      if (PVW) {
        fa_issue_pv<T>(o, pa, dv_of(it));
        wg_wait0();
        acc_fence<32>(o);
      } else {
        fa_pv_sync<T>(o, pa, sV + (it % STG) * FA_BN * 128, lane);
      }
    }
  } else {
    /* Iteration it: tile it + 1 must have landed (it was requested one iteration before), its
     * scores are issued, tile it's softmax and P V run meanwhile, and tile it + 2 is requested into
     * the stage tile it - 1 used (free once every warpgroup passed the barrier). The loop body is
     * written twice so that the two S register sets swap roles without indexing at run time. */
    float s2[NS];
#pragma unroll
    for (int i = 0; i < NS; i++) s2[i] = 0.f;
    auto step = [&](int it, float *sc, float *sn) {
      cp_async_wait0(); /* the newest group is tile it + 1's */
      wg_fence_async_smem();
      __syncthreads();
      if (it + 2 < n_kb) load_kv(it + 2);
      if (!active) return;
      if (it + 1 < n_kb) fa_issue_qk<T>(sn, dq, dk_of(it + 1));
      const int kb = lo + it * FA_BN;
      if (!full_of(kb)) fa_mask(sc, kb, hi, window, qrow0, lane);
      fa_softmax<T>(sc, o, m_r, l_r, scale_log2, pa);
      fa_issue_pv<T>(o, pa, dv_of(it));
      wg_wait0();
      acc_fence<NS>(sn);
      acc_fence<32>(o);
    };
    if (n_kb > 0) { /* the first tile's scores */
      if (n_kb > 1) cp_async_wait1();
      else cp_async_wait0();
      wg_fence_async_smem();
      __syncthreads();
      if (active) {
        fa_issue_qk<T>(s, dq, dk_of(0));
        wg_wait0();
        acc_fence<NS>(s);
      }
    }
    for (int it = 0; it < n_kb; it += 2) {
      step(it, s, s2);
      if (it + 1 < n_kb) step(it + 1, s2, s);
    }
  }

  /* normalise and write the rows of this warpgroup inside the row */
  const int64_t os = (int64_t)H * FA_HD;
#pragma unroll
  for (int ri = 0; ri < 2; ri++) {
    float l = l_r[ri];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const float inv = l > 0.f ? 1.f / l : 0.f;
    const int qp = qrow0 + ri * 8;
    if (qp < len) {
      T *dst = out + (int64_t)(base + qp) * os + (int64_t)h * FA_HD + (lane % 4) * 2;
#pragma unroll
      for (int i = 0; i < 8; i++)
        *reinterpret_cast<uint32_t *>(dst + i * 8) = pack2<T>::make(o[4 * i + 2 * ri] * inv, o[4 * i + 2 * ri + 1] * inv);
    }
  }
#endif // FA_SM90
}

} // namespace

template <int HALF, int NWG, bool SKIP, bool PIPE, bool PVW>
void k_attention_sm90(cudaStream_t s, dim3 grid, const void *qkv, void *out, const attn_tile *tiles,
                      const int *n_tiles, int H, int window, const float2 *rope, float sl2) {
  using T = typename std::conditional<HALF != 0, __half, __nv_bfloat16>::type;
  constexpr int smem = fa_smem_bytes<NWG, PIPE ? 3 : 2>();
  launch_dep(fa_wg_kernel<T, NWG, SKIP, PIPE, PVW>, grid, NWG * 128, smem, s, (const T *)qkv, (T *)out, tiles, n_tiles,
             H, window, rope, sl2);
}

template <int NWG, bool SKIP, bool PIPE, bool PVW> int k_attention_sm90_prepare(void) {
  constexpr int smem = fa_smem_bytes<NWG, PIPE ? 3 : 2>();
  if (cudaFuncSetAttribute((const void *)fa_wg_kernel<__nv_bfloat16, NWG, SKIP, PIPE, PVW>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess ||
      cudaFuncSetAttribute((const void *)fa_wg_kernel<__half, NWG, SKIP, PIPE, PVW>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return 0;
}

/* the variants attention.cu's table holds, in bf16 and fp16 */
#define FA_VARIANT(NWG, SKIP, PIPE, PVW)                                                                          \
  template void k_attention_sm90<0, NWG, SKIP, PIPE, PVW>(cudaStream_t, dim3, const void *, void *, const attn_tile *, \
                                                          const int *, int, int, const float2 *, float);        \
  template void k_attention_sm90<1, NWG, SKIP, PIPE, PVW>(cudaStream_t, dim3, const void *, void *, const attn_tile *, \
                                                          const int *, int, int, const float2 *, float);        \
  template int k_attention_sm90_prepare<NWG, SKIP, PIPE, PVW>(void);
FA_VARIANT(2, false, true, true)   /* wg2n64p */
FA_VARIANT(2, false, false, false) /* wg2n64m */
FA_VARIANT(1, true, false, true)   /* wg1n64 */
FA_VARIANT(1, true, false, false)  /* wg1n64m */
#undef FA_VARIANT
