/*
 * serve.h: the pieces of laya-serve (HTTP) and laya-mcp (stdio) that are not the transport.
 *
 *   config    environment variables, read once at startup, with Laya's defaults and fallbacks
 *   validate  a request body -> a checked serve_request, or the exact status and detail
 *             Laya's server answers (this is the fuzz target's surface: pure, no I/O)
 *   models    the checkpoint registry (names, aliases, LAYA_EXTRA_MODELS) and routing
 *   sched     the scheduler: packs concurrent requests for one checkpoint into shared passes
 *   respond   result post-processing (routing block, x_jev_confidence, strict Jev projection)
 *   metrics   counters and histograms, rendered as Prometheus text
 *
 * The inference itself goes through serve_engine, a small table of functions, so the server
 * runs the real library (engine_laya.c) in production and a deterministic stand-in in tests of
 * the transport and the scheduler.
 */
#ifndef LAYA_SERVE_H
#define LAYA_SERVE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/json.h"
#include "core/options.h"
#include "core/pystr.h"
#include "core/strbuf.h"
#include "laya.h"

/* ---- limits (Laya's serve.py constants) ---- */
#define SERVE_MAX_QUESTIONS 64
#define SERVE_MAX_STATE_CHARS 50000
#define SERVE_MAX_BATCH_STATES 64
#define SERVE_MAX_BODY_BYTES (2u * 1024u * 1024u)
#define SERVE_MAX_CHOICE_OPTIONS 100
#define SERVE_MAX_SCORE_LEVELS 32
#define SERVE_MAX_TOTAL_OPTIONS 512
/* laya-mcp's laya_shortlist narrows a choice before it is read, so its labels are capped higher
 * (Laya's MCP server has no cap; these keep one call bounded): per choice, and in all */
#define SERVE_SHORTLIST_MAX_LABELS 10000
#define SERVE_SHORTLIST_MAX_TOTAL 20000
/* a choice read in groups (laya-mcp's laya_tournament, laya-serve with LAYA_TOURNAMENT_GROUP): Laya's
 * serve.py cap for a tournament choice (MAX_TOURNAMENT_CHOICE_OPTIONS) */
#define SERVE_TOURNAMENT_MAX_LABELS 255
#define SERVE_DEFAULT_MAX_CONCURRENT 16
#define SERVE_DEFAULT_MAX_TOKEN_BUDGET 8192
#define SERVE_DEFAULT_MAX_BATCH_TOKENS 131072
#define SERVE_BATCH_ROW_TOKENS_ASSUMED 512
#define SERVE_CPU_PASS_TOKENS 16384 /* LAYA_SERVE_PASS_TOKENS's default on the CPU */
#define SERVE_DEFAULT_BODY_READ_TIMEOUT 10.0
#define SERVE_DEFAULT_PORT 8000
/* How deep a state may nest: the engine parses what the server hands it with the JSON parser's
 * default limit (1000 levels, core/json.h) and the server wraps a state two levels deeper
 * ({"states": [state]}), so a deeper state would pass here and fail there. Checked once, here. */
#define SERVE_JSON_DEPTH 1000
#define SERVE_MAX_STATE_DEPTH (SERVE_JSON_DEPTH - 2)

