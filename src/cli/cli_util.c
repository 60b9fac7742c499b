/* cli_util.c: see cli_util.h. */
#include "cli/cli_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pystr.h"
#include "core/utf8.h"

char *cli_read_file(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f) return NULL;
  strbuf sb;
  sb_init(&sb);
  char buf[65536];
  size_t k;
  while ((k = fread(buf, 1, sizeof buf, f)) > 0) sb_append(&sb, buf, k);
  int bad = ferror(f);
  if (f != stdin) fclose(f);
  if (bad || sb.oom) {
    sb_free(&sb);
    errno = bad ? EIO : ENOMEM;
    return NULL;
  }
  *len = sb.len;
  char *out = sb_steal(&sb);
  if (!out) out = calloc(1, 1);
  return out;
}

/* Line boundaries of str.splitlines() (after universal-newline reading, \r\n is one). */
static size_t line_break(const char *s, size_t n, size_t i) {
  unsigned char c = (unsigned char)s[i];
  if (c == '\r') return (i + 1 < n && s[i + 1] == '\n') ? 2 : 1;
  if (c == '\n' || c == '\v' || c == '\f' || c == 0x1c || c == 0x1d || c == 0x1e) return 1;
  if (c == 0xC2 && i + 1 < n && (unsigned char)s[i + 1] == 0x85) return 2;
  if (c == 0xE2 && i + 2 < n && (unsigned char)s[i + 1] == 0x80 &&
      ((unsigned char)s[i + 2] == 0xA8 || (unsigned char)s[i + 2] == 0xA9))
    return 3;
  return 0;
}

size_t cli_split_lines(const char *text, size_t len, char ***lines) {
  size_t cap = 16, n = 0, start = 0, i = 0;
  char **v = malloc(cap * sizeof(char *));
  if (!v) return 0;
  while (i <= len) {
    size_t br = i < len ? line_break(text, len, i) : 1;
    if (!br) {
      i++;
      continue;
    }
    size_t a = 0, m = 0;
    py_strip(text + start, i - start, &a, &m);
    if (m) {
      if (n == cap) {
        cap *= 2;
        char **nv = realloc(v, cap * sizeof(char *));
        if (!nv) break;
        v = nv;
      }
      v[n] = malloc(m + 1);
      if (!v[n]) break;
      memcpy(v[n], text + start + a, m);
      v[n][m] = 0;
      n++;
    }
    i += br;
    start = i;
  }
  *lines = v;
  return n;
}

void cli_free_lines(char **lines, size_t n) {
  for (size_t i = 0; i < n; i++) free(lines[i]);
  free(lines);
}

char *cli_strip(const char *s) {
  size_t a = 0, m = 0;
  py_strip(s, strlen(s), &a, &m);
  char *o = malloc(m + 1);
  if (!o) return NULL;
  memcpy(o, s + a, m);
  o[m] = 0;
  return o;
}

size_t cli_utf8_prefix(const char *s, size_t n) {
  size_t i = 0, k = 0;
  while (s[i]) {
    if (((unsigned char)s[i] & 0xC0) != 0x80) {
      if (k == n) break;
      k++;
    }
    i++;
  }
  return i;
}

void cli_pad(strbuf *sb, const char *s, size_t width) {
  sb_puts(sb, s);
  for (size_t k = utf8_count(s); k < width; k++) sb_putc(sb, ' ');
}

void cli_dump(strbuf *sb, const json_value *v, int indent) {
  json_dump_opts o = {0};
  o.ensure_ascii = false;
  o.indent = indent;
  json_dump(sb, v, &o);
}

json_value *cli_parse(const char *text, size_t len, arena *a, laya_error *err) {
  return json_parse(text, len, a, NULL, err);
}

bool cli_parse_int(const char *s, long long *out) {
  size_t a = 0, m = 0;
  py_strip(s, strlen(s), &a, &m);
  if (!m) return false;
  char buf[64];
  size_t k = 0, i = a, end = a + m;
  if (s[i] == '+' || s[i] == '-') buf[k++] = s[i++];
  bool digit = false, prev_us = true;
  for (; i < end; i++) {
    char c = s[i];
    if (c == '_') {
      if (prev_us) return false;
      prev_us = true;
      continue;
    }
    if (c < '0' || c > '9' || k >= sizeof buf - 1) return false;
    buf[k++] = c;
    digit = true;
    prev_us = false;
  }
  if (!digit || prev_us) return false;
  buf[k] = 0;
  errno = 0;
  char *e;
  long long v = strtoll(buf, &e, 10);
  if (errno || *e) return false;
  *out = v;
  return true;
}
