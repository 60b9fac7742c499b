/* calibrate_fit.h: temperature scaling fits with Laya 0.4.15's rules (laya.calibrate).
 *
 * A record is one answered question: its type, the raw option logits the decoder divides by the
 * temperature, and a target probability vector. One scalar temperature is fitted per question
 * type (at least 10 records) and one per (type, option-count bucket) with at least 2000 records;
 * each minimises the mean negative log-likelihood of softmax(z / T) over log T, and is clamped to
 * [0.5, 5] (a fit that is not a number becomes 1.0). */
#ifndef LAYA_CLI_CALIBRATE_FIT_H
#define LAYA_CLI_CALIBRATE_FIT_H

#include <stddef.h>

#define CAL_MIN_TYPE_N 10
#define CAL_MIN_BUCKET_N 2000
#define CAL_TEMP_MIN 0.5
#define CAL_TEMP_MAX 5.0

typedef struct cal_record {
  int qtype; /* 0 choice, 1 score, 2 noul */
  int k;
  float *logits; /* [k] */
  float *target; /* [k] */
} cal_record;

/* "<type>:2" | ":3-5" | ":6-10" | ":11+" */
void cal_bucket(int qtype, int k, char out[24]);

/* The unclamped NLL-optimal temperature of these records (1.0 when fewer than min_n). */
double cal_fit_unclamped(const cal_record *const *recs, size_t n, size_t min_n);
double cal_clamp(double t);

typedef struct cal_result {
  double temperature[3];
  int n_buckets;
  char bucket[12][24];
  double bucket_t[12];
  size_t bucket_n[12]; /* every bucket seen, fitted or not (n_by_bucket) */
  int n_seen;
  char seen[12][24];
  size_t seen_n[12];
} cal_result;

void cal_fit_map(const cal_record *recs, size_t n, cal_result *out);

/* Expected calibration error (15 bins) of max-probability confidence at these temperatures. */
double cal_ece(const cal_record *recs, size_t n, const cal_result *temps);

#endif
