/*
 * glu_ref_d.h: the GeGLU activations (model/weights.h enc_act) in double, from transformers'
 * formulas (activations.py; torch's own for the nn modules), for the kernel tests' naive products;
 * and a bound on |act'| near a point, for the tests that carry an error bound through the activation.
 */
#ifndef LAYA_TEST_GLU_REF_D_H
#define LAYA_TEST_GLU_REF_D_H

#include <math.h>

#include "model/weights.h"

static inline double glu_ref_gelu_d(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }

static inline double glu_ref_d(enc_act act, double x) {
  switch (act) {
    case ENC_ACT_GELU_TANH: return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case ENC_ACT_QUICK_GELU: return x / (1.0 + exp(-1.702 * x));
    case ENC_ACT_SILU: return x / (1.0 + exp(-x));
    case ENC_ACT_RELU: return x > 0 ? x : 0;
    case ENC_ACT_GELU_10: return fmin(fmax(glu_ref_gelu_d(x), -10.0), 10.0);
    case ENC_ACT_MISH: return x * tanh(log1p(exp(x)));
    case ENC_ACT_RELU2: return x > 0 ? x * x : 0;
    case ENC_ACT_RELU6: return fmin(fmax(x, 0.0), 6.0);
    case ENC_ACT_LEAKY_RELU: return x > 0 ? x : 0.01 * x;
    case ENC_ACT_HARDSWISH: return x * fmin(fmax(x + 3.0, 0.0), 6.0) / 6.0;
    case ENC_ACT_TANH: return tanh(x);
    case ENC_ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case ENC_ACT_LINEAR: return x;
    case ENC_ACT_LAPLACE: return 0.5 * (1.0 + erf((x - 0.707107) / (0.282095 * sqrt(2.0))));
    case ENC_ACT_SQRT_SOFTPLUS: return sqrt(x > 20 ? x : log1p(exp(x)));
    default: break;
  }
  return glu_ref_gelu_d(x);
}

/* max |act'(v)| over |v - x| <= dx (an upper bound): 1.13 for the GELUs and the sigmoid forms */
static inline double glu_ref_slope(enc_act act, double x, double dx) {
  switch (act) {
    case ENC_ACT_RELU2: return 2.0 * (fabs(x) + dx);
    case ENC_ACT_HARDSWISH: return 1.5;
    case ENC_ACT_LAPLACE: return 1.0 / (0.282095 * sqrt(2.0) * sqrt(M_PI)); /* 1.42 */
    default: return 1.13;
  }
}

#endif
