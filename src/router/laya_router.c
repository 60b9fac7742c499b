/*
 * laya_router.c: the public Router (include/laya.h): route, resolve the checkpoint through the
 * Hugging Face cache or the Hub, keep at most max_loaded checkpoints open, and answer.
 *
 * Loaded models are reference counted: a checkpoint evicted while another thread is still
 * answering with it is closed when that call releases it, so eviction never pulls a model out
 * from under a running prediction. Loading happens under one build lock (Laya builds one
 * checkpoint at a time to bound peak memory); routing and inference take no lock.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/json.h"
#include "core/options.h"
#include "core/pystr.h"
#include "core/strbuf.h"
#include "laya.h"
#include "model/decide.h"
#include "model/engine.h"
#include "model/hub.h"
#include "model/result_json.h"
#include "model/typed.h"
#include "router/router.h"
#include "router/router_call.h"

typedef struct pool_entry {
  char name[64];
  laya_model *model;
  int refs;
  bool evicted;
  unsigned long long used; /* LRU clock */
} pool_entry;

struct laya_router {
  router_config cfg;
  int max_loaded;
  pool_entry entries[ROUTER_MAX_MODELS];
  int n;
  unsigned long long clock;
  pthread_mutex_t mu;
  pthread_mutex_t build_mu;
  char *device;
  int threads;
  char *revision;
  char *revisions[ROUTER_MAX_MODELS]; /* by cfg.models index */
  char *digests[ROUTER_MAX_MODELS];   /* JSON {relpath: hex} by cfg.models index */
  char *cache_dir;
  int offline; /* -1 = HF_HUB_OFFLINE */
  char *calibration;       /* "calibration": a calibration file every checkpoint loads */
  char *lang_temperatures; /* "lang_temperatures": JSON every checkpoint loads */
};

static char *dup_json(const json_value *v) {
  strbuf sb;
  sb_init(&sb);
  json_dump(&sb, v, NULL);
  return sb_steal(&sb);
}

static int model_index(const laya_router *r, const char *name) {
  for (int i = 0; i < r->cfg.nmodels; i++)
    if (!strcmp(r->cfg.models[i].name, name)) return i;
  return -1;
}

