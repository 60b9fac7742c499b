/*
 * serve_overhead: what the servers spend on one request outside the forward pass and the
 * transport, with the model's forward replaced by a stand-in that writes fixed pseudo-random
 * logits (BENCHMARKS.md, "Typed core: request overhead"):
 *   mcp <tool>   one laya-mcp tools/call line through mcp_handle_line (parse, validate, route,
 *                run, write the result), its reply written to /dev/null
 *   alone        one /v1/systemone body through the server's unbatched path (serve_validate ->
 *                serve_job_from_request -> serve_job_run_alone -> the body)
 *   alone batch  the same for /v1/systemone/batch bodies (4 states; 2 routed to two checkpoints)
 * Built from the servers' headers only, so the same file builds against an older tree for a
 * before/after comparison. Single-threaded; CPU time of the process.
 *
 *   serve_overhead <ckpt dir> [rounds [row]]   (modernbert-tiny, mmbert-tiny under <ckpt dir>)
 *
 * row: run only the row of that name (and skip its warm-up), so that an outside
 * counter (valgrind's heap summary, callgrind's instruction count) run at two round counts gives
 * the allocations and instructions of one request of that row by difference.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "laya.h"
#include "model/engine.h"
#include "serve/mcp.h"
#include "serve/serve.h"

static int stub_forward(struct backend *b, backend_worker *w, const packed_batch *pb, float *logits, float *act,
                        laya_error *err) {
  (void)b;
  (void)w;
  (void)err;
  uint32_t x = 2463534242u;
  for (int i = 0; i < pb->marker_start[pb->n_rows]; i++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    logits[i] = (float)(x % 2000) / 250.0f - 4.0f;
  }
  for (int i = 0; i < pb->n_rows * 2; i++) act[i] = (float)(i % 3) - 1.0f;
  return 0;
}

static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#define QS                                                                                              \
  "{\"intent\": {\"type\": \"choice\", \"instructions\": \"What does the customer want?\", "           \
  "\"criteria\": {\"refund\": \"money back\", \"help\": \"support\", \"other\": \"anything else\"}}, " \
  "\"urgent\": {\"type\": \"noul\", \"instructions\": \"Is it urgent?\"}, "                            \
  "\"anger\": {\"type\": \"score\", \"instructions\": \"How angry?\", \"criteria\": [\"calm\", \"cross\", \"furious\"]}}"
#define ST "{\"message\": \"I was charged twice for my order last week, please refund me now\"}"
#define CALL(tool, args) \
  "{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": \"tools/call\", \"params\": {\"name\": \"" tool "\", \"arguments\": " args "}}"

static const struct {
  const char *name, *line;
} MCP[] = {
    {"mcp laya_predict", CALL("laya_predict", "{\"state\": " ST ", \"questions\": " QS "}")},
    {"mcp laya_predict_batch (4)",
     CALL("laya_predict_batch", "{\"requests\": [{\"state\": " ST ", \"questions\": " QS "}, {\"state\": " ST
                                ", \"questions\": " QS "}, {\"state\": " ST ", \"questions\": " QS "}, {\"state\": " ST
                                ", \"questions\": " QS "}]}")},
    {"mcp laya_decide", CALL("laya_decide", "{\"state\": " ST ", \"schema\": {\"type\": \"object\", \"properties\": "
                                            "{\"team\": {\"enum\": [\"billing\", \"tech\"]}, \"ok\": {\"type\": \"boolean\"}}}}")},
    {"mcp laya_predict_long", CALL("laya_predict_long", "{\"state\": " ST ", \"questions\": " QS ", \"window\": 16}")},
    {"mcp laya_route", CALL("laya_route", "{\"state\": " ST ", \"questions\": " QS "}")},
    /* k 20 >= every choice's labels: passthrough, nothing embedded (the stub replaces only the
     * decision forward) */
    {"mcp laya_shortlist (k 20)", CALL("laya_shortlist", "{\"state\": " ST ", \"questions\": " QS "}")},
};

