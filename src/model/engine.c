/* engine.c: Laya's predict_batch over the packed-batch backend. */
#include "model/engine.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "core/options.h"
#include "core/pystr.h"
#include "model/artifact.h"
#include "model/batch.h"
#include "model/result_json.h"
#include "model/typed.h"

const tokenizer *engine_tokenizer(const laya_model *m) { return m->ck.tok; }
const tokenizer_roles *engine_roles(const laya_model *m) { return &m->ck.roles; }
const agent_config *engine_config(const laya_model *m) { return &m->ck.cfg; }

int engine_max_len(const laya_model *m, const engine_call *c) {
  return c && c->has_max_len ? c->max_len : m->ck.cfg.max_len;
}
int engine_head_max_len(const laya_model *m, const engine_call *c) {
  return c && c->has_head_max_len ? c->head_max_len : m->ck.cfg.head_max_len;
}

int engine_encode_state(const laya_model *m, const json_value *state, ids_vec *out, laya_error *err) {
  strbuf scratch;
  sb_init(&scratch);
  int rc = encode_state(&m->st, state, out, &scratch, err);
  sb_free(&scratch);
  return rc;
}

int engine_state_room(const laya_model *m, const question *q, int max_len, int head_max_len,
                      int *room, laya_error *err) {
  arena a;
  arena_init(&a, 1 << 12);
  head_ids h;
  int rc = build_head(&m->st, q, head_max_len, &a, &h, err);
  if (!rc) {
    long r = (long)max_len - h.n_ids - 1;
    *room = r > 0 ? (int)r : 0;
  }
  arena_free(&a);
  return rc;
}

/* The request that ran out of device memory runs again on the CPU in fp32 (Laya's demotion), or,
 * for a `laya convert` artifact (which holds one precision), at the artifact's precision.
 * Rare by nature, so its worker is made and freed per call. */
static int forward_on_cpu(laya_model *m, const packed_batch *b, float *logits, float *act,
                          laya_error *err) {
  pthread_mutex_lock(&m->fallback_mu);
  if (!m->fallback) {
    backend_options bo = {m->ck.w.packed ? artifact_precision(m->ck.w.packed) : PREC_FP32, 0, 0, &m->env};
    m->fallback = backend_cpu_create(&m->ck.w, &bo, err);
  }
  backend *cpu = m->fallback;
  if (cpu) m->fallback_count++;
  pthread_mutex_unlock(&m->fallback_mu);
  if (!cpu) return err && err->code ? err->code : LAYA_ERR_NOMEM;
  laya_message("device out of memory during inference; running this request on the CPU");
  laya_err_clear(err);
  backend_worker *w = cpu->worker_create(cpu, err);
  if (!w) return err && err->code ? err->code : LAYA_ERR_NOMEM;
  int rc = cpu->forward(cpu, w, b, logits, act, err);
  cpu->worker_destroy(cpu, w);
  return rc;
}

long laya_cpu_fallback_count(laya_model *m) {
  if (!m) return 0;
  pthread_mutex_lock(&m->fallback_mu);
  long n = m->fallback_count;
  pthread_mutex_unlock(&m->fallback_mu);
  return n;
}

/* A worker from the model's pool, or a new one (made ready for the reserved shape like the others). */
static backend_worker *pool_take(laya_model *m, laya_error *err) {
  backend_worker *w = NULL;
  pthread_mutex_lock(&m->pool_mu);
  if (m->n_idle) w = m->idle[--m->n_idle];
  pthread_mutex_unlock(&m->pool_mu);
  if (w) return w;
  w = m->be->worker_create(m->be, err);
  if (w && m->reserved.n_tokens && m->be->worker_reserve && m->be->worker_reserve(m->be, w, &m->reserved, err)) {
    m->be->worker_destroy(m->be, w);
    w = NULL;
  }
  return w;
}

