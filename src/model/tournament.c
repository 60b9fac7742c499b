/* tournament.c: Laya's laya.shortlist.predict_tournament, and its C API entry point
 * laya_predict_tournament.
 *
 * A choice question with more labels than group_size plays elimination rounds: its field (the
 * labels still in, criteria order at first) is cut into ceil(n / group_size) groups of near-equal
 * size, in order (group i holds [i*n/parts, (i+1)*n/parts)); every group of every such question
 * goes into ONE predict as its own question (keyed "0", "1", ... in that order, each a copy of its
 * question with the criteria cut to the group and no option_order), and each group's answer stays in.
 * Rounds repeat until no field is larger than group_size. A final predict answers every question of
 * the request, each choice that played a round cut to its finalists. The result is the final
 * predict's, plus "tournament": {qid: {"labels": finalists, "n": the caller's label count,
 * "rounds"}} for every choice question. No embedder is needed: each label is read with the option
 * budget of a question of at most group_size labels. */
#include <stdio.h>
#include <string.h>

#include "core/assert.h"
#include "core/pystr.h"
#include "model/engine.h"
#include "model/result_json.h"
#include "model/shortlist.h"
#include "model/typed.h"

#define DEFAULT_GROUP 16 /* laya.shortlist.DEFAULT_TOURNAMENT_GROUP */

