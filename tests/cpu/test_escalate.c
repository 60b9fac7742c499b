/*
 * test_escalate.c: precision escalation (model/escalate.h).
 *   - escalate_prob_bound is the exact worst case: it equals the largest probability change over
 *     every corner of the logit error box (all 2^k sign patterns), and no random perturbation
 *     inside the box exceeds it;
 *   - escalate_row_needed: a clear winner stays, a near tie, a possible argmax flip and an
 *     uncertain act probability are re-run; NaN logits are re-run;
 *   - escalate_model_t_min: the smallest temperature over the table and the language overrides;
 *   - laya_open with escalation: the precision reads "bf16+escalate"; with LAYA_ESCALATE_TAU=0 every
 *     row is re-run, so predict_batch answers exactly as the fp32 model does; escalation is refused
 *     on an artifact (no fp32 weights to re-run with).
 *
 *   test_escalate FIXTURES_DIR   (uses FIXTURES_DIR/ckpt/modernbert-tiny)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "laya.h"
#include "model/escalate.h"

static uint64_t rng = 42;
static double urand(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng >> 11) / 9007199254740992.0;
}

static void softmax(const double *x, int k, double T, double *p) {
  double m = -INFINITY, s = 0;
  for (int j = 0; j < k; j++) m = fmax(m, x[j]);
  for (int j = 0; j < k; j++) s += (p[j] = exp((x[j] - m) / T));
  for (int j = 0; j < k; j++) p[j] /= s;
}

static double max_change(const float *x, const double *dx, int k, double T) {
  double a[16], b[16], p[16], q[16];
  for (int j = 0; j < k; j++) a[j] = x[j], b[j] = x[j] + dx[j];
  softmax(a, k, T, p);
  softmax(b, k, T, q);
  double w = 0;
  for (int j = 0; j < k; j++) w = fmax(w, fabs(p[j] - q[j]));
  return w;
}

static void test_bound_exact(void) {
  for (int trial = 0; trial < 300; trial++) {
    int k = 2 + trial % 5;
    float x[8];
    for (int j = 0; j < k; j++) x[j] = (float)(urand() * 12 - 6);
    double e = urand() * 1.5, T = 0.5 + urand() * 2;
    double bound = escalate_prob_bound(x, k, e, T), corner = 0, dx[8];
    for (int mask = 0; mask < (1 << k); mask++) {
      for (int j = 0; j < k; j++) dx[j] = mask >> j & 1 ? e : -e;
      corner = fmax(corner, max_change(x, dx, k, T));
    }
    CHECK(fabs(bound - corner) <= 1e-9 + 1e-9 * corner);
    for (int s = 0; s < 20; s++) {
      for (int j = 0; j < k; j++) dx[j] = (urand() * 2 - 1) * e;
      CHECK(max_change(x, dx, k, T) <= bound + 1e-12);
    }
  }
  float one = 3;
  CHECK(escalate_prob_bound(&one, 1, 1.0, 1.0) == 0);
  float nan2[2] = {NAN, 1};
  CHECK(isinf(escalate_prob_bound(nan2, 2, 0.1, 1.0)));
}

static void test_row_needed(void) {
  escalate_params p;
  memset(&p, 0, sizeof p);
  p.rel = 0.01, p.abs = 0.1, p.act_rel = 0.01, p.act_abs = 0.05, p.tau = 0.02, p.t_min = 1.0;
  float act_sure[2] = {8, -8}, act_unsure[2] = {0.3f, 0};
  float clear[3] = {12, 1, 0}, tie[3] = {2, 1.9f, 0}, nan3[3] = {1, NAN, 0};
  CHECK(escalate_row_needed(&p, clear, 3, act_sure, 2) == 0);
  CHECK(escalate_row_needed(&p, tie, 3, act_sure, 2) == 1);
  CHECK(escalate_row_needed(&p, clear, 3, act_unsure, 2) == 1);
  CHECK(escalate_row_needed(&p, nan3, 3, act_sure, 2) == 1);
  /* a larger error bound (relative to large logits) re-runs a row the small one keeps */
  float big[2] = {60, 56}; /* p = 0.982; e = 0.6 moves it by 0.039, e = 0.1 by 0.004 */
  CHECK(escalate_row_needed(&p, big, 2, act_sure, 2) == 1);
  p.rel = 0;
  CHECK(escalate_row_needed(&p, big, 2, act_sure, 2) == 0);
  /* argmax: a close runner-up is re-run even when the probabilities barely move (high temperature) */
  float close2[2] = {1.0f, 0.95f};
  p.t_min = 1000;
  CHECK(escalate_prob_bound(close2, 2, 0.1, 1000) <= p.tau);
  CHECK(escalate_row_needed(&p, close2, 2, act_sure, 2) == 1);
}

