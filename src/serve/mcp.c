/* mcp.c: laya-mcp, Laya's typed-decision tools over the Model Context Protocol (stdio).
 *
 * Transport: one JSON-RPC 2.0 message per line on stdin/stdout, the legacy `initialize`
 * handshake (protocol revisions 2024-11-05 .. 2025-11-25); `server/discover` is answered
 * "method not found", which tells a current client to fall back to that handshake.
 *
 * Tools and their error codes follow Laya's MCP server: arguments are validated up front
 * (invalid_state, invalid_questions, invalid_model, invalid_task, invalid_lang,
 * invalid_lang_guess, invalid_max_len, invalid_head_max_len, invalid_min_confidence,
 * invalid_request, invalid_batch_size, invalid_hooks_timeout, invalid_preset, invalid_schema),
 * and a failure is an isError result whose text is {"error": code, "message": ...}. Results are
 * JSON text indented by 2, non-ASCII raw, as Laya writes them.
 *
 * Typed (docs/engine.md): a line is parsed once; a tool builds its engine request as a value from
 * the parsed arguments, runs the engine's typed call and writes its result once with
 * model/result_json.h (RJ_INDENT2). Remote mode posts the same values (mcp_remote_post).
 */
#include <assert.h>
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/result_json.h"
#include "model/typed.h"
#include "serve/mcp.h"
#include "serve/mcp_remote.h"

typedef struct tool_error {
  char code[48];
  strbuf msg;
} tool_error;

static int terr(tool_error *e, const char *code, const char *fmt, ...) LAYA_PRINTF(3, 4);
static int terr(tool_error *e, const char *code, const char *fmt, ...) {
  snprintf(e->code, sizeof e->code, "%s", code);
  sb_reset(&e->msg);
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  sb_puts(&e->msg, buf);
  return -1;
}

/* A message with a %r of a JSON value at the end: prefix + repr(v) + suffix. */
static int terr_repr(tool_error *e, const char *code, const char *prefix, const json_value *v,
                     const char *suffix) {
  snprintf(e->code, sizeof e->code, "%s", code);
  sb_reset(&e->msg);
  sb_puts(&e->msg, prefix);
  if (v)
    py_repr_json(&e->msg, v);
  else
    sb_puts(&e->msg, "None");
  sb_puts(&e->msg, suffix ? suffix : "");
  return -1;
}

static bool is_null(const json_value *v) { return !v || v->type == JSON_NULL; }

static bool str_eq(const json_value *v, const char *s) {
  return v && v->type == JSON_STRING && v->n == strlen(s) && !memcmp(v->s, s, v->n);
}

static bool py_strip_empty(const char *s) {
  for (; *s; s++)
    if (!(*s == ' ' || (*s >= 9 && *s <= 13))) return false;
  return true;
}

static json_value *new_value(arena *a, json_type t) {
  json_value *v = arena_alloc(a, sizeof *v);
  if (v) v->type = t;
  return v;
}

static void obj_add(arena *a, json_value *obj, const char *key, const json_value *val) {
  json_member *m = arena_alloc(a, (obj->n + 1) * sizeof *m);
  if (!m) return;
  if (obj->n) memcpy(m, obj->members, obj->n * sizeof *m);
  m[obj->n].key = key;
  m[obj->n].key_len = (uint32_t)strlen(key);
  m[obj->n].value = *val;
  obj->members = m;
  obj->n++;
}

/* ---- argument validation (Laya's laya/mcp/tools.py rules) ---- */

/* The HTTP server's limits (serve.h), applied before any work: Laya's MCP server has none, and
 * one call with 10,000 questions or 100,000 options would take gigabytes and minutes. */
static int validate_state_limits(const json_value *v, bool long_state, tool_error *e) {
  if (v->type == JSON_OBJECT) {
    /* json.dumps(state, ensure_ascii=False) as the engine reads it */
    strbuf sb;
    sb_init(&sb);
    json_dump_opts o = {NULL, NULL, false, -1};
    json_dump(&sb, v, &o);
    size_t n = utf8_cp_len(sb.data ? sb.data : "", sb.len);
    sb_free(&sb);
    if (!long_state && n > SERVE_MAX_STATE_CHARS)
      return terr(e, "invalid_state", "state too large (%zu > %d chars); laya_predict_long reads long states",
                  n, SERVE_MAX_STATE_CHARS);
  }
  return 0;
}

static int validate_state(const json_value *v, tool_error *e) {
  if (!v || v->type != JSON_OBJECT || v->n == 0)
    return terr(e, "invalid_state", "state must be a non-empty JSON object");
  return 0;
}

/* The caps check_question_limits applies to choices: the HTTP server's, or laya_shortlist's
 * (which narrows a choice before it is read) while that tool validates. One message at a time. */
static int choice_cap = SERVE_MAX_CHOICE_OPTIONS, total_cap = SERVE_MAX_TOTAL_OPTIONS;
/* false while a remote-mode tool validates (mode_questions): the server counts */
static bool count_limits = true;

/* Counts first, before any question is looked at: 64 questions, 100 choice options, 32 score
 * levels, 512 options in all. */
static int check_question_limits(const json_value *q, tool_error *e) {
  if (!count_limits) return 0;
  if (q->n > SERVE_MAX_QUESTIONS)
    return terr(e, "invalid_questions", "too many questions (%u > %d)", q->n, SERVE_MAX_QUESTIONS);
  long total = 0;
  for (uint32_t i = 0; i < q->n; i++) {
    const json_value *spec = &q->members[i].value;
    const json_value *type = spec->type == JSON_OBJECT ? json_get(spec, "type") : NULL;
    const json_value *crit = spec->type == JSON_OBJECT ? json_get(spec, "criteria") : NULL;
    if (!crit || (crit->type != JSON_OBJECT && crit->type != JSON_ARRAY)) continue;
    if (str_eq(type, "choice") && crit->n > (uint32_t)choice_cap)
      return terr(e, "invalid_questions", "too many choice options for questions[%s] (%u > %d)", q->members[i].key,
                  crit->n, choice_cap);
    if (str_eq(type, "score") && crit->n > SERVE_MAX_SCORE_LEVELS)
      return terr(e, "invalid_questions", "too many score levels for questions[%s] (%u > %d)", q->members[i].key,
                  crit->n, SERVE_MAX_SCORE_LEVELS);
    if (str_eq(type, "choice") || str_eq(type, "score")) total += crit->n;
  }
  if (total > total_cap)
    return terr(e, "invalid_questions", "too many answer options across questions (%ld > %d)", total, total_cap);
  return 0;
}

static int check_noul_labels(const char *name, const json_value *labels, tool_error *e) {
  const json_value *f = labels && labels->type == JSON_OBJECT ? json_get(labels, "false") : NULL;
  const json_value *t = labels && labels->type == JSON_OBJECT ? json_get(labels, "true") : NULL;
  if (!labels || labels->type != JSON_OBJECT || labels->n != 2 || !f || !t)
    return terr(e, "invalid_questions",
                "questions[%s].labels must map exactly 'false' and 'true' to distinct non-empty strings",
                name);
  if (f->type != JSON_STRING || t->type != JSON_STRING)
    return terr(e, "invalid_questions", "questions[%s].labels must give 'false' and 'true' string values, got ['%s', '%s']",
                name, json_py_type(f), json_py_type(t));
  /* strip() both and compare */
  const char *fs = f->s, *ts = t->s;
  size_t fl = f->n, tl = t->n;
  while (fl && (*fs == ' ' || (*fs >= 9 && *fs <= 13))) fs++, fl--;
  while (fl && (fs[fl - 1] == ' ' || (fs[fl - 1] >= 9 && fs[fl - 1] <= 13))) fl--;
  while (tl && (*ts == ' ' || (*ts >= 9 && *ts <= 13))) ts++, tl--;
  while (tl && (ts[tl - 1] == ' ' || (ts[tl - 1] >= 9 && ts[tl - 1] <= 13))) tl--;
  if (!fl || !tl || (fl == tl && !memcmp(fs, ts, fl)))
    return terr(e, "invalid_questions",
                "questions[%s].labels must give 'false' and 'true' distinct non-empty strings", name);
  return 0;
}

