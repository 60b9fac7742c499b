/*
 * test_cpu_forward.c: the fast CPU backend ("cpu") against the fp32 reference backend ("cpu-ref")
 * on random in-memory models, for every precision and every kernel table this CPU runs:
 *   - fp32 logits within 1e-3 (relative) of the reference; bf16 / int8 option probabilities
 *     within 0.02 / 0.04, act probabilities too;
 *   - batch invariance: each row alone gives bit-identical logits to the same row in a batch;
 *   - thread invariance: 1 and 3 threads give bit-identical results;
 *   - bad batches are refused with an error naming the row.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "backend/backend.h"
#include "backend/cpu/cpu_model.h"
#include "backend/cpu/kernels.h"
#include "model/batch.h"
#include "model/escalate.h"
#include "random_model.h"
#include "ckpt_weights.h"

/* the model's builder (model/batch.h); its arrays are read directly below */
typedef packed_batch_buf batch_buf;

static uint64_t trng = 99;
static char caller_isa[32]; /* LAYA_CPU_ISA as the test was started with ("" = unset) */
static int irand(int n) { return (int)(rm_next(&trng) % (uint64_t)n); }

static void make_batch(batch_buf *bb, const int *lens, int n_rows, int vocab) {
  long T = 0;
  for (int r = 0; r < n_rows; r++) T += lens[r];
  CHECK(pb_reserve(bb, n_rows, T, 6L * n_rows, NULL) == 0);
  for (int r = 0; r < n_rows; r++) {
    int qt = irand(3), k = 1 + irand(lens[r] < 6 ? lens[r] : 6);
    pb_row row = pb_add_row(bb, qt, lens[r], k);
    for (int i = 0; i < k; i++) row.markers[i] = irand(lens[r]);
    for (int i = 0; i < lens[r]; i++) row.tokens[i] = irand(vocab);
  }
  pb_finish(bb);
}

/* Row r of bb as a batch of its own. */
static void single_row(batch_buf *out, const batch_buf *bb, int r) {
  int32_t row = r;
  CHECK(pb_select(out, &bb->b, &row, 1, NULL) == 0);
}

static int run(backend *be, const packed_batch *b, float *logits, float *act) {
  laya_error err;
  backend_worker *w = be->worker_create(be, &err);
  int rc = be->forward(be, w, b, logits, act, &err);
  if (rc) fprintf(stderr, "forward failed: %s\n", err.message);
  be->worker_destroy(be, w);
  return rc;
}

/* Max |dp| over every row's option softmax, and the argmax agreement. */
static double max_dp(const batch_buf *bb, const float *a, const float *b, int *argmax_same) {
  double worst = 0;
  int same = 0;
  for (int r = 0; r < bb->b.n_rows; r++) {
    int m0 = bb->marker_start[r], k = bb->marker_start[r + 1] - m0;
    double ma = -1e30, mb = -1e30, sa = 0, sb = 0;
    for (int i = 0; i < k; i++) {
      ma = fmax(ma, a[m0 + i]);
      mb = fmax(mb, b[m0 + i]);
    }
    for (int i = 0; i < k; i++) {
      sa += exp(a[m0 + i] - ma);
      sb += exp(b[m0 + i] - mb);
    }
    int ia = 0, ib = 0;
    for (int i = 0; i < k; i++) {
      double d = fabs(exp(a[m0 + i] - ma) / sa - exp(b[m0 + i] - mb) / sb);
      if (!(d <= worst)) worst = d;
      if (a[m0 + i] > a[m0 + ia]) ia = i;
      if (b[m0 + i] > b[m0 + ib]) ib = i;
    }
    same += ia == ib;
  }
  if (argmax_same) *argmax_same = same;
  return worst;
}

