/*
 * glu_act_rare.h: the rarer hidden_activation kinds of the GeGLU (model/weights.h enc_act from
 * ENC_ACT_FUSED_END on), one fp32 float at a time, in the form and order PyTorch's CPU kernels
 * evaluate each (transformers/activations.py and torch's element-wise kernels). The reference
 * backend (ref_ops.c) and every CPU kernel table (kernels.h cpu_glu_act, the SIMD tables lane by
 * lane) apply these; the common kinds keep their own forms there.
 */
#ifndef LAYA_CPU_GLU_ACT_RARE_H
#define LAYA_CPU_GLU_ACT_RARE_H

#include <math.h>

#include "model/weights.h"

/* LaplaceActivation's defaults: mu, and sigma sqrt(2) as Python computes it in double (the tensor
 * ops then take both as fp32 scalars) */
#define CPU_ACT_LAPLACE_MU 0.707107f
#define CPU_ACT_LAPLACE_DEN ((float)(0.282095 * 1.41421356237309504880))

static inline float cpu_act_rare(enc_act act, float x) {
  switch (act) {
    case ENC_ACT_GELU_10: { /* torch.clip(gelu(x), -10, 10), gelu the erf form */
      float g = 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
      return g < -10.0f ? -10.0f : g > 10.0f ? 10.0f : g;
    }
    case ENC_ACT_MISH: return x * tanhf(log1pf(expf(x)));
    case ENC_ACT_RELU2: {
      float r = x > 0.0f ? x : 0.0f;
      return r * r;
    }
    case ENC_ACT_RELU6: return x <= 0.0f ? 0.0f : x >= 6.0f ? 6.0f : x;
    case ENC_ACT_LEAKY_RELU: return x > 0.0f ? x : x * 0.01f;
    case ENC_ACT_HARDSWISH: {
      float c = x + 3.0f;
      c = c < 0.0f ? 0.0f : c > 6.0f ? 6.0f : c;
      return x * c / 6.0f;
    }
    case ENC_ACT_TANH: return tanhf(x);
    case ENC_ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case ENC_ACT_LINEAR: return x;
    case ENC_ACT_LAPLACE: return 0.5f * (1.0f + erff((x - CPU_ACT_LAPLACE_MU) / CPU_ACT_LAPLACE_DEN));
    case ENC_ACT_SQRT_SOFTPLUS: return sqrtf(x > 20.0f ? x : log1pf(expf(x))); /* softplus: beta 1, threshold 20 */
    default: break;
  }
  return x; /* not a rare kind: callers apply their own forms */
}

#endif
