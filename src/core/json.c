#include "core/json.h"
#include "core/utf8.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Reader                                                                                     */

typedef struct parser {
  const char *p, *start, *end;
  arena *a;
  laya_error *err;
  int depth, max_depth;
  bool replace_surrogates;
  bool keep_duplicates;
  bool failed;
} parser;

static void fail(parser *ps, const char *at, const char *what) {
  if (ps->failed) return;
  ps->failed = true;
  size_t off = (size_t)(at - ps->start);
  size_t line = 1, col = 1;
  for (const char *q = ps->start; q < at; q++) {
    if (*q == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
  }
  laya_err(ps->err, LAYA_ERR_FORMAT, "JSONDecodeError",
           "invalid JSON at byte %zu (line %zu, column %zu): %s", off, line, col, what);
}

static void skip_ws(parser *ps) {
  while (ps->p < ps->end) {
    char c = *ps->p;
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
      ps->p++;
    else
      break;
  }
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* The 4 hex digits of a \u escape at p; false if one is not a hex digit. */
static bool hex4(const char *p, uint32_t *out) {
  uint32_t v = 0;
  for (int k = 0; k < 4; k++) {
    int h = hexval(p[k]);
    if (h < 0) return false;
    v = v * 16 + (uint32_t)h;
  }
  *out = v;
  return true;
}

/* Parse a string starting after the opening quote. */
static bool parse_string(parser *ps, const char **out, uint32_t *out_len, bool *surrogate) {
  const char *q = ps->p;
  /* Fast scan: find the closing quote; count escapes to size the output. */
  bool simple = true;
  while (q < ps->end && *q != '"') {
    if (*q == '\\') {
      simple = false;
      q += 2;
      continue;
    }
    if ((unsigned char)*q < 0x20) {
      fail(ps, q, "control character inside a string (escape it)");
      return false;
    }
    q++;
  }
  if (q >= ps->end) {
    fail(ps, ps->p - 1, "unterminated string");
    return false;
  }
  size_t raw = (size_t)(q - ps->p);
  char *o = arena_alloc_aligned(ps->a, raw + 1, 16);
  if (!o) {
    laya_err(ps->err, LAYA_ERR_NOMEM, NULL, "out of memory while parsing JSON");
    ps->failed = true;
    return false;
  }
  size_t n = 0;
  const char *p = ps->p;
  *surrogate = false;
  if (simple) {
    while (p < q) {
      int l = utf8_seq_len((const unsigned char *)p, (size_t)(q - p));
      if (!l) {
        fail(ps, p, "invalid UTF-8 byte in a string");
        return false;
      }
      p += l;
    }
    memcpy(o, ps->p, raw);
    n = raw;
  } else {
    while (p < q) {
      if (*p != '\\') {
        int l = utf8_seq_len((const unsigned char *)p, (size_t)(q - p));
        if (!l) {
          fail(ps, p, "invalid UTF-8 byte in a string");
          return false;
        }
        memcpy(o + n, p, (size_t)l);
        n += (size_t)l;
        p += l;
        continue;
      }
      const char *esc = p;
      p++;
      char c = *p++;
      switch (c) {
        case '"': o[n++] = '"'; break;
        case '\\': o[n++] = '\\'; break;
        case '/': o[n++] = '/'; break;
        case 'b': o[n++] = '\b'; break;
        case 'f': o[n++] = '\f'; break;
        case 'n': o[n++] = '\n'; break;
        case 'r': o[n++] = '\r'; break;
        case 't': o[n++] = '\t'; break;
        case 'u': {
          if (q - p < 4) {
            fail(ps, esc, "truncated \\u escape");
            return false;
          }
          uint32_t cp, lo;
          if (!hex4(p, &cp)) {
            fail(ps, esc, "invalid \\u escape (expected 4 hex digits)");
            return false;
          }
          p += 4;
          if (cp >= 0xD800 && cp <= 0xDBFF && q - p >= 6 && p[0] == '\\' && p[1] == 'u' &&
              hex4(p + 2, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p += 6;
          }
          if (cp >= 0xD800 && cp <= 0xDFFF) {
            if (ps->replace_surrogates)
              cp = 0xFFFD;
            else
              *surrogate = true; /* WTF-8: utf8_put writes the 3-byte form of the code unit */
          }
          n += (size_t)utf8_put(o + n, cp);
          break;
        }
        default:
          fail(ps, esc, "invalid escape in a string");
          return false;
      }
    }
  }
  o[n] = 0;
  *out = o;
  *out_len = (uint32_t)n;
  ps->p = q + 1;
  return true;
}

static bool parse_value(parser *ps, json_value *v);

static bool match_word(parser *ps, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, w, n) == 0) {
    ps->p += n;
    return true;
  }
  return false;
}

static bool parse_number(parser *ps, json_value *v) {
  const char *s = ps->p, *p = ps->p;
  if (p < ps->end && *p == '-') {
    p++;
    if (ps->end - p >= 8 && memcmp(p, "Infinity", 8) == 0) {
      ps->p = p + 8;
      v->type = JSON_FLOAT;
      v->d = -INFINITY;
      v->s = "-Infinity";
      v->n = 9;
      return true;
    }
  }
  if (p >= ps->end || !(*p >= '0' && *p <= '9')) {
    fail(ps, s, "expected a value");
    return false;
  }
  if (*p == '0') {
    p++;
  } else {
    while (p < ps->end && *p >= '0' && *p <= '9') p++;
  }
  bool is_float = false;
  if (p < ps->end && *p == '.') {
    const char *d0 = ++p;
    while (p < ps->end && *p >= '0' && *p <= '9') p++;
    if (p == d0) {
      fail(ps, p, "expected digits after the decimal point");
      return false;
    }
    is_float = true;
  }
  if (p < ps->end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < ps->end && (*p == '+' || *p == '-')) p++;
    const char *d0 = p;
    while (p < ps->end && *p >= '0' && *p <= '9') p++;
    if (p == d0) {
      fail(ps, p, "expected digits in the exponent");
      return false;
    }
    is_float = true;
  }
  size_t n = (size_t)(p - s);
  char *lex = arena_strndup(ps->a, s, n);
  if (!lex) {
    laya_err(ps->err, LAYA_ERR_NOMEM, NULL, "out of memory while parsing JSON");
    ps->failed = true;
    return false;
  }
  v->s = lex;
  v->n = (uint32_t)n;
  v->d = strtod(lex, NULL);
  if (is_float) {
    v->type = JSON_FLOAT;
  } else {
    v->type = JSON_INT;
    errno = 0;
    long long ll = strtoll(lex, NULL, 10);
    if (errno == ERANGE) {
      v->big = true;
    } else {
      v->i = ll;
    }
  }
  ps->p = p;
  return true;
}

