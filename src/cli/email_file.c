/*
 * email_file.c: an email file -> the state of Laya's email_state (see email_file.h).
 *
 * Laya's helpers take the subject, body and sender as strings; reading them out of a saved
 * message is laya.c's own convenience, so this is plain RFC 5322 / MIME: enough to get the text
 * a person wrote out of what mail programs save (.eml, a message from mbox, a pasted body).
 */
#include "cli/email_file.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/email.h"
#include "core/json.h"
#include "core/utf8.h"

#define MAX_DEPTH 8

typedef struct header {
  const char *name; /* not NUL-terminated */
  size_t name_n;
  strbuf value; /* unfolded */
} header;

typedef struct headers {
  header v[64];
  int n;
} headers;

static void headers_free(headers *h) {
  for (int i = 0; i < h->n; i++) sb_free(&h->v[i].value);
  h->n = 0;
}

static const char *line_end(const char *p, const char *end, const char **next) {
  const char *nl = memchr(p, '\n', (size_t)(end - p));
  const char *e = nl ? nl : end;
  *next = nl ? nl + 1 : end;
  if (e > p && e[-1] == '\r') e--;
  return e;
}

/* "Name:" with a field name of printable ASCII (no space or colon). */
static bool is_field_line(const char *p, const char *e) {
  const char *q = p;
  while (q < e && *q > ' ' && *q < 127 && *q != ':') q++;
  return q > p && q < e && *q == ':';
}

/* Parse the header block at [*p, end); *p moves past the blank line. False when the text does
 * not open with a header line (then nothing is consumed). */
static bool parse_headers(const char **p, const char *end, headers *h) {
  h->n = 0;
  const char *cur = *p, *next;
  const char *e = line_end(cur, end, &next);
  if (e - cur >= 5 && memcmp(cur, "From ", 5) == 0) { /* an mbox separator line */
    cur = next;
    e = line_end(cur, end, &next);
  }
  if (!is_field_line(cur, e)) return false;
  header *last = NULL;
  while (cur < end) {
    e = line_end(cur, end, &next);
    if (e == cur) { /* the blank line */
      cur = next;
      break;
    }
    if ((*cur == ' ' || *cur == '\t') && last) {
      sb_append(&last->value, cur, (size_t)(e - cur)); /* unfolding: the line break goes */
    } else if (is_field_line(cur, e)) {
      const char *colon = memchr(cur, ':', (size_t)(e - cur));
      if (h->n < (int)(sizeof h->v / sizeof h->v[0])) {
        last = &h->v[h->n++];
        last->name = cur;
        last->name_n = (size_t)(colon - cur);
        sb_init(&last->value);
        const char *v = colon + 1;
        while (v < e && (*v == ' ' || *v == '\t')) v++;
        sb_append(&last->value, v, (size_t)(e - v));
      } else {
        last = NULL;
      }
    } else {
      break; /* not a header: the body starts here (no blank line) */
    }
    cur = next;
  }
  *p = cur;
  return true;
}

static const char *header_get(const headers *h, const char *name) {
  size_t n = strlen(name);
  for (int i = 0; i < h->n; i++)
    if (h->v[i].name_n == n && strncasecmp(h->v[i].name, name, n) == 0)
      return h->v[i].value.data ? h->v[i].value.data : "";
  return NULL;
}

/* A parameter of a Content-Type value (boundary, charset), quotes removed; into buf. */
static bool header_param(const char *value, const char *param, char *buf, size_t cap) {
  size_t pn = strlen(param);
  for (const char *p = value; p && *p; p++) {
    if (*p != ';') continue;
    const char *q = p + 1;
    while (*q == ' ' || *q == '\t') q++;
    if (strncasecmp(q, param, pn) != 0 || q[pn] != '=') continue;
    q += pn + 1;
    size_t k = 0;
    if (*q == '"') {
      for (q++; *q && *q != '"' && k + 1 < cap; q++) buf[k++] = *q;
    } else {
      for (; *q && *q != ';' && *q != ' ' && *q != '\t' && k + 1 < cap; q++) buf[k++] = *q;
    }
    buf[k] = 0;
    return k > 0;
  }
  return false;
}

/* The media type of a Content-Type value, lowercased ("text/plain"). */
static void media_type(const char *value, char *buf, size_t cap) {
  size_t k = 0;
  if (value)
    for (const char *p = value; *p && *p != ';' && *p != ' ' && *p != '\t' && k + 1 < cap; p++)
      buf[k++] = (char)tolower((unsigned char)*p);
  buf[k] = 0;
}

/* ------------------------------------------------------------------ decoding */

static int b64_val(int c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

static void base64_decode(const char *s, size_t n, strbuf *out) {
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    int v = b64_val((unsigned char)s[i]);
    if (v < 0) {
      if (s[i] == '=') break;
      continue; /* line breaks and stray characters */
    }
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      sb_putc(out, (char)((acc >> bits) & 0xFF));
    }
  }
}

