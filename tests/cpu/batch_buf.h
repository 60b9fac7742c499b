/*
 * batch_buf.h: an owned packed_batch for tests and benches. batch_buf_alloc sizes the buffers for
 * n rows of L[i] tokens and K[i] markers and fills row_start / marker_start; the caller fills
 * tokens, qtype and markers (each generator has its own distribution and seed order).
 */
#ifndef LAYA_TEST_BATCH_BUF_H
#define LAYA_TEST_BATCH_BUF_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"

typedef struct batch_buf {
  packed_batch b;
  int32_t *tokens, *row_start, *qtype, *marker_start, *markers;
} batch_buf;

static inline void batch_buf_alloc(batch_buf *bb, int n, const int *L, const int *K) {
  int T = 0, M = 0;
  for (int i = 0; i < n; i++) T += L[i], M += K[i];
  bb->tokens = malloc(sizeof(int32_t) * (size_t)(T ? T : 1));
  bb->row_start = malloc(sizeof(int32_t) * (size_t)(n + 1));
  bb->qtype = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  bb->marker_start = malloc(sizeof(int32_t) * (size_t)(n + 1));
  bb->markers = malloc(sizeof(int32_t) * (size_t)(M ? M : 1));
  bb->row_start[0] = bb->marker_start[0] = 0;
  for (int i = 0; i < n; i++) {
    bb->row_start[i + 1] = bb->row_start[i] + L[i];
    bb->marker_start[i + 1] = bb->marker_start[i] + K[i];
  }
  bb->b = (packed_batch){n, T, bb->tokens, bb->row_start, bb->qtype, bb->marker_start, bb->markers};
}

static inline void batch_buf_free(batch_buf *bb) {
  free(bb->tokens);
  free(bb->row_start);
  free(bb->qtype);
  free(bb->marker_start);
  free(bb->markers);
  memset(bb, 0, sizeof *bb);
}

#endif