/* Back to the pool (destroyed if the pool cannot grow to hold it). */
static void pool_give(laya_model *m, backend_worker *w) {
  pthread_mutex_lock(&m->pool_mu);
  if (m->n_idle == m->cap_idle) {
    int cap = m->cap_idle ? m->cap_idle * 2 : 8;
    backend_worker **p = realloc(m->idle, sizeof *p * (size_t)cap);
    if (p) {
      m->idle = p;
      m->cap_idle = cap;
    }
  }
  if (m->n_idle < m->cap_idle) {
    m->idle[m->n_idle++] = w;
    w = NULL;
  }
  pthread_mutex_unlock(&m->pool_mu);
  if (w) m->be->worker_destroy(m->be, w);
}

backend_worker *engine_worker_take(laya_model *m, laya_error *err) { return pool_take(m, err); }
void engine_worker_give(laya_model *m, backend_worker *w) { pool_give(m, w); }

static int forward_pooled(laya_model *m, const packed_batch *b, float *logits, float *act, laya_error *err) {
  backend_worker *w = pool_take(m, err);
  if (!w) return err && err->code ? err->code : LAYA_ERR_NOMEM;
  int rc = m->be->forward(m->be, w, b, logits, act, err);
  if (rc && backend_error_is_device_oom(err)) rc = forward_on_cpu(m, b, logits, act, err);
  pool_give(m, w);
  return rc;
}

int engine_reserve(laya_model *m, const batch_shape *shape, int workers, laya_error *err) {
  if (!m->be->worker_reserve) {
    m->reserved = *shape;
    return 0;
  }
  backend_worker **ws = calloc((size_t)workers, sizeof *ws);
  if (!ws) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  int rc = 0, n = 0;
  while (n < workers && !rc) {
    if (!(ws[n] = pool_take(m, err))) {
      rc = err && err->code ? err->code : LAYA_ERR_NOMEM;
      break;
    }
    rc = m->be->worker_reserve(m->be, ws[n], shape, err);
    /* a reserve that grew the scratch dropped what was warmed for the old one */
    if (!rc && m->be->worker_warm) rc = m->be->worker_warm(m->be, ws[n], m->ck.cfg.max_len, err);
    n++;
  }
  if (!rc) m->reserved = *shape; /* workers made later are reserved in pool_take */
  for (int i = 0; i < n; i++) pool_give(m, ws[i]);
  free(ws);
  return rc;
}

int engine_warm(laya_model *m, laya_error *err) {
  /* LAYA_CUDA_WARMUP=0: no worker at open, as before the warm-up */
  if (!m->be->worker_warm || !m->be->worker_reserve || m->env.cuda_warmup == 0) return 0;
  backend_worker *w = m->be->worker_create(m->be, err);
  if (!w) return err && err->code ? err->code : LAYA_ERR_NOMEM;
  const int row = m->ck.cfg.max_len > 0 ? m->ck.cfg.max_len : 1;
  batch_shape s = {ENGINE_WARM_TOKENS > row ? ENGINE_WARM_TOKENS : row, ENGINE_WARM_ROWS, ENGINE_WARM_MARKERS, row};
  int rc = m->be->worker_reserve(m->be, w, &s, err);
  if (!rc) rc = m->be->worker_warm(m->be, w, row, err);
  if (rc) {
    m->be->worker_destroy(m->be, w);
    return rc;
  }
  pool_give(m, w);
  return 0;
}

size_t engine_scratch_bytes(laya_model *m) {
  size_t n = 0;
  pthread_mutex_lock(&m->pool_mu);
  for (int i = 0; m->be->worker_bytes && i < m->n_idle; i++) n += m->be->worker_bytes(m->be, m->idle[i]);
  pthread_mutex_unlock(&m->pool_mu);
  return n;
}

