/*
 * result_json.h: the only writer of result JSON (typed.h's values to text).
 *
 * Styles are json.dumps's: RJ_PY is its default spacing (", " and ": ", what laya_predict and the
 * other public functions return, byte for byte with Python Laya), RJ_COMPACT its
 * separators=(",", ":") (what a FastAPI server sends), RJ_INDENT2 its indent=2. Numbers are
 * Python's float repr of the values the answers hold (see py_float_json); keys are written in
 * Laya's order, and two labels that render to the same JSON key are both written, as json.dumps
 * writes a dict holding True and "true".
 */
#ifndef LAYA_MODEL_RESULT_JSON_H
#define LAYA_MODEL_RESULT_JSON_H

#include <stdbool.h>

#include "core/strbuf.h"
#include "model/typed.h"

typedef struct rj_style {
  const char *item_sep, *key_sep;
  int indent; /* < 0: one line */
} rj_style;

extern const rj_style RJ_PY, RJ_COMPACT, RJ_INDENT2;

/* A writer: the emitter state behind every rj_* function (separators, indentation). */
typedef struct rj {
  strbuf *sb;
  const rj_style *st;
  int depth;
  bool first[64]; /* per open container: nothing written in it yet */
} rj;

void rj_init(rj *w, strbuf *sb, const rj_style *st);
void rj_obj(rj *w);                               /* { */
void rj_arr(rj *w);                               /* [ */
void rj_end_obj(rj *w);                           /* } */
void rj_end_arr(rj *w);                           /* ] */
void rj_key(rj *w, const char *k, size_t n);      /* the next member's key */
void rj_item(rj *w);                              /* the next array item */
void rj_num(rj *w, double x);                     /* Python float repr (NaN, Infinity) */
void rj_int(rj *w, long long x);
void rj_bool(rj *w, bool b);
void rj_null(rj *w);
void rj_str(rj *w, const char *s, size_t n);
void rj_value(rj *w, const json_value *v);        /* a parsed value, in the writer's style */
/* Already-written JSON in RJ_PY style (a RouteDecision), spliced as is. */
void rj_raw(rj *w, const char *json);

/* The pieces of a result, for the surfaces that compose their own objects (decide, the server). */
void rj_answer(rj *w, const answer *a);
void rj_answers(rj *w, const state_result *r);    /* {qid: answer, ...} */
/* Are all the numbers rj_state would write for r finite (no NaN / Infinity, which strict JSON
 * cannot carry: a checkpoint with non-finite weights gives such answers)? */
bool rj_state_finite(const state_result *r);
void rj_probabilities(rj *w, const answer *a);    /* the answer's "probabilities" object */
void rj_usage(rj *w, const state_result *r);

/* Laya's result dict of one state; with routing (RJ_PY text, NULL = none) "routing" last. */
void rj_state(rj *w, const state_result *r, const char *routing);
/* predict_batch's list. */
void rj_states(rj *w, const state_result *r, long n);
/* predict_long's dict (answers with their "window", usage with "windows"); routing as above. */
void rj_long(rj *w, const long_result *l, const char *routing);

/* predict_shortlist's dict: rj_state's members (routing as there), then "shortlist"
 * (rj_shortlist_meta), which Laya adds last. */
void rj_shortlist(rj *w, const shortlist_result *s, const char *routing);
/* {qid: {"labels", "scores", "k", "n", "passthrough"}} of the ranked choices. */
void rj_shortlist_meta(rj *w, const shortlist_result *s);
/* predict_tournament's dict: rj_state's members (routing as there), then "tournament":
 * {qid: {"labels": finalists, "n", "rounds"}}, which Laya adds last. */
void rj_tournament(rj *w, const tournament_result *t, const char *routing);
/* The "tournament" member's value: {qid: {"labels": finalists, "n", "rounds"}}. */
void rj_tournament_meta(rj *w, const tournament_result *t);
/* shortlist_choice's return: the kept labels, or with return_scores [labels, scores | null]. */
void rj_shortlist_choice(rj *w, const shortlist_entry *e, bool return_scores);
/* embed_fn's array: n rows of d floats (each float32 written as the Python float it becomes). */
void rj_embeddings(rj *w, const float *v, long n, int d);

/* The body Laya's server sends for one result (write it with RJ_COMPACT, as FastAPI does): the
 * result with "x_jev_confidence" on each choice and score answer and "routing" last (a
 * RouteDecision written in RJ_PY text, respaced to the writer's separators; NULL = none), or,
 * strict, the strict Jev projection ({model, answers: {type, value, confidence, probabilities,
 * legend}, usage: {input_tokens, output_tokens}}). */
void rj_served(rj *w, const state_result *r, const char *routing, bool strict);
/* The same with laya-serve's LAYA_TOURNAMENT_GROUP report: answer j with notes[j] set (a choice
 * narrowed by elimination) gets "x_tournament": {"finalists", "rounds", "option_order_dropped"
 * when dropped[j]} after its own members (before x_jev_confidence), as Laya's serve writes it.
 * notes may be NULL (rj_served). Strict Jev drops it, as Laya's projection does. */
void rj_served_tournament(rj *w, const state_result *r, const char *routing, bool strict,
                          const tournament_entry *const *notes, const bool *dropped);
/* x_jev_confidence of a choice or score answer (false for noul, or probabilities it cannot use):
 * choice the normalised top probability's lift over uniform, score 1 - spread around the mode
 * relative to a uniform spread. */
bool rj_jev_confidence(const answer *a, double *out);
/* JSON text in json.dumps's default spacing, spliced with the writer's separators. */
void rj_raw_respaced(rj *w, const char *json);
/* The same with the writer's indentation too (RJ_INDENT2: as json.dumps(indent=2) writes the
 * value at the writer's depth): a text laya.c wrote (a RouteDecision) restyled, never parsed. */
void rj_raw_styled(rj *w, const char *json);
/* predict_long's "answers" object (each answer with its "window" when the state had several). */
void rj_long_answers(rj *w, const long_result *l);

/* Convenience: the whole result as text in one style (appended to sb). */
void rj_write_state(strbuf *sb, const rj_style *st, const state_result *r, const char *routing);
void rj_write_states(strbuf *sb, const rj_style *st, const state_result *r, long n);

#endif
