/*
 * bpe.c: the BPE model -- vocab and merges at load, and one piece -> ids at encode.
 *
 * Merging is the reference's algorithm: start from one symbol per character (or its <0xNN> byte
 * tokens, or unk), then repeatedly merge the adjacent pair with the lowest merge rank, the leftmost
 * on ties, until no pair has a rank. A binary heap keyed (rank, position) with lazy deletion makes
 * that O(n log n), so a 100 kB run of CJK (which Metaspace-style tokenizers hand over as one piece)
 * costs milliseconds, not the O(n^2) of rescanning.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "tokenizer/internal.h"

/* ---- the heap of candidate merges ---- */

static inline bool merge_less(const bpe_merge *a, const bpe_merge *b) {
  return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static bool heap_push(tok_work *w, size_t *n, bpe_merge m) {
  if (*n == w->heap_cap) {
    bpe_merge *h = grow(w->heap, &w->heap_cap, *n + 1, sizeof *h);
    if (!h) return false;
    w->heap = h;
  }
  bpe_merge *h = w->heap;
  size_t i = (*n)++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!merge_less(&m, &h[p])) break;
    h[i] = h[p];
    i = p;
  }
  h[i] = m;
  return true;
}

static bpe_merge heap_pop(bpe_merge *h, size_t *n) {
  bpe_merge top = h[0];
  bpe_merge last = h[--(*n)];
  size_t i = 0, sz = *n;
  for (;;) {
    size_t l = 2 * i + 1;
    if (l >= sz) break;
    size_t c = (l + 1 < sz && merge_less(&h[l + 1], &h[l])) ? l + 1 : l;
    if (!merge_less(&h[c], &last)) break;
    h[i] = h[c];
    i = c;
  }
  if (sz) h[i] = last;
  return top;
}

/* ---- initial symbols ---- */

static bool sym_push(tok_work *w, size_t *n, int32_t id, uint32_t len) {
  if (*n == w->syms_cap) {
    bpe_sym *s = grow(w->syms, &w->syms_cap, *n + 1, sizeof *s);
    if (!s) return false;
    w->syms = s;
  }
  w->syms[*n] = (bpe_sym){id, (int32_t)*n - 1, (int32_t)*n + 1, len};
  (*n)++;
  return true;
}

/* Id of a character with the continuing-subword prefix / end-of-word suffix applied. */
static int32_t char_id(const bpe_model *m, tok_work *w, const char *c, size_t clen, bool first,
                       bool last, const char **str, size_t *slen) {
  bool pre = !first && m->prefix, suf = last && m->suffix;
  if (!pre && !suf) {
    *str = c;
    *slen = clen;
    if (clen == 1 && (unsigned char)c[0] < 0x80) return m->ascii_ids[(unsigned char)c[0]];
    if (clen <= 3) {
      uint32_t cp;
      utf8_decode((const unsigned char *)c, &cp);
      return m->small_ids[cp];
    }
    return str_map_get(&m->vocab, c, clen);
  }
  size_t need = (pre ? m->prefix_len : 0) + clen + (suf ? m->suffix_len : 0);
  char *tmp = grow(w->tmp, &w->tmp_cap, need, 1);
  if (!tmp) {
    w->oom = true;
    return -1;
  }
  w->tmp = tmp;
  size_t k = 0;
  if (pre) {
    memcpy(tmp, m->prefix, m->prefix_len);
    k = m->prefix_len;
  }
  memcpy(tmp + k, c, clen);
  k += clen;
  if (suf) {
    memcpy(tmp + k, m->suffix, m->suffix_len);
    k += m->suffix_len;
  }
  *str = tmp;
  *slen = k;
  return str_map_get(&m->vocab, tmp, k);
}

