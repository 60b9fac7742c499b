/* packed_batch.c: the checks every backend runs on a packed batch before touching it, so a bad
 * batch is an error naming the row, marker or token, never an out-of-bounds read. */
#include "backend/backend.h"
#include "model/spec.h"

int packed_batch_check(const packed_batch *bt, int vocab, const char *who, int *max_len, laya_error *err) {
  if (bt->n_rows < 0 || bt->n_tokens < 0) return laya_err(err, LAYA_ERR_VALUE, NULL, "%s: negative batch size", who);
  if (bt->row_start[0] != 0 || bt->row_start[bt->n_rows] != bt->n_tokens)
    return laya_err(err, LAYA_ERR_VALUE, NULL, "%s: row_start must run from 0 to n_tokens (%d)", who, bt->n_tokens);
  if (bt->marker_start[0] != 0) return laya_err(err, LAYA_ERR_VALUE, NULL, "%s: marker_start[0] must be 0", who);
  if (!bt->kept && bt->n_rows > 0) return laya_err(err, LAYA_ERR_VALUE, NULL, "%s: the batch has no kept rows", who);
  *max_len = 1;
  for (int r = 0; r < bt->n_rows; r++) {
    int len = bt->row_start[r + 1] - bt->row_start[r];
    if (len <= 0) return laya_err(err, LAYA_ERR_VALUE, NULL, "%s: row %d is empty", who, r);
    if (len > *max_len) *max_len = len;
    if (bt->qtype[r] < 0 || bt->qtype[r] >= MODEL_QTYPES)
      return laya_err(err, LAYA_ERR_VALUE, NULL, "%s: row %d has question type %d (0, 1 or 2)", who, r, bt->qtype[r]);
    int k = bt->marker_start[r + 1] - bt->marker_start[r];
    if (k <= 0) return laya_err(err, LAYA_ERR_VALUE, NULL, "%s: row %d has no option markers", who, r);
    for (int s = bt->marker_start[r]; s < bt->marker_start[r + 1]; s++)
      if (bt->markers[s] < 0 || bt->markers[s] >= len)
        return laya_err(err, LAYA_ERR_VALUE, NULL, "%s: row %d marker %d at position %d is outside the row (length %d)",
                        who, r, s - bt->marker_start[r], bt->markers[s], len);
    for (int s = model_kept_first(bt, r); s <= model_kept_first(bt, r) + k; s++)
      if (bt->kept[s] < 0 || bt->kept[s] >= len)
        return laya_err(err, LAYA_ERR_VALUE, NULL, "%s: row %d kept row %d at position %d is outside the row (length %d)",
                        who, r, s - model_kept_first(bt, r), bt->kept[s], len);
  }
  for (int t = 0; t < bt->n_tokens; t++)
    if (bt->tokens[t] < 0 || bt->tokens[t] >= vocab)
      return laya_err(err, LAYA_ERR_VALUE, NULL, "%s: token %d (id %d) is outside the vocabulary (%d)", who, t,
                      bt->tokens[t], vocab);
  return 0;
}

void backend_mean_rows(const packed_batch *bt, const float *x, int d, float *pooled) {
  for (int r = 0; r < bt->n_rows; r++) {
    const int t0 = bt->row_start[r], t1 = bt->row_start[r + 1];
    float *out = pooled + (size_t)r * (size_t)d;
    for (int i = 0; i < d; i++) {
      double acc = 0.0;
      for (int t = t0; t < t1; t++) acc += x[(size_t)t * (size_t)d + i];
      out[i] = (float)(acc / (double)(t1 - t0 > 0 ? t1 - t0 : 1));
    }
  }
}
