/*
 * normalizer.c: NFC, NFD, NFKC, NFKD, Lowercase, Replace, Prepend, Strip and Sequence.
 *
 * The reference tracks alignments while normalizing; we only need the resulting text, so each
 * normalizer maps a byte range of the work buffer to a new range (often the same one: a
 * normalizer that changes nothing copies nothing).
 */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "core/json.h"
#include "tokenizer/internal.h"
#include "tokenizer/unicode_tables.h"

static bool all_ascii(const char *s, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, s + i, 8);
    if (w & 0x8080808080808080ull) return false;
  }
  for (; i < n; i++)
    if ((unsigned char)s[i] & 0x80) return false;
  return true;
}

/* utf8proc over [off, off+len), appended to w->buf. */
static int utf8proc_form(utf8proc_option_t opt, tok_work *w, uint32_t off, uint32_t len) {
  /* First pass sizes the code point buffer; decompositions can grow a lot (NFKC of U+FDFA). */
  utf8proc_ssize_t need = (utf8proc_ssize_t)len + 8;
  for (int attempt = 0; attempt < 2; attempt++) {
    uint32_t *u = grow(w->u32, &w->u32_cap, (size_t)need + 1, sizeof *u);
    if (!u) return laya_err(w->err, LAYA_ERR_NOMEM, NULL, "out of memory");
    w->u32 = u;
    utf8proc_ssize_t n = utf8proc_decompose((const utf8proc_uint8_t *)w->buf + off, len,
                                            (utf8proc_int32_t *)u, (utf8proc_ssize_t)w->u32_cap, opt);
    if (n < 0)
      return laya_err(w->err, LAYA_ERR_VALUE, NULL, "normalization failed: %s", utf8proc_errmsg(n));
    if (n > (utf8proc_ssize_t)w->u32_cap) {
      need = n;
      continue;
    }
    /* reencode writes UTF-8 over the code point buffer (4 bytes per cp is always enough) */
    utf8proc_ssize_t b = utf8proc_reencode((utf8proc_int32_t *)u, n, opt);
    if (b < 0)
      return laya_err(w->err, LAYA_ERR_VALUE, NULL, "normalization failed: %s", utf8proc_errmsg(b));
    if (!work_reserve(w, (size_t)b)) return laya_err(w->err, LAYA_ERR_NOMEM, NULL, "out of memory");
    memcpy(w->buf + w->len, u, (size_t)b);
    w->len += (size_t)b;
    return 0;
  }
  return laya_err(w->err, LAYA_ERR_INTERNAL, NULL, "normalization buffer did not converge");
}

/* NFC/NFD/NFKC/NFKD. The reference's tables are older than utf8proc's: a code point it does not
 * know is, for it, a plain starter that neither decomposes nor combines. Such a character is a
 * boundary no normalization crosses, so the text is normalized piecewise between them and the
 * characters themselves are kept as they are. */
