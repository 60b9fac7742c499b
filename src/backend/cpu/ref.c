/*
 * ref.c: the reference backend ("cpu-ref"): Laya's DecisionModel forward pass in plain fp32 C.
 *
 * This is the oracle every fast path is tested against, so it is written straight-line, in the
 * order of the PyTorch module (laya/common.py DecisionModel over HF ModernBertModel), one
 * operation at a time over the whole packed batch. Rows are back to back without padding; each
 * row's positions start at 0 and attention never crosses a row boundary, so a row's result is
 * the same whether it runs alone or packed with others (bit for bit: no reduction here depends on
 * the batch).
 *
 * Weights are widened to fp32 once at create; F32 tensors are used in place. The token embedding
 * table stays as it is in the checkpoint and only the rows a batch uses are widened, since the
 * multilingual table alone would be ~800 MB in fp32.
 *
 * The matmuls (split by output-column panels) and the attention (split by (row, head)) run on a
 * thread pool. Every output element is still computed by the same single-threaded code, so the
 * results are bit-identical for any thread count.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/options.h"
#include "backend/cpu/ref_ops.h"
#include "core/threadpool.h"

typedef struct ref_enc_layer {
  const float *attn_norm; /* NULL on layer 0 (Identity) */
  const float *wqkv, *wo, *mlp_norm, *wi, *wo_mlp;
} ref_enc_layer;

typedef struct ref_head_layer {
  const float *norm1_w, *norm1_b, *in_proj_w, *in_proj_b, *out_proj_w, *out_proj_b;
  const float *norm2_w, *norm2_b, *linear1_w, *linear1_b, *linear2_w, *linear2_b;
} ref_head_layer;

typedef struct ref_model {
  encoder_config enc;
  int head_layers, head_heads, n_act, act_hidden;
  const tensor *tok_embeddings;
  const float *emb_norm, *final_norm, *type_emb;
  ref_enc_layer *layers;
  ref_head_layer *head;
  const float *scorer_norm_w, *scorer_norm_b, *scorer1_w, *scorer1_b, *scorer2_w, *scorer2_b;
  const float *act1_w, *act1_b, *act2_w, *act2_b;
  float **owned; /* fp32 copies made at create */
  int n_owned, cap_owned;
  threadpool *pool;
  int n_threads;
} ref_model;

struct backend_worker {
  size_t cap; /* floats in buf */
  float *buf;
};

/* PyTorch's nn.LayerNorm default, used by the decision head and the scorer. */
static const float HEAD_LN_EPS = 1e-5f;

/* ---- create ---------------------------------------------------------------------------------- */

static void ref_model_free(ref_model *m) {
  if (!m) return;
  threadpool_destroy(m->pool);
  for (int i = 0; i < m->n_owned; i++) free(m->owned[i]);
  free(m->owned);
  free(m->layers);
  free(m->head);
  free(m);
}

/* The tensor as fp32 with exactly `numel` elements: the mapping itself when it already is F32
 * (and aligned), otherwise a widened copy owned by the model. */
static const float *f32_of(ref_model *m, const tensor *t, int64_t numel, const char *what,
                           laya_error *err) {
  if (!t || !t->data) {
    laya_err(err, LAYA_ERR_NOT_FOUND, NULL, "cpu-ref backend: tensor %s is missing", what);
    return NULL;
  }
  if (t->numel != numel) {
    laya_err(err, LAYA_ERR_FORMAT, NULL,
             "cpu-ref backend: tensor %s has %lld elements, expected %lld", t->name ? t->name : what,
             (long long)t->numel, (long long)numel);
    return NULL;
  }
  if (t->dtype == DT_F32 && ((uintptr_t)t->data % sizeof(float)) == 0) return (const float *)t->data;
  if (m->n_owned == m->cap_owned) {
    int cap = m->cap_owned ? 2 * m->cap_owned : 64;
    float **o = realloc(m->owned, (size_t)cap * sizeof *o);
    if (!o) {
      laya_err(err, LAYA_ERR_NOMEM, NULL, "cpu-ref backend: out of memory");
      return NULL;
    }
    m->owned = o;
    m->cap_owned = cap;
  }
  float *f = malloc((size_t)numel * sizeof(float));
  if (!f) {
    laya_err(err, LAYA_ERR_NOMEM, NULL, "cpu-ref backend: out of memory converting %s (%lld floats)",
             what, (long long)numel);
    return NULL;
  }
  tensor_to_f32(t, 0, numel, f);
  m->owned[m->n_owned++] = f;
  return f;
}

