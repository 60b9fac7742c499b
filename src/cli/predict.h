/*
 * predict.h: what the `laya` command needs from the engine: route, resolve and load the
 * checkpoint (an LRU of loaded models), and answer. Kept apart from argument handling so the
 * route-only mode builds and runs without any model code.
 *
 * Inputs arrive parsed (json_value) and go to the engine's typed calls as values; each result
 * is written once from its typed values, in the layout the command prints (cli_layout): nothing
 * laya.c wrote is parsed back.
 */
#ifndef LAYA_CLI_PREDICT_H
#define LAYA_CLI_PREDICT_H

#include <stdbool.h>

/* Defined once the engine's laya_open / laya_predict / laya_predict_batch link: predict.c then
 * provides the answering modes and predict_stub.c compiles to nothing. */
#define LAYA_CLI_HAVE_ENGINE 1

#include "core/json.h"
#include "router/router.h"

/* How an answer is printed: Laya's CLI's text lines, its --json (indent=2) or --batch --json's
 * JSON Lines; each written once from the typed result. */
typedef enum cli_layout { CLI_LAYOUT_TEXT = 0, CLI_LAYOUT_JSON, CLI_LAYOUT_JSONL } cli_layout;

typedef struct cli_overrides {
  const json_value *model, *task, *lang, *lang_guess; /* NULL = absent */
  long long max_len, head_max_len;                    /* < 0 = not given */
  double min_confidence;                              /* < 0 = not given */
  long long window, stride;                           /* --long; < 0 = default */
  long long batch_size;                               /* < 0 = default */
  bool sort_by_length;
  long long shortlist_k;                              /* --shortlist-k; < 1 = off */
  const char *model_path;                             /* --model naming a directory or file */
  const char *calibration;                            /* --calibration FILE */
  const char *lang_temperatures;                      /* --lang-temperatures, as JSON text */
  const struct engine_progress *progress;             /* --long: told after each pass of one input; NULL = none */
  cli_layout layout;                                  /* what the results are laid out as */
} cli_overrides;

typedef struct cli_engine cli_engine;

/* NULL with err set when this build has no engine or the options are bad. */
cli_engine *cli_engine_new(const char *device, int max_loaded, laya_error *err);
/* What every checkpoint this engine opens loads besides its own config: ov->calibration and
 * ov->lang_temperatures (before the first answer). */
void cli_engine_set_load_options(cli_engine *e, const cli_overrides *ov);
void cli_engine_free(cli_engine *e);

/* Kinds of answering call. */
typedef enum { CLI_PREDICT, CLI_PREDICT_LONG, CLI_DECIDE } cli_call;

/* One input: a state answered with the flags' questions and options, or a whole request (the
 * keyword arguments of Laya's predict / predict_long / decide; flags fill only the keys it
 * lacks). Exactly one is set. */
typedef struct cli_item {
  const json_value *state;
  const json_value *request;
} cli_item;

/* Answer one input; *result (malloc'd) is its result laid out as ov->layout says: the text lines,
 * or the JSON result (with "routing" when routed) and a newline. For CLI_DECIDE, `questions` is
 * the JSON schema. */
int cli_engine_answer_item(cli_engine *e, cli_call call, const cli_item *item, const json_value *questions,
                           const cli_overrides *ov, char **result, laya_error *err);
/* Answer n inputs, sharing forward passes (predict_batch); results[i] malloc'd. On error every
 * results[i] is NULL and nothing says which input failed (answer them one by one to know). */
int cli_engine_answer_items(cli_engine *e, cli_call call, const cli_item *items, size_t n,
                            const json_value *questions, const cli_overrides *ov, char **results,
                            laya_error *err);

/* The same for states sharing `questions` (what `laya eval` calls): one state, or an array. */
int cli_engine_answer(cli_engine *e, const router_config *cfg, cli_call call, const json_value *state,
                      const json_value *questions, const cli_overrides *ov, char **result,
                      laya_error *err);
int cli_engine_answer_batch(cli_engine *e, const router_config *cfg, cli_call call,
                            const json_value *states, const json_value *questions,
                            const cli_overrides *ov, char **results, laya_error *err);

#endif
