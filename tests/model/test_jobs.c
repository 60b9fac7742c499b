/* Prepared requests packed into one forward pass (laya_job_*): requests with different question
 * sets, budgets, languages and confidence gates share a pass, and each gets exactly the JSON that
 * laya_predict_batch gives its request alone (batch invariance), in any packing order, on the
 * default CPU backend and on the fp32 reference. Also: errors at prepare are laya_predict_batch's,
 * jobs of another model are refused, a result before the run is refused, trivial requests.
 * Threads: jobs prepared on several threads while another pass runs, and decoded on several
 * threads while the next pass runs (a server's pipeline), give the same bytes. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "laya.h"
#include "questions.h"

#define SPAM "\"spam\": {\"type\": \"noul\", \"instructions\": \"Is this spam?\"}"

static char long_state[3000];

/* Requests that differ in everything a pass could mix up: questions (count, types, options),
 * max_len / head_max_len, lang, min_confidence, one or several states, truncated states. */
static const char *requests[] = {
    "{\"states\": [\"I was charged twice for my March invoice, please refund one.\"], \"questions\": {" TEAM
    ", " URGENCY ", " REFUND "}}",
    "{\"states\": [\"the app crashes when I press the login button\", {\"ticket\": 7, \"body\": \"where "
    "is my parcel?\"}], \"questions\": {" SPAM "}}",
    "{\"states\": [\"cancel my subscription today\"], \"questions\": {" URGENCY ", " TEAM "}, "
    "\"max_len\": 96, \"head_max_len\": 64}",
    NULL, /* long_state, with a confidence gate and a language */
    "{\"states\": [[\"turn 1: hello\", \"turn 2: my card was charged twice\", \"turn 3: refund please\"]], "
    "\"questions\": {" REFUND ", " SPAM "}, \"max_len\": 48, \"head_max_len\": 24}",
    "{\"states\": [], \"questions\": {" TEAM "}}",
    "{\"states\": [\"no questions at all\", \"two states\"], \"questions\": {}}",
    "{\"states\": [\"a short one\", \"another short one about pricing and discounts\", \"third\"], "
    "\"questions\": {" TEAM ", " REFUND "}, \"min_confidence\": 0.9}",
};
#define N_REQ ((int)(sizeof requests / sizeof requests[0]))

/* One request's work on its own thread: prepare it, or decode its result. */
typedef struct job_task {
  laya_model *m;
  int i;
  laya_job *job;
  char *got;
  int rc;
} job_task;
static void *prepare_task(void *arg) {
  job_task *t = arg;
  laya_error e;
  t->rc = laya_job_prepare(t->m, requests[t->i], &t->job, &e);
  return NULL;
}
static void *result_task(void *arg) {
  job_task *t = arg;
  laya_error e;
  t->rc = laya_job_result(t->job, &t->got, &e);
  return NULL;
}

/* The pipeline: while `running` runs as one pass on this thread, every request is prepared on
 * its own thread (into t[i].job); then, while those run as the next pass, `running`'s results
 * are decoded on their own threads. Every answer must be the request's answer alone. */
static void pipeline_round(laya_model *m, laya_job **running, char **alone) {
  job_task t[N_REQ], d[N_REQ];
  pthread_t th[N_REQ];
  laya_error err;
  for (int i = 0; i < N_REQ; i++) {
    t[i] = (job_task){m, i, NULL, NULL, -1};
    CHECK(pthread_create(&th[i], NULL, prepare_task, &t[i]) == 0);
  }
  CHECK(laya_jobs_run(m, running, N_REQ, &err) == 0);
  for (int i = 0; i < N_REQ; i++) pthread_join(th[i], NULL);
  laya_job *next[N_REQ];
  for (int i = 0; i < N_REQ; i++) {
    CHECK(t[i].rc == 0 && t[i].job != NULL);
    next[i] = t[i].job;
    d[i] = (job_task){m, i, running[i], NULL, -1};
    CHECK(pthread_create(&th[i], NULL, result_task, &d[i]) == 0);
  }
  CHECK(laya_jobs_run(m, next, N_REQ, &err) == 0);
  for (int i = 0; i < N_REQ; i++) {
    pthread_join(th[i], NULL);
    CHECK(d[i].rc == 0);
    CHECK_STREQ(d[i].got, alone[i]);
    laya_free(d[i].got);
  }
  for (int i = 0; i < N_REQ; i++) {
    d[i] = (job_task){m, i, next[i], NULL, -1};
    CHECK(pthread_create(&th[i], NULL, result_task, &d[i]) == 0);
  }
  for (int i = 0; i < N_REQ; i++) {
    pthread_join(th[i], NULL);
    CHECK(d[i].rc == 0);
    CHECK_STREQ(d[i].got, alone[i]);
    laya_free(d[i].got);
    laya_job_free(next[i]);
  }
}

