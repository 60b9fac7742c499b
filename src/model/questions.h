/*
 * questions.h: Laya 0.4.15's question schema. Validation (Agent._check_question) with its exact
 * ValueError texts, then normalisation (Agent._to_internal + render_options): each question
 * becomes its instruction text and its option texts, in option (label-index) order.
 */
#ifndef LAYA_MODEL_QUESTIONS_H
#define LAYA_MODEL_QUESTIONS_H

#include <stddef.h>

#include "core/arena.h"
#include "core/error.h"
#include "core/json.h"

enum { QT_CHOICE = 0, QT_SCORE = 1, QT_NOUL = 2, QT_COUNT = 3 };

/* The one table of question type names, indexed by QT_*: "choice", "score", "noul". */
extern const char *const question_type_names[QT_COUNT];

typedef struct question {
  const char *qid;
  size_t qid_len;
  int type;
  const char *type_name;  /* "choice" | "score" | "noul" */
  const char *ins;        /* instructions as text (non-strings JSON-dumped) */
  size_t ins_len;
  int n_opts;
  const char **opt;       /* rendered option texts, option order */
  size_t *opt_len;
  const json_value **label; /* choice: the label objects (answer keys), option order */
  const char **legend;      /* score: render_criterion of each level */
  size_t *legend_len;
  int *order;               /* option_order (slot -> option), or NULL */
} question;

/* Validate every question of `questions` (a JSON object) in order, then normalise them.
 * Errors are Laya's ValueError messages. Memory comes from `a`. */
int questions_prepare(const json_value *questions, arena *a, question **out, int *n_out,
                      laya_error *err);

/* Laya's render_criterion: a str passes through, anything else is JSON text. */
void render_criterion(strbuf *sb, const json_value *v);

/* Python equality of two JSON scalars as dict keys (1 == 1.0 == True; NaN is one object). */
bool py_key_equal(const json_value *a, const json_value *b);

/* The dict key json.dumps writes for a label: str as is, True -> "true", 1.0 -> "1.0". */
void label_json_key(strbuf *sb, const json_value *label);

#endif
