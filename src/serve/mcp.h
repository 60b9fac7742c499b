/* mcp.h: the laya-mcp server (Model Context Protocol over stdio). */
#ifndef LAYA_SERVE_MCP_H
#define LAYA_SERVE_MCP_H

#include <stdio.h>

#include "serve/serve.h"

typedef struct mcp_server {
  const serve_config *cfg;
  serve_models *models;
  const serve_engine *eng;
  FILE *out;
  /* A preset's questions as JSON and the state field it reads (both malloc'd), or -1; NULL
   * until the library has presets. */
  int (*preset_questions)(const char *name, char **questions_json, char **state_field);
  /* LAYA_BASE_URL: eng answers from that laya-serve, laya_status reports it (mcp_remote.h) */
  struct mcp_remote *remote;
} mcp_server;

/* Answer one JSON-RPC message (a line of stdin) on s->out. */
void mcp_handle_line(mcp_server *s, const char *line, size_t len);
/* Read messages until EOF. */
int mcp_run(mcp_server *s, FILE *in);

#endif
