/*
 * bench_embed.c: what the CUDA embed pass is worth. Embedding throughput and the shortlist end to
 * end, public API only (laya_open, laya_embed_texts, laya_predict_shortlist), on each of a list of
 * backends opened on one checkpoint: by default CUDA at its default precision (bf16) and the CPU
 * backend at its default (fp32) with 16 and 8 threads. Before the embed pass a CUDA model embedded
 * on a CPU fp32 fallback, so the CPU columns stand for the old CUDA figures too.
 *
 *   bench_embed CKPT [--configs cuda,cpu:16,cpu:8] [--reps 5] [--budget-s 25] [--deadline-s 0] [--labels 1000]
 *
 * Workloads (texts generated from a word list, their token counts measured with the model's own
 * tokenizer, special tokens included):
 *   embed_a   laya_embed_texts of 1,000 label-like texts of 8-16 tokens
 *   embed_b   laya_embed_texts of 64 texts of 256 tokens
 *   sl_cold   laya_predict_shortlist, one choice question of 1,000 labels (k 20) on a ~200-token
 *             state, labels not cached: each call has its own fresh label set (1,000 label
 *             vectors + the query + one predict over the 20 kept labels)
 *   sl_warm   the same request again: labels cached, the query and the predict only
 * Each cell: a warm-up (the whole workload on a GPU; on the CPU the first 64 texts / a 64-label
 * shortlist, since a CPU pass of the whole workload takes seconds and warms nothing more), then
 * up to --reps timed reps, stopping early when another rep would take the cell past --budget-s
 * (at least one rep), or past --deadline-s after the start (0: none; a cell that would start
 * past it is left out, "-" in the table). Per cell a line "CELL config workload median_ms min_ms reps tokens/s", then
 * one table: the median per cell and each column's ratio to the first config's, and the
 * vectors of embed_a on the first config against the last one's (cosine, relative L2).
 */
#include <math.h>
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

static const char *const WORDS[] = {
    "order",    "refund",   "package",  "arrived",  "late",     "broken",   "replacement", "customer",
    "support",  "billing",  "account",  "password", "reset",    "shipping", "address",     "change",
    "invoice",  "payment",  "failed",   "credit",   "card",     "subscription", "cancel",  "upgrade",
    "plan",     "premium",  "delivery", "tracking", "missing",  "item",     "damaged",     "warranty",
    "claim",    "return",   "label",    "exchange", "size",     "colour",   "product",     "question",
    "technical", "issue",   "login",    "error",    "app",      "crash",    "mobile",      "device",
    "battery",  "charger",  "screen",   "repair",   "service",  "appointment", "booking",  "travel",
    "flight",   "hotel",    "room",     "request",  "feedback", "complaint", "manager",    "escalation",
    "legal",    "privacy",  "data",     "deletion", "export",   "report",   "tax",         "discount",
    "coupon",   "promotion", "gift",    "voucher",  "loyalty",  "points",   "membership",  "renewal",
    "general",  "enquiry",  "other",    "urgent",   "and",      "for",      "of",          "with"};
#define N_WORDS (sizeof WORDS / sizeof *WORDS)

static unsigned rnd(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return *s >> 8;
}

/* tokens of text with the special tokens ([CLS] .. [SEP]: 2) */
static int n_tokens(laya_model *m, const char *s) {
  char *ids = NULL;
  laya_error err;
  if (laya_tokenize(m, s, strlen(s), &ids, &err)) {
    fprintf(stderr, "tokenize: %s\n", err.message);
    exit(1);
  }
  int n = 0, any = 0;
  for (const char *p = ids; *p; p++) {
    n += *p == ',';
    any |= *p >= '0' && *p <= '9';
  }
  laya_free(ids);
  return (any ? n + 1 : 0) + 2;
}

/* words appended until the text has at least want tokens (specials included) */
static char *make_text(laya_model *m, int want, unsigned seed) {
  size_t cap = 64 + (size_t)want * 24, o = 0;
  char *s = malloc(cap);
  s[0] = 0;
  unsigned st = seed * 2654435761u + 1u;
  for (int k = 0; k < 4; k++) rnd(&st);
  int tries = 0;
  while (n_tokens(m, s) < want && o + 32 < cap) {
    size_t o0 = o;
    o += (size_t)snprintf(s + o, cap - o, "%s%s", o ? " " : "", WORDS[rnd(&st) % N_WORDS]);
    if (n_tokens(m, s) > want && ++tries < 32) s[o = o0] = 0; /* overshot: another word */
  }
  return s;
}

typedef struct {
  char **t;
  size_t *len;
  long n, tokens;
} textset;