/* Python dicts keep the first position of a repeated key and its last value. */
static uint32_t dedup_members(json_member *m, uint32_t n, arena *a) {
  if (n < 2) return n;
  if (n <= 16) {
    uint32_t out = 0;
    for (uint32_t i = 0; i < n; i++) {
      uint32_t j = 0;
      for (; j < out; j++)
        if (m[j].key_len == m[i].key_len && memcmp(m[j].key, m[i].key, m[i].key_len) == 0) break;
      if (j < out)
        m[j].value = m[i].value;
      else
        m[out++] = m[i];
    }
    return out;
  }
  uint32_t cap = 32;
  while (cap < n * 2) cap *= 2;
  uint32_t *slot = arena_alloc_aligned(a, sizeof(uint32_t) * cap, 16);
  if (!slot) return n; /* no memory: leave duplicates (json_get returns the last) */
  memset(slot, 0xFF, sizeof(uint32_t) * cap);
  uint32_t out = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t h = 1469598103934665603ull;
    for (uint32_t k = 0; k < m[i].key_len; k++) h = (h ^ (unsigned char)m[i].key[k]) * 1099511628211ull;
    uint32_t s = (uint32_t)h & (cap - 1);
    for (;;) {
      if (slot[s] == 0xFFFFFFFFu) {
        slot[s] = out;
        m[out++] = m[i];
        break;
      }
      json_member *e = &m[slot[s]];
      if (e->key_len == m[i].key_len && memcmp(e->key, m[i].key, m[i].key_len) == 0) {
        e->value = m[i].value;
        break;
      }
      s = (s + 1) & (cap - 1);
    }
  }
  return out;
}

