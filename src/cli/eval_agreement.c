/*
 * eval_agreement.c: `laya eval agreement REFERENCE REPEAT STUDENT`, Laya's offline paired agreement
 * of a student with a teacher on choice decisions (laya==0.4.15 `laya-evals agreement`).
 *
 * Three saved runs ("laya-agreement-run/1": run_id, provenance {model, revision, settings}, cases
 * [{id, state, questions, answers, language?, tags?}]) are checked as Laya checks them, paired by
 * case id and question id, and reported: agreement of the teacher's repeat and of the student
 * with the teacher's reference, the student's coverage (a null answer abstains), their paired
 * difference with a case-clustered bootstrap interval, per-question / language / tag slices and
 * every decision. The bootstrap draws numpy's stream (default_rng(seed): SeedSequence, PCG64,
 * bounded integers by Lemire's method on 32-bit halves, the generator's half-word kept across
 * rng.integers calls) and takes numpy's linear
 * percentile, so the interval is Laya's to the last bit. Output: json.dumps(indent=2).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_util.h"
#include "core/arena.h"
#include "core/json.h"
#include "core/pystr.h"
#include "core/sha256.h"
#include "core/strbuf.h"

#define RUN_SCHEMA "laya-agreement-run/1"

typedef struct {
  const char *id;
  const json_value *c; /* the case object */
} acase;

typedef struct {
  const json_value *run;
  acase *cases; /* in file order */
  size_t n;
  char fingerprint[65];
} arun;

static char g_msg[2048]; /* the EvalError's text */

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_msg, sizeof g_msg, fmt, ap);
  va_end(ap);
  return -1;
}

static const char *repr(arena *a, const char *s, size_t n) {
  strbuf sb;
  sb_init(&sb);
  py_repr_str(&sb, s, n);
  char *out = arena_strndup(a, sb.data ? sb.data : "", sb.len);
  sb_free(&sb);
  return out ? out : "''";
}

static const json_value *get(const json_value *o, const char *k) { return o && o->type == JSON_OBJECT ? json_get(o, k) : NULL; }
static bool is_null(const json_value *v) { return !v || v->type == JSON_NULL; }
static bool is_str(const json_value *v) { return v && v->type == JSON_STRING; }

/* ------------------------------------------------------------------ strict JSON (_json) */

static void compact(strbuf *sb, const json_value *v) {
  json_dump_opts o = {",", ":", false, -1};
  json_dump(sb, v, &o);
}

/* json.dumps(v, ensure_ascii=False, allow_nan=False, separators=(",", ":")), then its UTF-8
 * encoding: a non-finite float or a lone surrogate fails with Python's words. */
static int strict_json(const json_value *v, const char *where, strbuf *out) {
  if (json_has_nonfinite(v)) return fail("%s must be strict JSON: Out of range float values are not JSON compliant", where);
  compact(out, v);
  const char *s = out->data ? out->data : "";
  size_t cp = 0;
  for (size_t i = 0; i < out->len; cp++) {
    unsigned char c = (unsigned char)s[i];
    if (c == 0xED && i + 2 < out->len && (unsigned char)s[i + 1] >= 0xA0) {
      unsigned u = ((c & 0x0Fu) << 12) | (((unsigned char)s[i + 1] & 0x3Fu) << 6) | ((unsigned char)s[i + 2] & 0x3Fu);
      return fail("%s must be strict JSON: 'utf-8' codec can't encode character '\\u%04x' in position %zu: surrogates "
                  "not allowed",
                  where, u, cp);
    }
    i += c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  }
  return 0;
}

static int check_json(const json_value *v, const char *where) {
  strbuf sb;
  sb_init(&sb);
  int rc = strict_json(v, where, &sb);
  sb_free(&sb);
  return rc;
}

/* _json(a, key) != _json(b, key) */
static int differ(const json_value *a, const json_value *b, const char *key, bool *out) {
  strbuf x, y;
  sb_init(&x);
  sb_init(&y);
  int rc = strict_json(a, key, &x);
  if (!rc) rc = strict_json(b, key, &y);
  *out = !rc && (x.len != y.len || (x.len && memcmp(x.data, y.data, x.len)));
  sb_free(&x);
  sb_free(&y);
  return rc;
}

static int fingerprint(const json_value *v, char hex[65]) {
  strbuf sb;
  sb_init(&sb);
  int rc = strict_json(v, "fingerprint input", &sb);
  if (!rc) sha256_hex(sb.data ? sb.data : "", sb.len, hex);
  sb_free(&sb);
  return rc;
}

/* ------------------------------------------------------------------ the runs (_run) */

static int text(const json_value *v, const char *where) {
  size_t a = 0, m = 0;
  if (is_str(v)) py_strip(v->s, v->n, &a, &m);
  return is_str(v) && m ? 0 : fail("%s must be a non-empty string", where);
}

static int provenance(const json_value *p, const char *where) {
  if (!p || p->type != JSON_OBJECT) return fail("%s must be an object", where);
  char w[800];
  snprintf(w, sizeof w, "%s.model", where);
  if (text(get(p, "model"), w)) return -1;
  const json_value *rev = get(p, "revision");
  if (!rev) return fail("%s needs revision (use null when unknown)", where);
  snprintf(w, sizeof w, "%s.revision", where);
  if (!is_null(rev) && text(rev, w)) return -1;
  const json_value *st = get(p, "settings");
  if (!st || st->type != JSON_OBJECT) return fail("%s.settings must be an object", where);
  return check_json(p, where);
}