static double act_dp(int rows, int n_act, const float *a, const float *b) {
  double worst = 0;
  for (int r = 0; r < rows; r++) {
    double ma = -1e30, mb = -1e30, sa = 0, sb = 0;
    for (int i = 0; i < n_act; i++) {
      ma = fmax(ma, a[r * n_act + i]);
      mb = fmax(mb, b[r * n_act + i]);
    }
    for (int i = 0; i < n_act; i++) {
      sa += exp(a[r * n_act + i] - ma);
      sb += exp(b[r * n_act + i] - mb);
    }
    for (int i = 0; i < n_act; i++) {
      double d = fabs(exp(a[r * n_act + i] - ma) / sa - exp(b[r * n_act + i] - mb) / sb);
      if (!(d <= worst)) worst = d;
    }
  }
  return worst;
}

static void test_model(const char *label, const encoder_config *c, const int *lens, int n_rows) {
  random_model rm;
  CHECK(random_model_init(&rm, c, 2, 2, DT_BF16, 7) == 0);
  laya_error err;
  backend_options ro = {PREC_FP32, 1, 0, NULL};
  backend *ref = backend_cpu_ref_create(&rm.w, &ro, &err);
  CHECK(ref != NULL);
  if (!ref) return;
  batch_buf *bb = calloc(1, sizeof *bb), *one = calloc(1, sizeof *one);
  make_batch(bb, lens, n_rows, c->vocab);
  int Mk = bb->marker_start[n_rows];
  float *lr = malloc(sizeof(float) * Mk), *ar = malloc(sizeof(float) * n_rows * 2);
  CHECK(run(ref, &bb->b, lr, ar) == 0);

  /* amx: AMX CPUs only; amx-emu (every machine): amx's fp32 GEMM on emulated tiles, with its weight
   * parts made at create and each GEMM's rows split in a pool step before its tasks (cpu.c) */
  /* avx512-dot / avx512-fma: the AVX-512 table with its bf16 GEMM on vdpbf16ps and on FMA (every
   * AVX-512 BF16 CPU runs both; "avx512" picks one by vendor, kernels_select.c) */
  static const char *isas[] = {"scalar", "avx2", "avx512-dot", "avx512-fma", "amx", "amx-emu"};
  enum { N_ISAS = 6, AMX_EMU = 5 };
  static const backend_precision precs[] = {PREC_FP32, PREC_BF16, PREC_INT8};
  static const double bound[] = {0.0, 0.02, 0.04};
  for (int ii = 0; ii < N_ISAS; ii++) {
    const cpu_kernels *kt = cpu_kernels_by_name(isas[ii]);
    if (!kt) continue;
    /* the scalar oracle and the emulated tiles are slow: they run the small model only */
    if ((ii == 0 || ii == AMX_EMU) && c->hidden > 128) continue;
    setenv("LAYA_CPU_ISA", isas[ii], 1);
    for (int pi = 0; pi < (ii == AMX_EMU ? 1 : 3); pi++) { /* amx-emu: its bf16 / int8 are the scalar table's */
      backend_options o = {precs[pi], 2, 0, NULL};
      backend *be = backend_cpu_create(&rm.w, &o, &err);
      CHECK(be != NULL);
      if (!be) {
        fprintf(stderr, "%s\n", err.message);
        continue;
      }
      CHECK(!strcmp(backend_cpu_isa(be), kt->name));
      float *l = malloc(sizeof(float) * Mk), *a = malloc(sizeof(float) * n_rows * 2);
      CHECK(run(be, &bb->b, l, a) == 0);
      int same = 0;
      double dp = max_dp(bb, l, lr, &same), adp = act_dp(n_rows, 2, a, ar);
      if (precs[pi] == PREC_FP32) {
        double worst = 0;
        for (int i = 0; i < Mk; i++) worst = fmax(worst, fabs(l[i] - lr[i]) / (fabs(lr[i]) + 1.0));
        for (int i = 0; i < n_rows * 2; i++) worst = fmax(worst, fabs(a[i] - ar[i]) / (fabs(ar[i]) + 1.0));
        printf("%s %s fp32: max rel logit diff %.3g\n", label, isas[ii], worst);
        CHECK(worst < 1e-3);
      } else {
        printf("%s %s %s: max |dp| %.4f (act %.4f), argmax %d/%d\n", label, isas[ii],
               precs[pi] == PREC_BF16 ? "bf16" : "int8", dp, adp, same, n_rows);
        CHECK(dp <= bound[pi]);
        CHECK(adp <= bound[pi]);
      }
      /* batch invariance, bit for bit (scalar tables are slow: check two rows) */
      int nr = ii == 0 || ii == AMX_EMU ? 2 : n_rows;
      for (int r = 0; r < nr; r++) {
        single_row(one, bb, r);
        int k = one->marker_start[1];
        float l1[64], a1[2];
        CHECK(run(be, &one->b, l1, a1) == 0);
        CHECK(memcmp(l1, l + bb->marker_start[r], sizeof(float) * k) == 0);
        CHECK(memcmp(a1, a + 2 * r, sizeof a1) == 0);
      }
      /* thread invariance */
      if (ii >= 2 || (ii == 1 && !cpu_kernels_by_name("avx512"))) { /* amx-emu: 1 and 3 threads split alike */
        backend_options o3 = {precs[pi], 3, 0, NULL}, o1 = {precs[pi], 1, 0, NULL};
        backend *b3 = backend_cpu_create(&rm.w, &o3, &err), *b1 = backend_cpu_create(&rm.w, &o1, &err);
        float *l3 = malloc(sizeof(float) * Mk), *a3 = malloc(sizeof(float) * n_rows * 2);
        CHECK(b1 && b3);
        CHECK(run(b3, &bb->b, l3, a3) == 0);
        CHECK(memcmp(l3, l, sizeof(float) * Mk) == 0);
        CHECK(run(b1, &bb->b, l3, a3) == 0);
        CHECK(memcmp(l3, l, sizeof(float) * Mk) == 0);
        CHECK(memcmp(a3, a, sizeof(float) * n_rows * 2) == 0);
        free(l3), free(a3);
        b3->destroy(b3);
        b1->destroy(b1);
      }
      free(l), free(a);
      be->destroy(be);
    }
  }
  /* back to the caller's table choice (cpu/forward_avx2 runs the checkpoint part on AVX2) */
  if (caller_isa[0]) setenv("LAYA_CPU_ISA", caller_isa, 1);
  else unsetenv("LAYA_CPU_ISA");
  pb_free(bb), pb_free(one);
  free(lr), free(ar), free(bb), free(one);
  ref->destroy(ref);
  random_model_free(&rm);
}

