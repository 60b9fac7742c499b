/*
 * calibrate.c: `laya calibrate --model DIR --data FILE`, temperature calibration of a checkpoint
 * from labelled data (Laya 0.4.15's laya.calibrate: records_from_labeled + fit_temperature_map).
 *
 * Every labelled question is answered once to record the raw option logits the decoder divides
 * by its temperature; temperatures are then fitted per question type and per (type, option-count)
 * bucket (calibrate_fit.c). The result is printed with the ECE before and after on the same data,
 * written as Laya's calibration payload (--out FILE), and/or written into the checkpoint's
 * rl_agent_config.json (--write-config).
 *
 * Data: JSONL rows {"state", "questions", "expected": {qid: label | bool | level}} (the eval
 * format) or {"state", "questions", "gold": {qid: {"probabilities": {key: p}}}} (the training
 * format: choice keyed by label, noul by "false"/"true", score by "0".."k-1").
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/calibrate_fit.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_util.h"
#include "cli/precision.h"
#include "core/error.h"
#include "core/json.h"
#include "core/pystr.h"
#include "model/engine.h"
#include "model/questions.h"
#include "model/typed.h"

static bool grow_records(cal_record **recs, size_t *cap) {
  cal_record *r = realloc(*recs, *cap * 2 * sizeof *r);
  if (!r) return false;
  *recs = r;
  *cap *= 2;
  return true;
}

/* Target vector of question q (option order), from an eval-style label or a gold distribution.
 * Returns false when the row gives nothing usable for q. */
static bool target_for(const question *q, const json_value *expected, const json_value *gold, float *t) {
  int n = q->n_opts;
  for (int i = 0; i < n; i++) t[i] = 0;
  if (gold) {
    const json_value *pr = json_get(gold, "probabilities");
    if (!pr || pr->type != JSON_OBJECT) return false;
    for (int i = 0; i < n; i++) {
      strbuf key;
      sb_init(&key);
      if (q->type == QT_CHOICE) py_str_json(&key, q->label[i]);
      else if (q->type == QT_NOUL) sb_puts(&key, i ? "true" : "false");
      else sb_printf(&key, "%d", i);
      const json_value *v = json_get(pr, key.data ? key.data : "");
      if (v && json_is_number(v)) t[i] = (float)v->d;
      sb_free(&key);
    }
    return true;
  }
  if (!expected) return false;
  if (q->type == QT_NOUL && expected->type == JSON_BOOL) {
    t[expected->b ? 1 : 0] = 1;
    return true;
  }
  if (q->type == QT_SCORE && expected->type == JSON_INT && !expected->big && expected->i >= 0 &&
      expected->i < n) {
    t[expected->i] = 1;
    return true;
  }
  if (q->type == QT_CHOICE && expected->type == JSON_STRING) {
    for (int i = 0; i < n; i++) {
      strbuf l;
      sb_init(&l);
      py_str_json(&l, q->label[i]);
      bool eq = l.data && !strcmp(l.data, expected->s);
      sb_free(&l);
      if (eq) {
        t[i] = 1;
        return true;
      }
    }
  }
  return false;
}

static void temps_from_config(const json_value *cfg, cal_result *t) {
  memset(t, 0, sizeof *t);
  const json_value *tv = json_get(cfg, "temperature");
  for (int i = 0; i < 3; i++)
    t->temperature[i] = tv && tv->type == JSON_ARRAY && (uint32_t)i < tv->n && json_is_number(&tv->items[i])
                            ? cal_clamp(tv->items[i].d)
                            : 1.0;
  const json_value *tb = json_get(cfg, "temperature_by_options");
  for (uint32_t i = 0; tb && tb->type == JSON_OBJECT && i < tb->n && t->n_buckets < 12; i++)
    if (json_is_number(&tb->members[i].value)) {
      snprintf(t->bucket[t->n_buckets], 24, "%s", tb->members[i].key);
      t->bucket_t[t->n_buckets++] = cal_clamp(tb->members[i].value.d);
    }
}

