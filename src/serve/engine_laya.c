/* engine_laya.c: serve_engine over the laya library (include/laya.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/typed.h"
#include "core/options.h"
#include "serve/serve.h"

#ifdef LAYA_SERVE_NO_ENGINE
/* Built before the library's predict entry points existed: every call says so. */
static void *eng_open(void *ctx, const char *path, const serve_config *cfg, laya_error *err) {
  (void)ctx;
  (void)cfg;
  laya_err(err, LAYA_ERR_UNSUPPORTED, NULL, "cannot open %s: this build has no inference engine", path);
  return NULL;
}
static void eng_close(void *ctx, void *model) {
  (void)ctx;
  (void)model;
}
static int eng_predict(void *ctx, void *model, const char *req, char **out, laya_error *err) {
  (void)ctx;
  (void)model;
  (void)req;
  *out = NULL;
  return laya_err(err, LAYA_ERR_UNSUPPORTED, NULL, "this build has no inference engine");
}
static bool eng_facts(void *ctx, void *model, model_facts *out) {
  (void)ctx;
  (void)model;
  (void)out;
  return false;
}
const serve_engine serve_engine_laya = {.name = "none", .open = eng_open, .close = eng_close,
                                        .predict = eng_predict, .predict_batch = eng_predict,
                                        .facts = eng_facts};
