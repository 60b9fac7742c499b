/* config.c: laya-serve's environment, read the way Laya's serve.py reads it. Numeric knobs fall
 * back to their defaults on a typo (a deployment file should not stop the server); the values
 * whose wrong reading would serve the wrong thing (port, default model) refuse to start. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "serve/log.h"
#include "serve/serve.h"

double serve_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Python str.strip() of ASCII whitespace, into a fresh string. */
static char *stripped(const char *s) {
  while (*s && isspace((unsigned char)*s)) s++;
  size_t n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1])) n--;
  char *o = malloc(n + 1);
  if (!o) return NULL;
  memcpy(o, s, n);
  o[n] = 0;
  return o;
}

static bool is_blank(const char *s) {
  for (; s && *s; s++)
    if (!isspace((unsigned char)*s)) return false;
  return true;
}

bool serve_env_bool(const char *name, bool def) {
  const char *v = getenv(name);
  if (!v || is_blank(v)) return def;
  char *t = stripped(v);
  if (!t) return def;
  bool on = !strcasecmp(t, "1") || !strcasecmp(t, "true") || !strcasecmp(t, "yes") ||
            !strcasecmp(t, "on");
  free(t);
  return on;
}

/* Python int(str) for the forms deployment files hold: optional sign, digits, surrounding
 * whitespace, underscores between digits. Returns false when Python would raise. */
static bool py_int(const char *raw, long *out) {
  char *t = stripped(raw);
  if (!t) return false;
  char buf[64];
  size_t j = 0;
  const char *p = t;
  if (*p == '+' || *p == '-') buf[j++] = *p++;
  if (!isdigit((unsigned char)*p)) {
    free(t);
    return false;
  }
  for (; *p; p++) {
    if (isdigit((unsigned char)*p)) {
      if (j >= sizeof buf - 1) {
        free(t);
        return false;
      }
      buf[j++] = *p;
    } else if (*p == '_' && isdigit((unsigned char)p[1]) && p > t && isdigit((unsigned char)p[-1])) {
      continue;
    } else {
      free(t);
      return false;
    }
  }
  buf[j] = 0;
  free(t);
  errno = 0;
  long v = strtol(buf, NULL, 10);
  if (errno) v = buf[0] == '-' ? -2147483647L : 2147483647L; /* out of range reads as huge */
  *out = v;
  return true;
}

static int env_int_positive(const char *name, int def) {
  const char *raw = getenv(name);
  long v;
  if (!raw || !*raw) return def;
  if (!py_int(raw, &v) || v <= 0) return def;
  return v > 1000000000L ? 1000000000 : (int)v;
}

static long env_long_positive_warn(const char *name, long def) {
  const char *raw = getenv(name);
  long v;
  if (!raw || !*raw) return def;
  if (!py_int(raw, &v)) {
    serve_log(SERVE_LOG_WARNING, "invalid %s '%s'; falling back to %ld", name, raw, def);
    return def;
  }
  if (v <= 0) {
    serve_log(SERVE_LOG_WARNING, "%s must be positive (got %ld); falling back to %ld", name, v, def);
    return def;
  }
  return v;
}

static const char *const LOG_LEVELS[] = {"critical", "debug", "error", "info", "trace", "warning"};

