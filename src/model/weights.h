/*
 * weights.h: the model's configuration and its tensors as read from a checkpoint, before any
 * backend has packed them. Produced by the checkpoint loader (model/checkpoint.c), consumed by
 * backends, which convert or pack what they need at load (and keep nothing they do not need).
 */
#ifndef LAYA_MODEL_WEIGHTS_H
#define LAYA_MODEL_WEIGHTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef enum tensor_dtype { DT_F32 = 0, DT_F16 = 1, DT_BF16 = 2 } tensor_dtype;

/* A tensor inside a memory-mapped file (safetensors or a packed artifact): no copy is made. */
typedef struct tensor {
  const char *name;
  tensor_dtype dtype;
  int ndim;
  int64_t shape[4];
  int64_t numel;
  const void *data; /* points into the mapping; little-endian, row-major */
} tensor;

/* Convert elements [start, start+count) of t to fp32. */
void tensor_to_f32(const tensor *t, int64_t start, int64_t count, float *out);

/* The activation of the encoder's GeGLU MLP, act(input) * gate (HF hidden_activation through
 * transformers' ACT2FN). Which hidden_activation names map to which kind is decided in one place,
 * config.c's table (enc_act_parse); 0 is HF's default "gelu". */
typedef enum enc_act {
  ENC_ACT_GELU = 0,   /* 0.5 x (1 + erf(x / sqrt 2)) */
  ENC_ACT_GELU_TANH,  /* 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) = x sigmoid(2 sqrt(2 / pi) (..)) */
  ENC_ACT_QUICK_GELU, /* x sigmoid(1.702 x) */
  ENC_ACT_SILU,       /* x sigmoid(x) */
  ENC_ACT_RELU,       /* max(x, 0) */
  /* The rarer parameter-free kinds (the rest of ACT2FN): every backend runs them through one
   * per-element path (the CPU tables' scalar form, CUDA's separate GeGLU pass; not the fused Hopper
   * Wi epilogue, whose kinds end before ENC_ACT_FUSED_END). */
  ENC_ACT_GELU_10,       /* clamp(erf GELU(x), -10, 10) */
  ENC_ACT_MISH,          /* x tanh(log1p(exp(x))) (torch's mish: no softplus threshold) */
  ENC_ACT_RELU2,         /* max(x, 0)^2 */
  ENC_ACT_RELU6,         /* min(max(x, 0), 6) */
  ENC_ACT_LEAKY_RELU,    /* x > 0 ? x : 0.01 x (nn.LeakyReLU()'s default slope) */
  ENC_ACT_HARDSWISH,     /* x min(max(x + 3, 0), 6) / 6 */
  ENC_ACT_TANH,          /* tanh(x) */
  ENC_ACT_SIGMOID,       /* 1 / (1 + exp(-x)) */
  ENC_ACT_LINEAR,        /* x */
  ENC_ACT_LAPLACE,       /* 0.5 (1 + erf((x - 0.707107) / (0.282095 sqrt 2))) */
  ENC_ACT_SQRT_SOFTPLUS, /* sqrt(x > 20 ? x : log1p(exp(x))) */
  ENC_ACT_COUNT
} enc_act;
/* The kinds with their own vector forms on the CPU tables and a fused Hopper Wi epilogue
 * (gemm_sm90.cu): [0, ENC_ACT_FUSED_END). */
#define ENC_ACT_FUSED_END (ENC_ACT_RELU + 1)

/* The encoder (HF ModernBertConfig) fields the forward pass needs. */
typedef struct encoder_config {
  int hidden;         /* d */
  int n_layers;
  int n_heads;
  int head_dim;       /* hidden / n_heads */
  int intermediate;   /* I: Wi is [2I, d] */
  int vocab;          /* embedding rows */
  int global_every;   /* global_attn_every_n_layers: layer i is global iff i % global_every == 0,
                       * unless layer_pattern (then 0 when the pattern is no interval) */
  bool layer_pattern; /* global_layers says which layers are global (transformers 5 layer_types) */
  uint64_t global_layers[1024 / 64]; /* bit l: layer l attends globally (ENC_MAX_LAYERS bits) */
  int local_window;   /* local_attention; a local layer sees keys with |i - j| <= local_window / 2 */
  double global_theta, local_theta;
  double norm_eps;
  enc_act act;        /* hidden_activation */
  int max_positions;  /* max_position_embeddings (8192 when absent); bounds the checkpoint's max_len */
} encoder_config;