#else
static void *eng_open(void *ctx, const char *path, const serve_config *cfg, laya_error *err) {
  (void)ctx;
  laya_options opt;
  laya_options_init(&opt);
  opt.device = cfg ? cfg->device : NULL;
  opt.threads = cfg ? cfg->threads : 0;
  opt.quiet = 1;
  /* LAYA_CALIBRATION: a calibration file (laya calibrate --out) every checkpoint loads */
  const char *cal = cfg ? cfg->env.calibration : NULL;
  opt.calibration_path = cal && *cal ? cal : NULL;
  return laya_open(path, &opt, err);
}
static void *eng_open_pinned(void *ctx, const char *path, const char *sha256_json, const serve_config *cfg,
                             laya_error *err) {
  (void)ctx;
  laya_options opt;
  laya_options_init(&opt);
  opt.device = cfg ? cfg->device : NULL;
  opt.threads = cfg ? cfg->threads : 0;
  opt.quiet = 1;
  /* LAYA_CALIBRATION: a calibration file (laya calibrate --out) every checkpoint loads */
  const char *cal = cfg ? cfg->env.calibration : NULL;
  opt.calibration_path = cal && *cal ? cal : NULL;
  opt.sha256_json = sha256_json;
  return laya_open(path, &opt, err);
}
static void eng_close(void *ctx, void *model) {
  (void)ctx;
  laya_close(model);
}
static int eng_predict(void *ctx, void *model, const char *req, char **out, laya_error *err) {
  (void)ctx;
  return laya_predict(model, req, out, err);
}
/* One inference thread runs the passes (sched.c), so one worker. */
static int eng_reserve(void *ctx, void *model, const serve_config *cfg, laya_error *err) {
  (void)ctx;
  long row = cfg->max_token_budget < INT_MAX ? cfg->max_token_budget : INT_MAX;
  return laya_reserve(model, cfg->pass_tokens, (int)row, 1, err);
}
static int eng_predict_batch(void *ctx, void *model, const char *req, char **out, laya_error *err) {
  (void)ctx;
  return laya_predict_batch(model, req, out, err);
}
static bool eng_facts(void *ctx, void *model, model_facts *out) {
  (void)ctx;
  engine_model_facts(model, out);
  return true;
}
static long eng_cpu_fallbacks(void *ctx, void *model) {
  (void)ctx;
  return laya_cpu_fallback_count(model);
}
static int eng_job_prepare(void *ctx, void *model, const char *req, void **job, laya_error *err) {
  (void)ctx;
  laya_job *j = NULL;
  int rc = laya_job_prepare(model, req, &j, err);
  *job = j;
  return rc;
}
static long eng_job_tokens(void *ctx, void *job) {
  (void)ctx;
  return laya_job_tokens(job);
}
static int eng_jobs_run(void *ctx, void *model, void *const *jobs, int n, laya_error *err) {
  (void)ctx;
  return laya_jobs_run(model, (laya_job *const *)jobs, n, err);
}
static int eng_job_result(void *ctx, void *job, char **out, laya_error *err) {
  (void)ctx;
  return laya_job_result(job, out, err);
}
static void eng_job_free(void *ctx, void *job) {
  (void)ctx;
  laya_job_free(job);
}
static int eng_job_prepare_value(void *ctx, void *model, const json_value *req, void **job, laya_error *err) {
  (void)ctx;
  laya_job *j = NULL;
  int rc = engine_job_prepare_value(model, req, &j, err);
  *job = j;
  return rc;
}
static int eng_job_results(void *ctx, void *job, arena *a, const state_result **out, long *n, laya_error *err) {
  (void)ctx;
  state_result *r = NULL;
  int rc = engine_job_results(job, a, &r, n, err);
  *out = r;
  return rc;
}
static int eng_predict_values(void *ctx, void *model, const json_value *req, bool batch, arena *a,
                              const state_result **out, long *n, laya_error *err) {
  (void)ctx;
  state_result *r = NULL;
  laya_err_clear(err);
  int rc = engine_run_request(model, req, batch, a, &r, n, err);
  *out = r;
  return rc;
}
#ifdef LAYA_SERVE_HAVE_LONG
static int eng_predict_long_values(void *ctx, void *model, const json_value *req, arena *a, long_result *out,
                                   laya_error *err) {
  (void)ctx;
  laya_err_clear(err);
  return engine_run_long(model, req, NULL, a, out, err);
}
#else
#define eng_predict_long_values NULL
#endif
#ifdef LAYA_SERVE_HAVE_DECIDE
static int eng_decide_values(void *ctx, void *model, const json_value *req, decide_result **out, laya_error *err) {
  (void)ctx;
  laya_err_clear(err);
  return engine_run_decide(model, req, out, err);
}
#else
#define eng_decide_values NULL
#endif
static int eng_predict_shortlist_values(void *ctx, void *model, const json_value *req, arena *a,
                                        shortlist_result *out, laya_error *err) {
  (void)ctx;
  laya_err_clear(err);
  return engine_run_shortlist(model, req, a, out, err);
}
static int eng_predict_tournament_values(void *ctx, void *model, const json_value *req,
                                         int (*call)(void *arg, const json_value *preq, arena *a, state_result *out,
                                                     laya_error *err),
                                         bool (*stop)(void *arg), void *arg, arena *a, tournament_result *out,
                                         laya_error *err) {
  (void)ctx;
  laya_err_clear(err);
  tournament_calls calls = {call, stop, arg};
  return engine_run_tournament_calls(model, &calls, req, a, out, err);
}
static const char *eng_device(void *ctx, void *model) {
  (void)ctx;
  return engine_model_device(model);
}
const serve_engine serve_engine_laya = {.name = "laya",
                                        .predict_values = eng_predict_values,
                                        .predict_long_values = eng_predict_long_values,
                                        .decide_values = eng_decide_values,
                                        .predict_shortlist_values = eng_predict_shortlist_values,
                                        .predict_tournament_values = eng_predict_tournament_values,
                                        .device = eng_device,
                                        .open = eng_open,
                                        .open_pinned = eng_open_pinned,
                                        .close = eng_close,
                                        .reserve = eng_reserve,
                                        .predict = eng_predict,
                                        .predict_batch = eng_predict_batch,
                                        .facts = eng_facts,
                                        .cpu_fallbacks = eng_cpu_fallbacks,
                                        .job_prepare = eng_job_prepare,
                                        .job_tokens = eng_job_tokens,
                                        .jobs_run = eng_jobs_run,
                                        .job_result = eng_job_result,
                                        .job_free = eng_job_free,
                                        .job_results = eng_job_results,
                                        .job_prepare_value = eng_job_prepare_value};
#endif
