/* embed.c: pooled encoder vectors of texts (model/embed.h) and the model's label-vector cache. */
#include "model/embed.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash64.h"
#include "model/artifact.h"
#include "model/batch.h"
#include "model/engine.h"

/* ---- the cache: chained hash of (text, max_length) -> row, with an LRU list -------------------- */

typedef struct cache_row {
  uint64_t hash;
  char *text;
  size_t len;
  int max_length;
  float *vec;
  struct cache_row *chain;      /* next in the bucket */
  struct cache_row *prev, *next; /* LRU: head is the most recent */
} cache_row;

typedef struct embed_cache {
  pthread_mutex_t mu;
  int dim;
  cache_row **bucket;
  size_t n_buckets; /* a power of two */
  cache_row *head, *tail;
  long size, hits, misses;
} embed_cache;

static uint64_t key_hash(const char *s, size_t n, int max_length) {
  return hash64(s, n, 0x5bd1e995u ^ (uint64_t)(unsigned)max_length);
}

static embed_cache *cache_of(laya_model *m) {
  embed_cache *c = atomic_load(&m->embeds);
  if (c) return c;
  embed_cache *fresh = calloc(1, sizeof *fresh);
  if (!fresh) return NULL;
  fresh->n_buckets = 8192;
  fresh->bucket = calloc(fresh->n_buckets, sizeof *fresh->bucket);
  if (!fresh->bucket) {
    free(fresh);
    return NULL;
  }
  fresh->dim = m->ck.w.enc.hidden;
  pthread_mutex_init(&fresh->mu, NULL);
  embed_cache *expected = NULL;
  if (atomic_compare_exchange_strong(&m->embeds, &expected, fresh)) return fresh;
  pthread_mutex_destroy(&fresh->mu); /* another thread made it first */
  free(fresh->bucket);
  free(fresh);
  return expected;
}

static void lru_unlink(embed_cache *c, cache_row *r) {
  if (r->prev) r->prev->next = r->next;
  else c->head = r->next;
  if (r->next) r->next->prev = r->prev;
  else c->tail = r->prev;
  r->prev = r->next = NULL;
}

static void lru_front(embed_cache *c, cache_row *r) {
  r->next = c->head;
  r->prev = NULL;
  if (c->head) c->head->prev = r;
  c->head = r;
  if (!c->tail) c->tail = r;
}

static cache_row *find(embed_cache *c, uint64_t h, const char *s, size_t n, int max_length) {
  for (cache_row *r = c->bucket[h & (c->n_buckets - 1)]; r; r = r->chain)
    if (r->hash == h && r->len == n && r->max_length == max_length && !memcmp(r->text, s, n)) return r;
  return NULL;
}

static void row_free(cache_row *r) {
  free(r->text);
  free(r->vec);
  free(r);
}

static void evict_oldest(embed_cache *c) {
  cache_row *r = c->tail;
  if (!r) return;
  lru_unlink(c, r);
  cache_row **p = &c->bucket[r->hash & (c->n_buckets - 1)];
  while (*p && *p != r) p = &(*p)->chain;
  if (*p) *p = r->chain;
  row_free(r);
  c->size--;
}

/* Store a row (under c->mu); a text already there (another thread's) keeps its row. Out of memory
 * only means the row is not cached. */
static void cache_put(embed_cache *c, uint64_t h, const char *s, size_t n, int max_length, const float *vec) {
  if (find(c, h, s, n, max_length)) return;
  cache_row *r = calloc(1, sizeof *r);
  if (!r) return;
  r->text = malloc(n + 1);
  r->vec = malloc(sizeof(float) * (size_t)c->dim);
  if (!r->text || !r->vec) {
    row_free(r);
    return;
  }
  memcpy(r->text, s, n);
  r->text[n] = 0;
  memcpy(r->vec, vec, sizeof(float) * (size_t)c->dim);
  r->hash = h;
  r->len = n;
  r->max_length = max_length;
  size_t b = h & (c->n_buckets - 1);
  r->chain = c->bucket[b];
  c->bucket[b] = r;
  lru_front(c, r);
  if (++c->size > EMBED_CACHE_MAX) evict_oldest(c);
}