static void test_errors(void) {
  encoder_config c = random_small_config();
  random_model rm;
  CHECK(random_model_init(&rm, &c, 1, 2, DT_F32, 3) == 0);
  laya_error err;
  backend_options o = {PREC_BF16, 1, 0, NULL};
  backend *be = backend_cpu_create(&rm.w, &o, &err);
  CHECK(be != NULL);
  batch_buf *bb = calloc(1, sizeof *bb);
  int lens[2] = {5, 9};
  make_batch(bb, lens, 2, c.vocab);
  float l[64], a[4];
  backend_worker *w = be->worker_create(be, &err);
  bb->markers[bb->marker_start[1]] = 9; /* row 1 has 9 tokens */
  CHECK(be->forward(be, w, &bb->b, l, a, &err) != 0);
  CHECK(strstr(err.message, "row 1 marker 0 at position 9") != NULL);
  bb->markers[bb->marker_start[1]] = 0;
  bb->tokens[3] = c.vocab;
  CHECK(be->forward(be, w, &bb->b, l, a, &err) != 0);
  CHECK(strstr(err.message, "token 3") != NULL);
  be->worker_destroy(be, w);
  be->destroy(be);
  o.precision = PREC_FP16;
  CHECK(backend_cpu_create(&rm.w, &o, &err) == NULL);
  CHECK(strstr(err.message, "fp16") != NULL);
  pb_free(bb);
  free(bb);
  random_model_free(&rm);
}

/* LAYA_CPU_GEMM_TASKS (a research switch: how a GEMM is cut into tasks) changes no result: each
 * output element is one task's, summed in the kernel's fixed k order, whatever the cut; a value
 * that is not ROWS,PER_THREAD is refused naming the variable. */
