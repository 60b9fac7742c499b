/*
 * test_act_values.c: the GeGLU activation of every hidden_activation laya.c runs against what torch
 * computed for the same fp32 inputs (tests/fixtures/act/values.json, tools/ref/make_act_values.py:
 * each transformers ACT2FN key's module on the CPU in fp32), on the reference backend (ref_act) and
 * through each CPU kernel table's GeGLU epilogue (scalar, AVX2, AVX-512, AMX where the CPU has them,
 * the AMX fp32 GEMM on emulated tiles everywhere). The inputs cover every clip point (gelu_10, relu6,
 * hardswish), laplace's mu, exp's over- and underflow and +-0.
 *
 * A table sees the value through a GEMM that passes it exactly: k = 2, the activation row
 * (v, 1), the input half's weights (1, 0) and the gate's (0, 1), so each output is act(v) * 1.
 *
 * The bound on |ours - torch| (tests/act_bound.h, shared with cuda/act_values): 4 ulps of torch's
 * value, plus 8 fp32 epsilons of the largest term the formula adds or subtracts where it cancels
 * (|x| for x-times-something forms: the GELUs, mish, silu, hardswish; 1 for laplace's
 * 0.5 (1 + erf)): torch's kernels and ours (libm or the tables' own exp / erf) are each within a
 * few ulps of those terms, not of a cancelled result; and, for sqrtsoftplus, a subnormal
 * softplus's few FLT_TRUE_MIN through the square root.
 * Also: every ACT2FN key of the fixture is either run here or refused at load (the learnable ones).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../act_bound.h"
#include "../check.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/ref_ops.h"
#include "core/arena.h"
#include "core/fsutil.h"
#include "core/json.h"
#include "model/config.h"

typedef struct wrow {
  int k;
  int I;
} wrow;
/* Wi rows: the input half reads column 0, the gate half column 1 */
static void get_row(void *ctx, int r, float *out) {
  const wrow *w = ctx;
  out[0] = r < w->I ? 1.0f : 0.0f;
  out[1] = r < w->I ? 0.0f : 1.0f;
}

/* act(x[m]) for every m through table kt's fp32 GeGLU; out[m] from output column (m % I) */
static void table_act(const cpu_kernels *kt, enc_act act, const float *x, int M, float *out) {
  const int I = 16, n = 2 * I, k = 2, kp = pack_kpad(k), np = pack_panels(n, 1);
  void *data = aligned_alloc(64, (pack_data_bytes(WF_F32, n, k, 1) + 63) & ~(size_t)63);
  float row[2];
  wrow src = {k, I};
  pack_matrix(WF_F32, n, k, 1, get_row, &src, data, NULL, NULL, row);
  packed_matrix pm = {n, k, np, kp, 1, WF_F32, data, NULL, NULL, NULL, act, NULL, 0};
  float *a = calloc((size_t)M * kp, sizeof(float)), *y = malloc(sizeof(float) * (size_t)M * I);
  for (int m = 0; m < M; m++) {
    a[(size_t)m * kp] = x[m];
    a[(size_t)m * kp + 1] = 1.0f;
  }
  gemm_input in = {a, kp, NULL, 0, NULL, 0, 0};
  gemm_epilogue e = {EPI_GEGLU, 0, y, NULL, I};
  kt->gemm_f32(&in, &pm, 0, M, 0, np, &e);
  for (int m = 0; m < M; m++) out[m] = y[(size_t)m * I + m % I];
  free(data), free(a), free(y);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_act_values FIXTURES_DIR\n");
    return 2;
  }
  char *text = NULL;
  arena ar;
  const json_value *doc = act_values_load(argv[1], &text, &ar);
  CHECK(doc != NULL);
  if (!doc) return check_summary("cpu/act_values");
  const json_value *jin = json_get(doc, "inputs"), *jout = json_get(doc, "outputs"), *jl = json_get(doc, "learnable");
  CHECK(jin && jin->type == JSON_ARRAY && jout && jout->type == JSON_OBJECT && jl && jl->type == JSON_OBJECT);
  const int M = (int)jin->n;
  float *x = malloc(sizeof(float) * M), *want = malloc(sizeof(float) * M), *got = malloc(sizeof(float) * M);
  for (int m = 0; m < M; m++) x[m] = (float)jin->items[m].d;

  const cpu_kernels *tabs[5];
  int nt = 0;
  tabs[nt++] = &cpu_kernels_scalar;
  static const char *const names[] = {"avx2", "avx512", "amx", "amx-emu"};
  for (int i = 0; i < 4; i++) {
    const cpu_kernels *k = cpu_kernels_by_name(names[i]);
    if (k) tabs[nt++] = k;
  }
  printf("tables:");
  for (int t = 0; t < nt; t++) printf(" %s", tabs[t]->name);
  printf("; %d inputs\n", M);

  int kinds_seen[ENC_ACT_COUNT] = {0};
  for (uint32_t i = 0; i < jout->n; i++) {
    const char *key = jout->members[i].key;
    const json_value *ys = &jout->members[i].value;
    enc_act act;
    if (enc_act_parse(key, &act)) {
      fprintf(stderr, "ACT2FN key %s (parameter-free) is not run by laya.c\n", key);
      CHECK(0);
      continue;
    }
    kinds_seen[act] = 1;
    CHECK(ys->type == JSON_ARRAY && (int)ys->n == M);
    if (ys->type != JSON_ARRAY || (int)ys->n != M) continue;
    for (int m = 0; m < M; m++) want[m] = (float)ys->items[m].d;
    /* the reference backend */
    double worst = 0;
    int bad = 0;
    for (int m = 0; m < M; m++) {
      float y = ref_act(act, x[m]);
      if (!act_within(act, x[m], y, want[m], &worst)) {
        if (bad++ < 4) fprintf(stderr, "cpu-ref %s(%.9g) = %.9g, torch %.9g\n", key, x[m], y, want[m]);
      }
    }
    CHECK(bad == 0);
    printf("%-18s cpu-ref worst %.2f of the bound", key, worst);
    for (int t = 0; t < nt; t++) {
      worst = 0;
      bad = 0;
      table_act(tabs[t], act, x, M, got);
      for (int m = 0; m < M; m++)
        if (!act_within(act, x[m], got[m], want[m], &worst)) {
          if (bad++ < 4)
            fprintf(stderr, "%s %s(%.9g) = %.9g, torch %.9g\n", tabs[t]->name, key, x[m], got[m], want[m]);
        }
      CHECK(bad == 0);
      printf(", %s %.2f", tabs[t]->name, worst);
    }
    printf("\n");
  }
  /* every kind laya.c has is some ACT2FN key of this transformers */
  for (int k = 0; k < ENC_ACT_COUNT; k++) {
    if (!kinds_seen[k]) fprintf(stderr, "kind %s has no torch values\n", enc_act_name((enc_act)k));
    CHECK(kinds_seen[k]);
  }
  /* the keys with learnable state are refused at load, naming them */
  for (uint32_t i = 0; i < jl->n; i++) {
    enc_act act;
    CHECK(enc_act_parse(jl->members[i].key, &act) != 0);
  }
  free(x), free(want), free(got), free(text);
  arena_free(&ar);
  return check_summary("cpu/act_values");
}
