/*
 * eval.c: `laya eval {validate,run,agreement,compare,evidence}`, the evaluation harness of Laya
 * 0.4.15 (laya.evals, laya.evals_cli, laya.evidence, laya._eval_policy) in C; `agreement` is
 * eval_agreement.c.
 *
 * A dataset is JSONL: {"state", "questions", "expected": {qid: label | bool | number}, "tags"?,
 * "language"?, "model"?}; blank and '#' lines are skipped. `run` answers every example (through
 * the Router, or one checkpoint directory with --model DIR) and reads the answers as the engine's
 * values (router_typed.h, typed.h: nothing laya.c writes is parsed back), then reports accuracy per question type, score MAE,
 * score_within_T (--score-within), mean confidence, ECE (15 bins), Brier, AURC, selective accuracy
 * at 50% and 80% coverage, and latency percentiles, overall and per language / model / question id
 * / tag. The report (--json) is Laya's laya-evals-report/1 document with its run identity
 * (dataset and question fingerprints), so `compare` and `--baseline` gate a laya.c run against a
 * report either implementation wrote, with Laya's tolerances, comparability refusals and
 * --gate-policy slice rules. `evidence` is Laya's read-only checkpoint / report inspection.
 * Exit status: 0, 1 when a gate or a baseline comparison fails, 2 on an error.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_util.h"
#include "cli/precision.h"
#include "core/error.h"
#include "core/json.h"
#include "core/pystr.h"
#include "core/sha256.h"
#include "laya.h"
#include "model/result_json.h"
#include "model/typed.h"
#include "router/router.h"
#include "router/router_typed.h"

#define MAX_EVAL 24   /* evaluators: 4 defaults + --score-within */
#define MAX_METRIC 40

typedef struct metric {
  char name[48];
  double value;
} metric;

typedef struct metrics {
  metric m[MAX_METRIC];
  int n;
} metrics;

static void put(metrics *ms, const char *name, double v) {
  if (isnan(v) || ms->n >= MAX_METRIC) return;
  snprintf(ms->m[ms->n].name, sizeof ms->m[0].name, "%s", name);
  ms->m[ms->n++].value = v;
}

typedef struct example {
  const json_value *state, *questions, *expected, *tags, *language, *model;
} example;

static int eval_error(const char *fmt, const char *a, const char *b, const char *c) {
  fprintf(stderr, "laya-evals: ");
  fprintf(stderr, fmt, a, b, c);
  fputc('\n', stderr);
  return 2;
}

/* ---------------------------------------------------------------- dataset */

static int load_dataset(const char *path, arena *ar, example **out, size_t *n_out) {
  size_t len;
  char *text = cli_read_file(path, &len);
  if (!text) {
    char msg[512];
    snprintf(msg, sizeof msg, "[Errno %d] %s: '%s'", errno, strerror(errno), path);
    return eval_error("%s cannot be read: %s%s", path, msg, "");
  }
  size_t cap = 64, n = 0;
  example *ex = malloc(cap * sizeof *ex);
  size_t lineno = 0;
  char *p = text, *end = text + len;
  int rc = 0;
  char umsg[200];
  size_t uavail = 0;
  bool ubad = cli_py_utf8_error(text, len, CLI_PY_TEXT_CHUNK, &uavail, umsg, sizeof umsg);
  while (p < end && !rc) {
    char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
    if (ubad && (!nl || (size_t)(nl - text) >= uavail)) break; /* this line needs the failing decode */
    lineno++;
    size_t a = 0, m = 0;
    py_strip(p, l, &a, &m);
    char where[600];
    snprintf(where, sizeof where, "%s:%zu", path, lineno);
    if (m && p[a] != '#') {
      laya_error err = {0};
      json_value *row = json_parse(p + a, m, ar, NULL, &err);
      if (!row) {
        rc = eval_error("%s is not valid JSON: %s%s", where, err.message, "");
        break;
      }
      if (row->type != JSON_OBJECT) {
        rc = eval_error("%s must be an object, got %s%s", where, json_py_type(row), "");
        break;
      }
      static const char *const req[] = {"state", "questions", "expected"};
      for (int k = 0; k < 3 && !rc; k++)
        if (!json_get(row, req[k])) rc = eval_error("%s is missing '%s'%s", where, req[k], "");
      if (rc) break;
      example e = {json_get(row, "state"), json_get(row, "questions"), json_get(row, "expected"),
                   json_get(row, "tags"), json_get(row, "language"), json_get(row, "model")};
      if (e.questions->type != JSON_OBJECT) {
        rc = eval_error("%s 'questions' must be an object%s%s", where, "", "");
        break;
      }
      if (e.expected->type != JSON_OBJECT) {
        rc = eval_error("%s 'expected' must be an object keyed by question id%s%s", where, "", "");
        break;
      }
      /* expected ids must be question ids (reported sorted) */
      strbuf unknown;
      sb_init(&unknown);
      const char *names[256];
      int nu = 0;
      for (uint32_t i = 0; i < e.expected->n && nu < 256; i++)
        if (!json_get(e.questions, e.expected->members[i].key)) names[nu++] = e.expected->members[i].key;
      for (int i = 0; i < nu; i++)
        for (int j = i + 1; j < nu; j++)
          if (strcmp(names[i], names[j]) > 0) {
            const char *t = names[i];
            names[i] = names[j];
            names[j] = t;
          }
      for (int i = 0; i < nu; i++) sb_printf(&unknown, "%s%s", i ? ", " : "", names[i]);
      if (nu) {
        rc = eval_error("%s 'expected' names unknown question(s): %s%s", where, unknown.data, "");
        sb_free(&unknown);
        break;
      }
      sb_free(&unknown);
      if (e.tags && e.tags->type != JSON_NULL && e.tags->type != JSON_ARRAY &&
          !(e.tags->type == JSON_BOOL && !e.tags->b) && !(e.tags->type == JSON_STRING && !e.tags->n)) {
        rc = eval_error("%s 'tags' must be a list%s%s", where, "", "");
        break;
      }
      if (n == cap) {
        cap *= 2;
        ex = realloc(ex, cap * sizeof *ex);
      }
      ex[n++] = e;
    }
    p = nl ? nl + 1 : end;
  }
  free(text);
  if (!rc && ubad) rc = eval_error("%s cannot be read: %s%s", path, umsg, "");
  if (!rc && n == 0) rc = eval_error("%s contains no examples%s%s", path, "", "");
  if (rc) {
    free(ex);
    return rc;
  }
  *out = ex;
  *n_out = n;
  return 0;
}

/* ---------------------------------------------------------------- metrics */

static const json_value *get(const json_value *o, const char *k) { return o ? json_get(o, k) : NULL; }


typedef struct pair {
  double c;
  int y;
} pair;

/* descending by confidence, stable (ties keep input order); NaN last */
static int cmp_desc(const void *a, const void *b) {
  const pair *x = a, *y = b;
  bool xn = isnan(x->c), yn = isnan(y->c);
  if (xn != yn) return xn ? 1 : -1;
  if (!xn && x->c != y->c) return x->c > y->c ? -1 : 1;
  return 0;
}