/* Growable scratch for items while an array/object is being read; copied to the arena at the
 * end so that nested values never move. */
typedef struct {
  void *data;
  size_t n, cap, elem;
} vec;

static bool vec_push(vec *v, const void *x) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 8;
    void *p = realloc(v->data, cap * v->elem);
    if (!p) return false;
    v->data = p;
    v->cap = cap;
  }
  memcpy((char *)v->data + v->n * v->elem, x, v->elem);
  v->n++;
  return true;
}

static bool parse_array(parser *ps, json_value *v) {
  vec items = {NULL, 0, 0, sizeof(json_value)};
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == ']') {
    ps->p++;
    goto done;
  }
  for (;;) {
    json_value item;
    memset(&item, 0, sizeof item);
    if (!parse_value(ps, &item)) goto fail;
    if (!vec_push(&items, &item)) goto oom;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ',') {
      ps->p++;
      continue;
    }
    if (ps->p < ps->end && *ps->p == ']') {
      ps->p++;
      break;
    }
    fail(ps, ps->p, "expected ',' or ']' after an array item");
    goto fail;
  }
done:
  v->type = JSON_ARRAY;
  v->n = (uint32_t)items.n;
  if (items.n) {
    v->items = arena_alloc_aligned(ps->a, items.n * sizeof(json_value), 16);
    if (!v->items) goto oom;
    memcpy(v->items, items.data, items.n * sizeof(json_value));
  }
  free(items.data);
  return true;
oom:
  laya_err(ps->err, LAYA_ERR_NOMEM, NULL, "out of memory while parsing JSON");
  ps->failed = true;
fail:
  free(items.data);
  return false;
}

static bool parse_object(parser *ps, json_value *v) {
  vec mem = {NULL, 0, 0, sizeof(json_member)};
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == '}') {
    ps->p++;
    goto done;
  }
  for (;;) {
    json_member m;
    memset(&m, 0, sizeof m);
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != '"') {
      fail(ps, ps->p, "expected a string key (property names must be in double quotes)");
      goto fail;
    }
    ps->p++;
    bool sur;
    if (!parse_string(ps, &m.key, &m.key_len, &sur)) goto fail;
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != ':') {
      fail(ps, ps->p, "expected ':' after an object key");
      goto fail;
    }
    ps->p++;
    if (!parse_value(ps, &m.value)) goto fail;
    if (!vec_push(&mem, &m)) goto oom;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ',') {
      ps->p++;
      continue;
    }
    if (ps->p < ps->end && *ps->p == '}') {
      ps->p++;
      break;
    }
    fail(ps, ps->p, "expected ',' or '}' after an object member");
    goto fail;
  }
done:
  v->type = JSON_OBJECT;
  v->n = ps->keep_duplicates ? (uint32_t)mem.n : dedup_members(mem.data, (uint32_t)mem.n, ps->a);
  if (v->n) {
    v->members = arena_alloc_aligned(ps->a, v->n * sizeof(json_member), 16);
    if (!v->members) goto oom;
    memcpy(v->members, mem.data, v->n * sizeof(json_member));
  }
  free(mem.data);
  return true;
oom:
  laya_err(ps->err, LAYA_ERR_NOMEM, NULL, "out of memory while parsing JSON");
  ps->failed = true;
fail:
  free(mem.data);
  return false;
}

