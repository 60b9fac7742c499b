/* decide.h: schema decisions on one model (decide.c), for the public API and the Router. */
#ifndef LAYA_MODEL_DECIDE_H
#define LAYA_MODEL_DECIDE_H

#include <stdbool.h>

#include "core/json.h"
#include "core/strbuf.h"
#include "laya.h"

/* req: {"state"|"states", "schema"|"questions", "return_details"?, "min_confidence"?, ...predict
 * options}. Appends the values (or the DecisionResult with routing_json as "routing") to out;
 * routing_tail (not batch): a RouteDecision written as the result object's last "routing". */
int decide_run(laya_model *m, const json_value *req, bool batch, const char *routing_json,
               const char *routing_tail, strbuf *out, laya_error *err);

#endif
