/*
 * eval.c: `laya eval {validate,run} DATASET`, the evaluation harness of Laya 0.4.15
 * (laya.evals / laya-evals) in C.
 *
 * A dataset is JSONL: {"state", "questions", "expected": {qid: label | bool | number}, "tags"?,
 * "language"?, "model"?}; blank and '#' lines are skipped. `run` answers every example (through
 * the Router, or one checkpoint directory with --model DIR), then reports accuracy per question
 * type, score MAE, mean confidence, ECE (15 bins), Brier, AURC, selective accuracy at 50% and 80%
 * coverage, and latency percentiles, overall and per language / model / question id / tag.
 * Exit status: 0, 1 when a gate (--min-accuracy, --max-ece, --min, --max) fails, 2 on an error.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_util.h"
#include "cli/predict.h"
#include "cli/precision.h"
#include "core/error.h"
#include "core/json.h"
#include "core/pystr.h"
#include "core/sha256.h"
#include "router/router.h"

typedef struct example {
  const json_value *state, *questions, *expected, *tags, *language, *model;
} example;

typedef struct ecase {
  const char *qid;
  const json_value *expected, *answer;
  const char *language, *model; /* may be NULL */
  const json_value *tags;
  bool has_conf;
  double conf;
  int correct; /* -1 = not applicable */
  double choice_acc, noul_acc, score_mae, mean_conf; /* NAN = not applicable */
} ecase;

static int eval_error(const char *fmt, const char *a, const char *b, const char *c) {
  fprintf(stderr, "laya-evals: ");
  fprintf(stderr, fmt, a, b, c);
  fputc('\n', stderr);
  return 2;
}

/* ---------------------------------------------------------------- dataset */

static int load_dataset(const char *path, arena *ar, example **out, size_t *n_out) {
  size_t len;
  char *text = cli_read_file(path, &len);
  if (!text) {
    char msg[512];
    snprintf(msg, sizeof msg, "[Errno %d] %s: '%s'", errno, strerror(errno), path);
    return eval_error("%s cannot be read: %s%s", path, msg, "");
  }
  size_t cap = 64, n = 0;
  example *ex = malloc(cap * sizeof *ex);
  size_t lineno = 0;
  char *p = text, *end = text + len;
  int rc = 0;
  while (p < end && !rc) {
    char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
    lineno++;
    size_t a = 0, m = 0;
    py_strip(p, l, &a, &m);
    char where[600];
    snprintf(where, sizeof where, "%s:%zu", path, lineno);
    if (m && p[a] != '#') {
      laya_error err = {0};
      json_value *row = json_parse(p + a, m, ar, NULL, &err);
      if (!row) {
        rc = eval_error("%s is not valid JSON: %s%s", where, err.message, "");
        break;
      }
      if (row->type != JSON_OBJECT) {
        rc = eval_error("%s must be an object, got %s%s", where, json_py_type(row), "");
        break;
      }
      static const char *const req[] = {"state", "questions", "expected"};
      for (int k = 0; k < 3 && !rc; k++)
        if (!json_get(row, req[k])) rc = eval_error("%s is missing '%s'%s", where, req[k], "");
      if (rc) break;
      example e = {json_get(row, "state"), json_get(row, "questions"), json_get(row, "expected"),
                   json_get(row, "tags"), json_get(row, "language"), json_get(row, "model")};
      if (e.questions->type != JSON_OBJECT) {
        rc = eval_error("%s 'questions' must be an object%s%s", where, "", "");
        break;
      }
      if (e.expected->type != JSON_OBJECT) {
        rc = eval_error("%s 'expected' must be an object keyed by question id%s%s", where, "", "");
        break;
      }
      /* expected ids must be question ids (reported sorted) */
      strbuf unknown;
      sb_init(&unknown);
      const char *names[256];
      int nu = 0;
      for (uint32_t i = 0; i < e.expected->n && nu < 256; i++)
        if (!json_get(e.questions, e.expected->members[i].key)) names[nu++] = e.expected->members[i].key;
      for (int i = 0; i < nu; i++)
        for (int j = i + 1; j < nu; j++)
          if (strcmp(names[i], names[j]) > 0) {
            const char *t = names[i];
            names[i] = names[j];
            names[j] = t;
          }
      for (int i = 0; i < nu; i++) sb_printf(&unknown, "%s%s", i ? ", " : "", names[i]);
      if (nu) {
        rc = eval_error("%s 'expected' names unknown question(s): %s%s", where, unknown.data, "");
        sb_free(&unknown);
        break;
      }
      sb_free(&unknown);
      if (e.tags && e.tags->type != JSON_NULL && e.tags->type != JSON_ARRAY &&
          !(e.tags->type == JSON_BOOL && !e.tags->b) && !(e.tags->type == JSON_STRING && !e.tags->n)) {
        rc = eval_error("%s 'tags' must be a list%s%s", where, "", "");
        break;
      }
      if (n == cap) {
        cap *= 2;
        ex = realloc(ex, cap * sizeof *ex);
      }
      ex[n++] = e;
    }
    p = nl ? nl + 1 : end;
  }
  free(text);
  if (!rc && n == 0) rc = eval_error("%s contains no examples%s%s", path, "", "");
  if (rc) {
    free(ex);
    return rc;
  }
  *out = ex;
  *n_out = n;
  return 0;
}

