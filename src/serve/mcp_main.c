/* laya-mcp: Laya's typed-decision tools for MCP clients, over stdio. Configured like laya-serve
 * (LAYA_EXTRA_MODELS, LAYA_MODELS, LAYA_PRELOAD, LAYA_DEVICE, LAYA_THREADS, LAYA_DEFAULT_MODEL).
 * stdout carries protocol messages only; diagnostics go to stderr. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/presets.h"
#include "serve/mcp.h"

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
  if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    printf("usage: laya-mcp\n\nLaya's decision tools over the Model Context Protocol on stdin/stdout.\n"
           "Configure checkpoints with LAYA_EXTRA_MODELS='{\"english\": \"/path\"}' and LAYA_MODELS.\n");
    return 0;
  }
  signal(SIGPIPE, SIG_IGN);
  char msg[2048] = "";
  serve_config cfg;
  if (serve_config_from_env(&cfg, msg, sizeof msg) != 0) {
    fprintf(stderr, "[laya-mcp] %s\n", msg);
    return 1;
  }
  /* Laya's MCP server preloads english and multilingual when LAYA_MODELS is empty (laya-serve:
   * every checkpoint); typed-decisions stays lazy */
  if (!cfg.models || !*cfg.models) {
    free(cfg.models);
    cfg.models = strdup("english,multilingual");
  }
  serve_models *models = serve_models_new(&cfg, &serve_engine_laya, msg, sizeof msg);
  if (!models) {
    fprintf(stderr, "[laya-mcp] %s\n", msg);
    serve_config_free(&cfg);
    return 1;
  }
  if (cfg.preload) {
    laya_error err;
    laya_err_clear(&err);
    if (serve_models_preload(models, &err) != 0)
      fprintf(stderr, "[laya-mcp] preload failed (will retry on demand): %s\n", err.message);
  }
  mcp_server s = {&cfg, models, &serve_engine_laya, stdout, preset_questions};
  int rc = mcp_run(&s, stdin);
  serve_models_free(models);
  serve_config_free(&cfg);
  return rc;
}
