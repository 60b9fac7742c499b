/* models.c: the checkpoints a server answers from, their names, and routing.
 *
 * The registry is Laya's: english, multilingual, typed-decisions (with Laya's aliases), plus
 * LAYA_EXTRA_MODELS ({name: local directory, Hub repo id, or [repo, subfolder]}), which may also
 * re-point a built-in name. A checkpoint without a local directory is found the way the CLI and
 * the Router find it (model/hub.h): in the Hugging Face cache Python Laya fills (HF_HOME,
 * HF_HUB_CACHE), else downloaded (HF_TOKEN; never with HF_HUB_OFFLINE), at LAYA_REVISION, pinned
 * by LAYA_SHA256_DIGESTS. A checkpoint is opened on first use (or at startup with LAYA_PRELOAD)
 * and kept; the library's model is immutable and shared by every worker thread.
 *
 * Names, aliases and routing are the router module's (src/router/router.h), configured the way
 * Laya's serve builds its Router: LAYA_EXTRA_MODELS registrations, LAYA_DEFAULT_MODEL,
 * LAYA_AUTO_TASK.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "core/options.h"
#include "model/hub.h"
#include "model/typed.h"
#include "router/router.h"
#include "serve/log.h"
#include "serve/serve.h"

#define MAX_CHECKPOINTS 32

typedef struct checkpoint {
  char name[64];
  char repo[512];   /* what routing.repo reports */
  char *path;       /* a local directory from LAYA_EXTRA_MODELS, or NULL: then the router entry's
                       Hub source, found in the Hugging Face cache or downloaded (model/hub.h) */
  char *commit;     /* the snapshot commit it was loaded from (Hub sources), for /health */
  char *digests;    /* its LAYA_SHA256_DIGESTS map when that names checkpoints, else NULL */
  void *model;      /* opened engine model */
  char *load_error; /* the last load failure, kept for /health and logs */
  int lang_temps;   /* -1 unknown, 0 none, 1 has per-language temperature tables */
  bool loading;     /* being built (without the lock): others wait on loaded_cv */
  int refs;         /* requests using the loaded model now (serve_models_acquire) */
  unsigned long long used; /* LRU clock of its last use */
  double last_used; /* serve_now() of its last release, for LAYA_IDLE_UNLOAD_SECONDS */
} checkpoint;

struct serve_models {
  const serve_config *cfg;
  const serve_engine *eng;
  checkpoint cp[MAX_CHECKPOINTS];
  int n;
  router_config rc;
  pthread_mutex_t lock;
  pthread_cond_t loaded_cv; /* a checkpoint finished building */
  pthread_mutex_t build_mu; /* one build at a time (Laya's build lock) */
  int max_loaded;   /* LAYA_MAX_LOADED (Laya's Router default 2), raised by preload to hold it */
  unsigned long long clock;
  bool ever_loaded;
};

static const char *const ALIAS_FROM[] = {"en",    "laya",  "default",           "multi",
                                         "ml",    "laya-multilingual", "typed", "typed_decisions",
                                         "laya-typed-decisions", "decisions"};
static const char *const ALIAS_TO[] = {"english",         "english",         "english",
                                       "multilingual",    "multilingual",    "multilingual",
                                       "typed-decisions", "typed-decisions", "typed-decisions",
                                       "typed-decisions"};
#define N_ALIASES (sizeof ALIAS_FROM / sizeof *ALIAS_FROM)

/* Laya's canonical_name: str(name).strip().lower(), then an alias. */
static void canonical_name(const json_value *v, const char *s, char *out, size_t out_size) {
  strbuf t;
  sb_init(&t);
  if (v && v->type != JSON_STRING)
    py_repr_json(&t, v);
  else if (v)
    sb_append(&t, v->s, v->n);
  else
    sb_puts(&t, s);
  const char *p = sb_cstr(&t);
  size_t a = 0, b = t.len;
  while (a < b && isspace((unsigned char)p[a])) a++;
  while (b > a && isspace((unsigned char)p[b - 1])) b--;
  size_t n = b - a < out_size - 1 ? b - a : out_size - 1;
  for (size_t i = 0; i < n; i++) out[i] = (char)tolower((unsigned char)p[a + i]);
  out[n] = 0;
  sb_free(&t);
  for (size_t i = 0; i < N_ALIASES; i++)
    if (!strcmp(out, ALIAS_FROM[i])) {
      snprintf(out, out_size, "%s", ALIAS_TO[i]);
      break;
    }
}

