/* The question-text token cache (seq_builder.h, tok_cache): heads built with it are the heads
 * built without it, id for id, on first sight, on a hit and after the cache has emptied itself
 * (more distinct texts than it holds), from several threads on one cache; a text that cannot be
 * encoded is an error every time (never cached).
 *   test_tok_cache <ckpt dir> */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "model/checkpoint.h"
#include "model/seq_builder.h"

static checkpoint ck;
static seq_tok plain, cached;

/* Question i: its own instructions (with the mask token inside for some) and 1-4 options. */
static int same_head(int i) {
  char ins[200], o[4][64];
  const char *opt[4];
  size_t olen[4];
  snprintf(ins, sizeof ins, "Question %d: what does %s customer %d want%s?", i % 1500,
           i % 3 ? "the" : ck.roles.mask_token, i % 7, i % 5 ? "" : " now, really, today");
  int n = 1 + i % 4;
  for (int k = 0; k < n; k++) {
    snprintf(o[k], sizeof o[k], "option %d of %d (%s)", k, i % 11, k % 2 ? "refund" : "help desk");
    opt[k] = o[k];
    olen[k] = strlen(o[k]);
  }
  question q = {0};
  q.type_name = i % 2 ? "choice" : "score";
  q.ins = ins;
  q.ins_len = strlen(ins);
  q.n_opts = n;
  q.opt = opt;
  q.opt_len = olen;
  arena a;
  arena_init(&a, 0);
  head_ids h0, h1;
  laya_error e0 = {0}, e1 = {0};
  int max_len = 24 + i % 40; /* some heads capped, some not */
  int r0 = build_head(&plain, &q, max_len, &a, &h0, &e0);
  int r1 = build_head(&cached, &q, max_len, &a, &h1, &e1);
  int same = r0 == 0 && r1 == 0 && h0.n_ids == h1.n_ids && h0.n_markers == h1.n_markers &&
             !memcmp(h0.ids, h1.ids, sizeof(int32_t) * (size_t)h0.n_ids) &&
             !memcmp(h0.markers, h1.markers, sizeof(int) * (size_t)h0.n_markers) &&
             h0.tokens_per_option == h1.tokens_per_option;
  arena_free(&a);
  return same;
}

static void *worker(void *arg) {
  long t = (long)arg, bad = 0;
  for (int i = 0; i < 3000; i++) bad += !same_head((int)((i * 7 + t * 131) % 4000));
  return (void *)bad;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <ckpt dir>\n", argv[0]);
    return 2;
  }
  laya_error err = {0};
  strbuf warn;
  sb_init(&warn);
  if (checkpoint_open(&ck, argv[1], NULL, &warn, &err)) {
    fprintf(stderr, "%s: %s\n", argv[1], err.message);
    return 1;
  }
  plain = (seq_tok){ck.tok, &ck.roles, strlen(ck.roles.mask_token), NULL};
  cached = plain;
  cached.cache = tok_cache_new();
  CHECK(cached.cache != NULL);

  /* 4000 questions, about 9000 distinct texts: the cache (1024 entries) empties itself */
  int bad = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < 4000; i++) bad += !same_head(i);
  CHECK(bad == 0);

  pthread_t th[4];
  for (long t = 0; t < 4; t++) pthread_create(&th[t], NULL, worker, (void *)t);
  long tbad = 0;
  for (int t = 0; t < 4; t++) {
    void *r;
    pthread_join(th[t], &r);
    tbad += (long)r;
  }
  CHECK(tbad == 0);

  /* a lone surrogate (WTF-8) is a TypeError each time, cached or not */
  const char *opt[1] = {"yes"};
  size_t olen[1] = {3};
  question q = {.type_name = "noul", .ins = "bad \xed\xa0\x80 text", .ins_len = 12, .n_opts = 1, .opt = opt, .opt_len = olen};
  for (int k = 0; k < 2; k++) {
    arena a;
    arena_init(&a, 0);
    head_ids h;
    laya_error e = {0};
    CHECK(build_head(&cached, &q, 64, &a, &h, &e) != 0);
    CHECK(strstr(e.message, "TextEncodeInput") != NULL);
    arena_free(&a);
  }

  tok_cache_free(cached.cache);
  checkpoint_close(&ck);
  sb_free(&warn);
  return check_summary("test_tok_cache");
}
