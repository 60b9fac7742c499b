/*
 * decode.h: from a row's logits to Laya's answer object, with NumPy float32 numerics.
 *
 * Laya decodes in NumPy float32: z = logit / float32(T), p = exp(z - max(z)) / sum, where the
 * sum is NumPy's pairwise summation (sequential below 8 terms, eight accumulators up to 128,
 * halves above). The score expectation is float64. Rounding is Python's round(x, 4).
 */
#ifndef LAYA_MODEL_DECODE_H
#define LAYA_MODEL_DECODE_H

#include <stdbool.h>

#include "core/strbuf.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/questions.h"
#include "model/typed.h"

/* min_confidence: none, one threshold, or a per-bucket map (Laya's check_min_confidence). */
typedef struct conf_gate {
  int mode; /* 0 none, 1 scalar, 2 map */
  double thr;
  int n;
  const char **keys;
  double *vals;
} conf_gate;

/* Parse a min_confidence JSON value (NULL or null = none) with Laya's ValueError texts. */
int conf_gate_parse(conf_gate *g, const json_value *v, arena *a, laya_error *err);

typedef struct decode_opts {
  const temp_table *tt; /* the table in force: a language override or the checkpoint's */
  bool lang_override;   /* binning is skipped under a language override */
  const binning_entry *binning;
  int n_binning; /* -1: none */
  const conf_gate *gate;
} decode_opts;

/* The answer of question q from one row. logits: the row's k option logits in slot order
 * (kept in the answer); act: the row's n_act act-head logits. The answer's arrays come from a;
 * -1 when out of memory. result_json.h writes it. */
int decode_answer(answer *out, const question *q, const float *logits, int k, const float *act,
                  int n_act, const decode_opts *o, arena *a);

/* NumPy's pairwise summation, float32 and float64. */
float np_pairwise_sum_f32(const float *a, long n);
double np_pairwise_sum_f64(const double *a, long n);
/* softmax as Laya computes it: float32 throughout, p = e / sum(e). */
void np_softmax_f32(const float *logits, int k, double T, float *p);
/* The act probability as Laya computes it (torch's float32 softmax of the n act logits, entry 0:
 * exp(x - max) times the reciprocal of the sum); 1 when there are none. */
float act_probability_f32(const float *act, int n);

#endif
