#include "core/pystr.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

int py_utf8_next(const char *s, size_t n, size_t i, uint32_t *cp) {
  const unsigned char *p = (const unsigned char *)s + i;
  size_t left = n - i;
  unsigned char c = p[0];
  int l = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
  if ((size_t)l > left) l = 1;
  uint32_t v = l == 1 ? c : l == 2 ? (c & 0x1Fu) : l == 3 ? (c & 0x0Fu) : (c & 0x07u);
  for (int k = 1; k < l; k++) v = (v << 6) | (p[k] & 0x3Fu);
  *cp = v;
  return l;
}

/* str.isprintable(): everything except the categories Cc Cf Cs Co Cn Zl Zp Zs, but space. */
static bool py_isprintable(uint32_t cp) {
  if (cp == ' ') return true;
  if (cp >= 0xD800 && cp <= 0xDFFF) return false;
  switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS: return false;
    default: return true;
  }
}

void py_repr_str(strbuf *sb, const char *s, size_t n) {
  bool has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
  char q = (has_sq && !has_dq) ? '"' : '\'';
  sb_putc(sb, q);
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    int l = py_utf8_next(s, n, i, &cp);
    if (cp == (uint32_t)q || cp == '\\') {
      sb_putc(sb, '\\');
      sb_putc(sb, (char)cp);
    } else if (cp == '\t') {
      sb_puts(sb, "\\t");
    } else if (cp == '\n') {
      sb_puts(sb, "\\n");
    } else if (cp == '\r') {
      sb_puts(sb, "\\r");
    } else if (cp < 0x20 || cp == 0x7F) {
      sb_printf(sb, "\\x%02x", cp);
    } else if (cp < 0x7F) {
      sb_putc(sb, (char)cp);
    } else if (!py_isprintable(cp)) {
      if (cp <= 0xFF)
        sb_printf(sb, "\\x%02x", cp);
      else if (cp <= 0xFFFF)
        sb_printf(sb, "\\u%04x", cp);
      else
        sb_printf(sb, "\\U%08x", cp);
    } else {
      sb_append(sb, s + i, (size_t)l);
    }
    i += (size_t)l;
  }
  sb_putc(sb, q);
}

static void repr_number(strbuf *sb, const json_value *v) {
  char num[32];
  if (v->type == JSON_INT) {
    if (v->big)
      sb_append(sb, v->s, v->n);
    else
      sb_printf(sb, "%lld", (long long)v->i);
  } else {
    py_float_repr(v->d, num);
    sb_puts(sb, num);
  }
}

void py_repr_json(strbuf *sb, const json_value *v) {
  switch (v->type) {
    case JSON_NULL: sb_puts(sb, "None"); break;
    case JSON_BOOL: sb_puts(sb, v->b ? "True" : "False"); break;
    case JSON_INT:
    case JSON_FLOAT: repr_number(sb, v); break;
    case JSON_STRING: py_repr_str(sb, v->s, v->n); break;
    case JSON_ARRAY:
      sb_putc(sb, '[');
      for (uint32_t i = 0; i < v->n; i++) {
        if (i) sb_puts(sb, ", ");
        py_repr_json(sb, &v->items[i]);
      }
      sb_putc(sb, ']');
      break;
    case JSON_OBJECT:
      sb_putc(sb, '{');
      for (uint32_t i = 0; i < v->n; i++) {
        if (i) sb_puts(sb, ", ");
        py_repr_str(sb, v->members[i].key, v->members[i].key_len);
        sb_puts(sb, ": ");
        py_repr_json(sb, &v->members[i].value);
      }
      sb_putc(sb, '}');
      break;
  }
}

void py_str_json(strbuf *sb, const json_value *v) {
  if (v->type == JSON_STRING)
    sb_append(sb, v->s, v->n);
  else
    py_repr_json(sb, v);
}

bool py_isspace(uint32_t cp) {
  if ((cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20)) return true;
  switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F:
    case 0x3000: return true;
    default: return cp >= 0x2000 && cp <= 0x200A;
  }
}