int engine_forward(laya_model *m, const packed_batch *b, float *logits, float *act, laya_error *err) {
  const batch_shape *cap = &m->reserved;
  if (!cap->n_tokens || b->n_rows <= 1 ||
      (b->n_tokens <= cap->n_tokens && b->n_rows <= cap->n_rows && b->marker_start[b->n_rows] <= cap->n_markers))
    return forward_pooled(m, b, logits, act, err);
  /* Larger than the reservation: consecutive groups of rows that fit it (a row that alone does
   * not fit runs alone, and grows the scratch: only rows past the reserved row length can). The
   * groups are cut by the offsets, which the engine packed itself: an invariant, asserted (the
   * backend checks each group it is given before touching it). A rare path: its two offset
   * arrays are its only allocation. */
#if LAYA_ASSERTS_ON
  int max_len;
  laya_error chk;
  LAYA_ASSERT(packed_batch_check(b, m->ck.w.enc.vocab, "engine", &max_len, &chk) == 0);
#endif
  const int n = cap->n_rows < b->n_rows ? cap->n_rows : b->n_rows;
  int32_t *rs = malloc(sizeof(int32_t) * (size_t)(n + 1)), *ms = malloc(sizeof(int32_t) * (size_t)(n + 1));
  int rc = rs && ms ? 0 : laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory splitting a pass of %d rows", b->n_rows);
  const int n_act = m->ck.w.n_act;
  for (int r0 = 0; r0 < b->n_rows && !rc;) {
    int r1 = r0 + 1;
    while (r1 < b->n_rows && r1 + 1 - r0 <= n && b->row_start[r1 + 1] - b->row_start[r0] <= cap->n_tokens &&
           b->marker_start[r1 + 1] - b->marker_start[r0] <= cap->n_markers)
      r1++;
    packed_batch part = pb_view_rows(b, r0, r1, rs, ms);
    rc = forward_pooled(m, &part, logits + b->marker_start[r0], act + (size_t)r0 * (size_t)n_act, err);
    r0 = r1;
  }
  free(rs);
  free(ms);
  return rc;
}

/* One encoded state: its ids and, per question, how its row is cut. */
typedef struct enc_state {
  ids_vec ids;
  row_plan *plan; /* [n_q] */
  int longest;    /* longest row: the sort key */
} enc_state;

/* One predict_batch call after validation: its questions, their heads, the decoding options,
 * and the per-state results as they are written. */
typedef struct call_ctx {
  laya_model *m;
  question *qs;
  int nq;
  head_ids *heads;
  int max_len;
  conf_gate gate;
  decode_opts dopt;
  const engine_call *call;
  state_result *results; /* per state */
  arena *out;            /* where the results are allocated */
  int n_act;
} call_ctx;

/* One call's share of a packed pass: g of its encoded states, es[idx[0..g)]. Results go to
 * cx->results[idx[s]], or, for a prepared job (job != NULL), the rows' logits and activations
 * are kept in the job and decoded by laya_job_result on the caller's thread. */
typedef struct pass_part {
  call_ctx *cx;
  enc_state *es;
  const int *idx;
  int g;
  laya_job *job;
} pass_part;

/* One state's result from its rows r0 .. r0+nq of the logits, allocated from a. */
static int decode_state(const call_ctx *cx, const enc_state *e, const float *logits, const float *act,
                        const int32_t *mstart, int r0, arena *a, state_result *out, laya_error *err) {
  memset(out, 0, sizeof *out);
  out->answers = arena_alloc(a, sizeof(answer) * (size_t)(cx->nq ? cx->nq : 1));
  if (!out->answers) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory writing results");
  out->n = cx->nq;
  out->full_usage = true;
  out->state_tokens = (long)e->ids.n;
  int r = r0;
  for (int j = 0; j < cx->nq; j++, r++) {
    answer *an = &out->answers[j];
    if (decode_answer(an, &cx->qs[j], logits + mstart[r], mstart[r + 1] - mstart[r], act + (long)r * cx->n_act,
                      cx->n_act, &cx->dopt, a))
      return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory writing results");
    const head_ids *h = &cx->heads[j];
    an->truncated = e->plan[j].dropped > 0;
    an->options_total = h->options;
    an->options_distinct = h->options_distinct;
    an->tokens_per_option = h->tokens_per_option;
    out->input_tokens += e->plan[j].len;
    if (e->plan[j].dropped > out->state_tokens_dropped) out->state_tokens_dropped = e->plan[j].dropped;
  }
  return 0;
}

/* Decode the results of one part's states from its rows' logits (rows r0.. of the pass). */
static int decode_part(const pass_part *p, const float *logits, const float *act, const int32_t *mstart,
                       int r0, laya_error *err) {
  call_ctx *cx = p->cx;
  for (int s = 0; s < p->g; s++) {
    int rc = decode_state(cx, &p->es[p->idx[s]], logits, act, mstart, r0 + s * cx->nq, cx->out,
                          &cx->results[p->idx[s]], err);
    if (rc) return rc;
  }
  return 0;
}

