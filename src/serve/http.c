/* http.c: laya-serve's HTTP surface on libmicrohttpd.
 *
 * Life of a decision request (Laya's order): auth (401) -> admission (503 + Retry-After when
 * LAYA_MAX_CONCURRENT requests are already admitted; checked before any body byte is read) ->
 * Content-Length over 2 MiB (413) -> the body, capped at 2 MiB however it is framed (413) and
 * bounded in time (LAYA_BODY_READ_TIMEOUT) -> validation (validate.c) -> a job for the
 * scheduler. The HTTP thread prepares the job (the engine checks and tokenizes it) before queuing
 * it, and decodes its answer after its pass, so the inference thread only runs passes. The
 * connection is suspended while its job waits and runs, so a slow forward pass holds no HTTP
 * thread, and resumed by the inference thread when its pass is done. The admission slot is held
 * until the response is sent, or the connection dies.
 *
 * A body still incomplete at LAYA_BODY_READ_TIMEOUT gets Laya's 408 then and there, whether its
 * client went silent or keeps trickling: libmicrohttpd calls us only when bytes arrive and will
 * not queue a response before the request is complete, so a watchdog thread writes the 408 to
 * the socket itself and shuts the connection down (the rest of that body cannot be read as a next
 * request; uvicorn sends the same 408 and drops the socket at its keep-alive timeout).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "serve/http.h"

enum { ROUTE_ONE = 0, ROUTE_BATCH = 1, ROUTE_OTHER = 2 };

struct serve_server {
  const serve_config *cfg;
  serve_models *models;
  const serve_engine *eng;
  serve_sched *sched;
  serve_metrics *metrics;
  struct MHD_Daemon *d;
  int listen_fd;
  int port;
  atomic_int admitted; /* decision requests holding an admission slot */
  atomic_int arriving; /* admitted, not yet handed to the scheduler */
  atomic_bool draining;
  char *expected_auth; /* "Bearer <key>" */
  size_t expected_len;
  /* decision requests still reading their body, for the 408 watchdog */
  pthread_mutex_t reading_mu;
  struct req_ctx *reading;
  pthread_t watchdog;
  bool watchdog_started;
  atomic_bool stopping;
};

typedef struct req_ctx {
  serve_server *srv;
  struct MHD_Connection *conn;
  int route;
  const char *route_name;
  bool admitted, arriving, too_large, timed_out;
  /* on srv->reading while the body is being read (guarded by srv->reading_mu) */
  struct req_ctx *read_prev, *read_next;
  bool on_reading, expired; /* expired: answered 408 and counted by the watchdog */
  int fd;
  strbuf body;
  double started;
  int status;
  serve_job *job;
  atomic_bool job_done;
} req_ctx;

/* ---- responses ---- */

static enum MHD_Result send_body(req_ctx *ctx, int status, const char *ctype, strbuf *body,
                                 const char *const *headers) {
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
  for (int i = 0; headers && headers[i]; i += 2) MHD_add_response_header(r, headers[i], headers[i + 1]);
  if (atomic_load(&ctx->srv->draining)) MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
  enum MHD_Result rc = MHD_queue_response(ctx->conn, (unsigned)status, r);
  if (rc == MHD_YES) ctx->status = status;
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
    strbuf raw;
    sb_init(&raw);
    sb_puts(&raw, "{\"status\": \"ok\", ");
    serve_models_health(srv->models, &raw);
    sb_putc(&raw, '}');
    arena a;
    arena_init(&a, 4096);
    laya_error e;
    json_value *v = json_parse(raw.data, raw.len, &a, NULL, &e);
    json_dump_opts o = {",", ":", false, -1};
    if (v)
      json_dump(&sb, v, &o);
    else
      sb_append(&sb, raw.data, raw.len);
    arena_free(&a);
    sb_free(&raw);
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
    sb_puts(&sb, "{\"status\":\"loading\"}");
  } else {
    sb_puts(&sb, "{\"status\":\"ready\",\"loaded\":");
    serve_models_loaded(srv->models, &sb);
    sb_putc(&sb, '}');
  }
  enum MHD_Result rc = send_json(ctx, status, &sb, NULL);
  sb_free(&sb);
  return rc;
}