static bool parse_value(parser *ps, json_value *v) {
  skip_ws(ps);
  if (ps->p >= ps->end) {
    fail(ps, ps->p, "expected a value, found the end of the input");
    return false;
  }
  char c = *ps->p;
  switch (c) {
    case '{':
    case '[': {
      if (++ps->depth > ps->max_depth) {
        fail(ps, ps->p, "nesting too deep");
        return false;
      }
      ps->p++;
      bool ok = c == '{' ? parse_object(ps, v) : parse_array(ps, v);
      ps->depth--;
      return ok;
    }
    case '"': {
      ps->p++;
      v->type = JSON_STRING;
      return parse_string(ps, &v->s, &v->n, &v->surrogate);
    }
    case 't':
      if (match_word(ps, "true")) {
        v->type = JSON_BOOL;
        v->b = true;
        return true;
      }
      break;
    case 'f':
      if (match_word(ps, "false")) {
        v->type = JSON_BOOL;
        v->b = false;
        return true;
      }
      break;
    case 'n':
      if (match_word(ps, "null")) {
        v->type = JSON_NULL;
        return true;
      }
      break;
    case 'N':
      if (match_word(ps, "NaN")) {
        v->type = JSON_FLOAT;
        v->d = NAN;
        v->s = "NaN";
        v->n = 3;
        return true;
      }
      break;
    case 'I':
      if (match_word(ps, "Infinity")) {
        v->type = JSON_FLOAT;
        v->d = INFINITY;
        v->s = "Infinity";
        v->n = 8;
        return true;
      }
      break;
    default:
      if (c == '-' || (c >= '0' && c <= '9')) return parse_number(ps, v);
  }
  fail(ps, ps->p, "expected a value");
  return false;
}

json_value *json_parse(const char *text, size_t len, arena *a, const json_parse_opts *opts,
                       laya_error *err) {
  parser ps = {0};
  ps.p = ps.start = text;
  ps.end = text + len;
  ps.a = a;
  ps.err = err;
  ps.max_depth = opts && opts->max_depth > 0 ? opts->max_depth : 1000;
  ps.replace_surrogates = opts && opts->replace_surrogates;
  ps.keep_duplicates = opts && opts->keep_duplicates;
  /* Python's json.loads accepts a leading UTF-8 BOM only when given bytes; reject like str. */
  json_value *v = arena_alloc(a, sizeof *v);
  if (!v) {
    laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory while parsing JSON");
    return NULL;
  }
  if (!parse_value(&ps, v)) return NULL;
  if (!(opts && opts->allow_trailing)) {
    skip_ws(&ps);
    if (ps.p != ps.end) {
      fail(&ps, ps.p, "extra data after the JSON value");
      return NULL;
    }
  }
  return v;
}

const json_value *json_getn(const json_value *obj, const char *key, size_t key_len) {
  if (!obj || obj->type != JSON_OBJECT) return NULL;
  for (uint32_t i = obj->n; i-- > 0;) {
    const json_member *m = &obj->members[i];
    if (m->key_len == key_len && memcmp(m->key, key, key_len) == 0) return &m->value;
  }
  return NULL;
}

const json_value *json_get(const json_value *obj, const char *key) {
  return json_getn(obj, key, strlen(key));
}

bool json_is_number(const json_value *v) { return v && (v->type == JSON_INT || v->type == JSON_FLOAT); }

bool json_has_nonfinite(const json_value *v) {
  if (v->type == JSON_FLOAT) return !isfinite(v->d);
  if (v->type == JSON_ARRAY)
    for (uint32_t i = 0; i < v->n; i++)
      if (json_has_nonfinite(&v->items[i])) return true;
  if (v->type == JSON_OBJECT)
    for (uint32_t i = 0; i < v->n; i++)
      if (json_has_nonfinite(&v->members[i].value)) return true;
  return false;
}

bool json_truthy(const json_value *v) {
  if (!v) return false;
  switch (v->type) {
    case JSON_NULL: return false;
    case JSON_BOOL: return v->b;
    case JSON_INT: return v->big || v->i != 0;
    case JSON_FLOAT: return v->d != 0.0;
    default: return v->n != 0;
  }
}

const char *json_py_type(const json_value *v) {
  if (!v) return "NoneType";
  switch (v->type) {
    case JSON_NULL: return "NoneType";
    case JSON_BOOL: return "bool";
    case JSON_INT: return "int";
    case JSON_FLOAT: return "float";
    case JSON_STRING: return "str";
    case JSON_ARRAY: return "list";
    case JSON_OBJECT: return "dict";
  }
  return "object";
}

/* ------------------------------------------------------------------------------------------ */
/* Writer                                                                                     */

/* The shortest p-digit form %.{p-1}e of x that reads back as x, into buf (x finite, not zero).
 * Round-tripping is monotone in p (a p-digit form padded with zeros is a candidate for p+1
 * digits), and for a normal double every decimal of at most 15 significant digits reads back to
 * a double that prints back to it at 15 digits (DBL_DIG). So if the 15-digit form reads back,
 * it is the shortest form padded with zeros (the caller strips them); otherwise the shortest has
 * 16 or 17 digits. Subnormals, where that does not hold, try every p. */
