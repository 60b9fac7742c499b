/*
 * predict.c: the answering modes of `laya`, on the public Router API (or, for --model DIR, on
 * one checkpoint opened directly: the result is then the plain model payload with no routing).
 */
#include "cli/predict.h"

#ifdef LAYA_CLI_HAVE_ENGINE
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/strbuf.h"
#include "laya.h"

struct cli_engine {
  laya_router *router;
  laya_model *direct;
  char *direct_path;
  char *device;
  int max_loaded;
};

cli_engine *cli_engine_new(const char *device, int max_loaded, laya_error *err) {
  cli_engine *e = calloc(1, sizeof *e);
  if (!e) {
    laya_err(err, LAYA_ERR_NOMEM, "MemoryError", "out of memory");
    return NULL;
  }
  e->device = device ? strdup(device) : NULL;
  e->max_loaded = max_loaded > 0 ? max_loaded : 2;
  return e;
}

void cli_engine_free(cli_engine *e) {
  if (!e) return;
  if (e->router) laya_router_close(e->router);
  if (e->direct) laya_close(e->direct);
  free(e->direct_path);
  free(e->device);
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
  laya_model *m = laya_open(path, &opt, err);
  if (!m) return err && err->code ? err->code : LAYA_ERR_IO;
  if (e->direct) laya_close(e->direct);
  free(e->direct_path);
  e->direct = m;
  e->direct_path = strdup(path);
  return 0;
}

static void put_key(strbuf *sb, const char *k, const json_value *v) {
  if (!v) return;
  sb_printf(sb, ", \"%s\": ", k);
  json_dump(sb, v, NULL);
}

/* The keys every call kind shares: routing overrides (Router only) and budgets. */
static void common_keys(strbuf *sb, const cli_overrides *ov, cli_call call, bool routed) {
  if (routed) {
    put_key(sb, "model", ov->model);
    put_key(sb, "task", ov->task);
    put_key(sb, "lang", ov->lang);
    put_key(sb, "lang_guess", ov->lang_guess);
  } else {
    put_key(sb, "lang", ov->lang);
  }
  if (call != CLI_PREDICT_LONG) {
    if (ov->max_len >= 0) sb_printf(sb, ", \"max_len\": %lld", ov->max_len);
    if (ov->head_max_len >= 0) sb_printf(sb, ", \"head_max_len\": %lld", ov->head_max_len);
  }
  if (ov->min_confidence >= 0) {
    char b[32];
    py_float_json(ov->min_confidence, b);
    sb_printf(sb, ", \"min_confidence\": %s", b);
  }
  if (call == CLI_PREDICT_LONG) {
    if (ov->window >= 0) sb_printf(sb, ", \"window\": %lld", ov->window);
    if (ov->stride >= 0) sb_printf(sb, ", \"stride\": %lld", ov->stride);
    if (ov->batch_size > 0) sb_printf(sb, ", \"batch_size\": %lld", ov->batch_size);
  }
  if (call == CLI_DECIDE) sb_puts(sb, ", \"return_details\": true");
}

int cli_engine_answer(cli_engine *e, const router_config *cfg, cli_call call, const json_value *state,
                      const json_value *questions, const cli_overrides *ov, char **result,
                      laya_error *err) {
  (void)cfg;
  bool routed = ov->model_path == NULL;
  int rc = routed ? ensure_router(e, err) : ensure_direct(e, ov->model_path, err);
  if (rc) return rc;
  strbuf req;
  sb_init(&req);
  sb_puts(&req, "{\"state\": ");
  json_dump(&req, state, NULL);
  sb_puts(&req, call == CLI_DECIDE ? ", \"schema\": " : ", \"questions\": ");
  json_dump(&req, questions, NULL);
  common_keys(&req, ov, call, routed);
  const bool shortlist = call == CLI_PREDICT && ov->shortlist_k > 0; /* predict_shortlist (k) */
  if (shortlist) sb_printf(&req, ", \"k\": %lld", ov->shortlist_k);
  sb_putc(&req, '}');
  if (shortlist) {
    rc = routed ? laya_router_predict_shortlist(e->router, req.data, result, err)
                : laya_predict_shortlist(e->direct, req.data, result, err);
  } else if (routed) {
    if (call == CLI_PREDICT) rc = laya_router_predict(e->router, req.data, result, err);
    else if (call == CLI_PREDICT_LONG) rc = laya_router_predict_long(e->router, req.data, result, err);
    else rc = laya_router_decide(e->router, req.data, result, err);
  } else {
    if (call == CLI_PREDICT) rc = laya_predict(e->direct, req.data, result, err);
    else if (call == CLI_PREDICT_LONG) rc = laya_predict_long(e->direct, req.data, result, err);
    else rc = laya_decide(e->direct, req.data, result, err);
  }
  sb_free(&req);
  return rc;
}