static const struct {
  const char *name, *body;
  serve_route_kind kind;
} HTTP[] = {
    {"alone /v1/systemone", "{\"state\": " ST ", \"questions\": " QS "}", SERVE_ONE},
    {"alone /v1/systemone/batch (4)",
     "{\"states\": [\"I was charged twice, please refund me now\", \"The app crashes when I open the settings "
     "page\", \"Where is my parcel? It was due last week\", \"Thank you, the problem is solved now\"], \"questions\": " QS "}",
     SERVE_BATCH},
    {"alone /v1/systemone/batch (2 ckpts)",
     "{\"states\": [\"I was charged twice, please refund me now\", \"Mein Konto wurde zweimal belastet, bitte "
     "erstatten\"], \"questions\": " QS "}",
     SERVE_BATCH},
};

static int run_http(const serve_config *cfg, serve_models *models, const char *body, serve_route_kind kind) {
  arena a;
  arena_init(&a, 1 << 14);
  serve_request req;
  serve_reject rej;
  serve_reject_init(&rej);
  serve_job *job = NULL;
  int rc = serve_validate(body, strlen(body), kind, cfg, models, &a, &req, &rej);
  if (!rc) rc = serve_job_from_request(models, &req, false, &job, &rej);
  if (!rc) {
    serve_job_run_alone(models, &serve_engine_laya, job);
    rc = job->status;
  }
  serve_job_free(job);
  serve_reject_free(&rej);
  arena_free(&a);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  int rounds = argc > 2 ? atoi(argv[2]) : 200;
  const char *only = argc > 3 ? argv[3] : NULL;
  char extra[8192];
  snprintf(extra, sizeof extra, "{\"english\": \"%s/modernbert-tiny\", \"multilingual\": \"%s/mmbert-tiny\"}", argv[1],
           argv[1]);
  setenv("LAYA_EXTRA_MODELS", extra, 1);
  setenv("LAYA_MODELS", "english,multilingual", 1);
  setenv("LAYA_BACKEND", "cpu-ref", 1);
  setenv("LAYA_THREADS", "1", 1);
  setenv("HF_HUB_OFFLINE", "1", 1);
  serve_config cfg;
  char msg[1024];
  if (serve_config_from_env(&cfg, msg, sizeof msg)) return fprintf(stderr, "%s\n", msg), 1;
  serve_models *models = serve_models_new(&cfg, &serve_engine_laya, msg, sizeof msg);
  if (!models) return fprintf(stderr, "%s\n", msg), 1;
  laya_error err;
  static const char *const names[] = {"english", "multilingual"};
  for (int i = 0; i < 2; i++) {
    laya_model *m = serve_models_get(models, names[i], &err);
    if (!m) return fprintf(stderr, "%s\n", err.message), 1;
    m->be->forward = stub_forward;
  }
  FILE *null = fopen("/dev/null", "w");
  mcp_server s = {&cfg, models, &serve_engine_laya, null, NULL, NULL};
  for (size_t t = 0; t < sizeof MCP / sizeof *MCP; t++) {
    if (only && strcmp(MCP[t].name, only)) continue;
    for (int i = 0; i < (only ? 1 : 20); i++) mcp_handle_line(&s, MCP[t].line, strlen(MCP[t].line));
    double t0 = cpu_s();
    for (int i = 0; i < rounds; i++) mcp_handle_line(&s, MCP[t].line, strlen(MCP[t].line));
    printf("%-32s %8.1f us / request\n", MCP[t].name, (cpu_s() - t0) / rounds * 1e6);
  }
  for (size_t t = 0; t < sizeof HTTP / sizeof *HTTP; t++) {
    if (only && strcmp(HTTP[t].name, only)) continue;
    for (int i = 0; i < (only ? 1 : 20); i++)
    {
      int rc = run_http(&cfg, models, HTTP[t].body, HTTP[t].kind);
      if (rc) return fprintf(stderr, "%s failed: %d\n", HTTP[t].name, rc), 1;
    }
    double t0 = cpu_s();
    for (int i = 0; i < rounds; i++) run_http(&cfg, models, HTTP[t].body, HTTP[t].kind);
    printf("%-32s %8.1f us / request\n", HTTP[t].name, (cpu_s() - t0) / rounds * 1e6);
  }
  fclose(null);
  serve_models_free(models);
  serve_config_free(&cfg);
  return 0;
}