int bpe_encode(const tokenizer *t, tok_work *w, const char *s, size_t len, ids_vec *out,
               laya_error *err) {
  const bpe_model *m = &t->bpe;
  if (len == 0) return 0;
  if (m->ignore_merges) {
    int32_t id = str_map_get(&m->vocab, s, len);
    if (id >= 0) return ids_push(out, id) ? 0 : laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  }
  size_t n = 0;
  int32_t unk_id = -1;
  uint32_t unk_len = 0; /* a pending unk (fuse_unk extends it) */
  bool have_unk = false;
  for (size_t i = 0; i < len;) {
    uint32_t cp;
    size_t clen = (size_t)utf8_decode((const unsigned char *)s + i, &cp);
    const char *str;
    size_t slen;
    int32_t id = char_id(m, w, s + i, clen, i == 0, i + clen == len, &str, &slen);
    if (w->oom) goto oom;
    if (id >= 0) {
      if (have_unk) {
        if (!sym_push(w, &n, unk_id, unk_len)) goto oom;
        have_unk = false;
      }
      if (!sym_push(w, &n, id, (uint32_t)clen)) goto oom;
    } else {
      bool done = false;
      if (m->byte_fallback) {
        /* all bytes of the (prefixed/suffixed) string must have a <0xNN> token */
        bool all = true;
        for (size_t k = 0; k < slen; k++)
          if (m->byte_ids[(unsigned char)str[k]] < 0) all = false;
        if (all) {
          /* The reference pushes the byte tokens before a pending unk is flushed. */
          for (size_t k = 0; k < slen; k++)
            if (!sym_push(w, &n, m->byte_ids[(unsigned char)str[k]], 1)) goto oom;
          done = true;
        }
      }
      if (!done && m->unk_token) {
        if (m->unk_missing)
          return laya_err(err, LAYA_ERR_FORMAT, NULL, "unk_token \"%s\" is not in the vocabulary",
                          m->unk_token);
        if (have_unk && m->fuse_unk) {
          unk_len += (uint32_t)clen;
        } else {
          if (have_unk && !sym_push(w, &n, unk_id, unk_len)) goto oom;
          unk_id = m->unk_id;
          unk_len = (uint32_t)clen;
          have_unk = true;
        }
      }
      /* no byte token and no unk: the reference drops the character */
    }
    i += clen;
  }
  if (have_unk && !sym_push(w, &n, unk_id, unk_len)) goto oom;
  if (n == 0) return 0;
  bpe_sym *sy = w->syms;
  sy[n - 1].next = -1;

  /* merge */
  size_t hn = 0;
  for (size_t i = 0; i + 1 < n; i++) {
    uint32_t rank, merged;
    if (pair_map_get(&m->merges, (uint32_t)sy[i].id, (uint32_t)sy[i + 1].id, &rank, &merged))
      if (!heap_push(w, &hn, (bpe_merge){rank, (uint32_t)i, merged})) goto oom;
  }
  while (hn) {
    bpe_merge top = heap_pop(w->heap, &hn);
    bpe_sym *cur = &sy[top.pos];
    if (cur->len == 0 || cur->next < 0) continue;
    int32_t nx = cur->next;
    uint32_t rank, merged;
    if (!pair_map_get(&m->merges, (uint32_t)cur->id, (uint32_t)sy[nx].id, &rank, &merged) ||
        merged != top.merged)
      continue; /* stale: one side was merged since this entry was pushed */
    cur->id = (int32_t)merged;
    cur->len += sy[nx].len;
    cur->next = sy[nx].next;
    sy[nx].len = 0;
    if (cur->next >= 0) sy[cur->next].prev = (int32_t)top.pos;
    if (cur->prev >= 0) {
      bpe_sym *pv = &sy[cur->prev];
      if (pair_map_get(&m->merges, (uint32_t)pv->id, (uint32_t)cur->id, &rank, &merged))
        if (!heap_push(w, &hn, (bpe_merge){rank, (uint32_t)cur->prev, merged})) goto oom;
    }
    if (cur->next >= 0) {
      if (pair_map_get(&m->merges, (uint32_t)cur->id, (uint32_t)sy[cur->next].id, &rank, &merged))
        if (!heap_push(w, &hn, (bpe_merge){rank, top.pos, merged})) goto oom;
    }
  }
  for (int32_t i = 0; i >= 0; i = sy[i].next)
    if (!ids_push(out, sy[i].id)) goto oom;
  return 0;
oom:
  w->oom = true;
  return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
}

