/* cli_util.c: see cli_util.h. */
#include "cli/cli_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* The first code point of every run of ten Unicode decimal digits (str.isdecimal(), Unicode 14.0 as
 * Python 3.11 has it; listed from its unicodedata.decimal). */
static const uint32_t kDecimalZeros[] = {
    0x30,    0x660,   0x6F0,   0x7C0,   0x966,   0x9E6,   0xA66,   0xAE6,   0xB66,   0xBE6,   0xC66,
    0xCE6,   0xD66,   0xDE6,   0xE50,   0xED0,   0xF20,   0x1040,  0x1090,  0x17E0,  0x1810,  0x1946,
    0x19D0,  0x1A80,  0x1A90,  0x1B50,  0x1BB0,  0x1C40,  0x1C50,  0xA620,  0xA8D0,  0xA900,  0xA9D0,
    0xA9F0,  0xAA50,  0xABF0,  0xFF10,  0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0,
    0x11450, 0x114D0, 0x11650, 0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x16A60,
    0x16AC0, 0x16B50, 0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E140, 0x1E2F0, 0x1E950, 0x1FBF0};

static int unicode_decimal(uint32_t cp) {
  for (size_t k = 0; k < sizeof kDecimalZeros / sizeof kDecimalZeros[0]; k++)
    if (cp >= kDecimalZeros[k] && cp < kDecimalZeros[k] + 10) return (int)(cp - kDecimalZeros[k]);
  return -1;
}

bool cli_py_int_digits(const char *s, bool *neg, char **digits) {
  size_t n = strlen(s);
  *neg = false;
  if (utf8_first_invalid(s, n) >= 0) return false; /* Python's argv holds surrogates there */
  /* as int() reads a str: a non-ASCII space becomes ' ', a decimal digit its ASCII digit, anything
   * else non-ASCII ends the number (refused) */
  char *t = malloc(n + 1);
  if (!t) return false;
  size_t m = 0;
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    i += (size_t)py_utf8_next(s, n, i, &cp);
    int d;
    if (cp < 127) t[m++] = (char)cp;
    else if (py_isspace(cp)) t[m++] = ' ';
    else if ((d = unicode_decimal(cp)) >= 0) t[m++] = (char)('0' + d);
    else {
      free(t);
      return false;
    }
  }
  /* then the ASCII rules: C whitespace around, a sign, digits with single underscores between */
  size_t i = 0, end = m, nd = 0;
  while (i < end && memchr(" \t\n\v\f\r", t[i], 6)) i++;
  while (end > i && memchr(" \t\n\v\f\r", t[end - 1], 6)) end--;
  if (i < end && (t[i] == '+' || t[i] == '-')) *neg = t[i++] == '-';
  bool prev_us = true; /* no leading underscore */
  char *buf = t;       /* digits are written over the text already read */
  for (; i < end; i++) {
    char c = t[i];
    if (c == '_' && !prev_us) {
      prev_us = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    buf[nd++] = c;
    prev_us = false;
  }
  if (i < end || !nd || prev_us || nd > 4300) {
    free(t);
    *neg = false;
    return false;
  }
  size_t z = 0;
  while (z + 1 < nd && buf[z] == '0') z++;
  memmove(buf, buf + z, nd - z);
  buf[nd - z] = 0;
  if (!strcmp(buf, "0")) *neg = false;
  *digits = buf;
  return true;
}

bool cli_py_float(const char *s, double *out) {
  size_t n = strlen(s);
  if (utf8_first_invalid(s, n) >= 0) return false;
  /* as float() reads a str: a non-ASCII space becomes ' ', a decimal digit its ASCII digit, and
   * anything else non-ASCII is refused; then the ASCII syntax */
  char *t = malloc(n + 1);
  if (!t) return false;
  size_t m = 0;
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    i += (size_t)py_utf8_next(s, n, i, &cp);
    int d;
    if (cp >= 0x1c && cp <= 0x1f) { /* str.isspace(), but float() strips only C's spaces */
      free(t);
      return false;
    }
    if (cp < 128) t[m++] = (char)cp;
    else if (py_isspace(cp)) t[m++] = ' ';
    else if ((d = unicode_decimal(cp)) >= 0) t[m++] = (char)('0' + d);
    else {
      free(t);
      return false;
    }
  }
  bool ok = py_float_from_str(t, m, out);
  free(t);
  return ok;
}

static int hex4(const char *p, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else return 0;
  }
  *out = v;
  return 1;
}

void cli_unascii(strbuf *out, const char *json) {
  const char *p = json, *run = json;
  bool in_str = false;
  while (*p) {
    if (!in_str) {
      if (*p == '"') in_str = true;
      p++;
      continue;
    }
    if (*p == '"') {
      in_str = false;
      p++;
      continue;
    }
    if (*p != '\\') {
      p++;
      continue;
    }
    unsigned cp;
    if (p[1] != 'u' || !hex4(p + 2, &cp) || cp < 0x7f) {
      p += p[1] ? 2 : 1;
      continue;
    }
    size_t len = 6;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      unsigned lo;
      if (p[6] == '\\' && p[7] == 'u' && hex4(p + 8, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        len = 12;
      } else {
        p += 6; /* a lone surrogate has no UTF-8 form: kept escaped */
        continue;
      }
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
      p += 6;
      continue;
    }
    sb_append(out, run, (size_t)(p - run));
    char u[4];
    sb_append(out, u, (size_t)utf8_put(u, cp));
    p += len;
    run = p;
  }
  sb_append(out, run, (size_t)(p - run));
}

