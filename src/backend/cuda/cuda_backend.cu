/*
 * cuda_backend.cu: the CUDA backend (backend.h) — weight upload, per-worker scratch, the forward
 * pass as a sequence of cuBLASLt GEMMs and our kernels, and CUDA graphs per batch-size bucket.
 *
 * Precision: GEMM weights and activations are bf16 (default) or fp16 with fp32 accumulation; the
 * residual stream, every LayerNorm, the head stream and the decision tail (scorer, features, act
 * head) are fp32. In bf16 mode the decision head's GEMMs and attention run in fp16 (see
 * LAYA_CUDA_HEAD_FP16). The embedding table keeps the checkpoint's dtype (fp16 is exact).
 * PREC_FP32 (the zero value of backend_options) selects the default, bf16: there is no fp32
 * CUDA path; PREC_INT8 is refused. PREC_FP8 (opt-in, Hopper) is bf16 mode with the encoder's
 * GEMMs on E4M3 tensor cores (fp8.cu).
 *
 * Graphs: a batch is padded to a bucket (tokens to 1/8-octave steps of 64, rows and markers to
 * powers of two) for the grid sizes only; kernels read the real counts from device memory, and
 * attention runs over the packed rows (no padded row is ever attended). The first batch of a
 * bucket runs eagerly (it also loads cuBLASLt's kernels), the second captures a graph, later ones
 * replay it: a 1-row forward is one graph launch plus two copies. worker_warm (called by
 * laya_open and laya_reserve) runs those first batches of the small-pass buckets before any request
 * comes ("Warm-up" below).
 *
 * Embed pass (backend.embed, model/embed.h): the forward's encoder over the packed rows at the
 * backend's precision (its kernels and GEMMs, the fp32 residual stream), the final norm in fp32
 * without the question-type embedding, then each row's mean over its tokens in double
 * (k_mean_rows, as backend_mean_rows); no decision head. It has its own graphs per bucket.
 *
 * Devices: one backend per device (backend_options.device_id), no global state; every entry point
 * selects its device for the calling thread. A CUDA allocation failure is reported as
 * LAYA_ERR_DEVICE_OOM (its own code, whatever the message) so that the engine can retry on the CPU.
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>

#include "cuda_internal.h"
#include "wgmma.cuh"
#include "cuda_backend.h"
#include "model/spec.h"

extern "C" {
#include "core/options.h"
}

#define MAX_POS 8192      /* longest row (RoPE tables) */
#define ACT_HIDDEN_MAX 4096
#define WS_BYTES ((size_t)32 << 20)
#define MAX_GRAPHS 160 /* the warm-up's small-pass buckets (up to 90) and the rest */

/* ---------------------------------------------------------------------------------------------
 * Errors (written here; the library uses two laya symbols: packed_batch_check and model/spec.c)
 */
static int cu_fail(laya_error *err, int code, const char *fmt, ...) {
  if (err) {
    err->code = code;
    err->kind[0] = 0;
    err->file = __FILE__;
    err->line = __LINE__;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
  }
  return code;
}

static int cuda_fail(laya_error *err, cudaError_t e, int dev, const char *what) {
  if (e == cudaErrorMemoryAllocation)
    return cu_fail(err, LAYA_ERR_DEVICE_OOM, "CUDA out of memory on device %d (%s): %s", dev, what,
                   cudaGetErrorString(e));
  return cu_fail(err, LAYA_ERR_DEVICE, "CUDA error on device %d (%s): %s", dev, what, cudaGetErrorString(e));
}

static int lt_fail(laya_error *err, int st, int dev, const char *what) {
  if (st == (int)CUBLAS_STATUS_ALLOC_FAILED)
    return cu_fail(err, LAYA_ERR_DEVICE_OOM, "CUDA out of memory on device %d (cuBLASLt, %s)", dev, what);
  return cu_fail(err, LAYA_ERR_DEVICE, "cuBLASLt failed on device %d (%s): status %d", dev, what, st);
}

#define CU_TRY(call, what)                                   \
  do {                                                       \
    cudaError_t e_ = (call);                                 \
    if (e_ != cudaSuccess) return cuda_fail(err, e_, dev, what); \
  } while (0)

/* ---------------------------------------------------------------------------------------------
 * The loaded model
 */
struct dev_layer {
  float *attn_norm, *mlp_norm;
  void *wqkv, *wo, *wi, *wo_mlp;
  /* fp8 mode: each weight above holds E4M3 values followed by its per-channel scales, these */
  const float *s_qkv, *s_o, *s_i, *s_o_mlp;
  unsigned char wi_map[GG_MAX_VARIANTS][GG_MAP_BYTES];   /* TMA descriptors of wi (interleaved), per variant of gg_mask */
  unsigned char wqkv_map[GG_MAX_VARIANTS][GG_MAP_BYTES]; /* TMA descriptors of wqkv, per variant of qkv_mask */
};
struct dev_head_layer {
  float *n1w, *n1b, *n2w, *n2b, *out_b, *l2b;
  void *in_w, *in_b, *out_w, *l1w, *l1b, *l2w;
};

struct up_rec {
  int64_t numel;
  int dst_dt, gemm;
  size_t bytes;
};

struct cuda_model {
  int dev;
  int half16; /* 1 = fp16, 0 = bf16 */
  int fp8;    /* 1: the encoder GEMMs in E4M3 (precision fp8; half16 is 0) */
  int dt16;   /* CU_F16 or CU_BF16 */
  int head_half16, head_dt16; /* the decision head's 16-bit type (see LAYA_CUDA_HEAD_FP16) */
  int att_g, att_l;           /* attention kernel variants: global layers and head, local layers */
  int att_g_small, att_l_small; /* the same for passes of <= CUDA_ATTN_SMALL_MAX_TOKENS (64-key tiles) */
  int tile_q, tile_ql;        /* their queries per tile */
  int d, n_layers, H, hd, I, V;
  int layer_window[1024]; /* model_layer_window of each layer: -1 global, else the half-window */
  int act;                    /* enc_act: the GeGLU activation (hidden_activation) */
  float eps;
  int head_layers, head_heads, n_act, act_hidden, ld_act;
  void *arena;        /* this model's own device tensors */
  size_t arena_bytes;
  /* Sharing (backend_cuda_create_shared): every tensor but the encoder's GEMM weights can be read
   * from another model of the same weights on the same device, its `base`, which this model holds
   * a reference on (refs: this model's own backend plus each model sharing it; the last release
   * frees it). up_ptr[i] is the device address of the i-th planned upload (model_load's order),
   * what a model sharing this one takes instead of uploading its own. */
  const model_weights *src; /* the weights it was loaded from: compared, never read after load */
  struct cuda_model *base;
  int refs;
  void **up_ptr;
  struct up_rec *up_rec; /* and what each was (compared by a model that would share them) */
  int up_n;
  size_t borrowed_bytes; /* the base's bytes this model reads instead of holding them */
  void *emb;
  int emb_dt;
  float *emb_norm, *final_norm, *type_emb;
  dev_layer *layers;
  dev_head_layer *head;
  float *sn_w, *sn_b, *s1_w, *s1_b, *s2_w, *s2_b, *a1_w, *a1_b, *a2_w, *a2_b;
  float2 *rope_global, *rope_local;
  int use_graphs;
  /* Held while a worker captures a graph, and while any worker does what must not overlap another
   * thread's capture: allocating or freeing device or pinned memory (a cudaFree / cudaMalloc /
   * cudaHostAlloc during another thread's capture could invalidate it: cuBLASLt status 13 "during
   * capture" in the two-thread check of cuda/forward, about 1 run in 10), and enqueueing a forward
   * eagerly (the first batch of a bucket, or a profiling worker): that is where kernels are first
   * launched, so where lazy module loading happens, and where LAYA_CUDA_GEMM_TUNE=1 allocates its
   * timing buffer (gemm.cu). Each happens once per bucket, so the lock is rarely taken. */
  pthread_mutex_t *mem_lock; /* own_lock, or the base's lock when sharing (one lock per device arena) */
  pthread_mutex_t own_lock;
  int head_all; /* LAYA_CUDA_HEAD_ALL=1: the last head layer over every token (for comparison) */
  /* the rest of the environment as the backend was created with it (core/options.h): read once */
  int warmup, profile, gemm_tune, gemm_splitk; /* gemm_splitk: -1 or a cuBLASLt reduction-scheme mask */
  long long max_scratch; /* LAYA_CUDA_MAX_SCRATCH, -1: no cap */
  unsigned gg_mask; /* the fused Wi + GeGLU kernel variants (gemm_sm90.cu) a pass may run, 0: cuBLASLt + k_geglu */
  unsigned qkv_mask; /* the Wqkv + RoPE kernel variants (gemm_sm90.cu), 0: cuBLASLt + k_rope_k (and Q rotated in attention) */
  int qkv_small;     /* LAYA_CUDA_QKV unset: the fused Wqkv + RoPE only for passes of <= CUDA_QKV_FUSED_MAX_TOKENS */
};

/* ---------------------------------------------------------------------------------------------
 * Loading: every device tensor lives in one arena. A first pass lists the uploads (and sizes the
 * arena); the second copies and converts on the GPU through a staging buffer.
 */
struct upload {
  const tensor *t; /* NULL: a table computed on the host (src_host) */
  const void *src_host;
  int64_t numel;
  int dst_dt;     /* CU_F8: a [q_rows, numel / q_rows] GEMM weight quantised per row (fp8.cu) */
  int q_rows;
  int gemm;       /* an encoder GEMM weight: always the model's own (never shared) */
  size_t bytes;   /* its room in the arena */
  size_t off;
  void **dst;
  const float **scale_dst; /* CU_F8: where its row scales' address goes */
  int pad_rows, pad_cols, pad_ld; /* act1: copy [rows, cols] into [rows, ld] */
};

struct loader {
  upload *u;
  int n, cap;
  size_t size;
  laya_error *err;
  int failed;
};

static size_t dt_size(int dt) { return dt == CU_F32 ? 4 : 2; }

static void add_upload(loader *L, const tensor *t, const void *host, int64_t numel, int dst_dt, void **dst) {
  if (L->failed) return;
  if (L->n == L->cap) {
    int cap = L->cap ? 2 * L->cap : 256;
    upload *nu = (upload *)realloc(L->u, sizeof(upload) * (size_t)cap);
    if (!nu) {
      L->failed = cu_fail(L->err, LAYA_ERR_NOMEM, "out of host memory while planning the CUDA upload");
      return;
    }
    L->u = nu;
    L->cap = cap;
  }
  upload *p = &L->u[L->n++];
  memset(p, 0, sizeof *p);
  p->t = t;
  p->src_host = host;
  p->numel = numel;
  p->dst_dt = dst_dt;
  p->dst = dst;
  p->bytes = ((size_t)numel * dt_size(dst_dt) + 255) & ~(size_t)255;
}

/* An encoder GEMM weight [n0, n1]: 16-bit, or in fp8 mode its E4M3 values followed by one fp32
 * scale per row (n0 n1 + 4 n0 bytes, quantised at upload from its 16-bit values). */
