/*
 * test_parity: laya.c against fixtures recorded by running the real Laya 0.4.15
 * (tests/fixtures/parity/<ckpt>/cases.jsonl, written by tools/ref/).
 *
 * Each case: {"id", "api", "agent": {"lang_temperatures": ...}, "request": "<JSON text>",
 *             "result": <what Laya returned> | "error": {"kind", "message"}}.
 *
 * Comparison: the same keys in the same order; strings, bools and nulls identical; numbers equal,
 * or within 1e-4 (a float32 forward/summation order can move the 4th decimal; every such number
 * is listed); a choice label identical; errors identical in kind and message.
 *
 * Modes: `test_parity <fixtures> <ckpt>`                parity + batch == one-by-one
 *        `test_parity <fixtures> <ckpt> --threads 8`    8 threads on one model, results must
 *                                                       equal the single-threaded ones
 *        `... --precision fp32`                         open the models at that precision
 *        `... --expect cpu:fp32`                        every model opened must report this
 *                                                       backend and precision in its info (the
 *                                                       default-path test: no precision given)
 * The backend is the process's choice (LAYA_BACKEND: cpu-ref, or cpu for the fast one; unset: the
 * library's default).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/json.h"
#include "core/strbuf.h"
#include "laya.h"
#include "compare.h"


typedef struct stats {
  int cases, exact, within, failed, errors_ok;
} stats;

/* ---- models, one per agent configuration ---- */

typedef struct model_slot {
  char *key; /* canonical lang_temperatures text ("" = none) */
  laya_model *m;
} model_slot;

static model_slot slots[16];
static int n_slots;
static const char *ckpt_dir;
static const char *model_path; /* --model: open this instead of <fixtures>/ckpt/<ckpt> */
static const char *precision; /* --precision: the backend precision to open models with */
static const char *expect;    /* --expect BACKEND:PRECISION */
static int expect_failed;

/* 1 when the info of m names backend:precision as --expect asks. */
static int info_matches(const laya_model *m) {
  char want_be[32], want_prec[32], b[64], p[64];
  if (sscanf(expect, "%31[^:]:%31s", want_be, want_prec) != 2) return 0;
  snprintf(b, sizeof b, "\"backend\": \"%s\"", want_be);
  snprintf(p, sizeof p, "\"precision\": \"%s\"", want_prec);
  const char *info = laya_model_info(m);
  return info && strstr(info, b) && strstr(info, p);
}

static laya_model *model_for(const json_value *agent, laya_error *err) {
  strbuf key;
  sb_init(&key);
  const json_value *lt = agent ? json_get(agent, "lang_temperatures") : NULL;
  if (lt && lt->type != JSON_NULL) json_dump(&key, lt, NULL);
  const char *k = sb_cstr(&key);
  for (int i = 0; i < n_slots; i++)
    if (strcmp(slots[i].key, k) == 0) {
      sb_free(&key);
      return slots[i].m;
    }
  laya_options o;
  laya_options_init(&o);
  o.quiet = 1;
  o.lang_temperatures_json = *k ? k : NULL;
  o.precision = precision;
  laya_model *m = laya_open(ckpt_dir, &o, err);
  if (m && expect && !info_matches(m)) {
    printf("FAIL model info does not report %s: %s\n", expect, laya_model_info(m));
    expect_failed++;
  }
  if (m && n_slots < 16) {
    slots[n_slots].key = sb_steal(&key);
    slots[n_slots++].m = m;
  } else {
    sb_free(&key);
  }
  return m;
}

/* An agent whose construction fails is an error case too (lang_temperatures validation). */
static int run_case(const json_value *cs, char **out, laya_error *err) {
  const json_value *api = json_get(cs, "api"), *req = json_get(cs, "request");
  laya_model *m = model_for(json_get(cs, "agent"), err);
  *out = NULL;
  if (!m) return err->code ? err->code : 1;
  if (!api || api->type != JSON_STRING || !req || req->type != JSON_STRING) return -2;
  if (strcmp(api->s, "predict") == 0) return laya_predict(m, req->s, out, err);
  if (strcmp(api->s, "predict_batch") == 0) return laya_predict_batch(m, req->s, out, err);
  return -2;
}

/* ---- threads ---- */

typedef struct job {
  json_value **cases;
  char **expected; /* single-threaded outputs (NULL for error cases) */
  int n, tid, rounds, mismatches;
} job;