static int hex_val(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = tolower(c);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Quoted-printable; in a header (RFC 2047 "Q") an underscore is a space. */
static void qp_decode(const char *s, size_t n, bool header, strbuf *out) {
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '=' && i + 2 < n + 0 && hex_val((unsigned char)s[i + 1]) >= 0 && hex_val((unsigned char)s[i + 2]) >= 0) {
      sb_putc(out, (char)(hex_val((unsigned char)s[i + 1]) * 16 + hex_val((unsigned char)s[i + 2])));
      i += 2;
    } else if (c == '=' && !header && (i + 1 == n || s[i + 1] == '\n' || s[i + 1] == '\r')) {
      /* a soft line break */
      if (i + 1 < n && s[i + 1] == '\r') i++;
      if (i + 1 < n && s[i + 1] == '\n') i++;
    } else if (c == '_' && header) {
      sb_putc(out, ' ');
    } else {
      sb_putc(out, c);
    }
  }
}

typedef enum { CS_UTF8, CS_LATIN1, CS_UNKNOWN } charset;

static charset charset_of(const char *name) {
  if (!name || !*name) return CS_UTF8;
  static const char *const utf8[] = {"utf-8", "utf8", "us-ascii", "ascii", NULL};
  static const char *const latin1[] = {"iso-8859-1", "iso8859-1", "latin1", "latin-1", NULL};
  for (int i = 0; utf8[i]; i++)
    if (!strcasecmp(name, utf8[i])) return CS_UTF8;
  for (int i = 0; latin1[i]; i++)
    if (!strcasecmp(name, latin1[i])) return CS_LATIN1;
  return CS_UNKNOWN;
}

/* bytes in charset cs -> UTF-8 (invalid UTF-8 sequences become U+FFFD). */
static void to_utf8(const char *s, size_t n, charset cs, strbuf *out) {
  for (size_t i = 0; i < n;) {
    unsigned char c = (unsigned char)s[i];
    if (cs == CS_LATIN1) {
      sb_put_cp(out, c);
      i++;
      continue;
    }
    int k = utf8_seq_len((const unsigned char *)s + i, n - i);
    if (k == 0) {
      sb_put_cp(out, 0xFFFD);
      i++;
    } else {
      sb_append(out, s + i, (size_t)k);
      i += (size_t)k;
    }
  }
}

/* An unfolded header value with its RFC 2047 encoded words decoded (whitespace between two
 * encoded words dropped); a word in a charset we do not read stays as written. */
static void decode_header(const char *v, strbuf *out) {
  strbuf raw;
  sb_init(&raw);
  bool prev_encoded = false;
  size_t pending_ws = 0;
  const char *ws_start = NULL;
  for (const char *p = v; *p;) {
    if (p[0] == '=' && p[1] == '?') {
      const char *q1 = strchr(p + 2, '?');
      const char *q2 = q1 ? strchr(q1 + 1, '?') : NULL;
      const char *close = q2 ? strstr(q2 + 1, "?=") : NULL;
      if (q1 && q2 && q2 == q1 + 2 && close) {
        char cs[40];
        size_t cl = (size_t)(q1 - (p + 2));
        if (cl < sizeof cs) {
          memcpy(cs, p + 2, cl);
          cs[cl] = 0;
          char *star = strchr(cs, '*'); /* RFC 2231 language suffix */
          if (star) *star = 0;
          charset c = charset_of(cs);
          char enc = (char)toupper((unsigned char)q1[1]);
          if (c != CS_UNKNOWN && (enc == 'B' || enc == 'Q')) {
            if (!prev_encoded && pending_ws) sb_append(out, ws_start, pending_ws);
            sb_reset(&raw);
            if (enc == 'B') base64_decode(q2 + 1, (size_t)(close - (q2 + 1)), &raw);
            else qp_decode(q2 + 1, (size_t)(close - (q2 + 1)), true, &raw);
            to_utf8(raw.data ? raw.data : "", raw.len, c, out);
            prev_encoded = true;
            pending_ws = 0;
            p = close + 2;
            continue;
          }
        }
      }
    }
    if (*p == ' ' || *p == '\t') {
      if (!pending_ws) ws_start = p;
      pending_ws++;
      p++;
      continue;
    }
    if (pending_ws) sb_append(out, ws_start, pending_ws);
    pending_ws = 0;
    prev_encoded = false;
    sb_putc(out, *p++);
  }
  if (pending_ws) sb_append(out, ws_start, pending_ws);
  sb_free(&raw);
}

/* ------------------------------------------------------------------ the body */

typedef struct found {
  strbuf text;
  int rank; /* 0 none, 1 text/html, 2 text/plain */
} found;

