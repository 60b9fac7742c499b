/* shortlist.c: Laya's laya.shortlist (shortlist_choice, predict_shortlist) with the checkpoint's own
 * encoder as the embedder (embed_fn_from_agent wrapped in cached_embed_fn, as Laya's MCP server
 * builds it), and the C API entry points laya_embed / laya_shortlist_choice / laya_predict_shortlist.
 *
 * A choice question with more labels than k is ranked: the query (the serialised state, after the
 * question's instructions and a newline when it has any) and every option text (render_options of
 * the choice) are embedded, each label scores the signed cosine between its vector and the query's
 * (in double; a zero or non-finite vector scores 0), and the k best are kept, best first, a tie
 * keeping the earlier label. The decision pass then runs once over the narrowed questions, each
 * ranked choice's criteria cut to its kept labels in rank order. Probabilities of a ranked choice
 * are over its kept labels only; the dropped labels are absent from the answer, as in Laya. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash64.h"
#include "core/options.h"
#include "core/pystr.h"
#include "model/embed.h"
#include "model/engine.h"
#include "model/result_json.h"
#include "model/shortlist.h"
#include "model/typed.h"

#define DEFAULT_K 20 /* laya.shortlist.DEFAULT_SHORTLIST_K */

/* ---- Laya's argument checks --------------------------------------------------------------------- */

/* _check_k: an int (not a bool) of at least 1; *k is clamped to LONG_MAX-ish for huge ints. */
static int check_k(const json_value *v, long long *k, laya_error *err) {
  if (!v) {
    *k = DEFAULT_K;
    return 0;
  }
  if (v->type == JSON_INT && (v->big ? v->s[0] != '-' : v->i >= 1)) {
    *k = v->big ? (1LL << 62) : (long long)v->i;
    return 0;
  }
  strbuf r;
  sb_init(&r);
  py_repr_json(&r, v);
  laya_err(err, LAYA_ERR_VALUE, "ValueError", "k must be a positive integer, got %s", sb_cstr(&r));
  sb_free(&r);
  return LAYA_ERR_VALUE;
}

/* Python str() of a label (render_options' str(k)). */
static void label_str(strbuf *sb, const json_value *v) {
  char num[32];
  switch (v->type) {
    case JSON_STRING: sb_append(sb, v->s, v->n); break;
    case JSON_NULL: sb_puts(sb, "None"); break;
    case JSON_BOOL: sb_puts(sb, v->b ? "True" : "False"); break;
    case JSON_INT:
      if (v->big) sb_puts(sb, v->s);
      else sb_printf(sb, "%lld", (long long)v->i);
      break;
    case JSON_FLOAT:
      py_float_repr(v->d, num);
      sb_puts(sb, num);
      break;
    default: py_repr_json(sb, v); break;
  }
}

/* A label as a hashable key: Python's hash agrees for 1, 1.0 and True. */
static uint64_t label_hash(const json_value *v) {
  if (v->type == JSON_STRING) return hash64(v->s, v->n, 1);
  double d;
  if (v->type == JSON_BOOL) d = v->b;
  else if (v->type == JSON_INT || v->type == JSON_FLOAT) d = v->d;
  else return 7;
  if (d == 0.0) d = 0.0; /* -0.0 == 0.0 */
  if (isnan(d)) return 11;
  return hash64(&d, sizeof d, 2);
}