static int check_config(const model_weights *w, laya_error *err) {
  const encoder_config *c = &w->enc;
  const char *bad = NULL;
  if (c->hidden <= 0) bad = "hidden_size must be positive";
  else if (c->n_layers < 0) bad = "num_hidden_layers must not be negative";
  else if (c->n_heads <= 0 || c->hidden % c->n_heads != 0) bad = "num_attention_heads must divide hidden_size";
  else if (c->head_dim != c->hidden / c->n_heads || c->head_dim % 2 != 0) bad = "head_dim must be hidden_size / num_attention_heads and even";
  else if (c->intermediate <= 0) bad = "intermediate_size must be positive";
  else if (c->vocab <= 0) bad = "vocab_size must be positive";
  else if (!c->layer_pattern && c->global_every <= 0) bad = "global_attn_every_n_layers must be positive";
  else if (c->local_window < 0) bad = "local_attention must not be negative";
  else if (!(c->global_theta > 0) || !(c->local_theta > 0)) bad = "rope thetas must be positive";
  else if (!(c->norm_eps > 0)) bad = "norm_eps must be positive";
  else if (w->head_layers < 0) bad = "head_layers must not be negative";
  else if (w->head_heads <= 0 || c->hidden % w->head_heads != 0) bad = "decision-head heads must divide hidden_size";
  else if (w->n_act <= 0) bad = "n_act must be positive";
  if (bad) return laya_err(err, LAYA_ERR_CONFIG, NULL, "cpu-ref backend: %s", bad);
  return 0;
}

static ref_model *ref_model_create(const model_weights *w, laya_error *err) {
  if (check_config(w, err)) return NULL;
  ref_model *m = calloc(1, sizeof *m);
  if (!m) {
    laya_err(err, LAYA_ERR_NOMEM, NULL, "cpu-ref backend: out of memory");
    return NULL;
  }
  const encoder_config *c = &w->enc;
  int64_t d = c->hidden, I = c->intermediate;
  m->enc = *c;
  m->head_layers = w->head_layers;
  m->head_heads = w->head_heads;
  m->n_act = w->n_act;
  m->layers = calloc(c->n_layers ? (size_t)c->n_layers : 1, sizeof *m->layers);
  m->head = calloc(w->head_layers ? (size_t)w->head_layers : 1, sizeof *m->head);
  if (!m->layers || !m->head) {
    laya_err(err, LAYA_ERR_NOMEM, NULL, "cpu-ref backend: out of memory");
    goto fail;
  }
  if (!w->tok_embeddings || !w->tok_embeddings->data) {
    laya_err(err, LAYA_ERR_NOT_FOUND, NULL, "cpu-ref backend: tensor tok_embeddings is missing");
    goto fail;
  }
  if (w->tok_embeddings->numel != (int64_t)c->vocab * d) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "cpu-ref backend: tok_embeddings has %lld elements, expected %lld",
             (long long)w->tok_embeddings->numel, (long long)((int64_t)c->vocab * d));
    goto fail;
  }
  m->tok_embeddings = w->tok_embeddings;

