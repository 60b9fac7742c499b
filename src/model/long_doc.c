/*
 * long_doc.c: predict_long, Laya 0.4.15's scan of a state longer than one sequence.
 *
 * The state is serialised and tokenised once, cut into overlapping windows of state tokens,
 * each window is decoded back to text and scored as an ordinary state in shared forward passes
 * (predict_batch), and the answers are combined per question: noul takes the window with the
 * highest P(true), choice and score the window with the highest answer_confidence. Each answer
 * names its deciding window ("window": index, token_start, token_end, count) and usage counts
 * the windows read. A state that fits the room the questions leave is answered in one call.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "core/error.h"
#include "core/json.h"
#include "core/pystr.h"
#include "core/strbuf.h"
#include "laya.h"
#include "model/engine.h"
#include "model/questions.h"
#include "model/result_json.h"
#include "model/typed.h"

/* Window size and stride for these questions (Laya's window_budget). */
static int window_budget(laya_model *m, question *qs, int nq, int max_len, int head_max_len,
                         long window, long stride, long *size_out, long *step_out, long *room_out,
                         laya_error *err) {
  long requested = window > 0 ? window : (max_len - head_max_len - 8 > 64 ? max_len - head_max_len - 8 : 64);
  long size = requested, room = size;
  for (int i = 0; i < nq; i++) {
    int r;
    int rc = engine_state_room(m, &qs[i], max_len, head_max_len, &r, err);
    if (rc) return rc;
    if (i == 0 || r < room) room = r;
  }
  if (room <= 0)
    return laya_value_error(err,
                            "predict_long: the questions' options fill the whole sequence (max_len=%d,"
                            " head_max_len=%d), leaving no room for the state; no window can carry any "
                            "of it. A label set this large is what laya.shortlist.predict_shortlist is for",
                            max_len, head_max_len);
  if (size > room) size = room; /* a wider window would be cut again on the way in */
  long step = stride > 0 ? stride : (size / 2 > 1 ? size / 2 : 1);
  if (step > size) {
    if (size < requested && stride > 0 && stride <= requested) {
      step = size / 2 > 1 ? size / 2 : 1;
    } else {
      return laya_value_error(err,
                              "predict_long: stride=%ld steps past the %ld-token window%s, so %ld tokens "
                              "between every pair of windows would be read by no window at all; pass "
                              "stride <= %ld",
                              step, size, size < requested ? " these questions leave room for" : "",
                              step - size, size);
    }
  }
  *size_out = size;
  *step_out = step;
  *room_out = room;
  return 0;
}

/* Laya's window_batch_cap: bound one forward pass when capping the window multiplied the count. */
static long window_batch_cap(long n_windows, long window, long config_budget, long batch_size) {
  if (batch_size > 0) return batch_size;
  if (window >= config_budget) return 0;
  long half_w = window / 2 > 1 ? window / 2 : 1, half_b = config_budget / 2 > 1 ? config_budget / 2 : 1;
  long unclamped = (n_windows * half_w + half_b - 1) / half_b;
  if (unclamped < 1) unclamped = 1;
  if (n_windows <= unclamped * 2) return 0;
  return unclamped;
}

static int int_arg(const json_value *req, const char *key, long *out, laya_error *err) {
  const json_value *v = json_get(req, key);
  *out = 0;
  if (!v || v->type == JSON_NULL) return 0;
  if (v->type == JSON_BOOL) {
    *out = v->b;
    return 0;
  }
  if (v->type == JSON_INT && !v->big) {
    *out = (long)v->i;
    return 0;
  }
  return laya_type_error(err, "predict_long: %s must be an int, got %s", key, json_py_type(v));
}

