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

#include "core/error.h"
#include "core/json.h"
#include "core/pystr.h"
#include "core/strbuf.h"
#include "laya.h"
#include "model/engine.h"
#include "model/questions.h"

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

/* One usage value as a number: bool counts as int, as Python sums it. */
typedef struct usage_acc {
  const char *key;
  int kind; /* 0 number, 1 dict (merged), 2 other (last wins) */
  bool is_float;
  long long i;
  double d;
  const json_value *last;          /* kind 2 */
  const json_value *dicts[256];    /* kind 1: merged in order */
  int ndicts;
} usage_acc;

static void write_merged(strbuf *sb, usage_acc *u) {
  /* {**prev, **val}: keys in first-seen order, last value wins */
  sb_putc(sb, '{');
  const char *keys[512];
  const json_value *vals[512];
  int nk = 0;
  for (int d = 0; d < u->ndicts; d++)
    for (uint32_t k = 0; k < u->dicts[d]->n; k++) {
      const char *key = u->dicts[d]->members[k].key;
      int j = 0;
      while (j < nk && strcmp(keys[j], key)) j++;
      if (j == nk && nk < 512) keys[nk++] = key;
      if (j < 512) vals[j] = &u->dicts[d]->members[k].value;
    }
  for (int j = 0; j < nk; j++) {
    if (j) sb_puts(sb, ", ");
    json_dump_string(sb, keys[j], strlen(keys[j]), false);
    sb_puts(sb, ": ");
    json_dump(sb, vals[j], NULL);
  }
  sb_putc(sb, '}');
}

