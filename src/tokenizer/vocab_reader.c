/*
 * vocab_reader.c: a streaming reader for the two big members of tokenizer.json, model.vocab and
 * model.merges (Gemma's file is 33 MB, nearly all of it these two).
 *
 * Building a general JSON tree for them costs ~380 MB and most of a second; reading them straight
 * into the hash maps costs a fraction. The rest of the file is small: tokenizer.c blanks these two
 * values out (with whitespace) and hands the remainder to the general reader (core/json.c), so the
 * whole file is still validated. Strings follow serde_json: no raw control characters, no lone
 * surrogate escapes, valid UTF-8.
 */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/internal.h"

typedef struct reader {
  const char *start, *p, *end;
  const char *file;
  laya_error *err;
  bool failed;
} reader;

static bool fail(reader *r, const char *at, const char *what) {
  if (!r->failed)
    laya_err(r->err, LAYA_ERR_FORMAT, NULL, "%s: invalid tokenizer.json at byte %zu: %s", r->file,
             (size_t)(at - r->start), what);
  r->failed = true;
  return false;
}

static void ws(reader *r) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t')) r->p++;
}

static int hexv(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static bool hex4(reader *r, const char *q, uint32_t *v) {
  if (r->end - q < 4) return fail(r, q, "truncated \\u escape");
  *v = 0;
  for (int k = 0; k < 4; k++) {
    int h = hexv(q[k]);
    if (h < 0) return fail(r, q, "invalid \\u escape");
    *v = *v * 16 + (uint32_t)h;
  }
  return true;
}

/* Decode a JSON string at r->p (at the quote) into *buf (grown); sets *len. */
static bool read_string(reader *r, char **buf, size_t *cap, size_t *len) {
  if (r->p >= r->end || *r->p != '"') return fail(r, r->p, "expected a string");
  const char *q = ++r->p;
  /* fast path: no escapes */
  const char *e = q;
  while (e < r->end && *e != '"' && *e != '\\' && (unsigned char)*e >= 0x20) e++;
  if (e < r->end && *e == '"') {
    size_t n = (size_t)(e - q);
    if (utf8_validate(q, n) != n) return fail(r, q + utf8_validate(q, n), "invalid UTF-8 in a string");
    char *b = grow(*buf, cap, n + 1, 1);
    if (!b) return fail(r, q, "out of memory");
    *buf = b;
    memcpy(b, q, n);
    *len = n;
    r->p = e + 1;
    return true;
  }
  size_t n = 0;
  const char *s = q;
  while (s < r->end && *s != '"') {
    char *b = grow(*buf, cap, n + 8, 1);
    if (!b) return fail(r, s, "out of memory");
    *buf = b;
    unsigned char c = (unsigned char)*s;
    if (c < 0x20) return fail(r, s, "control character in a string");
    if (c != '\\') {
      /* copy a run of plain bytes, validated below as a whole */
      const char *t = s;
      while (t < r->end && *t != '"' && *t != '\\' && (unsigned char)*t >= 0x20) t++;
      size_t k = (size_t)(t - s);
      if (utf8_validate(s, k) != k) return fail(r, s + utf8_validate(s, k), "invalid UTF-8 in a string");
      b = grow(*buf, cap, n + k + 8, 1);
      if (!b) return fail(r, s, "out of memory");
      *buf = b;
      memcpy(b + n, s, k);
      n += k;
      s = t;
      continue;
    }
    if (r->end - s < 2) return fail(r, s, "unterminated string");
    char x = s[1];
    s += 2;
    switch (x) {
      case '"': b[n++] = '"'; break;
      case '\\': b[n++] = '\\'; break;
      case '/': b[n++] = '/'; break;
      case 'b': b[n++] = '\b'; break;
      case 'f': b[n++] = '\f'; break;
      case 'n': b[n++] = '\n'; break;
      case 'r': b[n++] = '\r'; break;
      case 't': b[n++] = '\t'; break;
      case 'u': {
        uint32_t cp;
        if (!hex4(r, s, &cp)) return false;
        s += 4;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return fail(r, s - 6, "lone surrogate escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t lo;
          if (r->end - s < 6 || s[0] != '\\' || s[1] != 'u' || !hex4(r, s + 2, &lo) || lo < 0xDC00 ||
              lo > 0xDFFF) {
            r->failed = false; /* report the surrogate, not the escape after it */
            return fail(r, s - 6, "lone surrogate escape");
          }
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          s += 6;
        }
        n += (size_t)utf8_put(b + n, cp);
        break;
      }
      default:
        return fail(r, s - 2, "invalid escape");
    }
  }
  if (s >= r->end) return fail(r, q - 1, "unterminated string");
  *len = n;
  r->p = s + 1;
  return true;
}

static bool expect(reader *r, char c, const char *what) {
  ws(r);
  if (r->p >= r->end || *r->p != c) return fail(r, r->p, what);
  r->p++;
  return true;
}

/* Skip any JSON value (validating its shape loosely; core/json.c validates it fully later). */
static bool skip_value(reader *r, int depth) {
  ws(r);
  if (r->p >= r->end) return fail(r, r->p, "expected a value");
  if (depth > 1000) return fail(r, r->p, "nesting too deep");
  char c = *r->p;
  if (c == '"') {
    r->p++;
    while (r->p < r->end && *r->p != '"') r->p += *r->p == '\\' ? 2 : 1;
    if (r->p >= r->end) return fail(r, r->p, "unterminated string");
    r->p++;
    return true;
  }
  if (c == '{' || c == '[') {
    char close = c == '{' ? '}' : ']';
    r->p++;
    ws(r);
    if (r->p < r->end && *r->p == close) {
      r->p++;
      return true;
    }
    for (;;) {
      if (c == '{') {
        ws(r);
        if (!skip_value(r, depth + 1) || !expect(r, ':', "expected ':'")) return false;
      }
      if (!skip_value(r, depth + 1)) return false;
      ws(r);
      if (r->p < r->end && *r->p == ',') {
        r->p++;
        continue;
      }
      return expect(r, close, "expected ',' or a closing bracket");
    }
  }
  while (r->p < r->end && !strchr(",}] \t\r\n", *r->p)) r->p++;
  return true;
}

static bool key_is(reader *r, const char *key) {
  size_t n = strlen(key);
  return r->end - r->p >= (ptrdiff_t)n + 2 && r->p[0] == '"' && memcmp(r->p + 1, key, n) == 0 &&
         r->p[n + 1] == '"';
}

int vocab_find_spans(const char *text, size_t len, const char *file, span *vocab, span *merges,
                     laya_error *err) {
  reader r = {text, text, text + len, file, err, false};
  vocab->start = vocab->end = merges->start = merges->end = 0;
  if (!expect(&r, '{', "the file must hold a JSON object")) return -1;
  ws(&r);
  if (r.p < r.end && *r.p == '}') return 0;
  for (;;) {
    ws(&r);
    if (r.p >= r.end || *r.p != '"') return fail(&r, r.p, "expected a string key"), -1;
    bool is_model = key_is(&r, "model");
    if (!skip_value(&r, 1) || !expect(&r, ':', "expected ':'")) return -1;
    ws(&r);
    if (is_model && r.p < r.end && *r.p == '{') {
      /* walk the model's members, remembering where vocab and merges are */
      r.p++;
      ws(&r);
      if (r.p < r.end && *r.p == '}') {
        r.p++;
      } else {
        for (;;) {
          ws(&r);
          if (r.p >= r.end || *r.p != '"') return fail(&r, r.p, "expected a string key"), -1;
          int which = key_is(&r, "vocab") ? 1 : key_is(&r, "merges") ? 2 : 0;
          if (!skip_value(&r, 2) || !expect(&r, ':', "expected ':'")) return -1;
          ws(&r);
          const char *vs = r.p;
          if (!skip_value(&r, 2)) return -1;
          if (which == 1) *vocab = (span){(uint32_t)(vs - text), (uint32_t)(r.p - text)};
          if (which == 2) *merges = (span){(uint32_t)(vs - text), (uint32_t)(r.p - text)};
          ws(&r);
          if (r.p < r.end && *r.p == ',') {
            r.p++;
            continue;
          }
          if (!expect(&r, '}', "expected ',' or '}' in \"model\"")) return -1;
          break;
        }
      }
    } else if (!skip_value(&r, 1)) {
      return -1;
    }
    ws(&r);
    if (r.p < r.end && *r.p == ',') {
      r.p++;
      continue;
    }
    if (!expect(&r, '}', "expected ',' or '}'")) return -1;
    return 0;
  }
}

/* model.vocab: {"token": id, ...} straight into the map; strings kept in the tokenizer's arena. */
int vocab_read(tokenizer *t, const char *text, span sp, const char *file, laya_error *err) {
  reader r = {text, text + sp.start, text + sp.end, file, err, false};
  char *buf = NULL;
  size_t cap = 0, n;
  int rc = -1;
  if (!expect(&r, '{', "\"vocab\" must be an object")) goto done;
  /* a rough count sizes the map: one entry per ':' is an upper bound */
  uint32_t guess = 0;
  for (const char *q = r.p; q < r.end; q++) guess += *q == ':';
  if (!str_map_init(&t->bpe.vocab, guess)) {
    laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    goto done;
  }
  ws(&r);
  if (r.p < r.end && *r.p == '}') {
    rc = 0;
    goto done;
  }
  /* entries are parsed in batches whose slots are prefetched before they are inserted */
  struct {
    const char *s;
    uint32_t n, h;
    int32_t id;
  } batch[32];
  for (bool more = true; more;) {
    size_t k = 0;
    bool parse_failed = false;
    while (k < 32) {
      ws(&r);
      if (!read_string(&r, &buf, &cap, &n) || !expect(&r, ':', "expected ':' in \"vocab\"")) {
        parse_failed = true;
        break;
      }
      ws(&r);
      const char *num = r.p;
      uint64_t id = 0;
      while (r.p < r.end && *r.p >= '0' && *r.p <= '9' && id < (1u << 26)) id = id * 10 + (uint64_t)(*r.p++ - '0');
      if (r.p == num || id >= (1u << 26) || (r.p < r.end && strchr(".eE-+0123456789", *r.p)) ||
          (r.p - num > 1 && num[0] == '0')) {
        fail(&r, num, "vocab ids must be integers in [0, 2^26)");
        parse_failed = true;
        break;
      }
      char *str = arena_strndup(&t->a, buf ? buf : "", n);
      if (!str) {
        fail(&r, num, "out of memory");
        parse_failed = true;
        break;
      }
      uint32_t h = tk_hash(str, n);
      __builtin_prefetch(&t->bpe.vocab.slots[h & t->bpe.vocab.mask]);
      batch[k].s = str;
      batch[k].n = (uint32_t)n;
      batch[k].h = h;
      batch[k++].id = (int32_t)id;
      ws(&r);
      if (r.p < r.end && *r.p == ',') {
        r.p++;
        continue;
      }
      if (!expect(&r, '}', "expected ',' or '}' in \"vocab\"")) parse_failed = true;
      more = false;
      break;
    }
    for (size_t i = 0; i < k; i++) {
      if (!str_map_put_hashed(&t->bpe.vocab, batch[i].s, batch[i].n, batch[i].id, batch[i].h)) {
        laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
        goto done;
      }
    }
    if (parse_failed) goto done;
  }
  rc = 0;
done:
  free(buf);
  return rc;
}

/* model.merges: ["a b", ...] (legacy) or [["a", "b"], ...]; ranks are positions in the list.
 *
 * Each merge costs three vocab lookups (a, b, and a+b), each a likely cache miss in a table of a
 * few MB. Merges are therefore read in batches: parse a batch, prefetch the slots of every a and b,
 * resolve them, prefetch the slots of every a+b, resolve those. Errors are still reported for the
 * first bad merge in file order. */
#define MERGE_BATCH 32

typedef struct pending_merge {
  uint32_t a_off, al, b_off, bl, m_off, ml;
  uint32_t ha, hb, hm;
  int32_t ia, ib;
} pending_merge;

static void prefetch_slot(const str_map *m, uint32_t h) {
  __builtin_prefetch(&m->slots[h & m->mask]);
}

/* Resolve a parsed batch in file order; -1 (with err set) at the first bad merge. */
static int resolve_batch(tokenizer *t, pending_merge *pm, size_t n, const char *buf, char **mg,
                         size_t *mcap, uint32_t *rank, const char *file, laya_error *err) {
  bpe_model *m = &t->bpe;
  for (size_t i = 0; i < n; i++) prefetch_slot(&m->vocab, pm[i].ha), prefetch_slot(&m->vocab, pm[i].hb);
  size_t need = 0;
  for (size_t i = 0; i < n; i++) need += pm[i].al + pm[i].bl;
  char *g = grow(*mg, mcap, need + 1, 1);
  if (!g) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  *mg = g;
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    pending_merge *p = &pm[i];
    p->ia = str_map_get_hashed(&m->vocab, buf + p->a_off, p->al, p->ha);
    p->ib = str_map_get_hashed(&m->vocab, buf + p->b_off, p->bl, p->hb);
    p->ml = 0;
    if (p->ia < 0 || p->ib < 0 || p->bl < m->prefix_len) continue;
    p->m_off = (uint32_t)off;
    p->ml = p->al + p->bl - (uint32_t)m->prefix_len;
    memcpy(g + off, buf + p->a_off, p->al);
    memcpy(g + off + p->al, buf + p->b_off + m->prefix_len, p->bl - m->prefix_len);
    p->hm = tk_hash(g + off, p->ml);
    prefetch_slot(&m->vocab, p->hm);
    off += p->ml;
  }
  for (size_t i = 0; i < n; i++) {
    pending_merge *p = &pm[i];
    if (p->ia < 0 || p->ib < 0) {
      bool a_bad = p->ia < 0;
      return laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: merge %u: token \"%.*s\" is not in the vocabulary", file,
                      *rank, (int)(a_bad ? p->al : p->bl), buf + (a_bad ? p->a_off : p->b_off));
    }
    if (p->bl < m->prefix_len)
      return laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: merge %u: \"%.*s\" is shorter than continuing_subword_prefix",
                      file, *rank, (int)p->bl, buf + p->b_off);
    int32_t im = str_map_get_hashed(&m->vocab, g + p->m_off, p->ml, p->hm);
    if (im < 0)
      return laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: merge %u: merged token \"%.*s\" is not in the vocabulary",
                      file, *rank, (int)p->ml, g + p->m_off);
    pair_map_put(&m->merges, (uint32_t)p->ia, (uint32_t)p->ib, *rank, (uint32_t)im);
    (*rank)++;
  }
  return 0;
}