int shortlist_criteria_items(const json_value *crit, arena *a, shortlist_items *it, laya_error *err) {
  if (crit->type != JSON_OBJECT && crit->type != JSON_ARRAY)
    return laya_type_error(err, "choice criteria must be a dict or list, got %s", json_py_type(crit));
  if (crit->n == 0) return laya_err(err, LAYA_ERR_VALUE, "ValueError", "choice criteria must contain at least one option");
  it->n = (int)crit->n;
  it->label = arena_alloc(a, sizeof *it->label * crit->n);
  it->value = arena_alloc(a, sizeof *it->value * crit->n);
  size_t nb = 16;
  while (nb < 2 * (size_t)crit->n) nb *= 2;
  int *bucket = malloc(sizeof(int) * nb), *chain = malloc(sizeof(int) * crit->n);
  if (!it->label || !it->value || !bucket || !chain) {
    free(bucket);
    free(chain);
    return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  }
  for (size_t b = 0; b < nb; b++) bucket[b] = -1;
  int rc = 0;
  for (uint32_t i = 0; i < crit->n && !rc; i++) {
    if (crit->type == JSON_OBJECT) {
      json_value *k = arena_alloc(a, sizeof *k);
      if (!k) {
        rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
        break;
      }
      *k = json_string_n(crit->members[i].key, crit->members[i].key_len);
      it->label[i] = k;
      it->value[i] = &crit->members[i].value;
    } else {
      it->label[i] = &crit->items[i];
      it->value[i] = NULL;
      if (crit->items[i].type == JSON_OBJECT || crit->items[i].type == JSON_ARRAY) {
        rc = laya_type_error(err, "unhashable type: '%s'", json_py_type(&crit->items[i]));
        break;
      }
    }
    size_t b = label_hash(it->label[i]) & (nb - 1);
    for (int j = bucket[b]; j >= 0; j = chain[j])
      if (py_key_equal(it->label[j], it->label[i])) {
        strbuf r;
        sb_init(&r);
        py_repr_json(&r, it->label[i]);
        rc = laya_err(err, LAYA_ERR_VALUE, "ValueError", "choice criteria label %s is duplicated", sb_cstr(&r));
        sb_free(&r);
        break;
      }
    chain[i] = bucket[b];
    bucket[b] = (int)i;
  }
  free(bucket);
  free(chain);
  return rc;
}

/* ---- ranking ------------------------------------------------------------------------------------ */

typedef struct rank_ctx {
  const double *sims;
} rank_ctx;

static int by_score(const void *x, const void *y, void *ctx) {
  const double *s = ((const rank_ctx *)ctx)->sims;
  int i = *(const int *)x, j = *(const int *)y;
  if (s[i] > s[j]) return -1;
  if (s[i] < s[j]) return 1;
  return i < j ? -1 : i > j; /* stable: the earlier label first */
}

/* A stable sort of idx[0..n) by descending score (merge sort; qsort_r is not portable C11). */
static void sort_idx(int *idx, int *tmp, int n, const rank_ctx *c) {
  if (n < 2) return;
  int h = n / 2;
  sort_idx(idx, tmp, h, c);
  sort_idx(idx + h, tmp, n - h, c);
  int i = 0, j = h, o = 0;
  while (i < h && j < n) tmp[o++] = by_score(&idx[j], &idx[i], (void *)c) < 0 ? idx[j++] : idx[i++];
  while (i < h) tmp[o++] = idx[i++];
  while (j < n) tmp[o++] = idx[j++];
  memcpy(idx, tmp, sizeof(int) * (size_t)n);
}

static void finite_or_zero(float *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(v[i])) v[i] = 0.0f;
}

/* _cosine: signed cosine of each doc row with the query, clipped to [-1, 1]; 0 for a zero norm. */
static void cosines(const float *q, const float *docs, int n, int d, double *out) {
  double qn = 0.0;
  for (int i = 0; i < d; i++) qn += (double)q[i] * q[i];
  qn = sqrt(qn);
  for (int r = 0; r < n; r++) {
    const float *x = docs + (size_t)r * d;
    double dn = 0.0, dot = 0.0;
    for (int i = 0; i < d; i++) {
      dn += (double)x[i] * x[i];
      dot += (double)x[i] * q[i];
    }
    double denom = sqrt(dn) * qn;
    double s = qn == 0.0 || !(denom > 0.0) ? 0.0 : dot / denom;
    out[r] = s > 1.0 ? 1.0 : s < -1.0 ? -1.0 : s;
  }
}

/* _query_text: the serialised state, after the instructions and a newline when there are any. */
static void query_text(strbuf *sb, const json_value *state, const json_value *ins) {
  if (ins && ins->type != JSON_NULL && !(ins->type == JSON_STRING && ins->n == 0)) {
    if (ins->type == JSON_STRING) sb_append(sb, ins->s, ins->n);
    else {
      json_dump_opts o = {NULL, NULL, false, -1};
      json_dump(sb, ins, &o);
    }
    sb_putc(sb, '\n');
  }
  serialize_state(sb, state);
}

/* render_options of a choice: the bare label, or "label: description". */
static void option_text(strbuf *sb, const json_value *label, const json_value *value) {
  label_str(sb, label);
  if (!value || value->type == JSON_NULL || (value->type == JSON_STRING && value->n == 0)) return;
  sb_puts(sb, ": ");
  render_criterion(sb, value);
}

