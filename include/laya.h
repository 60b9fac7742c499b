/*
 * laya.h: the public C API of laya.c.
 *
 * A loaded model is immutable and safe to share between threads: every predict call may run
 * concurrently with any other on the same model. Requests and results are JSON text shaped
 * exactly like Python Laya's arguments and return values, so a Laya user's dicts map one to one.
 *
 * Errors are values. Every function that can fail takes a laya_error* (which may be NULL), returns
 * a status (0 = ok) or NULL, and leaves a message naming the file, key, question or byte offset
 * at fault. For errors Python Laya raises itself, `message` is exactly str(exception) and `kind`
 * is the Python exception class name, so parity tests can compare them.
 */
#ifndef LAYA_H
#define LAYA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LAYA_VERSION "0.1.0"
#define LAYA_COMPAT_VERSION "0.4.15" /* the Python Laya release whose answers we reproduce */

typedef enum laya_status {
  LAYA_OK = 0,
  LAYA_ERR_IO = 1,          /* a file is missing or unreadable */
  LAYA_ERR_FORMAT = 2,      /* a file is malformed (safetensors header, JSON, tokenizer.json) */
  LAYA_ERR_CONFIG = 3,      /* a config value is wrong or missing */
  LAYA_ERR_VALUE = 4,       /* bad argument value (Python ValueError) */
  LAYA_ERR_TYPE = 5,        /* bad argument type (Python TypeError) */
  LAYA_ERR_NOMEM = 6,       /* out of memory */
  LAYA_ERR_UNSUPPORTED = 7, /* a feature, component or dtype we do not implement */
  LAYA_ERR_DEVICE = 8,      /* a device (CUDA) failed */
  LAYA_ERR_NOT_FOUND = 9,   /* a named checkpoint, tensor or key is absent */
  LAYA_ERR_INTERNAL = 10,
  LAYA_ERR_DEVICE_OOM = 11  /* a device (CUDA) ran out of memory: the engine answers that request
                               on the CPU instead (laya_cpu_fallback_count), so a caller sees it only
                               from a backend used directly */
} laya_status;

typedef struct laya_error {
  int code;           /* laya_status */
  char kind[32];      /* Python exception class when Laya raises the same error, e.g. "ValueError" */
  char message[2048]; /* full text; for Python-raised errors identical to str(exception) */
  /* Where laya.c made the error: its source file and line (for debugging; never part of the
   * message). NULL / 0 for none. laya_error_origin formats it. */
  const char *file;
  int line;
} laya_error;

/* err's origin as "src/<folder>/<file>.c:<line>" in buf ("" when it has none); returns buf. */
const char *laya_error_origin(const laya_error *err, char *buf, size_t size);

typedef struct laya_model laya_model;

typedef struct laya_options {
  const char *device;          /* "cpu", "cuda", "cuda:N", "auto"; NULL = LAYA_DEVICE or "cpu" */
  const char *precision;       /* "fp32", "bf16", "fp16", "int8", "fp8" (CUDA, Hopper); NULL = LAYA_PRECISION, else the
                                  backend default (fp32 on the CPU, Laya's numbers; an artifact: its own) */
  int threads;                 /* CPU threads; 0 = LAYA_THREADS or the physical core count */
  const char *sha256_json;     /* {"relpath": "hex"} checked before anything is parsed; NULL = skip
                                  (LAYA_SHA256_DIGESTS is read when NULL) */
  const char *lang_temperatures_json; /* {"de": {"temperature": [..3], "temperature_by_options": {}}} */
  const char *calibration_path;       /* calibration JSON applied after the checkpoint config */
  int quiet;                   /* 1 = do not print load warnings to stderr (they stay in info) */
  int escalate;                /* precision escalation for bf16 / int8 on the CPU: rows whose answer
                                  the low precision could move by more than 0.02 (bf16) / 0.04 (int8)
                                  run again in fp32 (docs/engine.md). 1 on, -1 off, 0 = LAYA_ESCALATE
                                  (1/0), else off. Needs a checkpoint directory, not an artifact. */
} laya_options;

/* Fill opt with defaults (all NULL / 0). */
void laya_options_init(laya_options *opt);

/* Open a checkpoint directory in Laya's layout (rl_agent_config.json, model.safetensors,
 * encoder/config.json, tokenizer/) or a packed artifact written by `laya convert`. */
laya_model *laya_open(const char *path, const laya_options *opt, laya_error *err);
void laya_close(laya_model *m);