void embed_cache_free(laya_model *m) {
  embed_cache *c = atomic_exchange(&m->embeds, NULL);
  if (!c) return;
  for (cache_row *r = c->head; r;) {
    cache_row *next = r->next;
    row_free(r);
    r = next;
  }
  free(c->bucket);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

void embed_cache_stats(laya_model *m, long *size, long *hits, long *misses) {
  embed_cache *c = atomic_load(&m->embeds);
  *size = *hits = *misses = 0;
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  *size = c->size;
  *hits = c->hits;
  *misses = c->misses;
  pthread_mutex_unlock(&c->mu);
}

/* ---- the pass ----------------------------------------------------------------------------------- */

int embed_dim(const laya_model *m) { return m->ck.w.enc.hidden; }

/* The CPU backend the engine keeps for device out-of-memory reruns (fp32, or an artifact's
 * precision), made here if it is not there yet; counted as a fallback when `count`. */
static backend *cpu_fallback(laya_model *m, bool count, laya_error *err) {
  pthread_mutex_lock(&m->fallback_mu);
  if (!m->fallback) {
    backend_options bo = {m->ck.w.packed ? artifact_precision(m->ck.w.packed) : PREC_FP32, 0, 0, &m->env};
    m->fallback = backend_cpu_create(&m->ck.w, &bo, err);
  }
  backend *cpu = m->fallback;
  if (cpu && count) m->fallback_count++;
  pthread_mutex_unlock(&m->fallback_mu);
  return cpu;
}

/* The backend that embeds: the model's own when it has an embed pass (every backend laya_open makes
 * has one: cpu, cpu-ref, cuda, escalate), else the CPU fallback backend. */
static backend *embed_backend(laya_model *m, bool *pooled, laya_error *err) {
  *pooled = m->be->embed != NULL;
  if (*pooled) return m->be;
  backend *cpu = cpu_fallback(m, false, err);
  if (cpu && !cpu->embed) {
    laya_err(err, LAYA_ERR_UNSUPPORTED, NULL, "the %s backend has no embedding pass", cpu->name);
    return NULL;
  }
  return cpu;
}

/* A pass that ran out of device memory runs again on the CPU fallback backend, as a forward does
 * (engine.c forward_on_cpu); rare, so its worker is made and freed per pass. */
static int run_rows(laya_model *m, backend *be, backend_worker *w, const int32_t *ids, const int32_t *row_start,
                    int r0, int r1, float *out, laya_error *err);

static int run_rows_on_cpu(laya_model *m, const int32_t *ids, const int32_t *row_start, int r0, int r1, float *out,
                           laya_error *err) {
  backend *cpu = cpu_fallback(m, true, err);
  if (!cpu) return err && err->code ? err->code : LAYA_ERR_NOMEM;
  if (!cpu->embed) return laya_err(err, LAYA_ERR_UNSUPPORTED, NULL, "the %s backend has no embedding pass", cpu->name);
  laya_message("device out of memory while embedding; running this pass on the CPU");
  laya_err_clear(err);
  backend_worker *w = cpu->worker_create(cpu, err);
  if (!w) return err && err->code ? err->code : LAYA_ERR_NOMEM;
  int rc = run_rows(m, cpu, w, ids, row_start, r0, r1, out, err);
  cpu->worker_destroy(cpu, w);
  return rc;
}

static int push_ids(ids_vec *v, const int32_t *ids, int n, laya_error *err) {
  if (v->n + (size_t)n > v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 1024;
    while (cap < v->n + (size_t)n) cap *= 2;
    int32_t *p = realloc(v->ids, sizeof(int32_t) * cap);
    if (!p) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    v->ids = p;
    v->cap = cap;
  }
  memcpy(v->ids + v->n, ids, sizeof(int32_t) * (size_t)n);
  v->n += (size_t)n;
  return 0;
}

/* Rows [r0, r1) of the texts to compute, ids back to back in `ids` (row_start prefix sums). */
static int run_rows(laya_model *m, backend *be, backend_worker *w, const int32_t *ids, const int32_t *row_start,
                    int r0, int r1, float *out, laya_error *err) {
  int n = r1 - r0;
  packed_batch_buf bb = {0};
  int rc = pb_reserve(&bb, n, row_start[r1] - row_start[r0], n, err);
  for (int r = r0; r < r1 && !rc; r++) {
    const int len = row_start[r + 1] - row_start[r];
    pb_row row = pb_add_row(&bb, 0, len, 1);
    memcpy(row.tokens, ids + row_start[r], sizeof(int32_t) * (size_t)len);
    row.markers[0] = 0; /* one marker per row at its first token: the batch checks want one; embed reads none */
  }
  if (!rc) rc = be->embed(be, w, pb_finish(&bb), out, err);
  pb_free(&bb);
  (void)m;
  return rc;
}

int embed_texts(laya_model *m, const char *const *texts, const size_t *lens, long n, const embed_opts *o,
                float *out, laya_error *err) {
  if (n <= 0) return 0;
  if (!o || o->max_length < 1 || o->batch_size < 1)
    return laya_err(err, LAYA_ERR_VALUE, "ValueError", "embedding needs a positive max_length and batch_size");
  const int d = m->ck.w.enc.hidden;
  const int32_t *pre, *post;
  int n_pre, n_post;
  if (tokenizer_special_template(m->ck.tok, &pre, &n_pre, &post, &n_post, err)) return err ? err->code : LAYA_ERR_UNSUPPORTED;
  if (o->max_length < n_pre + n_post)
    return laya_err(err, LAYA_ERR_VALUE, "ValueError",
                    "max_length %d leaves no room for the %d special tokens the tokenizer adds", o->max_length,
                    n_pre + n_post);
  embed_cache *c = o->use_cache ? cache_of(m) : NULL;
  uint64_t *hash = c ? malloc(sizeof(uint64_t) * (size_t)n) : NULL;
  long *todo = malloc(sizeof(long) * (size_t)n); /* the texts to compute, in input order */
  if ((c && !hash) || !todo) {
    free(hash);
    free(todo);
    return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory embedding %ld texts", n);
  }
  long n_todo = 0;
  if (c) {
    pthread_mutex_lock(&c->mu);
    for (long i = 0; i < n; i++) {
      hash[i] = key_hash(texts[i], lens[i], o->max_length);
      cache_row *r = find(c, hash[i], texts[i], lens[i], o->max_length);
      if (r) {
        memcpy(out + (size_t)i * d, r->vec, sizeof(float) * (size_t)d);
        lru_unlink(c, r);
        lru_front(c, r);
        c->hits++;
      } else {
        todo[n_todo++] = i;
        c->misses++;
      }
    }
    pthread_mutex_unlock(&c->mu);
  } else {
    for (long i = 0; i < n; i++) todo[n_todo++] = i;
  }

  int rc = 0;
  bool pooled = false;
  backend *be = n_todo ? embed_backend(m, &pooled, err) : NULL;
  if (n_todo && !be) rc = err && err->code ? err->code : LAYA_ERR_NOMEM;
  backend_worker *w = NULL;
  if (!rc && be) {
    w = pooled ? engine_worker_take(m, err) : be->worker_create(be, err);
    if (!w) rc = err && err->code ? err->code : LAYA_ERR_NOMEM;
  }
  ids_vec ids = {0};
  int32_t *row_start = NULL;
  float *vec = NULL;
  const int B = o->batch_size;
  row_start = malloc(sizeof(int32_t) * (size_t)(B + 1));
  vec = malloc(sizeof(float) * (size_t)B * (size_t)d);
  if (!rc && n_todo && (!row_start || !vec)) rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory embedding %ld texts", n);
  /* after laya_reserve, a pass stays within the reserved shape (rows are independent on the CPU) */
  const long cap_tokens = pooled && m->reserved.n_tokens ? m->reserved.n_tokens : 0;
  const int cap_rows = pooled && m->reserved.n_rows ? m->reserved.n_rows : 0;
  for (long t0 = 0; !rc && t0 < n_todo; t0 += B) {
    long t1 = t0 + B < n_todo ? t0 + B : n_todo;
    ids.n = 0;
    for (long t = t0; t < t1 && !rc; t++) {
      long i = todo[t];
      row_start[t - t0] = (int32_t)ids.n;
      if ((rc = push_ids(&ids, pre, n_pre, err))) break;
      /* the text is truncated so that it and the special tokens fit max_length (the right side
       * goes, as HF truncation=True does); with no room it is still read (its errors stand) */
      const int room = o->max_length - n_pre - n_post;
      const size_t before = ids.n;
      if ((rc = tokenizer_encode(m->ck.tok, texts[i], lens[i], room > 0 ? room : 1, &ids, err))) break;
      if (room <= 0) ids.n = before;
      if ((rc = push_ids(&ids, post, n_post, err))) break;
    }
    if (rc) break;
    row_start[t1 - t0] = (int32_t)ids.n;
    /* the passes of this batch: rows with ids, cut to the reserved shape when there is one */
    int r = 0, nr = (int)(t1 - t0);
    while (r < nr && !rc) {
      if (row_start[r + 1] == row_start[r]) { /* no ids at all: the zero vector */
        memset(vec + (size_t)r * d, 0, sizeof(float) * (size_t)d);
        r++;
        continue;
      }
      int e = r + 1;
      while (e < nr && row_start[e + 1] > row_start[e] && (!cap_rows || e - r < cap_rows) &&
             (!cap_tokens || row_start[e + 1] - row_start[r] <= cap_tokens))
        e++;
      rc = run_rows(m, be, w, ids.ids, row_start, r, e, vec + (size_t)r * d, err);
      if (rc && pooled && backend_error_is_device_oom(err))
        rc = run_rows_on_cpu(m, ids.ids, row_start, r, e, vec + (size_t)r * d, err);
      r = e;
    }
    if (rc) break;
    for (long t = t0; t < t1; t++) {
      float *dst = out + (size_t)todo[t] * d;
      memcpy(dst, vec + (size_t)(t - t0) * d, sizeof(float) * (size_t)d);
    }
  }
  if (w) {
    if (pooled) engine_worker_give(m, w);
    else be->worker_destroy(be, w);
  }
  if (!rc && c && n_todo) {
    pthread_mutex_lock(&c->mu);
    for (long t = 0; t < n_todo; t++) {
      long i = todo[t];
      cache_put(c, hash[i], texts[i], lens[i], o->max_length, out + (size_t)i * d);
    }
    pthread_mutex_unlock(&c->mu);
  }
  ids_vec_free(&ids);
  free(row_start);
  free(vec);
  free(hash);
  free(todo);
  return rc;
}
