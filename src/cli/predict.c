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

#include "cli/cli_util.h"
#include "core/error.h"
#include "core/pystr.h"
#include "core/strbuf.h"
#include "laya.h"
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

/* ---------------------------------------------------------------- output layouts */

/* One answer line per question, "qid         : value", as Laya's CLI prints them. */
static void text_answers(strbuf *sb, const state_result *r) {
  strbuf line, key, label;
  sb_init(&line);
  sb_init(&key);
  sb_init(&label);
  for (int i = 0; i < r->n; i++) {
    const answer *a = &r->answers[i];
    const question *q = a->q;
    sb_reset(&line);
    if (q->type == QT_CHOICE) {
      const json_value *c = q->label[a->top];
      sb_reset(&label);
      py_str_json(&label, c);
      /* probabilities[choice]: the label's own key; of labels rendering to one key the last
       * (a dict's value), and 0.0 for a label that is not a string (no such key is looked up) */
      double p = 0.0;
      for (int k = 0; c->type == JSON_STRING && k < a->k; k++) {
        sb_reset(&key);
        label_json_key(&key, q->label[k]);
        if (key.len == c->n && !memcmp(sb_cstr(&key), c->s, key.len)) p = a->prob[k];
      }
      sb_printf(&line, "%s (p=%.3f)", sb_cstr(&label), p);
    } else if (q->type == QT_SCORE) {
      sb_printf(&line, "%.2f", a->score);
    } else {
      sb_printf(&line, "%.3f", a->noul);
    }
    if (a->gate == GATE_ABSTAINED) sb_puts(&line, "  [low-confidence]");
    sb_reset(&key);
    sb_append(&key, q->qid, q->qid_len);
    cli_pad(sb, sb_cstr(&key), 12);
    sb_printf(sb, ": %s\n", sb_cstr(&line));
  }
  sb_free(&line);
  sb_free(&key);
  sb_free(&label);
}

/* A schema decision's typed values, "name        : value  (confidence c)"; nothing when the
 * result is the values alone (no details: Laya's CLI finds no "values" in it). */
static void text_values(strbuf *sb, const decide_result *d) {
  if (!decide_result_details(d)) return;
  const state_result *r = decide_result_state(d);
  strbuf name, v, one;
  sb_init(&name);
  sb_init(&v);
  sb_init(&one);
  for (int i = 0, n = decide_result_count(d); i < n; i++) {
    size_t len;
    const char *nm = decide_result_name(d, i, &len);
    sb_reset(&name);
    sb_append(&name, nm, len);
    sb_reset(&v);
    sb_reset(&one);
    rj w;
    rj_init(&w, &one, &RJ_PY);
    rj_decide_value(&w, d, i);
    cli_unascii(&v, sb_cstr(&one));
    /* confidence is keyed by question id: the last answer of that id, as a dict keeps it */
    const answer *c = NULL;
    for (int k = 0; k < r->n; k++)
      if (r->answers[k].q->qid_len == len && !memcmp(r->answers[k].q->qid, nm, len)) c = &r->answers[k];
    if (c) sb_printf(&v, "  (confidence %.3f)", c->confidence);
    cli_pad(sb, sb_cstr(&name), 12);
    sb_printf(sb, ": %s\n", sb_cstr(&v));
  }
  sb_free(&name);
  sb_free(&v);
  sb_free(&one);
}

/* An answer laid out as ov->layout asks, appended to out: the text lines, or its JSON (indented,
 * or one line) with a newline. v->decision NULL: answered on one checkpoint, no routing. */
static void lay_out(const router_answer *v, cli_layout layout, strbuf *out) {
  if (layout == CLI_LAYOUT_TEXT) {
    if (v->decision) {
      cli_text_decision(out, v->model, v->reason, v->detection, v->detection_len);
      sb_putc(out, '\n');
    }
    if (v->call == ROUTER_CALL_DECIDE) text_values(out, v->decide);
    else text_answers(out, v->call == ROUTER_CALL_LONG ? &v->lng->r : v->state);
    return;
  }
  strbuf js;
  sb_init(&js);
  rj w;
  rj_init(&w, &js, layout == CLI_LAYOUT_JSON ? &RJ_INDENT2 : &RJ_PY);
  if (v->call == ROUTER_CALL_DECIDE) {
    /* the Router's decide text has the DecisionResult's "routing": null and the decision as a
     * last "routing" member, which JSON Lines print as the text is; indented output prints the
     * dict that text reads as (one "routing", in its field, holding the decision) */
    bool one = layout == CLI_LAYOUT_JSON && decide_result_details(v->decide);
    rj_decide_result(&w, v->decide, one ? v->decision : NULL, one ? NULL : v->decision);
  }
  else if (v->call == ROUTER_CALL_LONG) rj_long(&w, v->lng, v->decision);
  else if (v->call == ROUTER_CALL_SHORTLIST) rj_shortlist(&w, v->shortlist, v->decision);
  else rj_state(&w, v->state, v->decision);
  if (js.oom) out->oom = true;
  cli_unascii(out, sb_cstr(&js));
  sb_putc(out, '\n');
  sb_free(&js);
}

/* ---------------------------------------------------------------- calls */

/* router_answer_fn: one routed answer laid out into the strbuf of user (layout below). */
typedef struct layout_sink {
  cli_layout layout;
  strbuf *out;    /* a single call */
  char **results; /* a batch: results[index] */
} layout_sink;

static int oom(laya_error *err) { return laya_err(err, LAYA_ERR_NOMEM, "MemoryError", "out of memory"); }

static int sink_answer(void *user, long index, const router_answer *v, laya_error *err) {
  layout_sink *s = user;
  if (s->out) {
    lay_out(v, s->layout, s->out);
    return s->out->oom ? oom(err) : 0;
  }
  strbuf one;
  sb_init(&one);
  lay_out(v, s->layout, &one);
  if (one.oom) {
    sb_free(&one);
    return oom(err);
  }
  s->results[index] = sb_steal(&one);
  return 0;
}

static int answer_value(cli_engine *e, cli_call call, bool routed, bool shortlist, const json_value *req,
                        const cli_overrides *ov, arena *a, strbuf *out, laya_error *err) {
  if (req->type != JSON_OBJECT)
    return laya_type_error(err, "a request must be a JSON object of keyword arguments, got %s", json_py_type(req));
  int kind = shortlist ? ROUTER_CALL_SHORTLIST : call == CLI_PREDICT ? ROUTER_CALL_PREDICT
             : call == CLI_PREDICT_LONG ? ROUTER_CALL_LONG : ROUTER_CALL_DECIDE;
  layout_sink sink = {ov->layout, out, NULL};
  if (routed) return router_call_typed(e->router, kind, req, ov->progress, sink_answer, &sink, err);
  laya_err_clear(err);
  router_answer v = {.call = kind};
  return router_model_call_typed(e->direct, &v, req, ov->progress, a, sink_answer, &sink, err);
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
  /* predict_shortlist (k): its own entry point */
  bool shortlist = call == CLI_PREDICT && ov->shortlist_k > 0;
  if (req && shortlist) obj_fill(req, "k", json_int(ov->shortlist_k));
  rc = req ? answer_value(e, call, routed, shortlist, req, ov, &a, &out, err) : oom(err);
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
      layout_sink sink = {ov->layout, NULL, got};
      if (routed) {
        obj_fill(req, "requests", arr);
        rc = router_predict_batch_typed_each(e->router, req, sink_answer, &sink, err);
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
          router_answer v = {.call = ROUTER_CALL_PREDICT, .state = &res[t]};
          rc = sink_answer(&sink, (long)t, &v, err);
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