static void run_backend(const char *ck, const char *backend) {
  setenv("LAYA_BACKEND", backend, 1);
  laya_error err;
  laya_options o;
  laya_options_init(&o);
  o.quiet = 1;
  o.threads = 2;
  laya_model *m = laya_open(ck, &o, &err);
  CHECK(m != NULL);
  if (!m) {
    fprintf(stderr, "%s: %s\n", backend, err.message);
    return;
  }
  char *alone[N_REQ];
  laya_job *jobs[N_REQ];
  for (int i = 0; i < N_REQ; i++) {
    CHECK(laya_predict_batch(m, requests[i], &alone[i], &err) == 0);
    if (!alone[i]) fprintf(stderr, "request %d: %s\n", i, err.message);
    CHECK(laya_job_prepare(m, requests[i], &jobs[i], &err) == 0);
  }
  /* every request's rows in one pass (in reverse order), then in pairs */
  CHECK(laya_job_tokens(jobs[3]) == 3 * 160); /* the long state fills 3 rows of max_len */
  CHECK(laya_job_tokens(jobs[5]) == 0 && laya_job_tokens(jobs[6]) == 0);
  for (int round = 0; round < 2; round++) {
    if (round == 0) {
      laya_job *reversed[N_REQ];
      for (int i = 0; i < N_REQ; i++) reversed[i] = jobs[N_REQ - 1 - i];
      CHECK(laya_jobs_run(m, reversed, N_REQ, &err) == 0);
    } else {
      for (int i = 0; i < N_REQ; i += 2) CHECK(laya_jobs_run(m, jobs + i, i + 1 < N_REQ ? 2 : 1, &err) == 0);
    }
    for (int i = 0; i < N_REQ; i++) {
      char *got = NULL;
      CHECK(laya_job_result(jobs[i], &got, &err) == 0);
      CHECK_STREQ(got, alone[i]);
      laya_free(got);
    }
  }
  /* prepare and decode never touch the backend, so one backend shows the threading */
  if (!strcmp(backend, "cpu")) pipeline_round(m, jobs, alone);
  /* The answers really come from the shared pass: a job that has not run has no result. */
  laya_job *fresh = NULL;
  char *none = NULL;
  CHECK(laya_job_prepare(m, requests[0], &fresh, &err) == 0);
  CHECK(laya_job_result(fresh, &none, &err) != 0 && none == NULL);
  CHECK(strstr(err.message, "has not run") != NULL);
  /* Errors at prepare are laya_predict_batch's, kind and text. */
  static const char *bad[] = {
      "{\"states\": [\"x\"], \"questions\": {" TEAM "}, \"max_len\": 8}",                 /* ValueError */
      "{\"states\": [\"x\", null], \"questions\": {" TEAM "}}",                            /* TypeError */
      "{\"states\": \"x\", \"questions\": {" TEAM "}}",                                   /* TypeError */
      "{\"states\": [\"x\"], \"questions\": {\"q\": {\"type\": \"nope\", \"instructions\": \"?\"}}}",
      "{\"states\": [\"x\"], \"questions\": {" TEAM "}, \"unknown\": 1}",
      "{\"states\": [\"x\"",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    laya_error e1, e2;
    char *out = NULL;
    laya_job *j = NULL;
    CHECK(laya_predict_batch(m, bad[i], &out, &e1) != 0);
    CHECK(laya_job_prepare(m, bad[i], &j, &e2) != 0 && j == NULL);
    CHECK(e1.code == e2.code);
    CHECK_STREQ(e2.kind, e1.kind);
    CHECK_STREQ(e2.message, e1.message);
    laya_free(out);
  }
  /* a batch_size that splits the request is laya_predict_batch's business */
  laya_job *split = NULL;
  CHECK(laya_job_prepare(m, "{\"states\": [\"a\", \"b\"], \"questions\": {" SPAM "}, \"batch_size\": 1}",
                         &split, &err) == LAYA_ERR_UNSUPPORTED && split == NULL);
  /* a job of another model (same checkpoint, other handle) is refused, and nothing runs */
  laya_model *other = laya_open(ck, &o, &err);
  CHECK(other != NULL);
  laya_job *mixed[2] = {jobs[0], fresh};
  laya_job *foreign = NULL;
  CHECK(other && laya_job_prepare(other, requests[0], &foreign, &err) == 0);
  mixed[1] = foreign;
  CHECK(laya_jobs_run(m, mixed, 2, &err) == LAYA_ERR_VALUE);
  CHECK(strstr(err.message, "job 1 was not prepared for this model") != NULL);
  CHECK(laya_jobs_run(m, NULL, 1, &err) == LAYA_ERR_VALUE);
  CHECK(laya_jobs_run(m, mixed, 0, &err) == 0); /* nothing to run */
  laya_job_free(foreign);
  laya_close(other);
  laya_job_free(fresh);
  laya_job_free(NULL);
  for (int i = 0; i < N_REQ; i++) {
    laya_job_free(jobs[i]);
    laya_free(alone[i]);
  }
  laya_close(m);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  /* a state much longer than its max_len (160): every row is cut */
  static char req[sizeof long_state + 1024];
  size_t n = 0;
  while (n + 64 < sizeof long_state) n += (size_t)snprintf(long_state + n, sizeof long_state - n, "the parcel %zu never came and the refund is late; ", n);
  snprintf(req, sizeof req,
           "{\"states\": [\"%s\"], \"questions\": {" TEAM ", " URGENCY ", " REFUND "}, \"lang\": \"de\", "
           "\"max_len\": 160, \"min_confidence\": {\"choice:3-5\": 0.5, \"default\": 0.99}}",
           long_state);
  requests[3] = req;
  run_backend(argv[1], "cpu");
  run_backend(argv[1], "cpu-ref");
  return check_summary("test_jobs");
}
