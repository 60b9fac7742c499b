/*
 * engine.h: the loaded model and the prediction pipeline, for the public API (laya_api.c) and
 * for the surfaces built on it (predict_long, decide).
 *
 *   request -> engine_run(states, questions, opts) -> typed results (typed.h) -> result_json.h
 *   (engine_predict_batch: the same, written as predict_batch's JSON array)
 *
 * A laya_model is immutable after laya_open; every function here may run concurrently on one
 * model. Per-call memory lives in the call; backend scratch comes from a mutex-guarded pool.
 */
#ifndef LAYA_MODEL_ENGINE_H
#define LAYA_MODEL_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "backend/backend.h"
#include "core/arena.h"
#include "core/json.h"
#include "core/options.h"
#include "core/strbuf.h"
#include "laya.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/decode.h"
#include "model/questions.h"
#include "model/seq_builder.h"

struct laya_model {
  checkpoint ck;
  seq_tok st;
  arena mem; /* lang table and other load-time data */
  lang_temps langs;
  backend *be;
  char device[32];
  char precision[16];
  char pack_cache[640]; /* model/pack_cache.h status of the fast CPU backend's weights ("" otherwise) */
  laya_env_options env; /* the environment, read once by laya_open (core/options.h) */
  pthread_mutex_t pool_mu;
  /* laya_reserve's shape (zero: none): every pooled worker is ready for it, and engine_forward
   * runs a larger batch in parts within it, so the scratch in use never grows */
  batch_shape reserved;
  backend_worker **idle;
  int n_idle, cap_idle;
  char *info;
  const char *cpu_isa; /* info's "cpu_isa" (NULL: null) */
  strbuf warnings; /* one per line */
  /* A device out-of-memory on one request reruns that request on a CPU backend (fp32, as Laya
   * demotes to), created on first need; the reruns are counted. */
  pthread_mutex_t fallback_mu;
  backend *fallback;
  long fallback_count;
  /* model/embed.h: the label-embedding cache, made on first use (freed by laya_close) */
  _Atomic(struct embed_cache *) embeds;
};

/* Options of one predict / predict_batch call (Laya's keyword arguments). */
typedef struct engine_call {
  long batch_size;      /* <= 0: all states in one pass */
  bool sort_by_length;
  const char *lang;     /* NULL or "" = no override */
  size_t lang_len;
  bool has_max_len, has_head_max_len;
  int max_len, head_max_len;
  bool budget_not_int; /* a max_len / head_max_len Python cannot slice with: TypeError when used */
  /* head_max_len given as a finite float (head_max_len holds its floor): Laya slices with it
   * only where max() hands back an int literal, so it answers when every question's head takes
   * the per-option cut at its floor of 4 and leaves the instruction its floor of 8 tokens;
   * anywhere else Python slices with the float (TypeError). head_float_frac: not integral. */
  bool head_float, head_float_frac;
  const json_value *min_confidence; /* NULL = not set */
  const struct engine_progress *progress; /* NULL = none: told after each forward pass (typed.h) */
  /* Testing seam: when set, each packed batch goes here instead of the backend (the sequence
   * builder and the decoder can then be checked against rows recorded from Python Laya). */
  int (*forward_override)(void *ctx, const packed_batch *b, float *logits, float *act, laya_error *err);
  void *override_ctx;
} engine_call;

/* Laya's predict_batch: `states` must be a JSON array, `questions` an object (Laya's TypeErrors
 * otherwise). Appends the JSON array of per-state results to out (engine_run, written with
 * RJ_PY; for the tests that replay recorded rows). */
int engine_predict_batch(laya_model *m, const json_value *states, const json_value *questions,
                         const engine_call *c, strbuf *out, laya_error *err);

/* Bind a request object to Laya's keyword arguments (predict: "state", batch: "states"), with
 * Python's TypeErrors for unknown or missing names. */
int engine_parse_request(const json_value *req, bool batch, engine_call *c, const json_value **state,
                         const json_value **questions, laya_error *err);

/* The budgets a call runs with (call overrides, else the checkpoint's). */
int engine_max_len(const laya_model *m, const engine_call *c);
int engine_head_max_len(const laya_model *m, const engine_call *c);

/* Laya's state_room: state tokens question q leaves inside max_len. */
int engine_state_room(const laya_model *m, const question *q, int max_len, int head_max_len,
                      int *room, laya_error *err);

/* Serialise + mask-scrub + tokenise a state as predict does (ids appended to out, reset first). */
int engine_encode_state(const laya_model *m, const json_value *state, ids_vec *out, laya_error *err);

/* Run one packed batch on the model's backend (takes a worker from the pool). After laya_reserve,
 * a batch larger than the reserved shape runs as consecutive groups of rows within it: rows are
 * independent in a pass, so the outputs are bit-identical on the CPU backends (on CUDA a row's
 * rounding depends on its pass size, as with any batching there). */
int engine_forward(laya_model *m, const packed_batch *b, float *logits, float *act, laya_error *err);

/* laya_reserve's work: `workers` pooled workers made ready for `shape`, which becomes the model's
 * reserved shape (engine_forward splits larger batches; new workers are reserved when made). */
int engine_reserve(laya_model *m, const batch_shape *shape, int workers, laya_error *err);

/* laya_open's warm-up, for backends with worker_warm (CUDA): one pooled worker with scratch for
 * passes of up to ENGINE_WARM_TOKENS tokens (ENGINE_WARM_ROWS rows, ENGINE_WARM_MARKERS markers),
 * warmed for rows of max_len tokens, so that the first request costs what a later one does. The
 * reserved shape stays unset. 0 when the backend has nothing to warm; LAYA_CUDA_WARMUP=0 skips it
 * (and the worker: the first request makes it, as without a warm-up). */
#define ENGINE_WARM_TOKENS 2048
#define ENGINE_WARM_ROWS 4
#define ENGINE_WARM_MARKERS 32
int engine_warm(laya_model *m, laya_error *err);

/* Bytes of scratch the pooled (idle) workers hold (0 when the backend does not say). */
size_t engine_scratch_bytes(laya_model *m);

/* A worker of the model's backend from its pool (made ready for laya_reserve's shape), and back:
 * for passes other than engine_forward's (model/embed.c). */
backend_worker *engine_worker_take(laya_model *m, laya_error *err);
void engine_worker_give(laya_model *m, backend_worker *w);

const tokenizer *engine_tokenizer(const laya_model *m);
const tokenizer_roles *engine_roles(const laya_model *m);
const agent_config *engine_config(const laya_model *m);

#endif