/* predict: request {"state": any, "questions": {...}, optional "lang", "max_len",
 * "head_max_len", "min_confidence"}. Result: the dict Python's Agent.predict returns. */
int laya_predict(laya_model *m, const char *request_json, char **result_json, laya_error *err);

/* predict_batch: request {"states": [...], "questions": {...}, optional "batch_size",
 * "sort_by_length", "lang", "max_len", "head_max_len", "min_confidence"}.
 * Result: a JSON array, one result per state, in input order. */
int laya_predict_batch(laya_model *m, const char *request_json, char **result_json, laya_error *err);

/* Prepared requests, packed together (for servers that batch across requests).
 * laya_job_prepare takes laya_predict_batch's request (without a batch_size that splits it),
 * checks it and tokenizes its states; laya_jobs_run runs the rows of n jobs prepared for model m,
 * whatever their questions, budgets or language, as ONE packed forward pass; laya_job_result
 * then gives each job the JSON array laya_predict_batch returns for its request alone. A job
 * may run again (e.g. alone after a failed shared pass). Free with laya_job_free.
 * The per-request work is outside the pass: prepare parses and tokenizes, jobs_run only packs,
 * runs and copies each job's raw outputs into the job, and job_result decodes them into JSON.
 * Threads: a job is used by one thread at a time, but different jobs of one model may be
 * prepared, run and decoded on different threads at once (e.g. requests prepared and decoded
 * on their own threads while one thread runs the passes). */
typedef struct laya_job laya_job;
int laya_job_prepare(laya_model *m, const char *request_json, laya_job **job, laya_error *err);
long laya_job_tokens(const laya_job *job); /* tokens its rows take in a pass */
int laya_jobs_run(laya_model *m, laya_job *const *jobs, int n_jobs, laya_error *err);
int laya_job_result(const laya_job *job, char **result_json, laya_error *err);
void laya_job_free(laya_job *job);

/* predict_long: request {"state", "questions", optional "window", "stride", "aggregate",
 * "batch_size", "lang"}. Result: one dict with answer "window" and usage "windows". */
int laya_predict_long(laya_model *m, const char *request_json, char **result_json, laya_error *err);

/* decide / decide_batch: request {"state"|"states", "schema"|"questions", optional
 * "return_details", "min_confidence", and predict options}. */
int laya_decide(laya_model *m, const char *request_json, char **result_json, laya_error *err);
int laya_decide_batch(laya_model *m, const char *request_json, char **result_json, laya_error *err);

/* ---- Embedding shortlist (Laya's laya.shortlist, with the checkpoint's own encoder) ----
 * The embedder is embed_fn_from_agent(agent): the text with the tokenizer's special tokens
 * (truncated to max_length ids), the encoder's last hidden state after its final norm, mean-pooled
 * over the tokens; float32, not normalised. docs/engine.md "Embedding shortlist" has the details.
 *
 * embed: request {"texts": [str, ...], optional "max_length" (512), "batch_size" (32)} -> JSON
 * array of vectors (laya_embed_dim floats each). */
int laya_embed(laya_model *m, const char *request_json, char **result_json, laya_error *err);
int laya_embed_dim(const laya_model *m);
/* The same without JSON: n texts (UTF-8, lens[i] bytes) -> out[n * laya_embed_dim(m)]. */
int laya_embed_texts(laya_model *m, const char *const *texts, const size_t *lens, long n, float *out,
                     laya_error *err);
/* predict_shortlist: request {"state", "questions", optional "k" (20), and predict's keyword
 * arguments ("lang", "max_len", "head_max_len", "min_confidence")}. Every choice question with more
 * than k labels is narrowed to the k labels closest to the query by cosine, then ONE predict runs
 * over the narrowed questions. Result: predict's dict plus "shortlist": {qid: {"labels", "scores",
 * "k", "n", "passthrough"}} for each choice question. A narrowed choice's probabilities cover its
 * kept labels only. Label vectors are cached per loaded model (thread-safe; the most recent 4096). */
int laya_predict_shortlist(laya_model *m, const char *request_json, char **result_json, laya_error *err);
/* shortlist_choice: request {"state", "criteria", optional "k" (20), "instructions",
 * "return_scores"} -> the kept labels, or [labels, scores] with return_scores (scores null when
 * nothing was dropped). */