laya_router *laya_router_open(const char *config_json, laya_error *err) {
  laya_err_clear(err);
  laya_router *r = calloc(1, sizeof *r);
  if (!r) {
    laya_err(err, LAYA_ERR_NOMEM, "MemoryError", "out of memory");
    return NULL;
  }
  pthread_mutex_init(&r->mu, NULL);
  pthread_mutex_init(&r->build_mu, NULL);
  r->max_loaded = 2;
  r->offline = -1;
  arena a;
  arena_init(&a, 1 << 12);
  /* LAYA_SHA256_DIGESTS, read once here (core/options.h) for its per-checkpoint form below; the
   * flat form is the loader's own read (laya_open) */
  laya_env_options envo;
  laya_env_options_init(&envo);
  const json_value *cfg = NULL;
  int rc = laya_env_options_read_one(&envo, "LAYA_SHA256_DIGESTS", err);
  if (!rc && config_json && *config_json) {
    /* Parse (outside input): the caller's Router config */
    cfg = json_parse(config_json, strlen(config_json), &a, NULL, err);
    if (!cfg) {
      rc = LAYA_ERR_FORMAT;
      goto done;
    }
    if (cfg->type != JSON_OBJECT) {
      rc = laya_type_error(err, "router config must be a JSON object, got %s", json_py_type(cfg));
      goto done;
    }
  }
  const json_value *v = cfg ? json_get(cfg, "standalone_repos") : NULL;
  router_config_init(&r->cfg, v && v->type == JSON_BOOL && v->b);
  const json_value *models = cfg ? json_get(cfg, "models") : NULL;
  if (models && models->type == JSON_OBJECT) {
    for (uint32_t i = 0; i < models->n && !rc; i++) {
      const json_value *src = &models->members[i].value;
      const char *source = NULL, *sub = NULL;
      if (src->type == JSON_STRING) {
        source = src->s;
      } else if (src->type == JSON_ARRAY && src->n >= 1 && src->items[0].type == JSON_STRING) {
        source = src->items[0].s;
        if (src->n > 1 && src->items[1].type == JSON_STRING) sub = src->items[1].s;
      } else {
        rc = laya_type_error(err,
                             "checkpoint source for '%s' must be a repo id, a local path or a "
                             "(repo, subfolder) pair, got %s",
                             models->members[i].key, json_py_type(src));
        break;
      }
      rc = router_register(&r->cfg, models->members[i].key, source, sub, err);
    }
  }
  if (rc) goto done;
  if (cfg && (v = json_get(cfg, "max_loaded")) && v->type == JSON_INT)
    r->max_loaded = v->i < 1 ? 1 : (int)(v->i > 1000 ? 1000 : v->i);
  if (cfg && (v = json_get(cfg, "default")) && v->type == JSON_STRING &&
      (rc = router_set_default(&r->cfg, v->s, err)))
    goto done;
  if (cfg && (v = json_get(cfg, "auto_task_detection")) && v->type == JSON_BOOL)
    r->cfg.auto_task_detection = v->b;
  if (cfg && (v = json_get(cfg, "lang_guess")) && v->type == JSON_STRING)
    r->cfg.lang_guess = strdup(v->s);
  if (cfg && (v = json_get(cfg, "device")) && v->type == JSON_STRING) r->device = strdup(v->s);
  if (cfg && (v = json_get(cfg, "threads")) && v->type == JSON_INT) r->threads = (int)v->i;
  if (cfg && (v = json_get(cfg, "revision")) && v->type == JSON_STRING) r->revision = strdup(v->s);
  if (cfg && (v = json_get(cfg, "cache_dir")) && v->type == JSON_STRING) r->cache_dir = strdup(v->s);
  if (cfg && (v = json_get(cfg, "offline")) && v->type == JSON_BOOL) r->offline = v->b;
  /* what Laya's Router passes every checkpoint through agent_kwargs */
  if (cfg && (v = json_get(cfg, "calibration")) && v->type == JSON_STRING) r->calibration = strdup(v->s);
  if (cfg && (v = json_get(cfg, "lang_temperatures")) && v->type != JSON_NULL) r->lang_temperatures = dup_json(v);
  /* LAYA_SHA256_DIGESTS naming checkpoints ({model: {artifact: digest}}) pins each one with its
   * own files; a checkpoint it does not name gets {} so the loader does not read the nested map
   * as an artifact map. A flat {artifact: digest} map is left to the loader, which applies it to
   * every checkpoint. The config's own sha256_digests below win over the variable. */
  const char *env = envo.sha256_digests;
  if (!rc && env && *env) {
    laya_error perr = {0};
    /* Parse (outside input): the environment variable's value */
    const json_value *d = json_parse(env, strlen(env), &a, NULL, &perr);
    bool all_str = true, all_obj = true;
    for (uint32_t i = 0; d && d->type == JSON_OBJECT && i < d->n; i++) {
      all_str &= d->members[i].value.type == JSON_STRING;
      all_obj &= d->members[i].value.type == JSON_OBJECT;
    }
    if (d && d->type == JSON_OBJECT && d->n && !all_str) {
      if (!all_obj) {
        strbuf m;
        sb_init(&m);
        const char *keys[64];
        uint32_t nk = d->n < 64 ? d->n : 64;
        for (uint32_t i = 0; i < nk; i++) keys[i] = d->members[i].key;
        for (uint32_t i = 0; i < nk; i++)
          for (uint32_t j = i + 1; j < nk; j++)
            if (strcmp(keys[i], keys[j]) > 0) {
              const char *t = keys[i];
              keys[i] = keys[j];
              keys[j] = t;
            }
        sb_putc(&m, '[');
        for (uint32_t i = 0; i < nk; i++) {
          if (i) sb_puts(&m, ", ");
          py_repr_str(&m, keys[i], strlen(keys[i]));
        }
        sb_putc(&m, ']');
        rc = laya_value_error(err,
                              "LAYA_SHA256_DIGESTS must be either {artifact: digest} for every "
                              "checkpoint or {model: {artifact: digest}} per checkpoint; %s mixes "
                              "the two or holds a value that is neither",
                              m.data);
        sb_free(&m);
        goto done;
      }
      for (int i = 0; i < r->cfg.nmodels; i++) r->digests[i] = strdup("{}");
      for (uint32_t i = 0; i < d->n && !rc; i++) {
        char name[64];
        json_value key = {.type = JSON_STRING, .s = d->members[i].key, .n = d->members[i].key_len};
        if ((rc = router_resolve(&r->cfg, &key, name, err))) goto done;
        int idx = model_index(r, name);
        free(r->digests[idx]);
        r->digests[idx] = dup_json(&d->members[i].value);
      }
    }
  }
  const char *tables[2] = {"revisions", "sha256_digests"};
  for (int t = 0; t < 2 && !rc; t++) {
    const json_value *m = cfg ? json_get(cfg, tables[t]) : NULL;
    if (!m || m->type != JSON_OBJECT) continue;
    for (uint32_t i = 0; i < m->n && !rc; i++) {
      char name[64];
      json_value key = {.type = JSON_STRING, .s = m->members[i].key, .n = m->members[i].key_len};
      if ((rc = router_resolve(&r->cfg, &key, name, err))) break;
      int idx = model_index(r, name);
      const json_value *val = &m->members[i].value;
      if (t == 0 && val->type == JSON_STRING) {
        free(r->revisions[idx]);
        r->revisions[idx] = strdup(val->s);
      }
      if (t == 1 && (val->type == JSON_OBJECT || val->type == JSON_NULL)) {
        free(r->digests[idx]);
        r->digests[idx] = val->type == JSON_OBJECT ? dup_json(val) : strdup("{}");
      }
    }
  }
done:
  laya_env_options_free(&envo);
  arena_free(&a);
  if (rc) {
    laya_router_close(r);
    return NULL;
  }
  return r;
}

void laya_router_close(laya_router *r) {
  if (!r) return;
  for (int i = 0; i < r->n; i++)
    if (r->entries[i].model) laya_close(r->entries[i].model);
  for (int i = 0; i < ROUTER_MAX_MODELS; i++) {
    free(r->revisions[i]);
    free(r->digests[i]);
  }
  free(r->device);
  free(r->revision);
  free(r->cache_dir);
  free(r->calibration);
  free(r->lang_temperatures);
  router_config_free(&r->cfg);
  pthread_mutex_destroy(&r->mu);
  pthread_mutex_destroy(&r->build_mu);
  free(r);
}