/* n texts of lo..hi tokens (uniform per text), all distinct, seeded by seed */
static textset make_set(laya_model *m, long n, int lo, int hi, unsigned seed) {
  textset ts = {malloc(sizeof(char *) * (size_t)n), malloc(sizeof(size_t) * (size_t)n), n, 0};
  unsigned st = seed;
  for (long i = 0; i < n; i++) {
    for (unsigned tries = 0;; tries++) {
      int want = lo + (int)(rnd(&st) % (unsigned)(hi - lo + 1));
      ts.t[i] = make_text(m, want, seed * 7919u + (unsigned)i * 104729u + tries * 31u);
      int dup = 0;
      for (long j = 0; j < i && !dup; j++) dup = !strcmp(ts.t[i], ts.t[j]);
      if (!dup) break;
      free(ts.t[i]);
    }
    ts.len[i] = strlen(ts.t[i]);
    ts.tokens += n_tokens(m, ts.t[i]);
  }
  return ts;
}

/* {"state": S, "k": 20, "questions": {"category": {"type": "choice", ..., "criteria": [labels]}}} */
static char *shortlist_request(const char *state, const textset *ls, long n) {
  size_t cap = strlen(state) + 256, o = 0;
  for (long i = 0; i < n; i++) cap += ls->len[i] + 4;
  char *r = malloc(cap);
  o += (size_t)snprintf(r + o, cap - o,
                        "{\"state\": \"%s\", \"k\": 20, \"questions\": {\"category\": {\"type\": \"choice\", "
                        "\"instructions\": \"Which catalogue entry does the customer's message belong to?\", "
                        "\"criteria\": [",
                        state);
  for (long i = 0; i < n; i++) o += (size_t)snprintf(r + o, cap - o, "%s\"%s\"", i ? ", " : "", ls->t[i]);
  snprintf(r + o, cap - o, "]}}}");
  return r;
}

/* the string value of "key" in the model's info JSON (its first occurrence), or "?" */
static void info_str(const char *json, const char *key, char *out, size_t cap) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\": \"", key);
  const char *p = strstr(json, pat);
  size_t n = 0;
  if (p)
    for (p += strlen(pat); p[n] && p[n] != '"' && n + 1 < cap; n++) out[n] = p[n];
  if (!n) snprintf(out, cap, "?");
  else out[n] = 0;
}

enum { W_A, W_B, W_COLD, W_WARM, N_W };
static const char *const W_NAME[N_W] = {"embed_a", "embed_b", "sl_cold", "sl_warm"};

typedef struct {
  double median, min;
  int reps;
} cell;

/* the table of the first n_cfg configs: medians, ratios to the first config, its tokens/s */
static void print_table(int n_cfg, char *const *cfg, cell (*cells)[N_W], const textset *a, const textset *b,
                        int n_labels, char (*info)[256]) {
  static const char *const W_DESC[N_W] = {"embed (a): %ld label-like texts, %.1f tokens each",
                                          "embed (b): %ld texts of %.0f tokens",
                                          "shortlist, %d labels, labels not cached",
                                          "shortlist, %d labels, labels cached (query + predict)"};
  const long tokens_of[N_W] = {a->tokens, b->tokens, 0, 0};
  printf("\n| workload |");
  for (int c = 0; c < n_cfg; c++) printf(" %s ms (reps) |", cfg[c]);
  for (int c = 1; c < n_cfg; c++) printf(" %s / %s |", cfg[c], cfg[0]);
  printf(" %s tokens/s |\n|---|", cfg[0]);
  for (int c = 0; c < 2 * n_cfg; c++) printf("---|");
  printf("\n");
  for (int w = 0; w < N_W; w++) {
    char d[128];
    if (w == W_A) snprintf(d, sizeof d, W_DESC[w], a->n, (double)a->tokens / (double)a->n);
    else if (w == W_B) snprintf(d, sizeof d, W_DESC[w], b->n, (double)b->tokens / (double)b->n);
    else snprintf(d, sizeof d, W_DESC[w], n_labels);
    printf("| %s |", d);
    for (int c = 0; c < n_cfg; c++)
      if (cells[c][w].reps) printf(" %.1f (%d) |", cells[c][w].median, cells[c][w].reps);
      else printf(" - |");
    for (int c = 1; c < n_cfg; c++) {
      if (!cells[c][w].reps || !cells[0][w].reps) {
        printf(" - |");
        continue;
      }
      double q = cells[c][w].median / cells[0][w].median;
      printf(q < 10 ? " %.2fx |" : " %.1fx |", q);
    }
    if (tokens_of[w] && cells[0][w].reps) printf(" %.0f |\n", tokens_of[w] / (cells[0][w].median * 1e-3));
    else printf(" - |\n");
  }
  for (int c = 0; c < n_cfg; c++) printf("%s: %s\n", cfg[c], info[c]);
  fflush(stdout);
}