static checkpoint *find(const serve_models *m, const char *name) {
  for (int i = 0; i < m->n; i++)
    if (!strcmp(m->cp[i].name, name)) return (checkpoint *)&m->cp[i];
  return NULL;
}

static checkpoint *add(serve_models *m, const char *name, const char *repo) {
  checkpoint *c = find(m, name);
  if (c) return c;
  if (m->n >= MAX_CHECKPOINTS) return NULL;
  c = &m->cp[m->n++];
  memset(c, 0, sizeof *c);
  snprintf(c->name, sizeof c->name, "%s", name);
  snprintf(c->repo, sizeof c->repo, "%s", repo);
  c->lang_temps = -1;
  return c;
}

/* org/name: one slash, neither part empty, not a path (./x, ../x, /x, ~/x). */
static bool hub_id_shaped(const char *s) {
  const char *slash = strchr(s, '/');
  return slash && slash != s && slash[1] && !strchr(slash + 1, '/') && s[0] != '.' && s[0] != '~';
}

static bool valid_extra_name(const char *s) {
  if (!*s || !strcmp(s, "auto")) return false;
  for (; *s; s++)
    if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '.' || *s == '_' || *s == '-'))
      return false;
  return true;
}

/* LAYA_SHA256_DIGESTS as the Router reads it: a flat {artifact: digest} map is left to the
 * loader (it applies to every checkpoint); {checkpoint: {artifact: digest}} pins each named
 * checkpoint with its own map and the others with none. */
static int load_digests(serve_models *m, char *msg, size_t msg_size) {
  const char *env = m->cfg->env.sha256_digests;
  if (!env || !*env) return 0;
  arena a;
  arena_init(&a, 4096);
  laya_error e;
  json_value *d = json_parse(env, strlen(env), &a, NULL, &e);
  int rc = 0;
  bool all_str = true, all_obj = true;
  for (uint32_t i = 0; d && d->type == JSON_OBJECT && i < d->n; i++) {
    all_str &= d->members[i].value.type == JSON_STRING;
    all_obj &= d->members[i].value.type == JSON_OBJECT;
  }
  if (d && d->type == JSON_OBJECT && d->n && !all_str) {
    if (!all_obj) {
      snprintf(msg, msg_size, "invalid LAYA_SHA256_DIGESTS: either {artifact: digest} for every checkpoint "
               "or {checkpoint: {artifact: digest}}, not a mix");
      rc = -1;
    }
    for (int i = 0; !rc && i < m->n; i++) m->cp[i].digests = strdup("{}");
    for (uint32_t i = 0; !rc && i < d->n; i++) {
      char key[64];
      json_value name = {.type = JSON_STRING, .s = d->members[i].key, .n = d->members[i].key_len};
      laya_error rerr;
      checkpoint *c = router_resolve(&m->rc, &name, key, &rerr) == 0 ? find(m, key) : NULL;
      if (!c) {
        snprintf(msg, msg_size, "invalid LAYA_SHA256_DIGESTS: unknown checkpoint '%s'", d->members[i].key);
        rc = -1;
        break;
      }
      strbuf sb;
      sb_init(&sb);
      json_dump(&sb, &d->members[i].value, NULL);
      free(c->digests);
      c->digests = sb_steal(&sb);
    }
  }
  arena_free(&a);
  return rc;
}

const serve_config *serve_models_config(const serve_models *m) { return m->cfg; }