#define F32(dst, t, n, what)                      \
  do {                                            \
    if (!((dst) = f32_of(m, (t), (n), (what), err))) goto fail; \
  } while (0)

  F32(m->emb_norm, w->emb_norm, d, "embeddings.norm.weight");
  for (int i = 0; i < c->n_layers; i++) {
    const enc_layer_weights *lw = &w->layers[i];
    ref_enc_layer *l = &m->layers[i];
    if (i > 0) F32(l->attn_norm, lw->attn_norm, d, "attn_norm.weight");
    F32(l->wqkv, lw->wqkv, 3 * d * d, "attn.Wqkv.weight");
    F32(l->wo, lw->wo, d * d, "attn.Wo.weight");
    F32(l->mlp_norm, lw->mlp_norm, d, "mlp_norm.weight");
    F32(l->wi, lw->wi, 2 * I * d, "mlp.Wi.weight");
    F32(l->wo_mlp, lw->wo_mlp, d * I, "mlp.Wo.weight");
  }
  F32(m->final_norm, w->final_norm, d, "final_norm.weight");
  F32(m->type_emb, w->type_emb, 3 * d, "type_emb.weight");
  for (int j = 0; j < w->head_layers; j++) {
    const head_layer_weights *hw = &w->head[j];
    ref_head_layer *h = &m->head[j];
    F32(h->norm1_w, hw->norm1_w, d, "head norm1.weight");
    F32(h->norm1_b, hw->norm1_b, d, "head norm1.bias");
    F32(h->in_proj_w, hw->in_proj_w, 3 * d * d, "head self_attn.in_proj_weight");
    F32(h->in_proj_b, hw->in_proj_b, 3 * d, "head self_attn.in_proj_bias");
    F32(h->out_proj_w, hw->out_proj_w, d * d, "head self_attn.out_proj.weight");
    F32(h->out_proj_b, hw->out_proj_b, d, "head self_attn.out_proj.bias");
    F32(h->norm2_w, hw->norm2_w, d, "head norm2.weight");
    F32(h->norm2_b, hw->norm2_b, d, "head norm2.bias");
    F32(h->linear1_w, hw->linear1_w, 4 * d * d, "head linear1.weight");
    F32(h->linear1_b, hw->linear1_b, 4 * d, "head linear1.bias");
    F32(h->linear2_w, hw->linear2_w, d * 4 * d, "head linear2.weight");
    F32(h->linear2_b, hw->linear2_b, d, "head linear2.bias");
  }
  F32(m->scorer_norm_w, w->scorer_norm_w, d, "scorer.0.weight");
  F32(m->scorer_norm_b, w->scorer_norm_b, d, "scorer.0.bias");
  F32(m->scorer1_w, w->scorer1_w, d * d, "scorer.1.weight");
  F32(m->scorer1_b, w->scorer1_b, d, "scorer.1.bias");
  F32(m->scorer2_w, w->scorer2_w, d, "scorer.3.weight");
  F32(m->scorer2_b, w->scorer2_b, 1, "scorer.3.bias");
  /* act_head.0 is [hidden, d + 4]; Laya uses 256, read it from the tensor. */
  if (!w->act1_w || w->act1_w->ndim != 2 || w->act1_w->shape[1] != d + 4 || w->act1_w->shape[0] <= 0) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "cpu-ref backend: act_head.0.weight must be [hidden, %lld]",
             (long long)(d + 4));
    goto fail;
  }
  m->act_hidden = (int)w->act1_w->shape[0];
  int64_t ah = m->act_hidden;
  F32(m->act1_w, w->act1_w, ah * (d + 4), "act_head.0.weight");
  F32(m->act1_b, w->act1_b, ah, "act_head.0.bias");
  F32(m->act2_w, w->act2_w, (int64_t)w->n_act * ah, "act_head.2.weight");
  F32(m->act2_b, w->act2_b, w->n_act, "act_head.2.bias");
#undef F32
  return m;
fail:
  ref_model_free(m);
  return NULL;
}

/* ---- scratch --------------------------------------------------------------------------------- */

/* Per-forward scratch, carved out of the worker's single buffer. */
typedef struct ref_scratch {
  float *x;      /* [T][d] residual stream */
  float *a;      /* [T][d] normalised input of the next matmul */
  float *qkv;    /* [T][3d] */
  float *att;    /* [T][d] attention output */
  float *ffn;    /* [T][max(2I, 4d)] MLP / FFN hidden */
  float *scores; /* [n_threads][scores_stride] attention scratch */
  size_t scores_stride;
  float *rope_cos_g, *rope_sin_g, *rope_cos_l, *rope_sin_l; /* [max_len][head_dim / 2] */
  float *panel;  /* [n_threads][panel_stride] ref_matmul scratch */
  size_t panel_stride;
  int max_len;
  float *mk;     /* [M][d] gathered marker states, then scorer hidden */
  float *mk2;    /* [M][d] */
  float *act_in; /* [d + 4] */
  float *act_h;  /* [act_hidden] */
} ref_scratch;

