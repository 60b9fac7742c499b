/*
 * decoder.c: ids -> text, as the reference's decode(ids, skip_special_tokens=False).
 *
 * Every decoder maps a list of token strings to a new list (the reference's decode_chain); the
 * final list is concatenated. Ids that name no token are skipped, like the reference does.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "tokenizer/internal.h"

uint32_t bytelevel_char(uint8_t b);
int parse_prepend_scheme(const json_value *v, prepend_scheme *out, const char *what, laya_error *err);
int parse_replacement(const json_value *v, uint32_t *cp, const char *what, laya_error *err);

typedef struct tok_list {
  char *buf;
  size_t len, cap;
  size_t *off, *n;
  size_t count, cap_items;
  bool oom;
} tok_list;

static void list_free(tok_list *l) {
  free(l->buf);
  free(l->off);
  free(l->n);
  memset(l, 0, sizeof *l);
}

static bool list_bytes(tok_list *l, const char *s, size_t n) {
  char *b = grow(l->buf, &l->cap, l->len + n + 1, 1);
  if (!b) {
    l->oom = true;
    return false;
  }
  l->buf = b;
  if (n) memcpy(b + l->len, s, n);
  l->len += n;
  return true;
}

/* Start a new token at the current end of the buffer. */
static bool list_begin(tok_list *l) {
  if (!l->buf && !list_bytes(l, "", 0)) return false; /* tokens always point into a buffer */
  if (l->count == l->cap_items) {
    size_t c1 = l->cap_items, c2 = l->cap_items;
    size_t *o = grow(l->off, &c1, l->count + 1, sizeof *o);
    if (o) l->off = o;
    size_t *n = grow(l->n, &c2, l->count + 1, sizeof *n);
    if (n) l->n = n;
    if (!o || !n) {
      l->oom = true;
      return false;
    }
    l->cap_items = c1 < c2 ? c1 : c2;
  }
  l->off[l->count] = l->len;
  l->n[l->count] = 0;
  l->count++;
  return true;
}

static bool list_append(tok_list *l, const char *s, size_t n) {
  if (!list_bytes(l, s, n)) return false;
  l->n[l->count - 1] += n;
  return true;
}

static bool list_add(tok_list *l, const char *s, size_t n) { return list_begin(l) && list_append(l, s, n); }

#define TOK(l, i) ((l)->buf + (l)->off[i])

/* ---- UTF-8 repair, as Rust's String::from_utf8_lossy (one U+FFFD per maximal invalid part) ---- */

static bool append_lossy(tok_list *l, const unsigned char *s, size_t n) {
  static const char fffd[] = "\xEF\xBF\xBD";
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    if (c < 0x80) {
      size_t j = i;
      while (j < n && s[j] < 0x80) j++;
      if (!list_append(l, (const char *)s + i, j - i)) return false;
      i = j;
      continue;
    }
    size_t need;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 2;
    else if (c == 0xE0) { need = 3; lo = 0xA0; }
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) need = 3;
    else if (c == 0xED) { need = 3; hi = 0x9F; }
    else if (c == 0xF0) { need = 4; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) need = 4;
    else if (c == 0xF4) { need = 4; hi = 0x8F; }
    else need = 0;
    size_t k = 1;
    if (need) {
      if (i + 1 < n && s[i + 1] >= lo && s[i + 1] <= hi) {
        k = 2;
        while (k < need && i + k < n && (s[i + k] & 0xC0) == 0x80) k++;
      }
    }
    if (need && k == need) {
      if (!list_append(l, (const char *)s + i, k)) return false;
    } else {
      if (!list_append(l, fffd, 3)) return false;
    }
    i += k;
  }
  return true;
}

/* ---- one decoder step: in -> out ---- */

/* inverse of the GPT-2 byte table: char (all below U+0144) -> byte */
static int16_t byte_inv[0x144];
static pthread_once_t byte_inv_once = PTHREAD_ONCE_INIT;

static void build_byte_inv(void) {
  for (int i = 0; i < 0x144; i++) byte_inv[i] = -1;
  for (int b = 0; b < 256; b++) byte_inv[bytelevel_char((uint8_t)b)] = (int16_t)b;
}

static int byte_of_char(uint32_t cp) {
  pthread_once(&byte_inv_once, build_byte_inv);
  return cp < 0x144 ? byte_inv[cp] : -1;
}

