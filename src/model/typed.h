/*
 * typed.h: the engine's results as values, and the typed entry points the repository's own
 * surfaces call (decide, predict_long, the Router, `laya calibrate`). Internal: include/laya.h
 * stays JSON in, JSON out; its functions are parse once, a typed call, write once
 * (result_json.h is the only writer of result JSON).
 *
 *   json_value request -> engine_parse_request -> engine_run -> state_result[] -> rj_* -> text
 *
 * Every number an answer holds is the one Laya's result dict holds (already rounded with
 * round(x, 4) where Laya rounds), so a surface that reads an answer decides exactly as one that
 * read Laya's dict. Results live in the arena the caller passes (with the prepared questions
 * they point to) and are freed with it.
 */
#ifndef LAYA_MODEL_TYPED_H
#define LAYA_MODEL_TYPED_H

#include <stdbool.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/error.h"
#include "core/json.h"
#include "core/strbuf.h"
#include "model/questions.h"

struct laya_model;
struct engine_call;
struct laya_job;

/* The min_confidence gate's verdict on one answer. */
typedef enum answer_gate { GATE_NONE = 0, GATE_PASSED, GATE_ABSTAINED, GATE_UNEVALUATED } answer_gate;

/* One question's answer for one state. */
typedef struct answer {
  const question *q;        /* qid, type, labels and legend (option order) */
  int k;                    /* options the row scored (its markers) */
  int top;                  /* choice: the chosen option's index into q->label */
  double *prob;             /* [k] round(p, 4) in option order (score: level order) */
  double score;             /* score: round(expected level, 4) */
  double noul;              /* noul: round(P(true), 4); NaN when the row has fewer than 2 markers */
  double confidence;        /* round(1 - H/ln k, 4); noul: round(max(p, 1 - p), 4) */
  double answer_confidence; /* round(max p, 4), binned by the calibration when it has a bin table */
  double act_probability;   /* round(P(act), 4) */
  answer_gate gate;         /* GATE_NONE: no min_confidence in the call */
  double threshold;         /* the gate's threshold (when gate != GATE_NONE) */
  const float *logits;      /* [k] the row's raw option logits, in slot order as the pass gave them */
  /* usage facts of this question's row and head */
  bool truncated;           /* the row dropped state tokens */
  int options_total, options_distinct, tokens_per_option; /* tokens_per_option -1 = None */
} answer;

/* One state's result: its answers in the call's question order, and its usage. */
typedef struct state_result {
  int n;                 /* answers; 0 with !full_usage: Laya's empty result (no questions) */
  answer *answers;
  bool full_usage;       /* usage has state_tokens .. truncated_questions (and options) */
  long input_tokens;
  long state_tokens;
  int state_tokens_dropped;
} state_result;

/* predict_long's result: one state's answers, each from its deciding window, and the usage
 * summed over the windows. */
typedef struct long_result {
  state_result r;        /* single: the one result as is; else the chosen answers, summed usage */
  bool single;           /* the state fitted in one call (no window blocks) */
  long windows;
  long *win_index, *win_start, *win_end; /* [r.n], when !single */
  long truncated_sum;    /* !single: windows that dropped tokens (Python's sum of bools) */
  long last_truncated;   /* !single: which window's truncated_questions usage keeps (the last) */
  state_result *last;    /* !single: that window's result */
} long_result;

/* predict_shortlist (model/shortlist.c): one choice question's ranking, Laya's "shortlist" entry. */
typedef struct shortlist_entry {
  const char *qid;
  size_t qid_len;
  int n;                     /* the caller's label count */
  int n_kept;                /* min(k, n) */
  const json_value **labels; /* [n_kept] best first; the criteria order when passthrough */
  double *scores;            /* [n_kept] signed cosines; NULL when passthrough (Laya's None) */
  int *kept_index;           /* [n_kept] each kept label's index in the criteria (ranked only) */
  bool passthrough;          /* k >= n: answered as given, nothing embedded */
  bool order_dropped;        /* the question's option_order was dropped (it narrowed) */
} shortlist_entry;

/* predict_shortlist's result: the decision pass over the narrowed questions, and the rankings. */
typedef struct shortlist_result {
  state_result r;
  const json_value *k_arg; /* the k the caller gave (NULL: the default) */
  long long k;
  int n;                   /* entries: one per choice question, in question order */
  shortlist_entry *e;
} shortlist_result;

/* predict_tournament (model/tournament.c): one choice question's elimination, Laya's "tournament" entry. */
typedef struct tournament_entry {
  const char *qid;
  size_t qid_len;
  uint32_t qi;                /* its index in the request's questions */
  const json_value *criteria; /* the caller's criteria */
  const json_value **labels;  /* [n] the criteria's labels (dict keys as strings, or list items) */
  int n;                      /* the caller's label count */
  int *left;                  /* [n_left] the labels still in (indices into labels), field order */
  int n_left, n_next;         /* n_next: winners collected in the round being played */
  int rounds;
  bool order_dropped;         /* its option_order was dropped (warned once) */
} tournament_entry;

/* predict_tournament's result: the final predict, and each choice question's entry in order. */
typedef struct tournament_result {
  state_result r;
  long input_tokens_all; /* usage.input_tokens summed over every predict (rounds and final) */
  int n;
  tournament_entry *e;
} tournament_result;

