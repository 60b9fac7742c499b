/*
 * artifact_load.c: a `laya convert` artifact opened as a checkpoint (checkpoint_open hands artifact
 * files here), and laya_convert, which writes one.
 *
 * The artifact carries the checkpoint's own config and tokenizer files, so the same parsers run on
 * them and a model loaded either way answers the same questions the same way; only the weights
 * differ in form (packed for the "cpu" backend at one precision, mapped in place).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "core/json.h"
#include "core/options.h"
#include "model/artifact.h"
#include "model/checkpoint.h"
#include "model/config.h"

/* Requested digests ({relpath: hex}: sha256_json, else LAYA_SHA256_DIGESTS as the options read it)
 * against the digests recorded at convert time. */
static int check_digests(const artifact *a, const char *sha256_json, const char *env_digests, laya_error *err) {
  const char *text = sha256_json ? sha256_json : env_digests;
  if (!text || !*text) return 0;
  arena ar;
  arena_init(&ar, 4096);
  laya_error jerr;
  int rc = 0;
  json_value *m = json_parse(text, strlen(text), &ar, NULL, &jerr);
  if (!m || m->type != JSON_OBJECT) {
    rc = laya_value_error(err, "expected_sha256 must be a mapping of artifact paths to digests");
    goto done;
  }
  for (uint32_t i = 0; i < m->n && !rc; i++) {
    const json_member *e = &m->members[i];
    if (e->value.type != JSON_STRING) {
      rc = laya_value_error(err, "expected_sha256[%s] must be a hex string", e->key);
      break;
    }
    const char *have = artifact_source_sha256(a, e->key);
    if (!have)
      rc = laya_err(err, LAYA_ERR_IO, "FileNotFoundError", "%s: the artifact records no file %s", artifact_path(a), e->key);
    else if (strcasecmp(have, e->value.s) != 0)
      rc = laya_value_error(err, "SHA-256 mismatch for %s: expected %s, the artifact was converted from %s", e->key,
                            e->value.s, have);
  }
done:
  arena_free(&ar);
  return rc;
}

int checkpoint_open_artifact(checkpoint *ck, const char *path, const char *sha256_json, const char *env_digests,
                             strbuf *warnings, laya_error *err) {
  memset(ck, 0, sizeof *ck);
  ck->n_binning = -1;
  ck->model_id = strdup(path);
  ck->dir = strdup(path);
  if (!ck->model_id || !ck->dir) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  int rc = 0;
  char cfg_name[4200]; /* messages about the stored config name the artifact, never a temp file */
  snprintf(cfg_name, sizeof cfg_name, "%s:rl_agent_config.json", path);
  artifact *a = artifact_open(path, err);
  if (!a) {
    rc = err ? err->code : LAYA_ERR_FORMAT;
    goto fail;
  }
  if (artifact_tok_external(a)) {
    rc = laya_err(err, LAYA_ERR_FORMAT, NULL,
                  "%s: a pack cache entry, not a standalone artifact (its token embeddings are in the "
                  "checkpoint it was packed from): open that checkpoint directory, or make one with laya convert",
                  path);
    goto fail;
  }
  if ((rc = check_digests(a, sha256_json, env_digests, err))) goto fail;
  size_t n = 0;
  const char *cfg = artifact_file(a, "rl_agent_config.json", &n);
  if (!cfg) {
    rc = laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: the artifact holds no rl_agent_config.json", path);
    goto fail;
  }
  if ((rc = agent_config_parse(&ck->cfg, cfg, n, cfg_name, path, warnings, err))) goto fail;
  size_t tn = 0, cn = 0;
  const char *tj = artifact_file(a, "tokenizer/tokenizer.json", &tn);
  const char *tc = artifact_file(a, "tokenizer/tokenizer_config.json", &cn);
  if (!tj) {
    rc = laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: the artifact holds no tokenizer/tokenizer.json", path);
    goto fail;
  }
  if ((rc = checkpoint_set_tokenizer(ck, tokenizer_load_memory(tj, tn, tc, tc ? cn : 0, err), path,
                                     " (stored tokenizer)", err)))
    goto fail;
  const char *ej = artifact_file(a, "encoder/config.json", &n);
  encoder_config enc;
  if (!ej) {
    rc = laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: the artifact holds no encoder/config.json", path);
    goto fail;
  }
  if ((rc = encoder_config_parse(&enc, ej, n, path, err))) goto fail;
  if ((rc = artifact_weights(a, &ck->w, err))) goto fail;
  const encoder_config *pe = &ck->w.enc;
  if (enc.hidden != pe->hidden || enc.n_layers != pe->n_layers || enc.n_heads != pe->n_heads ||
      enc.intermediate != pe->intermediate || enc.vocab != pe->vocab || ck->cfg.head_layers != ck->w.head_layers ||
      ck->cfg.n_act != ck->w.n_act) {
    rc = laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: the packed weights do not match the stored configs", path);
    goto fail;
  }
  if (enc.act != pe->act) {
    rc = laya_err(err, LAYA_ERR_FORMAT, NULL,
                  "%s: the artifact was packed for hidden_activation \"%s\", its stored encoder/config.json says \"%s\" "
                  "(convert again)",
                  path, enc_act_name(pe->act), enc_act_name(enc.act));
    goto fail;
  }
  /* the decision head's heads follow from the width (weights_bind.c); a packed count that does not
   * would run the head with the wrong split */
  int want_heads = enc.hidden / 64 > 1 ? enc.hidden / 64 : 1;
  if (ck->w.head_heads != want_heads) {
    rc = laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact config.head_heads is %d, the stored configs give %d", path,
                  ck->w.head_heads, want_heads);
    goto fail;
  }
  if (tokenizer_vocab_size(ck->tok) > enc.vocab) {
    rc = laya_err(err, LAYA_ERR_CONFIG, NULL, "%s: vocab_size %d is smaller than the tokenizer's %d ids", path, enc.vocab,
                  tokenizer_vocab_size(ck->tok));
    goto fail;
  }
  ck->w.enc = enc; /* every field as the loader parses it */
  if ((rc = agent_config_install_temperatures(&ck->cfg, cfg_name, path, warnings, err))) goto fail;
  return 0;
