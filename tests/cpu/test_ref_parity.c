/*
 * test_ref_parity.c: the reference backend against the real PyTorch model.
 *
 *   test_ref_parity CKPT_DIR ROWS_JSONL [STRIDE]
 *
 * CKPT_DIR is a Laya checkpoint (rl_agent_config.json, encoder/config.json, model.safetensors);
 * ROWS_JSONL holds {"ids", "markers", "qtype", "logits", "act_logits"} rows, one per line or as
 * the "rows" list of each line, captured at Laya's DecisionModel forward in fp32 on CPU
 * (tools/ref/gen_parity.py; tools/debug/ref_forward_data.py). Every row's logits and act
 * logits must match to float rounding noise. The rows run packed in batches of several rows, so
 * this also checks that the unpadded packed forward equals PyTorch's padded one. STRIDE > 1 keeps
 * every STRIDE-th row only (a quick subset for the sanitizer build).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "backend/backend.h"
#include "core/json.h"
#include "ckpt_weights.h"
#include "../parity_rows.h"

/* |ours - torch| <= TOL * scale, scale = max(1, largest |value| of the row's logits, or of its act
 * logits): float rounding in a sum is relative to the size of its terms, which the row's largest
 * output reflects, so a logit near 0 in a row of logits near 50 carries the noise of a 50.
 * Observed: ~1e-6 of the scale; PyTorch fp32 itself is ~1e-6 of the scale from float64. */
static const double TOL = 1e-4;
enum { ROWS_PER_BATCH = 8 };

typedef parity_row row;

int main(int argc, char **argv) {
  int stride = argc == 4 ? atoi(argv[3]) : 1;
  if (argc < 3 || argc > 4 || stride < 1) {
    fprintf(stderr, "usage: %s CKPT_DIR ROWS_JSONL [STRIDE]\n", argv[0]);
    return 2;
  }
  const char *dir = argv[1];
  laya_error err = {0};
  ckpt_weights ck;
  if (ckpt_weights_open(&ck, dir, &err)) {
    fprintf(stderr, "loading %s: %s\n", dir, err.message);
    return 1;
  }
  const model_weights w = ck.w;
  const agent_config cfg = ck.cfg;
  backend_options o = {PREC_FP32, 0, 0, NULL}; /* default threads: results do not depend on them */
  backend *be = backend_cpu_ref_create(&w, &o, &err);
  CHECK(be != NULL);
  if (!be) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  backend_worker *wk = be->worker_create(be, &err);

  row *rows = NULL;
  int n_rows = 0;
  CHECK(parity_rows_load(argv[2], &rows, &n_rows) == 0);
  int kept = 0;
  for (int i = 0; i < n_rows; i++) {
    if (i % stride == 0) {
      row tmp = rows[kept];
      rows[kept++] = rows[i];
      rows[i] = tmp;
    }
  }
  for (int i = kept; i < n_rows; i++) parity_row_free(&rows[i]);
  n_rows = kept;
  CHECK(n_rows > 0);

  double max_abs_logit = 0, max_rel_logit = 0, max_abs_act = 0, max_rel_act = 0;
  int n_logits = 0, argmax_same = 0, n_bad = 0;
  for (int b0 = 0; b0 < n_rows; b0 += ROWS_PER_BATCH) {
    int nb = n_rows - b0 < ROWS_PER_BATCH ? n_rows - b0 : ROWS_PER_BATCH;
    int T = 0, M = 0;
    for (int i = 0; i < nb; i++) T += rows[b0 + i].n, M += rows[b0 + i].k;
    int32_t *tokens = malloc(sizeof(int32_t) * (size_t)T), *rs = malloc(sizeof(int32_t) * (size_t)(nb + 1)),
            *qt = malloc(sizeof(int32_t) * (size_t)nb), *ms = malloc(sizeof(int32_t) * (size_t)(nb + 1)),
            *mk = malloc(sizeof(int32_t) * (size_t)M);
    float *logits = malloc(sizeof(float) * (size_t)M), *act = malloc(sizeof(float) * (size_t)nb * cfg.n_act);
    int t = 0, m = 0;
    for (int i = 0; i < nb; i++) {
      const row *r = &rows[b0 + i];
      rs[i] = t;
      ms[i] = m;
      qt[i] = r->qtype;
      memcpy(tokens + t, r->ids, sizeof(int32_t) * (size_t)r->n);
      memcpy(mk + m, r->markers, sizeof(int32_t) * (size_t)r->k);
      t += r->n;
      m += r->k;
    }
    rs[nb] = t;
    ms[nb] = m;
    packed_batch pb = {nb, T, tokens, rs, qt, ms, mk};
    int frc = be->forward(be, wk, &pb, logits, act, &err);
    CHECK(frc == 0);
    if (frc) fprintf(stderr, "forward: %s\n", err.message);
    for (int i = 0; i < nb && !frc; i++) {
      const row *r = &rows[b0 + i];
      CHECK(r->n_act == cfg.n_act);
      int am_ours = 0, am_ref = 0;
      double scale = 1.0, ascale = 1.0;
      for (int j = 0; j < r->k; j++) scale = fmax(scale, fabs(r->logits[j]));
      for (int j = 0; j < r->n_act; j++) ascale = fmax(ascale, fabs(r->act[j]));
      for (int j = 0; j < r->k; j++) {
        double ours = logits[ms[i] + j], ref = r->logits[j], e = fabs(ours - ref);
        if (e > max_abs_logit) max_abs_logit = e;
        if (e / scale > max_rel_logit) max_rel_logit = e / scale;
        if (!(e <= TOL * scale)) {
          n_bad++;
          fprintf(stderr, "row %d logit %d: ours %.9g, torch %.9g\n", b0 + i, j, ours, ref);
        }
        if (logits[ms[i] + j] > logits[ms[i] + am_ours]) am_ours = j;
        if (r->logits[j] > r->logits[am_ref]) am_ref = j;
        n_logits++;
      }
      /* same argmax, unless two options tie within the tolerance */
      argmax_same += r->logits[am_ours] >= r->logits[am_ref] - TOL * scale;
      for (int j = 0; j < r->n_act && j < cfg.n_act; j++) {
        double ours = act[i * cfg.n_act + j], ref = r->act[j], e = fabs(ours - ref);
        if (e > max_abs_act) max_abs_act = e;
        if (e / ascale > max_rel_act) max_rel_act = e / ascale;
        if (!(e <= TOL * ascale)) {
          n_bad++;
          fprintf(stderr, "row %d act %d: ours %.9g, torch %.9g\n", b0 + i, j, ours, ref);
        }
      }
    }
    free(tokens), free(rs), free(qt), free(ms), free(mk), free(logits), free(act);
  }
  CHECK(n_bad == 0);
  CHECK(argmax_same == n_rows);
  printf("%s: %d rows, %d logits; logits max abs diff %.3g (%.3g of the row's scale); act logits max abs "
         "diff %.3g (%.3g of the row's scale); argmax equal %d/%d\n",
         dir, n_rows, n_logits, max_abs_logit, max_rel_logit, max_abs_act, max_rel_act, argmax_same, n_rows);

  parity_rows_free(rows, n_rows);
  be->worker_destroy(be, wk);
  be->destroy(be);
  ckpt_weights_close(&ck);
  return check_summary("cpu/ref_parity");
}
