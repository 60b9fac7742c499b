/* strbuf.h: a growable byte string. On allocation failure the buffer is marked failed and
 * further appends are ignored; check sb.oom once at the end instead of after every append. */
#ifndef LAYA_CORE_STRBUF_H
#define LAYA_CORE_STRBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/error.h"

typedef struct strbuf {
  char *data; /* always NUL-terminated when len > 0 or after sb_cstr */
  size_t len, cap;
  bool oom;
} strbuf;

void sb_init(strbuf *sb);
void sb_free(strbuf *sb);
void sb_reset(strbuf *sb); /* keep capacity */
/* Room for extra more bytes and the NUL: the growing half out of line, the check inline (the
 * writers append a few bytes at a time, hundreds of times a request). */
bool sb_grow(strbuf *sb, size_t extra);
static inline bool sb_reserve(strbuf *sb, size_t extra) {
  if (!sb->oom && sb->len + extra + 1 <= sb->cap) return true;
  return sb_grow(sb, extra);
}
static inline void sb_append(strbuf *sb, const char *s, size_t n) {
  if (!sb_reserve(sb, n)) return;
  memcpy(sb->data + sb->len, s, n);
  sb->len += n;
  sb->data[sb->len] = 0;
}
static inline void sb_puts(strbuf *sb, const char *s) { sb_append(sb, s, strlen(s)); }
static inline void sb_putc(strbuf *sb, char c) {
  if (!sb_reserve(sb, 1)) return;
  sb->data[sb->len++] = c;
  sb->data[sb->len] = 0;
}
/* Append one code point as UTF-8. */
void sb_put_cp(strbuf *sb, uint32_t cp);
void sb_printf(strbuf *sb, const char *fmt, ...) LAYA_PRINTF(2, 3);
const char *sb_cstr(strbuf *sb);
/* Hand the buffer to the caller (malloc'd, NUL-terminated); sb is left empty. */
char *sb_steal(strbuf *sb);

#endif
