/* test_sched.c: the scheduler against a stand-in engine that echoes each state back, so every
 * answer can be traced to the request it belongs to:
 *   - requests that arrive together are packed into one predict_batch call, single and batch
 *     requests alike, and each gets exactly its own results, in order;
 *   - with batching off every request gets its own call;
 *   - a shared pass that fails with a ValueError is re-run request by request, so only the
 *     request at fault gets the 422 and the others their answers;
 *   - an engine failure that is not a ValueError is a 500 for the requests of that pass. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "serve/serve.h"

static atomic_int batch_calls, single_calls, max_states;

static int echo(const char *req_json, bool batch, char **out, laya_error *err) {
  arena a;
  arena_init(&a, 4096);
  json_value *req = json_parse(req_json, strlen(req_json), &a, NULL, err);
  const json_value *states = batch ? json_get(req, "states") : NULL;
  const json_value *one = batch ? NULL : json_get(req, "state");
  uint32_t n = batch ? states->n : 1;
  int cur = atomic_load(&max_states);
  while ((int)n > cur && !atomic_compare_exchange_weak(&max_states, &cur, (int)n)) {
  }
  strbuf sb;
  sb_init(&sb);
  if (batch) sb_putc(&sb, '[');
  int rc = 0;
  for (uint32_t i = 0; i < n; i++) {
    const json_value *st = batch ? &states->items[i] : one;
    if (st->type == JSON_STRING && !strcmp(st->s, "bad")) rc = laya_value_error(err, "state %u is bad", i);
    if (st->type == JSON_STRING && !strcmp(st->s, "crash")) rc = laya_err(err, LAYA_ERR_INTERNAL, NULL, "boom");
    if (i) sb_puts(&sb, ", ");
    sb_puts(&sb, "{\"model\": \"fake\", \"answers\": {\"echo\": {\"type\": \"noul\", \"noul\": 0.5, \"state\": ");
    json_dump(&sb, st, NULL);
    sb_puts(&sb, "}}, \"usage\": {\"input_tokens\": 7, \"output_tokens\": 0}}");
  }
  if (batch) sb_putc(&sb, ']');
  arena_free(&a);
  if (rc) {
    sb_free(&sb);
    *out = NULL;
    return rc;
  }
  *out = sb_steal(&sb);
  return 0;
}

static void *fake_open(void *ctx, const char *path, const serve_config *cfg, laya_error *err) {
  (void)ctx, (void)path, (void)cfg, (void)err;
  return (void *)1;
}
static void fake_close(void *ctx, void *m) { (void)ctx, (void)m; }
static int fake_predict(void *ctx, void *m, const char *req, char **out, laya_error *err) {
  (void)ctx, (void)m;
  atomic_fetch_add(&single_calls, 1);
  return echo(req, false, out, err);
}
static int fake_batch(void *ctx, void *m, const char *req, char **out, laya_error *err) {
  (void)ctx, (void)m;
  atomic_fetch_add(&batch_calls, 1);
  return echo(req, true, out, err);
}
static const serve_engine fake = {NULL, "fake", fake_open, fake_close, fake_predict, fake_batch, NULL, NULL, NULL, NULL};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int finished;

static void done(serve_job *job, void *arg) {
  (void)job, (void)arg;
  pthread_mutex_lock(&mu);
  finished++;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

static serve_job *make_job(serve_models *models, serve_config *cfg, const char *body, serve_route_kind kind) {
  arena a;
  arena_init(&a, 4096);
  serve_request req;
  serve_reject rej;
  serve_reject_init(&rej);
  serve_job *job = NULL;
  int rc = serve_validate(body, strlen(body), kind, cfg, models, &a, &req, &rej);
  if (rc == 0) rc = serve_job_from_request(models, &req, false, &job, &rej);
  if (rc) fprintf(stderr, "rejected %d: %s\n", rc, sb_cstr(&rej.detail));
  serve_reject_free(&rej);
  arena_free(&a);
  if (job) {
    job->done = done;
    job->done_arg = NULL;
  }
  return job;
}

/* Submit n jobs while the scheduler believes more are arriving, then wait for all. */
static void run_all(serve_sched *s, serve_job **jobs, int n, atomic_int *arriving) {
  pthread_mutex_lock(&mu);
  finished = 0;
  pthread_mutex_unlock(&mu);
  atomic_store(arriving, n);
  for (int i = 0; i < n; i++) {
    serve_sched_submit(s, jobs[i]);
    atomic_fetch_sub(arriving, 1);
  }
  pthread_mutex_lock(&mu);
  while (finished < n) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}

static const char *QS = "\"questions\": {\"q\": {\"type\": \"noul\", \"instructions\": \"ok?\"}}, \"model\": \"english\"";