static void test_gemm_tasks(void) {
  encoder_config c = random_small_config();
  c.hidden = 192, c.n_heads = 3, c.head_dim = 64, c.intermediate = 200, c.n_layers = 2, c.local_window = 128;
  random_model rm;
  CHECK(random_model_init(&rm, &c, 1, 2, DT_F32, 5) == 0);
  batch_buf *bb = calloc(1, sizeof *bb);
  int lens[] = {129, 300, 66}; /* 495 tokens: several row chunks at the default 192 rows */
  make_batch(bb, lens, 3, c.vocab);
  const int nl = bb->marker_start[3];
  float *l0 = malloc(sizeof(float) * (size_t)nl), *l1 = malloc(sizeof(float) * (size_t)nl), a0[16], a1[16];
  static const backend_precision precs[] = {PREC_FP32, PREC_BF16, PREC_INT8};
  laya_error err;
  for (int pi = 0; pi < 3; pi++) {
    backend_options o = {precs[pi], 3, 0, NULL};
    backend *be = backend_cpu_create(&rm.w, &o, &err);
    CHECK(be && run(be, &bb->b, l0, a0) == 0);
    if (be) be->destroy(be);
    static const char *shapes[] = {"32,1", "1024,16", "64,3"};
    for (int si = 0; si < 3; si++) {
      setenv("LAYA_CPU_GEMM_TASKS", shapes[si], 1);
      backend *b2 = backend_cpu_create(&rm.w, &o, &err);
      unsetenv("LAYA_CPU_GEMM_TASKS");
      CHECK(b2 && run(b2, &bb->b, l1, a1) == 0);
      CHECK(memcmp(l0, l1, sizeof(float) * (size_t)nl) == 0);
      CHECK(memcmp(a0, a1, sizeof(float) * (size_t)rm.w.n_act * 3) == 0);
      if (b2) b2->destroy(b2);
    }
  }
  static const char *bad[] = {"abc", "16,2", "64", "64,2x", "64,0", "64,100"};
  for (int i = 0; i < 6; i++) {
    setenv("LAYA_CPU_GEMM_TASKS", bad[i], 1);
    backend_options o = {PREC_FP32, 1, 0, NULL};
    backend *b2 = backend_cpu_create(&rm.w, &o, &err);
    unsetenv("LAYA_CPU_GEMM_TASKS");
    CHECK(b2 == NULL);
    if (b2) b2->destroy(b2);
    else CHECK(strstr(err.message, "LAYA_CPU_GEMM_TASKS") != NULL && strstr(err.message, bad[i]) != NULL);
  }
  free(l0), free(l1);
  pb_free(bb);
  free(bb);
  random_model_free(&rm);
}

/* The tiny fixture checkpoints (tests/fixtures/ckpt/NAME, written by tools/ref from the real laya):
 * the fast fp32 path matches cpu-ref to float noise (1e-4, same top options); bf16 and int8 logit
 * errors stay within 2x (+ fp32 noise) those of an fp32 model emulating the same roundings on the
 * same kernel table (LAYA_CPU_STUDY; tests/cpu/test_cpu_accuracy.c says why that holds on every
 * ISA), and their option probabilities within what that logit bound allows. Their logits span ~40,
 * so small logit errors move near-tied options: top options are not required to stay. */
