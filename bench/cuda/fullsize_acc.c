/*
 * fullsize_acc.c: accuracy of the CUDA backend against the fp32 CPU reference (cpu-ref) on
 * full-size random-weight models (ModernBERT-large and mmBERT-base shapes, weights from
 * tests/cpu/fullsize_model.h with a fixed seed, so both sides rebuild the same model in memory;
 * bench/cpu/accuracy.c measures the CPU backend on the same models and rows).
 *
 *   fullsize_acc ref  large|mmbert OUT.bin [rows]   # on any CPU: cpu-ref logits to OUT.bin
 *   fullsize_acc cuda large|mmbert REF.bin          # on the GPU: bf16 and fp16 against REF.bin
 *
 * The batch: `rows` questions (default 24) of 32..160 tokens with 2..6 option markers each
 * (fullsize_batch_make).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../tests/cpu/fullsize_model.h"
#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "model/batch.h"
#include "model/escalate.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void softmax(const float *x, int n, double *p) {
  double mx = -INFINITY, s = 0;
  for (int i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
  for (int i = 0; i < n; i++) s += (p[i] = exp(x[i] - mx));
  for (int i = 0; i < n; i++) p[i] /= s;
}

int main(int argc, char **argv) {
  if (argc < 4 || (strcmp(argv[1], "ref") && strcmp(argv[1], "cuda"))) {
    fprintf(stderr, "usage: %s ref|cuda large|mmbert FILE [rows]\n", argv[0]);
    return 2;
  }
  const int is_ref = strcmp(argv[1], "ref") == 0;
  const int rows = argc > 4 ? atoi(argv[4]) : FULLSIZE_ROWS, n_act = FULLSIZE_N_ACT;
  encoder_config c;
  if (fullsize_config(argv[2], &c)) {
    fprintf(stderr, "unknown model %s (large|mmbert)\n", argv[2]);
    return 2;
  }
  double t0 = now_s();
  random_model rm;
  if (fullsize_model_init(&rm, argv[2]) != 0) {
    fprintf(stderr, "model build failed\n");
    return 1;
  }
  fullsize_batch bb;
  fullsize_batch_make(&bb, rows, c.vocab);
  const int nm = bb.b.marker_start[rows];
  printf("%s: built in %.1f s; %d rows, %d tokens, %d markers\n", argv[2], now_s() - t0, rows, bb.b.n_tokens, nm);
  laya_error err;
  memset(&err, 0, sizeof err);
  float *logits = calloc((size_t)nm, sizeof(float)), *act = calloc((size_t)rows * n_act, sizeof(float));

  if (is_ref) {
    backend_options o = {PREC_FP32, 0, 0, NULL};
    backend *be = backend_cpu_ref_create(&rm.w, &o, &err);
    backend_worker *w = be ? be->worker_create(be, &err) : NULL;
    if (!w) {
      fprintf(stderr, "cpu-ref: %s\n", err.message);
      return 1;
    }
    t0 = now_s();
    if (be->forward(be, w, &bb.b, logits, act, &err)) {
      fprintf(stderr, "cpu-ref forward: %s\n", err.message);
      return 1;
    }
    printf("cpu-ref forward: %.1f s\n", now_s() - t0);
    FILE *f = fopen(argv[3], "wb");
    int hdr[3] = {rows, nm, n_act};
    if (!f || fwrite(hdr, sizeof hdr, 1, f) != 1 || fwrite(logits, sizeof(float), (size_t)nm, f) != (size_t)nm ||
        fwrite(act, sizeof(float), (size_t)rows * n_act, f) != (size_t)rows * n_act) {
      fprintf(stderr, "cannot write %s\n", argv[3]);
      return 1;
    }
    fclose(f);
    be->worker_destroy(be, w);
    be->destroy(be);
    return 0;
  }

  /* cuda: compare against the stored reference */
  FILE *f = fopen(argv[3], "rb");
  int hdr[3];
  float *rl = calloc((size_t)nm, sizeof(float)), *ra = calloc((size_t)rows * n_act, sizeof(float));
  if (!f || fread(hdr, sizeof hdr, 1, f) != 1 || hdr[0] != rows || hdr[1] != nm || hdr[2] != n_act ||
      fread(rl, sizeof(float), (size_t)nm, f) != (size_t)nm ||
      fread(ra, sizeof(float), (size_t)rows * n_act, f) != (size_t)rows * n_act) {
    fprintf(stderr, "cannot read a matching reference from %s\n", argv[3]);
    return 1;
  }
  fclose(f);
  if (!backend_cuda_available(NULL)) {
    printf("no CUDA device: skipped\n");
    return 77;
  }
  int fails = 0;
  /* the last: fp8 with escalation (rows fp8 could move by more than tau re-run in bf16) */
  static const backend_precision precs[] = {PREC_BF16, PREC_FP16, PREC_FP8, PREC_FP8};
  for (int pi = 0; pi < 4; pi++) {
    const backend_precision prec = precs[pi];
    const int esc = pi == 3;
    backend_options o = {prec, 0, 0, NULL};
    backend *be = backend_cuda_create(&rm.w, &o, &err);
    if (be && esc) be = backend_escalate_open(be, &rm.w, &o, 1.0, &err);
    backend_worker *w = be ? be->worker_create(be, &err) : NULL;
    if (!w || be->forward(be, w, &bb.b, logits, act, &err)) {
      fprintf(stderr, "cuda: %s\n", err.message);
      return 1;
    }
    double max_dp = 0, max_da = 0, max_dl = 0, p[16], q[16];
    int same = 0;
    for (int r = 0; r < rows; r++) {
      int m0 = bb.b.marker_start[r], k = bb.b.marker_start[r + 1] - m0, a = 0, b = 0;
      softmax(rl + m0, k, p);
      softmax(logits + m0, k, q);
      for (int i = 0; i < k; i++) {
        double dp = fabs(p[i] - q[i]), dl = fabs((double)rl[m0 + i] - logits[m0 + i]);
        max_dp = isnan(dp) || dp > max_dp ? (isnan(dp) ? INFINITY : dp) : max_dp;
        max_dl = isnan(dl) || dl > max_dl ? (isnan(dl) ? INFINITY : dl) : max_dl;
        if (p[i] > p[a]) a = i;
        if (q[i] > q[b]) b = i;
      }
      same += a == b;
      softmax(ra + r * n_act, n_act, p);
      softmax(act + r * n_act, n_act, q);
      for (int i = 0; i < n_act; i++) max_da = fabs(p[i] - q[i]) > max_da ? fabs(p[i] - q[i]) : max_da;
    }
    /* the targets: bf16 0.02, fp16 0.005; fp8 is reported against bf16's */
    const double bound = prec == PREC_FP16 ? 0.005 : 0.02;
    int ok = max_dp <= bound && max_da <= bound && same * 100 >= rows * 99;
    fails += !ok;
    long seen = 0, rerun = 0;
    if (esc) backend_escalate_stats(be, &seen, &rerun);
    printf("ACC %s %s%s vs cpu-ref fp32: questions %d, argmax same %d, max |dp| %.5f, max |d act p| %.5f, "
           "max |d logit| %.4f -> %s",
           argv[2], backend_precision_name(prec), esc ? "+escalate" : "", rows, same, max_dp, max_da, max_dl, ok ? "ok" : "FAIL");
    if (esc) printf(" (re-ran %ld of %ld rows in bf16)", rerun, seen);
    printf("\n");
    /* each row again as its own pass: a one-row pass takes the small-pass paths (on Hopper the
     * Wqkv GEMM with RoPE in its epilogue, programmatic launches), which the batch above does not */
    if (pi < 2) {
      double a_dp = 0;
      int a_same = 0, a_clear = 0, a_clear_same = 0;
      for (int r = 0; r < rows; r++) {
        int32_t rs1[2], ms1[2];
        packed_batch one = pb_view_rows(&bb.b, r, r + 1, rs1, ms1);
        float lg[16], ac[16];
        const int k = ms1[1];
        if (k > 16 || be->forward(be, w, &one, lg, ac, &err)) {
          fprintf(stderr, "cuda (row %d alone): %s\n", r, k > 16 ? "too many markers" : err.message);
          return 1;
        }
        const int m0 = bb.b.marker_start[r];
        int a = 0, b = 0;
        softmax(rl + m0, k, p);
        softmax(lg, k, q);
        for (int i = 0; i < k; i++) {
          double dp = fabs(p[i] - q[i]);
          a_dp = isnan(dp) || dp > a_dp ? (isnan(dp) ? INFINITY : dp) : a_dp;
          if (p[i] > p[a]) a = i;
          if (q[i] > q[b]) b = i;
        }
        a_same += a == b;
        /* the argmax must agree where the reference's top two are clearly apart (random
         * full-size models have near ties, which any rounding can swap) */
        double p1 = 0, p2 = 0;
        for (int i = 0; i < k; i++) {
          if (p[i] > p1) {
            p2 = p1;
            p1 = p[i];
          } else if (p[i] > p2) {
            p2 = p[i];
          }
        }
        if (p1 - p2 > 2 * bound) a_clear++, a_clear_same += a == b;
      }
      const int a_ok = a_dp <= bound && a_clear_same == a_clear;
      fails += !a_ok;
      printf("ACC %s %s, each row alone, vs cpu-ref fp32: questions %d, argmax same %d (%d of %d clear ones), max |dp| "
             "%.5f -> %s\n",
             argv[2], backend_precision_name(prec), rows, a_same, a_clear_same, a_clear, a_dp, a_ok ? "ok" : "FAIL");
    }
    /* device bytes of the weights: one backend, or fp8's and its bf16 pass's (which reads fp8's
     * embeddings, norms, head and tail instead of holding them: backend_cuda_create_shared) */
    const backend *low = be, *exact = NULL;
    if (esc) backend_escalate_parts(be, &low, &exact);
    size_t w_low = 0, w_exact = 0, borrowed = 0;
    backend_cuda_memory(low, NULL, &w_low, NULL);
    if (exact) {
      backend_cuda_memory(exact, NULL, &w_exact, NULL);
      backend_cuda_weights_shared(exact, low, &borrowed);
    }
    printf("MEM %s %s%s device weight bytes %zu", argv[2], backend_precision_name(prec), esc ? "+escalate" : "",
           w_low + w_exact);
    if (exact) printf(" (fp8 %zu + bf16 pass %zu, which reads %zu of fp8's)", w_low, w_exact, borrowed);
    printf("\n");
    be->worker_destroy(be, w);
    be->destroy(be);
  }
  return fails ? 1 : 0;
}
