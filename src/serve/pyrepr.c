/* pyrepr.c: Python's repr() of JSON values. Laya's error messages quote the offending value with
 * %r ("got 1.5", "got 'abc'", "got {'a': [1, None]}"), and a client comparing our 422 text with
 * Laya's must see the same characters. */
#include <stdio.h>
#include <string.h>
#include <utf8proc.h>

#include "serve/serve.h"

/* Decode one UTF-8 / WTF-8 code point; returns bytes used (1 for a stray byte). */
static int decode_cp(const unsigned char *p, const unsigned char *end, uint32_t *cp) {
  unsigned c = p[0];
  int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  if (p + n > end) n = 1;
  if (n == 1) {
    *cp = c;
    return 1;
  }
  uint32_t v = c & (0x7Fu >> n);
  for (int i = 1; i < n; i++) v = (v << 6) | (p[i] & 0x3Fu);
  *cp = v;
  return n;
}

size_t utf8_cp_len(const char *s, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (((unsigned char)s[i] & 0xC0) != 0x80) k++;
  return k;
}

/* Python's str.isprintable for one code point: not a control, format, surrogate, private-use,
 * unassigned, or separator character, except the ASCII space. */
static bool py_printable(uint32_t cp) {
  if (cp == ' ') return true;
  if (cp >= 0xD800 && cp <= 0xDFFF) return false;
  if (cp > 0x10FFFF) return false;
  switch (utf8proc_category((utf8proc_int32_t)cp)) {
  case UTF8PROC_CATEGORY_CC:
  case UTF8PROC_CATEGORY_CF:
  case UTF8PROC_CATEGORY_CS:
  case UTF8PROC_CATEGORY_CO:
  case UTF8PROC_CATEGORY_CN:
  case UTF8PROC_CATEGORY_ZS:
  case UTF8PROC_CATEGORY_ZL:
  case UTF8PROC_CATEGORY_ZP:
    return false;
  default:
    return true;
  }
}

void py_repr_str(strbuf *sb, const char *s, size_t n) {
  bool has_single = memchr(s, '\'', n) != NULL, has_double = memchr(s, '"', n) != NULL;
  char q = (has_single && !has_double) ? '"' : '\'';
  sb_putc(sb, q);
  const unsigned char *p = (const unsigned char *)s, *end = p + n;
  while (p < end) {
    uint32_t cp;
    int used = decode_cp(p, end, &cp);
    if (cp == (uint32_t)q || cp == '\\') {
      sb_putc(sb, '\\');
      sb_putc(sb, (char)cp);
    } else if (cp == '\n') {
      sb_puts(sb, "\\n");
    } else if (cp == '\r') {
      sb_puts(sb, "\\r");
    } else if (cp == '\t') {
      sb_puts(sb, "\\t");
    } else if (cp < 0x80 && (cp < 0x20 || cp == 0x7F)) {
      sb_printf(sb, "\\x%02x", cp);
    } else if (cp < 0x80 || py_printable(cp)) {
      sb_append(sb, (const char *)p, (size_t)used);
    } else if (cp <= 0xFF) {
      sb_printf(sb, "\\x%02x", cp);
    } else if (cp <= 0xFFFF) {
      sb_printf(sb, "\\u%04x", cp);
    } else {
      sb_printf(sb, "\\U%08x", cp);
    }
    p += used;
  }
  sb_putc(sb, q);
}

void py_repr(strbuf *sb, const json_value *v) {
  char buf[32];
  switch (v->type) {
  case JSON_NULL:
    sb_puts(sb, "None");
    break;
  case JSON_BOOL:
    sb_puts(sb, v->b ? "True" : "False");
    break;
  case JSON_INT:
    if (v->big)
      sb_puts(sb, v->s);
    else
      sb_printf(sb, "%lld", (long long)v->i);
    break;
  case JSON_FLOAT:
    py_float_repr(v->d, buf);
    sb_puts(sb, buf);
    break;
  case JSON_STRING:
    py_repr_str(sb, v->s, v->n);
    break;
  case JSON_ARRAY:
    sb_putc(sb, '[');
    for (uint32_t i = 0; i < v->n; i++) {
      if (i) sb_puts(sb, ", ");
      py_repr(sb, &v->items[i]);
    }
    sb_putc(sb, ']');
    break;
  case JSON_OBJECT:
    sb_putc(sb, '{');
    for (uint32_t i = 0; i < v->n; i++) {
      if (i) sb_puts(sb, ", ");
      py_repr_str(sb, v->members[i].key, v->members[i].key_len);
      sb_puts(sb, ": ");
      py_repr(sb, &v->members[i].value);
    }
    sb_putc(sb, '}');
    break;
  }
}
