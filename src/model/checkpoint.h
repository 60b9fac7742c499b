/*
 * checkpoint.h: a Laya checkpoint directory, loaded in Laya 0.4.15's order:
 *   SHA-256 digests (optional) -> rl_agent_config.json -> model.safetensors present ->
 *   tokenizer/ -> encoder/config.json -> weights (names and shapes, strict) -> temperatures.
 * Every failure names the file and the problem. The weights stay memory-mapped.
 */
#ifndef LAYA_MODEL_CHECKPOINT_H
#define LAYA_MODEL_CHECKPOINT_H

#include "core/strbuf.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "model/weights.h"
#include "tokenizer/tokenizer.h"

/* Histogram-binning recalibration of answer_confidence (from a calibration file). */
typedef struct binning_entry {
  const char *bucket;
  int bins;
  double *values;
} binning_entry;

typedef struct checkpoint {
  char *dir;
  char *model_id; /* the path as the caller gave it (Laya's messages quote it) */
  agent_config cfg;
  st_file st;
  model_weights w;
  tokenizer *tok;
  tokenizer_roles roles;
  int n_binning; /* -1: no map installed */
  binning_entry *binning;
  int nonfinite_pending; /* CKPT_DEFER_NONFINITE: the NaN/Inf scan of st is still to be done */
} checkpoint;

/* sha256_json: {"relpath": "hex"}; NULL: LAYA_SHA256_DIGESTS, which checkpoint_open reads itself
 * (core/options.h; for callers without a read of their own: tests, bench/) and checkpoint_open_ex
 * takes as env_digests (laya_env_options.sha256_digests as laya_open / laya_convert read it).
 * Unset or blank = no check. */
int checkpoint_open(checkpoint *ck, const char *path, const char *sha256_json, strbuf *warnings,
                    laya_error *err);
/* checkpoint_open with flags. CKPT_DEFER_NONFINITE: the weights' NaN/Inf scan (a pass over every
 * byte of model.safetensors) is left to the caller, who does it where the weights are first read
 * or takes its result from the pack cache (laya_open); ck->nonfinite_pending says it is owed. */
enum { CKPT_DEFER_NONFINITE = 1 };
int checkpoint_open_ex(checkpoint *ck, const char *path, const char *sha256_json, const char *env_digests, int flags,
                       strbuf *warnings, laya_error *err);
void checkpoint_close(checkpoint *ck);

/* Install a loaded tokenizer (ck takes it) and check it has the special tokens Laya's sequences
 * need (CLS, SEP, MASK, PAD); where + what name its source in the error. */
int checkpoint_set_tokenizer(checkpoint *ck, tokenizer *tok, const char *where, const char *what, laya_error *err);

/* Laya's verify_digests: the map's files are hashed before anything is parsed. The map is
 * sha256_json, else env_digests (LAYA_SHA256_DIGESTS as the options read it; NULL or blank: no
 * check); a malformed env_digests is refused naming the variable. */
int verify_digests(const char *dir, const char *sha256_json, const char *env_digests, laya_error *err);

/* Check `st` against the architecture the configs describe and fill w (strict: missing and
 * unexpected tensors are errors; shapes compared exactly). */
int weights_bind(model_weights *w, const st_file *st, const encoder_config *enc, int head_layers,
                 int n_act, laya_error *err);
void weights_free(model_weights *w);

/* Append a load warning naming the tensors of st that hold NaN or infinite values (none: nothing). */
void checkpoint_warn_nonfinite(const st_file *st, strbuf *warnings);
/* Its two halves: the scan (values, tensors, and the first five tensors' names with counts into
 * names) and the warning for a scan's result (nothing when n_bad is 0). */
void checkpoint_nonfinite_scan(const st_file *st, int64_t *n_values, int *n_bad, strbuf *names);
void checkpoint_nonfinite_warning(const char *path, int64_t n_values, int n_bad, const char *names, strbuf *warnings);

/* Apply a calibration JSON file (Laya's load_calibration): temperatures and binning map. */
int checkpoint_load_calibration(checkpoint *ck, const char *path, strbuf *warnings, laya_error *err);

#endif