static size_t carve(ref_scratch *s, float *base, const ref_model *m, int T, int max_len, int M) {
  size_t d = (size_t)m->enc.hidden, I = (size_t)m->enc.intermediate;
  size_t ffn = 2 * I > 4 * d ? 2 * I : 4 * d;
  size_t half = (size_t)m->enc.head_dim / 2;
  int kmax = (int)(I > 4 * d ? I : 4 * d);
  if (kmax < m->act_hidden) kmax = m->act_hidden;
  size_t off = 0, nt = (size_t)m->n_threads;
  s->panel_stride = (ref_matmul_panel_floats(kmax + 4) + 15) & ~(size_t)15;
  s->max_len = max_len;
  int hd = m->enc.head_dim > m->enc.hidden / m->head_heads ? m->enc.head_dim : m->enc.hidden / m->head_heads;
  s->scores_stride = (ref_attention_scratch_floats(max_len, hd) + 15) & ~(size_t)15;
#define TAKE(field, n)                      \
  do {                                      \
    s->field = base ? base + off : NULL;    \
    off += ((size_t)(n) + 15) & ~(size_t)15; \
  } while (0)
  TAKE(x, (size_t)T * d);
  TAKE(a, (size_t)T * d);
  TAKE(qkv, (size_t)T * 3 * d);
  TAKE(att, (size_t)T * d);
  TAKE(ffn, (size_t)T * ffn);
  TAKE(scores, nt * s->scores_stride);
  TAKE(rope_cos_g, (size_t)max_len * half);
  TAKE(rope_sin_g, (size_t)max_len * half);
  TAKE(rope_cos_l, (size_t)max_len * half);
  TAKE(rope_sin_l, (size_t)max_len * half);
  TAKE(panel, nt * s->panel_stride);
  TAKE(mk, (size_t)M * d);
  TAKE(mk2, (size_t)M * d);
  TAKE(act_in, d + 4);
  TAKE(act_h, (size_t)m->act_hidden);
#undef TAKE
  return off;
}

static backend_worker *ref_worker_create(backend *b, laya_error *err) {
  (void)b;
  backend_worker *w = calloc(1, sizeof *w);
  if (!w) laya_err(err, LAYA_ERR_NOMEM, NULL, "cpu-ref backend: out of memory");
  return w;
}

static void ref_worker_destroy(backend *b, backend_worker *w) {
  (void)b;
  if (!w) return;
  free(w->buf);
  free(w);
}

/* ---- forward --------------------------------------------------------------------------------- */

static int check_batch(const ref_model *m, const packed_batch *bt, int *max_len, laya_error *err) {
  return packed_batch_check(bt, m->enc.vocab, "cpu-ref backend", max_len, err);
}

/* ---- parallel pieces (each output element computed exactly as single-threaded) ----------------- */

typedef struct mm_job {
  float *y;
  const float *x, *w, *b;
  int ldy, ldx, T, N, K, accumulate;
  const ref_scratch *s;
} mm_job;

static void mm_panels(void *arg, int begin, int end, int thread) {
  const mm_job *j = arg;
  int n0 = begin * REF_MATMUL_NB, n1 = end * REF_MATMUL_NB < j->N ? end * REF_MATMUL_NB : j->N;
  ref_matmul(j->y + n0, j->ldy, j->x, j->ldx, j->w + (size_t)n0 * j->K, j->b ? j->b + n0 : NULL, j->T,
             n1 - n0, j->K, j->accumulate, j->s->panel + (size_t)thread * j->s->panel_stride);
}

/* ref_matmul over the pool: y[T][N] (+)= x[T][K] w[N][K]^T (+ b) */
static void mm(const ref_model *m, const ref_scratch *s, float *y, int ldy, const float *x, int ldx,
               const float *w, const float *b, int T, int N, int K, int accumulate) {
  mm_job j = {y, x, w, b, ldy, ldx, T, N, K, accumulate, s};
  parallel_for(m->pool, (N + REF_MATMUL_NB - 1) / REF_MATMUL_NB, mm_panels, &j);
}

typedef struct attn_job {
  const packed_batch *bt;
  float *out;
  const float *qkv;
  int d, n_heads, head_dim, window;
  const ref_scratch *s;
} attn_job;

