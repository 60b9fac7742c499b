/*
 * gemm.cu: linear layers through cuBLASLt.
 *
 * Our matrices are row-major and weights are in torch's Linear layout [N, K]. In cuBLASLt's
 * column-major terms D^T[N, M] = W[N, K] (read transposed from its [K, N] column-major view)
 * x A^T[K, M], the "TN" case cuBLASLt is fastest at. Epilogues: bias (a vector over N) and
 * ReLU + bias; with `accumulate` D = D + result, which is how the fp32 residual stream takes a
 * 16-bit branch without rounding it.
 *
 * Descriptors and the chosen algorithm are cached per shape, per worker (no locks): a shape
 * costs one heuristic query, after which a call is a lookup and a cublasLtMatmul.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

namespace {

struct gemm_key {
  int M, N, K, lda, ldd, dt_ab, dt_d, accumulate, epi;
  bool operator==(const gemm_key &o) const { return memcmp(this, &o, sizeof o) == 0; }
};

struct gemm_plan {
  gemm_key key;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulAlgo_t algo;
  int has_algo;
  cublasLtMatmulHeuristicResult_t cand[8]; /* candidates, for tuning */
  int n_cand, tuned;
};

cudaDataType_t cuda_type(int dt) {
  return dt == CU_F32 ? CUDA_R_32F : dt == CU_F16 ? CUDA_R_16F : dt == CU_F8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
}

} // namespace

struct gemm_cache {
  gemm_plan *plans;
  int n, cap;
  int tune;   /* LAYA_CUDA_GEMM_TUNE=1 */
  int splitk; /* LAYA_CUDA_GEMM_SPLITK: -1 (cuBLASLt's choice) or the reduction schemes allowed */
};

struct gemm_cache *gemm_cache_create(int tune, int splitk) {
  struct gemm_cache *c = (struct gemm_cache *)calloc(1, sizeof(struct gemm_cache));
  if (c) {
    c->tune = tune;
    c->splitk = splitk;
  }
  return c;
}

static void plan_free(gemm_plan *p) {
  if (p->desc) cublasLtMatmulDescDestroy(p->desc);
  if (p->la) cublasLtMatrixLayoutDestroy(p->la);
  if (p->lb) cublasLtMatrixLayoutDestroy(p->lb);
  if (p->lc) cublasLtMatrixLayoutDestroy(p->lc);
}

void gemm_cache_destroy(struct gemm_cache *c) {
  if (!c) return;
  for (int i = 0; i < c->n; i++) plan_free(&c->plans[i]);
  free(c->plans);
  free(c);
}

#define LT_TRY(call)                                   \
  do {                                                 \
    cublasStatus_t st_ = (call);                       \
    if (st_ != CUBLAS_STATUS_SUCCESS) return (int)st_; \
  } while (0)

static int plan_build(gemm_plan *p, cublasLtHandle_t lt, size_t ws_size, int splitk, const float *a_scale,
                      const float *w_scale) {
  const gemm_key &k = p->key;
  /* fp32 GEMMs (the decision tail) run in true fp32, never TF32. */
  LT_TRY(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  cublasLtEpilogue_t epi = k.epi == EPI_BIAS        ? CUBLASLT_EPILOGUE_BIAS
                           : k.epi == EPI_RELU_BIAS ? CUBLASLT_EPILOGUE_RELU_BIAS
                                                    : CUBLASLT_EPILOGUE_DEFAULT;
  LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
  if (k.dt_ab == CU_F8) {
    /* per-channel (our W: cuBLASLt's A, N rows) and per-token (our A: its B, M columns) fp32
     * scales, applied to each product in the epilogue */
    const int32_t vec = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &vec, sizeof vec));
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &vec, sizeof vec));
    /* the heuristic refuses (status 7) a vector scale mode whose pointers are not set yet */
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_scale, sizeof w_scale));
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &a_scale, sizeof a_scale));
  }
  cudaDataType_t tab = cuda_type(k.dt_ab), td = cuda_type(k.dt_d);
  LT_TRY(cublasLtMatrixLayoutCreate(&p->la, tab, (uint64_t)k.K, (uint64_t)k.N, (int64_t)k.K));
  LT_TRY(cublasLtMatrixLayoutCreate(&p->lb, tab, (uint64_t)k.K, (uint64_t)k.M, (int64_t)k.lda));
  LT_TRY(cublasLtMatrixLayoutCreate(&p->lc, td, (uint64_t)k.N, (uint64_t)k.M, (int64_t)k.ldd));

  cublasLtMatmulPreference_t pref;
  LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
  cublasStatus_t st =
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_size, sizeof ws_size);
  int n = 0;
  if (st == CUBLAS_STATUS_SUCCESS && splitk >= 0) {
    const uint32_t mask = (uint32_t)splitk;
    st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof mask);
  }
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(lt, p->desc, p->la, p->lb, p->lc, p->lc, pref, 8, p->cand, &n);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS) return (int)st;
  if (n < 1) return (int)CUBLAS_STATUS_NOT_SUPPORTED;
  p->n_cand = n;
  p->algo = p->cand[0].algo;
  p->has_algo = 1;
  return 0;
}

