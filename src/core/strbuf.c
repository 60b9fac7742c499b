#include "core/strbuf.h"
#include "core/utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sb_init(strbuf *sb) { memset(sb, 0, sizeof *sb); }

void sb_free(strbuf *sb) {
  free(sb->data);
  memset(sb, 0, sizeof *sb);
}

void sb_reset(strbuf *sb) {
  sb->len = 0;
  sb->oom = false;
  if (sb->data) sb->data[0] = 0;
}

bool sb_grow(strbuf *sb, size_t extra) {
  if (sb->oom) return false;
  size_t need = sb->len + extra + 1;
  if (need <= sb->cap) return true;
  size_t cap = sb->cap ? sb->cap : 64;
  while (cap < need) cap *= 2;
  char *p = realloc(sb->data, cap);
  if (!p) {
    sb->oom = true;
    return false;
  }
  sb->data = p;
  sb->cap = cap;
  p[sb->len] = 0; /* keep the promise of sb_cstr even on a fresh buffer */
  return true;
}

void sb_put_cp(strbuf *sb, uint32_t cp) {
  char o[4];
  sb_append(sb, o, (size_t)utf8_put(o, cp));
}

void sb_printf(strbuf *sb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char tmp[256];
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof tmp) {
    sb_append(sb, tmp, (size_t)n);
    return;
  }
  if (!sb_reserve(sb, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  sb->len += (size_t)n;
}

const char *sb_cstr(strbuf *sb) {
  if (!sb->data) sb_reserve(sb, 0);
  return sb->data ? sb->data : "";
}

char *sb_steal(strbuf *sb) {
  sb_cstr(sb);
  char *p = sb->data;
  memset(sb, 0, sizeof *sb);
  return p;
}