static bool step(const decoder *d, tok_list *in, tok_list *out, laya_error *err, int *rc) {
  switch (d->kind) {
    case DEC_BYTELEVEL: {
      /* all tokens become one byte string, then lossy UTF-8 */
      char *bytes = NULL;
      size_t blen = 0, bcap = 0;
      for (size_t i = 0; i < in->count; i++) {
        const char *s = TOK(in, i);
        size_t n = in->n[i];
        char *b = grow(bytes, &bcap, blen + n + 1, 1);
        if (!b) {
          free(bytes);
          out->oom = true;
          return false;
        }
        bytes = b;
        size_t start = blen;
        bool ok = true;
        for (size_t j = 0; j < n;) {
          uint32_t cp;
          j += (size_t)utf8_decode((const unsigned char *)s + j, &cp);
          int by = byte_of_char(cp);
          if (by < 0) {
            ok = false;
            break;
          }
          bytes[blen++] = (char)by;
        }
        if (!ok) {
          blen = start;
          memcpy(bytes + blen, s, n);
          blen += n;
        }
      }
      bool ok = list_begin(out) && append_lossy(out, (const unsigned char *)bytes, blen);
      free(bytes);
      return ok;
    }
    case DEC_METASPACE:
      for (size_t i = 0; i < in->count; i++) {
        if (!list_begin(out)) return false;
        const char *s = TOK(in, i);
        for (size_t j = 0; j < in->n[i];) {
          uint32_t cp;
          int k = utf8_decode((const unsigned char *)s + j, &cp);
          if (cp == d->replacement) {
            if (!(i == 0 && d->prepend != PREPEND_NEVER) && !list_append(out, " ", 1)) return false;
          } else if (!list_append(out, s + j, (size_t)k)) {
            return false;
          }
          j += (size_t)k;
        }
      }
      return true;
    case DEC_REPLACE: {
      span_vec sv = {0};
      for (size_t i = 0; i < in->count; i++) {
        const char *s = TOK(in, i);
        sv.n = 0;
        if (pattern_find(&d->pat, s, in->n[i], &sv, err)) {
          free(sv.v);
          *rc = -1;
          return false;
        }
        if (!list_begin(out)) break;
        size_t prev = 0;
        for (size_t k = 0; k < sv.n; k++) {
          if (!list_append(out, s + prev, sv.v[k].start - prev) ||
              !list_append(out, d->content, d->content_len))
            break;
          prev = sv.v[k].end;
        }
        if (!list_append(out, s + prev, in->n[i] - prev)) break;
      }
      free(sv.v);
      return !out->oom;
    }
    case DEC_BYTE_FALLBACK: {
      unsigned char *pend = NULL;
      size_t np = 0, cap = 0;
      for (size_t i = 0; i <= in->count; i++) {
        int byte = -1;
        if (i < in->count) {
          const char *s = TOK(in, i);
          if (in->n[i] == 6 && memcmp(s, "<0x", 3) == 0 && s[5] == '>') {
            /* u8::from_str_radix(s[3..5], 16): two hex digits, or '+' and one */
            int v = 0, ok = 1;
            for (int k = 3; k < 5; k++) {
              char c = s[k];
              int h = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                                     : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
              if (h < 0 && !(k == 3 && c == '+')) ok = 0;
              if (h >= 0) v = v * 16 + h;
            }
            if (ok) byte = v;
          }
        }
        if (byte >= 0) {
          unsigned char *p = grow(pend, &cap, np + 1, 1);
          if (!p) {
            free(pend);
            out->oom = true;
            return false;
          }
          pend = p;
          pend[np++] = (unsigned char)byte;
          continue;
        }
        if (np) {
          if (utf8_validate((const char *)pend, np) == np) {
            if (!list_add(out, (const char *)pend, np)) break;
          } else {
            for (size_t k = 0; k < np; k++)
              if (!list_add(out, "\xEF\xBF\xBD", 3)) break;
          }
          np = 0;
        }
        if (i < in->count && !list_add(out, TOK(in, i), in->n[i])) break;
      }
      free(pend);
      return !out->oom;
    }
    case DEC_FUSE:
      if (!list_begin(out)) return false;
      for (size_t i = 0; i < in->count; i++)
        if (!list_append(out, TOK(in, i), in->n[i])) return false;
      return true;
    case DEC_STRIP:
      for (size_t i = 0; i < in->count; i++) {
        const char *s = TOK(in, i);
        size_t n = in->n[i];
        /* char boundaries */
        size_t nch = 0;
        for (size_t j = 0; j < n; j += (size_t)utf8_decode((const unsigned char *)s + j, &(uint32_t){0})) nch++;
        size_t *pos = malloc((nch + 1) * sizeof *pos);
        uint32_t *cps = malloc((nch + 1) * sizeof *cps);
        if (!pos || !cps) {
          free(pos);
          free(cps);
          out->oom = true;
          return false;
        }
        size_t c = 0;
        for (size_t j = 0; j < n; c++) {
          pos[c] = j;
          j += (size_t)utf8_decode((const unsigned char *)s + j, &cps[c]);
        }
        pos[nch] = n;
        size_t start_cut = 0, stop_cut = nch;
        for (size_t k = 0; k < d->strip_start && k < nch; k++) {
          if (cps[k] != d->strip_char) break;
          start_cut = k + 1;
        }
        bool bad = d->strip_stop > nch; /* the reference would index before the token */
        for (size_t k = 0; k < d->strip_stop && !bad; k++) {
          size_t idx = nch - k - 1;
          if (cps[idx] != d->strip_char) break;
          stop_cut = idx;
        }
        if (!bad && stop_cut < start_cut) bad = true;
        if (bad) {
          free(pos);
          free(cps);
          *rc = laya_err(err, LAYA_ERR_VALUE, NULL, "Strip decoder: token shorter than the strip width");
          return false;
        }
        bool ok = list_add(out, s + pos[start_cut], pos[stop_cut] - pos[start_cut]);
        free(pos);
        free(cps);
        if (!ok) return false;
      }
      return true;
    case DEC_BPE:
      for (size_t i = 0; i < in->count; i++) {
        const char *s = TOK(in, i), *rep = i + 1 == in->count ? "" : " ";
        size_t n = in->n[i], rl = strlen(rep);
        if (!list_begin(out)) return false;
        if (d->content_len == 0) { /* Rust's replace("", r) puts r around every char */
          if (!list_append(out, rep, rl)) return false;
          for (size_t j = 0; j < n;) {
            int k = utf8_decode((const unsigned char *)s + j, &(uint32_t){0});
            if (!list_append(out, s + j, (size_t)k) || !list_append(out, rep, rl)) return false;
            j += (size_t)k;
          }
          continue;
        }
        for (size_t j = 0; j < n;) {
          if (n - j >= d->content_len && memcmp(s + j, d->content, d->content_len) == 0) {
            if (!list_append(out, rep, rl)) return false;
            j += d->content_len;
          } else {
            if (!list_append(out, s + j, 1)) return false;
            j++;
          }
        }
      }
      return true;
    case DEC_SEQUENCE:
      break;
  }
  return true;
}