/* ---------------------------------------------------------------- metrics */

static const json_value *get(const json_value *o, const char *k) { return o ? json_get(o, k) : NULL; }

static bool is_num(const json_value *v) { return v && json_is_number(v); }

static bool type_is(const json_value *ans, const char *t) {
  const json_value *v = get(ans, "type");
  return v && v->type == JSON_STRING && !strcmp(v->s, t);
}

/* The confidence ECE reads: answer_confidence, else confidence, else max(p, 1-p) / max(p). */
static bool answer_conf(const json_value *ans, double *out) {
  const json_value *c = get(ans, "answer_confidence");
  if (is_num(c)) return *out = c->d, true;
  c = get(ans, "confidence");
  if (is_num(c)) return *out = c->d, true;
  if (type_is(ans, "noul")) {
    const json_value *p = get(ans, "noul");
    double v = is_num(p) ? p->d : 0.0;
    *out = v > 1.0 - v ? v : 1.0 - v;
    return true;
  }
  const json_value *pr = get(ans, "probabilities");
  if (pr && pr->type == JSON_OBJECT && pr->n) {
    double m = -INFINITY;
    for (uint32_t i = 0; i < pr->n; i++)
      if (is_num(&pr->members[i].value) && pr->members[i].value.d > m) m = pr->members[i].value.d;
    *out = m;
    return true;
  }
  return false;
}

static void score_case(ecase *c) {
  const json_value *a = c->answer, *x = c->expected;
  c->choice_acc = c->noul_acc = c->score_mae = c->mean_conf = NAN;
  c->correct = -1;
  if (type_is(a, "choice") && x->type == JSON_STRING) {
    const json_value *ch = get(a, "choice");
    bool ok = ch && ch->type == JSON_STRING && !strcmp(ch->s, x->s);
    c->choice_acc = ok;
    c->correct = ok;
  }
  if (type_is(a, "noul") && x->type == JSON_BOOL) {
    const json_value *p = get(a, "noul");
    bool ok = ((is_num(p) ? p->d : 0.0) >= 0.5) == x->b;
    c->noul_acc = ok;
    c->correct = ok;
  }
  if (type_is(a, "score") && is_num(x)) {
    const json_value *s = get(a, "score");
    c->score_mae = fabs((is_num(s) ? s->d : 0.0) - x->d);
  }
  c->has_conf = answer_conf(a, &c->conf);
  if (c->has_conf) c->mean_conf = c->conf;
}

typedef struct metric {
  char name[40];
  double value;
} metric;

typedef struct metrics {
  metric m[24];
  int n;
} metrics;

static void put(metrics *ms, const char *name, double v) {
  if (isnan(v) || ms->n >= 24) return;
  snprintf(ms->m[ms->n].name, sizeof ms->m[0].name, "%s", name);
  ms->m[ms->n++].value = v;
}

static double mean_of(ecase **cs, size_t n, size_t off) {
  double s = 0;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    double v = *(double *)((char *)cs[i] + off);
    if (!isnan(v)) {
      s += v;
      k++;
    }
  }
  return k ? s / (double)k : NAN;
}

typedef struct pair {
  double c;
  int y;
} pair;

/* descending by confidence, stable (ties keep input order); NaN last */
static int cmp_desc(const void *a, const void *b) {
  const pair *x = a, *y = b;
  bool xn = isnan(x->c), yn = isnan(y->c);
  if (xn != yn) return xn ? 1 : -1;
  if (!xn && x->c != y->c) return x->c > y->c ? -1 : 1;
  return 0;
}