static double max_logit_err(const float *l, const float *lr, int n) {
  double e = 0;
  for (int i = 0; i < n; i++) e = isnan(l[i]) ? INFINITY : fmax(e, fabs((double)l[i] - lr[i]));
  return e;
}
static void test_checkpoint(const char *dir) {
  laya_error err;
  ckpt_weights cw;
  if (ckpt_weights_open(&cw, dir, &err)) {
    fprintf(stderr, "%s: %s\n", dir, err.message);
    CHECK(0);
    return;
  }
  int lens[] = {60, 1, 129, 200, 17, 90, 64, 65};
  batch_buf *bb = calloc(1, sizeof *bb);
  make_batch(bb, lens, 8, cw.w.enc.vocab);
  float lr[64], ar[16], l[64], a[16];
  backend_options o = {PREC_FP32, 2, 0, NULL};
  backend *ref = backend_cpu_ref_create(&cw.w, &o, &err);
  CHECK(ref && run(ref, &bb->b, lr, ar) == 0);
  static const backend_precision precs[] = {PREC_FP32, PREC_BF16, PREC_INT8};
  int Mk = bb->marker_start[8], na = 8 * cw.w.n_act;
  for (int pi = 0; pi < 3; pi++) {
    o.precision = precs[pi];
    backend *be = backend_cpu_create(&cw.w, &o, &err);
    CHECK(be && run(be, &bb->b, l, a) == 0);
    int same = 0;
    double dp = max_dp(bb, l, lr, &same), adp = act_dp(8, cw.w.n_act, a, ar);
    printf("%s %s: max |dp| %.3g (act %.3g), argmax %d/8\n", dir, pi == 0 ? "fp32" : pi == 1 ? "bf16" : "int8", dp, adp, same);
    if (pi == 0) {
      CHECK(dp <= 1e-4 && adp <= 1e-4);
      CHECK(same == 8);
    } else if (be) {
      char study[160];
      snprintf(study, sizeof study, "%s%s",
               pi == 1 ? "wround,a:qkv,a:o,a:i,a:om,h:qkv,h:o,h:1,h:2" : "w8,a8,a:qkv,a:o,a:i,a:om,h:qkv,h:o,h:1,h:2,head16",
               backend_cpu_model(be)->attn_bf16 ? ",attn" : "");
      setenv("LAYA_CPU_STUDY", study, 1);
      backend_options eo = {PREC_FP32, 2, 0, NULL};
      backend *em = backend_cpu_create(&cw.w, &eo, &err);
      unsetenv("LAYA_CPU_STUDY");
      float le[64], ae[16];
      CHECK(em && run(em, &bb->b, le, ae) == 0);
      double ex = max_logit_err(l, lr, Mk), ee = max_logit_err(le, lr, Mk);
      double ax = max_logit_err(a, ar, na), ae_ = max_logit_err(ae, ar, na);
      printf("  logit error %.4g (emulation %.4g), act %.4g (emulation %.4g)\n", ex, ee, ax, ae_);
      CHECK(ee > 0);
      CHECK(ex <= 2 * ee + 1e-4);
      CHECK(ax <= 2 * ae_ + 1e-4);
      double pb = 0;
      for (int r = 0; r < 8; r++) {
        int m0 = bb->marker_start[r], k = bb->marker_start[r + 1] - m0;
        pb = fmax(pb, escalate_prob_bound(lr + m0, k, 2 * ee + 1e-4, 1.0));
      }
      CHECK(dp <= pb + 1e-6);
      if (em) em->destroy(em);
    }
    if (be) be->destroy(be);
  }
  if (ref) ref->destroy(ref);
  pb_free(bb);
  free(bb);
  ckpt_weights_close(&cw);
}

int main(int argc, char **argv) {
  if (getenv("LAYA_CPU_ISA")) snprintf(caller_isa, sizeof caller_isa, "%s", getenv("LAYA_CPU_ISA"));
  for (int i = 1; i < argc; i++) test_checkpoint(argv[i]);

  encoder_config small = random_small_config(); /* dh 32, window 8, d not a multiple of 32 * 3 */
  int lens_small[] = {1, 7, 20, 65, 33, 16, 2};
  test_model("small", &small, lens_small, 7);

  encoder_config mid = random_small_config(); /* ModernBERT-like head size 64 and +-64 window */
  mid.hidden = 192;
  mid.n_heads = 3;
  mid.head_dim = 64;
  mid.intermediate = 200; /* not a multiple of 16 */
  mid.n_layers = 3;
  mid.local_window = 128;
  int lens_mid[] = {129, 1, 300, 66, 64, 17};
  test_model("mid", &mid, lens_mid, 6);

  test_errors();
  test_gemm_tasks();
  return check_summary("cpu/forward");
}