static void add_gemm_upload(loader *L, const tensor *t, int fp8, int dt16, int64_t n0, void **dst, const float **scale) {
  add_upload(L, t, NULL, t->numel, fp8 ? CU_F8 : dt16, dst);
  if (L->failed) return;
  upload *p = &L->u[L->n - 1];
  p->gemm = 1;
  if (fp8) {
    p->q_rows = (int)n0;
    p->scale_dst = scale;
    p->bytes = ((size_t)t->numel + (size_t)n0 * 4 + 255) & ~(size_t)255;
  }
}

/* Check presence and shape of a tensor before planning its upload. */
static int need(loader *L, const tensor *t, const char *name, int64_t n0, int64_t n1) {
  if (L->failed) return 0;
  if (!t || !t->data) {
    L->failed = cu_fail(L->err, LAYA_ERR_CONFIG, "CUDA backend: tensor %s is missing", name);
    return 0;
  }
  int64_t want = n1 > 0 ? n0 * n1 : n0;
  bool ok = t->numel == want && t->shape[0] == n0 && (n1 <= 0 || (t->ndim == 2 && t->shape[1] == n1));
  if (!ok) {
    L->failed = cu_fail(L->err, LAYA_ERR_CONFIG,
                        "CUDA backend: tensor %s has shape [%lld, %lld] (%lld elements), expected [%lld%s%lld]",
                        t->name ? t->name : name, (long long)t->shape[0], (long long)(t->ndim > 1 ? t->shape[1] : 0),
                        (long long)t->numel, (long long)n0, n1 > 0 ? ", " : "", (long long)(n1 > 0 ? n1 : 0));
    return 0;
  }
  if (t->dtype != DT_F32 && t->dtype != DT_F16 && t->dtype != DT_BF16) {
    L->failed = cu_fail(L->err, LAYA_ERR_UNSUPPORTED, "CUDA backend: tensor %s has an unsupported dtype", name);
    return 0;
  }
  return 1;
}

#define UP(t, name, n0, n1, dt, field)                                                       \
  do {                                                                                     \
    if (need(&L, (t), (name), (n0), (n1))) add_upload(&L, (t), NULL, (t)->numel, (dt), (void **)&(field)); \
  } while (0)
#define UPG(t, name, n0, n1, field, scale)                                                                    \
  do {                                                                                                       \
    if (need(&L, (t), (name), (n0), (n1))) add_gemm_upload(&L, (t), m->fp8, m->dt16, (n0), (void **)&(field), &(scale)); \
  } while (0)

static void rope_table(float2 *out, double theta, int hd) {
  int half = hd / 2;
  for (int j = 0; j < half; j++) {
    /* torch: inv_freq = 1 / theta^(arange(0, hd, 2) / hd) in fp32; angle = pos * inv_freq in fp32 */
    float inv = (float)(1.0 / pow(theta, (double)(2 * j) / (double)hd));
    for (int p = 0; p < MAX_POS; p++) {
      float ang = (float)p * inv;
      out[(size_t)p * half + j] = make_float2((float)cos((double)ang), (float)sin((double)ang));
    }
  }
}

/* Copies (and converts) every planned upload into the arena, or for one the base shares (L->u[i]
 * not gemm, m->base set) takes the base's address of the same upload. An fp8 GEMM weight goes
 * through a 16-bit temporary (tmp16: the same conversion a 16-bit weight gets) and is quantised
 * from it into its slot, as fp8_quantize_weight quantises a 16-bit matrix. */
static int run_uploads(cuda_model *m, loader *L, laya_error *err) {
  const int dev = m->dev;
  cudaStream_t st;
  CU_TRY(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "creating the upload stream");
  const size_t chunk = (size_t)16 << 20; /* elements per staging chunk */
  void *stage[2] = {NULL, NULL}, *tmp16 = NULL;
  size_t tmp16_bytes = 0;
  for (int i = 0; i < L->n; i++)
    if (L->u[i].dst_dt == CU_F8 && (size_t)L->u[i].numel * 2 > tmp16_bytes) tmp16_bytes = (size_t)L->u[i].numel * 2;
  cudaError_t e = cudaSuccess;
  for (int b = 0; b < 2 && e == cudaSuccess; b++) e = cudaMalloc(&stage[b], chunk * 4);
  if (e == cudaSuccess && tmp16_bytes) e = cudaMalloc(&tmp16, tmp16_bytes);
  int sb = 0, bad = 0;
  for (int i = 0; i < L->n && e == cudaSuccess && !bad; i++) {
    upload *u = &L->u[i];
    m->up_ptr[i] = NULL;
    if (m->base && !u->gemm) { /* shared: the base's copy (model_load checked the plans match) */
      *u->dst = m->up_ptr[i] = m->base->up_ptr[i];
      continue;
    }
    char *dst = (char *)m->arena + u->off;
    *u->dst = m->up_ptr[i] = dst;
    int src_dt = u->t ? (int)u->t->dtype : CU_F32;
    const char *src = (const char *)(u->t ? u->t->data : u->src_host);
    if (u->pad_ld) {
      /* fp32 destination with padded rows: convert into staging, then a 2-D copy */
      e = cudaMemsetAsync(dst, 0, (size_t)u->pad_rows * u->pad_ld * 4, st);
      if (e == cudaSuccess) e = cudaMemcpyAsync(stage[sb], src, (size_t)u->numel * dt_size(src_dt), cudaMemcpyHostToDevice, st);
      if (e == cudaSuccess) {
        k_convert(st, stage[sb], src_dt, stage[sb ^ 1], CU_F32, u->numel);
        e = cudaMemcpy2DAsync(dst, (size_t)u->pad_ld * 4, stage[sb ^ 1], (size_t)u->pad_cols * 4,
                              (size_t)u->pad_cols * 4, (size_t)u->pad_rows, cudaMemcpyDeviceToDevice, st);
      }
      continue;
    }
    const int to_dt = u->dst_dt == CU_F8 ? CU_BF16 : u->dst_dt; /* fp8 mode is bf16 mode's values quantised */
    char *to = u->dst_dt == CU_F8 ? (char *)tmp16 : dst;
    if (src_dt == to_dt) {
      e = cudaMemcpyAsync(to, src, (size_t)u->numel * dt_size(src_dt), cudaMemcpyHostToDevice, st);
    } else {
      for (int64_t o = 0; o < u->numel && e == cudaSuccess; o += (int64_t)chunk) {
        int64_t n = u->numel - o < (int64_t)chunk ? u->numel - o : (int64_t)chunk;
        e = cudaMemcpyAsync(stage[sb], src + (size_t)o * dt_size(src_dt), (size_t)n * dt_size(src_dt),
                            cudaMemcpyHostToDevice, st);
        if (e == cudaSuccess) k_convert(st, stage[sb], src_dt, to + (size_t)o * dt_size(to_dt), to_dt, n);
        sb ^= 1;
      }
    }
    if (e == cudaSuccess && u->dst_dt == CU_F8) {
      const int N = u->q_rows, K = (int)(u->numel / u->q_rows);
      bad = fp8_quantize_weight_into(st, 0, tmp16, N, K, dst);
      *u->scale_dst = (const float *)(dst + (size_t)N * K);
    }
  }
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaStreamSynchronize(st);
  for (int b = 0; b < 2; b++)
    if (stage[b]) cudaFree(stage[b]);
  if (tmp16) cudaFree(tmp16);
  cudaStreamDestroy(st);
  if (e != cudaSuccess) return cuda_fail(err, e, dev, "uploading the weights");
  if (bad) return cu_fail(err, LAYA_ERR_DEVICE, "CUDA backend on device %d: fp8 weight quantisation failed", dev);
  return 0;
}

/* Drops one reference (a model's own backend holds one, each model sharing it another); the last
 * frees the model, then drops its own reference on its base. */
