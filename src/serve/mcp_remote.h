/* mcp_remote.h: laya-mcp's remote mode (LAYA_BASE_URL): the tools answer from a running
 * laya-serve over HTTP instead of loading checkpoints, as Laya's MCP server does with its
 * RemoteRouter. Routing stays local (the registry, without loading anything); a decision is
 * POST /v1/systemone (or /v1/systemone/batch for a group of requests sharing questions) naming
 * the checkpoint the local routing chose; laya_status reports the server's GET /health. */
#ifndef LAYA_SERVE_MCP_REMOTE_H
#define LAYA_SERVE_MCP_REMOTE_H

#include "serve/serve.h"

typedef struct mcp_remote mcp_remote;

/* From LAYA_BASE_URL (blank or unset: NULL, the local engine), LAYA_REMOTE_TIMEOUT (seconds,
 * default 300) and cfg->api_key (LAYA_API_KEY, sent as the bearer). A URL Laya would refuse
 * (not http(s), no host, a query or fragment) still gives a remote whose every call fails with
 * Laya's "remote router construction failed: ..." (a stdio server has no startup to refuse). */
mcp_remote *mcp_remote_from_env(const serve_config *cfg);
void mcp_remote_free(mcp_remote *r);
/* The server origin, as normalised ("http://" added to a bare host:port, trailing '/' dropped). */
const char *mcp_remote_url(const mcp_remote *r);
/* The engine table whose calls go to the server; checkpoints are opened by name. */
void mcp_remote_engine(mcp_remote *r, serve_engine *eng);
/* laya_status in remote mode: {"mode": "remote", "base_url", ..., "server": /health or null,
 * "server_error"?, "loaded", device facts}, as JSON text (malloc'd); NULL with err only when the
 * remote could not be built. */
char *mcp_remote_status(mcp_remote *r, laya_error *err);

#endif
