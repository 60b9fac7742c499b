#include "model/decode.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pystr.h"

float np_pairwise_sum_f32(const float *a, long n) {
  if (n < 8) {
    float r = 0.0f; /* NumPy starts the reduction from the identity */
    for (long i = 0; i < n; i++) r += a[i];
    return r;
  }
  if (n <= 128) {
    float r[8];
    for (int j = 0; j < 8; j++) r[j] = a[j];
    long i;
    for (i = 8; i < n - (n % 8); i += 8)
      for (int j = 0; j < 8; j++) r[j] += a[i + j];
    float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i++) res += a[i];
    return res;
  }
  long n2 = n / 2;
  n2 -= n2 % 8;
  return np_pairwise_sum_f32(a, n2) + np_pairwise_sum_f32(a + n2, n - n2);
}

double np_pairwise_sum_f64(const double *a, long n) {
  if (n < 8) {
    double r = 0.0;
    for (long i = 0; i < n; i++) r += a[i];
    return r;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; j++) r[j] = a[j];
    long i;
    for (i = 8; i < n - (n % 8); i += 8)
      for (int j = 0; j < 8; j++) r[j] += a[i + j];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i++) res += a[i];
    return res;
  }
  long n2 = n / 2;
  n2 -= n2 % 8;
  return np_pairwise_sum_f64(a, n2) + np_pairwise_sum_f64(a + n2, n - n2);
}

void np_softmax_f32(const float *logits, int k, double T, float *p) {
  const float t = (float)T;
  float m = -INFINITY;
  for (int i = 0; i < k; i++) {
    p[i] = logits[i] / t;
    if (p[i] > m || isnan(p[i])) m = isnan(m) ? m : p[i];
  }
  for (int i = 0; i < k; i++) p[i] = expf(p[i] - m);
  float s = np_pairwise_sum_f32(p, k);
  for (int i = 0; i < k; i++) p[i] /= s;
}

float act_probability_f32(const float *act, int n) {
  if (n < 1) return 1.0f;
  float m = act[0];
  for (int i = 1; i < n; i++)
    if (act[i] > m) m = act[i];
  float s = 0.0f, e0 = 0.0f;
  for (int i = 0; i < n; i++) {
    float e = expf(act[i] - m);
    if (i == 0) e0 = e;
    s += e;
  }
  return e0 * (1.0f / s);
}

/* confidence_from_probs: 1 - H/ln(k), H in float32 (clip, log, product, pairwise sum), the
 * final division in float64 (Laya converts the sum with float() first). */
static double entropy_confidence(const float *p, int k, float *scratch) {
  if (k < 2) return 1.0;
  for (int i = 0; i < k; i++) {
    float c = p[i] < 1e-12f ? 1e-12f : (p[i] > 1.0f ? 1.0f : p[i]);
    if (isnan(p[i])) c = p[i];
    scratch[i] = p[i] * logf(c);
  }
  double ent = -(double)np_pairwise_sum_f32(scratch, k);
  double score = 1.0 - ent / log((double)k);
  return score < 0.0 ? 0.0 : (score > 1.0 ? 1.0 : score);
}

static void bucket_of(int qt, int k, char out[16]) { temp_bucket_name(qt, k, out); }

int conf_gate_parse(conf_gate *g, const json_value *v, arena *a, laya_error *err) {
  memset(g, 0, sizeof *g);
  if (!v || v->type == JSON_NULL) return 0;
  strbuf r;
  sb_init(&r);
  int rc = 0;
  if (v->type == JSON_OBJECT) {
    if (v->n == 0) {
      rc = laya_value_error(err, "a min_confidence map must be a non-empty dict of bucket -> float, got {}");
      goto done;
    }
    g->mode = 2;
    g->keys = arena_alloc(a, sizeof(char *) * v->n);
    g->vals = arena_alloc(a, sizeof(double) * v->n);
    if (!g->keys || !g->vals) {
      rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
      goto done;
    }
    const char *const *types = question_type_names;
    static const char *const sizes[4] = {"2", "3-5", "6-10", "11+"};
    for (uint32_t i = 0; i < v->n; i++) {
      const json_member *m = &v->members[i];
      bool ok = strcmp(m->key, "default") == 0;
      for (int t = 0; t < 3 && !ok; t++)
        for (int s = 0; s < 4 && !ok; s++) {
          char b[16];
          snprintf(b, sizeof b, "%s:%s", types[t], sizes[s]);
          ok = strcmp(b, m->key) == 0 && strlen(m->key) == m->key_len;
        }
      if (!ok) {
        sb_reset(&r);
        py_repr_str(&r, m->key, m->key_len);
        rc = laya_value_error(err,
                              "min_confidence map keys must be a bucket like 'choice:3-5' or "
                              "'default', got %s",
                              sb_cstr(&r));
        goto done;
      }
      const json_value *x = &m->value;
      if (!json_is_number(x) || !isfinite(x->d) || x->d < 0.0 || x->d > 1.0) {
        sb_reset(&r);
        py_repr_json(&r, x);
        rc = laya_value_error(err, "min_confidence must be a float in [0.0, 1.0], got %s", sb_cstr(&r));
        goto done;
      }
      g->keys[g->n] = m->key;
      g->vals[g->n++] = x->d;
    }
    goto done;
  }
  if (!json_is_number(v) || !isfinite(v->d) || v->d < 0.0 || v->d > 1.0) {
    py_repr_json(&r, v);
    rc = laya_value_error(err, "min_confidence must be a float in [0.0, 1.0], got %s", sb_cstr(&r));
    goto done;
  }
  g->mode = 1;
  g->thr = v->d;
done:
  sb_free(&r);
  return rc;
}

