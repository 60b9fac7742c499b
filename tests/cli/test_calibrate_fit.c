/* Temperature fitting (src/cli/calibrate_fit.c) on synthetic records with a known answer:
 * labels drawn from softmax(z / 2) must give back T close to 2, for a type and for a bucket
 * that clears the 2000-record floor; floors, clamping and buckets follow Laya's rules. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli/calibrate_fit.h"

static unsigned long long rng = 88172645463325252ull;
static double uni(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0;
}
static double gauss(void) {
  double u = uni() + 1e-12, v = uni();
  return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

static cal_record *make(int n, int qtype, int k, double T) {
  cal_record *r = calloc((size_t)n, sizeof *r);
  for (int i = 0; i < n; i++) {
    r[i].qtype = qtype;
    r[i].k = k;
    r[i].logits = calloc((size_t)k, sizeof(float));
    r[i].target = calloc((size_t)k, sizeof(float));
    double p[16], s = 0;
    for (int j = 0; j < k; j++) {
      r[i].logits[j] = (float)(3.0 * gauss());
      p[j] = exp(r[i].logits[j] / T);
      s += p[j];
    }
    double u = uni() * s, acc = 0;
    int pick = k - 1;
    for (int j = 0; j < k; j++) {
      acc += p[j];
      if (u <= acc) {
        pick = j;
        break;
      }
    }
    r[i].target[pick] = 1;
  }
  return r;
}

static void release(cal_record *r, int n) {
  for (int i = 0; i < n; i++) {
    free(r[i].logits);
    free(r[i].target);
  }
  free(r);
}

int main(void) {
  char b[24];
  cal_bucket(0, 2, b);
  CHECK_STREQ(b, "choice:2");
  cal_bucket(1, 5, b);
  CHECK_STREQ(b, "score:3-5");
  cal_bucket(2, 10, b);
  CHECK_STREQ(b, "noul:6-10");
  cal_bucket(0, 11, b);
  CHECK_STREQ(b, "choice:11+");
  CHECK(cal_clamp(0.1) == 0.5 && cal_clamp(9.0) == 5.0 && cal_clamp(NAN) == 1.0 && cal_clamp(1.7) == 1.7);

  /* a noul bucket of 2500 records from T = 2: the bucket and the type both recover it */
  int n = 2500;
  cal_record *r = make(n, 2, 2, 2.0);
  cal_result res;
  cal_fit_map(r, (size_t)n, &res);
  CHECK(fabs(res.temperature[2] - 2.0) < 0.25);
  CHECK(res.temperature[0] == 1.0 && res.temperature[1] == 1.0); /* no records: neutral */
  CHECK(res.n_buckets == 1 && !strcmp(res.bucket[0], "noul:2") && fabs(res.bucket_t[0] - 2.0) < 0.25);
  CHECK(res.n_seen == 1 && res.seen_n[0] == 2500);
  /* calibrated temperatures do not raise the ECE on their own data */
  cal_result one = {{1.0, 1.0, 1.0}, 0, {{0}}, {0}, {0}, 0, {{0}}, {0}};
  CHECK(cal_ece(r, (size_t)n, &res) <= cal_ece(r, (size_t)n, &one) + 1e-12);
  release(r, n);

  /* 300 choice records from T = 0.7: a type temperature, but no bucket below the floor */
  r = make(300, 0, 4, 0.7);
  cal_fit_map(r, 300, &res);
  CHECK(fabs(res.temperature[0] - 0.7) < 0.12);
  CHECK(res.n_buckets == 0 && res.n_seen == 1 && res.seen_n[0] == 300);
  release(r, 300);

  /* fewer than 10 records of a type: left at 1.0 */
  r = make(9, 1, 3, 3.0);
  cal_fit_map(r, 9, &res);
  CHECK(res.temperature[1] == 1.0);
  release(r, 9);

  /* labels independent of the logits want T far above 5: clamped to 5 */
  r = make(400, 1, 3, 1000.0);
  cal_fit_map(r, 400, &res);
  CHECK(res.temperature[1] == 5.0);
  release(r, 400);
  return check_summary("cli/calibrate_fit");
}
