#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int laya_err(laya_error *err, int code, const char *kind, const char *fmt, ...) {
  if (!err) return code;
  err->code = code;
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