static int unicode_form(norm_kind kind, tok_work *w, uint32_t off, uint32_t len, uint32_t *out_off,
                        uint32_t *out_len) {
  if (all_ascii(w->buf + off, len)) { /* every form maps ASCII to itself */
    *out_off = off;
    *out_len = len;
    return 0;
  }
  utf8proc_option_t opt = UTF8PROC_STABLE;
  switch (kind) {
    case NORM_NFC: opt |= UTF8PROC_COMPOSE; break;
    case NORM_NFD: opt |= UTF8PROC_DECOMPOSE; break;
    case NORM_NFKC: opt |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    default: opt |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  const uint16_t *cls = uc_classes();
  size_t start = w->len;
  uint32_t seg = off, end = off + len;
  for (uint32_t i = off; i < end;) {
    uint32_t cp;
    int k = utf8_decode((const unsigned char *)w->buf + i, &cp);
    if (cp >= 0x300 && (uc_class(cls, cp) & UC_NORM_OPAQUE)) {
      if (i > seg && utf8proc_form(opt, w, seg, i - seg)) return -1;
      if (!work_reserve(w, (size_t)k)) return laya_err(w->err, LAYA_ERR_NOMEM, NULL, "out of memory");
      memcpy(w->buf + w->len, w->buf + i, (size_t)k);
      w->len += (size_t)k;
      seg = i + (uint32_t)k;
    }
    i += (uint32_t)k;
  }
  if (end > seg && utf8proc_form(opt, w, seg, end - seg)) return -1;
  *out_off = (uint32_t)start;
  *out_len = (uint32_t)(w->len - start);
  return 0;
}

static int lowercase(tok_work *w, uint32_t off, uint32_t len, uint32_t *out_off, uint32_t *out_len) {
  /* at most 3 code points (İ -> i + U+0307 is the only growth) of at most 4 bytes each per char */
  if (!work_reserve(w, (size_t)len * 3 + 4))
    return laya_err(w->err, LAYA_ERR_NOMEM, NULL, "out of memory");
  const unsigned char *s = (const unsigned char *)w->buf + off;
  char *o = w->buf + w->len;
  size_t k = 0;
  for (size_t i = 0; i < len;) {
    if (s[i] < 0x80) {
      unsigned char c = s[i++];
      o[k++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
      continue;
    }
    uint32_t cp, low[3];
    i += (size_t)utf8_decode(s + i, &cp);
    int n = uc_to_lower(cp, low);
    for (int j = 0; j < n; j++) k += (size_t)utf8_put(o + k, low[j]);
  }
  *out_off = (uint32_t)w->len;
  *out_len = (uint32_t)k;
  w->len += k;
  return 0;
}

static int replace(const normalizer *n, tok_work *w, uint32_t off, uint32_t len, uint32_t *out_off,
                   uint32_t *out_len) {
  w->spans2.n = 0;
  if (pattern_find(&n->pat, w->buf + off, len, &w->spans2, w->err)) return -1;
  if (w->spans2.n == 0) {
    *out_off = off;
    *out_len = len;
    return 0;
  }
  size_t total = len + w->spans2.n * n->content_len;
  if (!work_reserve(w, total)) return laya_err(w->err, LAYA_ERR_NOMEM, NULL, "out of memory");
  const char *s = w->buf + off;
  char *o = w->buf + w->len;
  size_t k = 0, prev = 0;
  for (size_t i = 0; i < w->spans2.n; i++) {
    span m = w->spans2.v[i];
    memcpy(o + k, s + prev, m.start - prev);
    k += m.start - prev;
    memcpy(o + k, n->content, n->content_len);
    k += n->content_len;
    prev = m.end;
  }
  memcpy(o + k, s + prev, len - prev);
  k += len - prev;
  *out_off = (uint32_t)w->len;
  *out_len = (uint32_t)k;
  w->len += k;
  return 0;
}

static bool is_ws_at(const uint16_t *cls, const unsigned char *s, size_t i, int *n) {
  uint32_t cp;
  *n = utf8_decode(s + i, &cp);
  return uc_class(cls, cp) & UC_WS;
}

static void strip(const normalizer *n, tok_work *w, uint32_t off, uint32_t len, uint32_t *out_off,
                  uint32_t *out_len) {
  const uint16_t *cls = uc_classes();
  const unsigned char *s = (const unsigned char *)w->buf + off;
  size_t a = 0, b = len;
  if (n->strip_left) {
    int k;
    while (a < b && is_ws_at(cls, s, a, &k)) a += (size_t)k;
  }
  if (n->strip_right) {
    while (b > a) {
      size_t p = b - 1;
      while (p > a && (s[p] & 0xC0) == 0x80) p--;
      int k;
      if (!is_ws_at(cls, s, p, &k)) break;
      b = p;
    }
  }
  *out_off = off + (uint32_t)a;
  *out_len = (uint32_t)(b - a);
}

int normalize_apply(const normalizer *n, tok_work *w, uint32_t off, uint32_t len, uint32_t *out_off,
                    uint32_t *out_len) {
  switch (n->kind) {
    case NORM_NFC:
    case NORM_NFD:
    case NORM_NFKC:
    case NORM_NFKD:
      return unicode_form(n->kind, w, off, len, out_off, out_len);
    case NORM_LOWERCASE:
      return lowercase(w, off, len, out_off, out_len);
    case NORM_REPLACE:
      return replace(n, w, off, len, out_off, out_len);
    case NORM_PREPEND:
      if (len == 0) {
        *out_off = off;
        *out_len = 0;
        return 0;
      }
      if (!work_reserve(w, n->content_len + len))
        return laya_err(w->err, LAYA_ERR_NOMEM, NULL, "out of memory");
      memcpy(w->buf + w->len, n->content, n->content_len);
      memcpy(w->buf + w->len + n->content_len, w->buf + off, len);
      *out_off = (uint32_t)w->len;
      *out_len = (uint32_t)(n->content_len + len);
      w->len += n->content_len + len;
      return 0;
    case NORM_STRIP:
      strip(n, w, off, len, out_off, out_len);
      return 0;
    case NORM_SEQUENCE:
      *out_off = off;
      *out_len = len;
      for (size_t i = 0; i < n->n_items; i++)
        if (normalize_apply(&n->items[i], w, *out_off, *out_len, out_off, out_len)) return -1;
      return 0;
  }
  return laya_err(w->err, LAYA_ERR_INTERNAL, NULL, "unknown normalizer");
}

static uint32_t first_cp_len(const char *s, uint32_t len) {
  if (!len) return 0;
  uint32_t cp;
  return (uint32_t)utf8_decode((const unsigned char *)s, &cp);
}

/* How many leading output bytes stem from the input's first character. The reference tracks an
 * alignment per character; only this prefix matters (for Metaspace "first"), so it is followed
 * through each normalizer rather than aligning everything. */
static int first_through(const normalizer *n, tok_work *w, uint32_t in_off, uint32_t in_first,
                         uint32_t out_off, uint32_t out_len, uint32_t *first) {
  if (!in_first) {
    *first = 0;
    return 0;
  }
  switch (n->kind) {
    case NORM_NFC:
    case NORM_NFD:
    case NORM_NFKC:
    case NORM_NFKD:
    case NORM_LOWERCASE: {
      /* the first character alone, normalized: the output starts with it unless it composed or
       * reordered with what follows, and then the first output character is still its own */
      uint32_t o, l;
      if (normalize_apply(n, w, in_off, in_first, &o, &l)) return -1;
      *first = (l <= out_len && memcmp(w->buf + o, w->buf + out_off, l) == 0)
                   ? l : first_cp_len(w->buf + out_off, out_len);
      return 0;
    }
    case NORM_PREPEND:
      *first = out_len ? (uint32_t)n->content_len + in_first : 0;
      return 0;
    case NORM_STRIP:
      *first = first_after(in_first, out_off - in_off);
      return 0;
    case NORM_REPLACE:
      /* a match at 0: its replacement stands where the first character stood */
      if (w->spans2.n && w->spans2.v[0].start == 0)
        *first = (uint32_t)n->content_len ? (uint32_t)n->content_len : 0;
      else
        *first = w->spans2.n && w->spans2.v[0].start < in_first ? w->spans2.v[0].start : in_first;
      return 0;
    case NORM_SEQUENCE:
      break;
  }
  *first = in_first;
  return 0;
}

int normalize_piece(const normalizer *n, tok_work *w, piece *pc) {
  if (n->kind == NORM_SEQUENCE) {
    for (size_t i = 0; i < n->n_items; i++)
      if (normalize_piece(&n->items[i], w, pc)) return -1;
    return 0;
  }
  uint32_t o, l, f;
  w->spans2.n = 0;
  if (normalize_apply(n, w, pc->off, pc->len, &o, &l)) return -1;
  /* Replace leaves its matches in spans2; first_through reads them before anything else runs */
  if (first_through(n, w, pc->off, pc->first, o, l, &f)) return -1;
  pc->off = o;
  pc->len = l;
  pc->first = f;
  return 0;
}

int normalize_string(const normalizer *n, const char *s, size_t len, char **out, size_t *out_len,
                     laya_error *err) {
  tok_work w;
  work_init(&w, err);
  int rc = -1;
  if (work_reserve(&w, len + 1)) {
    memcpy(w.buf, s, len);
    w.len = len;
    uint32_t o, l;
    if (!normalize_apply(n, &w, 0, (uint32_t)len, &o, &l)) {
      *out = malloc((size_t)l + 1);
      if (*out) {
        memcpy(*out, w.buf + o, l);
        (*out)[l] = 0;
        *out_len = l;
        rc = 0;
      } else {
        laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
      }
    }
  } else {
    laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  }
  work_free(&w);
  return rc;
}

/* ---- load ---- */

static const json_value *need(const json_value *v, const char *key, json_type type, const char *what,
                              laya_error *err) {
  const json_value *x = json_get(v, key);
  if (!x || x->type != type) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: missing or wrong type for \"%s\"", what, key);
    return NULL;
  }
  return x;
}

