/* test_validate.c: laya-serve's pure pieces against values the real laya 0.4.15 computed
 * (fixtures/python_units.json, written by record_python.py): the batch chunk size under a
 * token budget, and Jev's confidence formula. Plus the validation order on a few bodies whose
 * answer Laya's own source fixes (the HTTP parity test covers the rest through the server). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fsutil.h"

#include "check.h"
#include "serve/serve.h"

#ifndef SERVE_FIXTURES
#define SERVE_FIXTURES "."
#endif

static int validate(const char *body, serve_route_kind kind, serve_config *cfg, strbuf *detail) {
  arena a;
  arena_init(&a, 4096);
  serve_request req;
  serve_reject rej;
  serve_reject_init(&rej);
  int rc = serve_validate(body, strlen(body), kind, cfg, NULL, &a, &req, &rej);
  sb_reset(detail);
  sb_puts(detail, sb_cstr(&rej.detail));
  serve_reject_free(&rej);
  arena_free(&a);
  return rc;
}

int main(void) {
  size_t n;
  char *text = fs_read_file(SERVE_FIXTURES "/python_units.json", &n, NULL);
  CHECK(text != NULL);
  if (!text) return check_summary("serve/validate");
  arena a;
  arena_init(&a, 1 << 16);
  laya_error err;
  json_value *root = json_parse(text, n, &a, NULL, &err);
  CHECK(root != NULL);
  const json_value *chunk = json_get(root, "chunk"), *jev = json_get(root, "jev");
  CHECK(chunk && chunk->n > 100 && jev && jev->n > 50);
  int bad = 0;
  for (uint32_t i = 0; chunk && i < chunk->n; i++) {
    const json_value *r = chunk->items[i].items;
    long got = serve_batch_chunk_size(r[0].i, r[1].i, r[2].i, r[3].i);
    if (got != r[4].i) {
      fprintf(stderr, "chunk(%lld states, %lld questions, max_len %lld, budget %lld) = %ld, Laya %lld\n",
              (long long)r[0].i, (long long)r[1].i, (long long)r[2].i, (long long)r[3].i, got, (long long)r[4].i);
      bad++;
    }
  }
  CHECK(bad == 0);
  bad = 0;
  for (uint32_t i = 0; jev && i < jev->n; i++) {
    const json_value *answer = &jev->items[i].items[0], *want = &jev->items[i].items[1];
    double got = 0;
    bool has = serve_jev_confidence(answer, &got);
    bool ok = want->type == JSON_NULL ? !has : (has && fabs(got - want->d) < 1e-12);
    if (!ok) {
      fprintf(stderr, "jev_confidence case %u: got %s%.17g, Laya %s\n", i, has ? "" : "none ", got,
              want->type == JSON_NULL ? "None" : "a number");
      bad++;
    }
  }
  CHECK(bad == 0);

  /* Order: size limits come before refused fields, which come before the surrogate check and
   * the control validation (Laya's steps 5, 6, 7, 8). */
  serve_config cfg;
  char msg[256];
  CHECK(serve_config_from_env(&cfg, msg, sizeof msg) == 0);
  strbuf d;
  sb_init(&d);
  CHECK(validate("{\"questions\": {}, \"hooks\": 1, \"state\": null}", SERVE_ONE, &cfg, &d) == 400);
  CHECK_STREQ(sb_cstr(&d), "'state' is required");
  CHECK(validate("{\"questions\": {}, \"state\": \"\\ud800\", \"hooks\": 1}", SERVE_ONE, &cfg, &d) == 422);
  CHECK(validate("{\"questions\": {}, \"state\": \"\\ud800\", \"max_len\": 0}", SERVE_ONE, &cfg, &d) == 400);
  CHECK(validate("{\"questions\": {}, \"state\": \"x\", \"max_len\": 0, \"lang\": 1}", SERVE_ONE, &cfg, &d) == 422);
  CHECK_STREQ(sb_cstr(&d), "max_len must be a positive integer");
  CHECK(validate("{\"questions\": {}, \"states\": [\"a\"], \"batch_size\": 0, \"min_confidence\": 2}", SERVE_BATCH,
                 &cfg, &d) == 422);
  CHECK_STREQ(sb_cstr(&d), "min_confidence must be a float in [0.0, 1.0], got 2");
  /* the budget cap is the environment's */
  cfg.max_token_budget = 100;
  CHECK(validate("{\"questions\": {}, \"state\": \"x\", \"head_max_len\": 101}", SERVE_ONE, &cfg, &d) == 422);
  CHECK_STREQ(sb_cstr(&d), "head_max_len exceeds server limit (101 > 100)");
  /* a request that passes: the caller's batch_size is capped by the planned chunk */
  arena b;
  arena_init(&b, 4096);
  serve_request req;
  serve_reject rej;
  serve_reject_init(&rej);
  const char *ok = "{\"questions\": {\"a\": {}, \"b\": {}}, \"states\": [1,2,3,4,5,6,7,8], \"max_len\": 64, "
                   "\"batch_size\": 100, \"sort_by_length\": true}";
  cfg.max_token_budget = 8192;
  cfg.max_batch_tokens = 256;
  CHECK(serve_validate(ok, strlen(ok), SERVE_BATCH, &cfg, NULL, &b, &req, &rej) == 0);
  CHECK(req.batch_size == serve_batch_chunk_size(8, 2, 64, 256) && req.batch_size == 2);
  CHECK(req.sort_by_length && req.max_len == 64);
  serve_reject_free(&rej);
  arena_free(&b);
  /* `model` is looked at only when truthy (Laya: `if not model: return None`, on the raw JSON
   * value): null, "", 0, 0.0, false, [] and {} route automatically. A truthy value is read as
   * str(value): a known name pins it, a path-like text (here ['./x'] and {'k': 'a/b'}) is
   * refused, any other text (a Jev id, "1") routes automatically. */
  static const struct {
    const char *value;
    int status;
    const char *model;
  } model_cases[] = {
      {"null", 0, ""},    {"\"\"", 0, ""},       {"0", 0, ""},       {"0.0", 0, ""},
      {"false", 0, ""},   {"[]", 0, ""},         {"{}", 0, ""},      {"\"english\"", 0, "english"},
      {"\" ML \"", 0, "multilingual"}, {"[\"./x\"]", 422, ""}, {"{\"k\": \"a/b\"}", 422, ""},
      {"\"jev-1\"", 0, ""}, {"1", 0, ""},
  };
  for (size_t i = 0; i < sizeof model_cases / sizeof *model_cases; i++) {
    char body[128];
    snprintf(body, sizeof body, "{\"questions\": {}, \"state\": \"x\", \"model\": %s}", model_cases[i].value);
    arena_init(&b, 4096);
    serve_reject_init(&rej);
    memset(&req, 0, sizeof req);
    int rc = serve_validate(body, strlen(body), SERVE_ONE, &cfg, NULL, &b, &req, &rej);
    bool ok = rc == model_cases[i].status && (rc || !strcmp(req.model, model_cases[i].model));
    CHECK(ok);
    if (!ok) fprintf(stderr, "model %s: %d '%s' %s\n", model_cases[i].value, rc, req.model, sb_cstr(&rej.detail));
    if (rc) CHECK(strstr(sb_cstr(&rej.detail), "or omit model to let the router choose") != NULL);
    serve_reject_free(&rej);
    arena_free(&b);
  }
  sb_free(&d);
  serve_config_free(&cfg);
  arena_free(&a);
  free(text);
  return check_summary("serve/validate");
}
