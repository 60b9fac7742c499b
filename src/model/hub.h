/*
 * hub.h: finding a checkpoint on disk, in the Hugging Face cache, or on the Hub.
 *
 * A checkpoint named by a Hub repo id (optionally with a subfolder and a revision) is looked up
 * in the Hugging Face cache first, in the snapshot layout huggingface_hub writes
 * (<cache>/models--org--name/{blobs,refs,snapshots}), so a cache filled by Python Laya is reused
 * as is. Otherwise only the files Laya loads are downloaded (rl_agent_config.json,
 * model.safetensors, the encoder/ and tokenizer/ folders), resumably, into the same layout.
 *
 * Environment, as huggingface_hub reads it: HF_HUB_OFFLINE, HF_TOKEN, HF_ENDPOINT,
 * HF_HUB_CACHE, HF_HOME; and LAYA_REVISION (a revision applied when none is given).
 */
#ifndef LAYA_MODEL_HUB_H
#define LAYA_MODEL_HUB_H

#include <stdbool.h>

#include "laya.h"

typedef struct hub_options {
  const char *revision;    /* branch, tag or commit; NULL = LAYA_REVISION, else "main" */
  const char *token;       /* NULL = HF_TOKEN */
  const char *endpoint;    /* NULL = HF_ENDPOINT, else https://huggingface.co */
  const char *cache_dir;   /* NULL = HF_HUB_CACHE, HF_HOME/hub, ~/.cache/huggingface/hub */
  int offline;             /* 1 = never download; -1 = read HF_HUB_OFFLINE; 0 = allowed */
  const char *sha256_json; /* {relpath: hex}: a downloaded file it names must match; NULL = none
                              (the loader checks the whole map again before parsing) */
  bool quiet;              /* no progress lines on stderr */
} hub_options;

void hub_options_init(hub_options *o);

/* Resolve `repo_or_path` (+ subfolder) to a local checkpoint directory; *dir is malloc'd.
 * *commit (may be NULL) receives the snapshot commit, or NULL for a plain directory. */
int hub_resolve(const char *repo_or_path, const char *subfolder, const hub_options *o, char **dir,
                char **commit, laya_error *err);

/* The cache directory huggingface_hub would use. malloc'd. */
char *hub_cache_dir(const hub_options *o);

#endif