/* ---- config ---- */
typedef struct serve_config {
  char *host;              /* LAYA_HOST, default 0.0.0.0 */
  int port;                /* LAYA_PORT (0 = any free port, ours: tests) */
  char *api_key;           /* LAYA_API_KEY, NULL = open */
  int max_concurrent;      /* LAYA_MAX_CONCURRENT */
  long max_token_budget;   /* LAYA_MAX_TOKEN_BUDGET */
  long max_batch_tokens;   /* LAYA_MAX_BATCH_TOKENS */
  double body_read_timeout; /* LAYA_BODY_READ_TIMEOUT seconds */
  bool jev_strict;         /* LAYA_JEV_STRICT */
  bool preload;            /* LAYA_PRELOAD */
  bool auto_task;          /* LAYA_AUTO_TASK */
  char *models;            /* LAYA_MODELS, comma list ("" = every registered checkpoint) */
  char *default_model;     /* LAYA_DEFAULT_MODEL, canonical; NULL = multilingual */
  char *extra_models;      /* LAYA_EXTRA_MODELS JSON text, NULL when unset */
  char *device;            /* LAYA_DEVICE */
  int threads;             /* LAYA_THREADS (0 = library default) */
  laya_env_options env;    /* the library's variables (core/options.h), read and checked at start */
  int max_loaded;          /* LAYA_MAX_LOADED (0 = unset: 2, as Laya's Router) */
  double idle_unload_seconds; /* LAYA_IDLE_UNLOAD_SECONDS (0 = off) */
  char *log_level;         /* LAYA_LOG_LEVEL (uvicorn's names, lower case; default info) */
  char *root_path;         /* LAYA_ROOT_PATH: the public URL prefix behind a proxy, as given
                              (FastAPI's root_path), or NULL when unset or empty */
  char *log_format;        /* LAYA_LOG_FORMAT: "text" (default) or "json" (JSON lines) */
  /* ours (laya.c only) */
  bool batching;           /* LAYA_SERVE_BATCHING: pack concurrent requests (default 1) */
  int batch_wait_us;       /* LAYA_SERVE_BATCH_WAIT_US: how long a lone request waits for company */
  int max_batch_requests;  /* LAYA_SERVE_MAX_BATCH_REQUESTS: requests in one pass (default 64) */
  long pass_tokens;        /* LAYA_SERVE_PASS_TOKENS: tokens of one pass (cap: LAYA_MAX_BATCH_TOKENS;
                              default: that on a GPU, SERVE_CPU_PASS_TOKENS on the CPU) */
  int http_threads;        /* LAYA_SERVE_HTTP_THREADS: libmicrohttpd thread pool (default: the
                              online CPUs, 2 to 16); they also prepare and decode requests */
  bool pipeline;           /* LAYA_SERVE_PIPELINE: prepare and decode requests on their own
                              threads, not the inference thread (default 1) */
  int drain_seconds;       /* LAYA_SERVE_DRAIN_SECONDS: SIGTERM waits this long for in-flight */
  /* connection hardening (laya.c only; docs/serve.md, Connections) */
  double header_timeout;   /* LAYA_SERVE_HEADER_TIMEOUT: seconds a connection may sit without a
                              complete request head (idle keep-alive included), default 10 */
  int max_connections;     /* LAYA_SERVE_MAX_CONNECTIONS: open connections (default 4096, and
                              below the process's file limit) */
  int max_connections_per_ip; /* LAYA_SERVE_MAX_CONNECTIONS_PER_IP (0 = no per-address limit) */
  long max_buffered_bytes; /* LAYA_SERVE_MAX_BUFFERED_MB: request bodies held in memory at once,
                              arriving or being checked (default max(256 MiB, 4 x
                              LAYA_MAX_CONCURRENT x 2 MiB)); past it a body gets 503
                              (reason buffered_memory) */
  bool reserve_passes;     /* not from the environment: laya-serve sets it, so every checkpoint
                              it opens gets its pass scratch up front (serve_engine.reserve) */
} serve_config;

/* Fill cfg from the environment. Returns 0, or -1 with a message (Laya's text) in msg for a
 * value Laya refuses to start with (LAYA_PORT, LAYA_DEFAULT_MODEL, LAYA_EXTRA_MODELS, log level). */
int serve_config_from_env(serve_config *cfg, char *msg, size_t msg_size);
void serve_config_free(serve_config *cfg);
/* Laya's switch reading: unset or blank = def; only 1/true/yes/on (any case) turn it on. */
bool serve_env_bool(const char *name, bool def);

/* ---- Python text semantics (py_repr_json / py_repr_str are core/pystr.h's) ---- */
/* Code points in a UTF-8 (or WTF-8) string: Python's len(str). */
size_t utf8_cp_len(const char *s, size_t n);

/* ---- models: registry, names, routing ---- */
typedef struct serve_models serve_models;
typedef struct serve_engine serve_engine;
typedef struct serve_metrics serve_metrics;

/* A route: which checkpoint answers, and the `routing` block as JSON (owned by the caller, with
 * reason and repo: serve_route_free), and the facts a surface reads from it as values. */
typedef struct serve_route {
  char model[64];
  char *routing_json;
  char language[32]; /* the detection's language ("" = none) */
  char *reason;      /* the decision's reason */
  char *repo;        /* the decision's repo ("None" when the checkpoint has no entry, as Laya writes) */
} serve_route;
void serve_route_free(serve_route *r); /* routing_json, reason, repo */