static void attn_tasks(void *arg, int begin, int end, int thread) {
  const attn_job *j = arg;
  for (int task = begin; task < end; task++) {
    int r = task / j->n_heads, h = task % j->n_heads;
    int st = j->bt->row_start[r], len = j->bt->row_start[r + 1] - st;
    ref_attention_heads(j->out + (size_t)st * j->d, j->d, j->qkv + (size_t)st * 3 * j->d, 3 * j->d, len,
                        j->n_heads, j->head_dim, h, h + 1, j->window,
                        j->s->scores + (size_t)thread * j->s->scores_stride);
  }
}

/* Attention of every row (never across rows), over the pool by (row, head). */
static void attention_rows(const ref_model *m, const ref_scratch *s, const packed_batch *bt, float *out,
                           int d, const float *qkv, int n_heads, int head_dim, int window) {
  attn_job j = {bt, out, qkv, d, n_heads, head_dim, window, s};
  parallel_for(m->pool, bt->n_rows * n_heads, attn_tasks, &j);
}

typedef struct geglu_job {
  float *ffn;
  int I;
  enc_act act;
} geglu_job;

/* act(input) * gate, written over the input half of each token's [input | gate] */
static void geglu_tokens(void *arg, int begin, int end, int thread) {
  (void)thread;
  const geglu_job *j = arg;
  for (int t = begin; t < end; t++) {
    float *u = j->ffn + (size_t)t * 2 * j->I;
    for (int i = 0; i < j->I; i++) u[i] = ref_act(j->act, u[i]) * u[j->I + i];
  }
}

/* RoPE on the Q and K heads of every token of the batch, with positions restarting per row. */
static void apply_rope(const ref_model *m, const packed_batch *bt, float *qkv, const float *cos_t,
                       const float *sin_t) {
  int d = m->enc.hidden, H = m->enc.n_heads, hd = m->enc.head_dim, half = hd / 2;
  for (int r = 0; r < bt->n_rows; r++) {
    for (int t = bt->row_start[r]; t < bt->row_start[r + 1]; t++) {
      size_t pos = (size_t)(t - bt->row_start[r]);
      float *row = qkv + (size_t)t * 3 * d;
      for (int h = 0; h < H; h++) {
        ref_rope(row + h * hd, cos_t + pos * half, sin_t + pos * half, hd);         /* q */
        ref_rope(row + d + h * hd, cos_t + pos * half, sin_t + pos * half, hd);     /* k */
      }
    }
  }
}

static void encoder(const ref_model *m, const packed_batch *bt, const ref_scratch *s) {
  const encoder_config *c = &m->enc;
  int T = bt->n_tokens, d = c->hidden, I = c->intermediate;
  float eps = (float)c->norm_eps;
  float *x = s->x, *a = s->a;

  /* embeddings: LayerNorm(tok_embeddings[ids]) */
  for (int t = 0; t < T; t++) {
    float *xt = x + (size_t)t * d;
    tensor_to_f32(m->tok_embeddings, (int64_t)bt->tokens[t] * d, d, xt);
    ref_layernorm(xt, xt, m->emb_norm, NULL, d, eps);
  }

  for (int l = 0; l < c->n_layers; l++) {
    const ref_enc_layer *L = &m->layers[l];
    int global = enc_layer_global(c, l);

    /* attention block: x = x + Wo(attn(rope(Wqkv(attn_norm(x))))) */
    const float *in = x;
    if (L->attn_norm) {
      for (int t = 0; t < T; t++) ref_layernorm(a + (size_t)t * d, x + (size_t)t * d, L->attn_norm, NULL, d, eps);
      in = a;
    }
    mm(m, s, s->qkv, 3 * d, in, d, L->wqkv, NULL, T, 3 * d, d, 0);
    if (global) apply_rope(m, bt, s->qkv, s->rope_cos_g, s->rope_sin_g);
    else apply_rope(m, bt, s->qkv, s->rope_cos_l, s->rope_sin_l);
    attention_rows(m, s, bt, s->att, d, s->qkv, c->n_heads, c->head_dim, global ? -1 : c->local_window / 2);
    mm(m, s, x, d, s->att, d, L->wo, NULL, T, d, d, 1);

    /* MLP block: x = x + Wo(act(input) * gate), [input | gate] = Wi(mlp_norm(x)) (ModernBertMLP) */
    for (int t = 0; t < T; t++) ref_layernorm(a + (size_t)t * d, x + (size_t)t * d, L->mlp_norm, NULL, d, eps);
    mm(m, s, s->ffn, 2 * I, a, d, L->wi, NULL, T, 2 * I, d, 0);
    geglu_job gj = {s->ffn, I, c->act};
    parallel_for(m->pool, T, geglu_tokens, &gj);
    mm(m, s, x, d, s->ffn, 2 * I, L->wo_mlp, NULL, T, d, I, 1);
  }

  for (int t = 0; t < T; t++) ref_layernorm(x + (size_t)t * d, x + (size_t)t * d, m->final_norm, NULL, d, eps);
}

