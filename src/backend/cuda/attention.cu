/*
 * attention.cu: variable-length flash attention over the packed QKV buffer.
 *
 * qkv is [tokens, 3 * H * hd] with rows [Q heads | K heads | V heads]; out is [tokens, H * hd].
 * Rows of the batch lie back to back: a work tile names the row's first token and length, so no
 * mask tensor and no padding exist. A key j is visible to query i of the same row iff
 * window < 0 (global) or |i - j| <= window. RoPE for Q is applied while Q is staged in shared
 * memory (K was rotated in place by rope_k before this kernel: rotating each K tile in shared
 * memory inside this kernel instead measured 2.7 vs 1.8 ms per forward on the global layers of
 * ModernBERT-large 32x512, far more than the 0.57 ms the separate pass costs).
 *
 * Fast path (hd = 32 or 64): one block of 4 warps takes 64 or 128 queries of one head (compiled
 * variants, below); K/V tiles of 32 or 64 keys are double-buffered with cp.async; S = QK^T and O += PV run on the tensor cores
 * (mma.sync m16n8k16, fp32 accumulation) with an online softmax in fp32 (exp2, scaled scores).
 * Probabilities are rounded to 16 bits for PV, as in FlashAttention. Fallback (any hd): one warp
 * per (query, head), scalar fp32. A third kernel serves the last decision-head layer, which needs
 * the outputs of a few gathered queries only (attn_gathered_kernel).
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>

#include "cuda_internal.h"
#include "attn_util.cuh"
#include "pdl.cuh"
#include "wgmma.cuh"

namespace {

/* Shape of the tensor-core kernel, a compile-time variant (see kGlobalVariants / kLocalVariants):
 * NW warps per block, MT 16-row m-tiles per warp (block = 16 * NW * MT queries), BN keys per K/V
 * tile, MINB blocks per SM the register allocation must allow. With MT = 2 every K/V fragment
 * loaded from shared memory feeds two matrix products and each warp has two independent chains to
 * interleave; more warps (NW = 8) hide latency with one chain each. Q is staged through the K
 * buffers when a separate Q buffer would not fit in 48 KB (it lives in registers afterwards).
 * SKIP (local layers): a warp skips a K/V tile none of its queries can see. */