static void job_keep_rows(laya_job *job, const float *logits, const float *act, const int32_t *mstart,
                          int r0);

/* Pack the rows of every part (each with its own questions, budgets and decoding options) into
 * ONE padding-free batch, run it, and decode each part's answers. Rows are independent in the
 * packed forward pass, so a state's answers do not depend on what shares its pass. */
static int run_pass(laya_model *m, const pass_part *parts, int n_parts, laya_error *err) {
  long n_tok = 0, n_mark = 0;
  int rows = 0, n_act = m->ck.w.n_act;
  for (int p = 0; p < n_parts; p++) {
    const pass_part *pp = &parts[p];
    rows += pp->g * pp->cx->nq;
    for (int s = 0; s < pp->g; s++)
      for (int j = 0; j < pp->cx->nq; j++) {
        n_tok += pp->es[pp->idx[s]].plan[j].len;
        n_mark += pp->es[pp->idx[s]].plan[j].markers_kept;
      }
  }
  if (rows == 0) return 0;
  if (n_tok > INT32_MAX || n_mark > INT32_MAX)
    return laya_err(err, LAYA_ERR_VALUE, NULL, "a packed pass of %ld tokens is too large", n_tok);
  packed_batch_buf bb = {0};
  float *logits = malloc(sizeof(float) * (size_t)(n_mark ? n_mark : 1));
  float *act = malloc(sizeof(float) * (size_t)(rows * n_act + 1));
  int rc = pb_reserve(&bb, rows, n_tok, n_mark, err);
  if (!rc && (!logits || !act)) rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory packing %d rows", rows);
  if (rc) goto done;
  for (int p = 0; p < n_parts; p++) {
    const call_ctx *cx = parts[p].cx;
    for (int s = 0; s < parts[p].g; s++) {
      const enc_state *e = &parts[p].es[parts[p].idx[s]];
      for (int j = 0; j < cx->nq; j++) {
        const head_ids *h = &cx->heads[j];
        const row_plan *pl = &e->plan[j];
        pb_row row = pb_add_row(&bb, cx->qs[j].type, pl->len, pl->markers_kept);
        write_row(h, e->ids.ids, pl, m->ck.roles.sep_id, row.tokens);
        int mk = 0;
        for (int k = 0; k < h->n_markers; k++)
          if (h->markers[k] < cx->max_len) row.markers[mk++] = h->markers[k];
        LAYA_ASSERT(mk == pl->markers_kept);
      }
    }
  }
  const packed_batch *b = pb_finish(&bb);
  const int32_t *mstart = b->marker_start;
  const engine_call *c0 = parts[0].cx->call;
  if (c0 && c0->forward_override)
    rc = c0->forward_override(c0->override_ctx, b, logits, act, err);
  else
    rc = engine_forward(m, b, logits, act, err);
  int r = 0;
  for (int p = 0; p < n_parts && !rc; p++) {
    if (parts[p].job)
      job_keep_rows(parts[p].job, logits, act, mstart, r);
    else
      rc = decode_part(&parts[p], logits, act, mstart, r, err);
    r += parts[p].g * parts[p].cx->nq;
  }
done:
  pb_free(&bb);
  free(logits);
  free(act);
  return rc;
}

/* Laya's checks of a predict_batch call, in Laya's order, and everything its rows need: the
 * prepared questions, their heads, the confidence gate and the decoding options. *trivial is set
 * when the call needs no forward pass (no states, or no questions: every result is Laya's empty
 * one, cx->results zeroed for the states). */
