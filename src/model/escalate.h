/*
 * escalate.h: precision escalation. A low-precision backend (bf16, int8; fp8 on CUDA) answers
 * every row of a packed batch; each row whose answer could still move by more than a target `tau`,
 * given the low precision's logit error, runs again through an exact backend (fp32 on the CPU; for
 * fp8, bf16 on the same GPU, so there tau is measured from the bf16 answer), and that row's answers
 * are taken from it.
 *
 * Why it is cheap: an option probability moves by about p_i * (dl_i - sum_j p_j dl_j), so a row whose
 * probabilities are all near 0 or 1 cannot move by tau even under a logit error of ~1; only near-tie
 * rows can. The logit error bound of a row is
 *     E = max(rel * max_j |l_j|, abs),  abs = margin * (the largest logit error on 8 fixed
 *                                              calibration rows, measured when the backend is made)
 * The logit error is a property of the model (its scorer gain, depth) and the precision more than of
 * the row: measured on the parity fixtures it correlates only weakly with the row's own logits
 * (corr 0.1-0.4; per-row ratio to max |l| up to 0.17-0.84), so the bound is calibrated on the model,
 * with the relative term for rows of unusually large logits. rel and margin per precision are the
 * measured worst ratios with a margin (BENCHMARKS.md, "Precision escalation"). A row is re-run when,
 * with every logit off by up to E, some option probability (softmax(l / T), T the model's smallest
 * decoding temperature) or the act probability (softmax of the act logits) could move by more than
 * tau, or its top option could change.
 *
 * The decision for a row reads only that row's low-precision logits, and both backends are
 * batch-invariant, so a row's answer never depends on its batch neighbours. Model code decides
 * which rows to recompute (here); the backends decide how.
 */
#ifndef LAYA_MODEL_ESCALATE_H
#define LAYA_MODEL_ESCALATE_H

#include "backend/backend.h"
#include "core/options.h"
#include "model/config.h"

typedef struct escalate_params {
  double rel, abs;         /* option-logit error bound: max(rel * max_j |l_j|, abs) */
  double act_rel, act_abs; /* the same for the act logits */
  double tau;              /* the largest probability change accepted without re-running */
  double t_min;            /* the smallest temperature option logits are decoded with */
  double margin;           /* abs = margin * the calibration rows' largest error (escalate_calibrate) */
  double cal, act_cal;     /* that measured error (options, act); 0 before calibration */
} escalate_params;

/* The measured defaults for a low precision (bf16, int8), with LAYA_ESCALATE_REL / _ABS / _TAU / _MARGIN
 * overriding them (studies and tests; env: laya_open's read, NULL: read here). t_min: the model's smallest decoding temperature. Returns
 * -1 for a precision that has no bound (fp32, fp16). */
int escalate_default_params(backend_precision p, double t_min, const laya_env_options *env, escalate_params *out);

/* Run `low` and `exact` on 8 fixed pseudo-random rows (token ids below vocab) and raise p->abs /
 * p->act_abs to p->margin times the largest logit / act-logit difference seen. Deterministic. */
int escalate_calibrate(backend *low, backend *exact, int vocab, int n_act, escalate_params *p, laya_error *err);

/* The largest change of any probability of softmax(x / T) over k values when each x_j may be off
 * by up to e (exact worst case, not a first-order estimate). 0 when k < 2. */
double escalate_prob_bound(const float *x, int k, double e, double T);

/* Why a row must be re-run (0: it need not): an option probability could move by more than tau,
 * the top option could change, the act probability could move by more than tau. */
enum { ESC_OPTIONS = 1, ESC_TOP = 2, ESC_ACT = 4 };
unsigned escalate_row_reasons(const escalate_params *p, const float *logits, int k, const float *act, int n_act);
/* 1 when the row (k option logits, n_act act logits) must be re-run at full precision. */
int escalate_row_needed(const escalate_params *p, const float *logits, int k, const float *act, int n_act);

/* A backend that runs `low`, then `exact` on the rows escalate_row_needed picks. Takes ownership of
 * both (they are destroyed with it, and on failure). n_act: the model's act logits per row. */
backend *backend_escalate_create(backend *low, backend *exact, int n_act, const escalate_params *p,
                                 laya_error *err);
/* The way every caller makes one: low (built with options o from weights w) wrapped with the fast
 * CPU backend in fp32 of the same weights (o's threads; fp8: the CUDA backend in bf16 on o's device), with the defaults for o->precision and
 * their calibration. Takes ownership of low; returns it unwrapped when o->precision has no
 * escalation (fp32), NULL on failure (low destroyed). */
backend *backend_escalate_open(backend *low, const model_weights *w, const backend_options *o, double t_min,
                               laya_error *err);
/* The parameters b runs with (b from backend_escalate_create), NULL otherwise. */
const escalate_params *backend_escalate_params(const backend *b);
/* Rows answered and rows re-run since create (b must come from backend_escalate_create). */
void backend_escalate_stats(const backend *b, long *rows, long *rerun);
/* The low-precision and the exact backend b runs (b from backend_escalate_create), NULL otherwise. */
void backend_escalate_parts(const backend *b, const backend **low, const backend **exact);
/* Escalation's t_min for a model: the smallest temperature any option logit is decoded with, over
 * the checkpoint's table (base: every question type and per-option-count entry) and every language
 * override (langs; NULL or empty when the model is opened without lang_temperatures); 0.5 (Laya's
 * clamp floor, always safe) when none is a positive number. laya_open and the benchmarks use this
 * one rule, so a benchmark re-runs the rows a served model would. */
double escalate_model_t_min(const temp_table *base, const lang_temps *langs);
/* 1 when b is an escalating backend. */
int backend_is_escalate(const backend *b);

#endif
