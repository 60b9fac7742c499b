/* test_shortlist: laya_embed / laya_predict_shortlist / laya_shortlist_choice / laya_predict_tournament
 * against the fixtures recorded from the real laya==0.4.15 (tools/ref/gen_shortlist.py, gen_tournament.py), with the parity suite's rule
 * (compare.h: strings, labels, choices and counts exact; other numbers within 1e-4).
 *
 *   test_shortlist FIXTURES CKPT [--max-labels N]
 *
 * --max-labels N replays only the cases whose choices hold at most N labels (the sanitizer build's
 * quick run; tournaments too); the cache checks then use the largest case left.
 * embed.jsonl: every vector of embed_fn_from_agent. cases.jsonl: each predict_shortlist result
 * (answers, usage, the shortlist metadata: kept labels in rank order, their cosines, k, n,
 * passthrough) or Laya's error kind and message; for each ranked choice also every label's cosine
 * (through laya_shortlist_choice with k = n - 1, which ranks them all but the last). Then: the label
 * cache answers a repeat byte for byte and counts hits, a fresh model starts with an empty cache,
 * and four threads sharing one model answer as one thread does. tournament.jsonl
 * (tools/ref/gen_tournament.py): each laya_predict_tournament result or error. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "compare.h"
#include "laya.h"
#include "model/embed.h"
#include "model/engine.h"

static const json_value *parse(const char *s, arena *a) {
  laya_error e;
  json_value *v = json_parse(s, strlen(s), a, NULL, &e);
  if (!v) fprintf(stderr, "parse: %s\n", e.message);
  return v;
}

static bool compare(const char *id, const char *what, const json_value *got, const json_value *want) {
  cmp_ctx c = {id, 0, 0, {0}};
  sb_init(&c.notes);
  strbuf path;
  sb_init(&path);
  cmp_value(&c, got, want, &path, false);
  if (c.failed) fprintf(stderr, "%s (%s):\n%s", id, what, sb_cstr(&c.notes));
  sb_free(&c.notes);
  sb_free(&path);
  return c.failed == 0;
}

static char *read_all(const char *path) {
  size_t n;
  laya_error e;
  char *t = fs_read_file(path, &n, &e);
  if (!t) fprintf(stderr, "%s\n", e.message);
  return t;
}

/* every line of a JSONL file, parsed into a */
static int lines_of(char *text, arena *a, const json_value **out, int max) {
  int n = 0;
  for (char *p = text; *p && n < max;) {
    char *nl = strchr(p, '\n');
    if (nl) *nl = 0;
    if (*p) out[n++] = parse(p, a);
    if (!nl) break;
    p = nl + 1;
  }
  return n;
}

static void test_embed(laya_model *m, const char *dir) {
  char path[1200];
  snprintf(path, sizeof path, "%s/embed.jsonl", dir);
  char *text = read_all(path);
  CHECK(text != NULL);
  if (!text) return;
  arena a;
  arena_init(&a, 1 << 16);
  const json_value *ls[16];
  int n = lines_of(text, &a, ls, 16);
  CHECK(n >= 2);
  for (int i = 0; i < n; i++) {
    const json_value *l = ls[i];
    strbuf req;
    sb_init(&req);
    json_dump_opts o = {NULL, NULL, false, -1};
    sb_puts(&req, "{\"texts\": ");
    json_dump(&req, json_get(l, "texts"), &o);
    sb_printf(&req, ", \"max_length\": %lld, \"batch_size\": %lld}", (long long)json_get(l, "max_length")->i,
              (long long)json_get(l, "batch_size")->i);
    char *res = NULL;
    laya_error e;
    int rc = laya_embed(m, sb_cstr(&req), &res, &e);
    CHECK(rc == 0);
    if (rc) fprintf(stderr, "embed %s: %s\n", json_get(l, "id")->s, e.message);
    if (!rc) CHECK(compare(json_get(l, "id")->s, "vectors", parse(res, &a), json_get(l, "vectors")));
    laya_free(res);
    sb_free(&req);
  }
  /* the raw entry point gives the same numbers as the JSON one */
  const json_value *texts = json_get(ls[0], "texts");
  int d = laya_embed_dim(m);
  const char *tp[64];
  size_t tl[64];
  long nt = texts->n < 64 ? texts->n : 64;
  for (long i = 0; i < nt; i++) {
    tp[i] = texts->items[i].s;
    tl[i] = texts->items[i].n;
  }
  float *v = malloc(sizeof(float) * (size_t)d * (size_t)nt);
  laya_error e;
  CHECK(laya_embed_texts(m, tp, tl, nt, v, &e) == 0);
  const json_value *want = json_get(ls[0], "vectors");
  int bad = 0;
  for (long i = 0; i < nt; i++)
    for (int j = 0; j < d; j++)
      if (fabs(v[i * d + j] - want->items[i].items[j].d) > ALLOWANCE) bad++;
  CHECK(bad == 0);
  free(v);
  arena_free(&a);
  free(text);
}

