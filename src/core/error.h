/* error.h: filling laya_error values. Errors are values; nothing in the library exits. */
#ifndef LAYA_CORE_ERROR_H
#define LAYA_CORE_ERROR_H

#include "laya.h"

#if defined(__GNUC__)
#define LAYA_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define LAYA_PRINTF(a, b)
/* A library message (laya_set_message_handler): "laya: <text>" on stderr by default. */
void laya_message(const char *fmt, ...) LAYA_PRINTF(1, 2);

#endif

/* Set err (if non-NULL) and return code. kind may be NULL (no Python counterpart). The error
 * records where it was made (err->file, err->line: the caller's file and line). */
int laya_err_at(const char *file, int line, laya_error *err, int code, const char *kind, const char *fmt, ...)
    LAYA_PRINTF(6, 7);
#define laya_err(err, code, kind, ...) laya_err_at(__FILE__, __LINE__, (err), (code), (kind), __VA_ARGS__)
/* Python-raised errors: the message must equal Python's str(exception). */
#define laya_value_error(err, ...) laya_err((err), LAYA_ERR_VALUE, "ValueError", __VA_ARGS__)
#define laya_type_error(err, ...) laya_err((err), LAYA_ERR_TYPE, "TypeError", __VA_ARGS__)
void laya_err_clear(laya_error *err);
/* Prefix an existing message: "<prefix>: <old message>" (for adding a file name or context). */
void laya_err_prefix(laya_error *err, const char *fmt, ...) LAYA_PRINTF(2, 3);

/* A library message (laya_set_message_handler): "laya: <text>" on stderr by default. */
void laya_message(const char *fmt, ...) LAYA_PRINTF(1, 2);

#endif