/* Close least-recently-used entries beyond max_loaded; one in use closes on release. Under mu. */
static void evict_locked(laya_router *r) {
  for (;;) {
    int live = 0, victim = -1;
    for (int i = 0; i < r->n; i++) {
      if (r->entries[i].evicted) continue;
      live++;
      if (victim < 0 || r->entries[i].used < r->entries[victim].used) victim = i;
    }
    if (live <= r->max_loaded || victim < 0) return;
    pool_entry *e = &r->entries[victim];
    e->evicted = true;
    if (e->refs == 0) {
      laya_close(e->model);
      *e = r->entries[--r->n];
    }
  }
}

/* Take a reference on the live entry `name`, if there is one. */
static laya_model *borrow_loaded(laya_router *r, const char *name) {
  laya_model *m = NULL;
  pthread_mutex_lock(&r->mu);
  for (int i = 0; i < r->n && !m; i++) {
    pool_entry *e = &r->entries[i];
    if (!e->evicted && !strcmp(e->name, name)) {
      e->refs++;
      e->used = ++r->clock;
      m = e->model;
    }
  }
  pthread_mutex_unlock(&r->mu);
  return m;
}

/* Borrow the loaded model `name` (opening it from `dir` on first use). */
static laya_model *acquire(laya_router *r, const char *name, const char *dir, const char *digests,
                           laya_error *err) {
  laya_model *loaded = borrow_loaded(r, name);
  if (loaded) return loaded;
  pthread_mutex_lock(&r->build_mu);
  /* built while this caller waited for the build lock? */
  if ((loaded = borrow_loaded(r, name))) {
    pthread_mutex_unlock(&r->build_mu);
    return loaded;
  }
  laya_options opt;
  laya_options_init(&opt);
  opt.device = r->device;
  opt.threads = r->threads;
  opt.sha256_json = digests;
  opt.calibration_path = r->calibration;
  opt.lang_temperatures_json = r->lang_temperatures;
  laya_model *m = laya_open(dir, &opt, err);
  laya_model *out = NULL;
  if (m) {
    pthread_mutex_lock(&r->mu);
    if (r->n >= ROUTER_MAX_MODELS) {
      laya_close(m);
      laya_err(err, LAYA_ERR_INTERNAL, "RuntimeError", "too many checkpoints in use at once");
    } else {
      pool_entry *e = &r->entries[r->n++];
      memset(e, 0, sizeof *e);
      snprintf(e->name, sizeof e->name, "%s", name);
      e->model = m;
      e->refs = 1;
      e->used = ++r->clock;
      out = m;
      evict_locked(r);
    }
    pthread_mutex_unlock(&r->mu);
  }
  pthread_mutex_unlock(&r->build_mu);
  return out;
}

static void release(laya_router *r, laya_model *m) {
  pthread_mutex_lock(&r->mu);
  for (int i = 0; i < r->n; i++) {
    pool_entry *e = &r->entries[i];
    if (e->model != m) continue;
    if (--e->refs == 0 && e->evicted) {
      laya_close(e->model);
      *e = r->entries[--r->n];
    }
    break;
  }
  pthread_mutex_unlock(&r->mu);
}

char *laya_router_info(laya_router *r) {
  strbuf sb;
  sb_init(&sb);
  pthread_mutex_lock(&r->mu);
  int idx[ROUTER_MAX_MODELS], k = 0;
  for (int i = 0; i < r->n; i++)
    if (!r->entries[i].evicted) idx[k++] = i;
  for (int i = 0; i < k; i++)
    for (int j = i + 1; j < k; j++)
      if (r->entries[idx[j]].used < r->entries[idx[i]].used) {
        int t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
      }
  sb_puts(&sb, "{\"loaded\": [");
  for (int i = 0; i < k; i++) {
    if (i) sb_puts(&sb, ", ");
    json_dump_string(&sb, r->entries[idx[i]].name, strlen(r->entries[idx[i]].name), false);
  }
  sb_printf(&sb, "], \"max_loaded\": %d, \"default\": ", r->max_loaded);
  json_dump_string(&sb, r->cfg.default_model, strlen(r->cfg.default_model), false);
  sb_putc(&sb, '}');
  pthread_mutex_unlock(&r->mu);
  return sb_steal(&sb);
}

/* ---------------------------------------------------------------- requests */

static const char *const kRouteKeys[] = {"model", "task", "lang", "lang_guess", "explain", NULL};

/* Route one request (index >= 0: a batch's, named in messages): the RouteDecision's text in
 * decision, the checkpoint in chosen and, when facts is not NULL (sb_init'd by the caller), the
 * decision's language, reason and where its detection lies. */
static int route_request_facts(laya_router *r, const json_value *req, int index, strbuf *decision,
                               char chosen[64], router_facts *facts, laya_error *err) {
  char where[32] = "";
  if (index >= 0) snprintf(where, sizeof where, "request %d ", index);
  if (req->type != JSON_OBJECT)
    return laya_type_error(err, "%smust be a dict, got %s", where, json_py_type(req));
  const json_value *state = json_get(req, "state");
  if (!state) return laya_value_error(err, "%sis missing required key 'state'", where);
  if (state->type == JSON_NULL) /* Router.predict's words, and predict_batch's naming the request */
    return index >= 0 ? laya_type_error(err, "%s'state' must not be None; pass a string, dict, or list", where)
                      : laya_type_error(err, "state must not be None; pass a string, dict, or list");
  const json_value *ex = json_get(req, "explain");
  return router_route_facts(&r->cfg, state, json_get(req, "questions"), json_get(req, "model"),
                            json_get(req, "task"), json_get(req, "lang"), json_get(req, "lang_guess"),
                            ex && ex->type == JSON_BOOL && ex->b, decision, chosen, facts, err);
}