/* ---- load ---- */

static const char *opt_string(const json_value *model, const char *key, size_t *len) {
  const json_value *v = json_get(model, key);
  if (!v || v->type != JSON_STRING) return NULL;
  *len = v->n;
  return v->s;
}

int bpe_load(tokenizer *t, const json_value *model, const char *text, span vocab, span merges,
             const char *file, laya_error *err) {
  bpe_model *m = &t->bpe;
  const json_value *type = json_get(model, "type");
  if (type && (type->type != JSON_STRING || strcmp(type->s, "BPE") != 0))
    return laya_err(err, LAYA_ERR_UNSUPPORTED, NULL, "model \"%s\" is not supported (only BPE)",
                    type->type == JSON_STRING ? type->s : "?");
  if (vocab.end == 0 || merges.end == 0)
    return laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: the BPE model needs \"vocab\" and \"merges\"", file);
  const json_value *dropout = json_get(model, "dropout");
  if (dropout && dropout->type != JSON_NULL && !(json_is_number(dropout) && dropout->d == 0.0))
    return laya_err(err, LAYA_ERR_UNSUPPORTED, NULL,
                    "BPE dropout is not supported (it makes encoding random)");
  const json_value *b;
  m->byte_fallback = (b = json_get(model, "byte_fallback")) && b->type == JSON_BOOL && b->b;
  m->fuse_unk = (b = json_get(model, "fuse_unk")) && b->type == JSON_BOOL && b->b;
  m->ignore_merges = (b = json_get(model, "ignore_merges")) && b->type == JSON_BOOL && b->b;
  m->prefix = opt_string(model, "continuing_subword_prefix", &m->prefix_len);
  m->suffix = opt_string(model, "end_of_word_suffix", &m->suffix_len);
  size_t unk_len = 0;
  m->unk_token = opt_string(model, "unk_token", &unk_len);

  if (vocab_read(t, text, vocab, file, err)) return -1;
  m->unk_id = m->unk_token ? str_map_get(&m->vocab, m->unk_token, unk_len) : -1;
  m->unk_missing = m->unk_token && m->unk_id < 0;

  for (int c = 0; c < 256; c++) {
    char name[8];
    snprintf(name, sizeof name, "<0x%02X>", c);
    m->byte_ids[c] = str_map_get(&m->vocab, name, 6);
  }
  for (int c = 0; c < 128; c++) {
    char ch = (char)c;
    m->ascii_ids[c] = str_map_get(&m->vocab, &ch, 1);
  }
  /* single characters of the BMP, looked up directly (the initial symbols of every piece) */
  m->small_ids = malloc(sizeof *m->small_ids * 0x10000);
  if (!m->small_ids) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  for (uint32_t cp = 0; cp < 0x10000; cp++) m->small_ids[cp] = -1;
  for (uint32_t i = 0; i < m->vocab.count; i++) {
    const str_entry *e = &m->vocab.entries[i];
    if (e->n == 0 || e->n > 3) continue;
    uint32_t cp;
    int k = utf8_decode((const unsigned char *)e->s, &cp);
    if ((uint32_t)k == e->n && cp < 0x10000) m->small_ids[cp] = e->id;
  }
  return merges_read(t, text, merges, file, err);
}

void bpe_free(bpe_model *m) {
  str_map_free(&m->vocab);
  pair_map_free(&m->merges);
  free(m->small_ids);
  m->small_ids = NULL;
}