static bool is_int_not_bool(const json_value *v) { return v->type == JSON_INT; }

static int labels_of(const json_value *q, const char *where, const char ***labels, uint32_t *n, arena *a) {
  const json_value *t = get(q, "type");
  if (!q || q->type != JSON_OBJECT || !is_str(t) || strcmp(t->s, "choice") || t->n != 6)
    return fail("%s must be a choice question", where);
  const json_value *ins = get(q, "instructions");
  size_t s0 = 0, m = 0;
  if (is_str(ins)) py_strip(ins->s, ins->n, &s0, &m);
  if (is_null(ins) || (is_str(ins) && !m) || ((ins->type == JSON_OBJECT || ins->type == JSON_ARRAY) && !ins->n))
    return fail("%s needs non-empty instructions", where);
  const json_value *cr = get(q, "criteria");
  if (!cr || (cr->type != JSON_OBJECT && cr->type != JSON_ARRAY) || !cr->n)
    return fail("%s.criteria must be a non-empty object or list of string labels", where);
  const char **ls = arena_alloc(a, sizeof *ls * cr->n);
  if (!ls) return fail("out of memory");
  for (uint32_t i = 0; i < cr->n; i++) {
    if (cr->type == JSON_OBJECT) {
      ls[i] = cr->members[i].key;
    } else {
      if (!is_str(&cr->items[i])) return fail("%s.criteria labels must be strings", where);
      ls[i] = cr->items[i].s;
    }
  }
  for (uint32_t i = 0; i < cr->n; i++)
    for (uint32_t j = i + 1; j < cr->n; j++)
      if (!strcmp(ls[i], ls[j])) return fail("%s.criteria contains duplicate labels", where);
  if (get(q, "labels")) return fail("%s: labels is only supported for noul questions", where);
  const json_value *order = get(q, "option_order");
  if (order) {
    bool ok = order->type == JSON_ARRAY && order->n == cr->n;
    bool *seen = ok ? arena_alloc(a, cr->n) : NULL;
    if (seen) memset(seen, 0, cr->n);
    for (uint32_t i = 0; ok && i < order->n; i++) {
      const json_value *x = &order->items[i];
      ok = is_int_not_bool(x) && !x->big && x->i >= 0 && x->i < (int64_t)cr->n && !seen[x->i];
      if (ok) seen[x->i] = true;
    }
    /* a list holding a non-int fails even where its length is wrong */
    if (!ok) return fail("%s.option_order must be a permutation of the option indices", where);
  }
  *labels = ls;
  *n = cr->n;
  return 0;
}

static bool tags_ok(const json_value *t) {
  if (!t || t->type != JSON_ARRAY) return false;
  for (uint32_t i = 0; i < t->n; i++)
    if (!is_str(&t->items[i])) return false;
  return true;
}

static const json_value kEmptyList = {.type = JSON_ARRAY};
static const json_value *tags_of(const json_value *c) {
  const json_value *t = get(c, "tags");
  return t ? t : &kEmptyList;
}

static int cmp_case(const void *x, const void *y) { return strcmp(((const acase *)x)->id, ((const acase *)y)->id); }

static const acase *find_case(const arun *r, const char *id) {
  for (size_t i = 0; i < r->n; i++)
    if (!strcmp(r->cases[i].id, id)) return &r->cases[i];
  return NULL;
}