/* Laya's validate_questions: checks, and rebuilds each entry from the keys it knows. */
static json_value *validate_questions(const json_value *q, arena *a, tool_error *e) {
  if (!q || q->type != JSON_OBJECT || q->n == 0) {
    terr(e, "invalid_questions", "questions must be a non-empty JSON object keyed by question name");
    return NULL;
  }
  if (check_question_limits(q, e)) return NULL;
  json_value *out = new_value(a, JSON_OBJECT);
  if (!out) return NULL;
  for (uint32_t i = 0; i < q->n; i++) {
    const char *name = q->members[i].key;
    const json_value *spec = &q->members[i].value;
    if (!name[0]) {
      terr(e, "invalid_questions", "question name must be a non-empty string: ''");
      return NULL;
    }
    if (spec->type != JSON_OBJECT) {
      terr(e, "invalid_questions", "questions[%s] must be an object", name);
      return NULL;
    }
    const json_value *type = json_get(spec, "type");
    if (!(str_eq(type, "choice") || str_eq(type, "score") || str_eq(type, "noul"))) {
      strbuf pre;
      sb_init(&pre);
      sb_printf(&pre, "questions[%s].type must be one of ['choice', 'noul', 'score'], got ", name);
      terr_repr(e, "invalid_questions", sb_cstr(&pre), type, NULL);
      sb_free(&pre);
      return NULL;
    }
    const json_value *ins = json_get(spec, "instructions");
    if (!ins || ins->type != JSON_STRING || py_strip_empty(ins->s)) {
      terr(e, "invalid_questions", "questions[%s].instructions must be a non-empty string", name);
      return NULL;
    }
    json_value *entry = new_value(a, JSON_OBJECT);
    obj_add(a, entry, "type", type);
    obj_add(a, entry, "instructions", ins);
    const json_value *crit = json_get(spec, "criteria");
    size_t n_options = 2;
    if (str_eq(type, "choice")) {
      if (!crit || crit->type != JSON_OBJECT || crit->n == 0) {
        terr(e, "invalid_questions", "questions[%s].criteria must be a non-empty object of label -> description",
             name);
        return NULL;
      }
      obj_add(a, entry, "criteria", crit);
      n_options = crit->n;
    } else if (str_eq(type, "score")) {
      if (!crit || crit->type != JSON_ARRAY || crit->n == 0) {
        terr(e, "invalid_questions", "questions[%s].criteria must be a non-empty list of rubric levels", name);
        return NULL;
      }
      for (uint32_t k = 0; k < crit->n; k++)
        if (crit->items[k].type == JSON_NULL) {
          terr(e, "invalid_questions",
               "questions[%s].criteria has a null level at index %u; give every level a description", name, k);
          return NULL;
        }
      obj_add(a, entry, "criteria", crit);
      n_options = crit->n;
    } else if (!is_null(crit)) {
      if (crit->type != JSON_OBJECT) {
        terr(e, "invalid_questions", "questions[%s].criteria must be an object when present (noul)", name);
        return NULL;
      }
      bool bad = false;
      for (uint32_t k = 0; k < crit->n; k++) {
        char low[16];
        const char *key = crit->members[k].key;
        size_t kl = strlen(key);
        if (kl >= sizeof low) {
          bad = true;
          break;
        }
        for (size_t j = 0; j <= kl; j++) low[j] = (char)((key[j] >= 'A' && key[j] <= 'Z') ? key[j] + 32 : key[j]);
        if (strcmp(low, "true") && strcmp(low, "false")) bad = true;
      }
      if (bad) {
        /* sorted(set(lowercased keys)) */
        const char *keys[64];
        char lows[64][64];
        int nk = 0;
        for (uint32_t k = 0; k < crit->n && nk < 64; k++) {
          const char *key = crit->members[k].key;
          size_t j = 0;
          for (; key[j] && j < 63; j++) lows[nk][j] = (char)((key[j] >= 'A' && key[j] <= 'Z') ? key[j] + 32 : key[j]);
          lows[nk][j] = 0;
          bool dup = false;
          for (int d = 0; d < nk; d++) dup = dup || !strcmp(keys[d], lows[nk]);
          if (!dup) {
            keys[nk] = lows[nk];
            nk++;
          }
        }
        for (int x = 1; x < nk; x++)
          for (int y = x; y > 0 && strcmp(keys[y - 1], keys[y]) > 0; y--) {
            const char *t = keys[y];
            keys[y] = keys[y - 1];
            keys[y - 1] = t;
          }
        strbuf m;
        sb_init(&m);
        sb_printf(&m, "questions[%s].criteria must be keyed only 'true'/'false' (either or both, omitting it is fine), got [",
                  name);
        for (int x = 0; x < nk; x++) {
          if (x) sb_puts(&m, ", ");
          py_repr_str(&m, keys[x], strlen(keys[x]));
        }
        sb_puts(&m, "]. To word the answer differently set 'labels' instead.");
        terr(e, "invalid_questions", "%s", sb_cstr(&m));
        sb_free(&m);
        return NULL;
      }
      obj_add(a, entry, "criteria", crit);
    }
    const json_value *labels = json_get(spec, "labels");
    if (labels) {
      if (!str_eq(type, "noul")) {
        terr(e, "invalid_questions", "questions[%s].labels is only supported for noul questions", name);
        return NULL;
      }
      if (check_noul_labels(name, labels, e)) return NULL;
      obj_add(a, entry, "labels", labels);
    }
    const json_value *order = json_get(spec, "option_order");
    if (order) {
      bool ok = order->type == JSON_ARRAY && order->n == n_options;
      bool *seen = ok ? calloc(n_options ? n_options : 1, 1) : NULL;
      for (uint32_t k = 0; ok && k < order->n; k++) {
        const json_value *x = &order->items[k];
        if (x->type != JSON_INT || x->big || x->i < 0 || (size_t)x->i >= n_options || seen[x->i])
          ok = false;
        else
          seen[x->i] = true;
      }
      free(seen);
      if (!ok) {
        strbuf pre;
        sb_init(&pre);
        sb_printf(&pre, "questions[%s].option_order must be a permutation of range(%zu) -- one slot per option, each option once -- got ",
                  name, n_options);
        terr_repr(e, "invalid_questions", sb_cstr(&pre), order, NULL);
        sb_free(&pre);
        return NULL;
      }
      obj_add(a, entry, "option_order", order);
    }
    obj_add(a, out, name, entry);
  }
  return out;
}

/* "auto" -> "" ; a checkpoint name -> its canonical form; else invalid_model. */
static int validate_model(mcp_server *s, const json_value *v, char *out, size_t n, tool_error *e) {
  out[0] = 0;
  if (is_null(v)) return 0;
  if (v->type == JSON_STRING) {
    const char *p = v->s;
    while (*p == ' ' || (*p >= 9 && *p <= 13)) p++;
    if (!strncasecmp(p, "auto", 4) && py_strip_empty(p + 4)) return 0;
  }
  strbuf msg;
  sb_init(&msg);
  if (serve_models_resolve(s->models, v, out, n, &msg)) {
    out[0] = 0;
    terr(e, "invalid_model", "%s, or 'auto'", sb_cstr(&msg));
    sb_free(&msg);
    return -1;
  }
  sb_free(&msg);
  return 0;
}

static int validate_task(mcp_server *s, const json_value *v, tool_error *e) {
  if (is_null(v)) return 0;
  char out[64];
  strbuf msg;
  sb_init(&msg);
  strbuf t;
  sb_init(&t);
  if (v->type == JSON_STRING)
    sb_append(&t, v->s, v->n);
  else
    py_repr_json(&t, v);
  char *low = strdup(sb_cstr(&t));
  for (char *p = low; *p; p++) *p = (char)((*p >= 'A' && *p <= 'Z') ? *p + 32 : (*p == '-' ? '_' : *p));
  json_value td = {0};
  td.type = JSON_STRING;
  td.s = "typed-decisions";
  td.n = 15;
  int rc = serve_models_resolve(s->models, !strcmp(low, "typed_decisions") ? &td : v, out, sizeof out, &msg);
  if (rc) terr(e, "invalid_task", "%s, or 'typed_decisions'", sb_cstr(&msg));
  free(low);
  sb_free(&t);
  sb_free(&msg);
  return rc ? -1 : 0;
}

static int validate_lang_kind(const json_value *v, const char *name, tool_error *e) {
  if (is_null(v) || v->type == JSON_STRING) return 0;
  char code[48], pre[96];
  snprintf(code, sizeof code, "invalid_%s", name);
  snprintf(pre, sizeof pre, "%s must be a language code like 'en' or 'de', got ", name);
  return terr_repr(e, code, pre, v, NULL);
}

static long validate_budget(const json_value *v, const char *name, tool_error *e) {
  if (is_null(v)) return 0;
  if (v->type != JSON_INT || v->big || v->i < 1) {
    char code[48], pre[96];
    snprintf(code, sizeof code, "invalid_%s", name);
    snprintf(pre, sizeof pre, "%s must be a positive integer, got ", name);
    terr_repr(e, code, pre, v, NULL);
    return -1;
  }
  return (long)v->i;
}

/* The tools declare min_confidence a float, and the SDK's argument model turns an integer into one
 * before Laya sees it (so a message quotes -1 as -1.0). */
static const json_value *as_float_arg(const json_value *v, arena *a) {
  if (!v || v->type != JSON_INT || v->big) return v;
  json_value *f = new_value(a, JSON_FLOAT);
  if (!f) return v;
  f->d = (double)v->i;
  return f;
}

static int validate_min_conf(const json_value *v, tool_error *e) {
  if (is_null(v)) return 0;
  strbuf m;
  sb_init(&m);
  int rc = serve_check_min_confidence(v, &m);
  if (rc) terr(e, "invalid_min_confidence", "%s", sb_cstr(&m));
  sb_free(&m);
  return rc;
}

/* ---- running decisions ---- */

typedef struct controls {
  char model[64];             /* "" = auto */
  const json_value *task;
  const char *lang, *lang_guess;
  long max_len, head_max_len;
  const json_value *min_confidence;
} controls;

/* An engine request as a value, built from the parsed arguments (nothing is written or parsed
 * again): members in the order the text requests had. */
enum { REQ_MEMBERS = 16 };

static json_value *req_new(arena *a) {
  json_value *r = new_value(a, JSON_OBJECT);
  if (r) r->members = arena_alloc(a, REQ_MEMBERS * sizeof(json_member));
  return r && r->members ? r : NULL;
}

static void req_put(json_value *r, const char *key, json_value v) {
  assert(r->n < REQ_MEMBERS); /* the most any tool puts is 11 */
  if (r->n < REQ_MEMBERS) r->members[r->n++] = (json_member){key, (uint32_t)strlen(key), v};
}

/* An int value with its lexeme, as a parse would give it. */
static json_value int_value(arena *a, long x) {
  char b[24];
  int n = snprintf(b, sizeof b, "%ld", x);
  json_value v = {0};
  v.type = JSON_INT;
  v.i = x;
  v.d = (double)x;
  v.s = arena_strndup(a, b, (size_t)n);
  v.n = (uint32_t)n;
  return v;
}

/* questions, max_len, head_max_len, lang, min_confidence (the set ones). */
static void req_options(json_value *r, const json_value *questions, const controls *c, arena *a) {
  req_put(r, "questions", *questions);
  if (c->max_len) req_put(r, "max_len", int_value(a, c->max_len));
  if (c->head_max_len) req_put(r, "head_max_len", int_value(a, c->head_max_len));
  if (c->lang) req_put(r, "lang", json_string(c->lang));
  if (c->min_confidence) req_put(r, "min_confidence", *c->min_confidence);
}

/* Remote mode (LAYA_BASE_URL): the server routes, as Laya's RemoteRouter lets it: the request
 * carries the caller's model (null: route), task and lang_guess, and the answer's routing is the
 * server's. */
static void req_remote_controls(const mcp_server *s, json_value *r, const controls *c) {
  if (!s->remote) return;
  req_put(r, "model", c->model[0] ? json_string(c->model) : (json_value){.type = JSON_NULL});
  if (c->task) req_put(r, "task", *c->task);
  if (c->lang_guess) req_put(r, "lang_guess", json_string(c->lang_guess));
}

static int engine_failure(const laya_error *le, tool_error *e) {
  /* remote mode (mcp_remote.c): Laya's RemoteError codes */
  if (!strncmp(le->kind, "remote:", 7)) return terr(e, le->kind + 7, "%s", le->message);
  return terr(e, "internal_error", "%s: %s", le->kind[0] ? le->kind : "RuntimeError", le->message);
}

