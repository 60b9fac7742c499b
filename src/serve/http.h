/* http.h: the laya-serve HTTP server (libmicrohttpd). */
#ifndef LAYA_SERVE_HTTP_H
#define LAYA_SERVE_HTTP_H

#include "serve/serve.h"

typedef struct serve_server serve_server;

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