static int run_chain(const decoder *d, tok_list *cur, laya_error *err) {
  if (d->kind == DEC_SEQUENCE) {
    for (size_t i = 0; i < d->n_items; i++)
      if (run_chain(&d->items[i], cur, err)) return -1;
    return 0;
  }
  tok_list out = {0};
  int rc = 0;
  if (!step(d, cur, &out, err, &rc) || out.oom) {
    list_free(&out);
    if (rc) return rc;
    return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  }
  list_free(cur);
  *cur = out;
  return 0;
}

int decoder_run(const tokenizer *t, const char **toks, const uint32_t *lens, size_t n, char **text,
                size_t *len, laya_error *err) {
  tok_list cur = {0};
  for (size_t i = 0; i < n; i++)
    if (!list_add(&cur, toks[i], lens[i])) break;
  if (cur.oom) {
    list_free(&cur);
    return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  }
  if (t->dec && run_chain(t->dec, &cur, err)) {
    list_free(&cur);
    return -1;
  }
  /* join: "" after a decoder, " " without one */
  const char *sep = t->dec ? "" : " ";
  size_t sl = strlen(sep), total = 0;
  for (size_t i = 0; i < cur.count; i++) total += cur.n[i] + (i ? sl : 0);
  char *o = malloc(total + 1);
  if (!o) {
    list_free(&cur);
    return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  }
  size_t k = 0;
  for (size_t i = 0; i < cur.count; i++) {
    if (i) {
      memcpy(o + k, sep, sl);
      k += sl;
    }
    memcpy(o + k, TOK(&cur, i), cur.n[i]);
    k += cur.n[i];
  }
  o[k] = 0;
  list_free(&cur);
  *text = o;
  *len = k;
  return 0;
}

