/* maps.c: the hash maps, UTF-8 helpers and work-area plumbing shared by the tokenizer files. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/internal.h"

/* FNV-1a over 8-byte words then a finalizer: cheap for the short strings of a vocabulary. */
uint32_t tk_hash(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull ^ n;
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, s, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
    s += 8;
    n -= 8;
  }
  uint64_t w = 0;
  memcpy(&w, s, n);
  h = (h ^ w) * 0x100000001b3ull;
  h ^= h >> 32;
  h *= 0x9E3779B97F4A7C15ull;
  return (uint32_t)(h >> 32);
}

bool str_map_init(str_map *m, uint32_t expected) {
  memset(m, 0, sizeof *m);
  uint32_t cap = 64;
  while (cap < expected * 2u + 16u) cap *= 2;
  m->slots = calloc(cap, sizeof *m->slots);
  m->cap_entries = expected + 16;
  m->entries = malloc(sizeof *m->entries * m->cap_entries);
  m->mask = cap - 1;
  return m->slots && m->entries;
}

void str_map_free(str_map *m) {
  free(m->slots);
  free(m->entries);
  memset(m, 0, sizeof *m);
}

static bool str_map_grow(str_map *m) {
  uint32_t cap = (m->mask + 1) * 2;
  str_slot *slots = calloc(cap, sizeof *slots);
  if (!slots) return false;
  for (uint32_t i = 0; i <= m->mask; i++) {
    if (!m->slots[i].entry1) continue;
    uint32_t j = m->slots[i].hash & (cap - 1);
    while (slots[j].entry1) j = (j + 1) & (cap - 1);
    slots[j] = m->slots[i];
  }
  free(m->slots);
  m->slots = slots;
  m->mask = cap - 1;
  return true;
}

static inline bool slot_is(const str_slot *sl, uint32_t h, const char *s, size_t n) {
  if (sl->hash != h || sl->n != n) return false;
  return n <= 8 ? memcmp(sl->u.inl, s, n) == 0 : memcmp(sl->u.s, s, n) == 0;
}

bool str_map_put(str_map *m, const char *s, uint32_t n, int32_t id) {
  return str_map_put_hashed(m, s, n, id, tk_hash(s, n));
}

bool str_map_put_hashed(str_map *m, const char *s, uint32_t n, int32_t id, uint32_t h) {
  if ((m->count + 1) * 2 > m->mask + 1 && !str_map_grow(m)) return false;
  uint32_t i = h & m->mask;
  while (m->slots[i].entry1) {
    str_slot *sl = &m->slots[i];
    if (slot_is(sl, h, s, n)) {
      sl->id = id;
      m->entries[sl->entry1 - 1].id = id;
      return true;
    }
    i = (i + 1) & m->mask;
  }
  if (m->count == m->cap_entries) {
    size_t cap = m->cap_entries;
    str_entry *ne = grow(m->entries, &cap, m->count + 1, sizeof *ne);
    if (!ne) return false;
    m->entries = ne;
    m->cap_entries = (uint32_t)cap;
  }
  m->entries[m->count] = (str_entry){s, n, id};
  str_slot *sl = &m->slots[i];
  memset(sl, 0, sizeof *sl);
  if (n <= 8) {
    if (n) memcpy(sl->u.inl, s, n);
  } else {
    sl->u.s = s;
  }
  sl->hash = h;
  sl->n = n;
  sl->id = id;
  sl->entry1 = ++m->count;
  return true;
}

int32_t str_map_get(const str_map *m, const char *s, size_t n) {
  return str_map_get_hashed(m, s, n, tk_hash(s, n));
}

int32_t str_map_get_hashed(const str_map *m, const char *s, size_t n, uint32_t h) {
  if (!m->slots) return -1;
  uint32_t i = h & m->mask;
  for (;;) {
    const str_slot *sl = &m->slots[i];
    if (!sl->entry1) return -1;
    if (slot_is(sl, h, s, n)) return sl->id;
    i = (i + 1) & m->mask;
  }
}

