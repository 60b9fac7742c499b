/* weights_bind.c: checking a safetensors file against the DecisionModel architecture. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "model/checkpoint.h"

/* ---- weights ---- */

typedef struct expect {
  char name[112];
  int ndim;
  int64_t shape[2];
  const tensor **slot;
  bool parameter; /* a module parameter (buffers are checked only by the strict load) */
} expect;

typedef struct expect_list {
  expect *e;
  int n, cap;
  bool oom; /* an entry could not be added: the list is incomplete and must not be used */
} expect_list;

static void want(expect_list *l, const tensor **slot, int ndim, int64_t d0, int64_t d1,
                 const char *fmt, int idx) {
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 64;
    expect *e = realloc(l->e, sizeof *e * (size_t)cap);
    if (!e) {
      l->oom = true;
      return;
    }
    l->e = e;
    l->cap = cap;
  }
  expect *x = &l->e[l->n++];
  snprintf(x->name, sizeof x->name, fmt, idx);
  x->ndim = ndim;
  x->shape[0] = d0;
  x->shape[1] = d1;
  x->slot = slot;
  x->parameter = true;
}

static void shape_text(strbuf *sb, int ndim, const int64_t *shape) {
  sb_putc(sb, '[');
  for (int i = 0; i < ndim; i++) sb_printf(sb, i ? ", %lld" : "%lld", (long long)shape[i]);
  sb_putc(sb, ']');
}

void weights_free(model_weights *w) {
  free(w->layers);
  free(w->head);
  w->layers = NULL;
  w->head = NULL;
}

