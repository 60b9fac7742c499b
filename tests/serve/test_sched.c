/* test_sched.c: the scheduler against a stand-in engine that echoes each state back, with the
 * ids of the questions it was asked, so every answer can be traced to the request it belongs to:
 *   - requests that arrive together share one forward pass (one jobs_run call), single and batch
 *     requests alike, and each gets exactly its own results, in order;
 *   - requests with different question sets, budgets and languages share it too, and each gets
 *     answers to its own questions only;
 *   - a request that fails at prepare gets its own 422 and the others still share the pass;
 *   - a shared pass that fails with a ValueError is re-run request by request;
 *   - an engine failure that is not a ValueError is a 500 for the requests of that pass;
 *   - passes are cut at LAYA_MAX_BATCH_TOKENS by the prepared requests' exact token counts;
 *   - with batching off every request gets its own call;
 *   - every case runs twice: pipelined (each request prepared and decoded on its own thread,
 *     here the test's, never on the inference thread) and serial (both on the inference
 *     thread), with the same packing and the same answers. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "serve/serve.h"

static atomic_int batch_calls, single_calls, max_states, prepares, passes, max_jobs;
/* engine calls made on the test's (the requests') thread, and results read on it */
static atomic_int prepares_here, results_here;
static pthread_t main_thread;

/* The echo answer of one state: {"answers": {qid: {"state": st, "lang": ...}}, "usage": ...}. */
static void echo_state(strbuf *sb, const json_value *st, const json_value *questions, const json_value *lang) {
  sb_puts(sb, "{\"model\": \"fake\", \"answers\": {");
  for (uint32_t q = 0; questions && q < questions->n; q++) {
    if (q) sb_puts(sb, ", ");
    json_dump_string(sb, questions->members[q].key, strlen(questions->members[q].key), false);
    sb_puts(sb, ": {\"type\": \"noul\", \"noul\": 0.5, \"state\": ");
    json_dump(sb, st, NULL);
    if (lang) {
      sb_puts(sb, ", \"lang\": ");
      json_dump(sb, lang, NULL);
    }
    sb_putc(sb, '}');
  }
  sb_puts(sb, "}, \"usage\": {\"input_tokens\": 7, \"output_tokens\": 0}}");
}

static void note_max(atomic_int *v, int n) {
  int cur = atomic_load(v);
  while (n > cur && !atomic_compare_exchange_weak(v, &cur, n)) {
  }
}

/* "bad" states are a ValueError (as the engine's are, before any pass), "crash" an internal
 * error; batch requests get an array. */