/* Replace / Split patterns are {"String": s} or {"Regex": r}. */
int pattern_load(tokenizer *t, const json_value *v, tk_pattern *pat, const char *what, laya_error *err) {
  if (!v || v->type != JSON_OBJECT || v->n != 1) {
    return laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: \"pattern\" must be {\"String\": ...} or {\"Regex\": ...}", what);
  }
  const json_member *m = &v->members[0];
  bool is_regex = strcmp(m->key, "Regex") == 0;
  if ((!is_regex && strcmp(m->key, "String") != 0) || m->value.type != JSON_STRING) {
    return laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: \"pattern\" must be {\"String\": ...} or {\"Regex\": ...}", what);
  }
  if (pattern_compile(pat, m->value.s, m->value.n, is_regex, &t->a, err)) {
    laya_err_prefix(err, "%s", what);
    return -1;
  }
  return 0;
}

static int load_one(tokenizer *t, const json_value *v, normalizer *n, laya_error *err) {
  memset(n, 0, sizeof *n);
  const json_value *type = json_get(v, "type");
  if (!type || type->type != JSON_STRING)
    return laya_err(err, LAYA_ERR_FORMAT, NULL, "normalizer without a \"type\"");
  const char *ty = type->s;
  if (!strcmp(ty, "NFC")) n->kind = NORM_NFC;
  else if (!strcmp(ty, "NFD")) n->kind = NORM_NFD;
  else if (!strcmp(ty, "NFKC")) n->kind = NORM_NFKC;
  else if (!strcmp(ty, "NFKD")) n->kind = NORM_NFKD;
  else if (!strcmp(ty, "Lowercase")) n->kind = NORM_LOWERCASE;
  else if (!strcmp(ty, "Replace")) {
    n->kind = NORM_REPLACE;
    const json_value *c = need(v, "content", JSON_STRING, "Replace normalizer", err);
    if (!c) return -1;
    n->content = c->s;
    n->content_len = c->n;
    if (pattern_load(t, json_get(v, "pattern"), &n->pat, "Replace normalizer", err)) return -1;
  } else if (!strcmp(ty, "Prepend")) {
    n->kind = NORM_PREPEND;
    const json_value *c = need(v, "prepend", JSON_STRING, "Prepend normalizer", err);
    if (!c) return -1;
    n->content = c->s;
    n->content_len = c->n;
  } else if (!strcmp(ty, "Strip")) {
    n->kind = NORM_STRIP;
    const json_value *l = need(v, "strip_left", JSON_BOOL, "Strip normalizer", err);
    const json_value *r = l ? need(v, "strip_right", JSON_BOOL, "Strip normalizer", err) : NULL;
    if (!l || !r) return -1;
    n->strip_left = l->b;
    n->strip_right = r->b;
  } else if (!strcmp(ty, "Sequence")) {
    n->kind = NORM_SEQUENCE;
    const json_value *items = need(v, "normalizers", JSON_ARRAY, "Sequence normalizer", err);
    if (!items) return -1;
    n->items = arena_alloc(&t->a, sizeof *n->items * (items->n ? items->n : 1));
    if (!n->items) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    for (uint32_t i = 0; i < items->n; i++) {
      n->n_items++; /* counted first so that a failed load is still freed */
      if (load_one(t, &items->items[i], &n->items[i], err)) return -1;
    }
  } else {
    return laya_err(err, LAYA_ERR_UNSUPPORTED, NULL,
                    "normalizer \"%s\" is not supported (supported: NFC, NFD, NFKC, NFKD, Lowercase, "
                    "Replace, Prepend, Strip, Sequence)", ty);
  }
  return 0;
}

int normalizer_load(tokenizer *t, const json_value *v, normalizer **out, laya_error *err) {
  *out = NULL;
  if (!v || v->type == JSON_NULL) return 0;
  if (v->type != JSON_OBJECT) return laya_err(err, LAYA_ERR_FORMAT, NULL, "\"normalizer\" must be an object or null");
  normalizer *n = arena_alloc(&t->a, sizeof *n);
  if (!n) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  *out = n;
  return load_one(t, v, n, err);
}

void normalizer_free(normalizer *n) {
  if (!n) return;
  pattern_free(&n->pat);
  for (size_t i = 0; i < n->n_items; i++) normalizer_free(&n->items[i]);
}
