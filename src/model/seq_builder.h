/*
 * seq_builder.h: Laya's token rows (common.build_head / build_sequence).
 *
 *   [CLS] <type> question: <instructions> [SEP] [MASK] opt0 [MASK] opt1 ... [SEP] <state> [SEP]
 *
 * The head (everything up to the second [SEP]) depends only on the question and head_max_len,
 * so it is built once per call and shared by every state; the state is serialised and
 * tokenised once and shared by every question.
 */
#ifndef LAYA_MODEL_SEQ_BUILDER_H
#define LAYA_MODEL_SEQ_BUILDER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/json.h"
#include "core/strbuf.h"
#include "model/questions.h"
#include "tokenizer/tokenizer.h"

#define LAYA_OPT_CAP 48         /* tokens of one option's text (the tokenizer keeps the first 48) */
#define LAYA_MIN_OPT_BUDGET 16  /* per-option capping starts when options leave less than this */
#define LAYA_MIN_PER_OPTION 4   /* floor of the per-option cap ([MASK] included) */
#define LAYA_MIN_INSTRUCTION 8  /* the instruction keeps at least this many tokens */

typedef struct head_ids {
  int32_t *ids; /* [CLS] head [SEP] options [SEP] */
  int n_ids;
  int *markers; /* position of each slot's [MASK] */
  int n_markers;
  int options, options_distinct;
  int tokens_per_option; /* -1 = None (no per-option cap applied) */
} head_ids;

/* The token ids of question texts ("<type> question: <instructions>", " <option>"), cached per
 * loaded model: a request repeats the questions of the last one far more often than not, and the
 * ids are a pure function of the text and the cap. Thread-safe (one lock), bounded (entries and
 * bytes; full means emptied). NULL: no cache. */
typedef struct tok_cache tok_cache;
tok_cache *tok_cache_new(void);
void tok_cache_free(tok_cache *c);

typedef struct seq_tok {
  const tokenizer *tok;
  const tokenizer_roles *roles;
  size_t mask_len;
  tok_cache *cache; /* question texts' ids (NULL: none) */
} seq_tok;

/* Build the head of question q. */
int build_head(const seq_tok *st, const question *q, int head_max_len, arena *a, head_ids *out,
               laya_error *err);

/* serialize_state: a str passes through, anything else is json.dumps(ensure_ascii=False). */
void serialize_state(strbuf *sb, const json_value *state);
/* text.replace(mask_token, " ") appended to out. */
void scrub_mask(strbuf *out, const char *text, size_t n, const char *mask, size_t mask_len);

/* TypeError (the `tokenizers` binding's text) when text holds a lone surrogate. */
int check_encodable(const char *text, size_t n, laya_error *err);

/* The state's token ids (serialised, mask-scrubbed, tokenised in full). */
int encode_state(const seq_tok *st, const json_value *state, ids_vec *out, strbuf *scratch,
                 laya_error *err);

/* One (state, question) row: how build_sequence slices the state and clamps to max_len. */
typedef struct row_plan {
  int state_from, state_used; /* slice of the state ids */
  int len;                    /* tokens in the row after the max_len clamp */
  int markers_kept;           /* markers < max_len */
  int dropped;                /* state tokens dropped */
} row_plan;
void plan_row(const head_ids *h, int n_state, bool truncate_left, int max_len, row_plan *p);
/* Write the row's ids (p->len of them). */
void write_row(const head_ids *h, const int32_t *state_ids, const row_plan *p, int32_t sep_id,
               int32_t *out);

#endif
