#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"

void laya_assert_fail(const char *cond, const char *file, int line, const char *func) {
  fprintf(stderr, "laya.c: invariant failed: %s (%s:%d, %s)\n", cond, file, line, func);
  abort();
}

int laya_err_at(const char *file, int line, laya_error *err, int code, const char *kind, const char *fmt, ...) {
  if (!err) return code;
  err->code = code;
  err->file = file;
  err->line = line;
  snprintf(err->kind, sizeof err->kind, "%s", kind ? kind : "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  return code;
}

void laya_err_clear(laya_error *err) {
  if (!err) return;
  err->code = LAYA_OK;
  err->kind[0] = 0;
  err->message[0] = 0;
  err->file = NULL;
  err->line = 0;
}

const char *laya_error_origin(const laya_error *err, char *buf, size_t size) {
  if (!buf || !size) return buf;
  buf[0] = 0;
  if (!err || !err->file) return buf;
  /* the path from the repository's src/ on (__FILE__ is the path the compiler was given) */
  const char *f = err->file, *p = f;
  for (const char *q = f; (q = strstr(q, "src/")) != NULL; q++)
    if (q == f || q[-1] == '/') p = q;
  snprintf(buf, size, "%s:%d", p, err->line);
  return buf;
}

void laya_err_prefix(laya_error *err, const char *fmt, ...) {
  if (!err) return;
  char head[512], old[sizeof err->message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(head, sizeof head, fmt, ap);
  va_end(ap);
  memcpy(old, err->message, sizeof old);
  size_t h = strlen(head);
  if (h > sizeof err->message - 3) h = sizeof err->message - 3;
  memcpy(err->message, head, h);
  memcpy(err->message + h, ": ", 2);
  size_t room = sizeof err->message - h - 3, o = strnlen(old, room);
  memcpy(err->message + h + 2, old, o);
  err->message[h + 2 + o] = 0;
}

static laya_message_fn message_fn;
static void *message_user;

void laya_set_message_handler(laya_message_fn fn, void *user) {
  message_user = user;
  message_fn = fn;
}

void laya_message(const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (message_fn)
    message_fn(message_user, buf);
  else
    fprintf(stderr, "laya: %s\n", buf);
}
