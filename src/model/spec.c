/* spec.c: the model's config check and its kept rows (spec.h), shared by every backend. */
#include "model/spec.h"

int model_act_hidden(const model_weights *w) {
  return w->act1_w && w->act1_w->ndim == 2 ? (int)w->act1_w->shape[0] : 0;
}

/* The first rule c breaks, or NULL. */
static const char *config_fault(const model_weights *w) {
  const encoder_config *c = &w->enc;
  if (c->hidden <= 0) return "hidden_size must be positive";
  if (c->n_layers < 0) return "num_hidden_layers must not be negative";
  if (c->n_heads <= 0 || c->hidden % c->n_heads != 0) return "num_attention_heads must divide hidden_size";
  if (c->head_dim != c->hidden / c->n_heads || c->head_dim % 2 != 0)
    return "head_dim must be hidden_size / num_attention_heads and even";
  if (c->intermediate <= 0) return "intermediate_size must be positive";
  if (c->vocab <= 0) return "vocab_size must be positive";
  if (!c->layer_pattern && c->global_every <= 0) return "global_attn_every_n_layers must be positive";
  if (c->local_window < 0) return "local_attention must not be negative";
  if (!(c->global_theta > 0) || !(c->local_theta > 0)) return "rope thetas must be positive";
  if (!(c->norm_eps > 0)) return "norm_eps must be positive";
  if (w->head_layers < 0) return "head_layers must not be negative";
  if (w->head_heads <= 0 || c->hidden % w->head_heads != 0) return "decision-head heads must divide hidden_size";
  if (w->n_act <= 0) return "n_act must be positive";
  return NULL;
}

int model_spec_check(const model_weights *w, const char *who, laya_error *err) {
  const char *bad = config_fault(w);
  if (bad) return laya_err(err, LAYA_ERR_CONFIG, NULL, "%s: %s", who, bad);
  /* act_head.0 is [hidden, d + 4] (Laya uses 256 hidden; read from the tensor). An artifact's
   * weights hold no act tensor (its packed arrays are checked by their own reader). */
  const tensor *a = w->act1_w;
  if (!w->packed && (!a || a->ndim != 2 || a->shape[1] != (int64_t)w->enc.hidden + MODEL_ACT_FEATURES || a->shape[0] <= 0))
    return laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: act_head.0.weight must be [hidden, %lld]", who,
                    (long long)w->enc.hidden + MODEL_ACT_FEATURES);
  return 0;
}

void model_kept_rows(const packed_batch *b, int32_t *kept) {
  for (int r = 0; r < b->n_rows; r++) {
    int32_t *k = kept + model_kept_first(b, r);
    k[0] = 0; /* the CLS: the row's first token */
    for (int i = b->marker_start[r]; i < b->marker_start[r + 1]; i++) *++k = b->markers[i];
  }
}
