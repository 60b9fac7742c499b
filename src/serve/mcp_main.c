/* laya-mcp: Laya's typed-decision tools for MCP clients, over stdio. Configured like laya-serve
 * (LAYA_EXTRA_MODELS, LAYA_MODELS, LAYA_PRELOAD, LAYA_DEVICE, LAYA_THREADS, LAYA_DEFAULT_MODEL).
 * stdout carries protocol messages only; diagnostics go to stderr. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/presets.h"
#include "serve/log.h"
#include "serve/mcp.h"
#include "serve/mcp_remote.h"

/* The preset question sets (model/presets.c, shared with `laya --preset`); Laya's MCP name
 * model_router is the CLI's router. */
static int preset_questions(const char *name, char **questions, char **field) {
  const question_preset *p = question_preset_find(!strcmp(name, "model_router") ? "router" : name);
  if (!p || !p->questions) return -1;
  *questions = strdup(p->questions);
  *field = p->state_key ? strdup(p->state_key) : NULL;
  return *questions ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--version")) {
    printf("laya-mcp %s (Laya %s compatible)\n", LAYA_VERSION, LAYA_COMPAT_VERSION);
    return 0;
  }
  if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    printf("usage: laya-mcp\n\nLaya's decision tools over the Model Context Protocol on stdin/stdout.\n"
           "Configure checkpoints with LAYA_EXTRA_MODELS='{\"english\": \"/path\"}' and LAYA_MODELS, or answer\n"
           "from a running laya-serve with LAYA_BASE_URL=http://host:8000 (LAYA_API_KEY, LAYA_REMOTE_TIMEOUT).\n");
    return 0;
  }
  signal(SIGPIPE, SIG_IGN);
  char msg[2048] = "";
  serve_config cfg;
  serve_log_program("laya-mcp");
  if (serve_config_from_env(&cfg, msg, sizeof msg) != 0) {
    serve_log(SERVE_LOG_CRITICAL, "%s", msg);
    serve_config_free(&cfg);
    return 1;
  }
  /* Laya's MCP server preloads english and multilingual when LAYA_MODELS is empty (laya-serve:
   * every checkpoint); typed-decisions stays lazy */
  if (!cfg.models || !*cfg.models) {
    free(cfg.models);
    cfg.models = strdup("english,multilingual");
  }
  /* LAYA_BASE_URL: answer from that laya-serve; routing stays here, nothing is loaded */
  mcp_remote *remote = mcp_remote_from_env(&cfg);
  serve_engine remote_eng;
  const serve_engine *eng = &serve_engine_laya;
  if (remote) {
    mcp_remote_engine(remote, &remote_eng);
    eng = &remote_eng;
    serve_log(SERVE_LOG_INFO, "remote mode: answering from laya-serve at %s", mcp_remote_url(remote));
  }
  serve_models *models = serve_models_new(&cfg, eng, msg, sizeof msg);
  if (!models) {
    serve_log(SERVE_LOG_CRITICAL, "%s", msg);
    serve_config_free(&cfg);
    mcp_remote_free(remote);
    return 1;
  }
  if (cfg.preload && !remote) {
    laya_error err;
    laya_err_clear(&err);
    if (serve_models_preload(models, &err) != 0)
      serve_log(SERVE_LOG_WARNING, "preload failed (will retry on demand): %s", err.message);
  }
  mcp_server s = {&cfg, models, eng, stdout, preset_questions, remote};
  int rc = mcp_run(&s, stdin);
  serve_models_free(models);
  mcp_remote_free(remote);
  serve_config_free(&cfg);
  return rc;
}
