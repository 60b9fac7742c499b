/*
 * fullsize_model.h: the full-size random-weight models and question batch that both backends'
 * accuracy tools measure (bench/cuda/fullsize_acc.c, bench/cpu/accuracy.c "random:large" /
 * "random:mmbert"), so their tables report on the same models and rows.
 *
 * Models: ModernBERT-large or mmBERT-base shapes, 2 decision-head layers, 2 actions, weights from
 * random_model.h (std ~1/sqrt(fan_in), unit-scale head) with seed FULLSIZE_SEED, stored as BF16.
 * Batch: `rows` questions (24 by default) of 32..160 random tokens with 2..6 option markers each,
 * drawn from seed FULLSIZE_BATCH_SEED.
 */
#ifndef LAYA_TEST_FULLSIZE_MODEL_H
#define LAYA_TEST_FULLSIZE_MODEL_H

#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "batch_buf.h"
#include "random_model.h"

#define FULLSIZE_SEED 20261129ull
#define FULLSIZE_BATCH_SEED 77ull
#define FULLSIZE_ROWS 24
#define FULLSIZE_HEAD_LAYERS 2
#define FULLSIZE_N_ACT 2

/* "large" (ModernBERT-large) or "mmbert" (mmBERT-base); 0 on success, -1 for an unknown name. */
static inline int fullsize_config(const char *name, encoder_config *c) {
  memset(c, 0, sizeof *c);
  c->global_every = 3;
  c->local_window = 128;
  c->global_theta = 160000.0;
  c->norm_eps = 1e-5;
  c->head_dim = 64;
  if (strcmp(name, "mmbert") == 0) {
    c->hidden = 768, c->n_layers = 22, c->n_heads = 12, c->intermediate = 1152, c->vocab = 256000;
    c->local_theta = 160000.0;
  } else if (strcmp(name, "large") == 0) {
    c->hidden = 1024, c->n_layers = 28, c->n_heads = 16, c->intermediate = 2624, c->vocab = 50368;
    c->local_theta = 10000.0;
  } else {
    return -1;
  }
  return 0;
}

/* The model, built in memory (BF16 tensors, exact for this generator's values). */
static inline int fullsize_model_init(random_model *rm, const char *name) {
  encoder_config c;
  if (fullsize_config(name, &c)) return -1;
  return random_model_init(rm, &c, FULLSIZE_HEAD_LAYERS, FULLSIZE_N_ACT, DT_BF16, FULLSIZE_SEED);
}

typedef batch_buf fullsize_batch;

static inline void fullsize_batch_make(fullsize_batch *bb, int n, int vocab) {
  uint64_t s = FULLSIZE_BATCH_SEED;
  int *L = malloc(sizeof(int) * (size_t)n), *K = malloc(sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++) {
    L[i] = 32 + (int)(rm_next(&s) % 129);
    K[i] = 2 + (int)(rm_next(&s) % 5);
  }
  batch_buf_alloc(bb, n, L, K);
  for (int i = 0; i < n; i++) {
    int32_t *tok = bb->tokens + bb->row_start[i], *mk = bb->markers + bb->marker_start[i];
    bb->qtype[i] = (int)(rm_next(&s) % 3);
    for (int j = 0; j < L[i]; j++) tok[j] = (int32_t)(rm_next(&s) % (uint64_t)vocab);
    /* markers at distinct positions after the head, like [MASK] option slots */
    for (int j = 0; j < K[i]; j++) mk[j] = 1 + j * (L[i] - 2) / K[i];
  }
  batch_buf_done(bb);
  free(L);
  free(K);
}

static inline void fullsize_batch_free(fullsize_batch *bb) { batch_buf_free(bb); }

#endif
