/* http.c: laya-serve's HTTP surface on libmicrohttpd.
 *
 * Life of a decision request: framing (two different Content-Lengths, or Content-Length beside
 * Transfer-Encoding: 400; a Transfer-Encoding other than chunked: 501; both close the
 * connection, as the rest of the stream cannot be framed) -> Content-Length over 2 MiB (413,
 * answered before the body, connection closed) -> the body, capped at 2 MiB however it is framed
 * (413) and bounded in time (LAYA_BODY_READ_TIMEOUT, 408) -> bearer (401) -> draining (503) ->
 * the body memory budget (503, LAYA_SERVE_MAX_BUFFERED_MB) -> validation (validate.c) and routing
 * -> admission (503 + Retry-After when LAYA_MAX_CONCURRENT requests are already admitted) -> a job
 * for the scheduler. Each 503 has its own text and its own laya_refused_requests_total{reason}.
 * A request is admitted only once its body is complete and valid, so a slow or abandoned upload,
 * or an invalid body, never holds an admission slot, and the slot is given back just
 * before its response is queued (a client that reads its answer and asks again at once finds it
 * free). The HTTP thread prepares the job (the engine checks and tokenizes it) before queuing it,
 * and decodes its answer after its pass, so the inference thread only runs passes. The
 * connection is suspended while its job waits and runs, so a slow forward pass holds no HTTP
 * thread, and resumed by the inference thread when its pass is done; a client that leaves while
 * its job waits is noticed (the watchdog polls the suspended sockets) and its job is skipped.
 *
 * Every answer but the framing errors and the announced-too-large 413 is queued after the body
 * is read (a refused request's body is read and dropped), because libmicrohttpd closes a
 * connection whose response was queued before its body: so GETs, 401/404/405/503 and the rest
 * keep the keep-alive connection, and pipelined requests behind them are answered.
 *
 * A body still incomplete at LAYA_BODY_READ_TIMEOUT gets Laya's 408 then and there, whether its
 * client went silent or keeps trickling: libmicrohttpd calls us only when bytes arrive and will
 * not queue a response before the request is complete, so a watchdog thread writes the 408 to
 * the socket itself and shuts the connection down (the rest of that body cannot be read as a next
 * request; uvicorn sends the same 408 and drops the socket at its keep-alive timeout). The same
 * watchdog cuts connections that hold no request for LAYA_SERVE_HEADER_TIMEOUT (a request head
 * sent a byte at a time, or an idle keep-alive), and, while more than half of
 * LAYA_SERVE_MAX_CONNECTIONS are open, those idle or unfinished for more than a second: slow
 * clients cannot use up the connections (or the process's file descriptors) that others need.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "model/result_json.h"
#include "serve/http.h"
#include "serve/log.h"

enum { ROUTE_ONE = 0, ROUTE_BATCH = 1, ROUTE_OTHER = 2 };

/* What a request gets once its body is in (decided from the request head). */
typedef enum action {
  ACT_DECIDE,       /* a route that needs a model: body buffered, admission, a job (its handler) */
  ACT_HANDLER,      /* any other route of the table: its handler */
  ACT_NOT_FOUND,
  ACT_GET_ONLY,     /* 405, Allow: GET */
  ACT_POST_ONLY,    /* 405, Allow: POST */
  ACT_UNAUTHORIZED, /* 401 */
  ACT_DRAINING,     /* 503 server shutting down */
  ACT_REDIRECT,     /* 307 to the path without its trailing slash */
} action;

/* src/serve/openapi.json and docs.html, compiled in (src/serve/CMakeLists.txt) */
extern const unsigned char serve_asset_openapi_json[], serve_asset_docs_html[];
extern const unsigned long serve_asset_openapi_json_len, serve_asset_docs_html_len;

/* One open connection (libmicrohttpd's socket context), for the header/idle deadline. */
typedef struct conn_ctx {
  struct conn_ctx *prev, *next;
  int fd;
  double since;    /* when it last started waiting for a request head */
  bool in_request; /* a request head is complete and its request not yet finished */
  bool cut;        /* the watchdog shut it down */
} conn_ctx;

struct serve_server {
  const serve_config *cfg;
  serve_models *models;
  const serve_engine *eng;
  serve_sched *sched;
  serve_metrics *metrics;
  struct MHD_Daemon *d;
  int listen_fd;
  int port;
  int max_connections; /* LAYA_SERVE_MAX_CONNECTIONS, kept below the file limit */
  atomic_int admitted; /* decision requests holding an admission slot */
  atomic_int arriving; /* valid, being prepared or admitted, not yet handed to the scheduler */
  atomic_llong buffered; /* body bytes held by requests (LAYA_SERVE_MAX_BUFFERED_MB) */
  atomic_ullong refused[4]; /* 503s by cause (refuse_reason): /metrics' laya_refused_requests_total */
  atomic_bool draining;
  char *openapi;       /* /openapi.json as served (version and servers filled in) */
  char *expected_auth; /* "Bearer <key>" */
  size_t expected_len;
  /* guarded by reading_mu: requests still reading their body (the 408), suspended requests
   * (is their client still there?), and every open connection (the header deadline) */
  pthread_mutex_t reading_mu;
  struct req_ctx *reading;
  struct req_ctx *waiting;
  conn_ctx *conns;
  int n_conns;
  unsigned long long conns_cut, jobs_cancelled;
  pthread_t watchdog;
  bool watchdog_started;
  atomic_bool stopping;
};

/* An entry of the route table (ROUTES, before route_of). */
struct req_ctx;
typedef enum MHD_Result (*route_handler)(struct req_ctx *ctx);
typedef struct route_entry {
  serve_http_route info;
  route_handler handler; /* called once the body is in */
  int kind;              /* needs_model: ROUTE_ONE or ROUTE_BATCH (the scheduler's request kind) */
} route_entry;

typedef struct req_ctx {
  serve_server *srv;
  struct MHD_Connection *conn;
  conn_ctx *cc;
  action act;
  const route_entry *entry; /* the route table's entry (ACT_DECIDE, ACT_HANDLER), or NULL */
  int route;
  const char *route_name;
  bool admitted, arriving, too_large, over_budget, timed_out;
  /* on srv->reading while the body is being read, on srv->waiting while suspended (guarded by
   * srv->reading_mu) */
  struct req_ctx *read_prev, *read_next;
  struct req_ctx *wait_prev, *wait_next;
  bool on_reading, on_waiting, expired; /* expired: answered 408 and counted by the watchdog */
  int gone_ticks; /* watchdog ticks its client has been seen gone while the body is incomplete */
  bool cut;       /* shut down by the watchdog (its client left mid-body) */
  int fd;
  strbuf body;
  long long held; /* bytes of body counted in srv->buffered */
  double started;
  int status;
  unsigned long long bytes; /* response body bytes queued */
  char request_id[SERVE_REQUEST_ID_MAX + 1]; /* X-Request-Id: the client's (when sane) or ours */
  char method[16];
  char *path;
  serve_job *job;
  atomic_bool job_done;
} req_ctx;