static int nomem(laya_error *err) { return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory"); }

/* group_size: an int (not a bool) of at least 2. */
static int check_group(const json_value *v, long long *group, laya_error *err) {
  if (!v) {
    *group = DEFAULT_GROUP;
    return 0;
  }
  if (v->type == JSON_INT && (v->big ? v->s[0] != '-' : v->i >= 2)) {
    *group = v->big ? (1LL << 62) : (long long)v->i;
    return 0;
  }
  strbuf r;
  sb_init(&r);
  py_repr_json(&r, v);
  laya_err(err, LAYA_ERR_VALUE, "ValueError", "group_size must be an integer of at least 2, got %s", sb_cstr(&r));
  sb_free(&r);
  return LAYA_ERR_VALUE;
}

/* A copy of question q with its criteria cut to the labels idx[0..n) (indices into the caller's
 * criteria) and without option_order; *dropped says whether it had one. */
static int cut(const json_value *q, const json_value *crit, const int *idx, int n, arena *a, json_value *out,
               bool *dropped) {
  json_value c = {0};
  c.type = crit->type;
  c.n = (uint32_t)n;
  if (crit->type == JSON_OBJECT) {
    if (!(c.members = arena_alloc(a, sizeof *c.members * (size_t)n))) return -1;
    for (int j = 0; j < n; j++) c.members[j] = crit->members[idx[j]];
  } else {
    if (!(c.items = arena_alloc(a, sizeof *c.items * (size_t)n))) return -1;
    for (int j = 0; j < n; j++) c.items[j] = crit->items[idx[j]];
  }
  json_member *mm = arena_alloc(a, sizeof *mm * (q->n + 1));
  if (!mm) return -1;
  uint32_t k = 0;
  *dropped = false;
  for (uint32_t i = 0; i < q->n; i++) {
    if (!strcmp(q->members[i].key, "option_order")) {
      *dropped = true;
      continue;
    }
    mm[k] = q->members[i];
    if (!strcmp(mm[k].key, "criteria")) mm[k].value = c;
    k++;
  }
  *out = *q;
  out->members = mm;
  out->n = k;
  return 0;
}

/* The cut question, with Laya's warning the first time this question loses its option_order. */
static int cut_warned(const laya_model *m, const json_value *questions, tournament_entry *e, const int *idx, int n, arena *a,
                      json_value *out, laya_error *err) {
  const json_value *q = &questions->members[e->qi].value;
  bool dropped = false;
  if (cut(q, e->criteria, idx, n, a, out, &dropped)) return nomem(err);
  if (dropped && !e->order_dropped) {
    e->order_dropped = true;
    json_value qk = json_string_n(e->qid, e->qid_len);
    shortlist_warn_dropped(m, &qk, e->qid_len, json_get(q, "option_order"), n);
  }
  return 0;
}

/* predict(state, questions, **the request's other keyword arguments): on m, or through the
 * caller's predict (the Router's, which routes each call as Laya's Router.predict does); *tokens_all
 * adds its input_tokens (laya-serve reports the sum over every call, Laya's _predict_with_tournament).
 * Before it, the caller's stop may end the tournament (laya-serve: the client has left). */
static int predict(laya_model *m, const tournament_calls *c, const json_value *req, const json_value *questions,
                   arena *a, state_result *out, long *tokens_all, laya_error *err) {
  if (c && c->stop && c->stop(c->ctx))
    return laya_err(err, LAYA_ERR_INTERNAL, "cancelled", "stopped before a tournament pass");
  json_value *preq = arena_alloc(a, sizeof *preq);
  json_member *pm = arena_alloc(a, sizeof *pm * (req->n + 1));
  if (!preq || !pm) return nomem(err);
  uint32_t n = 0;
  for (uint32_t i = 0; i < req->n; i++) {
    if (!strcmp(req->members[i].key, "group_size")) continue;
    pm[n] = req->members[i];
    if (!strcmp(pm[n].key, "questions")) pm[n].value = *questions;
    n++;
  }
  *preq = *req;
  preq->members = pm;
  preq->n = n;
  int rc;
  if (c && c->predict) {
    rc = c->predict(c->ctx, preq, a, out, err);
  } else {
    state_result *r = NULL;
    long nr = 0;
    rc = engine_run_request(m, preq, false, a, &r, &nr, err);
    if (!rc) *out = r[0];
  }
  if (!rc) *tokens_all += out->input_tokens;
  return rc;
}

/* One elimination round over every field larger than group: returns 0 with *played false when
 * no field needed one. */
static int play_round(laya_model *m, const tournament_calls *c, const json_value *req, const json_value *questions,
                      tournament_result *t, long long group, arena *a, bool *played, laya_error *err) {
  int groups = 0;
  for (int i = 0; i < t->n; i++) {
    long long left = t->e[i].n_left;
    if (left > group) groups += (int)((left + group - 1) / group);
  }
  *played = groups > 0;
  if (!groups) return 0;
  json_value qs = {0};
  qs.type = JSON_OBJECT;
  qs.n = (uint32_t)groups;
  qs.members = arena_alloc(a, sizeof *qs.members * (size_t)groups);
  int *owner = arena_alloc(a, sizeof *owner * (size_t)groups), *first = arena_alloc(a, sizeof *first * (size_t)groups);
  if (!qs.members || !owner || !first) return nomem(err);
  int g = 0;
  for (int i = 0; i < t->n; i++) {
    tournament_entry *e = &t->e[i];
    long long left = e->n_left;
    if (left <= group) continue;
    long long parts = (left + group - 1) / group;
    for (long long p = 0; p < parts; p++, g++) {
      int lo = (int)(p * left / parts), hi = (int)((p + 1) * left / parts);
      char name[24];
      int len = snprintf(name, sizeof name, "%d", g);
      char *key = arena_alloc(a, (size_t)len + 1);
      if (!key) return nomem(err);
      memcpy(key, name, (size_t)len + 1);
      qs.members[g].key = key;
      qs.members[g].key_len = (size_t)len;
      owner[g] = i;
      first[g] = lo;
      int rc = cut_warned(m, questions, e, e->left + lo, hi - lo, a, &qs.members[g].value, err);
      if (rc) return rc;
    }
  }
  state_result r;
  int rc = predict(m, c, req, &qs, a, &r, &t->input_tokens_all, err);
  if (rc) return rc;
  LAYA_ASSERT(r.n == groups);
  /* each group's winner replaces the field, in group order; left[] is rewritten in place, which is
   * safe because a group's winner index is read before any later slot is written */
  for (int i = 0; i < t->n; i++) t->e[i].n_next = 0;
  for (g = 0; g < groups; g++) {
    tournament_entry *e = &t->e[owner[g]];
    int winner = e->left[first[g] + r.answers[g].top];
    e->left[e->n_next++] = winner;
  }
  for (int i = 0; i < t->n; i++)
    if (t->e[i].n_left > group) {
      t->e[i].n_left = t->e[i].n_next;
      t->e[i].rounds++;
    }
  return 0;
}

int engine_run_tournament_calls(laya_model *m, const tournament_calls *c, const json_value *req, arena *a,
                                tournament_result *out, laya_error *err) {
  memset(out, 0, sizeof *out);
  const json_value *state, *questions;
  int rc = shortlist_request(req, "predict_tournament", &state, &questions, err);
  if (rc) return rc;
  (void)state; /* predict reads it from req */
  long long group;
  if ((rc = check_group(json_get(req, "group_size"), &group, err))) return rc;
  out->e = arena_alloc(a, sizeof *out->e * (questions->n + 1));
  if (!out->e) return nomem(err);
  for (uint32_t i = 0; i < questions->n; i++) {
    const json_value *q = &questions->members[i].value;
    const json_value *type = q->type == JSON_OBJECT ? json_get(q, "type") : NULL;
    if (!type || type->type != JSON_STRING || strcmp(type->s, "choice") != 0) continue;
    const json_value *crit = json_get(q, "criteria");
    if (!crit) return shortlist_no_criteria(questions->members[i].key, questions->members[i].key_len, err);
    tournament_entry *e = &out->e[out->n++];
    memset(e, 0, sizeof *e);
    shortlist_items it;
    if ((rc = shortlist_criteria_items(crit, a, &it, err))) return rc;
    e->qid = questions->members[i].key;
    e->qid_len = questions->members[i].key_len;
    e->qi = i;
    e->criteria = crit;
    e->labels = it.label;
    e->n = e->n_left = it.n;
    if (!(e->left = arena_alloc(a, sizeof *e->left * (size_t)it.n))) return nomem(err);
    for (int j = 0; j < it.n; j++) e->left[j] = j;
  }
  for (bool played = true; played;)
    if ((rc = play_round(m, c, req, questions, out, group, a, &played, err))) return rc;
  /* the final call: every question, each choice that played cut to its finalists */
  json_value final = *questions;
  if (!(final.members = arena_alloc(a, sizeof *final.members * (questions->n + 1)))) return nomem(err);
  memcpy(final.members, questions->members, sizeof *final.members * questions->n);
  for (int i = 0; i < out->n; i++) {
    tournament_entry *e = &out->e[i];
    if (e->rounds && (rc = cut_warned(m, questions, e, e->left, e->n_left, a, &final.members[e->qi].value, err)))
      return rc;
  }
  return predict(m, c, req, &final, a, &out->r, &out->input_tokens_all, err);
}

int engine_run_tournament(laya_model *m, const json_value *req, arena *a, tournament_result *out, laya_error *err) {
  return engine_run_tournament_calls(m, NULL, req, a, out, err);
}

static int api_tournament(void *ctx, const json_value *req, strbuf *out, laya_error *err) {
  laya_model *m = ctx;
  arena a;
  arena_init(&a, 1 << 14);
  tournament_result t;
  int rc = engine_run_tournament(m, req, &a, &t, err);
  if (!rc) {
    rj w;
    rj_init(&w, out, &RJ_PY);
    rj_tournament(&w, &t, NULL);
  }
  arena_free(&a);
  return rc;
}

int laya_predict_tournament(laya_model *m, const char *request_json, char **result_json, laya_error *err) {
  return json_call("laya_predict_tournament", m, request_json, api_tournament, m, result_json, err);
}