static void calibration(pair *p, size_t n, metrics *ms) {
  /* ECE with 15 equal-width bins; the first bin is closed on the left */
  double e = 0;
  for (int i = 0; i < 15; i++) {
    double lo = i * (1.0 / 15.0), hi = i + 1 == 15 ? 1.0 : (i + 1) * (1.0 / 15.0);
    double sc = 0, sy = 0;
    size_t k = 0;
    for (size_t j = 0; j < n; j++) {
      double c = p[j].c;
      bool in = (i == 0 ? c >= lo : c > lo) && c <= hi;
      if (in) {
        sc += c;
        sy += p[j].y;
        k++;
      }
    }
    if (k) e += ((double)k / (double)n) * fabs(sc / (double)k - sy / (double)k);
  }
  put(ms, "ece", e);
  double b = 0;
  for (size_t j = 0; j < n; j++) b += (p[j].c - p[j].y) * (p[j].c - p[j].y);
  put(ms, "brier", b / (double)n);
  /* sort a copy with a stable merge (insertion for small n is stable too) */
  pair *s = malloc(n * sizeof *s);
  memcpy(s, p, n * sizeof *s);
  for (size_t i = 1; i < n; i++)
    for (size_t k = i; k > 0 && cmp_desc(&s[k - 1], &s[k]) > 0; k--) {
      pair t = s[k];
      s[k] = s[k - 1];
      s[k - 1] = t;
    }
  /* AURC over tie groups */
  double area = 0, hits = 0, prev_acc = 0;
  for (size_t i = 0; i < n; i++) {
    hits += s[i].y;
    bool last = i + 1 == n || (s[i + 1].c != s[i].c && !(isnan(s[i + 1].c) && isnan(s[i].c)));
    if (last) {
      double accepted = (double)(i + 1);
      area += (1.0 - hits / accepted) * (accepted - prev_acc);
      prev_acc = accepted;
    }
  }
  put(ms, "aurc", area / (double)n);
  const double covs[2] = {0.5, 0.8};
  const char *names[2] = {"selective_accuracy@50", "selective_accuracy@80"};
  for (int c = 0; c < 2; c++) {
    size_t k = (size_t)ceil(covs[c] * (double)n);
    if (k < 1) k = 1;
    double cut = s[k - 1].c;
    size_t acc = 0;
    if (isnan(cut)) acc = n;
    else
      while (acc < n && s[acc].c >= cut) acc++;
    double h = 0;
    for (size_t i = 0; i < acc; i++) h += s[i].y;
    put(ms, names[c], h / (double)acc);
  }
  free(s);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* statistics.median and the nearest-rank 95th percentile */
static void percentiles(double *v, size_t n, double *p50, double *p95) {
  qsort(v, n, sizeof *v, cmp_double);
  *p50 = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
  size_t rank = (95 * n + 99) / 100;
  *p95 = v[rank - 1];
}


/* ---------------------------------------------------------------- small helpers */

static void die_oom(void) {
  fputs("laya-evals: out of memory\n", stderr);
  exit(2);
}

static void *xcalloc(size_t n, size_t sz) {
  void *p = calloc(n ? n : 1, sz);
  if (!p) die_oom();
  return p;
}

static char *xstrndup(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (!p) die_oom();
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

static void *xrealloc(void *p, size_t sz) {
  void *q = realloc(p, sz ? sz : 1);
  if (!q) die_oom();
  return q;
}

/* Python's "%.4f" / "%+.4f" of a float ("nan", "inf", never C's "-nan"). */
static const char *f4(double x, bool sign, char out[48]) {
  if (isnan(x)) snprintf(out, 48, "%snan", sign ? "+" : "");
  else if (isinf(x)) snprintf(out, 48, "%s", x > 0 ? (sign ? "+inf" : "inf") : "-inf");
  else snprintf(out, 48, sign ? "%+.4f" : "%.4f", x);
  return out;
}

/* str() / repr() of a JSON value. */
static char *str_of(const json_value *v, bool repr) {
  strbuf sb;
  sb_init(&sb);
  if (repr) py_repr_json(&sb, v);
  else py_str_json(&sb, v);
  return sb_steal(&sb);
}

/* Python == of two JSON values (as json.loads gives them), on their canonical text; numbers by
 * value (1 == 1.0, True == 1). */
static bool json_eq(const json_value *a, const json_value *b) {
  if (!a || !b) return a == b;
  bool an = json_is_number(a) || a->type == JSON_BOOL, bn = json_is_number(b) || b->type == JSON_BOOL;
  if (an && bn) {
    double x = a->type == JSON_BOOL ? a->b : a->d, y = b->type == JSON_BOOL ? b->b : b->d;
    return x == y;
  }
  if (a->type != b->type) return false;
  if (a->type == JSON_STRING) return a->n == b->n && !memcmp(a->s, b->s, a->n);
  if (a->type == JSON_NULL) return true;
  if (a->type == JSON_ARRAY) {
    if (a->n != b->n) return false;
    for (uint32_t i = 0; i < a->n; i++)
      if (!json_eq(&a->items[i], &b->items[i])) return false;
    return true;
  }
  if (a->type == JSON_OBJECT) {
    if (a->n != b->n) return false;
    for (uint32_t i = 0; i < a->n; i++) {
      const json_value *o = json_getn(b, a->members[i].key, a->members[i].key_len);
      if (!o || !json_eq(&a->members[i].value, o)) return false;
    }
    return true;
  }
  return false;
}

static bool is_null(const json_value *v) { return !v || v->type == JSON_NULL; }

/* ---- values built in an arena (the report as a document) */

static json_value jstr(arena *a, const char *s) {
  if (!s) return json_null();
  size_t n = strlen(s);
  return json_string_n(arena_strndup(a, s, n), n);
}

static json_value jobj(arena *a, uint32_t cap) {
  json_value v = json_null();
  v.type = JSON_OBJECT;
  v.members = arena_alloc(a, (cap ? cap : 1) * sizeof(json_member));
  return v;
}

static json_value jarr(arena *a, uint32_t cap) {
  json_value v = json_null();
  v.type = JSON_ARRAY;
  v.items = arena_alloc(a, (cap ? cap : 1) * sizeof(json_value));
  return v;
}

/* Append (the caller sized the object). */
static json_value *jput(arena *a, json_value *o, const char *key, json_value val) {
  json_member *m = &o->members[o->n++];
  m->key_len = (uint32_t)strlen(key);
  m->key = arena_strndup(a, key, m->key_len);
  m->value = val;
  return &m->value;
}

/* Set: replace the value of an existing key (dict assignment), else append. */
static void jset(arena *a, json_value *o, const char *key, json_value val) {
  for (uint32_t i = 0; i < o->n; i++)
    if (!strcmp(o->members[i].key, key)) {
      o->members[i].value = val;
      return;
    }
  jput(a, o, key, val);
}

static void jpush(json_value *arr, json_value val) { arr->items[arr->n++] = val; }

/* ---- writing as json.dump(indent=2, sort_keys=True, ensure_ascii=False) */

typedef struct wcase_answer {
  const answer *typed; /* the engine's value */
} wcase_answer;

static void write_sorted(rj *w, const json_value *v);

static int member_order_cmp(const void *x, const void *y) {
  const json_member *a = *(const json_member *const *)x, *b = *(const json_member *const *)y;
  int c = strcmp(a->key, b->key);
  return c ? c : (a < b ? -1 : a > b);
}

static const json_member **sorted_members(const json_value *o) {
  const json_member **ms = xcalloc(o->n, sizeof *ms);
  for (uint32_t i = 0; i < o->n; i++) ms[i] = &o->members[i];
  qsort(ms, o->n, sizeof *ms, member_order_cmp);
  return ms;
}

static void write_sorted(rj *w, const json_value *v) {
  if (v->type == JSON_OBJECT) {
    const json_member **ms = sorted_members(v);
    rj_obj(w);
    for (uint32_t i = 0; i < v->n; i++) {
      rj_key(w, ms[i]->key, ms[i]->key_len);
      write_sorted(w, &ms[i]->value);
    }
    rj_end_obj(w);
    free(ms);
  } else if (v->type == JSON_ARRAY) {
    rj_arr(w);
    for (uint32_t i = 0; i < v->n; i++) {
      rj_item(w);
      write_sorted(w, &v->items[i]);
    }
    rj_end_arr(w);
  } else {
    rj_value(w, v);
  }
}

/* The report: every key sorted; each case's "answer" (first in key order) from the side array. */
static void write_report(strbuf *sb, const json_value *doc, const wcase_answer *answers) {
  rj w;
  rj_init(&w, sb, &RJ_INDENT2);
  const json_member **ms = sorted_members(doc);
  rj_obj(&w);
  for (uint32_t i = 0; i < doc->n; i++) {
    rj_key(&w, ms[i]->key, ms[i]->key_len);
    const json_value *v = &ms[i]->value;
    if (strcmp(ms[i]->key, "cases") || v->type != JSON_ARRAY) {
      write_sorted(&w, v);
      continue;
    }
    rj_arr(&w);
    for (uint32_t c = 0; c < v->n; c++) {
      rj_item(&w);
      const json_value *cv = &v->items[c];
      const json_member **cm = sorted_members(cv);
      rj_obj(&w);
      rj_key(&w, "answer", 6);
      rj_answer(&w, answers[c].typed);
      for (uint32_t k = 0; k < cv->n; k++) {
        rj_key(&w, cm[k]->key, cm[k]->key_len);
        write_sorted(&w, &cm[k]->value);
      }
      rj_end_obj(&w);
      free(cm);
    }
    rj_end_arr(&w);
  }
  rj_end_obj(&w);
  free(ms);
  sb_putc(sb, '\n');
}

/* ---------------------------------------------------------------- identity */

/* Laya's questions_sha256: the sorted set of canonical question schemas, each hashed with "\n". */
static void questions_fingerprint(const example *ex, size_t n, char hex[65]) {
  char **schemas = NULL;
  size_t ns = 0, cap = 0;
  json_dump_opts canon = {",", ":", false, -1};
  json_dump_opts plain = {NULL, NULL, false, -1};
  for (size_t i = 0; i < n; i++)
    for (uint32_t q = 0; q < ex[i].questions->n; q++) {
      const json_member *m = &ex[i].questions->members[q];
      const json_value *body = m->value.type == JSON_OBJECT ? &m->value : NULL;
      strbuf sb;
      sb_init(&sb);
      sb_puts(&sb, "{\"qid\":");
      json_dump_string(&sb, m->key, m->key_len, false);
      sb_puts(&sb, ",\"type\":");
      const json_value *t = get(body, "type");
      if (t) json_dump(&sb, t, &canon);
      else sb_puts(&sb, "null");
      sb_puts(&sb, ",\"instructions\":");
      const json_value *ins = get(body, "instructions");
      if (ins && ins->type == JSON_STRING) {
        json_dump(&sb, ins, &canon);
      } else {
        strbuf t2;
        sb_init(&t2);
        if (ins) json_dump(&t2, ins, &plain);
        else sb_puts(&t2, "null");
        json_dump_string(&sb, t2.data ? t2.data : "", t2.len, false);
        sb_free(&t2);
      }
      const char *keys[3] = {"labels", "criteria", "option_order"};
      for (int k = 0; k < 3; k++) {
        const json_value *v = get(body, keys[k]);
        if (k == 2 && !v) break;
        sb_printf(&sb, ",\"%s\":", keys[k]);
        if (v) json_dump(&sb, v, &canon);
        else sb_puts(&sb, "null");
      }
      sb_putc(&sb, '}');
      char *s = sb_steal(&sb);
      bool dup = false;
      for (size_t j = 0; j < ns && !dup; j++) dup = !strcmp(schemas[j], s);
      if (dup) {
        free(s);
        continue;
      }
      if (ns == cap) schemas = xrealloc(schemas, (cap = cap ? cap * 2 : 16) * sizeof *schemas);
      schemas[ns++] = s;
    }
  for (size_t i = 1; i < ns; i++)
    for (size_t k = i; k > 0 && strcmp(schemas[k - 1], schemas[k]) > 0; k--) {
      char *t = schemas[k];
      schemas[k] = schemas[k - 1];
      schemas[k - 1] = t;
    }
  sha256_ctx c;
  sha256_init(&c);
  for (size_t i = 0; i < ns; i++) {
    sha256_update(&c, schemas[i], strlen(schemas[i]));
    sha256_update(&c, "\n", 1);
    free(schemas[i]);
  }
  free(schemas);
  uint8_t d[32];
  sha256_final(&c, d);
  for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

static const char *const kIdentityKeys[3] = {"schema", "dataset_sha256", "questions_sha256"};
static const char *const kIdentityLabels[3] = {"report schema", "dataset bytes", "question schema"};

/* _identity_of: a report's config, with each identity key it lacks read from the top level. */
static json_value identity_of(arena *a, const json_value *doc) {
  const json_value *cfg = get(doc, "config");
  uint32_t n = cfg && cfg->type == JSON_OBJECT ? cfg->n : 0;
  json_value out = jobj(a, n + 3);
  for (uint32_t i = 0; i < n; i++) jset(a, &out, cfg->members[i].key, cfg->members[i].value);
  for (int k = 0; k < 3; k++) {
    const json_value *mine = get(&out, kIdentityKeys[k]), *top = get(doc, kIdentityKeys[k]);
    if (is_null(mine) && !is_null(top)) jset(a, &out, kIdentityKeys[k], *top);
  }
  return out;
}

/* comparable_to: reasons joined with "; " into sb; false when there are any. */
static bool comparable_to(const json_value *config, arena *a, const json_value *baseline, strbuf *reasons) {
  json_value other = identity_of(a, baseline);
  int nr = 0;
  for (int k = 0; k < 3; k++) {
    const json_value *here = get(config, kIdentityKeys[k]), *there = get(&other, kIdentityKeys[k]);
    if (is_null(here) || is_null(there) || json_eq(here, there)) continue;
    char *t = str_of(there, false), *h = str_of(here, false);
    sb_printf(reasons, "%s%s (%s): baseline is %s, this run is %s", nr++ ? "; " : "", kIdentityKeys[k],
              kIdentityLabels[k], t, h);
    free(t);
    free(h);
  }
  const json_value *s1 = get(config, "schema"), *s2 = get(&other, "schema");
  if (s1 && s2 && s1->type == JSON_STRING && s2->type == JSON_STRING &&
      !strcmp(s1->s, "laya-tournament-evals-report/1") && !strcmp(s2->s, s1->s)) {
    const json_value *g1 = get(config, "tournament_group_size"), *g2 = get(&other, "tournament_group_size");
    if (is_null(g1) || is_null(g2) || !json_eq(g1, g2)) {
      char *t = g2 ? str_of(g2, false) : xstrndup("None", 4), *h = g1 ? str_of(g1, false) : xstrndup("None", 4);
      sb_printf(reasons, "%stournament group size: baseline is %s, this run is %s", nr++ ? "; " : "", t, h);
      free(t);
      free(h);
    }
  }
  return nr == 0;
}

static bool is_coverage_metric(const char *name) {
  return !strcmp(name, "aurc") || !strncmp(name, "selective_accuracy@", 19);
}

static bool is_confidence_metric(const char *name) {
  return !strcmp(name, "ece") || !strcmp(name, "brier") || !strcmp(name, "aurc") ||
         !strncmp(name, "selective_accuracy@", 19);
}

static bool is_definition_2(const json_value *config) {
  const json_value *v = get(config, "coverage_metric_definition");
  return v && (json_is_number(v) || v->type == JSON_BOOL) && (v->type == JSON_BOOL ? v->b : v->d) == 2.0;
}

static void shown_definition(strbuf *sb, const json_value *config) {
  const json_value *v = get(config, "coverage_metric_definition");
  if (is_null(v)) {
    sb_puts(sb, "1 (unrecorded)");
    return;
  }
  char *r = str_of(v, true);
  size_t n = strlen(r); /* a code point count for ASCII reprs; good enough to bound a log line */
  if (n <= 40) sb_puts(sb, r);
  else {
    sb_append(sb, r, 40);
    sb_puts(sb, "... (truncated)");
  }
  free(r);
}

/* coverage_definition_conflict; NULL when both documents are definition 2 (malloc'd text). */
static char *coverage_conflict(const json_value *config, const json_value *baseline) {
  const json_value *bcfg = get(baseline, "config");
  if (bcfg && bcfg->type != JSON_OBJECT) bcfg = NULL;
  bool here = is_definition_2(config), there = is_definition_2(bcfg);
  if (here && there) return NULL;
  strbuf sb;
  sb_init(&sb);
  if (!here) {
    sb_puts(&sb, "this report says ");
    shown_definition(&sb, config);
  }
  if (!there) {
    sb_puts(&sb, here ? "the baseline says " : " and the baseline says ");
    shown_definition(&sb, bcfg);
  }
  sb_puts(&sb, ", but a coverage cut here is definition 2 -- regenerate it before comparing a coverage metric");
  return sb_steal(&sb);
}

/* ---------------------------------------------------------------- NAME=VALUE pairs */

typedef struct pairs {
  char name[16][96];
  double value[16];
  int n;
} pairs;

static void pairs_set(pairs *p, const char *name, double v) {
  for (int i = 0; i < p->n; i++)
    if (!strcmp(p->name[i], name)) {
      p->value[i] = v;
      return;
    }
  if (p->n < 16) {
    snprintf(p->name[p->n], sizeof p->name[0], "%s", name);
    p->value[p->n++] = v;
  }
}

static const double *pairs_get(const pairs *p, const char *name) {
  for (int i = 0; i < p->n; i++)
    if (!strcmp(p->name[i], name)) return &p->value[i];
  return NULL;
}

/* _parse_pairs; on error prints the EvalError and returns 2. */
static int parse_pairs(const arg_list *l, pairs *out) {
  for (int k = 0; k < l->n; k++) {
    const char *s = l->items[k], *eq = strchr(s, '=');
    double v;
    if (!eq || eq == s || !eq[1]) {
      char *r = cli_args_repr(s);
      fprintf(stderr, "laya-evals: expected NAME=VALUE, got %s\n", r);
      free(r);
      return 2;
    }
    if (!cli_py_float(eq + 1, &v) || !isfinite(v)) {
      char *r1 = cli_args_repr(eq + 1), *r2 = cli_args_repr(s);
      fprintf(stderr, "laya-evals: %s is not a number in %s\n", r1, r2);
      free(r1);
      free(r2);
      return 2;
    }
    size_t a = 0, m = 0;
    py_strip(s, (size_t)(eq - s), &a, &m);
    char name[96];
    snprintf(name, sizeof name, "%.*s", (int)m, s + a);
    pairs_set(out, name, v);
  }
  return 0;
}

static json_value pairs_json(arena *a, const pairs *p) {
  json_value o = jobj(a, (uint32_t)p->n);
  for (int i = 0; i < p->n; i++) jput(a, &o, p->name[i], json_float(p->value[i]));
  return o;
}

/* ---------------------------------------------------------------- reading JSON artifacts */

/* _load_report: NULL after printing "laya-evals: cannot read report ..." */
static json_value *load_json_doc(const char *path, arena *a, const char *what, bool *not_object) {
  size_t len;
  char *r = cli_args_repr(path);
  *not_object = false;
  struct stat st;
  char *text = NULL;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) errno = EISDIR;
  else text = cli_read_file(path, &len);
  if (!text) {
    fprintf(stderr, "laya-evals: %s %s: [Errno %d] %s: %s\n", what, r, errno, strerror(errno), r);
    free(r);
    return NULL;
  }
  laya_error err = {0};
  json_value *doc = json_parse(text, len, a, NULL, &err);
  free(text);
  if (!doc) {
    fprintf(stderr, "laya-evals: %s %s: %s\n", what, r, err.message);
    free(r);
    return NULL;
  }
  free(r);
  if (doc->type != JSON_OBJECT) *not_object = true;
  return doc;
}

static json_value *load_report(const char *path, arena *a) {
  bool notobj;
  json_value *doc = load_json_doc(path, a, "cannot read report", &notobj);
  if (doc && notobj) {
    char *r = cli_args_repr(path);
    fprintf(stderr, "laya-evals: cannot read report %s: expected a JSON object, found %s\n", r, json_py_type(doc));
    free(r);
    return NULL;
  }
  return doc;
}

/* ---------------------------------------------------------------- gate policy */

static const char *const kDims[4] = {"language", "model", "qid", "tag"};
static const char *const kLimits[4] = {"min", "max", "max_drop", "max_increase"};

static bool finite_number(const json_value *v) { return v && json_is_number(v) && isfinite(v->d); }

static bool is_strict_int(const json_value *v) { return v && v->type == JSON_INT; }

static bool blank_str(const json_value *v) {
  if (!v || v->type != JSON_STRING) return true;
  size_t a = 0, m = 0;
  py_strip(v->s, v->n, &a, &m);
  return m == 0;
}

/* load_policy: NULL after printing the EvalError. */
static json_value *load_policy(const char *path, arena *a) {
  bool notobj;
  json_value *p = load_json_doc(path, a, "invalid gate policy", &notobj);
  if (!p) return NULL;
  const char *msg = NULL;
  char buf[256];
  if (p->type != JSON_OBJECT || p->n != 2 || !json_get(p, "version") || !json_get(p, "rules")) {
    msg = "gate policy needs exactly 'version' and 'rules'";
  } else {
    const json_value *v = json_get(p, "version"), *rules = json_get(p, "rules");
    if (!is_strict_int(v) || v->i != 1 || v->big) msg = "gate policy version must be 1";
    else if (rules->type != JSON_ARRAY || !rules->n) msg = "gate policy 'rules' must be a non-empty list";
    for (uint32_t i = 0; !msg && i < rules->n; i++) {
      const json_value *r = &rules->items[i];
      char where[64];
      snprintf(where, sizeof where, "gate policy rule %u", i + 1);
      if (r->type != JSON_OBJECT) {
        snprintf(buf, sizeof buf, "%s must be an object", where);
        msg = buf;
        break;
      }
      int nlim = 0, lim = -1;
      bool extra = false;
      for (uint32_t k = 0; k < r->n; k++) {
        const char *key = r->members[k].key;
        int l = -1;
        for (int j = 0; j < 4; j++)
          if (!strcmp(key, kLimits[j])) l = j;
        if (l >= 0) nlim++, lim = l;
        else if (strcmp(key, "slice") && strcmp(key, "metric") && strcmp(key, "min_count")) extra = true;
      }
      if (extra || nlim != 1 || !json_get(r, "slice") || !json_get(r, "metric") || !json_get(r, "min_count")) {
        snprintf(buf, sizeof buf, "%s needs slice, metric, min_count and exactly one limit", where);
        msg = buf;
        break;
      }
      const json_value *sel = json_get(r, "slice");
      bool dim_ok = false;
      if (sel->type == JSON_OBJECT && sel->n == 1)
        for (int j = 0; j < 4; j++)
          if (!strcmp(sel->members[0].key, kDims[j])) dim_ok = true;
      if (!dim_ok || blank_str(&sel->members[0].value)) {
        snprintf(buf, sizeof buf, "%s slice must name one non-empty language/model/qid/tag value", where);
        msg = buf;
        break;
      }
      if (blank_str(json_get(r, "metric"))) {
        snprintf(buf, sizeof buf, "%s metric must be a non-empty string", where);
        msg = buf;
        break;
      }
      const json_value *mc = json_get(r, "min_count");
      if (!is_strict_int(mc) || mc->d < 1) {
        snprintf(buf, sizeof buf, "%s min_count must be a positive integer", where);
        msg = buf;
        break;
      }
      const json_value *lv = json_get(r, kLimits[lim]);
      if (!finite_number(lv) || (lim >= 2 && lv->d < 0)) {
        snprintf(buf, sizeof buf, "%s %s must be finite%s", where, kLimits[lim], lim >= 2 ? " and non-negative" : "");
        msg = buf;
        break;
      }
    }
  }
  if (msg) {
    fprintf(stderr, "laya-evals: %s\n", msg);
    return NULL;
  }
  return p;
}

static int rule_limit(const json_value *rule) {
  for (int j = 0; j < 4; j++)
    if (json_get(rule, kLimits[j])) return j;
  return 0;
}

static bool needs_baseline(const json_value *policy) {
  const json_value *rules = json_get(policy, "rules");
  for (uint32_t i = 0; i < rules->n; i++)
    if (rule_limit(&rules->items[i]) >= 2) return true;
  return false;
}

/* A report's slice metric (finite number), or false. */
static bool slice_value(const json_value *slices, const char *dim, const char *value, const char *metric, double *out) {
  const json_value *g = get(get(slices && slices->type == JSON_OBJECT ? slices : NULL, dim), value);
  const json_value *v = g && g->type == JSON_OBJECT ? json_get(g, metric) : NULL;
  if (!finite_number(v)) return false;
  *out = v->d;
  return true;
}

static long slice_count(const json_value *cases, const char *dim, const char *value, const char *metric) {
  long count = 0;
  if (!cases || cases->type != JSON_ARRAY) return 0;
  for (uint32_t i = 0; i < cases->n; i++) {
    const json_value *c = &cases->items[i];
    if (c->type != JSON_OBJECT) continue;
    bool match = false;
    const json_value *vals = json_get(c, strcmp(dim, "tag") ? dim : "tags");
    if (!strcmp(dim, "tag")) {
      for (uint32_t t = 0; vals && vals->type == JSON_ARRAY && t < vals->n && !match; t++) {
        if (is_null(&vals->items[t])) continue;
        char *s = str_of(&vals->items[t], false);
        match = !strcmp(s, value);
        free(s);
      }
    } else if (!is_null(vals)) {
      char *s = str_of(vals, false);
      match = !strcmp(s, value);
      free(s);
    }
    if (!match) continue;
    bool valid;
    if (is_confidence_metric(metric)) {
      const json_value *cf = json_get(c, "confidence"), *ok = json_get(c, "correct");
      valid = finite_number(cf) && ok && ok->type == JSON_BOOL;
    } else {
      valid = finite_number(get(get(c, "scores"), metric));
    }
    count += valid;
  }
  return count;
}

static bool has_errored(const json_value *config) { return json_truthy(get(config, "errored")); }

/* check_policy: failures appended, one per line, into fails; returns how many. */
static int check_policy(const json_value *config, const json_value *slices, const json_value *cases,
                        const json_value *policy, const json_value *baseline, arena *a, strbuf *fails) {
  int nf = 0;
  json_value bcfg = json_null();
  const json_value *bslices = NULL, *bcases = NULL;
  if (baseline) {
    bcfg = identity_of(a, baseline);
    bslices = get(baseline, "slices");
    bcases = get(baseline, "cases");
  }
  if (has_errored(config)) sb_puts(fails, "slice gate: candidate has skipped/errored cases\n"), nf++;
  if (baseline && has_errored(&bcfg)) sb_puts(fails, "slice gate: baseline has skipped/errored cases\n"), nf++;
  if (needs_baseline(policy)) {
    if (!baseline) {
      sb_puts(fails, "slice gate: relative rule needs a baseline\n");
      return nf + 1;
    }
    strbuf miss;
    sb_init(&miss);
    int nm = 0;
    for (int k = 0; k < 3; k++)
      if (is_null(get(config, kIdentityKeys[k])) || is_null(get(&bcfg, kIdentityKeys[k])))
        sb_printf(&miss, "%s%s", nm++ ? ", " : "", kIdentityKeys[k]);
    if (nm) sb_printf(fails, "slice gate: baseline and candidate need %s identity\n", miss.data), nf++;
    sb_free(&miss);
    strbuf reasons;
    sb_init(&reasons);
    if (!comparable_to(config, a, baseline, &reasons))
      sb_printf(fails, "slice gate: baseline is not comparable: %s\n", reasons.data), nf++;
    sb_free(&reasons);
  }
  const json_value *rules = json_get(policy, "rules");
  for (uint32_t i = 0; i < rules->n; i++) {
    const json_value *r = &rules->items[i];
    const json_value *sel = json_get(r, "slice");
    const char *dim = sel->members[0].key, *value = sel->members[0].value.s;
    const char *metric = json_get(r, "metric")->s;
    char label[512];
    snprintf(label, sizeof label, "slice gate rule %u (%s=%s, %s)", i + 1, dim, value, metric);
    double cur;
    bool have = slice_value(slices, dim, value, metric, &cur);
    long cn = slice_count(cases, dim, value, metric);
    long minimum = (long)json_get(r, "min_count")->i;
    if (!have) {
      sb_printf(fails, "%s: metric or slice is missing\n", label), nf++;
      continue;
    }
    if (cn < minimum) {
      sb_printf(fails, "%s: candidate count %ld is below min_count %ld\n", label, cn, minimum), nf++;
      continue;
    }
    int lim = rule_limit(r);
    double limit = json_get(r, kLimits[lim])->d;
    char b1[48], b2[48], b3[48], b4[48];
    if (lim >= 2) {
      if (is_coverage_metric(metric)) {
        char *c = coverage_conflict(config, baseline);
        if (c) {
          sb_printf(fails, "%s: %s on a relative limit\n", label, c), nf++;
          free(c);
          continue;
        }
      }
      double prev;
      if (!slice_value(bslices, dim, value, metric, &prev)) {
        sb_printf(fails, "%s: baseline metric or slice is missing\n", label), nf++;
        continue;
      }
      long pn = slice_count(bcases, dim, value, metric);
      if (pn < minimum) {
        sb_printf(fails, "%s: baseline count %ld is below min_count %ld\n", label, pn, minimum), nf++;
        continue;
      }
      double drift = lim == 2 ? prev - cur : cur - prev;
      double tol = fmax(1e-12 * fmax(fabs(drift), fabs(limit)), 1e-12);
      if (drift > limit && !(fabs(drift - limit) <= tol)) {
        sb_printf(fails, "%s: candidate=%s (n=%ld), baseline=%s (n=%ld), %s=%s exceeded by %s\n", label,
                  f4(cur, false, b1), cn, f4(prev, false, b2), pn, kLimits[lim], f4(limit, false, b3),
                  f4(drift - limit, false, b4)),
            nf++;
      }
    } else if ((lim == 0 && cur < limit) || (lim == 1 && cur > limit)) {
      sb_printf(fails, "%s: candidate=%s (n=%ld), %s=%s failed\n", label, f4(cur, false, b1), cn, kLimits[lim],
                f4(limit, false, b2)),
          nf++;
    }
  }
  return nf;
}

/* ---------------------------------------------------------------- compare */

/* _metric_map: false after printing the EvalError. */
static bool metric_map_ok(const json_value *m, const char *label, bool allow_empty) {
  if (!m || m->type != JSON_OBJECT) {
    fprintf(stderr, "laya-evals: %s metrics must be an object of metric name to number, got %s\n", label,
            json_py_type(m));
    return false;
  }
  if (!m->n && !allow_empty) {
    fprintf(stderr, "laya-evals: %s has no metrics to compare, so nothing in it could fail\n", label);
    return false;
  }
  for (uint32_t i = 0; i < m->n; i++)
    if (!json_is_number(&m->members[i].value)) {
      char *r = cli_args_repr(m->members[i].key);
      fprintf(stderr, "laya-evals: %s metric %s is not a number, got %s\n", label, r,
              json_py_type(&m->members[i].value));
      free(r);
      return false;
    }
  return true;
}

/* EvalReport.compare and _print_deltas. Returns 0 (ok), 1 (failed) or 2 (error printed). */
static int compare_and_print(const json_value *config, const json_value *overall, const json_value *baseline,
                             const pairs *tol) {
  const json_value *base = json_get(baseline, "overall");
  if (!base) base = baseline;
  if (!metric_map_ok(base, "baseline", false) || !metric_map_ok(overall, "report", true)) return 2;
  typedef struct drow {
    const char *name;
    char line[1024];
  } drow;
  drow *rows = xcalloc(base->n, sizeof *rows);
  uint32_t nr = 0;
  bool ok = true;
  for (uint32_t i = 0; i < base->n; i++) {
    const char *name = base->members[i].key;
    size_t nl = strlen(name);
    const double *t = pairs_get(tol, name);
    if (nl >= 3 && !strcmp(name + nl - 3, "_ms") && !t) continue;
    double allowed = t ? *t : 0.0, bv = base->members[i].value.d;
    const json_value *cv = json_get(overall, name);
    char b1[48], b2[48], b3[48], b4[48];
    /* a later duplicate key replaces the earlier row, as a dict assignment would */
    uint32_t slot = nr;
    for (uint32_t k = 0; k < nr; k++)
      if (!strcmp(rows[k].name, name)) slot = k;
    drow *d = &rows[slot];
    if (slot == nr) nr++;
    d->name = name;
    if (is_coverage_metric(name)) {
      char *c = coverage_conflict(config, baseline);
      if (c) {
        snprintf(d->line, sizeof d->line, "%-18s baseline=%s value=%s not compared: %s", name, f4(bv, false, b1),
                 f4(cv ? cv->d : NAN, false, b2), c);
        free(c);
        ok = false;
        continue;
      }
    }
    if (!cv) {
      snprintf(d->line, sizeof d->line, "%-18s baseline=%s missing from the report", name, f4(bv, false, b1));
      ok = false;
      continue;
    }
    double diff = cv->d - bv;
    snprintf(d->line, sizeof d->line, "%-18s baseline=%s value=%s diff=%s (tol %s)", name, f4(bv, false, b1),
             f4(cv->d, false, b2), f4(diff, true, b3), f4(allowed, false, b4));
    if (!(fabs(diff) <= allowed)) ok = false;
  }
  for (uint32_t i = 1; i < nr; i++)
    for (uint32_t k = i; k > 0 && strcmp(rows[k - 1].name, rows[k].name) > 0; k--) {
      drow t = rows[k];
      rows[k] = rows[k - 1];
      rows[k - 1] = t;
    }
  for (uint32_t i = 0; i < nr; i++) printf("%s\n", rows[i].line);
  free(rows);
  return ok ? 0 : 1;
}

/* ---------------------------------------------------------------- markdown */

static void md_cell(strbuf *sb, const char *s) {
  for (; *s; s++) {
    if (*s == '\\') sb_puts(sb, "\\\\");
    else if (*s == '|') sb_puts(sb, "\\|");
    else if (*s == '\r' || *s == '\n') sb_putc(sb, ' ');
    else sb_putc(sb, *s);
  }
}

static int cmp_cstr(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static void to_markdown(strbuf *sb, const json_value *overall, const json_value *slices) {
  char b[48];
  sb_puts(sb, "| metric | value |\n|---|---|");
  const json_member **ms = sorted_members(overall);
  for (uint32_t i = 0; i < overall->n; i++) sb_printf(sb, "\n| %s | %s |", ms[i]->key, f4(ms[i]->value.d, false, b));
  free(ms);
  const json_member **ds = sorted_members(slices);
  for (uint32_t d = 0; d < slices->n; d++) {
    const json_value *dim = &ds[d]->value;
    sb_printf(sb, "\n\n### by %s\n", ds[d]->key);
    const char *names[MAX_METRIC * 2];
    int nn = 0;
    for (uint32_t g = 0; g < dim->n; g++)
      for (uint32_t k = 0; k < dim->members[g].value.n; k++) {
        const char *m = dim->members[g].value.members[k].key;
        bool seen = false;
        for (int j = 0; j < nn && !seen; j++) seen = !strcmp(names[j], m);
        if (!seen && nn < MAX_METRIC * 2) names[nn++] = m;
      }
    qsort(names, (size_t)nn, sizeof *names, cmp_cstr);
    sb_printf(sb, "\n| %s | ", ds[d]->key);
    for (int j = 0; j < nn; j++) sb_printf(sb, "%s%s", j ? " | " : "", names[j]);
    sb_puts(sb, " |\n|---|");
    for (int j = 0; j < nn; j++) sb_puts(sb, "---|");
    const json_member **gs = sorted_members(dim);
    for (uint32_t g = 0; g < dim->n; g++) {
      sb_puts(sb, "\n| ");
      md_cell(sb, gs[g]->key);
      sb_puts(sb, " | ");
      for (int j = 0; j < nn; j++) {
        const json_value *v = json_get(&gs[g]->value, names[j]);
        sb_printf(sb, "%s%s", j ? " | " : "", v ? f4(v->d, false, b) : "");
      }
      sb_puts(sb, " |");
    }
    free(gs);
  }
  free(ds);
  sb_putc(sb, '\n');
}

static int write_text(const char *path, const strbuf *sb, const char *what) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(sb->data, 1, sb->len, f) != sb->len) {
    int e = errno;
    if (f) fclose(f);
    char *r = cli_args_repr(path);
    fprintf(stderr, "laya-evals: cannot write %s %s: [Errno %d] %s: %s\n", what, r, e, strerror(e), r);
    free(r);
    return 2;
  }
  fclose(f);
  return 0;
}

/* ---------------------------------------------------------------- cases and metrics */

typedef struct ecase {
  const char *qid;
  const json_value *expected;
  wcase_answer ans;
  json_value language, model; /* the example's (null when absent) */
  const json_value *tags;     /* the example's list, or NULL */
  bool has_conf;
  double conf;
  int correct;                /* -1 = not applicable */
  double score[MAX_EVAL];     /* NAN = None */
} ecase;

typedef struct evaluators {
  int n;
  char name[MAX_EVAL][48];
  double tol[MAX_EVAL]; /* score_within tolerance (index >= 4) */
} evaluators;

/* The fields of an answer the metrics read, from the Router's JSON or the engine's value. */
typedef struct aview {
  const char *type;
  const json_value *choice;
  double noul, score;
  bool has_conf;
  double conf;
} aview;

static aview view_typed(const answer *a) {
  aview v = {0};
  v.type = a->q->type_name;
  if (a->q->type == QT_CHOICE) v.choice = a->q->label[a->top];
  v.noul = a->noul;
  v.score = a->score;
  v.has_conf = true; /* every answer carries answer_confidence */
  v.conf = a->answer_confidence;
  return v;
}

static bool is_label_number(const json_value *x) { return x && json_is_number(x); }

static void score_case(ecase *c, const aview *v, const evaluators *ev) {
  const json_value *x = c->expected;
  c->correct = -1;
  for (int i = 0; i < ev->n; i++) c->score[i] = NAN;
  if (!strcmp(v->type, "choice") && x->type == JSON_STRING) {
    bool ok = v->choice && v->choice->type == JSON_STRING && v->choice->n == x->n && !memcmp(v->choice->s, x->s, x->n);
    c->score[0] = ok;
    c->correct = ok;
  }
  if (!strcmp(v->type, "noul") && x->type == JSON_BOOL) {
    bool ok = (v->noul >= 0.5) == x->b;
    c->score[1] = ok;
    c->correct = ok;
  }
  if (!strcmp(v->type, "score") && is_label_number(x)) {
    double e = fabs(v->score - x->d);
    c->score[2] = e;
    for (int i = 4; i < ev->n; i++) c->score[i] = e <= ev->tol[i];
  }
  c->has_conf = v->has_conf;
  c->conf = v->conf;
  if (v->has_conf) c->score[3] = v->conf;
}

static void aggregate(ecase **cs, size_t n, const evaluators *ev, metrics *ms) {
  ms->n = 0;
  for (int e = 0; e < ev->n; e++) {
    double s = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
      if (!isnan(cs[i]->score[e])) s += cs[i]->score[e], k++;
    if (k) put(ms, ev->name[e], s / (double)k);
  }
  pair *p = xcalloc(n, sizeof *p);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (cs[i]->has_conf && cs[i]->correct >= 0) p[k++] = (pair){cs[i]->conf, cs[i]->correct};
  if (k) calibration(p, k, ms);
  free(p);
}

static json_value metrics_json(arena *a, const metrics *ms) {
  json_value o = jobj(a, (uint32_t)ms->n + 4);
  for (int i = 0; i < ms->n; i++) jput(a, &o, ms->m[i].name, json_float(ms->m[i].value));
  return o;
}

typedef struct slice_group {
  char *key;
  ecase **cs;
  size_t n, cap;
} slice_group;

static void group_add(slice_group **gs, size_t *ng, const char *key, ecase *c) {
  size_t i = 0;
  while (i < *ng && strcmp((*gs)[i].key, key)) i++;
  if (i == *ng) {
    *gs = xrealloc(*gs, (*ng + 1) * sizeof **gs);
    memset(&(*gs)[i], 0, sizeof **gs);
    (*gs)[i].key = xstrndup(key, strlen(key));
    (*ng)++;
  }
  slice_group *g = &(*gs)[i];
  if (g->n == g->cap) g->cs = xrealloc(g->cs, (g->cap = g->cap ? g->cap * 2 : 16) * sizeof(ecase *));
  g->cs[g->n++] = c;
}

static int cmp_group(const void *a, const void *b) {
  return strcmp(((const slice_group *)a)->key, ((const slice_group *)b)->key);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/* ---------------------------------------------------------------- help */

static const char kUsage[] =
    "usage: laya eval {validate,run,agreement,compare,evidence} ...\n";

static const char kHelpTop[] =
    "usage: laya eval {validate,run,agreement,compare,evidence} ...\n"
    "\n"
    "Score a checkpoint on a labelled JSONL dataset and gate a build on the numbers (Laya's\n"
    "laya-evals). Exit status: 0 ok, 1 a threshold, baseline or slice rule failed, 2 an error.\n"
    "\n"
    "commands:\n"
    "  validate DATASET     check a dataset without loading a model\n"
    "  run DATASET          answer every example and report the metrics\n"
    "  agreement REF REPEAT STUDENT\n"
    "                       a student's agreement with a teacher, from three saved runs\n"
    "  compare REPORT       check a saved report against a baseline report\n"
    "  evidence             what calibration and eval evidence a checkpoint carries\n"
    "\n"
    "`laya eval COMMAND --help` describes each one.\n";

static const char kHelpValidate[] =
    "usage: laya eval validate [-h] DATASET\n"
    "\n"
    "Parse a dataset and print how many examples and which question ids it has; no model loads.\n"
    "\n"
    "positional arguments:\n"
    "  DATASET     JSONL, one {\"state\", \"questions\", \"expected\"} object a line (optional\n"
    "              \"tags\", \"language\", \"model\"); blank and '#' lines are skipped\n"
    "\n"
    "options:\n"
    "  -h, --help  show this help and exit\n";

static const char kHelpRun[] =
    "usage: laya eval run [-h] [--model NAME|DIR] [--device DEV] [--precision P]\n"
    "                     [--calibration FILE] [--revision SHA|NAME=SHA] [--batch-size N]\n"
    "                     [--sort-by-length] [--min-confidence P] [--on-error {fail,skip}]\n"
    "                     [--baseline REPORT] [--tolerance METRIC=VALUE] [--min-accuracy F]\n"
    "                     [--max-ece F] [--score-within TOL] [--min METRIC=VALUE]\n"
    "                     [--max METRIC=VALUE] [--slice {language,model,qid,tag}]\n"
    "                     [--gate-policy FILE] [--json OUT] [--markdown OUT] [--quiet]\n"
    "                     DATASET\n"
    "\n"
    "Answer every example of DATASET and print the overall metrics (sorted by name).\n"
    "\n"
    "positional arguments:\n"
    "  DATASET               labelled JSONL (see `laya eval validate --help`)\n"
    "\n"
    "options:\n"
    "  -h, --help            show this help and exit\n"
    "  --model NAME|DIR      a checkpoint name (english, multilingual, typed-decisions or an\n"
    "                        alias) for every row, or a checkpoint directory; default: each row's\n"
    "                        \"model\", else routed\n"
    "  --device DEV          cpu, cuda, cuda:N or auto\n"
    "  --precision P         fp32, bf16, fp16, int8 or fp8 (else LAYA_PRECISION, else fp32 on the CPU)\n"
    "  --calibration FILE    a calibration JSON (laya calibrate --out) applied to --model DIR\n"
    "  --revision SHA|NAME=SHA\n"
    "                        pin the Hub commit of every checkpoint, or of one (repeatable);\n"
    "                        the report records it under config.revisions\n"
    "  --batch-size N        examples per forward pass when consecutive rows share questions\n"
    "  --sort-by-length      with --batch-size, pass similar lengths together (same answers)\n"
    "  --min-confidence P    abstention threshold in [0, 1]: flags answers, scores the same\n"
    "  --on-error {fail,skip}\n"
    "                        stop at the first failing example (fail, default) or record it under\n"
    "                        config.errored and score the rest (skip)\n"
    "  --baseline REPORT     compare the overall metrics with this report (exit 1 when a metric\n"
    "                        drifts past its tolerance or the reports measure different data)\n"
    "  --tolerance METRIC=VALUE\n"
    "                        allowed absolute drift from the baseline (default 0); repeatable\n"
    "  --min-accuracy F      minimum choice_accuracy (noul_accuracy when there is none)\n"
    "  --max-ece F           maximum ece\n"
    "  --score-within TOL    also report score_within_TOL, the share of score answers within\n"
    "                        TOL of the label; repeatable\n"
    "  --min METRIC=VALUE    minimum of any overall metric; repeatable\n"
    "  --max METRIC=VALUE    maximum of any overall metric; repeatable\n"
    "  --slice {language,model,qid,tag}\n"
    "                        also print the metrics of each group of this dimension; repeatable\n"
    "  --gate-policy FILE    per-slice rules: {\"version\": 1, \"rules\": [{\"slice\": {\"qid\": \"x\"},\n"
    "                        \"metric\": \"...\", \"min_count\": N, \"min\"|\"max\"|\"max_drop\"|\n"
    "                        \"max_increase\": V}]} (max_drop / max_increase need --baseline)\n"
    "  --json OUT            write the full report (laya-evals-report/1) here\n"
    "  --markdown OUT        write a Markdown summary here\n"
    "  --quiet               no progress line on stderr (drawn only when stderr is a terminal)\n";

static const char kHelpCompare[] =
    "usage: laya eval compare [-h] --baseline REPORT [--tolerance METRIC=VALUE]\n"
    "                         [--gate-policy FILE] REPORT\n"
    "\n"
    "Check a saved report against a baseline report without running a model: the overall\n"
    "metrics must agree within the tolerances and both reports must measure the same dataset\n"
    "bytes and questions. Exit 1 when they do not.\n"
    "\n"
    "positional arguments:\n"
    "  REPORT                a report written by `laya eval run --json` (or by Laya)\n"
    "\n"
    "options:\n"
    "  -h, --help            show this help and exit\n"
    "  --baseline REPORT     the reviewed report to check against (required)\n"
    "  --tolerance METRIC=VALUE\n"
    "                        allowed absolute drift (default 0); repeatable\n"
    "  --gate-policy FILE    also apply per-slice rules (see `laya eval run --help`)\n";

static const char kHelpEvidence[] =
    "usage: laya eval evidence [-h] --checkpoint DIR [--report REPORT]\n"
    "\n"
    "Read-only inspection of the evidence a checkpoint carries: the calibration its training\n"
    "recorded (per question type: PRESENT, INSUFFICIENT, MISSING or UNKNOWN), and with --report\n"
    "the identity of an eval report and whether the two artifacts disagree. Loads no weights.\n"
    "\n"
    "options:\n"
    "  -h, --help            show this help and exit\n"
    "  --checkpoint DIR      checkpoint directory holding rl_agent_config.json (required)\n"
    "  --report REPORT       an eval report JSON\n"
    "\n"
    "example: laya eval evidence --checkpoint ./my-checkpoint --report report.json\n";

static int arg_error(const char *cmd, const char *msg) {
  fprintf(stderr, "laya eval%s%s: error: %s\n", cmd ? " " : "", cmd ? cmd : "", msg);
  return 2;
}

/* argparse's print_usage: the usage block of a help text (to its first blank line) */
static void put_usage(const char *help) {
  const char *end = strstr(help, "\n\n");
  fwrite(help, 1, end ? (size_t)(end - help) + 1 : strlen(help), stderr);
}

int cli_eval_verdict(const char *cmd, const char *help, int perr, const struct arg_result *r, const char *missing,
                     const struct arg_result *top) {
  if (perr || (!r->help && missing && missing[0])) {
    put_usage(help);
    if (perr) return arg_error(cmd, r->error_full ? r->error_full : r->error);
    fprintf(stderr, "laya eval %s: error: the following arguments are required: %s\n", cmd, missing);
    return 2;
  }
  if (r->help) {
    fputs(help, stdout);
    return 0;
  }
  if (r->n_extras || top->n_extras) {
    put_usage(kUsage);
    fputs("laya eval: error: unrecognized arguments:", stderr);
    for (int i = 0; i < top->n_extras; i++) fprintf(stderr, " %s", top->extras[i]);
    for (int i = 0; i < r->n_extras; i++) fprintf(stderr, " %s", r->extras[i]);
    fputc('\n', stderr);
    return 2;
  }
  return -1;
}

/* argparse type= checks of `run`'s numbers, when each option is consumed */
static bool run_check(const char *option, const char *v, char *msg, size_t n) {
  double d;
  bool ok = cli_py_float(v, &d);
  if (!strcmp(option, "--min-accuracy") || !strcmp(option, "--max-ece")) { /* Laya's _limit */
    if (ok && isfinite(d)) return true;
    char *r = cli_args_repr(v);
    snprintf(msg, n, "%s is not a number", r);
    free(r);
    return false;
  }
  if (!strcmp(option, "--batch-size")) { /* Python int(): any spelling, any size */
    bool neg;
    char *dg = NULL;
    bool fits = cli_py_int_digits(v, &neg, &dg);
    free(dg);
    if (fits) return true;
    char *r = cli_args_repr(v);
    snprintf(msg, n, "invalid int value: %s", r);
    free(r);
    return false;
  }
  if (!strcmp(option, "--min-confidence") || !strcmp(option, "--score-within")) {
    if (ok) return true;
    char *r = cli_args_repr(v);
    snprintf(msg, n, "invalid float value: %s", r);
    free(r);
    return false;
  }
  return true;
}

/* ---------------------------------------------------------------- run */

typedef struct rev_pin {
  char canon[64];
  const char *given, *sha;
} rev_pin;

/* _parse_revisions: 2 after printing the EvalError. */
static int parse_revisions(const arg_list *l, arena *ar, const char **shared, rev_pin *pins, int *npins) {
  *shared = NULL;
  *npins = 0;
  for (int k = 0; k < l->n; k++) {
    const char *s = l->items[k], *eq = strchr(s, '=');
    char *r = cli_args_repr(s);
    if (eq) {
      size_t a, m, va, vm;
      py_strip(s, (size_t)(eq - s), &a, &m);
      py_strip(eq + 1, strlen(eq + 1), &va, &vm);
      if (!m || !vm) {
        fprintf(stderr, "laya-evals: expected NAME=REVISION, got %s\n", r);
        free(r);
        return 2;
      }
      char name[64], low[64], canon[64];
      snprintf(name, sizeof name, "%.*s", (int)m, s + a);
      size_t i = 0;
      for (; name[i] && i < 63; i++) low[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
      low[i] = 0;
      laya_error e = {0};
      if (router_normalise_name(low, canon, &e)) snprintf(canon, sizeof canon, "%s", low);
      const char *given = arena_strndup(ar, s + a, m), *sha = arena_strndup(ar, eq + 1 + va, vm);
      int j = 0;
      while (j < *npins && strcmp(pins[j].canon, canon)) j++;
      if (j < *npins && strcmp(pins[j].sha, sha)) {
        char *rc = cli_args_repr(canon), *r1 = cli_args_repr(pins[j].sha), *r2 = cli_args_repr(sha);
        char spelled[256] = "";
        if (strcmp(pins[j].given, given)) {
          char *g1 = cli_args_repr(pins[j].given), *g2 = cli_args_repr(given);
          snprintf(spelled, sizeof spelled, " (given as %s and %s)", g1, g2);
          free(g1);
          free(g2);
        }
        fprintf(stderr, "laya-evals: --revision names two commits for %s%s: %s, %s\n", rc, spelled, r1, r2);
        free(rc), free(r1), free(r2), free(r);
        return 2;
      }
      if (j == *npins && *npins < 8) (*npins)++;
      if (j < 8) {
        snprintf(pins[j].canon, sizeof pins[j].canon, "%s", canon);
        pins[j].given = given;
        pins[j].sha = sha;
      }
    } else {
      size_t a, m;
      py_strip(s, strlen(s), &a, &m);
      if (!m) {
        fprintf(stderr, "laya-evals: --revision wants a commit SHA or NAME=SHA, got %s\n", r);
        free(r);
        return 2;
      }
      const char *v = arena_strndup(ar, s + a, m);
      if (*shared && strcmp(*shared, v)) {
        char *r1 = cli_args_repr(*shared), *r2 = cli_args_repr(v);
        fprintf(stderr, "laya-evals: --revision names two commits for every checkpoint: %s, %s\n", r1, r2);
        free(r1), free(r2), free(r);
        return 2;
      }
      *shared = v;
    }
    free(r);
  }
  return 0;
}

/* The questions with their top-level keys sorted, as text: Laya's chunk signature. */
static char *chunk_signature(const example *e, const char *forced_model) {
  strbuf s;
  sb_init(&s);
  if (forced_model) sb_puts(&s, forced_model);
  else if (e->model) json_dump(&s, e->model, NULL);
  sb_putc(&s, '\n');
  const json_member **ms = sorted_members(e->questions);
  for (uint32_t i = 0; i < e->questions->n; i++) {
    json_dump_string(&s, ms[i]->key, ms[i]->key_len, false);
    sb_putc(&s, ':');
    json_dump(&s, &ms[i]->value, NULL);
    sb_putc(&s, ',');
  }
  free(ms);
  return sb_steal(&s);
}

typedef struct runner {
  laya_model *direct;   /* --model DIR: answers as values */
  laya_router *router;  /* otherwise */
} runner;

/* Answer k examples sharing questions and model, as values: typed[j] (and, routed, chosen[j]: the
 * checkpoint that answered). Nothing is written to JSON and read back. */
static int run_chunk(runner *rn, const example *ex, size_t k, const json_value *model, long long batch_size,
                     bool sort_by_length, double min_conf, arena *ra, state_result **typed, char (*chosen)[64],
                     laya_error *err) {
  json_value mc = json_float(min_conf);
  if (rn->direct) {
    json_value req = jobj(ra, 6);
    if (k == 1) {
      jput(ra, &req, "state", *ex[0].state);
    } else {
      json_value st = jarr(ra, (uint32_t)k);
      for (size_t j = 0; j < k; j++) jpush(&st, *ex[j].state);
      jput(ra, &req, "states", st);
      if (batch_size > 0) jput(ra, &req, "batch_size", json_int(batch_size));
      if (sort_by_length) jput(ra, &req, "sort_by_length", json_bool(true));
    }
    jput(ra, &req, "questions", *ex[0].questions);
    if (min_conf >= 0) jput(ra, &req, "min_confidence", mc);
    long got = 0;
    state_result *res = NULL;
    int rc = engine_run_request(rn->direct, &req, k > 1, ra, &res, &got, err);
    if (rc) return rc;
    if ((size_t)got != k) return laya_err(err, LAYA_ERR_INTERNAL, NULL, "the engine returned %ld results for %zu states", got, k);
    for (size_t j = 0; j < k; j++) typed[j] = &res[j];
    return 0;
  }
  json_value *reqs = arena_alloc(ra, k * sizeof(json_value));
  for (size_t j = 0; j < k; j++) {
    reqs[j] = jobj(ra, 4);
    jput(ra, &reqs[j], "state", *ex[j].state);
    jput(ra, &reqs[j], "questions", *ex[j].questions);
    if (model) jput(ra, &reqs[j], "model", *model);
    if (k == 1 && min_conf >= 0) jput(ra, &reqs[j], "min_confidence", mc);
  }
  if (k == 1) return router_predict_typed(rn->router, &reqs[0], ra, &typed[0], chosen[0], err);
  return router_predict_batch_typed(rn->router, reqs, (long)k, (long)batch_size, sort_by_length,
                                    min_conf >= 0 ? &mc : NULL, ra, typed, chosen, err);
}

static int cmd_run(int argc, char **argv, const arg_result *top) {
  const char *model = NULL, *device = NULL, *json_out = NULL, *md_out = NULL, *on_error = "fail",
             *precision = NULL, *baseline_path = NULL, *policy_path = NULL, *calibration = NULL;
  const long long kUnset = -0x7fffffffffffffffLL;
  long long batch_size = kUnset; /* argparse's None */
  const char *batch_s = NULL;
  bool sort_by_length = false, quiet = false;
  static const char *const on_error_choices[] = {"fail", "skip", NULL};
  static const char *const slice_choices[] = {"language", "model", "qid", "tag", NULL};
  const char *min_acc_s = NULL, *max_ece_s = NULL, *min_conf_s = NULL;
  arg_list min_l = {0}, max_l = {0}, slice_l = {0}, tol_l = {0}, sw_l = {0}, rev_l = {0};
  /* in the order Laya's parser adds them (an ambiguous prefix names them in that order);
   * --precision is laya.c's own, Laya's --onnx is not here */
  const arg_spec opts[] = {
      {"--model", ARG_STR, &model, NULL},
      {"--device", ARG_STR, &device, NULL},
      {"--precision", ARG_CHOICE, &precision, cli_precisions},
      {"--calibration", ARG_STR, &calibration, NULL},
      {"--revision", ARG_LIST, &rev_l, NULL},
      {"--batch-size", ARG_STR, &batch_s, NULL},
      {"--sort-by-length", ARG_FLAG, &sort_by_length, NULL},
      {"--min-confidence", ARG_STR, &min_conf_s, NULL},
      {"--on-error", ARG_CHOICE, &on_error, on_error_choices},
      {"--baseline", ARG_STR, &baseline_path, NULL},
      {"--tolerance", ARG_LIST, &tol_l, NULL},
      {"--min-accuracy", ARG_STR, &min_acc_s, NULL},
      {"--max-ece", ARG_STR, &max_ece_s, NULL},
      {"--score-within", ARG_LIST, &sw_l, NULL},
      {"--min", ARG_LIST, &min_l, NULL},
      {"--max", ARG_LIST, &max_l, NULL},
      {"--slice", ARG_LIST, &slice_l, slice_choices},
      {"--gate-policy", ARG_STR, &policy_path, NULL},
      {"--json", ARG_STR, &json_out, NULL},
      {"--markdown", ARG_STR, &md_out, NULL},
      {"--quiet", ARG_FLAG, &quiet, NULL}}; /* laya.c's own: no progress line */
  const size_t n_opts = sizeof opts / sizeof opts[0];
  arg_result ar_;
  const arg_parse_opts po = {true, 1, run_check, false};
  int perr = cli_args_parse_ex(argc, argv, 0, opts, n_opts, &po, &ar_);
  int verdict = cli_eval_verdict("run", kHelpRun, perr, &ar_, ar_.n_positional ? "" : "dataset", top);
  if (verdict >= 0) {
    cli_args_free(opts, n_opts, &ar_);
    return verdict;
  }
  char *batch_exact = NULL; /* a --batch-size beyond int64, as Python prints it (the report's) */
  if (batch_s) { /* run_check passed it; beyond int64 it means what int64's limit means (one pass) */
    bool neg;
    char *dg = NULL;
    if (cli_py_int_digits(batch_s, &neg, &dg)) {
      bool big = strlen(dg) > 19 || (strlen(dg) == 19 && strcmp(dg, "9223372036854775807") > 0);
      batch_size = big ? (neg ? LLONG_MIN : LLONG_MAX) : neg ? -strtoll(dg, NULL, 10) : strtoll(dg, NULL, 10);
      if (big && (batch_exact = malloc(strlen(dg) + 2))) sprintf(batch_exact, "%s%s", neg ? "-" : "", dg);
    }
    free(dg);
  }
  char msg[600] = "";
  const char *dataset = !perr && ar_.n_positional ? ar_.positional[0] : NULL;
  double min_acc = NAN, max_ece = NAN, min_conf = -1;
  const char *fl_name[2] = {"--min-accuracy", "--max-ece"};
  const char *fl_val[2] = {min_acc_s, max_ece_s};
  double *fl_dst[2] = {&min_acc, &max_ece};
  for (int k = 0; k < 2 && !msg[0]; k++)
    if (fl_val[k] && (!cli_py_float(fl_val[k], fl_dst[k]) || !isfinite(*fl_dst[k]))) {
      char *r = cli_args_repr(fl_val[k]);
      snprintf(msg, sizeof msg, "argument %s: %s is not a number", fl_name[k], r);
      free(r);
    }
  if (!msg[0] && min_conf_s && !cli_py_float(min_conf_s, &min_conf))
    snprintf(msg, sizeof msg, "argument --min-confidence: invalid float value: '%s'", min_conf_s);
  double sw[MAX_EVAL];
  int nsw = 0;
  for (int k = 0; k < sw_l.n && !msg[0]; k++) {
    if (!cli_py_float(sw_l.items[k], &sw[nsw]))
      snprintf(msg, sizeof msg, "argument --score-within: invalid float value: '%s'", sw_l.items[k]);
    else if (nsw < MAX_EVAL - 4)
      nsw++;
  }
  /* copy the list items: cli_args_free releases the lists */
  arg_list lists[6] = {min_l, max_l, tol_l, slice_l, rev_l, {0}};
  arg_list keep[5];
  for (int i = 0; i < 5; i++) {
    keep[i].n = lists[i].n;
    keep[i].cap = 0;
    keep[i].items = xcalloc((size_t)lists[i].n, sizeof(char *));
    for (int j = 0; j < lists[i].n; j++) keep[i].items[j] = lists[i].items[j];
  }
  cli_args_free(opts, n_opts, &ar_);
  int rc = 0;
  arena ar, ra;
  arena_init(&ar, 1 << 16);
  arena_init(&ra, 1 << 20);
  example *ex = NULL;
  size_t n = 0;
  json_value *policy = NULL, *baseline = NULL;
  evaluators ev = {0};
  pairs mins = {0}, maxs = {0}, tols = {0};
  const char *rev_shared = NULL;
  rev_pin pins[8];
  int npins = 0;
  runner rn = {0};
  ecase *cases = NULL;
  size_t ncases = 0, capcases = 0;
  double *waits = NULL, *shares = NULL;
  char **sig = NULL;
  slice_group *groups[4] = {0};
  size_t ngroups[4] = {0};
  strbuf fails;
  sb_init(&fails);
  if (msg[0]) {
    rc = arg_error("run", msg);
    goto done;
  }
  if ((rc = load_dataset(dataset, &ar, &ex, &n))) goto done;
  if (policy_path && !(policy = load_policy(policy_path, &ar))) {
    rc = 2;
    goto done;
  }
  if (policy && needs_baseline(policy) && !baseline_path) {
    rc = eval_error("--gate-policy has a relative rule; pass --baseline%s%s%s", "", "", "");
    goto done;
  }
  if (baseline_path && !(baseline = load_report(baseline_path, &ar))) {
    rc = 2;
    goto done;
  }
  static const char *const defaults[4] = {"choice_accuracy", "noul_accuracy", "score_mae", "mean_confidence"};
  for (int i = 0; i < 4; i++) snprintf(ev.name[ev.n++], sizeof ev.name[0], "%s", defaults[i]);
  for (int i = 0; i < nsw; i++) {
    if (!isfinite(sw[i]) || sw[i] < 0) {
      fprintf(stderr, "laya-evals: --score-within needs a finite tolerance >= 0, got %g\n", sw[i]);
      rc = 2;
      goto done;
    }
    ev.tol[ev.n] = sw[i];
    snprintf(ev.name[ev.n++], sizeof ev.name[0], "score_within_%g", sw[i]);
  }
  if ((rc = parse_revisions(&keep[4], &ar, &rev_shared, pins, &npins))) goto done;
  if (min_conf_s && !(min_conf >= 0 && min_conf <= 1)) {
    rc = eval_error("min_confidence must be a float in [0.0, 1.0], got %s%s%s", min_conf_s, "", "");
    goto done;
  }
  if ((rc = parse_pairs(&keep[0], &mins)) || (rc = parse_pairs(&keep[1], &maxs)) ||
      (rc = parse_pairs(&keep[2], &tols)))
    goto done;
  /* the answering side: one checkpoint directory (typed), or the Router */
  laya_error err = {0};
  struct stat st;
  bool is_dir = model && stat(model, &st) == 0;
  cli_use_precision(precision);
  if (calibration && !is_dir) {
    rc = eval_error("--calibration needs --model DIR: it is applied to that checkpoint (a routed run "
                    "uses each checkpoint's own config)%s%s%s", "", "", "");
    goto done;
  }
  if (is_dir) {
    laya_options o;
    laya_options_init(&o);
    o.device = device;
    o.calibration_path = calibration;
    rn.direct = laya_open(model, &o, &err);
    if (!rn.direct) {
      rc = eval_error("%s%s%s", err.message, "", "");
      goto done;
    }
  } else {
    char canon[64];
    if (model && router_normalise_name(model, canon, &err)) {
      rc = eval_error("%s%s%s", err.message, "", "");
      goto done;
    }
    strbuf cfg;
    sb_init(&cfg);
    sb_puts(&cfg, "{\"max_loaded\": 2");
    if (device) {
      sb_puts(&cfg, ", \"device\": ");
      json_dump_string(&cfg, device, strlen(device), false);
    }
    if (rev_shared) {
      sb_puts(&cfg, ", \"revision\": ");
      json_dump_string(&cfg, rev_shared, strlen(rev_shared), false);
    }
    if (npins) {
      sb_puts(&cfg, ", \"revisions\": {");
      for (int i = 0; i < npins; i++) {
        sb_puts(&cfg, i ? ", " : "");
        json_dump_string(&cfg, pins[i].given, strlen(pins[i].given), false);
        sb_puts(&cfg, ": ");
        json_dump_string(&cfg, pins[i].sha, strlen(pins[i].sha), false);
      }
      sb_putc(&cfg, '}');
    }
    sb_putc(&cfg, '}');
    rn.router = laya_router_open(cfg.data, &err);
    sb_free(&cfg);
    if (!rn.router) {
      rc = eval_error("%s%s%s", err.message, "", "");
      goto done;
    }
  }
  json_value model_v = model ? json_string(model) : json_null();
  /* answer: chunks of consecutive examples sharing questions and model when --batch-size > 1 */
  waits = xcalloc(n, sizeof(double));
  shares = xcalloc(n, sizeof(double));
  size_t nw = 0;
  sig = xcalloc(n, sizeof(char *));
  for (size_t i = 0; i < n; i++) sig[i] = chunk_signature(&ex[i], model);
  long chunks = 0, rows_grouped = 0, rows_alone = 0, max_chunk = 0;
  json_value errored = jarr(&ar, (uint32_t)(n * 8 + 1));
  char routed_names[8][64];
  int nrouted = 0;
  state_result **typed = xcalloc(n, sizeof *typed);
  char(*chosen)[64] = xcalloc(n, 64);
  cli_progress prog;
  cli_progress_begin(&prog, n, "examples", quiet);
  for (size_t i = 0; i < n && !rc;) {
    size_t k = 1;
    if (batch_size > 1)
      while (i + k < n && (long long)k < batch_size && !strcmp(sig[i + k], sig[i])) k++;
    chunks++;
    if (k > 1) rows_grouped += (long)k;
    else rows_alone++;
    if ((long)k > max_chunk) max_chunk = (long)k;
    const json_value *m = model ? &model_v : ex[i].model;
    if (m && m->type == JSON_NULL) m = NULL;
    double t0 = now_ms();
    int crc = run_chunk(&rn, &ex[i], k, rn.direct ? NULL : m, batch_size > 0 ? batch_size : 0, sort_by_length,
                        min_conf_s ? min_conf : -1, &ra, typed, chosen, &err);
    double el = now_ms() - t0;
    if (crc) {
      if (!strcmp(on_error, "fail")) {
        fprintf(stderr, "laya-evals: example %zu: %s\n", i, err.message);
        rc = 2;
        break;
      }
      char e[2200];
      snprintf(e, sizeof e, "%s: %s", err.kind[0] ? err.kind : "RuntimeError", err.message);
      for (size_t j = 0; j < k; j++) {
        json_value row = jobj(&ar, 2);
        jput(&ar, &row, "index", json_int((long long)(i + j)));
        jput(&ar, &row, "error", jstr(&ar, e));
        jpush(&errored, row);
      }
      memset(&err, 0, sizeof err);
      i += k;
      continue;
    }
    for (size_t j = 0; j < k; j++) {
      waits[nw] = el;
      shares[nw++] = el / (double)k;
      const example *e = &ex[i + j];
      json_value answered = json_null();
      if (!rn.direct) {
        /* _answered_model: the checkpoint the Router chose */
        answered = jstr(&ar, chosen[j]);
        int q = 0;
        while (q < nrouted && strcmp(routed_names[q], chosen[j])) q++;
        if (q == nrouted && nrouted < 8) snprintf(routed_names[nrouted++], 64, "%s", chosen[j]);
      }
      for (uint32_t q = 0; q < e->expected->n; q++) {
        const char *qid = e->expected->members[q].key;
        const answer *ta = NULL;
        for (int a = 0; a < typed[j]->n; a++)
          if (typed[j]->answers[a].q->qid_len == e->expected->members[q].key_len &&
              !memcmp(typed[j]->answers[a].q->qid, qid, typed[j]->answers[a].q->qid_len))
            ta = &typed[j]->answers[a];
        if (!ta) {
          if (!strcmp(on_error, "fail")) {
            char *r = cli_args_repr(qid);
            fprintf(stderr, "laya-evals: runner returned no answer for question %s\n", r);
            free(r);
            rc = 2;
            break;
          }
          json_value row = jobj(&ar, 3);
          jput(&ar, &row, "index", json_int((long long)(i + j)));
          jput(&ar, &row, "question", jstr(&ar, qid));
          jput(&ar, &row, "error", jstr(&ar, "missing answer"));
          jpush(&errored, row);
          continue;
        }
        if (ncases == capcases) cases = xrealloc(cases, (capcases = capcases ? capcases * 2 : 64) * sizeof *cases);
        ecase *c = &cases[ncases++];
        memset(c, 0, sizeof *c);
        c->qid = qid;
        c->expected = &e->expected->members[q].value;
        c->ans.typed = ta;
        c->language = e->language ? *e->language : json_null();
        c->model = model ? model_v : (e->model && e->model->type != JSON_NULL) ? *e->model : answered;
        c->tags = e->tags && e->tags->type == JSON_ARRAY ? e->tags : NULL;
        aview v = view_typed(ta);
        score_case(c, &v, &ev);
      }
      if (rc) break;
    }
    i += k;
    cli_progress_update(&prog, i);
  }
  cli_progress_end(&prog);
  free(typed);
  free(chosen);
  if (rc) goto done;

  /* ---- the report document */
  metrics overall;
  ecase **all = xcalloc(ncases, sizeof(ecase *));
  for (size_t i = 0; i < ncases; i++) all[i] = &cases[i];
  aggregate(all, ncases, &ev, &overall);
  free(all);
  if (nw) {
    double p50, p95;
    percentiles(waits, nw, &p50, &p95);
    put(&overall, "latency_p50_ms", p50);
    put(&overall, "latency_p95_ms", p95);
    percentiles(shares, nw, &p50, &p95);
    put(&overall, "cost_per_decision_p50_ms", p50);
    put(&overall, "cost_per_decision_p95_ms", p95);
  }
  for (size_t i = 0; i < ncases; i++) {
    ecase *c = &cases[i];
    if (c->language.type != JSON_NULL) {
      char *s = str_of(&c->language, false);
      group_add(&groups[0], &ngroups[0], s, c);
      free(s);
    }
    if (c->model.type != JSON_NULL) {
      char *s = str_of(&c->model, false);
      group_add(&groups[1], &ngroups[1], s, c);
      free(s);
    }
    group_add(&groups[2], &ngroups[2], c->qid, c);
    for (uint32_t t = 0; c->tags && t < c->tags->n; t++) {
      char *s = str_of(&c->tags->items[t], false);
      group_add(&groups[3], &ngroups[3], s, c);
      free(s);
    }
  }
  json_value doc = jobj(&ar, 4);
  json_value *jcases = jput(&ar, &doc, "cases", jarr(&ar, (uint32_t)ncases));
  wcase_answer *answers_side = xcalloc(ncases, sizeof *answers_side);
  for (size_t i = 0; i < ncases; i++) {
    ecase *c = &cases[i];
    answers_side[i] = c->ans;
    json_value cj = jobj(&ar, 8);
    jput(&ar, &cj, "qid", jstr(&ar, c->qid));
    jput(&ar, &cj, "language", c->language);
    jput(&ar, &cj, "model", c->model);
    uint32_t nt = c->tags ? c->tags->n : 0;
    json_value tags = jarr(&ar, nt);
    for (uint32_t t = 0; t < nt; t++) {
      char *s = str_of(&c->tags->items[t], false);
      jpush(&tags, jstr(&ar, s));
      free(s);
    }
    jput(&ar, &cj, "tags", tags);
    jput(&ar, &cj, "expected", *c->expected);
    jput(&ar, &cj, "confidence", c->has_conf ? json_float(c->conf) : json_null());
    jput(&ar, &cj, "correct", c->correct < 0 ? json_null() : json_bool(c->correct));
    json_value sc = jobj(&ar, (uint32_t)ev.n);
    for (int e = 0; e < ev.n; e++) jput(&ar, &sc, ev.name[e], isnan(c->score[e]) ? json_null() : json_float(c->score[e]));
    jput(&ar, &cj, "scores", sc);
    jpush(jcases, cj);
  }
  json_value *cfg = jput(&ar, &doc, "config", jobj(&ar, 24));
  char dsha[65] = "", qsha[65];
  sha256_file_hex(dataset, dsha);
  questions_fingerprint(ex, n, qsha);
  jput(&ar, cfg, "dataset", jstr(&ar, dataset));
  jput(&ar, cfg, "model", model ? jstr(&ar, model) : json_null());
  jput(&ar, cfg, "device", device ? jstr(&ar, device) : json_null());
  jput(&ar, cfg, "dataset_sha256", jstr(&ar, dsha));
  if (policy) jput(&ar, cfg, "gate_policy", *policy);
  if (calibration) jput(&ar, cfg, "calibration", jstr(&ar, calibration));
  if (nsw) {
    json_value l = jarr(&ar, (uint32_t)nsw);
    for (int i = 0; i < nsw; i++) jpush(&l, json_float(sw[i]));
    jput(&ar, cfg, "score_within", l);
  }
  jput(&ar, cfg, "schema", jstr(&ar, "laya-evals-report/1"));
  jput(&ar, cfg, "questions_sha256", jstr(&ar, qsha));
  jput(&ar, cfg, "coverage_metric_definition", json_int(2));
  jput(&ar, cfg, "laya_version", jstr(&ar, LAYA_COMPAT_VERSION));
  char runtime[64];
  snprintf(runtime, sizeof runtime, "laya.c %s", LAYA_VERSION);
  jput(&ar, cfg, "runtime", jstr(&ar, runtime));
  json_value timing = jobj(&ar, 12);
  bool batched = batch_size > 1;
  jput(&ar, &timing, "latency_metric", jstr(&ar, "per request: the wall time of the call that returned it, unsplit"));
  jput(&ar, &timing, "cost_metric", jstr(&ar, "per decision: that call divided by its own chunk size"));
  json_value bsv = batch_size != kUnset ? json_int(batch_size) : json_null();
  if (batch_exact) { /* Python prints the integer exactly */
    bsv.big = true;
    bsv.s = batch_exact;
    bsv.n = (uint32_t)strlen(batch_exact);
    bsv.d = strtod(batch_exact, NULL);
  }
  jput(&ar, &timing, "batch_size", bsv);
  jput(&ar, &timing, "batch_form", batched ? jstr(&ar, "states") : json_null());
  jput(&ar, &timing, "sort_by_length", json_bool(sort_by_length));
  jput(&ar, &timing, "sort_by_length_sent", json_bool(sort_by_length && batched));
  jput(&ar, &timing, "min_confidence", min_conf_s ? json_float(min_conf) : json_null());
  jput(&ar, &timing, "min_confidence_sent", json_bool(min_conf_s && chunks > 0));
  jput(&ar, &timing, "chunks", json_int(chunks));
  jput(&ar, &timing, "rows_grouped", json_int(rows_grouped));
  jput(&ar, &timing, "rows_alone", json_int(rows_alone));
  jput(&ar, &timing, "max_chunk", json_int(max_chunk));
  jput(&ar, cfg, "timing", timing);
  if (errored.n) jput(&ar, cfg, "errored", errored);
  /* the commit each checkpoint answered from: a pin when one was given; a directory has none */
  json_value revs = jobj(&ar, 9);
  if (rn.direct) {
    jput(&ar, &revs, model, json_null());
  } else {
    for (int i = 0; i < nrouted; i++) {
      const char *pin = rev_shared;
      for (int j = 0; j < npins; j++)
        if (!strcmp(pins[j].canon, routed_names[i])) pin = pins[j].sha;
      jput(&ar, &revs, routed_names[i], pin ? jstr(&ar, pin) : json_null());
    }
  }
  jput(&ar, cfg, "revisions", revs);
  json_value *jover = jput(&ar, &doc, "overall", metrics_json(&ar, &overall));
  int ndims = 0;
  for (int d = 0; d < 4; d++) ndims += ngroups[d] > 0;
  json_value *jslices = jput(&ar, &doc, "slices", jobj(&ar, (uint32_t)ndims));
  for (int d = 0; d < 4; d++) {
    if (!ngroups[d]) continue;
    qsort(groups[d], ngroups[d], sizeof(slice_group), cmp_group);
    json_value *dim = jput(&ar, jslices, kDims[d], jobj(&ar, (uint32_t)ngroups[d]));
    for (size_t g = 0; g < ngroups[d]; g++) {
      metrics m;
      aggregate(groups[d][g].cs, groups[d][g].n, &ev, &m);
      jput(&ar, dim, groups[d][g].key, metrics_json(&ar, &m));
    }
  }

  /* ---- gates */
  if (nsw) {
    long score_cases = 0;
    for (size_t i = 0; i < ncases; i++) {
      score_cases += cases[i].ans.typed->q->type == QT_SCORE;
    }
    for (int e = 4; e < ev.n; e++)
      if (!json_get(jover, ev.name[e]))
        fprintf(stderr,
                "laya-evals: %s has no value: %ld of %zu answered case(s) are score answers, and the metric "
                "needs one whose label is a number. A threshold naming it reports it missing.\n",
                ev.name[e], score_cases, ncases);
  }
  if (!isnan(min_acc)) pairs_set(&mins, json_get(jover, "choice_accuracy") ? "choice_accuracy" : "noul_accuracy", min_acc);
  if (!isnan(max_ece)) pairs_set(&maxs, "ece", max_ece);
  json_value th = jobj(&ar, 3);
  jput(&ar, &th, "min", pairs_json(&ar, &mins));
  jput(&ar, &th, "max", pairs_json(&ar, &maxs));
  jput(&ar, &th, "baseline_tolerance", pairs_json(&ar, &tols));
  jput(&ar, cfg, "thresholds", th);
  int nfail = 0;
  for (int i = 0; i < mins.n + maxs.n; i++) {
    bool is_min = i < mins.n;
    const char *name = is_min ? mins.name[i] : maxs.name[i - mins.n];
    double lim = is_min ? mins.value[i] : maxs.value[i - mins.n];
    const json_value *v = json_get(jover, name);
    char *r = cli_args_repr(name), b1[48], b2[48];
    if (!v) sb_printf(&fails, "metric %s is not in the report\n", r);
    else if (isnan(v->d)) sb_printf(&fails, "metric %s is NaN\n", r);
    else if (is_min && v->d < lim) sb_printf(&fails, "%s=%s is below the minimum %s\n", name, f4(v->d, false, b1), f4(lim, false, b2));
    else if (!is_min && v->d > lim) sb_printf(&fails, "%s=%s is above the maximum %s\n", name, f4(v->d, false, b1), f4(lim, false, b2));
    else nfail--;
    nfail++;
    free(r);
  }
  if (baseline) {
    int crc = compare_and_print(cfg, jover, baseline, &tols);
    if (crc == 2) {
      rc = 2;
      goto done;
    }
    if (crc) sb_puts(&fails, "baseline comparison failed\n"), nfail++;
    strbuf reasons;
    sb_init(&reasons);
    if (!comparable_to(cfg, &ar, baseline, &reasons)) sb_printf(&fails, "baseline is not comparable: %s\n", reasons.data), nfail++;
    sb_free(&reasons);
  }
  if (policy) nfail += check_policy(cfg, jslices, jcases, policy, baseline, &ar, &fails);

  /* ---- output */
  char b[48];
  const json_member **om = sorted_members(jover);
  for (uint32_t i = 0; i < jover->n; i++) printf("%-18s %s\n", om[i]->key, f4(om[i]->value.d, false, b));
  free(om);
  for (int s = 0; s < keep[3].n; s++) {
    const json_value *dim = json_get(jslices, keep[3].items[s]);
    for (uint32_t g = 0; dim && g < dim->n; g++) {
      printf("  %s=%s ", keep[3].items[s], dim->members[g].key);
      const json_member **gm = sorted_members(&dim->members[g].value);
      for (uint32_t i = 0; i < dim->members[g].value.n; i++) printf(" %s=%s", gm[i]->key, f4(gm[i]->value.d, false, b));
      free(gm);
      printf("\n");
    }
  }
  fflush(stdout);
  if (json_out) {
    strbuf r;
    sb_init(&r);
    write_report(&r, &doc, answers_side);
    rc = write_text(json_out, &r, "report");
    sb_free(&r);
  }
  if (!rc && md_out) {
    strbuf r;
    sb_init(&r);
    to_markdown(&r, jover, jslices);
    rc = write_text(md_out, &r, "markdown report");
    sb_free(&r);
  }
  free(answers_side);
  if (!rc && nfail) {
    const char *p = fails.data;
    while (p && *p) {
      const char *nl = strchr(p, '\n');
      fprintf(stderr, "FAIL: %.*s\n", (int)(nl - p), p);
      p = nl + 1;
    }
    rc = 1;
  }
done:
  sb_free(&fails);
  free(batch_exact);
  for (int d = 0; d < 4; d++) {
    for (size_t g = 0; g < ngroups[d]; g++) free(groups[d][g].cs), free(groups[d][g].key);
    free(groups[d]);
  }
  for (size_t i = 0; sig && i < n; i++) free(sig[i]);
  free(sig);
  free(cases);
  free(waits);
  free(shares);
  for (int i = 0; i < 5; i++) free(keep[i].items);
  if (rn.direct) laya_close(rn.direct);
  if (rn.router) laya_router_close(rn.router);
  free(ex);
  arena_free(&ra);
  arena_free(&ar);
  return rc;
}

/* ---------------------------------------------------------------- compare */

static int cmd_compare(int argc, char **argv, const arg_result *top) {
  const char *baseline_path = NULL, *policy_path = NULL;
  arg_list tol_l = {0};
  const arg_spec opts[] = {{"--baseline", ARG_STR, &baseline_path, NULL},
                           {"--tolerance", ARG_LIST, &tol_l, NULL},
                           {"--gate-policy", ARG_STR, &policy_path, NULL}};
  const size_t n_opts = sizeof opts / sizeof opts[0];
  arg_result r;
  const arg_parse_opts po = {true, 1, NULL, false};
  int perr = cli_args_parse_ex(argc, argv, 0, opts, n_opts, &po, &r);
  char msg[600] = "";
  const char *missing = !r.n_positional && !baseline_path ? "report, --baseline"
                        : !r.n_positional                 ? "report"
                        : !baseline_path                  ? "--baseline"
                                                          : "";
  int verdict = cli_eval_verdict("compare", kHelpCompare, perr, &r, missing, top);
  if (verdict >= 0) {
    cli_args_free(opts, n_opts, &r);
    return verdict;
  }
  const char *report_path = !perr && r.n_positional ? r.positional[0] : NULL;
  arg_list tols_keep = {xcalloc((size_t)tol_l.n, sizeof(char *)), tol_l.n, 0};
  for (int i = 0; i < tol_l.n; i++) tols_keep.items[i] = tol_l.items[i];
  cli_args_free(opts, n_opts, &r);
  if (msg[0]) {
    free(tols_keep.items);
    return arg_error("compare", msg);
  }
  arena ar;
  arena_init(&ar, 1 << 16);
  int rc = 2;
  json_value *policy = NULL, *doc, *baseline;
  pairs tols = {0};
  if (policy_path && !(policy = load_policy(policy_path, &ar))) goto done;
  if (!(doc = load_report(report_path, &ar))) goto done;
  json_value config = identity_of(&ar, doc);
  if (policy) {
    const json_value *rec = json_get(&config, "gate_policy");
    if (!is_null(rec) && !json_eq(rec, policy))
      fputs("laya-evals: warning: --gate-policy differs from the report's recorded gate_policy; this verdict "
            "uses --gate-policy\n",
            stderr);
  }
  if (!(baseline = load_report(baseline_path, &ar))) goto done;
  if (parse_pairs(&tols_keep, &tols)) goto done;
  const json_value *overall = json_get(doc, "overall");
  json_value empty = jobj(&ar, 0);
  int crc = compare_and_print(&config, overall ? overall : &empty, baseline, &tols);
  if (crc == 2) goto done;
  strbuf fails;
  sb_init(&fails);
  strbuf reasons;
  sb_init(&reasons);
  if (!comparable_to(&config, &ar, baseline, &reasons)) sb_printf(&fails, "baseline is not comparable: %s\n", reasons.data);
  sb_free(&reasons);
  if (policy) check_policy(&config, json_get(doc, "slices"), json_get(doc, "cases"), policy, baseline, &ar, &fails);
  fflush(stdout);
  const char *p = fails.data;
  while (p && *p) {
    const char *nl = strchr(p, '\n');
    fprintf(stderr, "FAIL: %.*s\n", (int)(nl - p), p);
    p = nl + 1;
  }
  rc = crc || fails.len ? 1 : 0;
  sb_free(&fails);
done:
  free(tols_keep.items);
  arena_free(&ar);
  return rc;
}

/* ---------------------------------------------------------------- evidence */

static const char *const kNoMetadata =
    "legacy checkpoint: no training metadata persisted; cannot tell whether calibration ran";
static const char *const kNoBlock = "training metadata present but no calibration block; checkpoint predates #933";

/* _read_json_object: NULL after printing "laya-evals: PATH ..." */
static json_value *read_artifact(const char *path, arena *a) {
  size_t len;
  char *text = cli_read_file(path, &len);
  if (!text) {
    char *r = cli_args_repr(path);
    fprintf(stderr, "laya-evals: [Errno %d] %s: %s\n", errno, strerror(errno), r);
    free(r);
    return NULL;
  }
  laya_error err = {0};
  json_value *v = json_parse(text, len, a, NULL, &err);
  free(text);
  if (!v) {
    fprintf(stderr, "laya-evals: %s is not valid JSON: %s\n", path, err.message);
    return NULL;
  }
  if (v->type != JSON_OBJECT) {
    fprintf(stderr, "laya-evals: %s is not a JSON object\n", path);
    return NULL;
  }
  return v;
}

/* _field: a key of a config, else of its training.laya_train block. */
static const json_value *evidence_field(const json_value *cfg, const char *key) {
  if (!cfg || cfg->type != JSON_OBJECT) return NULL;
  const json_value *v = json_get(cfg, key);
  if (!is_null(v)) return v;
  const json_value *inner = get(get(cfg, "training"), "laya_train");
  if (inner && inner->type == JSON_OBJECT && !is_null(json_get(inner, key))) return json_get(inner, key);
  return NULL;
}

static int cmd_evidence(int argc, char **argv, const arg_result *top) {
  const char *ckpt = NULL, *report_path = NULL;
  const arg_spec opts[] = {{"--checkpoint", ARG_STR, &ckpt, NULL}, {"--report", ARG_STR, &report_path, NULL}};
  arg_result r;
  const arg_parse_opts po = {true, 0, NULL, false};
  int perr = cli_args_parse_ex(argc, argv, 0, opts, 2, &po, &r);
  int verdict = cli_eval_verdict("evidence", kHelpEvidence, perr, &r, ckpt ? "" : "--checkpoint", top);
  cli_args_free(opts, 2, &r);
  if (verdict >= 0) return verdict;
  char path[4200];
  size_t cl = strlen(ckpt);
  snprintf(path, sizeof path, "%s%s%s", ckpt, cl && ckpt[cl - 1] == '/' ? "" : "/", "rl_agent_config.json");
  struct stat st;
  if (stat(ckpt, &st) || !S_ISDIR(st.st_mode) || stat(path, &st) || !S_ISREG(st.st_mode)) {
    char *rp = cli_args_repr(ckpt);
    fprintf(stderr, "laya-evals: no rl_agent_config.json under %s\n", rp);
    free(rp);
    return 2;
  }
  arena ar;
  arena_init(&ar, 1 << 16);
  int rc = 2;
  json_value *cfg = read_artifact(path, &ar), *rep = NULL;
  if (!cfg) goto done;
  if (report_path && !(rep = read_artifact(report_path, &ar))) goto done;
  strbuf out;
  sb_init(&out);
  sb_printf(&out, "evidence summary for %s\n"
                  "(reports evidence and limitations found in existing artifacts; this is not a deployment verdict)\n",
            ckpt);
  const json_value *training = json_get(cfg, "training");
  const json_value *cal = training && training->type == JSON_OBJECT ? json_get(training, "laya_train_calibration") : NULL;
  if (!training || training->type != JSON_OBJECT || !cal || cal->type != JSON_OBJECT) {
    sb_printf(&out, "calibration: UNKNOWN\n  %s\n", !training || training->type != JSON_OBJECT ? kNoMetadata : kNoBlock);
  } else {
    strbuf lines;
    sb_init(&lines);
    int present = 0, missing = 0;
    for (uint32_t i = 0; i < cal->n; i++) {
      const json_value *e = &cal->members[i].value;
      const json_value *items = e->type == JSON_OBJECT ? json_get(e, "items") : NULL;
      const char *state;
      strbuf reason;
      sb_init(&reason);
      if (!items || items->type != JSON_INT) {
        state = "UNKNOWN";
        sb_puts(&reason, "calibration entry is malformed");
      } else if (!items->big && items->i == 0) {
        state = "MISSING";
        sb_puts(&reason, "question type present but zero calibration items");
      } else {
        const json_value *issues = json_get(e, "issues");
        if (!issues || issues->type != JSON_ARRAY) {
          state = "UNKNOWN";
          sb_puts(&reason, "calibration entry has no issues list; cannot tell limitations");
        } else if (issues->n) {
          state = "INSUFFICIENT";
          sb_puts(&reason, "limitations recorded: ");
          for (uint32_t k = 0; k < issues->n; k++) {
            char *s = str_of(&issues->items[k], false);
            sb_printf(&reason, "%s%s", k ? "; " : "", s);
            free(s);
          }
        } else {
          state = "PRESENT";
          char *s = str_of(items, false);
          sb_printf(&reason, "fitted with no recorded issues on %s items", s);
          free(s);
        }
      }
      present += !strcmp(state, "PRESENT");
      missing += !strcmp(state, "MISSING");
      sb_printf(&lines, "  %-24s %s -- %s\n", cal->members[i].key, state, reason.data);
      sb_free(&reason);
    }
    const char *overall = cal->n && present == (int)cal->n ? "PRESENT"
                          : cal->n && missing == (int)cal->n ? "MISSING"
                                                             : "INSUFFICIENT";
    sb_printf(&out, "calibration: %s\n%s", overall, lines.data ? lines.data : "");
    sb_free(&lines);
  }
  if (rep) {
    json_value id = identity_of(&ar, rep);
    const json_value *lv = get(&id, "laya_version");
    if (is_null(lv) && !is_null(json_get(rep, "laya_version"))) jset(&ar, &id, "laya_version", *json_get(rep, "laya_version"));
    const char *keys[4] = {"schema", "dataset_sha256", "questions_sha256", "laya_version"};
    bool all = true;
    for (int k = 0; k < 3; k++) all = all && !is_null(get(&id, keys[k]));
    sb_printf(&out, "eval report identity: %s\n", all ? "PRESENT" : "UNKNOWN");
    for (int k = 0; k < 4; k++) sb_printf(&out, "  %-18s %s\n", keys[k], is_null(get(&id, keys[k])) ? "UNKNOWN" : "PRESENT");
    strbuf conf;
    sb_init(&conf);
    int nc = 0;
    const char *ck[2] = {"dataset_sha256", "questions_sha256"};
    for (int k = 0; k < 2; k++) {
      const json_value *a = evidence_field(cfg, ck[k]), *b = evidence_field(&id, ck[k]);
      if (!a || !b) continue;
      char *sa = str_of(a, false), *sb2 = str_of(b, false);
      if (strcmp(sa, sb2)) sb_printf(&conf, "%s%s", nc++ ? ", " : "", ck[k]);
      free(sa);
      free(sb2);
    }
    if (nc) sb_printf(&out, "checkpoint<->report: INCOMPARABLE -- checkpoint and report disagree on: %s\n", conf.data);
    else
      sb_puts(&out, "checkpoint<->report: UNKNOWN -- no immutable shared checkpoint identity between this checkpoint "
                    "artifact and the report\n");
    sb_free(&conf);
  }
  fputs(out.data, stdout);
  sb_free(&out);
  rc = 0;
done:
  arena_free(&ar);
  return rc;
}

/* ---------------------------------------------------------------- validate */

static int cmd_validate(int argc, char **argv, const arg_result *top) {
  arg_result r;
  const arg_parse_opts po = {true, 1, NULL, false};
  int perr = cli_args_parse_ex(argc, argv, 0, NULL, 0, &po, &r);
  int verdict = cli_eval_verdict("validate", kHelpValidate, perr, &r, r.n_positional ? "" : "dataset", top);
  const char *path = verdict < 0 ? r.positional[0] : NULL;
  cli_args_free(NULL, 0, &r);
  if (verdict >= 0) return verdict;
  arena ar;
  arena_init(&ar, 1 << 16);
  example *ex = NULL;
  size_t n = 0;
  int rc = load_dataset(path, &ar, &ex, &n);
  if (!rc) {
    const char **ids = NULL;
    size_t nid = 0;
    for (size_t i = 0; i < n; i++)
      for (uint32_t q = 0; q < ex[i].questions->n; q++) {
        const char *k = ex[i].questions->members[q].key;
        size_t j = 0;
        while (j < nid && strcmp(ids[j], k)) j++;
        if (j == nid) {
          ids = xrealloc(ids, (nid + 1) * sizeof *ids);
          ids[nid++] = k;
        }
      }
    qsort(ids, nid, sizeof *ids, cmp_cstr);
    printf("%zu examples, %zu question id(s): ", n, nid);
    for (size_t i = 0; i < nid; i++) printf("%s%s", i ? ", " : "", ids[i]);
    printf("\n");
    free(ids);
  }
  free(ex);
  arena_free(&ar);
  return rc;
}

int cli_eval_main(int argc, char **argv) {
  /* `laya eval`'s own parser: -h / --help, unknown options (reported after the command's parse),
   * then the command's name; everything after it is the command's */
  arg_result r;
  const arg_parse_opts po = {true, -1, NULL, true};
  int perr = cli_args_parse_ex(argc, argv, 1, NULL, 0, &po, &r);
  if (perr || (!r.help && !r.n_positional)) {
    put_usage(kUsage);
    fprintf(stderr, "laya eval: error: %s\n", perr ? (r.error_full ? r.error_full : r.error) : "the following arguments are required: command");
    cli_args_free(NULL, 0, &r);
    return 2;
  }
  if (r.help) {
    cli_args_free(NULL, 0, &r);
    fputs(kHelpTop, stdout);
    return 0;
  }
  const char *cmd = r.positional[0];
  int next = r.next;
  int rc;
  if (!strcmp(cmd, "run")) rc = cmd_run(argc - next, argv + next, &r);
  else if (!strcmp(cmd, "validate")) rc = cmd_validate(argc - next, argv + next, &r);
  else if (!strcmp(cmd, "agreement")) rc = cli_eval_agreement(argc - next, argv + next, &r);
  else if (!strcmp(cmd, "compare")) rc = cmd_compare(argc - next, argv + next, &r);
  else if (!strcmp(cmd, "evidence")) rc = cmd_evidence(argc - next, argv + next, &r);
  else {
    char *q = cli_args_repr(cmd);
    put_usage(kUsage);
    fprintf(stderr,
            "laya eval: error: argument command: invalid choice: %s (choose from 'validate', 'run', 'agreement', "
            "'compare', 'evidence')\n",
            q);
    free(q);
    rc = 2;
  }
  cli_args_free(NULL, 0, &r);
  return rc;
}