/* Every label's cosine (shortlist_choice with k = n - 1 ranks all but the last). */
static void check_sims(laya_model *m, const char *id, const json_value *req, const char *qid, const json_value *sims,
                       arena *a) {
  const json_value *q = json_get(json_get(req, "questions"), qid);
  const json_value *crit = json_get(q, "criteria");
  json_dump_opts o = {NULL, NULL, false, -1};
  strbuf r;
  sb_init(&r);
  sb_puts(&r, "{\"state\": ");
  json_dump(&r, json_get(req, "state"), &o);
  sb_puts(&r, ", \"criteria\": ");
  json_dump(&r, crit, &o);
  if (json_get(q, "instructions")) {
    sb_puts(&r, ", \"instructions\": ");
    json_dump(&r, json_get(q, "instructions"), &o);
  }
  sb_printf(&r, ", \"k\": %u, \"return_scores\": true}", crit->n - 1);
  char *res = NULL;
  laya_error e;
  int rc = laya_shortlist_choice(m, sb_cstr(&r), &res, &e);
  CHECK(rc == 0);
  sb_free(&r);
  if (rc) {
    fprintf(stderr, "%s: shortlist_choice: %s\n", id, e.message);
    return;
  }
  const json_value *got = parse(res, a);
  laya_free(res);
  const json_value *labels = &got->items[0], *scores = &got->items[1];
  CHECK(labels->n == crit->n - 1 && scores->n == crit->n - 1);
  int bad = 0, missing = 0;
  for (uint32_t j = 0; j < labels->n; j++) {
    int at = -1;
    for (uint32_t i = 0; i < crit->n && at < 0; i++) {
      const json_value *lab = crit->type == JSON_OBJECT ? NULL : &crit->items[i];
      bool eq = lab ? (lab->type == JSON_STRING && labels->items[j].type == JSON_STRING && !strcmp(lab->s, labels->items[j].s))
                    : !strcmp(crit->members[i].key, labels->items[j].s);
      if (eq) at = (int)i;
    }
    if (at < 0) missing++;
    else if (fabs(scores->items[j].d - sims->items[at].d) > ALLOWANCE) bad++;
  }
  if (bad || missing) fprintf(stderr, "%s/%s: %d cosines off by more than 1e-4, %d labels unknown\n", id, qid, bad, missing);
  CHECK(bad == 0 && missing == 0);
}

typedef struct case_t {
  const char *id;
  const char *request;
  const json_value *req, *want, *error, *sims;
} case_t;

static int run_cases(laya_model *m, const case_t *cs, int n, arena *a, int *ranked) {
  int ok = 0;
  for (int i = 0; i < n; i++) {
    char *res = NULL;
    laya_error e;
    int rc = laya_predict_shortlist(m, cs[i].request, &res, &e);
    if (cs[i].error) {
      CHECK(rc != 0);
      CHECK_STREQ(e.kind, json_get(cs[i].error, "kind")->s);
      CHECK_STREQ(e.message, json_get(cs[i].error, "message")->s);
      ok += rc != 0 && !strcmp(e.message, json_get(cs[i].error, "message")->s);
    } else {
      CHECK(rc == 0);
      if (rc) {
        fprintf(stderr, "%s: %s\n", cs[i].id, e.message);
        continue;
      }
      bool same = compare(cs[i].id, "result", parse(res, a), cs[i].want);
      CHECK(same);
      ok += same;
      for (uint32_t j = 0; cs[i].sims && j < cs[i].sims->n; j++) {
        check_sims(m, cs[i].id, cs[i].req, cs[i].sims->members[j].key, &cs[i].sims->members[j].value, a);
        (*ranked)++;
      }
    }
    laya_free(res);
  }
  return ok;
}

/* tournament.jsonl: each predict_tournament result (answers, usage, finalists, n, rounds) or
 * Laya's error. */