/* The configuration the models were made with. */
const serve_config *serve_models_config(const serve_models *m);
serve_models *serve_models_new(const serve_config *cfg, const serve_engine *eng, char *msg,
                               size_t msg_size);
void serve_models_free(serve_models *m);
/* Canonical name of a checkpoint this server knows (aliases, case, spaces); -1 with Laya's
 * "unknown model %r; choose one of [...] (or an alias: [...])" in msg otherwise. */
int serve_models_resolve(const serve_models *m, const json_value *name, char *out, size_t out_size,
                         strbuf *msg);
/* Route one request (model already resolved or NULL; task, lang, lang_guess may be NULL). */
int serve_models_route(const serve_models *m, const json_value *state, const json_value *questions,
                       const char *model, const json_value *task, const char *lang,
                       const char *lang_guess, serve_route *out, strbuf *msg);
/* The loaded checkpoint for name, loading it on first use, held for the caller: it is not
 * closed (LAYA_MAX_LOADED eviction, LAYA_IDLE_UNLOAD_SECONDS) until serve_models_release. NULL
 * with err on failure. */
void *serve_models_acquire(serve_models *m, const char *name, laya_error *err);
void serve_models_release(serve_models *m, void *model);
/* acquire + release: the model stays valid only while nothing else can evict it (laya-mcp's
 * one thread, or a check that it loads). */
void *serve_models_get(serve_models *m, const char *name, laya_error *err);
/* Close every checkpoint unused for idle_seconds (none in use); how many were closed. */
int serve_models_unload_idle(serve_models *m, double idle_seconds);
/* Load every checkpoint LAYA_MODELS names (or every registered one that has a local source). */
int serve_models_preload(serve_models *m, laya_error *err);
/* /health's members ("loaded", "revisions", "device", ...) one by one (key, value as JSON text in
 * json.dumps's default spacing, no floats), in /health's order, for a surface that writes them in
 * its own style (/health, laya_status). */
#define SERVE_HEALTH_N 8
typedef struct serve_health {
  const char *key[SERVE_HEALTH_N];
  strbuf value[SERVE_HEALTH_N];
} serve_health;
void serve_models_health_members(serve_models *m, serve_health *h);
const char *serve_health_get(const serve_health *h, const char *key); /* NULL: no such member */
void serve_health_free(serve_health *h);
/* JSON array of the loaded checkpoint names. */
void serve_models_loaded(serve_models *m, strbuf *sb);
struct model_facts; /* model/typed.h */
/* fn(user, name, facts) for each loaded checkpoint in registry order, under the registry lock
 * (the facts are the model's: valid only during the call); facts NULL when the engine has none
 * (/metrics). Returns how many were loaded. */
unsigned serve_models_each_facts(serve_models *m, void (*fn)(void *user, const char *name, const struct model_facts *f),
                                 void *user);
bool serve_models_ready(serve_models *m);
/* /ready's 503 body while not ready: {"status":"loading"}, or, once a checkpoint failed to load,
 * {"status":"unavailable","errors":{name: why}}. */
void serve_models_not_ready(serve_models *m, strbuf *sb);
/* Whether checkpoint `name` (once loaded) has per-language temperature tables. */
bool serve_models_has_lang_temps(serve_models *m, const char *name);