static int leaf_text(const headers *h, const char *body, size_t n, const char *what, found *f, laya_error *err) {
  char mt[64], cs[40] = "";
  const char *ct = header_get(h, "Content-Type");
  media_type(ct, mt, sizeof mt);
  int rank = !*mt || !strcmp(mt, "text/plain") ? 2 : !strcmp(mt, "text/html") ? 1 : 0;
  if (rank <= f->rank) return 0;
  if (ct) header_param(ct, "charset", cs, sizeof cs);
  charset c = charset_of(cs);
  if (c == CS_UNKNOWN)
    return laya_value_error(err, "%s: the %s part is in charset %s; laya reads UTF-8, US-ASCII and ISO-8859-1",
                            what, *mt ? mt : "text/plain", cs);
  char enc[32] = "";
  const char *cte = header_get(h, "Content-Transfer-Encoding");
  media_type(cte, enc, sizeof enc);
  strbuf raw;
  sb_init(&raw);
  if (!strcmp(enc, "base64")) base64_decode(body, n, &raw);
  else if (!strcmp(enc, "quoted-printable")) qp_decode(body, n, false, &raw);
  else sb_append(&raw, body, n);
  sb_reset(&f->text);
  to_utf8(raw.data ? raw.data : "", raw.len, c, &f->text);
  f->rank = rank;
  sb_free(&raw);
  return 0;
}

static int entity_text(const headers *h, const char *body, size_t n, int depth, const char *what, found *f,
                       laya_error *err) {
  char mt[64], boundary[200];
  const char *ct = header_get(h, "Content-Type");
  media_type(ct, mt, sizeof mt);
  if (strncmp(mt, "multipart/", 10) != 0 || !header_param(ct, "boundary", boundary, sizeof boundary))
    return leaf_text(h, body, n, what, f, err);
  if (depth >= MAX_DEPTH) return 0;
  size_t bl = strlen(boundary);
  const char *end = body + n, *cur = body, *next, *part = NULL;
  while (cur < end && f->rank < 2) {
    const char *e = line_end(cur, end, &next);
    bool delim = (size_t)(e - cur) >= bl + 2 && cur[0] == '-' && cur[1] == '-' && !memcmp(cur + 2, boundary, bl);
    if (delim) {
      bool closing = (size_t)(e - cur) >= bl + 4 && cur[bl + 2] == '-' && cur[bl + 3] == '-';
      if (part) {
        const char *pe = cur; /* the line break before the delimiter belongs to it */
        if (pe > part && pe[-1] == '\n') pe--;
        if (pe > part && pe[-1] == '\r') pe--;
        headers ph;
        const char *pb = part;
        if (!parse_headers(&pb, pe, &ph)) {
          ph.n = 0;
          /* a part without headers: its body starts after the blank line, if there is one */
          if (pe > part && (*part == '\n' || *part == '\r')) pb = part + (*part == '\r' && part + 1 < pe ? 2 : 1);
        }
        int rc = entity_text(&ph, pb, (size_t)(pe - pb), depth + 1, what, f, err);
        headers_free(&ph);
        if (rc) return rc;
      }
      if (closing) break;
      part = next;
    }
    cur = next;
  }
  return 0;
}

int cli_email_file_state(const char *content, size_t len, int64_t max_chars, const char *what, arena *a,
                         json_value *out, laya_error *err) {
  headers h;
  const char *body = content;
  bool has_headers = parse_headers(&body, content + len, &h);
  if (!has_headers) h.n = 0;
  found f;
  sb_init(&f.text);
  f.rank = 0;
  int rc = entity_text(&h, body, (size_t)(content + len - body), 0, what, &f, err);
  strbuf subject, sender;
  sb_init(&subject);
  sb_init(&sender);
  const char *s = header_get(&h, "Subject"), *fr = header_get(&h, "From");
  /* header bytes outside encoded words are taken as UTF-8, invalid ones becoming U+FFFD */
  strbuf raw;
  sb_init(&raw);
  if (s) decode_header(s, &raw), to_utf8(raw.data ? raw.data : "", raw.len, CS_UTF8, &subject);
  sb_reset(&raw);
  if (fr) decode_header(fr, &raw), to_utf8(raw.data ? raw.data : "", raw.len, CS_UTF8, &sender);
  sb_free(&raw);
  if (!rc) {
    /* email_state(subject, body, sender=From, max_chars=...) */
    json_value req;
    json_member m[4];
    memset(&req, 0, sizeof req);
    /* the sender is the one string the state borrows: it goes into a with it */
    char *from = subject.oom || sender.oom || f.text.oom ? NULL : arena_strndup(a, sb_cstr(&sender), sender.len);
    m[0] = (json_member){"subject", 7, json_string(sb_cstr(&subject))};
    m[1] = (json_member){"body", 4, json_string_n(sb_cstr(&f.text), f.text.len)}; /* a body may hold NULs */
    m[2] = (json_member){"sender", 6, json_string_n(from ? from : "", sender.len)};
    m[3] = (json_member){"max_chars", 9, json_int(max_chars)};
    req.type = JSON_OBJECT;
    req.members = m;
    req.n = 4;
    if (!from) rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    else rc = email_state_value(&req, a, out, err);
  }
  sb_free(&subject);
  sb_free(&sender);
  sb_free(&f.text);
  headers_free(&h);
  return rc;
}
