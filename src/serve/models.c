/* models.c: the checkpoints a server answers from, their names, and routing.
 *
 * The registry is Laya's: english, multilingual, typed-decisions (with Laya's aliases), plus
 * LAYA_EXTRA_MODELS ({name: local directory}), which may also re-point a built-in name at a
 * local checkpoint. A checkpoint is opened on first use (or at startup with LAYA_PRELOAD) and
 * kept; the library's model is immutable and shared by every worker thread.
 *
 * Names, aliases and routing are the router module's (src/router/router.h), configured the way
 * Laya's serve builds its Router: LAYA_EXTRA_MODELS registrations, LAYA_DEFAULT_MODEL,
 * LAYA_AUTO_TASK.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "router/router.h"
#include "serve/serve.h"

#define MAX_CHECKPOINTS 32

typedef struct checkpoint {
  char name[64];
  char repo[512];   /* what routing.repo reports */
  char *path;       /* local directory, NULL when this server has no copy */
  void *model;      /* opened engine model */
  char *load_error; /* the last load failure, kept for /health and logs */
  int lang_temps;   /* -1 unknown, 0 none, 1 has per-language temperature tables */
} checkpoint;

struct serve_models {
  const serve_config *cfg;
  const serve_engine *eng;
  checkpoint cp[MAX_CHECKPOINTS];
  int n;
  router_config rc;
  pthread_mutex_t lock;
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

static bool valid_extra_name(const char *s) {
  if (!*s || !strcmp(s, "auto")) return false;
  for (; *s; s++)
    if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '.' || *s == '_' || *s == '-'))
      return false;
  return true;
}