template <class T, int HD, int NW, int MT, int BN, int MINB, bool SKIP>
__global__ void __launch_bounds__(NW * 32, MINB)
    flash_attn_kernel(const T *__restrict__ qkv, T *__restrict__ out, const attn_tile *__restrict__ tiles,
                      const int *__restrict__ n_tiles, int H, int window, const float2 *__restrict__ rope,
                      float scale_log2) {
  pdl_enter();
  constexpr int NT = NW * 32;
  constexpr int RW = 16 * MT; /* query rows per warp */
  constexpr int BM = RW * NW;
  constexpr int LD = HD + 8; /* padded rows: conflict-free ldmatrix */
  constexpr int CH = HD / 8; /* 16-byte chunks per row */
  /* shared memory: K and V double-buffered ([buf][K, V][BN rows]), and Q in its own buffer when
   * that fits in 48 KB (the first K/V tile then loads meanwhile), else staged through the K/V
   * buffers. */
  constexpr int KV_BYTES = 4 * BN * LD * (int)sizeof(T);
  constexpr int Q_BYTES = BM * LD * (int)sizeof(T);
  constexpr bool Q_SEP = BM > 4 * BN || Q_BYTES + KV_BYTES <= 48 * 1024;
  static_assert((Q_SEP ? Q_BYTES : 0) + KV_BYTES <= 48 * 1024, "static shared memory");
  __shared__ __align__(16) T sQbuf[Q_SEP ? BM * LD : 8];
  __shared__ __align__(16) T sKV[2][2][BN * LD];
  T *sQ = Q_SEP ? sQbuf : &sKV[0][0][0];

  const int tile_idx = blockIdx.x;
  if (tile_idx >= *n_tiles) return;
  const attn_tile ti = tiles[tile_idx];
  const int base = ti.base, len = ti.len, q0 = ti.q0;
  const int h = blockIdx.y;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid & 31;
  const qkv_head<T> hq = qkv_head_of(qkv, H, HD, h);
  const int64_t rs = hq.rs;
  const T *Qg = hq.q, *Kg = hq.k, *Vg = hq.v;

  int lo, hi;
  attn_key_range(q0, BM, len, window, &lo, &hi);
  const int n_kb = (hi - lo + BN - 1) / BN;

  auto load_kv = [&](int kb, int buf) {
    for (int c = tid; c < BN * CH; c += NT) {
      int r = c / CH, ch = c % CH;
      int kp = kb + r;
      bool ok = kp < hi;
      int64_t off = (int64_t)(base + (ok ? kp : 0)) * rs + ch * 8;
      cp_async16(&sKV[buf][0][r * LD + ch * 8], Kg + off, ok ? 16 : 0);
      cp_async16(&sKV[buf][1][r * LD + ch * 8], Vg + off, ok ? 16 : 0);
    }
    cp_async_commit();
  };

  /* Stage Q (rotated when rope != NULL). */
  if (rope) {
    constexpr int HC = CH / 2; /* chunks in the first half */
    for (int c = tid; c < BM * HC; c += NT) {
      int r = c / HC, ch = c % HC;
      int qp = q0 + r;
      uint4 a = make_uint4(0, 0, 0, 0), b = make_uint4(0, 0, 0, 0);
      if (qp < len) {
        const T *src = Qg + (int64_t)(base + qp) * rs + ch * 8;
        a = *reinterpret_cast<const uint4 *>(src);
        b = *reinterpret_cast<const uint4 *>(src + HD / 2);
        rope8<T>(a, b, rope + (int64_t)qp * (HD / 2) + ch * 8);
      }
      *reinterpret_cast<uint4 *>(&sQ[r * LD + ch * 8]) = a;
      *reinterpret_cast<uint4 *>(&sQ[r * LD + HD / 2 + ch * 8]) = b;
    }
  } else {
    for (int c = tid; c < BM * CH; c += NT) {
      int r = c / CH, ch = c % CH;
      int qp = q0 + r;
      cp_async16(&sQ[r * LD + ch * 8], Qg + (int64_t)(base + (qp < len ? qp : 0)) * rs + ch * 8, qp < len ? 16 : 0);
    }
  }
  if (Q_SEP) { /* separate Q buffer: the first K/V tile loads meanwhile */
    if (n_kb > 0) load_kv(lo, 0);
    else cp_async_commit();
  } else {
    cp_async_commit();
  }
  cp_async_wait0();
  __syncthreads();

  /* Q fragments of this warp's RW rows, kept in registers. */
  uint32_t qf[MT][HD / 16][4];
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int kc = 0; kc < HD / 16; kc++)
      ldsm_x4(qf[mt][kc], &sQ[(warp * RW + mt * 16 + (lane % 16)) * LD + kc * 16 + (lane / 16) * 8]);
  if (!Q_SEP) { /* Q was staged in the K/V buffers: free them, then load the first tile */
    __syncthreads();
    if (n_kb > 0) load_kv(lo, 0);
    cp_async_wait0();
    __syncthreads();
  }

  float o[MT][HD / 8][4];
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int i = 0; i < HD / 8; i++) o[mt][i][0] = o[mt][i][1] = o[mt][i][2] = o[mt][i][3] = 0.f;
  float m_r[MT][2], l_r[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; mt++) m_r[mt][0] = m_r[mt][1] = -INFINITY, l_r[mt][0] = l_r[mt][1] = 0.f;
  /* row position of c0/c1 in m-tile mt: qrow0 + 16 mt; c2/c3 are 8 rows further */
  const int qrow0 = q0 + warp * RW + lane / 4;
  /* SKIP (local layers): the keys this warp's queries can see are [wk_lo, wk_hi]; a K/V tile
   * outside them is skipped by the whole warp (its scores would all be masked, its probabilities
   * all zero). The test sits outside the unrolled products (a branch inside them cost the global
   * layers 25%), and global layers run the SKIP = false instantiation. */
  const int wk_lo = q0 + warp * RW - window, wk_hi = q0 + warp * RW + RW - 1 + window;

  for (int it = 0; it < n_kb; it++) {
    const int buf = it & 1, kb = lo + it * BN;
    if (it > 0) {
      cp_async_wait0();
      __syncthreads();
    }
    if (it + 1 < n_kb) load_kv(kb + BN, buf ^ 1);
    if (SKIP && (kb > wk_hi || kb + BN - 1 < wk_lo)) continue;

    float s[MT][BN / 8][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int i = 0; i < BN / 8; i++) s[mt][i][0] = s[mt][i][1] = s[mt][i][2] = s[mt][i][3] = 0.f;
#pragma unroll
    for (int kc = 0; kc < HD / 16; kc++) {
#pragma unroll
      for (int np = 0; np < BN / 16; np++) {
        uint32_t b[4];
        ldsm_x4(b, &sKV[buf][0][(np * 16 + (lane % 8) + (lane / 16) * 8) * LD + kc * 16 + ((lane / 8) % 2) * 8]);
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          mma16816<T>(s[mt][2 * np], qf[mt][kc], b[0], b[1]);
          mma16816<T>(s[mt][2 * np + 1], qf[mt][kc], b[2], b[3]);
        }
      }
    }

    /* Mask only where the tile is not entirely visible to every query of the warp (SKIP) or of
     * the block. */
    const int vq_lo = SKIP ? q0 + warp * RW : q0, vq_hi = SKIP ? q0 + warp * RW + RW - 1 : q0 + BM - 1;
    const bool full = (kb + BN <= hi) && (window < 0 || (kb >= vq_hi - window && kb + BN - 1 <= vq_lo + window));
    if (!full) {
#pragma unroll
      for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nt = 0; nt < BN / 8; nt++)