static void calibration(pair *p, size_t n, metrics *ms) {
  /* ECE with 15 equal-width bins; the first bin is closed on the left */
  double e = 0;
  for (int i = 0; i < 15; i++) {
    double lo = i * (1.0 / 15.0), hi = i + 1 == 15 ? 1.0 : (i + 1) * (1.0 / 15.0);
    double sc = 0, sy = 0;
    size_t k = 0;
    for (size_t j = 0; j < n; j++) {
      double c = p[j].c;
      bool in = (i == 0 ? c >= lo : c > lo) && c <= hi;
      if (in) {
        sc += c;
        sy += p[j].y;
        k++;
      }
    }
    if (k) e += ((double)k / (double)n) * fabs(sc / (double)k - sy / (double)k);
  }
  put(ms, "ece", e);
  double b = 0;
  for (size_t j = 0; j < n; j++) b += (p[j].c - p[j].y) * (p[j].c - p[j].y);
  put(ms, "brier", b / (double)n);
  /* sort a copy with a stable merge (insertion for small n is stable too) */
  pair *s = malloc(n * sizeof *s);
  memcpy(s, p, n * sizeof *s);
  for (size_t i = 1; i < n; i++)
    for (size_t k = i; k > 0 && cmp_desc(&s[k - 1], &s[k]) > 0; k--) {
      pair t = s[k];
      s[k] = s[k - 1];
      s[k - 1] = t;
    }
  /* AURC over tie groups */
  double area = 0, hits = 0, prev_acc = 0;
  for (size_t i = 0; i < n; i++) {
    hits += s[i].y;
    bool last = i + 1 == n || (s[i + 1].c != s[i].c && !(isnan(s[i + 1].c) && isnan(s[i].c)));
    if (last) {
      double accepted = (double)(i + 1);
      area += (1.0 - hits / accepted) * (accepted - prev_acc);
      prev_acc = accepted;
    }
  }
  put(ms, "aurc", area / (double)n);
  const double covs[2] = {0.5, 0.8};
  const char *names[2] = {"selective_accuracy@50", "selective_accuracy@80"};
  for (int c = 0; c < 2; c++) {
    size_t k = (size_t)ceil(covs[c] * (double)n);
    if (k < 1) k = 1;
    double cut = s[k - 1].c;
    size_t acc = 0;
    if (isnan(cut)) acc = n;
    else
      while (acc < n && s[acc].c >= cut) acc++;
    double h = 0;
    for (size_t i = 0; i < acc; i++) h += s[i].y;
    put(ms, names[c], h / (double)acc);
  }
  free(s);
}