static int call_setup(laya_model *m, const json_value *states, const json_value *questions,
                      const engine_call *c, arena *a, call_ctx *cx, bool *trivial, laya_error *err) {
  int rc;
  memset(cx, 0, sizeof *cx);
  *trivial = false;
  if ((rc = conf_gate_parse(&cx->gate, c ? c->min_confidence : NULL, a, err))) return rc;
  if (states->type == JSON_STRING || states->type == JSON_OBJECT)
    return laya_type_error(err, "predict_batch expects a list of states; pass a single state to predict()/system_one().");
  if (questions->type != JSON_OBJECT)
    return laya_type_error(err, "questions must be a dict of question id -> definition, got %s",
                           json_py_type(questions));
  if (states->type != JSON_ARRAY)
    return laya_type_error(err, "'%s' object is not iterable", json_py_type(states));
  long n = states->n;
  for (long i = 0; i < n; i++)
    if (states->items[i].type == JSON_NULL)
      return laya_type_error(err, "state must not be None; pass a string, dict, or list");
  cx->out = a;
  cx->results = arena_alloc(a, sizeof(state_result) * (size_t)(n ? n : 1));
  if (!cx->results) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  memset(cx->results, 0, sizeof(state_result) * (size_t)(n ? n : 1));
  if (n == 0 || questions->n == 0) {
    *trivial = true;
    return 0;
  }
  if ((rc = questions_prepare(questions, a, &cx->qs, &cx->nq, err))) return rc;
  cx->m = m;
  cx->call = c;
  cx->max_len = engine_max_len(m, c);
  const int head_max_len = engine_head_max_len(m, c);
  cx->n_act = m->ck.w.n_act;
  cx->heads = arena_alloc(a, sizeof(head_ids) * (size_t)cx->nq);
  if (!cx->heads) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  /* Laya meets errors in this order: the first state's text, then each question's head and
   * marker count in turn (the heads are the same for every state, so that is the only order). */
  {
    strbuf s0;
    sb_init(&s0);
    serialize_state(&s0, &states->items[0]);
    rc = check_encodable(s0.data ? s0.data : "", s0.len, err);
    sb_free(&s0);
    if (rc) return rc;
  }
  if (c && c->budget_not_int)
    return laya_type_error(err, "slice indices must be integers or None or have an __index__ method");
  for (int j = 0; j < cx->nq; j++) {
    if ((rc = build_head(&m->st, &cx->qs[j], head_max_len, a, &cx->heads[j], err))) return rc;
    if (c && c->head_float) {
      /* what Python's max(4, float) / max(8, float) hand back: the int only when the float is not
       * larger (the cut ran, the per-option floor held, the instruction budget is at most 8) */
      const head_ids *h = &cx->heads[j];
      long opts_after = h->n_markers ? (long)(h->n_ids - 1 - h->markers[0]) : 0;
      long left = (long)head_max_len - opts_after; /* floor(h) - options: <= 8, or < 8 if fractional */
      bool int_slices = h->tokens_per_option == LAYA_MIN_PER_OPTION &&
                        (c->head_float_frac ? left < LAYA_MIN_INSTRUCTION : left <= LAYA_MIN_INSTRUCTION);
      if (!int_slices)
        return laya_type_error(err, "slice indices must be integers or None or have an __index__ method");
    }
    int kept = 0;
    for (int k = 0; k < cx->heads[j].n_markers; k++) kept += cx->heads[j].markers[k] < cx->max_len;
    if (kept != cx->heads[j].options) {
      strbuf r;
      sb_init(&r);
      py_repr_str(&r, cx->qs[j].qid, cx->qs[j].qid_len);
      rc = laya_value_error(err,
                            "question %s: only %d of its %d option markers fit in max_len=%d with "
                            "head_max_len=%d spent on the question; lower head_max_len, raise "
                            "max_len, or use fewer options",
                            sb_cstr(&r), kept, cx->heads[j].options, cx->max_len, head_max_len);
      sb_free(&r);
      return rc;
    }
  }
  const temp_table *lang_tt =
      c && c->lang && c->lang_len ? lang_temps_find(&m->langs, c->lang, c->lang_len) : NULL;
  cx->dopt.tt = lang_tt ? lang_tt : &m->ck.cfg.temps;
  cx->dopt.lang_override = lang_tt != NULL;
  cx->dopt.binning = m->ck.binning;
  cx->dopt.n_binning = m->ck.n_binning;
  cx->dopt.gate = &cx->gate;
  return 0;
}

