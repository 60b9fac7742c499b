/* models.c: the checkpoints a server answers from, their names, and routing.
 *
 * The registry is Laya's: english, multilingual, typed-decisions (with Laya's aliases), plus
 * LAYA_EXTRA_MODELS ({name: local directory}), which may also re-point a built-in name at a
 * local checkpoint. A checkpoint is opened on first use (or at startup with LAYA_PRELOAD) and
 * kept; the library's model is immutable and shared by every worker thread.
 *
 * Routing follows Laya's precedence for what a request can state explicitly (model > task >
 * lang > lang_guess); a request with none of those goes to the default checkpoint
 * (LAYA_DEFAULT_MODEL, else multilingual, as Laya's Router defaults for states it cannot
 * identify). Script and language detection belongs to the router module (src/router/).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve.h"

#define MAX_CHECKPOINTS 32

typedef struct checkpoint {
  char name[64];
  char repo[512];   /* what routing.repo reports */
  char *path;       /* local directory, NULL when this server has no copy */
  void *model;      /* opened engine model */
  char *load_error; /* the last load failure, kept for /health and logs */
} checkpoint;

struct serve_models {
  const serve_config *cfg;
  const serve_engine *eng;
  checkpoint cp[MAX_CHECKPOINTS];
  int n;
  char default_model[64];
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
    py_repr(&t, v);
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
    }
    arena_free(&a);
    if (0) {
    fail:
      arena_free(&a);
      serve_models_free(m);
      return NULL;
    }
  }

  snprintf(m->default_model, sizeof m->default_model, "multilingual");
  if (cfg->default_model) {
    char key[64];
    canonical_name(NULL, cfg->default_model, key, sizeof key);
    if (!find(m, key)) {
      strbuf names;
      sb_init(&names);
      /* the built-in table's message, as Laya prints it */
      sb_puts(&names, "unknown model ");
      py_repr_str(&names, cfg->default_model, strlen(cfg->default_model));
      sb_puts(&names, "; choose one of ['english', 'multilingual', 'typed-decisions'] (or an alias: "
                      "['decisions', 'default', 'en', 'laya', 'laya-multilingual', "
                      "'laya-typed-decisions', 'ml', 'multi', 'typed', 'typed_decisions'])");
      snprintf(msg, msg_size, "invalid LAYA_DEFAULT_MODEL '%s': %s", cfg->default_model, sb_cstr(&names));
      sb_free(&names);
      serve_models_free(m);
      return NULL;
    }
    snprintf(m->default_model, sizeof m->default_model, "%s", key);
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
  pthread_mutex_destroy(&m->lock);
  free(m);
}

/* Sorted registry names, as Python's sorted(self.models) prints them. */
static void sorted_names(const serve_models *m, strbuf *sb) {
  const char *names[MAX_CHECKPOINTS];
  int n = m->n;
  for (int i = 0; i < n; i++) names[i] = m->cp[i].name;
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
      const char *t = names[j];
      names[j] = names[j - 1];
      names[j - 1] = t;
    }
  sb_putc(sb, '[');
  for (int i = 0; i < n; i++) {
    if (i) sb_puts(sb, ", ");
    py_repr_str(sb, names[i], strlen(names[i]));
  }
  sb_putc(sb, ']');
}

int serve_models_resolve(const serve_models *m, const json_value *name, char *out, size_t out_size,
                         strbuf *msg) {
  char key[64];
  canonical_name(name, NULL, key, sizeof key);
  bool known = m ? find(m, key) != NULL
                 : (!strcmp(key, "english") || !strcmp(key, "multilingual") ||
                    !strcmp(key, "typed-decisions"));
  if (known) {
    snprintf(out, out_size, "%s", key);
    return 0;
  }
  sb_puts(msg, "unknown model ");
  py_repr(msg, name);
  sb_puts(msg, "; choose one of ");
  if (m)
    sorted_names(m, msg);
  else
    sb_puts(msg, "['english', 'multilingual', 'typed-decisions']");
  sb_puts(msg, " (or an alias: ['decisions', 'default', 'en', 'laya', 'laya-multilingual', "
               "'laya-typed-decisions', 'ml', 'multi', 'typed', 'typed_decisions'])");
  return -1;
}

