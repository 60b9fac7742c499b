/*
 * bench_forward.c: time the "cpu" backend's forward on a random-weight model built in memory at
 * full size (no files), for kernel work. The benchmark against PyTorch and ONNX Runtime is
 * bench/cpu/run.sh, on checkpoints in Laya's layout.
 *
 *   bench_forward [large|mmbert|small] [fp32|bf16|int8] [ROWSxLEN ...] [--reps N] [--ref]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "random_model.h"

static double cpu_time(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  const char *model = argc > 1 ? argv[1] : "large", *prec = argc > 2 ? argv[2] : "bf16";
  int reps = 3, use_ref = 0;
  encoder_config c = random_small_config();
  if (!strcmp(model, "large") || !strcmp(model, "mmbert")) {
    int large = !strcmp(model, "large");
    c.hidden = large ? 1024 : 768;
    c.n_layers = large ? 28 : 22;
    c.n_heads = large ? 16 : 12;
    c.head_dim = 64;
    c.intermediate = large ? 2624 : 1152;
    c.vocab = large ? 50368 : 256000;
    c.local_window = 128;
    c.local_theta = large ? 10000.0 : 160000.0;
  }
  random_model rm;
  double t0 = now();
  if (random_model_init(&rm, &c, 2, 2, DT_BF16, 1)) return 2;
  backend_options o = {!strcmp(prec, "fp32") ? PREC_FP32 : !strcmp(prec, "int8") ? PREC_INT8 : PREC_BF16, 0, 0, NULL};
  for (int i = 3; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    if (!strcmp(argv[i], "--ref")) use_ref = 1;
  }
  laya_error err;
  double t1 = now();
  backend *be = use_ref ? backend_cpu_ref_create(&rm.w, &o, &err) : backend_cpu_create(&rm.w, &o, &err);
  if (!be) {
    fprintf(stderr, "%s\n", err.message);
    return 2;
  }
  printf("model %s d=%d L=%d, precision %s, isa %s; random init %.2fs, create (pack) %.2fs\n", model, c.hidden,
         c.n_layers, prec, use_ref ? "ref" : backend_cpu_isa(be), t1 - t0, now() - t1);
  backend_worker *w = be->worker_create(be, &err);
  for (int i = 3; i < argc; i++) {
    int rows, len;
    if (sscanf(argv[i], "%dx%d", &rows, &len) != 2) {
      if (!strcmp(argv[i], "--reps")) i++;
      continue;
    }
    int mixed = len == 0; /* Rx0: R rows of lengths spread over 100..512 */
    int *lens = malloc(sizeof(int) * rows), T = 0;
    for (int r = 0; r < rows; r++) {
      lens[r] = mixed ? 100 + (rows > 1 ? r * 412 / (rows - 1) : 0) : len;
      T += lens[r];
    }
    int32_t *tok = malloc(4 * T), *rs = malloc(4 * (rows + 1)), *qt = malloc(4 * rows), *ms = malloc(4 * (rows + 1)),
            *mk = malloc(4 * rows * 4);
    uint64_t s = 5;
    for (int t = 0; t < T; t++) tok[t] = (int)(rm_next(&s) % (uint64_t)c.vocab);
    rs[0] = 0;
    ms[0] = 0;
    for (int r = 0; r < rows; r++) {
      rs[r + 1] = rs[r] + lens[r];
      qt[r] = r % 3;
      for (int k = 0; k < 4; k++) mk[4 * r + k] = 2 + 3 * k;
      ms[r + 1] = ms[r] + 4;
    }
    packed_batch b = {rows, T, tok, rs, qt, ms, mk};
    float *logits = malloc(sizeof(float) * 4 * rows), *act = malloc(sizeof(float) * 2 * rows);
    double best = 1e30, total = 0, cpu_best = 1e30;
    for (int k = 0; k < reps; k++) {
      double a = now(), ca = cpu_time();
      if (be->forward(be, w, &b, logits, act, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
      }
      double e = now() - a;
      if (cpu_time() - ca < cpu_best) cpu_best = cpu_time() - ca;
      total += e;
      if (e < best) best = e;
    }
    double flop = 0;
    {
      double d = c.hidden, I = c.intermediate;
      double per_tok = c.n_layers * 2 * (3 * d * d + d * d + 2 * I * d + I * d) + 2 * 2 * (12 * d * d);
      flop = per_tok * T;
    }
    printf("%dx%s: %d tokens, best %.1f ms, mean %.1f ms, %.0f tok/s, %.0f GFLOP/s (linear layers), "
           "cpu time %.1f ms = %.0f GFLOP/s per busy core\n", rows,
           mixed ? "mixed" : argv[i] + strlen(argv[i]) - (strchr(argv[i], 'x') ? strlen(strchr(argv[i], 'x') + 1) : 0),
           T, best * 1e3, total / reps * 1e3, T / best, flop / best * 1e-9, cpu_best * 1e3, flop / cpu_best * 1e-9);
    free(lens), free(tok), free(rs), free(qt), free(ms), free(mk), free(logits), free(act);
  }
  be->worker_destroy(be, w);
  be->destroy(be);
  random_model_free(&rm);
  return 0;
}
