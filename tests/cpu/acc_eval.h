/*
 * acc_eval.h: question rows, a batched run of a backend over them, and the comparison of two
 * runs' answers (option probabilities, act probability, argmax), shared by the accuracy tool
 * (bench/cpu/accuracy.c) and the accuracy regression test (tests/cpu/test_cpu_accuracy.c). The
 * probabilities are the library's own (model/decode.h: NumPy-float32 softmax of the options, at
 * temperature 1; torch-float32 act probability), so a change is one users see.
 */
#ifndef LAYA_TEST_ACC_EVAL_H
#define LAYA_TEST_ACC_EVAL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/json.h"
#include "core/fsutil.h"
#include "model/batch.h"
#include "model/decode.h"

typedef struct acc_rows {
  int n, cap;
  int32_t *tokens, *row_start, *qtype, *marker_start, *markers;
  int n_tokens, n_markers;
} acc_rows;

static inline void acc_rows_add(acc_rows *r, const int32_t *ids, int len, const int32_t *mk, int k, int qtype) {
  r->tokens = realloc(r->tokens, sizeof(int32_t) * (r->n_tokens + len));
  r->markers = realloc(r->markers, sizeof(int32_t) * (r->n_markers + k));
  r->row_start = realloc(r->row_start, sizeof(int32_t) * (r->n + 2));
  r->marker_start = realloc(r->marker_start, sizeof(int32_t) * (r->n + 2));
  r->qtype = realloc(r->qtype, sizeof(int32_t) * (r->n + 1));
  if (r->n == 0) r->row_start[0] = r->marker_start[0] = 0;
  memcpy(r->tokens + r->n_tokens, ids, sizeof(int32_t) * len);
  memcpy(r->markers + r->n_markers, mk, sizeof(int32_t) * k);
  r->n_tokens += len;
  r->n_markers += k;
  r->qtype[r->n] = qtype;
  r->n++;
  r->row_start[r->n] = r->n_tokens;
  r->marker_start[r->n] = r->n_markers;
}

/* tests/fixtures/parity/<name>/rows.jsonl: {"ids", "markers", "qtype", ...} per line. */
static inline int acc_rows_load(acc_rows *r, const char *path, int max_rows) {
  laya_error err;
  size_t len;
  char *text = fs_read_file(path, &len, &err);
  if (!text) return -1;
  arena a;
  arena_init(&a, 1 << 16);
  char *line = text;
  while (*line && r->n < max_rows) {
    char *nl = strchr(line, '\n');
    size_t l = nl ? (size_t)(nl - line) : strlen(line);
    json_value *v = l ? json_parse(line, l, &a, NULL, &err) : NULL;
    /* a line is one row, or a case {"id", "rows": [rows]} (tools/ref/gen_parity.py) */
    const json_value *list = v ? json_get(v, "rows") : NULL;
    int n_in = list && list->type == JSON_ARRAY ? (int)list->n : (v ? 1 : 0);
    for (int e = 0; e < n_in && r->n < max_rows; e++) {
      const json_value *o = list && list->type == JSON_ARRAY ? &list->items[e] : v;
      const json_value *ids = json_get(o, "ids"), *mk = json_get(o, "markers"), *qt = json_get(o, "qtype");
      if (ids && mk && qt && ids->type == JSON_ARRAY && mk->type == JSON_ARRAY && ids->n <= 8192 && mk->n <= 256 &&
          mk->n > 0) {
        int32_t *a_ids = malloc(sizeof(int32_t) * (ids->n + 1)), a_mk[256];
        for (uint32_t i = 0; i < ids->n; i++) a_ids[i] = (int32_t)ids->items[i].i;
        for (uint32_t i = 0; i < mk->n; i++) a_mk[i] = (int32_t)mk->items[i].i;
        acc_rows_add(r, a_ids, (int)ids->n, a_mk, (int)mk->n, (int)qt->i);
        free(a_ids);
      }
    }
    if (!nl) break;
    line = nl + 1;
  }
  arena_free(&a);
  free(text);
  return 0;
}

