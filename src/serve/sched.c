/* sched.c: the scheduler between HTTP requests and forward passes.
 *
 * Requests arrive as jobs (one state, or a batch request's states). A worker takes the oldest
 * job and, when batching is on, every queued job for the same checkpoint, whatever its questions,
 * budgets or language, up to a token budget and a request count, waiting a short window for
 * company only while other admitted requests are still on their way in. Each job is prepared by
 * the engine (checked and tokenized, laya_job_prepare), and the prepared jobs run as ONE packed
 * forward pass (laya_jobs_run; more when their exact tokens exceed the budget); each job then
 * gets exactly the results its request gets alone. With batching off, each job runs alone: one
 * forward pass per request, as Laya's server does.
 *
 * A job whose request fails at prepare gets its own error; the others still share the pass. A
 * shared pass that fails with a ValueError is re-run job by job, so each request gets the answer
 * (or the error) it would have got alone.
 *
 * Pipelining (LAYA_SERVE_PIPELINE, on by default): the per-request work is done on the request's
 * own thread, not the inference thread. The HTTP thread prepares its job (serve_sched_prepare:
 * the engine parses, checks and tokenizes it) before queuing it, and decodes its answer
 * (serve_job_finish: engine results -> response JSON) after the pass, so the inference thread
 * only packs ready jobs and runs passes: while pass N runs, the requests of pass N+1 are being
 * prepared, and pass N's answers are decoded by their own threads. With it off, the inference
 * thread prepares and decodes every job of a pass itself (the former design, kept to measure
 * against). The inference thread's time by phase is in /metrics (serve_sched_render). */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/assert.h"
#include "core/pystr.h"
#include "model/result_json.h"
#include "model/shortlist.h"
#include "model/typed.h"
#include "serve/log.h"
#include "serve/serve.h"

enum { PHASE_WAIT, PHASE_PREPARE, PHASE_PASS, PHASE_DECODE, PHASE_HANDOFF, N_PHASES };

struct serve_sched {
  const serve_config *cfg;
  serve_models *models;
  const serve_engine *eng;
  serve_metrics *metrics;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  serve_job *head, *tail;
  size_t depth;
  bool stopping;
  pthread_t *workers;
  int n_workers;
  atomic_int *arriving; /* requests on their way, not yet submitted (HTTP layer), may be NULL */
  /* the inference thread's scratch, sized once: a group's ready jobs and their engine jobs */
  serve_job **ready;
  void **prep;
  /* the inference thread's time by phase, in nanoseconds (written by it, read by /metrics) */
  atomic_llong phase_ns[N_PHASES];
};

static const char *const phase_names[N_PHASES] = {"wait", "prepare", "pass", "decode", "handoff"};

/* Add the time since *t to phase p and restart *t. */
static void phase_add(serve_sched *s, int p, double *t) {
  double now = serve_now();
  atomic_fetch_add_explicit(&s->phase_ns[p], (long long)((now - *t) * 1e9), memory_order_relaxed);
  *t = now;
}

void serve_job_free(serve_job *job) {
  if (!job) return;
  if (job->prep) job->eng->job_free(job->eng->ctx, job->prep);
  if (job->prep && job->prep_models) serve_models_release(job->prep_models, job->prep_model);
  free(job->options_json);
  arena_free(&job->values);
  for (size_t i = 0; i < job->n_states; i++) {
    free(job->states_json ? job->states_json[i] : NULL);
    free(job->routing_json ? job->routing_json[i] : NULL);
  }
  for (size_t i = 0; job->langs && i < job->n_states; i++) free(job->langs[i]);
  free(job->langs);
  free(job->route_lang);
  free(job->route_lang_guess);
  free(job->states_json);
  free(job->routing_json);
  free(job->state_models);
  sb_free(&job->body);
  free(job);
}

/* A stand-in engine's answer text read back: the tests' fake engines answer in text only (no
 * typed calls); the library's engine never takes this path. Repeated keys are kept (labels that
 * render to one JSON key, True and "true", are two members in the C API's text and stay two).
 * expect > 0: an array of that many results; 0: one object. NULL with e otherwise. */
static json_value *stand_in_results(const char *out, size_t expect, arena *a, laya_error *e) {
  static const json_parse_opts keep_repeats = {0, false, false, true};
  /* Parse (a test stand-in engine's text, never the library's output) */
  json_value *v = json_parse(out, strlen(out), a, &keep_repeats, e);
  if (v && expect && (v->type != JSON_ARRAY || v->n != expect)) {
    laya_err(e, LAYA_ERR_INTERNAL, NULL, "the engine returned %u results for %zu states",
             v->type == JSON_ARRAY ? v->n : 0, expect);
    return NULL;
  }
  if (v && !expect && v->type != JSON_OBJECT) {
    laya_err(e, LAYA_ERR_INTERNAL, NULL, "predict returned %s", json_py_type(v));
    return NULL;
  }
  return v;
}

static void dump_compact(strbuf *sb, const json_value *v) {
  json_dump_opts o = {NULL, NULL, false, -1};
  json_dump(sb, v, &o);
}

/* An int member value (with its lexeme, as a parse would give it). */
static void int_member(json_member *m, const char *key, long x, arena *a) {
  char b[24];
  int n = snprintf(b, sizeof b, "%ld", x);
  m->key = key;
  m->key_len = (uint32_t)strlen(key);
  memset(&m->value, 0, sizeof m->value);
  m->value.type = JSON_INT;
  m->value.i = x;
  m->value.d = (double)x;
  m->value.s = arena_strndup(a, b, (size_t)n);
  m->value.n = (uint32_t)n;
}

/* The job's predict_batch request as a value in the job's own arena, in the text's key order
 * ("states", "questions", "max_len", "head_max_len", "min_confidence", "batch_size",
 * "sort_by_length"; "lang" is added when the job is prepared). NULL when out of memory. */