/* route_request_facts keeping only the detected language (language NULL: none). */
static int route_request(laya_router *r, const json_value *req, int index, strbuf *decision,
                         char chosen[64], char language[32], laya_error *err) {
  router_facts f;
  sb_init(&f.reason);
  int rc = route_request_facts(r, req, index, decision, chosen, language ? &f : NULL, err);
  if (language) snprintf(language, 32, "%s", rc ? "" : f.language);
  sb_free(&f.reason);
  return rc;
}

/* What a batch checks of each request before routing it (Laya names the request's index). */
static int check_batch_item(const json_value *q, uint32_t i, laya_error *err) {
  const json_value *qs = q->type == JSON_OBJECT ? json_get(q, "questions") : NULL;
  if (q->type == JSON_OBJECT && json_get(q, "state") && !qs)
    return laya_value_error(err, "request %u is missing required key 'questions'", i);
  if (qs && qs->type != JSON_OBJECT)
    return laya_type_error(err, "request %u 'questions' must be a dict, got %s", i, json_py_type(qs));
  return 0;
}

static int route_one(void *r, const json_value *req, strbuf *out, laya_error *err) {
  char chosen[64];
  return route_request(r, req, -1, out, chosen, NULL, err);
}

int laya_route(laya_router *r, const char *request_json, char **decision_json, laya_error *err) {
  return json_call("laya_route", r, request_json, route_one, r, decision_json, err);
}

static int route_many(void *r, const json_value *reqs, strbuf *out, laya_error *err) {
  if (reqs->type != JSON_ARRAY)
    return laya_type_error(err, "requests must be a sequence of request dictionaries");
  int rc = 0;
  sb_putc(out, '[');
  for (uint32_t i = 0; !rc && i < reqs->n; i++) {
    const json_value *q = &reqs->items[i];
    if ((rc = check_batch_item(q, i, err))) break;
    if (i) sb_puts(out, ", ");
    char chosen[64];
    rc = route_request(r, q, (int)i, out, chosen, NULL, err);
  }
  sb_putc(out, ']');
  return rc;
}

int laya_route_batch(laya_router *r, const char *requests_json, char **decisions_json, laya_error *err) {
  return json_call("laya_route_batch", r, requests_json, route_many, r, decisions_json, err);
}

/* Resolve the routed checkpoint to a directory and borrow its model. */
static laya_model *model_for(laya_router *r, const char *name, laya_error *err) {
  int idx = model_index(r, name);
  if (idx < 0) {
    laya_value_error(err, "checkpoint '%s' has no source to load from", name);
    return NULL;
  }
  const router_entry *e = &r->cfg.models[idx];
  hub_options o;
  hub_options_init(&o);
  o.revision = r->revisions[idx] ? r->revisions[idx] : r->revision;
  o.cache_dir = r->cache_dir;
  o.offline = r->offline;
  o.sha256_json = r->digests[idx];
  char *dir = NULL;
  if (hub_resolve(e->source, e->subfolder, &o, &dir, NULL, err)) return NULL;
  laya_model *m = acquire(r, name, dir, r->digests[idx], err);
  free(dir);
  return m;
}

/* The model-level request as a value: the router's keys removed, "lang" set to the effective
 * language (the request's members are shared, not copied). NULL when out of memory. */
static json_value *model_request(const json_value *req, const char *lang, arena *a) {
  json_value *o = arena_alloc(a, sizeof *o);
  json_member *mm = arena_alloc(a, sizeof(json_member) * (req->n + 1));
  if (!o || !mm) return NULL;
  memset(o, 0, sizeof *o);
  o->type = JSON_OBJECT;
  o->members = mm;
  for (uint32_t i = 0; i < req->n; i++) {
    bool skip = false;
    for (int j = 0; kRouteKeys[j]; j++) skip |= !strcmp(req->members[i].key, kRouteKeys[j]);
    if (!skip) mm[o->n++] = req->members[i];
  }
  if (lang) {
    mm[o->n].key = "lang";
    mm[o->n].key_len = 4;
    mm[o->n++].value = json_string(lang);
  }
  return o;
}

/* The effective language: an explicit string "lang", else the one routing detected. */
static const char *effective_lang(const json_value *req, const char *detected) {
  const json_value *lang = json_get(req, "lang");
  if (lang && lang->type == JSON_STRING) return lang->s;
  return detected && *detected ? detected : NULL;
}

typedef struct routed {
  laya_router *r;
  int call; /* CALL_* */
  const engine_progress *progress; /* CALL_LONG's passes; NULL = none */
  router_answer_fn fn;             /* router_call_typed: the result to fn, not written */
  void *user;
} routed;
enum { CALL_PREDICT = ROUTER_CALL_PREDICT, CALL_LONG = ROUTER_CALL_LONG, CALL_DECIDE = ROUTER_CALL_DECIDE,
       CALL_SHORTLIST = ROUTER_CALL_SHORTLIST };

