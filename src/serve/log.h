/* log.h: the one logger of laya-serve and laya-mcp.
 *
 * Every line either program writes to stderr goes through here: startup and drain lines, config
 * warnings, checkpoint load warnings, libmicrohttpd's messages, the library's own messages
 * (laya_set_message_handler) and one access line per HTTP request. LAYA_LOG_LEVEL filters them by
 * uvicorn's levels (trace < debug < info < warning < error < critical; access lines are info, as
 * uvicorn's access log); LAYA_LOG_FORMAT picks plain text lines ("laya-serve: ...", the default) or
 * JSON lines (one object per line: time, level, logger, message, and the access fields). */
#ifndef LAYA_SERVE_LOG_H
#define LAYA_SERVE_LOG_H

#include <stdbool.h>
#include <stddef.h>

#include "core/error.h"

enum {
  SERVE_LOG_TRACE = 5,
  SERVE_LOG_DEBUG = 10,
  SERVE_LOG_INFO = 20,
  SERVE_LOG_WARNING = 30,
  SERVE_LOG_ERROR = 40,
  SERVE_LOG_CRITICAL = 50,
};

/* The program name lines carry ("laya-serve", "laya-mcp"); call first. */
void serve_log_program(const char *name);
/* Level (uvicorn's name, lower case) and format ("text" or "json"); until this is called,
 * info and up are written as text. Also routes the library's messages here. */
void serve_log_setup(const char *level, const char *format);
/* The numeric level of a uvicorn level name, or -1. */
int serve_log_level_of(const char *name);
bool serve_log_enabled(int level);
void serve_log(int level, const char *fmt, ...) LAYA_PRINTF(2, 3);

/* One HTTP request, once answered (or abandoned). */
typedef struct serve_access {
  const char *request_id;
  const char *method;
  const char *path;
  int status;
  double seconds;
  unsigned long long bytes; /* response body bytes */
  const char *model;        /* the checkpoint that answered, or NULL */
  const char *client;       /* peer address, or NULL */
} serve_access;
void serve_log_access(const serve_access *a);

/* X-Request-Id: the client's value when it is 1 to 128 characters of [A-Za-z0-9._:-], else a
 * fresh 32-hex-digit id. out must hold SERVE_REQUEST_ID_MAX + 1 bytes. */
#define SERVE_REQUEST_ID_MAX 128
void serve_request_id(const char *client_value, char *out);

#endif
