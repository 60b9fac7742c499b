/*
 * predict.c: the answering modes of `laya`, on the Router (or, for --model DIR, on one
 * checkpoint opened directly: the result is then the plain model payload with no routing).
 *
 * Every input is a parsed value: the request handed to the engine is built from it as a value
 * (its members shared, not copied) and each result is written once by the typed writers, so
 * nothing here prints JSON to parse it again.
 */
#include "cli/predict.h"

#ifdef LAYA_CLI_HAVE_ENGINE
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/pystr.h"
#include "core/strbuf.h"
#include "laya.h"
#include "model/decide.h"
#include "model/engine.h"
#include "model/result_json.h"
#include "model/typed.h"
#include "router/router_call.h"

struct cli_engine {
  laya_router *router;
  laya_model *direct;
  char *direct_path;
  char *device;
  char *calibration;
  char *lang_temperatures;
  int max_loaded;
};

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

cli_engine *cli_engine_new(const char *device, int max_loaded, laya_error *err) {
  cli_engine *e = calloc(1, sizeof *e);
  if (!e) {
    laya_err(err, LAYA_ERR_NOMEM, "MemoryError", "out of memory");
    return NULL;
  }
  e->device = dup_or_null(device);
  e->max_loaded = max_loaded > 0 ? max_loaded : 2;
  return e;
}

void cli_engine_set_load_options(cli_engine *e, const cli_overrides *ov) {
  free(e->calibration);
  free(e->lang_temperatures);
  e->calibration = dup_or_null(ov->calibration);
  e->lang_temperatures = dup_or_null(ov->lang_temperatures);
}

void cli_engine_free(cli_engine *e) {
  if (!e) return;
  if (e->router) laya_router_close(e->router);
  if (e->direct) laya_close(e->direct);
  free(e->direct_path);
  free(e->device);
  free(e->calibration);
  free(e->lang_temperatures);
  free(e);
}

static int ensure_router(cli_engine *e, laya_error *err) {
  if (e->router) return 0;
  strbuf cfg;
  sb_init(&cfg);
  sb_printf(&cfg, "{\"max_loaded\": %d", e->max_loaded);
  if (e->device) {
    sb_puts(&cfg, ", \"device\": ");
    json_dump_string(&cfg, e->device, strlen(e->device), false);
  }
  if (e->calibration) {
    sb_puts(&cfg, ", \"calibration\": ");
    json_dump_string(&cfg, e->calibration, strlen(e->calibration), false);
  }
  if (e->lang_temperatures) sb_printf(&cfg, ", \"lang_temperatures\": %s", e->lang_temperatures);
  sb_putc(&cfg, '}');
  e->router = laya_router_open(cfg.data, err);
  sb_free(&cfg);
  return e->router ? 0 : (err && err->code ? err->code : LAYA_ERR_INTERNAL);
}

static int ensure_direct(cli_engine *e, const char *path, laya_error *err) {
  if (e->direct && !strcmp(e->direct_path, path)) return 0;
  laya_options opt;
  laya_options_init(&opt);
  opt.device = e->device;
  opt.calibration_path = e->calibration;
  opt.lang_temperatures_json = e->lang_temperatures;
  laya_model *m = laya_open(path, &opt, err);
  if (!m) return err && err->code ? err->code : LAYA_ERR_IO;
  if (e->direct) laya_close(e->direct);
  free(e->direct_path);
  e->direct = m;
  e->direct_path = strdup(path);
  return 0;
}

/* ---------------------------------------------------------------- request values */

/* An object value with room for `cap` members, in arena a. */
static json_value *obj_new(arena *a, uint32_t cap) {
  json_value *o = arena_alloc(a, sizeof *o);
  json_member *m = arena_alloc(a, sizeof *m * (cap ? cap : 1));
  if (!o || !m) return NULL;
  memset(o, 0, sizeof *o);
  o->type = JSON_OBJECT;
  o->members = m;
  return o;
}

/* Add key unless the object has it already (a request's own keys win over the flags'). */
static void obj_fill(json_value *o, const char *k, json_value v) {
  if (json_get(o, k)) return;
  o->members[o->n++] = (json_member){k, (uint32_t)strlen(k), v};
}