void cli_text_decision(strbuf *sb, const char *model, const char *reason, const char *detection,
                       size_t detection_len) {
  sb_printf(sb, "Model     : %s\n", model);
  sb_printf(sb, "Reason    : %s\n", reason);
  /* "{}" and "null" show nothing; an object with members is written in json.dumps's default
   * spacing already (the decision's own), so only its escapes are undone */
  if (detection_len > 2 && detection[0] == '{') {
    strbuf d;
    sb_init(&d);
    sb_append(&d, detection, detection_len);
    sb_puts(sb, "Detected  : ");
    cli_unascii(sb, sb_cstr(&d));
    sb_putc(sb, '\n');
    sb_free(&d);
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void cli_progress_begin(cli_progress *p, size_t total, const char *unit, bool quiet) {
  memset(p, 0, sizeof *p);
  p->on = !quiet && isatty(STDERR_FILENO);
  p->total = total;
  p->unit = unit ? unit : "items";
  p->start = now_s();
  p->last = -1;
}

static void span(char *b, size_t n, double s) {
  long t = (long)(s + 0.5);
  if (t >= 3600) snprintf(b, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
  else if (t >= 60) snprintf(b, n, "%ldm%02lds", t / 60, t % 60);
  else snprintf(b, n, "%lds", t);
}

static void draw(cli_progress *p, double t) {
  double el = t - p->start;
  double rate = el > 0 ? (double)p->done / el : 0;
  char line[160], eta[32] = "";
  int k;
  if (p->total) {
    if (rate > 0 && p->done < p->total) {
      char s[24];
      span(s, sizeof s, (double)(p->total - p->done) / rate);
      snprintf(eta, sizeof eta, "  ETA %s", s);
    }
    k = snprintf(line, sizeof line, "%zu/%zu %s (%.0f%%)  %.1f/s%s", p->done, p->total, p->unit,
                 100.0 * (double)p->done / (double)p->total, rate, eta);
  } else {
    char s[24];
    span(s, sizeof s, el);
    k = snprintf(line, sizeof line, "%zu %s  %.1f/s  %s", p->done, p->unit, rate, s);
  }
  if (k < 0) return;
  fprintf(stderr, "\r%s%*s", line, p->width > k ? p->width - k : 0, "");
  p->width = k;
  fflush(stderr);
  p->last = t;
}

void cli_progress_update(cli_progress *p, size_t done) {
  p->done = done;
  if (!p->on) return;
  double t = now_s();
  if (p->last >= 0 && t - p->last < 0.2) return;
  draw(p, t);
}

void cli_progress_end(cli_progress *p) {
  if (!p->on) return;
  draw(p, now_s());
  fputc('\n', stderr);
  fflush(stderr);
}

static int py_lead_len(unsigned char c) { return c >= 0xC2 && c < 0xE0 ? 2 : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xF0 && c < 0xF5 ? 4 : 0; }

bool cli_py_utf8_error(const char *text, size_t n, size_t chunk_size, size_t *avail, char *msg, size_t cap) {
  const unsigned char *s = (const unsigned char *)text;
  size_t i = 0;
  while (i < n) {
    unsigned char c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    int need = py_lead_len(c), k = 1; /* k: bytes of a valid prefix */
    if (need) {
      unsigned char lo = 0x80, hi = 0xBF;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
      while (k < need && i + (size_t)k < n) {
        unsigned char b = s[i + (size_t)k];
        if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) break;
        k++;
      }
      if (k == need) {
        i += (size_t)need;
        continue;
      }
    }
    const char *why = !need ? "invalid start byte" : i + (size_t)k >= n ? "unexpected end of data" : "invalid continuation byte";
    size_t start; /* the failing decode's first byte */
    if (!chunk_size) {
      start = 0; /* one decode of the whole file */
    } else if (i + (size_t)k >= n && need) {
      start = i; /* the final decode at end of file gets only the cut sequence */
    } else {
      size_t bad = need ? i + (size_t)k : i, chunk = chunk_size ? bad / chunk_size * chunk_size : 0;
      start = chunk;
      if (i < chunk) {
        start = i;
      } else {
        for (size_t j = chunk; j > 0 && j + 3 > chunk && (s[j] & 0xC0) == 0x80;) {
          j--;
          if (py_lead_len(s[j]) && j + (size_t)py_lead_len(s[j]) > chunk) start = j;
          if (py_lead_len(s[j])) break;
        }
      }
    }
    *avail = start;
    size_t pos = i - start;
    if (k == 1 || !need)
      snprintf(msg, cap, "'utf-8' codec can't decode byte 0x%02x in position %zu: %s", c, pos, why);
    else
      snprintf(msg, cap, "'utf-8' codec can't decode bytes in position %zu-%zu: %s", pos, pos + (size_t)k - 1, why);
    return true;
  }
  return false;
}
