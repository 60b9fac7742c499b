/* validate.c: a decision request body -> a checked request, or the status and detail Laya's
 * server answers, in Laya's order. Every message here is the text serve.py sends, so a client
 * that matches on it (or a test that compares with the Python server) sees no difference.
 * Pure: no I/O, no globals; the fuzz target drives it directly. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/typed.h" /* model/questions.h: question_type_names */
#include "serve/serve.h"

void serve_reject_init(serve_reject *r) {
  r->status = 0;
  sb_init(&r->detail);
}

void serve_reject_free(serve_reject *r) { sb_free(&r->detail); }

int serve_reject_set(serve_reject *r, int status, const char *fmt, ...) {
  r->status = status;
  sb_reset(&r->detail);
  va_list ap;
  va_start(ap, fmt);
  char small[512];
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  if (n >= 0 && (size_t)n < sizeof small) {
    sb_append(&r->detail, small, (size_t)n);
  } else if (n >= 0 && sb_reserve(&r->detail, (size_t)n + 1)) {
    vsnprintf(r->detail.data, (size_t)n + 1, fmt, ap2);
    r->detail.len = (size_t)n;
  }
  va_end(ap2);
  va_end(ap);
  return status;
}

static bool str_eq(const json_value *v, const char *s) {
  return v && v->type == JSON_STRING && v->n == strlen(s) && !memcmp(v->s, s, v->n);
}

static bool is_null(const json_value *v) { return !v || v->type == JSON_NULL; }

/* Laya's _state_length_lower_bound_over: a lower bound on the serialised length from the raw
 * lengths of at most 64 string values, or 0 when that proves nothing. Same walk order (a stack,
 * dict values pushed in order, popped from the end) so the number quoted in a 413 is the same. */
static size_t state_lower_bound_over(const json_value *state, size_t cap) {
  const json_value *stack[4096];
  size_t sp = 0, total = 0;
  int budget = 64;
  stack[sp++] = state;
  while (sp > 0 && budget > 0) {
    budget--;
    const json_value *it = stack[--sp];
    if (it->type == JSON_STRING) {
      total += utf8_cp_len(it->s, it->n);
      if (total > cap) return total;
    } else if (it->type == JSON_OBJECT) {
      for (uint32_t i = 0; i < it->n; i++) {
        if (sp >= sizeof stack / sizeof *stack) return 0;
        stack[sp++] = &it->members[i].value;
      }
    } else if (it->type == JSON_ARRAY) {
      for (uint32_t i = 0; i < it->n; i++) {
        if (sp >= sizeof stack / sizeof *stack) return 0;
        stack[sp++] = &it->items[i];
      }
    } else {
      return 0;
    }
  }
  return 0;
}

/* len(serialize_state(state)): the string itself, or json.dumps(state, ensure_ascii=False). */
static size_t state_length(const json_value *state) {
  if (state->type == JSON_STRING) return utf8_cp_len(state->s, state->n);
  size_t over = state_lower_bound_over(state, SERVE_MAX_STATE_CHARS);
  if (over) return over;
  strbuf sb;
  sb_init(&sb);
  json_dump_opts o = {NULL, NULL, false, -1};
  json_dump(&sb, state, &o);
  size_t n = utf8_cp_len(sb.data ? sb.data : "", sb.len);
  sb_free(&sb);
  return n;
}

/* Nesting depth of v (a scalar is 0, [] is 1), stopping once past limit. */
static int json_depth(const json_value *v, int limit) {
  if (v->type != JSON_ARRAY && v->type != JSON_OBJECT) return 0;
  int deepest = 0;
  for (uint32_t i = 0; i < v->n && deepest <= limit; i++) {
    int d = json_depth(v->type == JSON_ARRAY ? &v->items[i] : &v->members[i].value, limit);
    if (d > deepest) deepest = d;
  }
  return deepest + 1;
}

/* Laya's _check_request_limits (400/413/422); max_choice: SERVE_MAX_CHOICE_OPTIONS, or
 * SERVE_TOURNAMENT_MAX_LABELS when LAYA_TOURNAMENT_GROUP narrows large choices in groups. */
