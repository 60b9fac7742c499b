/* bench_nonfinite: cost of the load-time NaN/Inf scan (st_count_nonfinite) over as many weights as
 * ModernBERT-large's Laya checkpoint holds (421M), in BF16 and F32, against converting the same
 * elements to fp32 (tensor_to_f32, the least a backend does when it packs them). Not a test:
 * BENCHMARKS.md, "Load-time NaN/Inf scan".
 *   bench_nonfinite [MILLIONS_OF_ELEMENTS=421] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/safetensors.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  long long n = (argc > 1 ? atoll(argv[1]) : 421) * 1000000LL;
  const int64_t chunk = 1 << 20; /* converted in 1M-element pieces, as a packer would */
  float *out = malloc(sizeof(float) * (size_t)chunk);
  for (int dt = 0; dt < 2; dt++) {
    size_t es = dt == 0 ? 2 : 4;
    unsigned char *buf = malloc((size_t)n * es);
    if (!buf || !out) return 1;
    for (long long i = 0; i < n; i++) { /* finite values, touched once so no page fault is timed */
      if (es == 2) ((unsigned short *)buf)[i] = (unsigned short)(0x3c00 + (i & 0xff));
      else ((float *)buf)[i] = (float)(i & 0xff) * 0.001f;
    }
    tensor t = {.name = "w", .dtype = dt == 0 ? DT_BF16 : DT_F32, .ndim = 1, .numel = n, .data = buf};
    t.shape[0] = n;
    double best_scan = 1e9, best_conv = 1e9;
    long long found = 0;
    for (int rep = 0; rep < 3; rep++) {
      double t0 = now();
      found += st_count_nonfinite(&t);
      double t1 = now();
      for (int64_t s = 0; s < n; s += chunk) tensor_to_f32(&t, s, n - s < chunk ? n - s : chunk, out);
      double t2 = now();
      if (t1 - t0 < best_scan) best_scan = t1 - t0;
      if (t2 - t1 < best_conv) best_conv = t2 - t1;
    }
    printf("%s: %lld elements (%.0f MB): scan %.3f s (%.1f GB/s), to-fp32 %.3f s, scan/convert %.2f%s\n",
           dt == 0 ? "BF16" : "F32", n, (double)n * (double)es / 1e6, best_scan,
           (double)n * (double)es / best_scan / 1e9, best_conv, best_scan / best_conv,
           found ? " (found non-finite?)" : "");
    free(buf);
  }
  free(out);
  return 0;
}