/* Does layer l attend to the whole sequence (else to its local window)? */
static inline int enc_layer_global(const encoder_config *c, int l) {
  if (c->layer_pattern) return (int)((c->global_layers[l >> 6] >> (l & 63)) & 1u);
  return c->global_every > 0 && l % c->global_every == 0;
}

typedef struct enc_layer_weights {
  const tensor *attn_norm; /* NULL for layer 0 (Identity) */
  const tensor *wqkv;      /* [3d, d], rows [Q; K; V], heads contiguous within each */
  const tensor *wo;        /* [d, d] */
  const tensor *mlp_norm;  /* [d] */
  const tensor *wi;        /* [2I, d], rows [input; gate] */
  const tensor *wo_mlp;    /* [d, I] */
} enc_layer_weights;

typedef struct head_layer_weights { /* nn.TransformerEncoderLayer, norm_first, ReLU */
  const tensor *norm1_w, *norm1_b;
  const tensor *in_proj_w, *in_proj_b; /* [3d, d], [3d] */
  const tensor *out_proj_w, *out_proj_b;
  const tensor *norm2_w, *norm2_b;
  const tensor *linear1_w, *linear1_b; /* [4d, d] */
  const tensor *linear2_w, *linear2_b; /* [d, 4d] */
} head_layer_weights;

typedef struct model_weights {
  encoder_config enc;
  int head_layers; /* decision-head layers (0 = none) */
  int head_heads;  /* max(1, d / 64) */
  int n_act;       /* len(act_costs) + 1 */
  const tensor *tok_embeddings; /* [V, d] */
  const tensor *emb_norm;       /* [d] */
  enc_layer_weights *layers;    /* n_layers */
  const tensor *final_norm;     /* [d] */
  const tensor *type_emb;       /* [3, d] */
  head_layer_weights *head;     /* head_layers */
  const tensor *scorer_norm_w, *scorer_norm_b; /* LayerNorm(d) */
  const tensor *scorer1_w, *scorer1_b;         /* [d, d], [d] */
  const tensor *scorer2_w, *scorer2_b;         /* [1, d], [1] */
  const tensor *act1_w, *act1_b;               /* [256, d + 4], [256] */
  const tensor *act2_w, *act2_b;               /* [n_act, 256], [n_act] */
  /* Non-NULL when the model comes from a `laya convert` artifact or a pack cache entry: the "cpu"
   * backend maps the arrays it packed before from there (read through the accessors below), and
   * only tok_embeddings among the tensors above is set (the other backends need a checkpoint, or
   * the "cpu" backend's unpacking, backend_cpu_dense_weights). */
  const struct artifact *packed;
} model_weights;

/* ---- a container of packed arrays, as a backend sees it ------------------------------------------
 * A `laya convert` artifact (model/artifact.h) is a mapped, checksummed container of named arrays
 * that a backend laid out before (the "cpu" backend's, written and read by
 * backend/cpu/cpu_artifact.c), with the model's facts. The container knows names, bytes and
 * checksums, never a layout: the backend that wrote the arrays is the one that reads them, through
 * these accessors only (model/artifact.c implements them). */
struct artifact;
/* A named array's bytes inside the mapping, or NULL. */
const void *artifact_blob(const struct artifact *a, const char *name, size_t *bytes);
/* The file, for messages. */
const char *artifact_path(const struct artifact *a);
/* The layout name the writer recorded ("panel32-v1": backend_cpu_layout()). */
const char *artifact_layout(const struct artifact *a);
/* The precision the writer recorded: "fp32", "bf16" or "int8". */
const char *artifact_precision_name(const struct artifact *a);
/* Rows of act_head.0 (the act head's hidden width). */
int artifact_act_hidden(const struct artifact *a);

#endif
