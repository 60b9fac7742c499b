/*
 * added_vocab.c: added tokens -- id assignment at load, and cutting them out of text at encode.
 *
 * Matching is leftmost-longest over a byte trie (the reference uses an Aho-Corasick automaton with
 * the same semantics), then per token: single_word drops a match glued to a word character (Rust
 * regex \w), lstrip / rstrip widen the match over neighbouring whitespace (Rust regex \s), never
 * back past the previous match. The widened whitespace becomes part of the token, so it is dropped.
 */
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "tokenizer/internal.h"
#include "tokenizer/unicode_tables.h"

/* ---- trie ---- */

typedef struct build_node {
  int32_t child[256]; /* only during the build: compacted afterwards */
  int32_t token;
} build_node;

static int trie_build(added_trie *tr, const tokenizer *t, bool normalized_pass, laya_error *err) {
  memset(tr, 0, sizeof *tr);
  tr->empty = true;
  size_t cap = 64, n = 1;
  build_node *bn = malloc(cap * sizeof *bn);
  if (!bn) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  memset(bn[0].child, 0xFF, sizeof bn[0].child);
  bn[0].token = -1;
  int rc = 0;
  for (size_t k = 0; k < t->n_added && !rc; k++) {
    const added_token *at = &t->added[k];
    if (at->normalized != normalized_pass || at->id < 0) continue;
    if (at->pattern_len == 0) {
      rc = laya_err(err, LAYA_ERR_FORMAT, NULL, "added token \"%s\" normalizes to an empty string",
                    at->content);
      break;
    }
    size_t node = 0;
    for (uint32_t i = 0; i < at->pattern_len; i++) {
      uint8_t byte = (uint8_t)at->pattern[i];
      if (bn[node].child[byte] < 0) {
        if (n == cap) {
          build_node *nb = realloc(bn, cap * 2 * sizeof *bn);
          if (!nb) {
            rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
            break;
          }
          bn = nb;
          cap *= 2;
        }
        memset(bn[n].child, 0xFF, sizeof bn[n].child);
        bn[n].token = -1;
        bn[node].child[byte] = (int32_t)n++;
      }
      node = (size_t)bn[node].child[byte];
    }
    if (rc) break;
    if (bn[node].token >= 0 && t->added[bn[node].token].id != at->id) {
      rc = laya_err(err, LAYA_ERR_FORMAT, NULL, "added tokens \"%s\" and \"%s\" match the same text",
                    t->added[bn[node].token].content, at->content);
      break;
    }
    bn[node].token = (int32_t)k;
    tr->first_byte[(uint8_t)at->pattern[0]] = true;
    tr->empty = false;
  }
  if (!rc) {
    size_t n_edges = 0;
    for (size_t i = 0; i < n; i++)
      for (int c = 0; c < 256; c++) n_edges += bn[i].child[c] >= 0;
    tr->nodes = malloc(n * sizeof *tr->nodes);
    tr->edges = malloc((n_edges ? n_edges : 1) * sizeof *tr->edges);
    if (!tr->nodes || !tr->edges) {
      rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    } else {
      size_t e = 0;
      for (size_t i = 0; i < n; i++) {
        tr->nodes[i].first_child = (uint32_t)e;
        tr->nodes[i].token = bn[i].token;
        uint16_t cnt = 0;
        for (int c = 0; c < 256; c++)
          if (bn[i].child[c] >= 0) {
            tr->edges[e++] = (trie_edge){(uint8_t)c, (uint32_t)bn[i].child[c]};
            cnt++;
          }
        tr->nodes[i].n_children = cnt;
      }
      tr->n_nodes = (uint32_t)n;
    }
  }
  free(bn);
  return rc;
}

static inline int32_t trie_step(const added_trie *tr, uint32_t node, uint8_t byte) {
  const trie_node *nd = &tr->nodes[node];
  const trie_edge *e = tr->edges + nd->first_child;
  uint32_t lo = 0, hi = nd->n_children;
  while (lo < hi) { /* edges are sorted by byte */
    uint32_t mid = (lo + hi) / 2;
    if (e[mid].byte < byte)
      lo = mid + 1;
    else
      hi = mid;
  }
  return (lo < nd->n_children && e[lo].byte == byte) ? (int32_t)e[lo].node : -1;
}

