/*
 * router_typed.h: the Router's predict and predict_batch as values, for the repository's own
 * surfaces (`laya eval`): the same routing, checkpoint loading and model-level call as
 * laya_router_predict / laya_router_predict_batch, with the results left as typed.h's
 * state_result instead of written to JSON. Results (and the prepared questions they point to)
 * live in the caller's arena; they stay valid after the checkpoint is unloaded.
 */
#ifndef LAYA_ROUTER_ROUTER_TYPED_H
#define LAYA_ROUTER_ROUTER_TYPED_H

#include "core/arena.h"
#include "core/error.h"
#include "core/json.h"
#include "laya.h"
#include "model/typed.h"

/* One request object ({"state", "questions", "model"?, "lang"?, "min_confidence"?, ...}, the keys
 * laya_router_predict takes): *out is its result, chosen the checkpoint that answered. */
int router_predict_typed(laya_router *r, const json_value *req, arena *a, state_result **out, char chosen[64],
                         laya_error *err);

/* n request objects answered as predict_batch answers them: requests routed to the same
 * checkpoint with the same questions, budgets and language share one pass; out[i] / chosen[i] in
 * input order. batch_size <= 0: the model's default; min_confidence NULL: none. */
int router_predict_batch_typed(laya_router *r, const json_value *reqs, long n, long batch_size,
                               bool sort_by_length, const json_value *min_confidence, arena *a,
                               state_result **out, char (*chosen)[64], laya_error *err);

#endif