static void shortest_e(double x, char buf[40]) {
  if (fabs(x) >= DBL_MIN) {
    snprintf(buf, 40, "%.14e", x);
    if (strtod(buf, NULL) == x) return;
    snprintf(buf, 40, "%.15e", x);
    if (strtod(buf, NULL) == x) return;
    snprintf(buf, 40, "%.16e", x);
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, 40, "%.*e", prec - 1, x);
    if (strtod(buf, NULL) == x) break;
  }
}

/* x = r / 10^4 exactly as a double, with r an integer of at most 15 digits: then the decimal
 * r x 10^-4 reads back as x (the division is correctly rounded) and, by the DBL_DIG argument of
 * shortest_e, its digits with the trailing zeros stripped are the shortest form. The values
 * py_round4 returns are of this kind; this gives their digits without printf. */
static bool round4_digits(double x, char digits[20], int *nd, int *decpt) {
  double ax = fabs(x);
  if (!(ax >= 1e-4 && ax < 1e11)) return false;
  double r = nearbyint(ax * 1e4);
  if (r / 1e4 != ax) return false;
  char tmp[20];
  int n = 0;
  for (unsigned long long u = (unsigned long long)r; u; u /= 10) tmp[n++] = (char)('0' + u % 10);
  for (int k = 0; k < n; k++) digits[k] = tmp[n - 1 - k];
  *nd = n;
  *decpt = n - 4;
  return true;
}

int py_float_repr(double x, char out[32]) {
  if (isnan(x)) return snprintf(out, 32, "nan");
  if (isinf(x)) return snprintf(out, 32, x > 0 ? "inf" : "-inf");
  if (x == 0) return snprintf(out, 32, signbit(x) ? "-0.0" : "0.0");
  bool neg = x < 0;
  char digits[20];
  int nd = 0, decpt;
  if (!round4_digits(x, digits, &nd, &decpt)) {
    /* Shortest digits that round-trip: the correctly rounded p-digit form for the smallest p. */
    char buf[40];
    shortest_e(x, buf);
    /* buf = [-]d[.ddd]e[+-]XX ; pull out the digits and the decimal exponent. */
    const char *p = buf + neg;
    for (; *p && *p != 'e'; p++)
      if (*p >= '0' && *p <= '9') digits[nd++] = *p;
    decpt = atoi(p + 1) + 1; /* value = d.ddd x 10^exp10; digits before the decimal point */
  }
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  char *o = out;
  if (neg) *o++ = '-';
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      *o++ = '0';
      *o++ = '.';
      for (int k = 0; k < -decpt; k++) *o++ = '0';
      for (int k = 0; k < nd; k++) *o++ = digits[k];
    } else {
      for (int k = 0; k < decpt; k++) *o++ = k < nd ? digits[k] : '0';
      *o++ = '.';
      if (nd > decpt) {
        for (int k = decpt; k < nd; k++) *o++ = digits[k];
      } else {
        *o++ = '0';
      }
    }
    *o = 0;
  } else {
    *o++ = digits[0];
    if (nd > 1) {
      *o++ = '.';
      for (int k = 1; k < nd; k++) *o++ = digits[k];
    }
    int e = decpt - 1;
    o += snprintf(o, 16, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
  }
  return (int)(o - out);
}

int py_float_json(double x, char out[32]) {
  if (isnan(x)) return snprintf(out, 32, "NaN");
  if (isinf(x)) return snprintf(out, 32, x > 0 ? "Infinity" : "-Infinity");
  return py_float_repr(x, out);
}

double py_round4(double x) {
  if (!isfinite(x)) return x;
  /* Fast path: y = x * 10^4 carries at most half an ulp of error, so when y is more than an ulp
   * away from a half-integer the exact product rounds to the same integer r, and r / 10^4 (both
   * exact, the division correctly rounded) is the double strtod gives for that decimal. */
  double y = x * 1e4;
  if (fabs(y) < 0x1p52) {
    double f = floor(y), d = fabs(y - f - 0.5);
    if (d > 4 * DBL_EPSILON * (fabs(y) + 1)) return copysign((y - f < 0.5 ? f : f + 1) / 1e4, x); /* "-0.0000" reads as -0.0 */
  }
  /* glibc prints the exact binary value correctly rounded (half-even on exact ties), which is
   * what CPython's round(x, 4) computes. */
  char buf[512];
  snprintf(buf, sizeof buf, "%.4f", x);
  return strtod(buf, NULL);
}