serve_models *serve_models_new(const serve_config *cfg, const serve_engine *eng, char *msg,
                               size_t msg_size) {
  serve_models *m = calloc(1, sizeof *m);
  if (!m) {
    snprintf(msg, msg_size, "out of memory");
    return NULL;
  }
  m->cfg = cfg;
  m->eng = eng;
  m->max_loaded = cfg->max_loaded > 0 ? cfg->max_loaded : 2;
  pthread_mutex_init(&m->lock, NULL);
  pthread_cond_init(&m->loaded_cv, NULL);
  pthread_mutex_init(&m->build_mu, NULL);
  router_config_init(&m->rc, false);
  m->rc.auto_task_detection = cfg->auto_task;
  add(m, "english", "convaiinnovations/laya");
  add(m, "multilingual", "convaiinnovations/laya/multilingual");
  add(m, "typed-decisions", "convaiinnovations/laya/typed-decisions");

  if (cfg->extra_models) {
    arena a;
    arena_init(&a, 4096);
    laya_error err;
    json_value *v = json_parse(cfg->extra_models, strlen(cfg->extra_models), &a, NULL, &err);
    if (!v) {
      snprintf(msg, msg_size, "invalid LAYA_EXTRA_MODELS: not a JSON object (%s)", err.message);
      goto fail;
    }
    if (v->type != JSON_OBJECT) {
      snprintf(msg, msg_size, "invalid LAYA_EXTRA_MODELS: a JSON object {name: source}, got %s",
               json_py_type(v));
      goto fail;
    }
    for (uint32_t i = 0; i < v->n; i++) {
      const json_member *e = &v->members[i];
      char key[64];
      canonical_name(NULL, e->key, key, sizeof key);
      const char *src = NULL, *sub = NULL;
      if (e->value.type == JSON_STRING) {
        src = e->value.s;
      } else if (e->value.type == JSON_ARRAY && e->value.n == 2 && e->value.items[0].type == JSON_STRING &&
                 e->value.items[1].type == JSON_STRING) {
        src = e->value.items[0].s;
        sub = e->value.items[1].s;
      } else {
        snprintf(msg, msg_size,
                 "invalid LAYA_EXTRA_MODELS: source for '%s' must be a repo id, a local path, or a "
                 "[repo, subfolder] pair; got %s",
                 e->key, json_py_type(&e->value));
        goto fail;
      }
      if (!valid_extra_name(key)) {
        snprintf(msg, msg_size, "invalid LAYA_EXTRA_MODELS: checkpoint name '%s' must use lowercase "
                 "letters, digits, '.', '_' or '-' and not be 'auto'", e->key);
        goto fail;
      }
      checkpoint *c = add(m, key, src);
      if (!c) {
        snprintf(msg, msg_size, "invalid LAYA_EXTRA_MODELS: too many checkpoints");
        goto fail;
      }
      snprintf(c->repo, sizeof c->repo, "%s%s%s", src, sub ? "/" : "", sub ? sub : "");
      free(c->path);
      /* something on this machine, or shaped like a path, is served from there; an org/name id
       * (or a [repo, subfolder] pair) is a Hub source */
      struct stat st;
      c->path = !sub && (stat(src, &st) == 0 || !hub_id_shaped(src)) ? strdup(src) : NULL;
      laya_error rerr;
      if (router_register(&m->rc, key, src, sub, &rerr)) {
        snprintf(msg, msg_size, "invalid LAYA_EXTRA_MODELS: %s", rerr.message);
        goto fail;
      }
    }
    arena_free(&a);
    if (0) {
    fail:
      arena_free(&a);
      serve_models_free(m);
      return NULL;
    }
  }

  if (load_digests(m, msg, msg_size) != 0) {
    serve_models_free(m);
    return NULL;
  }
  if (cfg->default_model) {
    laya_error rerr;
    if (router_set_default(&m->rc, cfg->default_model, &rerr)) {
      strbuf r;
      sb_init(&r);
      py_repr_str(&r, cfg->default_model, strlen(cfg->default_model));
      snprintf(msg, msg_size, "invalid LAYA_DEFAULT_MODEL %s: %s", sb_cstr(&r), rerr.message);
      sb_free(&r);
      serve_models_free(m);
      return NULL;
    }
  }
  return m;
}

void serve_models_free(serve_models *m) {
  if (!m) return;
  for (int i = 0; i < m->n; i++) {
    if (m->cp[i].model && m->eng && m->eng->close) m->eng->close(m->eng->ctx, m->cp[i].model);
    free(m->cp[i].path);
    free(m->cp[i].commit);
    free(m->cp[i].digests);
    free(m->cp[i].load_error);
  }
  router_config_free(&m->rc);
  pthread_mutex_destroy(&m->lock);
  pthread_cond_destroy(&m->loaded_cv);
  pthread_mutex_destroy(&m->build_mu);
  free(m);
}