/* LAYA_CUDA_GEMM_TUNE=1: the first eager call of a shape times cuBLASLt's candidates (on a
 * scratch output for accumulating GEMMs, so the residual stream is not touched) and keeps the
 * fastest. Costs a few milliseconds once per shape. Never during a capture: an eager forward runs
 * under the model's capture lock (cuda_backend.cu), so its cudaMalloc / cudaFree cannot invalidate
 * another worker's capture. */
static void plan_tune(gemm_plan *p, int tune, cublasLtHandle_t lt, cudaStream_t s, void *ws, size_t ws_size,
                      const void *A, const void *W, void *D, const void *bias) {
  p->tuned = 1;
  if (!tune || p->n_cand < 2) return;
  cudaStreamCaptureStatus cs;
  if (cudaStreamIsCapturing(s, &cs) != cudaSuccess || cs != cudaStreamCaptureStatusNone) return;
  const gemm_key &k = p->key;
  void *out = D, *tmp = NULL;
  if (k.accumulate) {
    size_t bytes = (size_t)k.M * k.ldd * (k.dt_d == CU_F32 ? 4 : 2);
    if (cudaMalloc(&tmp, bytes) != cudaSuccess) {
      cudaGetLastError();
      return;
    }
    cudaMemsetAsync(tmp, 0, bytes, s);
    out = tmp;
  }
  if (bias) cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const float one = 1.0f, zero = 0.0f;
  float best = 1e30f;
  int best_i = 0;
  for (int i = 0; i < p->n_cand; i++) {
    if (p->cand[i].workspaceSize > ws_size) continue;
    bool ok = true;
    for (int r = 0; r < 4 && ok; r++) {
      if (r == 1) cudaEventRecord(e0, s);
      ok = cublasLtMatmul(lt, p->desc, &one, W, p->la, A, p->lb, k.accumulate ? &one : &zero, out, p->lc, out, p->lc,
                          &p->cand[i].algo, ws, ws_size, s) == CUBLAS_STATUS_SUCCESS;
    }
    cudaEventRecord(e1, s);
    cudaEventSynchronize(e1);
    float ms = 0;
    if (ok && cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess && ms < best) {
      best = ms;
      best_i = i;
    }
    cudaGetLastError();
  }
  p->algo = p->cand[best_i].algo;
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  if (tmp) {
    cudaStreamSynchronize(s);
    cudaFree(tmp);
  }
}

