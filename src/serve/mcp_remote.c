/* mcp_remote.c: laya-mcp's remote mode (mcp_remote.h), over libcurl.
 *
 * The tools of mcp.c run as in local mode: they validate their arguments and route locally (the
 * engine table below opens checkpoints by name, loading nothing), then post the request they
 * built as a value (mcp_remote_post: written once as the body; the server's answer parsed once,
 * as outside input). A failure is a laya_error whose kind is "remote:<code>" with the code and
 * text Laya's RemoteRouter gives (unauthorized, invalid_request, busy, upstream_error, timeout,
 * unreachable, unsupported_remote, internal_error); mcp.c reports it as that tool error. */
#include "serve/mcp_remote.h"
#include "core/options.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "model/typed.h"
#include "serve/log.h"

#ifdef LAYA_MCP_HAVE_CURL
#include <curl/curl.h>
#endif

#define DEFAULT_TIMEOUT_S 300.0
#define MAX_ANSWER_BYTES (256u << 20) /* a laya-serve answer is at most a few MiB */

struct mcp_remote {
  char *url;       /* the origin, normalised; NULL when unset */
  char *api_key;   /* bearer, or NULL */
  double timeout;  /* seconds */
  char error[512]; /* set: construction failed, every call answers this */
};

/* ---- construction (Laya's _remote_base_url, RemoteRouter.__init__, _timeout_from_env) ---- */

static char *strip_dup(const char *s) {
  while (*s && isspace((unsigned char)*s)) s++;
  size_t n = strlen(s);
  while (n && isspace((unsigned char)s[n - 1])) n--;
  char *o = malloc(n + 1);
  if (o) {
    memcpy(o, s, n);
    o[n] = 0;
  }
  return o;
}

/* urllib.parse.urlsplit's checks RemoteRouter makes: http(s), a host, no query or fragment. */
static bool url_ok(const char *u) {
  size_t skip;
  if (!strncasecmp(u, "http://", 7))
    skip = 7;
  else if (!strncasecmp(u, "https://", 8))
    skip = 8;
  else
    return false;
  if (strchr(u, '?') || strchr(u, '#')) return false;
  const char *host = u + skip, *end = host + strcspn(host, "/");
  const char *at = memchr(host, '@', (size_t)(end - host));
  if (at) host = at + 1;
  if (*host == '[') return strchr(host, ']') && strchr(host, ']') > host + 1;
  size_t hn = strcspn(host, ":/");
  return hn > 0;
}

mcp_remote *mcp_remote_from_env(const serve_config *cfg) {
  const char *raw = cfg ? cfg->env.base_url : NULL; /* read at start (serve_config_from_env) */
  char *u = raw ? strip_dup(raw) : NULL;
  if (!u || !*u) {
    free(u);
    return NULL;
  }
  mcp_remote *r = calloc(1, sizeof *r);
  if (!r) {
    free(u);
    return NULL;
  }
  if (!strstr(u, "://")) {
    char *w = malloc(strlen(u) + 8);
    if (w) sprintf(w, "http://%s", u);
    free(u);
    u = w;
  }
  size_t n = u ? strlen(u) : 0;
  while (n && u[n - 1] == '/') u[--n] = 0;
  r->url = u;
  if (!u || !url_ok(u))
    snprintf(r->error, sizeof r->error,
             "remote router construction failed: base_url must be an HTTP(S) server URL without a query or fragment");
  r->api_key = cfg && cfg->api_key && *cfg->api_key ? strdup(cfg->api_key) : NULL;
  r->timeout = DEFAULT_TIMEOUT_S;
  if (cfg && cfg->env.remote_timeout > 0) r->timeout = cfg->env.remote_timeout; /* else (unset, 0, refused) 30 */
#ifndef LAYA_MCP_HAVE_CURL
  if (!r->error[0])
    snprintf(r->error, sizeof r->error,
             "remote router construction failed: this build of laya-mcp has no HTTP client (libcurl)");
#else
  curl_global_init(CURL_GLOBAL_DEFAULT);
#endif
  return r;
}

void mcp_remote_free(mcp_remote *r) {
  if (!r) return;
  free(r->url);
  free(r->api_key);
  free(r);
}

const char *mcp_remote_url(const mcp_remote *r) { return r->url ? r->url : ""; }