int serve_models_resolve(const serve_models *m, const json_value *name, char *out, size_t out_size,
                         strbuf *msg) {
  router_config builtin;
  const router_config *rc = m ? &m->rc : NULL;
  if (!rc) router_config_init(&builtin, false);
  char key[64];
  laya_error err;
  int rc_ = router_resolve(rc ? rc : &builtin, name, key, &err);
  if (!rc) router_config_free(&builtin);
  if (rc_) {
    sb_puts(msg, err.message);
    return -1;
  }
  snprintf(out, out_size, "%s", key);
  return 0;
}

static json_value str_json(const char *s) {
  json_value v = {0};
  v.type = JSON_STRING;
  v.s = s;
  v.n = (uint32_t)strlen(s);
  return v;
}

int serve_models_route(const serve_models *m, const json_value *state, const json_value *questions,
                       const char *model, const json_value *task, const char *lang,
                       const char *lang_guess, serve_route *out, strbuf *msg) {
  json_value mv = model ? str_json(model) : (json_value){0};
  json_value lv = lang ? str_json(lang) : (json_value){0};
  json_value gv = lang_guess ? str_json(lang_guess) : (json_value){0};
  strbuf decision;
  sb_init(&decision);
  laya_error err;
  char chosen[64];
  router_facts f;
  sb_init(&f.reason);
  memset(out, 0, sizeof *out);
  if (router_route_facts(&m->rc, state, questions, model ? &mv : NULL, task, lang ? &lv : NULL,
                         lang_guess ? &gv : NULL, false, &decision, chosen, &f, &err)) {
    sb_puts(msg, err.message);
    sb_free(&decision);
    sb_free(&f.reason);
    return -1;
  }
  snprintf(out->model, sizeof out->model, "%s", chosen);
  snprintf(out->language, sizeof out->language, "%s", f.language);
  out->routing_json = sb_steal(&decision);
  out->reason = sb_steal(&f.reason);
  const router_entry *e = router_find(&m->rc, chosen);
  strbuf repo;
  sb_init(&repo);
  if (e) router_repo_str(e, &repo);
  else sb_puts(&repo, "None");
  out->repo = sb_steal(&repo);
  return 0;
}

void serve_route_free(serve_route *r) {
  free(r->routing_json);
  free(r->reason);
  free(r->repo);
  r->routing_json = r->reason = r->repo = NULL;
}

/* Where checkpoint c is on disk: its LAYA_EXTRA_MODELS directory, or its Hub source in the
 * Hugging Face cache (downloaded when missing and allowed). offline: look in the cache only. */
static char *locate(serve_models *m, checkpoint *c, bool offline, char **commit, laya_error *err) {
  *commit = NULL;
  if (c->path) return strdup(c->path);
  const router_entry *e = router_find(&m->rc, c->name);
  if (!e) {
    laya_err(err, LAYA_ERR_NOT_FOUND, NULL, "checkpoint '%s' has no source", c->name);
    return NULL;
  }
  hub_options o;
  hub_options_init(&o);
  o.sha256_json = c->digests;
  if (offline) o.offline = 1;
  char *dir = NULL;
  laya_error he;
  laya_err_clear(&he);
  if (hub_resolve(e->source, e->subfolder, &o, &dir, commit, &he) != 0) {
    laya_err(err, LAYA_ERR_NOT_FOUND, NULL,
             "checkpoint '%s' (%s) was not found: %s; provide it with LAYA_EXTRA_MODELS='{\"%s\": "
             "\"/path/to/checkpoint\"}', or put it in the Hugging Face cache (HF_HOME, HF_HUB_CACHE) "
             "and name it in LAYA_MODELS",
             c->name, c->repo, he.message, c->name);
    return NULL;
  }
  return dir;
}

/* The engine's load warnings for a checkpoint it just opened (NaN/Inf weights, a device fallback:
 * laya_model_info's "warnings"), through the logger: the engine opens quietly. */
