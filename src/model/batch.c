/* batch.c: the packed-batch builder (batch.h). */
#include "model/batch.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "model/spec.h"

static int32_t *fresh(long n) { return calloc((size_t)(n > 0 ? n : 1), sizeof(int32_t)); }

int pb_reserve(packed_batch_buf *bb, long rows, long tokens, long markers, laya_error *err) {
  if (rows < 0 || tokens < 0 || markers < 0 || rows >= INT32_MAX / 2 || tokens > INT32_MAX || markers >= INT32_MAX / 2)
    return laya_err(err, LAYA_ERR_VALUE, NULL, "a packed batch of %ld rows, %ld tokens and %ld markers is too large", rows,
                    tokens, markers);
  const int more_rows = !bb->row_start || rows > bb->cap_rows, more_markers = !bb->markers || markers > bb->cap_markers;
  if (more_rows) {
    free(bb->row_start);
    free(bb->marker_start);
    free(bb->qtype);
    bb->row_start = fresh(rows + 1);
    bb->marker_start = fresh(rows + 1);
    bb->qtype = fresh(rows);
    bb->cap_rows = (int)rows;
  }
  if (!bb->tokens || tokens > bb->cap_tokens) {
    free(bb->tokens);
    bb->tokens = fresh(tokens);
    bb->cap_tokens = (int)tokens;
  }
  if (more_markers) {
    free(bb->markers);
    bb->markers = fresh(markers);
    bb->cap_markers = (int)markers;
  }
  if (more_rows || more_markers) { /* a row's CLS and each marker */
    free(bb->kept);
    bb->kept = fresh((long)bb->cap_rows + bb->cap_markers);
  }
  if (!bb->row_start || !bb->marker_start || !bb->qtype || !bb->tokens || !bb->markers || !bb->kept) {
    pb_free(bb);
    return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory packing %ld rows of %ld tokens", rows, tokens);
  }
  pb_clear(bb);
  return 0;
}

void pb_clear(packed_batch_buf *bb) {
  bb->b = (packed_batch){0, 0, bb->tokens, bb->row_start, bb->qtype, bb->marker_start, bb->markers, bb->kept};
  if (bb->row_start) bb->row_start[0] = bb->marker_start[0] = 0;
}

pb_row pb_add_row(packed_batch_buf *bb, int qtype, int len, int n_markers) {
  const int r = bb->b.n_rows, t0 = bb->row_start[r], m0 = bb->marker_start[r];
  LAYA_ASSERT(r < bb->cap_rows && len >= 0 && n_markers >= 0);
  LAYA_ASSERT((long)t0 + len <= bb->cap_tokens && (long)m0 + n_markers <= bb->cap_markers);
  bb->qtype[r] = qtype;
  bb->row_start[r + 1] = t0 + len;
  bb->marker_start[r + 1] = m0 + n_markers;
  bb->b.n_rows = r + 1;
  bb->b.n_tokens = t0 + len;
  return (pb_row){bb->tokens + t0, bb->markers + m0};
}

const packed_batch *pb_finish(packed_batch_buf *bb) {
  model_kept_rows(&bb->b, bb->kept);
  return &bb->b;
}

/* rows[i], or i when rows is NULL */
static int pick(const int32_t *rows, int i) { return rows ? rows[i] : i; }

int pb_select(packed_batch_buf *bb, const packed_batch *src, const int32_t *rows, int n, laya_error *err) {
  long T = 0, M = 0;
  for (int i = 0; i < n; i++) {
    const int r = pick(rows, i);
    T += src->row_start[r + 1] - src->row_start[r];
    M += src->marker_start[r + 1] - src->marker_start[r];
  }
  int rc = pb_reserve(bb, n, T, M, err);
  if (rc) return rc;
  for (int i = 0; i < n; i++) {
    const int r = pick(rows, i), t0 = src->row_start[r], m0 = src->marker_start[r];
    const int len = src->row_start[r + 1] - t0, k = src->marker_start[r + 1] - m0;
    pb_row row = pb_add_row(bb, src->qtype[r], len, k);
    memcpy(row.tokens, src->tokens + t0, sizeof(int32_t) * (size_t)len);
    memcpy(row.markers, src->markers + m0, sizeof(int32_t) * (size_t)k);
  }
  pb_finish(bb);
  return 0;
}

int pb_copy(packed_batch_buf *bb, const packed_batch *src, laya_error *err) {
  return pb_select(bb, src, NULL, src->n_rows, err);
}

packed_batch pb_view_rows(const packed_batch *b, int r0, int r1, int32_t *rs, int32_t *ms) {
  const int32_t t0 = b->row_start[r0], m0 = b->marker_start[r0];
  for (int r = r0; r <= r1; r++) {
    rs[r - r0] = b->row_start[r] - t0;
    ms[r - r0] = b->marker_start[r] - m0;
  }
  return (packed_batch){r1 - r0, rs[r1 - r0], b->tokens + t0, rs, b->qtype + r0, ms, b->markers + m0,
                        b->kept + model_kept_first(b, r0)};
}

size_t pb_bytes(const packed_batch_buf *bb) {
  if (!bb->row_start) return 0;
  return sizeof(int32_t) * (4 * (size_t)bb->cap_rows + 2 + (size_t)bb->cap_tokens + 2 * (size_t)bb->cap_markers);
}

void pb_free(packed_batch_buf *bb) {
  free(bb->tokens);
  free(bb->row_start);
  free(bb->qtype);
  free(bb->marker_start);
  free(bb->markers);
  free(bb->kept);
  memset(bb, 0, sizeof *bb);
}
