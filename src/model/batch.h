/*
 * batch.h: the one builder of packed batches (backend.h's packed_batch): rows back to back with
 * their prefix sums, question types, option markers and the kept rows (model/spec.h), in
 * grow-only buffers. Every producer builds its batches here: the engine's passes, the warm-up,
 * the escalation's calibration rows and re-run sub-batches, the embedding passes, the tests and
 * the benches; a consecutive run of a batch's rows is a view (pb_view_rows), not a copy.
 *
 *   packed_batch_buf bb = {0};
 *   if (pb_reserve(&bb, rows, tokens, markers, err)) ...;    // empties it; grows, never shrinks
 *   pb_row row = pb_add_row(&bb, qtype, len, n_markers);      // write len tokens, n_markers markers
 *   ...
 *   const packed_batch *b = pb_finish(&bb);                   // fills the kept rows
 *   pb_free(&bb);
 *
 * Adding past what was reserved is a bug of the caller (asserted; the buffers are not grown
 * there, so a forward never allocates once its builder is reserved).
 */
#ifndef LAYA_MODEL_BATCH_H
#define LAYA_MODEL_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "core/error.h"

typedef struct packed_batch_buf {
  packed_batch b; /* the batch as backends read it: valid after pb_finish */
  int32_t *tokens, *row_start, *qtype, *marker_start, *markers, *kept;
  int cap_rows, cap_tokens, cap_markers;
} packed_batch_buf;

/* Where a row added by pb_add_row takes its tokens and its markers (positions in the row). */
typedef struct pb_row {
  int32_t *tokens, *markers;
} pb_row;

/* Room for `rows` rows of `tokens` tokens and `markers` markers in all (grow-only; new memory is
 * zeroed, so it is resident from here on), and an empty batch. LAYA_ERR_VALUE past INT32_MAX,
 * LAYA_ERR_NOMEM. */
int pb_reserve(packed_batch_buf *bb, long rows, long tokens, long markers, laya_error *err);
/* Empty the batch, keeping the buffers. */
void pb_clear(packed_batch_buf *bb);
/* Append a row of `len` tokens, question type `qtype` and `n_markers` markers; the caller writes
 * them where the result points. Within the reservation (asserted). */
pb_row pb_add_row(packed_batch_buf *bb, int qtype, int len, int n_markers);
/* Close the batch: its counts and the kept rows (model_kept_rows). The pointer is &bb->b. */
const packed_batch *pb_finish(packed_batch_buf *bb);
/* bb = the rows rows[0..n) of src (in that order) as a batch of their own: reserved, copied,
 * finished (src's kept rows are not read: src may be rows given as arrays, kept NULL). */
int pb_select(packed_batch_buf *bb, const packed_batch *src, const int32_t *rows, int n, laya_error *err);
/* bb = every row of src (pb_select of all its rows): rows read from a file or a fixture. */
int pb_copy(packed_batch_buf *bb, const packed_batch *src, laya_error *err);
/* The consecutive rows [r0, r1) of b as a batch that shares b's tokens, types, markers and kept
 * rows (all relative to their row): only the offsets are rebased, into rs and ms ([r1 - r0 + 1]
 * each). */
packed_batch pb_view_rows(const packed_batch *b, int r0, int r1, int32_t *rs, int32_t *ms);
/* Bytes the builder holds. */
size_t pb_bytes(const packed_batch_buf *bb);
void pb_free(packed_batch_buf *bb);

#endif