static int load_run(const json_value *v, const char *role, bool student, arena *a, arun *out) {
  const json_value *schema = get(v, "schema");
  if (!v || v->type != JSON_OBJECT || !is_str(schema) || strcmp(schema->s, RUN_SCHEMA) || schema->n != strlen(RUN_SCHEMA))
    return fail("%s.schema must be '%s'", role, RUN_SCHEMA);
  if (check_json(v, role)) return -1;
  char w[700], w2[900];
  snprintf(w, sizeof w, "%s.run_id", role);
  if (text(get(v, "run_id"), w)) return -1;
  snprintf(w, sizeof w, "%s.provenance", role);
  if (provenance(get(v, "provenance"), w)) return -1;
  const json_value *cases = get(v, "cases");
  if (!cases || cases->type != JSON_ARRAY || !cases->n) return fail("%s.cases must be a non-empty list", role);
  out->run = v;
  out->cases = arena_alloc(a, sizeof *out->cases * cases->n);
  out->n = 0;
  if (!out->cases) return fail("out of memory");
  for (uint32_t i = 0; i < cases->n; i++) {
    const json_value *c = &cases->items[i];
    snprintf(w, sizeof w, "%s.cases[%u]", role, i);
    if (c->type != JSON_OBJECT) return fail("%s must be an object", w);
    snprintf(w2, sizeof w2, "%s.id", w);
    const json_value *id = get(c, "id");
    if (text(id, w2)) return -1;
    if (find_case(out, id->s)) return fail("%s: duplicate case id %s", role, repr(a, id->s, id->n));
    if (is_null(get(c, "state"))) return fail("%s needs a non-null state", w);
    const json_value *qs = get(c, "questions"), *ans = get(c, "answers");
    if (!qs || qs->type != JSON_OBJECT || !qs->n) return fail("%s.questions must be a non-empty object", w);
    bool same = ans && ans->type == JSON_OBJECT && ans->n == qs->n;
    for (uint32_t k = 0; same && k < qs->n; k++) same = json_getn(ans, qs->members[k].key, qs->members[k].key_len) != NULL;
    if (!same) return fail("%s.answers must have exactly the question ids", w);
    for (uint32_t k = 0; k < qs->n; k++) {
      const json_member *q = &qs->members[k];
      json_value key = json_string_n(q->key, q->key_len);
      snprintf(w2, sizeof w2, "%s.questions key", w);
      if (text(&key, w2)) return -1;
      const char *qr = repr(a, q->key, q->key_len);
      snprintf(w2, sizeof w2, "%s.questions[%s]", w, qr);
      const char **ls = NULL;
      uint32_t nl = 0;
      if (labels_of(&q->value, w2, &ls, &nl, a)) return -1;
      const json_value *an = json_getn(ans, q->key, q->key_len);
      if (an->type == JSON_NULL && student) continue;
      bool ok = is_str(an);
      if (ok) {
        ok = false;
        for (uint32_t l = 0; l < nl && !ok; l++) ok = !strcmp(ls[l], an->s) && strlen(ls[l]) == an->n;
      }
      if (!ok) return fail("%s.answers[%s] must be a choice label%s", w, qr, student ? " or null" : "");
    }
    const json_value *lang = get(c, "language");
    if (!is_null(lang) && !is_str(lang)) return fail("%s.language must be a string or null", w);
    if (!tags_ok(tags_of(c))) return fail("%s.tags must be a list of strings", w);
    out->cases[out->n++] = (acase){id->s, c};
  }
  /* the fingerprint of the run with its cases sorted by id (row order is not identity) */
  acase *sorted = arena_alloc(a, sizeof *sorted * out->n);
  json_value norm = *v, arr = *cases;
  json_member *ms = arena_alloc(a, sizeof *ms * v->n);
  arr.items = arena_alloc(a, sizeof *arr.items * out->n);
  if (!sorted || !ms || !arr.items) return fail("out of memory");
  memcpy(sorted, out->cases, sizeof *sorted * out->n);
  qsort(sorted, out->n, sizeof *sorted, cmp_case);
  for (size_t i = 0; i < out->n; i++) arr.items[i] = *sorted[i].c;
  arr.n = (uint32_t)out->n;
  for (uint32_t i = 0; i < v->n; i++) {
    ms[i] = v->members[i];
    if (!strcmp(ms[i].key, "cases")) ms[i].value = arr;
  }
  norm.members = ms;
  return fingerprint(&norm, out->fingerprint);
}

static bool same_tag_set(const json_value *a, const json_value *b) {
  for (int pass = 0; pass < 2; pass++) {
    const json_value *x = pass ? b : a, *y = pass ? a : b;
    for (uint32_t i = 0; i < x->n; i++) {
      bool found = false;
      for (uint32_t j = 0; j < y->n && !found; j++) found = !strcmp(x->items[i].s, y->items[j].s);
      if (!found) return false;
    }
  }
  return true;
}

static int align(const arun *ref, const arun *other, const char *role, arena *a) {
  bool same = ref->n == other->n;
  for (size_t i = 0; same && i < ref->n; i++) same = find_case(other, ref->cases[i].id) != NULL;
  if (!same) return fail("%s case ids must exactly match reference case ids", role);
  static const char *const keys[2] = {"state", "questions"};
  for (size_t i = 0; i < ref->n; i++) {
    const json_value *c = ref->cases[i].c, *d = find_case(other, ref->cases[i].id)->c;
    const char *idr = repr(a, ref->cases[i].id, strlen(ref->cases[i].id));
    for (int k = 0; k < 2; k++) {
      bool diff;
      if (differ(get(c, keys[k]), get(d, keys[k]), keys[k], &diff)) return -1;
      if (diff) return fail("%s case %s has different %s (including option order)", role, idr, keys[k]);
    }
    const json_value *l1 = get(c, "language"), *l2 = get(d, "language");
    bool lang_eq = is_null(l1) ? is_null(l2) : !is_null(l2) && !strcmp(l1->s, l2->s) && l1->n == l2->n;
    if (!lang_eq || !same_tag_set(tags_of(c), tags_of(d)))
      return fail("%s case %s has different language or tags", role, idr);
  }
  return 0;
}

/* ------------------------------------------------------------------ numpy's bootstrap stream */

typedef unsigned __int128 u128;
typedef struct {
  u128 state, inc;
  uint64_t buf;
  int has;
} pcg64;

static uint32_t ss_hashmix(uint32_t v, uint32_t *hc) {
  v ^= *hc;
  *hc *= 0x931e8875u;
  v *= *hc;
  return v ^ (v >> 16);
}

static uint32_t ss_mix(uint32_t x, uint32_t y) {
  uint32_t r = 0xca01f9ddu * x - 0x4973f715u * y;
  return r ^ (r >> 16);
}

static void pcg_step(pcg64 *r) {
  const u128 mult = ((u128)0x2360ED051FC65DA4ull << 64) | 0x4385DF649FCCF645ull;
  r->state = r->state * mult + r->inc;
}