void json_dump_string(strbuf *sb, const char *s, size_t n, bool ensure_ascii) {
  static const char hex[] = "0123456789abcdef";
  sb_reserve(sb, n + 2);
  sb_putc(sb, '"');
  size_t run = 0; /* start of the pending run of bytes written as they are */
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    const char *esc = NULL;
    char ubuf[16];
    switch (c) {
      case '"': esc = "\\\""; break;
      case '\\': esc = "\\\\"; break;
      case '\n': esc = "\\n"; break;
      case '\r': esc = "\\r"; break;
      case '\t': esc = "\\t"; break;
      case '\b': esc = "\\b"; break;
      case '\f': esc = "\\f"; break;
      default:
        if (c < 0x20) {
          ubuf[0] = '\\';
          ubuf[1] = 'u';
          ubuf[2] = '0';
          ubuf[3] = '0';
          ubuf[4] = hex[c >> 4];
          ubuf[5] = hex[c & 15];
          ubuf[6] = 0;
          esc = ubuf;
        } else if (ensure_ascii && c >= 0x80) {
          /* Decode one code point (WTF-8 tolerated) and write \uXXXX (surrogate pairs above). */
          uint32_t cp;
          int l;
          if (c >= 0xF0) {
            l = 4;
            cp = c & 0x07;
          } else if (c >= 0xE0) {
            l = 3;
            cp = c & 0x0F;
          } else {
            l = 2;
            cp = c & 0x1F;
          }
          if (i + (size_t)l > n) l = (int)(n - i);
          for (int k = 1; k < l; k++) cp = (cp << 6) | ((unsigned char)s[i + (size_t)k] & 0x3F);
          sb_append(sb, s + run, i - run);
          if (cp >= 0x10000) {
            uint32_t v = cp - 0x10000;
            uint32_t hi = 0xD800 + (v >> 10), lo = 0xDC00 + (v & 0x3FF);
            sb_printf(sb, "\\u%04x\\u%04x", hi, lo);
          } else {
            sb_printf(sb, "\\u%04x", cp);
          }
          i += (size_t)l - 1;
          run = i + 1;
          continue;
        }
    }
    if (esc) {
      sb_append(sb, s + run, i - run);
      sb_puts(sb, esc);
      run = i + 1;
    }
  }
  sb_append(sb, s + run, n - run);
  sb_putc(sb, '"');
}

static void newline_indent(strbuf *sb, int indent, int level) {
  sb_putc(sb, '\n');
  for (int k = 0; k < indent * level; k++) sb_putc(sb, ' ');
}

static void dump_rec(strbuf *sb, const json_value *v, const json_dump_opts *o, int level) {
  const char *isep = o->item_sep ? o->item_sep : (o->indent >= 0 ? "," : ", ");
  const char *ksep = o->key_sep ? o->key_sep : ": ";
  char num[32];
  switch (v->type) {
    case JSON_NULL: sb_puts(sb, "null"); break;
    case JSON_BOOL: sb_puts(sb, v->b ? "true" : "false"); break;
    case JSON_INT:
      if (v->big) {
        /* Python prints the integer exactly; the lexeme is already canonical except "-0". */
        sb_append(sb, v->s, v->n);
      } else {
        sb_printf(sb, "%lld", (long long)v->i);
      }
      break;
    case JSON_FLOAT:
      py_float_json(v->d, num);
      sb_puts(sb, num);
      break;
    case JSON_STRING: json_dump_string(sb, v->s, v->n, o->ensure_ascii); break;
    case JSON_ARRAY:
      sb_putc(sb, '[');
      for (uint32_t i = 0; i < v->n; i++) {
        if (i) sb_puts(sb, isep);
        if (o->indent >= 0) newline_indent(sb, o->indent, level + 1);
        dump_rec(sb, &v->items[i], o, level + 1);
      }
      if (o->indent >= 0 && v->n) newline_indent(sb, o->indent, level);
      sb_putc(sb, ']');
      break;
    case JSON_OBJECT:
      sb_putc(sb, '{');
      for (uint32_t i = 0; i < v->n; i++) {
        if (i) sb_puts(sb, isep);
        if (o->indent >= 0) newline_indent(sb, o->indent, level + 1);
        json_dump_string(sb, v->members[i].key, v->members[i].key_len, o->ensure_ascii);
        sb_puts(sb, ksep);
        dump_rec(sb, &v->members[i].value, o, level + 1);
      }
      if (o->indent >= 0 && v->n) newline_indent(sb, o->indent, level);
      sb_putc(sb, '}');
      break;
  }
}