static int check_request_limits(const json_value *state, const json_value *questions, long max_choice,
                                serve_reject *rej) {
  if (is_null(state)) return serve_reject_set(rej, 400, "'state' is required");
  if (!questions || questions->type != JSON_OBJECT)
    return serve_reject_set(rej, 400, "'questions' must be an object");
  if (questions->n > SERVE_MAX_QUESTIONS)
    return serve_reject_set(rej, 413, "too many questions (%u > %d)", questions->n, SERVE_MAX_QUESTIONS);
  long total = 0;
  for (uint32_t i = 0; i < questions->n; i++) {
    const json_member *q = &questions->members[i];
    if (q->value.type != JSON_OBJECT) continue;
    const json_value *crit = json_get(&q->value, "criteria");
    const json_value *type = json_get(&q->value, "type");
    if (str_eq(type, "choice") && crit && (crit->type == JSON_OBJECT || crit->type == JSON_ARRAY)) {
      total += crit->n;
      if (crit->n > max_choice) {
        strbuf qid;
        sb_init(&qid);
        py_repr_str(&qid, q->key, q->key_len);
        serve_reject_set(rej, 413, "too many choice options for %s (%u > %ld)", sb_cstr(&qid), crit->n,
                         max_choice);
        sb_free(&qid);
        return 413;
      }
    } else if (str_eq(type, "score") && crit && crit->type == JSON_ARRAY) {
      total += crit->n;
      strbuf qid;
      sb_init(&qid);
      py_repr_str(&qid, q->key, q->key_len);
      if (crit->n > SERVE_MAX_SCORE_LEVELS) {
        serve_reject_set(rej, 413, "too many score levels for %s (%u > %d)", sb_cstr(&qid), crit->n,
                         SERVE_MAX_SCORE_LEVELS);
        sb_free(&qid);
        return 413;
      }
      for (uint32_t k = 0; k < crit->n; k++) {
        if (crit->items[k].type == JSON_NULL) {
          serve_reject_set(rej, 422,
                           "score question %s has a null level at index %u; give every level a description",
                           sb_cstr(&qid), k);
          sb_free(&qid);
          return 422;
        }
      }
      sb_free(&qid);
    }
  }
  if (total > SERVE_MAX_TOTAL_OPTIONS)
    return serve_reject_set(rej, 413, "too many answer options across questions (%ld > %d)", total,
                            SERVE_MAX_TOTAL_OPTIONS);
  int depth = json_depth(state, SERVE_MAX_STATE_DEPTH);
  if (depth > SERVE_MAX_STATE_DEPTH)
    return serve_reject_set(rej, 400, "state nests too deep (more than %d levels)", SERVE_MAX_STATE_DEPTH);
  size_t len = state_length(state);
  if (len > SERVE_MAX_STATE_CHARS)
    return serve_reject_set(rej, 413, "state too large (%zu > %d chars)", len, SERVE_MAX_STATE_CHARS);
  return 0;
}

/* A lone surrogate in a key: the parser writes it as WTF-8 (ED A0..BF xx). */
static bool key_has_surrogate(const char *k, size_t n) {
  for (size_t i = 0; i + 1 < n; i++)
    if ((unsigned char)k[i] == 0xED && ((unsigned char)k[i + 1] & 0xE0) == 0xA0) return true;
  return false;
}

static bool has_lone_surrogate(const json_value *v) {
  switch (v->type) {
  case JSON_STRING:
    return v->surrogate;
  case JSON_ARRAY:
    for (uint32_t i = 0; i < v->n; i++)
      if (has_lone_surrogate(&v->items[i])) return true;
    return false;
  case JSON_OBJECT:
    for (uint32_t i = 0; i < v->n; i++)
      if (key_has_surrogate(v->members[i].key, v->members[i].key_len) ||
          has_lone_surrogate(&v->members[i].value))
        return true;
    return false;
  default:
    return false;
  }
}

/* CPython refuses to parse an integer literal of more than 4300 digits (a ValueError from
 * json.loads, so Laya answers 400 "must be valid JSON"). */