/* _rank for one question: e->labels / scores / passthrough. */
static int rank(laya_model *m, const json_value *state, const json_value *crit, const json_value *ins, long long k,
                arena *a, shortlist_entry *e, laya_error *err) {
  shortlist_items it = {0, NULL, NULL};
  int rc = shortlist_criteria_items(crit, a, &it, err);
  if (rc) return rc;
  e->n = it.n;
  if (k >= it.n) {
    e->passthrough = true;
    e->n_kept = it.n;
    e->labels = it.label;
    e->scores = NULL;
    return 0;
  }
  const int n = it.n, d = embed_dim(m);
  strbuf *texts = calloc((size_t)n + 1, sizeof *texts);
  const char **tp = malloc(sizeof(char *) * ((size_t)n + 1));
  size_t *tl = malloc(sizeof(size_t) * ((size_t)n + 1));
  float *vec = malloc(sizeof(float) * (size_t)d * ((size_t)n + 1));
  double *sims = malloc(sizeof(double) * (size_t)n);
  int *idx = malloc(sizeof(int) * (size_t)n * 2);
  if (!texts || !tp || !tl || !vec || !sims || !idx) {
    rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory ranking %d labels", n);
    goto done;
  }
  query_text(&texts[0], state, ins);
  for (int i = 0; i < n; i++) option_text(&texts[i + 1], it.label[i], it.value[i]);
  for (int i = 0; i <= n; i++) {
    if (texts[i].oom) {
      rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
      goto done;
    }
    tp[i] = texts[i].data ? texts[i].data : "";
    tl[i] = texts[i].len;
  }
  /* the query is not cached (it rarely repeats); the option rows are */
  embed_opts qo = {EMBED_DEFAULT_MAX_LENGTH, EMBED_DEFAULT_BATCH_SIZE, false};
  embed_opts lo = {EMBED_DEFAULT_MAX_LENGTH, EMBED_DEFAULT_BATCH_SIZE, true};
  if ((rc = embed_texts(m, tp, tl, 1, &qo, vec, err))) goto done;
  if ((rc = embed_texts(m, tp + 1, tl + 1, n, &lo, vec + d, err))) goto done;
  finite_or_zero(vec, (size_t)d * ((size_t)n + 1));
  cosines(vec, vec + d, n, d, sims);
  for (int i = 0; i < n; i++) idx[i] = i;
  rank_ctx rcx = {sims};
  sort_idx(idx, idx + n, n, &rcx);
  e->passthrough = false;
  e->n_kept = (int)k;
  e->labels = arena_alloc(a, sizeof *e->labels * (size_t)k);
  e->scores = arena_alloc(a, sizeof *e->scores * (size_t)k);
  e->kept_index = arena_alloc(a, sizeof *e->kept_index * (size_t)k);
  if (!e->labels || !e->scores || !e->kept_index) {
    rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    goto done;
  }
  for (int j = 0; j < (int)k; j++) {
    e->labels[j] = it.label[idx[j]];
    e->scores[j] = sims[idx[j]];
    e->kept_index[j] = idx[j];
  }
done:
  for (int i = 0; texts && i <= n; i++) sb_free(&texts[i]);
  free(texts);
  free(tp);
  free(tl);
  free(vec);
  free(sims);
  free(idx);
  return rc;
}

/* ---- predict_shortlist -------------------------------------------------------------------------- */

static json_member *members_copy(const json_value *obj, arena *a, uint32_t extra) {
  json_member *mm = arena_alloc(a, sizeof *mm * (obj->n + extra + 1));
  if (mm && obj->n) memcpy(mm, obj->members, sizeof *mm * obj->n);
  return mm;
}

