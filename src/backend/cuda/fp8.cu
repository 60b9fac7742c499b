/*
 * fp8.cu: the FP8 mode's quantisation (precision=fp8, opt-in).
 *
 * The encoder's four GEMMs per layer (Wqkv, Wo, Wi, mlp.Wo) run on Hopper's E4M3 tensor cores:
 * each weight row (one output channel) and each activation row (one token) is scaled so that its
 * largest magnitude maps to E4M3's largest finite value, 448, and cuBLASLt multiplies product
 * (i, j) by token i's and channel j's scales ("outer vector" scaling, gemm.cu) in fp32, before
 * the bf16 output or the fp32 residual add. Per-row scales are what keeps E4M3's 3 mantissa bits
 * usable: one outlier token or channel only coarsens its own row. Everything else (embeddings,
 * LayerNorms, attention, GeGLU, the residual stream, the decision head and tail) runs as in bf16
 * mode.
 *
 * Weights are quantised once at load: a [N, K] 16-bit matrix (the checkpoint's values converted as
 * for bf16 mode, in a temporary) becomes N*K E4M3 bytes followed by N fp32 scales, in a slot of
 * that size (cuda_backend.cu run_uploads). The self-test quantises in place (fp8_quantize_weight).
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "cuda_internal.h"
#include "pdl.cuh"
#include "fp8_rule.cuh"

namespace {

constexpr int QT = 128; /* threads per row */

__device__ __forceinline__ float tof(__half v) { return __half2float(v); }
__device__ __forceinline__ float tof(__nv_bfloat16 v) { return __bfloat162float(v); }

/* One block per row: the row's largest |x| (eight 16-bit values per 16-byte load), then every
 * value times 448 / max, rounded to nearest E4M3 with saturation. A row of zeros gets scale 1. */
template <class T>
__global__ void __launch_bounds__(QT) quant_rows_kernel(const T *src, int ld, int K, uint8_t *dst, float *scale) {
  pdl_enter();
  const int r = blockIdx.x;
  const T *row = src + (size_t)r * ld;
  float mx = 0.0f;
  for (int c = threadIdx.x * 8; c < K; c += QT * 8) {
    const uint4 v = *(const uint4 *)(row + c);
    const T *e = (const T *)&v;
#pragma unroll
    for (int j = 0; j < 8; j++) mx = fmaxf(mx, fabsf(tof(e[j])));
  }
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  __shared__ float part[QT / 32];
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = mx;
  __syncthreads();
  mx = part[0];
#pragma unroll
  for (int i = 1; i < QT / 32; i++) mx = fmaxf(mx, part[i]);
  /* a NaN or Inf row keeps its NaN through the scale, as a 16-bit GEMM would */
  const float s = fp8_row_scale(mx);
  const float inv = 1.0f / s;
  if (threadIdx.x == 0) scale[r] = s;
  uint8_t *out = dst + (size_t)r * K;
  for (int c = threadIdx.x * 8; c < K; c += QT * 8) {
    const uint4 v = *(const uint4 *)(row + c);
    const T *e = (const T *)&v;
    *(uint2 *)(out + c) = make_uint2(fp8_pack4(tof(e[0]), tof(e[1]), tof(e[2]), tof(e[3]), inv),
                                     fp8_pack4(tof(e[4]), tof(e[5]), tof(e[6]), tof(e[7]), inv));
  }
}

__global__ void dequant_kernel(const uint8_t *q, const float *scale, float *out, int rows, int K) {
  const size_t n = (size_t)rows * K;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    __nv_fp8_e4m3 v;
    v.__x = q[i];
    out[i] = (float)v * scale[i / K];
  }
}

/* out[m, n] = sum_k a[m, k] w[n, k] in fp32 (the self-test's reference) */
__global__ void ref_gemm_kernel(const float *a, const float *w, float *out, int M, int N, int K) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
  if (n >= N) return;
  float s = 0.0f;
  for (int k = 0; k < K; k++) s += a[(size_t)m * K + k] * w[(size_t)n * K + k];
  out[(size_t)m * N + n] = s;
}

} // namespace