static bool has_huge_int(const json_value *v) {
  switch (v->type) {
  case JSON_INT:
    if (v->big && v->s) {
      size_t digits = strlen(v->s) - (v->s[0] == '-');
      return digits > 4300;
    }
    return false;
  case JSON_ARRAY:
    for (uint32_t i = 0; i < v->n; i++)
      if (has_huge_int(&v->items[i])) return true;
    return false;
  case JSON_OBJECT:
    for (uint32_t i = 0; i < v->n; i++)
      if (has_huge_int(&v->members[i].value)) return true;
    return false;
  default:
    return false;
  }
}

/* str(value).strip() as Python writes it. */
static void py_str_stripped(const json_value *v, strbuf *out) {
  strbuf t;
  sb_init(&t);
  if (v->type == JSON_STRING)
    sb_append(&t, v->s, v->n);
  else
    py_repr_json(&t, v);
  const char *s = t.data ? t.data : "";
  size_t a = 0, b = t.len;
  while (a < b && (s[a] == ' ' || (s[a] >= 9 && s[a] <= 13))) a++;
  while (b > a && (s[b - 1] == ' ' || (s[b - 1] >= 9 && s[b - 1] <= 13))) b--;
  sb_append(out, s + a, b - a);
  sb_free(&t);
}

static void ascii_lower(char *s) {
  for (; *s; s++)
    if (*s >= 'A' && *s <= 'Z') *s = (char)(*s - 'A' + 'a');
}

/* Laya's _resolve_model: a checkpoint name, "" for auto-route, or a 422. */
static int resolve_model(const json_value *model, const serve_models *models, char *out,
                         size_t out_size, serve_reject *rej) {
  out[0] = 0;
  if (!json_truthy(model)) return 0; /* Python truthiness: None, "", 0, [], {} */
  strbuf text;
  sb_init(&text);
  py_str_stripped(model, &text);
  char *lower = strdup(sb_cstr(&text));
  if (!lower) {
    sb_free(&text);
    return serve_reject_set(rej, 500, "inference failed");
  }
  ascii_lower(lower);
  int rc = 0;
  if (!strcmp(lower, "convaiinnovations/laya-multilingual")) {
    snprintf(out, out_size, "multilingual");
  } else if (!strcmp(lower, "convaiinnovations/laya-typed-decisions")) {
    snprintf(out, out_size, "typed-decisions");
  } else if (!strcmp(lower, "convaiinnovations/laya")) {
    /* the bundle id means "let the router choose" */
  } else {
    strbuf msg;
    sb_init(&msg);
    if (serve_models_resolve(models, model, out, out_size, &msg) != 0) {
      out[0] = 0;
      const char *t = sb_cstr(&text);
      bool unpublished = t[0] == '.' || t[0] == '~' || strchr(t, '/') || strchr(t, '\\');
      if (unpublished)
        rc = serve_reject_set(rej, 422, "%s, or omit model to let the router choose", sb_cstr(&msg));
      /* anything else (a Jev id such as "jev-1") auto-routes */
    }
    sb_free(&msg);
  }
  free(lower);
  sb_free(&text);
  return rc;
}

/* Laya's _validate_budget_param: 0 = unset, else the value; -1 after a 422. */
static long check_budget(const json_value *body, const char *key, long cap, serve_reject *rej) {
  const json_value *v = json_get(body, key);
  if (is_null(v)) return 0;
  if (v->type != JSON_INT) {
    serve_reject_set(rej, 422, "%s must be an integer", key);
    return -1;
  }
  if (v->big) {
    if (v->s[0] == '-') {
      serve_reject_set(rej, 422, "%s must be a positive integer", key);
    } else {
      serve_reject_set(rej, 422, "%s exceeds server limit (%s > %ld)", key, v->s, cap);
    }
    return -1;
  }
  if (v->i <= 0) {
    serve_reject_set(rej, 422, "%s must be a positive integer", key);
    return -1;
  }
  if (v->i > cap) {
    serve_reject_set(rej, 422, "%s exceeds server limit (%lld > %ld)", key, (long long)v->i, cap);
    return -1;
  }
  return (long)v->i;
}

static int check_one_threshold(const json_value *v, strbuf *msg) {
  bool ok = (v->type == JSON_INT || v->type == JSON_FLOAT) && isfinite(v->d) && v->d >= 0.0 &&
            v->d <= 1.0;
  if (v->type == JSON_INT && v->big) ok = false;
  if (!ok) {
    sb_puts(msg, "min_confidence must be a float in [0.0, 1.0], got ");
    py_repr_json(msg, v);
    return -1;
  }
  return 0;
}

