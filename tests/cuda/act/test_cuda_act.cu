/*
 * test_cuda_act.cu: the CUDA GLU activations (src/backend/cuda/glu_act.cuh, which the GeGLU pass,
 * its fp8 form and the fused Hopper Wi epilogue apply) of every hidden_activation kind against
 * torch's fp32 values (tests/fixtures/act/values.json, tools/ref/make_act_values.py), element by
 * element on the device, to the bound cpu/act_values holds the CPU backends to (tests/act_bound.h).
 * The inputs cover every clip point (gelu_10, relu6, hardswish), which the parity fixtures'
 * forwards do not reach. Exit 77 (skipped) without a CUDA device.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

extern "C" {
#include "core/arena.h"
#include "core/fsutil.h"
#include "core/json.h"
#include "model/config.h"
}
#include "../../act_bound.h"
#include "glu_act.cuh"

template <int A> __global__ void act_kernel(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = glu_act<A>(x[i]);
}

/* the kernel of kind act (one instantiation per kind, as the backend has) */
template <int A> static void launch_kind(int act, const float *x, float *y, int n) {
  if (act == A) act_kernel<A><<<(n + 127) / 128, 128>>>(x, y, n);
  else if constexpr (A + 1 < ENC_ACT_COUNT) launch_kind<A + 1>(act, x, y, n);
}

int main(int argc, char **argv) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    printf("no CUDA device: skipped\n");
    return 77;
  }
  if (argc < 2) {
    fprintf(stderr, "usage: test_cuda_act FIXTURES_DIR\n");
    return 2;
  }
  char *text = NULL;
  arena ar;
  const json_value *doc = act_values_load(argv[1], &text, &ar);
  const json_value *jin = doc ? json_get(doc, "inputs") : NULL, *jout = doc ? json_get(doc, "outputs") : NULL;
  if (!jin || jin->type != JSON_ARRAY || !jout || jout->type != JSON_OBJECT) {
    fprintf(stderr, "%s/act/values.json: not the act values fixture\n", argv[1]);
    return 1;
  }
  const int n = (int)jin->n;
  float *x = (float *)malloc(sizeof(float) * n), *y = (float *)malloc(sizeof(float) * n);
  for (int i = 0; i < n; i++) x[i] = (float)jin->items[i].d;
  float *dx = NULL, *dy = NULL;
  if (cudaMalloc(&dx, sizeof(float) * n) != cudaSuccess || cudaMalloc(&dy, sizeof(float) * n) != cudaSuccess) {
    fprintf(stderr, "cudaMalloc failed\n");
    return 1;
  }
  cudaMemcpy(dx, x, sizeof(float) * n, cudaMemcpyHostToDevice);
  int fails = 0, checks = 0;
  int seen[ENC_ACT_COUNT] = {0};
  for (uint32_t k = 0; k < jout->n; k++) {
    const char *key = jout->members[k].key;
    const json_value *ys = &jout->members[k].value;
    enc_act act;
    checks++;
    if (enc_act_parse(key, &act) || ys->type != JSON_ARRAY || (int)ys->n != n) {
      fprintf(stderr, "FAIL %s: not a kind laya.c runs, or not %d values\n", key, n);
      fails++;
      continue;
    }
    seen[act] = 1;
    cudaMemset(dy, 0xff, sizeof(float) * n); /* NaN: a kind the launcher missed shows */
    launch_kind<0>((int)act, dx, dy, n);
    if (cudaMemcpy(y, dy, sizeof(float) * n, cudaMemcpyDeviceToHost) != cudaSuccess) {
      fprintf(stderr, "FAIL %s: %s\n", key, cudaGetErrorString(cudaGetLastError()));
      fails++;
      continue;
    }
    double worst = 0;
    int bad = 0;
    for (int i = 0; i < n; i++) {
      float want = (float)ys->items[i].d;
      if (!act_within(act, x[i], y[i], want, &worst) && bad++ < 4)
        fprintf(stderr, "%s(%.9g) = %.9g, torch %.9g\n", key, x[i], y[i], want);
    }
    fails += bad != 0;
    printf("%s %-18s worst %.2f of the bound\n", bad ? "FAIL" : "ok  ", key, worst);
  }
  for (int a = 0; a < ENC_ACT_COUNT; a++) {
    checks++;
    if (!seen[a]) {
      fprintf(stderr, "FAIL kind %s has no torch values\n", enc_act_name((enc_act)a));
      fails++;
    }
  }
  cudaFree(dx);
  cudaFree(dy);
  free(x), free(y), free(text);
  arena_free(&ar);
  printf("cuda/act_values: %d checks, %d failed\n", checks, fails);
  return fails ? 1 : 0;
}