static void put_key(rj *w, const char *k) { rj_key(w, k, strlen(k)); }

/* "device": the device the checkpoint runs on, when the engine reports one. */
static void add_device(mcp_server *s, rj *w, const char *model) {
  laya_error le;
  void *m = serve_models_get(s->models, model, &le);
  const char *d = m && s->eng->device ? s->eng->device(s->eng->ctx, m) : NULL;
  if (!d || !*d) return;
  put_key(w, "device");
  rj_str(w, d, strlen(d));
}

/* key: ms, rounded to the microsecond as Laya reports latencies. */
static void add_ms(rj *w, const char *key, double ms) {
  put_key(w, key);
  rj_num(w, round(ms * 1000.0) / 1000.0);
}

/* Route one state as the controls ask; a routing ValueError is Laya's internal_error. */
static int route_state(mcp_server *s, const json_value *state, const json_value *questions, const controls *c,
                       serve_route *r, tool_error *e) {
  strbuf msg;
  sb_init(&msg);
  int rc = serve_models_route(s->models, state, questions, c->model[0] ? c->model : NULL, c->task, c->lang,
                              c->lang_guess, r, &msg);
  if (rc) terr(e, "internal_error", "ValueError: %s", sb_cstr(&msg));
  sb_free(&msg);
  return rc ? -1 : 0;
}

/* {"model", "repo", "reason"} of a route (laya_route's RouteDecision summary). */
static void route_summary(rj *w, const serve_route *r) {
  rj_obj(w);
  put_key(w, "model");
  rj_str(w, r->model, strlen(r->model));
  put_key(w, "repo");
  rj_str(w, r->repo ? r->repo : "None", r->repo ? strlen(r->repo) : 4);
  put_key(w, "reason");
  rj_str(w, r->reason ? r->reason : "", r->reason ? strlen(r->reason) : 0);
  rj_end_obj(w);
}

/* task and lang_guess choose between checkpoints: refused when the model is pinned. */
static int check_pinned(const controls *c, tool_error *e) {
  if (c->model[0] && c->task)
    return terr(e, "invalid_task", "task routes between checkpoints; with a pinned model there is nothing to route");
  if (c->model[0] && c->lang_guess)
    return terr(e, "invalid_lang_guess",
                "lang_guess routes between checkpoints; with a pinned model there is nothing to route");
  return 0;
}

/* predict (batch false) or predict_batch on checkpoint `model`, typed: the results (in a) and the
 * time it took, or -1 with the engine's error in le. */
static int run_predict(mcp_server *s, const char *model, const json_value *req, bool batch, arena *a,
                       const state_result **res, long *n, double *ms, laya_error *le) {
  laya_err_clear(le);
  double t0 = serve_now();
  void *m = serve_models_get(s->models, model, le);
  int rc = m ? s->eng->predict_values(s->eng->ctx, m, req, batch, a, res, n, le) : -1;
  *ms = (serve_now() - t0) * 1000.0;
  if (!rc && *n != (batch ? (long)json_get(req, "states")->n : 1))
    rc = laya_err(le, LAYA_ERR_INTERNAL, NULL, "the engine returned %ld results", *n);
  return rc == 0 ? 0 : -1;
}

static int no_engine(tool_error *e, const char *what) {
  return terr(e, "internal_error", "%s is not available in this build of laya.c", what);
}

/* validate_questions as the mode answers. In remote mode (LAYA_BASE_URL) the server applies its
 * own limits, the choice cap among them (100 options, or 255 when it runs tournaments,
 * LAYA_TOURNAMENT_GROUP), and refuses more with its 400/413, which comes back as invalid_request in
 * the server's words: what Laya's MCP server does, as it forwards every request. So the counts are
 * not capped here then (the work here stays bounded by the 2 MiB message line). */
static json_value *mode_questions(const mcp_server *s, const json_value *q, arena *a, tool_error *e) {
  count_limits = !s->remote;
  json_value *out = validate_questions(q, a, e);
  count_limits = true;
  return out;
}

/* The arguments a single-state tool checks first, in Laya's order: state, questions, model. */
static int state_questions_model(mcp_server *s, const json_value *args, arena *a, const json_value **state,
                                 json_value **questions, controls *c, bool long_state, tool_error *e) {
  memset(c, 0, sizeof *c);
  *state = json_get(args, "state");
  if (validate_state(*state, e)) return -1;
  *questions = mode_questions(s, json_get(args, "questions"), a, e);
  if (!*questions) return -1;
  if (!s->remote && validate_state_limits(*state, long_state, e)) return -1;
  return validate_model(s, json_get(args, "model"), c->model, sizeof c->model, e);
}

/* Remote mode: POST /v1/systemone; the server's answers (parsed once: its reply is outside input)
 * written as they came, with its routing when it sent one (else the local route's). */
static int remote_predict_one(mcp_server *s, const serve_route *r, const json_value *req, arena *a, rj *w,
                              tool_error *e) {
  laya_error le;
  laya_err_clear(&le);
  const json_value *v = NULL;
  double t0 = serve_now();
  int rc = mcp_remote_post(s->remote, "/v1/systemone", req, NULL, a, &v, &le);
  double ms = (serve_now() - t0) * 1000.0;
  if (rc) return engine_failure(&le, e);
  const json_value *answers = json_get(v, "answers"), *routing = json_get(v, "routing");
  if (!answers || answers->type != JSON_OBJECT) return terr(e, "internal_error", "predict returned non-object answers");
  rj_obj(w);
  put_key(w, "answers");
  rj_value(w, answers);
  put_key(w, "routing");
  if (routing)
    rj_value(w, routing);
  else
    rj_raw_styled(w, r->routing_json);
  add_ms(w, "latency_ms", ms);
  rj_end_obj(w);
  return 0;
}

/* {answers, routing, latency_ms, device?} for one state. */
static int predict_one(mcp_server *s, const json_value *state, const json_value *questions,
                       const controls *c, arena *a, rj *w, tool_error *e) {
  if (!s->remote && !s->eng->predict_values) return no_engine(e, "predict");
  json_value *req = req_new(a);
  if (!req) return terr(e, "internal_error", "out of memory");
  serve_route r = {0};
  if (route_state(s, state, questions, c, &r, e)) return -1;
  req_put(req, "state", *state);
  req_options(req, questions, c, a);
  if (s->remote) {
    req_remote_controls(s, req, c);
    int rc = remote_predict_one(s, &r, req, a, w, e);
    serve_route_free(&r);
    return rc;
  }
  laya_error le;
  const state_result *res = NULL;
  long n = 0;
  double ms;
  if (run_predict(s, r.model, req, false, a, &res, &n, &ms, &le)) {
    serve_route_free(&r);
    return engine_failure(&le, e);
  }
  rj_obj(w);
  put_key(w, "answers");
  rj_answers(w, &res[0]);
  put_key(w, "routing");
  rj_raw_styled(w, r.routing_json);
  add_ms(w, "latency_ms", ms);
  add_device(s, w, r.model);
  rj_end_obj(w);
  serve_route_free(&r);
  return 0;
}

static int tool_predict(mcp_server *s, const json_value *args, arena *a, rj *w, tool_error *e) {
  const json_value *state;
  json_value *questions;
  controls c;
  if (state_questions_model(s, args, a, &state, &questions, &c, false, e)) return -1;
  const json_value *task = json_get(args, "task");
  if (validate_task(s, task, e)) return -1;
  c.task = is_null(task) ? NULL : task;
  const json_value *lang = json_get(args, "lang"), *guess = json_get(args, "lang_guess");
  if (validate_lang_kind(lang, "lang", e)) return -1;
  c.lang = is_null(lang) ? NULL : lang->s;
  if ((c.max_len = validate_budget(json_get(args, "max_len"), "max_len", e)) < 0) return -1;
  if ((c.head_max_len = validate_budget(json_get(args, "head_max_len"), "head_max_len", e)) < 0) return -1;
  if (validate_lang_kind(guess, "lang_guess", e)) return -1;
  c.lang_guess = is_null(guess) ? NULL : guess->s;
  const json_value *mc = as_float_arg(json_get(args, "min_confidence"), a);
  if (validate_min_conf(mc, e)) return -1;
  c.min_confidence = is_null(mc) ? NULL : mc;
  if (check_pinned(&c, e)) return -1;
  return predict_one(s, state, questions, &c, a, w, e);
}

static int tool_route(mcp_server *s, const json_value *args, arena *a, rj *w, tool_error *e) {
  const json_value *state;
  json_value *questions;
  controls c;
  if (state_questions_model(s, args, a, &state, &questions, &c, false, e)) return -1;
  const json_value *task = json_get(args, "task"), *guess = json_get(args, "lang_guess"),
                   *lang = json_get(args, "lang");
  if (validate_task(s, task, e)) return -1;
  if (validate_lang_kind(guess, "lang_guess", e)) return -1;
  c.task = is_null(task) ? NULL : task;
  c.lang_guess = is_null(guess) ? NULL : guess->s;
  if (check_pinned(&c, e)) return -1;
  if (validate_lang_kind(lang, "lang", e)) return -1;
  c.lang = is_null(lang) ? NULL : lang->s;
  serve_route r = {0};
  if (route_state(s, state, questions, &c, &r, e)) return -1;
  route_summary(w, &r);
  serve_route_free(&r);
  return 0;
}