/* The narrowed question: criteria cut to the kept labels in rank order, option_order dropped. */
static int narrowed(const json_value *q, const json_value *crit, const shortlist_entry *e, arena *a, json_value *out,
                    bool *dropped, laya_error *err) {
  json_value c = {0};
  c.type = crit->type;
  c.n = (uint32_t)e->n_kept;
  if (crit->type == JSON_OBJECT) {
    c.members = arena_alloc(a, sizeof *c.members * (size_t)e->n_kept);
    if (!c.members) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    for (int j = 0; j < e->n_kept; j++) c.members[j] = crit->members[e->kept_index[j]];
  } else {
    c.items = arena_alloc(a, sizeof *c.items * (size_t)e->n_kept);
    if (!c.items) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    for (int j = 0; j < e->n_kept; j++) c.items[j] = crit->items[e->kept_index[j]];
  }
  json_member *mm = members_copy(q, a, 0);
  if (!mm) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  uint32_t n = 0;
  *dropped = false;
  for (uint32_t i = 0; i < q->n; i++) {
    if (!strcmp(q->members[i].key, "option_order")) {
      *dropped = true;
      continue;
    }
    mm[n] = q->members[i];
    if (!strcmp(mm[n].key, "criteria")) mm[n].value = c;
    n++;
  }
  *out = *q;
  out->members = mm;
  out->n = n;
  return 0;
}

void shortlist_warn_dropped(const laya_model *m, const json_value *qid_key, size_t qid_len, const json_value *order, int kept) {
  strbuf sb;
  sb_init(&sb);
  sb_puts(&sb, "RuntimeWarning: laya.shortlist: question ");
  py_repr_str(&sb, qid_key->s, qid_len);
  sb_puts(&sb, ": 'option_order' (");
  if (order->type == JSON_ARRAY || order->type == JSON_OBJECT || order->type == JSON_STRING)
    sb_printf(&sb, "%u slots", order->n);
  else
    py_repr_json(&sb, order);
  sb_printf(&sb,
            ") was dropped because the label set was narrowed to %d; the order no longer fits the kept options "
            "and remapping it onto them would move options between slots.\n",
            kept);
  /* LAYA_QUIET_WARNINGS as laya_open read it; without a model (a Router's tournament, whose calls
   * each pick theirs) as it is now */
  int quiet = 0;
  if (m) {
    quiet = m->env.quiet_warnings;
  } else {
    laya_env_options o;
    laya_env_options_init(&o);
    if (!laya_env_options_read_one(&o, "LAYA_QUIET_WARNINGS", NULL)) quiet = o.quiet_warnings;
    laya_env_options_free(&o);
  }
  if (quiet <= 0) fputs(sb_cstr(&sb), stderr);
  sb_free(&sb);
}

int shortlist_request(const json_value *req, const char *fn, const json_value **state, const json_value **questions,
                      laya_error *err) {
  if (req->type != JSON_OBJECT)
    return laya_type_error(err, "%s() argument after ** must be a mapping, not %s", fn, json_py_type(req));
  *state = json_get(req, "state");
  *questions = json_get(req, "questions");
  if (!*state && !*questions)
    return laya_type_error(err, "%s() missing 2 required positional arguments: 'state' and 'questions'", fn);
  if (!*state) return laya_type_error(err, "%s() missing 1 required positional argument: 'state'", fn);
  if (!*questions) return laya_type_error(err, "%s() missing 1 required positional argument: 'questions'", fn);
  if ((*questions)->type != JSON_OBJECT)
    return laya_type_error(err, "questions must be a dict of question id -> definition");
  return 0;
}

int shortlist_no_criteria(const char *qid, size_t qid_len, laya_error *err) {
  strbuf r;
  sb_init(&r);
  py_repr_str(&r, qid, qid_len);
  laya_err(err, LAYA_ERR_VALUE, "ValueError", "question %s is a choice but has no criteria", sb_cstr(&r));
  sb_free(&r);
  return LAYA_ERR_VALUE;
}

