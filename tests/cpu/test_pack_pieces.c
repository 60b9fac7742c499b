/*
 * test_pack_pieces.c: a Linear weight packed in pieces of panels (pack_matrix_panels, as the "cpu"
 * backend's parallel packing does, one piece per task) gives exactly the bytes of one whole
 * pack_matrix, for fp32, bf16 and int8 (scales and column sums), plain and GeGLU, with padded
 * panels and k; and a piece writes nothing outside its own panels.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "backend/cpu/kernels.h"

typedef struct mat {
  int k;
  const float *w;
} mat;

static void row(void *ctx, int r, float *out) {
  const mat *m = ctx;
  memcpy(out, m->w + (size_t)r * m->k, sizeof(float) * (size_t)m->k);
}

int main(void) {
  static const cpu_wfmt fmts[] = {WF_F32, WF_BF16, WF_I8};
  static const int ns[] = {70, 96, 200}, ks[] = {37, 64};
  uint32_t s = 12345;
  for (int fi = 0; fi < 3; fi++)
    for (int geglu = 0; geglu < 2; geglu++)
      for (int ni = 0; ni < 3; ni++)
        for (int ki = 0; ki < 2; ki++) {
          const cpu_wfmt fmt = fmts[fi];
          const int n = ns[ni], k = ks[ki], np = pack_panels(n, geglu);
          float *w = malloc(sizeof(float) * (size_t)n * (size_t)k), *tmp = malloc(sizeof(float) * (size_t)k);
          for (int i = 0; i < n * k; i++) {
            s = s * 1664525u + 1013904223u;
            w[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * 0.2f;
          }
          mat m = {k, w};
          const size_t bytes = pack_data_bytes(fmt, n, k, geglu), cols = (size_t)np * CPU_NR;
          unsigned char *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
          float *sa = calloc(cols, sizeof(float)), *sb = malloc(cols * sizeof(float));
          int32_t *ca = calloc(cols, sizeof(int32_t)), *cb = malloc(cols * sizeof(int32_t));
          pack_matrix(fmt, n, k, geglu, row, &m, a, sa, ca, tmp);
          memset(b, 0xab, bytes); /* garbage: every piece must clear its own padding */
          memset(sb, 0xab, cols * sizeof(float));
          memset(cb, 0xab, cols * sizeof(int32_t));
          for (int p = 0, step = 1; p < np; p += step, step = step % 3 + 1) /* pieces of 1, 2, 3 panels */
            pack_matrix_panels(fmt, n, k, geglu, p, p + step < np ? p + step : np, row, &m, b, sb, cb, tmp);
          CHECK(memcmp(a, b, bytes) == 0);
          if (fmt == WF_I8) {
            CHECK(memcmp(sa, sb, cols * sizeof(float)) == 0);
            CHECK(memcmp(ca, cb, cols * sizeof(int32_t)) == 0);
          }
          /* one piece touches its panels only */
          if (np >= 3) {
            const size_t panel = bytes / (size_t)np;
            memset(c, 0xcd, bytes);
            pack_matrix_panels(fmt, n, k, geglu, 1, 2, row, &m, c, sb, cb, tmp);
            int outside = 0;
            for (size_t i = 0; i < bytes; i++)
              if ((i < panel || i >= 2 * panel) && c[i] != 0xcd) outside = 1;
            CHECK(!outside);
            CHECK(memcmp(c + panel, a + panel, panel) == 0);
          }
          free(w), free(tmp), free(a), free(b), free(c), free(sa), free(sb), free(ca), free(cb);
        }
  return check_summary("test_pack_pieces");
}