/* The keys the flags give one call (kind `call`, routed or on one model). */
static void fill_flags(json_value *o, const cli_overrides *ov, cli_call call, bool routed, bool single) {
  if (routed) {
    if (ov->model) obj_fill(o, "model", *ov->model);
    if (ov->task) obj_fill(o, "task", *ov->task);
    if (ov->lang_guess) obj_fill(o, "lang_guess", *ov->lang_guess);
  }
  if (ov->lang) obj_fill(o, "lang", *ov->lang);
  if (call != CLI_PREDICT_LONG) {
    if (ov->max_len >= 0) obj_fill(o, "max_len", json_int(ov->max_len));
    if (ov->head_max_len >= 0) obj_fill(o, "head_max_len", json_int(ov->head_max_len));
  }
  if (single && ov->min_confidence >= 0) obj_fill(o, "min_confidence", json_float(ov->min_confidence));
  if (call == CLI_PREDICT_LONG) {
    if (ov->window >= 0) obj_fill(o, "window", json_int(ov->window));
    if (ov->stride >= 0) obj_fill(o, "stride", json_int(ov->stride));
    if (ov->batch_size > 0) obj_fill(o, "batch_size", json_int(ov->batch_size));
  }
  if (call == CLI_DECIDE) obj_fill(o, "return_details", json_bool(true));
}

/* The request of one input: the state with the flags' questions, or the input's own request
 * with the flags filling what it lacks. */
static json_value *one_request(const cli_item *it, cli_call call, const json_value *questions,
                               const cli_overrides *ov, bool routed, bool single, arena *a) {
  uint32_t own = it->request && it->request->type == JSON_OBJECT ? it->request->n : 0;
  json_value *o = obj_new(a, own + 16); /* the flags, and predict_shortlist's k */
  if (!o) return NULL;
  for (uint32_t i = 0; i < own; i++) o->members[o->n++] = it->request->members[i];
  if (it->state) obj_fill(o, "state", *it->state);
  if (questions) obj_fill(o, call == CLI_DECIDE && !json_get(o, "questions") ? "schema" : "questions", *questions);
  fill_flags(o, ov, call, routed, single);
  return o;
}

static int oom(laya_error *err) { return laya_err(err, LAYA_ERR_NOMEM, "MemoryError", "out of memory"); }

/* ---------------------------------------------------------------- calls */

static int answer_value(cli_engine *e, cli_call call, bool routed, const json_value *req,
                        const engine_progress *progress, arena *a, strbuf *out, laya_error *err) {
  if (req->type != JSON_OBJECT)
    return laya_type_error(err, "a request must be a JSON object of keyword arguments, got %s", json_py_type(req));
  if (routed) {
    int kind = call == CLI_PREDICT ? ROUTER_CALL_PREDICT : call == CLI_PREDICT_LONG ? ROUTER_CALL_LONG : ROUTER_CALL_DECIDE;
    return router_call_value(e->router, kind, req, progress, out, err);
  }
  laya_err_clear(err);
  if (call == CLI_DECIDE) return decide_run(e->direct, req, false, NULL, NULL, out, err);
  rj w;
  rj_init(&w, out, &RJ_PY);
  if (call == CLI_PREDICT_LONG) {
    long_result l;
    int rc = engine_run_long(e->direct, req, progress, a, &l, err);
    if (!rc) rj_long(&w, &l, NULL);
    return rc;
  }
  state_result *res = NULL;
  long n = 0;
  int rc = engine_run_request(e->direct, req, false, a, &res, &n, err);
  if (!rc) rj_state(&w, &res[0], NULL);
  return rc;
}

int cli_engine_answer_item(cli_engine *e, cli_call call, const cli_item *item, const json_value *questions,
                           const cli_overrides *ov, char **result, laya_error *err) {
  *result = NULL;
  bool routed = ov->model_path == NULL;
  int rc = routed ? ensure_router(e, err) : ensure_direct(e, ov->model_path, err);
  if (rc) return rc;
  arena a;
  arena_init(&a, 1 << 14);
  strbuf out;
  sb_init(&out);
  json_value *req = one_request(item, call, questions, ov, routed, true, &a);
  if (req && call == CLI_PREDICT && ov->shortlist_k > 0) {
    /* predict_shortlist (k): its own entry point, JSON in and out like the public API */
    obj_fill(req, "k", json_int(ov->shortlist_k));
    strbuf text;
    sb_init(&text);
    json_dump(&text, req, NULL);
    char *got = NULL;
    rc = text.oom ? oom(err)
         : routed ? laya_router_predict_shortlist(e->router, text.data, &got, err)
                  : laya_predict_shortlist(e->direct, text.data, &got, err);
    sb_free(&text);
    if (!rc) sb_puts(&out, got);
    free(got);
  } else {
    rc = req ? answer_value(e, call, routed, req, ov->progress, &a, &out, err) : oom(err);
  }
  if (!rc && out.oom) rc = oom(err);
  if (!rc) *result = sb_steal(&out);
  sb_free(&out);
  arena_free(&a);
  return rc;
}

/* The keys a request of Router.predict_batch takes per request; a request input with any other
 * key (min_confidence, hooks ...) is answered on its own, so that key is honoured. */