int engine_run_shortlist(laya_model *m, const json_value *req, arena *a, shortlist_result *out, laya_error *err) {
  memset(out, 0, sizeof *out);
  const json_value *state, *questions;
  int rc = shortlist_request(req, "predict_shortlist", &state, &questions, err);
  if (rc) return rc;
  out->k_arg = json_get(req, "k");
  rc = check_k(out->k_arg, &out->k, err);
  if (rc) return rc;
  out->e = arena_alloc(a, sizeof *out->e * (questions->n + 1));
  json_value *reduced = arena_alloc(a, sizeof *reduced);
  json_member *qm = members_copy(questions, a, 0);
  if (!out->e || !reduced || !qm) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  *reduced = *questions;
  reduced->members = qm;
  for (uint32_t i = 0; i < questions->n; i++) {
    const json_value *q = &questions->members[i].value;
    const json_value *type = q->type == JSON_OBJECT ? json_get(q, "type") : NULL;
    if (!type || type->type != JSON_STRING || strcmp(type->s, "choice") != 0) continue;
    const json_value *crit = json_get(q, "criteria");
    if (!crit) return shortlist_no_criteria(questions->members[i].key, questions->members[i].key_len, err);
    shortlist_entry *e = &out->e[out->n];
    e->qid = questions->members[i].key;
    e->qid_len = questions->members[i].key_len;
    if ((rc = rank(m, state, crit, json_get(q, "instructions"), out->k, a, e, err))) return rc;
    out->n++;
    if (e->passthrough) continue;
    bool dropped = false;
    if ((rc = narrowed(q, crit, e, a, &qm[i].value, &dropped, err))) return rc;
    if (dropped) {
      e->order_dropped = true;
      json_value qk = json_string_n(e->qid, e->qid_len);
      shortlist_warn_dropped(m, &qk, e->qid_len, json_get(q, "option_order"), e->n_kept);
    }
  }
  /* predict(state, narrowed questions, **the other keyword arguments) */
  json_value *preq = arena_alloc(a, sizeof *preq);
  json_member *pm = members_copy(req, a, 0);
  if (!preq || !pm) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  uint32_t n = 0;
  for (uint32_t i = 0; i < req->n; i++) {
    if (!strcmp(req->members[i].key, "k")) continue;
    pm[n] = req->members[i];
    if (!strcmp(pm[n].key, "questions")) pm[n].value = *reduced;
    n++;
  }
  *preq = *req;
  preq->members = pm;
  preq->n = n;
  state_result *r = NULL;
  long nr = 0;
  if ((rc = engine_run_request(m, preq, false, a, &r, &nr, err))) return rc;
  out->r = r[0];
  return 0;
}

/* ---- the C API ---------------------------------------------------------------------------------- */

static int api_shortlist(void *ctx, const json_value *req, strbuf *out, laya_error *err) {
  laya_model *m = ctx;
  arena a;
  arena_init(&a, 1 << 14);
  shortlist_result s;
  int rc = engine_run_shortlist(m, req, &a, &s, err);
  if (!rc) {
    rj w;
    rj_init(&w, out, &RJ_PY);
    rj_shortlist(&w, &s, NULL);
  }
  arena_free(&a);
  return rc;
}

int laya_predict_shortlist(laya_model *m, const char *request_json, char **result_json, laya_error *err) {
  return json_call("laya_predict_shortlist", m, request_json, api_shortlist, m, result_json, err);
}

/* shortlist_choice(state, criteria, k=20, instructions=None, return_scores=False) */
static int api_choice(void *ctx, const json_value *req, strbuf *out, laya_error *err) {
  laya_model *m = ctx;
  if (req->type != JSON_OBJECT)
    return laya_type_error(err, "shortlist_choice() argument after ** must be a mapping, not %s", json_py_type(req));
  static const char *const keys[] = {"state", "criteria", "k", "instructions", "return_scores", NULL};
  for (uint32_t i = 0; i < req->n; i++) {
    bool known = false;
    for (int k = 0; keys[k] && !known; k++) known = !strcmp(keys[k], req->members[i].key);
    if (!known)
      return laya_type_error(err, "shortlist_choice() got an unexpected keyword argument '%s'", req->members[i].key);
  }
  const json_value *state = json_get(req, "state"), *crit = json_get(req, "criteria");
  if (!state && !crit)
    return laya_type_error(err, "shortlist_choice() missing 2 required positional arguments: 'state' and 'criteria'");
  if (!state) return laya_type_error(err, "shortlist_choice() missing 1 required positional argument: 'state'");
  if (!crit) return laya_type_error(err, "shortlist_choice() missing 1 required positional argument: 'criteria'");
  long long k;
  int rc = check_k(json_get(req, "k"), &k, err);
  if (rc) return rc;
  arena a;
  arena_init(&a, 1 << 12);
  shortlist_entry e;
  memset(&e, 0, sizeof e);
  rc = rank(m, state, crit, json_get(req, "instructions"), k, &a, &e, err);
  if (!rc) {
    rj w;
    rj_init(&w, out, &RJ_PY);
    rj_shortlist_choice(&w, &e, json_truthy(json_get(req, "return_scores")));
  }
  arena_free(&a);
  return rc;
}

