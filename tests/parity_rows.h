/* parity_rows.h: reads the recorded forward rows of the parity fixtures
 * (tests/fixtures/parity/<ckpt>/rows.jsonl, written by tools/ref/gen_parity.py from the real
 * laya package): token ids, option-marker positions, question type, and the logits and act
 * logits Laya's own model produced. Header-only, for tests and benchmarks.
 *
 * A line is either one row object {"ids", "markers", "qtype", "logits", "act_logits"} or a case
 * {"id", "rows": [row objects]}. */
#ifndef LAYA_TESTS_PARITY_ROWS_H
#define LAYA_TESTS_PARITY_ROWS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/fsutil.h"
#include "core/json.h"

typedef struct parity_row {
  int n, k, qtype, n_act;  /* tokens, options, question type, act logits */
  int32_t *ids, *markers;
  float *logits, *act;     /* recorded by the fixture (torch fp32); float32 values, so exact */
} parity_row;

static int pr_ints(const json_value *v, int32_t **out, int *n) {
  if (!v || v->type != JSON_ARRAY) return -1;
  *n = (int)v->n;
  *out = malloc(sizeof(int32_t) * (v->n ? v->n : 1));
  if (!*out) return -1;
  for (uint32_t i = 0; i < v->n; i++) {
    if (v->items[i].type != JSON_INT) return -1;
    (*out)[i] = (int32_t)v->items[i].i;
  }
  return 0;
}

static int pr_floats(const json_value *v, float **out, int *n) {
  if (!v || v->type != JSON_ARRAY) return -1;
  *n = (int)v->n;
  *out = malloc(sizeof(float) * (v->n ? v->n : 1));
  if (!*out) return -1;
  for (uint32_t i = 0; i < v->n; i++) {
    if (!json_is_number(&v->items[i])) return -1;
    (*out)[i] = (float)v->items[i].d;
  }
  return 0;
}

static void parity_row_free(parity_row *r) {
  free(r->ids), free(r->markers), free(r->logits), free(r->act);
  memset(r, 0, sizeof *r);
}

static void parity_rows_free(parity_row *rows, int n) {
  for (int i = 0; i < n; i++) parity_row_free(&rows[i]);
  free(rows);
}

/* One row object into r; -1 (r freed) if a key is missing or mistyped. */
static int parity_row_read(const json_value *v, parity_row *r) {
  memset(r, 0, sizeof *r);
  const json_value *qt = json_get(v, "qtype");
  int nl = 0;
  if (!qt || qt->type != JSON_INT || pr_ints(json_get(v, "ids"), &r->ids, &r->n) ||
      pr_ints(json_get(v, "markers"), &r->markers, &r->k) || pr_floats(json_get(v, "logits"), &r->logits, &nl) ||
      pr_floats(json_get(v, "act_logits"), &r->act, &r->n_act) || nl != r->k) {
    parity_row_free(r);
    return -1;
  }
  r->qtype = (int)qt->i;
  return 0;
}

/* Every row of a rows.jsonl file; -1 with a message naming the file and line on any error. */
static int parity_rows_load(const char *path, parity_row **rows_out, int *n_rows) {
  laya_error err = {0};
  size_t len;
  char *text = fs_read_file(path, &len, &err);
  *rows_out = NULL, *n_rows = 0;
  if (!text) {
    fprintf(stderr, "%s\n", err.message);
    return -1;
  }
  arena a;
  arena_init(&a, 1 << 16);
  int cap = 64, n = 0, line = 0, rc = 0;
  parity_row *rows = calloc((size_t)cap, sizeof *rows);
  for (char *p = text, *end = text + len; p < end && rows && !rc;) {
    char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
    line++;
    if (l > 0) {
      json_value *v = json_parse(p, l, &a, NULL, &err);
      const json_value *list = v ? json_get(v, "rows") : NULL;
      uint32_t count = list && list->type == JSON_ARRAY ? list->n : 1;
      if (!v || (list && list->type != JSON_ARRAY)) rc = -1;
      for (uint32_t i = 0; i < count && !rc; i++) {
        if (n == cap) {
          parity_row *grown = realloc(rows, sizeof *rows * (size_t)(cap *= 2));
          if (!grown) {
            rc = -1;
            break;
          }
          rows = grown;
        }
        if (parity_row_read(list ? &list->items[i] : v, &rows[n])) rc = -1;
        else n++;
      }
      if (rc) fprintf(stderr, "%s:%d: not a parity row (%s)\n", path, line, v ? "missing or bad key" : err.message);
    }
    p += l + 1;
  }
  arena_free(&a);
  free(text);
  if (!rows) return -1;
  if (rc) {
    parity_rows_free(rows, n);
    return -1;
  }
  *rows_out = rows;
  *n_rows = n;
  return 0;
}

#endif