static int remote_err(laya_error *err, const char *code, const char *fmt, const char *a, const char *b) {
  char kind[32];
  snprintf(kind, sizeof kind, "remote:%s", code);
  return laya_err(err, LAYA_ERR_INTERNAL, kind, fmt, a ? a : "", b ? b : "");
}

/* ---- one HTTP exchange (RemoteRouter._request) ---- */

#ifdef LAYA_MCP_HAVE_CURL
typedef struct reply {
  strbuf body;
  bool too_big;
  char reason[128]; /* the status line's reason phrase */
} reply;

static size_t on_body(char *p, size_t size, size_t n, void *ud) {
  reply *r = ud;
  size_t len = size * n;
  if (r->body.len + len > MAX_ANSWER_BYTES) {
    r->too_big = true;
    return 0;
  }
  sb_append(&r->body, p, len);
  return r->body.oom ? 0 : len;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud) {
  reply *r = ud;
  size_t len = size * n;
  if (len > 9 && !strncmp(p, "HTTP/", 5)) {
    const char *sp = memchr(p, ' ', len);
    const char *sp2 = sp ? memchr(sp + 1, ' ', len - (size_t)(sp + 1 - p)) : NULL;
    size_t k = 0;
    if (sp2) {
      for (const char *q = sp2 + 1; q < p + len && *q != '\r' && *q != '\n' && k + 1 < sizeof r->reason; q++)
        r->reason[k++] = *q;
    }
    r->reason[k] = 0;
  }
  return len;
}
#endif

/* The server's FastAPI-shaped {"detail": ...}: the string, else its JSON, else the reason. */
static void error_detail(const strbuf *body, const char *reason, strbuf *out) {
  arena a;
  arena_init(&a, 4096);
  laya_error e;
  /* Parse (outside input): the server's error body */
  json_value *v = body->len ? json_parse(body->data, body->len, &a, NULL, &e) : NULL;
  const json_value *d = v && v->type == JSON_OBJECT ? json_get(v, "detail") : NULL;
  if (d && d->type == JSON_STRING) {
    sb_append(out, d->s, d->n);
  } else if (d && d->type != JSON_NULL) {
    json_dump_opts o = {NULL, NULL, false, -1};
    json_dump(out, d, &o);
  } else {
    sb_puts(out, reason);
  }
  arena_free(&a);
}