/* Laya's _validate_batch_item: one request of a batch tool. */
static int validate_batch_item(mcp_server *s, const json_value *item, uint32_t i, bool budgets, arena *a,
                               json_value **questions, controls *c, tool_error *e) {
  memset(c, 0, sizeof *c);
  if (!item || item->type != JSON_OBJECT)
    return terr(e, "invalid_request", "requests[%u] must be an object with 'state' and 'questions'", i);
  if (validate_state(json_get(item, "state"), e)) return -1;
  *questions = mode_questions(s, json_get(item, "questions"), a, e);
  if (!*questions) return -1;
  if (!s->remote && validate_state_limits(json_get(item, "state"), false, e)) return -1;
  const json_value *model = json_get(item, "model");
  if (model && !is_null(model)) {
    tool_error inner = {{0}, {0}};
    sb_init(&inner.msg);
    if (validate_model(s, model, c->model, sizeof c->model, &inner)) {
      terr(e, "invalid_model", "requests[%u]['model']: %s", i, sb_cstr(&inner.msg));
      sb_free(&inner.msg);
      return -1;
    }
    sb_free(&inner.msg);
  }
  static const char *const str_keys[] = {"task", "lang"};
  for (int k = 0; k < 2; k++) {
    const json_value *v = json_get(item, str_keys[k]);
    if (!v) continue;
    if (v->type != JSON_STRING || py_strip_empty(v->s)) {
      strbuf pre;
      sb_init(&pre);
      sb_printf(&pre, "requests[%u]['%s'] must be a non-empty string, got ", i, str_keys[k]);
      terr_repr(e, "invalid_request", sb_cstr(&pre), v, NULL);
      sb_free(&pre);
      return -1;
    }
    if (k == 0)
      c->task = v;
    else
      c->lang = v->s;
  }
  const json_value *guess = json_get(item, "lang_guess");
  if (guess) {
    if (validate_lang_kind(guess, "lang_guess", e)) return -1;
    c->lang_guess = is_null(guess) ? NULL : guess->s;
  }
  if (budgets) {
    static const char *const bk[] = {"max_len", "head_max_len"};
    for (int k = 0; k < 2; k++) {
      const json_value *v = json_get(item, bk[k]);
      if (!v) continue;
      tool_error inner = {{0}, {0}};
      sb_init(&inner.msg);
      long b = validate_budget(v, bk[k], &inner);
      if (b < 0) {
        terr(e, inner.code, "requests[%u]['%s']: %s", i, bk[k], sb_cstr(&inner.msg));
        sb_free(&inner.msg);
        return -1;
      }
      sb_free(&inner.msg);
      if (k == 0)
        c->max_len = b;
      else
        c->head_max_len = b;
    }
  }
  return 0;
}

/* The `requests` of a batch tool: a non-empty array, every item checked (Laya's order). */
static int validate_requests(mcp_server *s, const json_value *args, arena *a, const json_value **reqs_out,
                             controls **cs_out, json_value ***qs_out, tool_error *e) {
  const json_value *reqs = json_get(args, "requests");
  if (!reqs || reqs->type != JSON_ARRAY || reqs->n == 0)
    return terr(e, "invalid_request",
                "requests must be a non-empty array of {state, questions, model?, task?, lang?, lang_guess?, "
                "max_len?, head_max_len?} objects");
  if (reqs->n > SERVE_MAX_BATCH_STATES)
    return terr(e, "invalid_request", "too many requests in batch (%u > %d)", reqs->n, SERVE_MAX_BATCH_STATES);
  controls *cs = arena_alloc(a, reqs->n * sizeof *cs);
  json_value **qs = arena_alloc(a, reqs->n * sizeof *qs);
  for (uint32_t i = 0; i < reqs->n; i++)
    if (validate_batch_item(s, &reqs->items[i], i, true, a, &qs[i], &cs[i], e)) return -1;
  *reqs_out = reqs;
  *cs_out = cs;
  *qs_out = qs;
  return 0;
}

/* hooks_timeout: a positive number or None (0 counts as unset). */
static int validate_hooks_timeout(const json_value *args, tool_error *e) {
  const json_value *v = json_get(args, "hooks_timeout");
  if (v && v->type != JSON_BOOL && json_is_number(v) && v->d == 0) v = NULL;
  if (is_null(v)) return 0;
  if (v->type == JSON_BOOL)
    return terr_repr(e, "invalid_hooks_timeout", "hooks_timeout must be a positive number or None, got ", v, NULL);
  if (!(v->type == JSON_INT || v->type == JSON_FLOAT) || !isfinite(v->d) || v->d <= 0)
    return terr_repr(e, "invalid_hooks_timeout", "hooks_timeout must be a positive number or None, got ", v, NULL);
  return 0;
}

/* model_counts: how many requests each checkpoint answers, in first-seen order. */
typedef struct model_counts {
  const char **name;
  long *count;
  uint32_t n;
} model_counts;

static bool counts_init(model_counts *mc, arena *a, uint32_t cap) {
  mc->name = arena_alloc(a, cap * sizeof *mc->name);
  mc->count = arena_alloc(a, cap * sizeof *mc->count);
  mc->n = 0;
  return mc->name && mc->count;
}

static void counts_add(model_counts *mc, const char *model) {
  const char *key = model && *model ? model : "unknown";
  for (uint32_t i = 0; i < mc->n; i++)
    if (!strcmp(mc->name[i], key)) {
      mc->count[i]++;
      return;
    }
  mc->name[mc->n] = key;
  mc->count[mc->n++] = 1;
}

static void counts_write(rj *w, const model_counts *mc) {
  put_key(w, "model_counts");
  rj_obj(w);
  for (uint32_t i = 0; i < mc->n; i++) {
    put_key(w, mc->name[i]);
    rj_int(w, mc->count[i]);
  }
  rj_end_obj(w);
}

static void free_routes(serve_route *routes, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) serve_route_free(&routes[i]);
}

static int tool_route_batch(mcp_server *s, const json_value *args, arena *a, rj *w, tool_error *e) {
  const json_value *reqs;
  controls *cs;
  json_value **qs;
  if (validate_requests(s, args, a, &reqs, &cs, &qs, e)) return -1;
  if (validate_hooks_timeout(args, e)) return -1;
  uint32_t n = reqs->n;
  serve_route *routes = arena_alloc(a, n * sizeof *routes);
  model_counts counts;
  if (!routes || !counts_init(&counts, a, n)) return terr(e, "internal_error", "out of memory");
  memset(routes, 0, n * sizeof *routes);
  for (uint32_t i = 0; i < n; i++)
    if (route_state(s, json_get(&reqs->items[i], "state"), qs[i], &cs[i], &routes[i], e)) {
      free_routes(routes, i);
      return -1;
    }
  rj_obj(w);
  put_key(w, "decisions");
  rj_arr(w);
  for (uint32_t i = 0; i < n; i++) {
    rj_item(w);
    route_summary(w, &routes[i]);
    counts_add(&counts, routes[i].model);
  }
  rj_end_arr(w);
  counts_write(w, &counts);
  rj_end_obj(w);
  free_routes(routes, n);
  return 0;
}

/* The options part of a batch request as text: which requests may share one call (the same
 * checkpoint and these equal). A grouping key only, never parsed. */
static char *options_key(const mcp_server *s, const json_value *questions, const controls *c, long batch_size,
                         bool sort, arena *a) {
  json_dump_opts d = {NULL, NULL, false, -1};
  strbuf o;
  sb_init(&o);
  json_dump(&o, questions, &d);
  sb_printf(&o, "|%ld|%ld|", c->max_len, c->head_max_len);
  if (c->lang) {
    sb_putc(&o, 'L');
    json_dump_string(&o, c->lang, strlen(c->lang), false);
  }
  sb_putc(&o, '|');
  if (c->min_confidence) {
    sb_putc(&o, 'M');
    json_dump(&o, c->min_confidence, &d);
  }
  if (s->remote) { /* the request carries the caller's model, task and lang_guess too */
    sb_printf(&o, "|%s|", c->model);
    if (c->task) json_dump(&o, c->task, &d);
    sb_putc(&o, '|');
    if (c->lang_guess) json_dump_string(&o, c->lang_guess, strlen(c->lang_guess), false);
  }
  char *k = arena_strndup(a, sb_cstr(&o), o.len);
  sb_free(&o);
  (void)batch_size, (void)sort; /* the same for every request of the call */
  return k;
}

/* Remote mode: one POST /v1/systemone/batch for a group of k requests (picked out of the call's
 * by pick); each result (the server's, parsed once) in out[pick[j]]. */
static int remote_batch(mcp_server *s, const json_value *req, uint32_t k, const uint32_t *pick, arena *a,
                        const json_value **out, tool_error *e) {
  laya_error le;
  laya_err_clear(&le);
  const json_value *v = NULL;
  if (mcp_remote_post(s->remote, "/v1/systemone/batch", req, "results", a, &v, &le)) return engine_failure(&le, e);
  if (v->n != k)
    return terr(e, "internal_error", "predict_batch returned %u results for %u requests", v->n, k);
  for (uint32_t j = 0; j < k; j++) {
    const json_value *answers = json_get(&v->items[j], "answers");
    if (!answers || answers->type != JSON_OBJECT) return terr(e, "internal_error", "predict returned non-object answers");
    out[pick[j]] = &v->items[j];
  }
  return 0;
}