int serve_check_min_confidence(const json_value *v, strbuf *msg) {
  if (v->type != JSON_OBJECT) return check_one_threshold(v, msg);
  if (v->n == 0) {
    sb_puts(msg, "a min_confidence map must be a non-empty dict of bucket -> float, got ");
    py_repr_json(msg, v);
    return -1;
  }
  static const char *const sizes[] = {"2", "3-5", "6-10", "11+"};
  for (uint32_t i = 0; i < v->n; i++) {
    const char *k = v->members[i].key;
    bool allowed = !strcmp(k, "default");
    for (int t = 0; t < QT_COUNT && !allowed; t++) {
      size_t tl = strlen(question_type_names[t]);
      if (!strncmp(k, question_type_names[t], tl) && k[tl] == ':')
        for (int s = 0; s < 4; s++)
          if (!strcmp(k + tl + 1, sizes[s])) allowed = true;
    }
    if (!allowed) {
      sb_puts(msg, "min_confidence map keys must be a bucket like 'choice:3-5' or 'default', got ");
      py_repr_str(msg, k, v->members[i].key_len);
      return -1;
    }
    if (check_one_threshold(&v->members[i].value, msg)) return -1;
  }
  return 0;
}

long serve_batch_chunk_size(long n_states, long n_questions, long max_len, long max_batch_tokens) {
  if (n_states <= 0 || n_questions <= 0) return 0;
  long width = max_len > 0 ? max_len : SERVE_BATCH_ROW_TOKENS_ASSUMED;
  /* n_states <= 64, n_questions <= 64, width <= budget cap: the product fits easily in 64 bits */
  if ((long long)n_states * n_questions * width <= max_batch_tokens) return 0;
  long rows = max_batch_tokens / width;
  if (rows < 1) rows = 1;
  long per = rows / n_questions;
  if (per > n_states) per = n_states;
  return per < 1 ? 1 : per;
}

static const char *const REFUSED[] = {"hooks", "hooks_raise", "hooks_timeout", "on_predict_end",
                                      "on_predict_start"}; /* sorted, as Laya lists them */