/* Encode states[0..n) into es[0..n) and plan each row. */
static int encode_states(call_ctx *cx, const json_value *states, enc_state *es, long n, int *order,
                         laya_error *err) {
  for (long i = 0; i < n; i++) {
    const json_value *st = &states[i];
    int rc = engine_encode_state(cx->m, st, &es[i].ids, err);
    if (rc) return rc;
    es[i].longest = 0;
    for (int j = 0; j < cx->nq; j++) {
      plan_row(&cx->heads[j], (int)es[i].ids.n, st->type == JSON_ARRAY, cx->max_len, &es[i].plan[j]);
      if (es[i].plan[j].len > es[i].longest) es[i].longest = es[i].plan[j].len;
    }
    order[i] = (int)i;
  }
  return 0;
}

static enc_state *enc_states_new(long n, int nq, arena *a) {
  enc_state *es = calloc((size_t)n, sizeof *es);
  for (long i = 0; es && i < n; i++) {
    es[i].plan = arena_alloc(a, sizeof(row_plan) * (size_t)nq);
    if (!es[i].plan) {
      free(es);
      return NULL;
    }
  }
  return es;
}

static void enc_states_free(enc_state *es, long n) {
  for (long i = 0; es && i < n; i++) ids_vec_free(&es[i].ids);
  free(es);
}

int engine_run(laya_model *m, const json_value *states, const json_value *questions, const engine_call *c,
               arena *a, state_result **out, long *n_out, laya_error *err) {
  call_ctx cx;
  enc_state *es = NULL;
  int *order = NULL;
  long n = 0, window = 0;
  bool trivial;
  *out = NULL;
  *n_out = 0;
  int rc = call_setup(m, states, questions, c, a, &cx, &trivial, err);
  if (rc) return rc;
  n = states->n;
  if (trivial) goto done;
  long chunk = c && c->batch_size > 0 ? c->batch_size : n;
  bool reorder = c && c->sort_by_length && 1 < chunk && chunk < n;
  window = reorder ? chunk * 8 : chunk;
  if (window > n) window = n;
  es = enc_states_new(window, cx.nq, a);
  order = malloc(sizeof(int) * (size_t)window);
  if (!es || !order) {
    rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    goto done;
  }
  for (long start = 0; start < n && !rc; start += window) {
    long part = n - start < window ? n - start : window;
    if ((rc = encode_states(&cx, states->items + start, es, part, order, err))) goto done;
    if (reorder) /* stable insertion sort by the longest row */
      for (long i = 1; i < part; i++)
        for (long k = i; k > 0 && es[order[k - 1]].longest > es[order[k]].longest; k--) {
          int x = order[k];
          order[k] = order[k - 1];
          order[k - 1] = x;
        }
    state_result *base = cx.results;
    cx.results = base + start; /* order[] is relative to the window */
    for (long off = 0; off < part && !rc; off += chunk) {
      long g = part - off < chunk ? part - off : chunk;
      pass_part pp = {&cx, es, order + off, (int)g, NULL};
      rc = run_pass(m, &pp, 1, err);
      if (!rc && c && c->progress && c->progress->fn) c->progress->fn(c->progress->user, start + off + g, n);
    }
    cx.results = base;
  }
done:
  enc_states_free(es, window);
  free(order);
  if (!rc) {
    *out = cx.results;
    *n_out = n;
  }
  return rc;
}

int engine_predict_batch(laya_model *m, const json_value *states, const json_value *questions,
                         const engine_call *c, strbuf *out, laya_error *err) {
  arena a;
  arena_init(&a, 1 << 16);
  state_result *r;
  long n;
  int rc = engine_run(m, states, questions, c, &a, &r, &n, err);
  if (!rc) {
    rj_write_states(out, &RJ_PY, r, n);
    if (out->oom) rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory writing results");
  }
  arena_free(&a);
  return rc;
}

/* ---- prepared requests, packed together (laya_job_*) ----
 *
 * The work around a pass is the job's own: laya_job_prepare parses, checks and tokenizes (and
 * sizes the job's copy of its rows' outputs), laya_jobs_run only packs the prepared rows, runs
 * the pass and copies each job's logits and activations out, and laya_job_result decodes them.
 * So a server can prepare and decode requests on their own threads while one thread keeps the
 * device busy with passes. */