/* ---- the inference engine, as a table (production: the laya library) ---- */
struct state_result; /* model/typed.h */
struct long_result;
struct decide_result;
struct shortlist_result;
struct tournament_result;
struct serve_engine {
  void *ctx;
  const char *name;
  /* Open a checkpoint directory. */
  void *(*open)(void *ctx, const char *path, const serve_config *cfg, laya_error *err);
  /* The same, checking its files against sha256_json ({relpath: hex}) rather than the flat
   * LAYA_SHA256_DIGESTS; NULL: open is used. */
  void *(*open_pinned)(void *ctx, const char *path, const char *sha256_json, const serve_config *cfg,
                       laya_error *err);
  void (*close)(void *ctx, void *model);
  /* laya_reserve for the largest pass this server can form (cfg: LAYA_SERVE_PASS_TOKENS tokens,
   * rows up to LAYA_MAX_TOKEN_BUDGET), or NULL. */
  int (*reserve)(void *ctx, void *model, const serve_config *cfg, laya_error *err);
  /* laya_predict / laya_predict_batch semantics: JSON in, JSON out (free with laya_free). */
  int (*predict)(void *ctx, void *model, const char *request_json, char **result_json,
                 laya_error *err);
  int (*predict_batch)(void *ctx, void *model, const char *request_json, char **result_json,
                       laya_error *err);
  /* The facts of laya_model_info the server reads (model/typed.h), filled in *out; false: none
  (the engine reports no model info). */
  bool (*facts)(void *ctx, void *model, struct model_facts *out);
  /* Requests answered on the CPU after a device out-of-memory (laya_cpu_fallback_count), or NULL. */
  long (*cpu_fallbacks)(void *ctx, void *model);
  /* Prepared requests packed into shared forward passes (laya_job_*): prepare takes a
   * predict_batch request; jobs_run runs n jobs of one model, whatever their questions, as one
   * pass; job_result is then the job's predict_batch result. NULL: every request runs alone. */
  int (*job_prepare)(void *ctx, void *model, const char *request_json, void **job, laya_error *err);
  long (*job_tokens)(void *ctx, void *job);
  int (*jobs_run)(void *ctx, void *model, void *const *jobs, int n, laya_error *err);
  int (*job_result)(void *ctx, void *job, char **result_json, laya_error *err);
  void (*job_free)(void *ctx, void *job);
  /* The job's results as values (model/typed.h), allocated from a, or NULL: then the server
   * parses job_result's text. */
  int (*job_results)(void *ctx, void *job, arena *a, const struct state_result **out, long *n,
                     laya_error *err);
  /* job_prepare of the request as a value (nothing parsed; the value outlives the job), or NULL. */
  int (*job_prepare_value)(void *ctx, void *model, const json_value *request, void **job, laya_error *err);
  /* open takes the checkpoint's name, not a directory (nothing is looked up on this machine:
   * laya-mcp's remote mode, mcp_remote.c) */
  bool open_by_name;
  /* The typed calls (model/typed.h): a request as a value in, results as values out (allocated
   * from a), nothing parsed or written. NULL: the text calls above are used (the tests' stand-in
   * engines), and laya-mcp says the tool is not available. predict_values: predict (batch false,
   * a {"state", ...} request) or predict_batch ({"states", ...}). */
  int (*predict_values)(void *ctx, void *model, const json_value *request, bool batch, arena *a,
                        const struct state_result **out, long *n, laya_error *err);
  int (*predict_long_values)(void *ctx, void *model, const json_value *request, arena *a,
                             struct long_result *out, laya_error *err);
  /* laya_decide with return_details (free *out with decide_result_free). */
  int (*decide_values)(void *ctx, void *model, const json_value *request, struct decide_result **out,
                       laya_error *err);
  /* laya_predict_shortlist over a request value ({"state", "questions", "k", predict's keyword
   * arguments}), the rankings and the decision pass as values (in a), or NULL. */
  int (*predict_shortlist_values)(void *ctx, void *model, const json_value *request, arena *a,
                                  struct shortlist_result *out, laya_error *err);
  /* laya_predict_tournament over a request value ({"state", "questions", "group_size", predict's
   * keyword arguments}): the final pass and the elimination rounds as values (in a), or NULL.
   * call (may be NULL) answers each of its passes (preq: a predict request, the pass's questions)
   * instead of model, which may then be NULL (laya-serve routes every pass on its own questions, as
   * Laya's server does); stop (may be NULL) is asked before each pass: true ends it there with the
   * error kind "cancelled" (its client has left, so the rounds still to play are not computed).
   * Both get arg. */
  int (*predict_tournament_values)(void *ctx, void *model, const json_value *request,
                                   int (*call)(void *arg, const json_value *preq, arena *a,
                                               struct state_result *out, laya_error *err),
                                   bool (*stop)(void *arg), void *arg, arena *a, struct tournament_result *out,
                                   laya_error *err);
  /* laya_model_info's "device", or NULL. */
  const char *(*device)(void *ctx, void *model);
};
/* The real library (engine_laya.c). */
extern const serve_engine serve_engine_laya;

/* ---- validation ---- */
typedef enum serve_route_kind { SERVE_ONE = 0, SERVE_BATCH = 1 } serve_route_kind;