static void log_load_warnings(serve_models *m, checkpoint *c, void *model) {
  model_facts f;
  if (!m->eng->facts || !m->eng->facts(m->eng->ctx, model, &f)) return;
  /* one a line, as the info's "warnings" list holds them */
  for (const char *w = f.warnings; *w;) {
    const char *nl = strchr(w, '\n');
    int len = nl ? (int)(nl - w) : (int)strlen(w);
    const char *text = strncmp(w, "laya: ", 6) || len < 6 ? w : w + 6;
    serve_log(SERVE_LOG_WARNING, "checkpoint '%s': %.*s", c->name, len - (int)(text - w), text);
    w += len + (nl ? 1 : 0);
  }
}

/* Find and open checkpoint c, reserving its pass scratch. Called without the registry lock (a
 * download or a large load takes long, and /health, /ready and the loaded checkpoints must keep
 * answering meanwhile), under build_mu: one checkpoint is built at a time, as Laya does, to bound
 * peak memory. *commit: the snapshot it came from. */
static void *build(serve_models *m, checkpoint *c, char **commit, laya_error *err) {
  *commit = NULL;
  char *dir = m->eng->open_by_name ? strdup(c->name) : locate(m, c, false, commit, err);
  void *model = NULL;
  if (dir) {
    model = m->eng->open_pinned && c->digests ? m->eng->open_pinned(m->eng->ctx, dir, c->digests, m->cfg, err)
                                              : m->eng->open(m->eng->ctx, dir, m->cfg, err);
    if (model && m->cfg->reserve_passes && m->eng->reserve && m->eng->reserve(m->eng->ctx, model, m->cfg, err)) {
      m->eng->close(m->eng->ctx, model);
      model = NULL;
    }
    if (model) log_load_warnings(m, c, model);
    if (!model) {
      /* name the checkpoint along with the engine's reason */
      char why[sizeof err->message];
      snprintf(why, sizeof why, "%s", err->message);
      laya_err(err, err->code ? err->code : LAYA_ERR_INTERNAL, err->kind[0] ? err->kind : NULL,
               "checkpoint '%s' at %s could not be loaded: %s", c->name, dir, why);
    }
  }
  free(dir);
  if (!model) {
    free(*commit);
    *commit = NULL;
  }
  return model;
}

/* c->model, building it when needed; called and returns with the lock held (dropped while
 * building; a second caller for the same checkpoint waits for the first one's build). */
static void *load_locked(serve_models *m, checkpoint *c, laya_error *err) {
  while (c->loading) pthread_cond_wait(&m->loaded_cv, &m->lock);
  if (c->model) return c->model;
  c->loading = true;
  pthread_mutex_unlock(&m->lock);
  char *commit = NULL;
  pthread_mutex_lock(&m->build_mu);
  void *model = build(m, c, &commit, err);
  pthread_mutex_unlock(&m->build_mu);
  pthread_mutex_lock(&m->lock);
  c->loading = false;
  c->model = model;
  free(c->commit);
  c->commit = commit;
  free(c->load_error);
  c->load_error = model ? NULL : strdup(err ? err->message : "load failed");
  pthread_cond_broadcast(&m->loaded_cv);
  return model;
}

static void unload_locked(serve_models *m, checkpoint *c) {
  m->eng->close(m->eng->ctx, c->model);
  c->model = NULL;
  c->lang_temps = -1;
  free(c->commit);
  c->commit = NULL;
}

/* Close least-recently-used checkpoints beyond max_loaded; one in use is never closed (it goes
 * when its last request releases it, if still beyond the cap). Under lock. */
static void evict_locked(serve_models *m) {
  for (;;) {
    int live = 0;
    checkpoint *victim = NULL;
    for (int i = 0; i < m->n; i++) {
      checkpoint *c = &m->cp[i];
      if (!c->model) continue;
      live++;
      if (c->refs == 0 && (!victim || c->used < victim->used)) victim = c;
    }
    if (live <= m->max_loaded || !victim) return;
    serve_log(SERVE_LOG_INFO, "unloading checkpoint '%s' (LAYA_MAX_LOADED=%d)", victim->name, m->max_loaded);
    unload_locked(m, victim);
  }
}

void *serve_models_acquire(serve_models *m, const char *name, laya_error *err) {
  pthread_mutex_lock(&m->lock);
  checkpoint *c = find(m, name);
  void *model = NULL;
  if (!c) {
    laya_err(err, LAYA_ERR_NOT_FOUND, NULL, "no checkpoint named '%s'", name);
  } else {
    model = load_locked(m, c, err);
    if (model) {
      c->refs++;
      c->used = ++m->clock;
      m->ever_loaded = true;
      evict_locked(m);
    }
  }
  pthread_mutex_unlock(&m->lock);
  return model;
}