int laya_shortlist_choice(laya_model *m, const char *request_json, char **result_json, laya_error *err) {
  return json_call("laya_shortlist_choice", m, request_json, api_choice, m, result_json, err);
}

/* embed_fn_from_agent(agent, max_length=512, batch_size=32)(texts) */
static int positive_int(const json_value *v, const char *name, int def, int *out, laya_error *err) {
  if (!v) {
    *out = def;
    return 0;
  }
  if (v->type == JSON_INT && !v->big && v->i >= 1 && v->i <= (1 << 30)) {
    *out = (int)v->i;
    return 0;
  }
  strbuf r;
  sb_init(&r);
  py_repr_json(&r, v);
  laya_err(err, LAYA_ERR_VALUE, "ValueError", "%s must be a positive integer, got %s", name, sb_cstr(&r));
  sb_free(&r);
  return LAYA_ERR_VALUE;
}

static int api_embed(void *ctx, const json_value *req, strbuf *out, laya_error *err) {
  laya_model *m = ctx;
  if (req->type != JSON_OBJECT) return laya_type_error(err, "laya_embed: the request must be an object, not %s", json_py_type(req));
  static const char *const keys[] = {"texts", "max_length", "batch_size", NULL};
  for (uint32_t i = 0; i < req->n; i++) {
    bool known = false;
    for (int k = 0; keys[k] && !known; k++) known = !strcmp(keys[k], req->members[i].key);
    if (!known) return laya_type_error(err, "laya_embed: unexpected key '%s'", req->members[i].key);
  }
  const json_value *texts = json_get(req, "texts");
  if (!texts || texts->type != JSON_ARRAY)
    return laya_type_error(err, "laya_embed: 'texts' must be a list of strings");
  embed_opts o = {0, 0, false};
  int rc;
  if ((rc = positive_int(json_get(req, "max_length"), "max_length", EMBED_DEFAULT_MAX_LENGTH, &o.max_length, err)) ||
      (rc = positive_int(json_get(req, "batch_size"), "batch_size", EMBED_DEFAULT_BATCH_SIZE, &o.batch_size, err)))
    return rc;
  const long n = texts->n;
  const int d = embed_dim(m);
  /* embed_fn_from_agent: None is "", anything else str() */
  strbuf *sb = calloc((size_t)n + 1, sizeof *sb);
  const char **tp = malloc(sizeof(char *) * ((size_t)n + 1));
  size_t *tl = malloc(sizeof(size_t) * ((size_t)n + 1));
  float *vec = malloc(sizeof(float) * (size_t)d * ((size_t)n + 1));
  if (!sb || !tp || !tl || !vec) rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  for (long i = 0; !rc && i < n; i++) {
    const json_value *t = &texts->items[i];
    if (t->type != JSON_NULL) label_str(&sb[i], t);
    tp[i] = sb[i].data ? sb[i].data : "";
    tl[i] = sb[i].len;
  }
  if (!rc) rc = embed_texts(m, tp, tl, n, &o, vec, err);
  if (!rc) {
    rj w;
    rj_init(&w, out, &RJ_PY);
    rj_embeddings(&w, vec, n, d);
  }
  for (long i = 0; sb && i < n; i++) sb_free(&sb[i]);
  free(sb);
  free(tp);
  free(tl);
  free(vec);
  return rc;
}

int laya_embed(laya_model *m, const char *request_json, char **result_json, laya_error *err) {
  return json_call("laya_embed", m, request_json, api_embed, m, result_json, err);
}

int laya_embed_dim(const laya_model *m) { return m ? embed_dim(m) : 0; }

int laya_embed_texts(laya_model *m, const char *const *texts, const size_t *lens, long n, float *out, laya_error *err) {
  laya_err_clear(err);
  if (!m || (n > 0 && (!texts || !lens || !out)))
    return laya_err(err, LAYA_ERR_VALUE, NULL, "laya_embed_texts: model, texts, lens and out must not be NULL");
  embed_opts o = {EMBED_DEFAULT_MAX_LENGTH, EMBED_DEFAULT_BATCH_SIZE, false};
  return embed_texts(m, texts, lens, n, &o, out, err);
}
