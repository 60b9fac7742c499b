/*
 * bench_ref.c: wall time of the reference backend's forward on a random-weight model of a real
 * shape (not a test; built next to the tests).
 *
 *   bench_ref large|mmbert|base|small|CKPT_DIR ROWS LEN [REPS]
 *
 * large = ModernBERT-large (Laya "english"), mmbert = mmBERT-base (Laya "multilingual"),
 * base = ModernBERT-base, small = the toy config of test_ref: random F32 weights in memory (the
 * backend uses them in place). A directory is loaded as a Laya checkpoint. Threads: LAYA_THREADS, default the physical cores. Prints ms per
 * forward and tokens/s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/stat.h>

#include "backend/backend.h"
#include "ckpt_weights.h"
#include "core/threadpool.h"
#include "random_model.h"

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s large|mmbert|base|small ROWS LEN [REPS]\n", argv[0]);
    return 2;
  }
  encoder_config c = random_small_config();
  c.local_window = 128;
  struct stat sbuf;
  bool is_dir = stat(argv[1], &sbuf) == 0 && S_ISDIR(sbuf.st_mode);
  if (!is_dir && strcmp(argv[1], "small") != 0) {
    c.n_heads = 12, c.head_dim = 64, c.global_every = 3;
    c.global_theta = 160000, c.local_theta = 10000;
    if (!strcmp(argv[1], "large")) c.hidden = 1024, c.n_layers = 28, c.n_heads = 16, c.intermediate = 2624, c.vocab = 50368;
    else if (!strcmp(argv[1], "mmbert")) c.hidden = 768, c.n_layers = 22, c.intermediate = 1152, c.vocab = 256000, c.local_theta = 160000;
    else if (!strcmp(argv[1], "base")) c.hidden = 768, c.n_layers = 22, c.intermediate = 1152, c.vocab = 50368;
    else {
      fprintf(stderr, "unknown model %s\n", argv[1]);
      return 2;
    }
  }
  int rows = atoi(argv[2]), len = atoi(argv[3]), reps = argc > 4 ? atoi(argv[4]) : 3;
  if (rows <= 0 || len <= 0 || reps <= 0) return 2;

  double t0 = now_s();
  random_model rm;
  ckpt_weights ck;
  memset(&rm, 0, sizeof rm);
  laya_error err = {0};
  const model_weights *mw;
  if (is_dir) {
    if (ckpt_weights_open(&ck, argv[1], &err)) {
      fprintf(stderr, "%s\n", err.message);
      return 1;
    }
    mw = &ck.w;
    c = ck.enc;
  } else {
    if (random_model_init(&rm, &c, 2, 2, DT_F32, 1) != 0) {
      fprintf(stderr, "out of memory building the model\n");
      return 1;
    }
    mw = &rm.w;
  }
  backend_options o = {PREC_FP32, 0, 0, NULL}; /* threads: LAYA_THREADS or the physical cores */
  backend *be = backend_cpu_ref_create(mw, &o, &err);
  if (!be) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  backend_worker *w = be->worker_create(be, &err);
  double t1 = now_s();

  int T = rows * len, M = rows * 4;
  int32_t *tok = malloc(sizeof(int32_t) * (size_t)T), *rs = malloc(sizeof(int32_t) * (size_t)(rows + 1)),
          *qt = calloc((size_t)rows, sizeof(int32_t)), *ms = malloc(sizeof(int32_t) * (size_t)(rows + 1)),
          *mk = malloc(sizeof(int32_t) * (size_t)M);
  uint64_t s = 7;
  for (int i = 0; i < T; i++) tok[i] = (int32_t)(rm_next(&s) % (uint64_t)c.vocab);
  for (int r = 0; r <= rows; r++) rs[r] = r * len, ms[r] = r * 4;
  for (int i = 0; i < M; i++) mk[i] = (i % 4) * (len / 4);
  float *logits = malloc(sizeof(float) * (size_t)M), *act = malloc(sizeof(float) * (size_t)rows * mw->n_act);
  packed_batch b = {rows, T, tok, rs, qt, ms, mk};

  /* Process CPU time as well as wall time: on a shared machine the wall time of a run includes
   * time other processes held the cores; with LAYA_THREADS=1 the CPU time is what the forward
   * costs on an idle core. */
  double best = 1e30, total = 0, best_cpu = 1e30;
  for (int i = 0; i < reps; i++) {
    double a = now_s(), ac = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    if (be->forward(be, w, &b, logits, act, &err)) {
      fprintf(stderr, "%s\n", err.message);
      return 1;
    }
    double e = now_s() - a, ec = clock_s(CLOCK_PROCESS_CPUTIME_ID) - ac;
    if (ec < best_cpu) best_cpu = ec;
    total += e;
    if (e < best) best = e;
  }
  printf("cpu-ref %s %dx%d, %d threads: wall best %.1f ms, mean %.1f ms over %d (%.0f tokens/s); CPU best %.1f ms "
         "(setup %.1f s); logit0 %.6g\n",
         argv[1], rows, len, threadpool_default_threads(), best * 1e3, total / reps * 1e3, reps, T / best,
         best_cpu * 1e3, t1 - t0, logits[0]);
  be->worker_destroy(be, w);
  be->destroy(be);
  if (is_dir) ckpt_weights_close(&ck);
  else random_model_free(&rm);
  free(tok), free(rs), free(qt), free(ms), free(mk), free(logits), free(act);
  return 0;
}