struct laya_job {
  laya_model *m;
  arena a;         /* the parsed request, questions, heads, gate, the kept rows' outputs */
  engine_call c;
  call_ctx cx;
  enc_state *es;   /* [n] */
  int *order;      /* 0..n-1 */
  long n;
  long tokens;     /* tokens its rows take in a pass */
  int rows;        /* n * nq */
  float *logits;   /* the rows' marker logits after a run, packed row after row */
  float *act;      /* [rows * n_act] */
  int32_t *mstart; /* [rows + 1]: row r's logits are logits[mstart[r] .. mstart[r+1]) */
  bool ran;
  bool is_trivial; /* no pass needed (no states or no questions): n_results empty results */
  long n_results;
};

/* Copy the job's rows (rows r0.. of the pass) out of the pass's buffers. */
static void job_keep_rows(laya_job *job, const float *logits, const float *act, const int32_t *mstart,
                          int r0) {
  const int32_t base = mstart[r0];
  for (int r = 0; r <= job->rows; r++) job->mstart[r] = mstart[r0 + r] - base;
  memcpy(job->logits, logits + base, sizeof(float) * (size_t)job->mstart[job->rows]);
  memcpy(job->act, act + (long)r0 * job->cx.n_act, sizeof(float) * (size_t)job->rows * (size_t)job->cx.n_act);
}

void laya_job_free(laya_job *job) {
  if (!job) return;
  enc_states_free(job->es, job->n);
  free(job->order);
  arena_free(&job->a);
  free(job);
}

/* The job of request value req (parsed into the job's arena, or the caller's, which then outlives it). */
static int job_prepare(laya_model *m, laya_job *job, const json_value *req, laya_job **out, laya_error *err) {
  const json_value *states = NULL, *questions = NULL;
  int rc;
  if ((rc = engine_parse_request(req, true, &job->c, &states, &questions, err))) goto fail;
  if (states->type == JSON_ARRAY && job->c.batch_size > 0 && job->c.batch_size < (long)states->n) {
    rc = laya_err(err, LAYA_ERR_UNSUPPORTED, NULL,
                  "laya_job_prepare: a request split by batch_size runs with laya_predict_batch");
    goto fail;
  }
  if ((rc = call_setup(m, states, questions, &job->c, &job->a, &job->cx, &job->is_trivial, err))) goto fail;
  job->n_results = states->n;
  job->cx.results = NULL; /* each laya_job_result decodes into its own arena */
  if (job->is_trivial) {
    *out = job;
    return 0;
  }
  job->n = states->n;
  job->es = enc_states_new(job->n, job->cx.nq, &job->a);
  job->order = malloc(sizeof(int) * (size_t)job->n);
  if (!job->es || !job->order) {
    rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    goto fail;
  }
  if ((rc = encode_states(&job->cx, states->items, job->es, job->n, job->order, err))) goto fail;
  long n_mark = 0;
  for (long i = 0; i < job->n; i++)
    for (int j = 0; j < job->cx.nq; j++) {
      job->tokens += job->es[i].plan[j].len;
      n_mark += job->es[i].plan[j].markers_kept;
    }
  if (job->n * job->cx.nq > INT32_MAX / 2 || n_mark > INT32_MAX) {
    rc = laya_err(err, LAYA_ERR_VALUE, NULL, "a request of %ld rows is too large", job->n * job->cx.nq);
    goto fail;
  }
  job->rows = (int)(job->n * job->cx.nq);
  job->logits = arena_alloc(&job->a, sizeof(float) * (size_t)(n_mark ? n_mark : 1));
  job->act = arena_alloc(&job->a, sizeof(float) * ((size_t)job->rows * (size_t)job->cx.n_act + 1));
  job->mstart = arena_alloc(&job->a, sizeof(int32_t) * (size_t)(job->rows + 1));
  if (!job->logits || !job->act || !job->mstart) {
    rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    goto fail;
  }
  *out = job;
  return 0;
fail:
  laya_job_free(job);
  return rc;
}