/* A request that passed every check, pointing into the parsed body (arena-owned). */
typedef struct serve_request {
  serve_route_kind kind;
  const json_value *body;
  const json_value *state;     /* SERVE_ONE */
  const json_value *states;    /* SERVE_BATCH: a non-empty array */
  const json_value *questions; /* an object */
  char model[64];              /* resolved checkpoint, "" = route automatically */
  const json_value *task;      /* NULL = unset */
  const char *lang, *lang_guess;
  long max_len, head_max_len;  /* 0 = unset */
  const json_value *min_confidence; /* NULL = unset */
  long batch_size;             /* SERVE_BATCH: the size actually passed (0 = one pass) */
  bool sort_by_length;         /* SERVE_BATCH: only true is forwarded */
} serve_request;

/* A refusal: HTTP status and FastAPI's {"detail": ...} text. */
typedef struct serve_reject {
  int status;
  strbuf detail;
} serve_reject;

void serve_reject_init(serve_reject *r);
void serve_reject_free(serve_reject *r);
int serve_reject_set(serve_reject *r, int status, const char *fmt, ...) LAYA_PRINTF(3, 4);

/* Validate a complete body for one of the two decision routes, in Laya's order (steps 4-8 of
 * the HTTP contract: JSON, shape, limits, refused fields, lone surrogates, model, budgets,
 * language hints, min_confidence, batch controls). Returns 0 and fills req, or the status (also
 * in rej). `models` may be NULL (then only the built-in names resolve). */
int serve_validate(const char *body, size_t len, serve_route_kind kind, const serve_config *cfg,
                   const serve_models *models, arena *a, serve_request *req, serve_reject *rej);

/* States per pass for a batch, or 0 for "one pass" (Laya's _batch_chunk_size). */
long serve_batch_chunk_size(long n_states, long n_questions, long max_len, long max_batch_tokens);

/* min_confidence validation (Laya's check_min_confidence): 0 ok, -1 with the message. */
int serve_check_min_confidence(const json_value *v, strbuf *msg);

/* ---- respond: turn an engine result into the wire payload ---- */
/* Add routing and x_jev_confidence (or project to strict Jev), then write compact JSON as
 * FastAPI does (separators "," and ":", non-ASCII raw). `result` is modified in place. */
void serve_finish_result(json_value *result, const char *routing_json, bool strict, arena *a,
                         strbuf *out);
/* Jev's own confidence for a choice/score answer; false when it has none. */
bool serve_jev_confidence(const json_value *answer, double *out);
/* The response body of n typed results (model/typed.h), as laya-serve writes every answered job
 * (serve_job_finish, serve_job_run_alone): each result as serve_finish_result writes it, with
 * routing_json[i] (entries may be NULL) and, for LAYA_TOURNAMENT_GROUP, notes[i] / dropped[i]
 * (NULL: none); batch: {"results": [...], "total_usage": {...}}. Appended to body. */
struct tournament_entry;
void serve_write_body(strbuf *body, const struct state_result *r, size_t n, char *const *routing_json, bool strict,
                      bool batch, const struct tournament_entry ***notes, bool **dropped);
/* {"detail": "..."} as FastAPI writes it. */
void serve_detail_json(strbuf *sb, const char *detail, size_t n);

/* ---- scheduler ---- */
typedef struct serve_job serve_job;
typedef void (*serve_job_done_fn)(serve_job *job, void *arg);