void k_quant_fp8(cudaStream_t s, int half16, const void *src, int ld, int rows, int K, void *dst, float *scale) {
  if (rows <= 0) return;
  if (half16) launch_dep((quant_rows_kernel<__half>), rows, QT, 0, s, (const __half *)src, ld, K, (uint8_t *)dst,
                         scale);
  else launch_dep((quant_rows_kernel<__nv_bfloat16>), rows, QT, 0, s, (const __nv_bfloat16 *)src, ld, K,
                  (uint8_t *)dst, scale);
}

int fp8_quantize_weight_into(cudaStream_t s, int half16, const void *w, int N, int K, void *dst) {
  if (K < 8 || K % 8 != 0) return -1;
  k_quant_fp8(s, half16, w, K, N, K, dst, (float *)((char *)dst + (size_t)N * K));
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

int fp8_quantize_weight(cudaStream_t s, int half16, void *w, int N, int K, void *tmp) {
  if (fp8_quantize_weight_into(s, half16, w, N, K, tmp)) return -1;
  /* values then scales, back over the 16-bit matrix (its first N*K + 4*N of 2*N*K bytes) */
  if (cudaMemcpyAsync(w, tmp, (size_t)N * K + (size_t)N * 4, cudaMemcpyDeviceToDevice, s) != cudaSuccess) return -1;
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

/* ---------------------------------------------------------------------------------------------
 * Self-test (cuda_backend.h): quantise random A and W on the device, run the fp8 GEMM, compare
 * with an fp32 GEMM of the dequantised values (what the tensor cores are asked to compute) and
 * with one of the 16-bit inputs (what fp8 costs).
 */
namespace {
void fill_bf16(__nv_bfloat16 *p, size_t n, uint32_t seed, float scale) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    float v = ((float)(seed >> 8) / 16777216.0f - 0.5f) * scale;
    if (i % 97 == 0) v *= 8.0f; /* a few outliers per row, as trained activations have */
    p[i] = __float2bfloat16_rn(v);
  }
}
double max_abs_diff(const float *a, const float *b, size_t n, double *scale) {
  double e = 0, s = 1e-30;
  for (size_t i = 0; i < n; i++) {
    const double d = fabs((double)a[i] - (double)b[i]);
    if (!(d <= e)) e = d;
    s = fmax(s, fabs((double)b[i]));
  }
  *scale = s;
  return e;
}
} // namespace

