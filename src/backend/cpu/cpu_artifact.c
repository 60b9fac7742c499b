/*
 * cpu_artifact.c: the "cpu" backend's side of a container of packed weights (a `laya convert`
 * artifact or a pack cache entry, model/artifact.h). The container stores named arrays and the
 * model's facts and knows no layout; this file owns the layout's part of it:
 *   - backend_cpu_arrays: the named arrays a writer stores (the model's registered arrays, cpu.c);
 *   - cpu_packed_check / cpu_packed_array: a container read back (layout, precision, each array's
 *     size), for backend_cpu_create;
 *   - backend_cpu_dense_weights: the panels unpacked to row-major tensors for the CUDA backend.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_model.h"
#include "backend/cpu/kernels.h"

const char *backend_cpu_layout(void) { return CPU_PACK_LAYOUT; }

int backend_cpu_arrays(const backend *b, backend_arrays *out) {
  const cpu_model *m = backend_cpu_model(b);
  if (!m) return -1;
  out->a = m->blobs;
  out->n = m->n_blobs;
  out->layout = CPU_PACK_LAYOUT;
  out->precision = m->fmt == WF_BF16 ? PREC_BF16 : m->fmt == WF_I8 ? PREC_INT8 : PREC_FP32;
  out->act_hidden = m->act_hidden;
  return 0;
}

int cpu_packed_check(const struct artifact *a, const backend_options *o, backend_precision *prec, laya_error *err) {
  const char *lay = artifact_layout(a), *pn = artifact_precision_name(a);
  if (!lay || strcmp(lay, CPU_PACK_LAYOUT) != 0)
    return laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact kernel layout %s, this build reads %s (convert again)",
                    artifact_path(a), lay ? lay : "(none)", CPU_PACK_LAYOUT);
  backend_precision ap;
  if (pn && !strcmp(pn, "fp32")) ap = PREC_FP32;
  else if (pn && !strcmp(pn, "bf16")) ap = PREC_BF16;
  else if (pn && !strcmp(pn, "int8")) ap = PREC_INT8;
  else return laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact precision must be fp32, bf16 or int8", artifact_path(a));
  if (o && o->precision != ap)
    return laya_err(err, LAYA_ERR_UNSUPPORTED, NULL, "%s: the artifact holds %s weights; convert again for %s",
                    artifact_path(a), backend_precision_name(ap), backend_precision_name(o->precision));
  *prec = ap;
  return 0;
}

const void *cpu_packed_array(const struct artifact *a, const char *name, size_t bytes, laya_error *err) {
  size_t got = 0;
  const void *p = artifact_blob(a, name, &got);
  if (!p) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: packed array %s is missing", artifact_path(a), name);
    return NULL;
  }
  if (got != bytes) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: packed array %s has %zu bytes, expected %zu", artifact_path(a), name, got,
             bytes);
    return NULL;
  }
  return p;
}

/* ---- unpacking (backend_cpu_dense_weights) ------------------------------------------------------ */

typedef struct unpacker {
  const struct artifact *a;
  dense_weights *d;
  const char *who;
  laya_error *err;
  int failed;
} unpacker;

static tensor *new_tensor(unpacker *u) {
  dense_weights *d = u->d;
  if (d->n_t == d->cap_t) { /* tensors are referenced by pointer: the array is sized once */
    u->failed = laya_err(u->err, LAYA_ERR_INTERNAL, NULL, "%s: too many tensors unpacking %s", u->who,
                         artifact_path(u->a));
    return NULL;
  }
  tensor *t = &d->t[d->n_t++];
  memset(t, 0, sizeof *t);
  return t;
}

static int keep_buf(unpacker *u, void *p) {
  dense_weights *d = u->d;
  if (d->n_bufs == d->cap_bufs) {
    int cap = d->cap_bufs ? 2 * d->cap_bufs : 64;
    void **nb = realloc(d->bufs, sizeof *nb * (size_t)cap);
    if (!nb) return -1;
    d->bufs = nb;
    d->cap_bufs = cap;
  }
  d->bufs[d->n_bufs++] = p;
  return 0;
}

static const void *blob(unpacker *u, const char *name, size_t want) {
  size_t got = 0;
  const void *p = artifact_blob(u->a, name, &got);
  if (!p) {
    u->failed = laya_err(u->err, LAYA_ERR_FORMAT, NULL, "%s: %s: packed array %s is missing", u->who,
                         artifact_path(u->a), name);
    return NULL;
  }
  if (got != want) {
    u->failed = laya_err(u->err, LAYA_ERR_FORMAT, NULL, "%s: %s: packed array %s has %zu bytes, expected %zu",
                         u->who, artifact_path(u->a), name, got, want);
    return NULL;
  }
  return p;
}