void serve_models_release(serve_models *m, void *model) {
  if (!model) return;
  pthread_mutex_lock(&m->lock);
  for (int i = 0; i < m->n; i++) {
    checkpoint *c = &m->cp[i];
    if (c->model != model) continue;
    if (c->refs > 0) c->refs--;
    c->last_used = serve_now();
    break;
  }
  evict_locked(m);
  pthread_mutex_unlock(&m->lock);
}

void *serve_models_get(serve_models *m, const char *name, laya_error *err) {
  void *model = serve_models_acquire(m, name, err);
  serve_models_release(m, model);
  return model;
}

int serve_models_unload_idle(serve_models *m, double idle_seconds) {
  if (idle_seconds <= 0) return 0;
  double now = serve_now();
  int n = 0;
  pthread_mutex_lock(&m->lock);
  for (int i = 0; i < m->n; i++) {
    checkpoint *c = &m->cp[i];
    if (!c->model || c->refs > 0 || now - c->last_used < idle_seconds) continue;
    serve_log(SERVE_LOG_INFO, "unloading checkpoint '%s' (idle %.1fs, LAYA_IDLE_UNLOAD_SECONDS)", c->name,
              now - c->last_used);
    unload_locked(m, c);
    n++;
  }
  pthread_mutex_unlock(&m->lock);
  return n;
}

/* Laya's Router.preload: the cap grows to hold what is preloaded, so it never evicts it. */
static void raise_cap(serve_models *m, int n) {
  pthread_mutex_lock(&m->lock);
  if (n > m->max_loaded) m->max_loaded = n;
  pthread_mutex_unlock(&m->lock);
}

int serve_models_preload(serve_models *m, laya_error *err) {
  const char *list = m->cfg->models;
  if (!list || !*list) {
    /* every checkpoint this machine has: LAYA_EXTRA_MODELS directories and whatever the Hugging
     * Face cache holds (nothing is downloaded unasked: name a checkpoint in LAYA_MODELS for that) */
    int loaded = 0;
    strbuf why;
    sb_init(&why);
    for (int i = 0; i < m->n; i++) {
      checkpoint *c = &m->cp[i];
      char *commit = NULL;
      laya_error le;
      laya_err_clear(&le);
      char *dir = locate(m, c, true, &commit, &le);
      free(commit);
      if (!dir) {
        sb_printf(&why, "%s%s", why.len ? "; " : "", le.message);
        continue;
      }
      free(dir);
      raise_cap(m, loaded + 1);
      if (!serve_models_get(m, c->name, err)) {
        sb_free(&why);
        return -1;
      }
      loaded++;
    }
    if (!loaded)
      laya_err(err, LAYA_ERR_NOT_FOUND, NULL, "no checkpoint to serve (LAYA_MODELS is unset and none is on this machine): %s",
               sb_cstr(&why));
    sb_free(&why);
    return loaded ? 0 : -1;
  }
  char *copy = strdup(list);
  int rc = 0, count = 0;
  for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char key[64];
    canonical_name(NULL, tok, key, sizeof key);
    if (!key[0]) continue;
    /* Laya's names, aliases and published Hub ids (convaiinnovations/laya-multilingual) */
    json_value name = {.type = JSON_STRING, .s = key, .n = (uint32_t)strlen(key)};
    laya_error rerr;
    char canon[64];
    if (!strcmp(key, "convaiinnovations/laya-multilingual")) snprintf(canon, sizeof canon, "multilingual");
    else if (!strcmp(key, "convaiinnovations/laya-typed-decisions")) snprintf(canon, sizeof canon, "typed-decisions");
    else if (!strcmp(key, "convaiinnovations/laya")) snprintf(canon, sizeof canon, "english");
    else if (router_resolve(&m->rc, &name, canon, &rerr) != 0) snprintf(canon, sizeof canon, "%s", key);
    if (!find(m, canon)) {
      laya_err(err, LAYA_ERR_NOT_FOUND, NULL, "LAYA_MODELS names unknown checkpoint '%s'", tok);
      rc = -1;
      break;
    }
    raise_cap(m, ++count);
    if (!serve_models_get(m, canon, err)) {
      rc = -1;
      break;
    }
  }
  free(copy);
  return rc;
}

