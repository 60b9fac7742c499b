/* http.h: the laya-serve HTTP server (libmicrohttpd). */
#ifndef LAYA_SERVE_HTTP_H
#define LAYA_SERVE_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "serve/serve.h"

typedef struct serve_server serve_server;

/* One route of the server's table (http.c's ROUTES, which dispatches every request). */
typedef struct serve_http_route {
  const char *method; /* "GET" (answers HEAD too) or "POST" */
  const char *path;   /* under LAYA_ROOT_PATH too */
  bool needs_model;   /* answered by a checkpoint: the body is buffered, admitted and run as a job */
  bool needs_key;     /* 401 without LAYA_API_KEY's bearer (when one is set) */
  bool keyless_only;  /* not served on a server with LAYA_API_KEY (404 there), as Laya */
} serve_http_route;
/* The i-th route of the table, in /openapi.json's order; NULL past the last. */
const serve_http_route *serve_http_route_at(size_t i);

/* Bind LAYA_HOST:LAYA_PORT (port 0 = any free port) and start answering. NULL with msg. */
serve_server *serve_server_start(const serve_config *cfg, serve_models *models,
                                 const serve_engine *eng, char *msg, size_t msg_size);
/* The port actually bound. */
int serve_server_port(const serve_server *srv);
/* Stop accepting connections, refuse new requests on open ones, and wait (at most max_seconds)
 * until every admitted request has been answered. */
void serve_server_drain(serve_server *srv, double max_seconds);
/* Finish queued work, close every connection, free everything. */
void serve_server_stop(serve_server *srv);

#endif