/* predict_tournament over a parsed request {"state", "questions", "group_size"?, predict's keyword
 * arguments}: one predict per round, then the final one. */
int engine_run_tournament(struct laya_model *m, const json_value *req, arena *a, tournament_result *out,
                          laya_error *err);
/* The same with the caller's hooks (either may be NULL): predict answers each call of the
 * tournament (preq: the caller's request, its questions the call's, without group_size) instead of
 * the model m (which may then be NULL: its warnings read LAYA_QUIET_WARNINGS themselves); stop is
 * asked before every pass, and true ends the call with the error kind "cancelled" (laya-serve: the
 * client left between rounds, so the remaining rounds are not computed). */
typedef struct tournament_calls {
  int (*predict)(void *ctx, const json_value *preq, arena *a, state_result *out, laya_error *err);
  bool (*stop)(void *ctx);
  void *ctx;
} tournament_calls;
int engine_run_tournament_calls(struct laya_model *m, const tournament_calls *c, const json_value *req, arena *a,
                                tournament_result *out, laya_error *err);

/* predict_shortlist over a parsed request {"state", "questions", "k"?, predict's keyword arguments}. */
int engine_run_shortlist(struct laya_model *m, const json_value *req, arena *a, shortlist_result *out,
                         laya_error *err);

/* predict_batch over parsed values: n_states results (in input order) in *out, allocated from a. */
int engine_run(struct laya_model *m, const json_value *states, const json_value *questions,
               const struct engine_call *c, arena *a, state_result **out, long *n_out, laya_error *err);

/* A request object bound (predict: {"state", ...}, batch: {"states", ...}) and run. For predict
 * *out is one result. */
int engine_run_request(struct laya_model *m, const json_value *req, bool batch, arena *a,
                       state_result **out, long *n_out, laya_error *err);

/* Progress of a call that runs several forward passes: fn(user, done, total) after each pass,
 * done of the call's total states (predict_long: windows) answered so far. */
typedef struct engine_progress {
  void (*fn)(void *user, long done, long total);
  void *user;
} engine_progress;

/* predict_long over a parsed request object; progress may be NULL. */
int engine_run_long(struct laya_model *m, const json_value *req, const engine_progress *progress, arena *a,
                    long_result *out, laya_error *err);

/* laya_job_prepare of a request value (predict_batch's keys): nothing is parsed. The job points
 * into req, which must outlive it. */
int engine_job_prepare_value(struct laya_model *m, const json_value *req, struct laya_job **out, laya_error *err);

/* A prepared job's results (after laya_jobs_run), decoded into a. */
int engine_job_results(const struct laya_job *job, arena *a, state_result **out, long *n_out, laya_error *err);

/* laya_model_info's "device" ("cpu", "cuda:0"): where m runs. */
const char *engine_model_device(const struct laya_model *m);

/* The facts of laya_model_info that laya-serve reads (its load log, /health, /metrics), as
 * values: the strings are the model's own, valid while it is open. */
typedef struct model_facts {
  const char *backend, *device, *precision; /* "backend", "device", "precision" */
  const char *cpu_isa;                      /* "cpu_isa"; NULL where info has null */
  const char *warnings;                     /* "warnings", one a line ("": none) */
  int lang_temperatures;                    /* members of "lang_temperatures" */
} model_facts;
void engine_model_facts(const struct laya_model *m, model_facts *out);

/* laya_decide over a parsed request (one state), kept as values: its DecisionResult members are
 * written with rj_decide_member ("values", "confidence", "probabilities", "usage"; any other
 * name writes null). Free with decide_result_free. */
typedef struct decide_result decide_result;
struct rj;
int engine_run_decide(struct laya_model *m, const json_value *req, decide_result **out, laya_error *err);
void rj_decide_member(struct rj *w, const decide_result *d, const char *member);
/* The whole result as decide_run writes it (the DecisionResult when the request asked
 * return_details, its "routing" field routing_json; else the values), with routing_tail as the
 * last "routing" member (RJ_PY texts, NULL = none / null). */
void rj_decide_result(struct rj *w, const decide_result *d, const char *routing_json, const char *routing_tail);
/* Its parts as values, for a surface that lays them out itself (the `laya` command's text):
 * whether it holds the details, the answers, and the values "values" holds (name, value). */
bool decide_result_details(const decide_result *d);
const state_result *decide_result_state(const decide_result *d);
int decide_result_count(const decide_result *d);
const char *decide_result_name(const decide_result *d, int i, size_t *len);
void rj_decide_value(struct rj *w, const decide_result *d, int i);
void decide_result_free(decide_result *d);

/* A schema planned into questions with no model (laya-mcp's remote mode: Laya's decide over its
 * RemoteRouter): the questions to ask a laya-serve, then its answers (the "answers" object of the
 * server's JSON) projected onto the schema: decide_plan_members writes "values", "confidence" and
 * "probabilities" into the writer's open object (the caller's style). A bad schema is a SchemaError naming the property. The plan points into schema, which
 * must outlive it. */
typedef struct decide_plan decide_plan;
int decide_plan_new(const json_value *schema, decide_plan **out, laya_error *err);
const json_value *decide_plan_questions(const decide_plan *d);
void decide_plan_members(const decide_plan *d, const json_value *answers, struct rj *w);
void decide_plan_free(decide_plan *d);

#endif