static laya_job *job_new(laya_model *m, laya_error *err) {
  laya_job *job = calloc(1, sizeof *job);
  if (!job) {
    laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    return NULL;
  }
  job->m = m;
  arena_init(&job->a, 1 << 14);
  return job;
}

int laya_job_prepare(laya_model *m, const char *request_json, laya_job **out, laya_error *err) {
  laya_err_clear(err);
  if (out) *out = NULL;
  if (!m || !request_json || !out)
    return laya_err(err, LAYA_ERR_VALUE, NULL, "laya_job_prepare: model, request and job must not be NULL");
  laya_job *job = job_new(m, err);
  if (!job) return LAYA_ERR_NOMEM;
  json_value *req = json_parse(request_json, strlen(request_json), &job->a, NULL, err);
  if (!req) {
    int rc = err && err->code ? err->code : LAYA_ERR_FORMAT;
    laya_job_free(job);
    return rc;
  }
  return job_prepare(m, job, req, out, err);
}

int engine_job_prepare_value(laya_model *m, const json_value *req, laya_job **out, laya_error *err) {
  laya_err_clear(err);
  *out = NULL;
  laya_job *job = job_new(m, err);
  return job ? job_prepare(m, job, req, out, err) : LAYA_ERR_NOMEM;
}

long laya_job_tokens(const laya_job *job) { return job ? job->tokens : 0; }

int laya_jobs_run(laya_model *m, laya_job *const *jobs, int n_jobs, laya_error *err) {
  laya_err_clear(err);
  if (!m || (n_jobs > 0 && !jobs) || n_jobs < 0)
    return laya_err(err, LAYA_ERR_VALUE, NULL, "laya_jobs_run: model and jobs must not be NULL");
  pass_part *parts = calloc((size_t)(n_jobs ? n_jobs : 1), sizeof *parts);
  if (!parts) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  int n_parts = 0, rc = 0;
  for (int i = 0; i < n_jobs && !rc; i++) {
    laya_job *job = jobs[i];
    if (!job || job->m != m) {
      rc = laya_err(err, LAYA_ERR_VALUE, NULL, "laya_jobs_run: job %d was not prepared for this model", i);
      break;
    }
    job->ran = false;
    if (!job->is_trivial) parts[n_parts++] = (pass_part){&job->cx, job->es, job->order, (int)job->n, job};
  }
  if (!rc) rc = run_pass(m, parts, n_parts, err);
  for (int i = 0; i < n_jobs && !rc; i++) jobs[i]->ran = true;
  free(parts);
  return rc;
}

int engine_job_results(const laya_job *job, arena *a, state_result **out, long *n_out, laya_error *err) {
  *out = NULL;
  *n_out = 0;
  if (!job->is_trivial && !job->ran) return laya_err(err, LAYA_ERR_VALUE, NULL, "laya_job_result: the job has not run");
  long n = job->n_results;
  state_result *r = arena_alloc(a, sizeof(state_result) * (size_t)(n ? n : 1));
  if (!r) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory writing results");
  memset(r, 0, sizeof(state_result) * (size_t)(n ? n : 1));
  for (long s = 0; s < job->n && !job->is_trivial; s++) {
    int rc = decode_state(&job->cx, &job->es[s], job->logits, job->act, job->mstart, (int)s * job->cx.nq, a, &r[s], err);
    if (rc) return rc;
  }
  *out = r;
  *n_out = n;
  return 0;
}

int laya_job_result(const laya_job *job, char **result_json, laya_error *err) {
  laya_err_clear(err);
  if (result_json) *result_json = NULL;
  if (!job || !result_json)
    return laya_err(err, LAYA_ERR_VALUE, NULL, "laya_job_result: job and result must not be NULL");
  arena a;
  arena_init(&a, 1 << 14);
  state_result *r;
  long n;
  int rc = engine_job_results(job, &a, &r, &n, err);
  strbuf out;
  sb_init(&out);
  if (!rc) {
    rj_write_states(&out, &RJ_PY, r, n);
    if (out.oom) rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory writing results");
  }
  arena_free(&a);
  if (!rc) *result_json = sb_steal(&out);
  sb_free(&out);
  return rc;
}