/* The view of a routed answer (its results set by the caller). */
static router_answer answer_view(int call, const char *text, const char *chosen, router_facts *f) {
  return (router_answer){.call = call, .decision = text, .model = chosen, .reason = sb_cstr(&f->reason),
                         .detection = text + f->detection_at, .detection_len = f->detection_len};
}

int router_model_call_typed(laya_model *m, const router_answer *route, const json_value *req, const engine_progress *progress,
                            arena *a, router_answer_fn fn, void *user, laya_error *err) {
  router_answer v = *route;
  int rc;
  if (v.call == CALL_DECIDE) {
    decide_result *d = NULL;
    rc = engine_run_decide(m, req, &d, err);
    v.decide = d;
    if (!rc) rc = fn(user, 0, &v, err);
    decide_result_free(d);
    return rc;
  }
  shortlist_result sl;
  long_result l;
  state_result *res = NULL;
  long n = 0;
  if (v.call == CALL_SHORTLIST) {
    rc = engine_run_shortlist(m, req, a, &sl, err);
    v.shortlist = &sl;
    v.state = &sl.r;
  } else if (v.call == CALL_PREDICT) {
    rc = engine_run_request(m, req, false, a, &res, &n, err);
    v.state = res;
  } else {
    rc = engine_run_long(m, req, progress, a, &l, err);
    v.lng = &l;
  }
  return rc ? rc : fn(user, 0, &v, err);
}

/* One routed call: route, borrow the model, run the model-level call typed, and write its result
 * with the RouteDecision as "routing" (last). */
static int routed_run(void *ctx, const json_value *req, strbuf *out, laya_error *err) {
  laya_router *r = ((routed *)ctx)->r;
  const int call = ((routed *)ctx)->call;
  const engine_progress *r_progress = ((routed *)ctx)->progress;
  strbuf dec;
  sb_init(&dec);
  char chosen[64], detected[32];
  router_facts facts;
  sb_init(&facts.reason);
  int rc = route_request_facts(r, req, -1, &dec, chosen, &facts, err);
  snprintf(detected, sizeof detected, "%s", rc ? "" : facts.language);
  laya_model *m = NULL;
  if (!rc) {
    m = model_for(r, chosen, err);
    if (!m) rc = err && err->code ? err->code : LAYA_ERR_IO;
  }
  if (!rc) {
    /* explicit lang, else the detected language (per-language temperatures) */
    arena a;
    arena_init(&a, 1 << 14);
    const json_value *mreq = model_request(req, effective_lang(req, detected), &a);
    if (!mreq) {
      rc = laya_err(err, LAYA_ERR_NOMEM, "MemoryError", "out of memory");
    } else if (((routed *)ctx)->fn) {
      router_answer v = answer_view(call, sb_cstr(&dec), chosen, &facts);
      rc = router_model_call_typed(m, &v, mreq, ((routed *)ctx)->progress, &a, ((routed *)ctx)->fn,
                                   ((routed *)ctx)->user, err);
    } else if (call == CALL_DECIDE) {
      rc = decide_run(m, mreq, false, NULL, sb_cstr(&dec), out, err);
    } else {
      rj w;
      rj_init(&w, out, &RJ_PY);
      if (call == CALL_SHORTLIST) {
        shortlist_result sl;
        rc = engine_run_shortlist(m, mreq, &a, &sl, err);
        if (!rc) rj_shortlist(&w, &sl, sb_cstr(&dec));
      } else if (call == CALL_PREDICT) {
        state_result *res;
        long n;
        rc = engine_run_request(m, mreq, false, &a, &res, &n, err);
        if (!rc) rj_state(&w, &res[0], sb_cstr(&dec));
      } else {
        long_result l;
        rc = engine_run_long(m, mreq, r_progress, &a, &l, err);
        if (!rc) rj_long(&w, &l, sb_cstr(&dec));
      }
    }
    release(r, m);
    arena_free(&a);
  }
  sb_free(&facts.reason);
  sb_free(&dec);
  return rc;
}

static int routed_call(laya_router *r, const char *request_json, int call, char **result_json,
                       laya_error *err) {
  routed ctx = {r, call, NULL, NULL, NULL};
  return json_call("laya_router", r, request_json, routed_run, &ctx, result_json, err);
}

int laya_router_predict(laya_router *r, const char *request_json, char **result_json, laya_error *err) {
  return routed_call(r, request_json, CALL_PREDICT, result_json, err);
}

/* predict_shortlist through the router (model/shortlist.c): routed on the caller's questions. */
int laya_router_predict_shortlist(laya_router *r, const char *request_json, char **result_json, laya_error *err) {
  return routed_call(r, request_json, CALL_SHORTLIST, result_json, err);
}

int laya_router_predict_long(laya_router *r, const char *request_json, char **result_json,
                             laya_error *err) {
  return routed_call(r, request_json, CALL_LONG, result_json, err);
}

/* decide through the router: decide's result with "routing" last. */
int laya_router_decide(laya_router *r, const char *request_json, char **result_json, laya_error *err) {
  return routed_call(r, request_json, CALL_DECIDE, result_json, err);
}

/* predict_tournament over a Router (Laya's laya.shortlist.predict_tournament(router, ...)): every
 * call of the tournament, each round's and the final one, is a Router.predict of its own, so each is
 * routed on its own questions (a round's are keyed "0", "1", ..., which match no typed-decisions
 * workflow) and answered on the checkpoint it routes to. The result is the final call's, with its
 * RouteDecision as "routing", then "tournament". */
