/* laya-serve: Laya's /v1/systemone HTTP server. Configured by the environment, as Laya's is
 * (see docs/serve.md); SIGTERM or SIGINT drains in-flight requests, then exits 0. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/http.h"
#include "serve/log.h"
#include "serve/serve.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: laya-serve\n\n"
          "Serve Laya decisions over HTTP (POST /v1/systemone, POST /v1/systemone/batch,\n"
          "GET /health, GET /ready, GET /metrics). Configured by environment variables:\n"
          "  LAYA_HOST (0.0.0.0)  LAYA_PORT (8000)  LAYA_API_KEY  LAYA_MAX_CONCURRENT (16)\n"
          "  LAYA_EXTRA_MODELS ('{\"english\": \"/path/to/checkpoint\"}')  LAYA_MODELS\n"
          "  LAYA_DEFAULT_MODEL  LAYA_PRELOAD (1)  LAYA_DEVICE  LAYA_THREADS  LAYA_JEV_STRICT\n"
          "  LAYA_MAX_TOKEN_BUDGET (8192)  LAYA_MAX_BATCH_TOKENS (131072)\n"
          "  LAYA_BODY_READ_TIMEOUT (10)  LAYA_SERVE_BATCHING (1)  LAYA_SERVE_BATCH_WAIT_US (1000)\n"
          "  LAYA_SERVE_MAX_BATCH_REQUESTS (64)  LAYA_SERVE_HTTP_THREADS (online CPUs, 2-16)\n"
          "  LAYA_SERVE_PASS_TOKENS (16384 on the CPU, else LAYA_MAX_BATCH_TOKENS)\n"
          "  LAYA_SERVE_PIPELINE (1)  LAYA_SERVE_DRAIN_SECONDS (30)\n"
          "  LAYA_LOG_LEVEL (info)  LAYA_LOG_FORMAT (text, or json)  LAYA_ROOT_PATH\n");
}

int main(int argc, char **argv) {
  if (argc > 1) {
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(argv[1], "--version")) {
      printf("laya-serve %s (Laya %s compatible)\n", LAYA_VERSION, LAYA_COMPAT_VERSION);
      return 0;
    }
    usage(stderr);
    fprintf(stderr, "laya-serve: error: takes no arguments (got '%s'); configure it with LAYA_* variables\n",
            argv[1]);
    return 2;
  }
  /* Block the shutdown signals before any thread starts, so only sigwait below sees them. */
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);

  char msg[2048] = "";
  serve_config cfg;
  serve_log_program("laya-serve");
  if (serve_config_from_env(&cfg, msg, sizeof msg) != 0) {
    serve_log(SERVE_LOG_CRITICAL, "%s", msg);
    serve_config_free(&cfg);
    return 1;
  }
  /* every checkpoint gets the scratch of the largest pass this server can form when it opens
   * (at startup with LAYA_PRELOAD), so serving allocates no scratch (docs/serve.md, Memory) */
  cfg.reserve_passes = true;
  serve_models *models = serve_models_new(&cfg, &serve_engine_laya, msg, sizeof msg);
  if (!models) {
    serve_log(SERVE_LOG_CRITICAL, "%s", msg);
    serve_config_free(&cfg);
    return 1;
  }
  if (cfg.preload) {
    laya_error err;
    laya_err_clear(&err);
    double t0 = serve_now();
    if (serve_models_preload(models, &err) != 0) {
      serve_log(SERVE_LOG_CRITICAL, "preload failed: %s", err.message);
      serve_models_free(models);
      serve_config_free(&cfg);
      return 1;
    }
    strbuf sb;
    sb_init(&sb);
    serve_models_loaded(models, &sb);
    serve_log(SERVE_LOG_INFO, "loaded %s in %.2fs", sb_cstr(&sb), serve_now() - t0);
    sb_free(&sb);
  }
  serve_server *srv = serve_server_start(&cfg, models, &serve_engine_laya, msg, sizeof msg);
  if (!srv) {
    serve_log(SERVE_LOG_CRITICAL, "%s", msg);
    serve_models_free(models);
    serve_config_free(&cfg);
    return 1;
  }
  serve_log(SERVE_LOG_INFO, "listening on http://%s:%d%s (batching %s, max concurrent %d)", cfg.host,
            serve_server_port(srv), cfg.root_path ? cfg.root_path : "", cfg.batching ? "on" : "off",
            cfg.max_concurrent);
  int sig = 0;
  sigwait(&sigs, &sig);
  serve_log(SERVE_LOG_INFO, "%s received, draining in-flight requests", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  serve_server_drain(srv, cfg.drain_seconds);
  serve_server_stop(srv);
  serve_models_free(models);
  serve_config_free(&cfg);
  serve_log(SERVE_LOG_INFO, "stopped");
  return 0;
}