static json_value *request_value(serve_job *job, const serve_request *req) {
  arena *a = &job->values;
  json_value *r = arena_alloc(a, sizeof *r), *states = arena_alloc(a, sizeof *states);
  json_member *m = arena_alloc(a, sizeof(json_member) * 9);
  json_value *items = arena_alloc(a, sizeof(json_value) * job->n_states);
  if (!r || !states || !m || !items) return NULL;
  for (size_t i = 0; i < job->n_states; i++)
    if (!json_copy(&items[i], job->is_batch ? &req->states->items[i] : req->state, a)) return NULL;
  *states = (json_value){.type = JSON_ARRAY, .n = (uint32_t)job->n_states, .items = items};
  *r = (json_value){.type = JSON_OBJECT, .members = m};
  m[r->n++] = (json_member){"states", 6, *states};
  m[r->n] = (json_member){"questions", 9, {0}};
  if (!json_copy(&m[r->n++].value, req->questions, a)) return NULL;
  if (req->max_len) int_member(&m[r->n++], "max_len", req->max_len, a);
  if (req->head_max_len) int_member(&m[r->n++], "head_max_len", req->head_max_len, a);
  if (req->min_confidence) {
    m[r->n] = (json_member){"min_confidence", 14, {0}};
    if (!json_copy(&m[r->n++].value, req->min_confidence, a)) return NULL;
  }
  if (req->kind == SERVE_BATCH && req->batch_size) int_member(&m[r->n++], "batch_size", req->batch_size, a);
  if (req->kind == SERVE_BATCH && req->sort_by_length) {
    m[r->n] = (json_member){"sort_by_length", 14, {0}};
    m[r->n].value.type = JSON_BOOL;
    m[r->n++].value.b = true;
  }
  return r;
}

