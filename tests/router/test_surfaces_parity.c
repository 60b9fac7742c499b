/* Parity of decide / decide_batch / predict_long with the real laya 0.4.15
 * (tests/fixtures/surfaces/{decide,predict_long}.jsonl, recorded by
 * tools/router/surfaces_fixtures.py on the tiny checkpoints in tests/fixtures/ckpt/).
 *
 * Results must have the same keys in the same order and the same strings, booleans and
 * integers; floats must agree to 1e-4 (float32 against float64 summation can move the last
 * rounded digit), and every float that is not identical is counted and listed. Errors must have
 * the same class and message. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "laya.h"

static int n_tol = 0;

static int compare(const json_value *want, const json_value *got, char *path, size_t plen) {
  size_t base = strlen(path);
  bool wn = json_is_number(want), gn = json_is_number(got);
  if (wn && gn) {
    if (want->type == JSON_INT && got->type == JSON_INT) {
      if (want->i != got->i) {
        printf("  %s: want %lld got %lld\n", path, (long long)want->i, (long long)got->i);
        return 1;
      }
      return 0;
    }
    if (want->type != got->type) {
      printf("  %s: want %s got %s\n", path, json_py_type(want), json_py_type(got));
      return 1;
    }
    double d = fabs(want->d - got->d);
    if (d > 1e-4 + 1e-12) {
      printf("  %s: want %.6f got %.6f\n", path, want->d, got->d);
      return 1;
    }
    if (d != 0) {
      n_tol++;
      if (getenv("SHOW_TOLERANCE")) printf("  within 1e-4: %s want %.6f got %.6f\n", path, want->d, got->d);
    }
    return 0;
  }
  if (want->type != got->type) {
    printf("  %s: want %s got %s\n", path, json_py_type(want), json_py_type(got));
    return 1;
  }
  switch (want->type) {
    case JSON_BOOL:
      if (want->b != got->b) {
        printf("  %s: bool differs\n", path);
        return 1;
      }
      return 0;
    case JSON_STRING:
      if (strcmp(want->s, got->s)) {
        printf("  %s: want %.80s got %.80s\n", path, want->s, got->s);
        return 1;
      }
      return 0;
    case JSON_ARRAY: {
      if (want->n != got->n) {
        printf("  %s: want %u items got %u\n", path, want->n, got->n);
        return 1;
      }
      int bad = 0;
      for (uint32_t i = 0; i < want->n; i++) {
        snprintf(path + base, plen - base, "[%u]", i);
        bad |= compare(&want->items[i], &got->items[i], path, plen);
      }
      path[base] = 0;
      return bad;
    }
    case JSON_OBJECT: {
      int bad = 0;
      if (want->n != got->n) {
        printf("  %s: want %u keys got %u\n", path, want->n, got->n);
        bad = 1;
      }
      for (uint32_t i = 0; i < want->n && i < got->n; i++) {
        if (strcmp(want->members[i].key, got->members[i].key)) {
          printf("  %s: key %u want '%s' got '%s'\n", path, i, want->members[i].key, got->members[i].key);
          return 1;
        }
        snprintf(path + base, plen - base, ".%s", want->members[i].key);
        bad |= compare(&want->members[i].value, &got->members[i].value, path, plen);
      }
      path[base] = 0;
      return bad;
    }
    default:
      return 0;
  }
}

static char *read_all(const char *p) {
  FILE *f = fopen(p, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) n = 0;
  fclose(f);
  if (b) b[n] = 0;
  return b;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_surfaces_parity FIXTURES_DIR CKPT_DIR\n");
    return 2;
  }
  const char *files[2] = {"decide.jsonl", "predict_long.jsonl"};
  char *names[2] = {NULL, NULL};
  laya_model *models[2] = {NULL, NULL};
  int total = 0, failed = 0;
  for (int fi = 0; fi < 2; fi++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", argv[1], files[fi]);
    char *text = read_all(path);
    if (!text) {
      fprintf(stderr, "cannot read %s\n", path);
      return 1;
    }
    for (char *line = text; line && *line;) {
      char *nl = strchr(line, '\n');
      if (nl) *nl = 0;
      arena a;
      arena_init(&a, 1 << 16);
      laya_error err = {0};
      json_value *row = json_parse(line, strlen(line), &a, NULL, &err);
      if (!row) {
        fprintf(stderr, "bad fixture: %s\n", err.message);
        return 1;
      }
      const char *ck = json_get(row, "checkpoint")->s;
      const char *call = json_get(row, "call")->s;
      int slot = -1;
      for (int k = 0; k < 2; k++)
        if (names[k] && !strcmp(names[k], ck)) slot = k;
      if (slot < 0) {
        slot = names[0] ? 1 : 0;
        if (models[slot]) laya_close(models[slot]);
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", argv[2], ck);
        laya_options opt;
        laya_options_init(&opt);
        opt.quiet = 1;
        models[slot] = laya_open(dir, &opt, &err);
        if (!models[slot]) {
          fprintf(stderr, "cannot open %s: %s\n", dir, err.message);
          return 1;
        }
        free(names[slot]);
        names[slot] = strdup(ck);
      }
      strbuf req;
      sb_init(&req);
      json_dump(&req, json_get(row, "request"), NULL);
      char *res = NULL;
      laya_error e2 = {0};
      int rc;
      if (!strcmp(call, "decide")) rc = laya_decide(models[slot], req.data, &res, &e2);
      else if (!strcmp(call, "decide_batch")) rc = laya_decide_batch(models[slot], req.data, &res, &e2);
      else rc = laya_predict_long(models[slot], req.data, &res, &e2);
      total++;
      const json_value *want = json_get(row, "result");
      int bad = 0;
      char where[512] = "$";
      if (want) {
        json_value *got = rc ? NULL : json_parse(res, strlen(res), &a, NULL, &err);
        if (!got) {
          printf("FAIL %s %s #%d: error %s: %s\n", ck, call, total, e2.kind, e2.message);
          bad = 1;
        } else if (compare(want, got, where, sizeof where)) {
          printf("FAIL %s %s #%d (above)\n", ck, call, total);
          bad = 1;
        }
      } else {
        const json_value *we = json_get(row, "error");
        const char *wk = json_get(we, "kind")->s, *wm = json_get(we, "message")->s;
        if (!rc || strcmp(e2.kind, wk) || strcmp(e2.message, wm)) {
          printf("FAIL %s %s #%d: want %s: %s\n  got rc=%d %s: %s\n", ck, call, total, wk, wm, rc,
                 e2.kind, e2.message);
          bad = 1;
        }
      }
      failed += bad;
      free(res);
      sb_free(&req);
      arena_free(&a);
      line = nl ? nl + 1 : NULL;
    }
    free(text);
  }
  for (int k = 0; k < 2; k++) {
    if (models[k]) laya_close(models[k]);
    free(names[k]);
  }
  printf("surfaces parity: %d cases, %d failed, %d floats within 1e-4 but not identical\n", total,
         failed, n_tol);
  printf("%d passed, %d failed\n", total - failed, failed);
  return failed ? 1 : 0;
}
