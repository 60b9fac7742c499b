/*
 * artifact.h: the single-file container `laya convert CKPT OUT` writes (and the pack cache's
 * entries, model/pack_cache.h), and its reader.
 *
 * A neutral container: a backend's named arrays, the model's facts and the checkpoint's small
 * files. It knows names, bytes and checksums, never what the arrays mean: the arrays are the ones
 * a backend hands over (backend_cpu_arrays, backend/backend.h: the "cpu" backend's packed weights,
 * backend/cpu/cpu_artifact.c), and the same backend reads them back through model/weights.h's
 * accessors. The file is memory-mapped and used in place; loading converts nothing. Layout
 * (little-endian):
 *   [0, 64)   header: magic "LAYAPAK\0", u32 format version, u32 reserved, u64 index offset,
 *             u64 index bytes, u64 file bytes, u64 data offset, u64 hash64 of the index bytes,
 *             u64 hash64 of header bytes [0, 56) (core/hash64.h)
 *   data      named arrays, each 64-byte aligned: the backend's arrays for one precision, the token
 *             embedding table as stored in the checkpoint, and the checkpoint's small files
 *             verbatim (configs, tokenizer)
 *   index     JSON: {"format", "version", "precision", "kernel_layout" (the writer backend's layout
 *             name), "producer", "config": {encoder and head sizes}, "sources": {relpath: sha256 hex},
 *             "tok_embeddings": {"dtype", "shape"}, "files": {relpath: [offset, bytes, hash64 hex]},
 *             "arrays": {name: [offset, bytes, hash64 hex]}}
 * A reader refuses another format version with an error naming both, and checks at open, before
 * anything is used: the header's and the index's checksums, every entry inside the data, no two
 * entries overlapping, every entry's bytes against its checksum (one pass over the file, several
 * GB/s), the embedding dtype. The backend that reads the arrays refuses another layout (cpu:
 * "artifact kernel layout X, this build reads Y"). Errors name the artifact file and the field.
 * Opening writes nothing (no temporary files).
 */
#ifndef LAYA_MODEL_ARTIFACT_H
#define LAYA_MODEL_ARTIFACT_H

#include <stddef.h>

#include "backend/backend.h"
#include "model/weights.h"

#define ARTIFACT_MAGIC "LAYAPAK"
#define ARTIFACT_VERSION 2 /* 2: checksums of the header, the index and every entry */

typedef struct artifact artifact;

/* 1 if path is a regular file that starts with the artifact magic (cheap: reads 8 bytes). */
int artifact_is_artifact(const char *path);

/* Map and check an artifact (header, index, every array inside the file). NULL + err on failure. */
artifact *artifact_open(const char *path, laya_error *err);
/* artifact_open with flags. ARTIFACT_SKIP_ARRAY_CHECKSUMS: the header, index and layout are checked
 * but not the arrays' and files' checksums (a pass over every byte): for a file the caller has
 * checked in full before and knows unchanged since (the pack cache's stamps, model/pack_cache.c). */
enum { ARTIFACT_SKIP_ARRAY_CHECKSUMS = 1 };
artifact *artifact_open_ex(const char *path, int flags, laya_error *err);
void artifact_close(artifact *a);

/* artifact_blob, artifact_path, artifact_layout, artifact_precision_name, artifact_act_hidden: the
 * backend's view, declared in model/weights.h. */
backend_precision artifact_precision(const artifact *a);
/* A checkpoint file stored verbatim ("rl_agent_config.json", "encoder/config.json",
 * "tokenizer/tokenizer.json", ...), or NULL. Not NUL-terminated. */
const char *artifact_file(const artifact *a, const char *relpath, size_t *bytes);
/* Number of stored files and the i-th one's relative path (for writing them out to a directory). */
int artifact_n_files(const artifact *a);
const char *artifact_file_name(const artifact *a, int i);
/* The SHA-256 (hex) recorded for a source file at convert time, or NULL. */
const char *artifact_source_sha256(const artifact *a, const char *relpath);

/* Fill w for the "cpu" backend: config and head sizes, tok_embeddings (pointing into the
 * mapping) and w->packed = a. Other tensors stay NULL. w->layers / w->head are allocated here and
 * freed by artifact_weights_free. The artifact must outlive w. */
int artifact_weights(const artifact *a, model_weights *w, laya_error *err);
void artifact_weights_free(model_weights *w);

/* Open an artifact as a checkpoint (configs and tokenizer from its stored files, weights mapped);
 * checkpoint_open calls this for artifact files, checkpoint_close closes it. */
struct checkpoint;
struct strbuf;
int checkpoint_open_artifact(struct checkpoint *ck, const char *path, const char *sha256_json, const char *env_digests,
                             struct strbuf *warnings, laya_error *err);

/* Write an artifact: the arrays of the "cpu" backend b (created at the wanted precision from
 * checkpoint dir ckpt_dir, whose weights are w; backend_cpu_arrays) plus the checkpoint's small
 * files and their SHA-256 (that of model.safetensors is weights_sha256 when the caller has it, else
 * computed). Written to a temp file beside out_path and renamed over it (no fsync: see
 * pack_cache.h for why a cache entry needs none; `laya convert` output is checked in full by its
 * reader). */
int artifact_write(const char *out_path, const char *ckpt_dir, const model_weights *w, const backend *b,
                   const char *weights_sha256, laya_error *err);
/* artifact_write with flags. ARTIFACT_WRITE_EXTERNAL_TOK: the token embeddings (stored unpacked,
 * a third to a half of an entry) are left out and the index marks them "external": the pack cache,
 * whose key holds the weights' SHA-256, takes them from the checkpoint it opened. Such a file is
 * not a standalone artifact: checkpoint_open_artifact refuses it. */
enum { ARTIFACT_WRITE_EXTERNAL_TOK = 1 };
int artifact_write_ex(const char *out_path, const char *ckpt_dir, const model_weights *w, const backend *b,
                      const char *weights_sha256, int flags, laya_error *err);
/* 1 when a's token embeddings are external (written with ARTIFACT_WRITE_EXTERNAL_TOK): its weights'
 * tok_embeddings then has no data, and the caller supplies the checkpoint's. */
int artifact_tok_external(const artifact *a);

#endif