static bool same_str(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

/* The routed language (detection.language), when the checkpoint reads languages differently. */
static char *routed_language(serve_models *models, const serve_route *r) {
  if (!r->language[0] || !serve_models_has_lang_temps(models, r->model)) return NULL;
  return strdup(r->language);
}

static int error_status(const laya_error *e);

/* Laya's _tournament_plan: 1 when LAYA_TOURNAMENT_GROUP (group) narrows this request's choices by
 * elimination, 0 when it is answered in one pass, or an HTTP status with rej. Every choice over
 * group is narrowed, unless none is over SERVE_MAX_CHOICE_OPTIONS and one of them has an
 * option_order (narrowing drops it, and one pass can still read it) or a label that is not a
 * string (an answer could not be mapped back); over that cap, only a non-string label refuses. */
static int tournament_plan(const json_value *questions, long long group, serve_reject *rej) {
  if (!group || questions->type != JSON_OBJECT) return 0;
  bool any = false, huge = false, ordered = false;
  const char *unmappable = NULL;
  size_t unmappable_len = 0;
  for (uint32_t i = 0; i < questions->n; i++) {
    const json_value *q = &questions->members[i].value;
    const json_value *type = q->type == JSON_OBJECT ? json_get(q, "type") : NULL;
    if (!type || type->type != JSON_STRING || strcmp(type->s, "choice") != 0) continue;
    const json_value *crit = json_get(q, "criteria");
    if (!crit || (crit->type != JSON_OBJECT && crit->type != JSON_ARRAY) || crit->n <= (uint32_t)group) continue;
    /* the labels as Laya's _criteria_items reads them (its duplicate / unhashable errors too) */
    arena a;
    arena_init(&a, 1 << 12);
    shortlist_items it;
    laya_error e;
    laya_err_clear(&e);
    int rc = shortlist_criteria_items(crit, &a, &it, &e);
    bool strings = true;
    for (int j = 0; !rc && j < it.n; j++) strings = strings && it.label[j]->type == JSON_STRING;
    arena_free(&a);
    if (rc) {
      if (error_status(&e) == 422) return serve_reject_set(rej, 422, "%s", e.message);
      serve_log(SERVE_LOG_ERROR, "inference failed: %s", e.message);
      return serve_reject_set(rej, 500, "inference failed");
    }
    any = true;
    huge = huge || crit->n > SERVE_MAX_CHOICE_OPTIONS;
    if (!strings && !unmappable) {
      unmappable = questions->members[i].key;
      unmappable_len = questions->members[i].key_len;
    }
    const json_value *order = json_get(q, "option_order");
    ordered = ordered || (order && order->type != JSON_NULL);
  }
  if (!any) return 0;
  if (huge) {
    if (!unmappable) return 1;
    strbuf qid;
    sb_init(&qid);
    py_repr_str(&qid, unmappable, unmappable_len);
    serve_reject_set(rej, 422,
                     "question %s: a choice is narrowed by elimination once a request has one over %d options, "
                     "and that needs every label to be a string",
                     sb_cstr(&qid), SERVE_MAX_CHOICE_OPTIONS);
    sb_free(&qid);
    return 422;
  }
  return unmappable || ordered ? 0 : 1;
}

int serve_job_from_request(serve_models *models, const serve_request *req, bool strict,
                           serve_job **out, serve_reject *rej) {
  *out = NULL;
  /* decided before routing, as Laya decides it before its first predict routes */
  const serve_config *cfg = serve_models_config(models);
  long long group = cfg ? cfg->env.tournament_group : 0;
  int narrow = tournament_plan(req->questions, group, rej);
  if (narrow < 0 || narrow > 1) return narrow;
  serve_job *job = calloc(1, sizeof *job);
  if (!job) return serve_reject_set(rej, 500, "inference failed");
  if (narrow) {
    job->tournament_group = group;
    job->solo = true; /* its rounds are its own passes */
  }
  sb_init(&job->body);
  job->is_batch = req->kind == SERVE_BATCH;
  job->strict = strict;
  job->n_states = job->is_batch ? req->states->n : 1;
  job->states_json = calloc(job->n_states, sizeof *job->states_json);
  job->routing_json = calloc(job->n_states, sizeof *job->routing_json);
  job->langs = calloc(job->n_states, sizeof *job->langs);
  job->state_models = calloc(job->n_states, sizeof *job->state_models);
  if (!job->states_json || !job->routing_json || !job->langs || !job->state_models) {
    serve_job_free(job);
    return serve_reject_set(rej, 500, "inference failed");
  }
  size_t state_bytes = 0;
  for (size_t i = 0; i < job->n_states; i++) {
    const json_value *st = job->is_batch ? &req->states->items[i] : req->state;
    strbuf sb;
    sb_init(&sb);
    dump_compact(&sb, st);
    state_bytes += sb.len;
    job->states_json[i] = sb_steal(&sb);
    serve_route r;
    strbuf msg;
    sb_init(&msg);
    if (serve_models_route(models, st, req->questions, req->model[0] ? req->model : NULL, req->task,
                           req->lang, req->lang_guess, &r, &msg) != 0) {
      serve_reject_set(rej, 422, "%s", sb_cstr(&msg));
      sb_free(&msg);
      serve_job_free(job);
      return 422;
    }
    sb_free(&msg);
    if (i == 0) {
      snprintf(job->model, sizeof job->model, "%s", r.model);
    } else if (strcmp(job->model, r.model) != 0) {
      job->solo = true; /* states of one batch routed to different checkpoints */
    }
    job->routing_json[i] = r.routing_json;
    r.routing_json = NULL;
    snprintf(job->state_models[i], sizeof job->state_models[i], "%s", r.model);
    /* a checkpoint this server cannot load is the operator's to fix: say which and how, never
     * a bare 500 (loading it here, on first use, when it can be) */
    if (i == 0 || strcmp(r.model, job->model) != 0) {
      laya_error le;
      laya_err_clear(&le);
      if (!serve_models_get(models, r.model, &le)) {
        serve_reject_set(rej, 503, "%s", le.message); /* names the checkpoint, the cause, the fix */
        serve_route_free(&r);
        serve_job_free(job);
        return 503;
      }
    }
    job->langs[i] = req->lang ? strdup(req->lang) : routed_language(models, &r);
    serve_route_free(&r);
    if (i > 0 && !same_str(job->langs[i], job->langs[0])) job->solo = true;
  }

  strbuf o;
  sb_init(&o);
  sb_puts(&o, "\"questions\": ");
  dump_compact(&o, req->questions);
  if (req->max_len) sb_printf(&o, ", \"max_len\": %ld", req->max_len);
  if (req->head_max_len) sb_printf(&o, ", \"head_max_len\": %ld", req->head_max_len);
  if (req->min_confidence) {
    sb_puts(&o, ", \"min_confidence\": ");
    dump_compact(&o, req->min_confidence);
  }
  if (req->kind == SERVE_BATCH) {
    if (req->batch_size) {
      sb_printf(&o, ", \"batch_size\": %ld", req->batch_size);
      job->solo = true;
    }
    if (req->sort_by_length) {
      sb_puts(&o, ", \"sort_by_length\": true");
      job->solo = true;
    }
  }
  job->options_json = sb_steal(&o);
  arena_init(&job->values, 1 << 12);
  job->request = request_value(job, req);
  bool route_oom = false;
  if (narrow) {
    snprintf(job->route_model, sizeof job->route_model, "%s", req->model);
    json_value *task = req->task ? arena_alloc(&job->values, sizeof *task) : NULL;
    if (req->task && (!task || !json_copy(task, req->task, &job->values))) route_oom = true;
    job->route_task = task;
    if (req->lang && !(job->route_lang = strdup(req->lang))) route_oom = true;
    if (req->lang_guess && !(job->route_lang_guess = strdup(req->lang_guess))) route_oom = true;
  }
  long width = req->max_len ? req->max_len : SERVE_BATCH_ROW_TOKENS_ASSUMED;
  /* a state's rows are at most `width` tokens; a short state is about a token per 3 bytes
   * plus the question head */
  size_t per_state = state_bytes / (job->n_states ? job->n_states : 1) / 3 + 96;
  if (per_state > (size_t)width) per_state = (size_t)width;
  job->est_tokens = job->n_states * (req->questions->n ? req->questions->n : 1) * per_state;
  if (!job->options_json || route_oom) {
    serve_job_free(job);
    return serve_reject_set(rej, 500, "inference failed");
  }
  *out = job;
  return 0;
}

/* Status for an engine error: Laya answers a ValueError with 422 and its text, anything else
 * with a fixed 500 (the cause goes to the log, never to the client). */
static int error_status(const laya_error *e) {
  return (e->code == LAYA_ERR_VALUE || !strcmp(e->kind, "ValueError")) ? 422 : 500;
}

static void fail_job(serve_job *job, const laya_error *e) {
  job->status = error_status(e);
  job->err = *e;
  if (job->status == 500) {
    /* a Debug build's log also says where laya.c made the error */
    char where[256] = "";
    if (LAYA_ASSERTS_ON) laya_error_origin(e, where, sizeof where);
    serve_log(SERVE_LOG_ERROR, "inference failed for model=%s: %s%s%s%s", job->model, e->message,
              where[0] ? " (at " : "", where, where[0] ? ")" : "");
  }
}

static void sum_usage(const json_value *r, long *in, long *out) {
  const json_value *u = r && r->type == JSON_OBJECT ? json_get(r, "usage") : NULL;
  const json_value *i = u && u->type == JSON_OBJECT ? json_get(u, "input_tokens") : NULL;
  const json_value *o = u && u->type == JSON_OBJECT ? json_get(u, "output_tokens") : NULL;
  if (i && i->type == JSON_INT && !i->big) *in += (long)i->i;
  if (o && o->type == JSON_INT && !o->big) *out += (long)o->i;
}

static void fail_job(serve_job *job, const laya_error *e);

/* An answer with NaN (non-finite weights: the load warned) cannot go out as JSON. Python's
 * laya-serve fails the response with a 500 there; so does this one, with a JSON body. */
#define NONFINITE_MESSAGE                                                                          \
  "the answer holds NaN or Infinity, which JSON cannot carry (does the checkpoint have "           \
  "non-finite weights? its load warned if so)"

/* Write job->body from its results (an array of n_states engine results, in order). */
static void finish_job(serve_job *job, json_value *results, arena *a) {
  /* An answer with NaN (non-finite weights: the load warned) cannot go out as JSON. Python's
   * laya-serve fails the response with a 500 there; so does this one, with a JSON body. */
  for (size_t i = 0; i < job->n_states; i++)
    if (json_has_nonfinite(&results[i])) {
      laya_error e;
      laya_err_clear(&e);
      laya_err(&e, LAYA_ERR_INTERNAL, NULL, NONFINITE_MESSAGE);
      fail_job(job, &e);
      return;
    }
  sb_reset(&job->body);
  long in = 0, out = 0;
  for (size_t i = 0; i < job->n_states; i++) sum_usage(&results[i], &in, &out);
  job->input_tokens = in;
  if (!job->is_batch) {
    serve_finish_result(&results[0], job->routing_json[0], job->strict, a, &job->body);
  } else {
    sb_puts(&job->body, "{\"results\":[");
    for (size_t i = 0; i < job->n_states; i++) {
      if (i) sb_putc(&job->body, ',');
      serve_finish_result(&results[i], job->routing_json[i], job->strict, a, &job->body);
    }
    sb_printf(&job->body, "],\"total_usage\":{\"input_tokens\":%ld,\"output_tokens\":%ld}}", in, out);
  }
  job->status = job->body.oom ? 500 : 0;
}

/* Build {"states": [...], <options>, "lang": ...} for the job's states pick[0..n_pick), or all
 * of them when pick is NULL. */
static char *batch_request(const serve_job *job, const size_t *pick, size_t n_pick, const char *lang) {
  strbuf sb;
  sb_init(&sb);
  sb_puts(&sb, "{\"states\": [");
  size_t n = pick ? n_pick : job->n_states;
  for (size_t i = 0; i < n; i++) {
    if (i) sb_puts(&sb, ", ");
    sb_puts(&sb, job->states_json[pick ? pick[i] : i]);
  }
  sb_puts(&sb, "], ");
  sb_puts(&sb, job->options_json);
  if (lang) {
    sb_puts(&sb, ", \"lang\": ");
    json_dump_string(&sb, lang, strlen(lang), false);
  }
  sb_putc(&sb, '}');
  if (sb.oom) {
    sb_free(&sb);
    return NULL;
  }
  return sb_steal(&sb);
}

/* Run engine predict_batch and parse its array; NULL with e on failure. */
static json_value *run_batch(serve_models *models, const serve_engine *eng, const char *model_name,
                             const char *request, size_t expect, arena *a, laya_error *e) {
  void *model = serve_models_acquire(models, model_name, e);
  if (!model) return NULL;
  char *out = NULL;
  int rc = eng->predict_batch(eng->ctx, model, request, &out, e);
  serve_models_release(models, model);
  if (rc != 0) {
    laya_free(out);
    return NULL;
  }
  json_value *v = stand_in_results(out, expect, a, e);
  laya_free(out);
  return v ? v->items : NULL;
}

/* The job's request (job->request) for its states pick[0..n) as a value in a: a predict request
 * ({"state", ...}) when one is false, else predict_batch's; "lang" last when lang is set. The
 * states and options are the job's values, shared, not copied. NULL when out of memory. */
static json_value *pick_request(const serve_job *job, const size_t *pick, size_t n, bool one, const char *lang,
                                arena *a) {
  const json_value *full = job->request, *states = &full->members[0].value;
  json_value *r = arena_alloc(a, sizeof *r);
  json_member *m = arena_alloc(a, sizeof(json_member) * (full->n + 1));
  json_value *items = one ? NULL : arena_alloc(a, sizeof(json_value) * n);
  json_value *lv = lang ? arena_alloc(a, sizeof *lv) : NULL;
  if (!r || !m || (!one && !items) || (lang && !lv)) return NULL;
  *r = (json_value){.type = JSON_OBJECT, .members = m};
  if (one) {
    m[r->n++] = (json_member){"state", 5, states->items[pick[0]]};
  } else {
    for (size_t i = 0; i < n; i++) items[i] = states->items[pick[i]];
    m[r->n++] = (json_member){"states", 6, {.type = JSON_ARRAY, .n = (uint32_t)n, .items = items}};
  }
  for (uint32_t i = 1; i < full->n; i++)
    if (strcmp(full->members[i].key, "lang") != 0) m[r->n++] = full->members[i];
  if (lang) m[r->n++] = (json_member){"lang", 4, json_string(lang)};
  return r;
}

/* serve_job_run_alone through the engine's typed call: the job's values in, results out, the
 * body written once. Returns the results (n_states, in a) or NULL with e. */
static const state_result *run_alone_typed(serve_models *models, const serve_engine *eng, serve_job *job, arena *a,
                                           laya_error *e) {
  state_result *all = arena_alloc(a, job->n_states * sizeof *all);
  size_t *pick = arena_alloc(a, job->n_states * sizeof *pick);
  bool *done = arena_alloc(a, job->n_states);
  if (!all || !pick || !done) {
    laya_err(e, LAYA_ERR_NOMEM, NULL, "out of memory");
    return NULL;
  }
  memset(done, 0, job->n_states);
  /* group states by checkpoint and language (they differ only when routing split a batch) */
  for (size_t i = 0; i < job->n_states; i++) {
    if (done[i]) continue;
    size_t n = 0;
    for (size_t k = i; k < job->n_states; k++)
      if (!done[k] && !strcmp(job->state_models[k], job->state_models[i]) && same_str(job->langs[k], job->langs[i]))
        pick[n++] = k;
    json_value *req = pick_request(job, pick, n, !job->is_batch, job->langs[i], a);
    if (!req) {
      laya_err(e, LAYA_ERR_NOMEM, NULL, "out of memory");
      return NULL;
    }
    void *model = serve_models_acquire(models, job->state_models[i], e);
    if (!model) return NULL;
    const state_result *r = NULL;
    long got = 0;
    int rc = eng->predict_values(eng->ctx, model, req, job->is_batch, a, &r, &got, e);
    serve_models_release(models, model);
    if (rc) return NULL;
    if (got != (long)n) {
      laya_err(e, LAYA_ERR_INTERNAL, NULL, "predict_batch returned %ld results for %zu states", got, n);
      return NULL;
    }
    for (size_t k = 0; k < n; k++) {
      all[pick[k]] = r[k];
      done[pick[k]] = true;
    }
  }
  return all;
}

/* Write job->body from its typed results (the same body finish_job writes, without a parse). */
static void finish_job_typed(serve_job *job, const state_result *r);
/* The same with LAYA_TOURNAMENT_GROUP's per-answer notes (notes / dropped: per state, per answer;
 * both NULL: no tournament). */
static void write_job_body(serve_job *job, const state_result *r, const tournament_entry ***notes,
                           bool **dropped);

/* One state's predict_tournament request: the job's predict request for state i (without the
 * batch-only controls, which shape one batched pass and have nothing to apply to here, as in
 * Laya, and without "lang": each pass gets the language its own route reads it in) and
 * "group_size". NULL when out of memory. */
static json_value *tournament_request(const serve_job *job, size_t i, arena *a) {
  json_value *one = pick_request(job, &i, 1, true, NULL, a);
  json_member *m = one ? arena_alloc(a, sizeof *m * (one->n + 1)) : NULL;
  if (!m) return NULL;
  uint32_t n = 0;
  for (uint32_t k = 0; k < one->n; k++)
    if (strcmp(one->members[k].key, "batch_size") != 0 && strcmp(one->members[k].key, "sort_by_length") != 0)
      m[n++] = one->members[k];
  json_member g;
  int_member(&g, "group_size", (long)job->tournament_group, a);
  if (!g.value.s) return NULL;
  m[n++] = g;
  one->members = m;
  one->n = n;
  return one;
}

/* Laya's _predict_with_tournament reshapes the final pass's answer of each narrowed choice: its
 * probabilities name every option in criteria order, the finalists' from the final pass and 0.0
 * for an option eliminated earlier (so choice is still the argmax and they still sum to 1), and
 * usage.input_tokens is summed over every pass. *notes gets each answer's entry (NULL: not
 * narrowed). The widened answers live in a. */
static int tournament_widen(const tournament_result *t, arena *a, state_result *out,
                            const tournament_entry ***notes) {
  *out = t->r;
  out->input_tokens = t->input_tokens_all;
  answer *ans = arena_alloc(a, sizeof *ans * (size_t)(t->r.n + 1));
  const tournament_entry **nt = arena_alloc(a, sizeof *nt * (size_t)(t->r.n + 1));
  if (!ans || !nt) return -1;
  for (int j = 0; j < t->r.n; j++) {
    const answer *src = &t->r.answers[j];
    ans[j] = *src;
    nt[j] = NULL;
    const tournament_entry *e = NULL;
    for (int k = 0; k < t->n && !e; k++)
      if (t->e[k].rounds && t->e[k].qid_len == src->q->qid_len && !memcmp(t->e[k].qid, src->q->qid, src->q->qid_len))
        e = &t->e[k];
    if (!e) continue;
    question *q = arena_alloc(a, sizeof *q);
    double *prob = arena_alloc(a, sizeof *prob * (size_t)e->n);
    if (!q || !prob) return -1;
    *q = *src->q;
    q->n_opts = e->n;
    q->label = e->labels;
    q->opt = NULL;
    q->opt_len = NULL;
    q->order = NULL;
    for (int i = 0; i < e->n; i++) prob[i] = 0.0;
    /* the final pass's option i is finalist i (its question was cut to them, in order) */
    for (int i = 0; i < src->k && i < e->n_left; i++) prob[e->left[i]] = src->prob[i];
    ans[j].q = q;
    ans[j].k = e->n;
    ans[j].prob = prob;
    ans[j].top = e->left[src->top];
    ans[j].logits = NULL;
    nt[j] = e;
  }
  out->answers = ans;
  *notes = nt;
  return 0;
}

/* Before each pass of a tournament job: has its client left? Then the rounds still to play are
 * not computed (the scheduler's look before a job, repeated between its passes: one poll of the
 * socket per pass; the watchdog's 50 ms look sets job->cancelled too). */
typedef struct tournament_watch {
  serve_job *job;
  serve_models *models;
  const serve_engine *eng;
  int passes;         /* passes started so far */
  char *routing_json; /* the latest pass's routing block (the final pass's once it has run) */
  char model[64];     /* the checkpoint the latest pass routed to */
} tournament_watch;

static bool tournament_client_gone(void *arg) {
  tournament_watch *w = arg;
  serve_job *job = w->job;
  if (atomic_load(&job->cancelled) || (job->client_gone && job->client_gone(job, job->done_arg))) return true;
  w->passes++;
  return false;
}

/* One pass of a tournament (preq: {"state", "questions": the pass's, the request's budgets}), as
 * Laya's server runs each: a Router.predict of its own, routed on the pass's questions with the
 * request's model, task, lang and lang_guess (a round's ids, "0", "1", ..., match no typed-decisions
 * workflow, so with LAYA_AUTO_TASK its rounds and its final pass may run on different checkpoints),
 * in the language that route reads the state in, on the checkpoint it routed to. */
static int tournament_pass(void *arg, const json_value *preq, arena *a, state_result *out, laya_error *err) {
  tournament_watch *w = arg;
  const serve_job *job = w->job;
  serve_route r;
  strbuf msg;
  sb_init(&msg);
  if (serve_models_route(w->models, json_get(preq, "state"), json_get(preq, "questions"),
                         job->route_model[0] ? job->route_model : NULL, job->route_task, job->route_lang,
                         job->route_lang_guess, &r, &msg) != 0) {
    int rc = laya_err(err, LAYA_ERR_VALUE, "ValueError", "%s", sb_cstr(&msg));
    sb_free(&msg);
    return rc;
  }
  sb_free(&msg);
  /* the request's lang, else the routed language when the checkpoint reads languages differently */
  const char *lang = job->route_lang ? job->route_lang : NULL;
  char *routed = lang ? NULL : routed_language(w->models, &r);
  if (routed) lang = routed;
  json_value *mreq = arena_alloc(a, sizeof *mreq);
  json_member *m = mreq ? arena_alloc(a, sizeof *m * (preq->n + 1)) : NULL;
  char *lv = lang ? arena_strndup(a, lang, strlen(lang)) : NULL;
  free(routed);
  if (!m || (lang && !lv)) {
    serve_route_free(&r);
    return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  }
  *mreq = (json_value){.type = JSON_OBJECT, .members = m};
  for (uint32_t k = 0; k < preq->n; k++)
    if (strcmp(preq->members[k].key, "lang") != 0) m[mreq->n++] = preq->members[k];
  if (lv) m[mreq->n++] = (json_member){"lang", 4, json_string(lv)};
  void *model = serve_models_acquire(w->models, r.model, err);
  int rc;
  if (!model) {
    rc = err->code ? err->code : LAYA_ERR_IO;
  } else {
    const state_result *res = NULL;
    long n = 0;
    rc = w->eng->predict_values(w->eng->ctx, model, mreq, false, a, &res, &n, err);
    serve_models_release(w->models, model);
    if (!rc) *out = res[0]; /* in a, with the questions it points to */
  }
  free(w->routing_json);
  w->routing_json = r.routing_json;
  r.routing_json = NULL;
  snprintf(w->model, sizeof w->model, "%s", r.model);
  serve_route_free(&r);
  return rc;
}

/* A job LAYA_TOURNAMENT_GROUP narrows: each state through the engine's predict_tournament, every
 * pass of it (its rounds, then the final pass) routed on its own questions (tournament_pass),
 * answered in Laya's serve shape with the final pass's routing. */
static void run_tournament_job(serve_models *models, const serve_engine *eng, serve_job *job) {
  arena a;
  arena_init(&a, 1 << 16);
  laya_error e;
  laya_err_clear(&e);
  double t0 = serve_now();
  job->batch_requests = 1;
  state_result *r = arena_alloc(&a, sizeof *r * job->n_states);
  const tournament_entry ***notes = arena_alloc(&a, sizeof *notes * job->n_states);
  bool **dropped = arena_alloc(&a, sizeof *dropped * job->n_states);
  const json_value *questions = job->request ? &job->request->members[1].value : NULL;
  int rc = r && notes && dropped && questions ? 0 : laya_err(&e, LAYA_ERR_NOMEM, NULL, "out of memory");
  if (!rc && !eng->predict_tournament_values)
    rc = laya_err(&e, LAYA_ERR_UNSUPPORTED, NULL, "this engine has no predict_tournament");
  tournament_watch watch = {job, models, eng, 0, NULL, ""};
  for (size_t i = 0; !rc && i < job->n_states; i++) {
    json_value *req = tournament_request(job, i, &a);
    if (!req) {
      rc = laya_err(&e, LAYA_ERR_NOMEM, NULL, "out of memory");
      break;
    }
    tournament_result t;
    rc = eng->predict_tournament_values(eng->ctx, NULL, req, tournament_pass, tournament_client_gone, &watch, &a,
                                        &t, &e);
    if (rc) break;
    /* the answer is the final pass's: its routing block, its checkpoint */
    free(job->routing_json[i]);
    job->routing_json[i] = watch.routing_json;
    watch.routing_json = NULL;
    snprintf(job->state_models[i], sizeof job->state_models[i], "%s", watch.model);
    if (tournament_widen(&t, &a, &r[i], &notes[i]) || !(dropped[i] = arena_alloc(&a, (size_t)t.r.n + 1))) {
      rc = laya_err(&e, LAYA_ERR_NOMEM, NULL, "out of memory");
      break;
    }
    /* Laya reports a dropped order when the caller's question had one (not None) */
    for (int j = 0; j < t.r.n; j++) {
      const json_value *q = (uint32_t)j < questions->n ? &questions->members[j].value : NULL; /* answers: question order */
      const json_value *order = q && q->type == JSON_OBJECT ? json_get(q, "option_order") : NULL;
      dropped[i][j] = notes[i][j] && order && order->type != JSON_NULL;
    }
  }
  job->infer_ms = (serve_now() - t0) * 1000.0;
  if (rc && !strcmp(e.kind, "cancelled")) {
    /* answered 499, to nobody, as a queued job whose client left */
    serve_log(SERVE_LOG_INFO, "tournament stopped after %d pass%s: client gone (model=%s)", watch.passes,
              watch.passes == 1 ? "" : "es", job->model);
    job->status = 499;
    laya_err(&job->err, LAYA_ERR_INTERNAL, NULL, "client closed request");
  } else if (rc) {
    fail_job(job, &e);
  } else {
    write_job_body(job, r, notes, dropped);
  }
  free(watch.routing_json);
  arena_free(&a);
}

void serve_job_run_alone(serve_models *models, const serve_engine *eng, serve_job *job) {
  if (job->tournament_group) {
    run_tournament_job(models, eng, job);
    return;
  }
  arena a;
  arena_init(&a, 1 << 16);
  laya_error e;
  laya_err_clear(&e);
  double t0 = serve_now();
  json_value *results = NULL;
  if (eng->predict_values && job->request) {
    const state_result *r = run_alone_typed(models, eng, job, &a, &e);
    job->infer_ms = (serve_now() - t0) * 1000.0;
    job->batch_requests = 1;
    if (r)
      finish_job_typed(job, r);
    else
      fail_job(job, &e);
    arena_free(&a);
    return;
  }
  /* a stand-in engine of the tests, which answers in text only */
  if (!job->is_batch) {
    void *model = serve_models_acquire(models, job->model, &e);
    if (model) {
      strbuf req;
      sb_init(&req);
      sb_printf(&req, "{\"state\": %s, %s", job->states_json[0], job->options_json);
      if (job->langs[0]) {
        sb_puts(&req, ", \"lang\": ");
        json_dump_string(&req, job->langs[0], strlen(job->langs[0]), false);
      }
      sb_putc(&req, '}');
      char *out = NULL;
      if (!req.oom && eng->predict(eng->ctx, model, req.data, &out, &e) == 0) {
        results = stand_in_results(out, 0, &a, &e);
      }
      laya_free(out);
      sb_free(&req);
      serve_models_release(models, model);
    }
  } else {
    /* group states by checkpoint (they differ only when routing split the batch) */
    results = arena_alloc(&a, job->n_states * sizeof *results);
    size_t *pick = malloc(job->n_states * sizeof *pick);
    char (*names)[64] = malloc(job->n_states * sizeof *names);
    bool *done = calloc(job->n_states, 1);
    bool ok = results && pick && names && done;
    for (size_t i = 0; ok && i < job->n_states; i++) snprintf(names[i], sizeof names[i], "%s", job->state_models[i]);
    for (size_t i = 0; ok && i < job->n_states; i++) {
      if (done[i]) continue;
      size_t n = 0;
      for (size_t k = i; k < job->n_states; k++)
        if (!done[k] && !strcmp(names[k], names[i]) && same_str(job->langs[k], job->langs[i])) pick[n++] = k;
      char *req = batch_request(job, pick, n, job->langs[i]);
      json_value *part = req ? run_batch(models, eng, names[i], req, n, &a, &e) : NULL;
      if (!req) laya_err(&e, LAYA_ERR_NOMEM, NULL, "out of memory");
      free(req);
      if (!part) {
        ok = false;
        break;
      }
      for (size_t k = 0; k < n; k++) {
        results[pick[k]] = part[k];
        done[pick[k]] = true;
      }
    }
    free(pick);
    free(names);
    free(done);
    if (!ok) results = NULL;
  }
  job->infer_ms = (serve_now() - t0) * 1000.0;
  job->batch_requests = 1;
  if (results)
    finish_job(job, results, &a);
  else
    fail_job(job, &e);
  arena_free(&a);
}

/* Prepare job for a shared pass (the engine checks and tokenizes it). Nonzero: the request
 * failed here and has its answer. */
static int prepare_job(serve_models *models, const serve_engine *eng, serve_job *job) {
  laya_error e;
  laya_err_clear(&e);
  void *model = serve_models_acquire(models, job->model, &e); /* held until the job is freed */
  void *p = NULL;
  if (model && eng->job_prepare_value && job->request) {
    /* the request as a value: "lang" (the last member's room) when the job reads one */
    json_value *r = job->request;
    if (job->langs[0] && strcmp(r->members[r->n - 1].key, "lang") != 0) {
      json_member *l = &r->members[r->n++];
      *l = (json_member){"lang", 4, json_string(job->langs[0])};
    }
    int rc = eng->job_prepare_value(eng->ctx, model, r, &p, &e);
    if (rc) p = NULL;
    if (!rc) {
      job->eng = eng;
      job->prep = p;
      job->prep_model = model;
      job->prep_models = models;
      job->est_tokens = (size_t)eng->job_tokens(eng->ctx, p);
      return 0;
    }
    serve_models_release(models, model);
    job->batch_requests = 1;
    fail_job(job, &e);
    return job->status;
  }
  char *req = model ? batch_request(job, NULL, 0, job->langs[0]) : NULL;
  if (model && !req) laya_err(&e, LAYA_ERR_NOMEM, NULL, "out of memory");
  if (req && eng->job_prepare(eng->ctx, model, req, &p, &e) == 0) {
    job->eng = eng;
    job->prep = p;
    job->prep_model = model;
    job->prep_models = models;
    job->est_tokens = (size_t)eng->job_tokens(eng->ctx, p); /* exact, for the packing */
  } else {
    serve_models_release(models, model);
  }
  free(req);
  if (p) return 0;
  job->batch_requests = 1;
  fail_job(job, &e);
  return job->status;
}

int serve_sched_prepare(serve_sched *s, serve_job *job) {
  if (!s->cfg->batching || !s->cfg->pipeline || job->solo || job->prep || !s->eng->job_prepare) return 0;
  return prepare_job(s->models, s->eng, job);
}

/* Write job->body from its typed results (the same body finish_job writes, without a parse). */
static void finish_job_typed(serve_job *job, const state_result *r) { write_job_body(job, r, NULL, NULL); }

static void write_job_body(serve_job *job, const state_result *r, const tournament_entry ***notes,
                           bool **dropped) {
  for (size_t i = 0; i < job->n_states; i++)
    if (!rj_state_finite(&r[i])) {
      laya_error e;
      laya_err_clear(&e);
      laya_err(&e, LAYA_ERR_INTERNAL, NULL, NONFINITE_MESSAGE);
      fail_job(job, &e);
      return;
    }
  sb_reset(&job->body);
  long in = 0;
  for (size_t i = 0; i < job->n_states; i++) in += r[i].input_tokens;
  job->input_tokens = in;
  serve_write_body(&job->body, r, job->n_states, job->routing_json, job->strict, job->is_batch, notes, dropped);
  job->status = job->body.oom ? 500 : 0;
}

void serve_job_finish(serve_job *job) {
  if (!job->prep) return;
  const serve_engine *eng = job->eng;
  /* A prepared job reaches here after its pass: run_pass leaves status 0 when the pass ran and
   * fails the job otherwise, so status 0 is "its outputs are waiting to be decoded". Should a
   * prepared job ever get here unrun, laya_job_result refuses it ("the job has not run"): a 500,
   * never another job's answer. */
  if (job->status == 0 && eng->job_results) {
    arena a;
    arena_init(&a, 1 << 14);
    const state_result *r = NULL;
    long n = 0;
    laya_error e;
    int rc = eng->job_results(eng->ctx, job->prep, &a, &r, &n, &e);
    if (!rc && n != (long)job->n_states)
      rc = laya_err(&e, LAYA_ERR_INTERNAL, NULL, "the engine returned %ld results for %zu states", n, job->n_states);
    if (!rc)
      finish_job_typed(job, r);
    else
      fail_job(job, &e);
    arena_free(&a);
  } else if (job->status == 0) {
    arena a;
    arena_init(&a, 1 << 14);
    char *out = NULL;
    laya_error e;
    json_value *v = NULL;
    if (eng->job_result(eng->ctx, job->prep, &out, &e) == 0) {
      v = stand_in_results(out, job->n_states, &a, &e);
    }
    laya_free(out);
    if (v)
      finish_job(job, v->items, &a);
    else
      fail_job(job, &e);
    arena_free(&a);
  }
  eng->job_free(eng->ctx, job->prep);
  job->prep = NULL;
  if (job->prep_models) serve_models_release(job->prep_models, job->prep_model);
  job->prep_models = NULL;
}

/* Run one shared pass over jobs[0..n) (prepared, one model). Each job that ran is left for
 * serve_job_finish; a ValueError from the pass re-runs its jobs one by one. */
static void run_pass(serve_sched *s, serve_job **jobs, int n) {
  const serve_engine *eng = s->eng;
  for (int j = 0; j < n; j++) s->prep[j] = jobs[j]->prep;
  laya_error e;
  laya_err_clear(&e);
  double t0 = serve_now();
  int rc = eng->jobs_run(eng->ctx, jobs[0]->prep_model, s->prep, n, &e);
  double ms = (serve_now() - t0) * 1000.0;
  if (rc && error_status(&e) == 422 && n > 1) {
    for (int j = 0; j < n; j++) run_pass(s, &jobs[j], 1);
    return;
  }
  int states = 0;
  for (int j = 0; j < n; j++) states += (int)jobs[j]->n_states;
  serve_metrics_batch(s->metrics, jobs[0]->model, n, states, ms / 1000.0);
  for (int j = 0; j < n; j++) {
    jobs[j]->infer_ms = ms;
    jobs[j]->batch_requests = n;
    if (rc) fail_job(jobs[j], &e); /* else status stays 0: serve_job_finish decodes it */
  }
}

/* Run jobs[0..n) (one checkpoint, none solo) in shared passes: prepare those not prepared yet
 * (a request that fails here gets its own error), then pack the prepared ones in order into
 * passes of at most LAYA_SERVE_PASS_TOKENS tokens. Without pipelining, decode them here too. */
static void run_group(serve_sched *s, serve_job **jobs, int n) {
  const serve_engine *eng = s->eng;
  double t = serve_now();
  bool prepared = false;
  for (int j = 0; j < n; j++) prepared = prepared || jobs[j]->prep;
  if (!prepared && (n == 1 || !eng->job_prepare)) { /* one request, or no job API: each alone */
    for (int j = 0; j < n; j++) {
      serve_job_run_alone(s->models, eng, jobs[j]);
      serve_metrics_batch(s->metrics, jobs[j]->model, 1, (int)jobs[j]->n_states, jobs[j]->infer_ms / 1000.0);
    }
    phase_add(s, PHASE_PASS, &t);
    return;
  }
  int n_ready = 0;
  bool prepared_here = false;
  for (int j = 0; j < n; j++) {
    if (!jobs[j]->prep) {
      prepared_here = true;
      if (prepare_job(s->models, eng, jobs[j]) != 0) continue;
    }
    s->ready[n_ready++] = jobs[j];
  }
  if (prepared_here) phase_add(s, PHASE_PREPARE, &t);
  for (int k = 0; k < n_ready;) {
    long tokens = (long)s->ready[k]->est_tokens;
    int m = 1;
    while (k + m < n_ready && tokens + (long)s->ready[k + m]->est_tokens <= s->cfg->pass_tokens) {
      tokens += (long)s->ready[k + m]->est_tokens;
      m++;
    }
    run_pass(s, s->ready + k, m);
    k += m;
  }
  phase_add(s, PHASE_PASS, &t);
  if (!s->cfg->pipeline) {
    for (int j = 0; j < n; j++) serve_job_finish(jobs[j]);
    phase_add(s, PHASE_DECODE, &t);
  }
}

/* Jobs share a pass when they ask the same checkpoint; their questions may differ. */
static bool compatible(const serve_job *a, const serve_job *b) { return !b->solo && !strcmp(a->model, b->model); }

static void *worker(void *arg) {
  serve_sched *s = arg;
  int cap = s->cfg->batching ? s->cfg->max_batch_requests : 1;
  serve_job **group = calloc((size_t)cap, sizeof *group);
  if (!group) return NULL;
  double t = serve_now();
  for (;;) {
    pthread_mutex_lock(&s->mu);
    phase_add(s, PHASE_HANDOFF, &t);
    while (!s->head && !s->stopping) pthread_cond_wait(&s->cv, &s->mu);
    if (!s->head) {
      pthread_mutex_unlock(&s->mu);
      break;
    }
    serve_job *first = s->head;
    s->head = first->next;
    if (!s->head) s->tail = NULL;
    s->depth--;
    int n = 1;
    group[0] = first;
    size_t tokens = first->est_tokens;
    if (s->cfg->batching && !first->solo) {
      double deadline = first->enqueued_at + s->cfg->batch_wait_us * 1e-6;
      for (;;) {
        /* take every compatible queued job that fits */
        serve_job **pp = &s->head, *prev = NULL;
        while (*pp && n < cap) {
          serve_job *j = *pp;
          if (compatible(first, j) && tokens + j->est_tokens <= (size_t)s->cfg->pass_tokens) {
            *pp = j->next;
            if (s->tail == j) s->tail = prev;
            s->depth--;
            group[n++] = j;
            tokens += j->est_tokens;
          } else {
            prev = j;
            pp = &j->next;
          }
        }
        if (n >= cap || s->stopping) break;
        /* wait for company only while other requests are still arriving */
        int arriving = s->arriving ? atomic_load(s->arriving) : 0;
        double now = serve_now();
        if (arriving <= 0 || now >= deadline) break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double wait = deadline - now;
        long ns = ts.tv_nsec + (long)(wait * 1e9);
        ts.tv_sec += ns / 1000000000L;
        ts.tv_nsec = ns % 1000000000L;
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
      }
    }
    pthread_mutex_unlock(&s->mu);
    phase_add(s, PHASE_WAIT, &t);
    /* a job whose client left while it was queued is not computed (answered 499, to nobody) */
    int live = 0;
    for (int j = 0; j < n; j++) {
      serve_job *gj = group[j];
      if (atomic_load(&gj->cancelled) || (gj->client_gone && gj->client_gone(gj, gj->done_arg))) {
        group[j]->status = 499;
        laya_err(&group[j]->err, LAYA_ERR_INTERNAL, NULL, "client closed request");
      } else {
        serve_job *g = group[live];
        group[live++] = group[j];
        if (live - 1 != j) group[j] = g;
      }
    }
    if (live) run_group(s, group, live);
    t = serve_now();
    for (int j = 0; j < n; j++) group[j]->done(group[j], group[j]->done_arg);
  }
  free(group);
  return NULL;
}

serve_sched *serve_sched_new(const serve_config *cfg, serve_models *models, const serve_engine *eng,
                             serve_metrics *metrics) {
  serve_sched *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->cfg = cfg;
  s->models = models;
  s->eng = eng;
  s->metrics = metrics;
  int cap = cfg->batching ? cfg->max_batch_requests : 1;
  s->ready = calloc((size_t)cap, sizeof *s->ready);
  s->prep = calloc((size_t)cap, sizeof *s->prep);
  if (!s->ready || !s->prep) {
    free(s->ready);
    free(s->prep);
    free(s);
    return NULL;
  }
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  s->n_workers = 1; /* one forward pass at a time; the engine uses every core for it */
  s->workers = calloc((size_t)s->n_workers, sizeof *s->workers);
  for (int i = 0; i < s->n_workers; i++) pthread_create(&s->workers[i], NULL, worker, s);
  return s;
}

void serve_sched_set_arriving(serve_sched *s, atomic_int *arriving) { s->arriving = arriving; }

void serve_sched_submit(serve_sched *s, serve_job *job) {
  job->enqueued_at = serve_now();
  job->next = NULL;
  pthread_mutex_lock(&s->mu);
  if (s->tail)
    s->tail->next = job;
  else
    s->head = job;
  s->tail = job;
  s->depth++;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

size_t serve_sched_depth(serve_sched *s) {
  pthread_mutex_lock(&s->mu);
  size_t d = s->depth;
  pthread_mutex_unlock(&s->mu);
  return d;
}

void serve_sched_stop(serve_sched *s) {
  pthread_mutex_lock(&s->mu);
  s->stopping = true;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  for (int i = 0; i < s->n_workers; i++) pthread_join(s->workers[i], NULL);
  s->n_workers = 0;
}

void serve_sched_free(serve_sched *s) {
  if (!s) return;
  if (s->n_workers) serve_sched_stop(s);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s->workers);
  free(s->ready);
  free(s->prep);
  free(s);
}

void serve_sched_render(serve_sched *s, strbuf *sb) {
  sb_puts(sb, "# HELP laya_inference_thread_seconds_total Time of the inference thread by phase: "
              "waiting for work, preparing requests, running passes, decoding answers, handing "
              "answers back.\n# TYPE laya_inference_thread_seconds_total counter\n");
  for (int p = 0; p < N_PHASES; p++)
    sb_printf(sb, "laya_inference_thread_seconds_total{phase=\"%s\"} %.6f\n", phase_names[p],
              (double)atomic_load_explicit(&s->phase_ns[p], memory_order_relaxed) * 1e-9);
}