/* nn.TransformerEncoderLayer(norm_first=True, activation=relu), full attention within the row. */
static void head_layer(const ref_model *m, const ref_head_layer *H, const packed_batch *bt, const ref_scratch *s) {
  int T = bt->n_tokens, d = m->enc.hidden, nh = m->head_heads;
  float *x = s->x, *a = s->a;
  for (int t = 0; t < T; t++) ref_layernorm(a + (size_t)t * d, x + (size_t)t * d, H->norm1_w, H->norm1_b, d, HEAD_LN_EPS);
  mm(m, s, s->qkv, 3 * d, a, d, H->in_proj_w, H->in_proj_b, T, 3 * d, d, 0);
  attention_rows(m, s, bt, s->att, d, s->qkv, nh, d / nh, -1);
  mm(m, s, x, d, s->att, d, H->out_proj_w, H->out_proj_b, T, d, d, 1);

  for (int t = 0; t < T; t++) ref_layernorm(a + (size_t)t * d, x + (size_t)t * d, H->norm2_w, H->norm2_b, d, HEAD_LN_EPS);
  mm(m, s, s->ffn, 4 * d, a, d, H->linear1_w, H->linear1_b, T, 4 * d, d, 0);
  for (size_t i = 0; i < (size_t)T * 4 * d; i++)
    if (s->ffn[i] < 0.0f) s->ffn[i] = 0.0f; /* relu */
  mm(m, s, x, d, s->ffn, 4 * d, H->linear2_w, H->linear2_b, T, d, 4 * d, 1);
}

static int ref_forward(backend *b, backend_worker *w, const packed_batch *bt, float *logits,
                       float *act_logits, laya_error *err) {
  const ref_model *m = b->impl;
  int max_len = 1;
  if (bt->n_rows == 0) return 0;
  if (check_batch(m, bt, &max_len, err)) return err ? err->code : LAYA_ERR_VALUE;
  int T = bt->n_tokens, M = bt->marker_start[bt->n_rows], d = m->enc.hidden;

  ref_scratch s;
  size_t need = carve(&s, NULL, m, T, max_len, M);
  if (need > w->cap) {
    float *nb = malloc(need * sizeof(float));
    if (!nb) return laya_err(err, LAYA_ERR_NOMEM, NULL, "cpu-ref backend: out of memory for %d tokens", T);
    free(w->buf);
    w->buf = nb;
    w->cap = need;
  }
  carve(&s, w->buf, m, T, max_len, M);
  ref_rope_tables(s.rope_cos_g, s.rope_sin_g, max_len, m->enc.head_dim, m->enc.global_theta);
  ref_rope_tables(s.rope_cos_l, s.rope_sin_l, max_len, m->enc.head_dim, m->enc.local_theta);

  encoder(m, bt, &s);

  /* question-type embedding, added at every position of the row */
  for (int r = 0; r < bt->n_rows; r++) {
    const float *te = m->type_emb + (size_t)bt->qtype[r] * d;
    for (int t = bt->row_start[r]; t < bt->row_start[r + 1]; t++)
      for (int i = 0; i < d; i++) s.x[(size_t)t * d + i] += te[i];
  }

  for (int j = 0; j < m->head_layers; j++) head_layer(m, &m->head[j], bt, &s);

  /* scorer on the option markers: Linear(GELU(Linear(LayerNorm(h)))) -> one logit each */
  for (int r = 0; r < bt->n_rows; r++)
    for (int i = bt->marker_start[r]; i < bt->marker_start[r + 1]; i++)
      ref_layernorm(s.mk + (size_t)i * d, s.x + (size_t)(bt->row_start[r] + bt->markers[i]) * d,
                    m->scorer_norm_w, m->scorer_norm_b, d, HEAD_LN_EPS);
  mm(m, &s, s.mk2, d, s.mk, d, m->scorer1_w, m->scorer1_b, M, d, d, 0);
  for (size_t i = 0; i < (size_t)M * d; i++) s.mk2[i] = ref_gelu(s.mk2[i]);
  ref_matmul(logits, 1, s.mk2, d, m->scorer2_w, m->scorer2_b, M, 1, d, 0, s.panel);

  /* act head on [CLS state after the head ; confidence features] */
  for (int r = 0; r < bt->n_rows; r++) {
    memcpy(s.act_in, s.x + (size_t)bt->row_start[r] * d, (size_t)d * sizeof(float));
    ref_confidence_features(logits + bt->marker_start[r], bt->marker_start[r + 1] - bt->marker_start[r], s.act_in + d);
    ref_matmul(s.act_h, m->act_hidden, s.act_in, d + 4, m->act1_w, m->act1_b, 1, m->act_hidden, d + 4, 0, s.panel);
    for (int i = 0; i < m->act_hidden; i++) s.act_h[i] = ref_gelu(s.act_h[i]);
    ref_matmul(act_logits + (size_t)r * m->n_act, m->n_act, s.act_h, m->act_hidden, m->act2_w, m->act2_b, 1,
               m->n_act, m->act_hidden, 0, s.panel);
  }
  return 0;
}