int weights_bind(model_weights *w, const st_file *st, const encoder_config *enc, int head_layers,
                 int n_act, laya_error *err) {
  memset(w, 0, sizeof *w);
  w->enc = *enc;
  w->head_layers = head_layers;
  w->head_heads = enc->hidden / 64 > 1 ? enc->hidden / 64 : 1;
  w->n_act = n_act;
  const int64_t d = enc->hidden, I = enc->intermediate, V = enc->vocab;
  w->layers = calloc((size_t)enc->n_layers, sizeof *w->layers);
  w->head = calloc(head_layers ? (size_t)head_layers : 1, sizeof *w->head);
  expect_list l = {0};
  if (!w->layers || !w->head) {
    weights_free(w);
    return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  }
  want(&l, &w->tok_embeddings, 2, V, d, "encoder.embeddings.tok_embeddings.weight", 0);
  want(&l, &w->emb_norm, 1, d, 0, "encoder.embeddings.norm.weight", 0);
  for (int i = 0; i < enc->n_layers; i++) {
    enc_layer_weights *L = &w->layers[i];
    if (i > 0) want(&l, &L->attn_norm, 1, d, 0, "encoder.layers.%d.attn_norm.weight", i);
    want(&l, &L->wqkv, 2, 3 * d, d, "encoder.layers.%d.attn.Wqkv.weight", i);
    want(&l, &L->wo, 2, d, d, "encoder.layers.%d.attn.Wo.weight", i);
    want(&l, &L->mlp_norm, 1, d, 0, "encoder.layers.%d.mlp_norm.weight", i);
    want(&l, &L->wi, 2, 2 * I, d, "encoder.layers.%d.mlp.Wi.weight", i);
    want(&l, &L->wo_mlp, 2, d, I, "encoder.layers.%d.mlp.Wo.weight", i);
  }
  want(&l, &w->final_norm, 1, d, 0, "encoder.final_norm.weight", 0);
  for (int j = 0; j < head_layers; j++) {
    head_layer_weights *H = &w->head[j];
    want(&l, &H->in_proj_w, 2, 3 * d, d, "head.layers.%d.self_attn.in_proj_weight", j);
    want(&l, &H->in_proj_b, 1, 3 * d, 0, "head.layers.%d.self_attn.in_proj_bias", j);
    want(&l, &H->out_proj_w, 2, d, d, "head.layers.%d.self_attn.out_proj.weight", j);
    want(&l, &H->out_proj_b, 1, d, 0, "head.layers.%d.self_attn.out_proj.bias", j);
    want(&l, &H->linear1_w, 2, 4 * d, d, "head.layers.%d.linear1.weight", j);
    want(&l, &H->linear1_b, 1, 4 * d, 0, "head.layers.%d.linear1.bias", j);
    want(&l, &H->linear2_w, 2, d, 4 * d, "head.layers.%d.linear2.weight", j);
    want(&l, &H->linear2_b, 1, d, 0, "head.layers.%d.linear2.bias", j);
    want(&l, &H->norm1_w, 1, d, 0, "head.layers.%d.norm1.weight", j);
    want(&l, &H->norm1_b, 1, d, 0, "head.layers.%d.norm1.bias", j);
    want(&l, &H->norm2_w, 1, d, 0, "head.layers.%d.norm2.weight", j);
    want(&l, &H->norm2_b, 1, d, 0, "head.layers.%d.norm2.bias", j);
  }
  want(&l, &w->type_emb, 2, 3, d, "type_emb.weight", 0);
  want(&l, &w->scorer_norm_w, 1, d, 0, "scorer.0.weight", 0);
  want(&l, &w->scorer_norm_b, 1, d, 0, "scorer.0.bias", 0);
  want(&l, &w->scorer1_w, 2, d, d, "scorer.1.weight", 0);
  want(&l, &w->scorer1_b, 1, d, 0, "scorer.1.bias", 0);
  want(&l, &w->scorer2_w, 2, 1, d, "scorer.3.weight", 0);
  want(&l, &w->scorer2_b, 1, 1, 0, "scorer.3.bias", 0);
  want(&l, &w->act1_w, 2, 256, d + 4, "act_head.0.weight", 0);
  want(&l, &w->act1_b, 1, 256, 0, "act_head.0.bias", 0);
  want(&l, &w->act2_w, 2, n_act, 256, "act_head.2.weight", 0);
  want(&l, &w->act2_b, 1, n_act, 0, "act_head.2.bias", 0);
  static const tensor *temperature_buffer;
  want(&l, &temperature_buffer, 1, 3, 0, "temperature", 0);
  if (l.oom) { /* never check against a list that silently lost entries */
    free(l.e);
    weights_free(w);
    return laya_err(err, LAYA_ERR_NOMEM, NULL, "%s: out of memory listing the tensors the config expects",
                    st->path);
  }
  if (l.n) l.e[l.n - 1].parameter = false;

  int rc = 0;
  strbuf msg;
  sb_init(&msg);
  /* Laya checks the four component prefixes first. */
  static const char *const prefixes[] = {"encoder.", "type_emb.", "scorer.", "act_head."};
  for (int p = 0; p < 4 && !rc; p++) {
    bool any = false;
    for (int i = 0; i < st->n_tensors && !any; i++)
      any = strncmp(st->tensors[i].name, prefixes[p], strlen(prefixes[p])) == 0;
    if (!any)
      rc = laya_err(err, LAYA_ERR_NOT_FOUND, NULL,
                    "%s: checkpoint is missing '%s' parameters; expected a Laya decision model with "
                    "an encoder and decision heads",
                    st->path, prefixes[p]);
  }
  /* Shapes, then missing names, then names the model does not have (strict load). */
  int n_bad = 0, n_missing = 0, n_extra = 0;
  for (int i = 0; i < l.n && !rc; i++) {
    const tensor *t = st_find(st, l.e[i].name);
    if (!t) continue;
    bool same = t->ndim == l.e[i].ndim;
    for (int k = 0; same && k < t->ndim; k++) same = t->shape[k] == l.e[i].shape[k];
    if (same) {
      *l.e[i].slot = t;
      continue;
    }
    if (n_bad < 5) {
      sb_printf(&msg, "%stensor '%s' has shape ", n_bad ? "; " : "", l.e[i].name);
      shape_text(&msg, t->ndim, t->shape);
      sb_puts(&msg, ", expected ");
      shape_text(&msg, l.e[i].ndim, l.e[i].shape);
    }
    n_bad++;
  }
  if (!rc && n_bad) {
    if (n_bad > 5) sb_printf(&msg, "; and %d more mismatched tensors", n_bad - 5);
    rc = laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: %s", st->path, sb_cstr(&msg));
  }
  for (int i = 0; i < l.n && !rc; i++) {
    if (st_find(st, l.e[i].name)) continue;
    if (n_missing < 5) sb_printf(&msg, "%s'%s'", n_missing ? ", " : "", l.e[i].name);
    n_missing++;
  }
  if (!rc && n_missing) {
    strbuf m2;
    sb_init(&m2);
    sb_printf(&m2, "%s: missing %d tensor%s: %s%s", st->path, n_missing, n_missing > 1 ? "s" : "",
              sb_cstr(&msg), n_missing > 5 ? ", ..." : "");
    rc = laya_err(err, LAYA_ERR_NOT_FOUND, NULL, "%s", sb_cstr(&m2));
    sb_free(&m2);
  }
  sb_reset(&msg);
  for (int i = 0; i < st->n_tensors && !rc; i++) {
    bool known = false;
    for (int k = 0; k < l.n && !known; k++) known = strcmp(l.e[k].name, st->tensors[i].name) == 0;
    if (known) continue;
    if (n_extra < 5) sb_printf(&msg, "%s'%s'", n_extra ? ", " : "", st->tensors[i].name);
    n_extra++;
  }
  if (!rc && n_extra)
    rc = laya_err(err, LAYA_ERR_FORMAT, NULL,
                  "%s: %d unexpected tensor%s that a Laya decision model with this config does "
                  "not have: %s%s",
                  st->path, n_extra, n_extra > 1 ? "s" : "", sb_cstr(&msg), n_extra > 5 ? ", ..." : "");
  sb_free(&msg);
  free(l.e);
  if (rc) weights_free(w);
  return rc;
}

