/*
 * test_parity.c: every corpus string, encoded and decoded, against what Hugging Face `tokenizers`
 * produced for it (tests/fixtures/tokenizer/, written by tools/tokenizer/gen_fixtures.py).
 *
 *   test_parity TOKENIZER_DIR CORPUS.jsonl EXPECTED.jsonl DECODE.jsonl [THREADS [MIN_STRINGS]]
 *
 * Checks per string: the full ids, the ids truncated to 48 (the first 48 of the reference's), the
 * decode of the full ids, and that a string the reference refuses (lone surrogates, which arrive
 * here as WTF-8 from the JSON reader) is refused. Then the decode of random id lists. With
 * THREADS > 1 the corpus is split over that many threads sharing one tokenizer, to show that
 * encoding is safe to call concurrently. Every mismatch is counted; the first 20 are printed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fsutil.h"
#include "core/json.h"
#include "tokenizer/tokenizer.h"

#define MAX_LEN 48

static const char ALPHABET[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

typedef struct expected {
  bool refused;
  int32_t *ids;
  size_t n;
  const char *decoded; /* NULL: equals the input text */
  size_t dlen;
} expected;

typedef struct job {
  const tokenizer *t;
  json_value *corpus;
  expected *exp;
  size_t from, to;
  size_t mismatches, checked;
  pthread_mutex_t *print_lock;
  int *printed;
} job;

/* Parse a JSONL file into one JSON array value (lines joined with commas). */
static json_value *read_jsonl(const char *path, arena *a) {
  size_t len;
  char *text = fs_read_file(path, &len, NULL);
  if (!text) {
    fprintf(stderr, "cannot read %s\n", path);
    return NULL;
  }
  char *arr = malloc(len + 3);
  size_t k = 0;
  arr[k++] = '[';
  for (size_t i = 0; i < len; i++) arr[k++] = (text[i] == '\n' && i + 1 < len) ? ',' : text[i];
  while (k > 1 && (arr[k - 1] == '\n')) k--;
  arr[k++] = ']';
  laya_error err = {0};
  json_value *v = json_parse(arr, k, a, NULL, &err);
  if (!v) fprintf(stderr, "%s: %s\n", path, err.message);
  free(text);
  free(arr);
  return v;
}

static bool unpack(const char *s, size_t n, int32_t **ids, size_t *count) {
  *ids = malloc((n + 1) * sizeof **ids);
  *count = 0;
  int32_t cur = 0;
  for (size_t i = 0; i < n; i++) {
    const char *p = strchr(ALPHABET, s[i]);
    if (!p || !s[i]) return false;
    int v = (int)(p - ALPHABET);
    cur = (cur << 5) | (v & 31);
    if (v < 32) {
      (*ids)[(*count)++] = cur;
      cur = 0;
    }
  }
  return true;
}

static void print_ids(const int32_t *ids, size_t n) {
  fputc('[', stderr);
  for (size_t i = 0; i < n && i < 64; i++) fprintf(stderr, "%s%d", i ? "," : "", ids[i]);
  fprintf(stderr, "%s]", n > 64 ? ",..." : "");
}

static void report(job *j, size_t line, const char *what, const json_value *s, const int32_t *got,
                   size_t gn, const int32_t *want, size_t wn, const char *gs, const char *ws) {
  j->mismatches++;
  pthread_mutex_lock(j->print_lock);
  if ((*j->printed)++ < 20) {
    strbuf sb;
    sb_init(&sb);
    json_dump_string(&sb, s->s, s->n, true);
    fprintf(stderr, "MISMATCH corpus line %zu (%s): %.300s\n", line + 1, what, sb_cstr(&sb));
    sb_free(&sb);
    if (got) {
      fprintf(stderr, "  got:  ");
      print_ids(got, gn);
      fprintf(stderr, "\n  want: ");
      print_ids(want, wn);
      fputc('\n', stderr);
    }
    if (gs) fprintf(stderr, "  got:  %.300s\n  want: %.300s\n", gs, ws ? ws : "(null)");
  }
  pthread_mutex_unlock(j->print_lock);
}