static int gemm_call(struct gemm_cache *c, cublasLtHandle_t lt, cudaStream_t s, void *ws, size_t ws_size, int M,
                     int N, int K, const void *A, int lda, const void *W, int dt_ab, void *D, int ldd, int dt_d,
                     int accumulate, int epi, const void *bias, const float *a_scale, const float *w_scale) {
  gemm_key key;
  memset(&key, 0, sizeof key);
  key.M = M;
  key.N = N;
  key.K = K;
  key.lda = lda;
  key.ldd = ldd;
  key.dt_ab = dt_ab;
  key.dt_d = dt_d;
  key.accumulate = accumulate;
  key.epi = epi;
  gemm_plan *p = NULL;
  for (int i = 0; i < c->n; i++)
    if (c->plans[i].key == key) {
      p = &c->plans[i];
      break;
    }
  if (!p) {
    if (c->n == c->cap) {
      int cap = c->cap ? c->cap * 2 : 64;
      gemm_plan *np = (gemm_plan *)realloc(c->plans, sizeof(gemm_plan) * (size_t)cap);
      if (!np) return (int)CUBLAS_STATUS_ALLOC_FAILED;
      c->plans = np;
      c->cap = cap;
    }
    p = &c->plans[c->n];
    memset(p, 0, sizeof *p);
    p->key = key;
    int rc = plan_build(p, lt, ws_size, c->splitk, a_scale, w_scale);
    if (rc) {
      plan_free(p);
      return rc;
    }
    c->n++;
  }
  if (dt_ab == CU_F8) { /* set before tuning: the timed candidates read them */
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_scale, sizeof w_scale));
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &a_scale, sizeof a_scale));
  }
  if (!p->tuned) plan_tune(p, c->tune, lt, s, ws, ws_size, A, W, D, bias);
  if (bias)
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  const float one = 1.0f, zero = 0.0f;
  LT_TRY(cublasLtMatmul(lt, p->desc, &one, W, p->la, A, p->lb, accumulate ? &one : &zero, D, p->lc, D, p->lc,
                        &p->algo, ws, ws_size, s));
  return 0;
}

int gemm_run(struct gemm_cache *c, cublasLtHandle_t lt, cudaStream_t s, void *ws, size_t ws_size, int M, int N,
             int K, const void *A, int lda, const void *W, int dt_ab, void *D, int ldd, int dt_d, int accumulate,
             int epi, const void *bias) {
  return gemm_call(c, lt, s, ws, ws_size, M, N, K, A, lda, W, dt_ab, D, ldd, dt_d, accumulate, epi, bias, NULL, NULL);
}

int gemm_run_fp8(struct gemm_cache *c, cublasLtHandle_t lt, cudaStream_t s, void *ws, size_t ws_size, int M, int N,
                 int K, const void *A8, int lda, const float *a_scale, const void *W8, const float *w_scale, void *D,
                 int ldd, int dt_d, int accumulate) {
  return gemm_call(c, lt, s, ws, ws_size, M, N, K, A8, lda, W8, CU_F8, D, ldd, dt_d, accumulate, EPI_NONE, NULL,
                   a_scale, w_scale);
}

/* Asked by running one: a plan can be made (the heuristic does not look at the scale pointers) for
 * a combination the matmul then refuses. */
int gemm_fp8_supported(void) {
  const int M = 64, N = 128, K = 128;
  cublasLtHandle_t lt = NULL;
  struct gemm_cache *c = gemm_cache_create(0, -1);
  void *buf = NULL, *ws = NULL;
  cudaStream_t s = NULL;
  const size_t ws_size = (size_t)4 << 20;
  int rc = (int)CUBLAS_STATUS_NOT_INITIALIZED;
  if (c && cublasLtCreate(&lt) == CUBLAS_STATUS_SUCCESS &&
      cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess &&
      cudaMalloc(&buf, (size_t)(M + N) * K + (size_t)(M + N) * 4 + (size_t)M * N * 2) == cudaSuccess &&
      cudaMalloc(&ws, ws_size) == cudaSuccess && cudaMemsetAsync(buf, 0, (size_t)(M + N) * (K + 4), s) == cudaSuccess) {
    char *b = (char *)buf;
    const float *sa = (const float *)(b + (size_t)(M + N) * K), *sw = sa + M;
    rc = gemm_run_fp8(c, lt, s, ws, ws_size, M, N, K, b, K, sa, b + (size_t)M * K, sw, b + (size_t)(M + N) * (K + 4),
                      N, CU_BF16, 0);
    if (!rc && cudaStreamSynchronize(s) != cudaSuccess) rc = (int)CUBLAS_STATUS_EXECUTION_FAILED;
  }
  cudaGetLastError();
  if (s) cudaStreamDestroy(s);
  cudaFree(buf);
  cudaFree(ws);
  if (lt) cublasLtDestroy(lt);
  gemm_cache_destroy(c);
  return rc;
}