/* ---- load ---- */

static int load_one(tokenizer *t, const json_value *v, decoder *d, laya_error *err) {
  memset(d, 0, sizeof *d);
  const json_value *type = json_get(v, "type");
  if (!type || type->type != JSON_STRING)
    return laya_err(err, LAYA_ERR_FORMAT, NULL, "decoder without a \"type\"");
  const char *ty = type->s;
  if (!strcmp(ty, "ByteLevel")) {
    d->kind = DEC_BYTELEVEL;
  } else if (!strcmp(ty, "Metaspace")) {
    d->kind = DEC_METASPACE;
    if (parse_replacement(v, &d->replacement, "Metaspace decoder", err) ||
        parse_prepend_scheme(v, &d->prepend, "Metaspace decoder", err))
      return -1;
  } else if (!strcmp(ty, "Replace")) {
    d->kind = DEC_REPLACE;
    const json_value *c = json_get(v, "content");
    if (!c || c->type != JSON_STRING) return laya_err(err, LAYA_ERR_FORMAT, NULL, "Replace decoder: missing \"content\"");
    d->content = c->s;
    d->content_len = c->n;
    if (pattern_load(t, json_get(v, "pattern"), &d->pat, "Replace decoder", err)) return -1;
  } else if (!strcmp(ty, "ByteFallback")) {
    d->kind = DEC_BYTE_FALLBACK;
  } else if (!strcmp(ty, "Fuse")) {
    d->kind = DEC_FUSE;
  } else if (!strcmp(ty, "Strip")) {
    d->kind = DEC_STRIP;
    const json_value *c = json_get(v, "content"), *a = json_get(v, "start"), *b = json_get(v, "stop");
    if (!c || c->type != JSON_STRING || !a || a->type != JSON_INT || a->i < 0 || a->big || !b ||
        b->type != JSON_INT || b->i < 0 || b->big)
      return laya_err(err, LAYA_ERR_FORMAT, NULL, "Strip decoder: needs \"content\", \"start\", \"stop\"");
    if (c->n == 0 || (size_t)utf8_decode((const unsigned char *)c->s, &d->strip_char) != c->n)
      return laya_err(err, LAYA_ERR_FORMAT, NULL, "Strip decoder: \"content\" must be one character");
    d->strip_start = (size_t)a->i;
    d->strip_stop = (size_t)b->i;
  } else if (!strcmp(ty, "BPEDecoder")) {
    d->kind = DEC_BPE;
    const json_value *s = json_get(v, "suffix");
    d->content = s && s->type == JSON_STRING ? s->s : "</w>";
    d->content_len = s && s->type == JSON_STRING ? s->n : 4;
  } else if (!strcmp(ty, "Sequence")) {
    d->kind = DEC_SEQUENCE;
    const json_value *items = json_get(v, "decoders");
    if (!items || items->type != JSON_ARRAY)
      return laya_err(err, LAYA_ERR_FORMAT, NULL, "Sequence decoder: missing \"decoders\" list");
    d->items = arena_alloc(&t->a, sizeof *d->items * (items->n ? items->n : 1));
    if (!d->items) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    for (uint32_t i = 0; i < items->n; i++) {
      d->n_items++;
      if (load_one(t, &items->items[i], &d->items[i], err)) return -1;
    }
  } else {
    return laya_err(err, LAYA_ERR_UNSUPPORTED, NULL,
                    "decoder \"%s\" is not supported (supported: ByteLevel, Metaspace, Replace, "
                    "ByteFallback, Fuse, Strip, BPEDecoder, Sequence)", ty);
  }
  return 0;
}

int decoder_load(tokenizer *t, const json_value *v, decoder **out, laya_error *err) {
  *out = NULL;
  if (!v || v->type == JSON_NULL) return 0;
  if (v->type != JSON_OBJECT) return laya_err(err, LAYA_ERR_FORMAT, NULL, "\"decoder\" must be an object or null");
  decoder *d = arena_alloc(&t->a, sizeof *d);
  if (!d) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  *out = d;
  return load_one(t, v, d, err);
}

void decoder_free(decoder *d) {
  if (!d) return;
  pattern_free(&d->pat);
  for (size_t i = 0; i < d->n_items; i++) decoder_free(&d->items[i]);
}