int main(void) {
  setenv("LAYA_EXTRA_MODELS", "{\"english\": \"/fake/english\"}", 1);
  setenv("LAYA_SERVE_BATCH_WAIT_US", "500000", 1);
  serve_config cfg;
  char msg[512];
  CHECK(serve_config_from_env(&cfg, msg, sizeof msg) == 0);
  serve_models *models = serve_models_new(&cfg, &fake, msg, sizeof msg);
  CHECK(models != NULL);
  atomic_int arriving = 0;

  /* 1. 20 single requests and one batch request of 3 states arrive together: one pass */
  serve_sched *s = serve_sched_new(&cfg, models, &fake, NULL);
  serve_sched_set_arriving(s, &arriving);
  serve_job *jobs[32];
  char body[512];
  for (int i = 0; i < 20; i++) {
    snprintf(body, sizeof body, "{\"state\": \"request %d\", %s}", i, QS);
    jobs[i] = make_job(models, &cfg, body, SERVE_ONE);
  }
  snprintf(body, sizeof body, "{\"states\": [\"b0\", {\"k\": 1}, \"b2\"], %s}", QS);
  jobs[20] = make_job(models, &cfg, body, SERVE_BATCH);
  run_all(s, jobs, 21, &arriving);
  CHECK(atomic_load(&batch_calls) == 1 && atomic_load(&single_calls) == 0);
  CHECK(atomic_load(&max_states) == 23);
  for (int i = 0; i < 20; i++) {
    char want[64];
    snprintf(want, sizeof want, "\"state\":\"request %d\"", i);
    CHECK(jobs[i]->status == 0 && strstr(jobs[i]->body.data, want) && jobs[i]->batch_requests == 21);
    CHECK(strstr(jobs[i]->body.data, "\"routing\":{\"model\":\"english\"") != NULL);
    CHECK(jobs[i]->input_tokens == 7);
  }
  const char *b = jobs[20]->body.data;
  CHECK(jobs[20]->status == 0 && b && !strncmp(b, "{\"results\":[", 12));
  CHECK(b && strstr(b, "\"b0\"") < strstr(b, "{\"k\":1}") && strstr(b, "{\"k\":1}") < strstr(b, "\"b2\""));
  CHECK(b && strstr(b, "\"total_usage\":{\"input_tokens\":21,\"output_tokens\":0}"));
  CHECK(jobs[20]->input_tokens == 21);
  for (int i = 0; i < 21; i++) serve_job_free(jobs[i]);

  /* 2. one bad state among 8: the shared pass fails, each request is answered alone */
  atomic_store(&batch_calls, 0);
  for (int i = 0; i < 8; i++) {
    snprintf(body, sizeof body, "{\"state\": \"%s\", %s}", i == 5 ? "bad" : "fine", QS);
    jobs[i] = make_job(models, &cfg, body, SERVE_ONE);
  }
  run_all(s, jobs, 8, &arriving);
  CHECK(atomic_load(&batch_calls) == 1 && atomic_load(&single_calls) == 8);
  for (int i = 0; i < 8; i++) {
    if (i == 5) {
      CHECK(jobs[i]->status == 422 && !strcmp(jobs[i]->err.message, "state 0 is bad"));
    } else {
      CHECK(jobs[i]->status == 0 && strstr(jobs[i]->body.data, "\"fine\"") != NULL);
    }
    serve_job_free(jobs[i]);
  }

  /* 3. an engine failure that is not a ValueError: 500 for that pass */
  atomic_store(&single_calls, 0);
  for (int i = 0; i < 4; i++) {
    snprintf(body, sizeof body, "{\"state\": \"%s\", %s}", i == 0 ? "crash" : "fine", QS);
    jobs[i] = make_job(models, &cfg, body, SERVE_ONE);
  }
  run_all(s, jobs, 4, &arriving);
  for (int i = 0; i < 4; i++) {
    CHECK(jobs[i]->status == 500);
    serve_job_free(jobs[i]);
  }
  serve_sched_free(s);

  /* 4. batching off: one call per request, requests never share */
  cfg.batching = false;
  atomic_store(&batch_calls, 0);
  atomic_store(&single_calls, 0);
  s = serve_sched_new(&cfg, models, &fake, NULL);
  serve_sched_set_arriving(s, &arriving);
  for (int i = 0; i < 10; i++) {
    snprintf(body, sizeof body, "{\"state\": \"r%d\", %s}", i, QS);
    jobs[i] = make_job(models, &cfg, body, SERVE_ONE);
  }
  run_all(s, jobs, 10, &arriving);
  CHECK(atomic_load(&single_calls) == 10 && atomic_load(&batch_calls) == 0);
  for (int i = 0; i < 10; i++) {
    char want[32];
    snprintf(want, sizeof want, "\"state\":\"r%d\"", i);
    CHECK(jobs[i]->status == 0 && strstr(jobs[i]->body.data, want) && jobs[i]->batch_requests == 1);
    serve_job_free(jobs[i]);
  }
  serve_sched_free(s);
  serve_models_free(models);
  serve_config_free(&cfg);
  return check_summary("serve/sched");
}