/* The most labels any choice of a tournament request holds. */
static uint32_t tournament_labels(const json_value *req) {
  const json_value *qs = json_get(req, "questions");
  uint32_t most = 0;
  for (uint32_t i = 0; qs && qs->type == JSON_OBJECT && i < qs->n; i++) {
    const json_value *c = qs->members[i].value.type == JSON_OBJECT ? json_get(&qs->members[i].value, "criteria") : NULL;
    if (c && (c->type == JSON_OBJECT || c->type == JSON_ARRAY) && c->n > most) most = c->n;
  }
  return most;
}

/* max_labels > 0: only the requests whose choices hold at most that many labels. */
static void test_tournament(laya_model *m, const char *dir, long max_labels, arena *a) {
  char path[1100];
  snprintf(path, sizeof path, "%s/tournament.jsonl", dir);
  char *text = read_all(path);
  CHECK(text != NULL);
  static const json_value *ls[128];
  int n = text ? lines_of(text, a, ls, 128) : 0, ok = 0, rounds = 0;
  int played = 0;
  for (int i = 0; i < n; i++) {
    const char *id = json_get(ls[i], "id")->s;
    if (max_labels && tournament_labels(json_get(ls[i], "request")) > (uint32_t)max_labels) continue;
    played++;
    strbuf req;
    sb_init(&req);
    json_dump_opts o = {NULL, NULL, false, -1};
    json_dump(&req, json_get(ls[i], "request"), &o);
    const json_value *want = json_get(ls[i], "result"), *error = json_get(ls[i], "error");
    char *res = NULL;
    laya_error e;
    int rc = laya_predict_tournament(m, sb_cstr(&req), &res, &e);
    if (error) {
      bool same = rc != 0 && !strcmp(e.kind, json_get(error, "kind")->s) &&
                  !strcmp(e.message, json_get(error, "message")->s);
      if (!same) fprintf(stderr, "%s: rc %d, %s: %s\n", id, rc, e.kind, rc ? e.message : res);
      CHECK(same);
      ok += same;
    } else {
      CHECK(rc == 0);
      if (rc) fprintf(stderr, "%s: %s\n", id, e.message);
      bool same = !rc && compare(id, "tournament", parse(res, a), want);
      CHECK(same);
      ok += same;
      const json_value *t = json_get(want, "tournament");
      for (uint32_t j = 0; t && j < t->n; j++) rounds += (int)json_get(&t->members[j].value, "rounds")->i;
    }
    laya_free(res);
    sb_free(&req);
  }
  printf("%d/%d tournament cases match laya 0.4.15 (%d rounds played)\n", ok, played, rounds);
  CHECK(ok == played && (max_labels ? played >= 10 && rounds >= 4 : played >= 20 && rounds >= 10));
  free(text);
}

typedef struct thread_arg {
  laya_model *m;
  const case_t *cs;
  int n;
  char **out; /* [n] */
} thread_arg;