static int tool_predict_batch(mcp_server *s, const json_value *args, arena *a, rj *w, tool_error *e) {
  const json_value *reqs;
  controls *cs;
  json_value **qs;
  if (validate_requests(s, args, a, &reqs, &cs, &qs, e)) return -1;
  const json_value *bs = json_get(args, "batch_size");
  if (bs && bs->type == JSON_INT && !bs->big && bs->i == 0) bs = NULL;
  long batch_size = 0;
  if (!is_null(bs)) {
    if (bs->type != JSON_INT || bs->big || bs->i < 1)
      return terr_repr(e, "invalid_batch_size", "batch_size must be a positive integer, got ", bs, NULL);
    batch_size = (long)bs->i;
  }
  const json_value *mc = as_float_arg(json_get(args, "min_confidence"), a);
  if (validate_min_conf(mc, e)) return -1;
  if (validate_hooks_timeout(args, e)) return -1;
  const json_value *sbl = json_get(args, "sort_by_length");
  bool sort = sbl && sbl->type == JSON_BOOL && sbl->b;
  if (!s->remote && !s->eng->predict_values) return no_engine(e, "predict_batch");

  /* route every request, then answer each group (checkpoint, questions, budgets, lang) in one call */
  uint32_t n = reqs->n;
  serve_route *routes = arena_alloc(a, n * sizeof *routes);
  char **okeys = arena_alloc(a, n * sizeof *okeys);
  const state_result **results = arena_alloc(a, n * sizeof *results);
  const json_value **remote_res = arena_alloc(a, n * sizeof *remote_res); /* remote mode: the server's */
  bool *done = arena_alloc(a, n);
  uint32_t *pick = arena_alloc(a, n * sizeof *pick);
  json_value *states = arena_alloc(a, n * sizeof *states);
  model_counts counts;
  if (!routes || !okeys || !results || !remote_res || !done || !pick || !states || !counts_init(&counts, a, n))
    return terr(e, "internal_error", "out of memory");
  memset(routes, 0, n * sizeof *routes);
  memset(done, 0, n);
  for (uint32_t i = 0; i < n; i++) {
    if (!is_null(mc)) cs[i].min_confidence = mc;
    if (route_state(s, json_get(&reqs->items[i], "state"), qs[i], &cs[i], &routes[i], e)) {
      free_routes(routes, i);
      return -1;
    }
    okeys[i] = options_key(s, qs[i], &cs[i], batch_size, sort, a);
  }
  int rc = 0;
  double t0 = serve_now();
  for (uint32_t i = 0; i < n && rc == 0; i++) {
    if (done[i]) continue;
    uint32_t k = 0;
    for (uint32_t j = i; j < n; j++)
      if (!done[j] && !strcmp(routes[j].model, routes[i].model) && !strcmp(okeys[j], okeys[i])) {
        states[k] = *json_get(&reqs->items[j], "state");
        pick[k++] = j;
      }
    json_value *req = req_new(a);
    if (!req) {
      rc = terr(e, "internal_error", "out of memory");
      break;
    }
    req_put(req, "states", (json_value){.type = JSON_ARRAY, .n = k, .items = states});
    req_options(req, qs[i], &cs[i], a);
    req_remote_controls(s, req, &cs[i]);
    if (batch_size) req_put(req, "batch_size", int_value(a, batch_size));
    if (sort) req_put(req, "sort_by_length", (json_value){.type = JSON_BOOL, .b = true});
    laya_error le;
    if (s->remote) {
      if ((rc = remote_batch(s, req, k, pick, a, remote_res, e))) break;
      for (uint32_t j = 0; j < k; j++) done[pick[j]] = true;
      states += k;
      continue;
    }
    const state_result *res = NULL;
    long got = 0;
    double ms_unused;
    if (run_predict(s, routes[i].model, req, true, a, &res, &got, &ms_unused, &le)) {
      rc = engine_failure(&le, e);
      break;
    }
    for (uint32_t j = 0; j < k; j++) {
      results[pick[j]] = &res[j];
      done[pick[j]] = true;
    }
    states += k; /* the next group's states: this group's request still points at these */
  }
  double ms = (serve_now() - t0) * 1000.0;
  if (rc) {
    free_routes(routes, n);
    return -1;
  }
  rj_obj(w);
  put_key(w, "requests");
  rj_arr(w);
  for (uint32_t i = 0; i < n; i++) {
    rj_item(w);
    rj_obj(w);
    put_key(w, "answers");
    if (s->remote) {
      const json_value *routing = json_get(remote_res[i], "routing"), *m = routing ? json_get(routing, "model") : NULL;
      rj_value(w, json_get(remote_res[i], "answers"));
      put_key(w, "routing");
      if (routing)
        rj_value(w, routing);
      else
        rj_raw_styled(w, routes[i].routing_json);
      /* the server's routing names the checkpoint that answered */
      counts_add(&counts, !routing ? routes[i].model : m && m->type == JSON_STRING ? m->s : NULL);
    } else {
      rj_answers(w, results[i]);
      put_key(w, "routing");
      rj_raw_styled(w, routes[i].routing_json);
      counts_add(&counts, routes[i].model);
    }
    add_device(s, w, routes[i].model);
    rj_end_obj(w);
  }
  rj_end_arr(w);
  counts_write(w, &counts);
  add_ms(w, "total_latency_ms", ms);
  add_ms(w, "per_request_latency_ms", ms / n);
  rj_end_obj(w);
  free_routes(routes, n);
  return 0;
}

/* Remote mode: laya_predict_long, which laya-serve has no route for, fails after routing, as
 * Laya's RemoteRouter does. */
static int remote_refusal(mcp_server *s, serve_route *r, tool_error *e) {
  laya_error le;
  laya_err_clear(&le);
  if (serve_models_get(s->models, r->model, &le)) mcp_remote_refuse(s->remote, &le);
  serve_route_free(r);
  return engine_failure(&le, e);
}

/* laya_predict_long: the state scanned in windows; Laya's argument order and its routing report. */
static int tool_predict_long(mcp_server *s, const json_value *args, arena *a, rj *w, tool_error *e) {
  const json_value *state;
  json_value *questions;
  controls c;
  if (state_questions_model(s, args, a, &state, &questions, &c, true, e)) return -1;
  const json_value *task = json_get(args, "task"), *lang = json_get(args, "lang");
  if (validate_task(s, task, e)) return -1;
  if (validate_lang_kind(lang, "lang", e)) return -1;
  long window = validate_budget(json_get(args, "window"), "window", e);
  if (window < 0) return -1;
  long stride = validate_budget(json_get(args, "stride"), "stride", e);
  if (stride < 0) return -1;
  c.task = is_null(task) ? NULL : task;
  c.lang = is_null(lang) ? NULL : lang->s;
  if (check_pinned(&c, e)) return -1;
  if (!s->remote && !s->eng->predict_long_values) return no_engine(e, "predict_long");
  json_value *req = req_new(a);
  if (!req) return terr(e, "internal_error", "out of memory");
  serve_route r = {0};
  if (route_state(s, state, questions, &c, &r, e)) return -1;
  if (s->remote) return remote_refusal(s, &r, e);
  req_put(req, "state", *state);
  req_put(req, "questions", *questions);
  if (window) req_put(req, "window", int_value(a, window));
  if (stride) req_put(req, "stride", int_value(a, stride));
  if (c.lang) req_put(req, "lang", json_string(c.lang));
  laya_error le;
  laya_err_clear(&le);
  long_result l;
  double t0 = serve_now();
  void *m = serve_models_get(s->models, r.model, &le);
  int rc = m ? s->eng->predict_long_values(s->eng->ctx, m, req, a, &l, &le) : -1;
  double ms = (serve_now() - t0) * 1000.0;
  if (rc != 0) {
    serve_route_free(&r);
    return engine_failure(&le, e);
  }
  rj_obj(w);
  put_key(w, "answers");
  rj_long_answers(w, &l);
  put_key(w, "routing");
  if (c.model[0]) {
    rj_obj(w);
    put_key(w, "model");
    rj_str(w, c.model, strlen(c.model));
    put_key(w, "repo");
    rj_null(w);
    put_key(w, "reason");
    rj_str(w, "explicit model", 14);
    rj_end_obj(w);
  } else {
    rj_raw_styled(w, r.routing_json);
  }
  put_key(w, "windows");
  rj_int(w, l.windows);
  add_ms(w, "latency_ms", ms);
  add_device(s, w, r.model);
  rj_end_obj(w);
  serve_route_free(&r);
  return 0;
}

static const char *const PRESETS[] = {"email", "guard", "model_router", "moderation", "triage"};

static int tool_preset(mcp_server *s, const json_value *args, arena *a, rj *w, tool_error *e) {
  const json_value *preset = json_get(args, "preset");
  const char *name = NULL;
  if (preset && preset->type == JSON_STRING) {
    name = !strcmp(preset->s, "router") ? "model_router" : preset->s;
    bool known = false;
    for (size_t i = 0; i < 5; i++) known = known || !strcmp(name, PRESETS[i]);
    if (!known) name = NULL;
  }
  if (!name)
    return terr_repr(e, "invalid_preset",
                     "preset must be one of ['email', 'guard', 'model_router', 'moderation', 'triage'], got ",
                     preset, NULL);
  const json_value *state = json_get(args, "state");
  if (validate_state(state, e)) return -1;
  if (!s->preset_questions)
    return terr(e, "internal_error", "presets are not available in this build of laya.c");
  char *qtext = NULL, *field = NULL;
  if (s->preset_questions(name, &qtext, &field) != 0 || !qtext)
    return terr(e, "internal_error", "preset %s is not available in this build of laya.c", name);
  /* Parse (input, not output): the preset's question set, a JSON literal of model/presets.c
   * (data laya.c ships, never text it wrote), read as the caller's questions are */
  laya_error le;
  json_value *questions = json_parse(qtext, strlen(qtext), a, NULL, &le);
  free(qtext);
  json_value *st = (json_value *)state;
  /* a state holding one string goes under the field the preset reads */
  if (field && !json_get(state, field) && state->n == 1 && state->members[0].value.type == JSON_STRING) {
    st = new_value(a, JSON_OBJECT);
    obj_add(a, st, arena_strndup(a, field, strlen(field)), &state->members[0].value);
  }
  free(field);
  if (!questions) return terr(e, "internal_error", "preset %s has malformed questions", name);
  json_value targs = {0};
  targs.type = JSON_OBJECT;
  obj_add(a, &targs, "state", st);
  obj_add(a, &targs, "questions", questions);
  static const char *const pass[] = {"task", "lang", "lang_guess", "max_len", "head_max_len", "min_confidence"};
  for (int i = 0; i < 6; i++) {
    const json_value *v = json_get(args, pass[i]);
    if (v) obj_add(a, &targs, pass[i], v);
  }
  return tool_predict(s, &targs, a, w, e);
}

/* Remote mode: laya_decide as Laya's decide() over its RemoteRouter (mcp_remote_decide): the
 * server's answers projected onto the schema here, then its routing (else the local route's) and
 * its usage, as they came. */
static int remote_decide(mcp_server *s, serve_route *r, const json_value *state, const json_value *schema,
                         const controls *c, const json_value *mc, arena *a, rj *w, tool_error *e) {
  laya_error le;
  laya_err_clear(&le);
  decide_plan *plan = NULL;
  const json_value *v = NULL;
  double t0 = serve_now();
  int rc = serve_models_get(s->models, r->model, &le)
               ? mcp_remote_decide(s->remote, state, schema, c->model, is_null(mc) ? NULL : mc, a, &plan, &v, &le)
               : -1;
  double ms = (serve_now() - t0) * 1000.0;
  if (rc != 0) {
    serve_route_free(r);
    if (!strcmp(le.kind, "SchemaError")) return terr(e, "invalid_schema", "%s", le.message);
    return engine_failure(&le, e);
  }
  const json_value *routing = json_get(v, "routing"), *usage = json_get(v, "usage");
  rj_obj(w);
  decide_plan_members(plan, json_get(v, "answers"), w);
  put_key(w, "routing");
  if (!is_null(routing))
    rj_value(w, routing);
  else
    rj_raw_styled(w, r->routing_json);
  add_ms(w, "latency_ms", ms);
  if (usage && usage->type == JSON_OBJECT && usage->n) {
    put_key(w, "usage");
    rj_value(w, usage);
  }
  rj_end_obj(w);
  decide_plan_free(plan);
  serve_route_free(r);
  return 0;
}

