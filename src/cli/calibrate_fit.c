/* calibrate_fit.c: see calibrate_fit.h.
 *
 * Laya minimises with LBFGS from log T = 0; the objective is one-dimensional, so a bracketing
 * golden-section search over Laya's search band (10 e-folds beyond [0.5, 5] either side) followed
 * by Newton steps reaches the same minimum without its step-size tuning. */
#include "cli/calibrate_fit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/questions.h"

void cal_bucket(int qtype, int k, char out[24]) {
  const char *const *names = question_type_names;
  const char *size = k <= 2 ? "2" : k <= 5 ? "3-5" : k <= 10 ? "6-10" : "11+";
  snprintf(out, 24, "%s:%s", names[qtype < 0 || qtype > 2 ? 0 : qtype], size);
}

double cal_clamp(double t) {
  if (isnan(t)) return 1.0;
  return t < CAL_TEMP_MIN ? CAL_TEMP_MIN : t > CAL_TEMP_MAX ? CAL_TEMP_MAX : t;
}

/* mean over records of -sum(t * log_softmax(z / T)) */
static double nll(const cal_record *const *recs, size_t n, double log_t) {
  double T = exp(log_t), total = 0;
  for (size_t i = 0; i < n; i++) {
    const cal_record *r = recs[i];
    double m = -INFINITY;
    for (int j = 0; j < r->k; j++)
      if (r->logits[j] / T > m) m = r->logits[j] / T;
    double s = 0;
    for (int j = 0; j < r->k; j++) s += exp(r->logits[j] / T - m);
    double lse = m + log(s);
    for (int j = 0; j < r->k; j++) total -= r->target[j] * (r->logits[j] / T - lse);
  }
  return total / (double)n;
}

double cal_fit_unclamped(const cal_record *const *recs, size_t n, size_t min_n) {
  if (n < min_n || n == 0) return 1.0;
  double lo = log(CAL_TEMP_MIN) - 10.0, hi = log(CAL_TEMP_MAX) + 10.0;
  /* coarse scan for the bracket, then golden section */
  int best = 0;
  double bv = INFINITY;
  const int steps = 200;
  for (int i = 0; i <= steps; i++) {
    double x = lo + (hi - lo) * i / steps, v = nll(recs, n, x);
    if (v < bv) {
      bv = v;
      best = i;
    }
  }
  double a = lo + (hi - lo) * (best > 0 ? best - 1 : 0) / steps;
  double b = lo + (hi - lo) * (best < steps ? best + 1 : steps) / steps;
  const double g = (sqrt(5.0) - 1) / 2;
  double c = b - g * (b - a), d = a + g * (b - a);
  double fc = nll(recs, n, c), fd = nll(recs, n, d);
  for (int it = 0; it < 100 && b - a > 1e-10; it++) {
    if (fc < fd) {
      b = d;
      d = c;
      fd = fc;
      c = b - g * (b - a);
      fc = nll(recs, n, c);
    } else {
      a = c;
      c = d;
      fc = fd;
      d = a + g * (b - a);
      fd = nll(recs, n, d);
    }
  }
  double x = (a + b) / 2;
  return exp(x);
}

void cal_fit_map(const cal_record *recs, size_t n, cal_result *out) {
  memset(out, 0, sizeof *out);
  const cal_record **sel = malloc((n ? n : 1) * sizeof *sel);
  for (int qt = 0; qt < 3; qt++) {
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
      if (recs[i].qtype == qt) sel[m++] = &recs[i];
    out->temperature[qt] = m >= CAL_MIN_TYPE_N ? cal_clamp(cal_fit_unclamped(sel, m, CAL_MIN_TYPE_N)) : 1.0;
  }
  /* buckets, in first-seen order */
  for (size_t i = 0; i < n; i++) {
    char b[24];
    cal_bucket(recs[i].qtype, recs[i].k, b);
    int j = 0;
    while (j < out->n_seen && strcmp(out->seen[j], b)) j++;
    if (j == out->n_seen && j < 12) snprintf(out->seen[out->n_seen++], 24, "%s", b);
    if (j < 12) out->seen_n[j]++;
  }
  for (int j = 0; j < out->n_seen; j++) {
    if (out->seen_n[j] < CAL_MIN_BUCKET_N) continue;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
      char b[24];
      cal_bucket(recs[i].qtype, recs[i].k, b);
      if (!strcmp(b, out->seen[j])) sel[m++] = &recs[i];
    }
    snprintf(out->bucket[out->n_buckets], 24, "%s", out->seen[j]);
    out->bucket_n[out->n_buckets] = m;
    out->bucket_t[out->n_buckets++] = cal_clamp(cal_fit_unclamped(sel, m, CAL_MIN_BUCKET_N));
  }
  free(sel);
}

double cal_ece(const cal_record *recs, size_t n, const cal_result *t) {
  if (!n) return NAN;
  double *conf = malloc(n * sizeof(double)), *corr = malloc(n * sizeof(double));
  for (size_t i = 0; i < n; i++) {
    const cal_record *r = &recs[i];
    char b[24];
    cal_bucket(r->qtype, r->k, b);
    double T = t->temperature[r->qtype];
    for (int j = 0; j < t->n_buckets; j++)
      if (!strcmp(t->bucket[j], b)) T = t->bucket_t[j];
    double m = -INFINITY, s = 0;
    int arg = 0, targ = 0;
    for (int j = 0; j < r->k; j++) {
      if (r->logits[j] > r->logits[arg]) arg = j;
      if (r->target[j] > r->target[targ]) targ = j;
      if (r->logits[j] / T > m) m = r->logits[j] / T;
    }
    for (int j = 0; j < r->k; j++) s += exp(r->logits[j] / T - m);
    conf[i] = exp(r->logits[arg] / T - m) / s;
    corr[i] = arg == targ;
  }
  double e = 0;
  for (int b = 0; b < 15; b++) {
    double lo = b * (1.0 / 15.0), hi = b == 14 ? 1.0 : (b + 1) * (1.0 / 15.0), sc = 0, sy = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
      if ((b == 0 ? conf[i] >= lo : conf[i] > lo) && conf[i] <= hi) {
        sc += conf[i];
        sy += corr[i];
        k++;
      }
    if (k) e += (double)k / (double)n * fabs(sc / (double)k - sy / (double)k);
  }
  free(conf);
  free(corr);
  return e;
}