int laya_shortlist_choice(laya_model *m, const char *request_json, char **result_json, laya_error *err);
/* predict_tournament: request {"state", "questions", optional "group_size" (16), and predict's
 * keyword arguments}. Every choice question with more than group_size labels is narrowed by
 * elimination: its labels, cut in order into near-equal groups of at most group_size, each answered
 * as its own question (one predict per round for every group of every question), the group winners
 * going on, until at most group_size are left; then one predict over every question, each narrowed
 * choice cut to its finalists. No embedder. Result: that predict's dict plus "tournament": {qid:
 * {"labels" (finalists), "n", "rounds"}} for each choice question. */
int laya_predict_tournament(laya_model *m, const char *request_json, char **result_json, laya_error *err);

/* ---- Router: several checkpoints behind one handle (Laya's Router) ----
 * config JSON (every key optional): {"models": {name: "repo-or-path" | [repo, subfolder]},
 * "default": "multilingual", "max_loaded": 2, "auto_task_detection": false,
 * "standalone_repos": false, "lang_guess": "code", "device": "cpu", "revision": "sha-or-branch",
 * "revisions": {name: rev}, "sha256_digests": {name: {relpath: hex}}, "cache_dir": "...",
 * "offline": false, "threads": 0}. Checkpoints load on first use (HF cache, then download) and
 * at most max_loaded stay resident (least recently used is closed first). */
typedef struct laya_router laya_router;
laya_router *laya_router_open(const char *config_json, laya_error *err);
void laya_router_close(laya_router *r);
/* route: {"state", "questions"?, "model"?, "task"?, "lang"?, "lang_guess"?, "explain"?} ->
 * RouteDecision {"model", "repo", "reason", "detection", "workflow"} (with "explain": true the
 * detection carries its "diagnostic"). Loads nothing. */
int laya_route(laya_router *r, const char *request_json, char **decision_json, laya_error *err);
/* route_batch: a JSON array of route requests -> array of decisions. */
int laya_route_batch(laya_router *r, const char *requests_json, char **decisions_json, laya_error *err);
/* predict / predict_long / decide through the router: the route request's keys plus the
 * model-level call's ("max_len", "min_confidence", "window", "schema", ...). The result gets
 * "routing" (for decide: "routing" beside "values"). */
int laya_router_predict(laya_router *r, const char *request_json, char **result_json, laya_error *err);
int laya_router_predict_long(laya_router *r, const char *request_json, char **result_json,
                             laya_error *err);
int laya_router_decide(laya_router *r, const char *request_json, char **result_json, laya_error *err);
/* predict_shortlist through the router: laya_predict_shortlist's request plus the route keys; the
 * result has "routing" before "shortlist" (Laya's predict_shortlist over a Router). */
int laya_router_predict_shortlist(laya_router *r, const char *request_json, char **result_json, laya_error *err);
/* predict_tournament through the router: laya_predict_tournament's request plus the route keys.
 * As Laya's predict_tournament(router, ...), every call of it (each round's, then the final one) is
 * routed on its own questions and answered on the checkpoint it routes to; the result is the final
 * call's, "routing" (its RouteDecision) before "tournament". */
int laya_router_predict_tournament(laya_router *r, const char *request_json, char **result_json, laya_error *err);
/* predict_batch: {"requests": [{state, questions, model?, task?, lang?, lang_guess?, max_len?,
 * head_max_len?}], "batch_size"?, "sort_by_length"?, "min_confidence"?} -> array of results. */
int laya_router_predict_batch(laya_router *r, const char *request_json, char **result_json,
                              laya_error *err);
/* JSON {"loaded": [names, least recently used first], "max_loaded": N, "default": name}. */
char *laya_router_info(laya_router *r);

/* Memory reserved up front (servers): make the model ready for `workers` forward passes at once
 * of up to max_tokens tokens each, with rows of up to max_row_tokens tokens (at least the
 * checkpoint's max_len; max_tokens is raised to that if lower). Each worker's scratch is
 * allocated and touched now, sized for that many tokens, one row per
 * LAYA_RESERVE_TOKENS_PER_ROW tokens and one option marker per LAYA_RESERVE_TOKENS_PER_MARKER;
 * a pass larger than that in any of them runs as consecutive groups of its rows within it (rows
 * are independent in a pass: on the CPU backends the answers are bit-identical; on CUDA a row's
 * last bits depend on the size of its pass, as with any batching there). So later calls allocate no scratch, and
 * the memory in use stays what it is after this call, however the passes vary (only a row longer
 * than max_row_tokens, or more than `workers` passes at once, would still add scratch). Call it
 * after laya_open, before the model is shared between threads. 0 or an error (out of memory). */
