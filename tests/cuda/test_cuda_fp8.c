/*
 * test_cuda_fp8.c: the fp8 mode's GEMM (per-token and per-channel E4M3 scales through cuBLASLt's
 * outer-vector scale mode) against an fp32 GEMM of the same dequantised operands, into a bf16
 * output and added into an fp32 residual, at shapes with ragged rows, K not a multiple of 128, and
 * the full-size ones. Also checks the error against the unquantised bf16 product (what fp8 costs).
 * Exit 77 (skipped) without FP8 tensor cores, or with a cuBLASLt that lacks per-row fp8 scales
 * (the backend refuses precision fp8 there).
 */
#include <stdio.h>

#include "cuda_backend.h"

int main(void) {
  if (!backend_cuda_available(NULL)) {
    printf("no CUDA device: skipped\n");
    return 77;
  }
  /* M, N, K */
  static const int shapes[][3] = {{1, 64, 64},       {17, 192, 64},     {300, 256, 192},   {129, 136, 1040},
                                  {512, 3072, 1024}, {2048, 5376, 1024}, {1000, 1024, 2688}};
  int fails = 0, checks = 0;
  for (int acc = 0; acc < 2; acc++)
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
      double rq = -1, r16 = -1;
      const int rc = backend_cuda_fp8_selftest(shapes[i][0], shapes[i][1], shapes[i][2], acc, &rq, &r16);
      if (rc == 1 || rc == 2) {
        printf("%s: skipped\n", rc == 1 ? "this device has no FP8 tensor cores" : "this cuBLASLt has no per-row fp8 scales");
        return 77;
      }
      /* against the dequantised product: bf16 output rounding (2^-8 relative) or fp32 sums in
       * another order; against the bf16 operands: E4M3's 2^-4 relative rounding of both operands,
       * averaged over K (measured 1-4e-2 of the largest output) */
      const double bq = acc ? 1e-3 : 8e-3, b16 = 0.08;
      const int ok = rc == 0 && rq <= bq && r16 <= b16;
      checks++;
      fails += !ok;
      printf("%s %s M %d N %d K %d: vs dequantised %.2e (bound %.0e), vs bf16 operands %.2e (bound %.2f)\n",
             ok ? "ok  " : "FAIL", acc ? "fp32 +=" : "bf16 = ", shapes[i][0], shapes[i][1], shapes[i][2], rq, bq, r16,
             b16);
    }
  printf("%d checks, %d failed\n", checks, fails);
  return fails ? 1 : 0;
}