static void *worker(void *arg) {
  job *j = arg;
  /* each thread takes every 16th case, shifted per round, so threads share cases and rounds */
  for (int r = 0; r < j->rounds; r++)
    for (int i = (j->tid + 8 * r) % 16; i < j->n; i += 16) {
      if (!j->expected[i]) continue;
      laya_error err;
      char *out = NULL;
      int rc = run_case(j->cases[i], &out, &err);
      if (rc || !out || strcmp(out, j->expected[i]) != 0) j->mismatches++;
      laya_free(out);
    }
  return NULL;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 3) {
    fprintf(stderr, "usage: %s <fixtures-dir> <ckpt> [--threads N] [--precision P] [--expect BACKEND:PREC] [--model PATH] [--every N]\n", argv[0]);
    return 2;
  }
  int threads = 0, every = 1;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--threads") == 0)
      threads = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--precision") == 0)
      precision = argv[i + 1];
    else if (strcmp(argv[i], "--expect") == 0)
      expect = argv[i + 1];
    else if (strcmp(argv[i], "--model") == 0) /* e.g. a `laya convert` artifact of <ckpt> */
      model_path = argv[i + 1];
    else if (strcmp(argv[i], "--every") == 0) /* every Nth case only (the emulated-tile table is slow) */
      every = atoi(argv[i + 1]) > 1 ? atoi(argv[i + 1]) : 1;
  }
  char path[4096], dir[4096];
  snprintf(dir, sizeof dir, "%s/ckpt/%s", argv[1], argv[2]);
  if (model_path) snprintf(dir, sizeof dir, "%s", model_path);
  ckpt_dir = dir;
  snprintf(path, sizeof path, "%s/parity/%s/cases.jsonl", argv[1], argv[2]);
  size_t len;
  char *text = fs_read_file(path, &len, NULL);
  if (!text) {
    fprintf(stderr, "%s: cannot read the fixture cases\n", path);
    return 1;
  }
  arena a;
  arena_init(&a, 1 << 20);
  json_value **cases = NULL;
  int n = 0, cap = 0;
  for (char *line = text; *line;) {
    char *nl = strchr(line, '\n');
    size_t l = nl ? (size_t)(nl - line) : strlen(line);
    if (l) {
      laya_error err;
      json_value *v = json_parse(line, l, &a, NULL, &err);
      if (!v) {
        fprintf(stderr, "%s: line %d: %s\n", path, n + 1, err.message);
        return 1;
      }
      if (n == cap) {
        cap = cap ? cap * 2 : 256;
        cases = realloc(cases, sizeof *cases * (size_t)cap);
      }
      cases[n++] = v;
    }
    line += l + (nl ? 1 : 0);
  }
  stats st = {0};
  int other_api = 0, batch_checked = 0, batch_failed = 0;
  char **outputs = calloc((size_t)n, sizeof(char *));
  for (int i = 0; i < n; i++) {
    if (i % every) continue;
    const json_value *cs = cases[i];
    const json_value *id = json_get(cs, "id");
    char idbuf[256];
    if (id && id->type == JSON_STRING)
      snprintf(idbuf, sizeof idbuf, "%s", id->s);
    else
      snprintf(idbuf, sizeof idbuf, "#%d", i);
    laya_error err;
    memset(&err, 0, sizeof err);
    char *out = NULL;
    int rc = run_case(cs, &out, &err);
    if (rc == -2) {
      other_api++;
      continue;
    }
    st.cases++;
    const json_value *want_err = json_get(cs, "error"), *want = json_get(cs, "result");
    if (want_err && want_err->type == JSON_OBJECT) {
      const json_value *k = json_get(want_err, "kind"), *msg = json_get(want_err, "message");
      bool ok = rc != 0 && k && msg && strcmp(err.kind, k->s) == 0 && strcmp(err.message, msg->s) == 0;
      if (ok) {
        st.exact++;
        st.errors_ok++;
      } else {
        st.failed++;
        printf("FAIL %s: expected %s: %s\n     got rc=%d %s: %s%s\n", idbuf, k ? k->s : "?",
               msg ? msg->s : "?", rc, err.kind, rc ? err.message : "", rc ? "" : "(a result)");
      }
      laya_free(out);
      continue;
    }
    if (rc) {
      st.failed++;
      printf("FAIL %s: error %s: %s\n", idbuf, err.kind, err.message);
      continue;
    }
    arena ca;
    arena_init(&ca, 1 << 16);
    json_value *got = json_parse(out, strlen(out), &ca, NULL, &err);
    cmp_ctx c = {idbuf, 0, 0, {0}};
    strbuf p;
    sb_init(&p);
    sb_puts(&p, "");
    if (!got || !want) {
      c.failed++;
      sb_printf(&c.notes, "    unparseable output or no expected result\n");
    } else {
      cmp_value(&c, got, want, &p, false);
    }
    if (c.failed) {
      st.failed++;
      printf("FAIL %s\n%s", idbuf, sb_cstr(&c.notes));
    } else if (c.within) {
      st.within++;
      printf("ALLOWANCE %s (%d number%s)\n%s", idbuf, c.within, c.within > 1 ? "s" : "", sb_cstr(&c.notes));
    } else {
      st.exact++;
    }
    /* predict_batch must equal predict state by state */
    const json_value *api = json_get(cs, "api");
    if (!threads && got && strcmp(api->s, "predict_batch") == 0 && got->type == JSON_ARRAY) {
      json_value *req = json_parse(json_get(cs, "request")->s, strlen(json_get(cs, "request")->s), &ca, NULL, &err);
      const json_value *states = req ? json_get(req, "states") : NULL;
      for (uint32_t s = 0; states && states->type == JSON_ARRAY && s < states->n; s++) {
        strbuf one;
        sb_init(&one);
        sb_puts(&one, "{\"state\": ");
        json_dump(&one, &states->items[s], NULL);
        for (uint32_t k = 0; k < req->n; k++) {
          const char *key = req->members[k].key;
          if (strcmp(key, "states") == 0 || strcmp(key, "batch_size") == 0 || strcmp(key, "sort_by_length") == 0)
            continue;
          sb_puts(&one, ", ");
          json_dump_string(&one, key, strlen(key), false);
          sb_puts(&one, ": ");
          json_dump(&one, &req->members[k].value, NULL);
        }
        sb_putc(&one, '}');
        char *single = NULL;
        laya_model *m = model_for(json_get(cs, "agent"), &err);
        int r2 = m ? laya_predict(m, sb_cstr(&one), &single, &err) : 1;
        strbuf mine;
        sb_init(&mine);
        json_dump(&mine, &got->items[s], NULL);
        batch_checked++;
        if (r2 || strcmp(single, sb_cstr(&mine)) != 0) {
          batch_failed++;
          printf("BATCH!=SINGLE %s state %u\n  batch:  %.300s\n  single: %.300s\n", idbuf, s, sb_cstr(&mine),
                 r2 ? err.message : single);
        }
        laya_free(single);
        sb_free(&mine);
        sb_free(&one);
      }
    }
    outputs[i] = out;
    sb_free(&c.notes);
    sb_free(&p);
    arena_free(&ca);
  }
  int rc = st.failed || batch_failed ? 1 : 0;
  printf("parity %s: cases %d, exact %d (errors %d), within-1e-4 %d, failed %d; batch==single %d/%d%s\n",
         argv[2], st.cases, st.exact, st.errors_ok, st.within, st.failed, batch_checked - batch_failed,
         batch_checked, other_api ? "" : "");
  if (other_api) printf("  (%d cases of other APIs belong to other suites)\n", other_api);
  if (st.cases == 0) rc = 1;
  if (expect) printf("models opened reporting %s: %d of %d\n", expect, n_slots - expect_failed, n_slots);
  if (expect && (expect_failed || n_slots == 0)) rc = 1;
  if (threads > 0) {
    pthread_t th[64];
    job jobs[64];
    if (threads > 64) threads = 64;
    for (int t = 0; t < threads; t++) {
      jobs[t] = (job){cases, outputs, n, t, 2, 0};
      pthread_create(&th[t], NULL, worker, &jobs[t]);
    }
    int mism = 0;
    for (int t = 0; t < threads; t++) {
      pthread_join(th[t], NULL);
      mism += jobs[t].mismatches;
    }
    printf("threads %d: %d results differed from the single-threaded run\n", threads, mism);
    if (mism) rc = 1;
  }
  for (int i = 0; i < n; i++) laya_free(outputs[i]);
  free(outputs);
  for (int i = 0; i < n_slots; i++) {
    laya_close(slots[i].m);
    free(slots[i].key);
  }
  free(cases);
  free(text);
  arena_free(&a);
  return rc;
}