typedef struct routed_tournament {
  laya_router *r;
  strbuf dec; /* the latest call's RouteDecision */
} routed_tournament;

static int tournament_call(void *ctx, const json_value *preq, arena *a, state_result *out, laya_error *err) {
  routed_tournament *t = ctx;
  sb_reset(&t->dec);
  char chosen[64], detected[32];
  int rc = route_request(t->r, preq, -1, &t->dec, chosen, detected, err);
  if (rc) return rc;
  laya_model *m = model_for(t->r, chosen, err);
  if (!m) return err && err->code ? err->code : LAYA_ERR_IO;
  const json_value *mreq = model_request(preq, effective_lang(preq, detected), a);
  if (!mreq) {
    rc = laya_err(err, LAYA_ERR_NOMEM, "MemoryError", "out of memory");
  } else {
    state_result *res;
    long n;
    rc = engine_run_request(m, mreq, false, a, &res, &n, err);
    if (!rc) *out = res[0]; /* in a, with the questions it points to: the model may go after release */
  }
  release(t->r, m);
  return rc;
}

static int tournament_run(void *ctx, const json_value *req, strbuf *out, laya_error *err) {
  routed_tournament t = {ctx, {0}};
  sb_init(&t.dec);
  arena a;
  arena_init(&a, 1 << 14);
  tournament_calls calls = {tournament_call, NULL, &t};
  tournament_result res;
  int rc = engine_run_tournament_calls(NULL, &calls, req, &a, &res, err);
  if (!rc) {
    rj w;
    rj_init(&w, out, &RJ_PY);
    rj_tournament(&w, &res, sb_cstr(&t.dec));
  }
  arena_free(&a);
  sb_free(&t.dec);
  return rc;
}

int laya_router_predict_tournament(laya_router *r, const char *request_json, char **result_json, laya_error *err) {
  return json_call("laya_router_predict_tournament", r, request_json, tournament_run, r, result_json, err);
}

/* predict_batch: route everything first (nothing loads before every request is valid), then one
 * laya_predict_batch per (checkpoint, question set, budgets, language) group, in order of first
 * appearance; results come back in input order. */
static int predict_batch_each(laya_router *r, const json_value *req, const rj_style *style, char **results,
                              router_answer_fn fn, void *user, laya_error *err) {
  const json_value *reqs = json_get(req, "requests");
  int rc = 0;
  arena a; /* the decisions and per-group results read back */
  arena_init(&a, 1 << 16);
  uint32_t n = reqs->n;
  char **decs = calloc(n ? n : 1, sizeof(char *));
  char (*models)[64] = calloc(n ? n : 1, 64);
  char **keys = calloc(n ? n : 1, sizeof(char *));
  const char **langs = calloc(n ? n : 1, sizeof(char *));
  char (*detected)[32] = calloc(n ? n : 1, 32);
  bool *done = calloc(n ? n : 1, sizeof(bool));
  router_facts *facts = calloc(n ? n : 1, sizeof *facts); /* fn's views */
  for (uint32_t i = 0; facts && i < n; i++) sb_init(&facts[i].reason);
  if (!decs || !models || !keys || !langs || !detected || !done || !facts)
    rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "laya_router_predict_batch: out of memory");
  for (uint32_t i = 0; !rc && i < n; i++) {
    const json_value *q = &reqs->items[i];
    if ((rc = check_batch_item(q, i, err))) break;
    const json_value *qs = q->type == JSON_OBJECT ? json_get(q, "questions") : NULL;
    strbuf d;
    sb_init(&d);
    rc = route_request_facts(r, q, (int)i, &d, models[i], &facts[i], err);
    if (!rc) snprintf(detected[i], 32, "%s", facts[i].language);
    decs[i] = sb_steal(&d);
    if (!rc && !decs[i]) rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "laya_router_predict_batch: out of memory");
    if (rc) break;
    const char *eff = effective_lang(q, detected[i]);
    langs[i] = eff;
    strbuf k;
    sb_init(&k);
    sb_printf(&k, "%s\n", models[i]);
    json_dump(&k, qs, NULL);
    const char *budget[2] = {"max_len", "head_max_len"};
    for (int b = 0; b < 2; b++) {
      const json_value *v = json_get(q, budget[b]);
      sb_putc(&k, '\n');
      if (v) json_dump(&k, v, NULL);
    }
    sb_printf(&k, "\n%s", eff ? eff : "");
    keys[i] = sb_steal(&k);
    if (!keys[i]) rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "laya_router_predict_batch: out of memory");
  }
  for (uint32_t i = 0; !rc && i < n; i++) {
    if (done[i]) continue;
    laya_model *m = model_for(r, models[i], err);
    if (!m) {
      rc = err && err->code ? err->code : LAYA_ERR_IO;
      break;
    }
    /* this group: every request with the same key, as one predict_batch request value */
    const json_value *q0 = &reqs->items[i];
    uint32_t *members = calloc(n, sizeof(uint32_t));
    json_value *states = arena_alloc(&a, sizeof *states), *breq = arena_alloc(&a, sizeof *breq);
    json_value *items = arena_alloc(&a, sizeof(json_value) * n);
    json_member *mm = arena_alloc(&a, sizeof(json_member) * 8);
    if (!members || !states || !breq || !items || !mm) {
      free(members);
      release(r, m);
      rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "laya_router_predict_batch: out of memory");
      break;
    }
    uint32_t k = 0;
    for (uint32_t j = i; j < n; j++) {
      if (done[j] || strcmp(keys[j], keys[i])) continue;
      items[k] = *json_get(&reqs->items[j], "state");
      members[k++] = j;
      done[j] = true;
    }
    *states = (json_value){.type = JSON_ARRAY, .n = k, .items = items};
    *breq = (json_value){.type = JSON_OBJECT, .members = mm};
    mm[breq->n++] = (json_member){"states", 6, *states};
    mm[breq->n++] = (json_member){"questions", 9, *json_get(q0, "questions")};
    static const char *const pass[] = {"max_len", "head_max_len"};
    for (int p = 0; p < 2; p++) {
      const json_value *v = json_get(q0, pass[p]);
      if (v) mm[breq->n++] = (json_member){pass[p], (uint32_t)strlen(pass[p]), *v};
    }
    static const char *const top[] = {"batch_size", "sort_by_length", "min_confidence"};
    for (int p = 0; p < 3; p++) {
      const json_value *v = json_get(req, top[p]);
      if (v) mm[breq->n++] = (json_member){top[p], (uint32_t)strlen(top[p]), *v};
    }
    if (langs[i]) mm[breq->n++] = (json_member){"lang", 4, json_string(langs[i])};
    state_result *res = NULL;
    long got = 0;
    rc = engine_run_request(m, breq, true, &a, &res, &got, err);
    release(r, m);
    if (!rc && got != (long)k)
      rc = laya_err(err, LAYA_ERR_INTERNAL, NULL, "predict_batch returned the wrong number of results");
    for (uint32_t t = 0; fn && !rc && t < k; t++) {
      router_answer v = answer_view(CALL_PREDICT, decs[members[t]], models[members[t]], &facts[members[t]]);
      v.state = &res[t];
      rc = fn(user, members[t], &v, err);
    }
    for (uint32_t t = 0; !fn && !rc && t < k; t++) {
      strbuf one;
      sb_init(&one);
      rj_write_state(&one, style, &res[t], decs[members[t]]);
      if (one.oom) rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "laya_router_predict_batch: out of memory");
      results[members[t]] = sb_steal(&one);
    }
    free(members);
  }
  for (uint32_t i = 0; decs && keys && i < n; i++) {
    free(decs[i]);
    free(keys[i]);
  }
  free(decs);
  free(models);
  free(keys);
  free(langs);
  free(detected);
  free(done);
  for (uint32_t i = 0; facts && i < n; i++) sb_free(&facts[i].reason);
  free(facts);
  arena_free(&a);
  return rc;
}