#define MAX_CONFIGS 8
#define MAX_REPS 32

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CKPT [--configs cuda,cpu:16,cpu:8] [--reps N] [--budget-s S] [--labels N]\n", argv[0]);
    return 2;
  }
  const char *dir = argv[1];
  char configs[256] = "cuda,cpu:16,cpu:8";
  int reps = 5, n_labels = 1000;
  double budget_ms = 25e3, deadline_ms = 0;
  const double t_start = now_ms();
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--configs")) snprintf(configs, sizeof configs, "%s", argv[i + 1]);
    else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--budget-s")) budget_ms = atof(argv[i + 1]) * 1e3;
    else if (!strcmp(argv[i], "--deadline-s")) deadline_ms = atof(argv[i + 1]) * 1e3;
    else if (!strcmp(argv[i], "--labels")) n_labels = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  if (reps > MAX_REPS) reps = MAX_REPS;
  if (n_labels < 64) n_labels = 64;

  char *cfg[MAX_CONFIGS];
  int n_cfg = 0;
  for (char *tok = strtok(configs, ","); tok && n_cfg < MAX_CONFIGS; tok = strtok(NULL, ",")) cfg[n_cfg++] = tok;

  /* the texts, made once with the tokenizer of a CPU model of the checkpoint */
  laya_options opt;
  laya_options_init(&opt);
  opt.device = "cpu";
  opt.threads = 1;
  opt.quiet = 1;
  laya_error err;
  laya_model *tm = laya_open(dir, &opt, &err);
  if (!tm) {
    fprintf(stderr, "%s: %s\n", dir, err.message);
    return 1;
  }
  double t0 = now_ms();
  textset set_a = make_set(tm, n_labels, 8, 16, 1);
  textset set_b = make_set(tm, 64, 256, 256, 2);
  textset set_w = make_set(tm, n_labels, 8, 16, 3); /* the shortlist's warm-up labels */
  textset set_c[MAX_REPS];                           /* one fresh label set per cold call */
  for (int r = 0; r < reps; r++) set_c[r] = make_set(tm, n_labels, 8, 16, 100 + (unsigned)r);
  char *state = make_text(tm, 200, 4);
  const int state_tokens = n_tokens(tm, state);
  laya_close(tm);
  printf("texts: embed_a %ld texts, %ld tokens (%.1f a text); embed_b %ld texts, %ld tokens; shortlist: %d labels "
         "(~%ld tokens a set), state %d tokens, k 20 (made in %.1f s)\n",
         set_a.n, set_a.tokens, (double)set_a.tokens / (double)set_a.n, set_b.n, set_b.tokens, n_labels,
         set_c[0].tokens, state_tokens, (now_ms() - t0) / 1e3);
  fflush(stdout);

  char *req_w_full = shortlist_request(state, &set_w, set_w.n), *req_w_small = shortlist_request(state, &set_w, 64);
  char *req_c[MAX_REPS];
  for (int r = 0; r < reps; r++) req_c[r] = shortlist_request(state, &set_c[r], set_c[r].n);

  float *vec_first = NULL, *vec_last = NULL; /* embed_a on the first config, on the last one run */
  int last_cfg = 0;
  int dim = 0;
  cell cells[MAX_CONFIGS][N_W];
  memset(cells, 0, sizeof cells);
  char info[MAX_CONFIGS][256];
  const long tokens_of[N_W] = {set_a.tokens, set_b.tokens, 0, 0};

  for (int c = 0; c < n_cfg; c++) {
    if (deadline_ms > 0 && now_ms() - t_start > deadline_ms) {
      printf("deadline: %s and the configs after it left out\n", cfg[c]);
      break;
    }
    laya_options_init(&opt);
    opt.quiet = 1;
    char dev[64];
    snprintf(dev, sizeof dev, "%s", cfg[c]);
    char *colon = strncmp(dev, "cpu:", 4) ? NULL : dev + 3;
    if (colon) {
      *colon = 0;
      opt.threads = atoi(colon + 1);
    }
    opt.device = dev;
    t0 = now_ms();
    laya_model *m = laya_open(dir, &opt, &err);
    double t_open = now_ms() - t0;
    if (!m) {
      fprintf(stderr, "%s on %s: %s\n", dir, cfg[c], err.message);
      return 1;
    }
    const int gpu = laya_device_uses_cuda(dev) == 1;
    const char *mi = laya_model_info(m);
    char be[48], pr[48], dv[48];
    info_str(mi, "backend", be, sizeof be);
    info_str(mi, "precision", pr, sizeof pr);
    info_str(mi, "device", dv, sizeof dv);
    snprintf(info[c], sizeof info[c], "backend %s, device %s, precision %s, threads %d", be, dv, pr, opt.threads);
    printf("open %s: %.0f ms (%s)\n", cfg[c], t_open, info[c]);
    if (strncmp(dev, "cpu", 3) && strcmp(be, "cuda")) { /* a GPU config that landed on the CPU */
      fprintf(stderr, "%s: the model runs on backend %s, not cuda (no GPU visible?)\n", cfg[c], be);
      return 1;
    }
    fflush(stdout);
    dim = laya_embed_dim(m);
    float *out = malloc(sizeof(float) * (size_t)dim * (size_t)(set_a.n > set_b.n ? set_a.n : set_b.n));
    for (int w = 0; w < N_W; w++) {
      double t[MAX_REPS], spent = 0;
      int done = 0;
      if (deadline_ms > 0 && now_ms() - t_start > deadline_ms) {
        printf("deadline: %s %s left out\n", cfg[c], W_NAME[w]);
        continue;
      }
      /* warm-up */
      char *res = NULL;
      int rc = 0;
      if (w == W_A || w == W_B) {
        const textset *ts = w == W_A ? &set_a : &set_b;
        long n = gpu ? ts->n : (ts->n < 64 ? ts->n : 64);
        rc = laya_embed_texts(m, (const char *const *)ts->t, ts->len, n, out, &err);
      } else if (w == W_COLD) {
        rc = laya_predict_shortlist(m, gpu ? req_w_full : req_w_small, &res, &err);
      } else {
        rc = laya_predict_shortlist(m, req_c[0], &res, &err); /* cached by sl_cold's first rep */
      }
      laya_free(res);
      res = NULL;
      for (int r = 0; r < reps && !rc; r++) {
        if (done && spent + spent / done > budget_ms) break;
        if (done && deadline_ms > 0 && now_ms() - t_start + spent / done > deadline_ms) break;
        const textset *ts = w == W_A ? &set_a : &set_b;
        t0 = now_ms();
        if (w <= W_B) rc = laya_embed_texts(m, (const char *const *)ts->t, ts->len, ts->n, out, &err);
        else rc = laya_predict_shortlist(m, w == W_COLD ? req_c[r] : req_c[0], &res, &err);
        t[done] = now_ms() - t0;
        spent += t[done++];
        if (res && !strstr(res, "\"shortlist\"")) {
          fprintf(stderr, "%s %s: no shortlist in the result\n", cfg[c], W_NAME[w]);
          return 1;
        }
        laya_free(res);
        res = NULL;
      }
      if (rc) {
        fprintf(stderr, "%s %s: %s\n", cfg[c], W_NAME[w], err.message);
        return 1;
      }
      qsort(t, (size_t)done, sizeof *t, cmp_d);
      cell *ce = &cells[c][w];
      ce->median = done % 2 ? t[done / 2] : 0.5 * (t[done / 2 - 1] + t[done / 2]);
      ce->min = t[0];
      ce->reps = done;
      printf("CELL %s %s median_ms %.1f min_ms %.1f reps %d", cfg[c], W_NAME[w], ce->median, ce->min, done);
      if (tokens_of[w]) printf(" tokens/s %.0f", tokens_of[w] / (ce->median * 1e-3));
      printf("\n");
      fflush(stdout);
      if (w == W_A) {
        size_t bytes = sizeof(float) * (size_t)dim * (size_t)set_a.n;
        float *keep = malloc(bytes);
        memcpy(keep, out, bytes);
        if (c == 0) vec_first = keep;
        else {
          free(vec_last);
          vec_last = keep;
          last_cfg = c;
        }
      }
    }
    if (laya_cpu_fallback_count(m)) printf("note: %s answered %ld requests on the CPU fallback\n", cfg[c],
                                           laya_cpu_fallback_count(m));
    free(out);
    laya_close(m);
    print_table(c + 1, cfg, cells, &set_a, &set_b, n_labels, info);
  }

  if (vec_first && vec_last) {
    double min_cos = 1, max_rel = 0;
    for (long i = 0; i < set_a.n; i++) {
      const float *x = vec_first + (size_t)i * (size_t)dim, *y = vec_last + (size_t)i * (size_t)dim;
      double xy = 0, xx = 0, yy = 0, dd = 0;
      for (int j = 0; j < dim; j++) {
        xy += (double)x[j] * y[j];
        xx += (double)x[j] * x[j];
        yy += (double)y[j] * y[j];
        dd += ((double)x[j] - y[j]) * ((double)x[j] - y[j]);
      }
      double cs = xy / (sqrt(xx * yy) + 1e-300), rel = sqrt(dd / (yy + 1e-300));
      if (cs < min_cos) min_cos = cs;
      if (rel > max_rel) max_rel = rel;
    }
    printf("embed_a vectors, %s against %s: min cosine %.6f, max relative L2 %.4f\n", cfg[0], cfg[last_cfg],
           min_cos, max_rel);
  }
  return 0;
}