#pragma unroll
          for (int e = 0; e < 4; e++) {
            int kp = kb + nt * 8 + (lane % 4) * 2 + (e & 1);
            int dlt = qrow0 + mt * 16 + (e >> 1) * 8 - kp;
            if (kp >= hi || (window >= 0 && (dlt > window || -dlt > window))) s[mt][nt][e] = -INFINITY;
          }
    }

    /* Online softmax, rows r (e = 0, 1) and r + 8 (e = 2, 3) of each m-tile. */
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
      for (int ri = 0; ri < 2; ri++) {
        float mx = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < BN / 8; nt++) mx = fmaxf(mx, fmaxf(s[mt][nt][2 * ri], s[mt][nt][2 * ri + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        /* raw scores; the scale (log2 e / sqrt(hd)) is folded into one FMA per element */
        float m_new = fmaxf(m_r[mt][ri], mx);
        float m_use = m_new == -INFINITY ? 0.f : m_new;
        float alpha = fast_exp2((m_r[mt][ri] - m_use) * scale_log2);
        const float neg = -m_use * scale_log2;
        float sum = 0.f;
#pragma unroll
        for (int nt = 0; nt < BN / 8; nt++) {
          float p0 = fast_exp2(fmaf(s[mt][nt][2 * ri], scale_log2, neg)),
                p1 = fast_exp2(fmaf(s[mt][nt][2 * ri + 1], scale_log2, neg));
          s[mt][nt][2 * ri] = p0;
          s[mt][nt][2 * ri + 1] = p1;
          sum += p0 + p1;
        }
        l_r[mt][ri] = l_r[mt][ri] * alpha + sum;
        m_r[mt][ri] = m_new;
#pragma unroll
        for (int dt = 0; dt < HD / 8; dt++) {
          o[mt][dt][2 * ri] *= alpha;
          o[mt][dt][2 * ri + 1] *= alpha;
        }
      }
    }

    /* O += P V */
#pragma unroll
    for (int kc = 0; kc < BN / 16; kc++) {
      uint32_t a[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        a[mt][0] = pack2<T>::make(s[mt][2 * kc][0], s[mt][2 * kc][1]);
        a[mt][1] = pack2<T>::make(s[mt][2 * kc][2], s[mt][2 * kc][3]);
        a[mt][2] = pack2<T>::make(s[mt][2 * kc + 1][0], s[mt][2 * kc + 1][1]);
        a[mt][3] = pack2<T>::make(s[mt][2 * kc + 1][2], s[mt][2 * kc + 1][3]);
      }
#pragma unroll
      for (int np = 0; np < HD / 16; np++) {
        uint32_t b[4];
        ldsm_x4_t(b, &sKV[buf][1][(kc * 16 + (lane % 8) + ((lane / 8) % 2) * 8) * LD + np * 16 + (lane / 16) * 8]);
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          mma16816<T>(o[mt][2 * np], a[mt], b[0], b[1]);
          mma16816<T>(o[mt][2 * np + 1], a[mt], b[2], b[3]);
        }
      }
    }
  }

  /* Normalise and write the valid rows. */
  const int64_t os = (int64_t)H * HD;
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
#pragma unroll
    for (int ri = 0; ri < 2; ri++) {
      float l = l_r[mt][ri];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      float inv = l > 0.f ? 1.f / l : 0.f;
      int qp = qrow0 + mt * 16 + ri * 8;
      if (qp < len) {
        T *dst = out + (int64_t)(base + qp) * os + (int64_t)h * HD + (lane % 4) * 2;
#pragma unroll
        for (int dt = 0; dt < HD / 8; dt++)
          *reinterpret_cast<uint32_t *>(dst + dt * 8) =
              pack2<T>::make(o[mt][dt][2 * ri] * inv, o[mt][dt][2 * ri + 1] * inv);
      }
    }
  }
}