static int predict_batch_run(void *ctx, const json_value *req, strbuf *out, laya_error *err) {
  const json_value *reqs = json_get(req, "requests");
  if (!reqs || reqs->type != JSON_ARRAY)
    return laya_type_error(err, "requests must be a sequence of request dictionaries");
  char **results = calloc(reqs->n ? reqs->n : 1, sizeof(char *));
  if (!results) return laya_err(err, LAYA_ERR_NOMEM, NULL, "laya_router_predict_batch: out of memory");
  int rc = predict_batch_each(ctx, req, &RJ_PY, results, NULL, NULL, err);
  if (!rc) {
    sb_putc(out, '[');
    for (uint32_t i = 0; i < reqs->n; i++) {
      if (i) sb_puts(out, ", ");
      sb_puts(out, results[i]);
    }
    sb_putc(out, ']');
  }
  for (uint32_t i = 0; i < reqs->n; i++) free(results[i]);
  free(results);
  return rc;
}

int router_predict_batch_value(laya_router *r, const json_value *req, const rj_style *style, char **results,
                               laya_error *err) {
  laya_err_clear(err);
  const json_value *reqs = json_get(req, "requests");
  if (!reqs || reqs->type != JSON_ARRAY)
    return laya_type_error(err, "requests must be a sequence of request dictionaries");
  int rc = predict_batch_each(r, req, style, results, NULL, NULL, err);
  if (rc)
    for (uint32_t i = 0; i < reqs->n; i++) free(results[i]), results[i] = NULL;
  return rc;
}

int router_predict_batch_typed_each(laya_router *r, const json_value *req, router_answer_fn fn, void *user,
                                    laya_error *err) {
  laya_err_clear(err);
  const json_value *reqs = json_get(req, "requests");
  if (!reqs || reqs->type != JSON_ARRAY)
    return laya_type_error(err, "requests must be a sequence of request dictionaries");
  return predict_batch_each(r, req, NULL, NULL, fn, user, err);
}

int router_call_value(laya_router *r, int call, const json_value *req, const engine_progress *progress,
                      strbuf *out, laya_error *err) {
  laya_err_clear(err);
  routed ctx = {r, call, progress, NULL, NULL};
  return routed_run(&ctx, req, out, err);
}

int router_call_typed(laya_router *r, int call, const json_value *req, const engine_progress *progress,
                      router_answer_fn fn, void *user, laya_error *err) {
  laya_err_clear(err);
  routed ctx = {r, call, progress, fn, user};
  return routed_run(&ctx, req, NULL, err);
}

