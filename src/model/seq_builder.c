#include "model/seq_builder.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void scrub_mask(strbuf *out, const char *text, size_t n, const char *mask, size_t mask_len) {
  if (!mask_len) {
    sb_append(out, text, n);
    return;
  }
  size_t i = 0, run = 0;
  while (i + mask_len <= n) {
    if (text[i] == mask[0] && memcmp(text + i, mask, mask_len) == 0) {
      sb_append(out, text + run, i - run);
      sb_putc(out, ' ');
      i += mask_len;
      run = i;
    } else {
      i++;
    }
  }
  sb_append(out, text + run, n - run);
}

/* The `tokenizers` binding cannot take a Python str holding a lone surrogate (WTF-8 ED A0..BF). */
int check_encodable(const char *text, size_t n, laya_error *err) {
  for (size_t i = 0; i + 1 < n; i++)
    if ((unsigned char)text[i] == 0xED && ((unsigned char)text[i + 1] & 0xE0) == 0xA0)
      return laya_type_error(err, "TextEncodeInput must be Union[TextInputSequence, Tuple[InputSequence, InputSequence]]");
  return 0;
}

void serialize_state(strbuf *sb, const json_value *state) {
  if (state->type == JSON_STRING) {
    sb_append(sb, state->s, state->n);
    return;
  }
  json_dump_opts o = {NULL, NULL, false, -1};
  json_dump(sb, state, &o);
}

int encode_state(const seq_tok *st, const json_value *state, ids_vec *out, strbuf *scratch,
                 laya_error *err) {
  strbuf text;
  sb_init(&text);
  sb_reset(scratch);
  serialize_state(scratch, state);
  scrub_mask(&text, sb_cstr(scratch), scratch->len, st->roles->mask_token, st->mask_len);
  if (text.oom || scratch->oom) {
    sb_free(&text);
    return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory serialising the state");
  }
  out->n = 0;
  int rc = check_encodable(text.data ? text.data : "", text.len, err);
  if (!rc) rc = tokenizer_encode(st->tok, sb_cstr(&text), text.len, 0, out, err);
  sb_free(&text);
  return rc;
}

/* ---- tok_cache ---------------------------------------------------------------------------- */

#define TC_SLOTS 2048            /* open addressing, power of two; at most half used */
#define TC_MAX_ENTRIES (TC_SLOTS / 2)
#define TC_MAX_BYTES (2u << 20)  /* keys and ids together */
#define TC_MAX_TEXT 4096         /* longer texts are encoded every time */

typedef struct tc_entry {
  uint64_t hash;
  int max_len;
  size_t len, n_ids;
  int32_t *ids; /* n_ids ids, then the len bytes of the text */
} tc_entry;

struct tok_cache {
  pthread_mutex_t mu;
  tc_entry slot[TC_SLOTS];
  int n_entries;
  size_t bytes;
};

tok_cache *tok_cache_new(void) {
  tok_cache *c = calloc(1, sizeof *c);
  if (c) pthread_mutex_init(&c->mu, NULL);
  return c;
}

static void tc_clear(tok_cache *c) {
  for (int i = 0; i < TC_SLOTS; i++) free(c->slot[i].ids);
  memset(c->slot, 0, sizeof c->slot);
  c->n_entries = 0;
  c->bytes = 0;
}

void tok_cache_free(tok_cache *c) {
  if (!c) return;
  tc_clear(c);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

static uint64_t tc_hash(const char *s, size_t n, int max_len) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)(uint32_t)max_len;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h | 1; /* 0 marks an empty slot */
}

static const char *tc_text(const tc_entry *e) { return (const char *)(e->ids + e->n_ids); }

/* The slot of (text, max_len): its entry, or the empty slot where it would go. */
static tc_entry *tc_find(tok_cache *c, uint64_t h, const char *s, size_t n, int max_len) {
  for (size_t i = h & (TC_SLOTS - 1);; i = (i + 1) & (TC_SLOTS - 1)) {
    tc_entry *e = &c->slot[i];
    if (!e->hash) return e;
    if (e->hash == h && e->max_len == max_len && e->len == n && !memcmp(tc_text(e), s, n)) return e;
  }
}

