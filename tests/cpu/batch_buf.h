/*
 * batch_buf.h: the model's packed-batch builder (model/batch.h) shaped for the tests and benches
 * that fill rows in place. batch_buf_alloc sizes it for n rows of L[i] tokens and K[i] markers
 * (row_start / marker_start filled); the caller fills tokens, qtype and markers (each generator
 * has its own distribution and seed order), then batch_buf_done writes the kept rows.
 */
#ifndef LAYA_TEST_BATCH_BUF_H
#define LAYA_TEST_BATCH_BUF_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "model/batch.h"

typedef packed_batch_buf batch_buf;

static inline void batch_buf_alloc(batch_buf *bb, int n, const int *L, const int *K) {
  long T = 0, M = 0;
  for (int i = 0; i < n; i++) T += L[i], M += K[i];
  memset(bb, 0, sizeof *bb);
  laya_error err;
  if (pb_reserve(bb, n, T, M, &err)) {
    fprintf(stderr, "batch_buf_alloc: %s\n", err.message);
    abort();
  }
  for (int i = 0; i < n; i++) pb_add_row(bb, 0, L[i], K[i]);
}

/* After the rows are filled: the kept rows (model/spec.h). */
static inline void batch_buf_done(batch_buf *bb) { pb_finish(bb); }

static inline void batch_buf_free(batch_buf *bb) { pb_free(bb); }

#endif
