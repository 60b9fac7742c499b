/*
 * bench_first.c: the first request after laya_open against a warm one, end to end (laya_predict /
 * laya_predict_batch: JSON in, tokenize, forward, decode, JSON out), on any device.
 *
 *   bench_first CKPT [--device cuda] [--reps 100] [--batch-reps 20] [--reserve TOKENS] [--label L]
 *
 * For each request kind, a fresh laya_open (and laya_reserve(TOKENS, 0, 1) when given, as
 * laya-serve reserves its one inference worker), then the first call, the second, and `reps` more
 * (`batch-reps` for batch64):
 *   1q       one state of ~200 tokens, one choice question (4 options)
 *   3q       one state of ~300 tokens, three questions (choice 3, score 4, yes/no)
 *   batch64  predict_batch of 64 states (100..500 tokens) x the three questions, one pass
 * and prints "FIRST label kind open_ms first_ms second_ms warm_ms last_ms first/warm identical",
 * warm = the median of the last half, last = the final call (the reps+2-th), identical = the first
 * answer equals the last byte for byte. LAYA_CUDA_WARMUP=0 gives the figures without the warm-up.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "laya.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static const char *const WORDS[] = {"order", "refund", "the", "package", "arrived", "late", "and", "broken",
                                    "please", "send", "a", "replacement", "today", "customer", "support", "was",
                                    "not", "helpful", "I", "want", "my", "money", "back", "tracking", "number",
                                    "shows", "delivered", "but", "nothing", "came", "store", "credit", "is", "fine"};

/* n words of pseudo-random text, as a JSON string body (no quotes needed inside). */
static void text(char *out, size_t cap, int n, unsigned seed) {
  size_t o = 0;
  for (int i = 0; i < n && o + 16 < cap; i++) {
    seed = seed * 1103515245u + 12345u;
    const char *w = WORDS[(seed >> 16) % (sizeof WORDS / sizeof *WORDS)];
    o += (size_t)snprintf(out + o, cap - o, "%s%s%s", i ? " " : "", w, (seed >> 8) % 9 == 0 ? "." : "");
  }
  out[o] = 0;
}

static const char Q1[] =
    "{\"intent\": {\"type\": \"choice\", \"instructions\": \"What does the customer want?\", \"criteria\": "
    "{\"refund\": \"money back\", \"replace\": \"a new item\", \"info\": \"an answer\", \"other\": \"something else\"}}}";
static const char Q3[] =
    "{\"intent\": {\"type\": \"choice\", \"instructions\": \"What does the customer want?\", \"criteria\": "
    "{\"refund\": \"money back\", \"replace\": \"a new item\", \"info\": \"an answer\"}}, "
    "\"urgency\": {\"type\": \"score\", \"instructions\": \"How urgent is this?\", \"criteria\": "
    "[\"not urgent\", \"somewhat urgent\", \"urgent\", \"extremely urgent\"]}, "
    "\"complaint\": {\"type\": \"noul\", \"instructions\": \"Is this a complaint?\"}}";

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CKPT [--device D] [--reps N] [--reserve TOKENS] [--label L]\n", argv[0]);
    return 2;
  }
  const char *dir = argv[1], *device = "cuda", *label = "model";
  int reps = 100, batch_reps = 20;
  long reserve = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--device")) device = argv[i + 1];
    else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--batch-reps")) batch_reps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--reserve")) reserve = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--label")) label = argv[i + 1];
  }
  if (reps < 2) reps = 2;
  if (batch_reps < 2) batch_reps = 2;
  const int reps_all = reps;
  static char buf[64 * 4096 + 65536], st[4096];
  const char *kinds[3] = {"1q", "3q", "batch64"};
  for (int k = 0; k < 3; k++) {
    int batch = k == 2;
    reps = batch ? batch_reps : reps_all;
    if (k == 0) {
      text(st, sizeof st, 150, 11);
      snprintf(buf, sizeof buf, "{\"state\": \"%s\", \"questions\": %s}", st, Q1);
    } else if (k == 1) {
      text(st, sizeof st, 220, 12);
      snprintf(buf, sizeof buf, "{\"state\": \"%s\", \"questions\": %s}", st, Q3);
    } else {
      size_t o = (size_t)snprintf(buf, sizeof buf, "{\"batch_size\": 64, \"states\": [");
      for (int s = 0; s < 64; s++) {
        text(st, sizeof st, 70 + (300 * s) / 63, 100 + (unsigned)s);
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s\"%s\"", s ? ", " : "", st);
      }
      snprintf(buf + o, sizeof buf - o, "], \"questions\": %s}", Q3);
    }
    laya_options opt;
    laya_options_init(&opt);
    opt.device = device;
    opt.quiet = 1;
    laya_error err;
    double t0 = now_ms();
    laya_model *m = laya_open(dir, &opt, &err);
    if (m && reserve > 0 && laya_reserve(m, reserve, 0, 1, &err)) {
      laya_close(m);
      m = NULL;
    }
    double t_open = now_ms() - t0;
    if (!m) {
      fprintf(stderr, "%s: %s\n", dir, err.message);
      return 1;
    }
    double *t = malloc(sizeof(double) * (size_t)(reps + 2));
    char *first = NULL, *last = NULL;
    int rc = 0;
    for (int i = 0; i < reps + 2 && !rc; i++) {
      char *r = NULL;
      t0 = now_ms();
      rc = batch ? laya_predict_batch(m, buf, &r, &err) : laya_predict(m, buf, &r, &err);
      t[i] = now_ms() - t0;
      if (i == 0) first = r;
      else {
        laya_free(last);
        last = r;
      }
    }
    if (rc) {
      fprintf(stderr, "%s %s: %s\n", label, kinds[k], err.message);
      return 1;
    }
    double t_first = t[0], t_second = t[1], t_last = t[reps + 1];
    int h = (reps + 2) / 2;
    qsort(t + h, (size_t)(reps + 2 - h), sizeof(double), cmp_d);
    double warm = t[h + (reps + 2 - h) / 2];
    printf("FIRST %s %s open_ms %.1f first_ms %.3f second_ms %.3f warm_ms %.3f last_ms %.3f first/warm %.2f identical %d\n",
           label, kinds[k], t_open, t_first, t_second, warm, t_last, t_first / warm, !strcmp(first, last));
    fflush(stdout);
    laya_free(first);
    laya_free(last);
    free(t);
    laya_close(m);
  }
  return 0;
}
