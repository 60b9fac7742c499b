/* laya_reserve: after it, a model's scratch never grows, whatever the passes.
 *
 * A model reserved for small passes (512 tokens, so 32 rows and 64 option markers) answers
 * requests of every size below and far above that (more rows, more tokens, more markers than
 * reserved, through laya_predict_batch and through laya_jobs_run): the bytes of scratch its
 * workers hold stay exactly what they were after laya_reserve, and every answer is byte-identical
 * to an unreserved model's (a pass larger than the reservation runs as groups of its rows). The
 * negative control: the unreserved model's scratch does grow past the reserved size on the same
 * requests, so those passes really were larger than the reservation. Default CPU backend and
 * bf16 with precision escalation (two backends under one worker). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "core/strbuf.h"
#include "laya.h"
#include "model/engine.h"
#include "questions.h"

static const char *const WORDS[] = {"order", "invoice", "charged", "twice", "refund", "login", "crash",
                                    "parcel", "late", "upgrade", "pricing", "cancel", "please", "today"};

/* A state of about n words, varied by seed. */
static void put_state(strbuf *sb, int n, unsigned seed) {
  sb_putc(sb, '"');
  for (int i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    sb_printf(sb, "%s%s", i ? " " : "", WORDS[(seed >> 16) % (sizeof WORDS / sizeof *WORDS)]);
  }
  sb_putc(sb, '"');
}

/* {"states": [n_states states of w0..w0+dw words], "questions": {...}, extra} */
static char *request(int n_states, int w0, int dw, const char *questions, const char *extra) {
  strbuf sb;
  sb_init(&sb);
  sb_puts(&sb, "{\"states\": [");
  for (int i = 0; i < n_states; i++) {
    if (i) sb_puts(&sb, ", ");
    put_state(&sb, w0 + (dw ? (i * 37) % dw : 0), 7u + (unsigned)i);
  }
  sb_printf(&sb, "], \"questions\": {%s}%s}", questions, extra ? extra : "");
  return sb_steal(&sb);
}

/* A choice question with k one-word options: many markers per row. */
static char *wide_choice(int k) {
  strbuf sb;
  sb_init(&sb);
  sb_puts(&sb, "\"pick\": {\"type\": \"choice\", \"instructions\": \"Which word fits best?\", \"criteria\": {");
  for (int i = 0; i < k; i++) sb_printf(&sb, "%s\"w%d\": \"%s\"", i ? ", " : "", i, WORDS[i % 14]);
  sb_puts(&sb, "}}");
  return sb_steal(&sb);
}

static char *predict(laya_model *m, const char *req) {
  char *out = NULL;
  laya_error e;
  if (laya_predict_batch(m, req, &out, &e) != 0) {
    fprintf(stderr, "predict_batch: %s\n", e.message);
    return NULL;
  }
  return out;
}

static void run_variant(const char *dir, const char *precision, int escalate) {
  printf("variant: precision %s, escalate %d\n", precision ? precision : "default", escalate);
  laya_options o;
  laya_options_init(&o);
  o.precision = precision;
  o.escalate = escalate;
  o.threads = 2;
  o.quiet = 1;
  laya_error e;
  laya_model *res = laya_open(dir, &o, &e), *plain = laya_open(dir, &o, &e);
  CHECK(res && plain);
  if (!res || !plain) {
    laya_close(res);
    laya_close(plain);
    return;
  }
  CHECK(laya_reserve(res, 0, 0, 1, &e) == LAYA_ERR_VALUE);
  CHECK(laya_reserve(res, 512, 0, 0, &e) == LAYA_ERR_VALUE);
  CHECK(laya_reserve(NULL, 512, 0, 1, &e) == LAYA_ERR_VALUE);
  /* before any reserve: no scratch, except on CUDA, where laya_open warms one worker (engine_warm) */
  const int on_gpu = strstr(laya_model_info(res), "\"device\": \"cuda") != NULL;
  CHECK(on_gpu || engine_scratch_bytes(res) == 0);
  CHECK(laya_reserve(res, 512, 0, 1, &e) == 0); /* rows up to the checkpoint's max_len, 512 */
  const size_t reserved = engine_scratch_bytes(res);
  CHECK(reserved > 0);

  char *wide = wide_choice(30);
  char *reqs[] = {
      request(1, 12, 0, TEAM ", " URGENCY ", " REFUND, NULL),       /* small */
      request(16, 8, 30, TEAM ", " URGENCY ", " REFUND, NULL),      /* 48 rows, ~2,000 tokens */
      request(4, 6, 10, wide, NULL),                                /* 120 markers */
      request(1, 600, 0, TEAM ", " URGENCY ", " REFUND, NULL),      /* 3 rows of max_len 512 */
      request(3, 20, 30, URGENCY, ", \"max_len\": 64"),              /* small again */
  };
  const int n_req = (int)(sizeof reqs / sizeof *reqs);
  size_t plain_small = 0, plain_max = 0;
  for (int i = 0; i < n_req; i++) {
    char *a = predict(res, reqs[i]), *b = predict(plain, reqs[i]);
    CHECK(a && b);
    CHECK_STREQ(a, b);
    CHECK(engine_scratch_bytes(res) == reserved);
    size_t pb = engine_scratch_bytes(plain);
    if (i == 0) plain_small = pb;
    if (pb > plain_max) plain_max = pb;
    laya_free(a);
    laya_free(b);
  }
  /* the control: unreserved, the same passes grow the scratch past the reserved size */
  CHECK(plain_max > plain_small);
  CHECK(plain_max > reserved);

  /* prepared jobs of every size in one laya_jobs_run: the answers each request gets alone */
  laya_job *jobs[3] = {NULL, NULL, NULL};
  for (int i = 0; i < 3; i++) CHECK(laya_job_prepare(res, reqs[i], &jobs[i], &e) == 0);
  if (jobs[0] && jobs[1] && jobs[2]) {
    CHECK(laya_job_tokens(jobs[0]) + laya_job_tokens(jobs[1]) + laya_job_tokens(jobs[2]) > 512);
    CHECK(laya_jobs_run(res, jobs, 3, &e) == 0);
    for (int i = 0; i < 3; i++) {
      char *got = NULL, *want = predict(plain, reqs[i]);
      CHECK(laya_job_result(jobs[i], &got, &e) == 0);
      CHECK_STREQ(got, want);
      laya_free(got);
      laya_free(want);
    }
    CHECK(engine_scratch_bytes(res) == reserved);
  }
  for (int i = 0; i < 3; i++) laya_job_free(jobs[i]);
  for (int i = 0; i < n_req; i++) free(reqs[i]);
  free(wide);
  laya_close(res);
  laya_close(plain);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_reserve <tiny checkpoint dir>\n");
    return 2;
  }
  run_variant(argv[1], NULL, 0);
  run_variant(argv[1], "bf16", 1);
  return check_summary("test_reserve");
}
