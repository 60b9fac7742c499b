/*
 * act_bound.h: the bound cpu/act_values and cuda/act_values hold a GeGLU activation to against
 * torch's fp32 value (tests/fixtures/act/values.json): 4 ulps of torch's value, plus 8 fp32
 * epsilons of the largest term the formula adds or subtracts where it cancels (|x| for the
 * x-times-something forms, 1 for laplace's 0.5 (1 + erf)), plus, for sqrtsoftplus far below 0, a
 * subnormal softplus's few FLT_TRUE_MIN through the square root. torch's kernels and ours are each
 * within a few ulps of those terms, not of a cancelled result.
 */
#ifndef LAYA_TEST_ACT_BOUND_H
#define LAYA_TEST_ACT_BOUND_H

#include <float.h>
#include <math.h>
#include <stdio.h>

#include "core/arena.h"
#include "core/fsutil.h"
#include "core/json.h"
#include "model/weights.h"

/* FIXTURES/act/values.json read into *text (the caller frees it) and parsed into ar (initialised
 * here; the caller frees it): its root, or NULL after printing why. */
static inline const json_value *act_values_load(const char *fixtures, char **text, arena *ar) {
  char path[4096];
  snprintf(path, sizeof path, "%s/act/values.json", fixtures);
  laya_error err;
  size_t len = 0;
  arena_init(ar, 1 << 20);
  *text = fs_read_file(path, &len, &err);
  if (!*text) {
    fprintf(stderr, "%s\n", err.message);
    return NULL;
  }
  const json_value *doc = json_parse(*text, len, ar, NULL, &err);
  if (!doc) fprintf(stderr, "%s: %s\n", path, err.message);
  return doc;
}

/* the largest term that may cancel in act's formula at x */
static inline double act_cancel_scale(enc_act act, double x) {
  switch (act) {
    case ENC_ACT_LAPLACE: return 1.0;
    case ENC_ACT_SIGMOID:
    case ENC_ACT_TANH:
    case ENC_ACT_SQRT_SOFTPLUS:
    case ENC_ACT_RELU2:
    case ENC_ACT_RELU:
    case ENC_ACT_RELU6:
    case ENC_ACT_LINEAR:
    case ENC_ACT_LEAKY_RELU: return 0.0;
    default: return fabs(x);
  }
}

static inline double act_ulp_of(float y) {
  float a = fabsf(y);
  if (!isfinite(a)) return 0.0;
  return (double)nextafterf(a, INFINITY) - (double)a;
}

static inline int act_within(enc_act act, float x, float got, float want, double *worst) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  double err = fabs((double)got - (double)want);
  double bound = 4.0 * act_ulp_of(want) + 8.0 * FLT_EPSILON * act_cancel_scale(act, x);
  /* sqrtsoftplus far below 0: softplus = exp(x) is subnormal, good to a few FLT_TRUE_MIN (torch's
   * exp and libm's round it differently there), which the square root turns into this */
  if (act == ENC_ACT_SQRT_SOFTPLUS && want > 0) bound += 4.0 * FLT_TRUE_MIN / (2.0 * want);
  if (bound > 0 && err / bound > *worst) *worst = err / bound;
  return err <= bound;
}

#endif
