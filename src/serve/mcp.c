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
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Engine answers keep repeated keys (labels that render alike), as Laya's json.dumps writes them. */
static const json_parse_opts RESULT_OPTS = {0, false, false, true};

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

/* Counts first, before any question is looked at: 64 questions, 100 choice options, 32 score
 * levels, 512 options in all. */
static int check_question_limits(const json_value *q, tool_error *e) {
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

static void options_json(const json_value *questions, const controls *c, strbuf *o) {
  json_dump_opts d = {NULL, NULL, false, -1};
  sb_puts(o, "\"questions\": ");
  json_dump(o, questions, &d);
  if (c->max_len) sb_printf(o, ", \"max_len\": %ld", c->max_len);
  if (c->head_max_len) sb_printf(o, ", \"head_max_len\": %ld", c->head_max_len);
  if (c->lang) {
    sb_puts(o, ", \"lang\": ");
    json_dump_string(o, c->lang, strlen(c->lang), false);
  }
  if (c->min_confidence) {
    sb_puts(o, ", \"min_confidence\": ");
    json_dump(o, c->min_confidence, &d);
  }
}

/* Remote mode (LAYA_BASE_URL): the server routes, as Laya's RemoteRouter lets it: the request
 * carries the caller's model (null: route), task and lang_guess, and the answer's routing is the
 * server's. */
static void remote_controls(const mcp_server *s, const controls *c, strbuf *o) {
  if (!s->remote) return;
  json_dump_opts d = {NULL, NULL, false, -1};
  sb_puts(o, ", \"model\": ");
  if (c->model[0])
    json_dump_string(o, c->model, strlen(c->model), false);
  else
    sb_puts(o, "null");
  if (c->task) {
    sb_puts(o, ", \"task\": ");
    json_dump(o, c->task, &d);
  }
  if (c->lang_guess) {
    sb_puts(o, ", \"lang_guess\": ");
    json_dump_string(o, c->lang_guess, strlen(c->lang_guess), false);
  }
}

static int engine_failure(const laya_error *le, tool_error *e) {
  /* remote mode (mcp_remote.c): Laya's RemoteError codes */
  if (!strncmp(le->kind, "remote:", 7)) return terr(e, le->kind + 7, "%s", le->message);
  return terr(e, "internal_error", "%s: %s", le->kind[0] ? le->kind : "RuntimeError", le->message);
}

/* o["device"] = the device the checkpoint runs on, when the engine reports one. */
static void add_device(mcp_server *s, arena *a, json_value *o, const char *model) {
  laya_error le;
  void *m = serve_models_get(s->models, model, &le);
  const char *info = m && s->eng->info ? s->eng->info(s->eng->ctx, m) : NULL;
  if (!info) return;
  arena tmp;
  arena_init(&tmp, 2048);
  json_value *v = json_parse(info, strlen(info), &tmp, NULL, &le);
  const json_value *d = v ? json_get(v, "device") : NULL;
  if (d && d->type == JSON_STRING && d->n) {
    json_value *dv = new_value(a, JSON_STRING);
    dv->s = arena_strndup(a, d->s, d->n);
    dv->n = d->n;
    obj_add(a, o, "device", dv);
  }
  arena_free(&tmp);
}

/* o[key] = ms, rounded to the microsecond as Laya reports latencies. */
static void add_ms(arena *a, json_value *o, const char *key, double ms) {
  json_value *v = new_value(a, JSON_FLOAT);
  v->d = round(ms * 1000.0) / 1000.0;
  obj_add(a, o, key, v);
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

/* {"model", "repo", "reason"} of a routing block (laya_route's RouteDecision summary). */
static json_value *route_summary(arena *a, const char *routing_json) {
  laya_error le;
  json_value *full = json_parse(routing_json, strlen(routing_json), a, NULL, &le);
  json_value *o = new_value(a, JSON_OBJECT);
  static const char *const keys[] = {"model", "repo", "reason"};
  static json_value null_v = {.type = JSON_NULL};
  for (int i = 0; i < 3; i++) {
    const json_value *x = full ? json_get(full, keys[i]) : NULL;
    obj_add(a, o, keys[i], x ? x : &null_v);
  }
  return o;
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

typedef int (*engine_call_fn)(void *ctx, void *model, const char *request_json, char **result_json,
                              laya_error *err);

/* Run one engine entry point on checkpoint `model`: its parsed result (in a) and the time it
 * took, or -1 with the engine's error in le. */
static int run_engine(mcp_server *s, engine_call_fn fn, const char *model, const strbuf *req, arena *a,
                      json_value **result, double *ms, laya_error *le) {
  laya_err_clear(le);
  double t0 = serve_now();
  void *m = serve_models_get(s->models, model, le);
  char *res = NULL;
  int rc = m ? fn(s->eng->ctx, m, req->data, &res, le) : -1;
  *ms = (serve_now() - t0) * 1000.0;
  *result = rc == 0 ? json_parse(res, strlen(res), a, &RESULT_OPTS, le) : NULL;
  laya_free(res);
  return rc == 0 ? 0 : -1;
}

/* `{"state": <state>` , the start of every single-state engine request. */
static void request_with_state(strbuf *req, const json_value *state) {
  json_dump_opts d = {NULL, NULL, false, -1};
  sb_puts(req, "{\"state\": ");
  json_dump(req, state, &d);
}

/* The arguments a single-state tool checks first, in Laya's order: state, questions, model. */
static int state_questions_model(mcp_server *s, const json_value *args, arena *a, const json_value **state,
                                 json_value **questions, controls *c, bool long_state, tool_error *e) {
  memset(c, 0, sizeof *c);
  *state = json_get(args, "state");
  if (validate_state(*state, e)) return -1;
  *questions = validate_questions(json_get(args, "questions"), a, e);
  if (!*questions) return -1;
  if (validate_state_limits(*state, long_state, e)) return -1;
  return validate_model(s, json_get(args, "model"), c->model, sizeof c->model, e);
}

/* {answers, routing, latency_ms, device?} for one state. */
static int predict_one(mcp_server *s, const json_value *state, const json_value *questions,
                       const controls *c, arena *a, json_value **out, tool_error *e) {
  serve_route r = {0};
  if (route_state(s, state, questions, c, &r, e)) return -1;
  strbuf req;
  sb_init(&req);
  request_with_state(&req, state);
  sb_puts(&req, ", ");
  options_json(questions, c, &req);
  remote_controls(s, c, &req);
  sb_putc(&req, '}');
  laya_error le;
  json_value *v = NULL;
  double ms;
  int rc = run_engine(s, s->eng->predict, r.model, &req, a, &v, &ms, &le);
  sb_free(&req);
  if (rc != 0) {
    serve_route_free(&r);
    return engine_failure(&le, e);
  }
  json_value *routing = json_parse(r.routing_json, strlen(r.routing_json), a, NULL, &le);
  serve_route_free(&r);
  if (s->remote && v && json_get(v, "routing")) routing = (json_value *)json_get(v, "routing");
  const json_value *answers = v ? json_get(v, "answers") : NULL;
  if (!answers || answers->type != JSON_OBJECT) return terr(e, "internal_error", "predict returned non-object answers");
  json_value *o = new_value(a, JSON_OBJECT);
  obj_add(a, o, "answers", answers);
  if (routing) obj_add(a, o, "routing", routing);
  add_ms(a, o, "latency_ms", ms);
  add_device(s, a, o, r.model);
  *out = o;
  return 0;
}

static int tool_predict(mcp_server *s, const json_value *args, arena *a, json_value **out, tool_error *e) {
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
  return predict_one(s, state, questions, &c, a, out, e);
}

static int tool_route(mcp_server *s, const json_value *args, arena *a, json_value **out, tool_error *e) {
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
  *out = route_summary(a, r.routing_json);
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
  *questions = validate_questions(json_get(item, "questions"), a, e);
  if (!*questions) return -1;
  if (validate_state_limits(json_get(item, "state"), false, e)) return -1;
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

static void add_model_count(arena *a, json_value *counts, const json_value *routing) {
  const json_value *m = routing ? json_get(routing, "model") : NULL;
  const char *key = (m && m->type == JSON_STRING && m->n) ? m->s : "unknown";
  for (uint32_t i = 0; i < counts->n; i++)
    if (!strcmp(counts->members[i].key, key)) {
      counts->members[i].value.i++;
      counts->members[i].value.d++;
      return;
    }
  json_value one = {0};
  one.type = JSON_INT;
  one.i = 1;
  one.d = 1;
  obj_add(a, counts, arena_strndup(a, key, strlen(key)), &one);
}

static int tool_route_batch(mcp_server *s, const json_value *args, arena *a, json_value **out, tool_error *e) {
  const json_value *reqs;
  controls *cs;
  json_value **qs;
  if (validate_requests(s, args, a, &reqs, &cs, &qs, e)) return -1;
  if (validate_hooks_timeout(args, e)) return -1;
  json_value *decisions = new_value(a, JSON_ARRAY);
  decisions->items = arena_alloc(a, reqs->n * sizeof(json_value));
  json_value *counts = new_value(a, JSON_OBJECT);
  for (uint32_t i = 0; i < reqs->n; i++) {
    serve_route r = {0};
    if (route_state(s, json_get(&reqs->items[i], "state"), qs[i], &cs[i], &r, e)) return -1;
    json_value *d = route_summary(a, r.routing_json);
    serve_route_free(&r);
    decisions->items[decisions->n++] = *d;
    add_model_count(a, counts, d);
  }
  json_value *o = new_value(a, JSON_OBJECT);
  obj_add(a, o, "decisions", decisions);
  obj_add(a, o, "model_counts", counts);
  *out = o;
  return 0;
}

static int tool_predict_batch(mcp_server *s, const json_value *args, arena *a, json_value **out, tool_error *e) {
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

  /* route every request, then answer each group (checkpoint, questions, budgets, lang) in one call */
  uint32_t n = reqs->n;
  serve_route *routes = arena_alloc(a, n * sizeof *routes);
  char **okeys = arena_alloc(a, n * sizeof *okeys);
  for (uint32_t i = 0; i < n; i++) {
    if (!is_null(mc)) cs[i].min_confidence = mc;
    if (route_state(s, json_get(&reqs->items[i], "state"), qs[i], &cs[i], &routes[i], e)) {
      for (uint32_t k = 0; k < i; k++) serve_route_free(&routes[k]);
      return -1;
    }
    strbuf o;
    sb_init(&o);
    options_json(qs[i], &cs[i], &o);
    remote_controls(s, &cs[i], &o);
    if (batch_size) sb_printf(&o, ", \"batch_size\": %ld", batch_size);
    if (sort) sb_puts(&o, ", \"sort_by_length\": true");
    okeys[i] = arena_strndup(a, o.data, o.len);
    sb_free(&o);
  }
  json_value *results = arena_alloc(a, n * sizeof *results);
  bool *done = arena_alloc(a, n);
  uint32_t *pick = arena_alloc(a, n * sizeof *pick);
  int rc = 0;
  double t0 = serve_now();
  for (uint32_t i = 0; i < n && rc == 0; i++) {
    if (done[i]) continue;
    uint32_t k = 0;
    for (uint32_t j = i; j < n; j++)
      if (!done[j] && !strcmp(routes[j].model, routes[i].model) && !strcmp(okeys[j], okeys[i])) pick[k++] = j;
    strbuf req;
    sb_init(&req);
    json_dump_opts d = {NULL, NULL, false, -1};
    sb_puts(&req, "{\"states\": [");
    for (uint32_t j = 0; j < k; j++) {
      if (j) sb_puts(&req, ", ");
      json_dump(&req, json_get(&reqs->items[pick[j]], "state"), &d);
    }
    sb_printf(&req, "], %s}", okeys[i]);
    laya_error le;
    laya_err_clear(&le);
    void *m = serve_models_get(s->models, routes[i].model, &le);
    char *res = NULL;
    if (!m || s->eng->predict_batch(s->eng->ctx, m, req.data, &res, &le) != 0) {
      engine_failure(&le, e);
      rc = -1;
    } else {
      json_value *v = json_parse(res, strlen(res), a, &RESULT_OPTS, &le);
      if (!v || v->type != JSON_ARRAY || v->n != k) {
        terr(e, "internal_error", "predict_batch returned %u results for %u requests", v && v->type == JSON_ARRAY ? v->n : 0, k);
        rc = -1;
      } else {
        for (uint32_t j = 0; j < k; j++) {
          results[pick[j]] = v->items[j];
          done[pick[j]] = true;
        }
      }
    }
    laya_free(res);
    sb_free(&req);
  }
  double ms = (serve_now() - t0) * 1000.0;
  json_value *list = new_value(a, JSON_ARRAY);
  list->items = arena_alloc(a, n * sizeof(json_value));
  json_value *counts = new_value(a, JSON_OBJECT);
  for (uint32_t i = 0; i < n; i++) {
    if (rc == 0) {
      laya_error le;
      json_value *routing = json_parse(routes[i].routing_json, strlen(routes[i].routing_json), a, NULL, &le);
      if (s->remote && json_get(&results[i], "routing")) routing = (json_value *)json_get(&results[i], "routing");
      json_value *entry = new_value(a, JSON_OBJECT);
      const json_value *answers = json_get(&results[i], "answers");
      if (!answers || answers->type != JSON_OBJECT) {
        terr(e, "internal_error", "predict returned non-object answers");
        rc = -1;
      } else {
        obj_add(a, entry, "answers", answers);
        obj_add(a, entry, "routing", routing);
        add_device(s, a, entry, routes[i].model);
        list->items[list->n++] = *entry;
        add_model_count(a, counts, routing);
      }
    }
    serve_route_free(&routes[i]);
  }
  if (rc) return -1;
  json_value *o = new_value(a, JSON_OBJECT);
  obj_add(a, o, "requests", list);
  obj_add(a, o, "model_counts", counts);
  add_ms(a, o, "total_latency_ms", ms);
  add_ms(a, o, "per_request_latency_ms", ms / n);
  *out = o;
  return 0;
}

/* laya_predict_long: the state scanned in windows; Laya's argument order and its routing report. */
static int tool_predict_long(mcp_server *s, const json_value *args, arena *a, json_value **out, tool_error *e) {
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
  if (!s->eng->predict_long) return terr(e, "internal_error", "predict_long is not available in this build of laya.c");
  serve_route r = {0};
  if (route_state(s, state, questions, &c, &r, e)) return -1;
  json_dump_opts d = {NULL, NULL, false, -1};
  strbuf req;
  sb_init(&req);
  request_with_state(&req, state);
  sb_puts(&req, ", \"questions\": ");
  json_dump(&req, questions, &d);
  if (window) sb_printf(&req, ", \"window\": %ld", window);
  if (stride) sb_printf(&req, ", \"stride\": %ld", stride);
  if (c.lang) {
    sb_puts(&req, ", \"lang\": ");
    json_dump_string(&req, c.lang, strlen(c.lang), false);
  }
  sb_putc(&req, '}');
  laya_error le;
  json_value *v = NULL;
  double ms;
  int rc = run_engine(s, s->eng->predict_long, r.model, &req, a, &v, &ms, &le);
  sb_free(&req);
  if (rc != 0) {
    serve_route_free(&r);
    return engine_failure(&le, e);
  }
  json_value *routing = NULL;
  if (c.model[0]) {
    routing = new_value(a, JSON_OBJECT);
    json_value mv = {0}, nv = {0}, rv = {0};
    mv.type = rv.type = JSON_STRING;
    nv.type = JSON_NULL;
    mv.s = arena_strndup(a, c.model, strlen(c.model));
    mv.n = (uint32_t)strlen(c.model);
    rv.s = "explicit model";
    rv.n = 14;
    obj_add(a, routing, "model", &mv);
    obj_add(a, routing, "repo", &nv);
    obj_add(a, routing, "reason", &rv);
  } else {
    routing = json_parse(r.routing_json, strlen(r.routing_json), a, NULL, &le);
  }
  serve_route_free(&r);
  const json_value *answers = v ? json_get(v, "answers") : NULL;
  if (!answers || answers->type != JSON_OBJECT) return terr(e, "internal_error", "predict_long returned non-object");
  const json_value *usage = json_get(v, "usage");
  const json_value *windows = usage && usage->type == JSON_OBJECT ? json_get(usage, "windows") : NULL;
  static json_value zero = {.type = JSON_INT};
  json_value *o = new_value(a, JSON_OBJECT);
  obj_add(a, o, "answers", answers);
  obj_add(a, o, "routing", routing);
  obj_add(a, o, "windows", windows ? windows : &zero);
  add_ms(a, o, "latency_ms", ms);
  add_device(s, a, o, r.model);
  *out = o;
  return 0;
}

static const char *const PRESETS[] = {"email", "guard", "model_router", "moderation", "triage"};

static int tool_preset(mcp_server *s, const json_value *args, arena *a, json_value **out, tool_error *e) {
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
  return tool_predict(s, &targs, a, out, e);
}

static int tool_decide(mcp_server *s, const json_value *args, arena *a, json_value **out, tool_error *e) {
  const json_value *state = json_get(args, "state");
  if (validate_state(state, e)) return -1;
  controls c = {0};
  if (validate_model(s, json_get(args, "model"), c.model, sizeof c.model, e)) return -1;
  const json_value *mc = as_float_arg(json_get(args, "min_confidence"), a);
  if (validate_min_conf(mc, e)) return -1;
  if (!s->eng->decide) return terr(e, "internal_error", "decide is not available in this build of laya.c");
  const json_value *schema = json_get(args, "schema");
  static json_value null_v = {.type = JSON_NULL};
  json_value empty_q = {0};
  empty_q.type = JSON_OBJECT;
  serve_route r = {0};
  if (route_state(s, state, &empty_q, &c, &r, e)) return -1;
  strbuf req;
  sb_init(&req);
  json_dump_opts d = {NULL, NULL, false, -1};
  request_with_state(&req, state);
  sb_puts(&req, ", \"schema\": ");
  json_dump(&req, schema ? schema : &null_v, &d);
  sb_puts(&req, ", \"return_details\": true");
  if (!is_null(mc)) {
    sb_puts(&req, ", \"min_confidence\": ");
    json_dump(&req, mc, &d);
  }
  remote_controls(s, &c, &req); /* remote mode: the caller's model, or null for the server to route */
  sb_putc(&req, '}');
  laya_error le;
  json_value *v = NULL;
  double ms;
  int rc = run_engine(s, s->eng->decide, r.model, &req, a, &v, &ms, &le);
  sb_free(&req);
  if (rc != 0) {
    serve_route_free(&r);
    if (!strcmp(le.kind, "SchemaError")) return terr(e, "invalid_schema", "%s", le.message);
    return engine_failure(&le, e);
  }
  json_value *routing = json_parse(r.routing_json, strlen(r.routing_json), a, NULL, &le);
  serve_route_free(&r);
  if (!v || v->type != JSON_OBJECT) return terr(e, "internal_error", "decide returned non-object");
  json_value *o = new_value(a, JSON_OBJECT);
  static const char *const keys[] = {"values", "confidence", "probabilities"};
  for (int i = 0; i < 3; i++) {
    const json_value *x = json_get(v, keys[i]);
    obj_add(a, o, keys[i], x ? x : &null_v);
  }
  const json_value *rr = json_get(v, "routing");
  obj_add(a, o, "routing", !is_null(rr) ? rr : (routing ? routing : &null_v));
  add_ms(a, o, "latency_ms", ms);
  const json_value *usage = json_get(v, "usage");
  if (usage && usage->type == JSON_OBJECT && usage->n) obj_add(a, o, "usage", usage);
  add_device(s, a, o, r.model);
  *out = o;
  return 0;
}

static int tool_status(mcp_server *s, const json_value *args, arena *a, json_value **out, tool_error *e) {
  (void)args;
  if (s->remote) { /* the server's own report */
    laya_error re;
    char *text = mcp_remote_status(s->remote, &re);
    char *copy = text ? arena_strndup(a, text, strlen(text)) : NULL;
    *out = copy ? json_parse(copy, strlen(copy), a, NULL, &re) : NULL;
    free(text);
    return *out ? 0 : engine_failure(&re, e);
  }
  strbuf sb;
  sb_init(&sb);
  sb_puts(&sb, "{");
  serve_models_health(s->models, &sb);
  sb_printf(&sb, ", \"router_preload\": %s, \"router_ready\": true, \"engine\": \"laya.c\", "
                 "\"package_versions\": {\"laya.c\": \"%s\", \"laya_compat\": \"%s\"}}",
            s->cfg->preload ? "true" : "false", LAYA_VERSION, LAYA_COMPAT_VERSION);
  laya_error le;
  json_value *v = json_parse(sb.data, sb.len, a, NULL, &le);
  sb_free(&sb);
  if (!v) return terr(e, "internal_error", "status report is malformed");
  /* Laya's key order: device facts, then loaded, then router flags */
  json_value *o = new_value(a, JSON_OBJECT);
  static const char *const order[] = {"device", "device_is_preference", "checkpoint_devices", "loaded",
                                      "cpu_fallbacks", "precision", "checkpoint_precisions", "router_preload",
                                      "router_ready", "engine", "package_versions"};
  for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
    const json_value *x = json_get(v, order[i]);
    if (x) obj_add(a, o, order[i], x);
  }
  *out = o;
  return 0;
}

/* laya_shortlist: laya_predict's arguments plus k; every choice with more than k labels is narrowed
 * to the k closest by the answering checkpoint's own embeddings, then answered in one pass
 * (laya_predict_shortlist). {answers, routing, shortlist, latency_ms, option_order_dropped?,
 * device?}, as Laya's tool returns. */
static int tool_shortlist(mcp_server *s, const json_value *args, arena *a, json_value **out, tool_error *e) {
  const json_value *state;
  json_value *questions;
  controls c;
  choice_cap = SERVE_SHORTLIST_MAX_LABELS;
  total_cap = SERVE_SHORTLIST_MAX_TOTAL;
  int rc = state_questions_model(s, args, a, &state, &questions, &c, false, e);
  choice_cap = SERVE_MAX_CHOICE_OPTIONS;
  total_cap = SERVE_MAX_TOTAL_OPTIONS;
  if (rc) return -1;
  const json_value *task = json_get(args, "task"), *lang = json_get(args, "lang"), *guess = json_get(args, "lang_guess");
  if (validate_task(s, task, e) || validate_lang_kind(lang, "lang", e) || validate_lang_kind(guess, "lang_guess", e))
    return -1;
  c.task = is_null(task) ? NULL : task;
  c.lang = is_null(lang) ? NULL : lang->s;
  c.lang_guess = is_null(guess) ? NULL : guess->s;
  if ((c.max_len = validate_budget(json_get(args, "max_len"), "max_len", e)) < 0) return -1;
  if ((c.head_max_len = validate_budget(json_get(args, "head_max_len"), "head_max_len", e)) < 0) return -1;
  const json_value *mc = as_float_arg(json_get(args, "min_confidence"), a);
  if (validate_min_conf(mc, e)) return -1;
  c.min_confidence = is_null(mc) ? NULL : mc;
  if (check_pinned(&c, e)) return -1;
  const json_value *k = json_get(args, "k");
  if (!is_null(k) && (k->type != JSON_INT || (!k->big && k->i < 1) || (k->big && k->s[0] == '-')))
    return terr_repr(e, "invalid_k", "k must be a positive integer, got ", k, NULL);
  if (!s->eng->predict_shortlist) return terr(e, "internal_error", "this engine has no shortlist");
  serve_route r = {0};
  if (route_state(s, state, questions, &c, &r, e)) return -1;
  strbuf req;
  sb_init(&req);
  request_with_state(&req, state);
  sb_puts(&req, ", ");
  options_json(questions, &c, &req);
  json_dump_opts d = {NULL, NULL, false, -1};
  sb_puts(&req, ", \"k\": ");
  if (is_null(k)) sb_puts(&req, "20"); /* laya.shortlist.DEFAULT_SHORTLIST_K */
  else json_dump(&req, k, &d);
  sb_putc(&req, '}');
  laya_error le;
  json_value *v = NULL;
  double ms;
  rc = run_engine(s, s->eng->predict_shortlist, r.model, &req, a, &v, &ms, &le);
  sb_free(&req);
  if (rc != 0) {
    serve_route_free(&r);
    return engine_failure(&le, e);
  }
  json_value *routing = json_parse(r.routing_json, strlen(r.routing_json), a, NULL, &le);
  serve_route_free(&r);
  const json_value *answers = v ? json_get(v, "answers") : NULL, *meta = v ? json_get(v, "shortlist") : NULL;
  if (!answers || answers->type != JSON_OBJECT || !meta) return terr(e, "internal_error", "predict returned non-object");
  json_value *o = new_value(a, JSON_OBJECT);
  obj_add(a, o, "answers", answers);
  if (routing) obj_add(a, o, "routing", routing);
  obj_add(a, o, "shortlist", meta);
  add_ms(a, o, "latency_ms", ms);
  /* a narrowed choice loses its option_order: said per question, with the old and kept counts */
  json_value *dropped = new_value(a, JSON_OBJECT);
  for (uint32_t i = 0; i < questions->n; i++) {
    const json_value *q = &questions->members[i].value, *m = json_get(meta, questions->members[i].key);
    const json_value *pass = m ? json_get(m, "passthrough") : NULL, *kept = m ? json_get(m, "labels") : NULL;
    if (!str_eq(json_get(q, "type"), "choice") || !json_get(q, "option_order") || !pass || pass->b || !kept) continue;
    json_value *entry = new_value(a, JSON_OBJECT), *nv = new_value(a, JSON_INT), *kv = new_value(a, JSON_INT);
    nv->i = json_get(q, "criteria")->n;
    nv->d = (double)nv->i;
    kv->i = kept->n;
    kv->d = (double)kv->i;
    obj_add(a, entry, "n", nv);
    obj_add(a, entry, "kept", kv);
    obj_add(a, dropped, questions->members[i].key, entry);
  }
  if (dropped->n) obj_add(a, o, "option_order_dropped", dropped);
  add_device(s, a, o, r.model);
  *out = o;
  return 0;
}

/* ---- tool table and JSON-RPC ---- */

typedef int (*tool_fn)(mcp_server *, const json_value *, arena *, json_value **, tool_error *);

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
  sb_printf(&sb, ",\"result\":%s}", result_json);
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
    json_value *out = NULL;
    json_dump_opts ind = {NULL, NULL, false, 2};
    strbuf text;
    sb_init(&text);
    if (t->fn(s, args, &a, &out, &e) == 0 && out) {
      json_dump(&text, out, &ind);
      text_result(&res, text.data, text.len, false);
    } else {
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