static uint64_t pcg_next64(pcg64 *r) {
  pcg_step(r);
  uint64_t x = (uint64_t)(r->state >> 64) ^ (uint64_t)r->state;
  unsigned rot = (unsigned)(r->state >> 122);
  return (x >> rot) | (x << ((64 - rot) & 63));
}

/* np.random.default_rng(seed): SeedSequence(seed) (a 4-word pool mixing the seed's 32-bit words,
 * least significant first: any number of them), generate_state(4 uint64), PCG64 */
static void pcg_seed(pcg64 *r, const uint32_t *ent, size_t ne) {
  uint32_t pool[4], hc = 0x43b0d7e5u;
  for (size_t i = 0; i < 4; i++) pool[i] = ss_hashmix(i < ne ? ent[i] : 0, &hc);
  for (int s = 0; s < 4; s++)
    for (int d = 0; d < 4; d++)
      if (s != d) pool[d] = ss_mix(pool[d], ss_hashmix(pool[s], &hc));
  for (size_t s = 4; s < ne; s++) /* the words past the pool mix into every pool word */
    for (int d = 0; d < 4; d++) pool[d] = ss_mix(pool[d], ss_hashmix(ent[s], &hc));
  uint32_t st[8], hb = 0x8b51f9ddu;
  for (int i = 0; i < 8; i++) {
    uint32_t v = pool[i % 4] ^ hb;
    hb *= 0x58f38dedu;
    v *= hb;
    st[i] = v ^ (v >> 16);
  }
  uint64_t w[4];
  for (int i = 0; i < 4; i++) w[i] = (uint64_t)st[2 * i] | ((uint64_t)st[2 * i + 1] << 32);
  r->state = 0;
  r->inc = ((((u128)w[2] << 64) | w[3]) << 1) | 1;
  pcg_step(r);
  r->state += ((u128)w[0] << 64) | w[1];
  pcg_step(r);
  r->has = 0;
}

static uint32_t pcg_buffered32(pcg64 *r) {
  if (!r->has) {
    r->buf = pcg_next64(r);
    r->has = 1;
  } else {
    r->buf >>= 32;
    r->has = 0;
  }
  return (uint32_t)r->buf;
}

/* an integer in [0, n) (n <= 2^32 - 1), as Generator.integers draws it */
static uint32_t pcg_below(pcg64 *r, uint32_t n) {
  uint32_t rng = n - 1, excl = n;
  uint64_t m = (uint64_t)pcg_buffered32(r) * excl;
  uint32_t left = (uint32_t)m;
  if (left < excl) {
    uint32_t th = (UINT32_MAX - rng) % excl;
    while (left < th) {
      m = (uint64_t)pcg_buffered32(r) * excl;
      left = (uint32_t)m;
    }
  }
  return (uint32_t)(m >> 32);
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

/* np.percentile(draws, q), method "linear" */
static double percentile(const double *sorted, size_t n, double q) {
  double v = (double)(n - 1) * (q / 100.0), prev = floor(v);
  size_t lo, hi;
  if (v >= (double)(n - 1)) {
    lo = hi = n - 1;
  } else {
    lo = (size_t)prev;
    hi = lo + 1;
  }
  double a = sorted[lo], b = sorted[hi], t = v - prev, d = b - a;
  return t >= 0.5 ? b - d * (1 - t) : a + d * t;
}

/* a non-negative decimal integer as numpy takes a Python int: its 32-bit words, least significant
 * first ([0] for zero); malloc'd */
static uint32_t *seed_words(const char *digits, size_t *n) {
  size_t cap = strlen(digits) / 9 + 2, k = 0;
  uint32_t *w = calloc(cap, sizeof *w);
  if (!w) return NULL;
  for (const char *p = digits; *p; p++) {
    uint64_t carry = (uint64_t)(*p - '0');
    for (size_t i = 0; i < k; i++) {
      uint64_t t = (uint64_t)w[i] * 10 + carry;
      w[i] = (uint32_t)t;
      carry = t >> 32;
    }
    if (carry) w[k++] = (uint32_t)carry;
  }
  *n = k ? k : 1;
  return w;
}

/* the paired, case-clustered bootstrap interval of the delta (seed: canonical decimal digits):
 * false when fewer than 2 cases */
static bool interval(const long long (*clusters)[2], size_t nc, long long samples, const char *seed, double out[2]) {
  if (nc < 2) return false;
  size_t nw;
  uint32_t *words = seed_words(seed, &nw);
  double *draws = malloc(sizeof *draws * (size_t)samples);
  if (!draws || !words) {
    free(draws);
    free(words);
    return false;
  }
  pcg64 r;
  pcg_seed(&r, words, nw);
  free(words);
  long long batch = 131072 / (long long)nc;
  if (batch > samples) batch = samples;
  if (batch < 1) batch = 1;
  for (long long start = 0; start < samples; start += batch) {
    long long stop = start + batch < samples ? start + batch : samples;
    for (long long k = start; k < stop; k++) {
      long long d = 0, n = 0;
      for (size_t j = 0; j < nc; j++) {
        uint32_t i = pcg_below(&r, (uint32_t)nc);
        d += clusters[i][0];
        n += clusters[i][1];
      }
      draws[k] = (double)d / (double)n;
    }
  }
  qsort(draws, (size_t)samples, sizeof *draws, cmp_double);
  out[0] = percentile(draws, (size_t)samples, 2.5);
  out[1] = percentile(draws, (size_t)samples, 97.5);
  free(draws);
  return true;
}

/* ------------------------------------------------------------------ the report */

typedef struct {
  const char *case_id, *qid, *first, *second, *student; /* student NULL = abstained */
  bool t_agree, s_agree;
  int delta;
  char fp[65];
  const json_value *language; /* NULL = null */
  const char **tags;          /* sorted, unique */
  uint32_t ntags;
} record;

static json_value jstr(const char *s) { return json_string(s); }

typedef struct {
  arena *a;
  json_value *v;
  uint32_t cap;
} obj;

static obj obj_new(arena *a, uint32_t cap) {
  obj o = {a, arena_alloc(a, sizeof(json_value)), cap};
  if (o.v) {
    memset(o.v, 0, sizeof *o.v);
    o.v->type = JSON_OBJECT;
    o.v->members = arena_alloc(a, sizeof(json_member) * cap);
  }
  return o;
}

static void put(obj *o, const char *k, json_value v) {
  if (!o->v || !o->v->members || o->v->n >= o->cap) return;
  o->v->members[o->v->n++] = (json_member){k, (uint32_t)strlen(k), v};
}

static json_value list_of(arena *a, uint32_t n) {
  json_value v;
  memset(&v, 0, sizeof v);
  v.type = JSON_ARRAY;
  v.items = arena_alloc(a, sizeof(json_value) * (n ? n : 1));
  return v;
}

static json_value aggregate(arena *a, const record *const *rs, size_t n) {
  size_t teacher = 0, student = 0, accepted = 0, cases = 0;
  for (size_t i = 0; i < n; i++) {
    teacher += rs[i]->t_agree;
    student += rs[i]->s_agree;
    accepted += rs[i]->student != NULL;
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++) seen = !strcmp(rs[j]->case_id, rs[i]->case_id);
    cases += !seen;
  }
  obj o = obj_new(a, 7);
  put(&o, "n_cases", json_int((long long)cases));
  put(&o, "n_decisions", json_int((long long)n));
  put(&o, "teacher_repeat_agreement", json_float((double)teacher / (double)n));
  put(&o, "student_teacher_agreement", json_float((double)student / (double)n));
  put(&o, "student_coverage", json_float((double)accepted / (double)n));
  put(&o, "paired_agreement_delta", json_float(((double)student - (double)teacher) / (double)n));
  return o.v ? *o.v : json_null();
}