/* Longest pattern starting at s[i]; returns the added-token index or -1, *end its end. */
static int32_t longest_at(const added_trie *tr, const char *s, size_t len, size_t i, size_t *end) {
  uint32_t node = 0;
  int32_t best = -1;
  for (size_t j = i; j < len; j++) {
    int32_t nx = trie_step(tr, node, (uint8_t)s[j]);
    if (nx < 0) break;
    node = (uint32_t)nx;
    if (tr->nodes[node].token >= 0) {
      best = tr->nodes[node].token;
      *end = j + 1;
    }
  }
  return best;
}

/* ---- whitespace / word tests (Rust regex \s and \w) ---- */

static uint32_t cp_before(const char *s, size_t i, size_t *start) {
  size_t p = i - 1;
  while (p > 0 && ((unsigned char)s[p] & 0xC0) == 0x80) p--;
  uint32_t cp;
  utf8_decode((const unsigned char *)s + p, &cp);
  *start = p;
  return cp;
}

static bool word_before(const uint16_t *cls, const char *s, size_t i) {
  if (i == 0) return false;
  size_t p;
  return uc_class(cls, cp_before(s, i, &p)) & UC_W;
}

static bool word_after(const uint16_t *cls, const char *s, size_t len, size_t i) {
  if (i >= len) return false;
  uint32_t cp;
  utf8_decode((const unsigned char *)s + i, &cp);
  return uc_class(cls, cp) & UC_W;
}

/* ---- encode ---- */

int added_split(const tokenizer *t, const added_trie *tr, tok_work *w) {
  const uint16_t *cls = uc_classes();
  w->b.n = 0;
  for (size_t pi = 0; pi < w->a.n; pi++) {
    piece pc = w->a.v[pi];
    if (pc.id >= 0 || tr->empty) {
      if (pc.len && !piece_push(w, &w->b, pc.off, pc.len, pc.id, pc.first)) goto oom;
      continue;
    }
    const char *s = w->buf + pc.off;
    size_t len = pc.len, start_offset = 0;
    for (size_t i = 0; i < len;) {
      if (!tr->first_byte[(uint8_t)s[i]]) {
        i++;
        continue;
      }
      size_t mend = 0;
      int32_t k = longest_at(tr, s, len, i, &mend);
      if (k < 0) {
        i++;
        continue;
      }
      const added_token *at = &t->added[k];
      size_t ms = i, me = mend;
      i = mend; /* the automaton resumes after the raw match, whatever the widening does */
      if (at->single_word && (word_before(cls, s, ms) || word_after(cls, s, len, me))) continue;
      if (at->lstrip) {
        size_t ns = ms;
        while (ns > 0) {
          size_t p;
          uint32_t cp = cp_before(s, ns, &p);
          if (!(uc_class(cls, cp) & UC_RS)) break;
          ns = p;
        }
        ms = ns > start_offset ? ns : start_offset;
      }
      if (at->rstrip) {
        while (me < len) {
          uint32_t cp;
          int l = utf8_decode((const unsigned char *)s + me, &cp);
          if (!(uc_class(cls, cp) & UC_RS)) break;
          me += (size_t)l;
        }
      }
      if (start_offset < ms &&
          !piece_push(w, &w->b, pc.off + (uint32_t)start_offset, (uint32_t)(ms - start_offset), -1,
                      first_after(pc.first, (uint32_t)start_offset)))
        goto oom;
      if (!piece_push(w, &w->b, pc.off + (uint32_t)ms, (uint32_t)(me - ms), at->id,
                      first_after(pc.first, (uint32_t)ms)))
        goto oom;
      start_offset = me;
    }
    if (start_offset < len &&
        !piece_push(w, &w->b, pc.off + (uint32_t)start_offset, (uint32_t)(len - start_offset), -1,
                    first_after(pc.first, (uint32_t)start_offset)))
      goto oom;
  }
  piece_vec tmp = w->a;
  w->a = w->b;
  w->b = tmp;
  return 0;
oom:
  w->oom = true;
  return laya_err(w->err, LAYA_ERR_NOMEM, NULL, "out of memory");
}