int laya_router_predict_batch(laya_router *r, const char *request_json, char **result_json,
                              laya_error *err) {
  return json_call("laya_router_predict_batch", r, request_json, predict_batch_run, r, result_json, err);
}

/* ---- typed entry points (router_typed.h) */

#include "router/router_typed.h"

int router_predict_typed(laya_router *r, const json_value *req, arena *a, state_result **out, char chosen[64],
                         laya_error *err) {
  char detected[32] = "";
  strbuf dec;
  sb_init(&dec);
  int rc = route_request(r, req, -1, &dec, chosen, detected, err);
  sb_free(&dec);
  if (rc) return rc;
  laya_model *m = model_for(r, chosen, err);
  if (!m) return err && err->code ? err->code : LAYA_ERR_IO;
  const json_value *mreq = model_request(req, effective_lang(req, detected), a);
  long n = 0;
  rc = mreq ? engine_run_request(m, mreq, false, a, out, &n, err)
            : laya_err(err, LAYA_ERR_NOMEM, "MemoryError", "out of memory");
  release(r, m);
  return rc;
}

int router_predict_batch_typed(laya_router *r, const json_value *reqs, long n, long batch_size,
                               bool sort_by_length, const json_value *min_confidence, arena *a,
                               state_result **out, char (*chosen)[64], laya_error *err) {
  char(*detected)[32] = arena_alloc(a, 32 * (size_t)(n ? n : 1));
  bool *done = arena_alloc(a, sizeof(bool) * (size_t)(n ? n : 1));
  if (!detected || !done) return laya_err(err, LAYA_ERR_NOMEM, "MemoryError", "out of memory");
  int rc = 0;
  for (long i = 0; !rc && i < n; i++) {
    done[i] = false;
    detected[i][0] = 0;
    if ((rc = check_batch_item(&reqs[i], (uint32_t)i, err))) break;
    strbuf d;
    sb_init(&d);
    rc = route_request(r, &reqs[i], (int)i, &d, chosen[i], detected[i], err);
    sb_free(&d);
  }
  /* one pass per (checkpoint, questions, budgets, language), in order of first appearance */
  for (long i = 0; !rc && i < n; i++) {
    if (done[i]) continue;
    const char *lang = effective_lang(&reqs[i], detected[i]);
    json_value *items = arena_alloc(a, sizeof(json_value) * (size_t)n);
    long *members = arena_alloc(a, sizeof(long) * (size_t)n);
    json_member *mm = arena_alloc(a, sizeof(json_member) * 8);
    if (!items || !members || !mm) return laya_err(err, LAYA_ERR_NOMEM, "MemoryError", "out of memory");
    long k = 0;
    for (long j = i; j < n; j++) {
      if (done[j] || strcmp(chosen[j], chosen[i])) continue;
      const char *lj = effective_lang(&reqs[j], detected[j]);
      if ((lang == NULL) != (lj == NULL) || (lang && strcmp(lang, lj))) continue;
      bool same = true;
      static const char *const keys[3] = {"questions", "max_len", "head_max_len"};
      for (int t = 0; t < 3 && same; t++) {
        const json_value *x = json_get(&reqs[i], keys[t]), *y = json_get(&reqs[j], keys[t]);
        if (!x || !y) {
          same = x == y;
          continue;
        }
        strbuf sx, sy;
        sb_init(&sx);
        sb_init(&sy);
        json_dump(&sx, x, NULL);
        json_dump(&sy, y, NULL);
        same = sx.len == sy.len && (!sx.len || !memcmp(sx.data, sy.data, sx.len));
        sb_free(&sx);
        sb_free(&sy);
      }
      if (!same) continue;
      items[k] = *json_get(&reqs[j], "state");
      members[k++] = j;
      done[j] = true;
    }
    json_value breq = {.type = JSON_OBJECT, .members = mm};
    mm[breq.n++] = (json_member){"states", 6, {.type = JSON_ARRAY, .n = (uint32_t)k, .items = items}};
    mm[breq.n++] = (json_member){"questions", 9, *json_get(&reqs[i], "questions")};
    static const char *const pass[] = {"max_len", "head_max_len"};
    for (int p = 0; p < 2; p++) {
      const json_value *v = json_get(&reqs[i], pass[p]);
      if (v) mm[breq.n++] = (json_member){pass[p], (uint32_t)strlen(pass[p]), *v};
    }
    json_value bs = {.type = JSON_INT, .i = batch_size, .d = (double)batch_size};
    if (batch_size > 0) mm[breq.n++] = (json_member){"batch_size", 10, bs};
    if (sort_by_length) mm[breq.n++] = (json_member){"sort_by_length", 14, {.type = JSON_BOOL, .b = true}};
    if (min_confidence) mm[breq.n++] = (json_member){"min_confidence", 14, *min_confidence};
    if (lang) mm[breq.n++] = (json_member){"lang", 4, json_string(lang)};
    laya_model *m = model_for(r, chosen[i], err);
    if (!m) return err && err->code ? err->code : LAYA_ERR_IO;
    state_result *res = NULL;
    long got = 0;
    rc = engine_run_request(m, &breq, true, a, &res, &got, err);
    release(r, m);
    if (!rc && got != k) rc = laya_err(err, LAYA_ERR_INTERNAL, NULL, "predict_batch returned the wrong number of results");
    for (long t = 0; !rc && t < k; t++) out[members[t]] = &res[t];
  }
  return rc;
}