static void *thread_main(void *p) {
  thread_arg *t = p;
  for (int i = 0; i < t->n; i++) {
    laya_error e;
    if (laya_predict_shortlist(t->m, t->cs[i].request, &t->out[i], &e)) t->out[i] = NULL;
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s FIXTURES CKPT [--max-labels N]\n", argv[0]);
    return 2;
  }
  long max_labels = argc >= 5 && !strcmp(argv[3], "--max-labels") ? atol(argv[4]) : 0;
  setenv("LAYA_QUIET_WARNINGS", "1", 1);
  char ck[1024], dir[1024], path[1100];
  snprintf(ck, sizeof ck, "%s/ckpt/%s", argv[1], argv[2]);
  snprintf(dir, sizeof dir, "%s/shortlist/%s", argv[1], argv[2]);
  laya_error e;
  laya_model *m = laya_open(ck, NULL, &e);
  CHECK(m != NULL);
  if (!m) {
    fprintf(stderr, "%s\n", e.message);
    return check_summary("test_shortlist");
  }
  test_embed(m, dir);

  snprintf(path, sizeof path, "%s/cases.jsonl", dir);
  char *text = read_all(path);
  CHECK(text != NULL);
  arena a;
  arena_init(&a, 1 << 20);
  static const json_value *ls[512];
  int n = text ? lines_of(text, &a, ls, 512) : 0;
  case_t *cs = calloc((size_t)n + 1, sizeof *cs);
  int kept = 0;
  for (int i = 0; i < n; i++) {
    const json_value *sims = json_get(ls[i], "sims");
    bool big = false;
    for (uint32_t j = 0; max_labels && sims && j < sims->n; j++) big |= sims->members[j].value.n > (uint32_t)max_labels;
    if (big) continue;
    ls[kept++] = ls[i];
  }
  n = kept;
  for (int i = 0; i < n; i++) {
    cs[i].id = json_get(ls[i], "id")->s;
    cs[i].request = json_get(ls[i], "request")->s;
    cs[i].req = parse(cs[i].request, &a);
    cs[i].want = json_get(ls[i], "result");
    cs[i].error = json_get(ls[i], "error");
    cs[i].sims = json_get(ls[i], "sims");
  }
  test_tournament(m, dir, max_labels, &a);
  int ranked = 0;
  int ok = run_cases(m, cs, n, &a, &ranked);
  printf("%s: %d/%d shortlist cases match laya 0.4.15 (%d ranked questions checked label by label)\n", argv[2], ok, n,
         ranked);
  CHECK(max_labels ? ranked >= 10 : (n >= 50 && ranked >= 50));

  /* the label cache: a repeat is answered from it, byte for byte */
  long size0, hits0, miss0, size1, hits1, miss1;
  embed_cache_stats(m, &size0, &hits0, &miss0);
  CHECK(size0 > 0 && miss0 > 0);
  /* the case with the most labels (one ranked question) */
  int rep = -1;
  uint32_t rep_n = 0;
  for (int i = 0; i < n; i++)
    if (!cs[i].error && cs[i].sims && cs[i].sims->n == 1 && cs[i].sims->members[0].value.n > rep_n) {
      rep = i;
      rep_n = cs[i].sims->members[0].value.n;
    }
  CHECK(rep >= 0 && (max_labels || rep_n == 1000));
  if (rep >= 0) {
    char *r1 = NULL, *r2 = NULL;
    CHECK(laya_predict_shortlist(m, cs[rep].request, &r1, &e) == 0);
    embed_cache_stats(m, &size1, &hits1, &miss1);
    CHECK(laya_predict_shortlist(m, cs[rep].request, &r2, &e) == 0);
    long size2, hits2, miss2;
    embed_cache_stats(m, &size2, &hits2, &miss2);
    CHECK(hits2 - hits1 == (long)rep_n && miss2 == miss1); /* every one of its labels (1,000 in the full run) */
    CHECK(r1 && r2 && !strcmp(r1, r2));
    CHECK(size2 <= EMBED_CACHE_MAX);
    /* a second model of the same checkpoint starts empty and answers the same */
    laya_model *m2 = laya_open(ck, NULL, &e);
    CHECK(m2 != NULL);
    if (m2) {
      long s, h, x;
      embed_cache_stats(m2, &s, &h, &x);
      CHECK(s == 0 && h == 0 && x == 0);
      char *r3 = NULL;
      CHECK(laya_predict_shortlist(m2, cs[rep].request, &r3, &e) == 0);
      embed_cache_stats(m2, &s, &h, &x);
      CHECK(h == 0 && x == (long)rep_n);
      CHECK(r3 && r1 && !strcmp(r1, r3));
      laya_free(r3);
      laya_close(m2);
    }
    laya_free(r1);
    laya_free(r2);
  }

  /* four threads on one model (cold cache) answer what one thread does */
  laya_model *m3 = laya_open(ck, NULL, &e);
  CHECK(m3 != NULL);
  if (m3) {
    int nt = n < 24 ? n : 24;
    thread_arg ta[4];
    pthread_t th[4];
    for (int t = 0; t < 4; t++) {
      ta[t].m = m3;
      ta[t].cs = cs;
      ta[t].n = nt;
      ta[t].out = calloc((size_t)nt, sizeof(char *));
      pthread_create(&th[t], NULL, thread_main, &ta[t]);
    }
    for (int t = 0; t < 4; t++) pthread_join(th[t], NULL);
    int same = 0, answered = 0;
    for (int i = 0; i < nt; i++) {
      char *one = NULL;
      if (laya_predict_shortlist(m, cs[i].request, &one, &e) == 0) {
        answered++;
        bool all = true;
        for (int t = 0; t < 4; t++) all = all && ta[t].out[i] && !strcmp(ta[t].out[i], one);
        same += all;
      }
      laya_free(one);
    }
    CHECK(answered > 10 && same == answered);
    for (int t = 0; t < 4; t++) {
      for (int i = 0; i < nt; i++) laya_free(ta[t].out[i]);
      free(ta[t].out);
    }
    laya_close(m3);
  }
  free(cs);
  arena_free(&a);
  free(text);
  laya_close(m);
  return check_summary("test_shortlist");
}