static bool batchable(const cli_item *it) {
  if (!it->request) return true;
  if (it->request->type != JSON_OBJECT) return false;
  static const char *const keys[] = {"state", "questions", "model", "task", "lang", "lang_guess", "max_len",
                                     "head_max_len", NULL};
  for (uint32_t i = 0; i < it->request->n; i++) {
    bool ok = false;
    for (int k = 0; keys[k] && !ok; k++) ok = !strcmp(keys[k], it->request->members[i].key);
    if (!ok) return false;
  }
  return true;
}

int cli_engine_answer_items(cli_engine *e, cli_call call, const cli_item *items, size_t n,
                            const json_value *questions, const cli_overrides *ov, char **results,
                            laya_error *err) {
  for (size_t i = 0; i < n; i++) results[i] = NULL;
  bool routed = ov->model_path == NULL;
  int rc = routed ? ensure_router(e, err) : ensure_direct(e, ov->model_path, err);
  if (rc) return rc;
  arena a;
  arena_init(&a, 1 << 16);
  size_t *idx = malloc(sizeof *idx * (n ? n : 1));
  json_value *vals = arena_alloc(&a, sizeof *vals * (n ? n : 1));
  if (!idx || !vals) rc = oom(err);
  /* inputs that share passes: states (and plain requests through the Router) */
  size_t k = 0;
  for (size_t i = 0; !rc && i < n; i++) {
    /* a shortlist ranks labels per state: those are answered one by one */
    bool shared = call == CLI_PREDICT && ov->shortlist_k <= 0 &&
                  (routed ? batchable(&items[i]) : items[i].state != NULL);
    if (!shared) continue;
    if (routed) {
      json_value *r = one_request(&items[i], call, questions, ov, true, false, &a);
      if (!r) rc = oom(err);
      else vals[k] = *r;
    } else {
      vals[k] = *items[i].state;
    }
    idx[k++] = i;
  }
  if (!rc && k) {
    json_value *req = obj_new(&a, 10);
    char **got = calloc(k, sizeof *got);
    if (!req || !got) {
      rc = oom(err);
    } else {
      json_value arr = {.type = JSON_ARRAY, .n = (uint32_t)k, .items = vals};
      if (ov->batch_size > 0) obj_fill(req, "batch_size", json_int(ov->batch_size));
      if (ov->sort_by_length) obj_fill(req, "sort_by_length", json_bool(true));
      if (ov->min_confidence >= 0) obj_fill(req, "min_confidence", json_float(ov->min_confidence));
      if (routed) {
        obj_fill(req, "requests", arr);
        rc = router_predict_batch_value(e->router, req, &RJ_PY, got, err);
      } else {
        obj_fill(req, "states", arr);
        obj_fill(req, "questions", *questions);
        fill_flags(req, ov, call, false, false);
        state_result *res = NULL;
        long nres = 0;
        laya_err_clear(err);
        rc = engine_run_request(e->direct, req, true, &a, &res, &nres, err);
        if (!rc && nres != (long)k) rc = laya_err(err, LAYA_ERR_INTERNAL, NULL, "predict_batch returned %ld results for %zu states", nres, k);
        for (size_t t = 0; !rc && t < k; t++) {
          strbuf one;
          sb_init(&one);
          rj_write_state(&one, &RJ_PY, &res[t], NULL);
          if (one.oom) rc = oom(err);
          got[t] = sb_steal(&one);
        }
      }
      for (size_t t = 0; t < k; t++) {
        if (rc) free(got[t]);
        else results[idx[t]] = got[t];
      }
    }
    free(got);
  }
  /* the rest one at a time, in input order */
  for (size_t i = 0; !rc && i < n; i++)
    if (!results[i]) rc = cli_engine_answer_item(e, call, &items[i], questions, ov, &results[i], err);
  if (rc)
    for (size_t i = 0; i < n; i++) free(results[i]), results[i] = NULL;
  free(idx);
  arena_free(&a);
  return rc;
}
int cli_engine_answer(cli_engine *e, const router_config *cfg, cli_call call, const json_value *state,
                      const json_value *questions, const cli_overrides *ov, char **result,
                      laya_error *err) {
  (void)cfg;
  cli_item it = {.state = state};
  return cli_engine_answer_item(e, call, &it, questions, ov, result, err);
}

int cli_engine_answer_batch(cli_engine *e, const router_config *cfg, cli_call call,
                            const json_value *states, const json_value *questions,
                            const cli_overrides *ov, char **results, laya_error *err) {
  (void)cfg;
  cli_item *items = malloc(sizeof *items * (states->n ? states->n : 1));
  if (!items) return oom(err);
  for (uint32_t i = 0; i < states->n; i++) items[i] = (cli_item){.state = &states->items[i]};
  int rc = cli_engine_answer_items(e, call, items, states->n, questions, ov, results, err);
  free(items);
  return rc;
}
#else
typedef int predict_engine_unused; /* predict_stub.c answers in a build without the engine */
#endif