/* Split a JSON array text into malloc'd element texts. */
static int split_array(const char *arr, size_t n, char **out, laya_error *err) {
  arena a;
  arena_init(&a, 1 << 14);
  json_value *v = json_parse(arr, strlen(arr), &a, NULL, err);
  int rc = 0;
  if (!v || v->type != JSON_ARRAY || v->n != n) {
    rc = laya_err(err, LAYA_ERR_INTERNAL, NULL, "batch call returned an unexpected result");
  } else {
    for (size_t i = 0; i < n; i++) {
      strbuf sb;
      sb_init(&sb);
      json_dump(&sb, &v->items[i], NULL);
      out[i] = sb_steal(&sb);
    }
  }
  arena_free(&a);
  return rc;
}

int cli_engine_answer_batch(cli_engine *e, const router_config *cfg, cli_call call,
                            const json_value *states, const json_value *questions,
                            const cli_overrides *ov, char **results, laya_error *err) {
  bool routed = ov->model_path == NULL;
  if (call == CLI_PREDICT_LONG || (call == CLI_PREDICT && ov->shortlist_k > 0)) {
    /* one scan per document; a shortlist ranks per state */
    for (uint32_t i = 0; i < states->n; i++) {
      int rc = cli_engine_answer(e, cfg, call, &states->items[i], questions, ov, &results[i], err);
      if (rc) return rc;
    }
    return 0;
  }
  int rc = routed ? ensure_router(e, err) : ensure_direct(e, ov->model_path, err);
  if (rc) return rc;
  strbuf req;
  sb_init(&req);
  char *arr = NULL;
  if (call == CLI_DECIDE || !routed) {
    /* decide_batch / predict_batch on one model: states share the questions */
    if (routed) {
      /* decide through the router, one state at a time (each state routes on its own) */
      sb_free(&req);
      for (uint32_t i = 0; i < states->n; i++) {
        rc = cli_engine_answer(e, cfg, call, &states->items[i], questions, ov, &results[i], err);
        if (rc) return rc;
      }
      return 0;
    }
    sb_puts(&req, "{\"states\": ");
    json_dump(&req, states, NULL);
    sb_puts(&req, call == CLI_DECIDE ? ", \"schema\": " : ", \"questions\": ");
    json_dump(&req, questions, NULL);
    common_keys(&req, ov, call, false);
    if (call == CLI_PREDICT) {
      if (ov->batch_size > 0) sb_printf(&req, ", \"batch_size\": %lld", ov->batch_size);
      if (ov->sort_by_length) sb_puts(&req, ", \"sort_by_length\": true");
    }
    sb_putc(&req, '}');
    rc = call == CLI_DECIDE ? laya_decide_batch(e->direct, req.data, &arr, err)
                            : laya_predict_batch(e->direct, req.data, &arr, err);
  } else {
    sb_puts(&req, "{\"requests\": [");
    for (uint32_t i = 0; i < states->n; i++) {
      if (i) sb_puts(&req, ", ");
      sb_puts(&req, "{\"state\": ");
      json_dump(&req, &states->items[i], NULL);
      sb_puts(&req, ", \"questions\": ");
      json_dump(&req, questions, NULL);
      put_key(&req, "model", ov->model);
      put_key(&req, "task", ov->task);
      put_key(&req, "lang", ov->lang);
      put_key(&req, "lang_guess", ov->lang_guess);
      if (ov->max_len >= 0) sb_printf(&req, ", \"max_len\": %lld", ov->max_len);
      if (ov->head_max_len >= 0) sb_printf(&req, ", \"head_max_len\": %lld", ov->head_max_len);
      sb_putc(&req, '}');
    }
    sb_putc(&req, ']');
    if (ov->batch_size > 0) sb_printf(&req, ", \"batch_size\": %lld", ov->batch_size);
    if (ov->sort_by_length) sb_puts(&req, ", \"sort_by_length\": true");
    if (ov->min_confidence >= 0) {
      char b[32];
      py_float_json(ov->min_confidence, b);
      sb_printf(&req, ", \"min_confidence\": %s", b);
    }
    sb_putc(&req, '}');
    rc = laya_router_predict_batch(e->router, req.data, &arr, err);
  }
  sb_free(&req);
  if (!rc) rc = split_array(arr, states->n, results, err);
  free(arr);
  return rc;
}
#else
typedef int predict_engine_unused; /* predict_stub.c answers in a build without the engine */
#endif
