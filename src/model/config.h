/*
 * config.h: the two JSON configs of a Laya checkpoint, read with Laya 0.4.15's defaults and
 * errors: rl_agent_config.json (budgets, head size, temperatures) and encoder/config.json (the
 * HF ModernBertConfig, in the transformers 4.x or 5.x form). Also the temperature tables:
 * clamping, per-language overrides, and the load warnings that name replaced entries.
 */
#ifndef LAYA_MODEL_CONFIG_H
#define LAYA_MODEL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "core/arena.h"
#include "core/json.h"
#include "core/strbuf.h"
#include "model/weights.h"

#define LAYA_TEMP_MIN 0.5
#define LAYA_TEMP_MAX 5.0

/* Applied (clamped) temperatures: per question type, and per "<type>:<bucket>" key. */
typedef struct temp_table {
  double t[3];
  int n_by;
  const char **by_key;
  double *by_val;
} temp_table;

/* The temperature for a question of type qt with k options (Laya's temp_bucket lookup). */
double temp_lookup(const temp_table *tt, int qt, int k);
/* "choice:2", "score:3-5", "noul:6-10", "choice:11+" */
void temp_bucket_name(int qt, int k, char out[16]);

/* Laya's clamp_temperature / temperature_rejected on a JSON value. */
double clamp_temperature(const json_value *raw);
bool temperature_rejected(const json_value *raw, double applied);

typedef struct lang_temps {
  int n;
  const char **lang; /* normalised: split("-")[0].lower() */
  temp_table *tt;
} lang_temps;

typedef struct agent_config {
  arena mem;
  const json_value *root;
  bool has_encoder, has_head_layers;
  const char *encoder_id; /* NULL when null */
  int head_layers, n_act, max_len, head_max_len;
  const char *amp_dtype;
  const json_value *temperature_raw;            /* a list of 3 */
  const json_value *temperature_by_options_raw; /* an object (empty when absent) */
  temp_table temps;
} agent_config;

/* Read rl_agent_config.json. Shape errors in temperatures are Laya's ValueError texts;
 * `model_id` is the name used in them (the path the caller passed). Warnings about clamped
 * entries are appended to `warnings` (one line each). */
int agent_config_load(agent_config *c, const char *path, const char *model_id, strbuf *warnings,
                      laya_error *err);
/* The same from the file's text already in memory (e.g. stored in an artifact); `path` names it in
 * messages. The text need not be NUL-terminated and is not kept. */
int agent_config_parse(agent_config *c, const char *text, size_t len, const char *path, const char *model_id,
                       strbuf *warnings, laya_error *err);
/* Validate and clamp the checkpoint temperatures (Laya does this after the weights load). */
int agent_config_install_temperatures(agent_config *c, const char *path, const char *model_id,
                                      strbuf *warnings, laya_error *err);
void agent_config_free(agent_config *c);

/* Install a temperature list + bucket map (raw JSON) into tt, clamping; arena owns keys.
 * `what` selects the warning text: 0 checkpoint, 1 calibration. */
int temps_install(temp_table *tt, arena *a, const json_value *temperature,
                  const json_value *by_options, int what, strbuf *warnings, laya_error *err);

/* Parse the lang_temperatures option ({"de": {"temperature": [..], ...}}) with Laya's checks. */
int lang_temps_parse(lang_temps *lt, arena *a, const char *json_text, const json_value *base_raw,
                     strbuf *warnings, laya_error *err);
/* Override table for a call's lang (NULL when none applies). */
const temp_table *lang_temps_find(const lang_temps *lt, const char *lang, size_t n);

/* Bounds on what a checkpoint's configs may ask for, checked before anything is sized from them.
 * Real encoders sit far inside: ModernBERT-base/large d 768/1024, 22/28 layers, 12/16 heads,
 * I 1152/2624, vocab 50368; mmBERT-small/base d 384/768, 22 layers, vocab 256000; Ettin up to
 * d 1792 / 28 layers; all 8192 positions. Laya's checkpoints: 2 head layers, max_len 512 / 1024. */
#define ENC_MAX_HIDDEN 65536
#define ENC_MAX_LAYERS 1024
#define ENC_MAX_HEADS 1024
#define ENC_MAX_INTERMEDIATE 262144
#define ENC_MAX_VOCAB (1 << 24)
#define ENC_MAX_POSITIONS (1 << 20) /* max_position_embeddings, local_attention */
#define AGENT_MAX_HEAD_LAYERS 64
#define AGENT_MAX_ACTS 65536
#define AGENT_MAX_TOKENS (1 << 20) /* max_len, head_max_len (and max_position_embeddings caps max_len) */

/* hidden_activation names: the kind a transformers ACT2FN key computes (0), or -1 when laya.c does
 * not run it; the name artifacts store for a kind; the supported names as one comma-separated list. */
int enc_act_parse(const char *name, enc_act *out);
const char *enc_act_name(enc_act act);
void enc_act_list(char *buf, size_t cap);

/* encoder/config.json, transformers 4.x (global/local_rope_theta) or 5.x (rope_parameters). */
int encoder_config_load(encoder_config *ec, const char *path, laya_error *err);
int encoder_config_parse(encoder_config *ec, const char *text, size_t len, const char *path,
                         laya_error *err);

#endif