void serve_models_loaded(serve_models *m, strbuf *sb) {
  pthread_mutex_lock(&m->lock);
  sb_putc(sb, '[');
  int k = 0;
  for (int i = 0; i < m->n; i++) {
    if (!m->cp[i].model) continue;
    if (k++) sb_puts(sb, ", ");
    json_dump_string(sb, m->cp[i].name, strlen(m->cp[i].name), false);
  }
  sb_putc(sb, ']');
  pthread_mutex_unlock(&m->lock);
}

unsigned serve_models_each_facts(serve_models *m, void (*fn)(void *user, const char *name, const model_facts *f),
                                 void *user) {
  pthread_mutex_lock(&m->lock);
  unsigned k = 0;
  for (int i = 0; i < m->n; i++) {
    if (!m->cp[i].model) continue;
    model_facts f;
    bool have = m->eng->facts && m->eng->facts(m->eng->ctx, m->cp[i].model, &f);
    fn(user, m->cp[i].name, have ? &f : NULL);
    k++;
  }
  pthread_mutex_unlock(&m->lock);
  return k;
}

bool serve_models_ready(serve_models *m) {
  pthread_mutex_lock(&m->lock);
  bool any = false, failed = false;
  for (int i = 0; i < m->n; i++) {
    any = any || m->cp[i].model != NULL;
    failed = failed || m->cp[i].load_error != NULL;
  }
  pthread_mutex_unlock(&m->lock);
  /* loading on first use (LAYA_PRELOAD=0): ready until a load has failed with nothing loaded */
  return any || ((m->ever_loaded || !m->cfg->preload) && !failed);
}

void serve_models_not_ready(serve_models *m, strbuf *sb) {
  pthread_mutex_lock(&m->lock);
  int k = 0;
  for (int i = 0; i < m->n; i++) {
    if (!m->cp[i].load_error) continue;
    sb_puts(sb, k++ ? "," : "{\"status\":\"unavailable\",\"errors\":{");
    json_dump_string(sb, m->cp[i].name, strlen(m->cp[i].name), false);
    sb_putc(sb, ':');
    json_dump_string(sb, m->cp[i].load_error, strlen(m->cp[i].load_error), false);
  }
  sb_puts(sb, k ? "}}" : "{\"status\":\"loading\"}");
  pthread_mutex_unlock(&m->lock);
}

/* A string fact of a model's info ("device", "precision"), malloc'd, or NULL. */
static char *model_info_str(serve_models *m, void *model, const char *key) {
  model_facts f;
  if (!m->eng->facts || !m->eng->facts(m->eng->ctx, model, &f)) return NULL;
  const char *v = !strcmp(key, "device") ? f.device : f.precision;
  return v ? strdup(v) : NULL;
}

static char *model_device(serve_models *m, void *model) { return model_info_str(m, model, "device"); }