bool pair_map_init(pair_map *m, uint32_t expected) {
  memset(m, 0, sizeof *m);
  uint32_t cap = 64;
  while (cap < expected * 2u + 16u) cap *= 2;
  m->slots = calloc(cap, sizeof *m->slots);
  m->mask = cap - 1;
  return m->slots != NULL;
}

void pair_map_free(pair_map *m) {
  free(m->slots);
  memset(m, 0, sizeof *m);
}

/* The table is sized for every merge up front, so it never fills. A repeated pair overwrites:
 * the reference collects merges into a HashMap, where the last occurrence wins. */
void pair_map_put(pair_map *m, uint32_t a, uint32_t b, uint32_t rank, uint32_t merged) {
  uint64_t key = (((uint64_t)a << 32) | b) + 1;
  uint64_t h = key * 0x9E3779B97F4A7C15ull;
  uint32_t i = (uint32_t)(h >> 32) & m->mask;
  while (m->slots[i].key && m->slots[i].key != key) i = (i + 1) & m->mask;
  if (!m->slots[i].key) m->count++;
  m->slots[i] = (pair_slot){key, rank, merged};
}

size_t utf8_validate(const char *str, size_t len) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (i < len) {
    /* ASCII runs, 8 bytes at a time */
    while (i + 8 <= len) {
      uint64_t w;
      memcpy(&w, s + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= len) break;
    unsigned c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    int n = utf8_seq_len(s + i, len - i);
    if (!n) return i;
    i += (size_t)n;
  }
  return len;
}

void *grow(void *p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return p;
  size_t c = *cap ? *cap : 16;
  while (c < need) c *= 2;
  void *q = realloc(p, c * elem);
  if (q) *cap = c;
  return q;
}

void work_init(tok_work *w, laya_error *err) {
  memset(w, 0, sizeof *w);
  w->err = err;
}

void work_free(tok_work *w) {
  free(w->buf);
  free(w->a.v);
  free(w->b.v);
  free(w->spans.v);
  free(w->spans2.v);
  free(w->segs);
  free(w->syms);
  free(w->heap);
  free(w->u32);
  free(w->tmp);
  memset(w, 0, sizeof *w);
}

bool work_reserve(tok_work *w, size_t n) {
  if (w->len + n <= w->cap) return true;
  if (w->len + n > UINT32_MAX) {
    w->oom = true;
    return false;
  }
  char *b = grow(w->buf, &w->cap, w->len + n, 1);
  if (!b) {
    w->oom = true;
    return false;
  }
  w->buf = b;
  return true;
}

bool piece_push(tok_work *w, piece_vec *pv, uint32_t off, uint32_t len, int32_t id, uint32_t first) {
  if (pv->n == pv->cap) {
    piece *v = grow(pv->v, &pv->cap, pv->n + 1, sizeof *v);
    if (!v) {
      w->oom = true;
      return false;
    }
    pv->v = v;
  }
  pv->v[pv->n++] = (piece){off, len, id, first};
  return true;
}

bool span_push(span_vec *sv, uint32_t start, uint32_t end) {
  if (sv->n == sv->cap) {
    span *v = grow(sv->v, &sv->cap, sv->n + 1, sizeof *v);
    if (!v) return false;
    sv->v = v;
  }
  sv->v[sv->n++] = (span){start, end};
  return true;
}

bool ids_push(ids_vec *v, int32_t id) {
  if (v->n == v->cap) {
    int32_t *ids = grow(v->ids, &v->cap, v->n + 1, sizeof *ids);
    if (!ids) return false;
    v->ids = ids;
  }
  v->ids[v->n++] = id;
  return true;
}

void ids_vec_free(ids_vec *v) {
  free(v->ids);
  v->ids = NULL;
  v->n = v->cap = 0;
}
