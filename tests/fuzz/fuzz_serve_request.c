/* fuzz_serve_request: laya-serve's request handling without sockets. The input is an HTTP body
 * for /v1/systemone (first byte even) or /v1/systemone/batch (odd); it goes through validation,
 * routing and job building exactly as the server does it, then through the response writer (as
 * if it were an engine result), and as a line of JSON-RPC through the MCP server's dispatcher
 * (whose engine refuses to load anything, so every tool runs its validation and error paths).
 * Nothing may crash, leak or read out of bounds, whatever the bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/mcp.h"
#include "serve/serve.h"

static void *no_open(void *ctx, const char *path, const serve_config *cfg, laya_error *err) {
  (void)ctx;
  (void)cfg;
  laya_err(err, LAYA_ERR_IO, NULL, "fuzzing: not opening %s", path);
  return NULL;
}
static void no_close(void *ctx, void *m) {
  (void)ctx;
  (void)m;
}
static int no_predict(void *ctx, void *m, const char *req, char **out, laya_error *err) {
  (void)ctx;
  (void)m;
  (void)req;
  *out = NULL;
  return laya_err(err, LAYA_ERR_IO, NULL, "fuzzing");
}
static const serve_engine no_engine = {.name = "none", .open = no_open, .close = no_close, .predict = no_predict,
                                       .predict_batch = no_predict};

static serve_config cfg;
static serve_models *models;
static FILE *sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!models) {
    char msg[256];
    setenv("LAYA_EXTRA_MODELS", "{\"english\": \"/nonexistent/a\", \"extra\": \"/nonexistent/b\"}", 1);
    serve_config_from_env(&cfg, msg, sizeof msg);
    cfg.max_batch_tokens = 4096;
    models = serve_models_new(&cfg, &no_engine, msg, sizeof msg);
    sink = fopen("/dev/null", "w");
    if (!models || !sink) abort();
  }
  if (size == 0) return 0;
  serve_route_kind kind = (data[0] & 1) ? SERVE_BATCH : SERVE_ONE;
  cfg.jev_strict = (data[0] & 2) != 0;
  const char *body = (const char *)data + 1;
  size_t len = size - 1;

  arena a;
  arena_init(&a, 4096);
  serve_request req;
  serve_reject rej;
  serve_reject_init(&rej);
  if (serve_validate(body, len, kind, &cfg, models, &a, &req, &rej) == 0) {
    serve_job *job = NULL;
    if (serve_job_from_request(models, &req, cfg.jev_strict, &job, &rej) == 0) {
      serve_job_run_alone(models, &no_engine, job); /* fails to load: the 500 path */
      serve_job_free(job);
    }
    /* the body as an engine result: routing, Jev confidence, strict projection */
    strbuf out;
    sb_init(&out);
    serve_finish_result((json_value *)req.body, "{\"model\": \"english\"}", cfg.jev_strict, &a, &out);
    sb_free(&out);
  }
  serve_reject_free(&rej);
  arena_free(&a);

  mcp_server s = {&cfg, models, &no_engine, sink, NULL, NULL};
  mcp_handle_line(&s, body, len);
  return 0;
}