static int cmp_cstr(const void *x, const void *y) { return strcmp(*(const char *const *)x, *(const char *const *)y); }

/* one slice dimension: group values sorted, each group's aggregate */
static json_value slices_of(arena *a, const record *rs, size_t n, int dim) {
  const char **keys = arena_alloc(a, sizeof *keys * (n * 8 + 1));
  size_t nk = 0;
  for (size_t i = 0; i < n; i++) {
    const record *r = &rs[i];
    uint32_t nv = dim == 2 ? r->ntags : 1;
    for (uint32_t t = 0; t < nv; t++) {
      const char *k = dim == 0 ? r->qid : dim == 1 ? (r->language ? r->language->s : NULL) : r->tags[t];
      if (!k) continue;
      bool seen = false;
      for (size_t j = 0; j < nk && !seen; j++) seen = !strcmp(keys[j], k);
      if (!seen && nk < n * 8) keys[nk++] = k;
    }
  }
  qsort(keys, nk, sizeof *keys, cmp_cstr);
  obj o = obj_new(a, (uint32_t)(nk ? nk : 1));
  const record **grp = arena_alloc(a, sizeof *grp * (n ? n : 1));
  for (size_t k = 0; k < nk && grp; k++) {
    size_t g = 0;
    for (size_t i = 0; i < n; i++) {
      const record *r = &rs[i];
      bool in = false;
      if (dim == 0) in = !strcmp(r->qid, keys[k]);
      else if (dim == 1) in = r->language && !strcmp(r->language->s, keys[k]);
      else
        for (uint32_t t = 0; t < r->ntags && !in; t++) in = !strcmp(r->tags[t], keys[k]);
      if (in) grp[g++] = r;
    }
    put(&o, keys[k], aggregate(a, grp, g));
  }
  return o.v ? *o.v : json_null();
}

static const json_value *answer_of(const acase *c, const char *qid) { return json_get(get(c->c, "answers"), qid); }

