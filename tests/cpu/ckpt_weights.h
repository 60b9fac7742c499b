/*
 * ckpt_weights.h: the weights of a Laya checkpoint directory without its tokenizer (for backend
 * tests and benchmarks): rl_agent_config.json, encoder/config.json, model.safetensors, bound
 * strictly by the engine's loader.
 */
#ifndef LAYA_TEST_CKPT_WEIGHTS_H
#define LAYA_TEST_CKPT_WEIGHTS_H

#include <stdio.h>
#include <string.h>

#include "model/checkpoint.h"
#include "model/config.h"
#include "model/safetensors.h"

typedef struct ckpt_weights {
  agent_config cfg;
  encoder_config enc;
  st_file st;
  model_weights w;
} ckpt_weights;

static inline int ckpt_weights_open(ckpt_weights *c, const char *dir, laya_error *err) {
  char path[4096];
  strbuf warn;
  memset(c, 0, sizeof *c);
  sb_init(&warn);
  snprintf(path, sizeof path, "%s/rl_agent_config.json", dir);
  int rc = agent_config_load(&c->cfg, path, dir, &warn, err);
  sb_free(&warn);
  snprintf(path, sizeof path, "%s/encoder/config.json", dir);
  if (!rc) rc = encoder_config_load(&c->enc, path, err);
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  if (!rc) rc = st_open(&c->st, path, err);
  if (!rc) rc = weights_bind(&c->w, &c->st, &c->enc, c->cfg.head_layers, c->cfg.n_act, err);
  return rc;
}

static inline void ckpt_weights_close(ckpt_weights *c) {
  weights_free(&c->w);
  st_close(&c->st);
  agent_config_free(&c->cfg);
}

#endif