void py_strip(const char *s, size_t n, size_t *start, size_t *len) {
  size_t a = 0, b = n;
  while (a < b) {
    uint32_t cp;
    int l = py_utf8_next(s, n, a, &cp);
    if (!py_isspace(cp)) break;
    a += (size_t)l;
  }
  while (b > a) {
    size_t k = b - 1; /* back up to the start of the last code point */
    while (k > a && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
    uint32_t cp;
    py_utf8_next(s, n, k, &cp);
    if (!py_isspace(cp)) break;
    b = k;
  }
  *start = a;
  *len = b - a;
}

bool py_is_blank(const char *s, size_t n) {
  size_t a, l;
  py_strip(s, n, &a, &l);
  return l == 0;
}

static bool is_cased(uint32_t cp) {
  utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
  return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT;
}

void py_lower(strbuf *sb, const char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    int l = py_utf8_next(s, n, i, &cp);
    if (cp < 0x80) {
      sb_putc(sb, (char)tolower((int)cp));
    } else if (cp == 0x130) { /* LATIN CAPITAL I WITH DOT: "i" + COMBINING DOT ABOVE */
      sb_putc(sb, 'i');
      sb_put_cp(sb, 0x307);
    } else if (cp == 0x3A3) { /* final sigma: after a cased letter, not before one */
      bool before = false, after = false;
      if (i > 0) {
        size_t k = i - 1;
        while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
        uint32_t pc;
        py_utf8_next(s, n, k, &pc);
        before = is_cased(pc);
      }
      if (i + (size_t)l < n) {
        uint32_t nc;
        py_utf8_next(s, n, i + (size_t)l, &nc);
        after = is_cased(nc);
      }
      sb_put_cp(sb, before && !after ? 0x3C2 : 0x3C3);
    } else if (cp >= 0xD800 && cp <= 0xDFFF) {
      sb_append(sb, s + i, (size_t)l);
    } else {
      sb_put_cp(sb, (uint32_t)utf8proc_tolower((utf8proc_int32_t)cp));
    }
    i += (size_t)l;
  }
}

bool py_float_from_str(const char *s, size_t n, double *out) {
  size_t a, l;
  py_strip(s, n, &a, &l);
  if (l == 0 || l > 400) return false;
  char buf[512];
  size_t o = 0;
  const char *p = s + a, *end = p + l;
  if (p < end && (*p == '+' || *p == '-')) buf[o++] = *p++;
  /* Words first: inf, infinity, nan, in any case. */
  size_t rest = (size_t)(end - p);
  if ((rest == 3 && strncasecmp(p, "inf", 3) == 0) || (rest == 8 && strncasecmp(p, "infinity", 8) == 0)) {
    *out = (o && buf[0] == '-') ? -INFINITY : INFINITY;
    return true;
  }
  if (rest == 3 && strncasecmp(p, "nan", 3) == 0) {
    *out = NAN;
    return true;
  }
  /* digits [. digits] [e [sign] digits], underscores only between two digits */
  bool any_digit = false;
  int state = 0; /* 0 mantissa int, 1 fraction, 2 exponent */
  bool exp_digit = false;
  for (; p < end; p++) {
    char c = *p;
    if (c >= '0' && c <= '9') {
      buf[o++] = c;
      if (state == 2)
        exp_digit = true;
      else
        any_digit = true;
    } else if (c == '_') {
      if (p == s + a || p + 1 >= end || !isdigit((unsigned char)p[-1]) || !isdigit((unsigned char)p[1]))
        return false;
    } else if (c == '.' && state == 0) {
      buf[o++] = c;
      state = 1;
    } else if ((c == 'e' || c == 'E') && state < 2 && any_digit) {
      buf[o++] = 'e';
      state = 2;
      if (p + 1 < end && (p[1] == '+' || p[1] == '-')) buf[o++] = *++p;
    } else {
      return false;
    }
  }
  if (!any_digit || (state == 2 && !exp_digit)) return false;
  buf[o] = 0;
  *out = strtod(buf, NULL);
  return true;
}