static int echo(const char *req_json, bool batch, char **out, laya_error *err) {
  arena a;
  arena_init(&a, 4096);
  json_value *req = json_parse(req_json, strlen(req_json), &a, NULL, err);
  const json_value *states = batch ? json_get(req, "states") : NULL;
  const json_value *one = batch ? NULL : json_get(req, "state");
  uint32_t n = batch ? states->n : 1;
  note_max(&max_states, (int)n);
  strbuf sb;
  sb_init(&sb);
  if (batch) sb_putc(&sb, '[');
  int rc = 0;
  for (uint32_t i = 0; i < n; i++) {
    const json_value *st = batch ? &states->items[i] : one;
    if (st->type == JSON_STRING && !strcmp(st->s, "bad")) rc = laya_value_error(err, "state %u is bad", i);
    if (st->type == JSON_STRING && !strcmp(st->s, "crash")) rc = laya_err(err, LAYA_ERR_INTERNAL, NULL, "boom");
    if (i) sb_puts(&sb, ", ");
    echo_state(&sb, st, json_get(req, "questions"), json_get(req, "lang"));
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

/* Prepared requests: prepare answers (or refuses) at once, the pass only hands the answers out. */
typedef struct fake_job {
  char *result;
  long tokens;
  bool crash, late, ran;
} fake_job;
static long tokens_per_state = 10;
static int fake_prepare(void *ctx, void *m, const char *req, void **job, laya_error *err) {
  (void)ctx, (void)m;
  atomic_fetch_add(&prepares, 1);
  if (pthread_equal(pthread_self(), main_thread)) atomic_fetch_add(&prepares_here, 1);
  *job = NULL;
  char *out = NULL;
  fake_job *j = calloc(1, sizeof *j);
  if (!j) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  int rc = echo(req, true, &out, err);
  j->crash = rc == LAYA_ERR_INTERNAL;
  if (rc && !j->crash) {
    free(j);
    return rc;
  }
  j->late = strstr(req, "\"late\"") != NULL;
  j->result = out;
  arena a;
  arena_init(&a, 1024);
  json_value *v = json_parse(req, strlen(req), &a, NULL, err);
  j->tokens = tokens_per_state * (long)json_get(v, "states")->n;
  arena_free(&a);
  *job = j;
  return 0;
}
static long fake_tokens(void *ctx, void *job) {
  (void)ctx;
  return ((fake_job *)job)->tokens;
}
static int fake_run(void *ctx, void *m, void *const *jobs, int n, laya_error *err) {
  (void)ctx, (void)m;
  atomic_fetch_add(&passes, 1);
  note_max(&max_jobs, n);
  for (int i = 0; i < n; i++) {
    fake_job *j = jobs[i];
    if (j->crash) return laya_err(err, LAYA_ERR_INTERNAL, NULL, "boom");
    if (j->late && n > 1) return laya_value_error(err, "a late ValueError in the pass");
  }
  for (int i = 0; i < n; i++) ((fake_job *)jobs[i])->ran = true;
  return 0;
}
static int fake_result(void *ctx, void *job, char **out, laya_error *err) {
  (void)ctx;
  fake_job *j = job;
  if (!j->ran) return laya_err(err, LAYA_ERR_INTERNAL, NULL, "not run");
  if (pthread_equal(pthread_self(), main_thread)) atomic_fetch_add(&results_here, 1);
  *out = strdup(j->result);
  return 0;
}
static void fake_free(void *ctx, void *job) {
  (void)ctx;
  fake_job *j = job;
  free(j->result);
  free(j);
}
static const serve_engine fake = {.name = "fake",
                                  .open = fake_open,
                                  .close = fake_close,
                                  .predict = fake_predict,
                                  .predict_batch = fake_batch,
                                  .job_prepare = fake_prepare,
                                  .job_tokens = fake_tokens,
                                  .jobs_run = fake_run,
                                  .job_result = fake_result,
                                  .job_free = fake_free};

static void reset_counts(void) {
  atomic_store(&batch_calls, 0);
  atomic_store(&single_calls, 0);
  atomic_store(&max_states, 0);
  atomic_store(&prepares, 0);
  atomic_store(&passes, 0);
  atomic_store(&max_jobs, 0);
  atomic_store(&prepares_here, 0);
  atomic_store(&results_here, 0);
}

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

/* Submit n jobs as the HTTP layer does (prepare on this thread, then queue; a job refused at
 * prepare is answered at once) while the scheduler believes more are arriving, then wait for
 * all and decode each on this thread. */
static void run_all(serve_sched *s, serve_job **jobs, int n, atomic_int *arriving) {
  int refused = 0;
  pthread_mutex_lock(&mu);
  finished = 0;
  pthread_mutex_unlock(&mu);
  atomic_store(arriving, n);
  for (int i = 0; i < n; i++) {
    if (serve_sched_prepare(s, jobs[i]) != 0)
      refused++;
    else
      serve_sched_submit(s, jobs[i]);
    atomic_fetch_sub(arriving, 1);
  }
  pthread_mutex_lock(&mu);
  while (finished < n - refused) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  for (int i = 0; i < n; i++) serve_job_finish(jobs[i]);
}

static const char *QS = "\"questions\": {\"q\": {\"type\": \"noul\", \"instructions\": \"ok?\"}}, \"model\": \"english\"";

/* Every case, pipelined or serial. */
static void run_cases(serve_models *models, serve_config *cfg, bool pipeline) {
  cfg->pipeline = pipeline;
  cfg->batching = true;
  atomic_int arriving = 0;
  reset_counts();
  /* 1. 20 single requests and one batch request of 3 states arrive together: one pass */
  serve_sched *s = serve_sched_new(cfg, models, &fake, NULL);
  serve_sched_set_arriving(s, &arriving);
  serve_job *jobs[32];
  char body[512];
  for (int i = 0; i < 20; i++) {
    snprintf(body, sizeof body, "{\"state\": \"request %d\", %s}", i, QS);
    jobs[i] = make_job(models, cfg, body, SERVE_ONE);
  }
  snprintf(body, sizeof body, "{\"states\": [\"b0\", {\"k\": 1}, \"b2\"], %s}", QS);
  jobs[20] = make_job(models, cfg, body, SERVE_BATCH);
  run_all(s, jobs, 21, &arriving);
  CHECK(atomic_load(&passes) == 1 && atomic_load(&max_jobs) == 21 && atomic_load(&prepares) == 21);
  CHECK(atomic_load(&batch_calls) == 0 && atomic_load(&single_calls) == 0);
  /* pipelined: every request prepared and decoded on its own thread; serial: neither */
  CHECK(atomic_load(&prepares_here) == (pipeline ? 21 : 0));
  CHECK(atomic_load(&results_here) == (pipeline ? 21 : 0));
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

  /* 2. different questions, budgets and languages share one pass; each gets its own questions */
  reset_counts();
  static const char *qsets[3] = {
      "\"questions\": {\"alpha\": {\"type\": \"noul\", \"instructions\": \"a?\"}}, \"model\": \"english\"",
      "\"questions\": {\"beta\": {\"type\": \"noul\", \"instructions\": \"b?\"}, \"gamma\": {\"type\": "
      "\"noul\", \"instructions\": \"c?\"}}, \"model\": \"english\", \"max_len\": 64",
      "\"questions\": {\"delta\": {\"type\": \"noul\", \"instructions\": \"d?\"}}, \"model\": \"english\", "
      "\"lang\": \"de\"",
  };
  static const char *own[3][3] = {{"\"alpha\":", NULL, NULL}, {"\"beta\":", "\"gamma\":", NULL}, {"\"delta\":", "\"lang\":\"de\"", NULL}};
  static const char *other[3][3] = {{"\"beta\"", "\"delta\"", "\"lang\""}, {"\"alpha\"", "\"delta\"", "\"lang\""}, {"\"alpha\"", "\"beta\"", NULL}};
  for (int i = 0; i < 12; i++) {
    snprintf(body, sizeof body, "{\"state\": \"mixed %d\", %s}", i, qsets[i % 3]);
    jobs[i] = make_job(models, cfg, body, SERVE_ONE);
  }
  run_all(s, jobs, 12, &arriving);
  CHECK(atomic_load(&passes) == 1 && atomic_load(&max_jobs) == 12);
  for (int i = 0; i < 12; i++) {
    char want[64];
    snprintf(want, sizeof want, "\"state\":\"mixed %d\"", i);
    const char *got = jobs[i]->body.data;
    CHECK(jobs[i]->status == 0 && got && strstr(got, want) && jobs[i]->batch_requests == 12);
    for (int k = 0; k < 3 && got; k++) {
      if (own[i % 3][k]) CHECK(strstr(got, own[i % 3][k]) != NULL);
      if (other[i % 3][k]) CHECK(strstr(got, other[i % 3][k]) == NULL);
    }
    serve_job_free(jobs[i]);
  }

  /* 3. one bad state among 8: that request gets its 422 at prepare, the 7 others share a pass */
  reset_counts();
  for (int i = 0; i < 8; i++) {
    snprintf(body, sizeof body, "{\"state\": \"%s\", %s}", i == 5 ? "bad" : "fine", QS);
    jobs[i] = make_job(models, cfg, body, SERVE_ONE);
  }
  run_all(s, jobs, 8, &arriving);
  CHECK(atomic_load(&passes) == 1 && atomic_load(&max_jobs) == 7 && atomic_load(&single_calls) == 0);
  for (int i = 0; i < 8; i++) {
    if (i == 5) {
      CHECK(jobs[i]->status == 422 && !strcmp(jobs[i]->err.message, "state 0 is bad"));
    } else {
      CHECK(jobs[i]->status == 0 && strstr(jobs[i]->body.data, "\"fine\"") != NULL && jobs[i]->batch_requests == 7);
    }
    serve_job_free(jobs[i]);
  }

  /* 4. a ValueError from the shared pass: each request is re-run alone, only its own fails */
  reset_counts();
  for (int i = 0; i < 5; i++) {
    snprintf(body, sizeof body, "{\"state\": \"%s\", %s}", i == 2 ? "late" : "fine", QS);
    jobs[i] = make_job(models, cfg, body, SERVE_ONE);
  }
  run_all(s, jobs, 5, &arriving);
  CHECK(atomic_load(&passes) == 6); /* the shared pass, then one each */
  for (int i = 0; i < 5; i++) {
    CHECK(jobs[i]->status == 0 && jobs[i]->batch_requests == 1);
    serve_job_free(jobs[i]);
  }

  /* 5. an engine failure that is not a ValueError: 500 for that pass */
  for (int i = 0; i < 4; i++) {
    snprintf(body, sizeof body, "{\"state\": \"%s\", %s}", i == 0 ? "crash" : "fine", QS);
    jobs[i] = make_job(models, cfg, body, SERVE_ONE);
  }
  run_all(s, jobs, 4, &arriving);
  for (int i = 0; i < 4; i++) {
    CHECK(jobs[i]->status == 500);
    serve_job_free(jobs[i]);
  }
  serve_sched_free(s);

  /* 6. the token budget cuts passes by the prepared requests' exact tokens: with 200 tokens a
   * state and a budget of 450, at most 2 requests per pass */
  reset_counts();
  tokens_per_state = 200;
  cfg->pass_tokens = 450;
  s = serve_sched_new(cfg, models, &fake, NULL);
  serve_sched_set_arriving(s, &arriving);
  for (int i = 0; i < 6; i++) {
    snprintf(body, sizeof body, "{\"state\": \"t%d\", %s}", i, QS);
    jobs[i] = make_job(models, cfg, body, SERVE_ONE);
  }
  run_all(s, jobs, 6, &arriving);
  CHECK(atomic_load(&max_jobs) == 2 && atomic_load(&passes) == 3);
  for (int i = 0; i < 6; i++) {
    char want[32];
    snprintf(want, sizeof want, "\"state\":\"t%d\"", i);
    CHECK(jobs[i]->status == 0 && strstr(jobs[i]->body.data, want) && jobs[i]->batch_requests == 2);
    serve_job_free(jobs[i]);
  }
  serve_sched_free(s);
  tokens_per_state = 10;
  cfg->pass_tokens = 131072;

  /* 7. batching off: one call per request, requests never share */
  cfg->batching = false;
  reset_counts();
  s = serve_sched_new(cfg, models, &fake, NULL);
  serve_sched_set_arriving(s, &arriving);
  for (int i = 0; i < 10; i++) {
    snprintf(body, sizeof body, "{\"state\": \"r%d\", %s}", i, QS);
    jobs[i] = make_job(models, cfg, body, SERVE_ONE);
  }
  run_all(s, jobs, 10, &arriving);
  CHECK(atomic_load(&single_calls) == 10 && atomic_load(&batch_calls) == 0 && atomic_load(&passes) == 0);
  for (int i = 0; i < 10; i++) {
    char want[32];
    snprintf(want, sizeof want, "\"state\":\"r%d\"", i);
    CHECK(jobs[i]->status == 0 && strstr(jobs[i]->body.data, want) && jobs[i]->batch_requests == 1);
    serve_job_free(jobs[i]);
  }
  serve_sched_free(s);

  /* 8. jobs whose clients left while queued (the HTTP layer marks them) are not computed: they
   * get 499, the others their answers; batching on */
  cfg->batching = true;
  reset_counts();
  s = serve_sched_new(cfg, models, &fake, NULL);
  serve_sched_set_arriving(s, &arriving);
  for (int i = 0; i < 8; i++) {
    snprintf(body, sizeof body, "{\"state\": \"c%d\", %s}", i, QS);
    jobs[i] = make_job(models, cfg, body, SERVE_ONE);
    if (i % 2) atomic_store(&jobs[i]->cancelled, true);
  }
  run_all(s, jobs, 8, &arriving);
  /* pipelined, all were prepared on arrival (before they were marked); serial, the inference
   * thread prepares only the live ones */
  CHECK(atomic_load(&prepares) == (pipeline ? 8 : 4));
  CHECK(atomic_load(&max_jobs) == 4 && atomic_load(&passes) >= 1); /* only the live four ran */
  for (int i = 0; i < 8; i++) {
    char want[32];
    snprintf(want, sizeof want, "\"state\":\"c%d\"", i);
    if (i % 2)
      CHECK(jobs[i]->status == 499 && jobs[i]->body.len == 0);
    else
      CHECK(jobs[i]->status == 0 && jobs[i]->body.data && strstr(jobs[i]->body.data, want));
    serve_job_free(jobs[i]);
  }
  serve_sched_free(s);
}

/* A stand-in engine's answer gets the RouteDecision as its "routing" member: in the place of one
 * the answer already has, else last; the decision's text respaced compact (as parsing and
 * re-writing it gave), strings and their escapes untouched. */
static void test_finish_routing(void) {
  static const char *dec = "{\"model\": \"english\", \"reason\": \"a, b: \\\"c\\\"\", \"detection\": {\"x\": [1, 2.5]}}";
  static const char *want = "{\"model\":\"english\",\"reason\":\"a, b: \\\"c\\\"\",\"detection\":{\"x\":[1,2.5]}}";
  const char *results[2] = {"{\"model\": \"laya-rl-agent\", \"answers\": {}, \"usage\": {\"input_tokens\": 3}}",
                            "{\"routing\": null, \"answers\": {}}"};
  for (int k = 0; k < 2; k++) {
    arena a;
    arena_init(&a, 4096);
    laya_error e;
    json_value *v = json_parse(results[k], strlen(results[k]), &a, NULL, &e);
    CHECK(v != NULL);
    strbuf out, expect;
    sb_init(&out);
    sb_init(&expect);
    if (v) serve_finish_result(v, dec, false, &a, &out);
    if (k == 0) sb_printf(&expect, "{\"model\":\"laya-rl-agent\",\"answers\":{},\"usage\":{\"input_tokens\":3},\"routing\":%s}", want);
    else sb_printf(&expect, "{\"routing\":%s,\"answers\":{}}", want);
    CHECK_STREQ(sb_cstr(&out), sb_cstr(&expect));
    sb_free(&out);
    sb_free(&expect);
    arena_free(&a);
  }
}

int main(void) {
  test_finish_routing();
  setenv("LAYA_EXTRA_MODELS", "{\"english\": \"/fake/english\"}", 1);
  setenv("LAYA_SERVE_BATCH_WAIT_US", "500000", 1);
  serve_config cfg;
  char msg[512];
  CHECK(serve_config_from_env(&cfg, msg, sizeof msg) == 0);
  serve_models *models = serve_models_new(&cfg, &fake, msg, sizeof msg);
  CHECK(models != NULL);

  main_thread = pthread_self();
  run_cases(models, &cfg, true);
  run_cases(models, &cfg, false);
  serve_models_free(models);
  serve_config_free(&cfg);
  return check_summary("serve/sched");
}