/* The encoder alone, mean-pooled per row (backend.embed). */
static int ref_embed(backend *b, backend_worker *w, const packed_batch *bt, float *pooled, laya_error *err) {
  const ref_model *m = b->impl;
  int max_len = 1;
  if (bt->n_rows == 0) return 0;
  if (check_batch(m, bt, &max_len, err)) return err ? err->code : LAYA_ERR_VALUE;
  int T = bt->n_tokens, d = m->enc.hidden;
  ref_scratch s;
  size_t need = carve(&s, NULL, m, T, max_len, 0);
  if (need > w->cap) {
    float *nb = malloc(need * sizeof(float));
    if (!nb) return laya_err(err, LAYA_ERR_NOMEM, NULL, "cpu-ref backend: out of memory for %d tokens", T);
    free(w->buf);
    w->buf = nb;
    w->cap = need;
  }
  carve(&s, w->buf, m, T, max_len, 0);
  ref_rope_tables(s.rope_cos_g, s.rope_sin_g, max_len, m->enc.head_dim, m->enc.global_theta);
  ref_rope_tables(s.rope_cos_l, s.rope_sin_l, max_len, m->enc.head_dim, m->enc.local_theta);
  encoder(m, bt, &s);
  backend_mean_rows(bt, s.x, d, pooled);
  return 0;
}

static void ref_destroy(backend *b) {
  if (!b) return;
  ref_model_free(b->impl);
  free(b);
}

backend *backend_cpu_ref_create(const model_weights *w, const backend_options *o, laya_error *err) {
  /* always fp32 whatever o->precision says: this is the oracle */
  ref_model *m = ref_model_create(w, err);
  if (!m) return NULL;
  /* the caller's count, else LAYA_THREADS as laya_open read it, else the pool's default */
  m->pool = threadpool_create(o && o->threads > 0 ? o->threads : o && o->env ? (int)o->env->threads : 0, err);
  if (!m->pool) {
    ref_model_free(m);
    return NULL;
  }
  m->n_threads = threadpool_size(m->pool);
  backend *b = calloc(1, sizeof *b);
  if (!b) {
    ref_model_free(m);
    laya_err(err, LAYA_ERR_NOMEM, NULL, "cpu-ref backend: out of memory");
    return NULL;
  }
  b->name = "cpu-ref";
  b->kind = BACKEND_CPU_REF;
  b->impl = m;
  b->worker_create = ref_worker_create;
  b->worker_destroy = ref_worker_destroy;
  b->forward = ref_forward;
  b->destroy = ref_destroy;
  b->embed = ref_embed;
  return b;
}