/* t_min: the smallest of the checkpoint's table (types and per-option-count entries) and every
 * language override; 0.5 when nothing is a positive number */
static void test_t_min(void) {
  double by[2] = {1.5, 0.7}, lang_by[1] = {0.55};
  temp_table base = {{1.0, 2.0, 0.8}, 2, NULL, by};
  temp_table over[2] = {{{3.0, 0.6, 4.0}, 0, NULL, NULL}, {{2.0, 2.0, 2.0}, 1, NULL, lang_by}};
  lang_temps none = {0, NULL, NULL}, one = {1, NULL, over}, two = {2, NULL, over};
  CHECK(escalate_model_t_min(&base, NULL) == 0.7);
  CHECK(escalate_model_t_min(&base, &none) == 0.7);
  CHECK(escalate_model_t_min(&base, &one) == 0.6);
  CHECK(escalate_model_t_min(&base, &two) == 0.55);
  temp_table bad = {{0.0, NAN, 0.0}, 0, NULL, NULL};
  CHECK(escalate_model_t_min(&bad, NULL) == 0.5);
}

static char *predict(laya_model *m, const char *req) {
  laya_error err;
  char *out = NULL;
  if (laya_predict_batch(m, req, &out, &err)) fprintf(stderr, "predict_batch: %s\n", err.message);
  return out;
}

static void test_api(const char *fixtures) {
  char ckdir[1024], art[1100];
  snprintf(ckdir, sizeof ckdir, "%s/ckpt/modernbert-tiny", fixtures);
  snprintf(art, sizeof art, "%s/laya-test-escalate-%d.laya", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
  const char *req =
      "{\"states\": [{\"request\": \"charged twice please refund\"}, {\"note\": \"the app crashes on start\"}, "
      "{\"x\": [1, 2, 3]}], \"questions\": {\"intent\": {\"type\": \"choice\", \"instructions\": \"What is it about?\", "
      "\"criteria\": {\"refund\": \"money\", \"help\": null, \"other\": null}}, \"urgency\": {\"type\": \"score\", "
      "\"instructions\": \"How urgent?\", \"criteria\": [\"not\", \"somewhat\", \"very\"]}}}";
  laya_error err;
  laya_options o;
  laya_options_init(&o);
  o.quiet = 1;
  o.precision = "fp32";
  laya_model *f32 = laya_open(ckdir, &o, &err);
  CHECK(f32 != NULL);
  o.precision = "bf16";
  o.escalate = 1;
  setenv("LAYA_ESCALATE_TAU", "0", 1); /* every row is re-run */
  laya_model *all = laya_open(ckdir, &o, &err);
  unsetenv("LAYA_ESCALATE_TAU");
  if (!all) fprintf(stderr, "laya_open(bf16, escalate): %s\n", err.message);
  CHECK(all != NULL);
  if (f32 && all) {
    CHECK(strstr(laya_model_info(all), "\"precision\": \"bf16+escalate\"") != NULL);
    char *a = predict(f32, req), *b = predict(all, req);
    CHECK(a && b && strcmp(a, b) == 0);
    laya_free(a);
    laya_free(b);
  }
  laya_close(all);
  laya_close(f32);
  /* escalation off (-1) wins over LAYA_ESCALATE=1 */
  setenv("LAYA_ESCALATE", "1", 1);
  o.escalate = -1;
  laya_model *off = laya_open(ckdir, &o, &err);
  CHECK(off && strstr(laya_model_info(off), "\"precision\": \"bf16\"") != NULL);
  laya_close(off);
  o.escalate = 0; /* the environment decides */
  laya_model *env = laya_open(ckdir, &o, &err);
  CHECK(env && strstr(laya_model_info(env), "\"precision\": \"bf16+escalate\"") != NULL);
  laya_close(env);
  unsetenv("LAYA_ESCALATE");
  /* an artifact holds only bf16 weights: escalation is refused with the reason */
  o.escalate = 1;
  CHECK(laya_convert(ckdir, art, &o, &err) == 0);
  CHECK(laya_open(art, &o, &err) == NULL);
  CHECK(err.code == LAYA_ERR_UNSUPPORTED && strstr(err.message, "escalation") != NULL);
  unlink(art);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_escalate FIXTURES_DIR\n");
    return 2;
  }
  test_bound_exact();
  test_row_needed();
  test_t_min();
  test_api(argv[1]);
  return check_summary("cpu/escalate");
}