static int tool_decide(mcp_server *s, const json_value *args, arena *a, rj *w, tool_error *e) {
  const json_value *state = json_get(args, "state");
  if (validate_state(state, e)) return -1;
  controls c = {0};
  if (validate_model(s, json_get(args, "model"), c.model, sizeof c.model, e)) return -1;
  const json_value *mc = as_float_arg(json_get(args, "min_confidence"), a);
  if (validate_min_conf(mc, e)) return -1;
  if (!s->remote && !s->eng->decide_values) return no_engine(e, "decide");
  const json_value *schema = json_get(args, "schema");
  json_value empty_q = {0};
  empty_q.type = JSON_OBJECT;
  json_value *req = req_new(a);
  if (!req) return terr(e, "internal_error", "out of memory");
  serve_route r = {0};
  if (route_state(s, state, &empty_q, &c, &r, e)) return -1;
  if (s->remote) return remote_decide(s, &r, state, schema, &c, mc, a, w, e);
  req_put(req, "state", *state);
  req_put(req, "schema", schema ? *schema : (json_value){.type = JSON_NULL});
  req_put(req, "return_details", (json_value){.type = JSON_BOOL, .b = true});
  if (!is_null(mc)) req_put(req, "min_confidence", *mc);
  laya_error le;
  laya_err_clear(&le);
  decide_result *d = NULL;
  double t0 = serve_now();
  void *m = serve_models_get(s->models, r.model, &le);
  int rc = m ? s->eng->decide_values(s->eng->ctx, m, req, &d, &le) : -1;
  double ms = (serve_now() - t0) * 1000.0;
  if (rc != 0) {
    serve_route_free(&r);
    if (!strcmp(le.kind, "SchemaError")) return terr(e, "invalid_schema", "%s", le.message);
    return engine_failure(&le, e);
  }
  rj_obj(w);
  static const char *const keys[] = {"values", "confidence", "probabilities"};
  for (int i = 0; i < 3; i++) {
    put_key(w, keys[i]);
    rj_decide_member(w, d, keys[i]);
  }
  put_key(w, "routing");
  rj_raw_styled(w, r.routing_json);
  add_ms(w, "latency_ms", ms);
  put_key(w, "usage");
  rj_decide_member(w, d, "usage");
  add_device(s, w, r.model);
  rj_end_obj(w);
  decide_result_free(d);
  serve_route_free(&r);
  return 0;
}

static int tool_status(mcp_server *s, const json_value *args, arena *a, rj *w, tool_error *e) {
  (void)args;
  (void)a;
  if (s->remote) { /* the server's own report (text mcp_remote.c wrote: restyled, not parsed) */
    laya_error re;
    laya_err_clear(&re);
    char *text = mcp_remote_status(s->remote, &re);
    if (!text) return engine_failure(&re, e);
    rj_raw_styled(w, text);
    free(text);
    return 0;
  }
  serve_health h;
  serve_models_health_members(s->models, &h);
  /* Laya's key order: device facts, then loaded, then router flags */
  static const char *const order[] = {"device", "device_is_preference", "checkpoint_devices", "loaded",
                                      "cpu_fallbacks", "precision", "checkpoint_precisions"};
  rj_obj(w);
  for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
    const char *v = serve_health_get(&h, order[i]);
    if (!v) continue;
    put_key(w, order[i]);
    rj_raw_styled(w, v);
  }
  serve_health_free(&h);
  put_key(w, "router_preload");
  rj_bool(w, s->cfg->preload);
  put_key(w, "router_ready");
  rj_bool(w, true);
  put_key(w, "engine");
  rj_str(w, "laya.c", 6);
  put_key(w, "package_versions");
  rj_obj(w);
  put_key(w, "laya.c");
  rj_str(w, LAYA_VERSION, strlen(LAYA_VERSION));
  put_key(w, "laya_compat");
  rj_str(w, LAYA_COMPAT_VERSION, strlen(LAYA_COMPAT_VERSION));
  rj_end_obj(w);
  rj_end_obj(w);
  return 0;
}

/* laya_shortlist: laya_predict's arguments plus k; every choice with more than k labels is narrowed
 * to the k closest by the answering checkpoint's own embeddings, then answered in one pass
 * (predict_shortlist, typed). {answers, routing, shortlist, latency_ms, option_order_dropped?,
 * device?}, as Laya's tool returns. */
/* laya_predict's controls after state, questions and model, in Laya's order of checks: task,
 * lang, lang_guess, max_len, head_max_len, min_confidence, then task / lang_guess with a pinned model. */
static int predict_controls(mcp_server *s, const json_value *args, arena *a, controls *c, tool_error *e) {
  const json_value *task = json_get(args, "task"), *lang = json_get(args, "lang"), *guess = json_get(args, "lang_guess");
  if (validate_task(s, task, e) || validate_lang_kind(lang, "lang", e) || validate_lang_kind(guess, "lang_guess", e))
    return -1;
  c->task = is_null(task) ? NULL : task;
  c->lang = is_null(lang) ? NULL : lang->s;
  c->lang_guess = is_null(guess) ? NULL : guess->s;
  if ((c->max_len = validate_budget(json_get(args, "max_len"), "max_len", e)) < 0) return -1;
  if ((c->head_max_len = validate_budget(json_get(args, "head_max_len"), "head_max_len", e)) < 0) return -1;
  const json_value *mc = as_float_arg(json_get(args, "min_confidence"), a);
  if (validate_min_conf(mc, e)) return -1;
  c->min_confidence = is_null(mc) ? NULL : mc;
  return check_pinned(c, e);
}

/* option_order_dropped: {qid: {"n", "kept"}} for each narrowed choice that lost its option_order;
 * call once per choice in order, then order_dropped_end. */
static void order_dropped(rj *w, bool *any, bool dropped, const char *qid, size_t qid_len, int n, int kept) {
  if (!dropped) return;
  if (!*any) {
    put_key(w, "option_order_dropped");
    rj_obj(w);
    *any = true;
  }
  rj_key(w, qid, qid_len);
  rj_obj(w);
  put_key(w, "n");
  rj_int(w, n);
  put_key(w, "kept");
  rj_int(w, kept);
  rj_end_obj(w);
}

static void order_dropped_end(rj *w, bool any) {
  if (any) rj_end_obj(w);
}

static int tool_shortlist(mcp_server *s, const json_value *args, arena *a, rj *w, tool_error *e) {
  /* laya-serve has no shortlist route: refused before any argument is read, as Laya refuses it */
  if (s->remote)
    return terr(e, "unsupported_remote",
                "laya_shortlist embeds options with the answering checkpoint in-process; it is not available when "
                "LAYA_BASE_URL points the MCP server at a remote laya-serve. Use laya_predict with head_max_len "
                "raised, or run the MCP server without LAYA_BASE_URL.");
  const json_value *state;
  json_value *questions;
  controls c;
  choice_cap = SERVE_SHORTLIST_MAX_LABELS;
  total_cap = SERVE_SHORTLIST_MAX_TOTAL;
  int rc = state_questions_model(s, args, a, &state, &questions, &c, false, e);
  choice_cap = SERVE_MAX_CHOICE_OPTIONS;
  total_cap = SERVE_MAX_TOTAL_OPTIONS;
  if (rc) return -1;
  if (predict_controls(s, args, a, &c, e)) return -1;
  const json_value *k = json_get(args, "k");
  if (!is_null(k) && (k->type != JSON_INT || (!k->big && k->i < 1) || (k->big && k->s[0] == '-')))
    return terr_repr(e, "invalid_k", "k must be a positive integer, got ", k, NULL);
  if (!s->eng->predict_shortlist_values) return terr(e, "internal_error", "this engine has no shortlist");
  json_value *req = req_new(a);
  if (!req) return terr(e, "internal_error", "out of memory");
  serve_route r = {0};
  if (route_state(s, state, questions, &c, &r, e)) return -1;
  req_put(req, "state", *state);
  req_options(req, questions, &c, a);
  req_put(req, "k", is_null(k) ? int_value(a, 20) : *k); /* laya.shortlist.DEFAULT_SHORTLIST_K */
  laya_error le;
  laya_err_clear(&le);
  shortlist_result sl;
  double t0 = serve_now();
  void *m = serve_models_get(s->models, r.model, &le);
  rc = m ? s->eng->predict_shortlist_values(s->eng->ctx, m, req, a, &sl, &le) : -1;
  double ms = (serve_now() - t0) * 1000.0;
  if (rc != 0) {
    serve_route_free(&r);
    return engine_failure(&le, e);
  }
  rj_obj(w);
  put_key(w, "answers");
  rj_answers(w, &sl.r);
  put_key(w, "routing");
  rj_raw_styled(w, r.routing_json);
  put_key(w, "shortlist");
  rj_shortlist_meta(w, &sl);
  add_ms(w, "latency_ms", ms);
  /* a narrowed choice loses its option_order: said per question, with the old and kept counts */
  bool any = false;
  for (int i = 0; i < sl.n; i++)
    order_dropped(w, &any, sl.e[i].order_dropped, sl.e[i].qid, sl.e[i].qid_len, sl.e[i].n, sl.e[i].n_kept);
  order_dropped_end(w, any);
  add_device(s, w, r.model);
  rj_end_obj(w);
  serve_route_free(&r);
  return 0;
}

/* An integer argument as pydantic's lax mode reads one: an int, a bool, an integral float, or a
 * string of decimal digits (sign and surrounding blanks allowed). Huge values saturate. */
static bool lax_int(const json_value *v, long long *out) {
  switch (v->type) {
    case JSON_INT: *out = v->big ? (v->s[0] == '-' ? LLONG_MIN : LLONG_MAX) : (long long)v->i; return true;
    case JSON_BOOL: *out = v->b; return true;
    case JSON_FLOAT:
      if (!isfinite(v->d) || v->d != floor(v->d)) return false;
      *out = v->d >= 9.2e18 ? LLONG_MAX : v->d <= -9.2e18 ? LLONG_MIN : (long long)v->d;
      return true;
    case JSON_STRING: {
      const char *p = v->s, *end = v->s + v->n;
      while (p < end && isspace((unsigned char)*p)) p++;
      while (end > p && isspace((unsigned char)end[-1])) end--;
      bool neg = p < end && *p == '-';
      if (p < end && (*p == '-' || *p == '+')) p++;
      if (p == end) return false;
      long long x = 0;
      for (; p < end; p++) {
        if (!isdigit((unsigned char)*p)) return false;
        x = x > (LLONG_MAX - 9) / 10 ? LLONG_MAX : x * 10 + (*p - '0');
      }
      *out = neg ? -x : x;
      return true;
    }
    default: return false;
  }
}