serve_models *serve_models_new(const serve_config *cfg, const serve_engine *eng, char *msg,
                               size_t msg_size) {
  serve_models *m = calloc(1, sizeof *m);
  if (!m) {
    snprintf(msg, msg_size, "out of memory");
    return NULL;
  }
  m->cfg = cfg;
  m->eng = eng;
  pthread_mutex_init(&m->lock, NULL);
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
      const char *src = NULL;
      if (e->value.type == JSON_STRING) {
        src = e->value.s;
      } else if (e->value.type == JSON_ARRAY) {
        snprintf(msg, msg_size,
                 "invalid LAYA_EXTRA_MODELS: source for '%s' is a [repo, subfolder] pair; this server "
                 "serves local checkpoint directories (download it first, or give its path)",
                 e->key);
        goto fail;
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
      snprintf(c->repo, sizeof c->repo, "%s", src);
      free(c->path);
      c->path = strdup(src);
      laya_error rerr;
      if (router_register(&m->rc, key, src, NULL, &rerr)) {
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
    free(m->cp[i].load_error);
  }
  router_config_free(&m->rc);
  pthread_mutex_destroy(&m->lock);
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
  if (router_route(&m->rc, state, questions, model ? &mv : NULL, task, lang ? &lv : NULL,
                   lang_guess ? &gv : NULL, &decision, chosen, &err)) {
    sb_puts(msg, err.message);
    sb_free(&decision);
    return -1;
  }
  snprintf(out->model, sizeof out->model, "%s", chosen);
  out->routing_json = sb_steal(&decision);
  return 0;
}

void *serve_models_get(serve_models *m, const char *name, laya_error *err) {
  pthread_mutex_lock(&m->lock);
  checkpoint *c = find(m, name);
  void *model = NULL;
  if (!c) {
    laya_err(err, LAYA_ERR_NOT_FOUND, NULL, "no checkpoint named '%s'", name);
  } else if (c->model) {
    model = c->model;
  } else if (!c->path) {
    laya_err(err, LAYA_ERR_NOT_FOUND, NULL,
             "checkpoint '%s' has no local copy on this server (set LAYA_EXTRA_MODELS='{\"%s\": "
             "\"/path/to/checkpoint\"}')",
             name, name);
  } else {
    model = m->eng->open(m->eng->ctx, c->path, m->cfg, err);
    if (model && m->cfg->reserve_passes && m->eng->reserve && m->eng->reserve(m->eng->ctx, model, m->cfg, err)) {
      m->eng->close(m->eng->ctx, model);
      model = NULL;
    }
    c->model = model;
    free(c->load_error);
    c->load_error = model ? NULL : strdup(err ? err->message : "load failed");
  }
  pthread_mutex_unlock(&m->lock);
  return model;
}

int serve_models_preload(serve_models *m, laya_error *err) {
  const char *list = m->cfg->models;
  if (!list || !*list) {
    for (int i = 0; i < m->n; i++)
      if (m->cp[i].path && !serve_models_get(m, m->cp[i].name, err)) return -1;
    return 0;
  }
  char *copy = strdup(list);
  int rc = 0;
  for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char key[64];
    canonical_name(NULL, tok, key, sizeof key);
    if (!key[0]) continue;
    if (!find(m, key)) {
      laya_err(err, LAYA_ERR_NOT_FOUND, NULL, "LAYA_MODELS names unknown checkpoint '%s'", tok);
      rc = -1;
      break;
    }
    if (!serve_models_get(m, key, err)) {
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

bool serve_models_ready(serve_models *m) {
  pthread_mutex_lock(&m->lock);
  bool any = false;
  for (int i = 0; i < m->n; i++) any = any || m->cp[i].model != NULL;
  pthread_mutex_unlock(&m->lock);
  return any || !m->cfg->preload;
}

/* The device a loaded model reports in its info JSON, or NULL. */
/* A string field of a model's info ("device", "precision"), malloc'd, or NULL. */
static char *model_info_str(serve_models *m, void *model, const char *key) {
  const char *info = m->eng->info ? m->eng->info(m->eng->ctx, model) : NULL;
  if (!info) return NULL;
  arena a;
  arena_init(&a, 4096);
  laya_error e;
  json_value *v = json_parse(info, strlen(info), &a, NULL, &e);
  const json_value *d = v ? json_get(v, key) : NULL;
  char *out = (d && d->type == JSON_STRING) ? strdup(d->s) : NULL;
  arena_free(&a);
  return out;
}

static char *model_device(serve_models *m, void *model) { return model_info_str(m, model, "device"); }

void serve_models_health(serve_models *m, strbuf *sb) {
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
    sb_puts(&revisions, ": null"); /* local checkpoints have no commit */
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
  sb_printf(sb, "\"loaded\": [%s], \"revisions\": {%s}, \"device\": ", sb_cstr(&loaded), sb_cstr(&revisions));
  if (first_device) {
    json_dump_string(sb, first_device, strlen(first_device), false);
  } else {
    char lower[64];
    size_t n = 0;
    for (; pref[n] && n < sizeof lower - 1; n++) lower[n] = (char)tolower((unsigned char)pref[n]);
    lower[n] = 0;
    json_dump_string(sb, lower, n, false);
  }
  sb_printf(sb, ", \"device_is_preference\": %s, \"checkpoint_devices\": {%s}, \"cpu_fallbacks\": {%s}",
            first_device ? "false" : "true", sb_cstr(&devices), sb_cstr(&fallbacks));
  /* precision: the first loaded checkpoint's; before any loads, what they will open with */
  const char *env_prec = getenv("LAYA_PRECISION");
  const char *prec = first_precision ? first_precision : env_prec && *env_prec ? env_prec : "default";
  sb_puts(sb, ", \"precision\": ");
  json_dump_string(sb, prec, strlen(prec), false);
  sb_printf(sb, ", \"checkpoint_precisions\": {%s}", sb_cstr(&precisions));
  free(first_precision);
  sb_free(&precisions);
  free(first_device);
  sb_free(&loaded);
  sb_free(&revisions);
  sb_free(&devices);
  sb_free(&fallbacks);
  pthread_mutex_unlock(&m->lock);
}

bool serve_models_has_lang_temps(serve_models *m, const char *name) {
  laya_error err;
  void *model = serve_models_get(m, name, &err);
  if (!model) return false;
  pthread_mutex_lock(&m->lock);
  checkpoint *c = find(m, name);
  if (c && c->lang_temps < 0) {
    c->lang_temps = 0;
    const char *info = m->eng->info ? m->eng->info(m->eng->ctx, model) : NULL;
    if (info) {
      arena a;
      arena_init(&a, 4096);
      json_value *v = json_parse(info, strlen(info), &a, NULL, &err);
      const json_value *t = v ? json_get(v, "lang_temperatures") : NULL;
      c->lang_temps = t && t->type == JSON_OBJECT && t->n > 0;
      arena_free(&a);
    }
  }
  bool has = c && c->lang_temps == 1;
  pthread_mutex_unlock(&m->lock);
  return has;
}
