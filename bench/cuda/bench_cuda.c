/*
 * bench_cuda.c: times the CUDA backend on a Laya checkpoint directory (model.safetensors +
 * encoder/config.json) over synthetic packed batches.
 *
 *   bench_cuda DIR [--prec bf16|fp16|fp8] [--shapes 1x128,1x512,32x512,32x1024,mixed64] [--reps N]
 *   bench_cuda DIR --cold [--prec P]          # process start to the first answer (1 x 128)
 *   bench_cuda DIR --acc BATCH.bin REF.bin    # logits vs a reference written by torch_bench.py
 *
 * A shape RxL is R rows of L tokens; mixed64 is 64 rows with lengths spread evenly over 100..512.
 * Every row has 4 option markers. Each shape gets a fresh worker (its scratch is sized for the
 * shape), three warm-up calls (eager, graph capture, graph replay), then `reps` timed calls; a
 * call is the whole forward: batch upload, the pass, the logits back, synchronised.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "cuda_backend.h"
#include "model/batch.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/safetensors.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* the model's builder (model/batch.h); its arrays are read directly below */
typedef packed_batch_buf batch;

static void batch_from_lengths(batch *bb, int n, const int *len, int vocab, unsigned seed) {
  int T = 0;
  for (int i = 0; i < n; i++) T += len[i];
  memset(bb, 0, sizeof *bb);
  if (pb_reserve(bb, n, T, 4L * n, NULL)) {
    fprintf(stderr, "out of memory for a batch of %d rows\n", n);
    exit(1);
  }
  srand(seed);
  for (int i = 0; i < n; i++) {
    pb_row row = pb_add_row(bb, i % 3, len[i], 4);
    for (int j = 0; j < len[i]; j++) row.tokens[j] = rand() % vocab;
    for (int j = 0; j < 4; j++) row.markers[j] = 1 + j * (len[i] - 2) / 4;
  }
  pb_finish(bb);
}

static void batch_free(batch *bb) { pb_free(bb); }