/* Scalar path: one warp per (query, head), fp32 online softmax over the visible keys, four keys
 * per step so that four dot products and their reductions are in flight. Queries: token i (below
 * the token count) or, when q_tok is given, token q_tok[i] for i < n_q; the output is row i. */
template <class T>
__global__ void attn_rows_kernel(const T *qkv, T *out, const int32_t *q_tok, int n_q, const int32_t *tok_row,
                                 const int32_t *tok_pos, const int32_t *row_start, const int *counts, int H, int hd,
                                 int window, const float2 *rope, float scale) {
  pdl_enter();
  int i = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
  int h = blockIdx.y;
  if (i >= (q_tok ? n_q : counts[CNT_TOKENS])) return;
  const int t = q_tok ? q_tok[i] : i;
  int r = tok_row[t], base = row_start[r], len = row_start[r + 1] - base, qp = tok_pos[t];
  const qkv_head<T> hq = qkv_head_of(qkv, H, hd, h);
  const int64_t rs = hq.rs;
  const T *q = hq.q + (int64_t)t * rs;
  /* this lane's query elements (hd <= 256: up to 8 per lane) */
  float qv[8];
  int half = hd / 2;
#pragma unroll
  for (int e = 0; e < 8; e++) {
    int j = lane + 32 * e;
    float v = 0.f;
    if (j < hd) {
      v = tof(q[j]);
      if (rope) {
        int jj = j < half ? j : j - half;
        float2 cs = rope[(int64_t)qp * half + jj];
        float other = tof(q[j < half ? j + half : j - half]);
        v = j < half ? v * cs.x - other * cs.y : v * cs.x + other * cs.y;
      }
    }
    qv[e] = v;
  }
  int lo = 0, hi = len;
  if (window >= 0) {
    lo = qp - window > 0 ? qp - window : 0;
    hi = qp + window + 1 < len ? qp + window + 1 : len;
  }
  constexpr int U = 4;
  float m = -INFINITY, l = 0.f, acc[8];
#pragma unroll
  for (int e = 0; e < 8; e++) acc[e] = 0.f;
  const T *K0 = hq.k + (int64_t)base * rs, *V0 = hq.v + (int64_t)base * rs;
  for (int kp = lo; kp < hi; kp += U) {
    float sd[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
      const T *k = K0 + (int64_t)(kp + u < hi ? kp + u : kp) * rs; /* past the end: a valid key, masked below */
      float dot = 0.f;
#pragma unroll
      for (int e = 0; e < 8; e++) {
        int j = lane + 32 * e;
        if (j < hd) dot += qv[e] * tof(k[j]);
      }
      sd[u] = dot;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
      for (int u = 0; u < U; u++) sd[u] += __shfl_xor_sync(0xffffffffu, sd[u], o);
    float mn = m;
#pragma unroll
    for (int u = 0; u < U; u++) {
      sd[u] = kp + u < hi ? sd[u] * scale : -INFINITY;
      mn = fmaxf(mn, sd[u]);
    }
    /* mn is finite (key kp is visible); exp(-inf) = 0 for the first step and the masked keys */
    float alpha = expf(m - mn), p[U];
#pragma unroll
    for (int u = 0; u < U; u++) p[u] = expf(sd[u] - mn);
    l = l * alpha + ((p[0] + p[1]) + (p[2] + p[3]));
#pragma unroll
    for (int e = 0; e < 8; e++) {
      int j = lane + 32 * e;
      if (j < hd) {
        float a = acc[e] * alpha;
#pragma unroll
        for (int u = 0; u < U; u++) a += p[u] * tof(V0[(int64_t)(kp + u < hi ? kp + u : kp) * rs + j]);
        acc[e] = a;
      }
    }
    m = mn;
  }
  T *o = out + (int64_t)i * H * hd + (int64_t)h * hd;
  float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
  for (int e = 0; e < 8; e++) {
    int j = lane + 32 * e;
    if (j < hd) o[j] = from_float<T>(acc[e] * inv);
  }
}

/* Attention of a few gathered queries (the last decision-head layer: option markers and CLS),
 * global, no RoPE. One block of GW warps per (query, head); warp w takes the w-th slice of the
 * row's keys, in steps of 32 keys with one key per lane (its dot product over hd from a
 * 16-byte-loaded K row; the query, scaled, in shared memory), one max and one rescale per step,
 * then P V with each lane owning dimension pairs. The warps' partial (max, sum, output) are merged
 * through shared memory. Splitting the keys keeps a 1-row batch (a handful of queries) from
 * running one long serial chain per warp. hd % 8 == 0, hd <= 256. */
constexpr int GW = 4;
template <class T>
__global__ void __launch_bounds__(GW * 32) attn_gathered_kernel(const T *qkv, T *out, const int32_t *q_tok,
                                                                 const int32_t *tok_row, const int32_t *row_start,
                                                                 int H, int hd, float scale) {
  pdl_enter();
  __shared__ float q_sh[256];
  __shared__ float acc_sh[GW][256];
  __shared__ float m_sh[GW], l_sh[GW];
  const int w = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int i = blockIdx.x, h = blockIdx.y;
  const int t = q_tok[i], r = tok_row[t], base = row_start[r], len = row_start[r + 1] - base;
  const qkv_head<T> hq = qkv_head_of(qkv, H, hd, h);
  const int64_t rs = hq.rs;
  const T *q = hq.q + (int64_t)t * rs;
  for (int j = threadIdx.x; j < hd; j += GW * 32) q_sh[j] = tof(q[j]) * scale;
  __syncthreads();
  const T *K0 = hq.k + (int64_t)base * rs, *V0 = hq.v + (int64_t)base * rs;
  const int np = hd / 2; /* dimension pairs; lane owns pairs lane + 32 e */
  const int slice = (len + GW * 32 - 1) / (GW * 32) * 32;
  const int k_begin = w * slice, k_end = min(len, k_begin + slice);
  float m = -INFINITY, l = 0.f, acc[4][2];
#pragma unroll
  for (int e = 0; e < 4; e++) acc[e][0] = acc[e][1] = 0.f;
  for (int k0 = k_begin; k0 < k_end; k0 += 32) {
    const int kp = k0 + lane;
    float sc = -INFINITY;
    if (kp < k_end) {
      const uint4 *kr = reinterpret_cast<const uint4 *>(K0 + (int64_t)kp * rs);
      float dot = 0.f;
      for (int c = 0; c < hd / 8; c++) {
        uint4 u = kr[c];
        const uint32_t *wv = reinterpret_cast<const uint32_t *>(&u);
#pragma unroll
        for (int e = 0; e < 4; e++) {
          float2 f = pack2<T>::unpack(wv[e]);
          dot = fmaf(q_sh[c * 8 + 2 * e], f.x, fmaf(q_sh[c * 8 + 2 * e + 1], f.y, dot));
        }
      }
      sc = dot;
    }
    float mx = sc;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    const float mn = fmaxf(m, mx); /* finite: key k0 exists */
    const float alpha = expf(m - mn), p = expf(sc - mn);
    l = l * alpha + p; /* per-lane partial sum */
#pragma unroll
    for (int e = 0; e < 4; e++) acc[e][0] *= alpha, acc[e][1] *= alpha;
    const int last = k_end - 1;
    /* every lane's probability to every lane, outside the branch below: a shuffle must be
     * reached by all the lanes of its mask (hd = 48 leaves lanes 24..31 without a pair) */
    float pb[32];
#pragma unroll
    for (int u = 0; u < 32; u++) pb[u] = __shfl_sync(0xffffffffu, p, u); /* 0 past the slice's end */
#pragma unroll
    for (int e = 0; e < 4; e++) {
      const int pr = lane + 32 * e;
      if (pr < np) { /* 32 independent loads in flight */
        uint32_t v[32];
#pragma unroll
        for (int u = 0; u < 32; u++)
          v[u] = reinterpret_cast<const uint32_t *>(V0 + (int64_t)(k0 + u < last ? k0 + u : last) * rs)[pr];
#pragma unroll
        for (int u = 0; u < 32; u++) {
          float2 f = pack2<T>::unpack(v[u]);
          acc[e][0] = fmaf(pb[u], f.x, acc[e][0]);
          acc[e][1] = fmaf(pb[u], f.y, acc[e][1]);
        }
      }
    }
    m = mn;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) l += __shfl_xor_sync(0xffffffffu, l, o);
  if (lane == 0) m_sh[w] = m, l_sh[w] = l;
#pragma unroll
  for (int e = 0; e < 4; e++) {
    const int pr = lane + 32 * e;
    if (pr < np) acc_sh[w][2 * pr] = acc[e][0], acc_sh[w][2 * pr + 1] = acc[e][1];
  }
  __syncthreads();
  float M = m_sh[0];
#pragma unroll
  for (int k = 1; k < GW; k++) M = fmaxf(M, m_sh[k]);
  float f[GW], L = 0.f;
#pragma unroll
  for (int k = 0; k < GW; k++) { /* a warp with no keys has m = -inf, l = 0: weight 0 */
    f[k] = m_sh[k] == -INFINITY ? 0.f : expf(m_sh[k] - M);
    L += l_sh[k] * f[k];
  }
  const float inv = 1.f / L;
  T *dst = out + (int64_t)i * H * hd + (int64_t)h * hd;
  for (int j = threadIdx.x; j < hd; j += GW * 32) {
    float v = 0.f;
#pragma unroll
    for (int k = 0; k < GW; k++) v += acc_sh[k][j] * f[k];
    dst[j] = from_float<T>(v * inv);
  }
}

/* The tensor-core kernel's compiled variants (NW warps, MT m-tiles per warp, BN keys per K/V tile,
 * MINB blocks per SM): global layers (and the head's non-final layers), local layers (SKIP). The
 * first of each list is the default below Hopper; on Hopper the wgmma variants of
 * attention_sm90.cu (make_variant_sm90, named wg*) are, for every pass size (cuda_backend.cu).
 * LAYA_CUDA_ATTN_G / LAYA_CUDA_ATTN_L pick another by name, for comparisons. Measured on the H200
 * (ModernBERT-large 32x512, per forward): global w4m2n32b3 1.91 ms vs w4m2n64 (the previous
 * default) 1.95; local w4m1n32b4 1.92 vs w4m1n64 2.06. 32-key tiles let a
 * local warp skip more of the band's edges (a 16-row warp needs 5 of the 6 tiles instead of all 3
 * 64-key ones) and keep the registers low enough for 3-4 blocks per SM. 8-warp variants (w8m1n64
 * 1.90 global, w8m1n32 2.19 local) are not compiled: with them the two-thread check of cuda/forward
 * failed in 3 of 4 runs (a graph capture invalidated; measured before eager forwards took the
 * capture lock, see cuda_backend.cu). */
typedef void (*flash_fn)(cudaStream_t s, dim3 grid, const void *qkv, void *out, const attn_tile *tiles,
                         const int *n_tiles, int H, int window, const float2 *rope, float sl2);

template <class T, int HD, int NW, int MT, int BN, int MINB, bool SKIP>
void flash_launch(cudaStream_t s, dim3 grid, const void *qkv, void *out, const attn_tile *tiles, const int *n_tiles,
                  int H, int window, const float2 *rope, float sl2) {
  launch_dep((flash_attn_kernel<T, HD, NW, MT, BN, MINB, SKIP>), grid, NW * 32, 0, s, (const T *)qkv, (T *)out, tiles,
             n_tiles, H, window, rope, sl2);
}

struct attn_variant {
  const char *name;
  int queries;          /* per tile: 16 * NW * MT */
  flash_fn launch[2][2]; /* [0 bf16, 1 fp16][0 head_dim 32, 1 head_dim 64] */
  int sm90;             /* head_dim 64 runs attention_sm90.cu's wgmma kernel: Hopper only */
  int (*prepare)(void); /* the wgmma kernel's shared-memory attribute, set when a model picks it */
};

template <int NW, int MT, int BN, int MINB, bool SKIP>
constexpr attn_variant make_variant(const char *name) {
  return attn_variant{name,
                      16 * NW * MT,
                      {{flash_launch<__nv_bfloat16, 32, NW, MT, BN, MINB, SKIP>,
                        flash_launch<__nv_bfloat16, 64, NW, MT, BN, MINB, SKIP>},
                       {flash_launch<__half, 32, NW, MT, BN, MINB, SKIP>, flash_launch<__half, 64, NW, MT, BN, MINB, SKIP>}},
                      0, nullptr};
}

/* A wgmma variant (attention_sm90.cu: NWG warpgroups, 64 NWG queries, for head_dim 64);
 * head_dim 32 runs the mma.sync kernel of the same queries (NW warps x MT m-tiles). */
template <int NWG, bool SKIP, bool PIPE, bool PVW, int NW, int MT, int BN32, int MINB>
constexpr attn_variant make_variant_sm90(const char *name) {
  static_assert(16 * NW * MT == 64 * NWG, "the same query tiles for both head dims");
  return attn_variant{name,
                      64 * NWG,
                      {{flash_launch<__nv_bfloat16, 32, NW, MT, BN32, MINB, SKIP>,
                        k_attention_sm90<0, NWG, SKIP, PIPE, PVW>},
                       {flash_launch<__half, 32, NW, MT, BN32, MINB, SKIP>, k_attention_sm90<1, NWG, SKIP, PIPE, PVW>}},
                      1, k_attention_sm90_prepare<NWG, SKIP, PIPE, PVW>};
}

constexpr attn_variant kGlobalVariants[] = {make_variant<4, 2, 32, 3, false>("w4m2n32b3"),
                                            make_variant<4, 2, 64, 2, false>("w4m2n64"),
                                            make_variant_sm90<2, false, true, true, 4, 2, 32, 3>("wg2n64p"),
                                            make_variant_sm90<2, false, false, false, 4, 2, 32, 3>("wg2n64m")};
constexpr attn_variant kLocalVariants[] = {make_variant<4, 1, 32, 4, true>("w4m1n32b4"),
                                           make_variant<4, 1, 64, 3, true>("w4m1n64"),
                                           make_variant_sm90<1, true, false, true, 4, 1, 32, 4>("wg1n64"),
                                           make_variant_sm90<1, true, false, false, 4, 1, 32, 4>("wg1n64m")};
constexpr int kNGlobal = (int)(sizeof kGlobalVariants / sizeof kGlobalVariants[0]);
constexpr int kNLocal = (int)(sizeof kLocalVariants / sizeof kLocalVariants[0]);

template <class T>
void attention_t(cudaStream_t s, const void *qkv, void *out, const attn_tile *tiles,
                 const int32_t *tok_row, const int32_t *tok_pos, const int32_t *row_start, const int *counts,
                 const int *n_tiles, int n_tiles_cap, int Mp, int H, int hd, int window, const float2 *rope,
                 int variant) {
  const float scale = 1.0f / sqrtf((float)hd);
  if (hd == 64 || hd == 32) {
    const attn_variant &v = window < 0 ? kGlobalVariants[variant] : kLocalVariants[variant];
    v.launch[std::is_same<T, __half>::value][hd == 64](s, dim3((unsigned)n_tiles_cap, (unsigned)H), qkv, out, tiles, n_tiles, H, window,
                               rope, scale * 1.4426950408889634f);
  } else {
    dim3 grid((unsigned)((Mp + 7) / 8), (unsigned)H);
    launch_dep((attn_rows_kernel<T>), grid, 256, 0, s, (const T *)qkv, (T *)out, nullptr, 0, tok_row, tok_pos,
               row_start, counts,
                                             H, hd, window, rope, scale);
  }
}

} // namespace

