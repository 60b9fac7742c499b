/*
 * pack_cache.h: the fast CPU backend's packed weights, kept between processes.
 *
 * Packing a checkpoint's weights for the "cpu" backend (fp32 panels, bf16, int8 with scales) is
 * the cost of opening a checkpoint directory. The first open packs them (in parallel: pieces of
 * about 1 MiB of panels on the backend's threads, backend/cpu/cpu.c pack_all) and stores them as a
 * `laya convert` artifact (model/artifact.h) in the cache directory, less the token embeddings
 * (stored unpacked, so the hit takes the checkpoint's own: ARTIFACT_WRITE_EXTERNAL_TOK); later
 * opens map that file and pack nothing.
 *
 *   directory  LAYA_CACHE_DIR, else $XDG_CACHE_HOME/laya-c, else ~/.cache/laya-c; files under
 *              packed/. LAYA_PACK_CACHE=0 turns the cache off.
 *   key        SHA-256 of: the packing format (artifact version, kernel layout), the precision, the
 *              decision head's depth and act count, and the SHA-256 of model.safetensors and
 *              encoder/config.json (what the packed bytes depend on; a calibration that rewrites
 *              rl_agent_config.json's temperatures keeps the entry). The weights' digest is the Hugging Face blob name when
 *              the file is a blob of a Hub cache (named by its SHA-256), else computed once and
 *              memoised in digests/ under the file's device, inode, size and change times, so a
 *              changed file is hashed again. A first open (no memo) hashes on a thread of its own
 *              while the backend packs (one serial pass beside a parallel one). Weights under 64
 *              MiB: the open then looks the key up, so a copy of weights packed before still maps
 *              the entry ("hit"; the packing is dropped). Larger ones: the open returns once
 *              packed ("miss") and the writer finishes the digest, memoises it and the NaN/Inf
 *              scan, and writes the entry unless one is there (so the next open hits). A file
 *              whose identity changed during the open keys nothing.
 *   writing    after a miss, on a background thread (the open returns once the weights are packed;
 *              laya_close waits for it; LAYA_PACK_CACHE=sync writes before returning), to a temp
 *              file in the same directory renamed over the entry when complete: concurrent
 *              processes each write their own and the last rename wins; readers see a whole file.
 *              Temp files over an hour old (their writer died) are removed before a write.
 *              No fsync: an entry is a cache, and its first use checks every checksum (no stamp
 *              vouches for it yet), so an entry a crash left short or zeroed is found and rebuilt;
 *              syncing 1-2 GB would make laya_close wait for the disk. The writer writes straight
 *              from the backend's packed arrays (one copy, into the page cache).
 *   reading    artifact_open checks the header, index and layout, and every array's checksum unless
 *              ENTRY.verified vouches for the file as it is (device, inode, size, change times;
 *              written after a full check, see pack_cache.c); a corrupt, truncated or mismatching
 *              entry is never used: the weights are packed again and the entry replaced.
 * Packing-study settings (LAYA_CPU_STUDY, LAYA_CPU_FP32_LAYERS, LAYA_CPU_INT8_BF16) bypass the cache.
 */
#ifndef LAYA_MODEL_PACK_CACHE_H
#define LAYA_MODEL_PACK_CACHE_H

#include <stddef.h>

#include "backend/backend.h"
#include "core/options.h"
#include "model/checkpoint.h"

/* A "cpu" backend for checkpoint ck (a directory, not an artifact) at bo, from the cache when it
 * holds this checkpoint, else packed and stored. ck must outlive the backend (the background
 * writer reads its weights and directory). status gets "hit", "miss" (packed, being stored),
 * "rebuilt (why)" (an entry was unusable), "off" or "miss (not stored: why)". NULL + err only
 * when the backend itself cannot be made. When ck->nonfinite_pending (checkpoint_open_ex with
 * CKPT_DEFER_NONFINITE), the NaN/Inf warning goes to warnings from the memo under nonfinite/ (keyed
 * by the weights' SHA-256), or from a scan that is then memoised, and the flag is cleared; with the
 * cache off it stays set for the caller. */
backend *pack_cache_cpu_backend(checkpoint *ck, const backend_options *bo, strbuf *warnings, char *status, size_t cap,
                                laya_error *err);

/* The cache directory as above (malloc'd), or NULL when none can be named; env: laya_open's read of
 * LAYA_CACHE_DIR, XDG_CACHE_HOME and HOME (NULL: read them now). */
char *pack_cache_dir(const laya_env_options *env);

#endif
