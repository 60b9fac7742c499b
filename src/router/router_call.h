/*
 * router_call.h: the Router's answering calls over parsed request values, for the repository's
 * own surfaces (the `laya` command), so a caller that already holds a parsed request neither
 * writes it back to text nor parses a joined result again.
 */
#ifndef LAYA_ROUTER_CALL_H
#define LAYA_ROUTER_CALL_H

#include "core/json.h"
#include "core/strbuf.h"
#include "laya.h"
#include "model/result_json.h"
#include "model/typed.h"

enum { ROUTER_CALL_PREDICT = 0, ROUTER_CALL_LONG = 1, ROUTER_CALL_DECIDE = 2, ROUTER_CALL_SHORTLIST = 3 };

/* A routed answer as values, valid during the callback that receives it: the typed result of
 * its call and the RouteDecision (its text, for the "routing" member, and its facts, for a
 * surface that lays it out itself: the `laya` command's text output). */
typedef struct router_answer {
  int call;                          /* ROUTER_CALL_* */
  const state_result *state;         /* PREDICT (predict_batch too) and SHORTLIST (its decision pass) */
  const long_result *lng;            /* LONG */
  const decide_result *decide;       /* DECIDE */
  const shortlist_result *shortlist; /* SHORTLIST */
  const char *decision;              /* the RouteDecision, RJ_PY text */
  const char *model, *reason;        /* its "model" and "reason" */
  const char *detection;             /* its "detection" value, detection_len bytes of decision */
  size_t detection_len;
} router_answer;

/* fn(user, index, answer): index is the request's position (0 for a single call); nonzero stops
 * the call with that status (err filled by fn). */
typedef int (*router_answer_fn)(void *user, long index, const router_answer *a, laya_error *err);

/* One call on a chosen model m, its typed result handed to fn (index 0): what router_call_typed
 * runs once it has routed, and the `laya --model DIR` path. route->call (ROUTER_CALL_*) says which
 * call; its routing members are passed on as given; a: the call's scratch (results live in it
 * until fn returns). progress (may be NULL) hears LONG's passes. */
int router_model_call_typed(laya_model *m, const router_answer *route, const json_value *req, const engine_progress *progress,
                            arena *a, router_answer_fn fn, void *user, laya_error *err);

/* router_call_value with the result handed to fn as values instead of written. */
int router_call_typed(laya_router *r, int call, const json_value *req, const engine_progress *progress,
                      router_answer_fn fn, void *user, laya_error *err);
/* router_predict_batch_value with each request's result handed to fn (in group order, each with
 * its input index) instead of written. */
int router_predict_batch_typed_each(laya_router *r, const json_value *req, router_answer_fn fn, void *user,
                                    laya_error *err);

/* laya_router_predict / _predict_long / _decide (call) over a request value; the result JSON is
 * appended to out. progress (may be NULL) hears predict_long's passes. */
int router_call_value(laya_router *r, int call, const json_value *req, const engine_progress *progress,
                      strbuf *out, laya_error *err);

/* laya_router_predict_batch over a request value: results[i] (malloc'd, n = requests' length)
 * is request i's result, as the joined array would hold it. On error every results[i] is NULL. */
int router_predict_batch_value(laya_router *r, const json_value *req, const rj_style *style, char **results,
                               laya_error *err);

#endif