void k_attention_rows(cudaStream_t s, int half16, const void *qkv, void *out, const int32_t *q_tok, int n,
                      const int32_t *tok_row, const int32_t *tok_pos, const int32_t *row_start, int H, int hd) {
  dim3 grid((unsigned)((n + 7) / 8), (unsigned)H);
  const float scale = 1.0f / sqrtf((float)hd);
  if (hd % 8 == 0 && hd <= 256) {
    dim3 g2((unsigned)n, (unsigned)H);
    if (half16)
      launch_dep((attn_gathered_kernel<__half>), g2, GW * 32, 0, s, (const __half *)qkv, (__half *)out, q_tok, tok_row,
                                                          row_start, H, hd, scale);
    else
      launch_dep((attn_gathered_kernel<__nv_bfloat16>), g2, GW * 32, 0, s, (const __nv_bfloat16 *)qkv,
                 (__nv_bfloat16 *)out,
                                                                 q_tok, tok_row, row_start, H, hd, scale);
    return;
  }
  if (half16)
    launch_dep((attn_rows_kernel<__half>), grid, 256, 0, s, (const __half *)qkv, (__half *)out, q_tok, n, tok_row,
               tok_pos,
                                                  row_start, nullptr, H, hd, -1, nullptr, scale);
  else
    launch_dep((attn_rows_kernel<__nv_bfloat16>), grid, 256, 0, s, (const __nv_bfloat16 *)qkv, (__nv_bfloat16 *)out,
               q_tok, n,
                                                         tok_row, tok_pos, row_start, nullptr, H, hd, -1, nullptr,
                                                         scale);
}