/* An fp32 vector (or small [n0, n1] table when n1 > 0), in place in the mapping. */
static const tensor *vec(unpacker *u, const char *name, int64_t n0, int64_t n1) {
  if (u->failed) return NULL;
  int64_t n = n1 > 0 ? n0 * n1 : n0;
  const void *p = blob(u, name, (size_t)n * sizeof(float));
  tensor *t = p ? new_tensor(u) : NULL;
  if (!t) return NULL;
  t->dtype = DT_F32;
  t->ndim = n1 > 0 ? 2 : 1;
  t->shape[0] = n0;
  t->shape[1] = n1 > 0 ? n1 : 0;
  t->numel = n;
  t->data = p;
  return t;
}

/* A Linear weight [n, k] from its panels: "<name>.fmt" and "<name>.data" (kernels.h layout). */
static const tensor *linear(unpacker *u, const char *name, int n, int k, int geglu) {
  if (u->failed) return NULL;
  char nm[64];
  snprintf(nm, sizeof nm, "%s.fmt", name);
  const int32_t *f = blob(u, nm, sizeof(int32_t));
  if (!f) return NULL;
  if (*f == WF_I8) {
    u->failed = laya_err(u->err, LAYA_ERR_UNSUPPORTED, NULL,
                         "%s: %s holds int8 weights (matrix %s), which this backend cannot run; convert the "
                         "checkpoint with precision bf16 or fp32 for it, or open the checkpoint directory",
                         u->who, artifact_path(u->a), name);
    return NULL;
  }
  if (*f != WF_F32 && *f != WF_BF16) {
    u->failed = laya_err(u->err, LAYA_ERR_FORMAT, NULL, "%s: %s: bad format %d of %s", u->who, artifact_path(u->a),
                         (int)*f, name);
    return NULL;
  }
  const cpu_wfmt fmt = (cpu_wfmt)*f;
  const size_t es = fmt == WF_F32 ? 4 : 2;
  const int np = pack_panels(n, geglu), kp = pack_kpad(k);
  snprintf(nm, sizeof nm, "%s.data", name);
  const char *src = blob(u, nm, pack_data_bytes(fmt, n, k, geglu));
  if (!src) return NULL;
  char *dst = malloc((size_t)n * (size_t)k * es);
  if (!dst || keep_buf(u, dst)) {
    free(dst);
    u->failed = laya_err(u->err, LAYA_ERR_NOMEM, NULL, "%s: out of memory unpacking %s", u->who, name);
    return NULL;
  }
  const size_t panel = (size_t)kp * CPU_NR;
  for (int p = 0; p < np; p++)
    for (int c = 0; c < CPU_NR; c++) {
      int r = pack_col_row(n, geglu, p, c);
      if (r < 0) continue;
      char *row = dst + (size_t)r * (size_t)k * es;
      if (fmt == WF_F32) {
        const float *s = (const float *)src + (size_t)p * panel;
        for (int kk = 0; kk < k; kk++) ((float *)row)[kk] = s[(size_t)kk * CPU_NR + c];
      } else { /* [k/2][32][2] */
        const uint16_t *s = (const uint16_t *)src + (size_t)p * panel;
        for (int kk = 0; kk < k; kk++) ((uint16_t *)row)[kk] = s[(size_t)(kk >> 1) * CPU_NR * 2 + (size_t)c * 2 + (kk & 1)];
      }
    }
  tensor *t = new_tensor(u);
  if (!t) return NULL;
  t->dtype = fmt == WF_F32 ? DT_F32 : DT_BF16;
  t->ndim = 2;
  t->shape[0] = n;
  t->shape[1] = k;
  t->numel = (int64_t)n * k;
  t->data = dst;
  return t;
}