int engine_run_long(laya_model *m, const json_value *req, const engine_progress *progress, arena *a, long_result *out,
                    laya_error *err) {
  static const char *const keys[] = {"state", "questions", "window", "stride", "aggregate",
                                     "batch_size", "lang", NULL};
  if (req->type != JSON_OBJECT)
    return laya_type_error(err, "Agent.predict_long() argument after ** must be a mapping, not %s",
                           json_py_type(req));
  for (uint32_t i = 0; i < req->n; i++) {
    bool known = false;
    for (int k = 0; keys[k] && !known; k++) known = !strcmp(keys[k], req->members[i].key);
    if (!known)
      return laya_type_error(err, "Agent.predict_long() got an unexpected keyword argument '%s'",
                             req->members[i].key);
  }
  const json_value *state = json_get(req, "state"), *questions = json_get(req, "questions");
  if (!state) return laya_type_error(err, "Agent.predict_long() missing 1 required positional argument: 'state'");
  if (!questions)
    return laya_type_error(err, "Agent.predict_long() missing 1 required positional argument: 'questions'");
  if (state->type == JSON_NULL) return laya_type_error(err, "state must not be None; pass a string, dict, or list");
  if (questions->type != JSON_OBJECT)
    return laya_type_error(err, "questions must be a dict of question id -> definition, got %s",
                           json_py_type(questions));
  const json_value *agg = json_get(req, "aggregate");
  if (agg && !(agg->type == JSON_STRING && !strcmp(agg->s, "auto")))
    return laya_value_error(err, "predict_long: only aggregate='auto' is supported");
  long window, stride, batch_size;
  int rc;
  if ((rc = int_arg(req, "window", &window, err)) || (rc = int_arg(req, "stride", &stride, err)) ||
      (rc = int_arg(req, "batch_size", &batch_size, err)))
    return rc;
  const json_value *lang = json_get(req, "lang");
  engine_call call;
  memset(&call, 0, sizeof call);
  call.progress = progress;
  if (lang && json_truthy(lang) && lang->type == JSON_STRING) {
    call.lang = lang->s;
    call.lang_len = lang->n;
  }
  long *starts = NULL;
  question *qs = NULL;
  int nq = 0;
  ids_vec ids = {0};
  memset(out, 0, sizeof *out);
  if ((rc = questions_prepare(questions, a, &qs, &nq, err))) goto done;
  int max_len = engine_max_len(m, NULL), head_max_len = engine_head_max_len(m, NULL);
  long budget = 0, step = 1, room = 0;
  if ((rc = window_budget(m, qs, nq, max_len, head_max_len, window, stride, &budget, &step, &room, err)))
    goto done;
  if ((rc = engine_encode_state(m, state, &ids, err))) goto done;
  long n = (long)ids.n;
  bool single = n <= (window > 0 ? budget : room);
  /* the states to score: the state itself, or the decoded windows */
  long nwin = 0;
  json_value states = {.type = JSON_ARRAY};
  if (single) {
    states.n = 1;
    states.items = (json_value *)state;
    nwin = 1;
  } else {
    long cap = n / (step > 0 ? step : 1) + 2;
    starts = arena_alloc(a, (size_t)cap * sizeof(long));
    states.items = arena_alloc(a, (size_t)cap * sizeof(json_value));
    if (!starts || !states.items) {
      rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "predict_long: out of memory for %ld windows", cap);
      goto done;
    }
    for (long i = 0; i < n;) {
      long len = n - i < budget ? n - i : budget;
      char *text = NULL;
      size_t tl = 0;
      if ((rc = tokenizer_decode(engine_tokenizer(m), ids.ids + i, (size_t)len, &text, &tl, err))) goto done;
      json_value *w = &states.items[nwin];
      memset(w, 0, sizeof *w);
      w->type = JSON_STRING;
      w->s = arena_strndup(a, text, tl);
      w->n = (uint32_t)tl;
      free(text);
      starts[nwin++] = i;
      if (i + budget >= n) break;
      i += step;
    }
    states.n = (uint32_t)nwin;
    long cfg_budget = max_len - head_max_len - 8 > 64 ? max_len - head_max_len - 8 : 64;
    call.batch_size = window_batch_cap(nwin, budget, cfg_budget, batch_size);
  }
  state_result *results = NULL;
  long nres = 0;
  if ((rc = engine_run(m, &states, questions, &call, a, &results, &nres, err))) goto done;
  LAYA_ASSERT(nres == nwin); /* engine_run answers every state it is given */
  out->windows = nwin;
  out->single = single;
  if (single) {
    out->r = results[0];
    goto done;
  }
  /* per question, in the caller's question order, the deciding window: noul the highest P(true),
   * choice and score the highest answer_confidence (the first of equals; NaN never wins) */
  state_result *r = &out->r;
  const state_result *r0 = &results[0];
  r->n = r0->n;
  r->full_usage = r0->full_usage;
  r->answers = arena_alloc(a, sizeof(answer) * (size_t)(r->n ? r->n : 1));
  out->win_index = arena_alloc(a, sizeof(long) * (size_t)(r->n ? r->n : 1) * 3);
  if (!r->answers || !out->win_index) {
    rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "predict_long: out of memory");
    goto done;
  }
  out->win_start = out->win_index + r->n;
  out->win_end = out->win_start + r->n;
  for (int q = 0; q < r->n; q++) {
    long best = -1;
    double bv = -INFINITY;
    for (long w = 0; w < nwin; w++) {
      const answer *an = &results[w].answers[q];
      double d = an->q->type == QT_NOUL ? an->noul : an->answer_confidence;
      if (best < 0 || d > bv) {
        best = w;
        bv = d;
      }
    }
    r->answers[q] = results[best].answers[q];
    out->win_index[q] = best;
    out->win_start[q] = starts[best];
    out->win_end[q] = starts[best] + budget < n ? starts[best] + budget : n;
  }
  /* usage: Laya sums the windows' numbers */
  for (long w = 0; w < nwin; w++) {
    r->input_tokens += results[w].input_tokens;
    r->state_tokens += results[w].state_tokens;
    r->state_tokens_dropped += results[w].state_tokens_dropped;
    out->truncated_sum += results[w].state_tokens_dropped > 0;
  }
  out->last = &results[nwin - 1];
done:
  ids_vec_free(&ids);
  return rc;
}

static int scan_call(void *m, const json_value *req, strbuf *out, laya_error *err) {
  arena a;
  arena_init(&a, 1 << 14);
  long_result l;
  int rc = engine_run_long(m, req, NULL, &a, &l, err);
  if (!rc) {
    rj w;
    rj_init(&w, out, &RJ_PY);
    rj_long(&w, &l, NULL);
  }
  arena_free(&a);
  return rc;
}
int laya_predict_long(laya_model *m, const char *request_json, char **result_json, laya_error *err) {
  return json_call("laya_predict_long", m, request_json, scan_call, m, result_json, err);
}