struct serve_job {
  /* input (owned by the job) */
  char model[64];
  char *options_json;    /* `"questions": {...}, "max_len": N, ...` (no braces) */
  arena values;          /* `request` and what it points to */
  json_value *request;   /* the same predict_batch request as a value: "states", the options, and
                            room for "lang" (NULL when out of memory: the text is used) */
  char **states_json;    /* one JSON text per state */
  size_t n_states;
  bool is_batch;         /* came from /v1/systemone/batch (results are a list) */
  bool solo;             /* must run alone (explicit batch_size / sort_by_length, or states
                            routed to different checkpoints or languages) */
  size_t est_tokens;
  long long tournament_group; /* > 0: LAYA_TOURNAMENT_GROUP narrows its large choices by
                                 elimination (Laya's _tournament_plan said so); runs alone */
  /* a narrowed job's route inputs (the request's model, task, lang, lang_guess; "" / NULL = unset),
   * so that each pass of its tournament is routed on its own questions, as Laya's server does */
  char route_model[64];
  const json_value *route_task; /* in values */
  char *route_lang, *route_lang_guess;
  char **routing_json;   /* per state: the routing block to attach (may be NULL entries) */
  char (*state_models)[64]; /* per state: the checkpoint it routed to */
  char **langs;          /* per state: the language the checkpoint reads it in (NULL = none):
                            the request's lang, else the routed language when the checkpoint
                            has per-language temperatures (as Laya's Router.predict does) */
  bool strict;
  /* output */
  int status;            /* 0, or an HTTP status (422 for ValueError, 500 otherwise) */
  laya_error err;
  strbuf body;           /* the response body on success */
  long input_tokens;     /* summed usage.input_tokens */
  double infer_ms;
  int batch_requests;    /* how many requests shared its pass */
  /* the engine job (laya_job_prepare), prepared on the request's thread when pipelining */
  const serve_engine *eng;
  void *prep;
  void *prep_model;
  serve_models *prep_models; /* prep_model is held (serve_models_acquire) until prep is freed */
  /* plumbing */
  serve_job_done_fn done;
  void *done_arg;
  /* optional: has its client gone? Asked (with done_arg) just before a pass takes the job, so a
   * client that left is noticed however recently, not only at the watchdog's next tick; it
   * marks the job cancelled itself when it says yes */
  bool (*client_gone)(serve_job *job, void *arg);
  double enqueued_at;
  atomic_bool cancelled; /* its client left while it was queued: the scheduler skips it (499) */
  serve_job *next;
};

typedef struct serve_sched serve_sched;
serve_sched *serve_sched_new(const serve_config *cfg, serve_models *models,
                             const serve_engine *eng, serve_metrics *metrics);
/* Prepare a job for a shared pass on the calling (request) thread: checked and tokenized by the
 * engine, so the inference thread only packs and runs it. A no-op (0) when the job will not
 * share a pass (batching or pipelining off, a solo job, no job API). Nonzero: the request
 * failed here; job->status and err hold its answer, and it must not be submitted. */
int serve_sched_prepare(serve_sched *s, serve_job *job);
/* Queue a job; done(job, arg) runs on the inference thread when it has run. The caller then
 * calls serve_job_finish (on its own thread) before it reads the answer. */
void serve_sched_submit(serve_sched *s, serve_job *job);
/* Decode a job that ran in a shared pass into its answer (body/status) and release its engine
 * job; a no-op for a job already answered. */
void serve_job_finish(serve_job *job);
/* Where the inference thread's time went (Prometheus text): waiting for work, preparing,
 * running passes, decoding, handing answers back. */
void serve_sched_render(serve_sched *s, strbuf *sb);
/* Finish queued and running jobs, then stop the workers. */
void serve_sched_stop(serve_sched *s);
void serve_sched_free(serve_sched *s);
size_t serve_sched_depth(serve_sched *s);
/* The HTTP layer's count of valid requests on their way (being prepared, or admitted) but not yet
 * submitted: a lone job waits up to
 * LAYA_SERVE_BATCH_WAIT_US for company only while this is positive. */
void serve_sched_set_arriving(serve_sched *s, atomic_int *arriving);
void serve_job_free(serve_job *job);
/* Run a job now on this thread (the MCP server, and the scheduler's fallback). */
void serve_job_run_alone(serve_models *models, const serve_engine *eng, serve_job *job);
/* Build a job from a validated request (routes it; 422 on a routing ValueError). */
int serve_job_from_request(serve_models *models, const serve_request *req, bool strict,
                           serve_job **out, serve_reject *rej);

/* ---- metrics ---- */
serve_metrics *serve_metrics_new(void);
void serve_metrics_free(serve_metrics *m);
void serve_metrics_request(serve_metrics *m, const char *route, int status, double seconds);
/* One forward pass of checkpoint `model` (NULL: not known) over `requests` requests. */
void serve_metrics_batch(serve_metrics *m, const char *model, int requests, int states, double seconds);
/* A decision request that checkpoint `model` answered (status 200) or failed. */
void serve_metrics_checkpoint_request(serve_metrics *m, const char *model, int status, long states, long tokens);
/* Process metrics (Prometheus client names), build info and the loaded checkpoints' info. */
void serve_metrics_render_process(serve_metrics *m, serve_models *models, strbuf *sb);
void serve_metrics_tokens(serve_metrics *m, long tokens);
void serve_metrics_inflight(serve_metrics *m, int delta);
void serve_metrics_render(serve_metrics *m, size_t queue_depth, strbuf *sb);

double serve_now(void); /* monotonic seconds */

#endif