static int shape_batch(batch *bb, const char *spec, int vocab) {
  int n = 0, L = 0, lens[1024];
  if (strncmp(spec, "mixed", 5) == 0) {
    n = atoi(spec + 5);
    if (n <= 0 || n > 1024) return -1;
    for (int i = 0; i < n; i++) lens[i] = n > 1 ? 100 + (412 * i) / (n - 1) : 100;
  } else if (sscanf(spec, "%dx%d", &n, &L) == 2 && n > 0 && n <= 1024 && L > 2) {
    for (int i = 0; i < n; i++) lens[i] = L;
  } else {
    return -1;
  }
  batch_from_lengths(bb, n, lens, vocab, 1234);
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct loaded {
  st_file st;
  encoder_config enc;
  model_weights w;
} loaded;

static int load(loaded *m, const char *dir, laya_error *err) {
  char path[4096];
  memset(m, 0, sizeof *m);
  snprintf(path, sizeof path, "%s/encoder/config.json", dir);
  if (encoder_config_load(&m->enc, path, err)) return -1;
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  if (st_open(&m->st, path, err)) return -1;
  if (weights_bind(&m->w, &m->st, &m->enc, 2, 2, err)) return -1;
  return 0;
}

static int run_acc(backend *be, const char *batch_path, const char *ref_path) {
  laya_error err;
  FILE *f = fopen(batch_path, "rb");
  int hdr[3];
  if (!f || fread(hdr, sizeof hdr, 1, f) != 1) {
    fprintf(stderr, "cannot read %s\n", batch_path);
    return 1;
  }
  int R = hdr[0], T = hdr[1], NM = hdr[2];
  int32_t *rs = malloc(sizeof(int32_t) * (size_t)(R + 1)), *qt = malloc(sizeof(int32_t) * (size_t)R),
          *ms = malloc(sizeof(int32_t) * (size_t)(R + 1)), *mk = malloc(sizeof(int32_t) * (size_t)NM),
          *tok = malloc(sizeof(int32_t) * (size_t)T);
  size_t got = fread(rs, 4, (size_t)R + 1, f) + fread(qt, 4, (size_t)R, f) + fread(ms, 4, (size_t)R + 1, f) +
               fread(mk, 4, (size_t)NM, f) + fread(tok, 4, (size_t)T, f);
  fclose(f);
  if (got != (size_t)(3 * R + 2 + NM + T)) {
    fprintf(stderr, "%s is truncated\n", batch_path);
    return 1;
  }
  batch bb = {0};
  if (pb_copy(&bb, &(packed_batch){R, T, tok, rs, qt, ms, mk, NULL}, &err)) {
    fprintf(stderr, "%s: %s\n", batch_path, err.message);
    return 1;
  }
  free(rs), free(qt), free(ms), free(mk), free(tok);
  float *rl = malloc(sizeof(float) * (size_t)NM), *ra = malloc(sizeof(float) * (size_t)R * 2);
  f = fopen(ref_path, "rb");
  if (!f || fread(rl, 4, (size_t)NM, f) != (size_t)NM || fread(ra, 4, (size_t)R * 2, f) != (size_t)R * 2) {
    fprintf(stderr, "cannot read %s\n", ref_path);
    return 1;
  }
  fclose(f);
  float *lg = malloc(sizeof(float) * (size_t)NM), *ac = malloc(sizeof(float) * (size_t)R * 2);
  backend_worker *w = be->worker_create(be, &err);
  if (!w || be->forward(be, w, &bb.b, lg, ac, &err)) {
    fprintf(stderr, "forward: %s\n", err.message);
    return 1;
  }
  double max_dp = 0, max_da = 0, max_dl = 0;
  int same = 0;
  for (int r = 0; r < R; r++) {
    int m0 = bb.marker_start[r], k = bb.marker_start[r + 1] - m0, a = 0, c = 0;
    double p[64], q[64], mp = -1e30, mq = -1e30, sp = 0, sq = 0;
    for (int i = 0; i < k; i++) mp = fmax(mp, rl[m0 + i]), mq = fmax(mq, lg[m0 + i]);
    for (int i = 0; i < k; i++) sp += (p[i] = exp(rl[m0 + i] - mp)), sq += (q[i] = exp(lg[m0 + i] - mq));
    for (int i = 0; i < k; i++) {
      p[i] /= sp, q[i] /= sq;
      max_dp = fmax(max_dp, fabs(p[i] - q[i]));
      max_dl = fmax(max_dl, fabs(rl[m0 + i] - lg[m0 + i]));
      if (p[i] > p[a]) a = i;
      if (q[i] > q[c]) c = i;
    }
    same += a == c;
    double pa = 1 / (1 + exp(ra[2 * r + 1] - ra[2 * r])), qa = 1 / (1 + exp(ac[2 * r + 1] - ac[2 * r]));
    max_da = fmax(max_da, fabs(pa - qa));
  }
  printf("questions %d, argmax same %d, max |dp| %.5f, max |d act p| %.5f, max |d logit| %.4f\n", R, same, max_dp,
         max_da, max_dl);
  be->worker_destroy(be, w);
  return 0;
}

int main(int argc, char **argv) {
  double t_main = now_ms();
  if (argc < 2) {
    fprintf(stderr, "usage: %s DIR [--prec bf16|fp16|fp8] [--shapes LIST] [--reps N] [--cold] [--acc B R]\n", argv[0]);
    return 2;
  }
  const char *dir = argv[1], *shapes = "1x128,1x512,32x512,32x1024,mixed64", *acc_b = NULL, *acc_r = NULL;
  const char *label = NULL;
  backend_precision prec = PREC_BF16;
  int reps = 0, cold = 0;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--prec") && i + 1 < argc) {
      i++;
      prec = !strcmp(argv[i], "fp16") ? PREC_FP16 : !strcmp(argv[i], "fp8") ? PREC_FP8 : PREC_BF16;
    }
    else if (!strcmp(argv[i], "--shapes") && i + 1 < argc) shapes = argv[++i];
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--label") && i + 1 < argc) label = argv[++i];
    else if (!strcmp(argv[i], "--cold")) cold = 1;
    else if (!strcmp(argv[i], "--acc") && i + 2 < argc) acc_b = argv[++i], acc_r = argv[++i];
  }
  if (!label) label = dir;
  const char *pn = backend_precision_name(prec);
  laya_error err;
  memset(&err, 0, sizeof err);
  loaded m;
  if (load(&m, dir, &err)) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  backend_options o = {prec, 0, 0, NULL};
  double t_create = now_ms();
  backend *be = backend_cuda_create(&m.w, &o, &err);
  if (!be) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  double t_created = now_ms();

  if (cold) {
    batch bb;
    shape_batch(&bb, "1x128", m.enc.vocab);
    backend_worker *w = be->worker_create(be, &err);
    float logits[4], act[2];
    if (!w || be->forward(be, w, &bb.b, logits, act, &err)) {
      fprintf(stderr, "%s\n", err.message);
      return 1;
    }
    double t_ans = now_ms();
    printf("COLD %s %s main_to_answer_ms %.1f (load+bind %.1f, backend create incl. CUDA init and upload %.1f, "
           "first forward %.1f) logit0 %.4f\n",
           label, pn, t_ans - t_main, t_create - t_main, t_created - t_create, t_ans - t_created, logits[0]);
    return 0;
  }
  if (acc_b) return run_acc(be, acc_b, acc_r);

  size_t weights = 0;
  backend_cuda_memory(be, NULL, &weights, NULL);
  printf("model %s (%s): hidden %d, layers %d, vocab %d; device weights %.1f MiB; create %.0f ms\n", label, pn,
         m.enc.hidden, m.enc.n_layers, m.enc.vocab, weights / 1048576.0, t_created - t_create);
  char *list = strdup(shapes);
  for (char *save = NULL, *sp = strtok_r(list, ",", &save); sp; sp = strtok_r(NULL, ",", &save)) {
    batch bb;
    if (shape_batch(&bb, sp, m.enc.vocab)) {
      fprintf(stderr, "bad shape %s\n", sp);
      continue;
    }
    size_t free0, total;
    cudaMemGetInfo(&free0, &total);
    backend_worker *w = be->worker_create(be, &err);
    int nm = bb.b.marker_start[bb.b.n_rows];
    float *logits = malloc(sizeof(float) * (size_t)nm), *act = malloc(sizeof(float) * (size_t)bb.b.n_rows * 2);
    int n = reps > 0 ? reps : (bb.b.n_tokens >= 8192 ? 30 : 100);
    double *t = malloc(sizeof(double) * (size_t)n);
    int bad = 0;
    for (int i = 0; i < 3 + n && !bad; i++) {
      double a = now_ms();
      if (be->forward(be, w, &bb.b, logits, act, &err)) {
        fprintf(stderr, "%s: %s\n", sp, err.message);
        bad = 1;
      }
      if (i >= 3) t[i - 3] = now_ms() - a;
      if (i == 2) { /* profile only the timed calls (the first one loads kernels and plans GEMMs) */
        char junk[4096];
        backend_cuda_profile(w, junk, sizeof junk);
      }
    }
    if (!bad) {
      size_t free1, scratch = 0;
      cudaMemGetInfo(&free1, &total);
      backend_cuda_memory(be, w, NULL, &scratch);
      qsort(t, (size_t)n, sizeof(double), cmp_double);
      double med = t[n / 2];
      int finite = 1;
      for (int i = 0; i < nm; i++) finite &= isfinite(logits[i]);
      char prof[4096];
      if (backend_cuda_profile(w, prof, sizeof prof) == 0) printf("PROFILE %s %s %s (eager, per forward):\n%s", label, pn, sp, prof);
      printf("BENCH %s %s %-8s rows %3d tokens %6d  median %8.3f ms  min %8.3f ms  rows/s %9.1f  "
             "weights %.0f MiB + scratch %.0f MiB (worker device use %.0f MiB)  finite %d\n",
             label, pn, sp, bb.b.n_rows, bb.b.n_tokens, med, t[0], bb.b.n_rows / (med / 1e3), weights / 1048576.0,
             scratch / 1048576.0, (double)(free0 - free1) / 1048576.0, finite);
    }
    free(t);
    free(logits);
    free(act);
    if (w) be->worker_destroy(be, w);
    batch_free(&bb);
  }
  free(list);
  be->destroy(be);
  return 0;
}