int merges_read(tokenizer *t, const char *text, span sp, const char *file, laya_error *err) {
  bpe_model *m = &t->bpe;
  reader r = {text, text + sp.start, text + sp.end, file, err, false};
  char *a = NULL, *b = NULL, *mg = NULL, *buf = NULL;
  size_t acap = 0, bcap = 0, mcap = 0, bufcap = 0, buflen = 0, al, bl, n = 0;
  pending_merge pm[MERGE_BATCH];
  uint32_t rank = 0;
  int rc = -1;
  bool more = true;
  if (!expect(&r, '[', "\"merges\" must be a list")) goto done;
  uint32_t guess = 0;
  for (const char *q = r.p; q < r.end; q++) guess += *q == '"';
  if (!pair_map_init(&m->merges, guess / 2 + 1)) {
    laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    goto done;
  }
  ws(&r);
  if (r.p < r.end && *r.p == ']') {
    rc = 0;
    goto done;
  }
  while (more) {
    /* parse up to a batch */
    bool parse_failed = false;
    n = 0;
    buflen = 0;
    while (n < MERGE_BATCH) {
      ws(&r);
      const char *at = r.p;
      if (r.p < r.end && *r.p == '[') {
        r.p++;
        ws(&r);
        if (!read_string(&r, &a, &acap, &al) || !expect(&r, ',', "a merge pair is [\"a\", \"b\"]")) {
          parse_failed = true;
          break;
        }
        ws(&r);
        if (!read_string(&r, &b, &bcap, &bl) || !expect(&r, ']', "a merge pair is [\"a\", \"b\"]")) {
          parse_failed = true;
          break;
        }
      } else {
        if (!read_string(&r, &a, &acap, &al)) {
          parse_failed = true;
          break;
        }
        if (al >= 8 && memcmp(a, "#version", 8) == 0) goto next; /* takes no rank */
        char *sp1 = memchr(a, ' ', al);
        if (!sp1 || memchr(sp1 + 1, ' ', al - (size_t)(sp1 + 1 - a))) {
          fail(&r, at, "a legacy merge must be \"a b\" with exactly one space");
          parse_failed = true;
          break;
        }
        bl = al - (size_t)(sp1 + 1 - a);
        char *nb = grow(b, &bcap, bl + 1, 1);
        if (!nb) {
          fail(&r, at, "out of memory");
          parse_failed = true;
          break;
        }
        b = nb;
        memcpy(b, sp1 + 1, bl);
        al = (size_t)(sp1 - a);
      }
      {
        char *nb = grow(buf, &bufcap, buflen + al + bl + 1, 1);
        if (!nb) {
          fail(&r, at, "out of memory");
          parse_failed = true;
          break;
        }
        buf = nb;
        pending_merge *p = &pm[n++];
        p->a_off = (uint32_t)buflen;
        p->al = (uint32_t)al;
        if (al) memcpy(buf + buflen, a, al);
        buflen += al;
        p->b_off = (uint32_t)buflen;
        p->bl = (uint32_t)bl;
        if (bl) memcpy(buf + buflen, b, bl);
        buflen += bl;
        p->ha = tk_hash(buf + p->a_off, al);
        p->hb = tk_hash(buf + p->b_off, bl);
      }
    next:
      ws(&r);
      if (r.p < r.end && *r.p == ',') {
        r.p++;
        continue;
      }
      if (!expect(&r, ']', "expected ',' or ']' in \"merges\"")) parse_failed = true;
      more = false;
      break;
    }
    /* merges before a syntax error are checked first, so the first problem in the file is named */
    laya_error perr = {0};
    if (parse_failed && err) perr = *err;
    if (n && resolve_batch(t, pm, n, buf ? buf : "", &mg, &mcap, &rank, file, err)) goto done;
    if (parse_failed) {
      if (err) *err = perr;
      goto done;
    }
  }
  rc = 0;
done:
  free(a);
  free(b);
  free(mg);
  free(buf);
  return rc;
}