/* ---- admission ---- */

/* Why a request was answered 503: each has its own text and its own laya_refused_requests_total
 * series, so an operator can tell a full server from one short of body memory or one stopping. */
typedef enum refuse_reason {
  REFUSE_CONCURRENCY,  /* LAYA_MAX_CONCURRENT requests already admitted (Laya's text) */
  REFUSE_BUFFERED,     /* the bodies held in memory reached LAYA_SERVE_MAX_BUFFERED_MB */
  REFUSE_DRAINING,     /* SIGTERM: no new work */
  REFUSE_UNAVAILABLE,  /* the routed checkpoint cannot be loaded (its own text, from models.c) */
} refuse_reason;
static const char *const REFUSE_LABEL[] = {"concurrency", "buffered_memory", "draining", "checkpoint_unavailable"};

/* Take an admission slot if one is free. A compare-and-swap, never an add then a check: a refused
 * request must not count, even for an instant, against one that arrives just as a slot frees. */
static bool admit(serve_server *srv) {
  int cur = atomic_load(&srv->admitted);
  while (cur < srv->cfg->max_concurrent)
    if (atomic_compare_exchange_weak(&srv->admitted, &cur, cur + 1)) return true;
  return false;
}

static void release_arriving(req_ctx *ctx) {
  if (ctx->arriving) {
    ctx->arriving = false;
    atomic_fetch_sub(&ctx->srv->arriving, 1);
  }
}

/* Give the admission slot back (the request is answered, or its connection is gone). */
static void release_admission(req_ctx *ctx) {
  release_arriving(ctx);
  if (ctx->admitted) {
    ctx->admitted = false;
    atomic_fetch_sub(&ctx->srv->admitted, 1);
    serve_metrics_inflight(ctx->srv->metrics, -1);
  }
}

static void drop_body(req_ctx *ctx) {
  sb_free(&ctx->body);
  if (ctx->held) {
    atomic_fetch_sub(&ctx->srv->buffered, ctx->held);
    ctx->held = 0;
  }
}

/* ---- responses ---- */

