/* compare.h: the parity comparison shared by test_parity and test_rows (header-only, tests). */
#ifndef LAYA_TEST_PARITY_COMPARE_H
#define LAYA_TEST_PARITY_COMPARE_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fsutil.h"
#include "core/json.h"
#include "core/strbuf.h"

#define ALLOWANCE 1e-4

/* ---- structural comparison ---- */

typedef struct cmp_ctx {
  const char *case_id;
  int within;  /* numbers that needed the allowance */
  int failed;  /* mismatches */
  strbuf notes;
} cmp_ctx;

static void path_push(strbuf *p, const char *k, size_t n, size_t *saved) {
  *saved = p->len;
  sb_putc(p, '/');
  sb_append(p, k, n);
}

static void note(cmp_ctx *c, const char *what, const strbuf *path) {
  sb_printf(&c->notes, "    %s at %s\n", what, path->data ? path->data : "/");
}

static void cmp_value(cmp_ctx *c, const json_value *got, const json_value *want, strbuf *path,
                      bool exact_numbers) {
  char msg[512];
  bool gnum = json_is_number(got), wnum = json_is_number(want);
  if (gnum && wnum) {
    double g = got->d, w = want->d;
    if (g == w || (isnan(g) && isnan(w))) return;
    double diff = fabs(g - w);
    if (!exact_numbers && diff <= ALLOWANCE + 1e-12) {
      c->within++;
      snprintf(msg, sizeof msg, "within 1e-4: got %.17g want %.17g (diff %.3g)", g, w, diff);
      note(c, msg, path);
      return;
    }
    c->failed++;
    snprintf(msg, sizeof msg, "MISMATCH: got %.17g want %.17g", g, w);
    note(c, msg, path);
    return;
  }
  if (got->type != want->type) {
    c->failed++;
    snprintf(msg, sizeof msg, "MISMATCH: type %s vs %s", json_py_type(got), json_py_type(want));
    note(c, msg, path);
    return;
  }
  size_t saved;
  switch (got->type) {
    case JSON_NULL: return;
    case JSON_BOOL:
      if (got->b != want->b) {
        c->failed++;
        note(c, "MISMATCH: bool", path);
      }
      return;
    case JSON_STRING:
      if (got->n != want->n || memcmp(got->s, want->s, got->n) != 0) {
        c->failed++;
        snprintf(msg, sizeof msg, "MISMATCH: got \"%.200s\" want \"%.200s\"", got->s, want->s);
        note(c, msg, path);
      }
      return;
    case JSON_ARRAY:
      if (got->n != want->n) {
        c->failed++;
        snprintf(msg, sizeof msg, "MISMATCH: %u items vs %u", got->n, want->n);
        note(c, msg, path);
        return;
      }
      for (uint32_t i = 0; i < got->n; i++) {
        char idx[24];
        int l = snprintf(idx, sizeof idx, "%u", i);
        path_push(path, idx, (size_t)l, &saved);
        cmp_value(c, &got->items[i], &want->items[i], path, exact_numbers);
        path->len = saved;
        path->data[saved] = 0;
      }
      return;
    case JSON_OBJECT:
      if (got->n != want->n) {
        c->failed++;
        strbuf keys;
        sb_init(&keys);
        for (uint32_t i = 0; i < got->n; i++) sb_printf(&keys, "%s ", got->members[i].key);
        sb_puts(&keys, "| want ");
        for (uint32_t i = 0; i < want->n; i++) sb_printf(&keys, "%s ", want->members[i].key);
        snprintf(msg, sizeof msg, "MISMATCH: keys %.400s", sb_cstr(&keys));
        sb_free(&keys);
        note(c, msg, path);
        return;
      }
      for (uint32_t i = 0; i < got->n; i++) {
        const json_member *g = &got->members[i], *w = &want->members[i];
        if (g->key_len != w->key_len || memcmp(g->key, w->key, g->key_len) != 0) {
          c->failed++;
          snprintf(msg, sizeof msg, "MISMATCH: key %u is '%.100s', want '%.100s'", i, g->key, w->key);
          note(c, msg, path);
          return;
        }
        path_push(path, g->key, g->key_len, &saved);
        /* the answer itself (a choice label, also a numeric one) must be identical */
        bool ex = exact_numbers || strcmp(g->key, "choice") == 0 || strcmp(g->key, "input_tokens") == 0 ||
                  strncmp(g->key, "state_tokens", 12) == 0;
        cmp_value(c, &g->value, &w->value, path, ex);
        path->len = saved;
        path->data[saved] = 0;
      }
      return;
    default: return;
  }
}

#endif