#define LAYA_RESERVE_TOKENS_PER_ROW 16
#define LAYA_RESERVE_TOKENS_PER_MARKER 8
int laya_reserve(laya_model *m, long max_tokens, int max_row_tokens, int workers, laya_error *err);

/* Python API parity: there is nothing to compile, so this only touches each buffer once.
 * Returns the seconds spent (negative on error). */
double laya_warmup(laya_model *m);

/* JSON describing the loaded model: path, encoder family, sizes, max_len, head_max_len,
 * temperatures (raw and applied), load warnings, backend, device, precision. Owned by m. */
const char *laya_model_info(const laya_model *m);

/* Where laya_open would run a model with this device string (NULL: LAYA_DEVICE, else the CPU):
 * 1 on a GPU, 0 on the CPU (cpu; or cuda / cuda:N / auto with no such GPU visible), -1 when it is
 * not a device string. */
int laya_device_uses_cuda(const char *device);

/* How many requests ran out of device memory and were answered on the CPU instead. */
long laya_cpu_fallback_count(laya_model *m);

/* Tokenize with the model's tokenizer (add_special_tokens=False). ids_json receives "[1, 2]". */
int laya_tokenize(laya_model *m, const char *text, size_t len, char **ids_json, laya_error *err);

/* Email cleaning, as Python Laya's laya.email (no model needed; thread-safe).
 * laya_clean_email: clean_email_body(**request): {"body": str, "max_chars": 3000} -> a JSON
 *   string: quoted history (reply headers of English, Portuguese, Spanish and French clients,
 *   `>` lines), sign-offs, device footers and disclaimers removed, cut to max_chars characters.
 * laya_email_state: email_state(**request): {"subject", "body", "sender", "clean", "max_chars",
 *   ...extra} -> the state object {"subject", "body", "from", ...extra} to send to laya_predict.
 * laya_clean_email_text: the cleaner on raw UTF-8 bytes (refused, naming the byte, when they are
 *   not UTF-8); *out (malloc'd, NUL-terminated) gets the cleaned text and *out_len its length. */
int laya_clean_email(const char *request_json, char **result_json, laya_error *err);
int laya_email_state(const char *request_json, char **state_json, laya_error *err);
int laya_clean_email_text(const char *body, size_t len, long long max_chars, char **out, size_t *out_len,
                          laya_error *err);

/* Language and script detection, as Python Laya's laya.lang (no model needed; thread-safe): the
 * analysis laya_route routes by.
 * laya_detect_language: laya.detect_language(state, explain=...): {"state": any JSON value,
 *   "explain": false} -> the analysis object {"script", "script_profile", "language",
 *   "is_english", "language_undecided", "diacritic_rate", "non_latin_fraction", "mixed_segment"},
 *   plus "diagnostic" (stage, reason, source) when explain is true. is_english(state) is its
 *   "is_english".
 * laya_detect_script: laya.detect_script(text) on UTF-8 text: its letters' dominant script
 *   ("latin", "han", "cyrillic", ..., "other", or "unknown" when it has none) in *script, a
 *   static string; text that is not UTF-8 is refused, naming the byte. */
int laya_detect_language(const char *request_json, char **result_json, laya_error *err);
int laya_detect_script(const char *utf8, size_t len, const char **script, laya_error *err);

/* The question presets of `laya --preset NAME` (email, guard, moderation, router, triage): Laya's
 * question ids, types and option labels in laya.c's own wording. Returns the questions as a JSON
 * object (a static string) and sets *state_key (when not NULL) to the state field they read;
 * NULL (and *state_key NULL) for a name that is not one. */
const char *laya_preset(const char *name, const char **state_key);

/* Free a string returned by this library. */
void laya_free(void *p);

/* Where the library's own messages go (a download's progress, a device out-of-memory fallback):
 * by default a line "laya: <message>" on stderr; a server routes them to its logger. fn gets the
 * message without prefix or newline; NULL restores the default. Set it before opening models. */
typedef void (*laya_message_fn)(void *user, const char *message);
void laya_set_message_handler(laya_message_fn fn, void *user);

/* Convert a checkpoint to a single-file, memory-mappable artifact with packed weights. */
int laya_convert(const char *checkpoint_dir, const char *out_path, const laya_options *opt,
                 laya_error *err);

#ifdef __cplusplus
}
#endif
#endif /* LAYA_H */
