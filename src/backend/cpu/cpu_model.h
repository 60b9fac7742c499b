/*
 * cpu_model.h: the fast CPU backend's loaded model: every weight in the layout its kernels read,
 * either packed at create from a checkpoint's tensors or mapped from a `laya convert` artifact.
 *
 * Each array the model uses is registered under a stable name ("enc.3.wqkv.data", "head.0.norm1_b",
 * ...). backend_cpu_arrays hands exactly these named arrays to a container writer (model/artifact.h),
 * and the container path of create looks them up by the same names (cpu_artifact.c), so the two
 * load paths cannot drift apart.
 */
#ifndef LAYA_CPU_MODEL_H
#define LAYA_CPU_MODEL_H

#include <pthread.h>
#include <stdatomic.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_pool.h"
#include "backend/cpu/kernels.h"

typedef struct cpu_enc_layer {
  const float *attn_norm; /* [d] or NULL (layer 0) */
  const float *mlp_norm;  /* [d] */
  packed_matrix wqkv, wo, wi, wo_mlp;
} cpu_enc_layer;

typedef struct cpu_head_layer {
  const float *norm1_w, *norm1_b, *norm2_w, *norm2_b;
  packed_matrix in_proj, out_proj, linear1, linear2;
} cpu_head_layer;

typedef struct cpu_model {
  const struct laya_env_options *env; /* the environment, during backend_cpu_create only (else NULL) */
  encoder_config enc;
  int head_layers, head_heads, n_act, act_hidden;
  cpu_wfmt fmt;         /* the precision asked for; a few sensitive matrices may stay wider */
  int any_i8;           /* some matrix is int8: fp32 staging buffers are needed */
  int attn_bf16;        /* attention in bf16 (bf16 / int8 models on a table with bf16 dot products;
                           LAYA_CPU_ATTN_F32=1 keeps fp32) */
  unsigned study;       /* LAYA_CPU_STUDY bits (cpu.c): error-decomposition emulation, normally 0 */
  int study_layer;      /* -1, or the one encoder layer the activation rounding applies to */
  int profile;          /* LAYA_CPU_PROFILE=1: one JSON line of per-step times per forward on stderr */
  int gemm_mtile, gemm_per_thread; /* GEMM tasks: most rows each, how many per thread (cpu.c gemm) */
  size_t max_elem;      /* widest activation element any GEMM reads (1, 2 or 4 bytes) */
  const cpu_kernels *k;
  cpu_pool *pool;
  const tensor *tok_embeddings; /* [V, d], as stored (never packed) */
  const float *emb_norm, *final_norm, *type_emb;
  cpu_enc_layer *layers;
  cpu_head_layer *head;
  const float *scorer_norm_w, *scorer_norm_b, *scorer2_w, *scorer2_b, *act2_w, *act2_b;
  packed_matrix scorer1, act1; /* always fp32: they make the logits directly */
  int rope_len;                /* positions in the tables */
  float *rope[2];              /* [rope_len][head_dim]: cos[dh/2] then sin[dh/2]; 0 global, 1 local */
  pthread_mutex_t rope_mu;     /* fills the tables lazily (cpu.c ensure_rope) */
  atomic_int rope_ready;       /* positions filled */
  float inv_freq[2][CPU_MAX_DH / 2];
  /* named arrays (see top); owned ones are freed with the model */
  backend_array *blobs;
  int n_blobs, cap_blobs;
  void **owned;
  int n_owned, cap_owned;
  /* backend_cpu_adopt: called once when the model is freed, before anything else is (closes the
   * artifact the packed weights are mapped from, or waits for the pack cache's writer) */
  void (*release)(void *ctx);
  void *release_ctx;
} cpu_model;

/* The model of a "cpu" backend (NULL for another backend): tests read its facts. */
const cpu_model *backend_cpu_model(const backend *b);

/* ---- weights from a container (cpu_artifact.c) ----
 * An array of exactly `bytes` named `name` from w->packed (the container), or NULL with err set
 * naming the container and the array. */
const void *cpu_packed_array(const struct artifact *a, const char *name, size_t bytes, laya_error *err);
/* The container's layout and precision against this build and the asked-for precision o (NULL:
 * any): 0, or an error naming both ("convert again"). *prec gets the container's precision. */
int cpu_packed_check(const struct artifact *a, const backend_options *o, backend_precision *prec, laya_error *err);

#endif