void serve_models_health_members(serve_models *m, serve_health *h) {
  memset(h, 0, sizeof *h);
  for (int i = 0; i < SERVE_HEALTH_N; i++) sb_init(&h->value[i]);
  strbuf *sb;
  pthread_mutex_lock(&m->lock);
  strbuf loaded, revisions, devices, fallbacks, precisions;
  sb_init(&precisions);
  char *first_precision = NULL;
  sb_init(&loaded);
  sb_init(&revisions);
  sb_init(&devices);
  sb_init(&fallbacks);
  char *first_device = NULL;
  int k = 0;
  for (int i = 0; i < m->n; i++) {
    checkpoint *c = &m->cp[i];
    if (!c->model) continue;
    const char *sep = k++ ? ", " : "";
    sb_puts(&loaded, sep);
    json_dump_string(&loaded, c->name, strlen(c->name), false);
    sb_puts(&revisions, sep);
    json_dump_string(&revisions, c->name, strlen(c->name), false);
    if (c->commit) { /* a Hub snapshot; a local directory has no commit */
      sb_puts(&revisions, ": ");
      json_dump_string(&revisions, c->commit, strlen(c->commit), false);
    } else {
      sb_puts(&revisions, ": null");
    }
    char *dev = model_device(m, c->model);
    if (dev) {
      if (devices.len) sb_puts(&devices, ", ");
      json_dump_string(&devices, c->name, strlen(c->name), false);
      sb_puts(&devices, ": ");
      json_dump_string(&devices, dev, strlen(dev), false);
      if (!first_device)
        first_device = dev;
      else
        free(dev);
    }
    /* the precision each checkpoint runs at (LAYA_PRECISION, else the backend's default) */
    char *prec = model_info_str(m, c->model, "precision");
    if (prec) {
      if (precisions.len) sb_puts(&precisions, ", ");
      json_dump_string(&precisions, c->name, strlen(c->name), false);
      sb_puts(&precisions, ": ");
      json_dump_string(&precisions, prec, strlen(prec), false);
      if (!first_precision)
        first_precision = prec;
      else
        free(prec);
    }
    sb_puts(&fallbacks, sep);
    json_dump_string(&fallbacks, c->name, strlen(c->name), false);
    long fb = m->eng->cpu_fallbacks ? m->eng->cpu_fallbacks(m->eng->ctx, c->model) : 0;
    sb_printf(&fallbacks, ": {\"count\": %ld, \"last_reason\": %s}", fb,
              fb ? "\"device out of memory\"" : "null");
  }
  const char *pref = m->cfg->device ? m->cfg->device : "cpu";
  h->key[0] = "loaded";
  sb_printf(&h->value[0], "[%s]", sb_cstr(&loaded));
  h->key[1] = "revisions";
  sb_printf(&h->value[1], "{%s}", sb_cstr(&revisions));
  h->key[2] = "device";
  sb = &h->value[2];
  if (first_device) {
    json_dump_string(sb, first_device, strlen(first_device), false);
  } else {
    char lower[64];
    size_t n = 0;
    for (; pref[n] && n < sizeof lower - 1; n++) lower[n] = (char)tolower((unsigned char)pref[n]);
    lower[n] = 0;
    json_dump_string(sb, lower, n, false);
  }
  h->key[3] = "device_is_preference";
  sb_puts(&h->value[3], first_device ? "false" : "true");
  h->key[4] = "checkpoint_devices";
  sb_printf(&h->value[4], "{%s}", sb_cstr(&devices));
  h->key[5] = "cpu_fallbacks";
  sb_printf(&h->value[5], "{%s}", sb_cstr(&fallbacks));
  /* precision: the first loaded checkpoint's; before any loads, what they will open with */
  const char *env_prec = m->cfg->env.precision; /* LAYA_PRECISION, read at start */
  const char *prec = first_precision ? first_precision : env_prec && *env_prec ? env_prec : "default";
  h->key[6] = "precision";
  json_dump_string(&h->value[6], prec, strlen(prec), false);
  h->key[7] = "checkpoint_precisions";
  sb_printf(&h->value[7], "{%s}", sb_cstr(&precisions));
  free(first_precision);
  sb_free(&precisions);
  free(first_device);
  sb_free(&loaded);
  sb_free(&revisions);
  sb_free(&devices);
  sb_free(&fallbacks);
  pthread_mutex_unlock(&m->lock);
}

void serve_health_free(serve_health *h) {
  for (int i = 0; i < SERVE_HEALTH_N; i++) sb_free(&h->value[i]);
}

const char *serve_health_get(const serve_health *h, const char *key) {
  for (int i = 0; i < SERVE_HEALTH_N; i++)
    if (h->key[i] && !strcmp(h->key[i], key)) return sb_cstr((strbuf *)&h->value[i]);
  return NULL;
}

bool serve_models_has_lang_temps(serve_models *m, const char *name) {
  laya_error err;
  void *model = serve_models_get(m, name, &err);
  if (!model) return false;
  pthread_mutex_lock(&m->lock);
  checkpoint *c = find(m, name);
  if (c && c->model && c->lang_temps < 0) { /* c->model: `model` may have been evicted since */
    c->lang_temps = 0;
    model_facts f;
    if (m->eng->facts && m->eng->facts(m->eng->ctx, c->model, &f)) c->lang_temps = f.lang_temperatures > 0;
  }
  bool has = c && c->lang_temps == 1;
  pthread_mutex_unlock(&m->lock);
  return has;
}