/* laya_tournament: Laya's predict_tournament in-process, on the checkpoint the request routes to
 * (routed once, then pinned for every round); the answers are the final pass's, over each narrowed
 * choice's finalists. */
static int tool_tournament(mcp_server *s, const json_value *args, arena *a, rj *w, tool_error *e) {
  if (s->remote)
    return terr(e, "unsupported_remote",
                "laya_tournament runs core tournament rounds in-process; it is not available when LAYA_BASE_URL "
                "points at laya-serve. Use laya_predict with LAYA_TOURNAMENT_GROUP enabled on that server, or run "
                "the MCP server without LAYA_BASE_URL.");
  const json_value *state;
  json_value *questions;
  controls c;
  choice_cap = SERVE_TOURNAMENT_MAX_LABELS;
  int rc = state_questions_model(s, args, a, &state, &questions, &c, false, e);
  choice_cap = SERVE_MAX_CHOICE_OPTIONS;
  if (rc) return -1;
  /* group_size as Laya's tool reads it (pydantic's lax int: true is 1, "8" and 8.0 are 8) */
  const json_value *group = json_get(args, "group_size");
  long long g = 16; /* laya.shortlist.DEFAULT_TOURNAMENT_GROUP */
  if (group && !lax_int(group, &g))
    return terr_repr(e, "invalid_group_size", "group_size must be an integer of at least 2, got ", group, NULL);
  if (g < 2) return terr(e, "invalid_group_size", "group_size must be an integer of at least 2, got %lld", g);
  if (predict_controls(s, args, a, &c, e)) return -1;
  if (!s->eng->predict_tournament_values) return no_engine(e, "tournament");
  json_value *req = req_new(a);
  if (!req) return terr(e, "internal_error", "out of memory");
  double t0 = serve_now();
  serve_route r = {0};
  if (route_state(s, state, questions, &c, &r, e)) return -1;
  req_put(req, "state", *state);
  req_options(req, questions, &c, a);
  /* a routed request's rounds read the state in the language its route detected (Laya pins the
   * routed checkpoint and passes that language to every round) */
  if (!c.model[0] && !c.lang && r.language[0]) req_put(req, "lang", json_string(arena_strndup(a, r.language, strlen(r.language))));
  req_put(req, "group_size", int_value(a, (long)g));
  laya_error le;
  laya_err_clear(&le);
  tournament_result t;
  void *m = serve_models_get(s->models, r.model, &le);
  rc = m ? s->eng->predict_tournament_values(s->eng->ctx, m, req, NULL, NULL, NULL, a, &t, &le) : -1;
  double ms = (serve_now() - t0) * 1000.0;
  if (rc != 0) {
    serve_route_free(&r);
    return engine_failure(&le, e);
  }
  rj_obj(w);
  put_key(w, "answers");
  rj_answers(w, &t.r);
  /* a routed request reports its route's summary (Laya routes once, then pins every round); a
   * pinned one the final pass's routing block */
  put_key(w, "routing");
  if (c.model[0])
    rj_raw_styled(w, r.routing_json);
  else
    route_summary(w, &r);
  add_ms(w, "latency_ms", ms);
  add_device(s, w, r.model);
  put_key(w, "tournament");
  rj_tournament_meta(w, &t);
  /* a narrowed choice loses its option_order: said per question, with the old and kept counts */
  bool any = false;
  for (int i = 0; i < t.n; i++)
    order_dropped(w, &any, t.e[i].order_dropped, t.e[i].qid, t.e[i].qid_len, t.e[i].n, t.e[i].n_left);
  order_dropped_end(w, any);
  rj_end_obj(w);
  serve_route_free(&r);
  return 0;
}

/* ---- tool table and JSON-RPC ---- */

/* A tool: its arguments checked (tool_error on a refusal, before anything is written), then its
 * result written with w (RJ_INDENT2; a tool that builds a json_value writes it with rj_value). */
typedef int (*tool_fn)(mcp_server *, const json_value *args, arena *, rj *w, tool_error *);

typedef struct tool_def {
  const char *name;
  tool_fn fn;
  const char *description;
  const char *schema; /* inputSchema JSON */
} tool_def;

#define S_STATE "\"state\":{\"type\":\"object\",\"description\":\"The input to decide about (a non-empty JSON object).\"}"
#define S_QUESTIONS                                                                                      \
  "\"questions\":{\"type\":\"object\",\"description\":\"{id: {type: choice|score|noul, instructions, " \
  "criteria?, labels?, option_order?}}\"}"
#define S_OPT_STR(n) "\"" n "\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}],\"default\":null}"
#define S_OPT_INT(n) "\"" n "\":{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"null\"}],\"default\":null}"
#define S_OPT_NUM(n) "\"" n "\":{\"anyOf\":[{\"type\":\"number\"},{\"type\":\"null\"}],\"default\":null}"
#define S_CONTROLS S_OPT_STR("task") "," S_OPT_STR("lang") "," S_OPT_STR("lang_guess") "," S_OPT_INT("max_len") \
  "," S_OPT_INT("head_max_len") "," S_OPT_NUM("min_confidence")

#define ABOUT                                                                                          \
  " Typed decisions only: choice (one label of a finite set), score (a level of an ordinal rubric), " \
  "noul (a calibrated probability that a statement is true). The answer is read off one encoder "     \
  "pass; nothing is generated. Not for open questions, summaries, rewriting or code."

static const tool_def TOOLS[] = {
    {"laya_status", tool_status,
     "Where the server computes (device per loaded checkpoint, or the configured preference when none is "
     "loaded yet), which checkpoints are loaded, and the engine version.",
     "{\"type\":\"object\",\"properties\":{}}"},
    {"laya_route", tool_route,
     "Which checkpoint would answer this request, and why, without running the model. Give the same "
     "model/task/lang/lang_guess as a laya_predict call to see the routing it would report." ABOUT,
     "{\"type\":\"object\",\"properties\":{" S_STATE "," S_QUESTIONS "," S_OPT_STR("model") "," S_OPT_STR(
         "task") "," S_OPT_STR("lang") "," S_OPT_STR("lang_guess") "},\"required\":[\"state\",\"questions\"]}"},
    {"laya_predict", tool_predict,
     "Answer typed questions about a state in one forward pass; returns each answer with its "
     "probabilities and confidence, the routing decision and the device. model: omitted, null or 'auto' "
     "routes automatically; a name pins a checkpoint. task and lang_guess only route, so they are refused "
     "with a pinned model. max_len/head_max_len override the token budgets for this call; min_confidence "
     "in [0, 1] flags answers below it as low_confidence." ABOUT,
     "{\"type\":\"object\",\"properties\":{" S_STATE "," S_QUESTIONS "," S_OPT_STR("model") "," S_CONTROLS
     "},\"required\":[\"state\",\"questions\"]}"},
    {"laya_predict_batch", tool_predict_batch,
     "Answer many requests in one call: requests is a non-empty array of {state, questions, model?, "
     "task?, lang?, lang_guess?, max_len?, head_max_len?}. Requests routed to the same checkpoint with "
     "the same questions and budgets share forward passes. Answers come back in input order with "
     "per-request routing, plus model_counts and latency." ABOUT,
     "{\"type\":\"object\",\"properties\":{\"requests\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}},"
     "\"batch_size\":{\"type\":\"integer\",\"default\":0},\"hooks_timeout\":{\"anyOf\":[{\"type\":\"number\"},{"
     "\"type\":\"null\"}],\"default\":0}," S_OPT_NUM("min_confidence") ",\"sort_by_length\":{\"type\":"
     "\"boolean\",\"default\":false}},\"required\":[\"requests\"]}"},
    {"laya_route_batch", tool_route_batch,
     "Routing decisions ({model, repo, reason}) for many requests without running the model or loading "
     "a checkpoint, plus model_counts." ABOUT,
     "{\"type\":\"object\",\"properties\":{\"requests\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}},"
     "\"hooks_timeout\":{\"type\":\"number\",\"default\":0}},\"required\":[\"requests\"]}"},
    {"laya_preset", tool_preset,
     "Run a built-in question set: 'guard', 'moderation', 'triage', 'model_router' (alias 'router') or "
     "'email'. A state holding a single string is placed under the field the preset reads." ABOUT,
     "{\"type\":\"object\",\"properties\":{\"preset\":{\"type\":\"string\"}," S_STATE "," S_CONTROLS
     "},\"required\":[\"preset\",\"state\"]}"},
    {"laya_decide", tool_decide,
     "Answer a decision described by a JSON schema (enum -> choice, boolean -> noul, bounded integer -> "
     "score) and return the decided values with per-field confidence and probabilities; a field below "
     "min_confidence comes back null." ABOUT,
     "{\"type\":\"object\",\"properties\":{" S_STATE ",\"schema\":{\"type\":\"object\"}," S_OPT_STR(
         "model") "," S_OPT_NUM("min_confidence") "},\"required\":[\"state\",\"schema\"]}"},
    {"laya_shortlist", tool_shortlist,
     "Shortlist each many-option choice question to its k labels most similar to the state (cosine of "
     "mean-pooled embeddings from the answering checkpoint's own encoder; no other model), then answer in "
     "one forward pass. Returns the answers (a shortlisted choice's probabilities cover its kept labels), "
     "the routing, and per choice question the shortlist: kept labels best first, their cosine scores "
     "(null when nothing was dropped), k, the label count n, and passthrough (n <= k: answered as given). "
     "A narrowed question's option_order is dropped and reported under option_order_dropped. Up to 10,000 "
     "labels per choice. head_max_len sets the token budget the kept labels share." ABOUT,
     "{\"type\":\"object\",\"properties\":{" S_STATE "," S_QUESTIONS "," S_OPT_STR("model") ",\"k\":{\"type\":"
     "\"integer\",\"default\":20}," S_CONTROLS "},\"required\":[\"state\",\"questions\"]}"},
    {"laya_tournament", tool_tournament,
     "Answer many-option choice questions by balanced elimination with the decision model, no embeddings: "
     "each choice over group_size labels (an integer of at least 2, default 16) is cut into groups, all "
     "groups share one forward pass per round, the group winners go on until they fit, then one final "
     "pass answers the whole request. Smaller choices and other questions are answered as given. Returns "
     "the answers (a narrowed choice's probabilities and confidence cover its finalists only), the "
     "routing, latency_ms, the device, and per choice question the tournament: labels (the finalists), n "
     "(the label count) and rounds (0: answered as given). A narrowed question's option_order is dropped "
     "and reported under option_order_dropped. Up to 255 labels per choice. Local checkpoints only: not "
     "with LAYA_BASE_URL." ABOUT,
     "{\"type\":\"object\",\"properties\":{" S_STATE "," S_QUESTIONS "," S_OPT_STR("model") ",\"group_size\":{"
     "\"type\":\"integer\",\"default\":16}," S_CONTROLS "},\"required\":[\"state\",\"questions\"]}"},
    {"laya_predict_long", tool_predict_long,
     "Answer typed questions about a state longer than one context window: the state is read in "
     "overlapping windows and each answer comes from the window that decides it (the strongest for "
     "noul, the most confident for choice and score), with that window's position and the window "
     "count. window and stride (positive integers) size the scan; unset means the checkpoint's budget "
     "and half-window overlap." ABOUT,
     "{\"type\":\"object\",\"properties\":{" S_STATE "," S_QUESTIONS ",\"model\":{\"type\":\"string\","
     "\"default\":\"auto\"}," S_OPT_INT("window") "," S_OPT_INT("stride") "," S_OPT_STR("task") "," S_OPT_STR(
         "lang") "},\"required\":[\"state\",\"questions\"]}"},
};
#define N_TOOLS (sizeof TOOLS / sizeof *TOOLS)