static json_value report(arena *a, const arun *runs[3], long long samples, const char *seed) {
  static const char *const roles[3] = {"reference", "repeat", "student"};
  const arun *ref = runs[0];
  acase *sorted = arena_alloc(a, sizeof *sorted * ref->n);
  memcpy(sorted, ref->cases, sizeof *sorted * ref->n);
  qsort(sorted, ref->n, sizeof *sorted, cmp_case);
  size_t nrec = 0;
  for (size_t i = 0; i < ref->n; i++) nrec += get(sorted[i].c, "questions")->n;
  record *rs = arena_alloc(a, sizeof *rs * nrec);
  long long (*clusters)[2] = arena_alloc(a, sizeof *clusters * ref->n);
  size_t k = 0;
  for (size_t i = 0; i < ref->n; i++) {
    const json_value *c = sorted[i].c, *qs = get(c, "questions");
    obj in = obj_new(a, 2);
    put(&in, "state", *get(c, "state"));
    put(&in, "questions", *qs);
    char fp[65];
    fingerprint(in.v, fp); /* strict already: the run passed */
    const char **qids = arena_alloc(a, sizeof *qids * qs->n);
    for (uint32_t q = 0; q < qs->n; q++) qids[q] = qs->members[q].key;
    qsort(qids, qs->n, sizeof *qids, cmp_cstr);
    const json_value *tags = tags_of(c);
    const char **tg = arena_alloc(a, sizeof *tg * (tags->n ? tags->n : 1));
    uint32_t nt = 0;
    for (uint32_t t = 0; t < tags->n; t++) {
      bool seen = false;
      for (uint32_t j = 0; j < nt && !seen; j++) seen = !strcmp(tg[j], tags->items[t].s);
      if (!seen) tg[nt++] = tags->items[t].s;
    }
    qsort(tg, nt, sizeof *tg, cmp_cstr);
    clusters[i][0] = clusters[i][1] = 0;
    for (uint32_t q = 0; q < qs->n; q++) {
      record *r = &rs[k++];
      r->case_id = sorted[i].id;
      r->qid = qids[q];
      r->first = answer_of(&sorted[i], qids[q])->s;
      r->second = answer_of(find_case(runs[1], sorted[i].id), qids[q])->s;
      const json_value *st = answer_of(find_case(runs[2], sorted[i].id), qids[q]);
      r->student = is_str(st) ? st->s : NULL;
      r->t_agree = !strcmp(r->second, r->first);
      r->s_agree = r->student && !strcmp(r->student, r->first);
      r->delta = (int)r->s_agree - (int)r->t_agree;
      memcpy(r->fp, fp, 65);
      const json_value *lang = get(c, "language");
      r->language = is_null(lang) ? NULL : lang;
      r->tags = tg;
      r->ntags = nt;
      clusters[i][0] += r->delta;
      clusters[i][1] += 1;
    }
  }
  const record **all = arena_alloc(a, sizeof *all * nrec);
  for (size_t i = 0; i < nrec; i++) all[i] = &rs[i];
  json_value overall = aggregate(a, all, nrec);
  double ci[2];
  json_value civ = json_null();
  if (interval((const long long(*)[2])clusters, ref->n, samples, seed, ci)) {
    civ = list_of(a, 2);
    civ.items[civ.n++] = json_float(ci[0]);
    civ.items[civ.n++] = json_float(ci[1]);
  }
  json_member *om = arena_alloc(a, sizeof *om * (overall.n + 1));
  memcpy(om, overall.members, sizeof *om * overall.n);
  om[overall.n] = (json_member){"paired_delta_ci95", 17, civ};
  overall.members = om;
  overall.n++;

  obj slices = obj_new(a, 3);
  static const char *const dims[3] = {"qid", "language", "tag"};
  for (int d = 0; d < 3; d++) put(&slices, dims[d], slices_of(a, rs, nrec, d));

  json_value cases = list_of(a, (uint32_t)nrec);
  for (size_t i = 0; i < nrec; i++) {
    const record *r = &rs[i];
    obj o = obj_new(a, 13);
    put(&o, "case_id", jstr(r->case_id));
    put(&o, "qid", jstr(r->qid));
    put(&o, "teacher_reference", jstr(r->first));
    put(&o, "teacher_repeat", jstr(r->second));
    put(&o, "student", r->student ? jstr(r->student) : json_null());
    put(&o, "teacher_repeat_agreement", json_bool(r->t_agree));
    put(&o, "student_teacher_agreement", json_bool(r->s_agree));
    put(&o, "accepted", json_bool(r->student != NULL));
    put(&o, "delta", json_int(r->delta));
    put(&o, "input_fingerprint", jstr(arena_strndup(a, r->fp, 64)));
    put(&o, "language", r->language ? *r->language : json_null());
    json_value tl = list_of(a, r->ntags);
    for (uint32_t t = 0; t < r->ntags; t++) tl.items[tl.n++] = jstr(r->tags[t]);
    put(&o, "tags", tl);
    cases.items[cases.n++] = *o.v;
  }

  json_value lim = list_of(a, 5);
  lim.items[lim.n++] = jstr("Agreement is not accuracy, a student performance ceiling, or evidence that a teacher can "
                            "be replaced.");
  lim.items[lim.n++] = jstr("Teacher independence and provenance are declared by the caller, not verified by this "
                            "report.");
  lim.items[lim.n++] = jstr("The paired interval resamples original cases with their saved observations; it does not "
                            "resample teacher calls.");
  strbuf unk;
  sb_init(&unk);
  for (int r = 0; r < 3; r++)
    if (is_null(get(get(runs[r]->run, "provenance"), "revision"))) sb_printf(&unk, "%s%s", unk.len ? ", " : "", roles[r]);
  if (unk.len) {
    strbuf m;
    sb_init(&m);
    sb_printf(&m, "Unknown model revision for %s; the observations cannot be fully regenerated from this provenance.",
              unk.data);
    lim.items[lim.n++] = jstr(arena_strndup(a, m.data, m.len));
    sb_free(&m);
  }
  sb_free(&unk);
  if (ref->n < 2) lim.items[lim.n++] = jstr("A paired interval needs at least two original cases; paired_delta_ci95 is null.");

  obj prov = obj_new(a, 3), ids = obj_new(a, 3), fps = obj_new(a, 3);
  for (int r = 0; r < 3; r++) {
    put(&prov, roles[r], *get(runs[r]->run, "provenance"));
    put(&ids, roles[r], *get(runs[r]->run, "run_id"));
    put(&fps, roles[r], jstr(runs[r]->fingerprint));
  }
  obj cfg = obj_new(a, 10);
  put(&cfg, "protocol", jstr("teacher-reference-paired/1"));
  put(&cfg, "bootstrap_samples", json_int(samples));
  json_value sv = json_int(strtoll(seed, NULL, 10));
  if (strlen(seed) > 19 || (strlen(seed) == 19 && strcmp(seed, "9223372036854775807") > 0)) {
    sv.big = true; /* Python prints the integer exactly */
    sv.s = seed;
    sv.n = (uint32_t)strlen(seed);
    sv.d = strtod(seed, NULL);
  }
  put(&cfg, "seed", sv);
  put(&cfg, "cluster_unit", jstr("case_id"));
  put(&cfg, "confidence_level", json_float(0.95));
  put(&cfg, "interval_method", jstr("paired case bootstrap, percentile, ratio of decision sums"));
  put(&cfg, "provenance", *prov.v);
  put(&cfg, "run_ids", *ids.v);
  put(&cfg, "input_fingerprints", *fps.v);

  obj rep = obj_new(a, 6);
  put(&rep, "schema", jstr("laya-agreement-report/1"));
  put(&rep, "config", *cfg.v);
  put(&rep, "overall", overall);
  put(&rep, "slices", *slices.v);
  put(&rep, "cases", cases);
  put(&rep, "limitations", lim);
  return *rep.v;
}