static enum MHD_Result send_body(req_ctx *ctx, int status, const char *ctype, strbuf *body,
                                 const char *const *headers) {
  /* the slot first: once the response is queued its bytes may reach the client before
   * libmicrohttpd reports the request finished, and a client that asks again at once must find
   * the slot free (LAYA_MAX_CONCURRENT clients must never be refused) */
  release_admission(ctx);
  size_t len = body->len;
  char *data = sb_steal(body);
  struct MHD_Response *r =
      MHD_create_response_from_buffer(len, data ? data : (char *)"", data ? MHD_RESPMEM_MUST_FREE
                                                                        : MHD_RESPMEM_PERSISTENT);
  if (!r) {
    free(data);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
  MHD_add_response_header(r, "X-Request-Id", ctx->request_id);
  bool closing = false;
  for (int i = 0; headers && headers[i]; i += 2) {
    MHD_add_response_header(r, headers[i], headers[i + 1]);
    closing = closing || !strcmp(headers[i], MHD_HTTP_HEADER_CONNECTION);
  }
  if (!closing && atomic_load(&ctx->srv->draining))
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
  enum MHD_Result rc = MHD_queue_response(ctx->conn, (unsigned)status, r);
  if (rc == MHD_YES) {
    ctx->status = status;
    ctx->bytes = len;
  }
  MHD_destroy_response(r);
  return rc;
}

static enum MHD_Result send_json(req_ctx *ctx, int status, strbuf *body, const char *const *headers) {
  return send_body(ctx, status, "application/json", body, headers);
}

static enum MHD_Result send_detail(req_ctx *ctx, int status, const char *detail, size_t n,
                                   const char *const *headers) {
  strbuf sb;
  sb_init(&sb);
  serve_detail_json(&sb, detail, n);
  enum MHD_Result rc = send_json(ctx, status, &sb, headers);
  sb_free(&sb);
  return rc;
}

static enum MHD_Result send_detail_s(req_ctx *ctx, int status, const char *detail) {
  return send_detail(ctx, status, detail, strlen(detail), NULL);
}

/* A 503 for one of the server's own limits (with Retry-After: 1), counted by its reason. */
static enum MHD_Result refuse(req_ctx *ctx, refuse_reason why) {
  static const char *const text[] = {
      [REFUSE_CONCURRENCY] = "server busy, try again later",
      [REFUSE_BUFFERED] = "server busy: request bodies in memory reached LAYA_SERVE_MAX_BUFFERED_MB, try again later",
      [REFUSE_DRAINING] = "server shutting down",
      [REFUSE_UNAVAILABLE] = "checkpoint unavailable", /* not sent: the models' own text is (answer_job) */
  };
  atomic_fetch_add(&ctx->srv->refused[why], 1);
  const char *const h[] = {"Retry-After", "1", NULL};
  return send_detail(ctx, 503, text[why], strlen(text[why]), h);
}

/* An answer queued before the body was read: libmicrohttpd closes the connection after it, and
 * so do we say (the framing errors, where the rest of the stream cannot be read as requests). */
static enum MHD_Result send_closing(req_ctx *ctx, int status, const char *detail) {
  const char *const h[] = {MHD_HTTP_HEADER_CONNECTION, "close", NULL};
  return send_detail(ctx, status, detail, strlen(detail), h);
}

/* ---- auth ---- */

/* Constant-time in the length of the expected value: every byte is compared whatever the
 * supplied header holds, and a length mismatch is folded into the same accumulator. */
static bool authorized(serve_server *srv, struct MHD_Connection *c) {
  if (!srv->expected_auth) return true;
  const char *got = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
  size_t n = got ? strlen(got) : 0;
  volatile unsigned char diff = (unsigned char)(n != srv->expected_len);
  for (size_t i = 0; i < srv->expected_len; i++) {
    unsigned char g = i < n ? (unsigned char)got[i] : 0;
    diff |= (unsigned char)(g ^ (unsigned char)srv->expected_auth[i]);
  }
  return diff == 0;
}

/* ---- GET routes ---- */

static enum MHD_Result health(req_ctx *ctx) {
  serve_server *srv = ctx->srv;
  strbuf sb;
  sb_init(&sb);
  if (!authorized(srv, ctx->conn)) {
    sb_puts(&sb, "{\"status\":\"ok\"}");
  } else {
    /* the members as the models wrote them (json.dumps spacing, no floats), respaced compact as
     * FastAPI sends them: written once, not parsed back */
    serve_health h;
    serve_models_health_members(srv->models, &h);
    rj w;
    rj_init(&w, &sb, &RJ_COMPACT);
    sb_puts(&sb, "{\"status\":\"ok\"");
    for (int i = 0; i < SERVE_HEALTH_N; i++) {
      sb_putc(&sb, ',');
      json_dump_string(&sb, h.key[i], strlen(h.key[i]), false);
      sb_putc(&sb, ':');
      rj_raw_respaced(&w, sb_cstr(&h.value[i]));
    }
    sb_putc(&sb, '}');
    serve_health_free(&h);
  }
  enum MHD_Result rc = send_json(ctx, 200, &sb, NULL);
  sb_free(&sb);
  return rc;
}

static enum MHD_Result ready(req_ctx *ctx) {
  serve_server *srv = ctx->srv;
  strbuf sb;
  sb_init(&sb);
  int status = 200;
  if (atomic_load(&srv->draining)) {
    status = 503;
    sb_puts(&sb, "{\"status\":\"draining\"}");
  } else if (!serve_models_ready(srv->models)) {
    status = 503;
    serve_models_not_ready(srv->models, &sb);
  } else {
    sb_puts(&sb, "{\"status\":\"ready\",\"loaded\":");
    serve_models_loaded(srv->models, &sb);
    sb_putc(&sb, '}');
  }
  enum MHD_Result rc = send_json(ctx, status, &sb, NULL);
  sb_free(&sb);
  return rc;
}

static enum MHD_Result metrics(req_ctx *ctx) { /* the bearer was checked from the table */
  serve_server *srv = ctx->srv;
  strbuf sb;
  sb_init(&sb);
  serve_metrics_render(srv->metrics, serve_sched_depth(srv->sched), &sb);
  serve_sched_render(srv->sched, &sb);
  serve_metrics_render_process(srv->metrics, srv->models, &sb);
  pthread_mutex_lock(&srv->reading_mu);
  int conns = srv->n_conns;
  unsigned long long cut = srv->conns_cut, cancelled = srv->jobs_cancelled;
  pthread_mutex_unlock(&srv->reading_mu);
  sb_printf(&sb, "# HELP laya_admitted_requests Decision requests holding an admission slot.\n"
                 "# TYPE laya_admitted_requests gauge\nlaya_admitted_requests %d\n"
                 "# HELP laya_admission_limit LAYA_MAX_CONCURRENT.\n"
                 "# TYPE laya_admission_limit gauge\nlaya_admission_limit %d\n"
                 "# HELP laya_open_connections Open HTTP connections.\n"
                 "# TYPE laya_open_connections gauge\nlaya_open_connections %d\n"
                 "# HELP laya_connection_limit LAYA_SERVE_MAX_CONNECTIONS as applied.\n"
                 "# TYPE laya_connection_limit gauge\nlaya_connection_limit %d\n"
                 "# HELP laya_connections_cut_total Connections shut down for holding no complete "
                 "request head in time.\n"
                 "# TYPE laya_connections_cut_total counter\nlaya_connections_cut_total %llu\n"
                 "# HELP laya_buffered_body_bytes Request body bytes held in memory.\n"
                 "# TYPE laya_buffered_body_bytes gauge\nlaya_buffered_body_bytes %lld\n"
                 "# HELP laya_cancelled_jobs_total Queued requests skipped because their client left.\n"
                 "# TYPE laya_cancelled_jobs_total counter\nlaya_cancelled_jobs_total %llu\n",
            atomic_load(&srv->admitted), srv->cfg->max_concurrent, conns, srv->max_connections, cut,
            (long long)atomic_load(&srv->buffered), cancelled);
  sb_puts(&sb, "# HELP laya_refused_requests_total Requests answered 503, by reason: concurrency "
               "(LAYA_MAX_CONCURRENT admitted), buffered_memory (LAYA_SERVE_MAX_BUFFERED_MB of bodies held), "
               "draining (shutting down), checkpoint_unavailable (the routed checkpoint cannot be loaded).\n"
               "# TYPE laya_refused_requests_total counter\n");
  for (int i = 0; i < (int)(sizeof REFUSE_LABEL / sizeof *REFUSE_LABEL); i++)
    sb_printf(&sb, "laya_refused_requests_total{reason=\"%s\"} %llu\n", REFUSE_LABEL[i],
              (unsigned long long)atomic_load(&srv->refused[i]));
  enum MHD_Result rc = send_body(ctx, 200, "text/plain; version=0.0.4; charset=utf-8", &sb, NULL);
  sb_free(&sb);
  return rc;
}

/* ---- the API's description ---- */

/* text with every `mark` replaced by `with` */
static void substitute(strbuf *out, const char *t, const char *mark, const char *with) {
  for (const char *hit; (hit = strstr(t, mark)); t = hit + strlen(mark)) {
    sb_append(out, t, (size_t)(hit - t));
    sb_puts(out, with);
  }
  sb_puts(out, t);
}

/* The served /openapi.json: the compiled-in template (src/serve/openapi.json) with this build's
 * version, this server's LAYA_MAX_TOKEN_BUDGET, its choice option cap and, behind LAYA_ROOT_PATH, FastAPI's "servers":
 * [{"url": root_path without trailing slashes}] (none when that is empty), written compactly. */
static char *build_openapi(const serve_config *cfg) {
  strbuf src, tmp, out;
  sb_init(&src);
  sb_init(&tmp);
  sb_init(&out);
  char budget[32];
  snprintf(budget, sizeof budget, "%ld", cfg->max_token_budget);
  substitute(&tmp, (const char *)serve_asset_openapi_json, "@LAYA_VERSION@", LAYA_VERSION);
  substitute(&src, sb_cstr(&tmp), "\"@MAX_TOKEN_BUDGET@\"", budget);
  /* a choice's option cap: LAYA_TOURNAMENT_GROUP raises it to 255 (the quoted mark is the schema's
   * number, the bare one the description's text) */
  char cap[16];
  snprintf(cap, sizeof cap, "%d", cfg->env.tournament_group ? SERVE_TOURNAMENT_MAX_LABELS : SERVE_MAX_CHOICE_OPTIONS);
  sb_reset(&tmp);
  substitute(&tmp, sb_cstr(&src), "\"@MAX_CHOICE_OPTIONS@\"", cap);
  sb_reset(&src);
  substitute(&src, sb_cstr(&tmp), "@MAX_CHOICE_OPTIONS@", cap);
  sb_free(&tmp);
  arena a;
  arena_init(&a, 1 << 16);
  laya_error e;
  json_value *v = json_parse(src.data, src.len, &a, NULL, &e);
  if (!v || v->type != JSON_OBJECT) {
    serve_log(SERVE_LOG_ERROR, "the compiled-in openapi.json does not parse: %s", e.message);
    arena_free(&a);
    sb_free(&src);
    return NULL;
  }
  json_dump_opts o = {",", ":", false, -1};
  sb_putc(&out, '{');
  for (uint32_t i = 0; i < v->n; i++) {
    const json_member *m = &v->members[i];
    if (i) sb_putc(&out, ',');
    json_dump_string(&out, m->key, m->key_len, false);
    sb_putc(&out, ':');
    json_dump(&out, &m->value, &o);
    size_t rn = cfg->root_path ? strlen(cfg->root_path) : 0;
    while (rn && cfg->root_path[rn - 1] == '/') rn--; /* FastAPI: root_path.rstrip("/"), if any */
    if (!strcmp(m->key, "info") && rn) {
      sb_puts(&out, ",\"servers\":[{\"url\":");
      json_dump_string(&out, cfg->root_path, rn, false);
      sb_puts(&out, "}]");
    }
  }
  sb_putc(&out, '}');
  arena_free(&a);
  sb_free(&src);
  return sb_steal(&out);
}

static enum MHD_Result openapi(req_ctx *ctx) {
  strbuf sb;
  sb_init(&sb);
  sb_puts(&sb, ctx->srv->openapi ? ctx->srv->openapi : "{}");
  enum MHD_Result rc = send_json(ctx, ctx->srv->openapi ? 200 : 500, &sb, NULL);
  sb_free(&sb);
  return rc;
}

static enum MHD_Result docs(req_ctx *ctx) {
  strbuf sb;
  sb_init(&sb);
  sb_append(&sb, (const char *)serve_asset_docs_html, serve_asset_docs_html_len);
  enum MHD_Result rc = send_body(ctx, 200, "text/html; charset=utf-8", &sb, NULL);
  sb_free(&sb);
  return rc;
}

/* ---- the body deadline (408) ---- */

static void reading_remove_locked(req_ctx *ctx) {
  if (!ctx->on_reading) return;
  if (ctx->read_prev)
    ctx->read_prev->read_next = ctx->read_next;
  else
    ctx->srv->reading = ctx->read_next;
  if (ctx->read_next) ctx->read_next->read_prev = ctx->read_prev;
  ctx->read_prev = ctx->read_next = NULL;
  ctx->on_reading = false;
}

static int conn_fd(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  return ci ? ci->connect_fd : -1;
}

static void reading_add(req_ctx *ctx) {
  if (ctx->fd < 0) return;
  serve_server *srv = ctx->srv;
  pthread_mutex_lock(&srv->reading_mu);
  ctx->read_prev = NULL;
  ctx->read_next = srv->reading;
  if (srv->reading) srv->reading->read_prev = ctx;
  srv->reading = ctx;
  ctx->on_reading = true;
  pthread_mutex_unlock(&srv->reading_mu);
}

/* Off the watch list; true when the watchdog already answered 408 (the connection is done). */
static bool reading_done(req_ctx *ctx) {
  pthread_mutex_lock(&ctx->srv->reading_mu);
  reading_remove_locked(ctx);
  bool expired = ctx->expired;
  pthread_mutex_unlock(&ctx->srv->reading_mu);
  return expired;
}

static void waiting_remove_locked(req_ctx *ctx) {
  if (!ctx->on_waiting) return;
  if (ctx->wait_prev)
    ctx->wait_prev->wait_next = ctx->wait_next;
  else
    ctx->srv->waiting = ctx->wait_next;
  if (ctx->wait_next) ctx->wait_next->wait_prev = ctx->wait_prev;
  ctx->wait_prev = ctx->wait_next = NULL;
  ctx->on_waiting = false;
}

/* Answer 408 on the socket, end our side of it, and free the admission slot now, as Laya does.
 * The client reads the 408 and the end of the stream; what it still sends is read and dropped
 * until it closes (closing with its bytes unread would reset the connection, and a reset can
 * destroy the 408 before the client reads it). Called with reading_mu held. */
static void expire_locked(req_ctx *ctx) {
  static const char body[] = "{\"detail\":\"request body was not received in time\"}";
  serve_server *srv = ctx->srv;
  ctx->expired = true;
  reading_remove_locked(ctx);
  release_admission(ctx);
  serve_metrics_request(srv->metrics, ctx->route_name, 408, serve_now() - ctx->started);
  char date[64];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  char head[512];
  int n = snprintf(head, sizeof head,
                   "HTTP/1.1 408 Request Timeout\r\nDate: %s\r\nContent-Type: application/json\r\n"
                   "X-Request-Id: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                   date, ctx->request_id, sizeof body - 1);
  ctx->bytes = sizeof body - 1;
  (void)!send(ctx->fd, head, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)!send(ctx->fd, body, sizeof body - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  shutdown(ctx->fd, SHUT_WR);
}

/* Has the client of a suspended request gone (closed, or reset)? libmicrohttpd does not poll a
 * suspended connection, so it would only find out when the answer is written. */
static bool client_gone(int fd) {
  struct pollfd p = {fd, POLLRDHUP, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static int unread_bytes(int fd) {
  int n = 0;
  return ioctl(fd, FIONREAD, &n) == 0 ? n : -1;
}

static void *watchdog(void *arg) {
  serve_server *srv = arg;
  double last_idle_check = 0;
  while (!atomic_load(&srv->stopping)) {
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    double now = serve_now();
    pthread_mutex_lock(&srv->reading_mu);
    for (req_ctx *c = srv->reading, *next; c; c = next) {
      next = c->read_next;
      if (now - c->started > srv->cfg->body_read_timeout) {
        expire_locked(c);
      } else if (client_gone(c->fd) && unread_bytes(c->fd) == 0) {
        /* its client closed with the body incomplete (nothing left unread in the socket): the
         * body will never come. libmicrohttpd may not look at the socket again before its
         * timeout (it read the last bytes and the end of the stream in one go), so shut it down
         * here, which wakes it; twice in a row, so a body whose last bytes it is processing is
         * not cut */
        if (++c->gone_ticks >= 2 && !c->cut) {
          c->cut = true;
          shutdown(c->fd, SHUT_RDWR);
        }
      } else {
        c->gone_ticks = 0;
      }
    }
    for (req_ctx *c = srv->waiting; c; c = c->wait_next) {
      if (c->job && !atomic_load(&c->job->cancelled) && client_gone(c->fd)) {
        atomic_store(&c->job->cancelled, true);
        srv->jobs_cancelled++;
      }
    }
    /* connections without a complete request head: cut at LAYA_SERVE_HEADER_TIMEOUT, or after a
     * second while more than half of the connection limit is in use */
    bool pressure = srv->n_conns * 2 > srv->max_connections;
    double limit = pressure && srv->cfg->header_timeout > 1.0 ? 1.0 : srv->cfg->header_timeout;
    for (conn_ctx *cc = srv->conns; cc; cc = cc->next) {
      if (cc->in_request || cc->cut || cc->fd < 0 || now - cc->since <= limit) continue;
      cc->cut = true;
      srv->conns_cut++;
      shutdown(cc->fd, SHUT_RDWR);
    }
    pthread_mutex_unlock(&srv->reading_mu);
    if (srv->cfg->idle_unload_seconds > 0 && now - last_idle_check > 0.25) {
      last_idle_check = now;
      serve_models_unload_idle(srv->models, srv->cfg->idle_unload_seconds);
    }
  }
  return NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
  serve_server *srv = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    conn_ctx *cc = calloc(1, sizeof *cc);
    *socket_context = cc;
    if (!cc) return;
    cc->fd = conn_fd(c);
    cc->since = serve_now();
    pthread_mutex_lock(&srv->reading_mu);
    cc->next = srv->conns;
    if (srv->conns) srv->conns->prev = cc;
    srv->conns = cc;
    srv->n_conns++;
    pthread_mutex_unlock(&srv->reading_mu);
  } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    conn_ctx *cc = *socket_context;
    if (!cc) return;
    pthread_mutex_lock(&srv->reading_mu);
    if (cc->prev)
      cc->prev->next = cc->next;
    else
      srv->conns = cc->next;
    if (cc->next) cc->next->prev = cc->prev;
    srv->n_conns--;
    pthread_mutex_unlock(&srv->reading_mu);
    free(cc);
    *socket_context = NULL;
  }
}

/* The scheduler's last look before a pass computes the job (the watchdog looks every 50 ms). */
static bool job_client_gone(serve_job *job, void *arg) {
  req_ctx *ctx = arg;
  serve_server *srv = ctx->srv;
  pthread_mutex_lock(&srv->reading_mu);
  if (!atomic_load(&job->cancelled) && ctx->fd >= 0 && client_gone(ctx->fd)) {
    atomic_store(&job->cancelled, true);
    srv->jobs_cancelled++;
  }
  pthread_mutex_unlock(&srv->reading_mu);
  return atomic_load(&job->cancelled);
}

static void job_done(serve_job *job, void *arg) {
  (void)job;
  req_ctx *ctx = arg;
  atomic_store(&ctx->job_done, true);
  MHD_resume_connection(ctx->conn);
}

/* On the request's own thread: decode its answer (if its pass left that to us), then send it. */
static enum MHD_Result answer_job(req_ctx *ctx) {
  pthread_mutex_lock(&ctx->srv->reading_mu);
  waiting_remove_locked(ctx);
  pthread_mutex_unlock(&ctx->srv->reading_mu);
  serve_job *job = ctx->job;
  serve_job_finish(job);
  serve_metrics_tokens(ctx->srv->metrics, job->input_tokens);
  serve_metrics_checkpoint_request(ctx->srv->metrics, job->model, job->status ? job->status : 200,
                                   (long)job->n_states, job->input_tokens);
  if (job->status == 0) {
    char ms[64], timing[80];
    snprintf(ms, sizeof ms, "%.2f", job->infer_ms);
    snprintf(timing, sizeof timing, "inference;dur=%s", ms);
    const char *const headers[] = {"Server-Timing", timing, "X-Inference-Time-Ms", ms, NULL};
    return send_json(ctx, 200, &job->body, headers);
  }
  if (job->status == 503) atomic_fetch_add(&ctx->srv->refused[REFUSE_UNAVAILABLE], 1);
  if (job->status == 422 || job->status == 503)
    return send_detail(ctx, job->status, job->err.message, strlen(job->err.message), NULL);
  if (job->status == 499) return send_closing(ctx, 499, "client closed request");
  return send_detail_s(ctx, 500, "inference failed");
}

static enum MHD_Result decide(req_ctx *ctx) {
  serve_server *srv = ctx->srv;
  if (ctx->too_large) {
    drop_body(ctx);
    return send_detail_s(ctx, 413, "request body too large");
  }
  if (ctx->timed_out) {
    drop_body(ctx);
    return send_detail_s(ctx, 408, "request body was not received in time");
  }
  if (!authorized(srv, ctx->conn)) {
    drop_body(ctx);
    return send_detail_s(ctx, 401, "invalid or missing bearer token");
  }
  if (atomic_load(&srv->draining)) {
    drop_body(ctx);
    return refuse(ctx, REFUSE_DRAINING);
  }
  if (ctx->over_budget) { /* its body was dropped: nothing to validate */
    drop_body(ctx);
    return refuse(ctx, REFUSE_BUFFERED);
  }
  /* every slot held by admitted work: refused before any parsing (cheap shedding under overload;
   * only admitted, valid requests hold slots, so this never refuses a client under the limit) */
  if (atomic_load(&srv->admitted) >= srv->cfg->max_concurrent) {
    drop_body(ctx);
    return refuse(ctx, REFUSE_CONCURRENCY);
  }
  /* checked (JSON, shape, limits, fields), routed and prepared (the engine's checks, tokenizing)
   * before admission: work on this HTTP thread needs no slot, so invalid requests, however many,
   * never hold one (issue 18: a junk client's invalid body held a slot while it was checked, and
   * a normal request under the limit got 503). The HTTP threads bound how many are checked at
   * once; a routed checkpoint that is not loaded is loaded here (serve_models_get) */
  arena a;
  arena_init(&a, 1 << 16);
  serve_request req;
  serve_reject rej;
  serve_reject_init(&rej);
  int rc = serve_validate(ctx->body.data ? ctx->body.data : "", ctx->body.len,
                          ctx->route == ROUTE_ONE ? SERVE_ONE : SERVE_BATCH, srv->cfg, srv->models, &a,
                          &req, &rej);
  serve_job *job = NULL;
  if (rc == 0) rc = serve_job_from_request(srv->models, &req, srv->cfg->jev_strict, &job, &rej);
  arena_free(&a);
  drop_body(ctx);
  if (rc != 0) {
    if (rej.status == 503) atomic_fetch_add(&srv->refused[REFUSE_UNAVAILABLE], 1);
    enum MHD_Result r = send_detail(ctx, rej.status, sb_cstr(&rej.detail), rej.detail.len, NULL);
    serve_reject_free(&rej);
    return r;
  }
  serve_reject_free(&rej);
  ctx->job = job;
  job->done = job_done;
  job->done_arg = ctx;
  job->client_gone = job_client_gone;
  /* on its way to the scheduler (a lone job waits for company only while some are) */
  ctx->arriving = true;
  atomic_fetch_add(&srv->arriving, 1);
  /* checked and tokenized here, on this thread, while the inference thread runs passes; a
   * request that fails here is answered at once (the scheduler never sees it). Jobs the worker
   * prepares itself (solo, or LAYA_SERVE_PIPELINE=0) meet the engine's checks under their slot */
  if (serve_sched_prepare(srv->sched, job) != 0) return answer_job(ctx);
  /* admitted now that the request is complete and checked: a slow or abandoned upload, or an
   * invalid body, never held a slot; the slot bounds the work queued and running */
  bool admitted = admit(srv);
  if (!admitted || atomic_load(&srv->draining)) {
    /* draining began while it was checked: serve_server_drain stops the scheduler once no slot
     * is held, so a request admitted after it read the count must not be queued (seq_cst: if the
     * drain saw no slot held, this sees draining) */
    if (admitted) atomic_fetch_sub(&srv->admitted, 1);
    release_arriving(ctx);
    ctx->job = NULL;
    serve_job_free(job);
    return refuse(ctx, admitted ? REFUSE_DRAINING : REFUSE_CONCURRENCY);
  }
  ctx->admitted = true;
  serve_metrics_inflight(srv->metrics, 1);
  /* suspend before the job can finish: the worker's resume must find it suspended */
  MHD_suspend_connection(ctx->conn);
  if (ctx->fd >= 0) {
    pthread_mutex_lock(&srv->reading_mu);
    ctx->wait_prev = NULL;
    ctx->wait_next = srv->waiting;
    if (srv->waiting) srv->waiting->wait_prev = ctx;
    srv->waiting = ctx;
    ctx->on_waiting = true;
    pthread_mutex_unlock(&srv->reading_mu);
  }
  serve_sched_submit(srv->sched, job);
  release_arriving(ctx);
  return MHD_YES;
}

/* Python int() of a Content-Length value; false when it would raise. */
static bool content_length(const char *s, unsigned long long *out) {
  while (*s == ' ' || *s == '\t') s++;
  if (*s == '+') s++;
  if (*s < '0' || *s > '9') return false;
  unsigned long long v = 0;
  for (; *s; s++) {
    if (*s >= '0' && *s <= '9') {
      v = v > (1ULL << 60) ? v : v * 10 + (unsigned)(*s - '0');
    } else if (*s == '_' && s[1] >= '0' && s[1] <= '9') {
      continue;
    } else {
      break;
    }
  }
  while (*s == ' ' || *s == '\t') s++;
  if (*s) return false;
  *out = v;
  return true;
}

/* The framing headers of a request head, all of their copies. */
typedef struct framing {
  int n_length, n_te;
  bool lengths_differ, te_not_chunked;
  char first_length[64];
  char te[64];
} framing;

static bool token_is(const char *v, const char *word) {
  while (*v == ' ' || *v == '\t') v++;
  size_t n = strlen(word);
  if (strncasecmp(v, word, n) != 0) return false;
  v += n;
  while (*v == ' ' || *v == '\t') v++;
  return *v == 0;
}

static enum MHD_Result framing_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value) {
  (void)kind;
  framing *f = cls;
  if (!key) return MHD_YES;
  if (!value) value = "";
  if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
    if (f->n_length++ == 0) {
      snprintf(f->first_length, sizeof f->first_length, "%s", value);
    } else {
      unsigned long long a = 0, b = 0;
      bool pa = content_length(f->first_length, &a), pb = content_length(value, &b);
      if (!pa || !pb || a != b) f->lengths_differ = true;
    }
  } else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
    if (f->n_te++ == 0) snprintf(f->te, sizeof f->te, "%s", value);
    if (!token_is(value, "chunked") || f->n_te > 1) f->te_not_chunked = true;
  }
  return MHD_YES;
}