int serve_validate(const char *body, size_t len, serve_route_kind kind, const serve_config *cfg,
                   const serve_models *models, arena *a, serve_request *req, serve_reject *rej) {
  memset(req, 0, sizeof *req);
  req->kind = kind;
  /* json.loads(bytes) decodes a UTF-8 BOM away */
  if (len >= 3 && (unsigned char)body[0] == 0xEF && (unsigned char)body[1] == 0xBB &&
      (unsigned char)body[2] == 0xBF) {
    body += 3;
    len -= 3;
  }
  laya_error perr;
  json_parse_opts po = {SERVE_JSON_DEPTH, false, false, false};
  json_value *root = json_parse(body, len, a, &po, &perr);
  if (!root || has_huge_int(root)) return serve_reject_set(rej, 400, "request body must be valid JSON");
  req->body = root;

  long max_choice = cfg && cfg->env.tournament_group ? SERVE_TOURNAMENT_MAX_LABELS : SERVE_MAX_CHOICE_OPTIONS;
  if (kind == SERVE_ONE) {
    if (root->type != JSON_OBJECT || !json_get(root, "questions"))
      return serve_reject_set(rej, 400, "request body must be an object with a 'questions' field");
    req->state = json_get(root, "state");
    req->questions = json_get(root, "questions");
    int rc = check_request_limits(req->state, req->questions, max_choice, rej);
    if (rc) return rc;
  } else {
    if (root->type != JSON_OBJECT || !json_get(root, "questions") || !json_get(root, "states"))
      return serve_reject_set(rej, 400,
                              "request body must be an object with 'states' and 'questions' fields");
    req->states = json_get(root, "states");
    req->questions = json_get(root, "questions");
    if (req->states->type != JSON_ARRAY || req->states->n == 0)
      return serve_reject_set(rej, 400, "'states' must be a non-empty list");
    if (req->states->n > SERVE_MAX_BATCH_STATES)
      return serve_reject_set(rej, 413, "too many states in batch (%u > %d)", req->states->n,
                              SERVE_MAX_BATCH_STATES);
    for (uint32_t i = 0; i < req->states->n; i++) {
      int rc = check_request_limits(&req->states->items[i], req->questions, max_choice, rej);
      if (rc) return rc;
    }
  }

  /* fields that would run code in the server */
  strbuf names;
  sb_init(&names);
  for (size_t i = 0; i < sizeof REFUSED / sizeof *REFUSED; i++) {
    if (!is_null(json_get(root, REFUSED[i]))) {
      if (names.len) sb_puts(&names, ", ");
      sb_puts(&names, REFUSED[i]);
    }
  }
  if (names.len) {
    serve_reject_set(rej, 422,
                     "%s run inside the server process and cannot be sent to this endpoint; install "
                     "them where laya-serve runs, or drop them",
                     sb_cstr(&names));
    sb_free(&names);
    return 422;
  }
  sb_free(&names);
  if (kind == SERVE_BATCH && !is_null(json_get(root, "diagnostics")))
    return serve_reject_set(rej, 422,
                            "diagnostics is filled in place for an in-process caller and cannot be "
                            "returned over HTTP; read the per-group report from the CLI or a local Router");

  if (has_lone_surrogate(root))
    return serve_reject_set(rej, 400,
                            "request body contains an unpaired surrogate escape; those cannot be "
                            "encoded as UTF-8");

  int rc = resolve_model(json_get(root, "model"), models, req->model, sizeof req->model, rej);
  if (rc) return rc;

  req->max_len = check_budget(root, "max_len", cfg->max_token_budget, rej);
  if (req->max_len < 0) return rej->status;
  req->head_max_len = check_budget(root, "head_max_len", cfg->max_token_budget, rej);
  if (req->head_max_len < 0) return rej->status;

  const json_value *task = json_get(root, "task");
  req->task = is_null(task) ? NULL : task;

  static const char *const LANG_KEYS[] = {"lang", "lang_guess"};
  for (int i = 0; i < 2; i++) {
    const json_value *v = json_get(root, LANG_KEYS[i]);
    if (is_null(v)) continue;
    if (v->type != JSON_STRING)
      return serve_reject_set(rej, 422, "%s must be a language code string such as \"de\", or null",
                              LANG_KEYS[i]);
    if (i == 0)
      req->lang = v->s;
    else
      req->lang_guess = v->s;
  }

  const json_value *mc = json_get(root, "min_confidence");
  if (!is_null(mc)) {
    strbuf msg;
    sb_init(&msg);
    if (serve_check_min_confidence(mc, &msg)) {
      serve_reject_set(rej, 422, "%s", sb_cstr(&msg));
      sb_free(&msg);
      return 422;
    }
    sb_free(&msg);
    req->min_confidence = mc;
  }

  if (kind == SERVE_BATCH) {
    long batch_size = 0;
    const json_value *bs = json_get(root, "batch_size");
    if (!is_null(bs)) {
      if (bs->type != JSON_INT) return serve_reject_set(rej, 422, "batch_size must be an integer");
      if (bs->big ? bs->s[0] == '-' : bs->i < 1) {
        strbuf r;
        sb_init(&r);
        py_repr_json(&r, bs);
        serve_reject_set(rej, 422, "batch_size must be a positive integer, got %s", sb_cstr(&r));
        sb_free(&r);
        return 422;
      }
      batch_size = bs->big ? 1L << 40 : (long)(bs->i > (1LL << 40) ? (1LL << 40) : bs->i);
    }
    long planned = serve_batch_chunk_size((long)req->states->n, (long)req->questions->n, req->max_len,
                                          cfg->max_batch_tokens);
    if (batch_size)
      req->batch_size = planned ? (batch_size < planned ? batch_size : planned) : batch_size;
    else
      req->batch_size = planned;
    const json_value *sbl = json_get(root, "sort_by_length");
    if (!is_null(sbl)) {
      if (sbl->type != JSON_BOOL) return serve_reject_set(rej, 422, "sort_by_length must be a boolean");
      req->sort_by_length = sbl->b;
    }
  }
  return 0;
}
