/*
 * random_model.h: a small Laya DecisionModel with seeded random weights, built in memory (no
 * files), for backend tests. Weight values are m * 2^-s with |m| <= 255, so every value is exact
 * in F32, F16 and BF16 and the same model can be stored in any of the three dtypes; the values
 * depend only on the seed and the tensor shapes (not on thetas, window or global_every), so two
 * configs that differ only there share their weights.
 */
#ifndef LAYA_TEST_RANDOM_MODEL_H
#define LAYA_TEST_RANDOM_MODEL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/weights.h"

typedef struct random_model {
  model_weights w;
  tensor *tensors;
  int n_tensors, cap_tensors;
  uint64_t rng;
} random_model;

static inline uint64_t rm_next(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* The float's bits in the chosen dtype; exact for the values this generator makes. */
static inline void rm_store(tensor_dtype dt, void *data, int64_t i, float v) {
  uint32_t b;
  memcpy(&b, &v, 4);
  if (dt == DT_F32) {
    ((float *)data)[i] = v;
  } else if (dt == DT_BF16) {
    ((uint16_t *)data)[i] = (uint16_t)(b >> 16);
  } else {
    uint32_t sign = (b >> 16) & 0x8000u, exp = (b >> 23) & 0xffu, mant = b & 0x7fffffu;
    uint16_t h = (uint16_t)sign;
    if (exp != 0) h = (uint16_t)(sign | ((exp - 112u) << 10) | (mant >> 13));
    ((uint16_t *)data)[i] = h;
  }
}

typedef enum rm_kind { RM_LINEAR, RM_NORM, RM_BIAS, RM_EMB } rm_kind;

/* Adds a tensor of `n` values (shape [rows, cols] or [cols] when rows == 0). fan_in sets the
 * scale of linear weights so activations stay O(1) through the layers. */
static inline const tensor *rm_tensor(random_model *rm, tensor_dtype dt, const char *name, int64_t rows,
                                      int64_t cols, rm_kind kind) {
  if (rm->n_tensors == rm->cap_tensors) return NULL; /* cap is computed exactly in random_model_init */
  tensor *t = &rm->tensors[rm->n_tensors++];
  int64_t n = rows ? rows * cols : cols;
  size_t es = dt == DT_F32 ? 4 : 2;
  void *data = malloc((size_t)n * es);
  t->name = name;
  t->dtype = dt;
  t->ndim = rows ? 2 : 1;
  t->shape[0] = rows ? rows : cols;
  t->shape[1] = rows ? cols : 0;
  t->numel = n;
  t->data = data;
  int s;
  switch (kind) {
    case RM_LINEAR: s = (int)lround(log2(147.0 * sqrt((double)cols))); break; /* std ~ 1/sqrt(fan_in) */
    case RM_BIAS: s = 10; break;
    case RM_EMB: s = 7; break;
    default: s = 7; break;
  }
  for (int64_t i = 0; i < n; i++) {
    int m = (int)(rm_next(&rm->rng) % 511) - 255;
    float v;
    if (kind == RM_NORM) v = 1.0f + (float)(m / 8) / 128.0f; /* 1 +- 0.25, exact in bf16 */
    else v = ldexpf((float)m, -s);
    rm_store(dt, data, i, v);
  }
  return t;
}

/* A model with encoder config `enc`; head_heads is max(1, hidden / 64) as in Laya. */
static inline int random_model_init(random_model *rm, const encoder_config *enc, int head_layers, int n_act,
                                    tensor_dtype dt, uint64_t seed) {
  memset(rm, 0, sizeof *rm);
  rm->rng = seed;
  int L = enc->n_layers, HL = head_layers;
  int64_t d = enc->hidden, I = enc->intermediate;
  rm->cap_tensors = 2 + 6 * L - (L > 0) + 2 + 12 * HL + 6 + 4; /* layer 0 has no attn_norm */
  rm->tensors = calloc((size_t)rm->cap_tensors, sizeof(tensor));
  model_weights *w = &rm->w;
  w->enc = *enc;
  w->head_layers = HL;
  w->head_heads = d / 64 > 1 ? (int)(d / 64) : 1;
  w->n_act = n_act;
  w->layers = calloc((size_t)(L ? L : 1), sizeof *w->layers);
  w->head = calloc((size_t)(HL ? HL : 1), sizeof *w->head);
  w->tok_embeddings = rm_tensor(rm, dt, "encoder.embeddings.tok_embeddings.weight", enc->vocab, d, RM_EMB);
  w->emb_norm = rm_tensor(rm, dt, "encoder.embeddings.norm.weight", 0, d, RM_NORM);
  for (int i = 0; i < L; i++) {
    enc_layer_weights *l = &w->layers[i];
    l->attn_norm = i ? rm_tensor(rm, dt, "attn_norm.weight", 0, d, RM_NORM) : NULL;
    l->wqkv = rm_tensor(rm, dt, "attn.Wqkv.weight", 3 * d, d, RM_LINEAR);
    l->wo = rm_tensor(rm, dt, "attn.Wo.weight", d, d, RM_LINEAR);
    l->mlp_norm = rm_tensor(rm, dt, "mlp_norm.weight", 0, d, RM_NORM);
    l->wi = rm_tensor(rm, dt, "mlp.Wi.weight", 2 * I, d, RM_LINEAR);
    l->wo_mlp = rm_tensor(rm, dt, "mlp.Wo.weight", d, I, RM_LINEAR);
  }
  w->final_norm = rm_tensor(rm, dt, "encoder.final_norm.weight", 0, d, RM_NORM);
  w->type_emb = rm_tensor(rm, dt, "type_emb.weight", 3, d, RM_EMB);
  for (int j = 0; j < HL; j++) {
    head_layer_weights *h = &w->head[j];
    h->norm1_w = rm_tensor(rm, dt, "norm1.weight", 0, d, RM_NORM);
    h->norm1_b = rm_tensor(rm, dt, "norm1.bias", 0, d, RM_BIAS);
    h->in_proj_w = rm_tensor(rm, dt, "in_proj_weight", 3 * d, d, RM_LINEAR);
    h->in_proj_b = rm_tensor(rm, dt, "in_proj_bias", 0, 3 * d, RM_BIAS);
    h->out_proj_w = rm_tensor(rm, dt, "out_proj.weight", d, d, RM_LINEAR);
    h->out_proj_b = rm_tensor(rm, dt, "out_proj.bias", 0, d, RM_BIAS);
    h->norm2_w = rm_tensor(rm, dt, "norm2.weight", 0, d, RM_NORM);
    h->norm2_b = rm_tensor(rm, dt, "norm2.bias", 0, d, RM_BIAS);
    h->linear1_w = rm_tensor(rm, dt, "linear1.weight", 4 * d, d, RM_LINEAR);
    h->linear1_b = rm_tensor(rm, dt, "linear1.bias", 0, 4 * d, RM_BIAS);
    h->linear2_w = rm_tensor(rm, dt, "linear2.weight", d, 4 * d, RM_LINEAR);
    h->linear2_b = rm_tensor(rm, dt, "linear2.bias", 0, d, RM_BIAS);
  }
  w->scorer_norm_w = rm_tensor(rm, dt, "scorer.0.weight", 0, d, RM_NORM);
  w->scorer_norm_b = rm_tensor(rm, dt, "scorer.0.bias", 0, d, RM_BIAS);
  w->scorer1_w = rm_tensor(rm, dt, "scorer.1.weight", d, d, RM_LINEAR);
  w->scorer1_b = rm_tensor(rm, dt, "scorer.1.bias", 0, d, RM_BIAS);
  w->scorer2_w = rm_tensor(rm, dt, "scorer.3.weight", 1, d, RM_LINEAR);
  w->scorer2_b = rm_tensor(rm, dt, "scorer.3.bias", 0, 1, RM_BIAS);
  w->act1_w = rm_tensor(rm, dt, "act_head.0.weight", 256, d + 4, RM_LINEAR);
  w->act1_b = rm_tensor(rm, dt, "act_head.0.bias", 0, 256, RM_BIAS);
  w->act2_w = rm_tensor(rm, dt, "act_head.2.weight", n_act, 256, RM_LINEAR);
  w->act2_b = rm_tensor(rm, dt, "act_head.2.bias", 0, n_act, RM_BIAS);
  for (int i = 0; i < rm->n_tensors; i++)
    if (!rm->tensors[i].data) return -1;
  return rm->n_tensors == rm->cap_tensors ? 0 : -1;
}

static inline void random_model_free(random_model *rm) {
  for (int i = 0; i < rm->n_tensors; i++) free((void *)rm->tensors[i].data);
  free(rm->tensors);
  free(rm->w.layers);
  free(rm->w.head);
  memset(rm, 0, sizeof *rm);
}

/* A small encoder config: ModernBERT's structure at toy size. */
static inline encoder_config random_small_config(void) {
  encoder_config c;
  memset(&c, 0, sizeof c);
  c.hidden = 128;
  c.n_layers = 4;
  c.n_heads = 4;
  c.head_dim = 32;
  c.intermediate = 192;
  c.vocab = 512;
  c.global_every = 3;
  c.local_window = 16; /* |i - j| <= 8 on local layers */
  c.global_theta = 160000.0;
  c.local_theta = 10000.0;
  c.norm_eps = 1e-5;
  return c;
}

#endif
