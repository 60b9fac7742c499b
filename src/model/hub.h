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
#include <stddef.h>

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
  /* the environment as laya_open read it (core/options.h); NULL: the HF variables are read when
   * hub_resolve / hub_cache_dir start */
  const struct laya_env_options *env;
} hub_options;

void hub_options_init(hub_options *o);

/* Resolve `repo_or_path` (+ subfolder) to a local checkpoint directory; *dir is malloc'd.
 * *commit (may be NULL) receives the snapshot commit, or NULL for a plain directory. */
int hub_resolve(const char *repo_or_path, const char *subfolder, const hub_options *o, char **dir,
                char **commit, laya_error *err);

/* Bounds on what an endpoint may send (a custom HF_ENDPOINT, a mirror or an intercepted plain-http
 * connection is not trusted more than a file on disk). */
#define HUB_MAX_LIST_BYTES (8 << 20)         /* the JSON file list of one revision */
#define HUB_MAX_LIST_FILES 100000            /* entries in that list */
#define HUB_MAX_PATH_BYTES 1024              /* one listed file name */
#define HUB_MAX_ETAG_BYTES 128               /* an ETag, used as a blob file name */
#define HUB_MAX_FILE_BYTES (1LL << 30)       /* any file but the weights (tokenizer, configs) */
#define HUB_MAX_WEIGHTS_BYTES (64LL << 30)   /* model.safetensors */

/* A name an endpoint lists, safe to join under a snapshot directory: relative, '/'-separated
 * components that are neither empty, "." nor "..", no backslash, NUL or other control byte
 * (len is the name's length as sent, so an embedded NUL is seen). */
bool hub_path_is_safe(const char *path, size_t len);
/* An ETag usable as a blob file name: [A-Za-z0-9._-], not starting with '.', at most 128 bytes. */
bool hub_etag_is_safe(const char *etag);

/* The cache directory huggingface_hub would use. malloc'd. */
char *hub_cache_dir(const hub_options *o);

#endif
