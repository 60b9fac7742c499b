/*
 * test_cuda_geglu.c: the fused Wi + GeGLU GEMM (src/backend/cuda/gemm_sm90.cu) against a plain
 * fp32 kernel, every variant and activation (hidden_activation kinds), bf16 and fp16, at shapes with partial tiles in every dimension
 * (rows not a multiple of 128, K not of 64, 2I not of the tile width) and the full-size ones, and
 * the variants against each other bit for bit: the forward picks one by pass size, so a row's
 * answer would otherwise depend on the batch it came in; the same for the Wqkv GEMM with RoPE in
 * its epilogue.
 * Exit 77 (skipped) without a device that runs it.
 */
#include <stdio.h>

#include "cuda_backend.h"
#include "model/weights.h"

int main(void) {
  int n = 0;
  if (!backend_cuda_available(&n)) {
    printf("no CUDA device: skipped\n");
    return 77;
  }
  /* M, I, K */
  static const int shapes[][3] = {{1, 64, 48},     {16, 96, 64},     {200, 192, 128}, {300, 256, 192},
                                  {129, 2624, 1024}, {2048, 2624, 1024}, {1000, 1152, 768}};
  static const char *const act_names[ENC_ACT_FUSED_END] = {"gelu", "gelu_tanh", "quick_gelu", "silu", "relu"};
  int fails = 0, checks = 0;
  /* the exact GELU at every shape; the other activations at two (their epilogue differs only there) */
  for (int act = 0; act < ENC_ACT_FUSED_END; act++) /* the kinds the fused epilogue has */
  for (int h = 0; h < 2; h++)
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
      if (act != ENC_ACT_GELU && i != 2 && i != 6) continue;
      double rel = -1;
      int same = 0;
      int rc = backend_cuda_geglu_selftest(h, shapes[i][0], shapes[i][1], shapes[i][2], act, &rel, &same);
      if (rc == 1) {
        printf("the fused GeGLU GEMM does not run on this device (sm_90 only): skipped\n");
        return 77;
      }
      /* 16-bit output rounding (2^-8 / 2^-11 relative) plus fp32 sum-order differences */
      const double bound = h ? 2e-3 : 1e-2;
      const int ok = rc == 0 && rel <= bound && same;
      checks++;
      fails += !ok;
      printf("%s %s %s M %d I %d K %d: max |err| / max |ref| %.2e (bound %.0e), variants %s\n", ok ? "ok  " : "FAIL",
             h ? "fp16" : "bf16", act_names[act], shapes[i][0], shapes[i][1], shapes[i][2], rel, bound,
             same ? "bit-identical" : "DIFFER");
    }
  /* the Wqkv GEMM with RoPE: M, heads, K (N = 3 x 64 heads: tiles of 128 and 256 end mid-matrix) */
  static const int qshapes[][3] = {{1, 2, 48}, {77, 3, 64}, {300, 5, 200}, {129, 16, 1024}, {2048, 16, 1024},
                                   {1000, 12, 768}};
  for (int h = 0; h < 2; h++)
    for (size_t i = 0; i < sizeof qshapes / sizeof qshapes[0]; i++) {
      double rel = -1;
      int same = 0;
      int rc = backend_cuda_qkv_rope_selftest(h, qshapes[i][0], qshapes[i][1], qshapes[i][2], &rel, &same);
      const double bound = h ? 2e-3 : 1e-2;
      const int ok = rc == 0 && rel <= bound && same;
      checks++;
      fails += !ok;
      printf("%s %s Wqkv+RoPE M %d heads %d K %d: max |err| / max |ref| %.2e (bound %.0e), variants %s\n",
             ok ? "ok  " : "FAIL", h ? "fp16" : "bf16", qshapes[i][0], qshapes[i][1], qshapes[i][2], rel, bound,
             same ? "bit-identical" : "DIFFER");
    }
  printf("%d checks, %d failed\n", checks, fails);
  return fails ? 1 : 0;
}