extern "C" int backend_cuda_fp8_selftest(int M, int N, int K, int accumulate, double *rel_q, double *rel_16) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) return 1;
  cudaDeviceProp pr;
  if (cudaGetDeviceProperties(&pr, 0) != cudaSuccess || pr.major < 9) return 1;
  if (gemm_fp8_supported() != 0) return 2;
  const size_t na = (size_t)M * K, nw = (size_t)N * K, no = (size_t)M * N;
  __nv_bfloat16 *hA = (__nv_bfloat16 *)malloc(na * 2), *hW = (__nv_bfloat16 *)malloc(nw * 2);
  float *hA32 = (float *)malloc(na * 4), *hW32 = (float *)malloc(nw * 4), *hD = (float *)malloc(no * 4),
        *hRq = (float *)malloc(no * 4), *hR16 = (float *)malloc(no * 4), *hC = (float *)malloc(no * 4);
  void *dA = NULL, *dW = NULL, *dTmp = NULL, *dA8 = NULL, *ws = NULL;
  float *dAs = NULL, *dAf = NULL, *dWf = NULL, *dR = NULL, *dD = NULL;
  cublasLtHandle_t lt = NULL;
  struct gemm_cache *gc = NULL;
  cudaStream_t st = NULL;
  int rc = -1;
  const size_t ws_bytes = (size_t)32 << 20;
  if (!hA || !hW || !hA32 || !hW32 || !hD || !hRq || !hR16 || !hC) goto done;
  fill_bf16(hA, na, 3u + (uint32_t)M, 4.0f);
  fill_bf16(hW, nw, 11u + (uint32_t)K, 4.0f / sqrtf((float)K));
  for (size_t i = 0; i < no; i++) hC[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
  if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) || cudaMalloc(&dA, na * 2) || cudaMalloc(&dW, nw * 2) ||
      cudaMalloc(&dTmp, nw + (size_t)N * 4) || cudaMalloc(&dA8, na) || cudaMalloc((void **)&dAs, (size_t)M * 4) ||
      cudaMalloc((void **)&dAf, na * 4) || cudaMalloc((void **)&dWf, nw * 4) || cudaMalloc((void **)&dR, no * 4) ||
      cudaMalloc((void **)&dD, no * 4) || cudaMalloc(&ws, ws_bytes))
    goto done;
  if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS || !(gc = gemm_cache_create(0, -1))) goto done;
  cudaMemcpy(dA, hA, na * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dW, hW, nw * 2, cudaMemcpyHostToDevice);
  /* the 16-bit product first (dW is quantised in place below) */
  for (size_t i = 0; i < na; i++) hA32[i] = __bfloat162float(hA[i]);
  for (size_t i = 0; i < nw; i++) hW32[i] = __bfloat162float(hW[i]);
  cudaMemcpy(dAf, hA32, na * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dWf, hW32, nw * 4, cudaMemcpyHostToDevice);
  ref_gemm_kernel<<<dim3((unsigned)((N + 127) / 128), (unsigned)M), 128, 0, st>>>(dAf, dWf, dR, M, N, K);
  cudaMemcpyAsync(hR16, dR, no * 4, cudaMemcpyDeviceToHost, st);
  if (fp8_quantize_weight(st, 0, dW, N, K, dTmp)) goto done;
  k_quant_fp8(st, 0, dA, K, M, K, dA8, dAs);
  /* the dequantised operands' product */
  dequant_kernel<<<1024, 256, 0, st>>>((const uint8_t *)dA8, dAs, dAf, M, K);
  dequant_kernel<<<1024, 256, 0, st>>>((const uint8_t *)dW, (const float *)((char *)dW + nw), dWf, N, K);
  ref_gemm_kernel<<<dim3((unsigned)((N + 127) / 128), (unsigned)M), 128, 0, st>>>(dAf, dWf, dR, M, N, K);
  cudaMemcpyAsync(hRq, dR, no * 4, cudaMemcpyDeviceToHost, st);
  if (accumulate) cudaMemcpyAsync(dD, hC, no * 4, cudaMemcpyHostToDevice, st);
  if (gemm_run_fp8(gc, lt, st, ws, ws_bytes, M, N, K, dA8, K, dAs, dW, (const float *)((char *)dW + nw), dD, N,
                   accumulate ? CU_F32 : CU_BF16, accumulate))
    goto done;
  if (cudaStreamSynchronize(st) != cudaSuccess) goto done;
  if (accumulate) {
    cudaMemcpy(hD, dD, no * 4, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < no; i++) hD[i] -= hC[i];
  } else {
    cudaMemcpy(hD, dD, no * 2, cudaMemcpyDeviceToHost); /* bf16 into hD's first half */
    const __nv_bfloat16 *b = (const __nv_bfloat16 *)hD;
    for (size_t i = no; i-- > 0;) hD[i] = __bfloat162float(b[i]); /* widened in place, from the end */
  }
  {
    double sq, s16;
    const double eq = max_abs_diff(hD, hRq, no, &sq), e16 = max_abs_diff(hD, hR16, no, &s16);
    *rel_q = eq / sq;
    *rel_16 = e16 / s16;
  }
  rc = cudaGetLastError() == cudaSuccess ? 0 : -1;
done:
  if (gc) gemm_cache_destroy(gc);
  if (lt) cublasLtDestroy(lt);
  cudaFree(dA), cudaFree(dW), cudaFree(dTmp), cudaFree(dA8), cudaFree(dAs), cudaFree(dAf), cudaFree(dWf);
  cudaFree(dR), cudaFree(dD), cudaFree(ws);
  if (st) cudaStreamDestroy(st);
  free(hA), free(hW), free(hA32), free(hW32), free(hD), free(hRq), free(hR16), free(hC);
  return rc;
}