static void put_temps(strbuf *sb, const cal_result *r) {
  char f[32];
  sb_puts(sb, "[");
  for (int i = 0; i < 3; i++) {
    py_float_json(r->temperature[i], f);
    sb_printf(sb, "%s%s", i ? ", " : "", f);
  }
  sb_puts(sb, "]");
}

static void put_buckets(strbuf *sb, const cal_result *r) {
  char f[32];
  sb_putc(sb, '{');
  for (int i = 0; i < r->n_buckets; i++) {
    py_float_json(r->bucket_t[i], f);
    sb_printf(sb, "%s\"%s\": %s", i ? ", " : "", r->bucket[i], f);
  }
  sb_putc(sb, '}');
}

static const char kCalUsage[] =
    "usage: laya calibrate [-h] --model DIR --data FILE [--out FILE] [--write-config] [--json]\n"
    "                      [--quiet] [--precision fp32|bf16|int8|fp16|fp8]\n";

int cli_calibrate_main(int argc, char **argv) {
  const char *model = NULL, *data = NULL, *out = NULL, *precision = NULL;
  bool write_config = false, as_json = false, quiet = false;
  /* argparse's rules (src/cli/cli_args.h): unique prefixes, ambiguous ones refused */
  const arg_spec opts[] = {{"--model", ARG_STR, &model, NULL},      {"--data", ARG_STR, &data, NULL},
                           {"--out", ARG_STR, &out, NULL},          {"--write-config", ARG_FLAG, &write_config, NULL},
                           {"--json", ARG_FLAG, &as_json, NULL},      {"--quiet", ARG_FLAG, &quiet, NULL},
                           {"--precision", ARG_CHOICE, &precision, cli_precisions}};
  const size_t n_opts = sizeof opts / sizeof opts[0];
  const arg_parse_opts po = {true, 0, NULL, false};
  arg_result r;
  int perr = cli_args_parse_ex(argc, argv, 1, opts, n_opts, &po, &r);
  const char *missing = !model && !data ? "--model, --data" : !model ? "--model" : !data ? "--data" : "";
  int verdict = cli_args_verdict(kCalUsage, "laya calibrate", perr, &r, missing);
  bool help = r.help;
  cli_args_free(opts, n_opts, &r);
  if (verdict >= 0) return verdict;
  if (help) {
    printf("%s\n"
           "Fit temperatures (per question type, and per option-count bucket with >= %d\n"
           "records) on labelled JSONL: {\"state\", \"questions\", \"expected\": {qid: label|bool|level}}\n"
           "or {..., \"gold\": {qid: {\"probabilities\": {...}}}}. --out writes Laya's calibration\n"
           "payload; --write-config stores the temperatures in DIR/rl_agent_config.json.\n",
           kCalUsage, CAL_MIN_BUCKET_N);
    return 0;
  }
  size_t len;
  char *text = cli_read_file(data, &len);
  if (!text) {
    fprintf(stderr, "laya calibrate: cannot read %s: %s\n", data, strerror(errno));
    return 2;
  }
  laya_options opt;
  laya_options_init(&opt);
  opt.quiet = 1;
  opt.precision = precision; /* NULL: LAYA_PRECISION, else the default */
  laya_error err = {0};
  laya_model *m = laya_open(model, &opt, &err);
  if (!m) {
    free(text);
    fprintf(stderr, "laya calibrate: %s\n", err.message);
    return 2;
  }
  arena ar;
  arena_init(&ar, 1 << 16);
  size_t cap = 256, n = 0, skipped = 0, lineno = 0;
  cal_record *recs = malloc(cap * sizeof *recs);
  int rc = 0;
  if (!recs) {
    fprintf(stderr, "laya calibrate: out of memory\n");
    rc = 2;
  }
  char *p = text, *end = text + len;
  size_t total_lines = 0;
  for (char *q = text; q < end; q++) total_lines += *q == '\n';
  cli_progress prog;
  cli_progress_begin(&prog, total_lines + (len && end[-1] != '\n'), "rows", quiet);
  while (p < end && !rc) {
    cli_progress_update(&prog, lineno);
    char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
    lineno++;
    size_t a0 = 0, ml = 0;
    py_strip(p, l, &a0, &ml);
    if (ml && p[a0] != '#') {
      /* Parse (outside input): one line of the caller's calibration rows file */
      json_value *row = json_parse(p + a0, ml, &ar, NULL, &err);
      const json_value *state = row ? json_get(row, "state") : NULL;
      const json_value *qs = row ? json_get(row, "questions") : NULL;
      const json_value *expected = row ? json_get(row, "expected") : NULL;
      const json_value *gold = row ? json_get(row, "gold") : NULL;
      if (!row || row->type != JSON_OBJECT || !state || !qs || qs->type != JSON_OBJECT || (!expected && !gold)) {
        fprintf(stderr, "laya calibrate: %s:%zu: %s\n", data, lineno,
                !row ? err.message : "a row needs 'state', 'questions' and 'expected' or 'gold'");
        rc = 2;
        break;
      }
      question *q = NULL;
      int nq = 0;
      if (questions_prepare(qs, &ar, &q, &nq, &err)) {
        fprintf(stderr, "laya calibrate: %s:%zu: %s\n", data, lineno, err.message);
        rc = 2;
        break;
      }
      /* every question's row, answered: its raw option logits are in the answer */
      engine_call call;
      memset(&call, 0, sizeof call);
      json_value states = {.type = JSON_ARRAY, .n = 1, .items = (json_value *)state};
      arena ra;
      arena_init(&ra, 1 << 14);
      state_result *res = NULL;
      long nres = 0;
      if (engine_run(m, &states, qs, &call, &ra, &res, &nres, &err)) {
        fprintf(stderr, "laya calibrate: %s:%zu: %s\n", data, lineno, err.message);
        arena_free(&ra);
        rc = 2;
        break;
      }
      const int rows = nres == 1 ? res[0].n : 0;
      for (int j = 0; j < nq && j < rows; j++) {
        const answer *an = &res[0].answers[j];
        float *t = calloc((size_t)(q[j].n_opts > an->k ? q[j].n_opts : an->k) + 1, sizeof(float));
        if (!t || (n == cap && !grow_records(&recs, &cap))) {
          free(t);
          fprintf(stderr, "laya calibrate: %s:%zu: out of memory\n", data, lineno);
          rc = 2;
          break;
        }
        const json_value *ev = expected ? json_get(expected, q[j].qid) : NULL;
        const json_value *gv = gold ? json_get(gold, q[j].qid) : NULL;
        if ((!ev && !gv) || !target_for(&q[j], ev, gv, t)) {
          free(t);
          continue;
        }
        /* options the budget cut leave fewer markers; a target that no longer sums to 1 is unusable */
        double sum = 0;
        bool neg = false;
        for (int i = 0; i < an->k; i++) {
          sum += t[i];
          neg |= t[i] < 0;
        }
        if (neg || fabs(sum - 1.0) > 1e-5 + 1e-6 || an->k < 1) {
          skipped++;
          free(t);
          continue;
        }
        float *lg = malloc(sizeof(float) * (size_t)an->k);
        if (!lg) {
          free(t);
          fprintf(stderr, "laya calibrate: %s:%zu: out of memory\n", data, lineno);
          rc = 2;
          break;
        }
        memcpy(lg, an->logits, sizeof(float) * (size_t)an->k);
        recs[n].qtype = q[j].type;
        recs[n].k = an->k;
        recs[n].logits = lg;
        recs[n].target = t;
        n++;
      }
      arena_free(&ra);
    }
    p = nl ? nl + 1 : end;
  }
  cli_progress_update(&prog, lineno);
  cli_progress_end(&prog);
  free(text);
  if (!rc && n == 0) {
    fprintf(stderr, "laya calibrate: %s holds no labelled answers to fit on\n", data);
    rc = 2;
  }
  if (!rc) {
    cal_result fit, before;
    cal_fit_map(recs, n, &fit);
    /* the checkpoint's config: the temperatures in force, and the payload's identity */
    char cfg_path[4096];
    snprintf(cfg_path, sizeof cfg_path, "%s/rl_agent_config.json", model);
    size_t clen = 0;
    char *ctext = cli_read_file(cfg_path, &clen);
    /* Parse (outside input): the checkpoint's config file */
    json_value *cfg = ctext ? json_parse(ctext, clen, &ar, NULL, &err) : NULL;
    if (cfg) temps_from_config(cfg, &before);
    else memset(&before, 0, sizeof before), before.temperature[0] = before.temperature[1] = before.temperature[2] = 1.0;
    double ece_before = cal_ece(recs, n, &before), ece_after = cal_ece(recs, n, &fit);
    strbuf payload;
    sb_init(&payload);
    sb_puts(&payload, "{\"version\": 2, \"temperature\": ");
    put_temps(&payload, &fit);
    sb_puts(&payload, ", \"temperature_by_options\": ");
    put_buckets(&payload, &fit);
    sb_puts(&payload, ", \"model_id_or_path\": ");
    json_dump_string(&payload, model, strlen(model), false);
    sb_puts(&payload, ", \"subfolder\": null, \"config\": ");
    if (cfg && cfg->type == JSON_OBJECT) {
      sb_putc(&payload, '{');
      bool first = true;
      for (uint32_t i = 0; i < cfg->n; i++) {
        if (!strcmp(cfg->members[i].key, "temperature") || !strcmp(cfg->members[i].key, "temperature_by_options"))
          continue;
        if (!first) sb_puts(&payload, ", ");
        first = false;
        json_dump_string(&payload, cfg->members[i].key, cfg->members[i].key_len, false);
        sb_puts(&payload, ": ");
        json_dump(&payload, &cfg->members[i].value, NULL);
      }
      sb_putc(&payload, '}');
    } else {
      sb_puts(&payload, "null");
    }
    sb_puts(&payload, ", \"n_by_bucket\": {");
    for (int i = 0; i < fit.n_seen; i++) sb_printf(&payload, "%s\"%s\": %zu", i ? ", " : "", fit.seen[i], fit.seen_n[i]);
    char eb[32], ea[32];
    py_float_json(ece_before, eb);
    py_float_json(ece_after, ea);
    sb_printf(&payload, "}, \"report\": {\"ece_before\": %s, \"ece_after\": %s, \"n\": %zu, \"skipped\": %zu}}",
              eb, ea, n, skipped);
    if (as_json) {
      printf("%s\n", payload.data);
    } else {
      printf("records            %zu (%zu skipped: options cut by the token budget)\n", n, skipped);
      for (int i = 0; i < fit.n_seen; i++) printf("  %-16s %zu\n", fit.seen[i], fit.seen_n[i]);
      const char *const *names = question_type_names;
      for (int i = 0; i < 3; i++)
        printf("temperature %-6s %.4f -> %.4f\n", names[i], before.temperature[i], fit.temperature[i]);
      for (int i = 0; i < fit.n_buckets; i++) printf("temperature %-10s %.4f\n", fit.bucket[i], fit.bucket_t[i]);
      if (!fit.n_buckets) printf("no bucket reached %d records; the type temperatures cover them\n", CAL_MIN_BUCKET_N);
      printf("ece                %.4f -> %.4f (on the fitting data)\n", ece_before, ece_after);
    }
    if (out) {
      FILE *f = fopen(out, "wb");
      if (!f || fprintf(f, "%s\n", payload.data) < 0) {
        fprintf(stderr, "laya calibrate: cannot write %s: %s\n", out, strerror(errno));
        rc = 2;
      }
      if (f) fclose(f);
    }
    if (!rc && write_config) {
      if (!cfg || cfg->type != JSON_OBJECT) {
        fprintf(stderr, "laya calibrate: cannot read %s to update it\n", cfg_path);
        rc = 2;
      } else {
        /* same keys in the same order; the two temperature keys replaced (or appended). The
         * checkpoint's bucket temperatures this fit did not refit (too few records) are kept. */
        cal_result merged = fit;
        int kept = 0;
        for (int i = 0; i < before.n_buckets && merged.n_buckets < 12; i++) {
          bool refit = false;
          for (int j = 0; j < fit.n_buckets && !refit; j++) refit = !strcmp(fit.bucket[j], before.bucket[i]);
          if (refit) continue;
          memcpy(merged.bucket[merged.n_buckets], before.bucket[i], sizeof merged.bucket[0]);
          merged.bucket_t[merged.n_buckets++] = before.bucket_t[i];
          kept++;
        }
        /* the config as it was, beside it: rl_agent_config.json.bak (then .bak.1, .bak.2 ...) */
        char bak[4300];
        snprintf(bak, sizeof bak, "%s.bak", cfg_path);
        for (int v = 1; v < 1000 && access(bak, F_OK) == 0; v++) snprintf(bak, sizeof bak, "%s.bak.%d", cfg_path, v);
        FILE *bf = fopen(bak, "wb");
        if (!bf || fwrite(ctext, 1, clen, bf) != clen || fclose(bf) != 0) {
          fprintf(stderr, "laya calibrate: cannot write the backup %s: %s; %s left as it was\n", bak,
                  strerror(errno), cfg_path);
          sb_free(&payload);
          free(ctext);
          rc = 2;
          goto out;
        }
        strbuf nc;
        sb_init(&nc);
        sb_puts(&nc, "{");
        bool has_t = false, has_b = false;
        for (uint32_t i = 0; i < cfg->n; i++) {
          sb_printf(&nc, "%s\n  ", i ? "," : "");
          json_dump_string(&nc, cfg->members[i].key, cfg->members[i].key_len, false);
          sb_puts(&nc, ": ");
          if (!strcmp(cfg->members[i].key, "temperature")) {
            put_temps(&nc, &fit);
            has_t = true;
          } else if (!strcmp(cfg->members[i].key, "temperature_by_options")) {
            put_buckets(&nc, &merged);
            has_b = true;
          } else {
            json_dump(&nc, &cfg->members[i].value, NULL);
          }
        }
        if (!has_t) {
          sb_puts(&nc, ",\n  \"temperature\": ");
          put_temps(&nc, &fit);
        }
        if (!has_b) {
          sb_puts(&nc, ",\n  \"temperature_by_options\": ");
          put_buckets(&nc, &merged);
        }
        sb_puts(&nc, "\n}\n");
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp", cfg_path);
        FILE *f = fopen(tmp, "wb");
        if (!f || fwrite(nc.data, 1, nc.len, f) != nc.len || fclose(f) != 0 || rename(tmp, cfg_path) != 0) {
          fprintf(stderr, "laya calibrate: cannot write %s: %s\n", cfg_path, strerror(errno));
          rc = 2;
        } else if (!as_json) {
          printf("wrote the temperatures into %s (the previous config is in %s)\n", cfg_path, bak);
          if (kept) printf("kept %d bucket temperature(s) of the checkpoint this data did not refit\n", kept);
        }
        sb_free(&nc);
      }
    }
    sb_free(&payload);
    free(ctext);
  }
out:
  for (size_t i = 0; i < n; i++) {
    free(recs[i].logits);
    free(recs[i].target);
  }
  free(recs);
  arena_free(&ar);
  laya_close(m);
  return rc;
}