int attention_has_fast_path(int hd) { return hd == 64 || hd == 32; }

void k_attention(cudaStream_t s, int half16, const void *qkv, void *out, const attn_tile *tiles,
                 const int32_t *tok_row, const int32_t *tok_pos, const int32_t *row_start, const int *counts,
                 const int *n_tiles, int n_tiles_cap, int Mp, int H, int hd, int window, const float2 *rope,
                 int variant) {
  if (half16)
    attention_t<__half>(s, qkv, out, tiles, tok_row, tok_pos, row_start, counts, n_tiles, n_tiles_cap, Mp, H, hd,
                        window, rope, variant);
  else
    attention_t<__nv_bfloat16>(s, qkv, out, tiles, tok_row, tok_pos, row_start, counts, n_tiles, n_tiles_cap, Mp,
                               H, hd, window, rope, variant);
}

int attention_variant(int local, const char *e, int dev) {
  const attn_variant *v = local ? kLocalVariants : kGlobalVariants;
  const int n = local ? kNLocal : kNGlobal;
  for (int i = 0; e && i < n; i++)
    if (strcmp(e, v[i].name) == 0) {
      if (!v[i].sm90) return i;
      /* on the model's device (current while its model is made): a device that cannot run it, or
       * refuses its shared memory, keeps the mma.sync default */
      return wgmma_device(dev) && v[i].prepare() == 0 ? i : 0;
    }
  return 0;
}

int attention_variant_queries(int local, int variant) {
  return local ? kLocalVariants[variant].queries : kGlobalVariants[variant].queries;
}
