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

enum { ROUTER_CALL_PREDICT = 0, ROUTER_CALL_LONG = 1, ROUTER_CALL_DECIDE = 2 };

/* laya_router_predict / _predict_long / _decide (call) over a request value; the result JSON is
 * appended to out. progress (may be NULL) hears predict_long's passes. */
int router_call_value(laya_router *r, int call, const json_value *req, const engine_progress *progress,
                      strbuf *out, laya_error *err);

/* laya_router_predict_batch over a request value: results[i] (malloc'd, n = requests' length)
 * is request i's result, as the joined array would hold it. On error every results[i] is NULL. */
int router_predict_batch_value(laya_router *r, const json_value *req, const rj_style *style, char **results,
                               laya_error *err);

#endif