static enum MHD_Result metrics(req_ctx *ctx) {
  serve_server *srv = ctx->srv;
  if (!authorized(srv, ctx->conn)) return send_detail_s(ctx, 401, "invalid or missing bearer token");
  strbuf sb;
  sb_init(&sb);
  serve_metrics_render(srv->metrics, serve_sched_depth(srv->sched), &sb);
  serve_sched_render(srv->sched, &sb);
  sb_printf(&sb, "# HELP laya_admitted_requests Decision requests holding an admission slot.\n"
                 "# TYPE laya_admitted_requests gauge\nlaya_admitted_requests %d\n"
                 "# HELP laya_admission_limit LAYA_MAX_CONCURRENT.\n"
                 "# TYPE laya_admission_limit gauge\nlaya_admission_limit %d\n",
            atomic_load(&srv->admitted), srv->cfg->max_concurrent);
  enum MHD_Result rc = send_body(ctx, 200, "text/plain; version=0.0.4; charset=utf-8", &sb, NULL);
  sb_free(&sb);
  return rc;
}

/* ---- decision routes ---- */

static void release_arriving(req_ctx *ctx) {
  if (ctx->arriving) {
    ctx->arriving = false;
    atomic_fetch_sub(&ctx->srv->arriving, 1);
  }
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

static void reading_add(req_ctx *ctx) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(ctx->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!ci) return;
  ctx->fd = ci->connect_fd;
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

/* Answer 408 on the socket, end our side of it, and free the admission slot now, as Laya does.
 * The client reads the 408 and the end of the stream; what it still sends is read and dropped
 * until it closes (closing with its bytes unread would reset the connection, and a reset can
 * destroy the 408 before the client reads it). Called with reading_mu held. */
static void expire_locked(req_ctx *ctx) {
  static const char body[] = "{\"detail\":\"request body was not received in time\"}";
  serve_server *srv = ctx->srv;
  /* the slot first (Laya's admission context unwinds before the 408 is sent): a client that
   * reads the 408 and asks again at once must find it free */
  ctx->expired = true;
  reading_remove_locked(ctx);
  release_arriving(ctx);
  if (ctx->admitted) {
    ctx->admitted = false;
    atomic_fetch_sub(&srv->admitted, 1);
    serve_metrics_inflight(srv->metrics, -1);
  }
  serve_metrics_request(srv->metrics, ctx->route_name, 408, serve_now() - ctx->started);
  char date[64], head[256];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  int n = snprintf(head, sizeof head,
                   "HTTP/1.1 408 Request Timeout\r\nDate: %s\r\nContent-Type: application/json\r\n"
                   "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                   date, sizeof body - 1);
  (void)!send(ctx->fd, head, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)!send(ctx->fd, body, sizeof body - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  shutdown(ctx->fd, SHUT_WR);
}

static void *watchdog(void *arg) {
  serve_server *srv = arg;
  while (!atomic_load(&srv->stopping)) {
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    double now = serve_now();
    pthread_mutex_lock(&srv->reading_mu);
    for (req_ctx *c = srv->reading, *next; c; c = next) {
      next = c->read_next;
      if (now - c->started > srv->cfg->body_read_timeout) expire_locked(c);
    }
    pthread_mutex_unlock(&srv->reading_mu);
  }
  return NULL;
}

static void job_done(serve_job *job, void *arg) {
  (void)job;
  req_ctx *ctx = arg;
  atomic_store(&ctx->job_done, true);
  MHD_resume_connection(ctx->conn);
}

/* On the request's own thread: decode its answer (if its pass left that to us), then send it. */
static enum MHD_Result answer_job(req_ctx *ctx) {
  serve_job *job = ctx->job;
  serve_job_finish(job);
  serve_metrics_tokens(ctx->srv->metrics, job->input_tokens);
  if (job->status == 0) {
    char ms[64], timing[80];
    snprintf(ms, sizeof ms, "%.2f", job->infer_ms);
    snprintf(timing, sizeof timing, "inference;dur=%s", ms);
    const char *const headers[] = {"Server-Timing", timing, "X-Inference-Time-Ms", ms, NULL};
    return send_json(ctx, 200, &job->body, headers);
  }
  if (job->status == 422) return send_detail(ctx, 422, job->err.message, strlen(job->err.message), NULL);
  return send_detail_s(ctx, 500, "inference failed");
}

static enum MHD_Result decide(req_ctx *ctx) {
  serve_server *srv = ctx->srv;
  if (ctx->too_large) {
    release_arriving(ctx);
    return send_detail_s(ctx, 413, "request body too large");
  }
  if (ctx->timed_out) {
    release_arriving(ctx);
    return send_detail_s(ctx, 408, "request body was not received in time");
  }
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
  sb_free(&ctx->body);
  if (rc != 0) {
    release_arriving(ctx);
    enum MHD_Result r = send_detail(ctx, rej.status, sb_cstr(&rej.detail), rej.detail.len, NULL);
    serve_reject_free(&rej);
    return r;
  }
  serve_reject_free(&rej);
  ctx->job = job;
  job->done = job_done;
  job->done_arg = ctx;
  /* checked and tokenized here, on this thread, while the inference thread runs passes; a
   * request that fails here is answered at once (the scheduler never sees it) */
  if (serve_sched_prepare(srv->sched, job) != 0) {
    release_arriving(ctx);
    return answer_job(ctx);
  }
  /* suspend before the job can finish: the worker's resume must find it suspended */
  MHD_suspend_connection(ctx->conn);
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
    sb_init(&ctx->body);
    *con_cls = ctx;
    bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    bool post = !strcmp(method, "POST");
    ctx->route = ROUTE_OTHER;
    ctx->route_name = "other";
    if (!strcmp(url, "/health")) {
      ctx->route_name = "/health";
      if (get) return health(ctx);
    } else if (!strcmp(url, "/ready")) {
      ctx->route_name = "/ready";
      if (get) return ready(ctx);
    } else if (!strcmp(url, "/metrics")) {
      ctx->route_name = "/metrics";
      if (get) return metrics(ctx);
    } else if (!strcmp(url, "/v1/systemone") || !strcmp(url, "/v1/systemone/batch")) {
      ctx->route = url[13] ? ROUTE_BATCH : ROUTE_ONE;
      ctx->route_name = ctx->route == ROUTE_ONE ? "/v1/systemone" : "/v1/systemone/batch";
      /* a request answered here never has its body read (ROUTE_OTHER drops it) */
      int route = ctx->route;
      ctx->route = ROUTE_OTHER;
      if (!post) {
        const char *const h[] = {"Allow", "POST", NULL};
        return send_detail(ctx, 405, "Method Not Allowed", 18, h);
      }
      if (!authorized(srv, c)) return send_detail_s(ctx, 401, "invalid or missing bearer token");
      if (atomic_load(&srv->draining)) {
        const char *const h[] = {"Retry-After", "1", NULL};
        return send_detail(ctx, 503, "server shutting down", 20, h);
      }
      int before = atomic_fetch_add(&srv->admitted, 1);
      if (before >= srv->cfg->max_concurrent) {
        atomic_fetch_sub(&srv->admitted, 1);
        const char *const h[] = {"Retry-After", "1", NULL};
        return send_detail(ctx, 503, "server busy, try again later", 28, h);
      }
      ctx->route = route;
      ctx->admitted = true;
      ctx->arriving = true;
      atomic_fetch_add(&srv->arriving, 1);
      serve_metrics_inflight(srv->metrics, 1);
      const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
      unsigned long long n;
      if (cl && *cl && content_length(cl, &n) && n > SERVE_MAX_BODY_BYTES) {
        release_arriving(ctx);
        ctx->route = ROUTE_OTHER;
        return send_detail_s(ctx, 413, "request body too large");
      }
      reading_add(ctx);
      return MHD_YES;
    } else {
      /* Starlette's redirect_slashes: a known path with a trailing slash answers 307 to it */
      size_t n = strlen(url);
      static const char *const known[] = {"/health/", "/ready/", "/metrics/", "/v1/systemone/",
                                          "/v1/systemone/batch/"};
      for (size_t i = 0; n > 1 && i < sizeof known / sizeof *known; i++) {
        if (strcmp(url, known[i]) != 0) continue;
        const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
        strbuf loc, empty;
        sb_init(&loc);
        sb_init(&empty);
        sb_printf(&loc, "http://%s%.*s", host ? host : "localhost", (int)(n - 1), url);
        const char *const h[] = {"Location", sb_cstr(&loc), NULL};
        enum MHD_Result r = send_body(ctx, 307, "text/plain; charset=utf-8", &empty, h);
        sb_free(&loc);
        return r;
      }
      return send_detail(ctx, 404, "Not Found", 9, NULL);
    }
    const char *const h[] = {"Allow", "GET", NULL};
    return send_detail(ctx, 405, "Method Not Allowed", 18, h);
  }

  if (ctx->route == ROUTE_OTHER) { /* body of a refused request: drop it */
    *upload_data_size = 0;
    return MHD_YES;
  }

  if (*upload_data_size) {
    if (!ctx->too_large) {
      if (ctx->body.len + *upload_data_size > SERVE_MAX_BODY_BYTES) {
        ctx->too_large = true;
        sb_free(&ctx->body);
      } else {
        sb_append(&ctx->body, upload_data, *upload_data_size);
        if (ctx->body.oom) ctx->too_large = true;
      }
    }
    *upload_data_size = 0;
    /* an oversized body is read and dropped (never buffered) and answered 413 at its end; a
     * body past its deadline is answered 408 now (as the watchdog does), and the rest of it
     * is read and dropped */
    if (serve_now() - ctx->started > srv->cfg->body_read_timeout) {
      pthread_mutex_lock(&srv->reading_mu);
      if (!ctx->expired) expire_locked(ctx);
      pthread_mutex_unlock(&srv->reading_mu);
    }
    return MHD_YES;
  }

  if (!ctx->job && !ctx->status) { /* the body is complete */
    if (reading_done(ctx)) return MHD_NO;
    if (serve_now() - ctx->started > srv->cfg->body_read_timeout) ctx->timed_out = true;
  }
  if (ctx->job) {
    if (!atomic_load(&ctx->job_done)) return MHD_YES;
    return answer_job(ctx);
  }
  if (ctx->status) return MHD_YES; /* already answered */
  return decide(ctx);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  (void)c;
  (void)toe;
  serve_server *srv = cls;
  req_ctx *ctx = *con_cls;
  if (!ctx) return;
  reading_done(ctx); /* after this the watchdog no longer sees ctx, and ctx->expired is settled */
  release_arriving(ctx);
  if (ctx->admitted) {
    atomic_fetch_sub(&srv->admitted, 1);
    serve_metrics_inflight(srv->metrics, -1);
  }
  if (!ctx->expired)
    serve_metrics_request(srv->metrics, ctx->route_name ? ctx->route_name : "other",
                          ctx->status ? ctx->status : 499, serve_now() - ctx->started);
  serve_job_free(ctx->job);
  sb_free(&ctx->body);
  free(ctx);
  *con_cls = NULL;
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
  srv->sched = serve_sched_new(cfg, models, eng, srv->metrics);
  serve_sched_set_arriving(srv->sched, &srv->arriving);
  srv->listen_fd = open_listener(cfg, msg, msg_size, &srv->port);
  if (srv->listen_fd < 0) {
    serve_server_stop(srv);
    return NULL;
  }
  /* idle connections close after this; the body deadline's 408 comes first (the watchdog) */
  unsigned timeout = (unsigned)(cfg->body_read_timeout + 0.999) + 2;
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                   MHD_USE_ERROR_LOG;
  srv->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, srv,                          //
                            MHD_OPTION_LISTEN_SOCKET, srv->listen_fd,                        //
                            MHD_OPTION_THREAD_POOL_SIZE, (unsigned)cfg->http_threads,        //
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout,                          //
                            MHD_OPTION_CONNECTION_LIMIT, 8192u,                              //
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(128 * 1024),        //
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,                  //
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
  free(srv);
}