static int scan(laya_model *m, const json_value *req, strbuf *out, laya_error *err) {
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
  if (lang && json_truthy(lang) && lang->type == JSON_STRING) {
    call.lang = lang->s;
    call.lang_len = lang->n;
  }
  arena a;
  arena_init(&a, 1 << 14);
  long *starts = NULL;
  question *qs = NULL;
  int nq = 0;
  ids_vec ids = {0};
  strbuf res, st;
  sb_init(&res);
  sb_init(&st);
  if ((rc = questions_prepare(questions, &a, &qs, &nq, err))) goto done;
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
    starts = calloc((size_t)cap, sizeof(long));
    states.items = arena_alloc(&a, (size_t)cap * sizeof(json_value));
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
      w->type = JSON_STRING;
      w->s = arena_strndup(&a, text, tl);
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
  if ((rc = engine_predict_batch(m, &states, questions, &call, &res, err))) goto done;
  json_value *results = json_parse(res.data, res.len, &a, NULL, err);
  if (!results || results->type != JSON_ARRAY || (long)results->n != nwin) {
    rc = laya_err(err, LAYA_ERR_INTERNAL, NULL, "predict_long: predict_batch returned an unexpected result");
    goto done;
  }
  if (single) {
    /* the one result, with usage["windows"] = 1 appended */
    const json_value *r = &results->items[0];
    sb_putc(out, '{');
    for (uint32_t k = 0; k < r->n; k++) {
      if (k) sb_puts(out, ", ");
      json_dump_string(out, r->members[k].key, r->members[k].key_len, false);
      sb_puts(out, ": ");
      const json_value *v = &r->members[k].value;
      if (!strcmp(r->members[k].key, "usage") && v->type == JSON_OBJECT) {
        strbuf u;
        sb_init(&u);
        json_dump(&u, v, NULL);
        u.len--; /* drop '}' */
        sb_append(out, u.data, u.len);
        sb_puts(out, v->n ? ", \"windows\": 1}" : "\"windows\": 1}");
        sb_free(&u);
      } else {
        json_dump(out, v, NULL);
      }
    }
    sb_putc(out, '}');
    goto done;
  }
  /* aggregate per question, in the caller's question order */
  sb_puts(out, "{\"model\": \"laya-rl-agent\", \"answers\": {");
  for (int q = 0; q < nq; q++) {
    long best = -1;
    double bv = -INFINITY;
    for (long w = 0; w < nwin; w++) {
      const json_value *ans = json_get(json_get(&results->items[w], "answers"), qs[q].qid);
      const json_value *v = json_get(ans, qs[q].type == QT_NOUL ? "noul" : "answer_confidence");
      double d = v && json_is_number(v) ? v->d : (v && v->type == JSON_BOOL ? v->b : NAN);
      if (best < 0 || d > bv) {
        best = w;
        bv = d;
      }
    }
    const json_value *ans = json_get(json_get(&results->items[best], "answers"), qs[q].qid);
    if (q) sb_puts(out, ", ");
    json_dump_string(out, qs[q].qid, qs[q].qid_len, false);
    sb_puts(out, ": ");
    strbuf one;
    sb_init(&one);
    json_dump(&one, ans, NULL);
    if (one.len >= 2) {
      one.len--;
      sb_append(out, one.data, one.len);
      long end = starts[best] + budget < n ? starts[best] + budget : n;
      sb_printf(out, "%s\"window\": {\"index\": %ld, \"token_start\": %ld, \"token_end\": %ld, \"count\": %ld}}",
                ans->n ? ", " : "", best, starts[best], end, nwin);
    } else {
      sb_puts(out, "null");
    }
    sb_free(&one);
  }
  sb_puts(out, "}, \"usage\": {");
  /* sum numbers, merge dicts, last value otherwise; keys in first-seen order */
  usage_acc *acc = calloc(64, sizeof(usage_acc));
  int nacc = 0;
  for (long w = 0; w < nwin && acc; w++) {
    const json_value *u = json_get(&results->items[w], "usage");
    for (uint32_t k = 0; u && u->type == JSON_OBJECT && k < u->n; k++) {
      const json_value *v = &u->members[k].value;
      int j = 0;
      while (j < nacc && strcmp(acc[j].key, u->members[k].key)) j++;
      if (j == nacc) {
        if (nacc == 64) continue;
        acc[nacc].key = u->members[k].key;
        nacc++;
      }
      usage_acc *x = &acc[j];
      if (json_is_number(v) || v->type == JSON_BOOL) {
        if (x->kind != 0) {
          x->kind = 0;
          x->is_float = false;
          x->i = 0;
          x->d = 0;
        }
        if (v->type == JSON_FLOAT) {
          if (!x->is_float) x->d = (double)x->i;
          x->is_float = true;
          x->d += v->d;
        } else {
          long long add = v->type == JSON_BOOL ? v->b : v->i;
          if (x->is_float) x->d += (double)add;
          else x->i += add;
        }
      } else if (v->type == JSON_OBJECT && x->kind == 1) {
        if (x->ndicts < 256) x->dicts[x->ndicts++] = v;
      } else {
        x->kind = v->type == JSON_OBJECT ? 1 : 2;
        x->ndicts = 0;
        if (v->type == JSON_OBJECT) x->dicts[x->ndicts++] = v;
        x->last = v;
      }
    }
  }
  bool wrote_output = false;
  for (int j = 0; acc && j < nacc; j++) {
    if (j) sb_puts(out, ", ");
    json_dump_string(out, acc[j].key, strlen(acc[j].key), false);
    sb_puts(out, ": ");
    if (!strcmp(acc[j].key, "output_tokens")) {
      sb_puts(out, "0");
      wrote_output = true;
    } else if (acc[j].kind == 0) {
      if (acc[j].is_float) {
        char b[32];
        py_float_json(acc[j].d, b);
        sb_puts(out, b);
      } else {
        sb_printf(out, "%lld", acc[j].i);
      }
    } else if (acc[j].kind == 1) {
      write_merged(out, &acc[j]);
    } else {
      json_dump(out, acc[j].last, NULL);
    }
  }
  if (!wrote_output) sb_printf(out, "%s\"output_tokens\": 0", nacc ? ", " : "");
  sb_printf(out, ", \"windows\": %ld}}", nwin);
  free(acc);
  free(starts);
  starts = NULL;
done:
  free(starts);
  ids_vec_free(&ids);
  sb_free(&res);
  sb_free(&st);
  arena_free(&a);
  return rc;
}

static int scan_call(void *m, const json_value *req, strbuf *out, laya_error *err) {
  return scan(m, req, out, err);
}

int laya_predict_long(laya_model *m, const char *request_json, char **result_json, laya_error *err) {
  return json_call("laya_predict_long", m, request_json, scan_call, m, result_json, err);
}