/* out = the cached ids of (text, max_len); false when absent (or out of memory). */
static bool tc_get(tok_cache *c, uint64_t h, const char *s, size_t n, int max_len, ids_vec *out) {
  bool hit = false;
  pthread_mutex_lock(&c->mu);
  tc_entry *e = tc_find(c, h, s, n, max_len);
  if (e->hash) {
    if (out->cap < e->n_ids) {
      int32_t *p = realloc(out->ids, sizeof(int32_t) * e->n_ids);
      if (p) out->ids = p, out->cap = e->n_ids;
    }
    if (out->cap >= e->n_ids) {
      if (e->n_ids) memcpy(out->ids, e->ids, sizeof(int32_t) * e->n_ids);
      out->n = e->n_ids;
      hit = true;
    }
  }
  pthread_mutex_unlock(&c->mu);
  return hit;
}

static void tc_put(tok_cache *c, uint64_t h, const char *s, size_t n, int max_len, const ids_vec *v) {
  size_t bytes = sizeof(int32_t) * v->n + n;
  int32_t *blk = malloc(bytes ? bytes : 1);
  if (!blk) return; /* not cached: the next request encodes again */
  if (v->n) memcpy(blk, v->ids, sizeof(int32_t) * v->n);
  memcpy(blk + v->n, s, n);
  pthread_mutex_lock(&c->mu);
  if (c->n_entries >= TC_MAX_ENTRIES || c->bytes + bytes > TC_MAX_BYTES) tc_clear(c);
  tc_entry *e = tc_find(c, h, s, n, max_len);
  if (e->hash) { /* another thread put it first */
    free(blk);
  } else {
    *e = (tc_entry){h, max_len, n, v->n, blk};
    c->n_entries++;
    c->bytes += bytes;
  }
  pthread_mutex_unlock(&c->mu);
}

/* ---- question texts ------------------------------------------------------------------------ */

static int encode_text(const seq_tok *st, const char *text, size_t n, const char *prefix,
                       int max_len, ids_vec *out, laya_error *err) {
  strbuf sb;
  sb_init(&sb);
  sb_puts(&sb, prefix);
  scrub_mask(&sb, text, n, st->roles->mask_token, st->mask_len);
  if (sb.oom) {
    sb_free(&sb);
    return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  }
  out->n = 0;
  const char *s = sb.data ? sb.data : "";
  bool cacheable = st->cache && sb.len <= TC_MAX_TEXT;
  uint64_t h = cacheable ? tc_hash(s, sb.len, max_len) : 0;
  if (cacheable && tc_get(st->cache, h, s, sb.len, max_len, out)) {
    sb_free(&sb);
    return 0; /* only texts that encoded are cached: check_encodable passed for them */
  }
  int rc = check_encodable(s, sb.len, err);
  if (!rc) rc = tokenizer_encode(st->tok, sb_cstr(&sb), sb.len, max_len, out, err);
  if (!rc && cacheable) tc_put(st->cache, h, s, sb.len, max_len, out);
  sb_free(&sb);
  return rc;
}