static void *run_job(void *arg) {
  job *j = arg;
  ids_vec ids = {0}, tr = {0};
  for (size_t i = j->from; i < j->to; i++) {
    const json_value *s = &j->corpus->items[i];
    const expected *e = &j->exp[i];
    laya_error err = {0};
    ids.n = 0;
    int rc = tokenizer_encode(j->t, s->s, s->n, 0, &ids, &err);
    j->checked++;
    if (e->refused) {
      if (rc == 0) report(j, i, "reference refuses this text, we encoded it", s, NULL, 0, NULL, 0, NULL, NULL);
      continue;
    }
    if (rc) {
      report(j, i, err.message, s, NULL, 0, NULL, 0, NULL, NULL);
      continue;
    }
    if (ids.n != e->n || (e->n && memcmp(ids.ids, e->ids, e->n * sizeof *ids.ids) != 0)) {
      report(j, i, "ids", s, ids.ids, ids.n, e->ids, e->n, NULL, NULL);
      continue;
    }
    tr.n = 0;
    size_t wn = e->n < MAX_LEN ? e->n : MAX_LEN;
    if (tokenizer_encode(j->t, s->s, s->n, MAX_LEN, &tr, &err) || tr.n != wn ||
        (wn && memcmp(tr.ids, e->ids, wn * sizeof *tr.ids) != 0))
      report(j, i, "ids truncated to 48", s, tr.ids, tr.n, e->ids, wn, NULL, NULL);
    char *text = NULL;
    size_t tl = 0;
    if (tokenizer_decode(j->t, ids.ids, ids.n, &text, &tl, &err)) {
      report(j, i, err.message, s, NULL, 0, NULL, 0, NULL, NULL);
      continue;
    }
    const char *want = e->decoded ? e->decoded : s->s;
    size_t wl = e->decoded ? e->dlen : s->n;
    if (tl != wl || (wl && memcmp(text, want, wl) != 0)) report(j, i, "decode", s, NULL, 0, NULL, 0, text, want);
    free(text);
  }
  ids_vec_free(&ids);
  ids_vec_free(&tr);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s TOKENIZER CORPUS EXPECTED DECODE [THREADS]\n", argv[0]);
    return 2;
  }
  int threads = argc > 5 ? atoi(argv[5]) : 1;
  uint32_t min_strings = argc > 6 ? (uint32_t)atoi(argv[6]) : 20000;
  if (threads < 1) threads = 1;
  laya_error err = {0};
  tokenizer *t = tokenizer_load(argv[1], &err);
  if (!t) {
    fprintf(stderr, "load: %s\n", err.message);
    return 1;
  }
  arena a;
  arena_init(&a, 1 << 20);
  json_value *corpus = read_jsonl(argv[2], &a), *exp = read_jsonl(argv[3], &a), *dec = read_jsonl(argv[4], &a);
  if (!corpus || !exp || !dec) return 1;
  if (corpus->n != exp->n || corpus->n < min_strings) {
    fprintf(stderr, "corpus has %u strings, expected file %u (need equal and >= %u)\n", corpus->n, exp->n,
            min_strings);
    return 1;
  }
  expected *e = calloc(corpus->n, sizeof *e);
  for (uint32_t i = 0; i < corpus->n; i++) {
    const json_value *x = &exp->items[i];
    const json_value *packed = x;
    if (x->type == JSON_NULL) {
      e[i].refused = true;
      continue;
    }
    if (x->type == JSON_ARRAY && x->n == 2) {
      packed = &x->items[0];
      e[i].decoded = x->items[1].s;
      e[i].dlen = x->items[1].n;
    }
    if (packed->type != JSON_STRING || !unpack(packed->s, packed->n, &e[i].ids, &e[i].n)) {
      fprintf(stderr, "bad expected line %u\n", i + 1);
      return 1;
    }
  }
  pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;
  int printed = 0;
  job *jobs = calloc((size_t)threads, sizeof *jobs);
  pthread_t *tid = calloc((size_t)threads, sizeof *tid);
  size_t per = (corpus->n + (size_t)threads - 1) / (size_t)threads;
  for (int k = 0; k < threads; k++) {
    size_t from = (size_t)k * per, to = from + per;
    if (to > corpus->n) to = corpus->n;
    jobs[k] = (job){t, corpus, e, from, to, 0, 0, &print_lock, &printed};
    if (threads == 1)
      run_job(&jobs[k]);
    else
      pthread_create(&tid[k], NULL, run_job, &jobs[k]);
  }
  size_t mismatches = 0, checked = 0;
  for (int k = 0; k < threads; k++) {
    if (threads > 1) pthread_join(tid[k], NULL);
    mismatches += jobs[k].mismatches;
    checked += jobs[k].checked;
  }
  /* decode of arbitrary id lists */
  size_t dmis = 0;
  for (uint32_t i = 0; i < dec->n; i++) {
    const json_value *x = &dec->items[i];
    const json_value *l = &x->items[0], *want = &x->items[1];
    int32_t *ids = malloc((l->n + 1) * sizeof *ids);
    for (uint32_t k = 0; k < l->n; k++) ids[k] = (int32_t)l->items[k].i;
    char *text = NULL;
    size_t tl = 0;
    if (tokenizer_decode(t, ids, l->n, &text, &tl, &err) || tl != want->n || (tl && memcmp(text, want->s, tl) != 0)) {
      if (dmis++ < 10) fprintf(stderr, "DECODE MISMATCH line %u: got %.200s want %.200s\n", i + 1, text ? text : err.message, want->s);
    }
    free(text);
    free(ids);
  }
  size_t refused = 0;
  for (uint32_t i = 0; i < corpus->n; i++) refused += e[i].refused;
  printf("%s: %zu strings checked (%zu refused by both), %zu mismatches; %u decode lists, %zu mismatches\n",
         argv[1], checked, refused, mismatches, dec->n, dmis);
  for (uint32_t i = 0; i < corpus->n; i++) free(e[i].ids);
  free(e);
  free(jobs);
  free(tid);
  arena_free(&a);
  tokenizer_release(t);
  return (mismatches || dmis) ? 1 : 0;
}