int backend_cpu_dense_weights(const model_weights *pw, dense_weights *out, const char *who, laya_error *err) {
  memset(out, 0, sizeof *out);
  const struct artifact *a = pw ? pw->packed : NULL;
  if (!a) return laya_err(err, LAYA_ERR_VALUE, NULL, "%s: no artifact to unpack", who);
  backend_precision prec;
  if (cpu_packed_check(a, NULL, &prec, err)) return err ? err->code : LAYA_ERR_FORMAT;
  const encoder_config *c = &pw->enc;
  const int d = c->hidden, I = c->intermediate, L = c->n_layers, H = pw->head_layers;
  const int act_hidden = artifact_act_hidden(a);
  if (d <= 0 || I <= 0 || L < 0 || H < 0 || act_hidden <= 0 || pw->n_act <= 0)
    return laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: %s: bad sizes in the artifact's config", who, artifact_path(a));
  model_weights *w = &out->w;
  w->enc = *c;
  w->head_layers = H;
  w->head_heads = pw->head_heads;
  w->n_act = pw->n_act;
  w->tok_embeddings = pw->tok_embeddings;
  out->cap_t = 16 + 6 * L + 12 * H;
  out->t = calloc((size_t)out->cap_t, sizeof *out->t);
  w->layers = calloc(L ? (size_t)L : 1, sizeof *w->layers);
  w->head = calloc(H ? (size_t)H : 1, sizeof *w->head);
  if (!out->t || !w->layers || !w->head) {
    backend_cpu_dense_free(out);
    return laya_err(err, LAYA_ERR_NOMEM, NULL, "%s: out of memory", who);
  }
  unpacker u = {a, out, who, err, 0};
  char nm[48];
  w->emb_norm = vec(&u, "emb_norm", d, 0);
  for (int i = 0; i < L; i++) {
    enc_layer_weights *l = &w->layers[i];
    if (i > 0) l->attn_norm = (snprintf(nm, sizeof nm, "enc.%d.attn_norm", i), vec(&u, nm, d, 0));
    l->mlp_norm = (snprintf(nm, sizeof nm, "enc.%d.mlp_norm", i), vec(&u, nm, d, 0));
    l->wqkv = (snprintf(nm, sizeof nm, "enc.%d.wqkv", i), linear(&u, nm, 3 * d, d, 0));
    l->wo = (snprintf(nm, sizeof nm, "enc.%d.wo", i), linear(&u, nm, d, d, 0));
    l->wi = (snprintf(nm, sizeof nm, "enc.%d.wi", i), linear(&u, nm, 2 * I, d, 1));
    l->wo_mlp = (snprintf(nm, sizeof nm, "enc.%d.wo_mlp", i), linear(&u, nm, d, I, 0));
  }
  w->final_norm = vec(&u, "final_norm", d, 0);
  w->type_emb = vec(&u, "type_emb", 3, d);
  for (int j = 0; j < H; j++) {
    head_layer_weights *h = &w->head[j];
#define HN(s) (snprintf(nm, sizeof nm, "head.%d.%s", j, s), nm)
    h->norm1_w = vec(&u, HN("norm1_w"), d, 0);
    h->norm1_b = vec(&u, HN("norm1_b"), d, 0);
    h->norm2_w = vec(&u, HN("norm2_w"), d, 0);
    h->norm2_b = vec(&u, HN("norm2_b"), d, 0);
    h->in_proj_w = linear(&u, HN("in_proj"), 3 * d, d, 0);
    h->in_proj_b = vec(&u, HN("in_proj.bias"), 3 * d, 0);
    h->out_proj_w = linear(&u, HN("out_proj"), d, d, 0);
    h->out_proj_b = vec(&u, HN("out_proj.bias"), d, 0);
    h->linear1_w = linear(&u, HN("linear1"), 4 * d, d, 0);
    h->linear1_b = vec(&u, HN("linear1.bias"), 4 * d, 0);
    h->linear2_w = linear(&u, HN("linear2"), d, 4 * d, 0);
    h->linear2_b = vec(&u, HN("linear2.bias"), d, 0);
#undef HN
  }
  w->scorer_norm_w = vec(&u, "scorer_norm_w", d, 0);
  w->scorer_norm_b = vec(&u, "scorer_norm_b", d, 0);
  w->scorer1_w = linear(&u, "scorer1", d, d, 0);
  w->scorer1_b = vec(&u, "scorer1.bias", d, 0);
  w->scorer2_w = vec(&u, "scorer2_w", 1, d);
  w->scorer2_b = vec(&u, "scorer2_b", 1, 0);
  w->act1_w = linear(&u, "act1", act_hidden, d + 4, 0);
  w->act1_b = vec(&u, "act1.bias", act_hidden, 0);
  w->act2_w = vec(&u, "act2_w", pw->n_act, act_hidden);
  w->act2_b = vec(&u, "act2_b", pw->n_act, 0);
  if (u.failed) {
    backend_cpu_dense_free(out);
    return err && err->code ? err->code : LAYA_ERR_FORMAT;
  }
  return 0;
}

void backend_cpu_dense_free(dense_weights *d) {
  if (!d) return;
  for (int i = 0; i < d->n_bufs; i++) free(d->bufs[i]);
  free(d->bufs);
  free(d->t);
  free(d->w.layers);
  free(d->w.head);
  memset(d, 0, sizeof *d);
}