/* GET (body NULL) or POST path; the parsed JSON object in a on success. */
static int http_call(mcp_remote *r, const char *path, const char *body, arena *a, json_value **out,
                     laya_error *err) {
  *out = NULL;
  if (r->error[0]) return remote_err(err, "internal_error", "%s%s", r->error, NULL);
#ifndef LAYA_MCP_HAVE_CURL
  (void)path;
  (void)body;
  (void)a;
  return remote_err(err, "internal_error", "%s%s", "no HTTP client in this build", NULL);
#else
  CURL *c = curl_easy_init();
  if (!c) return remote_err(err, "internal_error", "%s%s", "cannot start an HTTP client", NULL);
  strbuf url;
  sb_init(&url);
  sb_puts(&url, r->url);
  sb_puts(&url, path);
  struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json");
  if (body) h = curl_slist_append(h, "Content-Type: application/json");
  strbuf auth;
  sb_init(&auth);
  if (r->api_key) {
    sb_printf(&auth, "Authorization: Bearer %s", r->api_key);
    h = curl_slist_append(h, sb_cstr(&auth));
  }
  h = curl_slist_append(h, "Expect:"); /* no 100-continue round trip */
  reply rep;
  memset(&rep, 0, sizeof rep);
  sb_init(&rep.body);
  char cerr[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(c, CURLOPT_URL, sb_cstr(&url));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(r->timeout * 1000.0 > 2e9 ? 2e9 : r->timeout * 1000.0));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &rep);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &rep);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
  }
  CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  int ret = 0;
  char secs[32];
  snprintf(secs, sizeof secs, "%.0f", r->timeout);
  if (rc == CURLE_OPERATION_TIMEDOUT) {
    ret = remote_err(err, "timeout", "laya-serve did not answer within %ss%s", secs, NULL);
  } else if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && rep.too_big)) {
    /* the reason as Python's urllib words it ("[Errno 111] Connection refused") when the OS
     * gave one */
    long os_err = 0;
    curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os_err);
    char why[CURL_ERROR_SIZE + 64];
    if (os_err)
      snprintf(why, sizeof why, "[Errno %ld] %s", os_err, strerror((int)os_err));
    else
      snprintf(why, sizeof why, "%s", cerr[0] ? cerr : curl_easy_strerror(rc));
    ret = remote_err(err, "unreachable", "cannot reach laya-serve at %s: %s", r->url, why);
  } else if (rep.too_big) {
    ret = remote_err(err, "upstream_error", "laya-serve returned a body over %s bytes%s", "268435456", NULL);
  } else if (status < 200 || status >= 300) {
    strbuf d;
    sb_init(&d);
    error_detail(&rep.body, rep.reason, &d);
    if (status == 401) {
      ret = remote_err(err, "unauthorized", "laya-serve refused the bearer token: %s%s", sb_cstr(&d), NULL);
    } else if (status == 400 || status == 413 || status == 422) {
      ret = remote_err(err, "invalid_request", "%s%s", sb_cstr(&d), NULL);
    } else if (status == 503) {
      ret = remote_err(err, "busy", "laya-serve is busy: %s%s", sb_cstr(&d), NULL);
    } else {
      char code[32];
      snprintf(code, sizeof code, "%ld", status);
      ret = remote_err(err, "upstream_error", "laya-serve answered HTTP %s: %s", code, sb_cstr(&d));
    }
    sb_free(&d);
  } else {
    laya_error pe;
    /* Parse (outside input): the server's answer, parsed once; keep duplicate keys as the
     * server wrote them */
    json_parse_opts po = {0, false, false, true};
    char *text = arena_strndup(a, rep.body.data ? rep.body.data : "", rep.body.len);
    json_value *v = text ? json_parse(text, rep.body.len, a, &po, &pe) : NULL;
    if (!v)
      ret = remote_err(err, "upstream_error", "laya-serve returned a non-JSON body%s%s", NULL, NULL);
    else if (v->type != JSON_OBJECT)
      ret = remote_err(err, "upstream_error", "laya-serve returned a non-object body%s%s", NULL, NULL);
    else
      *out = v;
  }
  sb_free(&rep.body);
  sb_free(&auth);
  sb_free(&url);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  return ret;
#endif
}

/* ---- the engine table ---- */

typedef struct remote_model {
  char name[64];
} remote_model;

static void *r_open(void *ctx, const char *name, const serve_config *cfg, laya_error *err) {
  (void)ctx;
  (void)cfg;
  remote_model *m = calloc(1, sizeof *m);
  if (!m) {
    laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    return NULL;
  }
  snprintf(m->name, sizeof m->name, "%s", name);
  return m;
}

static void r_close(void *ctx, void *model) {
  (void)ctx;
  free(model);
}

static bool r_facts(void *ctx, void *model, model_facts *out) {
  (void)ctx;
  (void)model;
  (void)out;
  return false; /* no device to report: Laya's remote answers carry none */
}

/* ---- the decision calls (mcp.c builds the request as a value: written here once, as the body) ---- */

int mcp_remote_post(mcp_remote *r, const char *path, const json_value *request, const char *member, arena *a,
                    const json_value **out, laya_error *err) {
  *out = NULL;
  strbuf body;
  sb_init(&body);
  json_dump_opts o = {NULL, NULL, false, -1};
  json_dump(&body, request, &o);
  if (body.oom) {
    sb_free(&body);
    return remote_err(err, "internal_error", "%s%s", "out of memory", NULL);
  }
  json_value *v = NULL;
  int rc = http_call(r, path, sb_cstr(&body), a, &v, err);
  sb_free(&body);
  if (rc) return rc;
  const json_value *x = member ? json_get(v, member) : v;
  if (!x || (member && x->type != JSON_ARRAY))
    return remote_err(err, "upstream_error", "laya-serve's answer has no '%s' list%s", member, NULL);
  *out = x;
  return 0;
}

int mcp_remote_refuse(mcp_remote *r, laya_error *err) {
  if (r->error[0]) return remote_err(err, "internal_error", "%s%s", r->error, NULL);
  /* Laya 0.4.15's scan passes its hooks to RemoteRouter.predict, which refuses them */
  return laya_err(err, LAYA_ERR_INTERNAL, "RemoteError",
                  "hooks are callables and cannot be sent to laya-serve; install them on the server");
}