static const char *const VERSIONS[] = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"};

static void write_line(mcp_server *s, strbuf *sb) {
  sb_putc(sb, '\n');
  fwrite(sb->data, 1, sb->len, s->out);
  fflush(s->out);
}

static void reply_result(mcp_server *s, const json_value *id, const char *result_json) {
  strbuf sb;
  sb_init(&sb);
  json_dump_opts d = {",", ":", false, -1};
  sb_puts(&sb, "{\"jsonrpc\":\"2.0\",\"id\":");
  json_dump(&sb, id, &d);
  sb_puts(&sb, ",\"result\":"); /* not sb_printf: the result is long, vsnprintf would run twice */
  sb_puts(&sb, result_json);
  sb_putc(&sb, '}');
  write_line(s, &sb);
  sb_free(&sb);
}

static void reply_error(mcp_server *s, const json_value *id, int code, const char *message) {
  strbuf sb;
  sb_init(&sb);
  json_dump_opts d = {",", ":", false, -1};
  sb_puts(&sb, "{\"jsonrpc\":\"2.0\",\"id\":");
  if (id)
    json_dump(&sb, id, &d);
  else
    sb_puts(&sb, "null");
  sb_printf(&sb, ",\"error\":{\"code\":%d,\"message\":", code);
  json_dump_string(&sb, message, strlen(message), false);
  sb_puts(&sb, "}}");
  write_line(s, &sb);
  sb_free(&sb);
}

static void text_result(strbuf *sb, const char *text, size_t n, bool is_error) {
  sb_puts(sb, "{\"content\":[{\"type\":\"text\",\"text\":");
  json_dump_string(sb, text, n, false);
  sb_printf(sb, "}],\"isError\":%s}", is_error ? "true" : "false");
}

static void call_tool(mcp_server *s, const json_value *id, const json_value *params) {
  const json_value *name = params ? json_get(params, "name") : NULL;
  const json_value *args = params ? json_get(params, "arguments") : NULL;
  static json_value empty = {.type = JSON_OBJECT};
  if (!args || args->type != JSON_OBJECT) args = &empty;
  strbuf res;
  sb_init(&res);
  const tool_def *t = NULL;
  for (size_t i = 0; name && name->type == JSON_STRING && i < N_TOOLS; i++)
    if (!strcmp(TOOLS[i].name, name->s)) t = &TOOLS[i];
  if (!t) {
    strbuf m;
    sb_init(&m);
    sb_printf(&m, "Unknown tool: %s", name && name->type == JSON_STRING ? name->s : "");
    text_result(&res, m.data, m.len, true);
    sb_free(&m);
  } else {
    arena a;
    arena_init(&a, 1 << 16);
    tool_error e;
    e.code[0] = 0;
    sb_init(&e.msg);
    json_dump_opts ind = {NULL, NULL, false, 2};
    strbuf text;
    sb_init(&text);
    rj w;
    rj_init(&w, &text, &RJ_INDENT2);
    if (t->fn(s, args, &a, &w, &e) == 0 && !text.oom) {
      text_result(&res, text.data, text.len, false);
    } else {
      sb_reset(&text);
      json_value *err = new_value(&a, JSON_OBJECT);
      json_value c = {0}, m = {0};
      c.type = m.type = JSON_STRING;
      c.s = e.code[0] ? e.code : "internal_error";
      c.n = (uint32_t)strlen(c.s);
      m.s = sb_cstr(&e.msg);
      m.n = (uint32_t)e.msg.len;
      obj_add(&a, err, "error", &c);
      obj_add(&a, err, "message", &m);
      /* the MCP SDK's ToolError text, as Laya's clients see it */
      sb_printf(&text, "Error executing tool %s: ", t->name);
      json_dump(&text, err, &ind);
      text_result(&res, text.data, text.len, true);
    }
    sb_free(&text);
    sb_free(&e.msg);
    arena_free(&a);
  }
  reply_result(s, id, sb_cstr(&res));
  sb_free(&res);
}

static void handle(mcp_server *s, const json_value *msg) {
  const json_value *method = json_get(msg, "method");
  const json_value *id = json_get(msg, "id");
  const json_value *params = json_get(msg, "params");
  if (!method || method->type != JSON_STRING) {
    if (id) reply_error(s, id, -32600, "Invalid Request");
    return; /* a response from the client: nothing asked of us */
  }
  if (!id) return; /* notifications (initialized, cancelled, ...) need no answer */
  const char *m = method->s;
  if (!strcmp(m, "initialize")) {
    const json_value *pv = params ? json_get(params, "protocolVersion") : NULL;
    const char *version = VERSIONS[3];
    for (size_t i = 0; pv && pv->type == JSON_STRING && i < 4; i++)
      if (!strcmp(pv->s, VERSIONS[i])) version = VERSIONS[i];
    strbuf r;
    sb_init(&r);
    sb_printf(&r, "{\"protocolVersion\":\"%s\",\"capabilities\":{\"tools\":{\"listChanged\":false}},"
                  "\"serverInfo\":{\"name\":\"laya-mcp\",\"title\":\"laya-mcp (laya.c, Laya %s compatible)\","
                  "\"version\":\"%s\"}}",
              version, LAYA_COMPAT_VERSION, LAYA_VERSION);
    reply_result(s, id, r.data);
    sb_free(&r);
  } else if (!strcmp(m, "ping")) {
    reply_result(s, id, "{}");
  } else if (!strcmp(m, "tools/list")) {
    strbuf r;
    sb_init(&r);
    sb_puts(&r, "{\"tools\":[");
    for (size_t i = 0; i < N_TOOLS; i++) {
      if (i) sb_putc(&r, ',');
      sb_printf(&r, "{\"name\":\"%s\",\"description\":", TOOLS[i].name);
      json_dump_string(&r, TOOLS[i].description, strlen(TOOLS[i].description), false);
      sb_printf(&r, ",\"inputSchema\":%s}", TOOLS[i].schema);
    }
    sb_puts(&r, "]}");
    reply_result(s, id, r.data);
    sb_free(&r);
  } else if (!strcmp(m, "tools/call")) {
    call_tool(s, id, params);
  } else if (!strcmp(m, "resources/list")) {
    reply_result(s, id, "{\"resources\":[]}");
  } else if (!strcmp(m, "prompts/list")) {
    reply_result(s, id, "{\"prompts\":[]}");
  } else {
    reply_error(s, id, -32601, "Method not found");
  }
}

void mcp_handle_line(mcp_server *s, const char *line, size_t len) {
  while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
  if (!len) return;
  arena a;
  arena_init(&a, 1 << 14);
  laya_error e;
  /* Parse (outside input): the client's JSON-RPC line, the one parse of a message */
  json_value *v = json_parse(line, len, &a, NULL, &e);
  if (!v) {
    reply_error(s, NULL, -32700, "Parse error");
  } else if (v->type == JSON_ARRAY) {
    for (uint32_t i = 0; i < v->n; i++)
      if (v->items[i].type == JSON_OBJECT) handle(s, &v->items[i]);
  } else if (v->type == JSON_OBJECT) {
    handle(s, v);
  } else {
    reply_error(s, NULL, -32600, "Invalid Request");
  }
  arena_free(&a);
}

/* One message a line, at most SERVE_MAX_BODY_BYTES (the HTTP server's body cap): a longer line is
 * read to its end without being kept and answered with a JSON-RPC error. */
int mcp_run(mcp_server *s, FILE *in) {
  strbuf line;
  sb_init(&line);
  bool over = false;
  char buf[65536];
  for (;;) {
    if (!fgets(buf, sizeof buf, in)) break;
    size_t n = strlen(buf);
    bool end = n && buf[n - 1] == '\n';
    if (!over) {
      if (line.len + n > SERVE_MAX_BODY_BYTES + 2) {
        over = true;
        sb_free(&line);
      } else {
        sb_append(&line, buf, n);
      }
    }
    if (!end && !feof(in)) continue;
    if (over)
      reply_error(s, NULL, -32600, "Invalid Request: message larger than 2097152 bytes");
    else
      mcp_handle_line(s, line.data ? line.data : "", line.len);
    sb_reset(&line);
    over = false;
  }
  if (over) reply_error(s, NULL, -32600, "Invalid Request: message larger than 2097152 bytes");
  else if (line.len) mcp_handle_line(s, line.data, line.len);
  sb_free(&line);
  return 0;
}
