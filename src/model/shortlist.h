/* shortlist.h: the pieces of Laya's laya.shortlist that predict_shortlist (shortlist.c) and
 * predict_tournament (tournament.c) share. Internal. */
#ifndef LAYA_MODEL_SHORTLIST_H
#define LAYA_MODEL_SHORTLIST_H

#include <stddef.h>

#include "core/arena.h"
#include "core/error.h"
#include "core/json.h"

/* _criteria_items: a choice's labels (dict keys as strings, or list items) and their values (NULL
 * for a list), refused with Laya's TypeError / ValueError texts (not a dict or list, empty, an
 * unhashable or duplicated label by Python's key equality). Memory from a. */
typedef struct shortlist_items {
  int n;
  const json_value **label;
  const json_value **value; /* NULL entries: no description */
} shortlist_items;
int shortlist_criteria_items(const json_value *crit, arena *a, shortlist_items *it, laya_error *err);

/* The checks predict_shortlist / predict_tournament (fn) make of their request before anything
 * else, with Python's TypeError texts: a mapping with "state" and "questions", questions a dict. */
int shortlist_request(const json_value *req, const char *fn, const json_value **state, const json_value **questions,
                      laya_error *err);
/* Laya's ValueError for a choice question without criteria. */
int shortlist_no_criteria(const char *qid, size_t qid_len, laya_error *err);

/* _drop_stale_order's RuntimeWarning (stderr, unless m's LAYA_QUIET_WARNINGS): question qid's
 * option_order was dropped because its label set was narrowed to `kept`. */
struct laya_model;
void shortlist_warn_dropped(const struct laya_model *m, const json_value *qid_key, size_t qid_len, const json_value *order, int kept);

#endif