/* An answer that needs no body (everything but ACT_DECIDE), once the body is read. */
static enum MHD_Result answer_action(req_ctx *ctx) {
  switch (ctx->act) {
  case ACT_HANDLER:
    return ctx->entry->handler(ctx);
  case ACT_GET_ONLY: {
    const char *const h[] = {"Allow", "GET", NULL};
    return send_detail(ctx, 405, "Method Not Allowed", 18, h);
  }
  case ACT_POST_ONLY: {
    const char *const h[] = {"Allow", "POST", NULL};
    return send_detail(ctx, 405, "Method Not Allowed", 18, h);
  }
  case ACT_UNAUTHORIZED:
    return send_detail_s(ctx, 401, "invalid or missing bearer token");
  case ACT_DRAINING:
    return refuse(ctx, REFUSE_DRAINING);
  case ACT_DECIDE:   /* decide() */
  case ACT_REDIRECT: /* redirect(), which needs the URL */
  case ACT_NOT_FOUND:
  default:
    return send_detail(ctx, 404, "Not Found", 9, NULL);
  }
}

static enum MHD_Result redirect(req_ctx *ctx, const char *url) {
  const char *host = MHD_lookup_connection_value(ctx->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
  strbuf loc, empty;
  sb_init(&loc);
  sb_init(&empty);
  sb_printf(&loc, "http://%s%.*s", host ? host : "localhost", (int)(strlen(url) - 1), url);
  const char *const h[] = {"Location", sb_cstr(&loc), NULL};
  enum MHD_Result r = send_body(ctx, 307, "text/plain; charset=utf-8", &empty, h);
  sb_free(&loc);
  return r;
}

/* The route table: every path the server answers, in /openapi.json's order (the test
 * serve/routes checks the two against each other). A GET route answers HEAD too. */

static const route_entry ROUTES[] = {
    {{"GET", "/health", false, false, false}, health, ROUTE_OTHER},
    {{"GET", "/ready", false, false, false}, ready, ROUTE_OTHER},
    {{"GET", "/metrics", false, true, false}, metrics, ROUTE_OTHER},
    {{"POST", "/v1/systemone", true, true, false}, decide, ROUTE_ONE},
    {{"POST", "/v1/systemone/batch", true, true, false}, decide, ROUTE_BATCH},
    /* as Laya's: no API description on a server with a key (it could not be authenticated) */
    {{"GET", "/openapi.json", false, false, true}, openapi, ROUTE_OTHER},
    {{"GET", "/docs", false, false, true}, docs, ROUTE_OTHER},
};
enum { N_ROUTES = sizeof ROUTES / sizeof *ROUTES };

const serve_http_route *serve_http_route_at(size_t i) { return i < N_ROUTES ? &ROUTES[i].info : NULL; }

/* The action for a request head (method, path, auth and drain state), from the route table. */
static action route_of(serve_server *srv, struct MHD_Connection *c, const char *url, const char *method,
                       req_ctx *ctx) {
  /* LAYA_ROOT_PATH as Starlette reads FastAPI's root_path: a path under the prefix is routed
   * without it, any other path as it is (so both /laya/health and /health answer; /laya alone
   * and /layahealth do not) */
  bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
  bool post = !strcmp(method, "POST");
  ctx->route = ROUTE_OTHER;
  ctx->route_name = "other";
  ctx->entry = NULL;
  const char *root = srv->cfg->root_path;
  size_t rn = root ? strlen(root) : 0;
  if (rn && !strncmp(url, root, rn)) {
    if (url[rn] == 0) return ACT_NOT_FOUND;
    if (url[rn] == '/') url += rn;
  }
  size_t un = strlen(url);
  for (size_t i = 0; i < N_ROUTES; i++) {
    const route_entry *r = &ROUTES[i];
    if (r->info.keyless_only && srv->cfg->api_key) continue;
    size_t pn = strlen(r->info.path);
    /* Starlette's redirect_slashes: a known path with a trailing slash answers 307 to it */
    if (un == pn + 1 && url[pn] == '/' && !strncmp(url, r->info.path, pn)) return ACT_REDIRECT;
    if (strcmp(url, r->info.path)) continue;
    ctx->route_name = r->info.path;
    bool is_get = !strcmp(r->info.method, "GET");
    if (is_get ? !get : !post) return is_get ? ACT_GET_ONLY : ACT_POST_ONLY;
    if (r->info.needs_key && !authorized(srv, c)) return ACT_UNAUTHORIZED;
    ctx->entry = r;
    if (!r->info.needs_model) return ACT_HANDLER;
    if (atomic_load(&srv->draining)) return ACT_DRAINING;
    ctx->route = r->kind;
    return ACT_DECIDE;
  }
  return ACT_NOT_FOUND;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls) {
  (void)version;
  serve_server *srv = cls;
  req_ctx *ctx = *con_cls;
  if (!ctx) {
    ctx = calloc(1, sizeof *ctx);
    if (!ctx) return MHD_NO;
    ctx->srv = srv;
    ctx->conn = c;
    ctx->started = serve_now();
    ctx->fd = conn_fd(c);
    sb_init(&ctx->body);
    *con_cls = ctx;
    serve_request_id(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Request-Id"), ctx->request_id);
    snprintf(ctx->method, sizeof ctx->method, "%s", method);
    ctx->path = strndup(url, 2048);
    const union MHD_ConnectionInfo *si = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    ctx->cc = si ? si->socket_context : NULL;
    if (ctx->cc) {
      pthread_mutex_lock(&srv->reading_mu);
      ctx->cc->in_request = true;
      pthread_mutex_unlock(&srv->reading_mu);
    }
    ctx->act = route_of(srv, c, url, method, ctx);
    /* framing a proxy in front could read differently (request smuggling): refused, and the
     * connection closed, since the rest of its stream has no agreed framing */
    framing f;
    memset(&f, 0, sizeof f);
    MHD_get_connection_values(c, MHD_HEADER_KIND, framing_header, &f);
    if (f.n_te && f.te_not_chunked) {
      ctx->route = ROUTE_OTHER;
      strbuf m;
      sb_init(&m);
      sb_puts(&m, "Transfer-Encoding ");
      py_repr_str(&m, f.te, strlen(f.te));
      sb_puts(&m, " is not supported; send the body with Content-Length or Transfer-Encoding: chunked");
      enum MHD_Result r = send_closing(ctx, 501, sb_cstr(&m));
      sb_free(&m);
      return r;
    }
    if (f.n_te && f.n_length) {
      ctx->route = ROUTE_OTHER;
      return send_closing(ctx, 400, "request has both Content-Length and Transfer-Encoding; send one");
    }
    if (f.lengths_differ) {
      ctx->route = ROUTE_OTHER;
      return send_closing(ctx, 400, "request has Content-Length headers that disagree");
    }
    unsigned long long n;
    if (f.n_length && content_length(f.first_length, &n) && n > SERVE_MAX_BODY_BYTES) {
      /* announced too large: answered before the body (which is never read), so the connection
       * closes after it */
      ctx->route = ROUTE_OTHER;
      if (ctx->act == ACT_DECIDE) return send_detail_s(ctx, 413, "request body too large");
      if (ctx->act == ACT_REDIRECT) return redirect(ctx, url);
      return answer_action(ctx);
    }
    reading_add(ctx);
    return MHD_YES;
  }

  if (*upload_data_size) {
    size_t got = *upload_data_size;
    *upload_data_size = 0;
    if (ctx->status) return MHD_YES; /* answered before its body (framing): dropped */
    /* a body past its deadline is answered 408 now (as the watchdog does), and the rest of it
     * is read and dropped */
    if (serve_now() - ctx->started > srv->cfg->body_read_timeout) {
      pthread_mutex_lock(&srv->reading_mu);
      if (!ctx->expired) expire_locked(ctx);
      pthread_mutex_unlock(&srv->reading_mu);
      drop_body(ctx);
      return MHD_YES;
    }
    /* a refused request's body is read and dropped (so its answer keeps the connection); a
     * decision body is buffered up to 2 MiB, and dropped past it (413 at its end), or when the
     * bodies held in memory reach LAYA_SERVE_MAX_BUFFERED_MB (503 at its end) */
    if (ctx->act == ACT_DECIDE && !ctx->too_large && !ctx->over_budget) {
      if (ctx->body.len + got > SERVE_MAX_BODY_BYTES) {
        ctx->too_large = true;
        drop_body(ctx);
      } else if (atomic_fetch_add(&srv->buffered, (long long)got) + (long long)got > srv->cfg->max_buffered_bytes) {
        atomic_fetch_sub(&srv->buffered, (long long)got);
        ctx->over_budget = true;
        drop_body(ctx);
      } else {
        ctx->held += (long long)got;
        sb_append(&ctx->body, upload_data, got);
        if (ctx->body.oom) {
          ctx->over_budget = true;
          drop_body(ctx);
        }
      }
    }
    return MHD_YES;
  }

  if (ctx->job) {
    if (!atomic_load(&ctx->job_done)) return MHD_YES;
    return answer_job(ctx);
  }
  if (ctx->status) return MHD_YES; /* already answered */
  /* the body is complete */
  if (reading_done(ctx)) return MHD_NO;
  if (serve_now() - ctx->started > srv->cfg->body_read_timeout) ctx->timed_out = true;
  if (ctx->act == ACT_DECIDE) return ctx->entry->handler(ctx);
  if (ctx->act == ACT_REDIRECT) return redirect(ctx, url);
  return answer_action(ctx);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  (void)toe;
  serve_server *srv = cls;
  req_ctx *ctx = *con_cls;
  if (!ctx) return;
  /* after this the watchdog no longer sees ctx, and ctx->expired is settled */
  pthread_mutex_lock(&srv->reading_mu);
  reading_remove_locked(ctx);
  waiting_remove_locked(ctx);
  if (ctx->cc) {
    ctx->cc->in_request = false;
    ctx->cc->since = serve_now();
  }
  pthread_mutex_unlock(&srv->reading_mu);
  release_admission(ctx);
  double took = serve_now() - ctx->started;
  int status = ctx->expired ? 408 : ctx->status ? ctx->status : 499;
  if (!ctx->expired)
    serve_metrics_request(srv->metrics, ctx->route_name ? ctx->route_name : "other", status, took);
  if (serve_log_enabled(SERVE_LOG_INFO)) {
    char addr[INET6_ADDRSTRLEN + 8] = "";
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci && ci->client_addr) {
      const struct sockaddr *sa = ci->client_addr;
      if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, addr, sizeof addr);
      else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, addr, sizeof addr);
    }
    serve_access a = {ctx->request_id, ctx->method, ctx->path ? ctx->path : "", status, took, ctx->bytes,
                      ctx->job && ctx->job->model[0] ? ctx->job->model : NULL, addr[0] ? addr : NULL};
    serve_log_access(&a);
  }
  serve_job_free(ctx->job);
  drop_body(ctx);
  free(ctx->path);
  free(ctx);
  *con_cls = NULL;
}

