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
/* The engine table laya-mcp's registry opens checkpoints with (by name: nothing is loaded); the
 * decisions go through mcp_remote_post. */
void mcp_remote_engine(mcp_remote *r, serve_engine *eng);
/* POST path with request (a value mcp.c built, written once as the body; "model" among its
 * members names the checkpoint, or null for the server to route): the server's answer, parsed
 * in a (outside input, the one parse), or with member its array of that name ("results"), in
 * *out. -1 with a "remote:<code>" error otherwise. */
int mcp_remote_post(mcp_remote *r, const char *path, const json_value *request, const char *member, arena *a,
                    const json_value **out, laya_error *err);
/* laya_predict_long, which laya-serve has no route for: the error Laya's RemoteRouter gives
 * (always nonzero). */
int mcp_remote_refuse(mcp_remote *r, laya_error *err);
/* laya_decide as Laya's decide() over its RemoteRouter: schema (NULL: None) planned into
 * questions (*plan; a bad schema is a SchemaError, before any request), asked of the server as
 * one POST /v1/systemone with the caller's model (NULL, "" or "auto": the server routes) and
 * min_confidence (NULL: none); the server's answer in *reply (in a). Free *plan with
 * decide_plan_free. */
struct decide_plan;
int mcp_remote_decide(mcp_remote *r, const json_value *state, const json_value *schema, const char *model,
                      const json_value *min_confidence, arena *a, struct decide_plan **plan,
                      const json_value **reply, laya_error *err);
/* laya_status in remote mode: {"mode": "remote", "base_url", ..., "server": /health or null,
 * "server_error"?, "loaded", device facts}, as JSON text (malloc'd); NULL with err only when the
 * remote could not be built. */
char *mcp_remote_status(mcp_remote *r, laya_error *err);

#endif