int serve_config_from_env(serve_config *cfg, char *msg, size_t msg_size) {
  memset(cfg, 0, sizeof *cfg);
  const char *v;

  v = getenv("LAYA_LOG_LEVEL");
  char *level = stripped(v ? v : "info");
  if (level) {
    for (char *p = level; *p; p++) *p = (char)tolower((unsigned char)*p);
    if (!*level) {
      free(level);
      level = strdup("info");
    }
  }
  bool known = false;
  for (size_t i = 0; level && i < sizeof LOG_LEVELS / sizeof *LOG_LEVELS; i++)
    if (!strcmp(level, LOG_LEVELS[i])) known = true;
  if (!known) {
    char *shown = stripped(v ? v : "");
    snprintf(msg, msg_size,
             "invalid LAYA_LOG_LEVEL '%s': must be one of critical, debug, error, info, trace, warning",
             shown ? shown : "");
    free(shown);
    free(level);
    return -1;
  }
  cfg->log_level = level;

  /* LAYA_LOG_FORMAT: ours (Laya logs through uvicorn's text format only) */
  v = getenv("LAYA_LOG_FORMAT");
  char *format = stripped(v && !is_blank(v) ? v : "text");
  if (format)
    for (char *p = format; *p; p++) *p = (char)tolower((unsigned char)*p);
  if (!format || (strcmp(format, "text") && strcmp(format, "json"))) {
    snprintf(msg, msg_size, "invalid LAYA_LOG_FORMAT '%s': must be one of json, text", format ? format : "");
    free(format);
    free(cfg->log_level);
    cfg->log_level = NULL;
    return -1;
  }
  cfg->log_format = format;
  /* from here on every message goes through the logger, at this level and in this format */
  serve_log_setup(cfg->log_level, cfg->log_format);

  v = getenv("LAYA_HOST");
  cfg->host = strdup(v ? v : "0.0.0.0");

  /* LAYA_ROOT_PATH as Laya hands it to FastAPI's root_path: verbatim (no trimming, no slash
   * added or removed), so "/laya/" or "laya" serve nothing under /laya, as there; any non-empty
   * value counts. http.c routes under it as Starlette does and names it, without trailing slashes,
   * in /openapi.json's servers. */
  v = getenv("LAYA_ROOT_PATH");
  if (v && *v) cfg->root_path = strdup(v);

  cfg->port = SERVE_DEFAULT_PORT;
  v = getenv("LAYA_PORT");
  if (v && !is_blank(v)) {
    long p;
    if (!py_int(v, &p) || p < 0 || p > 65535 || (p == 0 && !serve_env_bool("LAYA_SERVE_ALLOW_PORT_0", false))) {
      snprintf(msg, msg_size, "invalid LAYA_PORT '%s': must be an integer 1-65535", v);
      return -1;
    }
    cfg->port = (int)p;
  }

  v = getenv("LAYA_API_KEY");
  cfg->api_key = (v && *v) ? strdup(v) : NULL;

  cfg->max_concurrent = env_int_positive("LAYA_MAX_CONCURRENT", SERVE_DEFAULT_MAX_CONCURRENT);
  cfg->max_token_budget = env_long_positive_warn("LAYA_MAX_TOKEN_BUDGET", SERVE_DEFAULT_MAX_TOKEN_BUDGET);
  cfg->max_batch_tokens = env_long_positive_warn("LAYA_MAX_BATCH_TOKENS", SERVE_DEFAULT_MAX_BATCH_TOKENS);

  cfg->body_read_timeout = SERVE_DEFAULT_BODY_READ_TIMEOUT;
  v = getenv("LAYA_BODY_READ_TIMEOUT");
  if (v && !is_blank(v)) {
    char *end;
    char *t = stripped(v);
    double d = t ? strtod(t, &end) : NAN;
    if (t && *end == 0 && d > 0.0 && isfinite(d)) cfg->body_read_timeout = d;
    free(t);
  }

  cfg->jev_strict = serve_env_bool("LAYA_JEV_STRICT", false);
  cfg->preload = serve_env_bool("LAYA_PRELOAD", true);
  cfg->auto_task = serve_env_bool("LAYA_AUTO_TASK", false);
  v = getenv("LAYA_MODELS");
  cfg->models = stripped(v ? v : "");
  v = getenv("LAYA_DEFAULT_MODEL");
  cfg->default_model = (v && !is_blank(v)) ? stripped(v) : NULL;
  v = getenv("LAYA_EXTRA_MODELS");
  cfg->extra_models = (v && !is_blank(v)) ? stripped(v) : NULL;
  v = getenv("LAYA_DEVICE");
  cfg->device = (v && !is_blank(v)) ? stripped(v) : NULL;
  v = getenv("LAYA_THREADS");
  if (v && *v) {
    long t;
    if (py_int(v, &t) && t > 0 && t < 4096) cfg->threads = (int)t;
  }
  v = getenv("LAYA_MAX_LOADED");
  if (v && *v) {
    long t;
    if (py_int(v, &t) && t > 0 && t < 4096) cfg->max_loaded = (int)t;
  }

  v = getenv("LAYA_IDLE_UNLOAD_SECONDS");
  if (v && !is_blank(v)) {
    char *end;
    char *t = stripped(v);
    double d = t ? strtod(t, &end) : NAN;
    if (t && *end == 0 && isfinite(d))
      cfg->idle_unload_seconds = d > 0 ? d : 0;
    else
      serve_log(SERVE_LOG_WARNING, "invalid LAYA_IDLE_UNLOAD_SECONDS '%s'; idle unload disabled", v);
    free(t);
  }


  cfg->batching = serve_env_bool("LAYA_SERVE_BATCHING", true);
  cfg->batch_wait_us = 1000;
  v = getenv("LAYA_SERVE_BATCH_WAIT_US");
  if (v && *v) {
    long t;
    if (py_int(v, &t) && t >= 0 && t <= 1000000) cfg->batch_wait_us = (int)t;
  }
  cfg->max_batch_requests = env_int_positive("LAYA_SERVE_MAX_BATCH_REQUESTS", 64);
  /* Smaller passes bound how long the first request of a pass waits for the last one's rows, and
   * the memory reserved for passes at load (docs/serve.md, Memory). A CPU is busy with one
   * request's rows already and gains no throughput from larger passes (BENCHMARKS.md, Server),
   * so there the default is SERVE_CPU_PASS_TOKENS; where the models run on a GPU (LAYA_DEVICE
   * cuda, cuda:N or auto with that GPU present, as laya_open decides) it is LAYA_MAX_BATCH_TOKENS. */
  bool on_cpu = laya_device_uses_cuda(cfg->device) != 1;
  long pass_default = on_cpu && SERVE_CPU_PASS_TOKENS < cfg->max_batch_tokens ? SERVE_CPU_PASS_TOKENS : cfg->max_batch_tokens;
  cfg->pass_tokens = env_long_positive_warn("LAYA_SERVE_PASS_TOKENS", pass_default);
  if (cfg->pass_tokens > cfg->max_batch_tokens) cfg->pass_tokens = cfg->max_batch_tokens;
  /* the HTTP threads validate, tokenize and decode requests while the inference thread runs
   * passes: one per online CPU (2 to 16) by default */
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int def_threads = cpus < 2 ? 2 : cpus > 16 ? 16 : (int)cpus;
  cfg->http_threads = env_int_positive("LAYA_SERVE_HTTP_THREADS", def_threads);
  if (cfg->http_threads > 64) cfg->http_threads = 64;
  cfg->pipeline = serve_env_bool("LAYA_SERVE_PIPELINE", true);
  cfg->drain_seconds = env_int_positive("LAYA_SERVE_DRAIN_SECONDS", 30);
  cfg->header_timeout = 10.0;
  v = getenv("LAYA_SERVE_HEADER_TIMEOUT");
  if (v && !is_blank(v)) {
    char *end;
    char *t = stripped(v);
    double d = t ? strtod(t, &end) : NAN;
    if (t && *end == 0 && d > 0.0 && isfinite(d)) cfg->header_timeout = d;
    free(t);
  }
  cfg->max_connections = env_int_positive("LAYA_SERVE_MAX_CONNECTIONS", 4096);
  cfg->max_connections_per_ip = 0;
  v = getenv("LAYA_SERVE_MAX_CONNECTIONS_PER_IP");
  if (v && *v) {
    long t;
    if (py_int(v, &t) && t >= 0 && t <= 1000000) cfg->max_connections_per_ip = (int)t;
  }
  long def_buf = 4L * cfg->max_concurrent * (long)SERVE_MAX_BODY_BYTES;
  if (def_buf < 256L * 1024 * 1024) def_buf = 256L * 1024 * 1024;
  long mb = env_long_positive_warn("LAYA_SERVE_MAX_BUFFERED_MB", def_buf / (1024 * 1024));
  cfg->max_buffered_bytes = mb > (1L << 30) ? (1L << 50) : mb * 1024 * 1024;
  /* the library's variables (core/options.c's table), read once here: a bad value stops the
   * server at start, named (laya_open would refuse it at every load) */
  laya_error lerr;
  if (laya_env_options_read(&cfg->env, LAYA_ENV_SKIP_DEVICE | LAYA_ENV_READ_SERVER, &lerr)) {
    snprintf(msg, msg_size, "%s", lerr.message);
    return -1;
  }
  return 0;
}

void serve_config_free(serve_config *cfg) {
  free(cfg->host);
  free(cfg->api_key);
  free(cfg->models);
  free(cfg->default_model);
  free(cfg->extra_models);
  free(cfg->device);
  free(cfg->log_level);
  free(cfg->log_format);
  free(cfg->root_path);
  laya_env_options_free(&cfg->env);
  memset(cfg, 0, sizeof *cfg);
}