bool json_copy(json_value *dst, const json_value *v, arena *a) {
  *dst = *v;
  if ((v->type == JSON_STRING || json_is_number(v)) && v->s) {
    size_t n = v->type == JSON_STRING ? v->n : strlen(v->s);
    if (!(dst->s = arena_strndup(a, v->s, n))) return false;
  }
  if (v->type == JSON_ARRAY && v->n) {
    if (!(dst->items = arena_alloc(a, sizeof(json_value) * v->n))) return false;
    for (uint32_t i = 0; i < v->n; i++)
      if (!json_copy(&dst->items[i], &v->items[i], a)) return false;
  }
  if (v->type == JSON_OBJECT && v->n) {
    if (!(dst->members = arena_alloc(a, sizeof(json_member) * v->n))) return false;
    for (uint32_t i = 0; i < v->n; i++) {
      dst->members[i].key_len = v->members[i].key_len;
      if (!(dst->members[i].key = arena_strndup(a, v->members[i].key, v->members[i].key_len))) return false;
      if (!json_copy(&dst->members[i].value, &v->members[i].value, a)) return false;
    }
  }
  return true;
}

void json_dump(strbuf *sb, const json_value *v, const json_dump_opts *opts) { json_dump_level(sb, v, opts, 0); }

void json_dump_level(strbuf *sb, const json_value *v, const json_dump_opts *opts, int level) {
  json_dump_opts o = {NULL, NULL, false, -1};
  if (opts) o = *opts;
  dump_rec(sb, v, &o, level);
}

int json_call(const char *where, const void *self, const char *request_json, json_call_fn fn,
              void *ctx, char **result_json, laya_error *err) {
  laya_err_clear(err);
  if (result_json) *result_json = NULL;
  if (!self || !request_json || !result_json)
    return laya_err(err, LAYA_ERR_VALUE, NULL, "%s: handle, request and result must not be NULL", where);
  arena a;
  arena_init(&a, 1 << 12);
  json_value *req = json_parse(request_json, strlen(request_json), &a, NULL, err);
  int rc = req ? 0 : LAYA_ERR_FORMAT;
  strbuf out;
  sb_init(&out);
  if (!rc) rc = fn(ctx, req, &out, err);
  if (!rc && out.oom) rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "%s: out of memory", where);
  if (!rc) *result_json = sb_steal(&out);
  sb_free(&out);
  arena_free(&a);
  return rc;
}

json_value json_string_n(const char *s, size_t n) {
  json_value v;
  memset(&v, 0, sizeof v);
  v.type = JSON_STRING;
  v.s = s;
  v.n = (uint32_t)n;
  return v;
}

json_value json_string(const char *s) { return json_string_n(s, strlen(s)); }

json_value json_int(long long i) {
  json_value v;
  memset(&v, 0, sizeof v);
  v.type = JSON_INT;
  v.i = i;
  v.d = (double)i;
  return v;
}

json_value json_float(double d) {
  json_value v;
  memset(&v, 0, sizeof v);
  v.type = JSON_FLOAT;
  v.d = d;
  return v;
}

json_value json_bool(bool b) {
  json_value v;
  memset(&v, 0, sizeof v);
  v.type = JSON_BOOL;
  v.b = b;
  return v;
}

json_value json_null(void) {
  json_value v;
  memset(&v, 0, sizeof v);
  v.type = JSON_NULL;
  return v;
}
