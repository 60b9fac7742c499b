/* engine_laya.c: serve_engine over the laya library (include/laya.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
static const char *eng_info(void *ctx, void *model) {
  (void)ctx;
  (void)model;
  return NULL;
}
const serve_engine serve_engine_laya = {NULL, "none", eng_open, eng_close, eng_predict, eng_predict,
                                        NULL, eng_info, NULL, NULL};
#else
static void *eng_open(void *ctx, const char *path, const serve_config *cfg, laya_error *err) {
  (void)ctx;
  laya_options opt;
  laya_options_init(&opt);
  opt.device = cfg ? cfg->device : NULL;
  opt.threads = cfg ? cfg->threads : 0;
  opt.quiet = 1;
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
static int eng_predict_batch(void *ctx, void *model, const char *req, char **out, laya_error *err) {
  (void)ctx;
  return laya_predict_batch(model, req, out, err);
}
#ifdef LAYA_SERVE_HAVE_DECIDE
static int eng_decide(void *ctx, void *model, const char *req, char **out, laya_error *err) {
  (void)ctx;
  return laya_decide(model, req, out, err);
}
#else
#define eng_decide NULL
#endif
static const char *eng_info(void *ctx, void *model) {
  (void)ctx;
  return laya_model_info(model);
}
#ifdef LAYA_SERVE_HAVE_LONG
static int eng_predict_long(void *ctx, void *model, const char *req, char **out, laya_error *err) {
  (void)ctx;
  return laya_predict_long(model, req, out, err);
}
#else
#define eng_predict_long NULL
#endif
static long eng_cpu_fallbacks(void *ctx, void *model) {
  (void)ctx;
  return laya_cpu_fallback_count(model);
}
const serve_engine serve_engine_laya = {NULL,      "laya",            eng_open,   eng_close, eng_predict,
                                        eng_predict_batch, eng_decide, eng_info, eng_predict_long,
                                        eng_cpu_fallbacks};
#endif