/* laya_decide as Laya's decide() over its RemoteRouter: the schema is planned into questions
 * here (a bad schema is the SchemaError mcp.c reports as invalid_schema, before any request),
 * asked of the server as one POST /v1/systemone {state, questions, model?, min_confidence?} (no
 * model: the caller said auto and the server routes); mcp.c projects the answers back onto the
 * schema (decide_plan_members). The server applied min_confidence; its low_confidence flags are
 * the gate's (Laya gates the same payload again at the same threshold). */
int mcp_remote_decide(mcp_remote *r, const json_value *state, const json_value *schema, const char *model,
                      const json_value *min_confidence, arena *a, decide_plan **plan, const json_value **reply,
                      laya_error *err) {
  *plan = NULL;
  *reply = NULL;
  if (r->error[0]) return remote_err(err, "internal_error", "%s%s", r->error, NULL);
  static const json_value null_v = {.type = JSON_NULL};
  if (decide_plan_new(schema ? schema : &null_v, plan, err)) return -1;
  json_member m[4];
  uint32_t n = 0;
  m[n++] = (json_member){"state", 5, *state};
  m[n++] = (json_member){"questions", 9, *decide_plan_questions(*plan)};
  if (model && *model && strcmp(model, "auto")) m[n++] = (json_member){"model", 5, json_string(model)};
  if (min_confidence && min_confidence->type != JSON_NULL) m[n++] = (json_member){"min_confidence", 14, *min_confidence};
  json_value req = {.type = JSON_OBJECT, .n = n, .members = m};
  int rc = mcp_remote_post(r, "/v1/systemone", &req, NULL, a, reply, err);
  if (rc) {
    decide_plan_free(*plan);
    *plan = NULL;
  }
  return rc;
}

void mcp_remote_engine(mcp_remote *r, serve_engine *eng) {
  memset(eng, 0, sizeof *eng);
  eng->ctx = r;
  eng->name = "remote";
  eng->open = r_open;
  eng->close = r_close;
  eng->facts = r_facts;
  eng->open_by_name = true;
}

/* ---- laya_status (Laya's _remote_status) ---- */

char *mcp_remote_status(mcp_remote *r, laya_error *err) {
  if (r->error[0]) {
    remote_err(err, "internal_error", "%s%s", r->error, NULL);
    return NULL;
  }
  arena a;
  arena_init(&a, 1 << 14);
  json_value *health = NULL;
  laya_error he;
  laya_err_clear(&he);
  int rc = http_call(r, "/health", NULL, &a, &health, &he);
  json_dump_opts o = {NULL, NULL, false, -1};
  strbuf sb;
  sb_init(&sb);
  sb_puts(&sb, "{\"mode\": \"remote\", \"base_url\": ");
  json_dump_string(&sb, r->url, strlen(r->url), false);
  sb_printf(&sb, ", \"router_preload\": false, \"router_ready\": true, \"engine\": \"laya.c\", "
                 "\"package_versions\": {\"laya.c\": \"%s\", \"laya_compat\": \"%s\"}, \"server\": ",
            LAYA_VERSION, LAYA_COMPAT_VERSION);
  if (rc) {
    sb_puts(&sb, "null, \"server_error\": ");
    strbuf m;
    sb_init(&m);
    sb_printf(&m, "RemoteError: %s", he.message);
    json_dump_string(&sb, m.data, m.len, false);
    sb_free(&m);
    sb_puts(&sb, ", \"loaded\": []}");
  } else {
    json_dump(&sb, health, &o);
    sb_puts(&sb, ", \"loaded\": [");
    const json_value *l = json_get(health, "loaded");
    int k = 0;
    for (uint32_t i = 0; l && l->type == JSON_ARRAY && i < l->n; i++) {
      if (l->items[i].type != JSON_STRING) continue;
      if (k++) sb_puts(&sb, ", ");
      json_dump(&sb, &l->items[i], &o);
    }
    sb_putc(&sb, ']');
    static const char *const keys[] = {"device", "device_is_preference", "checkpoint_devices"};
    for (int i = 0; i < 3; i++) {
      const json_value *x = json_get(health, keys[i]);
      if (!x) continue;
      sb_printf(&sb, ", \"%s\": ", keys[i]);
      json_dump(&sb, x, &o);
    }
    sb_putc(&sb, '}');
  }
  arena_free(&a);
  return sb_steal(&sb);
}