/* Run rows [r0, r1) in batches of about 2048 tokens. */
static inline int acc_run_rows(backend *be, const acc_rows *r, int r0, int r1, float *logits, float *act,
                               int n_act) {
  laya_error err;
  int rc = 0;
  backend_worker *w = be->worker_create(be, &err);
  int32_t *rs = malloc(sizeof(int32_t) * (r->n + 1)), *ms = malloc(sizeof(int32_t) * (r->n + 1));
  packed_batch_buf all = {0}; /* every row, built once; each pass is a view of consecutive rows */
  const packed_batch rows = {r->n, r->n_tokens, r->tokens, r->row_start, r->qtype, r->marker_start, r->markers, NULL};
  if (!w || !rs || !ms || pb_copy(&all, &rows, &err)) {
    fprintf(stderr, "acc_run_rows: out of memory\n");
    rc = -1;
  }
  for (int i = r0; i < r1 && rc == 0;) {
    int j = i, toks = 0;
    while (j < r1 && (j == i || toks + (r->row_start[j + 1] - r->row_start[j]) <= 2048)) {
      toks += r->row_start[j + 1] - r->row_start[j];
      j++;
    }
    packed_batch b = pb_view_rows(&all.b, i, j, rs, ms);
    if (be->forward(be, w, &b, logits + r->marker_start[i], act + (size_t)i * n_act, &err)) {
      fprintf(stderr, "forward: %s\n", err.message);
      rc = -1;
    }
    i = j;
  }
  free(rs);
  free(ms);
  pb_free(&all);
  if (w) be->worker_destroy(be, w);
  return rc;
}

/* NaN counts as an infinite change. */
static inline double acc_worse(double have, double d) { return isnan(d) ? INFINITY : fmax(have, d); }

typedef struct acc_cmp {
  double dp, act_dp, dlogit;
  int same, n;
  /* worst row of max_j |dl_j| / max_j |l_j| (l: the run tested, as escalation sees it), options and act:
   * what precision escalation's relative logit-error bound must cover (model/escalate.h) */
  double ratio, act_ratio;
} acc_cmp;

static inline double acc_ratio(const float *l, const float *lr, int k) {
  double e = 0, s = 0;
  for (int j = 0; j < k; j++) {
    e = acc_worse(e, fabs((double)l[j] - lr[j]));
    s = fmax(s, fabs((double)l[j]));
  }
  return s > 0 ? e / s : e > 0 ? INFINITY : 0;
}

static inline void acc_compare(acc_cmp *c, const acc_rows *r, int r0, int r1, const float *l, const float *lr, const float *a,
                    const float *ar, int n_act) {
  float p[256], q[256]; /* acc_rows_load keeps at most 256 markers a row */
  for (int i = r0; i < r1; i++) {
    int m0 = r->marker_start[i], k = r->marker_start[i + 1] - m0;
    np_softmax_f32(l + m0, k, 1.0, p);
    np_softmax_f32(lr + m0, k, 1.0, q);
    int ia = 0, ib = 0;
    for (int j = 0; j < k; j++) {
      c->dp = acc_worse(c->dp, fabs((double)p[j] - q[j]));
      c->dlogit = acc_worse(c->dlogit, fabs((double)l[m0 + j] - lr[m0 + j]));
      if (p[j] > p[ia]) ia = j;
      if (q[j] > q[ib]) ib = j;
    }
    c->same += ia == ib;
    c->n++;
    c->ratio = acc_worse(c->ratio, acc_ratio(l + m0, lr + m0, k));
    if (n_act > 0)
      c->act_ratio = acc_worse(c->act_ratio, acc_ratio(a + (size_t)i * n_act, ar + (size_t)i * n_act, n_act));
    c->act_dp = acc_worse(c->act_dp, fabs((double)act_probability_f32(a + (size_t)i * n_act, n_act) -
                                          act_probability_f32(ar + (size_t)i * n_act, n_act)));
  }
}

static inline void acc_rows_free(acc_rows *r) {
  free(r->tokens), free(r->row_start), free(r->qtype), free(r->marker_start), free(r->markers);
  memset(r, 0, sizeof *r);
}

#endif
