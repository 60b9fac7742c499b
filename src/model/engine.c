/* engine.c: Laya's predict_batch over the packed-batch backend. */
#include "model/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pystr.h"

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

/* The request that ran out of device memory runs again on the CPU in fp32 (Laya's demotion).
 * Rare by nature, so its worker is made and freed per call. */
static int forward_on_cpu(laya_model *m, const packed_batch *b, float *logits, float *act,
                          laya_error *err) {
  pthread_mutex_lock(&m->fallback_mu);
  if (!m->fallback) {
    backend_options bo = {PREC_FP32, 0, 0};
    m->fallback = backend_cpu_create(&m->ck.w, &bo, err);
  }
  backend *cpu = m->fallback;
  if (cpu) m->fallback_count++;
  pthread_mutex_unlock(&m->fallback_mu);
  if (!cpu) return err && err->code ? err->code : LAYA_ERR_NOMEM;
  fprintf(stderr, "laya: device out of memory during inference; running this request on the CPU\n");
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

int engine_forward(laya_model *m, const packed_batch *b, float *logits, float *act, laya_error *err) {
  backend_worker *w = NULL;
  pthread_mutex_lock(&m->pool_mu);
  if (m->n_idle) w = m->idle[--m->n_idle];
  pthread_mutex_unlock(&m->pool_mu);
  if (!w) {
    w = m->be->worker_create(m->be, err);
    if (!w) return err && err->code ? err->code : LAYA_ERR_NOMEM;
  }
  int rc = m->be->forward(m->be, w, b, logits, act, err);
  if (rc && backend_error_is_device_oom(err)) rc = forward_on_cpu(m, b, logits, act, err);
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
  return rc;
}

/* One encoded state: its ids and, per question, how its row is cut. */
typedef struct enc_state {
  ids_vec ids;
  row_plan *plan; /* [n_q] */
  int longest;    /* longest row: the sort key */
} enc_state;

typedef struct call_ctx {
  laya_model *m;
  const json_value *states;
  question *qs;
  int nq;
  head_ids *heads;
  int max_len;
  decode_opts dopt;
  const engine_call *call;
  char **results; /* per state, malloc'd JSON */
  int n_act;
} call_ctx;

static int run_group(call_ctx *cx, enc_state *es, const int *idx, int g, laya_error *err) {
  const int nq = cx->nq, rows = g * nq;
  long n_tok = 0, n_mark = 0;
  for (int s = 0; s < g; s++)
    for (int j = 0; j < nq; j++) {
      n_tok += es[idx[s]].plan[j].len;
      n_mark += es[idx[s]].plan[j].markers_kept;
    }
  int32_t *tokens = malloc(sizeof(int32_t) * (size_t)(n_tok ? n_tok : 1));
  int32_t *row_start = malloc(sizeof(int32_t) * (size_t)(rows + 1));
  int32_t *qtype = malloc(sizeof(int32_t) * (size_t)(rows ? rows : 1));
  int32_t *mstart = malloc(sizeof(int32_t) * (size_t)(rows + 1));
  int32_t *markers = malloc(sizeof(int32_t) * (size_t)(n_mark ? n_mark : 1));
  float *logits = malloc(sizeof(float) * (size_t)(n_mark ? n_mark : 1));
  float *act = malloc(sizeof(float) * (size_t)(rows * cx->n_act + 1));
  strbuf sb;
  sb_init(&sb);
  int rc = 0;
  if (!tokens || !row_start || !qtype || !mstart || !markers || !logits || !act) {
    rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory packing %d rows", rows);
    goto done;
  }
  long t = 0, mk = 0;
  int r = 0;
  for (int s = 0; s < g; s++) {
    enc_state *e = &es[idx[s]];
    for (int j = 0; j < nq; j++, r++) {
      const head_ids *h = &cx->heads[j];
      const row_plan *p = &e->plan[j];
      row_start[r] = (int32_t)t;
      mstart[r] = (int32_t)mk;
      qtype[r] = cx->qs[j].type;
      write_row(h, e->ids.ids, p, cx->m->ck.roles.sep_id, tokens + t);
      t += p->len;
      for (int k = 0; k < h->n_markers; k++)
        if (h->markers[k] < cx->max_len) markers[mk++] = h->markers[k];
    }
  }
  row_start[rows] = (int32_t)t;
  mstart[rows] = (int32_t)mk;
  packed_batch b = {rows, (int)n_tok, tokens, row_start, qtype, mstart, markers};
  if (cx->call && cx->call->forward_override)
    rc = cx->call->forward_override(cx->call->override_ctx, &b, logits, act, err);
  else
    rc = engine_forward(cx->m, &b, logits, act, err);
  if (rc) goto done;

  r = 0;
  for (int s = 0; s < g; s++) {
    enc_state *e = &es[idx[s]];
    sb_reset(&sb);
    sb_puts(&sb, "{\"model\": \"laya-rl-agent\", \"answers\": {");
    long input_tokens = 0;
    int dropped = 0;
    for (int j = 0; j < nq; j++, r++) {
      const question *q = &cx->qs[j];
      if (j) sb_puts(&sb, ", ");
      json_dump_string(&sb, q->qid, q->qid_len, false);
      sb_puts(&sb, ": ");
      decode_answer(&sb, q, logits + mstart[r], mstart[r + 1] - mstart[r], act + (long)r * cx->n_act,
                    cx->n_act, &cx->dopt);
      input_tokens += e->plan[j].len;
      if (e->plan[j].dropped > dropped) dropped = e->plan[j].dropped;
    }
    sb_printf(&sb,
              "}, \"usage\": {\"input_tokens\": %ld, \"output_tokens\": 0, \"state_tokens\": %zu, "
              "\"state_tokens_dropped\": %d, \"truncated\": %s, \"truncated_questions\": [",
              input_tokens, e->ids.n, dropped, dropped > 0 ? "true" : "false");
    bool first = true;
    for (int j = 0; j < nq; j++)
      if (e->plan[j].dropped > 0) {
        if (!first) sb_puts(&sb, ", ");
        first = false;
        json_dump_string(&sb, cx->qs[j].qid, cx->qs[j].qid_len, false);
      }
    sb_putc(&sb, ']');
    first = true;
    for (int j = 0; j < nq; j++) {
      const head_ids *h = &cx->heads[j];
      if (h->options_distinct >= h->options) continue;
      sb_puts(&sb, first ? ", \"options\": {" : ", ");
      first = false;
      json_dump_string(&sb, cx->qs[j].qid, cx->qs[j].qid_len, false);
      sb_printf(&sb, ": {\"total\": %d, \"distinct\": %d, \"tokens_per_option\": ", h->options,
                h->options_distinct);
      if (h->tokens_per_option < 0)
        sb_puts(&sb, "null}");
      else
        sb_printf(&sb, "%d}", h->tokens_per_option);
    }
    if (!first) sb_putc(&sb, '}');
    sb_puts(&sb, "}}");
    if (sb.oom) {
      rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory writing results");
      goto done;
    }
    cx->results[idx[s] + 0] = sb_steal(&sb); /* idx is relative to the window's base */
  }
done:
  sb_free(&sb);
  free(tokens);
  free(row_start);
  free(qtype);
  free(mstart);
  free(markers);
  free(logits);
  free(act);
  return rc;
}

static void empty_results(strbuf *out, long n) {
  sb_putc(out, '[');
  for (long i = 0; i < n; i++)
    sb_puts(out, i ? ", {\"model\": \"laya-rl-agent\", \"answers\": {}, \"usage\": {\"input_tokens\": 0, \"output_tokens\": 0}}"
                   : "{\"model\": \"laya-rl-agent\", \"answers\": {}, \"usage\": {\"input_tokens\": 0, \"output_tokens\": 0}}");
  sb_putc(out, ']');
}

int engine_predict_batch(laya_model *m, const json_value *states, const json_value *questions,
                         const engine_call *c, strbuf *out, laya_error *err) {
  arena a;
  arena_init(&a, 1 << 16);
  int rc = 0;
  conf_gate gate;
  call_ctx cx;
  memset(&cx, 0, sizeof cx);
  enc_state *es = NULL;
  int *order = NULL;
  long n = 0, window = 0;
  if ((rc = conf_gate_parse(&gate, c ? c->min_confidence : NULL, &a, err))) goto done;
  if (states->type == JSON_STRING || states->type == JSON_OBJECT) {
    rc = laya_type_error(err, "predict_batch expects a list of states; pass a single state to predict()/system_one().");
    goto done;
  }
  if (questions->type != JSON_OBJECT) {
    rc = laya_type_error(err, "questions must be a dict of question id -> definition, got %s",
                         json_py_type(questions));
    goto done;
  }
  if (states->type != JSON_ARRAY) {
    rc = laya_type_error(err, "'%s' object is not iterable", json_py_type(states));
    goto done;
  }
  n = states->n;
  for (long i = 0; i < n; i++)
    if (states->items[i].type == JSON_NULL) {
      rc = laya_type_error(err, "state must not be None; pass a string, dict, or list");
      goto done;
    }
  if (n == 0) {
    sb_puts(out, "[]");
    goto done;
  }
  if (questions->n == 0) {
    empty_results(out, n);
    goto done;
  }
  if ((rc = questions_prepare(questions, &a, &cx.qs, &cx.nq, err))) goto done;
  cx.m = m;
  cx.call = c;
  cx.states = states;
  cx.max_len = engine_max_len(m, c);
  const int head_max_len = engine_head_max_len(m, c);
  cx.n_act = m->ck.w.n_act;
  cx.heads = arena_alloc(&a, sizeof(head_ids) * (size_t)cx.nq);
  if (!cx.heads) {
    rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    goto done;
  }
  /* Laya meets errors in this order: the first state's text, then each question's head and
   * marker count in turn (the heads are the same for every state, so that is the only order). */
  {
    strbuf s0;
    sb_init(&s0);
    serialize_state(&s0, &states->items[0]);
    rc = check_encodable(s0.data ? s0.data : "", s0.len, err);
    sb_free(&s0);
    if (rc) goto done;
  }
  if (c && c->budget_not_int) {
    rc = laya_type_error(err, "slice indices must be integers or None or have an __index__ method");
    goto done;
  }
  for (int j = 0; j < cx.nq; j++) {
    if ((rc = build_head(&m->st, &cx.qs[j], head_max_len, &a, &cx.heads[j], err))) goto done;
    int kept = 0;
    for (int k = 0; k < cx.heads[j].n_markers; k++) kept += cx.heads[j].markers[k] < cx.max_len;
    if (kept != cx.heads[j].options) {
      strbuf r;
      sb_init(&r);
      py_repr_str(&r, cx.qs[j].qid, cx.qs[j].qid_len);
      rc = laya_value_error(err,
                            "question %s: only %d of its %d option markers fit in max_len=%d with "
                            "head_max_len=%d spent on the question; lower head_max_len, raise "
                            "max_len, or use fewer options",
                            sb_cstr(&r), kept, cx.heads[j].options, cx.max_len, head_max_len);
      sb_free(&r);
      goto done;
    }
  }
  const temp_table *lang_tt =
      c && c->lang && c->lang_len ? lang_temps_find(&m->langs, c->lang, c->lang_len) : NULL;
  cx.dopt.tt = lang_tt ? lang_tt : &m->ck.cfg.temps;
  cx.dopt.lang_override = lang_tt != NULL;
  cx.dopt.binning = m->ck.binning;
  cx.dopt.n_binning = m->ck.n_binning;
  cx.dopt.gate = &gate;

  long chunk = c && c->batch_size > 0 ? c->batch_size : n;
  bool reorder = c && c->sort_by_length && 1 < chunk && chunk < n;
  window = reorder ? chunk * 8 : chunk;
  if (window > n) window = n;
  es = calloc((size_t)window, sizeof *es);
  order = malloc(sizeof(int) * (size_t)window);
  cx.results = calloc((size_t)n, sizeof(char *));
  if (!es || !order || !cx.results) {
    rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    goto done;
  }
  for (long i = 0; i < window; i++) {
    es[i].plan = arena_alloc(&a, sizeof(row_plan) * (size_t)cx.nq);
    if (!es[i].plan) {
      rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
      goto done;
    }
  }
  for (long start = 0; start < n && !rc; start += window) {
    long part = n - start < window ? n - start : window;
    for (long i = 0; i < part; i++) {
      const json_value *st = &states->items[start + i];
      if ((rc = engine_encode_state(m, st, &es[i].ids, err))) goto done;
      es[i].longest = 0;
      for (int j = 0; j < cx.nq; j++) {
        plan_row(&cx.heads[j], (int)es[i].ids.n, st->type == JSON_ARRAY, cx.max_len, &es[i].plan[j]);
        if (es[i].plan[j].len > es[i].longest) es[i].longest = es[i].plan[j].len;
      }
      order[i] = (int)i;
    }
    if (reorder) /* stable insertion sort by the longest row */
      for (long i = 1; i < part; i++)
        for (long k = i; k > 0 && es[order[k - 1]].longest > es[order[k]].longest; k--) {
          int x = order[k];
          order[k] = order[k - 1];
          order[k - 1] = x;
        }
    char **base = cx.results;
    cx.results = base + start;
    for (long off = 0; off < part && !rc; off += chunk) {
      long g = part - off < chunk ? part - off : chunk;
      rc = run_group(&cx, es, order + off, (int)g, err);
    }
    cx.results = base;
  }
  if (rc) goto done;
  sb_putc(out, '[');
  for (long i = 0; i < n; i++) {
    if (i) sb_puts(out, ", ");
    sb_puts(out, cx.results[i]);
  }
  sb_putc(out, ']');
  if (out->oom) rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory writing results");
done:
  if (es)
    for (long i = 0; i < window; i++) ids_vec_free(&es[i].ids);
  if (cx.results)
    for (long i = 0; i < n; i++) free(cx.results[i]);
  free(cx.results);
  free(es);
  free(order);
  arena_free(&a);
  return rc;
}