static double gate_threshold(const conf_gate *g, int qt, int k) {
  if (g->mode == 1) return g->thr;
  char b[16];
  bucket_of(qt, qt == QT_NOUL ? 2 : k, b);
  for (int i = 0; i < g->n; i++)
    if (strcmp(g->keys[i], b) == 0) return g->vals[i];
  for (int i = 0; i < g->n; i++)
    if (strcmp(g->keys[i], "default") == 0) return g->vals[i];
  return 0.0;
}

int decode_answer(answer *out, const question *q, const float *logits, int k, const float *act,
                  int n_act, const decode_opts *o, arena *a) {
  float stack_p[64], stack_s[64], stack_c[64];
  float *slot = k <= 64 ? stack_p : malloc(sizeof(float) * (size_t)k);
  float *p = k <= 64 ? stack_c : malloc(sizeof(float) * (size_t)k);
  float *scratch = k <= 64 ? stack_s : malloc(sizeof(float) * (size_t)k);
  memset(out, 0, sizeof *out);
  out->q = q;
  out->k = k;
  out->prob = arena_alloc(a, sizeof(double) * (size_t)(k ? k : 1));
  float *kept = arena_alloc(a, sizeof(float) * (size_t)(k ? k : 1));
  int rc = 0;
  if (!slot || !p || !scratch || !out->prob || !kept) {
    rc = -1;
    goto done;
  }
  memcpy(kept, logits, sizeof(float) * (size_t)k);
  out->logits = kept;
  const int qt = q->type;
  const double T = temp_lookup(o->tt, qt, k);
  np_softmax_f32(logits, k, T, slot);
  /* the row is in slot order; answers index by option */
  if (q->order && q->n_opts == k)
    for (int s = 0; s < k; s++) p[q->order[s]] = slot[s];
  else
    memcpy(p, slot, sizeof(float) * (size_t)k);
  for (int i = 0; i < k; i++) out->prob[i] = py_round4((double)p[i]);

  double ans_raw = 1.0;
  if (k >= 1) {
    float mx = p[0];
    for (int i = 1; i < k; i++)
      if (p[i] > mx || isnan(p[i])) mx = isnan(mx) ? mx : p[i];
    ans_raw = (double)mx;
    ans_raw = ans_raw < 0.0 ? 0.0 : (ans_raw > 1.0 ? 1.0 : ans_raw);
  }
  if (o->n_binning >= 0 && !o->lang_override) {
    char b[16];
    bucket_of(qt, k, b);
    for (int i = 0; i < o->n_binning; i++)
      if (strcmp(o->binning[i].bucket, b) == 0 && o->binning[i].bins > 0) {
        int bins = o->binning[i].bins;
        double x = ans_raw * bins;
        long bi = isnan(x) ? 0 : (long)x; /* int() truncates */
        if (bi < 0) bi = 0;
        if (bi > bins - 1) bi = bins - 1;
        ans_raw = o->binning[i].values[bi];
        break;
      }
  }
  out->answer_confidence = py_round4(ans_raw);
  out->act_probability = py_round4((double)act_probability_f32(act, n_act));

  if (qt == QT_CHOICE) {
    int arg = 0;
    for (int i = 1; i < k; i++)
      if (p[i] > p[arg]) arg = i;
    for (int i = 0; i < k; i++)
      if (isnan(p[i])) {
        arg = i;
        break;
      }
    out->top = arg;
    out->confidence = py_round4(entropy_confidence(p, k, scratch));
  } else if (qt == QT_SCORE) {
    double stack_t[64];
    double *terms = k <= 64 ? stack_t : malloc(sizeof(double) * (size_t)k);
    if (!terms) {
      rc = -1;
      goto done;
    }
    for (int i = 0; i < k; i++) terms[i] = (double)i * (double)p[i];
    out->score = py_round4(np_pairwise_sum_f64(terms, k));
    if (k > 64) free(terms);
    out->confidence = py_round4(entropy_confidence(p, k, scratch));
  } else {
    double p1 = k > 1 ? (double)p[1] : NAN;
    out->noul = py_round4(p1);
    out->confidence = py_round4(p1 > 1.0 - p1 ? p1 : 1.0 - p1);
  }
  if (o->gate && o->gate->mode) {
    const double ans_conf = out->answer_confidence, conf_h = out->confidence;
    bool usable = isfinite(ans_conf) || isfinite(conf_h);
    double conf = isfinite(ans_conf) ? ans_conf : conf_h;
    out->threshold = gate_threshold(o->gate, qt, k);
    out->gate = !usable ? GATE_UNEVALUATED : conf < out->threshold ? GATE_ABSTAINED : GATE_PASSED;
  }
done:
  if (k > 64) {
    free(slot);
    free(p);
    free(scratch);
  }
  return rc;
}