/* ---- load ---- */

static int get_flag(const json_value *tok, const char *key, bool *out, laya_error *err) {
  const json_value *v = json_get(tok, key);
  if (!v || v->type != JSON_BOOL)
    return laya_err(err, LAYA_ERR_FORMAT, NULL, "added_tokens: \"%s\" must be true or false", key);
  *out = v->b;
  return 0;
}

/* Ids as the reference assigns them: the id in the file is only checked, never used. A token
 * whose content is already known (vocab or an earlier added token) takes that id; any other gets
 * the next id after the model vocabulary (counted in entries). */
int added_load(tokenizer *t, const json_value *list, int32_t model_vocab_entries, laya_error *err) {
  if (!list || list->type == JSON_NULL) return 0;
  if (list->type != JSON_ARRAY) return laya_err(err, LAYA_ERR_FORMAT, NULL, "\"added_tokens\" must be a list");
  t->added = arena_alloc(&t->a, sizeof *t->added * (list->n ? list->n : 1));
  if (!t->added || !str_map_init(&t->added_map, list->n)) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  int32_t next_id = model_vocab_entries;
  /* id -> index of the added token holding it (a later token with the same id replaces it) */
  pair_map by_id;
  if (!pair_map_init(&by_id, list->n)) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  int rc = -1;
  for (uint32_t i = 0; i < list->n; i++) {
    const json_value *tok = &list->items[i];
    const json_value *content = json_get(tok, "content");
    if (tok->type != JSON_OBJECT || !content || content->type != JSON_STRING)
      {
      laya_err(err, LAYA_ERR_FORMAT, NULL, "added_tokens[%u]: missing \"content\"", i);
      goto done;
    }
    added_token at = {0};
    at.content = content->s;
    at.len = content->n;
    if (get_flag(tok, "single_word", &at.single_word, err) || get_flag(tok, "lstrip", &at.lstrip, err) ||
        get_flag(tok, "rstrip", &at.rstrip, err) || get_flag(tok, "normalized", &at.normalized, err) ||
        get_flag(tok, "special", &at.special, err))
      goto done;
    if (at.len == 0) continue; /* the reference ignores empty tokens */
    int32_t id = str_map_get(&t->added_map, at.content, at.len);
    if (id < 0) {
      id = str_map_get(&t->bpe.vocab, at.content, at.len);
      if (id < 0) {
        if (next_id >= (1 << 26)) {
          laya_err(err, LAYA_ERR_FORMAT, NULL, "too many added tokens");
          goto done;
        }
        id = next_id++;
      }
    }
    /* same content again, or an id taken over: the later token replaces the earlier one */
    uint32_t prev, unused;
    if (pair_map_get(&by_id, (uint32_t)id, 0, &prev, &unused)) t->added[prev].id = -1;
    pair_map_put(&by_id, (uint32_t)id, 0, (uint32_t)t->n_added, 0);
    at.id = id;
    at.pattern = at.content;
    at.pattern_len = at.len;
    if (at.normalized && t->norm) {
      char *norm;
      size_t nl;
      if (normalize_string(t->norm, at.content, at.len, &norm, &nl, err)) goto done;
      char *kept = arena_strndup(&t->a, norm, nl);
      free(norm);
      if (!kept) {
        laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
        goto done;
      }
      at.pattern = kept;
      at.pattern_len = (uint32_t)nl;
    }
    if (!str_map_put(&t->added_map, at.content, at.len, id)) {
      laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
      goto done;
    }
    t->added[t->n_added++] = at;
  }
  rc = 0;
done:
  pair_map_free(&by_id);
  return rc;
}

int added_build(tokenizer *t, laya_error *err) {
  if (trie_build(&t->raw_trie, t, false, err)) return -1;
  return trie_build(&t->norm_trie, t, true, err);
}

static void trie_free(added_trie *tr) {
  free(tr->nodes);
  free(tr->edges);
  memset(tr, 0, sizeof *tr);
}

void added_free(tokenizer *t) {
  trie_free(&t->raw_trie);
  trie_free(&t->norm_trie);
  str_map_free(&t->added_map);
}