int build_head(const seq_tok *st, const question *q, int head_max_len, arena *a, head_ids *out,
               laya_error *err) {
  memset(out, 0, sizeof *out);
  ids_vec v = {0};
  int rc = 0;
  const int n = q->n_opts;
  int32_t **opt = arena_alloc(a, sizeof(int32_t *) * (size_t)n);
  int *olen = arena_alloc(a, sizeof(int) * (size_t)n);
  int32_t *ins = NULL;
  int n_ins = 0;
  if (!opt || !olen) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  /* "<type> question: <instructions>" */
  char prefix[32];
  snprintf(prefix, sizeof prefix, "%s question: ", q->type_name);
  if ((rc = encode_text(st, q->ins, q->ins_len, prefix, 0, &v, err))) goto done;
  n_ins = (int)v.n;
  ins = arena_alloc(a, sizeof(int32_t) * (v.n ? v.n : 1));
  if (!ins) goto oom;
  memcpy(ins, v.ids, sizeof(int32_t) * v.n);
  /* one [MASK] + up to 48 tokens of " <option>" per slot, in slot order */
  long total = 0;
  for (int s = 0; s < n; s++) {
    int i = q->order ? q->order[s] : s;
    if ((rc = encode_text(st, q->opt[i], q->opt_len[i], " ", LAYA_OPT_CAP, &v, err))) goto done;
    opt[s] = arena_alloc(a, sizeof(int32_t) * (v.n + 1));
    if (!opt[s]) goto oom;
    opt[s][0] = st->roles->mask_id;
    memcpy(opt[s] + 1, v.ids, sizeof(int32_t) * v.n);
    olen[s] = (int)v.n + 1;
    total += olen[s];
  }
  long opt_budget = (long)head_max_len - total;
  out->tokens_per_option = -1;
  if (opt_budget < LAYA_MIN_OPT_BUDGET) {
    /* Python floor division; the max() makes the sign of the numerator moot */
    long num = (long)head_max_len - LAYA_MIN_OPT_BUDGET, den = n > 1 ? n : 1;
    long fl = num / den - ((num % den != 0) && ((num < 0) != (den < 0)));
    long per = fl > LAYA_MIN_PER_OPTION ? fl : LAYA_MIN_PER_OPTION;
    out->tokens_per_option = (int)(per > 1000000000L ? 1000000000L : per);
    total = 0;
    for (int s = 0; s < n; s++) {
      if (olen[s] > per) olen[s] = (int)per;
      total += olen[s];
    }
    opt_budget = (long)head_max_len - total;
  }
  long keep = opt_budget > LAYA_MIN_INSTRUCTION ? opt_budget : LAYA_MIN_INSTRUCTION;
  if (keep < n_ins) n_ins = (int)keep;
  out->n_ids = 1 + n_ins + 1 + (int)total + 1;
  out->ids = arena_alloc(a, sizeof(int32_t) * (size_t)out->n_ids);
  out->markers = arena_alloc(a, sizeof(int) * (size_t)(n ? n : 1));
  if (!out->ids || !out->markers) goto oom;
  int p = 0;
  out->ids[p++] = st->roles->cls_id;
  memcpy(out->ids + p, ins, sizeof(int32_t) * (size_t)n_ins);
  p += n_ins;
  out->ids[p++] = st->roles->sep_id;
  for (int s = 0; s < n; s++) {
    out->markers[s] = p;
    memcpy(out->ids + p, opt[s], sizeof(int32_t) * (size_t)olen[s]);
    p += olen[s];
  }
  out->ids[p++] = st->roles->sep_id;
  out->n_markers = n;
  out->options = n;
  /* distinct capped spans ([MASK] included) */
  int distinct = 0;
  for (int s = 0; s < n; s++) {
    bool seen = false;
    for (int r = 0; r < s && !seen; r++)
      seen = olen[r] == olen[s] && memcmp(opt[r], opt[s], sizeof(int32_t) * (size_t)olen[s]) == 0;
    if (!seen) distinct++;
  }
  out->options_distinct = distinct;
  goto done;
oom:
  rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
done:
  ids_vec_free(&v);
  return rc;
}

void plan_row(const head_ids *h, int n_state, bool truncate_left, int max_len, row_plan *p) {
  long room = (long)max_len - h->n_ids - 1;
  if (room < 0) room = 0;
  int used = n_state < room ? n_state : (int)room;
  p->state_used = used;
  p->state_from = truncate_left ? n_state - used : 0;
  p->dropped = n_state - used;
  long full = (long)h->n_ids + used + 1;
  p->len = (int)(max_len >= 0 && full > max_len ? max_len : full);
  if (max_len < 0) p->len = (int)(full + max_len > 0 ? full + max_len : 0); /* Python slice */
  int kept = 0;
  for (int s = 0; s < h->n_markers; s++) kept += h->markers[s] < max_len;
  p->markers_kept = kept;
}

void write_row(const head_ids *h, const int32_t *state_ids, const row_plan *p, int32_t sep_id,
               int32_t *out) {
  int o = 0;
  for (int i = 0; i < h->n_ids && o < p->len; i++) out[o++] = h->ids[i];
  for (int i = 0; i < p->state_used && o < p->len; i++) out[o++] = state_ids[p->state_from + i];
  if (o < p->len) out[o++] = sep_id;
}