/* ------------------------------------------------------------------ files and the command */

/* The first duplicate key Python's object_pairs_hook meets: objects complete innermost first. */
static const json_member *first_duplicate(const json_value *v) {
  if (v->type == JSON_ARRAY)
    for (uint32_t i = 0; i < v->n; i++) {
      const json_member *d = first_duplicate(&v->items[i]);
      if (d) return d;
    }
  if (v->type != JSON_OBJECT) return NULL;
  for (uint32_t i = 0; i < v->n; i++) {
    const json_member *d = first_duplicate(&v->members[i].value);
    if (d) return d;
    for (uint32_t j = 0; j < i; j++)
      if (v->members[j].key_len == v->members[i].key_len && !memcmp(v->members[j].key, v->members[i].key, v->members[i].key_len))
        return &v->members[i];
  }
  return NULL;
}

static const json_value *read_run(const char *path, arena *a) {
  const char *pr = repr(a, path, strlen(path));
  size_t len;
  char *text = cli_read_file(path, &len);
  if (!text) {
    int e = errno;
    fail("cannot read agreement run %s: [Errno %d] %s: %s", pr, e, strerror(e), pr);
    return NULL;
  }
  char um[200];
  size_t avail;
  if (cli_py_utf8_error(text, len, 0, &avail, um, sizeof um)) {
    free(text);
    fail("cannot read agreement run %s: %s", pr, um);
    return NULL;
  }
  json_parse_opts o = {0};
  o.keep_duplicates = true;
  laya_error err = {0};
  json_value *v = json_parse(text, len, a, &o, &err);
  free(text);
  if (!v) {
    fail("cannot read agreement run %s: %s", pr, err.message);
    return NULL;
  }
  const json_member *d = first_duplicate(v);
  if (d) {
    fail("cannot read agreement run %s: duplicate JSON key %s", pr, repr(a, d->key, d->key_len));
    return NULL;
  }
  return v;
}

static const char kHelpAgreement[] =
    "usage: laya eval agreement [-h] [--bootstrap-samples N] [--seed N] [--json PATH]\n"
    "                           REFERENCE REPEAT STUDENT\n"
    "\n"
    "Compare a student's saved choice answers with a teacher's: two teacher runs (a reference and\n"
    "an independent repeat) and one student run on the same cases, each a laya-agreement-run/1\n"
    "JSON file. Reports how often the repeat and the student agree with the reference, the\n"
    "student's coverage (a null answer abstains), their paired difference with a case bootstrap\n"
    "95% interval, slices by question, language and tag, and every decision. Agreement with a\n"
    "teacher is not accuracy. No model is loaded.\n"
    "\n"
    "positional arguments:\n"
    "  REFERENCE              the teacher's reference run\n"
    "  REPEAT                 the teacher's repeat run (another run_id, the same provenance)\n"
    "  STUDENT                the student's run on the same cases\n"
    "\n"
    "options:\n"
    "  -h, --help             show this help and exit\n"
    "  --bootstrap-samples N  bootstrap replicates, 100 to 100000 (default 2000)\n"
    "  --seed N               bootstrap seed, a non-negative integer of any size (default 0)\n"
    "  --json PATH            write the report to PATH instead of stdout\n";