static void aggregate(ecase **cs, size_t n, metrics *ms) {
  ms->n = 0;
  put(ms, "choice_accuracy", mean_of(cs, n, offsetof(ecase, choice_acc)));
  put(ms, "noul_accuracy", mean_of(cs, n, offsetof(ecase, noul_acc)));
  put(ms, "score_mae", mean_of(cs, n, offsetof(ecase, score_mae)));
  put(ms, "mean_confidence", mean_of(cs, n, offsetof(ecase, mean_conf)));
  pair *p = malloc((n ? n : 1) * sizeof *p);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (cs[i]->has_conf && cs[i]->correct >= 0) p[k++] = (pair){cs[i]->conf, cs[i]->correct};
  if (k) calibration(p, k, ms);
  free(p);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* statistics.median and the nearest-rank 95th percentile */
static void percentiles(double *v, size_t n, double *p50, double *p95) {
  qsort(v, n, sizeof *v, cmp_double);
  *p50 = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
  size_t rank = (95 * n + 99) / 100;
  *p95 = v[rank - 1];
}

static const char *metric_get(const metrics *ms, const char *name, bool *found) {
  for (int i = 0; i < ms->n; i++)
    if (!strcmp(ms->m[i].name, name)) {
      *found = true;
      return ms->m[i].name;
    }
  *found = false;
  return NULL;
}

static double metric_value(const metrics *ms, const char *name) {
  for (int i = 0; i < ms->n; i++)
    if (!strcmp(ms->m[i].name, name)) return ms->m[i].value;
  return NAN;
}

/* ---------------------------------------------------------------- report */

/* idx[0..n): the metrics in name order (reports list them sorted, as Laya's sorted(dict)). */
static void name_order(const metrics *ms, int idx[24]) {
  for (int i = 0; i < ms->n; i++) idx[i] = i;
  for (int i = 0; i < ms->n; i++)
    for (int j = i + 1; j < ms->n; j++)
      if (strcmp(ms->m[idx[i]].name, ms->m[idx[j]].name) > 0) {
        int t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
      }
}

static void dump_metrics_sorted(strbuf *sb, const metrics *ms, int indent) {
  int idx[24];
  name_order(ms, idx);
  sb_putc(sb, '{');
  for (int i = 0; i < ms->n; i++) {
    char f[32];
    py_float_json(ms->m[idx[i]].value, f);
    sb_printf(sb, "%s\n%*s\"%s\": %s", i ? "," : "", indent + 2, "", ms->m[idx[i]].name, f);
  }
  if (ms->n) sb_printf(sb, "\n%*s", indent, "");
  sb_putc(sb, '}');
}

typedef struct slice_group {
  char key[128];
  ecase **cs;
  size_t n, cap;
} slice_group;

static void group_add(slice_group **gs, size_t *ng, const char *key, ecase *c) {
  size_t i = 0;
  while (i < *ng && strcmp((*gs)[i].key, key)) i++;
  if (i == *ng) {
    *gs = realloc(*gs, (*ng + 1) * sizeof **gs);
    memset(&(*gs)[i], 0, sizeof **gs);
    snprintf((*gs)[i].key, sizeof (*gs)[i].key, "%s", key);
    (*ng)++;
  }
  slice_group *g = &(*gs)[i];
  if (g->n == g->cap) {
    g->cap = g->cap ? g->cap * 2 : 16;
    g->cs = realloc(g->cs, g->cap * sizeof(ecase *));
  }
  g->cs[g->n++] = c;
}

static int cmp_group(const void *a, const void *b) {
  return strcmp(((const slice_group *)a)->key, ((const slice_group *)b)->key);
}

/* ---------------------------------------------------------------- commands */

static int usage(void) {
  fprintf(stderr,
          "usage: laya eval validate DATASET\n"
          "       laya eval run DATASET [--model NAME|DIR] [--device DEV] [--precision P] [--batch-size N]\n"
          "                 [--sort-by-length] [--on-error fail|skip] [--min-confidence P]\n"
          "                 [--min-accuracy F] [--max-ece F] [--min METRIC=V]... [--max METRIC=V]...\n"
          "                 [--slice language|model|qid|tag]... [--json OUT]\n");
  return 2;
}

static int parse_pair(const char *s, char *name, size_t cap, double *v) {
  const char *eq = strchr(s, '=');
  if (!eq || eq == s || (size_t)(eq - s) >= cap) return -1;
  memcpy(name, s, (size_t)(eq - s));
  name[eq - s] = 0;
  return py_float_from_str(eq + 1, strlen(eq + 1), v) ? 0 : -1;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static int cmd_run(int argc, char **argv) {
  const char *dataset = NULL, *model = NULL, *device = NULL, *json_out = NULL, *on_error = "fail", *precision = NULL;
  long long batch_size = 0;
  bool sort_by_length = false;
  double min_acc = NAN, max_ece = NAN, min_conf = -1;
  char mins[8][40], maxs[8][40];
  double minv[8], maxv[8];
  int nmin = 0, nmax = 0;
  const char *slices[4];
  int nslices = 0;
  static const char *const on_error_choices[] = {"fail", "skip", NULL};
  static const char *const slice_choices[] = {"language", "model", "qid", "tag", NULL};
  const char *min_acc_s = NULL, *max_ece_s = NULL, *min_conf_s = NULL;
  arg_list min_l = {0}, max_l = {0}, slice_l = {0};
  const arg_spec opts[] = {
      {"--model", ARG_STR, &model, NULL},           {"--device", ARG_STR, &device, NULL},
      {"--precision", ARG_CHOICE, &precision, cli_precisions},
      {"--json", ARG_STR, &json_out, NULL},         {"--on-error", ARG_CHOICE, &on_error, on_error_choices},
      {"--batch-size", ARG_INT, &batch_size, NULL}, {"--sort-by-length", ARG_FLAG, &sort_by_length, NULL},
      {"--min-accuracy", ARG_STR, &min_acc_s, NULL}, {"--max-ece", ARG_STR, &max_ece_s, NULL},
      {"--min-confidence", ARG_STR, &min_conf_s, NULL}, {"--min", ARG_LIST, &min_l, NULL},
      {"--max", ARG_LIST, &max_l, NULL},            {"--slice", ARG_LIST, &slice_l, slice_choices}};
  const size_t n_opts = sizeof opts / sizeof opts[0];
  arg_result ar_;
  int perr = cli_args_parse(argc, argv, 0, opts, n_opts, &ar_);
  char msg[600] = "";
  if (perr) snprintf(msg, sizeof msg, "%s", ar_.error);
  else if (ar_.n_positional > 1) snprintf(msg, sizeof msg, "unrecognized arguments: %s", ar_.positional[1]);
  dataset = !perr && ar_.n_positional ? ar_.positional[0] : NULL;
  const char *fl_name[3] = {"--min-accuracy", "--max-ece", "--min-confidence"};
  const char *fl_val[3] = {min_acc_s, max_ece_s, min_conf_s};
  double fl[3] = {NAN, NAN, -1};
  for (int k = 0; k < 3 && !msg[0]; k++)
    if (fl_val[k] && !py_float_from_str(fl_val[k], strlen(fl_val[k]), &fl[k]))
      snprintf(msg, sizeof msg, "argument %s: invalid float value: '%s'", fl_name[k], fl_val[k]);
  min_acc = fl[0], max_ece = fl[1], min_conf = fl[2];
  const char *bad_pair = NULL, *bad_pair_opt = NULL;
  for (int k = 0; k < min_l.n && !bad_pair; k++)
    if (nmin >= 8 || parse_pair(min_l.items[k], mins[nmin], 40, &minv[nmin])) bad_pair = min_l.items[k], bad_pair_opt = "--min";
    else nmin++;
  for (int k = 0; k < max_l.n && !bad_pair; k++)
    if (nmax >= 8 || parse_pair(max_l.items[k], maxs[nmax], 40, &maxv[nmax])) bad_pair = max_l.items[k], bad_pair_opt = "--max";
    else nmax++;
  for (int k = 0; k < slice_l.n; k++)
    if (nslices < 4) slices[nslices++] = slice_l.items[k];
  cli_args_free(opts, n_opts, &ar_);
  if (msg[0]) {
    fprintf(stderr, "laya eval: error: %s\n", msg);
    return 2;
  }
  if (min_conf_s && !(min_conf >= 0 && min_conf <= 1))
    return eval_error("min_confidence must be a float in [0.0, 1.0], got %s%s%s", min_conf_s, "", "");
  if (bad_pair) return eval_error("%s expects METRIC=VALUE, got '%s'%s", bad_pair_opt, bad_pair, "");
  if (!dataset) return usage();
  arena ar;
  arena_init(&ar, 1 << 16);
  example *ex = NULL;
  size_t n = 0;
  int rc = load_dataset(dataset, &ar, &ex, &n);
  if (rc) {
    arena_free(&ar);
    return rc;
  }
  router_config cfg;
  router_config_init(&cfg, false);
  cli_overrides ov;
  memset(&ov, 0, sizeof ov);
  ov.max_len = ov.head_max_len = ov.window = ov.stride = -1;
  ov.batch_size = batch_size > 0 ? batch_size : -1;
  ov.sort_by_length = sort_by_length;
  ov.min_confidence = min_conf;
  char model_name[64] = "";
  json_value model_v;
  memset(&model_v, 0, sizeof model_v);
  laya_error err = {0};
  if (model) {
    FILE *probe = fopen(model, "r");
    if (probe) {
      fclose(probe);
      ov.model_path = model;
    } else if (router_normalise_name(model, model_name, &err)) {
      router_config_free(&cfg);
      free(ex);
      arena_free(&ar);
      return eval_error("%s%s%s", err.message, "", "");
    } else {
      model_v = json_string(model_name);
      ov.model = &model_v;
    }
  }
  cli_use_precision(precision);
  cli_engine *eng = cli_engine_new(device, 2, &err);
  if (!eng) {
    router_config_free(&cfg);
    free(ex);
    arena_free(&ar);
    return eval_error("%s%s%s", err.message, "", "");
  }
  /* answer: chunks of consecutive examples sharing questions and model when --batch-size > 1 */
  ecase *cases = calloc(1, sizeof(ecase));
  size_t ncases = 0, capcases = 1;
  double *waits = malloc(n * sizeof(double)), *shares = malloc(n * sizeof(double));
  size_t nw = 0;
  char **sig = calloc(n, sizeof(char *));
  for (size_t i = 0; i < n; i++) {
    strbuf s;
    sb_init(&s);
    if (ex[i].model) json_dump(&s, ex[i].model, NULL);
    sb_putc(&s, '\n');
    json_dump(&s, ex[i].questions, NULL);
    sig[i] = sb_steal(&s);
  }
  size_t nerrors = 0;
  cli_progress prog;
  cli_progress_begin(&prog, n, "examples", false);
  for (size_t i = 0; i < n && !rc;) {
    size_t k = 1;
    if (batch_size > 1)
      while (i + k < n && (long long)k < batch_size && !strcmp(sig[i + k], sig[i])) k++;
    cli_overrides o = ov;
    json_value mv;
    if (!model && ex[i].model && ex[i].model->type == JSON_STRING) {
      mv = *ex[i].model;
      o.model = &mv;
    }
    char **results = calloc(k, sizeof(char *));
    double t0 = now_ms();
    int crc;
    if (k > 1) {
      json_value states = {.type = JSON_ARRAY, .n = (uint32_t)k};
      states.items = arena_alloc(&ar, k * sizeof(json_value));
      for (size_t j = 0; j < k; j++) states.items[j] = *ex[i + j].state;
      crc = cli_engine_answer_batch(eng, &cfg, CLI_PREDICT, &states, ex[i].questions, &o, results, &err);
    } else {
      crc = cli_engine_answer(eng, &cfg, CLI_PREDICT, ex[i].state, ex[i].questions, &o, results, &err);
    }
    double el = now_ms() - t0;
    if (crc) {
      if (!strcmp(on_error, "fail")) {
        fprintf(stderr, "laya-evals: example %zu: %s\n", i, err.message);
        rc = 2;
      } else {
        nerrors += k;
      }
    } else {
      for (size_t j = 0; j < k; j++) {
        waits[nw] = el;
        shares[nw++] = el / (double)k;
        json_value *res = json_parse(results[j], strlen(results[j]), &ar, NULL, &err);
        const json_value *answers = get(res, "answers");
        const example *e = &ex[i + j];
        const char *answered = NULL;
        const json_value *rm = get(get(res, "routing"), "model");
        if (rm && rm->type == JSON_STRING && rm->n) answered = rm->s;
        else if ((rm = get(res, "model")) && rm->type == JSON_STRING) answered = rm->s;
        for (uint32_t q = 0; q < e->expected->n; q++) {
          const json_value *ans = get(answers, e->expected->members[q].key);
          if (!ans || ans->type != JSON_OBJECT) {
            if (!strcmp(on_error, "fail")) {
              fprintf(stderr, "laya-evals: runner returned no answer for question '%s'\n",
                      e->expected->members[q].key);
              rc = 2;
              break;
            }
            nerrors++;
            continue;
          }
          if (ncases == capcases) {
            capcases *= 2;
            cases = realloc(cases, capcases * sizeof *cases);
          }
          ecase *c = &cases[ncases++];
          memset(c, 0, sizeof *c);
          c->qid = e->expected->members[q].key;
          c->expected = &e->expected->members[q].value;
          c->answer = ans;
          c->language = e->language && e->language->type == JSON_STRING ? e->language->s : NULL;
          c->model = e->model && e->model->type == JSON_STRING ? e->model->s : (model_name[0] ? model_name : answered);
          c->tags = e->tags;
          score_case(c);
        }
      }
    }
    for (size_t j = 0; j < k; j++) free(results[j]);
    free(results);
    i += k;
    cli_progress_update(&prog, i);
  }
  cli_progress_end(&prog);
  metrics overall;
  ecase **all = malloc((ncases ? ncases : 1) * sizeof(ecase *));
  for (size_t i = 0; i < ncases; i++) all[i] = &cases[i];
  aggregate(all, ncases, &overall);
  if (nw) {
    double p50, p95;
    percentiles(waits, nw, &p50, &p95);
    put(&overall, "latency_p50_ms", p50);
    put(&overall, "latency_p95_ms", p95);
    percentiles(shares, nw, &p50, &p95);
    put(&overall, "cost_per_decision_p50_ms", p50);
    put(&overall, "cost_per_decision_p95_ms", p95);
  }
  /* slices */
  const char *dims[4] = {"language", "model", "qid", "tag"};
  slice_group *groups[4] = {0};
  size_t ngroups[4] = {0};
  for (size_t i = 0; i < ncases; i++) {
    ecase *c = &cases[i];
    if (c->language) group_add(&groups[0], &ngroups[0], c->language, c);
    if (c->model) group_add(&groups[1], &ngroups[1], c->model, c);
    group_add(&groups[2], &ngroups[2], c->qid, c);
    if (c->tags && c->tags->type == JSON_ARRAY)
      for (uint32_t t = 0; t < c->tags->n; t++) {
        strbuf s;
        sb_init(&s);
        py_str_json(&s, &c->tags->items[t]);
        group_add(&groups[3], &ngroups[3], s.data ? s.data : "", c);
        sb_free(&s);
      }
  }
  /* gates */
  strbuf fails;
  sb_init(&fails);
  int nfail = 0;
  if (!isnan(min_acc) && nmin < 8) {
    bool f;
    metric_get(&overall, "choice_accuracy", &f);
    snprintf(mins[nmin], 40, "%s", f ? "choice_accuracy" : "noul_accuracy");
    minv[nmin++] = min_acc;
  }
  if (!isnan(max_ece) && nmax < 8) {
    snprintf(maxs[nmax], 40, "ece");
    maxv[nmax++] = max_ece;
  }
  for (int i = 0; i < nmin + nmax; i++) {
    bool is_min = i < nmin;
    const char *name = is_min ? mins[i] : maxs[i - nmin];
    double lim = is_min ? minv[i] : maxv[i - nmin];
    bool found;
    metric_get(&overall, name, &found);
    double v = metric_value(&overall, name);
    if (!found) sb_printf(&fails, "FAIL: metric '%s' is not in the report\n", name);
    else if (is_min && v < lim) sb_printf(&fails, "FAIL: %s=%.4f is below the minimum %.4f\n", name, v, lim);
    else if (!is_min && v > lim) sb_printf(&fails, "FAIL: %s=%.4f is above the maximum %.4f\n", name, v, lim);
    else continue;
    nfail++;
  }
  if (!rc) {
    /* overall metrics sorted by name, then the slices asked for */
    int idx[24];
    name_order(&overall, idx);
    for (int i = 0; i < overall.n; i++) printf("%-18s %.4f\n", overall.m[idx[i]].name, overall.m[idx[i]].value);
    for (int s = 0; s < nslices; s++) {
      int d = 0;
      while (strcmp(dims[d], slices[s])) d++;
      qsort(groups[d], ngroups[d], sizeof(slice_group), cmp_group);
      for (size_t g = 0; g < ngroups[d]; g++) {
        metrics m;
        aggregate(groups[d][g].cs, groups[d][g].n, &m);
        printf("  %s=%s ", dims[d], groups[d][g].key);
        int id2[24];
        name_order(&m, id2);
        for (int i = 0; i < m.n; i++) printf(" %s=%.4f", m.m[id2[i]].name, m.m[id2[i]].value);
        printf("\n");
      }
    }
    if (nerrors) printf("errors             %zu (skipped)\n", nerrors);
    if (json_out) {
      strbuf r;
      sb_init(&r);
      char hex[65] = "";
      sha256_file_hex(dataset, hex);
      sb_puts(&r, "{\n  \"cases\": [");
      for (size_t i = 0; i < ncases; i++) {
        ecase *c = &cases[i];
        sb_printf(&r, "%s\n    {\"answer\": ", i ? "," : "");
        json_dump(&r, c->answer, NULL);
        char f[32];
        if (c->has_conf) py_float_json(c->conf, f);
        sb_printf(&r, ", \"confidence\": %s, \"correct\": %s, \"expected\": ", c->has_conf ? f : "null",
                  c->correct < 0 ? "null" : c->correct ? "true" : "false");
        json_dump(&r, c->expected, NULL);
        sb_puts(&r, ", \"language\": ");
        if (c->language) json_dump_string(&r, c->language, strlen(c->language), false);
        else sb_puts(&r, "null");
        sb_puts(&r, ", \"model\": ");
        if (c->model) json_dump_string(&r, c->model, strlen(c->model), false);
        else sb_puts(&r, "null");
        sb_puts(&r, ", \"qid\": ");
        json_dump_string(&r, c->qid, strlen(c->qid), false);
        sb_puts(&r, ", \"tags\": ");
        if (c->tags && c->tags->type == JSON_ARRAY) json_dump(&r, c->tags, NULL);
        else sb_puts(&r, "[]");
        sb_putc(&r, '}');
      }
      sb_puts(&r, ncases ? "\n  ],\n" : "],\n");
      sb_printf(&r, "  \"config\": {\n    \"batch_size\": %lld,\n    \"coverage_metric_definition\": 2,\n"
                    "    \"dataset\": ", batch_size);
      json_dump_string(&r, dataset, strlen(dataset), false);
      sb_printf(&r, ",\n    \"dataset_sha256\": \"%s\",\n    \"device\": ", hex);
      if (device) json_dump_string(&r, device, strlen(device), false);
      else sb_puts(&r, "null");
      sb_printf(&r, ",\n    \"errors\": %zu,\n    \"laya_version\": \"%s\",\n    \"model\": ", nerrors,
                LAYA_COMPAT_VERSION);
      if (model) json_dump_string(&r, model, strlen(model), false);
      else sb_puts(&r, "null");
      sb_printf(&r, ",\n    \"runtime\": \"laya.c %s\",\n    \"schema\": \"laya-evals-report/1\",\n"
                    "    \"thresholds\": {\"max\": {", LAYA_VERSION);
      for (int i = 0; i < nmax; i++) {
        char f[32];
        py_float_json(maxv[i], f);
        sb_printf(&r, "%s\"%s\": %s", i ? ", " : "", maxs[i], f);
      }
      sb_puts(&r, "}, \"min\": {");
      for (int i = 0; i < nmin; i++) {
        char f[32];
        py_float_json(minv[i], f);
        sb_printf(&r, "%s\"%s\": %s", i ? ", " : "", mins[i], f);
      }
      sb_puts(&r, "}}\n  },\n  \"overall\": ");
      dump_metrics_sorted(&r, &overall, 2);
      sb_puts(&r, ",\n  \"slices\": {");
      int wrote = 0;
      for (int d = 0; d < 4; d++) {
        if (!ngroups[d]) continue;
        qsort(groups[d], ngroups[d], sizeof(slice_group), cmp_group);
        sb_printf(&r, "%s\n    \"%s\": {", wrote++ ? "," : "", dims[d]);
        for (size_t g = 0; g < ngroups[d]; g++) {
          metrics m;
          aggregate(groups[d][g].cs, groups[d][g].n, &m);
          sb_printf(&r, "%s\n      ", g ? "," : "");
          json_dump_string(&r, groups[d][g].key, strlen(groups[d][g].key), false);
          sb_puts(&r, ": ");
          dump_metrics_sorted(&r, &m, 6);
        }
        sb_puts(&r, "\n    }");
      }
      sb_puts(&r, wrote ? "\n  }\n}\n" : "}\n}\n");
      FILE *f = fopen(json_out, "wb");
      if (!f || fwrite(r.data, 1, r.len, f) != r.len) {
        if (f) fclose(f);
        fprintf(stderr, "laya-evals: cannot write report '%s': %s\n", json_out, strerror(errno));
        rc = 2;
      } else {
        fclose(f);
      }
      sb_free(&r);
    }
    if (!rc && nfail) {
      fputs(fails.data, stderr);
      rc = 1;
    }
  }
  sb_free(&fails);
  for (int d = 0; d < 4; d++) {
    for (size_t g = 0; g < ngroups[d]; g++) free(groups[d][g].cs);
    free(groups[d]);
  }
  for (size_t i = 0; i < n; i++) free(sig[i]);
  free(sig);
  free(all);
  free(cases);
  free(waits);
  free(shares);
  cli_engine_free(eng);
  router_config_free(&cfg);
  free(ex);
  arena_free(&ar);
  return rc;
}

static int cmd_validate(int argc, char **argv) {
  if (argc != 1) return usage();
  arena ar;
  arena_init(&ar, 1 << 16);
  example *ex = NULL;
  size_t n = 0;
  int rc = load_dataset(argv[0], &ar, &ex, &n);
  if (!rc) {
    const char *ids[1024];
    int nid = 0;
    for (size_t i = 0; i < n; i++)
      for (uint32_t q = 0; q < ex[i].questions->n; q++) {
        const char *k = ex[i].questions->members[q].key;
        int j = 0;
        while (j < nid && strcmp(ids[j], k)) j++;
        if (j == nid && nid < 1024) ids[nid++] = k;
      }
    for (int i = 0; i < nid; i++)
      for (int j = i + 1; j < nid; j++)
        if (strcmp(ids[i], ids[j]) > 0) {
          const char *t = ids[i];
          ids[i] = ids[j];
          ids[j] = t;
        }
    printf("%zu examples, %d question id(s): ", n, nid);
    for (int i = 0; i < nid; i++) printf("%s%s", i ? ", " : "", ids[i]);
    printf("\n");
  }
  free(ex);
  arena_free(&ar);
  return rc;
}

int cli_eval_main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  if (!strcmp(argv[1], "run")) return cmd_run(argc - 2, argv + 2);
  if (!strcmp(argv[1], "validate")) return cmd_validate(argc - 2, argv + 2);
  fprintf(stderr, "laya eval: error: argument command: invalid choice: '%s' (choose from 'run', 'validate')\n",
          argv[1]);
  return 2;
}