/* libmicrohttpd's own messages, through the logger (they went to stderr unprefixed). */
static void mhd_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  char buf[512];
  vsnprintf(buf, sizeof buf, fmt, ap);
  size_t n = strlen(buf);
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) buf[--n] = 0;
  serve_log(SERVE_LOG_WARNING, "libmicrohttpd: %s", buf);
}

static int open_listener(const serve_config *cfg, char *msg, size_t msg_size, int *port_out) {
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  char port[16];
  snprintf(port, sizeof port, "%d", cfg->port);
  int gai = getaddrinfo(cfg->host && *cfg->host ? cfg->host : NULL, port, &hints, &res);
  if (gai != 0) {
    snprintf(msg, msg_size, "cannot resolve LAYA_HOST '%s': %s", cfg->host, gai_strerror(gai));
    return -1;
  }
  int fd = -1;
  for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 1024) == 0) break;
    snprintf(msg, msg_size, "cannot listen on %s:%d: %s", cfg->host, cfg->port, strerror(errno));
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) return -1;
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  getsockname(fd, (struct sockaddr *)&ss, &sl);
  *port_out = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                             : ((struct sockaddr_in *)&ss)->sin_port);
  return fd;
}

serve_server *serve_server_start(const serve_config *cfg, serve_models *models,
                                 const serve_engine *eng, char *msg, size_t msg_size) {
  serve_server *srv = calloc(1, sizeof *srv);
  if (!srv) {
    snprintf(msg, msg_size, "out of memory");
    return NULL;
  }
  srv->cfg = cfg;
  srv->models = models;
  srv->eng = eng;
  srv->metrics = serve_metrics_new();
  if (cfg->api_key) {
    size_t n = strlen(cfg->api_key);
    srv->expected_auth = malloc(n + 8);
    memcpy(srv->expected_auth, "Bearer ", 7);
    memcpy(srv->expected_auth + 7, cfg->api_key, n + 1);
    srv->expected_len = n + 7;
  }
  pthread_mutex_init(&srv->reading_mu, NULL);
  srv->openapi = build_openapi(cfg);
  srv->sched = serve_sched_new(cfg, models, eng, srv->metrics);
  serve_sched_set_arriving(srv->sched, &srv->arriving);
  srv->listen_fd = open_listener(cfg, msg, msg_size, &srv->port);
  if (srv->listen_fd < 0) {
    serve_server_stop(srv);
    return NULL;
  }
  /* the file limit bounds the connections: raise it to the hard limit, and keep the connection
   * limit below it (the checkpoints, the listener and the engine need descriptors too) */
  struct rlimit rl;
  long fd_room = 1024;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    if (rl.rlim_cur != RLIM_INFINITY && (rl.rlim_max == RLIM_INFINITY || rl.rlim_cur < rl.rlim_max)) {
      rlim_t want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
      if (want > rl.rlim_cur) {
        struct rlimit nl = {want, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &nl) == 0) rl.rlim_cur = want;
      }
    }
    fd_room = rl.rlim_cur == RLIM_INFINITY ? 65536 : (long)rl.rlim_cur;
  }
  long max_conns = cfg->max_connections;
  if (max_conns > fd_room - 128) max_conns = fd_room - 128 > 16 ? fd_room - 128 : 16;
  if (max_conns < 4L * cfg->http_threads) max_conns = 4L * cfg->http_threads; /* split per thread */
  srv->max_connections = (int)max_conns;
  /* idle connections close after this at the latest (the watchdog's header deadline and the
   * body deadline's 408 come first) */
  double longest = cfg->body_read_timeout > cfg->header_timeout ? cfg->body_read_timeout : cfg->header_timeout;
  unsigned timeout = (unsigned)(longest + 0.999) + 2;
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                   MHD_USE_ERROR_LOG;
  srv->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, srv,                          //
                            MHD_OPTION_EXTERNAL_LOGGER, mhd_log, srv, /* first: covers the rest */
                            MHD_OPTION_LISTEN_SOCKET, srv->listen_fd,                        //
                            MHD_OPTION_THREAD_POOL_SIZE, (unsigned)cfg->http_threads,        //
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout,                          //
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)max_conns,                //
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg->max_connections_per_ip,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(128 * 1024),        //
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,                  //
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,                //
                            MHD_OPTION_END);
  if (!srv->d) {
    snprintf(msg, msg_size, "libmicrohttpd could not start on port %d", srv->port);
    serve_server_stop(srv);
    return NULL;
  }
  srv->watchdog_started = pthread_create(&srv->watchdog, NULL, watchdog, srv) == 0;
  return srv;
}