static void model_free(cuda_model *m) {
  if (!m || __atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
  cuda_model *base = m->base;
  pthread_mutex_destroy(&m->own_lock);
  cudaSetDevice(m->dev);
  if (m->arena) cudaFree(m->arena);
  free(m->layers);
  free(m->head);
  free(m->up_ptr);
  free(m->up_rec);
  free(m);
  model_free(base);
}

/* The Wqkv + RoPE GEMM: each layer's TMA descriptors of Wqkv (used as loaded). A descriptor the
 * driver refuses turns the fusion off. */
static void map_qkv_weights(cuda_model *m) {
  for (int l = 0; l < m->n_layers; l++)
    for (int v = 0; v < GG_MAX_VARIANTS; v++)
      if ((m->qkv_mask >> v & 1) &&
          sm90_gemm_map_weight(v, m->half16, m->layers[l].wqkv, 3 * m->d, m->d, m->layers[l].wqkv_map[v])) {
        m->qkv_mask = 0;
        return;
      }
}

/* The fused Wi + GeGLU GEMM: each layer's Wi rows interleaved in place (through one temporary
 * matrix) and its TMA descriptor made. A descriptor the driver refuses turns the fusion off
 * before any weight moved. */
static int fuse_geglu_weights(cuda_model *m, laya_error *err) {
  const int dev = m->dev, I = m->I, d = m->d;
  for (int l = 0; l < m->n_layers; l++)
    for (int v = 0; v < GG_MAX_VARIANTS; v++)
      if ((m->gg_mask >> v & 1) && sm90_gemm_map_weight(v, m->half16, m->layers[l].wi, 2 * I, d, m->layers[l].wi_map[v])) {
        m->gg_mask = 0;
        return 0;
      }
  const size_t bytes = (size_t)2 * I * d * 2;
  void *tmp = NULL;
  cudaStream_t st; /* its own non-blocking stream, as run_uploads (never the legacy stream) */
  CU_TRY(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "creating the interleave stream");
  cudaError_t e = cudaMalloc(&tmp, bytes);
  for (int l = 0; l < m->n_layers && e == cudaSuccess; l++) {
    k_geglu_interleave(st, m->half16, m->layers[l].wi, tmp, I, d);
    e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpyAsync(m->layers[l].wi, tmp, bytes, cudaMemcpyDeviceToDevice, st);
  }
  if (e == cudaSuccess) e = cudaStreamSynchronize(st);
  if (tmp) cudaFree(tmp);
  cudaStreamDestroy(st);
  if (e != cudaSuccess) return cuda_fail(err, e, dev, "interleaving Wi for the fused GeGLU");
  return 0;
}

/* fp8 needs FP8 tensor cores (compute capability 9.0+) and a cuBLASLt that takes per-row and
 * per-column scales for E4M3 there ("outer vector" scaling: cuBLAS 12.9 and later). Asked once. */
static int fp8_check_device(cuda_model *m, laya_error *err) {
  const int dev = m->dev;
  cudaDeviceProp pr;
  if (cudaGetDeviceProperties(&pr, dev) != cudaSuccess || pr.major < 9) {
    cudaGetLastError();
    return cu_fail(err, LAYA_ERR_UNSUPPORTED, "CUDA backend: precision fp8 needs a GPU with FP8 tensor cores (compute "
                   "capability 9.0 or newer; device %d is %d.%d): use bf16 or fp16", dev, pr.major, pr.minor);
  }
  const int st = gemm_fp8_supported();
  if (st)
    return cu_fail(err, LAYA_ERR_UNSUPPORTED, "CUDA backend: this cuBLASLt has no per-row fp8 scales on device %d "
                   "(status %d; cuBLAS 12.9 or newer has them): use bf16 or fp16", dev, st);
  return 0;
}

static int model_load(cuda_model *m, const model_weights *w, laya_error *err) {
  const encoder_config *c = &w->enc;
  m->d = c->hidden;
  m->n_layers = c->n_layers;
  m->H = c->n_heads;
  m->hd = c->head_dim;
  m->I = c->intermediate;
  m->V = c->vocab;
  if (model_spec_check(w, "CUDA backend", err)) return err ? err->code : LAYA_ERR_CONFIG;
  for (int l = 0; l < c->n_layers && l < 1024; l++) m->layer_window[l] = model_layer_window(c, l);
  m->act = (int)c->act;
  /* the fused Wi epilogue has the common kinds only: the rarer ones run cuBLASLt + k_geglu */
  if (m->act >= ENC_ACT_FUSED_END) m->gg_mask = 0;
  if (m->hd != 64) m->qkv_mask = 0;           /* the fused RoPE epilogue holds heads of 64 */
  m->eps = (float)c->norm_eps;
  m->head_layers = w->head_layers;
  m->head_heads = w->head_heads > 0 ? w->head_heads : 1;
  m->n_act = w->n_act;
  const int d = m->d;
  if (m->n_layers <= 0 || m->n_layers > 1024)
    return cu_fail(err, LAYA_ERR_UNSUPPORTED, "CUDA backend: %d encoder layers (1 to 1024 supported)", m->n_layers);
  if (d % 8 != 0 || m->I % 8 != 0)
    return cu_fail(err, LAYA_ERR_UNSUPPORTED,
                   "CUDA backend: hidden (%d) and intermediate (%d) sizes must be multiples of 8", d, m->I);
  if (m->hd % 2 != 0 || m->hd > 256 || d % m->head_heads != 0 || (d / m->head_heads) > 256)
    return cu_fail(err, LAYA_ERR_UNSUPPORTED, "CUDA backend: head dims %d / %d are not supported", m->hd,
                   d / m->head_heads);
  if ((m->hd % 16 != 0 && attention_has_fast_path(m->hd)) || m->n_act <= 0)
    return cu_fail(err, LAYA_ERR_CONFIG, "CUDA backend: bad head_dim %d or n_act %d", m->hd, m->n_act);
  m->act_hidden = model_act_hidden(w); /* [hidden, d + 4] (model_spec_check) */
  if (m->act_hidden <= 0 || m->act_hidden > ACT_HIDDEN_MAX)
    return cu_fail(err, LAYA_ERR_CONFIG, "CUDA backend: act_head.0.weight has %d rows", m->act_hidden);
  m->ld_act = (d + MODEL_ACT_FEATURES + 7) & ~7;

  m->layers = (dev_layer *)calloc((size_t)m->n_layers, sizeof(dev_layer));
  m->head = (dev_head_layer *)calloc((size_t)(m->head_layers > 0 ? m->head_layers : 1), sizeof(dev_head_layer));
  if (!m->layers || !m->head) return cu_fail(err, LAYA_ERR_NOMEM, "out of host memory");

  loader L;
  memset(&L, 0, sizeof L);
  L.err = err;
  /* The embedding table keeps its own dtype (fp16 checkpoints stay exact). */
  if (need(&L, w->tok_embeddings, "encoder.embeddings.tok_embeddings.weight", m->V, d)) {
    m->emb_dt = (int)w->tok_embeddings->dtype;
    add_upload(&L, w->tok_embeddings, NULL, w->tok_embeddings->numel, m->emb_dt, &m->emb);
  }
  UP(w->emb_norm, "encoder.embeddings.norm.weight", d, 0, CU_F32, m->emb_norm);
  for (int i = 0; i < m->n_layers; i++) {
    const enc_layer_weights *l = &w->layers[i];
    dev_layer *D = &m->layers[i];
    char nm[96];
    if (i > 0) {
      snprintf(nm, sizeof nm, "encoder.layers.%d.attn_norm.weight", i);
      UP(l->attn_norm, nm, d, 0, CU_F32, D->attn_norm);
    }
    snprintf(nm, sizeof nm, "encoder.layers.%d.attn.Wqkv.weight", i);
    UPG(l->wqkv, nm, 3 * d, d, D->wqkv, D->s_qkv);
    snprintf(nm, sizeof nm, "encoder.layers.%d.attn.Wo.weight", i);
    UPG(l->wo, nm, d, d, D->wo, D->s_o);
    snprintf(nm, sizeof nm, "encoder.layers.%d.mlp_norm.weight", i);
    UP(l->mlp_norm, nm, d, 0, CU_F32, D->mlp_norm);
    snprintf(nm, sizeof nm, "encoder.layers.%d.mlp.Wi.weight", i);
    UPG(l->wi, nm, 2 * m->I, d, D->wi, D->s_i);
    snprintf(nm, sizeof nm, "encoder.layers.%d.mlp.Wo.weight", i);
    UPG(l->wo_mlp, nm, d, m->I, D->wo_mlp, D->s_o_mlp);
  }
  UP(w->final_norm, "encoder.final_norm.weight", d, 0, CU_F32, m->final_norm);
  UP(w->type_emb, "type_emb.weight", 3, d, CU_F32, m->type_emb);
  for (int j = 0; j < m->head_layers; j++) {
    const head_layer_weights *h = &w->head[j];
    dev_head_layer *D = &m->head[j];
    char nm[96];
#define HUP(field, suffix, n0, n1, dt, dst)                               \
  snprintf(nm, sizeof nm, "head.layers.%d.%s", j, suffix);                \
  UP(h->field, nm, n0, n1, dt, D->dst)
    HUP(norm1_w, "norm1.weight", d, 0, CU_F32, n1w);
    HUP(norm1_b, "norm1.bias", d, 0, CU_F32, n1b);
    HUP(in_proj_w, "self_attn.in_proj_weight", 3 * d, d, m->head_dt16, in_w);
    HUP(in_proj_b, "self_attn.in_proj_bias", 3 * d, 0, m->head_dt16, in_b);
    HUP(out_proj_w, "self_attn.out_proj.weight", d, d, m->head_dt16, out_w);
    HUP(out_proj_b, "self_attn.out_proj.bias", d, 0, CU_F32, out_b);
    HUP(norm2_w, "norm2.weight", d, 0, CU_F32, n2w);
    HUP(norm2_b, "norm2.bias", d, 0, CU_F32, n2b);
    HUP(linear1_w, "linear1.weight", 4 * d, d, m->head_dt16, l1w);
    HUP(linear1_b, "linear1.bias", 4 * d, 0, m->head_dt16, l1b);
    HUP(linear2_w, "linear2.weight", d, 4 * d, m->head_dt16, l2w);
    HUP(linear2_b, "linear2.bias", d, 0, CU_F32, l2b);
#undef HUP
  }
  UP(w->scorer_norm_w, "scorer.0.weight", d, 0, CU_F32, m->sn_w);
  UP(w->scorer_norm_b, "scorer.0.bias", d, 0, CU_F32, m->sn_b);
  UP(w->scorer1_w, "scorer.1.weight", d, d, CU_F32, m->s1_w);
  UP(w->scorer1_b, "scorer.1.bias", d, 0, CU_F32, m->s1_b);
  UP(w->scorer2_w, "scorer.3.weight", 1, d, CU_F32, m->s2_w);
  UP(w->scorer2_b, "scorer.3.bias", 1, 0, CU_F32, m->s2_b);
  if (need(&L, w->act1_w, "act_head.0.weight", m->act_hidden, d + MODEL_ACT_FEATURES)) {
    add_upload(&L, w->act1_w, NULL, w->act1_w->numel, CU_F32, (void **)&m->a1_w);
    if (!L.failed) {
      upload *u = &L.u[L.n - 1];
      u->pad_rows = m->act_hidden;
      u->pad_cols = d + MODEL_ACT_FEATURES;
      u->pad_ld = m->ld_act;
      u->bytes += ((size_t)m->act_hidden * m->ld_act * 4 + 255) & ~(size_t)255; /* room for the padding */
    }
  }
  UP(w->act1_b, "act_head.0.bias", m->act_hidden, 0, CU_F32, m->a1_b);
  UP(w->act2_w, "act_head.2.weight", m->n_act, m->act_hidden, CU_F32, m->a2_w);
  UP(w->act2_b, "act_head.2.bias", m->n_act, 0, CU_F32, m->a2_b);

  /* RoPE tables, computed on the host */
  float2 *tg = NULL, *tl = NULL;
  if (!L.failed) {
    size_t n = (size_t)MAX_POS * (m->hd / 2);
    tg = (float2 *)malloc(n * sizeof(float2));
    tl = (float2 *)malloc(n * sizeof(float2));
    if (!tg || !tl) {
      L.failed = cu_fail(err, LAYA_ERR_NOMEM, "out of host memory");
    } else {
      rope_table(tg, w->enc.global_theta, m->hd);
      rope_table(tl, w->enc.local_theta, m->hd);
      add_upload(&L, NULL, tg, (int64_t)n * 2, CU_F32, (void **)&m->rope_global);
      add_upload(&L, NULL, tl, (int64_t)n * 2, CU_F32, (void **)&m->rope_local);
    }
  }
  int rc = L.failed;
  /* The plan, kept for models that will share this one; with a base, the base's plan must be this
   * one up to the GEMM weights' type (same weights, same code: it is unless the head's 16-bit type
   * differs), else nothing is shared. */
  if (!rc) {
    m->up_ptr = (void **)calloc((size_t)(L.n ? L.n : 1), sizeof(void *));
    m->up_rec = (up_rec *)calloc((size_t)(L.n ? L.n : 1), sizeof(up_rec));
    if (!m->up_ptr || !m->up_rec) rc = cu_fail(err, LAYA_ERR_NOMEM, "out of host memory");
  }
  for (int i = 0; i < L.n && !rc; i++) m->up_rec[i] = up_rec{L.u[i].numel, L.u[i].dst_dt, L.u[i].gemm, L.u[i].bytes};
  m->up_n = L.n;
  if (!rc && m->base) {
    const cuda_model *b = m->base;
    bool same = b->src == w && b->up_n == L.n && b->dev == m->dev;
    for (int i = 0; i < L.n && same; i++) {
      const up_rec &x = b->up_rec[i], &y = m->up_rec[i];
      same = x.numel == y.numel && x.gemm == y.gemm && (x.gemm || (x.dst_dt == y.dst_dt && x.bytes == y.bytes));
    }
    if (!same) {
      model_free(m->base);
      m->base = NULL;
      m->mem_lock = &m->own_lock;
    }
  }
  if (!rc) { /* offsets of what this model holds itself */
    L.size = 0;
    m->borrowed_bytes = 0;
    for (int i = 0; i < L.n; i++) {
      if (m->base && !L.u[i].gemm) {
        m->borrowed_bytes += L.u[i].bytes;
        continue;
      }
      L.u[i].off = L.size;
      L.size += L.u[i].bytes;
    }
  }
  if (!rc) {
    const int dev = m->dev;
    cudaError_t e = cudaMalloc(&m->arena, L.size ? L.size : 256);
    if (e != cudaSuccess) rc = cuda_fail(err, e, dev, "allocating the weights");
    else m->arena_bytes = L.size;
  }
  if (!rc) rc = run_uploads(m, &L, err);
  if (!rc && m->gg_mask) rc = fuse_geglu_weights(m, err);
  if (!rc && m->qkv_mask) map_qkv_weights(m);
  free(tg);
  free(tl);
  free(L.u);
  return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Workers: stream, cuBLASLt handle, scratch sized for a bucket, pinned staging, graphs.
 */
struct graph_entry {
  int M, R, NM, state; /* state 1: seen once (ran eagerly), 2: captured */
  int embed;           /* 1: the embed pass's graph of that bucket, 0: the forward's */
  cudaGraphExec_t exec;
};

struct backend_worker {
  cuda_model *m;
  cudaStream_t st;
  cublasLtHandle_t lt;
  struct gemm_cache *gc;
  void *ws;
  int capM, capR, capNM; /* capacity (bucket sizes) of the scratch below */
  void *scratch;
  size_t scratch_bytes;
  float *x, *s_in, *s_hid, *act_in, *act_h, *dout;
  void *y, *big;
  void *q8;      /* fp8 mode: a GEMM's E4M3 activations [Mp, max(d, I)] */
  float *q8s;    /* and their per-token scales [Mp] */
  /* the last head layer on the kept tokens only (markers, then each row's CLS): residual, its
   * LayerNorm, attention output, MLP hidden */
  float *xk;
  void *yk, *attk, *hidk;
  int32_t *din;
  size_t din_bytes, dout_bytes;
  void *hin, *hout;
  /* offsets (in int32 units) inside din */
  size_t o_tok, o_pos, o_row, o_rs, o_qt, o_ms, o_mt, o_keep, o_tiles, o_tiles_l;
  graph_entry graphs[MAX_GRAPHS];
  int n_graphs, graph_clock;
  /* LAYA_CUDA_PROFILE=1: events between the stages of eager forwards (graphs off) */
  int prof, prof_n, prof_calls;
  cudaEvent_t *prof_ev;
  int *prof_cat;
  double prof_ms[32];
};

enum prof_cat {
  P_EMBED, P_QKV, P_ROPE, P_ATT_GLOBAL, P_ATT_LOCAL, P_WO, P_LN, P_WI, P_GEGLU, P_WO_MLP, P_HEAD_GEMM, P_HEAD_ATT,
  P_TAIL, P_QUANT, P_N
};
static const char *prof_names[P_N] = {"embed+ln", "gemm Wqkv", "rope k", "attn global", "attn local",
                                      "gemm Wo (+res)", "layernorm", "gemm Wi", "geglu", "gemm mlp.Wo (+res)",
                                      "head gemms", "head attn", "tail", "fp8 quantise"};
#define PROF_MAX 2048

static void prof_mark(backend_worker *w, int cat) {
  if (!w->prof || w->prof_n >= PROF_MAX) return;
  cudaEventRecord(w->prof_ev[w->prof_n], w->st);
  w->prof_cat[w->prof_n++] = cat;
}

/* Per-stage milliseconds per forward since the last call (LAYA_CUDA_PROFILE=1), as text. */
extern "C" int backend_cuda_profile(backend_worker *w, char *buf, size_t n) {
  if (!w || !w->prof || !w->prof_calls) return -1;
  size_t o = 0;
  double tot = 0;
  for (int c = 0; c < P_N; c++) tot += w->prof_ms[c];
  for (int c = 0; c < P_N && o < n; c++)
    o += (size_t)snprintf(buf + o, n - o, "  %-20s %8.3f ms  %5.1f%%\n", prof_names[c], w->prof_ms[c] / w->prof_calls,
                          100.0 * w->prof_ms[c] / (tot > 0 ? tot : 1));
  if (o < n) snprintf(buf + o, n - o, "  %-20s %8.3f ms\n", "total", tot / w->prof_calls);
  memset(w->prof_ms, 0, sizeof w->prof_ms);
  w->prof_calls = 0;
  return 0;
}

static int pow2_at_least(int n, int lo) {
  int p = lo;
  while (p < n) p *= 2;
  return p;
}

/* Tokens: multiples of 64 up to 512, then 8 steps per octave (at most 12.5% padding) up to 8192,
 * then multiples of 256 (at most 3.1%). Padded tokens cost GEMM time in proportion, while a bucket
 * only saves launch overhead, which above ~8k tokens hides behind the GPU work: there the fine
 * steps win (a 64-row mixed batch of 19,553 tokens ran in a 20,480 bucket, now 19,712). */
static int token_bucket(int n) {
  if (n <= 512) return ((n + 63) / 64) * 64;
  if (n > 8192) return ((n + 255) / 256) * 256;
  int oct = 512;
  while (oct * 2 < n) oct *= 2;
  int step = oct / 8;
  return ((n + step - 1) / step) * step;
}

static void drop_graphs(backend_worker *w) {
  for (int i = 0; i < w->n_graphs; i++)
    if (w->graphs[i].state == 2) cudaGraphExecDestroy(w->graphs[i].exec);
  w->n_graphs = 0;
}

static void free_scratch(backend_worker *w) {
  drop_graphs(w);
  if (w->scratch) cudaFree(w->scratch);
  if (w->hin) cudaFreeHost(w->hin);
  if (w->hout) cudaFreeHost(w->hout);
  w->scratch = w->hin = w->hout = NULL;
  w->capM = w->capR = w->capNM = 0;
  w->scratch_bytes = 0;
}

static size_t al256(size_t n) { return (n + 255) & ~(size_t)255; }

static int ensure_capacity_locked(backend_worker *w, int Mp, int Rp, int NMp, laya_error *err);

static int ensure_capacity(backend_worker *w, int Mp, int Rp, int NMp, laya_error *err) {
  if (Mp <= w->capM && Rp <= w->capR && NMp <= w->capNM) return 0;
  pthread_mutex_lock(w->m->mem_lock);
  int rc = ensure_capacity_locked(w, Mp, Rp, NMp, err);
  pthread_mutex_unlock(w->m->mem_lock);
  return rc;
}

static int ensure_capacity_locked(backend_worker *w, int Mp, int Rp, int NMp, laya_error *err) {
  cuda_model *m = w->m;
  const int dev = m->dev;
  int cM = Mp > w->capM ? Mp : w->capM, cR = Rp > w->capR ? Rp : w->capR, cN = NMp > w->capNM ? NMp : w->capNM;
  free_scratch(w);
  const size_t d = (size_t)m->d;
  size_t big_cols = 4 * d > 2 * (size_t)m->I ? 4 * d : 2 * (size_t)m->I;
  size_t tiles = (size_t)cM / 64 + (size_t)cR;
  /* din layout (int32 units, each array 16-byte aligned) */
  size_t o = 8;
  auto take = [&](size_t n) {
    size_t at = o;
    o += (n + 3) & ~(size_t)3;
    return at;
  };
  w->o_tok = take((size_t)cM);
  w->o_pos = take((size_t)cM);
  w->o_row = take((size_t)cM);
  w->o_rs = take((size_t)cR + 1);
  w->o_qt = take((size_t)cR);
  w->o_ms = take((size_t)cR + 1);
  w->o_mt = take((size_t)cN);
  w->o_keep = take((size_t)cN + (size_t)cR);
  w->o_tiles = take(tiles * 4);
  w->o_tiles_l = take(tiles * 4);
  w->din_bytes = o * 4;
  w->dout_bytes = ((size_t)cN + (size_t)cR * m->n_act) * 4;
  const size_t cK = (size_t)cN + (size_t)cR; /* kept tokens of the last head layer */
  const size_t q8_cols = m->fp8 ? (d > (size_t)m->I ? d : (size_t)m->I) : 0;
  size_t sz[15] = {
      (size_t)cM * d * 4,                       /* x */
      (size_t)cM * d * 2,                       /* y */
      (size_t)cM * big_cols * 2,                /* big: qkv + attention out, or MLP hidden */
      (size_t)cN * d * 4,                       /* s_in */
      (size_t)cN * d * 4,                       /* s_hid */
      (size_t)cR * m->ld_act * 4,               /* act_in */
      (size_t)cR * m->act_hidden * 4,           /* act_h */
      w->dout_bytes,                            /* logits + act */
      w->din_bytes,                             /* batch inputs */
      cK * d * 4,                               /* xk */
      cK * d * 2,                               /* yk */
      cK * d * 2,                               /* attk */
      cK * 4 * d * 2,                           /* hidk */
      (size_t)cM * q8_cols,                     /* q8 (fp8 mode) */
      m->fp8 ? (size_t)cM * 4 : 0,              /* q8s */
  };
  size_t total = 0;
  for (int i = 0; i < 15; i++) total += al256(sz[i]);
  /* LAYA_CUDA_MAX_SCRATCH (bytes) caps this allocation: a test hook for the out-of-memory path. */
  cudaError_t e = m->max_scratch >= 0 && (size_t)m->max_scratch < total ? cudaErrorMemoryAllocation
                                                                         : cudaMalloc(&w->scratch, total);
  if (e != cudaSuccess) {
    w->scratch = NULL;
    return cuda_fail(err, e, dev, "allocating activation scratch");
  }
  char *p = (char *)w->scratch;
  void *ptr[15];
  for (int i = 0; i < 15; i++) {
    ptr[i] = p;
    p += al256(sz[i]);
  }
  w->x = (float *)ptr[0];
  w->y = ptr[1];
  w->big = ptr[2];
  w->s_in = (float *)ptr[3];
  w->s_hid = (float *)ptr[4];
  w->act_in = (float *)ptr[5];
  w->act_h = (float *)ptr[6];
  w->dout = (float *)ptr[7];
  w->din = (int32_t *)ptr[8];
  w->xk = (float *)ptr[9];
  w->yk = ptr[10];
  w->attk = ptr[11];
  w->hidk = ptr[12];
  w->q8 = ptr[13];
  w->q8s = (float *)ptr[14];
  w->scratch_bytes = total;
  /* zero once: padded rows of every buffer start finite */
  e = cudaMemsetAsync(w->scratch, 0, total, w->st);
  if (e == cudaSuccess) e = cudaHostAlloc(&w->hin, w->din_bytes, cudaHostAllocDefault);
  if (e == cudaSuccess) e = cudaHostAlloc(&w->hout, w->dout_bytes, cudaHostAllocDefault);
  if (e != cudaSuccess) {
    free_scratch(w);
    return cuda_fail(err, e, dev, "allocating pinned staging");
  }
  memset(w->hin, 0, w->din_bytes);
  w->capM = cM;
  w->capR = cR;
  w->capNM = cN;
  return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The forward pass, enqueued on the worker's stream (eagerly or into a graph capture). embed: the
 * embed pass instead (backend.embed): the same encoder, then the final norm alone (no
 * question-type embedding, no decision head) and each row's mean into w->act_in ([Rp, d] fp32;
 * act_in is [capR, ld_act] with ld_act >= d, and the embed pass reads nothing else of it).
 */
static int enqueue_forward(backend_worker *w, int Mp, int Rp, int NMp, int embed, laya_error *err) {
  cuda_model *m = w->m;
  const int dev = m->dev, d = m->d, I = m->I, h16 = m->half16, T16 = m->dt16;
  cudaStream_t s = w->st;
  const int *counts = w->din;
  const int32_t *tokens = w->din + w->o_tok, *tok_pos = w->din + w->o_pos, *tok_row = w->din + w->o_row;
  const int32_t *row_start = w->din + w->o_rs, *qtype = w->din + w->o_qt, *marker_start = w->din + w->o_ms;
  const int32_t *marker_tok = w->din + w->o_mt, *keep = w->din + w->o_keep;
  const int NKp = NMp + Rp; /* kept tokens: marker m at m, row r's CLS at NMp + r */
  const attn_tile *tiles = (const attn_tile *)(w->din + w->o_tiles);
  const attn_tile *tiles_l = (const attn_tile *)(w->din + w->o_tiles_l);
  const int n_tiles_cap = Mp / m->tile_q + Rp, n_tiles_cap_l = Mp / m->tile_ql + Rp;
  char *big = (char *)w->big;
  void *qkv = big, *attn_o = big + (size_t)Mp * 3 * d * 2, *hid = big;
  int rc;
#define GEMM(M_, N_, K_, A_, lda_, W_, dtab_, D_, ldd_, dtd_, acc_, epi_, bias_, what)                            \
  do {                                                                                                           \
    rc = gemm_run(w->gc, w->lt, s, w->ws, WS_BYTES, (M_), (N_), (K_), (A_), (lda_), (W_), (dtab_), (D_), (ldd_), \
                  (dtd_), (acc_), (epi_), (bias_));                                                             \
    if (rc) return lt_fail(err, rc, dev, what);                                                                  \
  } while (0)

  /* An encoder GEMM: 16-bit, or in fp8 mode E4M3 x E4M3 on w->q8, which holds A quantised per
   * token already when q8_ready (its producer wrote it: k_ln_fp8, k_geglu_fp8), else quantised here.
   * Attention's output (Wo's A) keeps this separate pass: a flash_attn_kernel block writes one
   * head's hd values of its tokens (grid: tiles x heads), so a token's absmax spans H blocks, and a
   * fused per-token quantisation would need a cross-block reduction (BENCHMARKS.md, "FP8 mode":
   * at most ~0.5 ms of 22 ms at ModernBERT-large 32 x 512, not done). */
  int q8_ready = 0;
#define ENC_GEMM(M_, N_, K_, A_, lda_, W_, WS_, D_, ldd_, dtd_, acc_, what)                                       \
  do {                                                                                                           \
    if (m->fp8) {                                                                                                \
      if (!q8_ready) k_quant_fp8(s, 0, (A_), (lda_), (M_), (K_), w->q8, w->q8s);                                \
      q8_ready = 0;                                                                                              \
      prof_mark(w, P_QUANT);                                                                                     \
      rc = gemm_run_fp8(w->gc, w->lt, s, w->ws, WS_BYTES, (M_), (N_), (K_), w->q8, (K_), w->q8s, (W_), (WS_),   \
                        (D_), (ldd_), (dtd_), (acc_));                                                           \
      if (rc) return lt_fail(err, rc, dev, what);                                                                \
    } else {                                                                                                     \
      GEMM(M_, N_, K_, A_, lda_, W_, T16, D_, ldd_, dtd_, acc_, EPI_NONE, NULL, what);                           \
    }                                                                                                            \
  } while (0)

  unsigned char y_map[GG_MAP_BYTES], yq_map[GG_MAP_BYTES]; /* the fused Wi / Wqkv GEMMs' A operand: w->y [Mp, d] */
  const int gg_v = m->gg_mask ? sm90_gemm_pick(m->gg_mask, Mp, 2 * I) : -1; /* the pass's fused Wi variant */
  const bool small = Mp <= CUDA_ATTN_SMALL_MAX_TOKENS;
  const int att_g = small ? m->att_g_small : m->att_g, att_l = small ? m->att_l_small : m->att_l;
  const int qkv_v = m->qkv_mask && (!m->qkv_small || Mp <= CUDA_QKV_FUSED_MAX_TOKENS)
                        ? sm90_gemm_pick(m->qkv_mask, Mp, 3 * d)
                        : -1; /* and Wqkv + RoPE variant */
  if ((gg_v >= 0 && sm90_gemm_map_act(gg_v, h16, w->y, Mp, d, d, y_map)) ||
      (qkv_v >= 0 && sm90_gemm_map_act(qkv_v, h16, w->y, Mp, d, d, yq_map)))
    return cu_fail(err, LAYA_ERR_DEVICE, "CUDA backend on device %d: the driver refused a TMA descriptor (%d x %d)", dev,
                   Mp, d);
  cuda_pdl_pass(Mp);
  prof_mark(w, -1);
  k_embed_ln(s, h16, tokens, m->emb, m->emb_dt, m->emb_norm, m->eps, w->x, w->y, counts, Mp, d);
  prof_mark(w, P_EMBED);
  for (int l = 0; l < m->n_layers; l++) {
    const dev_layer *L = &m->layers[l];
    const int window = m->layer_window[l];
    const bool global = window < 0;
    const float2 *rope = global ? m->rope_global : m->rope_local;
    if (qkv_v >= 0) {
      /* Q and K rotated in the GEMM's epilogue, from the fp32 sums: attention reads them as they are */
      k_qkv_rope_gemm(s, qkv_v, h16, yq_map, L->wqkv_map[qkv_v], qkv, Mp, 3 * d, 3 * d, d, tok_pos, rope, counts,
                      2 * d);
      prof_mark(w, P_QKV);
    } else {
      ENC_GEMM(Mp, 3 * d, d, w->y, d, L->wqkv, L->s_qkv, qkv, 3 * d, T16, 0, "Wqkv");
      prof_mark(w, P_QKV);
      k_rope_k(s, h16, qkv, tok_pos, rope, counts, Mp, m->H, m->hd);
      prof_mark(w, P_ROPE);
    }
    k_attention(s, h16, qkv, attn_o, global ? tiles : tiles_l, tok_row, tok_pos, row_start, counts,
                counts + (global ? CNT_TILES : CNT_TILES_LOCAL), global ? n_tiles_cap : n_tiles_cap_l, Mp, m->H,
                m->hd, window, qkv_v >= 0 ? NULL : rope, global ? att_g : att_l);
    prof_mark(w, global ? P_ATT_GLOBAL : P_ATT_LOCAL);
    ENC_GEMM(Mp, d, d, attn_o, d, L->wo, L->s_o, w->x, d, CU_F32, 1, "Wo");
    prof_mark(w, P_WO);
    if (!m->fp8 || !(q8_ready = k_ln_fp8(s, w->x, L->mlp_norm, m->eps, w->q8, w->q8s, Mp, d) == 0))
      k_ln(s, h16, w->x, L->mlp_norm, NULL, m->eps, w->y, Mp, d);
    prof_mark(w, P_LN);
    if (gg_v >= 0) {
      /* Wi with GeGLU in its epilogue: hid[Mp, I] written once */
      k_geglu_gemm(s, gg_v, h16, y_map, L->wi_map[gg_v], hid, Mp, I, I, d, m->act);
      prof_mark(w, P_WI);
    } else {
      ENC_GEMM(Mp, 2 * I, d, w->y, d, L->wi, L->s_i, hid, 2 * I, T16, 0, "Wi");
      prof_mark(w, P_WI);
      if (!m->fp8 || !(q8_ready = k_geglu_fp8(s, hid, Mp, I, m->act, w->q8, w->q8s) == 0))
        k_geglu(s, h16, hid, Mp, I, m->act);
      prof_mark(w, P_GEGLU);
    }
    const int ld_hid = gg_v >= 0 ? I : 2 * I;
    ENC_GEMM(Mp, d, I, hid, ld_hid, L->wo_mlp, L->s_o_mlp, w->x, d, CU_F32, 1, "mlp.Wo");
    prof_mark(w, P_WO_MLP);
    if (l + 1 < m->n_layers) {
      const float *nw = m->layers[l + 1].attn_norm;
      if (!m->fp8 || !(q8_ready = k_ln_fp8(s, w->x, nw, m->eps, w->q8, w->q8s, Mp, d) == 0))
        k_ln(s, h16, w->x, nw, NULL, m->eps, w->y, Mp, d);
    } else if (embed) {
      k_final_ln(s, m->head_half16, w->x, m->final_norm, m->eps, NULL, tok_row, qtype, NULL, NULL, w->y, Mp, d);
    } else {
      k_final_ln(s, m->head_half16, w->x, m->final_norm, m->eps, m->type_emb, tok_row, qtype,
                 m->head_layers > 0 ? m->head[0].n1w : NULL, m->head_layers > 0 ? m->head[0].n1b : NULL, w->y, Mp,
                 d);
    }
    prof_mark(w, P_LN);
  }
  if (embed) {
    k_mean_rows(s, w->x, row_start, counts, w->act_in, Rp, d);
    prof_mark(w, P_TAIL);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return cuda_fail(err, e, dev, "launching the embed pass's kernels");
    return 0;
  }
  const int hh = m->head_heads, hhd = d / hh, hh16 = m->head_half16, HT16 = m->head_dt16;
  for (int j = 0; j < m->head_layers; j++) {
    const dev_head_layer *L = &m->head[j];
    GEMM(Mp, 3 * d, d, w->y, d, L->in_w, HT16, qkv, 3 * d, HT16, 0, EPI_BIAS, L->in_b, "head in_proj");
    prof_mark(w, P_HEAD_GEMM);
    if (j + 1 < m->head_layers || m->head_all) {
      k_attention(s, hh16, qkv, attn_o, tiles, tok_row, tok_pos, row_start, counts, counts + CNT_TILES, n_tiles_cap,
                  Mp, hh, hhd, -1, NULL, att_g);
      prof_mark(w, P_HEAD_ATT);
      GEMM(Mp, d, d, attn_o, d, L->out_w, HT16, w->x, d, CU_F32, 1, EPI_BIAS, L->out_b, "head out_proj");
      k_ln(s, hh16, w->x, L->n2w, L->n2b, MODEL_HEAD_LN_EPS, w->y, Mp, d);
      GEMM(Mp, 4 * d, d, w->y, d, L->l1w, HT16, hid, 4 * d, HT16, 0, EPI_RELU_BIAS, L->l1b, "head linear1");
      GEMM(Mp, d, 4 * d, hid, 4 * d, L->l2w, HT16, w->x, d, CU_F32, 1, EPI_BIAS, L->l2b, "head linear2");
      if (j + 1 < m->head_layers) k_ln(s, hh16, w->x, m->head[j + 1].n1w, m->head[j + 1].n1b, MODEL_HEAD_LN_EPS, w->y, Mp, d);
      prof_mark(w, P_HEAD_GEMM);
      continue;
    }
    /* The last head layer: only the option markers and each row's CLS are read after it (scorer,
     * act head), and nothing after it mixes tokens except this layer's attention, whose keys and
     * values (in_proj above) cover every token. So its queries, out_proj, LayerNorm and MLP run
     * on the kept tokens alone: the same values, without the MLP of every other token. */
    k_gather_rows(s, w->x, keep, w->xk, NKp, d);
    k_attention_rows(s, hh16, qkv, w->attk, keep, NKp, tok_row, tok_pos, row_start, hh, hhd);
    prof_mark(w, P_HEAD_ATT);
    GEMM(NKp, d, d, w->attk, d, L->out_w, HT16, w->xk, d, CU_F32, 1, EPI_BIAS, L->out_b, "head out_proj");
    k_ln(s, hh16, w->xk, L->n2w, L->n2b, MODEL_HEAD_LN_EPS, w->yk, NKp, d);
    GEMM(NKp, 4 * d, d, w->yk, d, L->l1w, HT16, w->hidk, 4 * d, HT16, 0, EPI_RELU_BIAS, L->l1b, "head linear1");
    GEMM(NKp, d, 4 * d, w->hidk, 4 * d, L->l2w, HT16, w->xk, d, CU_F32, 1, EPI_BIAS, L->l2b, "head linear2");
    prof_mark(w, P_HEAD_GEMM);
  }
  float *logits = w->dout, *act = w->dout + w->capNM;
  /* after a head, marker m's state is row m of xk and row r's CLS is row NMp + r */
  const bool kept = m->head_layers > 0 && !m->head_all;
  k_gather_ln(s, kept ? w->xk : w->x, kept ? NULL : marker_tok, counts, m->sn_w, m->sn_b, w->s_in, NMp, d);
  GEMM(NMp, d, d, w->s_in, d, m->s1_w, CU_F32, w->s_hid, d, CU_F32, 0, EPI_BIAS, m->s1_b, "scorer.1");
  k_scorer_out(s, w->s_hid, m->s2_w, m->s2_b, counts, logits, NMp, d);
  k_features(s, w->x, kept ? w->xk + (size_t)NMp * d : NULL, logits, row_start, marker_start, counts, w->act_in, Rp,
             d, m->ld_act);
  GEMM(Rp, m->act_hidden, m->ld_act, w->act_in, m->ld_act, m->a1_w, CU_F32, w->act_h, m->act_hidden, CU_F32, 0,
       EPI_BIAS, m->a1_b, "act_head.0");
  k_act_out(s, w->act_h, m->a2_w, m->a2_b, counts, act, Rp, m->act_hidden, m->n_act);
  prof_mark(w, P_TAIL);
#undef GEMM
#undef ENC_GEMM
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return cuda_fail(err, e, dev, "launching the forward kernels");
  return 0;
}

/* ---------------------------------------------------------------------------------------------
 * backend vtable
 */
static backend_worker *worker_create_locked(cuda_model *m, laya_error *err);

static backend_worker *cuda_worker_create(backend *b, laya_error *err) {
  cuda_model *m = (cuda_model *)b->impl;
  const int dev = m->dev;
  cudaError_t e = cudaSetDevice(dev);
  if (e != cudaSuccess) {
    cuda_fail(err, e, dev, "selecting the device");
    return NULL;
  }
  pthread_mutex_lock(m->mem_lock);
  backend_worker *w = worker_create_locked(m, err);
  pthread_mutex_unlock(m->mem_lock);
  return w;
}

static backend_worker *worker_create_locked(cuda_model *m, laya_error *err) {
  const int dev = m->dev;
  cudaError_t e;
  backend_worker *w = (backend_worker *)calloc(1, sizeof *w);
  if (!w) {
    cu_fail(err, LAYA_ERR_NOMEM, "out of host memory");
    return NULL;
  }
  w->m = m;
  e = cudaStreamCreateWithFlags(&w->st, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaMalloc(&w->ws, WS_BYTES);
  if (e != cudaSuccess) {
    cuda_fail(err, e, dev, "creating a worker");
    if (w->st) cudaStreamDestroy(w->st);
    free(w);
    return NULL;
  }
  if (m->profile) {
    w->prof_ev = (cudaEvent_t *)calloc(PROF_MAX, sizeof(cudaEvent_t));
    w->prof_cat = (int *)calloc(PROF_MAX, sizeof(int));
    w->prof = w->prof_ev && w->prof_cat;
    for (int i = 0; w->prof && i < PROF_MAX; i++) cudaEventCreate(&w->prof_ev[i]);
  }
  cublasStatus_t st = cublasLtCreate(&w->lt);
  w->gc = gemm_cache_create(m->gemm_tune, m->gemm_splitk);
  if (st != CUBLAS_STATUS_SUCCESS || !w->gc) {
    lt_fail(err, st != CUBLAS_STATUS_SUCCESS ? (int)st : (int)CUBLAS_STATUS_ALLOC_FAILED, dev, "creating a handle");
    if (st == CUBLAS_STATUS_SUCCESS) cublasLtDestroy(w->lt);
    gemm_cache_destroy(w->gc);
    cudaFree(w->ws);
    cudaStreamDestroy(w->st);
    free(w);
    return NULL;
  }
  return w;
}

static void cuda_worker_destroy(backend *b, backend_worker *w) {
  (void)b;
  if (!w) return;
  cudaSetDevice(w->m->dev);
  cudaStreamSynchronize(w->st);
  pthread_mutex_lock(w->m->mem_lock);
  free_scratch(w);
  if (w->prof)
    for (int i = 0; i < PROF_MAX; i++) cudaEventDestroy(w->prof_ev[i]);
  gemm_cache_destroy(w->gc);
  cublasLtDestroy(w->lt);
  cudaFree(w->ws);
  cudaStreamDestroy(w->st);
  pthread_mutex_unlock(w->m->mem_lock);
  free(w->prof_ev);
  free(w->prof_cat);
  free(w);
}

/* Scratch (device and pinned) for the buckets of the largest batch `max`: a capacity that never
 * grows afterwards also never drops the captured graphs. */
static int cuda_worker_reserve(backend *b, backend_worker *w, const batch_shape *max, laya_error *err) {
  cuda_model *m = (cuda_model *)b->impl;
  const int dev = m->dev;
  CU_TRY(cudaSetDevice(dev), "selecting the device");
  return ensure_capacity(w, token_bucket(max->n_tokens), pow2_at_least(max->n_rows, 1),
                         pow2_at_least(max->n_markers, 8), err);
}

static size_t cuda_worker_bytes(const backend *b, const backend_worker *w) {
  (void)b;
  return w->scratch_bytes + (w->hin ? w->din_bytes : 0) + (w->hout ? w->dout_bytes : 0);
}

static graph_entry *find_graph(backend_worker *w, int M, int R, int NM, int embed) {
  for (int i = 0; i < w->n_graphs; i++)
    if (w->graphs[i].M == M && w->graphs[i].R == R && w->graphs[i].NM == NM && w->graphs[i].embed == embed)
      return &w->graphs[i];
  return NULL;
}

static graph_entry *new_graph_entry(backend_worker *w, int M, int R, int NM, int embed) {
  graph_entry *g;
  if (w->n_graphs < MAX_GRAPHS) {
    g = &w->graphs[w->n_graphs++];
  } else { /* evict round-robin */
    g = &w->graphs[w->graph_clock++ % MAX_GRAPHS];
    if (g->state == 2) cudaGraphExecDestroy(g->exec);
  }
  memset(g, 0, sizeof *g);
  g->M = M;
  g->R = R;
  g->NM = NM;
  g->embed = embed;
  return g;
}

static int run_graph(backend_worker *w, int Mp, int Rp, int NMp, int embed, laya_error *err) {
  const int dev = w->m->dev;
  graph_entry *g = find_graph(w, Mp, Rp, NMp, embed);
  if (g && g->state == 2) {
    CU_TRY(cudaGraphLaunch(g->exec, w->st), "launching a graph");
    return 0;
  }
  if (!g) { /* first batch of this bucket: eagerly (an evicted graph is destroyed meanwhile) */
    pthread_mutex_lock(w->m->mem_lock);
    new_graph_entry(w, Mp, Rp, NMp, embed)->state = 1;
    int rc = enqueue_forward(w, Mp, Rp, NMp, embed, err);
    pthread_mutex_unlock(w->m->mem_lock);
    return rc;
  }
  /* second batch of this bucket: capture, with no allocation in any thread meanwhile */
  pthread_mutex_lock(w->m->mem_lock);
  cudaError_t e = cudaStreamBeginCapture(w->st, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    pthread_mutex_unlock(w->m->mem_lock);
    return cuda_fail(err, e, dev, "beginning a graph capture");
  }
  int rc = enqueue_forward(w, Mp, Rp, NMp, embed, err);
  cudaGraph_t graph = NULL;
  e = cudaStreamEndCapture(w->st, &graph);
  if (!rc && e == cudaSuccess) e = cudaGraphInstantiate(&g->exec, graph, 0);
  if (graph) cudaGraphDestroy(graph);
  pthread_mutex_unlock(w->m->mem_lock);
  if (rc) return rc;
  if (e != cudaSuccess) return cuda_fail(err, e, dev, "capturing a graph");
  g->state = 2;
  CU_TRY(cudaGraphLaunch(g->exec, w->st), "launching a graph");
  return 0;
}

/* The batch's inputs into the worker's pinned staging and on to the device (one copy), for the
 * forward (embed 0) or the embed pass (embed 1: no markers or kept rows staged, every row's qtype 0;
 * that pass reads neither). Sets the buckets and grows the scratch to them. */
static int stage_batch(backend_worker *w, const packed_batch *pb, int embed, int *Mp_out, int *Rp_out, int *NMp_out,
                       laya_error *err) {
  cuda_model *m = w->m;
  const int dev = m->dev;
  const int R = pb->n_rows, N = pb->n_tokens, NM = embed ? 0 : pb->marker_start[R];
  int kmax = 0;
  for (int r = 0; r < R && !embed; r++) {
    int k = pb->marker_start[r + 1] - pb->marker_start[r];
    if (k > kmax) kmax = k;
  }
  CU_TRY(cudaSetDevice(dev), "selecting the device");
  const int Mp = token_bucket(N), Rp = pow2_at_least(R, 1), NMp = pow2_at_least(NM, 8);
  int rc = ensure_capacity(w, Mp, Rp, NMp, err);
  if (rc) return rc;

  /* batch inputs into pinned memory, one copy */
  int32_t *h = (int32_t *)w->hin;
  int n_tiles = 0, n_tiles_l = 0;
  attn_tile *tl = (attn_tile *)(h + w->o_tiles), *tll = (attn_tile *)(h + w->o_tiles_l);
  for (int r = 0; r < R; r++) {
    int b0 = pb->row_start[r], len = pb->row_start[r + 1] - b0;
    for (int t = 0; t < len; t++) {
      h[w->o_pos + b0 + t] = t;
      h[w->o_row + b0 + t] = r;
    }
    for (int q0 = 0; q0 < len; q0 += m->tile_q) tl[n_tiles++] = attn_tile{b0, len, q0, 0};
    for (int q0 = 0; q0 < len; q0 += m->tile_ql) tll[n_tiles_l++] = attn_tile{b0, len, q0, 0};
    h[w->o_rs + r] = b0;
    h[w->o_qt + r] = embed ? 0 : pb->qtype[r];
    h[w->o_ms + r] = embed ? 0 : pb->marker_start[r];
  }
  /* The batch's kept rows (model/spec.h: per row its CLS, then its markers) laid out for the
   * kernels: the marker tokens at [0, NM) (also the scorer's gather when no head layer keeps them),
   * each row's CLS token at NMp + r; padding is token 0, computed and never read. */
  int32_t *keep = h + w->o_keep;
  for (int r = 0; r < R && !embed; r++) {
    const int32_t *kr = pb->kept + model_kept_first(pb, r), b0 = pb->row_start[r];
    for (int i = pb->marker_start[r]; i < pb->marker_start[r + 1]; i++)
      keep[i] = h[w->o_mt + i] = b0 + kr[1 + i - pb->marker_start[r]];
    keep[NMp + r] = b0 + kr[0];
  }
  for (int i = NM; i < NMp; i++) keep[i] = 0;
  for (int r = embed ? 0 : R; r < Rp; r++) keep[NMp + r] = 0;
  memcpy(h + w->o_tok, pb->tokens, sizeof(int32_t) * (size_t)N);
  for (int t = N; t < Mp; t++) h[w->o_tok + t] = h[w->o_pos + t] = h[w->o_row + t] = 0;
  for (int r = R; r <= Rp; r++) {
    h[w->o_rs + r] = N;
    h[w->o_ms + r] = NM;
    if (r < Rp) h[w->o_qt + r] = 0;
  }
  h[CNT_TOKENS] = N;
  h[CNT_ROWS] = R;
  h[CNT_MARKERS] = NM;
  h[CNT_TILES] = n_tiles;
  h[CNT_TILES_LOCAL] = n_tiles_l;
  h[CNT_KMAX] = kmax;
  CU_TRY(cudaMemcpyAsync(w->din, w->hin, w->din_bytes, cudaMemcpyHostToDevice, w->st), "copying the batch");
  *Mp_out = Mp;
  *Rp_out = Rp;
  *NMp_out = NMp;
  return 0;
}

/* Enqueue the forward or the embed pass of the staged batch: eagerly, or through the bucket's graph. */
static int run_pass(backend_worker *w, int Mp, int Rp, int NMp, int embed, laya_error *err) {
  cuda_model *m = w->m;
  int rc;
  w->prof_n = 0;
  if (!m->use_graphs) { /* no worker captures: nothing to keep apart */
    rc = enqueue_forward(w, Mp, Rp, NMp, embed, err);
  } else if (w->prof) { /* profiling runs eagerly, beside other workers' captures */
    pthread_mutex_lock(m->mem_lock);
    rc = enqueue_forward(w, Mp, Rp, NMp, embed, err);
    pthread_mutex_unlock(m->mem_lock);
  } else {
    rc = run_graph(w, Mp, Rp, NMp, embed, err);
  }
  if (rc) cudaStreamSynchronize(w->st);
  return rc;
}

static void prof_collect(backend_worker *w) {
  if (w->prof && w->prof_n > 1) {
    for (int i = 1; i < w->prof_n; i++) {
      float ms = 0;
      cudaEventElapsedTime(&ms, w->prof_ev[i - 1], w->prof_ev[i]);
      if (w->prof_cat[i] >= 0) w->prof_ms[w->prof_cat[i]] += ms;
    }
    w->prof_calls++;
  }
}

static int cuda_forward(backend *b, backend_worker *w, const packed_batch *pb, float *logits, float *act_logits,
                        laya_error *err) {
  cuda_model *m = (cuda_model *)b->impl;
  const int dev = m->dev;
  if (!w || !pb || pb->n_rows <= 0 || pb->n_tokens <= 0 || !pb->tokens || !pb->row_start || !pb->qtype ||
      !pb->marker_start || !pb->markers)
    return cu_fail(err, LAYA_ERR_VALUE, "CUDA backend: empty or incomplete batch");
  int max_len = 0;
  int rc = packed_batch_check(pb, m->V, "CUDA backend", &max_len, err);
  if (rc) return rc;
  if (max_len > MAX_POS)
    return cu_fail(err, LAYA_ERR_VALUE, "CUDA backend: a row has %d tokens (at most %d supported)", max_len, MAX_POS);
  const int R = pb->n_rows, NM = pb->marker_start[R];
  int Mp, Rp, NMp;
  if ((rc = stage_batch(w, pb, 0, &Mp, &Rp, &NMp, err))) return rc;
  if ((rc = run_pass(w, Mp, Rp, NMp, 0, err))) return rc;
  float *ho = (float *)w->hout;
  if (NM > 0)
    CU_TRY(cudaMemcpyAsync(ho, w->dout, sizeof(float) * (size_t)NM, cudaMemcpyDeviceToHost, w->st),
           "copying the logits");
  CU_TRY(cudaMemcpyAsync(ho + w->capNM, w->dout + w->capNM, sizeof(float) * (size_t)R * m->n_act,
                         cudaMemcpyDeviceToHost, w->st),
         "copying the act logits");
  CU_TRY(cudaStreamSynchronize(w->st), "running the forward pass");
  prof_collect(w);
  if (logits && NM > 0) memcpy(logits, ho, sizeof(float) * (size_t)NM);
  if (act_logits) memcpy(act_logits, ho + w->capNM, sizeof(float) * (size_t)R * m->n_act);
  return 0;
}

/* backend.embed: the encoder over the packed rows at the backend's precision (the forward's own
 * kernels and GEMMs: 16-bit, or E4M3 in fp8 mode, with the fp32 residual stream), the final norm
 * in fp32, each row's mean over its tokens (k_mean_rows: in double, as backend_mean_rows), fp32
 * out. Its graphs are its own per bucket (graph_entry.embed). */
static int cuda_embed(backend *b, backend_worker *w, const packed_batch *pb, float *pooled, laya_error *err) {
  cuda_model *m = (cuda_model *)b->impl;
  const int dev = m->dev;
  if (pb && pb->n_rows == 0) return 0;
  if (!w || !pb || pb->n_rows < 0 || pb->n_tokens <= 0 || !pb->tokens || !pb->row_start || !pb->qtype ||
      !pb->marker_start || !pb->markers || !pooled)
    return cu_fail(err, LAYA_ERR_VALUE, "CUDA backend: empty or incomplete batch");
  int max_len = 0;
  int rc = packed_batch_check(pb, m->V, "CUDA backend", &max_len, err);
  if (rc) return rc;
  if (max_len > MAX_POS)
    return cu_fail(err, LAYA_ERR_VALUE, "CUDA backend: a row has %d tokens (at most %d supported)", max_len, MAX_POS);
  const int R = pb->n_rows;
  int Mp, Rp, NMp;
  if ((rc = stage_batch(w, pb, 1, &Mp, &Rp, &NMp, err))) return rc;
  if ((rc = run_pass(w, Mp, Rp, NMp, 1, err))) return rc;
  /* [R, d] fp32 straight into the caller's (pageable) array: the copy completes before the sync */
  CU_TRY(cudaMemcpyAsync(pooled, w->act_in, sizeof(float) * (size_t)R * m->d, cudaMemcpyDeviceToHost, w->st),
         "copying the pooled vectors");
  CU_TRY(cudaStreamSynchronize(w->st), "running the embed pass");
  prof_collect(w);
  return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Warm-up (backend.worker_warm): what a bucket's first batches pay once, paid before serving.
 *
 * A cold worker's first forward pays CUDA's lazy loading of every kernel it launches (ours and
 * cuBLASLt's), cuBLASLt's plan for each GEMM shape, and an eager pass; the second batch of the
 * bucket pays the graph capture. Warming runs synthetic batches through cuda_forward itself (so
 * exactly what a request would run, eager then captured), for every bucket of the small passes,
 * where launch overhead dominates: 1, 2 and 4 rows (3 questions of one state are 4 bucketed rows),
 * with up to 8 option markers a row, and every token bucket up to 2,048 tokens or the rows'
 * length, within the worker's scratch. Larger passes are GPU-bound, so an eager first pass costs
 * about what a replay does; for them one eager pass per size class (4,096 and 16,384 tokens, when
 * the scratch holds them) loads the cuBLASLt kernels the larger GEMMs pick. A graph depends only
 * on the bucket (kernels read the real counts from device memory), so a synthetic batch captures
 * the graph of any request in its bucket. LAYA_CUDA_WARMUP=0 turns it off (for comparison). */
#define WARM_MAX_TOKENS 2048

static int warm_bucket(backend *b, backend_worker *w, int Mp, int Rp, int NMp, int passes, laya_error *err) {
  if (Mp > w->capM || Rp > w->capR || NMp > w->capNM || Mp < 2 * Rp || NMp / Rp + 1 >= Mp / Rp) return 0;
  graph_entry *g = find_graph(w, Mp, Rp, NMp, 0);
  if (g && (g->state == 2 || passes == 1)) return 0;
  cuda_model *m = w->m;
  const int per = Mp / Rp, k = NMp / Rp;
  int32_t *tok = (int32_t *)malloc(sizeof(int32_t) * (size_t)Mp);
  int32_t *rs = (int32_t *)malloc(sizeof(int32_t) * (size_t)(Rp + 1)), *ms = (int32_t *)malloc(sizeof(int32_t) * (size_t)(Rp + 1));
  int32_t *qt = (int32_t *)calloc((size_t)Rp, sizeof(int32_t)), *mk = (int32_t *)malloc(sizeof(int32_t) * (size_t)NMp);
  int32_t *kp = (int32_t *)malloc(sizeof(int32_t) * (size_t)(Rp + NMp));
  float *lg = (float *)malloc(sizeof(float) * (size_t)NMp), *ac = (float *)malloc(sizeof(float) * (size_t)Rp * m->n_act);
  int rc = 0;
  if (!tok || !rs || !ms || !qt || !mk || !kp || !lg || !ac) rc = cu_fail(err, LAYA_ERR_NOMEM, "out of host memory warming the CUDA backend");
  if (!rc) {
    for (int t = 0; t < Mp; t++) tok[t] = t % m->V;
    for (int r = 0; r <= Rp; r++) {
      rs[r] = r * per;
      ms[r] = r * k;
    }
    for (int r = 0; r < Rp; r++)
      for (int j = 0; j < k; j++) mk[r * k + j] = 1 + j;
    packed_batch pb = {Rp, Mp, tok, rs, qt, ms, mk, kp};
    model_kept_rows(&pb, kp);
    /* eager (loads kernels and plans), then captured; a bucket already seen once only captures */
    for (int i = g ? 1 : 0; i < passes && !rc; i++) rc = cuda_forward(b, w, &pb, lg, ac, err);
  }
  free(tok);
  free(rs);
  free(ms);
  free(qt);
  free(mk);
  free(kp);
  free(lg);
  free(ac);
  return rc;
}

static int cuda_worker_warm(backend *b, backend_worker *w, int row_len, laya_error *err) {
  cuda_model *m = (cuda_model *)b->impl;
  if (!m->warmup || !w || w->prof) return 0;
  const int passes = m->use_graphs ? 2 : 1;
  if (row_len < 64) row_len = 64;
  int rc = 0;
  static const int rows[3] = {1, 2, 4};
  for (int ri = 0; ri < 3 && !rc; ri++) {
    const int Rp = rows[ri];
    long top = (long)Rp * row_len;
    if (top > WARM_MAX_TOKENS) top = WARM_MAX_TOKENS;
    const int top_bucket = token_bucket((int)top);
    /* markers: up to 4 and up to 8 a row (one value for a single row: 8 is the smallest bucket) */
    const int nm_lo = pow2_at_least(4 * Rp, 8), nm_hi = pow2_at_least(8 * Rp, 8);
    for (int Mp = 64; Mp <= top_bucket && !rc; Mp = token_bucket(Mp + 1)) {
      rc = warm_bucket(b, w, Mp, Rp, nm_lo, passes, err);
      if (!rc && nm_hi != nm_lo) rc = warm_bucket(b, w, Mp, Rp, nm_hi, passes, err);
    }
  }
  static const int big[2] = {4096, 16384};
  for (int i = 0; i < 2 && !rc; i++) {
    const int Rp = pow2_at_least(big[i] / 512, 1);
    rc = warm_bucket(b, w, big[i], Rp, pow2_at_least(4 * Rp, 8), 1, err);
  }
  return rc;
}

static void cuda_destroy(backend *b) {
  if (!b) return;
  model_free((cuda_model *)b->impl);
  free(b);
}

static backend *cuda_create(const model_weights *w, const backend_options *o, const backend *share, laya_error *err) {
  int dev = o ? o->device_id : 0;
  backend_precision prec = o ? o->precision : PREC_BF16;
  if (prec == PREC_INT8) {
    cu_fail(err, LAYA_ERR_UNSUPPORTED, "CUDA backend: int8 is not supported (use bf16, fp16 or fp8)");
    return NULL;
  }
  if (!w) {
    cu_fail(err, LAYA_ERR_VALUE, "CUDA backend: no weights");
    return NULL;
  }
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    cu_fail(err, LAYA_ERR_DEVICE, "no CUDA device is available (%s)",
            e != cudaSuccess ? cudaGetErrorString(e) : "device count is 0");
    return NULL;
  }
  if (dev < 0 || dev >= count) {
    cu_fail(err, LAYA_ERR_VALUE, "CUDA device %d does not exist (%d device%s present)", dev, count,
            count == 1 ? "" : "s");
    return NULL;
  }
  e = cudaSetDevice(dev);
  if (e != cudaSuccess) {
    cuda_fail(err, e, dev, "selecting the device");
    return NULL;
  }
  /* the environment as laya_open read and validated it, else (tests, bench/: no options) the
   * backend's own rows, read and validated here once: a bad value is refused naming the variable */
  static const char *const mine[] = {"LAYA_CUDA_WARMUP",    "LAYA_CUDA_GRAPHS", "LAYA_CUDA_GEGLU", "LAYA_CUDA_QKV",
                                      "LAYA_CUDA_HEAD_FP16", "LAYA_CUDA_HEAD_ALL", "LAYA_CUDA_GEMM_TUNE",
                                      "LAYA_CUDA_ATTN_L",    "LAYA_CUDA_ATTN_G", "LAYA_CUDA_PROFILE",
                                      "LAYA_CUDA_MAX_SCRATCH", "LAYA_CUDA_PDL", "LAYA_CUDA_GEMM_SPLITK"};
  laya_env_options own;
  const laya_env_options *env =
      laya_env_options_given_or_read(o ? o->env : NULL, &own, mine, sizeof mine / sizeof mine[0], err);
  if (!env) return NULL;
  cuda_model *m = (cuda_model *)calloc(1, sizeof *m);
  backend *b = (backend *)calloc(1, sizeof *b);
  if (!m || !b) {
    free(m);
    free(b);
    laya_env_options_free(&own);
    cu_fail(err, LAYA_ERR_NOMEM, "out of host memory");
    return NULL;
  }
  m->dev = dev;
  m->src = w;
  m->refs = 1;
  pthread_mutex_init(&m->own_lock, NULL);
  m->mem_lock = &m->own_lock;
  if (share && share->kind == BACKEND_CUDA && share->destroy == cuda_destroy) {
    /* model_load shares the base's tensors when its plan matches, else drops the base again */
    cuda_model *base = (cuda_model *)share->impl;
    if (base->dev == dev && base->src == w) {
      __atomic_add_fetch(&base->refs, 1, __ATOMIC_ACQ_REL);
      m->base = base;
      /* one lock for the models of one arena: a capture of either must not overlap an allocation
       * of the other (the lock's comment at cuda_model) */
      m->mem_lock = base->mem_lock;
    }
  }
  /* fp32 (the zero value of backend_options) means "the default" here: the CUDA path is 16-bit. */
  m->half16 = prec == PREC_FP16;
  m->dt16 = m->half16 ? CU_F16 : CU_BF16;
  m->fp8 = prec == PREC_FP8;
  /* The decision head is 7% of the work and sits right before the scorer: in fp16 (3 more
   * mantissa bits than bf16; its inputs are normalised, so range is no concern) it costs nothing
   * measurable and moved fewer argmaxes on the parity fixtures (mmbert-tiny: 754 vs 742 of 765
   * equal to fp32). LAYA_CUDA_HEAD_FP16=0 keeps the head in bf16. */
  /* bools read -1 when unset: each keeps its default (core/options.c's table) */
  m->head_half16 = m->half16 || env->cuda_head_fp16 != 0;
  m->head_dt16 = m->head_half16 ? CU_F16 : CU_BF16;
  /* Unnamed: on Hopper the wgmma kernels (attention_sm90.cu) for every pass size, so a row's
   * attention does not depend on its pass; elsewhere the mma.sync kernels, whose small passes take
   * the 64-key-tile variants of the same query tile (fewer steps of the key loop, which is what a
   * short row's attention waits on). BENCHMARKS.md, CUDA backend / Attention on wgmma. */
  const int att_sm90 = wgmma_device(dev);
  m->att_g = attention_variant(0, env->cuda_attn_g ? env->cuda_attn_g : att_sm90 ? "wg2n64p" : NULL, dev);
  m->att_l = attention_variant(1, env->cuda_attn_l ? env->cuda_attn_l : att_sm90 ? "wg1n64" : NULL, dev);
  m->att_g_small = env->cuda_attn_g || att_sm90 ? m->att_g : attention_variant(0, "w4m2n64", dev);
  m->att_l_small = env->cuda_attn_l || att_sm90 ? m->att_l : attention_variant(1, "w4m1n64", dev);
  m->tile_q = attention_variant_queries(0, m->att_g);
  m->tile_ql = attention_variant_queries(1, m->att_l);
  /* the tile lists are built for tile_q / tile_ql: a small-pass variant must take the same */
  if (attention_variant_queries(0, m->att_g_small) != m->tile_q) m->att_g_small = m->att_g;
  if (attention_variant_queries(1, m->att_l_small) != m->tile_ql) m->att_l_small = m->att_l;
  m->use_graphs = env->cuda_graphs != 0;
  m->head_all = env->cuda_head_all == 1;
  m->warmup = env->cuda_warmup != 0;
  m->profile = env->cuda_profile == 1;
  m->gemm_tune = env->cuda_gemm_tune == 1;
  const char *sk = env->cuda_gemm_splitk;
  m->gemm_splitk = !sk || !strcmp(sk, "default") ? -1
                   : !strcmp(sk, "none")          ? CUBLASLT_REDUCTION_SCHEME_NONE
                                                  : CUBLASLT_REDUCTION_SCHEME_INPLACE;
  {
    int cc = 0;
    if (cudaDeviceGetAttribute(&cc, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) cudaGetLastError();
    /* process-wide (pdl.cuh), as the last model created asks; off for good once a pre-Hopper
     * device is seen (the attribute is a Hopper feature) */
    static std::atomic<int> pre_hopper{0};
    if (cc < 9) pre_hopper.store(1);
    cuda_set_pdl(!pre_hopper.load() && env->cuda_pdl != 0);
  }
  m->max_scratch = env->cuda_max_scratch;
  m->gg_mask = m->fp8 ? 0 : sm90_gemm_variants(dev, env->cuda_geglu); /* the fused GEMMs are 16-bit */
  /* Wqkv + RoPE on our kernel: faster at one small row, slower than cuBLASLt + the RoPE pass at
   * larger M (BENCHMARKS.md); unset: small passes only, named: every pass (a study), 0: never */
  m->qkv_small = !env->cuda_qkv;
  m->qkv_mask = m->fp8 ? 0 : sm90_gemm_variants(dev, env->cuda_qkv ? env->cuda_qkv : "auto");
  laya_env_options_free(&own);
  if (m->fp8 && fp8_check_device(m, err)) {
    model_free(m);
    free(b);
    return NULL;
  }
  if (model_load(m, w, err)) {
    model_free(m);
    free(b);
    return NULL;
  }
  b->name = "cuda";
  b->kind = BACKEND_CUDA;
  b->impl = m;
  b->worker_create = cuda_worker_create;
  b->worker_destroy = cuda_worker_destroy;
  b->worker_reserve = cuda_worker_reserve;
  b->worker_warm = cuda_worker_warm;
  b->worker_bytes = cuda_worker_bytes;
  b->forward = cuda_forward;
  b->destroy = cuda_destroy;
  b->embed = cuda_embed;
  return b;
}

extern "C" backend *backend_cuda_create(const model_weights *w, const backend_options *o, laya_error *err) {
  return cuda_create(w, o, NULL, err);
}

extern "C" backend *backend_cuda_create_shared(const backend *base, const model_weights *w, const backend_options *o,
                                               laya_error *err) {
  return cuda_create(w, o, base, err);
}

extern "C" int backend_cuda_available(int *device_count) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
  if (device_count) *device_count = n;
  return n > 0;
}

extern "C" int backend_cuda_set_max_scratch(backend *b, long long bytes) {
  if (!b || b->kind != BACKEND_CUDA) return -1;
  cuda_model *m = (cuda_model *)b->impl;
  pthread_mutex_lock(m->mem_lock); /* read under it, in ensure_capacity_locked */
  m->max_scratch = bytes;
  pthread_mutex_unlock(m->mem_lock);
  return 0;
}

extern "C" int backend_cuda_memory(const backend *b, backend_worker *w, size_t *weights, size_t *scratch) {
  if (!b || strcmp(b->name, "cuda") != 0) return -1;
  if (weights) *weights = ((const cuda_model *)b->impl)->arena_bytes;
  if (scratch) *scratch = w ? w->scratch_bytes + WS_BYTES : 0;
  return 0;
}

extern "C" int backend_cuda_weights_shared(const backend *b, const backend *base, size_t *borrowed) {
  if (!b || strcmp(b->name, "cuda") != 0) return -1;
  const cuda_model *m = (const cuda_model *)b->impl;
  const bool from = m->base && (!base || (base->destroy == cuda_destroy && m->base == base->impl));
  if (borrowed) *borrowed = from ? m->borrowed_bytes : 0;
  return from ? 1 : 0;
}