/* argparse's type=int for both numbers: Python int() at any size */
static bool int_check(const char *option, const char *v, char *msg, size_t n) {
  if (!strcmp(option, "--json")) return true;
  bool neg;
  char *d;
  if (cli_py_int_digits(v, &neg, &d)) {
    free(d);
    return true;
  }
  char q[8800];
  snprintf(msg, n, "invalid int value: %s", cli_args_quoted(v, true, q, sizeof q));
  return false;
}

int cli_eval_agreement(int argc, char **argv, const struct arg_result *top) {
  const char *samples_s = NULL, *seed_s = NULL, *json_out = NULL;
  const arg_spec opts[] = {{"--bootstrap-samples", ARG_STR, &samples_s, NULL},
                           {"--seed", ARG_STR, &seed_s, NULL},
                           {"--json", ARG_STR, &json_out, NULL}};
  const size_t n_opts = sizeof opts / sizeof opts[0];
  arg_result r;
  const arg_parse_opts po = {true, 3, int_check, false};
  int perr = cli_args_parse_ex(argc, argv, 0, opts, n_opts, &po, &r);
  static const char *const names[3] = {"reference", "repeat", "student"};
  strbuf m;
  sb_init(&m);
  for (int i = r.n_positional; i < 3; i++) sb_printf(&m, "%s%s", i > r.n_positional ? ", " : "", names[i]);
  int verdict = cli_eval_verdict("agreement", kHelpAgreement, perr, &r, m.len ? m.data : "", top);
  sb_free(&m);
  const char *paths[3] = {NULL, NULL, NULL};
  for (int i = 0; verdict < 0 && i < 3; i++) paths[i] = r.positional[i];
  cli_args_free(opts, n_opts, &r);
  if (verdict >= 0) return verdict;
  /* both parsed as Python ints (int_check); out of range at any size: -1 */
  long long samples = 2000;
  bool seed_neg = false, neg;
  char *seed_owned = NULL, *d = NULL;
  if (samples_s && cli_py_int_digits(samples_s, &neg, &d)) samples = neg || strlen(d) > 7 ? -1 : atoll(d);
  free(d);
  const char *seed = "0"; /* canonical digits */
  if (seed_s && cli_py_int_digits(seed_s, &seed_neg, &seed_owned)) seed = seed_owned;
  arena a;
  arena_init(&a, 1 << 16);
  int rc = 0;
  const json_value *docs[3];
  arun runs[3];
  memset(runs, 0, sizeof runs);
  for (int i = 0; i < 3 && !rc; i++)
    if (!(docs[i] = read_run(paths[i], &a))) rc = -1;
  if (!rc && (samples < 100 || samples > 100000)) rc = fail("bootstrap_samples must be an integer from 100 to 100000");
  if (!rc && seed_neg) rc = fail("seed must be a non-negative integer");
  if (!rc) rc = load_run(docs[0], "reference", false, &a, &runs[0]);
  if (!rc) rc = load_run(docs[1], "repeat", false, &a, &runs[1]);
  if (!rc && !strcmp(get(docs[0], "run_id")->s, get(docs[1], "run_id")->s))
    rc = fail("reference and repeat need distinct run_id values");
  static const char *const pk[3] = {"model", "revision", "settings"};
  for (int k = 0; k < 3 && !rc; k++) {
    bool diff;
    rc = differ(get(get(docs[0], "provenance"), pk[k]), get(get(docs[1], "provenance"), pk[k]), pk[k], &diff);
    if (!rc && diff) rc = fail("teacher provenance.%s must match between reference and repeat", pk[k]);
  }
  if (!rc) rc = align(&runs[0], &runs[1], "repeat", &a);
  if (!rc) rc = load_run(docs[2], "student", true, &a, &runs[2]);
  if (!rc) {
    const char *s = get(docs[2], "run_id")->s;
    if (!strcmp(s, get(docs[0], "run_id")->s) || !strcmp(s, get(docs[1], "run_id")->s))
      rc = fail("student needs a run_id distinct from both teacher runs");
  }
  if (!rc) rc = align(&runs[0], &runs[2], "student", &a);
  if (!rc) {
    const arun *rp[3] = {&runs[0], &runs[1], &runs[2]};
    json_value rep = report(&a, rp, samples, seed);
    strbuf out;
    sb_init(&out);
    json_dump_opts o = {NULL, NULL, false, 2};
    json_dump(&out, &rep, &o);
    sb_putc(&out, '\n');
    if (out.oom) {
      rc = fail("out of memory");
    } else if (json_out) {
      FILE *f = fopen(json_out, "wb");
      bool ok = f && fwrite(out.data, 1, out.len, f) == out.len;
      int e = errno;
      if (f && fclose(f)) ok = false, e = errno;
      if (!ok) {
        const char *pr = repr(&a, json_out, strlen(json_out));
        rc = fail("cannot write agreement report %s: [Errno %d] %s: %s", pr, e, strerror(e), pr);
      }
    } else {
      fwrite(out.data, 1, out.len, stdout);
    }
    sb_free(&out);
  }
  free(seed_owned);
  arena_free(&a);
  if (rc) {
    fprintf(stderr, "laya-evals: %s\n", g_msg);
    return 2;
  }
  return 0;
}