int serve_server_port(const serve_server *srv) { return srv->port; }

void serve_server_drain(serve_server *srv, double max_seconds) {
  atomic_store(&srv->draining, true);
  if (srv->d) {
    int fd = (int)MHD_quiesce_daemon(srv->d); /* stop accepting; in-flight requests go on */
    if (fd >= 0) {
      close(fd);
      srv->listen_fd = -1;
    }
  }
  double until = serve_now() + max_seconds;
  while (atomic_load(&srv->admitted) > 0 && serve_now() < until) usleep(5000);
  /* past the deadline: finish what is queued anyway, and give the answers a moment to leave */
  serve_sched_stop(srv->sched);
  until = serve_now() + 5.0;
  while (atomic_load(&srv->admitted) > 0 && serve_now() < until) usleep(5000);
  pthread_mutex_lock(&srv->reading_mu);
  unsigned long long skipped = srv->jobs_cancelled;
  pthread_mutex_unlock(&srv->reading_mu);
  serve_log(SERVE_LOG_INFO, "drained; %llu queued request%s skipped since start (client gone)", skipped,
            skipped == 1 ? "" : "s");
}

void serve_server_stop(serve_server *srv) {
  if (!srv) return;
  /* the scheduler's worker first: it answers every queued job and resumes its connection, so
   * no connection is still suspended when the daemon stops; the scheduler itself is freed only
   * after the daemon's threads, which read it (/metrics), are gone */
  if (srv->sched) serve_sched_stop(srv->sched);
  atomic_store(&srv->stopping, true);
  if (srv->watchdog_started) pthread_join(srv->watchdog, NULL);
  if (srv->d) MHD_stop_daemon(srv->d);
  serve_sched_free(srv->sched);
  if (srv->listen_fd >= 0 && srv->d == NULL) close(srv->listen_fd);
  serve_metrics_free(srv->metrics);
  pthread_mutex_destroy(&srv->reading_mu);
  free(srv->expected_auth);
  free(srv->openapi);
  free(srv);
}