fail:
  if (ck->w.packed) {
    artifact_weights_free(&ck->w);
    ck->w.packed = NULL;
  }
  artifact_close(a);
  checkpoint_close(ck);
  return rc ? rc : LAYA_ERR_INTERNAL;
}

static int convert(const char *checkpoint_dir, const char *out_path, const laya_options *opt,
                   const laya_env_options *env, laya_error *err) {
  backend_options bo = {backend_cpu_default_precision(), opt ? opt->threads : 0, 0, env};
  const char *prec = opt ? opt->precision : NULL, *from = "precision";
  if (!prec && env->precision) prec = env->precision, from = "LAYA_PRECISION";
  if (prec) {
    if (!strcmp(prec, "fp32")) bo.precision = PREC_FP32;
    else if (!strcmp(prec, "bf16")) bo.precision = PREC_BF16;
    else if (!strcmp(prec, "int8")) bo.precision = PREC_INT8;
    else return laya_err(err, LAYA_ERR_VALUE, NULL, "%s must be fp32, bf16 or int8 for an artifact, got '%s'", from, prec);
  }
  if (artifact_is_artifact(checkpoint_dir))
    return laya_err(err, LAYA_ERR_VALUE, NULL, "%s is already an artifact; convert the checkpoint directory", checkpoint_dir);
  checkpoint ck;
  strbuf warnings;
  sb_init(&warnings);
  int rc = checkpoint_open_ex(&ck, checkpoint_dir, opt ? opt->sha256_json : NULL, env->sha256_digests, 0, &warnings, err);
  sb_free(&warnings);
  if (rc) return rc;
  backend *b = backend_cpu_create(&ck.w, &bo, err);
  if (!b) {
    checkpoint_close(&ck);
    return err ? err->code : LAYA_ERR_INTERNAL;
  }
  rc = artifact_write(out_path, checkpoint_dir, &ck.w, b, NULL, err);
  b->destroy(b);
  checkpoint_close(&ck);
  return rc;
}

int laya_convert(const char *checkpoint_dir, const char *out_path, const laya_options *opt, laya_error *err) {
  laya_err_clear(err);
  if (!checkpoint_dir || !out_path) return laya_err(err, LAYA_ERR_VALUE, NULL, "laya_convert: a path is NULL");
  /* the environment, read once here and validated (core/options.h), as laya_open reads it */
  laya_env_options env;
  int rc = laya_env_options_read(&env, opt && opt->precision ? LAYA_ENV_SKIP_PRECISION : 0, err);
  if (!rc) rc = convert(checkpoint_dir, out_path, opt, &env, err);
  laya_env_options_free(&env);
  return rc;
}