/* Laya's _english_from_code: 1 English, 0 not English, -1 no usable hint. */
static int english_from_code(const char *value) {
  if (!value) return -1;
  char code[64];
  const char *p = value;
  while (*p && isspace((unsigned char)*p)) p++;
  size_t n = 0;
  while (p[n] && n < sizeof code - 1) {
    code[n] = (char)tolower((unsigned char)p[n]);
    n++;
  }
  while (n > 0 && isspace((unsigned char)code[n - 1])) n--;
  code[n] = 0;
  if (!n) return -1;
  char *dot = strchr(code, '.');
  if (dot) *dot = 0;
  for (char *q = code; *q; q++)
    if (*q == '_') *q = '-';
  char *dash = strchr(code, '-');
  if (dash) *dash = 0;
  if (!code[0]) return -1;
  static const char *const agnostic[] = {"c", "posix", "und", "zxx", "mul"};
  for (size_t i = 0; i < 5; i++)
    if (!strcmp(code, agnostic[i])) return -1;
  return !strcmp(code, "en") || !strcmp(code, "eng") || !strcmp(code, "english");
}

static void routing_json(const serve_models *m, const char *key, const char *reason, strbuf *sb) {
  const checkpoint *c = find(m, key);
  sb_puts(sb, "{\"model\": ");
  json_dump_string(sb, key, strlen(key), false);
  sb_puts(sb, ", \"repo\": ");
  if (c)
    json_dump_string(sb, c->repo, strlen(c->repo), false);
  else
    sb_puts(sb, "null");
  sb_puts(sb, ", \"reason\": ");
  json_dump_string(sb, reason, strlen(reason), false);
  sb_puts(sb, ", \"detection\": null, \"workflow\": null}");
}

int serve_models_route(const serve_models *m, const json_value *state, const json_value *questions,
                       const char *model, const json_value *task, const char *lang,
                       const char *lang_guess, serve_route *out, strbuf *msg) {
  (void)state;
  (void)questions;
  strbuf reason, rj;
  sb_init(&reason);
  sb_init(&rj);
  const char *key = NULL;
  char tkey[64];
  if (model && *model) {
    key = model;
    sb_puts(&reason, "explicit model=");
    py_repr_str(&reason, model, strlen(model));
  } else if (task) {
    char norm[64];
    canonical_name(task, NULL, norm, sizeof norm);
    for (char *p = norm; *p; p++)
      if (*p == '-') *p = '_';
    json_value td = {0};
    td.type = JSON_STRING;
    td.s = "typed-decisions";
    td.n = 15;
    if (serve_models_resolve(m, !strcmp(norm, "typed_decisions") ? &td : task, tkey, sizeof tkey, msg)) {
      sb_free(&reason);
      sb_free(&rj);
      return -1;
    }
    key = tkey;
    sb_puts(&reason, "explicit task=");
    py_repr(&reason, task);
  } else if (lang && english_from_code(lang) >= 0) {
    key = english_from_code(lang) ? "english" : "multilingual";
    sb_puts(&reason, "explicit lang=");
    py_repr_str(&reason, lang, strlen(lang));
  } else if (lang_guess && english_from_code(lang_guess) >= 0) {
    bool en = english_from_code(lang_guess) == 1;
    key = en ? "english" : "multilingual";
    sb_printf(&reason, "lang_guess: the caller identified this as %s text", en ? "English" : "non-English");
  } else {
    key = m->default_model;
    sb_printf(&reason, "no language detection in this build; using default (%s)", key);
  }
  snprintf(out->model, sizeof out->model, "%s", key);
  routing_json(m, key, sb_cstr(&reason), &rj);
  out->routing_json = sb_steal(&rj);
  sb_free(&reason);
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
static char *model_device(serve_models *m, void *model) {
  if (!m->eng->info) return NULL;
  const char *info = m->eng->info(m->eng->ctx, model);
  if (!info) return NULL;
  arena a;
  arena_init(&a, 4096);
  laya_error e;
  json_value *v = json_parse(info, strlen(info), &a, NULL, &e);
  const json_value *d = v ? json_get(v, "device") : NULL;
  char *out = (d && d->type == JSON_STRING) ? strdup(d->s) : NULL;
  arena_free(&a);
  return out;
}

void serve_models_health(serve_models *m, strbuf *sb) {
  pthread_mutex_lock(&m->lock);
  strbuf loaded, revisions, devices, fallbacks;
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
    sb_puts(&fallbacks, sep);
    json_dump_string(&fallbacks, c->name, strlen(c->name), false);
    sb_puts(&fallbacks, ": {\"count\": 0, \"last_reason\": null}");
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
  free(first_device);
  sb_free(&loaded);
  sb_free(&revisions);
  sb_free(&devices);
  sb_free(&fallbacks);
  pthread_mutex_unlock(&m->lock);
}
